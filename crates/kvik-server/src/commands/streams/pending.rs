//! XACK, XPENDING, XCLAIM and XAUTOCLAIM: a group's pending entries list.
//!
//! XCLAIM and XAUTOCLAIM propagate one idempotent XCLAIM per entry they touch (see
//! [`claim_effect`](super::effects::claim_effect)) rather than themselves, so replicas end up with the same owner,
//! delivery time and count whatever their clocks say. A pending entry whose stream
//! entry was deleted is dropped from the list when a claim meets it.

use super::effects::{claim_effect, propagate_all, setid_effect};
use super::range::{interval_start, parse_bound};
use super::{int_arg, parse_id, stream_mut, stream_read, write_entry, write_id};
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::keyspace::Locked;
use crate::notify::class;
use crate::types::stream::{Group, Name, Stream, StreamId};
use crate::util::numbers::parse_i64;
use kvik_resp::ReplyWriter;

/// `XACK key group id [id ...]`
pub fn xack(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let Some(stream) = stream_read(ctx.keys, args[1])? else {
        ctx.out.int(0);
        return Ok(());
    };
    let Some(group) = stream.groups.get_mut(args[2]) else {
        ctx.out.int(0);
        return Ok(());
    };
    let ids = args[3..]
        .iter()
        .map(|a| parse_id(a, 0, true))
        .collect::<Result<Vec<_>, _>>()?;
    let acked = ids.into_iter().filter(|&id| group.acknowledge(id)).count();
    if acked > 0 {
        ctx.keys.modified_quietly(args[1]);
    }
    ctx.out.int(acked as i64);
    Ok(())
}

fn no_key_or_group(args: &[&[u8]]) -> CmdError {
    format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        String::from_utf8_lossy(args[1]),
        String::from_utf8_lossy(args[2])
    )
    .into()
}

/// The stream at `args[1]` with its group `args[2]`, or the plain NOGROUP error.
fn pending_stream<'l>(
    keys: &'l mut Locked<'_>,
    args: &[&[u8]],
) -> Result<&'l mut Stream, CmdError> {
    match stream_read(keys, args[1])? {
        Some(stream) if stream.groups.contains_key(args[2]) => Ok(stream),
        _ => Err(no_key_or_group(args)),
    }
}

/// `XPENDING key group [[IDLE min-idle] start end count [consumer]]`
pub fn xpending(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() != 3 && !(6..=9).contains(&args.len()) {
        return Err(errors::SYNTAX.into());
    }
    if args.len() == 3 {
        let stream = pending_stream(ctx.keys, args)?;
        write_summary(ctx.out, &stream.groups[args[2]]);
        return Ok(());
    }
    let mut at = 3;
    let mut min_idle = 0;
    if args::is(args[3], "idle") {
        min_idle = int_arg(args[4])?;
        if args.len() < 8 {
            return Err(errors::SYNTAX.into());
        }
        at = 5;
    }
    let mut count = int_arg(args[at + 2])?.max(0);
    let start = interval_start(args[at])?;
    let end = match parse_bound(args[at + 1], u64::MAX)? {
        (id, true) => id
            .prev()
            .ok_or(CmdError::from("ERR invalid end ID for the interval"))?,
        (id, false) => id,
    };
    let consumer = args.get(at + 3).copied();
    let now = ctx.keys.now_ms as i64;
    let stream = pending_stream(ctx.keys, args)?;
    let group = &stream.groups[args[2]];
    let ids: Vec<StreamId> = match consumer {
        Some(name) => match group.consumers.get(name) {
            Some(c) if start <= end => c.pending.range(start..=end).copied().collect(),
            _ => Vec::new(),
        },
        None if start <= end => group.pel.range(start..=end).map(|(id, _)| *id).collect(),
        None => Vec::new(),
    };
    let mut rows = Vec::new();
    for id in ids {
        if count == 0 {
            break;
        }
        let pending = &group.pel[&id];
        let idle = now - pending.delivered_at as i64;
        if min_idle != 0 && idle < min_idle {
            continue;
        }
        count -= 1;
        rows.push((
            id,
            pending.consumer.clone(),
            idle.max(0),
            pending.deliveries,
        ));
    }
    ctx.out.array(rows.len());
    for (id, consumer, idle, deliveries) in rows {
        ctx.out.array(4);
        write_id(ctx.out, id);
        ctx.out.bulk(&consumer);
        ctx.out.int(idle);
        ctx.out.int(deliveries as i64);
    }
    Ok(())
}

/// `[count, first id, last id, [[consumer, count] ...]]`
fn write_summary(out: &mut ReplyWriter, group: &Group) {
    out.array(4);
    out.int(group.pel.len() as i64);
    let (Some(first), Some(last)) = (group.pel.keys().next(), group.pel.keys().next_back()) else {
        out.null();
        out.null();
        out.null_array();
        return;
    };
    write_id(out, *first);
    write_id(out, *last);
    let busy: Vec<_> = group
        .consumers
        .iter()
        .filter(|(_, c)| !c.pending.is_empty())
        .collect();
    out.array(busy.len());
    for (name, consumer) in busy {
        out.array(2);
        out.bulk(name);
        out.bulk_int(consumer.pending.len() as i64);
    }
}

