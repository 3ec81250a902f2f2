//! DEBUG: introspection and test hooks (SLEEP, OBJECT, POPULATE, DIGEST, PROTOCOL ...).
//!
//! Like Redis 7, DEBUG is refused unless `enable-debug-command` allows it (checked by
//! `call`, for every command flagged `protected`). DEBUG is one command whose first
//! argument picks the action, as in Redis (it is not a container command: a wrong
//! subcommand or argument count gets Redis's combined error). Each action takes the
//! shard locks it needs itself, so SLEEP holds none while it blocks its thread.

mod digest;
pub mod loadaof;

use super::shared::{help_reply, subcommand_syntax_error};
use super::table::{acl, flags, Command, Handler, Lock};
use super::{errors, CmdError, CmdResult, Ctx, Held};
use crate::keyspace::{hash_key, Entry, Locked};
use crate::types::string::StrValue;
use crate::types::Value;
use crate::util::numbers::parse_i64;
use std::sync::atomic::Ordering;
use std::time::Duration;

pub const COMMANDS: &[Command] = &[Command::new("debug", -2, debug)
    .flags(flags::ADMIN | flags::NOSCRIPT | flags::LOADING | flags::STALE | flags::PROTECTED)
    .acl(acl::ADMIN | acl::SLOW | acl::DANGEROUS)
    .lock(Lock::Handler)
    .doc(
        "server",
        "1.0.0",
        "Depends on subcommand.",
        "A container for debugging commands.",
    )];

/// One DEBUG action and the argument counts (command name included) it accepts.
struct Action {
    name: &'static str,
    min_args: usize,
    max_args: usize,
    run: Handler,
}

const ACTIONS: &[Action] = &[
    Action {
        name: "help",
        min_args: 2,
        max_args: 2,
        run: help,
    },
    Action {
        name: "aof-flush-sleep",
        min_args: 3,
        max_args: 3,
        run: aof_flush_sleep,
    },
    Action {
        name: "aof-fsync-sleep",
        min_args: 3,
        max_args: 3,
        run: aof_fsync_sleep,
    },
    Action {
        name: "assert",
        min_args: 2,
        max_args: 2,
        run: assert,
    },
    Action {
        name: "config-rewrite-force-all",
        min_args: 2,
        max_args: 2,
        run: config_rewrite_force_all,
    },
    Action {
        name: "oom",
        min_args: 2,
        max_args: 2,
        run: oom,
    },
    Action {
        name: "quicklist-packed-threshold",
        min_args: 3,
        max_args: 3,
        run: quicklist_packed_threshold,
    },
    Action {
        name: "replicate",
        min_args: 3,
        max_args: usize::MAX,
        run: replicate,
    },
    Action {
        name: "replybuffer",
        min_args: 4,
        max_args: 4,
        run: replybuffer,
    },
    Action {
        name: "change-repl-id",
        min_args: 2,
        max_args: 2,
        run: change_repl_id,
    },
    Action {
        name: "counted",
        min_args: 3,
        max_args: 3,
        run: counted,
    },
    Action {
        name: "digest",
        min_args: 2,
        max_args: 2,
        run: digest_all,
    },
    Action {
        name: "digest-value",
        min_args: 2,
        max_args: usize::MAX,
        run: digest_value,
    },
    Action {
        name: "elements",
        min_args: 3,
        max_args: 3,
        run: elements,
    },
    Action {
        name: "node-id",
        min_args: 2,
        max_args: 3,
        run: node_id,
    },
    Action {
        name: "error",
        min_args: 3,
        max_args: 3,
        run: error,
    },
    Action {
        name: "loadaof",
        min_args: 2,
        max_args: 2,
        run: loadaof,
    },
    Action {
        name: "log",
        min_args: 3,
        max_args: 3,
        run: log,
    },
    Action {
        name: "object",
        min_args: 3,
        max_args: 3,
        run: object,
    },
    Action {
        name: "pause-cron",
        min_args: 3,
        max_args: 3,
        run: pause_cron,
    },
    Action {
        name: "panic",
        min_args: 2,
        max_args: 2,
        run: panic,
    },
    Action {
        name: "populate",
        min_args: 3,
        max_args: 5,
        run: populate,
    },
    Action {
        name: "protocol",
        min_args: 3,
        max_args: 3,
        run: protocol,
    },
    Action {
        name: "reload",
        min_args: 2,
        max_args: 5,
        run: reload,
    },
    Action {
        name: "segfault",
        min_args: 2,
        max_args: 2,
        run: segfault,
    },
    Action {
        name: "set-active-expire",
        min_args: 3,
        max_args: 3,
        run: set_active_expire,
    },
    Action {
        name: "set-skip-checksum-validation",
        min_args: 3,
        max_args: 3,
        run: set_skip_checksum_validation,
    },
    Action {
        name: "stringmatch-test",
        min_args: 2,
        max_args: 2,
        run: stringmatch_test,
    },
    Action {
        name: "sleep",
        min_args: 3,
        max_args: 3,
        run: sleep,
    },
];

