//! Generic key commands: the ones that work on any key whatever its type.
//!
//! This module holds the family's command table, the few commands that only ask
//! whether keys exist (DEL, UNLINK, EXISTS, TOUCH, TYPE), and the helpers the others
//! share. The rest live by theme:
//!
//! - [`expire`]: deadlines (EXPIRE family, TTL family, PERSIST);
//! - [`members`]: KeyDB's member deadlines (EXPIREMEMBER family);
//! - [`cron`]: KeyDB's scheduled scripts (KEYDB.CRON) and their runs;
//! - [`listing`]: whole-database reads (KEYS, SCAN, RANDOMKEY);
//! - [`relocate`]: keys that change name or database (RENAME, MOVE, COPY);
//! - [`object`]: OBJECT introspection;
//! - [`dump`]: DUMP and RESTORE, values in Redis's serialized form;
//! - [`swapdb`]: SWAPDB, which exchanges whole databases.

pub mod cron;
mod dump;
mod expire;
mod listing;
mod members;
mod object;
mod relocate;
mod swapdb;

use super::table::{acl, flags, key_flags, Command, KeySpec, Lock};
use super::{args, errors, CmdError, CmdResult, Ctx};
use crate::notify::class;
use crate::stats::ThreadStats;

const KS: u32 = acl::KEYSPACE;
const WRITE_FAST: u32 = KS | acl::WRITE | acl::FAST;
const READ_FAST: u32 = KS | acl::READ | acl::FAST;

