//! Which scripts are running now, for BUSY replies and SCRIPT KILL / FUNCTION KILL.
//!
//! Redis runs one script at a time on its only thread, so "a script is running" is a
//! fact about the whole server. kvik runs scripts on every worker thread at once. Each
//! thread that runs scripts owns one [`Slot`], registered here once and filled for
//! each run, so starting a script allocates nothing and only locks its own thread's
//! slot. A script becomes *busy* once it has run longer than `busy-reply-threshold`:
//! from then on, other clients' commands (those not flagged allow-busy) are answered
//! with BUSY before they take any shard lock, and SCRIPT KILL may stop it. The fast
//! path of every command is one atomic load (`running == 0`); the slots are only read
//! while a script runs.

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

/// One thread's place in the monitor.
pub struct Slot {
    run: Mutex<Run>,
    /// Set by SCRIPT KILL / FUNCTION KILL / SHUTDOWN; the script's instruction hook
    /// stops it. Cleared when a run starts or ends.
    kill: AtomicBool,
    /// The run called a write command: killing it could leave half its effects, so it
    /// cannot be (Redis's rule, whether or not the command changed anything).
    wrote: AtomicBool,
    /// Bytes the thread's Lua state holds, as of its latest use (INFO memory).
    vm_bytes: AtomicUsize,
}

/// The run a slot holds, if `active`.
struct Run {
    active: bool,
    /// Counts the slot's runs, telling one from the next.
    serial: u64,
    kind: ScriptKind,
    started: Instant,
    /// For a function, its name and the command that called it (FUNCTION STATS, the
    /// only reader, shows functions alone); the buffers are reused from run to run.
    name: String,
    command: Vec<Vec<u8>>,
}

impl Slot {
    fn new() -> Self {
        Slot {
            run: Mutex::new(Run {
                active: false,
                serial: 0,
                kind: ScriptKind::Eval,
                started: Instant::now(),
                name: String::new(),
                command: Vec::new(),
            }),
            kill: AtomicBool::new(false),
            wrote: AtomicBool::new(false),
            vm_bytes: AtomicUsize::new(0),
        }
    }

    /// KILL (or SHUTDOWN) asked the running script to stop.
    pub fn killed(&self) -> bool {
        self.kill.load(Ordering::Acquire)
    }

    /// When the script this slot shows started, if one runs.
    pub fn running_since(&self) -> Option<Instant> {
        let run = self.run.lock();
        run.active.then_some(run.started)
    }

    /// The running script called a write command: it can no longer be killed.
    pub fn note_write(&self) {
        self.wrote.store(true, Ordering::Release);
    }

    pub fn note_vm_bytes(&self, bytes: usize) {
        self.vm_bytes.store(bytes, Ordering::Relaxed);
    }

    /// Has the running script called a write command?
    pub fn has_written(&self) -> bool {
        self.wrote.load(Ordering::Acquire)
    }
}

impl Run {
    fn describe(&mut self, name: &[u8], command: &[&[u8]]) {
        self.name.clear();
        self.name.push_str(&String::from_utf8_lossy(name));
        self.command.truncate(command.len());
        for (i, arg) in command.iter().enumerate() {
            match self.command.get_mut(i) {
                Some(kept) => {
                    kept.clear();
                    kept.extend_from_slice(arg);
                }
                None => self.command.push(arg.to_vec()),
            }
        }
    }

    fn busy(&self, threshold: Duration) -> bool {
        self.active && self.started.elapsed() > threshold
    }
}

/// How KILL went.
pub enum KillOutcome {
    Killed,
    NotBusy,
    Unkillable,
    /// The busy script is of the other kind (SCRIPT KILL while a function runs).
    OtherKind(ScriptKind),
}

/// The running function FUNCTION STATS shows.
pub struct RunningFunction {
    pub name: String,
    pub command: Vec<Vec<u8>>,
    pub started: Instant,
}

#[derive(Default)]
pub struct Monitor {
    running: AtomicUsize,
    slots: Mutex<Vec<Arc<Slot>>>,
}

impl Monitor {
    /// A slot for a thread that runs scripts, registered for the server's life.
    pub fn new_slot(&self) -> Arc<Slot> {
        let slot = Arc::new(Slot::new());
        self.slots.lock().push(slot.clone());
        slot
    }