/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save the dataset, empty it and load
/// the file back. NOSAVE loads the file as it is; NOFLUSH keeps the dataset (a key
/// also in the file is then an error, unless MERGE lets the file's copy win).
/// Every shard is held from the flush to the end of the load, so no client sees
/// the dataset half loaded.
fn reload(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (mut save, mut flush, mut merge) = (true, true, false);
    for option in &args[2..] {
        if option.eq_ignore_ascii_case(b"NOSAVE") {
            save = false;
        } else if option.eq_ignore_ascii_case(b"NOFLUSH") {
            flush = false;
        } else if option.eq_ignore_ascii_case(b"MERGE") {
            merge = true;
        } else {
            return Err(
                "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.".into(),
            );
        }
    }
    if !ctx.keys.holds_none() {
        return Err("ERR DEBUG RELOAD is not allowed inside a transaction".into());
    }
    if save && crate::server::saving::save(ctx.server).is_err() {
        return Err("ERR".into());
    }
    let server = ctx.server;
    // Clients get -LOADING from the flush on, not only once the file is read.
    let pace = crate::server::saving::loading_pace(&server.config.read());
    let _underway = server.loading.begin(0, pace.interval_bytes);
    let all: Vec<usize> = (0..server.keyspace.databases()).collect();
    let mut locked = Locked::databases(ctx.key_env(), ctx.client.db, ctx.keys.now_ms, &all);
    if flush {
        for &db in &all {
            // As Redis's DEBUG RELOAD: emptied in place.
            super::server::flush_db(&mut locked, db, false);
        }
        server.scripting.libraries.flush();
        server.tracking.flushed();
    }
    if let Err(e) = crate::server::saving::load(server, &mut locked, merge) {
        crate::log_warning!("{e}");
        return Err("ERR Error trying to load the RDB dump, check server logs.".into());
    }
    drop(locked);
    crate::log_warning!("DB reloaded by DEBUG RELOAD");
    ctx.out.ok();
    Ok(())
}

/// DEBUG LOADAOF: write out what the AOF buffers, empty the dataset and load the
/// AOF back, as Redis's tests use it to prove the AOF reproduces the dataset.
/// Where Redis exits on a file it cannot load, kvik answers an error and keeps
/// what it loaded.
fn loadaof(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    if !ctx.keys.holds_none() {
        return Err("ERR DEBUG LOADAOF is not allowed inside a transaction".into());
    }
    if loadaof::reload(ctx.server).is_err() {
        return Err("ERR Error loading the AOF, check server logs.".into());
    }
    crate::log_warning!("Append Only File loaded by DEBUG LOADAOF");
    ctx.out.ok();
    Ok(())
}

fn debug(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let action = ACTIONS
        .iter()
        .find(|a| {
            args[1].eq_ignore_ascii_case(a.name.as_bytes())
                && (a.min_args..=a.max_args).contains(&args.len())
        })
        .ok_or_else(|| subcommand_syntax_error(args))?;
    (action.run)(ctx, args)
}

