//! Commands: the table, the dispatcher and one module per command family.
//!
//! [`call`] is the one door every command goes through. It owns the checks that apply
//! to all commands (known name, arity, authentication), takes the shard locks the
//! table says the command needs, runs the handler, and appends the command's effects
//! to the effect stream before the locks are released; then it serves the clients
//! blocked on the keys the command wrote ([`crate::blocking`]). Handlers only do their
//! own work: parse their arguments, read and write keys through [`Locked`], write
//! replies.

pub mod args;
pub mod blocking;
pub mod table;

pub mod bitmaps;
pub mod client;
pub mod config;
pub mod connection;
pub mod debug;
pub mod functions;
pub mod geo;
pub mod hashes;
pub mod hyperloglog;
pub mod info;
pub mod introspection;
pub mod keys;
pub mod latency;
pub mod lists;
pub mod lolwut;
pub mod memory;
pub mod module;
pub mod pubsub;
pub mod scripting;
pub mod server;
pub mod sets;
pub mod shared;
pub mod slowlog;
pub mod sort;
pub mod streams;
pub mod strings;
pub mod transactions;
pub mod zsets;

use crate::client::{ClientState, ReplyMode};
use crate::keyspace::{KeyEnv, Locked, WaitGate};
use crate::latency::Event;
use crate::memory::Room;
use crate::server::Server;
use crate::stats::ThreadStats;
use kvik_resp::ReplyWriter;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use table::{Command, Lock, LockRequest, Need, Registry};

pub use crate::errors::{self, CmdError, CmdResult};

/// The command table: every family's entries, in the order COMMAND lists them,
/// gathered once per process (the entries are constants; nothing changes them).
pub fn registry() -> &'static Registry {
    static REGISTRY: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(|| {
        Registry::new(&[
            strings::COMMANDS,
            bitmaps::COMMANDS,
            hyperloglog::COMMANDS,
            keys::COMMANDS,
            lists::COMMANDS,
            hashes::COMMANDS,
            sets::COMMANDS,
            zsets::COMMANDS,
            geo::COMMANDS,
            streams::COMMANDS,
            sort::COMMANDS,
            pubsub::COMMANDS,
            connection::COMMANDS,
            client::COMMANDS,
            server::COMMANDS,
            info::COMMANDS,
            config::COMMANDS,
            introspection::COMMANDS,
            transactions::COMMANDS,
            debug::COMMANDS,
            scripting::COMMANDS,
            functions::COMMANDS,
            slowlog::COMMANDS,
            latency::COMMANDS,
            memory::COMMANDS,
            module::COMMANDS,
            lolwut::COMMANDS,
        ])
    })
}

/// What a handler works with.
pub struct Ctx<'c, 'a> {
    pub server: &'a Server,
    pub client: &'c mut ClientState,
    pub out: &'c mut ReplyWriter,
    /// The shards `call` locked for this command (see [`Lock`]).
    pub keys: &'c mut Locked<'a>,
    pub stats: &'a ThreadStats,
    /// The handler appended its own effects; `call` must not append the argv.
    pub propagated: bool,
    /// Changes made that `keys` did not count (EXEC's, made under its own `Locked`).
    pub extra_dirty: u64,
    /// The handler wrote an error reply of its own (a script's returned error) and
    /// counted it in INFO errorstats itself: the call counts as failed.
    pub replied_error: bool,
    /// When the command started (a script's run counts from here for BUSY).
    pub started: Instant,
}

impl<'c, 'a> Ctx<'c, 'a> {
    /// Append an effect in place of the command's own argv (call it while the keys are
    /// still locked, i.e. from the handler).
    pub fn propagate(&mut self, argv: &[&[u8]]) {
        let db = self.keys.db;
        self.keys.propagate(db, argv);
        self.propagated = true;
    }

    /// The environment a handler needs to take locks of its own.
    pub fn key_env(&self) -> KeyEnv<'a> {
        self.keys.env()
    }
}

