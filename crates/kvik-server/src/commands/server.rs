//! Server commands: DBSIZE FLUSHDB FLUSHALL SWAPDB TIME SAVE BGSAVE BGREWRITEAOF
//! LASTSAVE SHUTDOWN.

use super::table::{acl, flags, Command, Lock};
use super::{args, errors, CmdError, CmdResult, Ctx};
use crate::keyspace::Locked;
use crate::lazyfree::Cause;
use crate::server::saving;
use crate::server::shutdown::{self, Prepared};
use crate::snapshot::SaveError;

pub const COMMANDS: &[Command] = &[
    Command::new("dbsize", 1, dbsize)
        .tips(&["request_policy:all_shards", "response_policy:agg_sum"])
        .flags(flags::READONLY | flags::FAST)
        .acl(acl::KEYSPACE | acl::READ | acl::FAST)
        .lock(Lock::Handler)
        .doc("server", "1.0.0", "O(1)", "Returns the number of keys in the database."),
    Command::new("flushdb", -1, flushdb)
        .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
        .flags(flags::WRITE)
        .acl(acl::KEYSPACE | acl::WRITE | acl::SLOW | acl::DANGEROUS)
        .lock(Lock::Db)
        .doc("server", "1.0.0", "O(N) where N is the total number of keys in all databases", "Remove all keys from the current database."),
    Command::new("flushall", -1, flushall)
        .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
        .flags(flags::WRITE)
        .acl(acl::KEYSPACE | acl::WRITE | acl::SLOW | acl::DANGEROUS)
        .lock(Lock::AllDbs)
        .doc("server", "1.0.0", "O(N) where N is the total number of keys in all databases", "Removes all keys from all databases."),
    Command::new("time", 1, time)
        .tips(&["nondeterministic_output"])
        .flags(flags::LOADING | flags::STALE | flags::FAST)
        .acl(acl::FAST)
        .doc("server", "2.6.0", "O(1)", "Returns the server time."),
    Command::new("lastsave", 1, lastsave)
        .tips(&["nondeterministic_output"])
        .flags(flags::LOADING | flags::STALE | flags::FAST)
        .acl(acl::ADMIN | acl::FAST | acl::DANGEROUS)
        .doc("server", "1.0.0", "O(1)", "Returns the Unix timestamp of the last successful save to disk."),
    Command::new("save", 1, save)
        .tips(&["request_policy:all_shards", "nondeterministic_output"])
        .flags(flags::ADMIN | flags::NOSCRIPT | flags::NO_MULTI)
        .acl(acl::ADMIN | acl::SLOW | acl::DANGEROUS)
        .lock(Lock::Handler)
        .doc("server", "1.0.0", "O(N) where N is the total number of keys in all databases", "Synchronously save the dataset to disk"),
    Command::new("bgsave", -1, bgsave)
        .tips(&["request_policy:all_shards", "nondeterministic_output"])
        .flags(flags::ADMIN | flags::NOSCRIPT)
        .acl(acl::ADMIN | acl::SLOW | acl::DANGEROUS)
        .lock(Lock::Handler)
        .doc("server", "1.0.0", "O(1)", "Asynchronously save the dataset to disk"),
    Command::new("bgrewriteaof", 1, bgrewriteaof)
        .flags(flags::ADMIN | flags::NOSCRIPT)
        .acl(acl::ADMIN | acl::SLOW | acl::DANGEROUS)
        .lock(Lock::Handler)
        .doc("server", "1.0.0", "O(1)", "Asynchronously rewrites the append-only file to disk."),
    Command::new("shutdown", -1, shutdown)
        .flags(flags::ADMIN | flags::NOSCRIPT | flags::LOADING | flags::STALE | flags::NO_MULTI | flags::ALLOW_BUSY)
        .acl(acl::ADMIN | acl::SLOW | acl::DANGEROUS)
        .doc("server", "1.0.0", "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)", "Synchronously saves the database(s) to disk and shuts down the Redis server."),
];

