//! Lua scripting: EVAL scripts, FUNCTION libraries, and the engine that runs both.
//!
//! Each worker thread owns a Lua state of its own (Lua states are single-threaded),
//! created on first use. What must be the same on every thread is shared here: the
//! script cache (SHA1 -> source, filled by EVAL and SCRIPT LOAD), the function
//! libraries, and the list of running scripts. A thread compiles a cached script into
//! its own state the first time it runs it, as `f_<sha>`'s body named `@user_script`,
//! so error texts read as Redis's. SCRIPT FLUSH and changes to the libraries bump an
//! epoch; a thread whose state is older rebuilds what it holds before its next run.
//!
//! A script runs on the thread that received it, holding the shard locks of the keys
//! it declared for its whole run (EVAL and FCALL lock for themselves); [`call`] runs
//! each `redis.call` through [`crate::commands::run_locked`] and takes the shard of
//! an undeclared key on demand. [`busy`] tracks running scripts for BUSY and KILL.

pub mod busy;
mod call;
mod convert;
pub mod functions;
pub mod payload;
mod sandbox;

pub use sandbox::load_libraries;

use crate::commands::table::{flags, Command};
use crate::commands::{CmdError, CmdResult, Ctx};
use crate::keyspace::{KeyEnv, Locked, WaitGate};
use busy::{Monitor, RunningScript, ScriptKind};
use mlua::{Function, Value};
use parking_lot::RwLock;
use sandbox::Sandbox;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A script's declared flags: from its `#!lua flags=...` line, or a function's
/// registration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScriptFlags {
    /// The script has a shebang (and so is held to its flags).
    pub shebang: bool,
    pub no_writes: bool,
    pub allow_oom: bool,
    pub allow_stale: bool,
    pub no_cluster: bool,
    pub allow_cross_slot_keys: bool,
}

impl ScriptFlags {
    /// Sets the flag `name`; false if there is no such flag.
    fn set(&mut self, name: &str) -> bool {
        let field = match name {
            "no-writes" => &mut self.no_writes,
            "allow-oom" => &mut self.allow_oom,
            "allow-stale" => &mut self.allow_stale,
            "no-cluster" => &mut self.no_cluster,
            "allow-cross-slot-keys" => &mut self.allow_cross_slot_keys,
            _ => return false,
        };
        *field = true;
        true
    }

    /// The flag names, in Redis's order (FUNCTION LIST).
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.no_writes, "no-writes"),
            (self.allow_oom, "allow-oom"),
            (self.allow_stale, "allow-stale"),
            (self.no_cluster, "no-cluster"),
            (self.allow_cross_slot_keys, "allow-cross-slot-keys"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }
}

/// A script in the cache.
pub struct CachedScript {
    pub body: Vec<u8>,
    pub flags: ScriptFlags,
}

/// The scripting state all threads share (one per server).
pub struct Scripting {
    /// Tells this server's thread-local states apart from another server's in the
    /// same process (tests start several).
    id: u64,
    scripts: RwLock<HashMap<String, Arc<CachedScript>>>,
    scripts_epoch: AtomicU64,
    pub libraries: functions::Libraries,
    pub running: Monitor,
    /// `busy-reply-threshold` in ms, read from the configuration as each script
    /// starts (so the per-command check never touches the configuration lock).
    threshold_ms: AtomicU64,
}

impl Default for Scripting {
    fn default() -> Self {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Scripting {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            scripts: RwLock::default(),
            scripts_epoch: AtomicU64::new(0),
            libraries: functions::Libraries::default(),
            running: Monitor::default(),
            threshold_ms: AtomicU64::new(5000),
        }
    }
}

/// The lowercase hex SHA1 of `data`.
pub fn sha1_hex(data: &[u8]) -> String {
    use sha1::{Digest, Sha1};
    hex::encode(Sha1::digest(data))
}

/// Redis's BUSY text while a script of `kind` runs.
pub fn busy_text(kind: ScriptKind) -> &'static str {
    match kind {
        ScriptKind::Eval => {
            "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
        }
        ScriptKind::Function => {
            "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
        }
    }
}

impl Scripting {
    pub fn cached(&self, sha: &str) -> Option<Arc<CachedScript>> {
        self.scripts.read().get(sha).cloned()
    }

