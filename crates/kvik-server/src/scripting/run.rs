//! Running a compiled script or function: its locks, its registration as running,
//! the `redis.call` bridge for its length, and its reply or error text.

use super::busy::{RunningScript, ScriptKind};
use super::state::{compiled, lua_error_text, with_state, ThreadState};
use super::{call, convert, sha1_hex};
use crate::commands::{CmdError, CmdResult, Ctx};
use crate::keyspace::{KeyEnv, Locked, WaitGate};
use mlua::{Function, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// How a script is being run.
pub struct RunSpec<'s> {
    pub kind: ScriptKind,
    /// The script's SHA1 or the function's name, for error texts and STATS.
    pub name: &'s str,
    /// Writes are refused (EVAL_RO, FCALL_RO, or the `no-writes` flag).
    pub read_only: bool,
    /// The `allow-oom` flag: it may write over `maxmemory`.
    pub allow_oom: bool,
    /// The command that runs it, as FUNCTION STATS and MONITOR show it.
    pub command: &'s [&'s [u8]],
}

/// EVAL / EVALSHA / EVAL_RO / EVALSHA_RO once the arguments are checked: find or
/// compile the script and run it.
pub fn eval(
    ctx: &mut Ctx,
    command: &[&[u8]],
    source: ScriptSource,
    keys: &[&[u8]],
    argv: &[&[u8]],
    ro_command: bool,
) -> CmdResult {
    let engine = &ctx.server.scripting;
    with_state(engine, |state| {
        let (sha, body) = match source {
            ScriptSource::Body(b) => (sha1_hex(b), Some(b)),
            ScriptSource::Sha(s) => (s.to_ascii_lowercase(), None),
        };
        let (f, flags) = compiled(engine, state, &sha, body)?;
        if ro_command && flags.shebang && !flags.no_writes {
            return Err("ERR Can not execute a script with write flag using *_ro command.".into());
        }
        let spec = RunSpec {
            kind: ScriptKind::Eval,
            name: &sha,
            read_only: ro_command || flags.no_writes,
            allow_oom: flags.allow_oom,
            command,
        };
        run(ctx, state, &f, keys, argv, &spec)
    })?
}

