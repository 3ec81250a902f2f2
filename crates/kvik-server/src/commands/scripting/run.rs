//! Running a script or function as a command (EVAL, EVALSHA, FCALL and their
//! read-only forms): its locks, its registration as running, the `redis.call`
//! bridge for its length ([`Caller`]), and its reply or error text. What runs comes
//! from the scripting engine, compiled in this thread's Lua state ([`Runnable`]).

use super::caller::{acquire_keys, Caller};
use crate::commands::{self, CmdError, CmdResult, Ctx};
use crate::keyspace::{KeyEnv, Locked, WaitGate};
use crate::scripting::busy::ScriptKind;
use crate::scripting::{
    convert, lua_error_text, with_function, with_script, Inputs, Installed, Runnable, ScriptSource,
};
use mlua::Value;

/// How a script is being run.
pub struct RunSpec<'s> {
    pub kind: ScriptKind,
    /// The script's SHA1 or the function's name, for error texts and STATS.
    pub name: &'s [u8],
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
    with_script(engine, source, |sha, runnable| {
        let flags = runnable.flags;
        if ro_command && flags.shebang && !flags.no_writes {
            return Err("ERR Can not execute a script with write flag using *_ro command.".into());
        }
        let spec = RunSpec {
            kind: ScriptKind::Eval,
            name: sha,
            read_only: ro_command || flags.no_writes,
            allow_oom: flags.allow_oom,
            command,
        };
        let inputs = Inputs::Globals { keys, argv };
        run(ctx, runnable, keys, inputs, &spec)
    })
}

/// FCALL / FCALL_RO once the arguments are checked.
pub fn fcall(
    ctx: &mut Ctx,
    command: &[&[u8]],
    keys: &[&[u8]],
    argv: &[&[u8]],
    ro_command: bool,
) -> CmdResult {
    let engine = &ctx.server.scripting;
    let name = String::from_utf8_lossy(command[1]);
    with_function(engine, &name, |runnable| {
        let flags = runnable.flags;
        if ro_command && !flags.no_writes {
            return Err("ERR Can not execute a script with write flag using *_ro command.".into());
        }
        let spec = RunSpec {
            kind: ScriptKind::Function,
            name: name.as_bytes(),
            read_only: ro_command || flags.no_writes,
            allow_oom: flags.allow_oom,
            command,
        };
        let inputs = Inputs::Parameters { keys, argv };
        run(ctx, runnable, keys, inputs, &spec)
    })
}

/// Runs a compiled script or function with its declared `keys` and its `inputs`,
/// and writes its reply.
fn run(
    ctx: &mut Ctx,
    runnable: Runnable,
    keys: &[&[u8]],
    inputs: Inputs,
    spec: &RunSpec,
) -> CmdResult {
    let Runnable {
        sandbox,
        slot,
        function: f,
        ..
    } = runnable;
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
        acquire_keys(ctx.keys, keys).map_err(CmdError::from)?;
        None
    } else {
        let mut locked = lock_declared_keys(ctx, keys)?;
        locked.touch = ctx.keys.touch;
        locked.keep_written_like(ctx.keys);
        // Its effects reach replicas as one MULTI ... EXEC (a transaction running the
        // script has a group open already).
        locked.begin_effect_group();
        Some(locked)
    };
    let dirty_before = ctx.keys.dirty();
    // It counts as running (for BUSY and KILL) once it holds its keys, and as running
    // since its command started (which spares reading the clock again).
    let running =
        ctx.server
            .scripting
            .running
            .enter(slot, spec.kind, ctx.started, spec.name, spec.command);
    let saved_deny = std::mem::replace(&mut ctx.client.deny_blocking, true);
    ctx.client.running_script = true;
    let (outcome, resp) = {
        let mut caller = Caller::new(ctx, own.as_mut(), keys, spec, slot);
        let outcome = {
            let _installed = Installed::new(&mut caller);
            sandbox.call(f, inputs)
        };
        (outcome, caller.resp())
    };
    // Read before the run stops counting, which clears the flag.
    let killed = slot.killed();
    drop(running);
    ctx.client.db = saved_db;
    ctx.client.deny_blocking = saved_deny;
    ctx.client.running_script = false;
    ctx.keys.db = saved_db;
    let wrote = match own {
        Some(mut locked) => {
            locked.finish_effect_group();
            ctx.keys.absorb_written(&mut locked);
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
        Ok(Ok(value)) => {
            let errors = convert::lua_to_reply(&value, ctx.out, resp);
            for text in &errors.uncounted {
                commands::count_error_reply(ctx.server, ctx.stats, text);
            }
            ctx.replied_error = errors.any;
            Ok(())
        }
        Ok(Err(value)) => {
            // A killed script fails wherever the kill found it; say why, not what.
            let reason = killed.then_some("ERR Script killed by user with SCRIPT KILL...");
            let text = script_error(&value, reason, spec.name);
            if convert::counted_already(&value) && !killed {
                // A command's error, raised by redis.call: counted when it was made.
                ctx.out.error(&text);
                ctx.replied_error = true;
                return Ok(());
            }
            Err(text.into())
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

/// `<error> script: <name>, on <source>:<line>.` from the error handler's table
/// (`text` in place of its error text when given).
fn script_error(value: &Value, text: Option<&str>, name: &[u8]) -> String {
    let name = String::from_utf8_lossy(name);
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