const HELP: &[&str] = &[
    "AOF-FLUSH-SLEEP <microsec>",
    "    Server will sleep before flushing the AOF, this is used for testing.",
    "AOF-FSYNC-SLEEP <microsec>",
    "    Each fsync of the AOF sleeps first, this is used for testing a busy disk.",
    "ASSERT",
    "    Crash by assertion failed.",
    "CHANGE-REPL-ID",
    "    Change the replication IDs of the instance.",
    "    Dangerous: should be used only for testing the replication subsystem.",
    "CONFIG-REWRITE-FORCE-ALL",
    "    Like CONFIG REWRITE but writes all configuration options, including",
    "    keywords not listed in original configuration file or default values.",
    "COUNTED <key>",
    "    Active replication: the counted state kept for a string (its base and each",
    "    node's total), nil when none is (never counted, or settled).",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "ELEMENTS <key>",
    "    Active replication: the element marks kept for a set, hash or sorted set",
    "    (each element's last write, its timestamp and, for a removal, what it saw).",
    "NODE-ID [<uuid>]",
    "    Active replication: this node's id (the origin of its writes, whose tag its",
    "    timestamps carry); with <uuid>, the node takes that id from now on.",
    "ERROR <string>",
    "    Return a Redis protocol error with <string> as message. Useful for clients",
    "    unit tests to simulate Redis errors.",
    "LOADAOF",
    "    Flush the AOF buffers on disk and reload the AOF in memory.",
    "LOG <message>",
    "    Write <message> to the server log.",
    "RELOAD [option ...]",
    "    Save the RDB on disk and reload it back to memory. Options: MERGE (keys in",
    "    the file replace existing ones), NOFLUSH (keep the dataset), NOSAVE (load",
    "    the file as it is).",
    "REPLICATE <string>",
    "    Replicates the provided string to replicas, allowing data divergence.",
    "OBJECT <key>",
    "    Show low level info about `key` and associated value.",
    "OOM",
    "    Crash the server simulating an out-of-memory error.",
    "PANIC",
    "    Crash the server simulating a panic.",
    "POPULATE <count> [<prefix>] [<size>]",
    "    Create <count> string keys named key:<num>. If <prefix> is specified then",
    "    it is used instead of the 'key' prefix. These are not propagated to",
    "    replicas. Cluster slots are not respected so keys not belonging to the",
    "    current node can be created in cluster mode.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
    "SEGFAULT",
    "    Crash the server with sigsegv.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "SET-SKIP-CHECKSUM-VALIDATION <0|1>",
    "    Enables or disables checksum checks for RDB files and RESTORE's payload.",
    "STRINGMATCH-TEST",
    "    Run a fuzz tester against the stringmatchlen() function.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "PAUSE-CRON <0|1>",
    "    Stop periodic cron job processing.",
    "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
    "    Sets the time (in milliseconds) to wait between client reply buffer peak resets.",
    "    In case NEVER is provided the last observed peak will never be reset",
    "    In case RESET is provided the peak reset time will be restored to the default value",
    "REPLYBUFFER RESIZING <0|1>",
    "    Enable or disable the reply buffer resize cron job",
];

fn help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(ctx.out, "DEBUG", HELP);
    Ok(())
}

/// The entry stored under `key`, as it is: DEBUG looks at logically expired keys
/// too, without deleting them, as Redis does.
fn stored<'l>(locked: &'l mut Locked, db: usize, key: &[u8]) -> Option<&'l Entry> {
    let hash = hash_key(key);
    let shard = locked.keyspace().shard_of(hash);
    locked.shard_at(db, shard).find(hash, key)
}

/// The shards of `keys` in database `db`: what a DEBUG action that reads them locks.
fn key_shards(ctx: &Ctx, db: usize, keys: &[&[u8]]) -> Vec<usize> {
    let ks = &ctx.server.keyspace;
    keys.iter().map(|key| ks.shard_id_of(db, key)).collect()
}

/// DEBUG COUNTED <key> (kvik's): the current counted state active replication
/// keeps for the string `key` (keyspace/counters.rs), in its snapshot form; nil
/// when none is kept: the key was never counted, or its state settled (every
/// peer holds its increments, see `ShardData::fold_counters`).
fn counted(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[2];
    let db = ctx.client.db;
    let ids = key_shards(ctx, db, &[key]);
    let mut locked = Held::lock(ctx.keys, &ids);
    let hash = hash_key(key);
    let shard = locked.keyspace().shard_of(hash);
    let state = locked
        .shard_at(db, shard)
        .counter(hash, key)
        .map(|c| c.encode());
    drop(locked);
    match state {
        Some(state) => ctx.out.bulk(state.as_bytes()),
        None => ctx.out.null(),
    }
    Ok(())
}

