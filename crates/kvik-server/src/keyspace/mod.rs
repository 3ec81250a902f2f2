//! The keyspace: `databases` logical databases, each split over many lock-striped
//! shards, each shard a hash table of entries.
//!
//! A command locks the shards of the keys it touches, in ascending global shard order
//! so two commands can never deadlock, and holds them until its effects are appended
//! to the effect stream. Single-key commands take one uncontended `parking_lot` lock;
//! there is no global lock and no shared counter on that path. Whole-database commands
//! take every shard of the database.
//!
//! Owns: entries, their expiry, the access clock, MVCC stamps, lazy expiry on access,
//! the active expiry cycle and the choice of keys to evict. Must not touch: clients,
//! replies, command parsing.

mod access;
mod capture;
mod counters;
mod crons;
mod digest;
mod elements;
mod entry;
mod eviction;
mod expire;
mod graves;
mod locked;
mod members;
mod observers;
mod shard;
mod ttl;

pub use access::{access_clock, idle_seconds, AccessClock, ClockMode};
pub use capture::ShardCapture;
pub use counters::{
    decode_aux as decode_counter_aux, encode_member as encode_member_counter, uncounted, Counter,
    Num,
};
pub use crons::CronIndex;
pub use elements::{
    counted_over, decode_seen, encode_seen, holds as holds_element, removal_seen, removal_seen_now,
    replaying_removal, setting_write, EffectOnMarks, ElementSpan, Elements, Here, Kind, Mark,
    MergeLimits,
};
pub use entry::{Entry, EntryBox, EntryData};
pub use eviction::{Evictor, Policy};
pub use expire::{active_expire_cycle, ExpireCursor};
pub use kvik_util::hash::hash_key;
pub use locked::{Counting, KeyEnv, Locked, UnderReset, WaitGate};
pub use observers::{KeyObserver, KeyObservers};
pub use shard::ShardData;
pub use ttl::{Changes as TtlChanges, KeyTtl, Since};

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// One logical database.
pub struct Db {
    shards: Box<[Mutex<ShardData>]>,
}

/// All databases.
pub struct Keyspace {
    dbs: Box<[Db]>,
    shard_bits: u32,
    /// Per shard (by global id), the earliest deadline it held when last written, or
    /// `u64::MAX`: lets the active expiry cycle skip shards with nothing due without
    /// locking them. Never later than the truth, except for the instant between a
    /// write and the end of its command, which holds the lock anyway.
    deadline_hints: Box<[AtomicU64]>,
    /// Who hears that a key changed (WATCH).
    pub observers: std::sync::Arc<KeyObservers>,
    /// What entries' access fields hold (LRU clock or LFU data), set from
    /// `maxmemory-policy` and the `lfu-*` parameters.
    pub clock: ClockMode,
    /// The point-in-time capture running now, if any (see [`capture`]).
    capture: Mutex<Option<std::sync::Arc<dyn ShardCapture>>>,
    /// Unix ms until which no key expires (0: none). See [`Keyspace::hold_expiry`].
    expiry_held_until: AtomicU64,
    /// This node is a replica: keys never expire here (the master's DEL removes
    /// them), though a due key reads as gone to clients.
    replica_expiry: std::sync::atomic::AtomicBool,
    /// Which removals free big values in the background (`lazyfree-lazy-*`).
    pub lazyfree: crate::lazyfree::Policy,
    /// Mirror of whether the shards keep graves (see [`Keyspace::keep_graves`]).
    graves_kept: std::sync::atomic::AtomicBool,
    /// The keys given a scheduled script (KEYDB.CRON).
    pub crons: CronIndex,
}

/// Give back the memory of a side map (counters, TTL registers, element
/// timestamps) once a collection left it empty or mostly empty: a burst of
/// writes grows it, and a map never shrinks by itself (a small map left empty
/// in each of a thousand shards would cost a quiet node megabytes).
pub(super) fn release_sparse<K: std::hash::Hash + Eq, V>(
    map: &mut std::collections::HashMap<K, V>,
) {
    let sparse = map.capacity() > 64 && map.len() < map.capacity() / 4;
    if (map.is_empty() && map.capacity() > 0) || sparse {
        map.shrink_to_fit();
    }
}

/// Shards per database. Many small shards keep lock contention low with many threads
/// and keep each hash table's all-at-once resize short.
pub const DEFAULT_SHARD_BITS: u32 = 10;

