//! Keys that change name or database: RENAME, RENAMENX, MOVE, COPY.
//!
//! RENAME and MOVE move the entry itself (value, deadline and access clock) rather
//! than copying the value; COPY duplicates the value. All of them propagate verbatim:
//! their outcome depends only on the data, which a replica holds too.

use super::super::{args, errors, CmdError, CmdResult, Ctx};
use super::{count_read, db_arg, under_own_locks};
use crate::keyspace::Locked;
use crate::notify::class;

const SAME_OBJECT: &str = "ERR source and destination objects are the same";

pub(super) fn rename(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if rename_key(ctx, args[1], args[2], false)? {
        ctx.out.ok();
    }
    Ok(())
}

pub(super) fn renamenx(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let renamed = rename_key(ctx, args[1], args[2], true)?;
    ctx.out.int(renamed.into());
    Ok(())
}

/// Give `from`'s entry the name `to`, replacing what `to` held unless `only_new`.
/// Returns whether it did; renaming a key to itself succeeds without a change, except
/// for RENAMENX, for which the target exists.
fn rename_key(ctx: &mut Ctx, from: &[u8], to: &[u8], only_new: bool) -> Result<bool, CmdError> {
    if ctx.keys.get(from).is_none() {
        return Err(errors::NO_SUCH_KEY.into());
    }
    if from == to {
        return Ok(!only_new);
    }
    if only_new && ctx.keys.get(to).is_some() {
        return Ok(false);
    }
    let entry = ctx
        .keys
        .remove(from)
        .expect("live: looked up above")
        .renamed(to);
    let db = ctx.keys.db;
    ctx.keys.insert_moved_in(db, entry);
    ctx.notify(class::GENERIC, "rename_from", from);
    ctx.notify(class::GENERIC, "rename_to", to);
    Ok(true)
}

/// MOVE key db: only into a database where the key does not exist.
pub(super) fn move_(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let src = ctx.client.db;
    let dst = db_arg(args[2], ctx.server.keyspace.databases())?;
    if src == dst {
        return Err(SAME_OBJECT.into());
    }
    let locked = lock_pair(ctx, (src, key), (dst, key));
    let moved = under_own_locks(ctx, args, locked, |keys| {
        if keys.get_in(src, key).is_none() || keys.get_in(dst, key).is_some() {
            return false;
        }
        let entry = keys.remove_in(src, key).expect("live: looked up above");
        keys.insert_moved_in(dst, entry);
        let bus = keys.env().bus;
        bus.notify(class::GENERIC, "move_from", src, key);
        bus.notify(class::GENERIC, "move_to", dst, key);
        true
    });
    ctx.out.int(moved.into());
    Ok(())
}

/// COPY source destination [DB destination-db] [REPLACE]: a deep copy of the value,
/// with the source's deadline.
pub(super) fn copy(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (from, to) = (args[1], args[2]);
    let src = ctx.client.db;
    let mut dst = src;
    let mut replace = false;
    let mut i = 3;
    while i < args.len() {
        if args::is(args[i], "REPLACE") {
            replace = true;
        } else if args::is(args[i], "DB") && i + 1 < args.len() {
            dst = db_arg(args[i + 1], ctx.server.keyspace.databases())?;
            i += 1;
        } else {
            return Err(errors::SYNTAX.into());
        }
        i += 1;
    }
    if src == dst && from == to {
        return Err(SAME_OBJECT.into());
    }
    let locked = lock_pair(ctx, (src, from), (dst, to));
    let copied = under_own_locks(ctx, args, locked, |keys| {
        let source = keys.get_in(src, from).map(|e| e.expire_at);
        count_read(keys.env().stats, source.is_some());
        let Some(expire_at) = source else {
            return false;
        };
        let replacing = keys.get_in(dst, to).is_some();
        if replacing && !replace {
            return false;
        }
        let value = keys
            .get_in(src, from)
            .expect("live: looked up above")
            .value
            .clone();
        keys.set_in(dst, to, value, expire_at);
        let bus = keys.env().bus;
        if replacing {
            // Redis deletes the old target first: the copy is a new key all the same.
            bus.notify(class::NEW, "new", dst, to);
        }
        bus.notify(class::GENERIC, "copy_to", dst, to);
        true
    });
    ctx.out.int(copied.into());
    Ok(())
}

/// Lock the shards of a source and a target key, each in its own database.
fn lock_pair<'a>(ctx: &Ctx<'_, 'a>, from: (usize, &[u8]), to: (usize, &[u8])) -> Locked<'a> {
    Locked::keys_across(ctx.key_env(), ctx.client.db, ctx.keys.now_ms, &[from, to])
}