/// DEBUG NODE-ID [<uuid>] (kvik's): this node's id; with an id, the node takes
/// it from now on, as it takes a new one when a peer shares its timestamp tag
/// (what the tests of that case start from).
fn node_id(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let repl = &ctx.server.replication;
    if let Some(text) = args.get(2) {
        let id = crate::replication::active::parse_uuid(text)
            .ok_or(CmdError::from("ERR Invalid UUID"))?;
        repl.take_node_id(id);
        ctx.out.ok();
        return Ok(());
    }
    ctx.out
        .bulk(crate::replication::active::uuid_text(&repl.node_id()).as_bytes());
    Ok(())
}

/// DEBUG ELEMENTS <key> (kvik's): the element marks active replication keeps for
/// the collection `key` (keyspace/elements.rs), one line each, sorted, after a line
/// with the key's timestamp, the marks' base and their newest write; nil when none
/// are kept. What the random convergence tests print for a key the nodes hold apart.
fn elements(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[2];
    let db = ctx.client.db;
    let ids = key_shards(ctx, db, &[key]);
    let mut locked = Held::lock(ctx.keys, &ids);
    let key_ts = locked.newest_ts(db, key);
    let hash = hash_key(key);
    let shard = locked.keyspace().shard_of(hash);
    let Some(state) = locked.shard_at(db, shard).kept_elements(key) else {
        drop(locked);
        ctx.out.null();
        return Ok(());
    };
    let mut lines = vec![format!(
        "key-ts:{key_ts} base:{} newest:{}",
        state.base, state.newest
    )];
    let mut marks: Vec<String> = state
        .marks
        .iter()
        .map(|(element, mark)| {
            let element = String::from_utf8_lossy(element);
            match mark.kind {
                crate::keyspace::Kind::Removed => {
                    format!("{element} removed {} seen {}", mark.ts, mark.seen)
                }
                kind => {
                    let kind = format!("{kind:?}").to_lowercase();
                    format!("{element} {kind} {}", mark.ts)
                }
            }
        })
        .collect();
    drop(locked);
    marks.sort();
    lines.extend(marks);
    ctx.out.array(lines.len());
    for line in &lines {
        ctx.out.bulk(line.as_bytes());
    }
    Ok(())
}

/// DEBUG DIGEST: one status line, 40 hex digits (all zeros for an empty dataset).
/// Every database is locked for a point-in-time answer.
fn digest_all(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let ks = &ctx.server.keyspace;
    let all: Vec<usize> = (0..ks.databases())
        .flat_map(|db| ks.db_shard_ids(db))
        .collect();
    let mut locked = Held::lock(ctx.keys, &all);
    let fingerprint = digest::dataset(&mut locked);
    drop(locked);
    ctx.out.simple(&hex::encode(fingerprint));
    Ok(())
}

/// DEBUG DIGEST-VALUE key ...: the fingerprint of each key's value (zeros if absent).
fn digest_value(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let keys = &args[2..];
    let db = ctx.client.db;
    let ids = key_shards(ctx, db, keys);
    let mut locked = Held::lock(ctx.keys, &ids);
    ctx.out.array(keys.len());
    for key in keys {
        let fingerprint = stored(&mut locked, db, key).map_or([0; 20], digest::value);
        ctx.out.simple(&hex::encode(fingerprint));
    }
    Ok(())
}

/// DEBUG OBJECT key: Redis's one-line description of a value.
fn object(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[2];
    let db = ctx.client.db;
    let ids = key_shards(ctx, db, &[key]);
    let mut locked = Held::lock(ctx.keys, &ids);
    let entry = stored(&mut locked, db, key).ok_or(CmdError::from(errors::NO_SUCH_KEY))?;
    let refcount = entry.value.refcount(ctx.server.memory.shares_integers());
    let line = format!(
        "Value at:{:p} refcount:{} encoding:{} serializedlength:{} lru:{} lru_seconds_idle:{}",
        (entry as *const Entry).cast::<u8>(),
        refcount,
        entry.value.encoding_name(),
        serialized_len(&entry.value),
        entry.access,
        crate::keyspace::idle_seconds(entry.access, crate::hlc::unix_ms()),
    );
    drop(locked);
    ctx.out.simple(&line);
    Ok(())
}