pub const COMMANDS: &[Command] = &[
    Command::new("del", -2, del)
        .tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
        .flags(flags::WRITE)
        .acl(KS | acl::WRITE | acl::SLOW)
        .keys(1, -1, 1)
        .key_flags(key_flags::RM | key_flags::DELETE)
        .doc("generic", "1.0.0", "O(N) where N is the number of keys that will be removed. When a key to remove holds a value other than a string, the individual complexity for this key is O(M) where M is the number of elements in the list, set, sorted set or hash. Removing a single key that holds a string value is O(1).", "Delete a key"),
    Command::new("unlink", -2, unlink)
        .tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
        .flags(flags::WRITE | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, -1, 1)
        .key_flags(key_flags::RM | key_flags::DELETE)
        .doc("generic", "4.0.0", "O(1) for each key removed regardless of its size. Then the command does O(N) work in a different thread in order to reclaim memory, where N is the number of allocations the deleted objects where composed of.", "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking."),
    Command::new("exists", -2, exists)
        .tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, -1, 1)
        .key_flags(key_flags::RO)
        .doc("generic", "1.0.0", "O(N) where N is the number of keys to check.", "Determine if a key exists"),
    Command::new("keydb.mexists", -2, mexists)
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, -1, 1)
        .key_flags(key_flags::RO)
        .doc("generic", "6.0.0", "O(N) where N is the number of keys to check.", "Tell for each key whether it exists (a KeyDB command)"),
    Command::new("keydb.cron", -5, cron::keydb_cron)
        .flags(flags::WRITE | flags::DENYOOM | flags::NOSCRIPT)
        .acl(KS | acl::WRITE | acl::SLOW | acl::SCRIPTING)
        .keys(1, 1, 1)
        .key_flags(key_flags::OW | key_flags::UPDATE)
        .doc("generic", "6.0.0", "O(N) where N is the number of keys and arguments of the script.", "Run a Lua script on a schedule, held as a key (a KeyDB command)"),
    Command::new("touch", -2, touch)
        .tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, -1, 1)
        .key_flags(key_flags::RO)
        .doc("generic", "3.2.1", "O(N) where N is the number of keys that will be touched.", "Alters the last access time of a key(s). Returns the number of existing keys specified."),
    Command::new("type", 2, type_)
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RO)
        .doc("generic", "1.0.0", "O(1)", "Determine the type stored at key"),
    Command::new("keys", 2, listing::keys)
        .tips(&["request_policy:all_shards", "nondeterministic_output_order"])
        .flags(flags::READONLY)
        .acl(KS | acl::READ | acl::SLOW | acl::DANGEROUS)
        .lock(Lock::Db)
        .doc("generic", "1.0.0", "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.", "Find all keys matching the given pattern"),
    Command::new("scan", -2, listing::scan)
        .flags(flags::READONLY)
        .acl(KS | acl::READ | acl::SLOW)
        .tips(&["nondeterministic_output", "request_policy:special"])
        .lock(Lock::Handler)
        .doc("generic", "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.", "Incrementally iterate the keys space"),
    Command::new("randomkey", 1, listing::randomkey)
        .tips(&["request_policy:all_shards", "nondeterministic_output"])
        .flags(flags::READONLY)
        .acl(KS | acl::READ | acl::SLOW)
        .lock(Lock::Db)
        .doc("generic", "1.0.0", "O(1)", "Return a random key from the keyspace"),
    Command::new("rename", 3, relocate::rename)
        .flags(flags::WRITE)
        .acl(KS | acl::WRITE | acl::SLOW)
        .key_spec(KeySpec::range(1, 1, 1).flags(key_flags::RW | key_flags::ACCESS | key_flags::DELETE))
        .key_spec(KeySpec::range(2, 2, 1).flags(key_flags::OW | key_flags::UPDATE))
        .doc("generic", "1.0.0", "O(1)", "Rename a key"),
    Command::new("renamenx", 3, relocate::renamenx)
        .flags(flags::WRITE | flags::FAST)
        .acl(WRITE_FAST)
        .key_spec(KeySpec::range(1, 1, 1).flags(key_flags::RW | key_flags::ACCESS | key_flags::DELETE))
        .key_spec(KeySpec::range(2, 2, 1).flags(key_flags::OW | key_flags::INSERT))
        .doc("generic", "1.0.0", "O(1)", "Rename a key, only if the new key does not exist"),
    Command::new("move", 3, relocate::move_)
        .flags(flags::WRITE | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .lock(Lock::Args(relocate::move_needs))
        .doc("generic", "1.0.0", "O(1)", "Move a key to another database"),
    Command::new("copy", -3, relocate::copy)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(KS | acl::WRITE | acl::SLOW)
        .key_spec(KeySpec::range(1, 1, 1).flags(key_flags::RO | key_flags::ACCESS))
        .key_spec(KeySpec::range(2, 2, 1).flags(key_flags::OW | key_flags::UPDATE))
        .lock(Lock::Args(relocate::copy_needs))
        .doc("generic", "6.2.0", "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.", "Copy a key"),
    Command::new("expire", -3, expire::expire)
        .flags(flags::WRITE | flags::FAST | flags::MERGES_AS_TTL)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::UPDATE)
        .doc("generic", "1.0.0", "O(1)", "Set a key's time to live in seconds"),
    Command::new("pexpire", -3, expire::pexpire)
        .flags(flags::WRITE | flags::FAST | flags::MERGES_AS_TTL)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::UPDATE)
        .doc("generic", "2.6.0", "O(1)", "Set a key's time to live in milliseconds"),
    Command::new("expireat", -3, expire::expireat)
        .flags(flags::WRITE | flags::FAST | flags::MERGES_AS_TTL)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::UPDATE)
        .doc("generic", "1.2.0", "O(1)", "Set the expiration for a key as a UNIX timestamp"),
    Command::new("pexpireat", -3, expire::pexpireat)
        .flags(flags::WRITE | flags::FAST | flags::MERGES_AS_TTL)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::UPDATE)
        .doc("generic", "2.6.0", "O(1)", "Set the expiration for a key as a UNIX timestamp specified in milliseconds"),
    Command::new("expiremember", -4, members::expiremember)
        .flags(flags::WRITE | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::UPDATE)
        .doc("generic", "6.0.0", "O(1)", "Set a time to live on one member of a set, field of a hash or member of a sorted set (a KeyDB command)"),
    Command::new("expirememberat", 4, members::expirememberat)
        .flags(flags::WRITE | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::UPDATE)
        .doc("generic", "6.0.0", "O(1)", "Set the expiration of a member as a UNIX timestamp (a KeyDB command)"),
    Command::new("pexpirememberat", 4, members::pexpirememberat)
        .flags(flags::WRITE | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::UPDATE)
        .doc("generic", "6.0.0", "O(1)", "Set the expiration of a member as a UNIX timestamp in milliseconds (a KeyDB command)"),
    Command::new("ttl", -2, expire::ttl)
        .tips(&["nondeterministic_output"])
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, 1, 1)
        .doc("generic", "1.0.0", "O(1)", "Get the time to live for a key in seconds"),
    Command::new("pttl", -2, expire::pttl)
        .tips(&["nondeterministic_output"])
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, 1, 1)
        .doc("generic", "2.6.0", "O(1)", "Get the time to live for a key in milliseconds"),
    Command::new("expiretime", 2, expire::expiretime)
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, 1, 1)
        .doc("generic", "7.0.0", "O(1)", "Get the expiration Unix timestamp for a key"),
    Command::new("pexpiretime", 2, expire::pexpiretime)
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, 1, 1)
        .doc("generic", "7.0.0", "O(1)", "Get the expiration Unix timestamp for a key in milliseconds"),
    Command::new("persist", -2, expire::persist)
        .flags(flags::WRITE | flags::FAST | flags::MERGES_AS_TTL)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::UPDATE)
        .doc("generic", "2.2.0", "O(1)", "Remove the expiration from a key"),
    Command::new("dump", 2, dump::dump)
        .tips(&["nondeterministic_output"])
        .flags(flags::READONLY)
        .acl(KS | acl::READ | acl::SLOW)
        .keys(1, 1, 1)
        .key_flags(key_flags::RO | key_flags::ACCESS)
        .doc("generic", "2.6.0", "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).", "Return a serialized version of the value stored at the specified key."),
    Command::new("restore", -4, dump::restore)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(KS | acl::WRITE | acl::SLOW | acl::DANGEROUS)
        .keys(1, 1, 1)
        .key_flags(key_flags::OW | key_flags::UPDATE)
        .doc("generic", "2.6.0", "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).", "Create a key using the provided serialized value, previously obtained using DUMP."),
    object::COMMAND,
    Command::new("swapdb", 3, swapdb::swapdb)
        .flags(flags::WRITE | flags::FAST)
        .acl(WRITE_FAST | acl::DANGEROUS)
        .lock(Lock::Args(swapdb::swapdb_needs))
        .doc("server", "4.0.0", "O(N) where N is the count of clients watching or blocking on keys from both databases.", "Swaps two Redis databases"),
];