impl Keyspace {
    pub fn new(databases: usize, shard_bits: u32) -> Self {
        let dbs = (0..databases)
            .map(|_| Db {
                shards: (0..1usize << shard_bits)
                    .map(|_| Mutex::new(ShardData::default()))
                    .collect(),
            })
            .collect();
        let hints = (0..databases << shard_bits)
            .map(|_| AtomicU64::new(u64::MAX))
            .collect();
        Keyspace {
            dbs,
            shard_bits,
            deadline_hints: hints,
            observers: Default::default(),
            clock: ClockMode::default(),
            capture: Mutex::new(None),
            expiry_held_until: AtomicU64::new(0),
            replica_expiry: std::sync::atomic::AtomicBool::new(false),
            lazyfree: Default::default(),
            graves_kept: std::sync::atomic::AtomicBool::new(false),
            crons: CronIndex::default(),
        }
    }

    /// An empty keyspace shaped like this one (databases, shards, access clock): a
    /// replica's `repl-diskless-load swapdb` loads its master's dataset into it
    /// while this one serves, then [`Locked::swap_all_with`] exchanges them.
    pub fn beside(&self) -> Keyspace {
        let side = Keyspace::new(self.databases(), self.shard_bits);
        side.clock.set(self.clock.get());
        side
    }

    /// Keep tombstones of removed keys and counters' states (active replication),
    /// or stop and drop them.
    pub fn keep_graves(&self, keep: bool) {
        self.graves_kept.store(keep, Ordering::Relaxed);
        for db in self.dbs.iter() {
            for shard in db.shards.iter() {
                shard.lock().keep_graves(keep);
            }
        }
    }

    /// Are tombstones and counters' states kept (this node replicates actively)? One
    /// relaxed load, for the command path to skip that work otherwise.
    pub fn keeps_graves(&self) -> bool {
        self.graves_kept.load(Ordering::Relaxed)
    }

    /// Tombstones kept, and their bytes.
    pub fn graves_held(&self) -> (usize, usize) {
        let mut held = (0, 0);
        for db in self.dbs.iter() {
            for shard in db.shards.iter() {
                if let Some(graves) = shard.lock().graves() {
                    held.0 += graves.len();
                    held.1 += graves.bytes();
                }
            }
        }
        held
    }

    /// Keep the tombstones within `max_bytes`: each shard over its share (its part
    /// of the total, scaled down to the bound) forgets its oldest behind a horizon
    /// (see `graves.rs`). Returns how many went.
    pub fn bound_graves(&self, max_bytes: usize) -> usize {
        let (_, total) = self.graves_held();
        if total <= max_bytes {
            return 0;
        }
        let mut forgotten = 0;
        for db in self.dbs.iter() {
            for shard in db.shards.iter() {
                if let Some(graves) = shard.lock().graves_mut() {
                    let share =
                        (graves.bytes() as u128 * max_bytes as u128 / total as u128) as usize;
                    forgotten += graves.forget_oldest(share);
                }
            }
        }
        forgotten
    }

    /// Element timestamps kept (active replication): collections that have them,
    /// and marked elements (tombstones included).
    pub fn elements_held(&self) -> (usize, usize) {
        let mut held = (0, 0);
        for db in self.dbs.iter() {
            for shard in db.shards.iter() {
                let (collections, marks) = shard.lock().elements_held();
                held.0 += collections;
                held.1 += marks;
            }
        }
        held
    }

    /// Counted states kept (active replication): of whole keys and of elements.
    pub fn counters_held(&self) -> usize {
        let mut held = 0;
        for db in self.dbs.iter() {
            for shard in db.shards.iter() {
                held += shard.lock().counters_held();
            }
        }
        held
    }

    /// Drop the tombstones older than `before` (no peer can send anything older any
    /// more), element timestamps included, and what counters and TTL registers
    /// keep only until then. Returns how many are left of what a later pass can
    /// still drop: key tombstones, collections that keep element timestamps,
    /// counters that remember increments one by one, TTL registers without a
    /// TTL change (while any are, the watermarks that let them go flow on).
    pub fn collect_graves(&self, before: u64) -> usize {
        let mut left = 0;
        for db in self.dbs.iter() {
            for shard in db.shards.iter() {
                let mut shard = shard.lock();
                if let Some(graves) = shard.graves_mut() {
                    graves.collect(before);
                    left += graves.len();
                }
                left += shard.collect_elements(before);
                left += shard.fold_counters(before);
                left += shard.elements_held().0;
            }
        }
        left
    }

