//! [`Locked`]: the shards a command holds, and the only way commands read or write keys.
//!
//! Taking the locks: the shards of the given keys (or of a whole database, or of all
//! databases) are locked in ascending global order, so no two commands can deadlock.
//! While a `Locked` lives, the keys it covers are the caller's alone; a transaction or
//! script holds one across all its commands, which makes them atomic and isolated.
//!
//! Every access goes through here so that the rules hold everywhere: an expired key is
//! deleted when touched (and a DEL effect appended), a read refreshes the access clock,
//! a write stamps the key with a fresh MVCC timestamp and counts as a change.

use super::{access_clock, hash_key, Entry, EntryBox, EntryData, Keyspace, ShardData};
use crate::effects::EffectLog;
use crate::stats::ThreadStats;
use crate::types::Value;
use parking_lot::MutexGuard;
use smallvec::SmallVec;

/// What a `Locked` needs besides the shards: where effects and counters go.
#[derive(Clone, Copy)]
pub struct KeyEnv<'a> {
    pub keyspace: &'a Keyspace,
    pub effects: &'a EffectLog,
    pub stats: &'a ThreadStats,
    /// When set, taking the locks waits for a busy shard in short slices and gives up
    /// (see [`Locked::gave_up`]) as soon as the gate says so: while a script runs past
    /// busy-reply-threshold, a command that meets one of its shards answers BUSY
    /// instead of sitting on the mutex. Only the `Locked` built from this env uses it.
    pub wait_gate: Option<&'a dyn WaitGate>,
}

/// Decides when a lock wait should stop (see [`KeyEnv::wait_gate`]).
pub trait WaitGate {
    fn give_up(&self) -> bool;
}

