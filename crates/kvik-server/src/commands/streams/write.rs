//! XADD, XTRIM, XDEL, XSETID and XLEN: adding entries and taking them away.
//!
//! XADD and XTRIM share their trimming options (`MAXLEN|MINID [=|~] threshold [LIMIT
//! count]`), parsed by [`TrimArgs::parse`]. A `~` trim removes whole nodes only, so
//! what it removes depends on the node layout; for replicas the command is rewritten
//! to the exact trim it amounted to.

use super::{id_arg, int_arg, parse_add_id, parse_id, stream_mut, stream_read, write_id};
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::notify::class;
use crate::server::Server;
use crate::types::stream::{NodeLimits, Stream, StreamId, Trim, TrimTo};
use crate::types::Value;

/// The node size limits in force.
pub fn node_limits(server: &Server) -> NodeLimits {
    let config = server.config.read();
    NodeLimits {
        max_entries: config.stream_node_max_entries,
        max_bytes: config.stream_node_max_bytes,
    }
}

/// The options XADD and XTRIM share, and where their arguments were.
#[derive(Default)]
struct TrimArgs {
    trim: Option<Trim>,
    /// Index of the threshold argument (the `~` is right before it when approximate).
    threshold_at: usize,
    no_mkstream: bool,
    /// XADD: the ID argument's index and the ID, when one was given.
    id_at: usize,
    id: Option<(StreamId, bool)>,
}

impl TrimArgs {
    /// Parse from `args[2]` on. For XADD, stops at the ID (`*` or explicit).
    fn parse(args: &[&[u8]], xadd: bool, server: &Server) -> Result<TrimArgs, CmdError> {
        let mut parsed = TrimArgs::default();
        let mut to: Option<TrimTo> = None;
        let mut approx = false;
        let mut limit: Option<i64> = None;
        let mut i = 2;
        while i < args.len() {
            let more = args.len() - 1 - i;
            let opt = args[i];
            if xadd && opt == b"*" {
                break;
            } else if (args::is(opt, "maxlen") || args::is(opt, "minid")) && more > 0 {
                if to.is_some() {
                    return Err("ERR syntax error, MAXLEN and MINID options at the same time are not compatible".into());
                }
                approx = false;
                let next = args[i + 1];
                if more >= 2 && (next == b"~" || next == b"=") {
                    approx = next == b"~";
                    i += 1;
                }
                let threshold = args[i + 1];
                to = Some(if args::is(opt, "maxlen") {
                    let max = int_arg(threshold)?;
                    if max < 0 {
                        return Err("ERR The MAXLEN argument must be >= 0.".into());
                    }
                    TrimTo::MaxLen(max as u64)
                } else {
                    TrimTo::MinId(parse_id(threshold, 0, true)?)
                });
                i += 1;
                parsed.threshold_at = i;
            } else if args::is(opt, "limit") && more > 0 {
                let n = int_arg(args[i + 1])?;
                if n < 0 {
                    return Err("ERR The LIMIT argument must be >= 0.".into());
                }
                limit = Some(n);
                i += 1;
            } else if xadd && args::is(opt, "nomkstream") {
                parsed.no_mkstream = true;
            } else if xadd {
                parsed.id = Some(parse_add_id(opt)?);
                break;
            } else {
                return Err(errors::SYNTAX.into());
            }
            i += 1;
        }
        parsed.id_at = i;
        let Some(to) = to else {
            if limit.is_some_and(|n| n != 0) {
                return Err(
                    "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
                        .into(),
                );
            }
            if !xadd {
                return Err(
                    "ERR syntax error, XTRIM must be called with a trimming strategy".into(),
                );
            }
            return Ok(parsed);
        };
        let limit = match limit {
            Some(_) if !approx => {
                return Err(
                    "ERR syntax error, LIMIT cannot be used without the special ~ option".into(),
                )
            }
            Some(n) => n as u64,
            None if approx => default_limit(server),
            None => 0,
        };
        parsed.trim = Some(Trim { to, approx, limit });
        Ok(parsed)
    }
}

/// The work bound of a `~` trim without LIMIT: 100 nodes' worth, at most 10000.
fn default_limit(server: &Server) -> u64 {
    let limit = node_limits(server).max_entries.saturating_mul(100);
    if limit == 0 || limit > 10_000 {
        10_000
    } else {
        limit
    }
}

/// Trim `stream`. After a `~` trim, also the exact threshold it amounted to, which
/// replicas get in place of the `~` one.
fn trim_exactly(stream: &mut Stream, trim: Trim) -> (u64, Option<Vec<u8>>) {
    let removed = stream.trim(trim);
    let threshold = trim.approx.then(|| match trim.to {
        TrimTo::MaxLen(_) => stream.len().to_string().into_bytes(),
        TrimTo::MinId(_) => id_arg(stream.first_stored_id()),
    });
    (removed, threshold)
}

