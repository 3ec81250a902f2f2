//! Which scripts are running now, for BUSY replies and SCRIPT KILL / FUNCTION KILL.
//!
//! Redis runs one script at a time on its only thread, so "a script is running" is a
//! fact about the whole server. kvik runs scripts on every worker thread at once; each
//! registers a [`RunningScript`] here for the length of its run. A script becomes
//! *busy* once it has run longer than `busy-reply-threshold`: from then on, other
//! clients' commands (those not flagged allow-busy) are answered with BUSY before they
//! take any shard lock, and SCRIPT KILL may stop it. The fast path of every command is
//! one atomic load (`running == 0`); the list is only read while a script runs.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What kind of script runs: the two have their own KILL command and BUSY text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptKind {
    Eval,
    Function,
}

/// One script in flight.
pub struct RunningScript {
    pub kind: ScriptKind,
    pub started: Instant,
    /// The function name (FUNCTION STATS), or the script's SHA1.
    pub name: String,
    /// The command that started it (FUNCTION STATS shows it).
    pub command: Vec<Vec<u8>>,
    /// Set by SCRIPT KILL / FUNCTION KILL; the script's instruction hook stops it.
    pub kill: AtomicBool,
    /// It called a write command: killing it could leave half its effects, so it
    /// cannot be (Redis's rule, whether or not the command changed anything).
    pub wrote: AtomicBool,
}

/// How KILL went.
pub enum KillOutcome {
    Killed,
    NotBusy,
    Unkillable,
    /// The busy script is of the other kind (SCRIPT KILL while a function runs).
    OtherKind(ScriptKind),
}

#[derive(Default)]
pub struct Monitor {
    running: AtomicUsize,
    scripts: Mutex<Vec<Arc<RunningScript>>>,
}

impl Monitor {
    /// Register a script for the length of its run; it leaves when the guard drops.
    pub fn enter(&self, script: RunningScript) -> RunningGuard<'_> {
        let script = Arc::new(script);
        self.scripts.lock().push(script.clone());
        self.running.fetch_add(1, Ordering::AcqRel);
        RunningGuard {
            monitor: self,
            script,
        }
    }

    /// Is any script running at all (the one load on every command's path)?
    pub fn any(&self) -> bool {
        self.running.load(Ordering::Acquire) != 0
    }

    /// The oldest script that has run for longer than `threshold`, if any.
    pub fn busy(&self, threshold: Duration) -> Option<Arc<RunningScript>> {
        if self.running.load(Ordering::Acquire) == 0 {
            return None;
        }
        self.scripts
            .lock()
            .iter()
            .filter(|s| s.started.elapsed() > threshold)
            .min_by_key(|s| s.started)
            .cloned()
    }

    /// SCRIPT KILL / FUNCTION KILL: stop the busy script of `kind` unless it wrote.
    pub fn kill(&self, kind: ScriptKind, threshold: Duration) -> KillOutcome {
        match self.busy(threshold) {
            None => KillOutcome::NotBusy,
            Some(s) if s.wrote.load(Ordering::Acquire) => KillOutcome::Unkillable,
            Some(s) if s.kind != kind => KillOutcome::OtherKind(s.kind),
            Some(s) => {
                s.kill.store(true, Ordering::Release);
                KillOutcome::Killed
            }
        }
    }

    /// Stop every running script, written or not: the server is shutting down.
    pub fn abort_all(&self) {
        for s in self.scripts.lock().iter() {
            s.kill.store(true, Ordering::Release);
        }
    }

    /// The running function of longest standing (FUNCTION STATS).
    pub fn running_function(&self) -> Option<Arc<RunningScript>> {
        self.scripts
            .lock()
            .iter()
            .filter(|s| s.kind == ScriptKind::Function)
            .min_by_key(|s| s.started)
            .cloned()
    }
}

/// Keeps a script registered while it runs.
pub struct RunningGuard<'m> {
    monitor: &'m Monitor,
    pub script: Arc<RunningScript>,
}

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        let mut scripts = self.monitor.scripts.lock();
        if let Some(at) = scripts.iter().position(|s| Arc::ptr_eq(s, &self.script)) {
            scripts.swap_remove(at);
        }
        self.monitor.running.fetch_sub(1, Ordering::AcqRel);
    }
}