/// Shards a [`Lock::Handler`] command asked for with [`Held::lock`].
pub enum Held<'r, 'a> {
    /// Held already by the caller of the command.
    Borrowed(&'r mut Locked<'a>),
    /// Locked for the command; released when this is dropped.
    Owned(Locked<'a>),
}

impl<'r, 'a> Held<'r, 'a> {
    /// For [`Lock::Handler`] commands: the shards `ids`
    /// ([`crate::keyspace::Keyspace::global_id`]) from `keys`, the `Locked` the command
    /// runs under, when it holds them all (inside EXEC), else locked afresh (a plain
    /// call holds nothing, so nothing is taken out of order). Changes made under fresh
    /// locks are the handler's own business: `call` neither counts nor propagates them.
    pub fn lock(keys: &'r mut Locked<'a>, ids: &[usize]) -> Self {
        if ids.iter().all(|&id| keys.holds(id)) {
            return Held::Borrowed(keys);
        }
        // Taking more while holding some could go out of order: whoever runs a
        // `Lock::Handler` command holds all it may ask for, or nothing.
        debug_assert!(
            ids.iter().all(|&id| !keys.holds(id)),
            "a Lock::Handler command runs under some of the shards it needs"
        );
        let mut fresh = Locked::shard_ids(keys.env(), keys.db, keys.now_ms, ids);
        fresh.touch = keys.touch;
        Held::Owned(fresh)
    }
}

impl<'a> std::ops::Deref for Held<'_, 'a> {
    type Target = Locked<'a>;
    fn deref(&self) -> &Locked<'a> {
        match self {
            Held::Borrowed(locked) => locked,
            Held::Owned(locked) => locked,
        }
    }
}

impl<'a> std::ops::DerefMut for Held<'_, 'a> {
    fn deref_mut(&mut self) -> &mut Locked<'a> {
        match self {
            Held::Borrowed(locked) => locked,
            Held::Owned(locked) => locked,
        }
    }
}

/// Run one command for a client: the whole life of a command.
pub fn call(
    server: &Server,
    stats: &ThreadStats,
    client: &mut ClientState,
    out: &mut ReplyWriter,
    args: &[&[u8]],
    now_ms: u64,
) {
    let reply_start = out.buf.len();
    if client.reply_mode == ReplyMode::SkipNext {
        client.reply_mode = ReplyMode::Skipping;
    }
    let in_multi = client.multi.is_some();
    let tracking = client.tracking.is_some();
    if tracking {
        crate::tracking::before_command(client);
    }
    let checked = resolve(server, client, args).and_then(|id| {
        let cmd = registry().get(id);
        refuse_if_oom(server, stats, client, cmd, args, now_ms)
            .and_then(|()| refuse_if_misconf(server, client, cmd))
            .and_then(|()| pubsub::check_subscribed_mode(client, out.protocol, cmd))
            .and_then(|()| refuse_if_busy(&server.scripting, cmd))
            .map(|()| id)
            .map_err(|e| (e, Some(id)))
    });
    // A CLIENT command leaves a pending CLIENT CACHING for the next one.
    let keeps_caching = tracking
        && checked
            .as_ref()
            .is_ok_and(|&id| registry().get(id).has(table::flags::KEEPS_CACHING));
    match checked {
        Ok(id) if in_multi && !registry().get(id).has(table::flags::NOT_QUEUED) => {
            let cmd = registry().get(id);
            if let Err(e) = transactions::queue(server, client, out, cmd, args, id) {
                stats.add(&stats.per_command[id].rejected_calls, 1);
                write_error(server, stats, out, &e.0);
            }
        }
        Ok(id) => execute(server, stats, client, out, args, id, now_ms),
        Err((e, id)) => {
            let cmd = id.map(|id| registry().get(id));
            if let Some(id) = id {
                stats.add(&stats.per_command[id].rejected_calls, 1);
            }
            let e = transactions::refused(client, cmd, e);
            write_error(server, stats, out, &e.0);
        }
    }
    if let Some(blocked) = client.blocked.as_mut() {
        // The reply comes when the wait ends; whether it is wanted is decided now.
        blocked.silent = matches!(client.reply_mode, ReplyMode::Off | ReplyMode::Skipping);
    }
    match client.reply_mode {
        ReplyMode::Off => out.buf.truncate(reply_start),
        ReplyMode::Skipping => {
            out.buf.truncate(reply_start);
            client.reply_mode = ReplyMode::On;
        }
        ReplyMode::On | ReplyMode::SkipNext => {}
    }
    // Invalidations are pushed even to a client that turned replies off, as in Redis.
    if tracking || client.tracking.is_some() {
        crate::tracking::after_command(&server.tracking_env(), client, out, keeps_caching);
    }
}

