//! Changes inside a list: LSET, LTRIM, LREM, LINSERT. Each propagates verbatim when
//! it changed something and not at all otherwise (an LTRIM that keeps everything, an
//! LREM that found nothing, an LINSERT whose pivot is missing).

use super::{commit, list_mut, node_limit};
use crate::commands::shared::index_span;
use crate::commands::{args, errors, CmdResult, Ctx};
use crate::notify::class;
use crate::types::list::End;

const INDEX_OUT_OF_RANGE: &str = "ERR index out of range";

/// `LSET key index element`: the key must exist (`ERR no such key`), and is looked up
/// before the index is parsed.
pub fn lset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let limit = node_limit(ctx);
    let key = args[1];
    let Some(list) = list_mut(ctx.keys, key)? else {
        return Err(errors::NO_SUCH_KEY.into());
    };
    let index = args::int(args[2])?;
    let Some(i) = list.position(index) else {
        return Err(INDEX_OUT_OF_RANGE.into());
    };
    list.set(i, args[3], limit);
    commit(ctx.keys, key, 1, false, "lset");
    ctx.out.ok();
    Ok(())
}

/// `LTRIM key start stop`: keeps only that range; an empty range deletes the key.
pub fn ltrim(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let start = args::int(args[2])?;
    let stop = args::int(args[3])?;
    let key = args[1];
    if let Some(list) = list_mut(ctx.keys, key)? {
        let len = list.len();
        let span = index_span(start, stop, len);
        let (first, kept) = (span.start, span.len());
        list.discard(End::Head, first);
        list.discard(End::Tail, len - first - kept);
        let emptied = list.is_empty();
        if len == kept {
            // Nothing trimmed: no change to record, but Redis raises the event.
            ctx.keys.notify(class::LIST, "ltrim", key);
        }
        commit(ctx.keys, key, len - kept, emptied, "ltrim");
    }
    ctx.out.ok();
    Ok(())
}

/// `LREM key count element`: removes the first `count` matches from the head, the
/// last `-count` from the tail, or all of them for 0.
pub fn lrem(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let count = args::int(args[2])?;
    let limit = node_limit(ctx);
    let key = args[1];
    let Some(list) = list_mut(ctx.keys, key)? else {
        ctx.out.int(0);
        return Ok(());
    };
    let (from, max) = match count {
        0 => (End::Head, usize::MAX),
        1.. => (End::Head, count as usize),
        _ => (End::Tail, count.unsigned_abs() as usize),
    };
    let removed = list.remove_matching(args[3], max, from, limit);
    let emptied = list.is_empty();
    commit(ctx.keys, key, removed, emptied, "lrem");
    ctx.out.int(removed as i64);
    Ok(())
}

/// `LINSERT key BEFORE|AFTER pivot element`: the new length, -1 without the pivot, 0
/// without the key.
pub fn linsert(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let side = if args::is(args[2], "before") {
        End::Head
    } else if args::is(args[2], "after") {
        End::Tail
    } else {
        return Err(errors::SYNTAX.into());
    };
    let limit = node_limit(ctx);
    let key = args[1];
    let Some(list) = list_mut(ctx.keys, key)? else {
        ctx.out.int(0);
        return Ok(());
    };
    if !list.insert_beside(args[3], side, args[4], limit) {
        ctx.out.int(-1);
        return Ok(());
    }
    let len = list.len();
    commit(ctx.keys, key, 1, false, "linsert");
    ctx.out.int(len as i64);
    Ok(())
}
