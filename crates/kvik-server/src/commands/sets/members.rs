//! Adding, removing and testing members: SADD, SREM, SISMEMBER, SMISMEMBER, SCARD,
//! SMEMBERS and SMOVE.
//!
//! Effects: each propagates as itself when it changed something, and not at all
//! otherwise (`call` appends the argv when a key was changed); on an active
//! replica SADD and SREM of an existing set propagate even when they changed
//! nothing (see `door.rs`: an add of a member already there is still a write its
//! peers must mark), and SMOVE propagates as the SREM and SADD it made.

use super::{max_intset, read_set, reply_set, write_set};
use crate::commands::shared::settle_collection;
use crate::commands::{CmdResult, Ctx};
use crate::notify::class;
use crate::types::set::{MemberRef, Set};
use crate::types::Value;

/// The arguments as members.
fn members<'a>(args: &'a [&'a [u8]]) -> impl Iterator<Item = MemberRef<'a>> + 'a {
    args.iter().map(|m| MemberRef::Bytes(m))
}

/// Store a new set holding just `members` under `key`.
fn create<'m>(
    ctx: &mut Ctx,
    key: &[u8],
    members: impl IntoIterator<Item = MemberRef<'m>>,
) -> usize {
    let set = Set::collect(members, max_intset(ctx));
    let len = set.len();
    ctx.keys.set(key, Value::Set(Box::new(set)), 0);
    len
}

pub fn sadd(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let max = max_intset(ctx);
    let added = match write_set(ctx.keys, key)? {
        Some(set) => {
            let added = args[2..].iter().filter(|m| set.insert(m, max)).count();
            if added > 0 {
                ctx.keys.modified(key);
            }
            added
        }
        None => create(ctx, key, members(&args[2..])),
    };
    if added > 0 {
        ctx.keys.notify(class::SET, "sadd", key);
    }
    ctx.out.int(added as i64);
    Ok(())
}

pub fn srem(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let Some(set) = write_set(ctx.keys, key)? else {
        ctx.out.int(0);
        return Ok(());
    };
    let removed = args[2..].iter().filter(|m| set.remove(m)).count();
    let emptied = set.is_empty();
    if removed > 0 {
        ctx.keys.notify(class::SET, "srem", key);
    }
    if removed > 0 || emptied {
        settle_collection(ctx.keys, key, emptied);
    }
    ctx.out.int(removed as i64);
    Ok(())
}

pub fn sismember(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let present = read_set(ctx.keys, args[1])?.is_some_and(|s| s.contains(args[2]));
    ctx.out.int(i64::from(present));
    Ok(())
}

/// A missing key answers 0 for every member.
pub fn smismember(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let set = read_set(ctx.keys, args[1])?;
    ctx.out.array(args.len() - 2);
    for member in &args[2..] {
        let present = set.is_some_and(|s| s.contains(member));
        ctx.out.int(i64::from(present));
    }
    Ok(())
}

pub fn scard(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let len = read_set(ctx.keys, args[1])?.map_or(0, Set::len);
    ctx.out.int(len as i64);
    Ok(())
}

/// Every member, as a set reply: ascending for an intset.
pub fn smembers(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match read_set(ctx.keys, args[1])? {
        Some(set) => reply_set(ctx.out, set.len(), set.iter()),
        None => ctx.out.set(0),
    }
    Ok(())
}

/// SMOVE source destination member, with Redis's order of checks: a missing source
/// answers 0 before any type is checked; then both keys must hold sets (or nothing,
/// for the destination); moving within one set changes nothing.
pub fn smove(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (source, destination, member) = (args[1], args[2], args[3]);
    if write_set(ctx.keys, source)?.is_none() {
        ctx.out.int(0);
        return Ok(());
    }
    let destination_exists = write_set(ctx.keys, destination)?.is_some();
    let from = write_set(ctx.keys, source)?.expect("looked up above");
    if source == destination {
        let present = from.contains(member);
        ctx.out.int(i64::from(present));
        return Ok(());
    }
    if !from.remove(member) {
        ctx.out.int(0);
        return Ok(());
    }
    let emptied = from.is_empty();
    ctx.keys.notify(class::SET, "srem", source);
    settle_collection(ctx.keys, source, emptied);
    let added = if destination_exists {
        let max = max_intset(ctx);
        let to = write_set(ctx.keys, destination)?.expect("looked up above");
        let added = to.insert(member, max);
        if added {
            ctx.keys.modified(destination);
        }
        added
    } else {
        create(ctx, destination, [MemberRef::Bytes(member)]);
        true
    };
    if added {
        ctx.keys.notify(class::SET, "sadd", destination);
    }
    // An active replica sends what the move did, member by member: a peer whose
    // source set differs merges the removal and the add (see `keyspace/elements.rs`)
    // instead of repeating the move on its own sets.
    if ctx.server.keyspace.keeps_graves() {
        ctx.propagate(&[b"SREM", source, member]);
        ctx.propagate(&[b"SADD", destination, member]);
    }
    ctx.out.int(1);
    Ok(())
}