/// DEL: a big value is freed on the background thread when
/// `lazyfree-lazy-user-del` says so, inline otherwise, as in Redis.
fn del(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    remove_keys(ctx, args, crate::lazyfree::Cause::UserDel)
}

/// UNLINK: a big value is always freed on the background thread.
fn unlink(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    remove_keys(ctx, args, crate::lazyfree::Cause::Asked)
}

/// The keys leave the keyspace at once either way; `cause` says where their values
/// are freed.
fn remove_keys(ctx: &mut Ctx, args: &[&[u8]], cause: crate::lazyfree::Cause) -> CmdResult {
    let lazy = ctx.server.keyspace.lazy(cause);
    let mut removed = 0;
    for key in &args[1..] {
        if let Some(entry) = ctx.keys.remove(key) {
            entry.free(lazy);
            ctx.keys.notify(class::GENERIC, "del", key);
            removed += 1;
        }
    }
    ctx.out.int(removed);
    Ok(())
}

fn exists(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut n = 0;
    for key in &args[1..] {
        let found = ctx.keys.exists(key);
        count_read(ctx.stats, found);
        n += i64::from(found);
    }
    ctx.out.int(n);
    Ok(())
}

/// KEYDB.MEXISTS key [key ...]: for each key, whether it exists (integers in RESP2,
/// booleans in RESP3), as KeyDB replies.
fn mexists(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ctx.out.array(args.len() - 1);
    for key in &args[1..] {
        let found = ctx.keys.exists(key);
        count_read(ctx.stats, found);
        ctx.out.boolean(found);
    }
    Ok(())
}

/// Counts the keys that exist, refreshing their access clock (a read that returns
/// nothing), even for a client that set CLIENT NO-TOUCH: TOUCH is how such a
/// client touches keys on purpose.
fn touch(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let touching = std::mem::replace(&mut ctx.keys.touch, true);
    let mut n = 0;
    for key in &args[1..] {
        let found = ctx.keys.get(key).is_some();
        count_read(ctx.stats, found);
        n += i64::from(found);
    }
    ctx.keys.touch = touching;
    ctx.out.int(n);
    Ok(())
}

fn type_(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = ctx.keys.peek(args[1]).map(|e| e.value.type_name());
    count_read(ctx.stats, name.is_some());
    ctx.out.simple(name.unwrap_or("none"));
    Ok(())
}

/// Count a read lookup of a key in INFO's keyspace_hits or keyspace_misses. Redis
/// counts the lookups of reading commands, even those that leave the access clock
/// alone, and not those of writing commands.
fn count_read(stats: &ThreadStats, found: bool) {
    let counter = if found {
        &stats.keyspace_hits
    } else {
        &stats.keyspace_misses
    };
    stats.add(counter, 1);
}

/// A target database argument (MOVE, COPY ... DB): an `int`-sized integer, then a
/// valid index.
fn db_arg(arg: &[u8], databases: usize) -> Result<usize, CmdError> {
    let n = args::int_in(arg, i32::MIN.into(), i32::MAX.into(), errors::NOT_INTEGER)?;
    usize::try_from(n)
        .ok()
        .filter(|&db| db < databases)
        .ok_or_else(|| errors::DB_OUT_OF_RANGE.into())
}
