//! Finding what a script run runs: a script compiled in this thread's Lua state
//! (from the cache or its body), or a loaded function, handed over with the state's
//! sandbox and busy slot. Running it as a command is the command layer's business
//! (`commands::scripting::run`).

use super::busy::Slot;
use super::functions::refresh;
use super::sandbox::Sandbox;
use super::state::{compiled, sha_of, with_state, Sha};
use super::{ScriptFlags, Scripting};
use crate::errors::CmdError;
use mlua::RegistryKey;

/// Where EVAL's script comes from.
pub enum ScriptSource<'a> {
    Body(&'a [u8]),
    /// EVALSHA's SHA1, lowercased.
    Sha(&'a [u8; 40]),
}

/// A compiled script or function, ready to run on this thread.
pub struct Runnable<'s> {
    pub sandbox: &'s Sandbox,
    /// This thread's entry in the list of running scripts.
    pub slot: &'s Slot,
    pub function: &'s RegistryKey,
    /// What the script's shebang (or the function's registration) declared.
    pub flags: ScriptFlags,
}

/// Find or compile the script `source` names and give it to `run`, with its SHA1.
pub fn with_script<R>(
    engine: &Scripting,
    source: ScriptSource,
    run: impl FnOnce(&Sha, Runnable) -> Result<R, CmdError>,
) -> Result<R, CmdError> {
    with_state(engine, |state| {
        let (sha, body): (Sha, _) = match source {
            ScriptSource::Body(b) => (sha_of(b), Some(b)),
            ScriptSource::Sha(s) => (*s, None),
        };
        let (function, flags) = compiled(engine, &state.sandbox, &mut state.compiled, &sha, body)?;
        let runnable = Runnable {
            sandbox: &state.sandbox,
            slot: &state.slot,
            function,
            flags: *flags,
        };
        run(&sha, runnable)
    })?
}

/// Find the loaded function `name` (after bringing this thread's copy of the
/// libraries up to date) and give it to `run`.
pub fn with_function<R>(
    engine: &Scripting,
    name: &str,
    run: impl FnOnce(Runnable) -> Result<R, CmdError>,
) -> Result<R, CmdError> {
    with_state(engine, |state| {
        refresh(engine, state)?;
        let Some((function, flags)) = state.functions.get(name) else {
            return Err("ERR Function not found".into());
        };
        let runnable = Runnable {
            sandbox: &state.sandbox,
            slot: &state.slot,
            function,
            flags: *flags,
        };
        run(runnable)
    })?
}