/// Find the command (or subcommand) and run the checks that precede execution.
/// The error carries the id of the command it was rejected for, if known.
fn resolve(
    server: &Server,
    client: &ClientState,
    args: &[&[u8]],
) -> Result<usize, (CmdError, Option<usize>)> {
    let registry = registry();
    let Some(mut id) = registry.lookup(args[0]) else {
        return Err((unknown_command(args).into(), None));
    };
    let mut cmd = registry.get(id);
    // A container given only its name runs its own handler (plain COMMAND).
    if !cmd.subcommands.is_empty() && args.len() > 1 && cmd.arity_ok(args.len()) {
        match registry.lookup_sub(cmd, args[1]) {
            Some(sub) => {
                id = sub;
                cmd = registry.get(sub);
            }
            None => {
                let msg = format!(
                    "ERR unknown subcommand '{}'. Try {} HELP.",
                    truncated(args[1], 128),
                    String::from_utf8_lossy(args[0]).to_uppercase()
                );
                return Err((msg.into(), None));
            }
        }
    }
    if !cmd.arity_ok(args.len()) {
        let msg = format!("ERR wrong number of arguments for '{}' command", cmd.name);
        return Err((msg.into(), Some(id)));
    }
    if cmd.has(table::flags::PROTECTED) {
        refuse_if_protected(server, client, cmd).map_err(|e| (e, Some(id)))?;
    }
    if !client.authenticated && !cmd.has(table::flags::NO_AUTH) {
        return Err((errors::NOAUTH.into(), Some(id)));
    }
    Ok(id)
}

/// DEBUG and MODULE's LOAD, LOADEX and UNLOAD are refused unless
/// `enable-debug-command` / `enable-module-command` allows them: `yes` for every
/// connection, `local` for loopback and unix-socket ones. Redis checks this right
/// after the arity, before authentication.
fn refuse_if_protected(server: &Server, client: &ClientState, cmd: &Command) -> CmdResult {
    // Each protected family has its switch: `enable-<family>-command`.
    let family = cmd.name.split('|').next().unwrap_or(cmd.name);
    let option = format!("enable-{family}-command");
    let setting = server.config.read().get(|name| name == option);
    let allowed = setting.first().is_some_and(|(_, value)| {
        value.eq_ignore_ascii_case("yes")
            || (value.eq_ignore_ascii_case("local") && config::client_is_local(&client.info.addr))
    });
    if allowed {
        return Ok(());
    }
    let title = family.to_ascii_uppercase();
    Err(format!(
        "ERR {title} command not allowed. If the {option} option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."
    )
    .into())
}