/// Bytes the value takes in an RDB file, without LZF compression (which Redis
/// applies to strings longer than 20 bytes when it shrinks them).
fn serialized_len(value: &Value) -> usize {
    match value {
        Value::Str(s) => string_serialized_len(s),
        // Approximate until the RDB encoder of collections exists.
        Value::List(_)
        | Value::Hash(_)
        | Value::Set(_)
        | Value::ZSet(_)
        | Value::Stream(_)
        | Value::Cron(_) => value.heap_size(),
    }
}

fn string_serialized_len(s: &StrValue) -> usize {
    let mut scratch = itoa::Buffer::new();
    let bytes = s.bytes(&mut scratch);
    if bytes.len() <= 11 {
        if let Some(len) = canonical_int(bytes).and_then(int_encoding_len) {
            return len;
        }
    }
    rdb_length_len(bytes.len()) + bytes.len()
}

/// The integer `bytes` spell, if they are its canonical decimal form.
fn canonical_int(bytes: &[u8]) -> Option<i64> {
    let n = parse_i64(bytes)?;
    (itoa::Buffer::new().format(n).as_bytes() == bytes).then_some(n)
}

/// RDB's integer string encodings: a type byte plus 1, 2 or 4 bytes.
fn int_encoding_len(n: i64) -> Option<usize> {
    if i8::try_from(n).is_ok() {
        Some(2)
    } else if i16::try_from(n).is_ok() {
        Some(3)
    } else if i32::try_from(n).is_ok() {
        Some(5)
    } else {
        None
    }
}

/// Bytes of an RDB length prefix.
fn rdb_length_len(len: usize) -> usize {
    match len {
        0..=63 => 1,
        64..=16383 => 2,
        _ if len <= u32::MAX as usize => 5,
        _ => 9,
    }
}

/// A count DEBUG POPULATE accepts: any integer from 0 up.
fn non_negative(arg: &[u8]) -> Result<u64, CmdError> {
    match parse_i64(arg) {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err("ERR value is out of range, must be positive".into()),
    }
}

/// Redis builds POPULATE's key names in a 128-byte C buffer: the prefix ends at a
/// NUL byte and the name at 127 bytes.
const POPULATE_NAME_MAX: usize = 127;

/// DEBUG POPULATE count [prefix] [size]: keys `prefix:0` .. with values `value:N`,
/// zero-padded or cut to `size` when given; existing keys are left alone. Each key
/// locks only its own shard, so a large run never holds the keyspace.
fn populate(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let count = non_negative(args[2])?;
    let size = match args.get(4) {
        Some(arg) => non_negative(arg)? as usize,
        None => 0,
    };
    let prefix = args.get(3).copied().unwrap_or(b"key");
    let prefix = prefix.split(|&b| b == 0).next().unwrap_or_default();
    let db = ctx.client.db;
    let mut key = Vec::new();
    for n in 0..count {
        key.clear();
        key.extend_from_slice(prefix);
        key.push(b':');
        key.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
        key.truncate(POPULATE_NAME_MAX);
        let id = ctx.server.keyspace.shard_id_of(db, &key);
        let mut locked = Held::lock(ctx.keys, &[id]);
        if locked.exists(&key) {
            continue;
        }
        let mut value = format!("value:{n}").into_bytes();
        if size > 0 {
            value.resize(size, 0);
        }
        locked.set(&key, Value::Str(StrValue::from_bytes_unencoded(&value)), 0);
    }
    ctx.out.ok();
    Ok(())
}

