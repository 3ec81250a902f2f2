//! [`Locked`]: the shards a command holds, and the only way commands read or write keys.
//!
//! Taking the locks: the shards of the given keys (or of a whole database, or of all
//! databases) are locked in ascending global order, so no two commands can deadlock.
//! While a `Locked` lives, the keys it covers are the caller's alone; a transaction or
//! script holds one across all its commands, which makes them atomic and isolated.
//!
//! Every access goes through here so that the rules hold everywhere: an expired key is
//! deleted when touched (and a DEL effect appended), a read refreshes the access clock,
//! a write stamps the key with a fresh MVCC timestamp, counts as a change and sends
//! the "key modified" signal ([`Keyspace::signal_modified`]: WATCH hears it).
//!
//! Effects normally go to the effect stream one by one as commands append them. A
//! transaction or a script opens an *effect group* instead
//! ([`Locked::begin_effect_group`]): its effects are held here and appended together
//! by [`Locked::finish_effect_group`], wrapped in MULTI ... EXEC, before its locks go.

use super::counters::Start;
use super::{hash_key, AccessClock, Counter, Entry, EntryBox, EntryData, Keyspace, Num, ShardData};
use crate::effects::{EffectLog, GroupedEffect, Targets};
use crate::lazyfree::Cause;
use crate::stats::ThreadStats;
use crate::types::Value;
use parking_lot::MutexGuard;
use smallvec::SmallVec;
use std::sync::atomic::AtomicU64;

/// What a `Locked` needs besides the shards: where effects and counters go.
#[derive(Clone, Copy)]
pub struct KeyEnv<'a> {
    pub keyspace: &'a Keyspace,
    pub effects: &'a EffectLog,
    pub stats: &'a ThreadStats,
    /// Where keyspace notifications go (`expired`, `new`, `keymiss` are raised here).
    pub bus: crate::pubsub::Bus<'a>,
    /// When set, taking the locks waits for a busy shard in short slices and gives up
    /// (see [`Locked::gave_up`]) as soon as the gate says so: while a script runs past
    /// busy-reply-threshold, a command that meets one of its shards answers BUSY
    /// instead of sitting on the mutex. Only the `Locked` built from this env uses it.
    pub wait_gate: Option<&'a dyn WaitGate>,
    /// The commands run for a replica's master (its stream): a key past its
    /// deadline is still there for them (the master's own DEL removes it), and
    /// their effects go to the AOF only (the stream itself is passed on verbatim).
    pub from_master: bool,
}

impl KeyEnv<'_> {
    /// What follows a key the server removed on its own (expiry, active or lazy, and
    /// eviction), in this order: INFO's counter, the WATCH signal, the DEL effect
    /// (stamped after the key's last write; `append` puts it where the caller's
    /// effects go) and the keyspace event. The one place that says what a removal
    /// by the server emits. Returns the removal's timestamp (for the key's grave).
    pub fn removed_by_server(
        &self,
        db: usize,
        entry: &Entry,
        now_ms: u64,
        counter: fn(&ThreadStats) -> &AtomicU64,
        (class, event): (u32, &str),
        append: impl FnOnce(u64, &[&[u8]]),
    ) -> u64 {
        self.stats.add(counter(self.stats), 1);
        self.keyspace.signal_modified(db, entry.key());
        let ts = crate::hlc::next_after(entry.ts, now_ms);
        append(ts, &[b"DEL", entry.key()]);
        self.bus.notify(class, event, db, entry.key());
        ts
    }
}

/// The timestamp a command stamps a key with: the one it already gave out when that
/// is past the key's previous one, so that every key a command writes carries the
/// timestamp of its effect (a peer replaying the effect stamps them all alike);
/// a fresh one otherwise. A peer's write being replayed stamps each key with its
/// own timestamp, or keeps the key's newer one where it merges into it (an
/// element's add, a counter's increment): never the newer timestamp another key
/// of the same write kept, which no other node would give that key.
fn command_stamp(previous: u64, given: u64, now_ms: u64) -> u64 {
    if let Some(imposed) = crate::hlc::imposed_now() {
        return imposed.max(previous);
    }
    if given > previous {
        given
    } else {
        crate::hlc::next_after(previous.max(given), now_ms)
    }
}

/// An increment under way (active replication), from [`Locked::count_start`]
/// for [`Locked::count_end`]: the state counting starts on the key, or none when
/// the increment adds to the key's current one where it is kept (a hot counter
/// is not copied at every increment), and the key's timestamp before the
/// command wrote.
pub struct Counting {
    starts: Option<Counter>,
    waits: bool,
    key_ts: u64,
}

impl Counting {
    /// Does the increment wait on a base that holds no number (see
    /// [`Counter::waits`])?
    pub fn waits(&self) -> bool {
        self.waits
    }
}

/// A counted key a peer's late reset goes under (see
/// [`Locked::counter_split_at`]): its state and TTL register before the reset.
pub struct UnderReset {
    counter: Counter,
    register: super::KeyTtl,
    changes: super::TtlChanges,
}

impl UnderReset {
    /// The reset, which left the key register `reset`, ran and the increments
    /// newer than it were counted on it: the key carries the newest write it
    /// held before, and its TTL register starts over from the reset with the
    /// TTL changes newer than it.
    fn rejoin_ttl(&self, shard: &mut ShardData, hash: u64, key: &[u8], reset: super::KeyTtl) {
        if self.register.ts > shard.newest_ts(hash, key) {
            shard.restamp(hash, key, self.register.ts);
        }
        // The reset first: a repair of the count's base (a write met again,
        // see `Counter::rebases_at`) brings its deadline as its writer holds
        // it, which only TTL changes since beat.
        let none = super::TtlChanges::new();
        shard.join_ttl(hash, key, (reset, &none), (self.register, &self.changes));
    }
}

/// Decides when a lock wait should stop (see [`KeyEnv::wait_gate`]).
pub trait WaitGate {
    fn give_up(&self) -> bool;
}