/// A timeout in milliseconds from now (CLIENT PAUSE, WAIT), as an absolute Unix time
/// in ms; 0 stays 0, which means "no timeout".
pub fn timeout_deadline_ms(arg: &[u8]) -> Result<u64, CmdError> {
    let ms = args::int(arg)
        .map_err(|_| CmdError::from("ERR timeout is not an integer or out of range"))?;
    match ms {
        0 => Ok(0),
        ms if ms < 0 => Err("ERR timeout is negative".into()),
        ms => Ok(crate::hlc::unix_ms().saturating_add(ms as u64)),
    }
}

fn dbsize(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let (n, _) = ctx.keys.db_stats(ctx.client.db);
    ctx.out.int(n as i64);
    Ok(())
}

/// FLUSHDB / FLUSHALL take an optional ASYNC or SYNC; without either,
/// `lazyfree-lazy-user-flush` decides. Returns whether to free in the background.
fn parse_flush_mode(ctx: &Ctx, args: &[&[u8]]) -> Result<bool, CmdError> {
    let cause = match args.len() {
        1 => Cause::UserFlush,
        2 if args::is(args[1], "ASYNC") => Cause::Asked,
        2 if args::is(args[1], "SYNC") => Cause::Refused,
        _ => return Err(errors::SYNTAX.into()),
    };
    Ok(ctx.server.keyspace.lazy(cause))
}

/// Empty every shard of `db` (all of them are locked by the caller), freeing the
/// keys on the background thread when `lazy`, here otherwise. A peer's flush being
/// replayed (active replication) removes only the keys written before it: the
/// newer ones were written here concurrently, and win.
pub(crate) fn flush_db(keys: &mut Locked, db: usize, lazy: bool) -> u64 {
    let mut removed = 0;
    keys.signal_db_replaced(db, None);
    let ts = keys.effect_ts();
    for shard in 0..keys.keyspace().shards_per_db() {
        if crate::hlc::imposed_now().is_some() {
            removed += keys.shard_at(db, shard).take_older_than(ts).len() as u64;
            continue;
        }
        let table = keys.shard_at(db, shard).take_all(ts);
        let keys = table.len() as u64;
        removed += keys;
        if keys > 0 && lazy {
            crate::lazyfree::drop_later(table, keys, 0);
        }
    }
    removed
}

/// FLUSHDB and FLUSHALL are propagated even when there was nothing to remove, so a
/// replica that holds keys its master lost is emptied too.
fn flushdb(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let lazy = parse_flush_mode(ctx, args)?;
    let db = ctx.client.db;
    let removed = flush_db(ctx.keys, db, lazy);
    ctx.server.tracking.flushed();
    ctx.keys.add_dirty(removed.max(1));
    ctx.out.ok();
    Ok(())
}

fn flushall(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let lazy = parse_flush_mode(ctx, args)?;
    let mut removed = 0;
    for db in 0..ctx.server.keyspace.databases() {
        removed += flush_db(ctx.keys, db, lazy);
    }
    ctx.server.tracking.flushed();
    ctx.keys.add_dirty(removed.max(1));
    if !ctx.server.config.read().save.is_empty() {
        saving::save_after_flushall(ctx.server, ctx.keys.dirty());
    }
    ctx.out.ok();
    Ok(())
}

fn time(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let us = crate::hlc::unix_us();
    ctx.out.array(2);
    ctx.out.bulk_int((us / 1_000_000) as i64);
    ctx.out.bulk_int((us % 1_000_000) as i64);
    Ok(())
}

/// Before any save, like Redis, the last save is the server's start.
fn lastsave(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.int(ctx.server.persistence.last_save() as i64);
    Ok(())
}

const SAVE_IN_PROGRESS: &str = "ERR Background save already in progress";

/// SAVE: written by this thread; other threads' clients keep running.
fn save(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    match saving::save(ctx.server) {
        Ok(()) => {
            ctx.out.ok();
            Ok(())
        }
        Err(SaveError::InProgress) => Err(SAVE_IN_PROGRESS.into()),
        Err(_) => Err("ERR".into()),
    }
}