    pub fn exists(&self, sha: &str) -> bool {
        self.scripts.read().contains_key(sha)
    }

    /// SCRIPT FLUSH: forget every script; each thread drops its Lua state.
    pub fn flush_scripts(&self) {
        self.scripts.write().clear();
        self.scripts_epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// The BUSY reply for `cmd` while a script has run past the threshold.
    pub fn busy_gate(&self, cmd: &Command) -> CmdResult {
        if cmd.has(flags::ALLOW_BUSY) || !self.running.any() {
            return Ok(());
        }
        match self.running.busy(self.threshold()) {
            Some(s) => Err(busy_text(s.kind).into()),
            None => Ok(()),
        }
    }

    /// The BUSY reply for the script running now (a plain script's if it just ended).
    pub fn busy_reply(&self) -> CmdError {
        let kind = self
            .running
            .busy(self.threshold())
            .map_or(ScriptKind::Eval, |s| s.kind);
        busy_text(kind).into()
    }

    /// `busy-reply-threshold`, as read when the latest script started.
    pub fn threshold(&self) -> Duration {
        Duration::from_millis(self.threshold_ms.load(Ordering::Relaxed))
    }
}

impl WaitGate for Scripting {
    fn give_up(&self) -> bool {
        self.running.busy(self.threshold()).is_some()
    }
}

/// One thread's Lua state and what it compiled into it.
struct ThreadState {
    owner: u64,
    scripts_epoch: u64,
    sandbox: Sandbox,
    /// Compiled scripts by SHA1.
    compiled: HashMap<String, Function>,
    functions: functions::Loaded,
}

thread_local! {
    static STATE: RefCell<Option<ThreadState>> = const { RefCell::new(None) };
}

/// Runs `work` with this thread's Lua state for `engine`, making or renewing it first.
fn with_state<R>(
    engine: &Scripting,
    work: impl FnOnce(&mut ThreadState) -> R,
) -> Result<R, CmdError> {
    STATE.with(|cell| {
        let mut slot = cell.borrow_mut();
        let epoch = engine.scripts_epoch.load(Ordering::Acquire);
        let stale = slot
            .as_ref()
            .is_none_or(|s| s.owner != engine.id || s.scripts_epoch != epoch);
        if stale {
            let sandbox = sandbox::new_sandbox()
                .map_err(|e| CmdError::from(format!("ERR cannot create the Lua state: {e}")))?;
            install_kill_hook(&sandbox.lua)
                .map_err(|e| CmdError::from(format!("ERR cannot create the Lua state: {e}")))?;
            *slot = Some(ThreadState {
                owner: engine.id,
                scripts_epoch: epoch,
                sandbox,
                compiled: HashMap::new(),
                functions: functions::Loaded::default(),
            });
        }
        Ok(work(slot.as_mut().expect("state made above")))
    })
}

/// Every few thousand instructions the script checks whether SCRIPT KILL asked it
/// to stop; once asked, it fails at each check, so a `pcall` cannot keep it alive.
fn install_kill_hook(lua: &mlua::Lua) -> mlua::Result<()> {
    lua.set_hook(
        mlua::HookTriggers::new().every_nth_instruction(10_000),
        |lua, _| {
            let killed = lua
                .app_data_ref::<Arc<RunningScript>>()
                .is_some_and(|s| s.kill.load(Ordering::Acquire));
            if killed {
                Err(mlua::Error::runtime("Script killed by user"))
            } else {
                Ok(mlua::VmState::Continue)
            }
        },
    )
}

/// Splits `#!lua [flags=a,b]` off a script: its flags and the source Lua compiles
/// (the shebang line becomes a comment, so line numbers stay right).
fn parse_shebang(body: &[u8]) -> Result<(ScriptFlags, Vec<u8>), CmdError> {
    if !body.starts_with(b"#!") {
        return Ok((ScriptFlags::default(), body.to_vec()));
    }
    let Some(eol) = body.iter().position(|&b| b == b'\n') else {
        return Err("ERR Invalid script shebang".into());
    };
    let line = String::from_utf8_lossy(&body[..eol]);
    let mut words = line.split(' ').filter(|w| !w.is_empty());
    let engine = words.next().unwrap_or("");
    if engine != "#!lua" {
        return Err(format!("ERR Unexpected engine in script shebang: {engine}").into());
    }
    let mut flags = ScriptFlags {
        shebang: true,
        ..ScriptFlags::default()
    };
    for word in words {
        let Some(list) = word.strip_prefix("flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {word}").into());
        };
        for name in list.split(',').filter(|n| !n.is_empty()) {
            if !flags.set(name) {
                return Err(format!("ERR Unexpected flag in script shebang: {name}").into());
            }
        }
    }
    Ok((flags, [b"--", body].concat()))
}

