//! Intersections, unions and differences: SINTER, SINTERCARD, SUNION, SDIFF, and
//! SINTERSTORE, SUNIONSTORE, SDIFFSTORE.
//!
//! Every key a command names is locked before it runs (the table's key spec covers
//! them all, a STORE form's destination included). The sources are looked up one by
//! one, in order: each must hold a set or nothing, else the command fails with
//! WRONGTYPE even if an earlier key was missing; a missing key is an empty set. Then
//! all the sets are read together.
//!
//! A STORE form replaces its destination whatever it held, dropping its deadline, or
//! deletes it when the result is empty; it replies the result's size and propagates
//! as itself when it changed the keyspace. The stored set is encoded as a set built
//! from the result's members would be (an intset when they are few integers).
//!
//! Reply order: an intersection lists members in the order of its smallest set; a
//! union or difference in the order of the set built from them. Either is ascending
//! when that set is an intset, and unspecified otherwise, as in Redis.

use super::{max_intset, read_set, reply_set};
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::keyspace::Locked;
use crate::notify::class;
use crate::types::set::{MemberRef, Set};
use crate::types::Value;
use std::cmp::Reverse;
use std::ptr;

/// Look every source up, in order, and return them all at once (`None` for a missing
/// key). Each lookup counts a keyspace hit or miss, the STORE forms' too (Redis reads
/// their sources as reads).
fn sources<'k>(
    keys: &'k mut Locked<'_>,
    names: &[&[u8]],
) -> Result<Vec<Option<&'k Set>>, CmdError> {
    for name in names {
        read_set(keys, name)?;
    }
    let keys: &'k Locked<'_> = keys;
    Ok(names
        .iter()
        .map(|name| {
            keys.get_shared(name).map(|entry| match &entry.value {
                Value::Set(set) => &**set,
                _ => unreachable!("type checked above"),
            })
        })
        .collect())
}

/// The sets to intersect, smallest first, or `None` when one is missing (the
/// intersection is then empty).
fn smallest_first(sets: Vec<Option<&Set>>) -> Option<Vec<&Set>> {
    let mut sets: Vec<&Set> = sets.into_iter().collect::<Option<_>>()?;
    sets.sort_by_key(|s| s.len());
    Some(sets)
}

/// The members of the first set that every other set holds too.
fn common<'s, 'v>(sets: &'v [&'s Set]) -> impl Iterator<Item = MemberRef<'s>> + 'v {
    let (&first, others) = sets.split_first().expect("commands name at least one key");
    first.iter().filter(move |&m| {
        others
            .iter()
            .all(|&s| ptr::eq(s, first) || s.contains_member(m))
    })
}

fn union(sets: &[Option<&Set>], max_intset: usize) -> Set {
    let mut result = Set::default();
    for set in sets.iter().flatten() {
        for member in set.iter() {
            result.insert_member(member, max_intset);
        }
    }
    result
}

/// The members of the first set that no other set holds.
fn difference(sets: &[Option<&Set>], max_intset: usize) -> Set {
    let Some((Some(first), rest)) = sets.split_first() else {
        return Set::default();
    };
    let mut others: Vec<&Set> = rest.iter().flatten().copied().collect();
    if others.iter().any(|&s| ptr::eq(s, *first)) {
        return Set::default();
    }
    // Redis picks one of two ways by an estimate of their work, and the choice shows
    // in the result's encoding: the second starts from a copy of the first set and
    // only removes from it, so it keeps the copy's encoding. Same estimate here.
    let membership_checks = first.len() * (others.len() + 1) / 2;
    let members_visited = first.len() + others.iter().map(|s| s.len()).sum::<usize>();
    if membership_checks <= members_visited {
        // Biggest first: a member that is in one of them is found sooner.
        others.sort_by_key(|s| Reverse(s.len()));
        let kept = first
            .iter()
            .filter(|&m| !others.iter().any(|s| s.contains_member(m)));
        Set::collect(kept, max_intset)
    } else {
        let mut result = first.rebuilt(max_intset);
        for set in others {
            if result.is_empty() {
                break;
            }
            for member in set.iter() {
                result.remove_member(member);
            }
        }
        result
    }
}

/// Replace `destination` with `result`, or delete it when the result is empty, and
/// reply the result's size. Raises keyspace `event` (`del` for a deletion).
fn store(ctx: &mut Ctx, destination: &[u8], result: Set, event: &str) {
    let len = result.len();
    if len == 0 {
        if let Some(old) = ctx.keys.remove(destination) {
            old.free(ctx.server.keyspace.lazy(crate::lazyfree::Cause::ServerDel));
            ctx.keys.notify(class::GENERIC, "del", destination);
        }
    } else {
        ctx.keys.set(destination, Value::Set(Box::new(result)), 0);
        ctx.keys.notify(class::SET, event, destination);
    }
    ctx.out.int(len as i64);
}

pub fn sinter(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sets = sources(ctx.keys, &args[1..])?;
    let members: Vec<MemberRef> =
        smallest_first(sets).map_or_else(Vec::new, |sets| common(&sets).collect());
    reply_set(ctx.out, members.len(), members);
    Ok(())
}

pub fn sinterstore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let max = max_intset(ctx);
    let sets = sources(ctx.keys, &args[2..])?;
    let result =
        smallest_first(sets).map_or_else(Set::default, |sets| Set::collect(common(&sets), max));
    store(ctx, args[1], result, "sinterstore");
    Ok(())
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit]: the options are checked before
/// any key; LIMIT 0 means no limit, and the last LIMIT given wins.
pub fn sintercard(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let numkeys = args::int(args[1])
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| CmdError::from("ERR numkeys should be greater than 0"))?;
    let numkeys = usize::try_from(numkeys).unwrap_or(usize::MAX);
    if numkeys > args.len() - 2 {
        return Err("ERR Number of keys can't be greater than number of args".into());
    }
    let (names, mut options) = args[2..].split_at(numkeys);
    let mut limit = 0;
    while let [option, rest @ ..] = options {
        let [value, rest @ ..] = rest else {
            return Err(errors::SYNTAX.into());
        };
        if !args::is(option, "LIMIT") {
            return Err(errors::SYNTAX.into());
        }
        limit = args::int(value)
            .ok()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| CmdError::from("ERR LIMIT can't be negative"))?;
        options = rest;
    }
    let sets = sources(ctx.keys, names)?;
    let count = smallest_first(sets).map_or(0, |sets| {
        let common = common(&sets);
        match limit {
            0 => common.count(),
            _ => common.take(limit).count(),
        }
    });
    ctx.out.int(count as i64);
    Ok(())
}

pub fn sunion(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let max = max_intset(ctx);
    let result = union(&sources(ctx.keys, &args[1..])?, max);
    reply_set(ctx.out, result.len(), result.iter());
    Ok(())
}

pub fn sunionstore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let max = max_intset(ctx);
    let result = union(&sources(ctx.keys, &args[2..])?, max);
    store(ctx, args[1], result, "sunionstore");
    Ok(())
}

pub fn sdiff(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let max = max_intset(ctx);
    let result = difference(&sources(ctx.keys, &args[1..])?, max);
    reply_set(ctx.out, result.len(), result.iter());
    Ok(())
}

pub fn sdiffstore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let max = max_intset(ctx);
    let result = difference(&sources(ctx.keys, &args[2..])?, max);
    store(ctx, args[1], result, "sdiffstore");
    Ok(())
}
