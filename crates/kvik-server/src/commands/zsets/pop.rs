//! Popping: ZPOPMIN, ZPOPMAX and ZMPOP.
//!
//! [`pop`] takes members from one end of a set and deletes the key when it runs
//! dry; [`first_with_members`] picks ZMPOP's key; [`propagate_pop`] writes the
//! effects Redis 7.0 gives the pops that are not ZPOPMIN or ZPOPMAX themselves:
//! ZMPOP and BZMPOP become `ZPOPMIN key n` (n the number taken), BZPOPMIN and
//! BZPOPMAX become `ZPOPMIN key` or `ZPOPMAX key`. The blocking forms are built from
//! these three once a key has members.

use super::{change_zset, zset_mut, EntryWriter, Layout};
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::keyspace::Locked;
use crate::types::zset::End;

/// The members taken by a pop, in the order taken.
pub type Popped = Vec<(Vec<u8>, f64)>;

/// Take up to `count` members from the `end` of the set at `key`; `None` without a
/// key. A set left empty is deleted.
pub fn pop(
    keys: &mut Locked<'_>,
    key: &[u8],
    end: End,
    count: usize,
) -> Result<Option<Popped>, CmdError> {
    let event = match end {
        End::Min => "zpopmin",
        End::Max => "zpopmax",
    };
    change_zset(keys, key, event, |zset| {
        let popped = zset.pop(end, count);
        let changed = !popped.is_empty();
        Ok((popped, changed))
    })
}

/// The first of `keys` that exists (sets are never empty), as ZMPOP looks: a key
/// holding another type stops the search with WRONGTYPE; keys after the one found
/// are not looked at.
pub fn first_with_members<'k>(
    keys: &mut Locked<'_>,
    candidates: &[&'k [u8]],
) -> Result<Option<&'k [u8]>, CmdError> {
    for &key in candidates {
        if zset_mut(keys, key)?.is_some() {
            return Ok(Some(key));
        }
    }
    Ok(None)
}

/// The effect of a pop that is not ZPOPMIN or ZPOPMAX itself: `ZPOPMIN key`, or
/// `ZPOPMIN key n` when `taken` says how many members went (and the same with
/// ZPOPMAX). Takes the keys rather than the command's context so that a blocked pop
/// served later, with no context, writes it too; a handler marks its command as
/// propagated itself.
pub fn propagate_pop(keys: &mut Locked<'_>, key: &[u8], end: End, taken: Option<usize>) {
    let name: &[u8] = match end {
        End::Min => b"ZPOPMIN",
        End::Max => b"ZPOPMAX",
    };
    let mut digits = itoa::Buffer::new();
    let db = keys.db;
    match taken {
        Some(n) => keys.propagate(db, &[name, key, digits.format(n).as_bytes()]),
        None => keys.propagate(db, &[name, key]),
    }
}

pub fn zpopmin(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zpop(ctx, args, End::Min)
}

pub fn zpopmax(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zpop(ctx, args, End::Max)
}

/// ZPOPMIN/ZPOPMAX key [count]: a flat member, score list; with a count, RESP3 gets
/// [member, score] pairs instead.
fn zpop(ctx: &mut Ctx, args: &[&[u8]], end: End) -> CmdResult {
    let count = match args {
        [_, _] => None,
        [_, _, count] => Some(at_least(
            count,
            0,
            "ERR value is out of range, must be positive",
        )?),
        _ => return Err(errors::SYNTAX.into()),
    };
    let popped = pop(ctx.keys, args[1], end, count.unwrap_or(1))?.unwrap_or_default();
    let layout = if count.is_some() && ctx.out.is_resp3() {
        Layout::Pairs
    } else {
        Layout::Flat
    };
    write_popped(ctx, layout, &popped);
    Ok(())
}

/// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]: the first key with members,
/// and [member, score] pairs taken from it; nil when every key is empty.
pub fn zmpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let request = MpopRequest::parse(&args[1..])?;
    let Some(key) = first_with_members(ctx.keys, request.keys)? else {
        ctx.out.null_array();
        return Ok(());
    };
    let popped = pop(ctx.keys, key, request.end, request.count)?.unwrap_or_default();
    propagate_pop(ctx.keys, key, request.end, Some(popped.len()));
    ctx.propagated = true;
    ctx.out.array(2);
    ctx.out.bulk(key);
    write_popped(ctx, Layout::Pairs, &popped);
    Ok(())
}

/// What ZMPOP (and BZMPOP after its timeout) asks for.
pub struct MpopRequest<'a> {
    pub keys: &'a [&'a [u8]],
    pub end: End,
    pub count: usize,
}

impl<'a> MpopRequest<'a> {
    /// Parse `numkeys key [key ...] MIN|MAX [COUNT count]`.
    pub fn parse(args: &'a [&'a [u8]]) -> Result<MpopRequest<'a>, CmdError> {
        let numkeys = at_least(args[0], 1, "ERR numkeys should be greater than 0")?;
        // After the keys there must be at least MIN or MAX.
        let Some((keys, rest)) = args[1..]
            .split_at_checked(numkeys)
            .filter(|(_, rest)| !rest.is_empty())
        else {
            return Err(errors::SYNTAX.into());
        };
        let end = match rest[0] {
            e if args::is(e, "min") => End::Min,
            e if args::is(e, "max") => End::Max,
            _ => return Err(errors::SYNTAX.into()),
        };
        let mut count = None;
        let mut options = &rest[1..];
        while let [option, tail @ ..] = options {
            match tail.first() {
                Some(n) if count.is_none() && args::is(option, "count") => {
                    count = Some(at_least(n, 1, "ERR count should be greater than 0")?);
                    options = &tail[1..];
                }
                _ => return Err(errors::SYNTAX.into()),
            }
        }
        let count = count.unwrap_or(1);
        Ok(MpopRequest { keys, end, count })
    }
}

/// An integer argument of at least `least`; anything else (not a number either) is
/// `error`, as Redis words these checks.
fn at_least(arg: &[u8], least: i64, error: &'static str) -> Result<usize, CmdError> {
    args::int(arg)
        .ok()
        .filter(|&n| n >= least)
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
        .ok_or_else(|| error.into())
}

fn write_popped(ctx: &mut Ctx, layout: Layout, popped: &[(Vec<u8>, f64)]) {
    let mut writer = EntryWriter::new(layout);
    writer.header(ctx.out, popped.len());
    for (member, score) in popped {
        writer.entry(ctx.out, member, *score);
    }
}
