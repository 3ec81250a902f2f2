//! XRANGE and XREVRANGE: the entries between two IDs, either way, with `(` for an
//! exclusive bound.

use super::{int_arg, parse_id, stream_read, write_entries};
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::types::stream::StreamId;

pub fn xrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    range(ctx, args, false)
}

pub fn xrevrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    range(ctx, args, true)
}

/// An interval bound: `(id` excludes it, else as [`parse_id`] reads it.
pub fn parse_bound(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool), CmdError> {
    match arg.strip_prefix(b"(") {
        Some(rest) if !rest.is_empty() => Ok((parse_id(rest, missing_seq, true)?, true)),
        _ => Ok((parse_id(arg, missing_seq, false)?, false)),
    }
}

/// The start of an interval, moved past the bound when it is exclusive.
pub fn interval_start(arg: &[u8]) -> Result<StreamId, CmdError> {
    match parse_bound(arg, 0)? {
        (id, true) => id
            .next()
            .ok_or_else(|| "ERR invalid start ID for the interval".into()),
        (id, false) => Ok(id),
    }
}

/// `XRANGE key start end [COUNT count]` (XREVRANGE names the end first).
fn range(ctx: &mut Ctx, args: &[&[u8]], rev: bool) -> CmdResult {
    let (start_arg, end_arg) = if rev {
        (args[3], args[2])
    } else {
        (args[2], args[3])
    };
    let start = interval_start(start_arg)?;
    let end = match parse_bound(end_arg, u64::MAX)? {
        (id, true) => id
            .prev()
            .ok_or(CmdError::from("ERR invalid end ID for the interval"))?,
        (id, false) => id,
    };
    let mut count: Option<usize> = None;
    let mut i = 4;
    while i < args.len() {
        if args::is(args[i], "count") && i + 1 < args.len() {
            count = Some(int_arg(args[i + 1])?.max(0) as usize);
            i += 2;
        } else {
            return Err(errors::SYNTAX.into());
        }
    }
    let Some(stream) = stream_read(ctx.keys, args[1])? else {
        ctx.out.array(0);
        return Ok(());
    };
    if count == Some(0) {
        ctx.out.null_array();
        return Ok(());
    }
    let entries: Vec<_> = stream
        .range(start, end, rev)
        .take(count.unwrap_or(usize::MAX))
        .collect();
    write_entries(ctx.out, &entries);
    Ok(())
}