pub struct Locked<'a> {
    env: KeyEnv<'a>,
    /// The database plain key accessors use (the client's selected one).
    pub db: usize,
    /// The time the command runs at: one clock reading per command, so a key cannot
    /// expire half-way through it.
    pub now_ms: u64,
    /// Whether reads refresh the access clock (CLIENT NO-TOUCH turns it off).
    pub touch: bool,
    /// Held shards, sorted by global id.
    guards: SmallVec<[(usize, MutexGuard<'a, ShardData>); 2]>,
    /// Changes made so far (Redis's `dirty`).
    dirty: u64,
    /// Largest MVCC timestamp given out, for the effects of the command.
    last_ts: u64,
    /// The wait gate said stop before every shard was had; nothing is held.
    gave_up: bool,
}

impl<'a> Locked<'a> {
    fn with_ids(env: KeyEnv<'a>, db: usize, now_ms: u64, mut ids: SmallVec<[usize; 4]>) -> Self {
        ids.sort_unstable();
        ids.dedup();
        let ks = env.keyspace;
        let bits = ks.shards_per_db().trailing_zeros();
        let mut guards = SmallVec::with_capacity(ids.len());
        let mut gave_up = false;
        for id in ids {
            let shard = ks.shard(id >> bits, id & (ks.shards_per_db() - 1));
            match env.wait_gate {
                None => guards.push((id, shard.lock())),
                Some(gate) => match Self::lock_unless(shard, gate) {
                    Some(guard) => guards.push((id, guard)),
                    None => {
                        guards.clear();
                        gave_up = true;
                        break;
                    }
                },
            }
        }
        Locked {
            env: KeyEnv {
                wait_gate: None,
                ..env
            },
            db,
            now_ms,
            touch: true,
            guards,
            dirty: 0,
            last_ts: 0,
            gave_up,
        }
    }

    /// Waits for a shard in short slices until it is had or `gate` says stop.
    fn lock_unless(
        shard: &'a parking_lot::Mutex<ShardData>,
        gate: &dyn WaitGate,
    ) -> Option<MutexGuard<'a, ShardData>> {
        loop {
            if let Some(guard) = shard.try_lock_for(std::time::Duration::from_millis(2)) {
                return Some(guard);
            }
            if gate.give_up() {
                return None;
            }
        }
    }

    /// The locks were not taken: the wait gate stopped the wait (see
    /// [`KeyEnv::wait_gate`]).
    pub fn gave_up(&self) -> bool {
        self.gave_up
    }

    /// Lock nothing (commands that do not touch keys).
    pub fn none(env: KeyEnv<'a>, db: usize, now_ms: u64) -> Self {
        Self::with_ids(env, db, now_ms, SmallVec::new())
    }

    /// Lock the shards of `keys` in database `db`.
    pub fn keys<K: AsRef<[u8]>>(env: KeyEnv<'a>, db: usize, now_ms: u64, keys: &[K]) -> Self {
        let ks = env.keyspace;
        let ids = keys
            .iter()
            .map(|k| ks.global_id(db, ks.shard_of(hash_key(k.as_ref()))))
            .collect();
        Self::with_ids(env, db, now_ms, ids)
    }

    /// Lock the shards of keys that live in different databases.
    pub fn keys_across<K: AsRef<[u8]>>(
        env: KeyEnv<'a>,
        db: usize,
        now_ms: u64,
        keys: &[(usize, K)],
    ) -> Self {
        let ks = env.keyspace;
        let ids = keys
            .iter()
            .map(|(d, k)| ks.global_id(*d, ks.shard_of(hash_key(k.as_ref()))))
            .collect();
        Self::with_ids(env, db, now_ms, ids)
    }

    /// Lock every shard of the given databases.
    pub fn databases(env: KeyEnv<'a>, db: usize, now_ms: u64, dbs: &[usize]) -> Self {
        let ks = env.keyspace;
        let ids = dbs
            .iter()
            .flat_map(|&d| (0..ks.shards_per_db()).map(move |s| ks.global_id(d, s)))
            .collect();
        Self::with_ids(env, db, now_ms, ids)
    }

    /// Lock the given shards (by index) of database `db`: commands that walk a
    /// database a few shards at a time (SCAN) instead of freezing all of it.
    pub fn shards(env: KeyEnv<'a>, db: usize, now_ms: u64, shards: &[usize]) -> Self {
        let ks = env.keyspace;
        let ids = shards.iter().map(|&s| ks.global_id(db, s)).collect();
        Self::with_ids(env, db, now_ms, ids)
    }

    /// Take more shards (by global id) while holding some: a script reaching keys it
    /// did not declare. A shard above every held one is waited for, which keeps the
    /// global ascending order; one below a held shard is only tried for `patience`,
    /// since waiting for it could deadlock against a command that holds it and waits
    /// for ours. On failure returns the shard that could not be had (the shards taken
    /// so far stay held).
    pub fn acquire(&mut self, ids: &[usize], patience: std::time::Duration) -> Result<(), usize> {
        let mut wanted: SmallVec<[usize; 4]> = ids.iter().copied().collect();
        wanted.sort_unstable();
        wanted.dedup();
        let ks = self.env.keyspace;
        let bits = ks.shards_per_db().trailing_zeros();
        for id in wanted {
            let Err(at) = self.guards.binary_search_by_key(&id, |(g, _)| *g) else {
                continue;
            };
            let shard = ks.shard(id >> bits, id & (ks.shards_per_db() - 1));
            let guard = if at == self.guards.len() {
                shard.lock()
            } else {
                shard.try_lock_for(patience).ok_or(id)?
            };
            self.guards.insert(at, (id, guard));
        }
        Ok(())
    }

    /// Holds no shard (a command that locks for itself, run outside a transaction).
    pub fn holds_none(&self) -> bool {
        self.guards.is_empty()
    }

    pub fn env(&self) -> KeyEnv<'a> {
        self.env
    }

    pub fn keyspace(&self) -> &'a Keyspace {
        self.env.keyspace
    }

    /// Changes made through this `Locked` so far.
    pub fn dirty(&self) -> u64 {
        self.dirty
    }

    /// Count changes made without a key accessor (FLUSHDB counts the keys it dropped).
    pub fn add_dirty(&mut self, n: u64) {
        self.dirty += n;
    }

    /// The MVCC timestamp for the effects of the current command.
    pub fn effect_ts(&mut self) -> u64 {
        if self.last_ts == 0 {
            self.last_ts = crate::hlc::next_after(0, self.now_ms);
        }
        self.last_ts
    }

    /// Forget the timestamp of the previous command (transactions run many).
    pub fn begin_command(&mut self, now_ms: u64) {
        self.last_ts = 0;
        self.now_ms = now_ms;
    }

    fn stamp(&mut self, previous: u64) -> u64 {
        let ts = crate::hlc::next_after(previous.max(self.last_ts), self.now_ms);
        self.last_ts = ts;
        ts
    }

    /// The held shard of a key hash. Panics if the command did not lock it: the
    /// command table's key spec and the handler disagree, which is a bug.
    fn shard_mut(&mut self, db: usize, hash: u64) -> &mut ShardData {
        let ks = self.env.keyspace;
        let id = ks.global_id(db, ks.shard_of(hash));
        self.shard_by_id(id)
            .unwrap_or_else(|| panic!("key in db {db} accessed without its shard lock"))
    }

    fn shard_by_id(&mut self, id: usize) -> Option<&mut ShardData> {
        let at = self.guards.binary_search_by_key(&id, |(g, _)| *g).ok()?;
        Some(&mut self.guards[at].1)
    }

    /// A held shard of database `db` by index (whole-database commands).
    pub fn shard_at(&mut self, db: usize, shard: usize) -> &mut ShardData {
        let id = self.env.keyspace.global_id(db, shard);
        self.shard_by_id(id)
            .unwrap_or_else(|| panic!("shard {shard} of db {db} is not locked"))
    }

    /// Delete `key` if its deadline has passed, appending the DEL effect. Returns
    /// whether it did.
    fn expire_if_due(&mut self, db: usize, hash: u64, key: &[u8]) -> bool {
        let now = self.now_ms;
        let shard = self.shard_mut(db, hash);
        if shard.volatile_len_is_zero() {
            return false;
        }
        match shard.find(hash, key) {
            Some(e) if e.is_expired(now) => {}
            _ => return false,
        }
        let entry = shard.remove(hash, key).expect("entry found above");
        self.expired(db, &entry);
        true
    }

    /// Account for a key removed because its deadline passed.
    pub fn expired(&mut self, db: usize, entry: &Entry) {
        self.env.stats.add(&self.env.stats.expired_keys, 1);
        let ts = crate::hlc::next_after(entry.ts, self.now_ms);
        self.env.effects.append(db, ts, &[b"DEL", entry.key()]);
    }

    /// The live entry of `key` in the selected database.
    pub fn get(&mut self, key: &[u8]) -> Option<&mut Entry> {
        self.get_in(self.db, key)
    }

    pub fn get_in(&mut self, db: usize, key: &[u8]) -> Option<&mut Entry> {
        let hash = hash_key(key);
        if self.expire_if_due(db, hash, key) {
            return None;
        }
        let access = self.touch.then(|| access_clock(self.now_ms));
        let entry = self.shard_mut(db, hash).find_mut(hash, key)?;
        if let Some(access) = access {
            entry.access = access;
        }
        Some(entry)
    }

    /// The live entry of `key` in the selected database, read without refreshing its
    /// access clock (TTL, OBJECT, TYPE filters: looking is not using).
    pub fn peek(&mut self, key: &[u8]) -> Option<&Entry> {
        let hash = hash_key(key);
        let db = self.db;
        if self.expire_if_due(db, hash, key) {
            return None;
        }
        self.shard_mut(db, hash).find(hash, key)
    }

    /// The live entry of `key` in the selected database through a shared borrow, so a
    /// command can hold several at once (set intersections read all their sets
    /// together). It neither deletes an expired key nor refreshes the access clock:
    /// look each key up with [`Locked::get`] first, which does both.
    pub fn get_shared(&self, key: &[u8]) -> Option<&Entry> {
        let hash = hash_key(key);
        let ks = self.env.keyspace;
        let id = ks.global_id(self.db, ks.shard_of(hash));
        let at = self
            .guards
            .binary_search_by_key(&id, |(g, _)| *g)
            .unwrap_or_else(|_| panic!("key in db {} accessed without its shard lock", self.db));
        self.guards[at]
            .1
            .find(hash, key)
            .filter(|e| !e.is_expired(self.now_ms))
    }

    /// Delete every key of a held shard whose deadline has passed, appending their DEL
    /// effects. Returns how many went.
    pub fn expire_shard(&mut self, db: usize, shard: usize) -> usize {
        let now = self.now_ms;
        let mut due = Vec::new();
        self.shard_at(db, shard)
            .expire_due(now, usize::MAX, |entry| due.push(entry));
        let removed = due.len();
        for entry in due {
            self.expired(db, &entry);
        }
        removed
    }

    /// The live entry of `key` for a reading command, counting a keyspace hit or miss
    /// as Redis's read lookups do (a key of another type counts as a hit).
    pub fn read(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let stats = self.env.stats;
        let entry = self.get(key);
        let counter = if entry.is_some() {
            &stats.keyspace_hits
        } else {
            &stats.keyspace_misses
        };
        stats.add(counter, 1);
        entry
    }

    /// Does `key` exist (and is it live)?
    pub fn exists(&mut self, key: &[u8]) -> bool {
        let hash = hash_key(key);
        let db = self.db;
        !self.expire_if_due(db, hash, key) && self.shard_mut(db, hash).find(hash, key).is_some()
    }

    /// Store `value` under `key` with the given deadline (0 = none), replacing what was
    /// there (a big replaced value is freed in the background).
    pub fn set(&mut self, key: &[u8], value: Value, expire_at: u64) {
        self.set_in(self.db, key, value, expire_at)
    }

    pub fn set_in(&mut self, db: usize, key: &[u8], value: Value, expire_at: u64) {
        let hash = hash_key(key);
        self.expire_if_due(db, hash, key);
        self.dirty += 1;
        let (now, last) = (self.now_ms, self.last_ts);
        let mut issued = 0;
        let replaced =
            self.shard_mut(db, hash)
                .upsert(hash, key, access_clock(now), |previous_ts| {
                    issued = crate::hlc::next_after(previous_ts.max(last), now);
                    EntryData {
                        value,
                        expire_at,
                        ts: issued,
                    }
                });
        self.last_ts = issued;
        if let Some(old) = replaced {
            crate::lazyfree::free_value(old);
        }
    }

    /// Remove `key`; returns the entry if it was live.
    pub fn remove(&mut self, key: &[u8]) -> Option<EntryBox> {
        self.remove_in(self.db, key)
    }

    pub fn remove_in(&mut self, db: usize, key: &[u8]) -> Option<EntryBox> {
        let hash = hash_key(key);
        if self.expire_if_due(db, hash, key) {
            return None;
        }
        let removed = self.shard_mut(db, hash).remove(hash, key)?;
        self.dirty += 1;
        self.stamp(removed.ts);
        Some(removed)
    }

    /// The second half of a move (RENAME, MOVE): store an entry taken out with
    /// [`Locked::remove_in`] under its (possibly changed) key in database `db`, keeping
    /// its value, deadline and access clock, and replacing whatever was there. Stamps
    /// it, but counts no change of its own: the removal already counted the move.
    /// Returns the replaced entry if it was live.
    pub fn insert_moved_in(&mut self, db: usize, mut entry: EntryBox) -> Option<EntryBox> {
        let hash = hash_key(entry.key());
        self.expire_if_due(db, hash, entry.key());
        let previous_ts = self
            .shard_mut(db, hash)
            .find(hash, entry.key())
            .map_or(0, |e| e.ts);
        entry.ts = self.stamp(previous_ts.max(entry.ts));
        self.shard_mut(db, hash).insert(hash, entry)
    }

    /// Give a live key a deadline (0 = persist). Returns false if the key is absent.
    pub fn set_expire(&mut self, key: &[u8], at: u64) -> bool {
        let hash = hash_key(key);
        let db = self.db;
        if self.expire_if_due(db, hash, key) {
            return false;
        }
        let Some(previous_ts) = self.shard_mut(db, hash).find(hash, key).map(|e| e.ts) else {
            return false;
        };
        let ts = self.stamp(previous_ts);
        let shard = self.shard_mut(db, hash);
        shard.set_expire(hash, key, at);
        if let Some(e) = shard.find_mut(hash, key) {
            e.ts = ts;
        }
        self.dirty += 1;
        true
    }

    /// Record that a live key's value was changed in place (APPEND, INCR ...): stamps it
    /// and counts the change.
    pub fn modified(&mut self, key: &[u8]) {
        self.modified_in(self.db, key)
    }

    pub fn modified_in(&mut self, db: usize, key: &[u8]) {
        let hash = hash_key(key);
        let Some(previous_ts) = self.shard_mut(db, hash).find(hash, key).map(|e| e.ts) else {
            return;
        };
        let ts = self.stamp(previous_ts);
        if let Some(e) = self.shard_mut(db, hash).find_mut(hash, key) {
            e.ts = ts;
        }
        self.dirty += 1;
    }

    /// Append an effect of the current command (while the locks are held).
    pub fn propagate(&mut self, db: usize, argv: &[&[u8]]) {
        if self.env.effects.recording() {
            let ts = self.effect_ts();
            self.env.effects.append(db, ts, argv);
        }
    }
}

impl Drop for Locked<'_> {
    /// A command that wrote may have given keys deadlines (or moved them, SWAPDB):
    /// refresh the hints the active expiry cycle reads before the locks go.
    fn drop(&mut self) {
        if self.dirty > 0 {
            for (id, shard) in &self.guards {
                self.env.keyspace.note_deadline(*id, shard.next_deadline());
            }
        }
    }
}

impl ShardData {
    fn volatile_len_is_zero(&self) -> bool {
        self.next_deadline().is_none()
    }
}
