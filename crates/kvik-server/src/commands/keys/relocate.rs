//! Keys that change name or database: RENAME, RENAMENX, MOVE, COPY.
//!
//! RENAME and MOVE move the entry itself (value, deadline and access clock) rather
//! than copying the value; COPY duplicates the value. They propagate verbatim (their
//! outcome depends only on the data, which a replica holds too), except RENAME and
//! RENAMENX on an active replica, whose peers may hold another source.

use super::super::table::{LockRequest, Need, Needs};
use super::super::{args, errors, CmdError, CmdResult, Ctx};
use super::{count_read, db_arg};
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
    if let Some(overwritten) = ctx.keys.insert_moved_in(db, entry) {
        overwritten.free(ctx.server.keyspace.lazy(crate::lazyfree::Cause::ServerDel));
    }
    ctx.keys.notify(class::GENERIC, "rename_from", from);
    ctx.keys.notify(class::GENERIC, "rename_to", to);
    if ctx.server.keyspace.keeps_graves() {
        propagate_move_whole(ctx, from, to);
    }
    Ok(true)
}

/// An active replica sends what a rename did, not the rename: the source's
/// removal and the entry it moved, whole (RESTORE ... REPLACE ABSTTL). A peer
/// whose source differs (written concurrently, or removed) would otherwise move
/// its own value, or refuse the rename, and keep a destination nobody else has;
/// this way each key merges by last writer on its own.
fn propagate_move_whole(ctx: &mut Ctx, from: &[u8], to: &[u8]) {
    let Some(entry) = ctx.keys.peek(to) else {
        return;
    };
    let payload = crate::persistence::rdb::payload::dump(&entry.value, false);
    let deadline = entry.expire_at.to_string();
    ctx.propagate(&[b"DEL", from]);
    ctx.propagate(&[
        b"RESTORE",
        to,
        deadline.as_bytes(),
        &payload,
        b"REPLACE",
        b"ABSTTL",
    ]);
}

/// MOVE key db: only into a database where the key does not exist.
pub(super) fn move_(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let src = ctx.client.db;
    let dst = db_arg(args[2], ctx.server.keyspace.databases())?;
    if src == dst {
        return Err(SAME_OBJECT.into());
    }
    let keys = &mut *ctx.keys;
    let moved = keys.get_in(src, key).is_some() && keys.get_in(dst, key).is_none();
    if moved {
        let entry = keys.remove_in(src, key).expect("live: looked up above");
        keys.insert_moved_in(dst, entry);
        keys.notify_in(src, class::GENERIC, "move_from", key);
        keys.notify_in(dst, class::GENERIC, "move_to", key);
    }
    ctx.out.int(moved.into());
    Ok(())
}

/// What MOVE locks: its key in the client's database and in the target one.
pub(super) fn move_needs(request: &LockRequest) -> Needs {
    match db_arg(request.args[2], request.databases) {
        Ok(dst) => Needs::from_iter([
            Need::Key {
                db: request.db,
                arg: 1,
            },
            Need::Key { db: dst, arg: 1 },
        ]),
        Err(_) => Needs::new(),
    }
}

/// COPY's options after the two keys: the target database and REPLACE.
fn copy_options(args: &[&[u8]], db: usize, databases: usize) -> Result<(usize, bool), CmdError> {
    let (mut dst, mut replace) = (db, false);
    let mut i = 3;
    while i < args.len() {
        if args::is(args[i], "REPLACE") {
            replace = true;
        } else if args::is(args[i], "DB") && i + 1 < args.len() {
            dst = db_arg(args[i + 1], databases)?;
            i += 1;
        } else {
            return Err(errors::SYNTAX.into());
        }
        i += 1;
    }
    Ok((dst, replace))
}

/// COPY source destination [DB destination-db] [REPLACE]: a deep copy of the value,
/// with the source's deadline.
pub(super) fn copy(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (from, to) = (args[1], args[2]);
    let src = ctx.client.db;
    let (dst, replace) = copy_options(args, src, ctx.server.keyspace.databases())?;
    if src == dst && from == to {
        return Err(SAME_OBJECT.into());
    }
    let keys = &mut *ctx.keys;
    let source = keys.get_in(src, from).map(|e| e.expire_at);
    count_read(keys.env().stats, source.is_some());
    let copied = match source {
        Some(_) if keys.get_in(dst, to).is_some() && !replace => false,
        Some(expire_at) => {
            let replacing = keys.get_in(dst, to).is_some();
            let value = keys
                .get_in(src, from)
                .expect("live: looked up above")
                .value
                .clone();
            keys.set_in(dst, to, value, expire_at);
            if replacing {
                // Redis deletes the old target first: the copy is a new key all the same.
                keys.notify_in(dst, class::NEW, "new", to);
            }
            keys.notify_in(dst, class::GENERIC, "copy_to", to);
            true
        }
        None => false,
    };
    ctx.out.int(copied.into());
    Ok(())
}

/// What COPY locks: the source in the client's database, the destination in the
/// target one.
pub(super) fn copy_needs(request: &LockRequest) -> Needs {
    match copy_options(request.args, request.db, request.databases) {
        Ok((dst, _)) => Needs::from_iter([
            Need::Key {
                db: request.db,
                arg: 1,
            },
            Need::Key { db: dst, arg: 2 },
        ]),
        Err(_) => Needs::new(),
    }
}