    /// A replica keeps every key until its master deletes it (see
    /// [`Keyspace::expiry_held`]); a master expires them itself.
    pub fn set_replica_expiry(&self, replica: bool) {
        self.replica_expiry.store(replica, Ordering::Release);
    }

    /// Keep every key until `until_ms`, deadline passed or not (CLIENT PAUSE keeps the
    /// dataset static, as Redis 7.0 does): a due key reads as gone but stays, and the
    /// active cycle rests. A hold already in force keeps its later end.
    pub fn hold_expiry(&self, until_ms: u64) {
        self.expiry_held_until.fetch_max(until_ms, Ordering::AcqRel);
    }

    /// Whether a big value removed for `cause` goes to the background thread.
    pub fn lazy(&self, cause: crate::lazyfree::Cause) -> bool {
        self.lazyfree.lazy(cause)
    }

    /// End the hold (CLIENT UNPAUSE): due keys go at their next access or cycle.
    pub fn release_expiry(&self) {
        self.expiry_held_until.store(0, Ordering::Release);
    }

    /// Is expiry held at `now_ms`? Read only once a key is found due.
    #[inline]
    pub fn expiry_held(&self, now_ms: u64) -> bool {
        now_ms < self.expiry_held_until.load(Ordering::Acquire)
            || self.replica_expiry.load(Ordering::Acquire)
    }

    /// The "key modified" signal (see [`observers`]): every write to `key` of `db`
    /// calls it with the key's shard lock held. One relaxed load when nobody listens.
    #[inline]
    pub fn signal_modified(&self, db: usize, key: &[u8]) {
        if !self.observers.is_idle() {
            self.observers.signal(db, key);
        }
    }

    /// Record the earliest deadline of a shard after a write to it.
    pub fn note_deadline(&self, global_id: usize, next: Option<u64>) {
        self.deadline_hints[global_id].store(next.unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// The earliest deadline a shard may hold (see `deadline_hints`).
    pub fn deadline_hint(&self, global_id: usize) -> u64 {
        self.deadline_hints[global_id].load(Ordering::Relaxed)
    }

    pub fn databases(&self) -> usize {
        self.dbs.len()
    }

    pub fn shards_per_db(&self) -> usize {
        1 << self.shard_bits
    }

    /// The shard of a key hash within its database.
    #[inline]
    pub fn shard_of(&self, hash: u64) -> usize {
        ((hash >> 32) as usize) & ((1 << self.shard_bits) - 1)
    }

    /// A number that orders every shard of every database; locks are taken in
    /// ascending order of it.
    #[inline]
    pub fn global_id(&self, db: usize, shard: usize) -> usize {
        (db << self.shard_bits) | shard
    }

    /// The global id of the shard `key` lives in, in database `db`.
    #[inline]
    pub fn shard_id_of(&self, db: usize, key: &[u8]) -> usize {
        self.global_id(db, self.shard_of(hash_key(key)))
    }

    /// The global ids of every shard of database `db`.
    pub fn db_shard_ids(&self, db: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.shards_per_db()).map(move |s| self.global_id(db, s))
    }

    pub fn shard(&self, db: usize, shard: usize) -> &Mutex<ShardData> {
        &self.dbs[db].shards[shard]
    }

    /// The shard with global id `id` ([`Keyspace::global_id`]).
    #[inline]
    pub fn shard_by_id(&self, id: usize) -> &Mutex<ShardData> {
        self.shard(id >> self.shard_bits, id & (self.shards_per_db() - 1))
    }

    /// Number of keys in a database (expired ones not yet removed included, as Redis).
    /// Locks each shard in turn: only for callers that hold none (commands count
    /// through [`Locked::db_stats`], which reuses the shards they hold).
    pub fn db_len(&self, db: usize) -> usize {
        self.db_stats(db).0
    }

    /// The digest of a database (see `digest.rs`), locking each shard in turn, for
    /// callers that hold none; `None` unless this node replicates actively.
    pub fn db_digest(&self, db: usize) -> Option<u64> {
        let parts = self.dbs[db].shards.iter().map(|s| s.lock().digest());
        parts.fold(None, |sum, part| part.map(|p| sum.unwrap_or(0) ^ p))
    }

    /// (keys, keys with a deadline) of a database, locking each shard in turn, for
    /// callers that hold none.
    pub fn db_stats(&self, db: usize) -> (usize, usize) {
        self.dbs[db]
            .shards
            .iter()
            .fold((0, 0), |(keys, volatile), s| {
                let shard = s.lock();
                (keys + shard.len(), volatile + shard.volatile_len())
            })
    }
}
