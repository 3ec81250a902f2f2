//! The "key modified" signal: who wants to hear that a key changed, and telling them.
//!
//! Every write path in [`Locked`](super::Locked) (a value set, changed in place,
//! removed, given a deadline, moved, expired, or its database flushed or swapped), and
//! the active expiry cycle, call [`Keyspace::signal_modified`](super::Keyspace) for the
//! key, while they still hold its shard lock. WATCH registers an observer per watched
//! key here. Client-side caching (CLIENT TRACKING) needs every write instead: it
//! installs the one *observer of every key* ([`KeyObservers::install_all_keys`]) and
//! switches it on while any client tracks ([`KeyObservers::hear_all_keys`]).
//!
//! The cost for everyone else: one relaxed load of one word, the count of per-key
//! registrations (times two) plus one while the observer of every key listens.
//! Registering (or switching on) happens before the registering client's next command
//! takes a shard lock, so a writer that takes that lock afterwards is ordered after
//! the registration and sees the word raised.

use super::hash_key;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// Someone told when a key changes.
pub trait KeyObserver: Send + Sync {
    /// `key` of database `db` was written, deleted or expired. Called with the key's
    /// shard lock held: keep it short and take no shard lock.
    fn key_modified(&self, db: usize, key: &[u8]);
}

/// Observers are spread over this many locks by key.
const STRIPES: usize = 64;

/// The observers of one key.
struct Observed {
    db: usize,
    key: Vec<u8>,
    observers: Vec<Arc<dyn KeyObserver>>,
}

/// Entries by `hash_key(key) ^ db`; the few that share a hash are told apart by key.
type Stripe = HashMap<u64, Vec<Observed>, foldhash::fast::RandomState>;

/// What one per-key registration adds to [`KeyObservers::listening`].
const PER_KEY: usize = 2;
/// The bit of [`KeyObservers::listening`] set while the observer of every key listens.
const ALL_KEYS: usize = 1;

/// Every observed (db, key), and the observer of every key.
pub struct KeyObservers {
    stripes: Box<[Mutex<Stripe>]>,
    /// Per-key registrations in force times [`PER_KEY`], plus [`ALL_KEYS`] while the
    /// observer of every key listens: zero means nobody listens.
    listening: AtomicUsize,
    /// Told of every write while switched on (client-side caching).
    all_keys: OnceLock<Arc<dyn KeyObserver>>,
}

impl Default for KeyObservers {
    fn default() -> Self {
        KeyObservers {
            stripes: (0..STRIPES).map(|_| Mutex::default()).collect(),
            listening: AtomicUsize::new(0),
            all_keys: OnceLock::new(),
        }
    }
}

fn slot(db: usize, key: &[u8]) -> u64 {
    hash_key(key) ^ db as u64
}

impl KeyObservers {
    /// Nobody observes any key: the one check every write pays.
    #[inline]
    pub fn is_idle(&self) -> bool {
        self.listening.load(Ordering::Relaxed) == 0
    }

    /// Set the observer told of every write while [`KeyObservers::hear_all_keys`] is on.
    /// There is one per keyspace: later calls are ignored.
    pub fn install_all_keys(&self, observer: Arc<dyn KeyObserver>) {
        let _ = self.all_keys.set(observer);
    }

    /// Switch the observer of every key on or off. Safe from anywhere, a
    /// [`KeyObserver::key_modified`] call included: it only flips a bit.
    pub fn hear_all_keys(&self, on: bool) {
        if on {
            self.listening.fetch_or(ALL_KEYS, Ordering::AcqRel);
        } else {
            self.listening.fetch_and(!ALL_KEYS, Ordering::AcqRel);
        }
    }

    fn stripe(&self, slot: u64) -> &Mutex<Stripe> {
        &self.stripes[(slot as usize) % STRIPES]
    }

    /// Tell `observer` about changes to `key` of `db` from now on. Call it holding the
    /// key's shard lock (see the module doc).
    pub fn observe(&self, db: usize, key: &[u8], observer: Arc<dyn KeyObserver>) {
        let slot = slot(db, key);
        self.listening.fetch_add(PER_KEY, Ordering::AcqRel);
        let mut stripe = self.stripe(slot).lock();
        let entries = stripe.entry(slot).or_default();
        match entries.iter_mut().find(|e| e.db == db && e.key == key) {
            Some(entry) => entry.observers.push(observer),
            None => entries.push(Observed {
                db,
                key: key.to_vec(),
                observers: vec![observer],
            }),
        }
    }