fn execute(
    server: &Server,
    stats: &ThreadStats,
    client: &mut ClientState,
    out: &mut ReplyWriter,
    args: &[&[u8]],
    id: usize,
    now: u64,
) {
    let cmd: &'static Command = registry().get(id);
    client.last_command = cmd.name;
    let scripts = &server.scripting;
    let env = KeyEnv {
        wait_gate: lock_wait_gate(scripts, cmd),
        ..server.key_env(stats)
    };
    let db = client.db;
    let mut keys: smallvec::SmallVec<[&[u8]; 4]> = smallvec::SmallVec::new();
    let mut locked = match cmd.lock {
        Lock::Keys => match cmd.key_positions(args) {
            Some(positions) => {
                keys.extend(positions.iter().map(|&i| args[i]));
                Locked::keys(env, db, now, &keys)
            }
            None => Locked::none(env, db, now),
        },
        Lock::Db => Locked::databases(env, db, now, &[db]),
        Lock::AllDbs => {
            let all: Vec<usize> = (0..server.keyspace.databases()).collect();
            Locked::databases(env, db, now, &all)
        }
        Lock::Args(_) => {
            let mut ids = Vec::new();
            plan_locks(server, cmd, args, db, &mut ids);
            Locked::shard_ids(env, db, now, &ids)
        }
        Lock::Handler => Locked::none(env, db, now),
    };
    if locked.gave_up() {
        return refuse(server, stats, out, id, &scripts.busy_reply());
    }
    locked.touch = !client.no_touch;
    let ran = run_locked(server, stats, client, out, args, id, &mut locked);
    drop(locked);
    stats.add(&stats.dirty, ran.changes);
    if ran.changes > 0 {
        let written = match cmd.lock {
            Lock::Keys => blocking::Written::Keys(db, &keys),
            _ => blocking::Written::Anything,
        };
        blocking::after_write(server, stats, written);
    }
    if let Some(blocked) = client.blocked.as_mut() {
        // The call is counted, and logged if slow, when the wait ends.
        blocked.command = id;
        blocked.ran_for = ran.elapsed;
        blocked.slow = slowlog::draft(server, cmd, args, ran.elapsed);
        return;
    }
    finish_call(
        server,
        stats,
        slowlog::Origin::Client(client),
        id,
        args,
        &ran,
    );
    if let Err(e) = ran.result {
        write_error(server, stats, out, &e.0);
    }
}

/// Over `maxmemory`, before a command that may grow memory runs, or any command is
/// queued inside MULTI (EXEC, DISCARD, QUIT and RESET excepted), as Redis checks it:
/// evict what the policy allows, and refuse with the OOM error when that cannot bring
/// used memory under the limit (a refused command inside MULTI makes EXEC abort).
/// Commands that run scripts are checked too, so their scripts know whether they may
/// start writing. Without a limit this is one relaxed load. Skipped while a script is
/// busy: Redis answers BUSY then (see [`refuse_if_busy`]).
fn refuse_if_oom(
    server: &Server,
    stats: &ThreadStats,
    client: &mut ClientState,
    cmd: &Command,
    args: &[&[u8]],
    now_ms: u64,
) -> CmdResult {
    if server.memory.limit().is_none() || server.scripting.is_busy() {
        return Ok(());
    }
    let queuing =
        client.multi.is_some() && !cmd.has(table::flags::ENDS_MULTI | table::flags::NO_MULTI);
    let grows = may_grow_memory(server, client, cmd, args);
    let runs_writes = cmd.runs_writing_script() || cmd.has(table::flags::RUNS_QUEUED);
    if !(grows || queuing || runs_writes) {
        return Ok(());
    }
    let env = server.key_env(stats);
    client.over_memory = server.memory.make_room(env, now_ms) == Room::Full;
    if client.over_memory && (grows || queuing) {
        return Err(errors::OOM.into());
    }
    Ok(())
}

/// After a failed background save, with `stop-writes-on-bgsave-error yes` and save
/// points set, writes (and PING, as in Redis 7.0) get MISCONF until a save
/// succeeds. One relaxed load otherwise.
fn refuse_if_misconf(server: &Server, client: &ClientState, cmd: &Command) -> CmdResult {
    if !server.persistence.refuses_writes() {
        return Ok(());
    }
    let writes = if cmd.has(table::flags::RUNS_QUEUED) {
        client.multi.as_ref().is_some_and(|tx| tx.writes)
    } else {
        cmd.has(table::flags::WRITE | table::flags::MISCONF_REFUSES)
    };
    if writes {
        return Err(errors::MISCONF.into());
    }
    Ok(())
}