/// XCLAIM's options after the IDs.
struct ClaimOptions {
    force: bool,
    justid: bool,
    delivered_at: Option<i64>,
    retry_count: Option<i64>,
    last_id: StreamId,
}

fn parse_claim_options(options: &[&[u8]], now: i64) -> Result<ClaimOptions, CmdError> {
    let mut parsed = ClaimOptions {
        force: false,
        justid: false,
        delivered_at: None,
        retry_count: None,
        last_id: StreamId::MIN,
    };
    let mut i = 0;
    while i < options.len() {
        let more = i + 1 < options.len();
        let opt = options[i];
        let number = |error: &'static str| parse_i64(options[i + 1]).ok_or(CmdError::from(error));
        if args::is(opt, "force") {
            parsed.force = true;
        } else if args::is(opt, "justid") {
            parsed.justid = true;
        } else if args::is(opt, "idle") && more {
            parsed.delivered_at =
                Some(now - number("ERR Invalid IDLE option argument for XCLAIM")?);
            i += 1;
        } else if args::is(opt, "time") && more {
            parsed.delivered_at = Some(number("ERR Invalid TIME option argument for XCLAIM")?);
            i += 1;
        } else if args::is(opt, "retrycount") && more {
            parsed.retry_count = Some(number("ERR Invalid RETRYCOUNT option argument for XCLAIM")?);
            i += 1;
        } else if args::is(opt, "lastid") && more {
            parsed.last_id = parse_id(options[i + 1], 0, true)?;
            i += 1;
        } else {
            return Err(format!(
                "ERR Unrecognized XCLAIM option '{}'",
                String::from_utf8_lossy(opt)
            )
            .into());
        }
        i += 1;
    }
    Ok(parsed)
}

/// A minimum idle time argument (negative counts as 0).
fn min_idle_arg(arg: &[u8], command: &str) -> Result<i64, CmdError> {
    parse_i64(arg)
        .map(|n| n.max(0))
        .ok_or_else(|| format!("ERR Invalid min-idle-time argument for {command}").into())
}

/// `XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-ms]
/// [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID id]`
pub fn xclaim(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let now = ctx.keys.now_ms as i64;
    pending_stream(ctx.keys, args)?;
    let min_idle = min_idle_arg(args[4], "XCLAIM")?;
    let ids: Vec<StreamId> = args[5..]
        .iter()
        .map_while(|a| parse_id(a, 0, true).ok())
        .collect();
    let options = parse_claim_options(&args[5 + ids.len()..], now)?;
    let delivered_at = match options.delivered_at {
        Some(at) if (0..=now).contains(&at) => at,
        _ => now,
    } as u64;
    let (key, group_name, consumer) = (args[1], args[2], args[3]);
    // Checked above; looked up again without counting a second keyspace hit.
    let stream = stream_mut(ctx.keys, key)?.expect("checked above");
    let mut moved_last_id = false;
    {
        let group = stream.groups.get_mut(group_name).expect("checked");
        if options.last_id > group.last_id {
            group.last_id = options.last_id;
            moved_last_id = true;
        }
    }
    let mut effects = Vec::new();
    let mut reply = ReplyWriter::with_buf(Vec::new(), ctx.out.protocol);
    let mut claimed = 0;
    let mut owner: Option<(Name, bool)> = None;
    for id in ids {
        let exists = stream.contains(id);
        let group = stream.groups.get_mut(group_name).expect("checked");
        if !exists {
            if group.pel.contains_key(&id) {
                effects.push(drop_deleted(key, group_name, group, id));
            }
            continue;
        }
        // A pending entry FORCE creates starts as delivered once, and skips the idle
        // check.
        let previous_deliveries = match group.pel.get(&id) {
            Some(p) if min_idle != 0 && now - (p.delivered_at as i64) < min_idle => continue,
            Some(p) => p.deliveries,
            None if options.force => 1,
            None => continue,
        };
        let (name, _) = owner.get_or_insert_with(|| claimant(group, consumer, now as u64));
        let deliveries = match options.retry_count {
            Some(n) if n >= 0 => n as u64,
            _ if options.justid => previous_deliveries,
            _ => previous_deliveries + 1,
        };
        group.assign(id, name, delivered_at, deliveries);
        effects.push(claim_effect(
            key,
            group_name,
            name,
            id,
            delivered_at,
            deliveries,
            group.last_id,
        ));
        claimed += 1;
        if options.justid {
            write_id(&mut reply, id);
        } else {
            write_entry(&mut reply, &stream.get(id).expect("exists"));
        }
    }
    if moved_last_id && effects.is_empty() {
        let group = &stream.groups[group_name];
        effects.push(setid_effect(key, group_name, group));
    }
    if moved_last_id || !effects.is_empty() {
        ctx.keys.modified_quietly(key);
    }
    created_event(ctx.keys, key, &owner);
    ctx.propagated = true;
    propagate_all(ctx.keys, &effects);
    ctx.out.array(claimed);
    ctx.out.buf.extend_from_slice(&reply.buf);
    Ok(())
}