/// Compiles a script into this thread's state (once) and caches it for all threads.
/// Returns its SHA1.
pub fn load_script(engine: &Scripting, body: &[u8]) -> Result<String, CmdError> {
    let sha = sha1_hex(body);
    with_state(engine, |state| {
        compiled(engine, state, &sha, Some(body)).map(|_| ())
    })??;
    Ok(sha)
}

/// The compiled script `sha` in `state`: compiled from `body` (EVAL, SCRIPT LOAD) or
/// from the cache (EVALSHA). `NOSCRIPT` when neither has it.
fn compiled(
    engine: &Scripting,
    state: &mut ThreadState,
    sha: &str,
    body: Option<&[u8]>,
) -> Result<(Function, ScriptFlags), CmdError> {
    let cached = engine.cached(sha);
    if let (Some(f), Some(script)) = (state.compiled.get(sha), &cached) {
        return Ok((f.clone(), script.flags));
    }
    let body = match (body, &cached) {
        (Some(b), _) => b.to_vec(),
        (None, Some(script)) => script.body.clone(),
        (None, None) => return Err("NOSCRIPT No matching script. Please use EVAL.".into()),
    };
    let (flags, source) = parse_shebang(&body)?;
    let f = state
        .sandbox
        .lua
        .load(&source[..])
        .set_name("@user_script")
        .set_mode(mlua::chunk::ChunkMode::Text)
        .set_environment(state.sandbox.script_env.clone())
        .into_function()
        .map_err(|e| {
            CmdError::from(format!(
                "ERR Error compiling script (new function): {}",
                lua_error_text(&e)
            ))
        })?;
    state.compiled.insert(sha.to_string(), f.clone());
    if cached.is_none() {
        engine
            .scripts
            .write()
            .insert(sha.to_string(), Arc::new(CachedScript { body, flags }));
    }
    Ok((f, flags))
}

/// The message of a Lua error without mlua's decoration.
fn lua_error_text(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::CallbackError { cause, .. } => lua_error_text(cause),
        other => other.to_string(),
    }
}

/// How a script is being run.
pub struct RunSpec<'s> {
    pub kind: ScriptKind,
    /// The script's SHA1 or the function's name, for error texts and STATS.
    pub name: &'s str,
    /// Writes are refused (EVAL_RO, FCALL_RO, or the `no-writes` flag).
    pub read_only: bool,
    /// The command that runs it, as FUNCTION STATS shows it (functions only).
    pub command: &'s [&'s [u8]],
}

/// EVAL / EVALSHA / EVAL_RO / EVALSHA_RO once the arguments are checked: find or
/// compile the script and run it.
pub fn eval(
    ctx: &mut Ctx,
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
            command: &[],
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
fn run(
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
    // The script takes its own locks, starting with its declared keys' shards, so that
    // once it has released them every key it wrote (declared or not, in any database)
    // can be served to blocked clients: `call` does that for commands locking this way.
    let engine = &ctx.server.scripting;
    let threshold = ctx.server.config.read().busy_reply_threshold;
    engine.threshold_ms.store(threshold, Ordering::Relaxed);
    let mut locked = lock_declared_keys(ctx, keys)?;
    locked.touch = ctx.keys.touch;
    // It counts as running (for BUSY and KILL) once it holds its keys.
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
    let outcome = {
        let mut caller = call::Caller::new(
            ctx,
            &mut locked,
            spec.read_only,
            &guard.script,
            &sandbox.bridge,
        );
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
    if locked.dirty() > 0 {
        // The commands the script ran were propagated one by one.
        ctx.propagated = true;
        ctx.extra_dirty += locked.dirty();
    }
    drop(locked);
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