/// Redis's `denyoom` for this call: the command's flag, or for EXEC whether a queued
/// command has it, or for a script with a shebang (or a function) whether it may
/// write without `allow-oom`.
pub fn may_grow_memory(
    server: &Server,
    client: &ClientState,
    cmd: &Command,
    args: &[&[u8]],
) -> bool {
    if cmd.has(table::flags::RUNS_QUEUED) {
        return client.multi.as_ref().is_some_and(|tx| tx.grows_memory);
    }
    match cmd.script.filter(|_| cmd.runs_writing_script()) {
        Some(script) => server
            .scripting
            .declared_flags(script, args)
            .is_some_and(|f| !f.no_writes && !f.allow_oom),
        None => cmd.has(table::flags::DENYOOM),
    }
}

/// While a script runs past busy-reply-threshold, commands not flagged allow-busy
/// are answered BUSY, before they are queued (inside MULTI, which EXEC then aborts)
/// or take any lock, as Redis does.
fn refuse_if_busy(scripts: &crate::scripting::Scripting, cmd: &Command) -> Result<(), CmdError> {
    if cmd.has(table::flags::ALLOW_BUSY) || !scripts.running.any() {
        return Ok(());
    }
    // Served from inside this thread's own busy script: nothing else may run in the
    // middle of it.
    if crate::scripting::serving_while_busy() {
        return Err(scripts.busy_reply());
    }
    scripts.busy_gate()
}

/// How a command may wait for shard locks while scripts run (a script may hold
/// them): one not flagged allow-busy gives up once a script turns busy, and answers
/// BUSY; one served from inside its own thread's busy script
/// ([`crate::scripting::serving_while_busy`]) may not wait at all, since the script cannot
/// move on until it returns.
fn lock_wait_gate<'s>(
    scripts: &'s crate::scripting::Scripting,
    cmd: &Command,
) -> Option<&'s dyn WaitGate> {
    if !scripts.running.any() {
        None
    } else if crate::scripting::serving_while_busy() {
        Some(&NeverWait)
    } else if cmd.has(table::flags::ALLOW_BUSY) {
        None
    } else {
        Some(scripts)
    }
}

/// The wait gate of commands that must not wait for a lock at all.
struct NeverWait;

impl WaitGate for NeverWait {
    fn give_up(&self) -> bool {
        true
    }
}

/// After a read-only command ran, with its shard locks still held: remember the
/// keys it read for the client, if its tracking settings say so.
fn remember_reads(server: &Server, client: &ClientState, cmd: &Command, args: &[&[u8]]) {
    let Some(tracking) = &client.tracking else {
        return;
    };
    // Read-only scripts are tracked through the commands they run; channel names of
    // shard pub/sub are not keys anyone caches.
    if !tracking.remembers_reads() || cmd.runs_read_only_script() || cmd.has(table::flags::PUBSUB) {
        return;
    }
    if let Some(positions) = cmd.key_positions(args) {
        let keys = positions.iter().map(|&at| args[at]);
        server
            .tracking
            .remember(crate::tracking::Endpoint::of(&client.info), keys);
    }
}