/// BGSAVE [SCHEDULE]. Inside a transaction (which holds every shard) it is
/// scheduled, as Redis schedules it inside EXEC; during an AOF rewrite only with
/// SCHEDULE, as Redis answers while its rewrite child runs.
fn bgsave(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let schedule = match args {
        [_] => false,
        [_, option] if args::is(option, "SCHEDULE") => true,
        _ => return Err(errors::SYNTAX.into()),
    };
    if ctx.server.persistence.bgsave_in_progress() {
        return Err(SAVE_IN_PROGRESS.into());
    }
    if ctx.server.aof.rewrite_in_progress() && !schedule {
        return Err("ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.".into());
    }
    if !ctx.keys.holds_none() || ctx.server.aof.rewrite_in_progress() {
        saving::schedule_bgsave(ctx.server);
        ctx.out.simple("Background saving scheduled");
        return Ok(());
    }
    match saving::bgsave(ctx.server) {
        Ok(()) => {
            ctx.out.simple("Background saving started");
            Ok(())
        }
        Err(SaveError::InProgress) => Err(SAVE_IN_PROGRESS.into()),
        Err(_) => Err("ERR".into()),
    }
}

/// BGREWRITEAOF. Inside a transaction (which holds every shard), or while a
/// background save runs, it is scheduled, as in Redis.
fn bgrewriteaof(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let aof = &ctx.server.aof;
    if aof.rewrite_in_progress() {
        return Err("ERR Background append only file rewriting already in progress".into());
    }
    if !ctx.keys.holds_none() {
        aof.schedule_rewrite();
        ctx.out
            .simple("Background append only file rewriting scheduled");
        return Ok(());
    }
    match saving::bgrewriteaof(ctx.server) {
        Ok(()) => {
            ctx.out.simple("Background append only file rewriting started");
            Ok(())
        }
        Err(saving::RewriteRefused::Scheduled) => {
            ctx.out
                .simple("Background append only file rewriting scheduled");
            Ok(())
        }
        Err(saving::RewriteRefused::InProgress) => {
            Err("ERR Background append only file rewriting already in progress".into())
        }
        Err(saving::RewriteRefused::Failed) => Err(
            "ERR Can't execute an AOF background rewriting. Please check the server logs for more information."
                .into(),
        ),
    }
}

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]. Lagging replicas are waited for
/// (see `server::shutdown`): the client blocks meanwhile and is answered only if the
/// server goes on (aborted, or the save failed).
fn shutdown(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    use kvik_config::shutdown::{FORCE, NOSAVE, NOW, SAVE};
    let (mut flags, mut abort) = (0u8, false);
    for a in &args[1..] {
        if args::is(a, "SAVE") {
            flags |= SAVE;
        } else if args::is(a, "NOSAVE") {
            flags |= NOSAVE;
        } else if args::is(a, "NOW") {
            flags |= NOW;
        } else if args::is(a, "FORCE") {
            flags |= FORCE;
        } else if args::is(a, "ABORT") {
            abort = true;
        } else {
            return Err(errors::SYNTAX.into());
        }
    }
    if (abort && flags != 0) || (flags & SAVE != 0 && flags & NOSAVE != 0) {
        return Err(errors::SYNTAX.into());
    }
    let server = ctx.server;
    if abort {
        if !shutdown::abort(server) {
            return Err("ERR No shutdown in progress.".into());
        }
        ctx.out.ok();
        return Ok(());
    }
    let park = || {
        // It waits on no key; if its wait is ended by other means (CLIENT UNBLOCK)
        // the shutdown goes on without it.
        let action = crate::blocking::Keyless(|out: &mut kvik_resp::ReplyWriter| {
            out.error(shutdown::FAILED)
        });
        super::blocking::block(ctx, &[], None, action);
        ctx.client.blocked.as_ref().map(|b| b.waiter.clone())
    };
    match shutdown::prepare(server, flags, park) {
        Prepared::Exiting => {
            ctx.client.close_after_reply = true;
            Ok(())
        }
        Prepared::Waiting => Ok(()),
        Prepared::Failed => Err(shutdown::FAILED.into()),
    }
}
