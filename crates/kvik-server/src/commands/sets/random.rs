//! Random members: SPOP and SRANDMEMBER.
//!
//! A hashtable set keeps its members in a dense array, so a random member is one
//! random position: every member is equally likely, with no probing.
//!
//! Effects, as Redis 7.0 propagates them: SPOP never as itself but as `SREM key
//! member`, one effect per member popped (Redis sends several inside MULTI/EXEC;
//! that wrapping belongs to whatever consumes the effect stream); a count that takes
//! the whole set propagates as `DEL key`. SRANDMEMBER is a read.

use super::{max_intset, read_set, reply_member, reply_set, write_set};
use crate::commands::shared::settle_collection;
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::notify::class;
use crate::types::set::{Member, MemberRef};
use crate::types::Value;
use crate::util::numbers::parse_i64;
use rand::Rng;

/// SPOP with a count rebuilds the set when it leaves at most one member for every
/// this many popped (Redis then builds a new set from the survivors, whose encoding
/// is chosen afresh: a hashtable of a few integers becomes an intset again).
const REBUILD_RATIO: usize = 5;

pub fn spop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match args.len() {
        2 => spop_one(ctx, args[1]),
        3 => spop_count(ctx, args[1], args[2]),
        _ => Err(errors::SYNTAX.into()),
    }
}

fn spop_one(ctx: &mut Ctx, key: &[u8]) -> CmdResult {
    let Some(set) = write_set(ctx.keys, key)? else {
        ctx.out.null();
        return Ok(());
    };
    let member = set.remove_at(rand::thread_rng().gen_range(0..set.len()));
    let emptied = set.is_empty();
    reply_member(ctx.out, member.as_ref());
    ctx.keys.notify(class::SET, "spop", key);
    settle_collection(ctx.keys, key, emptied);
    propagate_removals(ctx, key, &[member]);
    Ok(())
}

fn spop_count(ctx: &mut Ctx, key: &[u8], count: &[u8]) -> CmdResult {
    let out_of_range = || CmdError::from("ERR value is out of range, must be positive");
    let count = parse_i64(count)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(out_of_range)?;
    let max = max_intset(ctx);
    let Some(set) = write_set(ctx.keys, key)? else {
        ctx.out.set(0);
        return Ok(());
    };
    if count == 0 {
        ctx.out.set(0);
        return Ok(());
    }
    if count >= set.len() {
        return pop_all(ctx, key, max);
    }
    let mut rng = rand::thread_rng();
    let popped: Vec<Member> = (0..count)
        .map(|_| set.remove_at(rng.gen_range(0..set.len())))
        .collect();
    if set.len() * REBUILD_RATIO <= count {
        set.rebuild(max);
    }
    reply_set(ctx.out, popped.len(), popped.iter().map(Member::as_ref));
    ctx.keys.modified(key);
    ctx.keys.notify(class::SET, "spop", key);
    propagate_removals(ctx, key, &popped);
    Ok(())
}

/// SPOP with a count that covers the whole set: reply every member as a set built
/// afresh would list them (so a small hashtable of integers answers in ascending
/// order, as Redis's does), delete the key, propagate `DEL` (on an active replica
/// an SREM per member, as the other pops: a peer takes away only the members this
/// pop saw, see `keyspace/elements.rs`).
fn pop_all(ctx: &mut Ctx, key: &[u8], max_intset: usize) -> CmdResult {
    let entry = ctx.keys.remove(key).expect("looked up above");
    let Value::Set(set) = &entry.value else {
        unreachable!("type checked above")
    };
    let reply_order = (set.len() <= max_intset).then(|| set.rebuilt(max_intset));
    let shown = reply_order.as_ref().unwrap_or(set);
    reply_set(ctx.out, shown.len(), shown.iter());
    let active = ctx.server.keyspace.keeps_graves();
    let members: Vec<Member> = match active {
        true => set.iter().map(MemberRef::to_owned).collect(),
        false => Vec::new(),
    };
    entry.free(ctx.server.keyspace.lazy(crate::lazyfree::Cause::ServerDel));
    ctx.keys.notify(class::SET, "spop", key);
    ctx.keys.notify(class::GENERIC, "del", key);
    if active {
        propagate_removals(ctx, key, &members);
    } else {
        ctx.propagate(&[b"DEL", key]);
    }
    Ok(())
}

/// One `SREM key member` effect per member taken.
fn propagate_removals(ctx: &mut Ctx, key: &[u8], members: &[Member]) {
    let mut digits = itoa::Buffer::new();
    for member in members {
        ctx.propagate(&[b"SREM", key, member.as_ref().bytes(&mut digits)]);
    }
}

pub fn srandmember(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match args.len() {
        2 => srandmember_one(ctx, args[1]),
        3 => srandmember_count(ctx, args[1], args[2]),
        _ => Err(errors::SYNTAX.into()),
    }
}

fn srandmember_one(ctx: &mut Ctx, key: &[u8]) -> CmdResult {
    match read_set(ctx.keys, key)? {
        Some(set) => {
            let at = rand::thread_rng().gen_range(0..set.len());
            reply_member(ctx.out, set.get(at));
        }
        None => ctx.out.null(),
    }
    Ok(())
}

/// A positive count asks for that many distinct members (the whole set if it has no
/// more), a negative one for that many independent picks, repeats allowed. The reply
/// is an array either way, even in RESP3.
fn srandmember_count(ctx: &mut Ctx, key: &[u8], count: &[u8]) -> CmdResult {
    let count = args::int(count)?;
    if count == i64::MIN {
        return Err(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
                .into(),
        );
    }
    let Some(set) = read_set(ctx.keys, key)? else {
        ctx.out.array(0);
        return Ok(());
    };
    let wanted = count.unsigned_abs() as usize;
    let mut rng = rand::thread_rng();
    if count < 0 {
        ctx.out.array(wanted);
        for _ in 0..wanted {
            // Past the client's output limit the reply is dropped: stop drawing.
            if ctx.out.overflowed() {
                break;
            }
            reply_member(ctx.out, set.get(rng.gen_range(0..set.len())));
        }
    } else if wanted >= set.len() {
        ctx.out.array(set.len());
        set.iter().for_each(|m| reply_member(ctx.out, m));
    } else {
        ctx.out.array(wanted);
        for at in rand::seq::index::sample(&mut rng, set.len(), wanted) {
            reply_member(ctx.out, set.get(at));
        }
    }
    Ok(())
}