/// Add to `ids` the shards ([`crate::keyspace::Keyspace::global_id`]) command `cmd`
/// needs to run with `args` in database `db`, as [`Lock`] says; returns the database
/// the next command of a transaction runs in (SELECT changes it).
pub fn plan_locks(
    server: &Server,
    cmd: &Command,
    args: &[&[u8]],
    db: usize,
    ids: &mut Vec<usize>,
) -> usize {
    let ks = &server.keyspace;
    let whole_db = |db: usize, ids: &mut Vec<usize>| ids.extend(ks.db_shard_ids(db));
    match cmd.lock {
        Lock::Keys => {
            if let Some(positions) = cmd.key_positions(args) {
                ids.extend(positions.iter().map(|&at| ks.shard_id_of(db, args[at])));
            }
        }
        Lock::Db => whole_db(db, ids),
        Lock::AllDbs | Lock::Handler => (0..ks.databases()).for_each(|d| whole_db(d, ids)),
        Lock::Args(needs) => {
            let request = LockRequest {
                args,
                db,
                databases: ks.databases(),
            };
            for need in needs(&request) {
                match need {
                    Need::Key { db, arg } => ids.push(ks.shard_id_of(db, args[arg])),
                    Need::Db(db) => whole_db(db, ids),
                }
            }
        }
    }
    if cmd.has(table::flags::SELECTS_DB) {
        if let Ok(selected) = args::db_index(args[1], ks.databases()) {
            return selected;
        }
    }
    db
}

/// Answer a command with an error without running it (BUSY).
fn refuse(server: &Server, stats: &ThreadStats, out: &mut ReplyWriter, id: usize, e: &CmdError) {
    stats.add(&stats.per_command[id].rejected_calls, 1);
    write_error(server, stats, out, &e.0);
}

/// What running one command against held shards produced.
pub struct Ran {
    pub result: CmdResult,
    /// The handler replied an error of its own ([`Ctx::replied_error`]).
    pub replied_error: bool,
    /// Changes it made (Redis's `dirty`), its own locks included.
    pub changes: u64,
    pub elapsed: Duration,
}

impl Ran {
    /// Did the call fail (INFO commandstats' `failed_calls`)?
    pub fn failed(&self) -> bool {
        self.result.is_err() || self.replied_error
    }
}

/// Run command `id` against shards the caller already holds: the handler (a panic
/// becomes an error reply) and the command's effects. Plain commands come here from
/// [`call`]; transactions and scripts run each of their commands here under the one
/// `Locked` that covers them all. Error replies, counting the call and serving blocked
/// clients are left to the caller.
pub fn run_locked<'a>(
    server: &'a Server,
    stats: &'a ThreadStats,
    client: &mut ClientState,
    out: &mut ReplyWriter,
    args: &[&[u8]],
    id: usize,
    locked: &mut Locked<'a>,
) -> Ran {
    let cmd: &'static Command = registry().get(id);
    let dirty_before = locked.dirty();
    // A command whose write takes several effects (XREADGROUP's claims, a lazily
    // expired key's DEL before a SET) reaches replicas as one MULTI ... EXEC, as in
    // Redis 7.0; inside a transaction or script, the group already open holds them.
    let own_group = !locked.in_effect_group();
    if own_group {
        locked.begin_effect_group();
    }
    let started = Instant::now();
    let mut ctx = Ctx {
        server,
        client,
        out,
        keys: locked,
        stats,
        propagated: false,
        extra_dirty: 0,
        replied_error: false,
        started,
    };
    // A bug in one handler must not take the worker thread and its clients down with
    // it: the panic becomes an error reply (the shard locks unlock as the stack unwinds).
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        (cmd.handler)(&mut ctx, args)
    }))
    .unwrap_or_else(|_| {
        crate::log_warning!("Internal error while running '{}'", cmd.name);
        Err(format!("ERR internal error while running '{}'", cmd.name).into())
    });
    // Remembered while the keys' shards are still locked: no write slips between.
    if ctx.client.tracking.is_some() && cmd.has(table::flags::READONLY) {
        remember_reads(server, ctx.client, cmd, args);
    }
    let changes = ctx.keys.dirty() - dirty_before + ctx.extra_dirty;
    if changes > 0 && !ctx.propagated {
        let db = ctx.keys.db;
        ctx.keys.propagate(db, args);
    }
    if own_group {
        ctx.keys.finish_effect_group();
    }
    // Commands inside EXEC and scripts are shown too, each after it ran.
    if server.pubsub.has_monitors() {
        pubsub::feed_monitors(server, ctx.client, cmd, args);
    }
    Ran {
        result,
        replied_error: ctx.replied_error,
        changes,
        elapsed: started.elapsed(),
    }
}

