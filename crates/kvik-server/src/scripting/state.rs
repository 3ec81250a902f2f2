//! Each thread's Lua state: made on first use, renewed when the shared epoch moves,
//! the scripts compiled into it, and the instruction hook that stops its code when it
//! must stop (SCRIPT KILL, FUNCTION KILL, SHUTDOWN, the library load time limit).

use super::busy::Slot;
use super::sandbox::{self, Sandbox};
use super::{functions, sha1_hex, CachedScript, ScriptFlags, Scripting};
use crate::errors::CmdError;
use mlua::ffi::{self, lua_State};
use mlua::RegistryKey;
use std::cell::{Cell, RefCell};
use std::collections::hash_map::{Entry, HashMap};
use std::ffi::{c_int, CStr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A script's SHA1 in lowercase hex: how this thread's compiled scripts are found.
pub(super) type Sha = [u8; 40];

/// One thread's Lua state and what it compiled into it.
pub(super) struct ThreadState {
    owner: u64,
    scripts_epoch: u64,
    pub sandbox: Sandbox,
    pub compiled: Compiled,
    pub functions: functions::Loaded,
    /// This thread's place in the engine's list of running scripts; it outlives
    /// renewals of the state.
    pub slot: Arc<Slot>,
}

/// Compiled scripts by SHA1, each in the Lua registry (see [`Sandbox::call`]), with
/// their flags: a hit needs no shared lock (a flush renews the whole state).
pub(super) type Compiled = HashMap<Sha, (RegistryKey, ScriptFlags), foldhash::fast::RandomState>;

thread_local! {
    static STATE: RefCell<Option<ThreadState>> = const { RefCell::new(None) };
    /// The slot of a state [`release_stale`] freed, with its engine's id, for the
    /// thread's next state (a thread keeps one slot for its life).
    static SPARE_SLOT: RefCell<Option<(u64, Arc<Slot>)>> = const { RefCell::new(None) };
}

/// Runs `work` with this thread's Lua state for `engine`, making or renewing it first.
pub(super) fn with_state<R>(
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
            let old = slot.take().filter(|s| s.owner == engine.id).map(|s| s.slot);
            let spare = || {
                SPARE_SLOT
                    .take()
                    .and_then(|(owner, spare)| (owner == engine.id).then_some(spare))
            };
            let running = old
                .or_else(spare)
                .unwrap_or_else(|| engine.running.new_slot());
            *slot = Some(new_state(engine.id, epoch, running)?);
        }
        let state = slot.as_mut().expect("state made above");
        let done = work(state);
        // For INFO memory: what this thread's Lua state holds now.
        state.slot.note_vm_bytes(state.sandbox.lua.used_memory());
        Ok(done)
    })
}

/// Frees this thread's Lua state once SCRIPT FLUSH has made it stale, as Redis frees
/// its state on SCRIPT FLUSH: left for the thread's next script, it would hold (and
/// INFO's `used_memory_lua` would count) a state no script will run in again. Called
/// from each thread's periodic work; a script running on this thread (serving its
/// other clients meanwhile) holds the state, and it is left alone.
pub fn release_stale(engine: &Scripting) {
    STATE.with(|cell| {
        let Ok(mut current) = cell.try_borrow_mut() else {
            return;
        };
        let epoch = engine.scripts_epoch.load(Ordering::Acquire);
        let stale = current
            .as_ref()
            .is_some_and(|s| s.owner == engine.id && s.scripts_epoch != epoch);
        if let Some(state) = current.take_if(|_| stale) {
            state.slot.note_vm_bytes(0);
            SPARE_SLOT.set(Some((state.owner, state.slot.clone())));
        }
    });
}

fn new_state(owner: u64, scripts_epoch: u64, slot: Arc<Slot>) -> Result<ThreadState, CmdError> {
    let failed = |e: mlua::Error| CmdError::from(format!("ERR cannot create the Lua state: {e}"));
    let sandbox = sandbox::new_sandbox().map_err(failed)?;
    install_watch(&sandbox.lua, slot.clone());
    Ok(ThreadState {
        owner,
        scripts_epoch,
        sandbox,
        compiled: Compiled::default(),
        functions: functions::Loaded::default(),
        slot,
    })
}

