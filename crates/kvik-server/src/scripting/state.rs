//! Each thread's Lua state: made on first use, renewed when the shared epoch moves,
//! and the scripts compiled into it.

use super::busy::Slot;
use super::sandbox::{self, Sandbox};
use super::{functions, sha1_hex, CachedScript, ScriptFlags, Scripting};
use crate::commands::CmdError;
use mlua::RegistryKey;
use std::cell::RefCell;
use std::collections::hash_map::{Entry, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;

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
            let old = slot.take().filter(|s| s.owner == engine.id);
            let running = old.map_or_else(|| engine.running.new_slot(), |s| s.slot);
            *slot = Some(new_state(engine.id, epoch, running)?);
        }
        let state = slot.as_mut().expect("state made above");
        let done = work(state);
        // For INFO memory: what this thread's Lua state holds now.
        state.slot.note_vm_bytes(state.sandbox.lua.used_memory());
        Ok(done)
    })
}

fn new_state(owner: u64, scripts_epoch: u64, slot: Arc<Slot>) -> Result<ThreadState, CmdError> {
    let failed = |e: mlua::Error| CmdError::from(format!("ERR cannot create the Lua state: {e}"));
    let sandbox = sandbox::new_sandbox().map_err(failed)?;
    install_kill_hook(&sandbox.lua, slot.clone()).map_err(failed)?;
    Ok(ThreadState {
        owner,
        scripts_epoch,
        sandbox,
        compiled: Compiled::default(),
        functions: functions::Loaded::default(),
        slot,
    })
}

/// Every few thousand instructions the script checks whether SCRIPT KILL asked it
/// to stop; once asked, it fails at each check, so a `pcall` cannot keep it alive.
/// Past `busy-reply-threshold` the check also lets the thread's other clients in
/// ([`crate::net::serve_clients_while_busy`]): that is how SCRIPT KILL reaches a
/// script whose thread is the only one.
fn install_kill_hook(lua: &mlua::Lua, slot: Arc<Slot>) -> mlua::Result<()> {
    lua.set_hook(
        mlua::HookTriggers::new().every_nth_instruction(10_000),
        move |_, _| {
            if let Some(started) = slot.running_since() {
                crate::net::serve_clients_while_busy(started);
            }
            if slot.killed() {
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
pub(super) fn lua_error_text(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::CallbackError { cause, .. } => lua_error_text(cause),
        other => other.to_string(),
    }
}
