//! Setting, deleting and renaming fields: HSET, HMSET, HSETNX, HDEL, and KeyDB's
//! KEYDB.HRENAME. All but the last propagate verbatim, and only when they changed
//! something (HSET always does, even when it rewrites a value with itself, as in
//! Redis).

use super::{limits, write_hash};
use crate::commands::{CmdError, CmdResult, Ctx};
use crate::types::member_expiry::MemberExpiry;

/// HSET key field value [field value ...]: replies with the number of new fields.
pub fn hset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let added = set_pairs(ctx, args, "hset")?;
    ctx.out.int(added as i64);
    Ok(())
}

/// HMSET: HSET's older twin, replying OK.
pub fn hmset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    set_pairs(ctx, args, "hmset")?;
    ctx.out.ok();
    Ok(())
}

/// Set every field/value pair of `args[2..]`; returns how many fields are new.
fn set_pairs(ctx: &mut Ctx, args: &[&[u8]], name: &str) -> Result<usize, CmdError> {
    if !args.len().is_multiple_of(2) {
        return Err(format!("ERR wrong number of arguments for '{name}' command").into());
    }
    let limits = limits(ctx);
    let pairs = args[2..].chunks_exact(2);
    let changes = pairs.len() as u64;
    write_hash(ctx.keys, args[1], "hset", |hash| {
        // A field given a new value loses its deadline, as in Redis 7.4.
        let added = pairs
            .filter(|p| {
                let new = hash.insert(p[0], p[1], limits);
                if !new {
                    hash.clear_deadline(p[0]);
                }
                new
            })
            .count();
        Ok((added, changes))
    })
}

/// HSETNX key field value: sets the field only if it is not there; 1 if it did.
pub fn hsetnx(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (field, value) = (args[2], args[3]);
    let limits = limits(ctx);
    let added = write_hash(ctx.keys, args[1], "hset", |hash| {
        if hash.contains(field) {
            return Ok((false, 0));
        }
        hash.insert(field, value, limits);
        Ok((true, 1))
    })?;
    // An active replica sends the field it set (HSET): a peer that holds the field
    // already takes the last writer's value instead of keeping its own.
    if added && ctx.server.keyspace.keeps_graves() {
        ctx.propagate(&[b"HSET", args[1], field, value]);
    }
    ctx.out.int(i64::from(added));
    Ok(())
}

/// HDEL key field [field ...]: replies with the number of fields removed; deletes
/// the key with its last field. A missing key is an empty hash: nothing to remove.
pub fn hdel(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let removed = write_hash(ctx.keys, args[1], "hdel", |hash| {
        let removed = args[2..].iter().filter(|f| hash.remove(f)).count();
        Ok((removed, removed as u64))
    })?;
    ctx.out.int(removed as i64);
    Ok(())
}

/// KEYDB.HRENAME key src dst: move the value of field `src` to field `dst`, replacing
/// what `dst` held, and reply 1; a null reply for a missing key and an error for a
/// missing field, as KeyDB answers. It propagates as HDEL and HSET (one MULTI ...
/// EXEC), which every replica understands, Redis's included.
pub fn hrename(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, src, dst) = (args[1], args[2], args[3]);
    if ctx.keys.get(key).is_none() {
        ctx.out.null();
        return Ok(());
    }
    let limits = limits(ctx);
    let value = write_hash(ctx.keys, key, "hset", |hash| {
        let value = hash.get(src).ok_or(NO_SUCH_FIELD)?.to_vec();
        hash.remove(src);
        hash.insert(dst, &value, limits);
        Ok((value, 2))
    })?;
    ctx.out.int(1);
    ctx.propagate(&[b"HDEL", key, src]);
    ctx.propagate(&[b"HSET", key, dst, &value]);
    Ok(())
}

/// KEYDB.HRENAME's error for a source field the hash does not have.
const NO_SUCH_FIELD: &str = "ERR hash key doesn't exist";