    /// Stop telling `observer` about `key` of `db`.
    pub fn forget(&self, db: usize, key: &[u8], observer: &Arc<dyn KeyObserver>) {
        let slot = slot(db, key);
        let mut stripe = self.stripe(slot).lock();
        let Some(entries) = stripe.get_mut(&slot) else {
            return;
        };
        let Some(at) = entries.iter().position(|e| e.db == db && e.key == key) else {
            return;
        };
        let observers = &mut entries[at].observers;
        let before = observers.len();
        observers.retain(|o| !Arc::ptr_eq(o, observer));
        self.listening
            .fetch_sub((before - observers.len()) * PER_KEY, Ordering::AcqRel);
        if observers.is_empty() {
            entries.swap_remove(at);
            if entries.is_empty() {
                stripe.remove(&slot);
            }
        }
    }

    /// Tell the observers of `key` of `db` that it changed, and the observer of every
    /// key if it listens.
    pub fn signal(&self, db: usize, key: &[u8]) {
        let listening = self.listening.load(Ordering::Relaxed);
        if listening >= PER_KEY {
            self.signal_key_observers(db, key);
        }
        if listening & ALL_KEYS != 0 {
            if let Some(observer) = self.all_keys.get() {
                observer.key_modified(db, key);
            }
        }
    }

    /// Tell only the observers registered for `key` of `db` (WATCH), not the observer
    /// of every key: FLUSHDB and SWAPDB name the watched keys they change this way,
    /// while client-side caching hears of a flush as a whole.
    pub fn signal_key_observers(&self, db: usize, key: &[u8]) {
        let slot = slot(db, key);
        let stripe = self.stripe(slot).lock();
        let Some(entries) = stripe.get(&slot) else {
            return;
        };
        for entry in entries.iter().filter(|e| e.db == db && e.key == key) {
            for observer in &entry.observers {
                observer.key_modified(db, key);
            }
        }
    }

    /// Every observed key of database `db` (FLUSHDB and SWAPDB decide which of them
    /// they change).
    pub fn keys_in(&self, db: usize) -> Vec<Vec<u8>> {
        self.stripes
            .iter()
            .flat_map(|stripe| {
                let stripe = stripe.lock();
                stripe
                    .values()
                    .flatten()
                    .filter(|e| e.db == db)
                    .map(|e| e.key.clone())
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[derive(Default)]
    struct Flag(AtomicBool);

    impl KeyObserver for Flag {
        fn key_modified(&self, _db: usize, _key: &[u8]) {
            self.0.store(true, Ordering::Relaxed);
        }
    }

    #[test]
    fn signals_reach_the_observers_of_that_key_only() {
        let observers = KeyObservers::default();
        assert!(observers.is_idle());
        let flag = Arc::new(Flag::default());
        let observer: Arc<dyn KeyObserver> = flag.clone();
        observers.observe(0, b"k", observer.clone());
        assert!(!observers.is_idle());
        observers.signal(1, b"k");
        observers.signal(0, b"other");
        assert!(!flag.0.load(Ordering::Relaxed));
        observers.signal(0, b"k");
        assert!(flag.0.load(Ordering::Relaxed));
        assert_eq!(observers.keys_in(0), vec![b"k".to_vec()]);
        observers.forget(0, b"k", &observer);
        assert!(observers.is_idle());
        assert!(observers.keys_in(0).is_empty());
    }

    #[test]
    fn the_observer_of_every_key_hears_only_while_switched_on() {
        let observers = KeyObservers::default();
        let all = Arc::new(Flag::default());
        observers.install_all_keys(all.clone());
        observers.signal(0, b"k");
        assert!(!all.0.load(Ordering::Relaxed));
        observers.hear_all_keys(true);
        assert!(!observers.is_idle());
        let watcher = Arc::new(Flag::default());
        let watcher_dyn: Arc<dyn KeyObserver> = watcher.clone();
        observers.observe(0, b"w", watcher_dyn.clone());
        observers.signal_key_observers(0, b"other");
        assert!(!all.0.load(Ordering::Relaxed));
        observers.signal(0, b"w");
        assert!(all.0.load(Ordering::Relaxed) && watcher.0.load(Ordering::Relaxed));
        observers.forget(0, b"w", &watcher_dyn);
        observers.hear_all_keys(false);
        assert!(observers.is_idle());
    }
}
