//! Server commands: DBSIZE FLUSHDB FLUSHALL SHUTDOWN.

use super::table::{acl, flags, Command, Lock};
use super::{args, errors, CmdError, CmdResult, Ctx};

pub const COMMANDS: &[Command] = &[
    Command::new("dbsize", 1, dbsize)
        .flags(flags::READONLY | flags::FAST)
        .acl(acl::KEYSPACE | acl::READ | acl::FAST)
        .doc("server", "1.0.0", "O(1)", "Returns the number of keys in the database."),
    Command::new("flushdb", -1, flushdb)
        .flags(flags::WRITE)
        .acl(acl::KEYSPACE | acl::WRITE | acl::SLOW | acl::DANGEROUS)
        .lock(Lock::Db)
        .doc("server", "1.0.0", "O(N) where N is the total number of keys in all databases", "Remove all keys from the current database."),
    Command::new("flushall", -1, flushall)
        .flags(flags::WRITE)
        .acl(acl::KEYSPACE | acl::WRITE | acl::SLOW | acl::DANGEROUS)
        .lock(Lock::AllDbs)
        .doc("server", "1.0.0", "O(N) where N is the total number of keys in all databases", "Removes all keys from all databases."),
    Command::new("shutdown", -1, shutdown)
        .flags(flags::ADMIN | flags::NOSCRIPT | flags::LOADING | flags::STALE | flags::NO_MULTI | flags::ALLOW_BUSY)
        .acl(acl::ADMIN | acl::SLOW | acl::DANGEROUS)
        .doc("server", "1.0.0", "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)", "Synchronously saves the database(s) to disk and shuts down the Redis server."),
]
.as_slice();

/// CLIENT SETNAME's rule: no spaces, newlines or other special characters.
pub fn validate_client_name(name: &[u8]) -> Result<(), CmdError> {
    if name.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(
            "ERR Client names cannot contain spaces, newlines or special characters.".into(),
        );
    }
    Ok(())
}

fn dbsize(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let n = ctx.server.keyspace.db_len(ctx.client.db);
    ctx.out.int(n as i64);
    Ok(())
}

/// FLUSHDB / FLUSHALL take an optional ASYNC or SYNC.
fn parse_flush_mode(args: &[&[u8]]) -> CmdResult {
    match args.len() {
        1 => Ok(()),
        2 if args::is(args[1], "ASYNC") || args::is(args[1], "SYNC") => Ok(()),
        _ => Err(errors::SYNTAX.into()),
    }
}

/// Empty every shard of `db` (all of them are locked by the caller).
fn flush_db(ctx: &mut Ctx, db: usize) -> u64 {
    let mut removed = 0;
    for shard in 0..ctx.server.keyspace.shards_per_db() {
        let table = ctx.keys.shard_at(db, shard).take_all();
        removed += table.len() as u64;
        if !table.is_empty() {
            crate::lazyfree::drop_later(table);
        }
    }
    removed
}

fn flushdb(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    parse_flush_mode(args)?;
    let db = ctx.client.db;
    let removed = flush_db(ctx, db);
    ctx.keys.add_dirty(removed.max(1));
    ctx.out.ok();
    Ok(())
}

fn flushall(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    parse_flush_mode(args)?;
    let mut removed = 0;
    for db in 0..ctx.server.keyspace.databases() {
        removed += flush_db(ctx, db);
    }
    ctx.keys.add_dirty(removed.max(1));
    ctx.out.ok();
    Ok(())
}

fn shutdown(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    for a in &args[1..] {
        let known = ["NOSAVE", "SAVE", "NOW", "FORCE", "ABORT"]
            .iter()
            .any(|o| args::is(a, o));
        if !known {
            return Err(errors::SYNTAX.into());
        }
    }
    crate::log_warning!("User requested shutdown...");
    ctx.server.request_shutdown();
    ctx.client.close_after_reply = true;
    Ok(())
}