/// What this thread's instruction hook reads. The hook is a plain C function that Lua
/// calls in whichever coroutine of the thread's state is running, so it finds what it
/// needs here rather than through the state.
struct Watch {
    /// The thread's place in the list of running scripts (its kill flag).
    slot: Arc<Slot>,
    /// The state's main thread, which coroutines are started from.
    main: *mut lua_State,
}

thread_local! {
    static WATCH: RefCell<Option<Watch>> = const { RefCell::new(None) };
    /// While a library's top-level code runs: when it must have finished.
    static LOAD_DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// How many instructions run between two checks while nothing is stopping.
const CHECK_EVERY: c_int = 10_000;

/// How long a library's top-level code may run (Redis's FUNCTION LOAD limit, which
/// kvik applies wherever that code runs: FUNCTION LOAD and RESTORE, an RDB file, and
/// each thread's own copy of the libraries).
const LOAD_TIMEOUT: Duration = Duration::from_millis(500);

/// Runs `work` (which runs a library's top-level code) under the load time limit:
/// past it, the code fails with `FUNCTION LOAD timeout`.
pub(super) fn with_load_deadline<R>(work: impl FnOnce() -> R) -> R {
    /// Puts back the deadline in force before, also when `work` unwinds.
    struct Restore(Option<Instant>);
    impl Drop for Restore {
        fn drop(&mut self) {
            LOAD_DEADLINE.set(self.0);
        }
    }
    let _restore = Restore(LOAD_DEADLINE.replace(Some(Instant::now() + LOAD_TIMEOUT)));
    work()
}

/// Installs the instruction hook on a new state's main thread (coroutines started
/// from it inherit it). Every few thousand instructions it checks whether the code
/// must stop; past `busy-reply-threshold` it also lets the thread's other clients in
/// ([`super::set_serve_while_busy`]): that is how SCRIPT KILL reaches a
/// script whose thread is the only one.
fn install_watch(lua: &mlua::Lua, slot: Arc<Slot>) {
    let main = lua.exec_raw_lua(|raw| raw.state());
    WATCH.set(Some(Watch { slot, main }));
    // SAFETY: `main` is the state's main thread, and this thread owns the state.
    unsafe { ffi::lua_sethook(main, Some(watch_hook), ffi::LUA_MASKCOUNT, CHECK_EVERY) };
}

/// Why the running code must stop, if it must: the load time limit has passed, or
/// SCRIPT KILL / FUNCTION KILL / SHUTDOWN asked the running script to stop.
fn stop_reason() -> Option<&'static CStr> {
    if LOAD_DEADLINE
        .get()
        .is_some_and(|deadline| Instant::now() > deadline)
    {
        return Some(c"ERR FUNCTION LOAD timeout");
    }
    // A clone, so that no borrow is held while other clients are served.
    let slot = WATCH.with_borrow(|watch| watch.as_ref().map(|w| w.slot.clone()))?;
    if let Some(started) = slot.running_since() {
        super::serve_while_busy(started);
    }
    slot.killed()
        .then_some(c"ERR Script killed by user with SCRIPT KILL...")
}

/// The instruction hook. Once the code must stop it raises an error, and from then on
/// it runs on every line, in this coroutine and the main thread, and raises again at
/// each: a script that catches the error with `pcall` (or runs in a coroutine) meets
/// it again at its next line, until it returns. Lua runs the hook with hooks off, so
/// the error handlers the error passes through are not stopped themselves; the
/// sandbox's own Lua code (the prelude) is let finish its line for the same reason.
/// When a stop is over (the run ended), the next line puts the hook back to counting.
///
/// # Safety
/// Called by Lua, as a hook on a state of this thread.
unsafe extern "C-unwind" fn watch_hook(state: *mut lua_State, ar: *mut ffi::lua_Debug) {
    let line_event = (*ar).event == ffi::LUA_HOOKLINE;
    // Serving clients runs commands: a panic there must not unwind through Lua's C
    // frames, and stops the script instead.
    let stop = crate::crash::recover(stop_reason).unwrap_or(Some(
        c"ERR internal error while serving clients during a script",
    ));
    let Some(text) = stop else {
        if line_event {
            ffi::lua_sethook(state, Some(watch_hook), ffi::LUA_MASKCOUNT, CHECK_EVERY);
        }
        return;
    };
    if line_event && in_prelude(state, ar) {
        return;
    }
    ffi::lua_sethook(state, Some(watch_hook), ffi::LUA_MASKLINE, 0);
    let main = WATCH.with_borrow(|watch| watch.as_ref().map_or(state, |w| w.main));
    if main != state {
        ffi::lua_sethook(main, Some(watch_hook), ffi::LUA_MASKLINE, 0);
    }
    // An error table, as redis.call raises: `pcall` gives the script its text.
    ffi::lua_createtable(state, 0, 1);
    ffi::lua_pushstring(state, text.as_ptr());
    ffi::lua_setfield(state, -2, c"err".as_ptr());
    ffi::lua_error(state);
}

