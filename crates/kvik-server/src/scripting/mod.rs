//! Lua scripting: EVAL scripts, FUNCTION libraries, and the engine that runs both.
//!
//! Each worker thread owns a Lua state of its own (Lua states are single-threaded),
//! created on first use. What must be the same on every thread is shared here: the
//! script cache (SHA1 -> source, filled by EVAL and SCRIPT LOAD), the function
//! libraries, and the list of running scripts. A thread compiles a cached script into
//! its own state the first time it runs it, as a chunk named `@user_script`, so error
//! texts read as Redis's ([`state`]). SCRIPT FLUSH and changes to the libraries bump
//! an epoch; a thread whose state is older rebuilds what it holds before its next run.
//!
//! This engine finds what to run ([`with_script`], [`with_function`]), runs Lua in its
//! sandbox, converts values both ways ([`convert`]) and hands each `redis.call` to
//! the run in progress ([`ScriptCalls`]). Running a script as a command (its locks,
//! its commands, its reply) is the command layer's: `commands::scripting` implements
//! `ScriptCalls`, so nothing here imports the dispatcher. [`busy`] tracks running
//! scripts for BUSY and KILL.

pub mod busy;
mod call;
pub mod convert;
pub mod functions;
pub mod libs;
pub mod payload;
mod runnable;
mod sandbox;
mod stack;
mod state;

pub use call::{CallError, Installed, ScriptCalls};
pub use runnable::{with_function, with_script, Runnable, ScriptSource};
pub use sandbox::load_libraries;
pub use sandbox::Inputs;
pub use state::lua_error_text;
pub use state::{load_script, release_stale};

use crate::errors::{CmdError, CmdResult};
use crate::keyspace::WaitGate;
use busy::{Monitor, ScriptKind};
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Where a command's arguments name the script it runs (`args[1]` in each case).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptRef {
    /// The script's source (EVAL, EVAL_RO).
    Body,
    /// The SHA1 of a cached script (EVALSHA, EVALSHA_RO).
    Sha,
    /// A function of a loaded library (FCALL, FCALL_RO).
    Function,
}

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
    /// `busy-reply-threshold` in ms, kept up to date by CONFIG SET (so neither a
    /// script's start nor the per-command check touches the configuration lock).
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

    /// The flags the script named by `args` as `script` says (EVAL's body, EVALSHA's
    /// digest, FCALL's function) declared, found without running it: `None` for a script without a shebang (or
    /// not found), which Redis holds to the command's own flags, as for any other
    /// command.
    pub fn declared_flags(&self, script: ScriptRef, args: &[&[u8]]) -> Option<ScriptFlags> {
        match script {
            ScriptRef::Body => state::shebang_flags(args[1]),
            ScriptRef::Sha => {
                let sha = String::from_utf8_lossy(args[1]).to_ascii_lowercase();
                self.cached(&sha).map(|s| s.flags).filter(|f| f.shebang)
            }
            ScriptRef::Function => self.libraries.function_flags(args[1]),
        }
    }

    /// The script cache for INFO memory: how many scripts, and about how many bytes
    /// (bodies and SHA1s, plus a fixed cost per entry).
    pub fn cache_memory(&self) -> (usize, usize) {
        const PER_SCRIPT: usize = 88;
        let scripts = self.scripts.read();
        let bytes = scripts
            .iter()
            .map(|(sha, s)| PER_SCRIPT + sha.len() + s.body.len())
            .sum();
        (scripts.len(), bytes)
    }

    pub fn exists(&self, sha: &str) -> bool {
        self.scripts.read().contains_key(sha)
    }

    /// SCRIPT FLUSH: forget every script; each thread drops its Lua state (this one
    /// at once, the others at their next periodic work, see [`release_stale`]).
    pub fn flush_scripts(&self) {
        self.scripts.write().clear();
        self.scripts_epoch.fetch_add(1, Ordering::AcqRel);
        release_stale(self);
    }

    /// A script has run past `busy-reply-threshold`: commands not flagged allow-busy
    /// are answered BUSY.
    pub fn is_busy(&self) -> bool {
        self.running.any() && self.running.busy(self.threshold()).is_some()
    }

    /// The BUSY reply, for a command not flagged allow-busy, while a script has
    /// run past the threshold.
    pub fn busy_gate(&self) -> CmdResult {
        if !self.running.any() {
            return Ok(());
        }
        match self.running.busy(self.threshold()) {
            Some(kind) => Err(busy_text(kind).into()),
            None => Ok(()),
        }
    }

    /// The BUSY reply for the script running now (a plain script's if it just ended).
    pub fn busy_reply(&self) -> CmdError {
        let kind = self.running.busy(self.threshold());
        busy_text(kind.unwrap_or(ScriptKind::Eval)).into()
    }

    /// Set `busy-reply-threshold` (ms), at startup and on CONFIG SET.
    pub fn set_threshold(&self, ms: u64) {
        self.threshold_ms.store(ms, Ordering::Relaxed);
    }

    /// `busy-reply-threshold`.
    pub fn threshold(&self) -> Duration {
        Duration::from_millis(self.threshold_ms.load(Ordering::Relaxed))
    }
}

/// How a busy script's thread serves its other clients between instructions: the
/// event loop's own routine, handed over by the network layer when it starts (it
/// sits above this engine, which cannot name it).
static SERVE_WHILE_BUSY: OnceLock<fn(Instant)> = OnceLock::new();

/// Install the routine a busy script calls to let its thread's other clients in.
pub fn set_serve_while_busy(serve: fn(Instant)) {
    // Every server of the process installs the same routine.
    let _ = SERVE_WHILE_BUSY.set(serve);
}

thread_local! {
    /// This thread is serving its clients from inside its own busy script.
    static SERVING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Called from a script's instruction hook (started at `started`).
fn serve_while_busy(started: Instant) {
    /// Lowers the flag however the serving ends.
    struct Serving;
    impl Drop for Serving {
        fn drop(&mut self) {
            SERVING.set(false);
        }
    }
    if let Some(serve) = SERVE_WHILE_BUSY.get() {
        SERVING.set(true);
        let _serving = Serving;
        serve(started);
    }
}

/// Is this thread serving its clients from inside its own busy script? Then only
/// allow-busy commands may run, and none may wait for a lock.
pub fn serving_while_busy() -> bool {
    SERVING.get()
}

impl WaitGate for Scripting {
    fn give_up(&self) -> bool {
        self.is_busy()
    }
}