/// DEBUG PROTOCOL type: one reply of the given RESP type, for client tests.
fn protocol(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let kind = String::from_utf8_lossy(args[2]).to_ascii_lowercase();
    let out = &mut *ctx.out;
    let resp3 = out.is_resp3();
    match kind.as_str() {
        "string" => out.bulk(b"Hello World"),
        "integer" => out.int(12345),
        "double" => out.double_text(b"3.141"),
        "bignum" if resp3 => out.raw(b"(1234567999999999999999999999999999999\r\n"),
        "bignum" => out.bulk(b"1234567999999999999999999999999999999"),
        "null" => out.null(),
        "array" | "set" => {
            if kind == "set" {
                out.set(3);
            } else {
                out.array(3);
            }
            for n in 0..3 {
                out.int(n);
            }
        }
        "map" => {
            out.map(3);
            for n in 0..3 {
                out.int(n);
                out.boolean(n == 1);
            }
        }
        "attrib" => {
            if resp3 {
                out.raw(b"|1\r\n");
                out.bulk(b"key-popularity");
                out.array(2);
                out.bulk(b"key:123");
                out.int(90);
            }
            out.bulk(b"Some real reply following the attribute");
        }
        "push" if !resp3 => return Err("ERR RESP2 is not supported by this command".into()),
        "push" => {
            out.push(2);
            out.bulk(b"server-cpu-usage");
            out.int(42);
            out.bulk(b"Some real reply following the push reply");
        }
        "true" => out.boolean(true),
        "false" => out.boolean(false),
        "verbatim" => out.verbatim(b"txt", b"This is a verbatim\nstring"),
        _ => return Err("ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false".into()),
    }
    Ok(())
}

/// DEBUG SET-ACTIVE-EXPIRE n: any number but 0 turns the active expiry cycle on.
/// Redis reads `n` with `atoi`, so text that is not a number means 0.
fn set_active_expire(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let on = leading_digits(args[2]).iter().any(|&d| d != b'0');
    ctx.server.hot.active_expire.store(on, Ordering::Relaxed);
    ctx.out.ok();
    Ok(())
}

/// DEBUG CHANGE-REPL-ID: start a new replication history (a fresh id, none before),
/// as Redis's tests use it to force full syncs.
fn change_repl_id(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    crate::log_warning!("Changing replication IDs after receiving DEBUG change-repl-id");
    ctx.server.replication.change_ids();
    ctx.out.ok();
    Ok(())
}

/// DEBUG ASSERT: die of a failed assertion, with Redis's report.
fn assert(_ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    crate::crash::assertion_failed(concat!(file!(), ":", line!()), "1 == 2")
}

/// DEBUG OOM: die as an allocation that cannot be had does, with Redis's lines.
fn oom(_ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    crate::crash::out_of_memory(usize::MAX)
}

/// DEBUG CONFIG-REWRITE-FORCE-ALL: CONFIG REWRITE writing every directive, the
/// defaults and hidden ones included.
fn config_rewrite_force_all(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let Some(path) = &ctx.server.config_file else {
        return Err(
            "ERR CONFIG-REWRITE-FORCE-ALL failed: The server is running without a config file"
                .into(),
        );
    };
    if let Err(e) = ctx.server.config.read().rewrite_all(path) {
        let why = kvik_config::parse::os_error_text(&e);
        return Err(format!("ERR CONFIG-REWRITE-FORCE-ALL failed: {why}").into());
    }
    ctx.out.ok();
    Ok(())
}

/// DEBUG QUICKLIST-PACKED-THRESHOLD size: list elements of this size or more get a
/// node of their own (Redis's "plain" nodes), for tests of big elements without
/// gigabytes of memory; 0 restores the default (1 GB).
fn quicklist_packed_threshold(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let size = std::str::from_utf8(args[2])
        .ok()
        .and_then(kvik_config::parse::parse_memory)
        .filter(|&size| crate::types::list::set_packed_threshold(size));
    if size.is_none() {
        return Err(
            "ERR argument must be a memory value bigger than 1 and smaller than 4gb".into(),
        );
    }
    ctx.out.ok();
    Ok(())
}