/// Where EVAL's script comes from.
pub enum ScriptSource<'a> {
    Body(&'a [u8]),
    Sha(&'a str),
}

/// Runs a compiled script or function with its keys and arguments, and writes its
/// reply.
pub(super) fn run(
    ctx: &mut Ctx,
    state: &ThreadState,
    f: &Function,
    keys: &[&[u8]],
    argv: &[&[u8]],
    spec: &RunSpec,
) -> CmdResult {
    let sandbox = &state.sandbox;
    let lua = &sandbox.lua;
    let lua_err = |e: mlua::Error| CmdError::from(format!("ERR {}", lua_error_text(&e)));
    let keys_table = strings_table(lua, keys).map_err(lua_err)?;
    let argv_table = strings_table(lua, argv).map_err(lua_err)?;
    sandbox.bridge.raw_set("resp", 2).map_err(lua_err)?;
    let saved_db = ctx.client.db;
    // EVAL and FCALL skip the usual MONITOR line after the command: they show
    // before the commands their script runs, as in Redis.
    if ctx.server.pubsub.has_monitors() {
        crate::commands::pubsub::show_to_monitors(ctx.server, ctx.client, spec.command);
    }
    // The script takes its own locks, starting with its declared keys' shards, so that
    // once it has released them every key it wrote (declared or not, in any database)
    // can be served to blocked clients: `call` does that for commands locking this way.
    // Inside a transaction, which already holds shards, it extends those instead.
    let in_transaction = !ctx.keys.holds_none();
    let mut own = if in_transaction {
        call::acquire_keys(ctx.keys, keys).map_err(CmdError::from)?;
        None
    } else {
        let mut locked = lock_declared_keys(ctx, keys)?;
        locked.touch = ctx.keys.touch;
        // Its effects reach replicas as one MULTI ... EXEC (a transaction running the
        // script has a group open already).
        locked.begin_effect_group();
        Some(locked)
    };
    let dirty_before = ctx.keys.dirty();
    // It counts as running (for BUSY and KILL) once it holds its keys.
    let threshold = ctx.server.config.read().busy_reply_threshold;
    ctx.server.scripting.note_threshold(threshold);
    let guard = ctx.server.scripting.running.enter(RunningScript {
        kind: spec.kind,
        started: Instant::now(),
        name: spec.name.to_string(),
        command: spec.command.iter().map(|a| a.to_vec()).collect(),
        kill: AtomicBool::new(false),
        wrote: AtomicBool::new(false),
    });
    lua.set_app_data(guard.script.clone());
    let saved_deny = std::mem::replace(&mut ctx.client.deny_blocking, true);
    ctx.client.running_script = true;
    let outcome = {
        let mut caller = call::Caller::new(ctx, own.as_mut(), spec, &guard.script, &sandbox.bridge);
        lua.scope(|scope| {
            let dispatch = scope
                .create_function_mut(|lua, args: mlua::MultiValue| caller.dispatch(lua, args))?;
            sandbox.bridge.raw_set("dispatch", dispatch)?;
            let result: (bool, Value) = match spec.kind {
                ScriptKind::Eval => {
                    sandbox.globals.raw_set("KEYS", keys_table)?;
                    sandbox.globals.raw_set("ARGV", argv_table)?;
                    sandbox.run.call(f.clone())?
                }
                ScriptKind::Function => sandbox.run.call((f.clone(), keys_table, argv_table))?,
            };
            sandbox.bridge.raw_set("dispatch", Value::Nil)?;
            Ok(result)
        })
    };
    lua.remove_app_data::<Arc<RunningScript>>();
    ctx.client.db = saved_db;
    ctx.client.deny_blocking = saved_deny;
    ctx.client.running_script = false;
    ctx.keys.db = saved_db;
    let wrote = match own {
        Some(mut locked) => {
            locked.finish_effect_group();
            ctx.extra_dirty += locked.dirty();
            locked.dirty() > 0
        }
        None => ctx.keys.dirty() > dirty_before,
    };
    if wrote {
        // The commands the script ran were propagated, as one group.
        ctx.propagated = true;
    }
    match outcome {
        Ok((true, value)) => {
            let resp: u8 = sandbox.bridge.raw_get("resp").unwrap_or(2);
            convert::lua_to_reply(&value, ctx.out, resp);
            Ok(())
        }
        Ok((false, value)) => {
            // A killed script fails wherever the kill found it; say why, not what.
            let killed = guard.script.kill.load(Ordering::Acquire);
            let text = killed.then_some("ERR Script killed by user with SCRIPT KILL...");
            Err(script_error(&value, text, spec.name).into())
        }
        Err(e) => Err(format!("ERR {}", lua_error_text(&e)).into()),
    }
}

/// Locks a script's declared keys. While another script runs, the wait may end in
/// BUSY, as for any command (see `KeyEnv::wait_gate`).
fn lock_declared_keys<'a>(ctx: &Ctx<'_, 'a>, keys: &[&[u8]]) -> Result<Locked<'a>, CmdError> {
    let scripting = &ctx.server.scripting;
    let env = KeyEnv {
        wait_gate: scripting
            .running
            .any()
            .then_some(scripting as &dyn WaitGate),
        ..ctx.key_env()
    };
    let locked = Locked::keys(env, ctx.client.db, ctx.keys.now_ms, keys);
    if locked.gave_up() {
        return Err(scripting.busy_reply());
    }
    Ok(locked)
}

/// A Lua array of byte strings (KEYS, ARGV).
fn strings_table(lua: &mlua::Lua, items: &[&[u8]]) -> mlua::Result<mlua::Table> {
    let table = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, item) in items.iter().enumerate() {
        table.raw_set(i + 1, lua.create_string(item)?)?;
    }
    Ok(table)
}

/// `<error> script: <name>, on <source>:<line>.` from the error handler's table
/// (`text` in place of its error text when given).
fn script_error(value: &Value, text: Option<&str>, name: &str) -> String {
    let Value::Table(t) = value else {
        return format!("ERR unknown error script: {name}");
    };
    let field = |k: &str| match t.raw_get::<Value>(k) {
        Ok(Value::String(s)) => s.to_string_lossy(),
        Ok(Value::Integer(n)) => n.to_string(),
        Ok(Value::Number(n)) => n.to_string(),
        _ => "?".to_string(),
    };
    format!(
        "{} script: {}, on {}:{}.",
        text.map_or_else(|| field("err"), str::to_string),
        name,
        field("source"),
        field("line")
    )
}
