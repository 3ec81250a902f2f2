//! The admission checks: what a command must pass before it runs or is queued, in
//! Redis's order, with Redis's error texts. Finding the command and checking its
//! arity, the protection of DEBUG and MODULE, authentication ([`resolve`]); then,
//! once found, `maxmemory` ([`refuse_if_oom`]), MISCONF ([`refuse_if_misconf`]),
//! replication ([`refuse_if_replication`]), loading ([`refuse_if_loading`]),
//! subscribed mode (in the pub/sub family) and a busy script ([`refuse_if_busy`]).
//! Each costs a relaxed load or two when it does not apply.

use super::table::{self, Command};
use super::{config, errors, registry, CmdError, CmdResult};
use crate::client::ClientState;
use crate::keyspace::WaitGate;
use crate::memory::Room;
use crate::server::renames::Named;
use crate::server::Server;
use crate::stats::ThreadStats;

/// Find the command (or subcommand) and run the checks that precede execution.
/// The error carries the id of the command it was rejected for, if known.
#[inline]
pub(super) fn resolve(
    server: &Server,
    client: &ClientState,
    args: &[&[u8]],
) -> Result<usize, (CmdError, Option<usize>)> {
    let registry = registry();
    let Some(mut id) = lookup_name(server, args[0]) else {
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
    // A connection that has not authenticated may run commands again once the
    // default user needs no password (Redis's `authRequired`).
    if !client.authenticated && !cmd.has(table::flags::NO_AUTH) && server.acl.default_needs_auth() {
        return Err((errors::NOAUTH.into(), Some(id)));
    }
    Ok(id)
}

/// The command a client's name stands for, after `rename-command` (one check of an
/// empty map when nothing was renamed).
#[inline]
pub fn lookup_name(server: &Server, name: &[u8]) -> Option<usize> {
    if server.renames.is_empty() {
        return registry().lookup(name);
    }
    match server.renames.resolve(name) {
        Named::AsIs => registry().lookup(name),
        Named::Renamed(original) => registry().lookup(original.as_bytes()),
        Named::Hidden => None,
    }
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

/// Over `maxmemory`, before a command that may grow memory runs, or any command is
/// queued inside MULTI (EXEC, DISCARD, QUIT and RESET excepted), as Redis checks it:
/// evict what the policy allows, and refuse with the OOM error when that cannot bring
/// used memory under the limit (a refused command inside MULTI makes EXEC abort).
/// Commands that run scripts are checked too, so their scripts know whether they may
/// start writing. Without a limit this is one relaxed load. Skipped while a script is
/// busy: Redis answers BUSY then (see [`refuse_if_busy`]).
#[inline]
pub(super) fn refuse_if_oom(
    server: &Server,
    stats: &ThreadStats,
    client: &mut ClientState,
    cmd: &Command,
    args: &[&[u8]],
    now_ms: u64,
) -> CmdResult {
    // The master's stream is applied whatever the replica's memory (Redis's
    // replicas never refuse their master).
    if server.memory.limit().is_none() || server.scripting.is_busy() || client.is_master {
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
#[inline]
pub(super) fn refuse_if_misconf(server: &Server, client: &ClientState, cmd: &Command) -> CmdResult {
    let rdb = server.persistence.refuses_writes();
    if !rdb && !server.aof.refuses_writes() {
        return Ok(());
    }
    let writes = if cmd.has(table::flags::RUNS_QUEUED) {
        client.multi.as_ref().is_some_and(|tx| tx.writes)
    } else {
        cmd.has(table::flags::WRITE | table::flags::MISCONF_REFUSES)
    };
    if !writes {
        return Ok(());
    }
    if client.is_master {
        // PING is the only command refused without writing.
        return obey_despite_disk_errors(server, !cmd.has(table::flags::MISCONF_REFUSES));
    }
    Err(match rdb {
        true => errors::MISCONF.into(),
        false => server.aof.misconf_error().into(),
    })
}

/// A replica that cannot persist never refuses its master (that would part their
/// datasets): as Redis 7.0, a write from the master stops the process unless
/// `replica-ignore-disk-write-errors yes`, which applies it with a warning (one
/// every 10 seconds, as for the master's PINGs).
#[cold]
fn obey_despite_disk_errors(server: &Server, writes_data: bool) -> CmdResult {
    static LAST_WARNING_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let ignore = server.config.read().replica_ignore_disk_write_errors;
    if writes_data && !ignore {
        crate::crash::panic_now("Replica was unable to write command to disk.");
    }
    let now = crate::hlc::unix_ms();
    let last = LAST_WARNING_MS.load(std::sync::atomic::Ordering::Relaxed);
    if now >= last + 10_000 {
        LAST_WARNING_MS.store(now, std::sync::atomic::Ordering::Relaxed);
        crate::log_warning!(
            "Replica is applying a command even though it is unable to write to disk."
        );
    }
    Ok(())
}

/// What replication refuses, as Redis 7.0 does and in its order: a write on a
/// master with fewer good replicas than `min-replicas-to-write` (NOREPLICAS), a
/// write from a client on a read-only replica (READONLY), and on a replica whose
/// link is down with `replica-serve-stale-data no`, any command not flagged
/// `stale` (MASTERDOWN). The master's own stream passes. A few relaxed loads.
#[inline]
pub(super) fn refuse_if_replication(
    server: &Server,
    client: &ClientState,
    cmd: &Command,
) -> CmdResult {
    if client.is_master {
        return Ok(());
    }
    let repl = &server.replication;
    let writes = if cmd.has(table::flags::RUNS_QUEUED) {
        client.multi.as_ref().is_some_and(|tx| tx.writes)
    } else {
        cmd.has(table::flags::WRITE)
    };
    if writes && repl.lacks_good_replicas() {
        return Err(errors::NOREPLICAS.into());
    }
    if writes && repl.refuses_writes() {
        return Err(errors::READONLY.into());
    }
    if !cmd.has(table::flags::STALE) && repl.refuses_stale() {
        return Err(errors::MASTERDOWN.into());
    }
    Ok(())
}

/// While the dataset loads, commands not flagged `loading` get -LOADING (the
/// loader's own commands, an AOF's, pass), as Redis refuses them right after the
/// replication checks; while a replica loads beside the dataset it serves, only
/// those flagged `no-async-loading` do. While the server starts and loads no file,
/// every command waits. Three relaxed loads otherwise.
#[inline]
pub(super) fn refuse_if_loading(server: &Server, cmd: &Command) -> CmdResult {
    server.loading.wait_while_starting();
    if !cmd.has(table::flags::LOADING) && server.loading.refuses_here() {
        return Err(errors::LOADING.into());
    }
    if cmd.has(table::flags::NO_ASYNC_LOADING) && server.loading.is_async() {
        return Err(errors::LOADING.into());
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
#[inline]
pub(super) fn refuse_if_busy(
    scripts: &crate::scripting::Scripting,
    cmd: &Command,
) -> Result<(), CmdError> {
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
#[inline]
pub(super) fn lock_wait_gate<'s>(
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

/// Must this command wait for CLIENT PAUSE to end? Under PAUSE ALL every command;
/// under PAUSE WRITE those that write or may replicate (PUBLISH, PFCOUNT, scripts
/// that may write), and EXEC when its queue holds one, as Redis 7.0 decides. A
/// command that will fail [`resolve`]'s checks (unknown, wrong arity, not allowed,
/// not authenticated) is not held: its error comes at once, as in Redis, which
/// pauses only what passed them. One relaxed load when nobody paused.
#[inline]
pub fn held_by_pause(server: &Server, client: &ClientState, args: &[&[u8]], now_ms: u64) -> bool {
    if !server.pause.is_active() {
        return false;
    }
    let Ok(id) = resolve(server, client, args) else {
        return false;
    };
    let cmd = registry().get(id);
    let writes = if cmd.has(table::flags::RUNS_QUEUED) {
        client.multi.as_ref().is_some_and(|tx| tx.may_replicate)
    } else {
        may_replicate(server, cmd, args)
    };
    server.pause.blocks(now_ms, writes)
}

/// Does this call write or may it replicate (what CLIENT PAUSE WRITE holds back)?
/// The command's flags; for a script that may write (EVAL, EVALSHA, FCALL), what it
/// declared: a `no-writes` script neither writes nor replicates, one without a
/// shebang may do both, as Redis 7.0 reads it.
pub fn may_replicate(server: &Server, cmd: &Command, args: &[&[u8]]) -> bool {
    match cmd.script.filter(|_| cmd.runs_writing_script()) {
        Some(script) => server
            .scripting
            .declared_flags(script, args)
            .is_none_or(|f| !f.no_writes),
        None => cmd.has(table::flags::WRITE | table::flags::MAY_REPLICATE),
    }
}