/// DEBUG REPLICATE <arg> ...: send the arguments to the replicas as a command of
/// the client's database, and nowhere else (not run here, not in the AOF), so a
/// test can make a replica's data diverge, as Redis's does.
fn replicate(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let db = ctx.client.db;
    let targets = ctx.keys.effect_targets;
    ctx.keys.effect_targets = crate::effects::Targets::REPLICAS;
    ctx.keys.propagate(db, &args[2..]);
    ctx.keys.effect_targets = targets;
    ctx.out.ok();
    Ok(())
}

/// DEBUG REPLYBUFFER PEAK-RESET-TIME <NEVER|RESET|ms> and RESIZING <0|1>: how the
/// cron resizes idle clients' reply buffers (see `net::conn`).
fn replybuffer(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let debug = &ctx.server.debug;
    if args[2].eq_ignore_ascii_case(b"PEAK-RESET-TIME") {
        let ms = if args[3].eq_ignore_ascii_case(b"NEVER") {
            -1
        } else if args[3].eq_ignore_ascii_case(b"RESET") {
            crate::server::REPLY_PEAK_RESET_MS
        } else {
            parse_i64(args[3]).ok_or(errors::NOT_INTEGER)?
        };
        debug.reply_peak_reset_ms.store(ms, Ordering::Relaxed);
    } else if args[2].eq_ignore_ascii_case(b"RESIZING") {
        let on = leading_digits(args[3]).iter().any(|&d| d != b'0');
        debug
            .reply_buffer_resizing_off
            .store(!on, Ordering::Relaxed);
    } else {
        return Err(subcommand_syntax_error(args));
    }
    ctx.out.ok();
    Ok(())
}

/// DEBUG SEGFAULT: die of SIGSEGV, writing the crash report first (see
/// [`crate::crash`]), as tools that test crash handling expect.
fn segfault(_ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    // SAFETY: raising a signal is always sound; this one ends the process.
    unsafe {
        libc::raise(libc::SIGSEGV);
    }
    Ok(())
}

/// DEBUG PANIC: stop the server with the crash report of a software failure, as
/// Redis's `serverPanic` does (see [`crate::crash`]).
fn panic(_ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let now = crate::hlc::unix_ms() / 1000;
    crate::crash::panic_now(&format!("DEBUG PANIC called at Unix time {now}"))
}

/// DEBUG STRINGMATCH-TEST: match ten million random patterns against random strings
/// (up to 31 bytes of 7-bit characters each, as Redis draws them), so that a pattern
/// that makes the matcher crash or run away shows itself. Redis's reply.
fn stringmatch_test(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    use rand::Rng;
    const CYCLES: usize = 10_000_000;
    let mut rng = rand::thread_rng();
    let mut random_text = |buf: &mut Vec<u8>| {
        buf.clear();
        let len = rng.gen_range(0..32);
        buf.extend((0..len).map(|_| rng.gen_range(0..128u8)));
    };
    let (mut pattern, mut text) = (Vec::with_capacity(32), Vec::with_capacity(32));
    let mut matches = 0usize;
    for _ in 0..CYCLES {
        random_text(&mut pattern);
        random_text(&mut text);
        matches += usize::from(crate::util::glob::glob_match(&pattern, &text, false));
    }
    std::hint::black_box(matches);
    ctx.out
        .simple("Apparently Redis did not crash: test passed");
    Ok(())
}

/// DEBUG ERROR string: the string as it is, as an error reply (client libraries'
/// tests use it). Like Redis, it counts in no error statistics.
fn error(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ctx.out.error(&String::from_utf8_lossy(args[2]));
    Ok(())
}

/// DEBUG LOG message: the message in the server log (tests mark the log with it).
fn log(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    crate::log_warning!("DEBUG LOG: {}", String::from_utf8_lossy(args[2]));
    ctx.out.ok();
    Ok(())
}

/// DEBUG PAUSE-CRON n: any number but 0 stops the workers' periodic work.
fn pause_cron(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let on = leading_digits(args[2]).iter().any(|&d| d != b'0');
    ctx.server.debug.cron_paused.store(on, Ordering::Relaxed);
    ctx.out.ok();
    Ok(())
}