    /// Show a script of `kind`, running since `started`, in `slot` until the guard
    /// drops. `name` (the function's) and `command` are kept for FUNCTION STATS when
    /// it is a function.
    pub fn enter<'m>(
        &'m self,
        slot: &'m Slot,
        kind: ScriptKind,
        started: Instant,
        name: &[u8],
        command: &[&[u8]],
    ) -> RunningGuard<'m> {
        {
            let mut run = slot.run.lock();
            run.active = true;
            run.serial += 1;
            run.kind = kind;
            run.started = started;
            if kind == ScriptKind::Function {
                run.describe(name, command);
            }
            slot.kill.store(false, Ordering::Release);
            slot.wrote.store(false, Ordering::Release);
        }
        self.running.fetch_add(1, Ordering::AcqRel);
        RunningGuard {
            monitor: self,
            slot,
        }
    }

    /// Bytes held by the Lua states of every thread that has run scripts.
    pub fn vm_bytes(&self) -> usize {
        let slots = self.slots.lock();
        slots
            .iter()
            .map(|s| s.vm_bytes.load(Ordering::Relaxed))
            .sum()
    }

    /// Is any script running at all (the one load on every command's path)?
    pub fn any(&self) -> bool {
        self.running.load(Ordering::Acquire) != 0
    }

    /// The kind of the oldest script that has run for longer than `threshold`, if any.
    pub fn busy(&self, threshold: Duration) -> Option<ScriptKind> {
        self.with_oldest_busy(threshold, |_, run| run.kind)
    }

    /// Runs `act` on the slot of the oldest script past `threshold`, under that slot's
    /// lock (so the run cannot end or change meanwhile).
    fn with_oldest_busy<R>(
        &self,
        threshold: Duration,
        act: impl FnOnce(&Slot, &Run) -> R,
    ) -> Option<R> {
        if !self.any() {
            return None;
        }
        let slots = self.slots.lock();
        let (oldest, _, serial) = slots
            .iter()
            .filter_map(|slot| {
                let run = slot.run.lock();
                run.busy(threshold)
                    .then_some((slot, run.started, run.serial))
            })
            .min_by_key(|&(_, started, _)| started)?;
        let run = oldest.run.lock();
        // Still the same run: it may have ended since it was found.
        (run.active && run.serial == serial).then(|| act(oldest, &run))
    }

    /// SCRIPT KILL / FUNCTION KILL: stop the busy script of `kind` unless it wrote.
    pub fn kill(&self, kind: ScriptKind, threshold: Duration) -> KillOutcome {
        let outcome = self.with_oldest_busy(threshold, |slot, run| {
            if slot.wrote.load(Ordering::Acquire) {
                KillOutcome::Unkillable
            } else if run.kind != kind {
                KillOutcome::OtherKind(run.kind)
            } else {
                slot.kill.store(true, Ordering::Release);
                KillOutcome::Killed
            }
        });
        outcome.unwrap_or(KillOutcome::NotBusy)
    }

    /// Stop every running script, written or not: the server is shutting down.
    pub fn abort_all(&self) {
        for slot in self.slots.lock().iter() {
            if slot.run.lock().active {
                slot.kill.store(true, Ordering::Release);
            }
        }
    }

    /// The running function of longest standing (FUNCTION STATS).
    pub fn running_function(&self) -> Option<RunningFunction> {
        if !self.any() {
            return None;
        }
        self.slots
            .lock()
            .iter()
            .filter_map(|slot| {
                let run = slot.run.lock();
                (run.active && run.kind == ScriptKind::Function).then(|| RunningFunction {
                    name: run.name.clone(),
                    command: run.command.clone(),
                    started: run.started,
                })
            })
            .min_by_key(|f| f.started)
    }
}

/// Keeps a script shown as running while it runs.
pub struct RunningGuard<'m> {
    monitor: &'m Monitor,
    slot: &'m Slot,
}

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        {
            let mut run = self.slot.run.lock();
            run.active = false;
            // A kill that came too late must not stop the thread's next Lua code.
            self.slot.kill.store(false, Ordering::Release);
        }
        self.monitor.running.fetch_sub(1, Ordering::AcqRel);
    }
}
