//! A client's transaction state: the commands MULTI queued for EXEC, and the keys
//! WATCH watches. What EXEC and the other transaction commands do with them is the
//! command family's (`commands::transactions`); this is what a connection carries.

use crate::keyspace::{KeyObserver, KeyObservers, Locked};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A command waiting in a transaction for EXEC.
pub struct Queued {
    /// Its id in the command table, resolved when it was queued.
    pub id: usize,
    pub args: Vec<Vec<u8>>,
    /// A peer's removal of collection elements replayed inside its transaction:
    /// what it saw of each (see [`crate::keyspace::replaying_removal`]), for EXEC
    /// to run it with.
    pub removal_seen: Vec<u64>,
}

/// A client's transaction between MULTI and EXEC.
#[derive(Default)]
pub struct Transaction {
    pub queued: Vec<Queued>,
    /// A command was refused while queuing: EXEC will discard everything.
    pub aborted: bool,
    /// A queued command may grow memory: over `maxmemory`, EXEC is refused.
    pub grows_memory: bool,
    /// A queued command writes (EXEC then counts as a write for MISCONF).
    pub writes: bool,
    /// A queued command writes or may replicate (PUBLISH, PFCOUNT ...): CLIENT PAUSE
    /// WRITE holds EXEC back.
    pub may_replicate: bool,
    /// Bytes of the queued arguments (CLIENT LIST's `multi-mem`).
    arg_bytes: usize,
}

impl Transaction {
    /// Queue command `id` with `args`.
    pub fn push(&mut self, id: usize, args: &[&[u8]]) {
        self.arg_bytes += args.iter().map(|a| a.len()).sum::<usize>();
        self.queued.push(Queued {
            id,
            args: args.iter().map(|a| a.to_vec()).collect(),
            removal_seen: crate::keyspace::removal_seen_now(),
        });
    }

    /// (queued commands, their argument bytes), as CLIENT LIST shows them.
    pub fn usage(&self) -> (usize, usize) {
        (self.queued.len(), self.arg_bytes)
    }
}

/// The flag a write to any watched key raises.
#[derive(Default)]
struct WatchFlag(AtomicBool);

impl WatchFlag {
    fn raised(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

impl KeyObserver for WatchFlag {
    fn key_modified(&self, _db: usize, _key: &[u8]) {
        self.0.store(true, Ordering::Release);
    }
}

/// A client's watched keys, registered with the keyspace's observers until this is
/// dropped (UNWATCH, EXEC, DISCARD, RESET, disconnect).
pub struct Watching {
    flag: Arc<WatchFlag>,
    observer: Arc<dyn KeyObserver>,
    keys: Vec<(usize, Vec<u8>)>,
    observers: Arc<KeyObservers>,
}

impl Watching {
    pub fn new(observers: Arc<KeyObservers>) -> Self {
        let flag = Arc::new(WatchFlag::default());
        Watching {
            observer: flag.clone(),
            flag,
            keys: Vec::new(),
            observers,
        }
    }

    /// Watch `key` of database `db` too.
    pub fn add(&mut self, db: usize, key: &[u8]) {
        self.observers.observe(db, key, self.observer.clone());
        self.keys.push((db, key.to_vec()));
    }

    /// The watched keys, as (db, key).
    pub fn keys(&self) -> &[(usize, Vec<u8>)] {
        &self.keys
    }

    /// Was a watched key written since WATCH?
    pub fn written(&self) -> bool {
        self.flag.raised()
    }

    /// Must EXEC fail? A watched key was written, or its time ran out since WATCH.
    /// `locked` holds the watched keys' shards.
    pub fn broken(&self, locked: &mut Locked) -> bool {
        self.written()
            || self
                .keys
                .iter()
                .any(|(db, key)| locked.is_expired_in(*db, key))
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        for (db, key) in &self.keys {
            self.observers.forget(*db, key, &self.observer);
        }
    }
}