/// DEBUG SET-SKIP-CHECKSUM-VALIDATION n: any number but 0 lets RESTORE and
/// FUNCTION RESTORE take payloads whose CRC is wrong.
fn set_skip_checksum_validation(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let on = leading_digits(args[2]).iter().any(|&d| d != b'0');
    ctx.server
        .debug
        .skip_checksum_validation
        .store(on, Ordering::Relaxed);
    ctx.out.ok();
    Ok(())
}

/// DEBUG AOF-FLUSH-SLEEP microseconds: each write of the AOF buffer sleeps first
/// (Redis's test hook).
fn aof_flush_sleep(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ctx.server.aof.set_debug_flush_sleep(atoi_micros(args[2]));
    ctx.out.ok();
    Ok(())
}

/// DEBUG AOF-FSYNC-SLEEP microseconds: each fsync of the AOF sleeps first, so
/// that tests see writers wait for a stuck fsync (`aof_delayed_fsync`).
fn aof_fsync_sleep(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ctx.server.aof.set_debug_fsync_sleep(atoi_micros(args[2]));
    ctx.out.ok();
    Ok(())
}

/// Microseconds read as `atoi` reads them (0 when there is no number); a
/// negative count sleeps not at all, and the count is an `int` as in Redis.
fn atoi_micros(arg: &[u8]) -> u64 {
    if arg.trim_ascii_start().starts_with(b"-") {
        return 0;
    }
    let digits = leading_digits(arg);
    let digits = &digits[..digits.len().min(12)];
    std::str::from_utf8(digits)
        .ok()
        .and_then(|d| d.parse::<u64>().ok())
        .map_or(0, |n| n.min(i32::MAX as u64))
}

/// The digits `atoi` would read: after blanks and an optional sign.
fn leading_digits(arg: &[u8]) -> &[u8] {
    let start = arg
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(arg.len());
    let mut rest = &arg[start..];
    if let [b'+' | b'-', tail @ ..] = rest {
        rest = tail;
    }
    let end = rest
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(rest.len());
    &rest[..end]
}

/// DEBUG SLEEP seconds: block this worker thread (and only it) like Redis blocks its
/// one thread. The seconds are read as `strtod` reads them: the longest number at
/// the start, 0 when there is none; negative or absurd values do not sleep.
fn sleep(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let seconds = leading_float(args[2]);
    if let Ok(pause) = Duration::try_from_secs_f64(seconds) {
        std::thread::sleep(pause);
    }
    ctx.out.ok();
    Ok(())
}

/// The longest prefix of `arg` (after blanks) that reads as a number, else 0.
fn leading_float(arg: &[u8]) -> f64 {
    // A number longer than this is not a duration anyone means.
    const LONGEST: usize = 64;
    let text = String::from_utf8_lossy(&arg[..arg.len().min(LONGEST)]);
    let text = text.trim_start();
    (1..=text.len())
        .rev()
        .filter(|&end| text.is_char_boundary(end))
        .find_map(|end| text[..end].parse::<f64>().ok())
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_numbers_like_libc() {
        assert_eq!(leading_float(b"0.25s"), 0.25);
        assert_eq!(leading_float(b"  2"), 2.0);
        assert_eq!(leading_float(b"abc"), 0.0);
        assert_eq!(atoi_micros(b" 250us"), 250);
        assert_eq!(atoi_micros(b"-5"), 0);
        assert_eq!(atoi_micros(b"x"), 0);
        assert_eq!(atoi_micros(b"99999999999999999999"), i32::MAX as u64);
        assert_eq!(leading_digits(b" -12x"), b"12");
        assert_eq!(leading_digits(b"abc"), b"");
    }

    #[test]
    fn serialized_lengths_follow_rdb() {
        let len = |s: &[u8]| string_serialized_len(&StrValue::from_bytes(s));
        assert_eq!(len(b"123"), 2);
        assert_eq!(len(b"1000"), 3);
        assert_eq!(len(b"100000"), 5);
        assert_eq!(len(b"10000000000"), 12);
        assert_eq!(len(b"value:0"), 8);
        let unencoded = |s: &[u8]| string_serialized_len(&StrValue::from_bytes_unencoded(s));
        assert_eq!(unencoded(b"007"), 4);
        assert_eq!(unencoded(b"-12"), 2);
        assert_eq!(len(&[b'a'; 64]), 66);
    }
}
