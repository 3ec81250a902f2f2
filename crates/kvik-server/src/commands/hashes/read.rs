//! Reading fields: HGET, HMGET, HEXISTS, HSTRLEN, HLEN, and the whole-hash reads
//! HGETALL (a map in RESP3), HKEYS and HVALS. A missing key reads as an empty hash.

use super::read_hash;
use crate::commands::{CmdResult, Ctx};
use crate::types::hash::Hash;

pub fn hget(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match read_hash(ctx.keys, args[1])?.and_then(|h| h.get(args[2])) {
        Some(value) => ctx.out.bulk(value),
        None => ctx.out.null(),
    }
    Ok(())
}

/// HMGET fails on a key of another type (unlike MGET).
pub fn hmget(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let hash = read_hash(ctx.keys, args[1])?;
    ctx.out.array(args.len() - 2);
    for field in &args[2..] {
        match hash.and_then(|h| h.get(field)) {
            Some(value) => ctx.out.bulk(value),
            None => ctx.out.null(),
        }
    }
    Ok(())
}

pub fn hexists(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let found = read_hash(ctx.keys, args[1])?.is_some_and(|h| h.contains(args[2]));
    ctx.out.int(i64::from(found));
    Ok(())
}

pub fn hstrlen(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let len = read_hash(ctx.keys, args[1])?
        .and_then(|h| h.get(args[2]))
        .map_or(0, <[u8]>::len);
    ctx.out.int(len as i64);
    Ok(())
}

pub fn hlen(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let len = read_hash(ctx.keys, args[1])?.map_or(0, Hash::len);
    ctx.out.int(len as i64);
    Ok(())
}

pub fn hgetall(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    reply_all(ctx, args[1], Parts::Both)
}

pub fn hkeys(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    reply_all(ctx, args[1], Parts::Fields)
}

pub fn hvals(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    reply_all(ctx, args[1], Parts::Values)
}

/// What a whole-hash read returns of each pair.
#[derive(Clone, Copy, PartialEq)]
enum Parts {
    Fields,
    Values,
    Both,
}

/// Every pair of the hash: a map of fields to values, or a flat array of one side.
fn reply_all(ctx: &mut Ctx, key: &[u8], parts: Parts) -> CmdResult {
    let hash = read_hash(ctx.keys, key)?;
    let len = hash.map_or(0, Hash::len);
    match parts {
        Parts::Both => ctx.out.map(len),
        Parts::Fields | Parts::Values => ctx.out.array(len),
    }
    for (field, value) in hash.into_iter().flat_map(Hash::iter) {
        if parts != Parts::Values {
            ctx.out.bulk(field);
        }
        if parts != Parts::Fields {
            ctx.out.bulk(value);
        }
    }
    Ok(())
}