/// Is the line about to run part of the sandbox's own Lua code?
///
/// # Safety
/// `ar` is the hook's record of a line event on `state`.
unsafe fn in_prelude(state: *mut lua_State, ar: *mut ffi::lua_Debug) -> bool {
    ffi::lua_getinfo(state, c"S".as_ptr(), ar) != 0
        && !(*ar).source.is_null()
        && CStr::from_ptr((*ar).source) == sandbox::PRELUDE_NAME
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

/// The flags a script body declares in its shebang; `None` without one (or with a
/// bad one, which running it reports).
pub(super) fn shebang_flags(body: &[u8]) -> Option<ScriptFlags> {
    if !body.starts_with(b"#!") {
        return None;
    }
    parse_shebang(body).ok().map(|(flags, _)| flags)
}

/// Compiles a script into this thread's state (once) and caches it for all threads.
/// Returns its SHA1.
pub fn load_script(engine: &Scripting, body: &[u8]) -> Result<String, CmdError> {
    let sha = sha_of(body);
    with_state(engine, |state| {
        compiled(
            engine,
            &state.sandbox,
            &mut state.compiled,
            &sha,
            Some(body),
        )
        .map(|_| ())
    })??;
    Ok(sha_text(&sha).to_string())
}

/// The SHA1 of a script's body.
pub(super) fn sha_of(body: &[u8]) -> Sha {
    sha1_hex(body)
        .into_bytes()
        .try_into()
        .expect("a SHA1 has 40 hex digits")
}

/// A SHA1 (or an EVALSHA argument, which is checked to be ASCII) as text.
fn sha_text(sha: &Sha) -> &str {
    std::str::from_utf8(sha).expect("ASCII is UTF-8")
}

/// The compiled script `sha` in `compiled`: compiled from `body` (EVAL, SCRIPT LOAD)
/// or from the cache (EVALSHA). `NOSCRIPT` when neither has it.
pub(super) fn compiled<'c>(
    engine: &Scripting,
    sandbox: &Sandbox,
    compiled: &'c mut Compiled,
    sha: &Sha,
    body: Option<&[u8]>,
) -> Result<&'c (RegistryKey, ScriptFlags), CmdError> {
    let vacant = match compiled.entry(*sha) {
        Entry::Occupied(hit) => return Ok(hit.into_mut()),
        Entry::Vacant(vacant) => vacant,
    };
    let cached = engine.cached(sha_text(sha));
    let body = match (body, &cached) {
        (Some(b), _) => b.to_vec(),
        (None, Some(script)) => script.body.clone(),
        (None, None) => return Err("NOSCRIPT No matching script. Please use EVAL.".into()),
    };
    let (flags, source) = parse_shebang(&body)?;
    let f = sandbox
        .lua
        .load(&*sandbox::text_chunk(&source))
        .set_name("@user_script")
        .set_mode(mlua::chunk::ChunkMode::Text)
        .set_environment(sandbox.script_env.clone())
        .into_function()
        .and_then(|f| sandbox.lua.create_registry_value(f))
        .map_err(|e| {
            CmdError::from(format!(
                "ERR Error compiling script (new function): {}",
                lua_error_text(&e)
            ))
        })?;
    if cached.is_none() {
        engine.scripts.write().insert(
            sha_text(sha).to_string(),
            Arc::new(CachedScript { body, flags }),
        );
    }
    Ok(vacant.insert((f, flags)))
}

/// The message of a Lua error without mlua's decoration.
pub fn lua_error_text(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::CallbackError { cause, .. } => lua_error_text(cause),
        other => other.to_string(),
    }
}