/// A call of command `id` with `args`, made by `origin`, ran to its end: count it
/// and, when it took long enough to concern them, show it to the latency monitor
/// and the slow log. When nothing is slow that costs one relaxed load and one
/// comparison: neither takes a lock unless it keeps something.
pub fn finish_call(
    server: &Server,
    stats: &ThreadStats,
    origin: slowlog::Origin,
    id: usize,
    args: &[&[u8]],
    ran: &Ran,
) {
    count_call(server, stats, id, ran.elapsed, ran.failed());
    if ran.elapsed.as_micros() as u64 >= server.hot.slow_call_us.load(Ordering::Relaxed) {
        slow_call(server, origin, registry().get(id), args, ran.elapsed);
    }
}

#[cold]
fn slow_call(
    server: &Server,
    origin: slowlog::Origin,
    cmd: &Command,
    args: &[&[u8]],
    elapsed: Duration,
) {
    let event = if cmd.has(table::flags::FAST) {
        Event::FastCommand
    } else {
        Event::Command
    };
    server.latency.note(event, elapsed);
    if let Some(call) = slowlog::draft(server, cmd, args, elapsed) {
        slowlog::push(server, origin, call);
    }
}

/// Count a finished call of command `id` (INFO commandstats, latency, totals).
pub fn count_call(
    server: &Server,
    stats: &ThreadStats,
    id: usize,
    elapsed: Duration,
    failed: bool,
) {
    let per = &stats.per_command[id];
    stats.add(&per.calls, 1);
    stats.add(&per.usec, elapsed.as_micros() as u64);
    if server.hot.latency_tracking.load(Ordering::Relaxed) {
        per.record_latency(elapsed);
    }
    stats.add(&stats.commands, 1);
    if failed {
        stats.add(&per.failed_calls, 1);
    }
}

/// Write an error reply and count it in INFO errorstats (by its first word).
pub fn write_error(server: &Server, stats: &ThreadStats, out: &mut ReplyWriter, text: &str) {
    out.error(text);
    count_error_reply(server, stats, text);
}

/// Count an error reply in INFO errorstats (by its first word) and stats.
pub fn count_error_reply(server: &Server, stats: &ThreadStats, text: &str) {
    stats.add(&stats.total_error_replies, 1);
    let prefix = text.split(' ').next().unwrap_or("ERR");
    server.count_error(prefix);
}

/// What a hidden argument reads as.
pub const REDACTED: &[u8] = b"(redacted)";

/// The arguments as MONITOR and SLOWLOG show them: with the secrets the command's
/// entry names hidden (see [`table::Redact`]).
pub fn redacted<'a>(cmd: &Command, args: &[&'a [u8]]) -> Vec<&'a [u8]> {
    let mut shown = args.to_vec();
    if let Some(redact) = cmd.redact {
        redact(&mut shown);
    }
    shown
}

/// `ERR unknown command 'x', with args beginning with: 'a' 'b' `, as Redis builds it.
fn unknown_command(args: &[&[u8]]) -> String {
    let mut listed = String::new();
    for arg in &args[1..] {
        if listed.len() >= 128 {
            break;
        }
        let room = 128 - listed.len();
        listed.push_str(&format!("'{}' ", truncated(arg, room)));
    }
    format!(
        "ERR unknown command '{}', with args beginning with: {}",
        truncated(args[0], 128),
        listed
    )
}

/// At most `max` bytes of `arg`, as text, ending at a NUL byte as C's `%.*s` does.
fn truncated(arg: &[u8], max: usize) -> String {
    let end = arg
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(arg.len())
        .min(max);
    String::from_utf8_lossy(&arg[..end]).into_owned()
}