/// The command as replicas get it: `args` with the trim made exact (`= threshold`) and
/// the ID replaced, where given.
fn rewritten<'a>(
    args: &[&'a [u8]],
    threshold: Option<(usize, &'a [u8])>,
    id: Option<(usize, &'a [u8])>,
) -> Vec<&'a [u8]> {
    let mut argv = args.to_vec();
    if let Some((at, text)) = threshold {
        argv[at - 1] = b"=";
        argv[at] = text;
    }
    if let Some((at, text)) = id {
        argv[at] = text;
    }
    argv
}

/// `XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value
/// [field value ...]`
pub fn xadd(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let parsed = TrimArgs::parse(args, true, ctx.server)?;
    let fields_at = parsed.id_at + 1;
    if args.len() < fields_at + 2 || (args.len() - fields_at) % 2 == 1 {
        return Err("ERR wrong number of arguments for 'xadd' command".into());
    }
    if let Some((id, true)) = parsed.id {
        if id.is_zero() {
            return Err("ERR The ID specified in XADD must be greater than 0-0".into());
        }
    }
    let key = args[1];
    if stream_mut(ctx.keys, key)?.is_none() {
        if parsed.no_mkstream {
            ctx.out.null();
            return Ok(());
        }
        ctx.keys.set(key, Value::Stream(Box::default()), 0);
    }
    let limits = node_limits(ctx.server);
    let now = ctx.keys.now_ms;
    let stream = stream_mut(ctx.keys, key)?.expect("just made");
    if stream.last_id == StreamId::MAX {
        return Err(
            "ERR The stream has exhausted the last possible ID, unable to add more items".into(),
        );
    }
    let id = next_id(stream, parsed.id, now).ok_or(CmdError::from(
        "ERR The ID specified in XADD is equal or smaller than the target stream top item",
    ))?;
    stream.append(id, &args[fields_at..], limits);
    write_id(ctx.out, id);
    let (trimmed, threshold) = parsed
        .trim
        .map_or((0, None), |trim| trim_exactly(stream, trim));
    let id_text = id_arg(id);
    let chosen = !matches!(parsed.id, Some((_, true)));
    let argv = rewritten(
        args,
        threshold.as_deref().map(|t| (parsed.threshold_at, t)),
        chosen.then_some((parsed.id_at, id_text.as_slice())),
    );
    ctx.keys.modified(key);
    ctx.keys.notify(class::STREAM, "xadd", key);
    if trimmed > 0 {
        ctx.keys.notify(class::STREAM, "xtrim", key);
    }
    ctx.propagate(&argv);
    Ok(())
}

/// The ID a new entry gets: the one given, `ms-*` completed, or a fresh one from the
/// clock. `None` when it would not be above the last ID.
fn next_id(stream: &Stream, requested: Option<(StreamId, bool)>, now: u64) -> Option<StreamId> {
    let last = stream.last_id;
    let id = match requested {
        Some((id, true)) => id,
        Some((id, false)) if id.ms == last.ms => StreamId::new(id.ms, last.seq.checked_add(1)?),
        Some((id, false)) => id,
        None if now > last.ms => StreamId::new(now, 0),
        None => last.next()?,
    };
    (id > last).then_some(id)
}

/// `XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]`
pub fn xtrim(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let parsed = TrimArgs::parse(args, false, ctx.server)?;
    let trim = parsed.trim.expect("XTRIM needs a strategy");
    let Some(stream) = stream_mut(ctx.keys, args[1])? else {
        ctx.out.int(0);
        return Ok(());
    };
    let (removed, threshold) = trim_exactly(stream, trim);
    ctx.out.int(removed as i64);
    if removed > 0 {
        ctx.keys.modified(args[1]);
        ctx.keys.notify(class::STREAM, "xtrim", args[1]);
        let at = parsed.threshold_at;
        let argv = rewritten(args, threshold.as_deref().map(|t| (at, t)), None);
        ctx.propagate(&argv);
    }
    Ok(())
}

/// `XDEL key id [id ...]`
pub fn xdel(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let Some(stream) = stream_mut(ctx.keys, args[1])? else {
        ctx.out.int(0);
        return Ok(());
    };
    let ids = args[2..]
        .iter()
        .map(|a| parse_id(a, 0, true))
        .collect::<Result<Vec<_>, _>>()?;
    let deleted = ids.into_iter().filter(|&id| stream.delete(id)).count();
    ctx.out.int(deleted as i64);
    if deleted > 0 {
        ctx.keys.modified(args[1]);
        ctx.keys.notify(class::STREAM, "xdel", args[1]);
    }
    Ok(())
}

/// `XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]`
pub fn xsetid(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let id = parse_id(args[2], 0, true)?;
    let mut entries_added = None;
    let mut max_deleted = StreamId::MIN;
    let mut i = 3;
    while i < args.len() {
        let more = i + 1 < args.len();
        if args::is(args[i], "entriesadded") && more {
            let n = int_arg(args[i + 1])?;
            if n < 0 {
                return Err("ERR entries_added must be positive".into());
            }
            entries_added = Some(n as u64);
        } else if args::is(args[i], "maxdeletedid") && more {
            max_deleted = parse_id(args[i + 1], 0, true)?;
            if id < max_deleted {
                return Err("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id".into());
            }
        } else {
            return Err(errors::SYNTAX.into());
        }
        i += 2;
    }
    let Some(stream) = stream_mut(ctx.keys, args[1])? else {
        return Err(errors::NO_SUCH_KEY.into());
    };
    if let Some(last) = stream.last_entry().map(|e| e.id) {
        if id < last {
            return Err(
                "ERR The ID specified in XSETID is smaller than the target stream top item".into(),
            );
        }
        if entries_added.is_some_and(|n| n < stream.len()) {
            return Err("ERR The entries_added specified in XSETID is smaller than the target stream length".into());
        }
    }
    stream.last_id = id;
    if let Some(n) = entries_added {
        stream.entries_added = n;
    }
    if !max_deleted.is_zero() {
        stream.max_deleted_id = max_deleted;
    }
    ctx.keys.modified_quietly(args[1]);
    ctx.keys.notify(class::STREAM, "xsetid", args[1]);
    ctx.out.ok();
    Ok(())
}

/// `XLEN key`
pub fn xlen(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let len = stream_read(ctx.keys, args[1])?.map_or(0, |s| s.len());
    ctx.out.int(len as i64);
    Ok(())
}