pub struct Locked<'a> {
    env: KeyEnv<'a>,
    /// This command holds its clock reading (see `hlc::hold_reading`) until dropped.
    holds_reading: bool,
    /// The database plain key accessors use (the client's selected one).
    pub db: usize,
    /// The time the command runs at: one clock reading per command, so a key cannot
    /// expire half-way through it.
    pub now_ms: u64,
    /// Whether reads refresh the access clock (CLIENT NO-TOUCH turns it off).
    pub touch: bool,
    /// Where the effects of the commands run now go: everywhere, unless a script
    /// said otherwise with `redis.set_repl`.
    pub effect_targets: Targets,
    /// What the access fields hold, read once for the command.
    clock: AccessClock,
    /// Held shards, sorted by global id.
    guards: SmallVec<[(usize, MutexGuard<'a, ShardData>); 2]>,
    /// Changes made so far (Redis's `dirty`).
    dirty: u64,
    /// Largest MVCC timestamp given out, for the effects of the command.
    last_ts: u64,
    /// The effects of an open effect group, held until it finishes.
    group: Option<Vec<GroupedEffect>>,
    /// The wait gate said stop before every shard was had; nothing is held.
    gave_up: bool,
    /// The keys set or changed so far, in that order (repeats included), when asked
    /// for ([`Locked::keep_written`]): after a transaction or a script, blocked
    /// clients are served key by key in the order the keys became ready, as Redis
    /// serves its ready keys.
    written: Option<Vec<(usize, Vec<u8>)>>,
    /// Values whose due members this command's reads do not see while expiry is held
    /// (a replica, CLIENT PAUSE): taken out for the command, put back before the
    /// locks go, so the master's removal stays the one that removes them.
    pub(super) hidden: Vec<super::members::Hidden>,
}

impl<'a> Locked<'a> {
    /// Lock shards by global id ([`Keyspace::global_id`]), in any order and with
    /// repeats: transactions gather the shards of all their commands this way.
    pub fn shard_ids(env: KeyEnv<'a>, db: usize, now_ms: u64, ids: &[usize]) -> Self {
        Self::with_ids(env, db, now_ms, ids.iter().copied().collect())
    }

    fn with_ids(env: KeyEnv<'a>, db: usize, now_ms: u64, mut ids: SmallVec<[usize; 4]>) -> Self {
        ids.sort_unstable();
        ids.dedup();
        let ks = env.keyspace;
        let mut guards = SmallVec::with_capacity(ids.len());
        let mut gave_up = false;
        for id in ids {
            let shard = ks.shard_by_id(id);
            match env.wait_gate {
                None => guards.push((id, Self::prepared(ks, id, shard.lock()))),
                Some(gate) => match Self::lock_unless(shard, gate) {
                    Some(guard) => guards.push((id, Self::prepared(ks, id, guard))),
                    None => {
                        guards.clear();
                        gave_up = true;
                        break;
                    }
                },
            }
        }
        // An active node's watermarks must not promise past the clock reading
        // this command stamps its writes from (see `hlc::hold_reading`).
        let holds_reading = ks.keeps_graves();
        if holds_reading {
            crate::hlc::hold_reading(now_ms);
        }
        Locked {
            holds_reading,
            env: KeyEnv {
                wait_gate: None,
                ..env
            },
            db,
            now_ms,
            touch: true,
            effect_targets: if env.from_master {
                Targets::AOF
            } else {
                Targets::ALL
            },
            clock: ks.clock.get(),
            guards,
            dirty: 0,
            last_ts: 0,
            group: None,
            gave_up,
            written: None,
            hidden: Vec::new(),
        }
    }

    /// A shard just locked, made ready for use: a pending point-in-time capture
    /// takes it first.
    fn prepared(
        ks: &Keyspace,
        id: usize,
        mut guard: MutexGuard<'a, ShardData>,
    ) -> MutexGuard<'a, ShardData> {
        ks.before_use(id, &mut guard);
        guard
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

    /// Lock shard `id` ([`Keyspace::global_id`]) only if it is free right now
    /// (eviction, which may run while this thread holds other shards, never waits).
    pub fn try_shard(env: KeyEnv<'a>, db: usize, now_ms: u64, id: usize) -> Option<Self> {
        let ks = env.keyspace;
        let guard = ks.shard_by_id(id).try_lock()?;
        let guard = Self::prepared(ks, id, guard);
        let mut locked = Self::none(env, db, now_ms);
        locked.guards.push((id, guard));
        Some(locked)
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

    /// Lock every shard of the given databases.
    pub fn databases(env: KeyEnv<'a>, db: usize, now_ms: u64, dbs: &[usize]) -> Self {
        let ks = env.keyspace;
        let ids = dbs
            .iter()
            .flat_map(|&d| (0..ks.shards_per_db()).map(move |s| ks.global_id(d, s)))
            .collect();
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
        for id in wanted {
            let Err(at) = self.guards.binary_search_by_key(&id, |(g, _)| *g) else {
                continue;
            };
            let shard = ks.shard_by_id(id);
            let guard = if at == self.guards.len() {
                shard.lock()
            } else {
                shard.try_lock_for(patience).ok_or(id)?
            };
            let guard = Self::prepared(ks, id, guard);
            self.guards.insert(at, (id, guard));
        }
        Ok(())
    }

    /// Hand every held shard to the threads waiting for it, if any, and take them
    /// all back (in order) once they are done: a long load lets INFO and the
    /// active threads in between its chunks. What was held must be in a state
    /// others may see.
    pub fn let_waiters_in(&mut self) {
        let ids: SmallVec<[usize; 4]> = self.guards.iter().map(|(id, _)| *id).collect();
        for (_, guard) in self.guards.drain(..) {
            MutexGuard::unlock_fair(guard);
        }
        let ks = self.env.keyspace;
        for id in ids {
            let guard = Self::prepared(ks, id, ks.shard_by_id(id).lock());
            self.guards.push((id, guard));
        }
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

    /// What the entries' access fields hold for this command (OBJECT FREQ/IDLETIME).
    pub fn clock(&self) -> AccessClock {
        self.clock
    }

    /// Changes made through this `Locked` so far.
    pub fn dirty(&self) -> u64 {
        self.dirty
    }

    /// Count changes made without a key accessor (FLUSHDB counts the keys it dropped).
    pub fn add_dirty(&mut self, n: u64) {
        self.dirty += n;
    }

    /// The MVCC timestamp for the effects of the current command. A peer's write
    /// being replayed travels on with the timestamp it was born with, even where it
    /// merged under a newer one here (a counter's increment on a key written since):
    /// each node's increments must reach every node stamped as their origin
    /// stamped them, in its order.
    pub fn effect_ts(&mut self) -> u64 {
        if let Some(ts) = crate::hlc::imposed_now() {
            return ts;
        }
        if self.last_ts == 0 {
            self.last_ts = crate::hlc::next_after(0, self.now_ms);
        }
        self.last_ts
    }

    /// The next command of a transaction or script runs at `now_ms`. It keeps the
    /// timestamp the group's earlier commands gave out: the whole group reaches peers
    /// as one atomic run with one timestamp, and they stamp its keys alike.
    pub fn begin_command(&mut self, now_ms: u64) {
        self.now_ms = now_ms;
    }

    pub(super) fn stamp(&mut self, previous: u64) -> u64 {
        let ts = command_stamp(previous, self.last_ts, self.now_ms);
        self.last_ts = ts;
        ts
    }

    /// Has `key` of `db` seen a write or a removal after `ts`? A peer's write
    /// stamped `ts` is then too old to apply (last writer wins). An equal timestamp
    /// is the same write met again, or a peer's repair of it: it applies.
    pub fn is_stale(&mut self, db: usize, key: &[u8], ts: u64) -> bool {
        let hash = hash_key(key);
        self.shard_mut(db, hash).newest_ts(hash, key) > ts
    }

    /// Append an effect of this node's own, stamped `ts`, for every destination
    /// (a repair sent to peers: see the command door). It goes straight to the
    /// stream, never into an open group: a group travels under the name of the
    /// write it holds (a peer's transaction being applied here, such as the
    /// effects of its RENAME), and that peer would drop the repair inside it as
    /// its own write come back.
    pub fn propagate_own(&mut self, db: usize, ts: u64, argv: &[&[u8]]) {
        let effects = self.env.effects;
        crate::effects::as_own(|| effects.append_to(db, ts, argv, Targets::ALL));
    }

    /// Before a counting command adds `by` to `key` (`member` of it, when given) of
    /// the selected database (active replication): the state the increment adds to,
    /// the key's current one or a new one from what the key holds now. `None` when
    /// this node counts nothing, or the key holds no such number (the command
    /// refuses it). Changes nothing: hand it to [`Locked::count_end`] once the
    /// command wrote.
    pub fn count_start(&mut self, key: &[u8], member: Option<&[u8]>, by: &Num) -> Option<Counting> {
        // One relaxed load for the nodes (most) that count nothing.
        if !self.env.keyspace.keeps_graves() {
            return None;
        }
        let db = self.db;
        let live = self.get_in(db, key).is_some();
        let hash = hash_key(key);
        let shard = self.shard_mut(db, hash);
        if !shard.keeps_counters() {
            return None;
        }
        let key_ts = shard.newest_ts(hash, key);
        if let Some(current) = shard.counter_of(hash, key, member) {
            return Some(Counting {
                starts: None,
                waits: current.waits(),
                key_ts,
            });
        }
        let value = live
            .then(|| shard.find(hash, key))
            .flatten()
            .map(|e| &e.value);
        // A peer's increment of a whole string counts on whatever number the
        // key holds (see [`super::counters::counted_on`]); our own refuses
        // what Redis refuses.
        let base = match member {
            None if crate::effects::replaying_now() => super::counters::counted_on(value, by),
            _ => super::counters::element(value, member, by),
        }?;
        // An element counts from its own last write where its collection keeps
        // element timestamps (the key's may be another element's): a peer's
        // increment after that write, older than the key's, still counts. After
        // a removal, from just past the add it saw: a peer's increment it did
        // not see still counts too. A whole key counts from its value's last
        // write: a TTL change since is no reset.
        let counter = Counter::starting(shard.uncounted_start(hash, key, member), base);
        Some(Counting {
            waits: counter.waits(),
            starts: Some(counter),
            key_ts,
        })
    }

    /// After a counting command added `by` to `key` (`member` of it) on the state
    /// [`Locked::count_start`] gave: record it as the writing node's (ours, or the
    /// peer's being replayed) and store the value the state gives (the base and each
    /// node's total, summed in one order on every node). Returns that value, for the
    /// reply. A peer's increment of a value that holds no number, which the
    /// command keeps waiting without writing (see [`Counter::waits`]), comes here
    /// too: the key keeps its value and takes the increment's timestamp. To a
    /// whole key's TTL register an increment is no write of its value: the
    /// register goes on past it, as past an element write of a collection (a
    /// TTL change met before or after it merges alike).
    pub fn count_end(
        &mut self,
        key: &[u8],
        member: Option<&[u8]>,
        counting: Counting,
        by: &Num,
    ) -> Num {
        let node = crate::effects::birth_now().map_or(self.env.effects.origin(), |b| b.origin);
        let (db, hash) = (self.db, hash_key(key));
        let shard = self.shard_mut(db, hash);
        let Some(entry) = shard.find(hash, key) else {
            return by.clone();
        };
        let ts = crate::hlc::imposed_now().unwrap_or(entry.ts);
        let value = match counting.starts {
            Some(mut counter) => {
                counter.add(node, by, ts);
                let value = counter.value();
                shard.put_counter(hash, key, member, counter);
                value
            }
            None => shard.count_on_current(hash, key, member, (node, by, ts)),
        };
        if member.is_none() {
            shard.follow_ttl(hash, key, counting.key_ts);
        }
        value
    }

    /// Is the increment of `key` (`member` of it) stamped `ts` that a peer's write
    /// being replayed makes counted here already (its node's total in the state
    /// holds it)?
    pub fn has_counted(&mut self, db: usize, key: &[u8], member: Option<&[u8]>, ts: u64) -> bool {
        let Some(birth) = crate::effects::birth_now() else {
            return false;
        };
        let hash = hash_key(key);
        self.shard_mut(db, hash)
            .counter_of(hash, key, member)
            .is_some_and(|c| c.holds(&birth.origin, ts))
    }

    /// Was counted key `key` (`member` of it) of `db` written after `ts` by a write
    /// that is not an increment (its counting restarts from that write), or its
    /// element removed by a removal that saw the increment? A peer's increment
    /// stamped `ts` is then gone with the reset and dropped. An element without a
    /// current state is judged by its own last write where its collection keeps
    /// element timestamps (see [`super::Mark::counts_from`]), else by its key's
    /// last write (which drops an increment older than a write of another field
    /// too; the nodes still converge: the dropping node sends its value whole).
    pub fn reset_after(&mut self, db: usize, key: &[u8], member: Option<&[u8]>, ts: u64) -> bool {
        let hash = hash_key(key);
        let shard = self.shard_mut(db, hash);
        if !shard.keeps_counters() {
            return false;
        }
        let marks_element =
            |shard: &ShardData| member.is_some() && shard.elements(hash, key).is_some();
        let start = match shard.counter_of(hash, key, member) {
            Some(counter) => counter.start(),
            // A removed key's grave judges its increments (the door asks it
            // first); only an element's marks kept under it still do here.
            None if shard.find(hash, key).is_none() && !marks_element(shard) => Start::write(0),
            None => shard.uncounted_start(hash, key, member),
        };
        start.took(ts)
    }

    /// A peer's removal of counted element `member` of `key` of `db`, that saw its
    /// adds up to `seen`, met after increments here it did not see (they outlive
    /// it): take from the element's count what the removal saw, as on the node
    /// that removed it (see [`Counter::after_removal_that_saw`]); the increments
    /// it did not see count on nothing. The AOF and the plain replicas, which
    /// take no part in the merge, are told the value the element holds then.
    /// False, nothing done, when the element has no current state here or the
    /// state cannot tell (the caller repairs the element instead).
    pub fn take_seen_increments(
        &mut self,
        db: usize,
        key: &[u8],
        member: &[u8],
        seen: u64,
    ) -> bool {
        let hash = hash_key(key);
        let shard = self.shard_mut(db, hash);
        let Some(counter) = shard.member_counter(hash, key, member) else {
            return false;
        };
        let Some(after) = counter.after_removal_that_saw(seen) else {
            return false;
        };
        if after == *counter {
            return true;
        }
        shard.put_counter(hash, key, Some(member), after);
        let Some(entry) = shard.find(hash, key) else {
            return true;
        };
        let ts = entry.ts;
        if let Some(write) = super::elements::setting_write(&entry.value, key, member) {
            let argv: smallvec::SmallVec<[&[u8]; 4]> = write.iter().map(Vec::as_slice).collect();
            self.emit(db, ts, &argv, Targets::BESIDE_PEERS);
        }
        true
    }

    /// A peer's reset of whole counted `key` of `db` stamped `ts` (a write of its
    /// whole value, or its removal) that arrives after increments newer than it:
    /// the key's current state, when it remembers every one of those (see
    /// [`Counter::splits_at`], and [`Counter::rebases_at`] for a repair of its
    /// base), with its TTL register. The caller runs the reset, then hands it
    /// to [`Locked::recount_after_reset`].
    pub fn counter_split_at(&mut self, db: usize, key: &[u8], ts: u64) -> Option<UnderReset> {
        let hash = hash_key(key);
        let shard = self.shard_mut(db, hash);
        let counter = shard
            .counter(hash, key)
            .filter(|c| c.splits_at(ts) || c.rebases_at(ts))
            .cloned()?;
        Some(UnderReset {
            counter,
            register: shard.key_ttl(hash, key)?,
            changes: shard.ttl_changes(hash, key),
        })
    }

    /// After a reset stamped `ts` ran on `key` of `db` (see
    /// [`Locked::counter_split_at`]): the increments the state held newer than
    /// it count on what it left, as on a node that met the reset before them (a
    /// removed key comes back holding their sum). To the TTL register the reset
    /// is a write of the value: the register starts over from it, the TTL
    /// changes newer than it merged on, and the key carries the newest write
    /// it held before (an increment or a TTL change, newer than the reset).
    pub fn recount_after_reset(&mut self, db: usize, key: &[u8], ts: u64, under: &UnderReset) {
        let hash = hash_key(key);
        let shard = self.shard_mut(db, hash);
        let value = shard.find(hash, key).map(|e| &e.value);
        // What the reset left (a removal: no deadline).
        let reset = super::KeyTtl {
            ts,
            since: None,
            expire_at: shard.find(hash, key).map_or(0, |e| e.expire_at),
        };
        let Some(counter) = under.counter.rebased_on(ts, value) else {
            // Nothing counts on what the reset wrote: the key is the reset's.
            shard.forget_counter(key);
            if shard.find(hash, key).is_some() {
                shard.restamp(hash, key, ts);
                under.rejoin_ttl(shard, hash, key, reset);
                self.restate_deadline_beside_peers(db, key, reset.expire_at, ts);
            }
            return;
        };
        if self.shard_mut(db, hash).find(hash, key).is_none() {
            let zero = Value::Str(crate::types::string::StrValue::Int(0));
            self.set_in(db, key, zero, 0);
        }
        let shard = self.shard_mut(db, hash);
        shard.put_counter(hash, key, None, counter);
        under.rejoin_ttl(shard, hash, key, reset);
        let newest = shard.newest_ts(hash, key);
        self.restate_beside_peers(db, key, newest);
        self.restate_deadline_beside_peers(db, key, reset.expire_at, newest);
    }

    /// The AOF and the plain replicas took a peer's reset of `key`, which left
    /// it deadline `reset_at`; TTL changes newer than the reset, met here
    /// before it, still hold (see [`Locked::recount_after_reset`]): tell them
    /// the deadline the key has now, if another.
    fn restate_deadline_beside_peers(&mut self, db: usize, key: &[u8], reset_at: u64, ts: u64) {
        let hash = hash_key(key);
        let Some(at) = self
            .shard_mut(db, hash)
            .find(hash, key)
            .map(|e| e.expire_at)
        else {
            return;
        };
        if at == reset_at {
            return;
        }
        let digits = at.to_string();
        let argv: SmallVec<[&[u8]; 3]> = match at {
            0 => smallvec::smallvec![b"PERSIST" as &[u8], key],
            _ => smallvec::smallvec![b"PEXPIREAT" as &[u8], key, digits.as_bytes()],
        };
        self.emit(db, ts, &argv, Targets::BESIDE_PEERS);
    }

    /// A peer's integer increment of `key` or of its hash field `field` (its argv,
    /// `increment`) counted here on a value that holds no integer (see
    /// [`super::counters::counted_on`]; a field a concurrent HINCRBYFLOAT made a
    /// float): the peers take the increment as itself and count it alike, while
    /// the AOF and the plain replicas, which would refuse it on that value as
    /// Redis does, take the value counted here (`SET ... KEEPTTL`, `HSET`).
    pub fn propagate_counted_on_float(&mut self, increment: &[&[u8]], field: Option<&[u8]>) {
        let (db, ts) = (self.db, self.effect_ts());
        self.emit(db, ts, increment, Targets::PEERS);
        let Some(key) = increment.get(1) else {
            return;
        };
        match field {
            None => self.restate_beside_peers(db, key, ts),
            Some(field) => self.restate_field_beside_peers(db, key, field, ts),
        }
    }

    /// [`Locked::restate_beside_peers`] for one field of hash `key`: `HSET`, which
    /// leaves the key's deadline as it is.
    fn restate_field_beside_peers(&mut self, db: usize, key: &[u8], field: &[u8], ts: u64) {
        let hash = hash_key(key);
        let Some(Value::Hash(fields)) = self.shard_mut(db, hash).find(hash, key).map(|e| &e.value)
        else {
            return;
        };
        let Some(value) = fields.get(field).map(<[u8]>::to_vec) else {
            return;
        };
        let argv: [&[u8]; 4] = [b"HSET", key, field, &value];
        self.emit(db, ts, &argv, Targets::BESIDE_PEERS);
    }

    /// The AOF and the plain replicas took a peer's reset of counted `key` as
    /// itself, and know nothing of the increments it went under: tell them the
    /// value the key holds now (as Redis propagates INCRBYFLOAT: SET ... KEEPTTL,
    /// the deadline being the reset's on both sides). The peers count it alike
    /// from the reset, which reaches them as itself.
    fn restate_beside_peers(&mut self, db: usize, key: &[u8], ts: u64) {
        let hash = hash_key(key);
        let Some(Value::Str(value)) = self.shard_mut(db, hash).find(hash, key).map(|e| &e.value)
        else {
            return;
        };
        let value = value.to_vec();
        let argv: [&[u8]; 4] = [b"SET", key, &value, b"KEEPTTL"];
        self.emit(db, ts, &argv, Targets::BESIDE_PEERS);
    }

    /// Does `key` of `db` merge between active nodes as a whole value, last writer
    /// wins (a list, a string nobody counts, a removed key), rather than element
    /// by element (a set, hash or sorted set, whose counted fields and members
    /// are elements too) or as a counter?
    pub fn merges_whole(&mut self, db: usize, key: &[u8]) -> bool {
        let hash = hash_key(key);
        !self.merges_by_element(db, key) && self.shard_mut(db, hash).counter(hash, key).is_none()
    }

    /// Is `key` of `db` a set, hash or sorted set, merging between active nodes
    /// element by element?
    pub fn merges_by_element(&mut self, db: usize, key: &[u8]) -> bool {
        let hash = hash_key(key);
        self.shard_mut(db, hash)
            .find(hash, key)
            .is_some_and(|e| super::elements::empty_like(&e.value).is_some())
    }

    /// The base of whole counted `key` of `db` (the write its count starts
    /// from): its timestamp and the number it held.
    pub fn count_base(&mut self, db: usize, key: &[u8]) -> Option<(u64, Num)> {
        let hash = hash_key(key);
        let counter = self.shard_mut(db, hash).counter(hash, key)?;
        Some((counter.base_ts, counter.base.clone()))
    }

    /// May a node count on `key` of `db` as a whole: does this node count it, or
    /// does it hold a number (which a peer may have counted on meanwhile)?
    pub fn may_be_counted(&mut self, db: usize, key: &[u8]) -> bool {
        let hash = hash_key(key);
        let counted = self.shard_mut(db, hash).counter(hash, key).is_some();
        counted
            || self
                .get_in(db, key)
                .is_some_and(|entry| super::counters::holds_number(&entry.value))
    }

    /// Forget the counting of whole key `key` of `db`: this node sent the key
    /// whole (a repair), which each peer takes as a write of its whole value, so
    /// the increments that value holds no longer split by a later reset here
    /// either.
    pub fn forget_counter(&mut self, db: usize, key: &[u8]) {
        let hash = hash_key(key);
        self.shard_mut(db, hash).forget_counter(key);
    }

    /// Active replication: `key` of `db` is written whole, at the timestamp it
    /// already carries (a repair sent, or one taken: a copy of the key's last
    /// write): its TTL register starts over from that write on this node as on
    /// the others, so a TTL change older than it is judged alike everywhere.
    pub fn restart_ttl_register(&mut self, db: usize, key: &[u8]) {
        let hash = hash_key(key);
        self.shard_mut(db, hash).forget_ttl(key);
    }

    /// The newest timestamp `key` of `db` has seen: its last write, or its removal.
    pub fn newest_ts(&mut self, db: usize, key: &[u8]) -> u64 {
        let hash = hash_key(key);
        self.shard_mut(db, hash).newest_ts(hash, key)
    }

    /// The current element timestamps of collection `key` (active replication), if
    /// its last write was element by element.
    pub fn current_elements(&mut self, db: usize, key: &[u8]) -> Option<&super::Elements> {
        let hash = hash_key(key);
        self.shard_mut(db, hash).elements(hash, key)
    }

    /// A peer's write applied cut down: its effect (the open group's `at`th) goes
    /// to the active peers whole, as `born` (see [`crate::effects::AsBorn`]).
    pub fn forward_whole(&mut self, at: usize, born: crate::effects::AsBorn) {
        if let Some(effect) = self.group.as_mut().and_then(|group| group.get_mut(at)) {
            effect.as_born = Some(Box::new(born));
        }
    }

    /// A peer's command dropped here (stale, a count met before, or changing
    /// nothing) still goes on to the active peers, as it was born: each judges it
    /// itself. Inside a transaction it keeps the transaction whole: a peer that
    /// meets the transaction first by this path keeps this copy and drops the
    /// origin's as a duplicate, so a command missing from it would be lost there.
    /// Alone, it keeps the origin's numbers without a gap on the paths through
    /// here: a peer whose own link to the origin is down would otherwise drop every
    /// later write of the origin that comes this way until that link is back.
    pub fn forward_dropped(&mut self, argv: &[&[u8]]) {
        if !self.env.effects.recording() {
            return;
        }
        let alone = self.group.is_none();
        if alone {
            self.begin_effect_group();
        }
        let (db, ts) = (self.db, self.effect_ts());
        if let Some(group) = self.group.as_mut() {
            group.push(GroupedEffect {
                db,
                ts,
                argv: argv.iter().map(|a| a.to_vec()).collect(),
                targets: Targets::PEERS,
                observed: super::elements::removal_seen_now(),
                as_born: None,
            });
        }
        if alone {
            self.finish_effect_group();
        }
    }

    /// Each of `elements` of collection `key` as a peer's write meets it here, if
    /// the key's element timestamps are current.
    pub fn elements_here<'e>(
        &mut self,
        db: usize,
        key: &[u8],
        elements: impl Iterator<Item = &'e [u8]>,
    ) -> Option<smallvec::SmallVec<[super::elements::Here; 8]>> {
        let hash = hash_key(key);
        let shard = &*self.shard_mut(db, hash);
        let state = shard.elements(hash, key)?;
        let value = shard.find(hash, key).map(|e| &e.value);
        let here = elements.map(|element| {
            let held = value.is_some_and(|v| super::elements::holds(v, element));
            state.here(element, held)
        });
        Some(here.collect())
    }

    /// How many effects the open group holds (where the next command's start).
    pub fn group_len(&self) -> usize {
        self.group.as_ref().map_or(0, Vec::len)
    }

    /// Active replication: mark the elements named by the effects of the open group
    /// from the `since`th on with each effect's timestamp, added or removed as the
    /// collection now holds them; a removal's effect carries what it saw of each
    /// (its `observed`). `effect_on_marks` says what an effect does to them (a
    /// TTL change leaves them, following the key); `before` gives the newest
    /// timestamp each key the command wrote had
    /// before it ran (keys it does not give are not marked: their state goes stale,
    /// and they merge per key); `seen_by_peer` gives, for a peer's removal being
    /// replayed, what it saw of an element there.
    pub fn mark_elements_since(
        &mut self,
        since: usize,
        before: &[(usize, &[u8], u64)],
        effect_on_marks: impl Fn(&[&[u8]]) -> super::EffectOnMarks,
        seen_by_peer: impl Fn(&[u8]) -> Option<u64>,
    ) {
        let Some(mut group) = self.group.take() else {
            return;
        };
        // A command's later effects on a key find the state its earlier ones left
        // (SPOP's SREMs): the key's newest timestamp moves with each.
        let mut before: smallvec::SmallVec<[(usize, &[u8], u64); 2]> =
            before.iter().copied().collect();
        for effect in group.iter_mut().skip(since) {
            let argv: smallvec::SmallVec<[&[u8]; 8]> =
                effect.argv.iter().map(Vec::as_slice).collect();
            let span = match effect_on_marks(&argv) {
                super::EffectOnMarks::Elements(span) => span,
                whole_key => {
                    self.marks_after_whole_key_write(&mut before, effect.db, whole_key);
                    continue;
                }
            };
            let Some(key) = argv.get(1) else {
                continue;
            };
            let Some(at) = before
                .iter()
                .position(|(db, k, _)| *db == effect.db && k == key)
            else {
                continue;
            };
            let write = ElementWrite {
                db: effect.db,
                key,
                before: before[at].2,
                ts: effect.ts,
                span,
            };
            let observed = self.mark_elements(&write, span.elements(&argv), &seen_by_peer);
            if span.removes {
                effect.observed = observed;
            }
            before[at].2 = self.newest_ts(effect.db, key);
        }
        self.group = Some(group);
    }

    /// An effect wrote the keys of `db` in `before` whole (`TtlOnly`: their TTL
    /// alone): a TTL change leaves the value, so the marks still describe it and
    /// follow the key's new timestamp; any other whole write leaves marks that no
    /// longer describe what the key holds, even where its timestamp is theirs (a
    /// repair met at the same timestamp), and a removal keeps the TTL changes
    /// newer than it under the grave. Each key's timestamp in `before` moves on.
    fn marks_after_whole_key_write(
        &mut self,
        before: &mut [(usize, &[u8], u64)],
        db: usize,
        effect: super::EffectOnMarks,
    ) {
        for (_, key, ts_before) in before.iter_mut().filter(|k| k.0 == db) {
            let hash = hash_key(key);
            let shard = self.shard_mut(db, hash);
            match effect {
                super::EffectOnMarks::TtlOnly => shard.follow_elements(hash, key, *ts_before),
                _ => {
                    shard.forget_elements(key);
                    shard.keep_newer_ttl_changes_under_grave(hash, key, *ts_before);
                }
            }
            *ts_before = shard.newest_ts(hash, key);
        }
    }

    /// Mark the elements one effect wrote; returns what each it removed had seen
    /// (in the effect's order), for its `observed`.
    fn mark_elements<'e>(
        &mut self,
        write: &ElementWrite<'_>,
        elements: impl Iterator<Item = &'e [u8]>,
        seen_by_peer: impl Fn(&[u8]) -> Option<u64>,
    ) -> Vec<u64> {
        let hash = hash_key(write.key);
        let shard = self.shard_mut(write.db, hash);
        // A write that emptied the collection removed it: its elements are gone.
        let value = shard.find(hash, write.key).map(|e| &e.value);
        let alive: smallvec::SmallVec<[(&[u8], bool); 8]> = elements
            .map(|element| {
                let held = value.is_some_and(|v| super::elements::holds(v, element));
                (element, held)
            })
            .collect();
        let Some(state) = shard.elements_to_mark(write.key, write.before) else {
            return Vec::new();
        };
        let mut observed = Vec::new();
        for (element, alive) in alive {
            // A removal saw the add it took away (or what the removal before it had
            // seen); a peer's removal travels on with what it saw there, which a
            // node it reaches by another path must judge it by, and its mark here
            // joins both.
            let ours = state.mark_of(element, true).observed();
            let seen = seen_by_peer(element).unwrap_or(ours);
            if !alive {
                observed.push(seen);
            }
            state.mark(element, write.span.mark(write.ts, alive, seen.max(ours)));
        }
        // An add of a member already there changed nothing, yet it is a write of
        // the element (it must beat an older concurrent removal): the key is
        // stamped with it, and the state stays current.
        let newest = state.newest;
        match shard
            .find(hash, write.key)
            .map(|entry| entry.ts.max(newest))
        {
            Some(ts) => shard.restamp(hash, write.key, ts),
            // Emptied: the grave takes the effect's timestamp too (a command that
            // stamped another key later gave its effects that later one), so the
            // state stays current under it.
            None => shard.bury(write.key, newest),
        }
        // An element write leaves the key's TTL register as it was, under its
        // grave too.
        shard.follow_ttl(hash, write.key, write.before);
        observed
    }

    /// Active replication: a peer's removal of the whole collection `key` of `db`
    /// at `ts` (older than its last write here, or of a collection element
    /// writes emptied here) saw every add no newer than itself: its element
    /// timestamps (when current) count it as seen, and each element counted on
    /// since keeps only the increments newer than it (see
    /// [`Locked::take_seen_increments`]), as on the node that removed the key
    /// and counts from its removal.
    pub fn join_whole_removal(&mut self, db: usize, key: &[u8], ts: u64) {
        let hash = hash_key(key);
        let shard = self.shard_mut(db, hash);
        let counted: Vec<Vec<u8>> = shard
            .member_counters(hash, key)
            .into_iter()
            .map(|(member, _)| member.to_vec())
            .collect();
        shard.join_whole_removal(hash, key, ts);
        for member in counted {
            self.take_seen_increments(db, key, &member, ts);
        }
    }

    /// Active replication: a peer's removal of whole `key` of `db` at `ts`
    /// reached it removed here by an older DEL (see `ShardData::bury_again`).
    pub fn bury_again(&mut self, db: usize, key: &[u8], ts: u64) {
        let hash = hash_key(key);
        self.shard_mut(db, hash).bury_again(hash, key, ts)
    }

    /// Active replication: a peer's removal of whole `key` of `db` at `ts`,
    /// older than the element writes that keep it here, starts its TTL register
    /// over (see `ShardData::restart_ttl_at_removal`).
    pub fn restart_ttl_at_removal(&mut self, db: usize, key: &[u8], ts: u64) {
        let hash = hash_key(key);
        self.shard_mut(db, hash)
            .restart_ttl_at_removal(hash, key, ts)
    }

    /// Active replication: write `element` of collection `key` of `db` again as
    /// it holds it (`argv`: the HSET / ZADD that sets it so), stamped just after
    /// `counted_at`, its last increment here, with this node's tag: the value it
    /// holds as of then. A write of the element that a peer made later (which
    /// this node may not have met yet) still beats it, as a fresh stamp would
    /// not; two nodes repairing one element at once stamp it apart, and the later
    /// stamp wins on both. The element is marked with it (its counting restarts
    /// from it), the key stamped, and the write goes to the peers and replicas.
    /// For a peer that holds the element on another value (see the command
    /// door's repairs of counted elements).
    pub fn rewrite_element(
        &mut self,
        db: usize,
        key: &[u8],
        element: &[u8],
        counted_at: u64,
        argv: &[&[u8]],
    ) {
        let hash = hash_key(key);
        let before = self.newest_ts(db, key);
        let ts = crate::hlc::own_stamp_after(counted_at);
        let shard = self.shard_mut(db, hash);
        let Some(state) = shard.elements_to_mark(key, before) else {
            return;
        };
        state.mark(element, super::Mark::added(ts, false));
        shard.restamp(hash, key, ts.max(before));
        // An element write: the key's TTL register goes on.
        shard.follow_ttl(hash, key, before);
        self.propagate_own(db, ts, argv);
    }

    /// Has `key` of `db` been removed at `ts` or later (it may live again since)?
    pub fn buried_since(&mut self, db: usize, key: &[u8], ts: u64) -> bool {
        let hash = hash_key(key);
        self.shard_mut(db, hash)
            .graves()
            .is_some_and(|g| g.ts_of(key) >= ts)
    }

    /// The timestamp up to which absent `key` of `db` counts as removed here (its
    /// grave, a flush, or forgotten graves); 0 when it never was.
    pub fn removed_at(&mut self, db: usize, key: &[u8]) -> u64 {
        let hash = hash_key(key);
        self.shard_mut(db, hash)
            .graves()
            .map_or(0, |g| g.ts_of(key))
    }

    /// Does this hold shard `id` ([`Keyspace::global_id`])?
    pub fn holds(&self, id: usize) -> bool {
        self.guards.binary_search_by_key(&id, |(g, _)| *g).is_ok()
    }

    /// The held shard of a key hash. Panics if the command did not lock it: the
    /// command table's key spec and the handler disagree, which is a bug.
    pub(super) fn shard_mut(&mut self, db: usize, hash: u64) -> &mut ShardData {
        let ks = self.env.keyspace;
        let id = ks.global_id(db, ks.shard_of(hash));
        self.shard_by_id(id)
            .unwrap_or_else(|| panic!("key in db {db} accessed without its shard lock"))
    }

    fn shard_by_id(&mut self, id: usize) -> Option<&mut ShardData> {
        let at = self.guards.binary_search_by_key(&id, |(g, _)| *g).ok()?;
        Some(&mut self.guards[at].1)
    }

    /// Exchange the contents of every database with `side`'s (a keyspace made by
    /// [`super::Keyspace::beside`]), as SWAPDB exchanges two databases: the caller
    /// holds every shard. Watchers of every database hear of it.
    pub fn swap_all_with(&mut self, side: &super::Keyspace) {
        let ks = self.env.keyspace;
        for db in 0..ks.databases() {
            self.signal_db_replaced(db, None);
            for shard in 0..ks.shards_per_db() {
                let mine = self.shard_at(db, shard);
                mine.swap(&mut side.shard(db, shard).lock());
                ks.note_deadline(ks.global_id(db, shard), mine.next_due());
            }
        }
    }

    /// A held shard of database `db` by index (whole-database commands).
    pub fn shard_at(&mut self, db: usize, shard: usize) -> &mut ShardData {
        let id = self.env.keyspace.global_id(db, shard);
        self.shard_by_id(id)
            .unwrap_or_else(|| panic!("shard {shard} of db {db} is not locked"))
    }

    /// Delete `key` if its deadline has passed, appending the DEL effect. Returns
    /// whether the key is gone: also true, with the key left in place, while expiry
    /// is held (see [`super::Keyspace::hold_expiry`]), as Redis's lookups treat it.
    fn expire_if_due(&mut self, db: usize, hash: u64, key: &[u8]) -> bool {
        let now = self.now_ms;
        let keyspace = self.env.keyspace;
        let from_master = self.env.from_master;
        let shard = self.shard_mut(db, hash);
        if shard.volatile_len_is_zero() {
            return self.expire_members_if_due(db, hash, key);
        }
        match shard.find(hash, key) {
            Some(e) if e.is_expired(now) && !from_master => {}
            _ => return self.expire_members_if_due(db, hash, key),
        }
        if keyspace.expiry_held(now) {
            return true;
        }
        let entry = shard.remove(hash, key).expect("entry found above");
        self.expired(db, &entry);
        entry.free(keyspace.lazy(Cause::Expire));
        true
    }

    /// Account for a key removed because its deadline passed.
    pub fn expired(&mut self, db: usize, entry: &Entry) {
        let event = (crate::notify::class::EXPIRED, "expired");
        self.removed_by_server(db, entry, |s| &s.expired_keys, event);
    }

    /// Remove `key` of `db` to free memory (when `volatile`, only if it has a
    /// deadline): its DEL effect, `evicted` event and WATCH signal go out, and INFO
    /// counts it. Not a change of the running command (Redis does not count
    /// evictions as dirty). Returns the entry for the caller to free.
    pub fn evict(&mut self, db: usize, key: &[u8], volatile: bool) -> Option<EntryBox> {
        let hash = hash_key(key);
        let shard = self.shard_mut(db, hash);
        if volatile && shard.find(hash, key)?.expire_at == 0 {
            return None;
        }
        let entry = shard.remove(hash, key)?;
        let event = (crate::notify::class::EVICTED, "evicted");
        self.removed_by_server(db, &entry, |s| &s.evicted_keys, event);
        Some(entry)
    }

    /// What follows a key the server removed on its own while a command runs: see
    /// [`KeyEnv::removed_by_server`]. The DEL effect joins the command's effect group;
    /// the key's grave keeps the removal's timestamp.
    pub(super) fn removed_by_server(
        &mut self,
        db: usize,
        entry: &Entry,
        counter: fn(&ThreadStats) -> &AtomicU64,
        event: (u32, &str),
    ) {
        let env = self.env;
        let ts = env.removed_by_server(db, entry, self.now_ms, counter, event, |ts, argv| {
            // Not the command's own write: it goes everywhere, as in Redis, whatever
            // a script chose with redis.set_repl.
            self.emit(db, ts, argv, Targets::ALL)
        });
        self.shard_mut(db, hash_key(entry.key()))
            .bury(entry.key(), ts);
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
        let (touch, clock, now) = (self.touch, self.clock, self.now_ms);
        let entry = self.shard_mut(db, hash).find_mut(hash, key)?;
        if touch {
            entry.access = clock.accessed(entry.access, now);
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
            .filter(|e| self.env.from_master || !e.is_expired(self.now_ms))
    }

    /// Delete every key of a held shard whose deadline has passed, appending their DEL
    /// effects. Returns how many went.
    pub fn expire_shard(&mut self, db: usize, shard: usize) -> usize {
        let now = self.now_ms;
        if self.env.keyspace.expiry_held(now) {
            return 0;
        }
        let mut due = Vec::new();
        self.shard_at(db, shard)
            .expire_due(now, usize::MAX, |entry| {
                due.push(entry);
                // Buried below, with the timestamp its DEL takes.
                0
            });
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
        let (db, bus) = (self.db, self.env.bus);
        let entry = self.get(key);
        let counter = if entry.is_some() {
            &stats.keyspace_hits
        } else {
            bus.notify(crate::notify::class::KEY_MISS, "keymiss", db, key);
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
        self.env.keyspace.signal_modified(db, key);
        self.note_written(db, key);
        if matches!(value, Value::Cron(_)) {
            self.env.keyspace.crons.note(db, key);
        }
        let (now, last) = (self.now_ms, self.last_ts);
        let (clock, touch) = (self.clock, self.touch);
        let access = |previous: Option<u32>| match previous {
            Some(field) => clock.overwritten(field, touch, now),
            None => clock.initial(now),
        };
        let mut issued = 0;
        let replaced = self
            .shard_mut(db, hash)
            .upsert(hash, key, access, |previous_ts| {
                issued = command_stamp(previous_ts, last, now);
                EntryData {
                    value,
                    expire_at,
                    ts: issued,
                }
            });
        self.last_ts = issued;
        match replaced {
            Some(old) => crate::lazyfree::free_value(old, self.env.keyspace.lazy(Cause::ServerDel)),
            None => self.created(db, key),
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
        self.env.keyspace.signal_modified(db, key);
        let ts = self.stamp(removed.ts);
        self.shard_mut(db, hash).bury(key, ts);
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
        if matches!(entry.value, Value::Cron(_)) {
            self.env.keyspace.crons.note(db, entry.key());
        }
        self.env.keyspace.signal_modified(db, entry.key());
        self.note_written(db, entry.key());
        // Redis deletes the target first, so the moved key is always a new one there.
        self.created(db, entry.key());
        self.shard_mut(db, hash).insert(hash, entry)
    }

    /// A key came into being: the `new` keyspace event.
    fn created(&self, db: usize, key: &[u8]) {
        self.notify_in(db, crate::notify::class::NEW, "new", key);
    }

    /// Raise keyspace event `event` of class `class` (see [`crate::notify::class`]) on
    /// `key` of the selected database, e.g. `keys.notify(class::LIST, "lpush", key)`:
    /// the one way commands raise keyspace notifications. Call it after the change, in
    /// Redis's order (e.g. `lpop` then `del` when the pop emptied the list).
    #[inline]
    pub fn notify(&self, class: u32, event: &str, key: &[u8]) {
        self.env.bus.notify(class, event, self.db, key);
    }

    /// [`Locked::notify`] for a key of database `db` (MOVE's `move_to`, COPY ... DB).
    #[inline]
    pub fn notify_in(&self, db: usize, class: u32, event: &str, key: &[u8]) {
        self.env.bus.notify(class, event, db, key);
    }

    /// Give a live key a deadline (0 = persist). Returns false if the key is absent,
    /// or if its TTL register keeps the deadline it has (see [`Locked::keeps_ttl`]):
    /// a peer's change kept that way still merged, and stamps the key with its
    /// timestamp when newer, as on the node that made it.
    pub fn set_expire(&mut self, key: &[u8], at: u64) -> bool {
        let hash = hash_key(key);
        let db = self.db;
        let kept = self.keeps_ttl(key, at);
        let replayed = crate::hlc::imposed_now().is_some();
        let shard = self.shard_mut(db, hash);
        let value = shard.value_written_at(hash, key);
        let Some(previous_ts) = shard.find(hash, key).map(|e| e.ts) else {
            return false;
        };
        if kept && !replayed {
            return false;
        }
        // A peer's older change that merges keeps the key's newer timestamp.
        let ts = self.stamp(previous_ts);
        let made_at = crate::hlc::imposed_now().unwrap_or(ts);
        let shard = self.shard_mut(db, hash);
        if !kept {
            shard.set_expire(hash, key, at);
        }
        shard.restamp(hash, key, ts);
        let since = super::ttl::Since::ttl_changed_on(value);
        shard.note_ttl_change(key, since, (previous_ts, ts), (made_at, at));
        self.dirty += 1;
        self.env.keyspace.signal_modified(db, key);
        !kept
    }

    /// A TTL change to deadline `at` (0: none) found `key` absent: a peer's,
    /// newer than the key's removal here, merges into the TTL register under its
    /// grave (see `ttl.rs`), which the collection gets back if an element write
    /// brings it back.
    pub fn ttl_change_of_absent(&mut self, key: &[u8], at: u64) {
        let Some(ts) = crate::hlc::imposed_now() else {
            return;
        };
        let hash = hash_key(key);
        let db = self.db;
        self.shard_mut(db, hash)
            .change_ttl_under_grave(hash, key, ts, at);
    }

    /// Would a TTL change of live `key` to deadline `at` (0: none; a past one
    /// deletes) leave it as it is? Under active replication a key's TTL changes
    /// since its last value write merge by max (see `ttl.rs`): one that does not
    /// lengthen the TTL is kept out, as GT keeps it out. Also true for an absent key.
    pub fn keeps_ttl(&mut self, key: &[u8], at: u64) -> bool {
        let hash = hash_key(key);
        let db = self.db;
        if self.expire_if_due(db, hash, key) {
            return true;
        }
        let shard = self.shard_mut(db, hash);
        let Some(current) = shard.find(hash, key).map(|e| e.expire_at) else {
            return true;
        };
        shard.ttl_changed_since(hash, key).is_some() && !super::ttl::lengthens(at, current)
    }

    /// Is a peer's TTL change of `key` stamped `ts` too old to apply here? Only
    /// when the key's value was written, or the key removed, after it: one older
    /// than our own TTL change or element write since the same value write merges
    /// with it (a counted string's increments are no value writes).
    pub fn ttl_change_is_stale(&mut self, db: usize, key: &[u8], ts: u64) -> bool {
        let hash = hash_key(key);
        let shard = self.shard_mut(db, hash);
        shard.newest_ts(hash, key) > ts
            && shard
                .ttl_since(hash, key)
                .is_none_or(|since| since.value >= ts)
    }

    /// Record that a live key's value was changed in place (APPEND, INCR ...): stamps it
    /// and counts the change.
    pub fn modified(&mut self, key: &[u8]) {
        self.modified_in(self.db, key)
    }

    pub fn modified_in(&mut self, db: usize, key: &[u8]) {
        if self.stamp_change(db, key) {
            self.env.keyspace.signal_modified(db, key);
            self.note_written(db, key);
        }
    }

    /// Keep, from now on, the keys set or changed (`written`), when `like` keeps
    /// them: the command running a transaction or a script asked for them, and this
    /// `Locked` is the one its commands run under.
    pub fn keep_written_like(&mut self, like: &Locked) {
        if like.written.is_some() {
            self.keep_written();
        }
    }

    /// Keep, from now on, the keys set or changed (`written`).
    pub fn keep_written(&mut self) {
        self.written.get_or_insert_with(Vec::new);
    }

    /// Add the keys `other` kept to this one's (a transaction's or a script's own
    /// locks hand them to those of the command that ran it).
    pub fn absorb_written(&mut self, other: &mut Locked) {
        if let (Some(mine), Some(theirs)) = (&mut self.written, other.written.take()) {
            mine.extend(theirs);
        }
    }

    /// The keys set or changed since [`Locked::keep_written`], in order.
    pub fn take_written(&mut self) -> Vec<(usize, Vec<u8>)> {
        self.written.take().unwrap_or_default()
    }

    fn note_written(&mut self, db: usize, key: &[u8]) {
        if let Some(written) = &mut self.written {
            written.push((db, key.to_vec()));
        }
    }

    /// Record a change Redis does not signal to WATCH or client-side caching: the
    /// state of a stream's consumer groups (groups, consumers, pending entries, last
    /// IDs), which no read of the entries sees. Stamps the key and counts the change.
    pub fn modified_quietly(&mut self, key: &[u8]) {
        self.stamp_change(self.db, key);
    }

    /// Stamp a live key as changed and count the change; whether it was there.
    fn stamp_change(&mut self, db: usize, key: &[u8]) -> bool {
        let hash = hash_key(key);
        let Some(previous_ts) = self.shard_mut(db, hash).find(hash, key).map(|e| e.ts) else {
            return false;
        };
        let ts = self.stamp(previous_ts);
        self.shard_mut(db, hash).restamp(hash, key, ts);
        self.dirty += 1;
        true
    }

    /// Append an effect of the current command (while the locks are held), for
    /// [`Locked::effect_targets`]; with none, it is not recorded at all.
    pub fn propagate(&mut self, db: usize, argv: &[&[u8]]) {
        if self.env.effects.recording() && !self.effect_targets.is_none() {
            let ts = self.effect_ts();
            self.emit(db, ts, argv, self.effect_targets);
        }
    }

    /// Propagate a write as `beside_peers` to the AOF and the plain replicas and
    /// as `for_peers` to the active peers, both stamped as the write: a command
    /// whose effect on the peers' copies must be said otherwise (see the door's
    /// `propagate_written_in_place`). A script that sends its writes to one
    /// destination alone sends `beside_peers` there.
    pub fn propagate_apart(&mut self, db: usize, beside_peers: &[&[u8]], for_peers: &[&[u8]]) {
        if self.effect_targets != Targets::ALL {
            return self.propagate(db, beside_peers);
        }
        let ts = self.effect_ts();
        self.emit(db, ts, beside_peers, Targets::BESIDE_PEERS);
        self.emit(db, ts, for_peers, Targets::PEERS);
    }

    /// An effect goes to the open group, or else straight to the stream.
    pub(super) fn emit(&mut self, db: usize, ts: u64, argv: &[&[u8]], targets: Targets) {
        if !self.env.effects.recording() {
            return;
        }
        match &mut self.group {
            Some(group) => group.push(GroupedEffect {
                db,
                ts,
                argv: argv.iter().map(|a| a.to_vec()).collect(),
                targets,
                observed: Vec::new(),
                as_born: None,
            }),
            None => self.env.effects.append_to(db, ts, argv, targets),
        }
    }

    /// Open an effect group: from now on the effects of every command run through
    /// this `Locked` (lazy expiry's DELs included) are held back, to be appended as
    /// one uninterrupted run by [`Locked::finish_effect_group`]. Transactions (EXEC)
    /// and scripts open one around all their commands. Groups do not nest: opening
    /// one while one is open keeps the open one.
    pub fn begin_effect_group(&mut self) {
        self.group.get_or_insert_with(Vec::new);
    }

    /// Is an effect group open (a transaction or script is running commands)?
    pub fn in_effect_group(&self) -> bool {
        self.group.is_some()
    }

    /// Close the open effect group and append its effects with
    /// [`EffectLog::append_group`]: several are wrapped in MULTI ... EXEC, one goes
    /// alone, none appends nothing (a read-only transaction propagates nothing).
    /// Call it before the locks go; dropping a `Locked` with a group still open
    /// finishes it.
    pub fn finish_effect_group(&mut self) {
        if let Some(group) = self.group.take() {
            self.env.effects.append_group(&group);
        }
    }

    /// Send the "key modified" signal to the per-key observers (WATCH) of every key
    /// of `db` that `db` holds, or that `replaced_with` holds (the database whose
    /// contents `db` takes, SWAPDB): what FLUSHDB, FLUSHALL and SWAPDB change, as
    /// Redis 7.0 decides it. Client-side caching hears of a flush as a whole
    /// instead, and of SWAPDB not at all, as in Redis 7.0. Call it before emptying
    /// or swapping, holding every shard of both databases.
    pub fn signal_db_replaced(&mut self, db: usize, replaced_with: Option<usize>) {
        let ks = self.env.keyspace;
        if ks.observers.is_idle() {
            return;
        }
        for key in ks.observers.keys_in(db) {
            let hash = hash_key(&key);
            let present =
                |locked: &mut Self, d: usize| locked.shard_mut(d, hash).find(hash, &key).is_some();
            if present(self, db) || replaced_with.is_some_and(|other| present(self, other)) {
                ks.observers.signal_key_observers(db, &key);
            }
        }
    }

    /// Has `key` of `db` outlived its deadline without being deleted yet? (EXEC aborts
    /// when a watched key has: it expired after WATCH.)
    pub fn is_expired_in(&mut self, db: usize, key: &[u8]) -> bool {
        let (hash, now) = (hash_key(key), self.now_ms);
        self.shard_mut(db, hash)
            .find(hash, key)
            .is_some_and(|e| e.is_expired(now))
    }

    /// (keys, keys with a deadline) of database `db`, expired ones not yet removed
    /// included, as Redis counts them. Held shards are read as they are; the others
    /// are locked one at a time, which is only safe when this holds none of the
    /// database: a plain call of a [`Lock::Handler`](crate::commands::table::Lock)
    /// command holds nothing, and EXEC holds everything for one.
    pub fn db_stats(&mut self, db: usize) -> (usize, usize) {
        let mut totals = (0, 0);
        self.each_shard(db, |shard| {
            totals.0 += shard.len();
            totals.1 += shard.volatile_len();
        });
        totals
    }

    /// The digest of database `db` (see `digest.rs`), read as [`Locked::db_stats`]
    /// reads; `None` unless this node replicates actively.
    pub fn db_digest(&mut self, db: usize) -> Option<u64> {
        let mut digest = None;
        self.each_shard(db, |shard| {
            if let Some(part) = shard.digest() {
                digest = Some(digest.unwrap_or(0) ^ part);
            }
        });
        digest
    }

    /// Bytes of bookkeeping of database `db`: its tables' slots and its expiry
    /// indexes (MEMORY STATS), read as [`Locked::db_stats`] reads.
    pub fn db_overhead(&mut self, db: usize) -> (usize, usize) {
        let mut totals = (0, 0);
        self.each_shard(db, |shard| {
            let (table, deadlines) = shard.overhead();
            totals.0 += table;
            totals.1 += deadlines;
        });
        totals
    }

    /// Show `visit` every shard of database `db`: held ones as they are, the others
    /// locked one at a time (see [`Locked::db_stats`]).
    fn each_shard(&mut self, db: usize, mut visit: impl FnMut(&ShardData)) {
        let ks = self.env.keyspace;
        for shard in 0..ks.shards_per_db() {
            match self.shard_by_id(ks.global_id(db, shard)) {
                Some(held) => visit(held),
                None => visit(&ks.shard(db, shard).lock()),
            }
        }
    }
}

impl Drop for Locked<'_> {
    /// A command that wrote may have given keys deadlines (or moved them, SWAPDB):
    /// refresh the hints the active expiry cycle reads before the locks go.
    fn drop(&mut self) {
        self.unhide_members();
        self.finish_effect_group();
        if self.holds_reading {
            crate::hlc::release_reading();
        }
        if self.dirty > 0 {
            for (id, shard) in &self.guards {
                self.env.keyspace.note_deadline(*id, shard.next_due());
            }
        }
    }
}

impl ShardData {
    fn volatile_len_is_zero(&self) -> bool {
        self.next_deadline().is_none()
    }
}
/// One effect's write of the elements of collection `key` (see
/// [`Locked::mark_elements_since`]).
struct ElementWrite<'a> {
    db: usize,
    key: &'a [u8],
    /// The key's newest timestamp before the command ran.
    before: u64,
    ts: u64,
    span: super::ElementSpan,
}