/// The consumer a claim gives entries to, created when it claims its first one (as
/// in Redis) and seen now; and whether it was created.
fn claimant(group: &mut Group, consumer: &[u8], now: u64) -> (Name, bool) {
    let (claimant, created) = group.consumer(consumer, now);
    claimant.seen_at = now;
    (group.consumer_name(consumer).expect("made"), created)
}

/// `xgroup-createconsumer` when the claim created its consumer.
fn created_event(keys: &Locked<'_>, key: &[u8], owner: &Option<(Name, bool)>) {
    if owner.as_ref().is_some_and(|(_, created)| *created) {
        keys.notify(class::STREAM, "xgroup-createconsumer", key);
    }
}

/// `XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]`:
/// `[next start, claimed entries, IDs dropped because their entries are gone]`.
pub fn xautoclaim(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let now = ctx.keys.now_ms;
    let min_idle = min_idle_arg(args[4], "XAUTOCLAIM")?;
    let start = interval_start(args[5])?;
    let mut count: i64 = 100;
    let mut justid = false;
    let mut i = 6;
    while i < args.len() {
        if args::is(args[i], "count") && i + 1 < args.len() {
            count = match parse_i64(args[i + 1]) {
                Some(n) if n >= 1 => n,
                _ => return Err("ERR COUNT must be > 0".into()),
            };
            i += 1;
        } else if args::is(args[i], "justid") {
            justid = true;
        } else {
            return Err(errors::SYNTAX.into());
        }
        i += 1;
    }
    let (key, group_name, consumer) = (args[1], args[2], args[3]);
    let stream = pending_stream(ctx.keys, args)?;
    if count > i64::MAX / 16 {
        return Err("ERR COUNT must be > 0".into());
    }
    let mut attempts = count.saturating_mul(10);
    let mut left = count;
    let candidates: Vec<StreamId> = stream.groups[group_name]
        .pel
        .range(start..)
        .map(|(id, _)| *id)
        .collect();
    let mut examined = 0;
    let mut claimed = Vec::new();
    let mut deleted = Vec::new();
    let mut effects = Vec::new();
    let mut owner: Option<(Name, bool)> = None;
    for &id in &candidates {
        if attempts == 0 || left == 0 {
            break;
        }
        attempts -= 1;
        examined += 1;
        let exists = stream.contains(id);
        let group = stream.groups.get_mut(group_name).expect("checked");
        if !exists {
            effects.push(drop_deleted(key, group_name, group, id));
            deleted.push(id);
            left -= 1;
            continue;
        }
        let pending = &group.pel[&id];
        if min_idle != 0 && (now as i64) - (pending.delivered_at as i64) < min_idle {
            continue;
        }
        let deliveries = pending.deliveries + u64::from(!justid);
        let (name, _) = owner.get_or_insert_with(|| claimant(group, consumer, now));
        group.assign(id, name, now, deliveries);
        effects.push(claim_effect(
            key,
            group_name,
            name,
            id,
            now,
            deliveries,
            group.last_id,
        ));
        claimed.push(id);
        left -= 1;
    }
    let next = candidates.get(examined).copied().unwrap_or(StreamId::MIN);
    ctx.out.array(3);
    write_id(ctx.out, next);
    ctx.out.array(claimed.len());
    for &id in &claimed {
        if justid {
            write_id(ctx.out, id);
        } else {
            write_entry(ctx.out, &stream.get(id).expect("exists"));
        }
    }
    ctx.out.array(deleted.len());
    for &id in &deleted {
        write_id(ctx.out, id);
    }
    if !effects.is_empty() {
        ctx.keys.modified_quietly(key);
    }
    created_event(ctx.keys, key, &owner);
    ctx.propagated = true;
    propagate_all(ctx.keys, &effects);
    Ok(())
}

/// A pending entry whose stream entry was deleted leaves the group's pending list
/// when a claim meets it; the effect says so to replicas (Redis propagates the XCLAIM
/// it would have made, which acknowledges the missing entry there too).
fn drop_deleted(key: &[u8], group_name: &[u8], group: &mut Group, id: StreamId) -> Vec<Vec<u8>> {
    let pending = &group.pel[&id];
    let effect = claim_effect(
        key,
        group_name,
        &pending.consumer,
        id,
        pending.delivered_at,
        pending.deliveries,
        group.last_id,
    );
    group.acknowledge(id);
    effect
}
