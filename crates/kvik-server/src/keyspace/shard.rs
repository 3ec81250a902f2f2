//! One shard: a hash table of entries plus an index of their expiry times.
//!
//! Entries are boxed so the table itself holds one pointer per slot: a hashbrown table
//! runs between 44% and 87% full, and empty slots of 8 bytes cost far less than empty
//! slots the size of an entry. Each shard stays small (a keyspace has many), so when
//! hashbrown grows a table all at once the pause is short.
//!
//! The expiry index is ordered by deadline, so the active expiry cycle visits exactly
//! the keys that are due, never sampling the ones that are not. It stores the key's
//! hash, not the key: a due (deadline, hash) pair is resolved by looking the hash up
//! in the table and checking the deadline.
//!
//! Invariant kept by every method here: an entry has `expire_at != 0` exactly when its
//! (expire_at, hash) pair is counted in `expires`.

use super::counters::{self, Counted, Counter, Num, Start};
use super::elements::Elements;
use super::graves::Graves;
use super::ttl::{self, KeyTtl, Since, TtlMarks};
use super::{Entry, EntryBox, EntryData};
use crate::effects::NodeId;
use crate::types::Value;
use hashbrown::HashTable;
use std::collections::BTreeMap;
use std::collections::HashMap;

#[derive(Default)]
pub struct ShardData {
    pub(super) table: HashTable<EntryBox>,
    /// (deadline ms, key hash) -> number of keys with that pair (hashes may collide).
    expires: BTreeMap<(u64, u64), u32>,
    /// (earliest member deadline ms, key hash) -> count, for keys whose set members,
    /// hash fields or sorted-set members have deadlines (see `members.rs`). Empty,
    /// and free, while nobody uses member expiry.
    pub(super) member_deadlines: BTreeMap<(u64, u64), u32>,
    /// A point-in-time capture has not taken this shard yet (see `capture.rs`):
    /// whoever locks it next hands it over first.
    pub(super) capture_pending: bool,
    /// Tombstones of removed keys, while this node replicates actively (see
    /// `graves.rs`); `None` otherwise.
    pub(super) graves: Option<Box<Graves>>,
    /// Counted keys' states, while this node replicates actively (see
    /// `counters.rs`); `None` otherwise. Boxed: 8 bytes in each of the many shards
    /// instead of a map's 48, for the nodes (most) that never count.
    #[allow(clippy::box_collection)]
    counters: Option<Box<HashMap<Box<[u8]>, Counted>>>,
    /// Keys whose TTL changed since their value was written, while this node
    /// replicates actively (see `ttl.rs`); `None` otherwise.
    ttl_marks: Option<Box<TtlMarks>>,
    /// The XOR of the entries' digest parts, while this node replicates actively
    /// (see `digest.rs`); `None` otherwise. Every change of an entry's key or
    /// timestamp goes through a method here that keeps it (see
    /// [`ShardData::restamp`]).
    pub(super) digest: Option<u64>,
    /// Element timestamps of collections written element by element while this node
    /// replicates actively (see `elements.rs`); `None` otherwise.
    #[allow(clippy::box_collection)]
    elements: Option<Box<HashMap<Box<[u8]>, Elements>>>,
}

/// Add or take out (XOR) an entry's part of a shard's digest, if it keeps one.
pub(super) fn flip(digest: &mut Option<u64>, key: &[u8], ts: u64) {
    if let Some(sum) = digest {
        *sum ^= super::digest::part(key, ts);
    }
}

impl ShardData {
    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Number of keys with a deadline.
    pub fn volatile_len(&self) -> usize {
        self.expires.values().map(|&n| n as usize).sum()
    }

    /// Bytes of bookkeeping (MEMORY STATS): the table's slots, used or not, and the
    /// expiry index.
    pub fn overhead(&self) -> (usize, usize) {
        let table = self.table.capacity() * super::entry::SLOT_BYTES;
        let deadlines = self.expires.len() * super::entry::EXPIRY_INDEX_BYTES;
        (table, deadlines)
    }

    pub fn find(&self, hash: u64, key: &[u8]) -> Option<&Entry> {
        self.table.find(hash, |e| e.key() == key).map(|b| &**b)
    }

    pub fn find_mut(&mut self, hash: u64, key: &[u8]) -> Option<&mut Entry> {
        self.table
            .find_mut(hash, |e| e.key() == key)
            .map(|b| &mut **b)
    }

    /// Make room for `additional` more entries at once (a load that knows how many
    /// keys are coming), so the table does not grow, and rehash, step by step.
    pub fn reserve(&mut self, additional: usize) {
        self.table.reserve(additional, |e| super::hash_key(e.key()));
    }

    /// Keep tombstones of removed keys and counters' states from now on (active
    /// replication), or stop.
    pub fn keep_graves(&mut self, keep: bool) {
        match (keep, self.graves.is_some()) {
            (true, false) => {
                self.graves = Some(Box::default());
                self.counters = Some(Box::default());
                self.ttl_marks = Some(Box::default());
                let sum = self
                    .iter()
                    .fold(0, |sum, e| sum ^ super::digest::part(e.key(), e.ts));
                self.digest = Some(sum);
                self.elements = Some(Box::default());
            }
            (false, true) => {
                self.graves = None;
                self.counters = None;
                self.ttl_marks = None;
                self.digest = None;
                self.elements = None;
            }
            _ => {}
        }
    }

    /// Whether counters' states are kept here (active replication).
    pub fn keeps_counters(&self) -> bool {
        self.counters.is_some()
    }

    /// Whether any key here has a counter's state.
    pub fn counts_any(&self) -> bool {
        self.counters.as_ref().is_some_and(|c| !c.is_empty())
    }

    /// The current state of counted key `key` (a whole string): `None` when it has
    /// none, or when a write of another kind came after its last increment (the
    /// key's timestamp is not the state's newest, or a copy of the key stamped as
    /// that increment replaced its value: a peer's repair). TTL changes since do
    /// not count: they leave the value, as increments leave the TTL register
    /// (see [`ShardData::value_written_at`]).
    pub fn counter(&self, hash: u64, key: &[u8]) -> Option<&Counter> {
        let entry = self.find(hash, key)?;
        let counter = self.counters.as_ref()?.get(key)?.whole.as_ref()?;
        let newest = counter.newest_ts();
        let only_ttl_changes_since = || {
            self.ttl_since_of(entry)
                .is_some_and(|since| since.value <= newest && newest <= entry.ts)
        };
        let current = newest == entry.ts || only_ttl_changes_since();
        (current && counters::holds_whole(&entry.value, &counter.value())).then_some(counter)
    }

    /// When whole key `key`'s value was last written: its TTL register's value
    /// write while the register is current (TTL changes and a counter's
    /// increments since leave the value it counts on), else its count's base
    /// while it has a current one, else its newest timestamp. A count on the
    /// key starts there (a peer's increment newer than it counts, whatever TTL
    /// change came between), and a TTL change's register is on it.
    pub fn value_written_at(&self, hash: u64, key: &[u8]) -> u64 {
        if let Some(since) = self.ttl_since(hash, key) {
            return since.value;
        }
        match self.counter(hash, key) {
            Some(counter) => counter.base_ts,
            None => self.newest_ts(hash, key),
        }
    }

    /// Where counting starts for `key` (`member` of it) without a current
    /// state: an element's own last write where its collection keeps element
    /// timestamps (after a removal, just past the add it saw: see
    /// [`super::Mark::counts_from`]), else the key's last write (a whole key's
    /// value write: a TTL change since is no reset).
    pub fn uncounted_start(&self, hash: u64, key: &[u8], member: Option<&[u8]>) -> Start {
        let element_start = member.and_then(|m| Some(self.elements(hash, key)?.counts_from(m)));
        element_start.unwrap_or_else(|| match member {
            Some(_) => Start::write(self.newest_ts(hash, key)),
            None => Start::write(self.value_written_at(hash, key)),
        })
    }

    /// Forget the counting of whole key `key`: its next increment counts from
    /// what it holds then.
    pub fn forget_counter(&mut self, key: &[u8]) {
        if let Some(counters) = &mut self.counters {
            if let Some(counted) = counters.get_mut(key) {
                counted.whole = None;
                if counted.is_empty() {
                    counters.remove(key);
                }
            }
        }
    }

    /// Forget the counting of element `member` of `key`: its next increment
    /// counts from what it holds then.
    pub fn forget_member_counter(&mut self, key: &[u8], member: &[u8]) {
        if let Some(counted) = self.counters.as_mut().and_then(|c| c.get_mut(key)) {
            counted.forget_member(member);
        }
    }

    /// How many counted states are kept here (of whole keys and elements).
    pub fn counters_held(&self) -> usize {
        self.counters
            .as_ref()
            .map_or(0, |all| all.values().map(Counted::len).sum())
    }

    /// Stop remembering one by one the increments older than `before` (no peer
    /// can send a reset older than that any more; see [`Counter::fold`]; 0:
    /// none), and drop the whole keys' states that no longer say anything
    /// (see [`ShardData::says_nothing`]). Returns how many keys' states still
    /// remember increments.
    pub fn fold_counters(&mut self, before: u64) -> usize {
        let silent: Vec<Box<[u8]>> = match &self.counters {
            Some(all) => all
                .iter()
                .filter(|(key, counted)| {
                    counted
                        .whole
                        .as_ref()
                        .is_some_and(|state| self.says_nothing(key, state, before))
                })
                .map(|(key, _)| key.clone())
                .collect(),
            None => return 0,
        };
        let Some(all) = &mut self.counters else {
            return 0;
        };
        for key in silent {
            if let Some(counted) = all.get_mut(&key) {
                counted.whole = None;
            }
        }
        let mut remembering = 0;
        all.retain(|_, counted| {
            let remembers = counted
                .states_mut()
                .fold(false, |any, c| c.fold(before) | any);
            remembering += usize::from(remembers);
            !counted.is_empty()
        });
        super::release_sparse(all);
        remembering
    }

    /// Does `state`, kept for whole key `key`, say nothing the key does not? Its
    /// every increment is older than `before` (checked first: no lookup for the
    /// many counted a moment ago, which wait for a later pass), and either a
    /// later write of another kind left it behind (a SET over a counter: no
    /// read takes a state that is not current, and none becomes current again,
    /// the key's timestamp only moving on), or it is settled: every peer holds
    /// every increment and will send none older, and no TTL register names an
    /// older value write. Every
    /// node then holds the value it gives, stamped as its last increment, and a
    /// key counted again from there (its last write, see
    /// [`ShardData::value_written_at`]) counts as on a node that met a reset to
    /// that value then: a peer's later increment counts on it, and a full sync
    /// merges it with a peer's state as the newer base, under which nothing
    /// older is left to count. A state whose increments wait on a value that
    /// holds no number keeps them (see [`Counter::waits`]).
    fn says_nothing(&self, key: &[u8], state: &Counter, before: u64) -> bool {
        if state.newest_ts() >= before {
            return false;
        }
        let hash = super::hash_key(key);
        // The current state, when there is one, is the one kept.
        match self.counter(hash, key) {
            None => true,
            Some(current) => !current.waits() && self.ttl_since(hash, key).is_none(),
        }
    }

    /// The current state of counted element `member` of `key`: `None` when it has
    /// none, or when the element no longer holds the state's value, or (where its
    /// collection keeps element timestamps) the state does not hold the element's
    /// last write: a write of another kind came after its last increment (an HSET
    /// of the same value included), or an increment it never counted. A state
    /// left behind that way could pass for current whenever the element comes to
    /// hold its value again, and merge into a full sync's counting.
    pub fn member_counter(&self, hash: u64, key: &[u8], member: &[u8]) -> Option<&Counter> {
        let entry = self.find(hash, key)?;
        let last_write = self
            .elements(hash, key)
            .and_then(|state| state.marks.get(member))
            .map_or(0, |mark| mark.ts);
        self.counters
            .as_ref()?
            .get(key)?
            .member(member)
            .filter(|c| counters::holds(&entry.value, member, &c.value()))
            .filter(|c| c.newest_ts() >= last_write)
    }

    /// The current state of `key` (`member` of it, when given).
    pub fn counter_of(&self, hash: u64, key: &[u8], member: Option<&[u8]>) -> Option<&Counter> {
        match member {
            None => self.counter(hash, key),
            Some(member) => self.member_counter(hash, key, member),
        }
    }

    /// The current states of `key`'s elements, for a snapshot sent to a peer.
    pub fn member_counters(&self, hash: u64, key: &[u8]) -> Vec<(&[u8], &Counter)> {
        let Some(counted) = self.counters.as_ref().and_then(|c| c.get(key)) else {
            return Vec::new();
        };
        counted
            .members()
            .filter_map(|(m, _)| Some((m, self.member_counter(hash, key, m)?)))
            .collect()
    }

    /// Record `counter` as the state of `key` (`member` of it, when given).
    pub fn set_counter(&mut self, key: &[u8], member: Option<&[u8]>, counter: Counter) {
        let Some(counters) = &mut self.counters else {
            return;
        };
        let counted = counters.entry(key.into()).or_default();
        match member {
            None => counted.whole = Some(counter),
            Some(member) => counted.set_member(member, counter),
        }
    }

    /// Merge a peer's state of counted `key` (`member` of it) into ours, which is
    /// current (or, for a whole key, the value the peer counts on, which ours
    /// holds uncounted: see [`counters::uncounted`]): the entry takes the
    /// merged value. Returns false (nothing done) when ours is neither.
    pub fn merge_counter(
        &mut self,
        hash: u64,
        key: &[u8],
        member: Option<&[u8]>,
        theirs: &Counter,
    ) -> bool {
        let uncounted = |shard: &ShardData| {
            let entry = shard.find(hash, key).filter(|_| member.is_none())?;
            counters::uncounted(&entry.value, shard.value_written_at(hash, key), theirs)
        };
        let ours = self.counter_of(hash, key, member).cloned();
        let Some(mut ours) = ours.or_else(|| uncounted(self)) else {
            return false;
        };
        let mut changed = false;
        if member.is_none() && copies_of_one_base(&ours, theirs) && !writes_base(&ours) {
            // Our copy of the write the counting starts from is not the writer's:
            // the writer's is the write as it was made.
            ours.base = theirs.base.clone();
            changed = true;
        }
        if ours.merge(theirs, member.is_some()) || changed {
            self.put_counter(hash, key, member, ours);
        }
        true
    }

    /// Would merging a peer's state `theirs` of whole key `key` leave the peer
    /// holding a value ours does not: both count on the same write (one
    /// timestamp) holding other values, and the write is this node's? A write that
    /// reads the value it changes (APPEND) applied by the peer on a value of its
    /// own: only the writer holds it as made, so the peer must be sent ours whole.
    pub fn holds_the_written_base(&self, hash: u64, key: &[u8], theirs: &Counter) -> bool {
        self.counter(hash, key)
            .is_some_and(|ours| copies_of_one_base(ours, theirs) && writes_base(ours))
    }

    /// Record `counter` as the state of `key` (`member` of it), the entry taking its
    /// value (a whole key, its newest timestamp too).
    pub fn put_counter(&mut self, hash: u64, key: &[u8], member: Option<&[u8]>, counter: Counter) {
        self.show_counted(hash, key, member, &counter.value(), counter.newest_ts());
        self.set_counter(key, member, counter);
    }

    /// Add `node`'s increment `by` stamped `ts` to the state of `key` (`member` of
    /// it) where it is kept, which [`ShardData::counter_of`] found current before
    /// the counting command wrote; the entry takes the value it gives, which is
    /// returned.
    pub fn count_on_current(
        &mut self,
        hash: u64,
        key: &[u8],
        member: Option<&[u8]>,
        (node, by, ts): (NodeId, &Num, u64),
    ) -> Num {
        let counted = self.counters.as_mut().and_then(|c| c.get_mut(key));
        let state = counted.and_then(|counted| match member {
            None => counted.whole.as_mut(),
            Some(member) => counted.member_mut(member),
        });
        let Some(state) = state else {
            return by.clone();
        };
        state.add(node, by, ts);
        let (value, newest) = (state.value(), state.newest_ts());
        self.show_counted(hash, key, member, &value, newest);
        value
    }

    /// The entry of counted `key` (`member` of it) takes `value`, and a whole key
    /// the state's newest timestamp when it is newer than the key's.
    fn show_counted(
        &mut self,
        hash: u64,
        key: &[u8],
        member: Option<&[u8]>,
        value: &Num,
        newest: u64,
    ) {
        if let Some(entry) = self.find_mut(hash, key) {
            counters::materialize(&mut entry.value, member, value);
            if member.is_none() && newest > entry.ts {
                self.restamp(hash, key, newest);
            }
        }
    }

    pub fn graves(&self) -> Option<&Graves> {
        self.graves.as_deref()
    }

    pub fn graves_mut(&mut self) -> Option<&mut Graves> {
        self.graves.as_deref_mut()
    }

    /// The newest timestamp `key` has seen: its last write, or its removal.
    pub fn newest_ts(&self, hash: u64, key: &[u8]) -> u64 {
        match self.find(hash, key) {
            Some(entry) => entry.ts,
            None => self.graves.as_ref().map_or(0, |g| g.ts_of(key)),
        }
    }

    /// `key` was removed at `ts`: leave its grave, when graves are kept (and forget
    /// its counting; its element timestamps and TTL register go stale unless the
    /// removal was an element write, which carries them on).
    pub fn bury(&mut self, key: &[u8], ts: u64) {
        if let Some(graves) = &mut self.graves {
            graves.bury(key, ts);
        }
        if let Some(counters) = &mut self.counters {
            counters.remove(key);
        }
    }

    /// The TTL register of `key` (see `ttl.rs`), under its grave too when element
    /// writes emptied it: `None` when its last write was neither a TTL change nor
    /// an element write, or no marks are kept.
    pub fn ttl_since(&self, hash: u64, key: &[u8]) -> Option<Since> {
        self.ttl_marks
            .as_deref()?
            .since(key, self.newest_ts(hash, key))
    }

    /// [`ShardData::ttl_since`] of an entry of this shard.
    pub fn ttl_since_of(&self, entry: &Entry) -> Option<Since> {
        self.ttl_marks.as_deref()?.since(entry.key(), entry.ts)
    }

    /// [`ShardData::ttl_changes`] of an entry of this shard.
    pub fn ttl_changes_of(&self, entry: &Entry) -> ttl::Changes {
        self.ttl_marks
            .as_deref()
            .map(|marks| marks.changes(entry.key(), entry.ts))
            .unwrap_or_default()
    }

    /// The TTL changes `key`'s register merged (see [`ttl::Changes`]).
    pub fn ttl_changes(&self, hash: u64, key: &[u8]) -> ttl::Changes {
        self.ttl_marks
            .as_deref()
            .map(|marks| marks.changes(key, self.newest_ts(hash, key)))
            .unwrap_or_default()
    }

    /// The value write `key`'s TTL changed since, if it did (see `ttl.rs`).
    pub fn ttl_changed_since(&self, hash: u64, key: &[u8]) -> Option<u64> {
        self.ttl_since(hash, key)
            .filter(|s| s.ttl_changed)
            .map(|s| s.value)
    }

    /// What our copy of `key` says about its TTL register: a live key's, or the
    /// register element writes that emptied it left under its grave.
    pub fn key_ttl(&self, hash: u64, key: &[u8]) -> Option<KeyTtl> {
        if let Some(entry) = self.find(hash, key) {
            return Some(KeyTtl {
                ts: entry.ts,
                since: self.ttl_since_of(entry),
                expire_at: entry.expire_at,
            });
        }
        let ts = self.newest_ts(hash, key);
        let marks = self.ttl_marks.as_deref()?;
        Some(KeyTtl {
            ts,
            since: Some(marks.since(key, ts)?),
            expire_at: marks.deadline(key, ts)?,
        })
    }

    /// Live `key`'s TTL register is `since`, made by `changes`, as a copy of it
    /// said (a full sync's; a copy that names no changes is known by the key's
    /// timestamp `at` and its deadline); the key carries timestamp `at`.
    pub fn note_copied_ttl(&mut self, key: &[u8], since: Since, at: u64, changes: &ttl::Changes) {
        self.note_ttl(key, since, at, |_, deadline| {
            let copy = KeyTtl {
                ts: at,
                since: Some(since),
                expire_at: deadline,
            };
            copy.changes_known(changes)
        });
    }

    /// Live `key`, written at `before`, had its TTL changed to deadline `to` by a
    /// change made at `made_at` (a peer's keeps its own time): its register is
    /// now `since`, made by the changes it had plus this one; the key now
    /// carries timestamp `at`.
    pub fn note_ttl_change(
        &mut self,
        key: &[u8],
        since: Since,
        (before, at): (u64, u64),
        (made_at, to): (u64, u64),
    ) {
        self.note_ttl(key, since, at, |marks, _| {
            let mut changes = marks.changes(key, before);
            ttl::add_change(&mut changes, made_at, to);
            changes
        });
    }

    /// Live `key`'s TTL register is `since`, made by the changes `changes` gives
    /// (from the registers as they are, and the key's deadline); the key carries
    /// timestamp `at`. Nothing, not even a lookup, where the node keeps no
    /// registers (it does not replicate actively).
    fn note_ttl(
        &mut self,
        key: &[u8],
        since: Since,
        at: u64,
        changes: impl FnOnce(&TtlMarks, u64) -> ttl::Changes,
    ) {
        let Some(marks) = self.ttl_marks.as_deref() else {
            return;
        };
        let deadline = self
            .find(super::hash_key(key), key)
            .map_or(0, |e| e.expire_at);
        let changes = changes(marks, deadline);
        if let Some(marks) = &mut self.ttl_marks {
            marks.note(key, since, at, deadline, changes);
        }
    }

    /// An element write took `key` from timestamp `before` to its timestamp now
    /// (its grave's, when it emptied it): its TTL register goes on (see `ttl.rs`),
    /// and a collection it wrote again takes the deadline the register kept.
    pub fn follow_ttl(&mut self, hash: u64, key: &[u8], before: u64) {
        let now = self.newest_ts(hash, key);
        let deadline = self.find(hash, key).map(|e| e.expire_at);
        let Some(marks) = &mut self.ttl_marks else {
            return;
        };
        let kept = marks.follow(key, before, now, deadline);
        if deadline.is_some_and(|d| d != kept) {
            self.set_expire(hash, key, kept);
        }
    }

    /// A peer's removal of whole `key` at `ts` (DEL, UNLINK) reached it older
    /// than its last write here, which element writes made: its TTL register
    /// starts over from the removal (see [`TtlMarks::restart_at_removal`]), and
    /// the key takes the deadline that leaves it.
    pub fn restart_ttl_at_removal(&mut self, hash: u64, key: &[u8], ts: u64) {
        let key_ts = self.newest_ts(hash, key);
        let Some(marks) = &mut self.ttl_marks else {
            return;
        };
        let Some(deadline) = marks.restart_at_removal(key, key_ts, ts) else {
            return;
        };
        if self
            .find(hash, key)
            .is_some_and(|e| e.expire_at != deadline)
        {
            self.set_expire(hash, key, deadline);
        }
    }

    /// A peer's removal of whole `key` at `ts` (DEL, UNLINK) reached it removed
    /// here before (by a DEL, or by element writes that emptied it): the grave
    /// takes the newer removal, and the TTL register under it starts over from
    /// it (the TTL changes older than it go with it, the newer stay), or a TTL
    /// change older than the removal would still give the collection written
    /// again its deadline here.
    pub fn bury_again(&mut self, hash: u64, key: &[u8], ts: u64) {
        let grave = self.newest_ts(hash, key);
        if self.find(hash, key).is_some() || grave == 0 || grave >= ts {
            return;
        }
        self.bury(key, ts);
        let Some(marks) = self.ttl_marks.as_deref_mut() else {
            return;
        };
        // A grave without a register (none kept, or collected) gets one started
        // at the removal: a copy of the key that a full sync merges later must
        // meet our removal as a value write, whatever the grave holds.
        if marks.restart_under_grave(key, grave, ts).is_none() {
            marks.note(key, Since::value_only(ts), ts, 0, ttl::Changes::new());
        }
    }

    /// `key`, written last at `before`, was removed whole since (a DEL, the
    /// source of a RENAME): the TTL changes its register held that are newer
    /// than the removal stay under the grave, for a collection written again
    /// element by element, as on a node where the removal came first and they
    /// merged under its grave. (A peer's TTL change that reached the collection
    /// here before the removal does not restamp the key when it came under an
    /// older grave, so the removal can be newer than the key yet older than it.)
    pub fn keep_newer_ttl_changes_under_grave(&mut self, hash: u64, key: &[u8], before: u64) {
        let grave = self.newest_ts(hash, key);
        if self.find(hash, key).is_some() || grave <= before {
            return;
        }
        let Some(marks) = self.ttl_marks.as_deref_mut() else {
            return;
        };
        // Without a TTL change newer than the removal, the grave holds no
        // register, as a DEL's does not.
        let kept = marks.restart_under_grave(key, before, grave);
        if kept.is_some_and(|since| !since.ttl_changed) {
            marks.forget(key);
        }
    }

    /// A peer's TTL change made at `ts` to deadline `to` reached `key`, removed
    /// here before it: the register under its grave merges it (see
    /// [`TtlMarks::change_under_grave`]).
    pub fn change_ttl_under_grave(&mut self, hash: u64, key: &[u8], ts: u64, to: u64) {
        if self.find(hash, key).is_some() {
            return;
        }
        let grave_ts = self.newest_ts(hash, key);
        if grave_ts == 0 {
            return;
        }
        if let Some(marks) = &mut self.ttl_marks {
            marks.change_under_grave(key, grave_ts, ts, to);
        }
    }

    pub fn forget_ttl(&mut self, key: &[u8]) {
        if let Some(marks) = &mut self.ttl_marks {
            marks.forget(key);
        }
    }

    /// A peer's full sync holds `key` with `theirs`: when both copies hold the
    /// same value write and a TTL changed since on either side, the TTL registers
    /// merge into ours (true); otherwise the newer copy wins whole (false).
    pub fn merge_ttl(&mut self, hash: u64, key: &[u8], theirs: KeyTtl) -> bool {
        let Some(ours) = self.key_ttl(hash, key) else {
            return false;
        };
        let Some((expire_at, ts, since)) = ttl::merge(ours, theirs) else {
            return false;
        };
        self.set_expire(hash, key, expire_at);
        self.restamp(hash, key, ts);
        self.note_copied_ttl(key, since, ts, &ttl::Changes::new());
        true
    }

    /// A peer's full sync held `key` with `theirs`, and its elements merged into
    /// ours, whose register was `ours` before (each with the TTL changes that
    /// made it): the registers join (see
    /// [`ttl::join`]), on the merged key's timestamp, or under its grave when
    /// the merged collection is empty.
    pub fn join_ttl(
        &mut self,
        hash: u64,
        key: &[u8],
        ours: (KeyTtl, &ttl::Changes),
        theirs: (KeyTtl, &ttl::Changes),
    ) {
        let (expire_at, since, changes) = ttl::join(ours, theirs);
        let ts = self.newest_ts(hash, key);
        self.set_expire(hash, key, expire_at);
        if let Some(marks) = &mut self.ttl_marks {
            marks.note(key, since, ts, expire_at, changes);
        }
    }

    /// Whether any collection here has element timestamps.
    pub fn marks_any(&self) -> bool {
        self.elements.as_ref().is_some_and(|all| !all.is_empty())
    }

    /// The current element timestamps of `key`: `None` when it has none, or when a
    /// write that was not element by element came after its last element write. A
    /// collection emptied by an element write keeps them, under its grave: the
    /// removal of its last elements says nothing of the others a peer added meanwhile.
    pub fn elements(&self, hash: u64, key: &[u8]) -> Option<&Elements> {
        self.elements_as_of(key, self.newest_ts(hash, key))
    }

    /// The element timestamps kept for `key`, current or not (DEBUG ELEMENTS).
    pub fn kept_elements(&self, key: &[u8]) -> Option<&Elements> {
        self.elements.as_ref()?.get(key)
    }

    /// The element timestamps of `key` if its last element write was the key's
    /// write at `ts`.
    pub fn elements_as_of(&self, key: &[u8], ts: u64) -> Option<&Elements> {
        self.elements
            .as_ref()?
            .get(key)
            .filter(|state| state.newest == ts)
    }

    /// The element timestamps of `key` to mark a write in: the current ones if the
    /// key's newest timestamp before the write was `before`, else a new state whose
    /// unmarked elements count as written at `before`. `None` while this node keeps
    /// none (it does not replicate actively).
    pub fn elements_to_mark(&mut self, key: &[u8], before: u64) -> Option<&mut Elements> {
        let all = self.elements.as_mut()?;
        let state = all
            .entry(key.into())
            .or_insert_with(|| Elements::new(before));
        if state.newest != before {
            *state = Elements::new(before);
        }
        Some(state)
    }

    /// Merge a peer's collection `theirs` with its element timestamps into ours,
    /// element by element, when ours has current ones and is of the same type
    /// (returns false, nothing done, otherwise). A merge that removes every element
    /// removes the key, leaving its grave with the merged element timestamps. An
    /// element we counted on that a removal of theirs did not see all of keeps
    /// only the increments the removal did not see, as live (see
    /// [`ShardData::counts_past_removals`]).
    pub fn merge_elements(
        &mut self,
        hash: u64,
        key: &[u8],
        theirs: &Value,
        their_state: &Elements,
        limits: &super::elements::MergeLimits,
    ) -> bool {
        let Some(ours) = self.elements(hash, key).cloned() else {
            return false;
        };
        let past_removals = self.counts_past_removals(hash, key, theirs, their_state);
        let Some(entry) = self.find_mut(hash, key) else {
            return false;
        };
        let Some(merged) =
            super::elements::merge(&mut entry.value, &ours, theirs, their_state, limits)
        else {
            return false;
        };
        let (before, ts, emptied) = (
            entry.ts,
            entry.ts.max(merged.newest),
            super::elements::is_empty(&entry.value),
        );
        self.restamp(hash, key, ts);
        self.follow_ttl(hash, key, before);
        if emptied {
            if let Some(entry) = self.remove(hash, key) {
                entry.free(false);
            }
            self.bury(key, ts);
        }
        // An emptied collection keeps its merged marks under its grave (the
        // removals took only what they saw): the marks from before the merge
        // would still call current the elements it removed.
        self.set_elements(key, merged);
        for (member, counter) in past_removals {
            self.put_member_counter_if_held(hash, key, &member, counter);
        }
        true
    }

    /// Our current states of the elements of `key` that a peer's removal did not
    /// see all the increments of (their collection `theirs` lacks the element:
    /// removed as its mark in `their_state` says, or with the whole collection at
    /// its base), each as it is after that removal: the increments it did not
    /// see, counted on nothing (see [`Counter::after_removal_that_saw`]). An
    /// element whose state cannot tell is left out (a removal marked on the
    /// element is then written again to the peer: see
    /// [`super::elements::counted_over`]).
    pub fn counts_past_removals(
        &self,
        hash: u64,
        key: &[u8],
        theirs: &Value,
        their_state: &Elements,
    ) -> Vec<(Box<[u8]>, Counter)> {
        self.member_counters(hash, key)
            .into_iter()
            .filter_map(|(member, counter)| {
                let held = super::elements::holds(theirs, member);
                let removal = Some(their_state.mark_of(member, held)).filter(|m| !m.is_alive())?;
                let after = counter.after_removal_that_saw(removal.seen)?;
                Some((member.into(), after))
            })
            .collect()
    }

    /// Record `counter` as the state of element `member` of `key`, which takes
    /// its value, when the collection holds the element.
    pub fn put_member_counter_if_held(
        &mut self,
        hash: u64,
        key: &[u8],
        member: &[u8],
        counter: Counter,
    ) {
        let held = self
            .find(hash, key)
            .is_some_and(|e| super::elements::holds(&e.value, member));
        if held {
            self.put_counter(hash, key, Some(member), counter);
        }
    }

    /// A peer's removal of the whole collection `key` at `ts` (a DEL, no element
    /// timestamps with it), older than ours whose element timestamps are current:
    /// it saw every add no newer than itself, so the elements older than it go
    /// (all of them: the key goes, under its grave) and the others stay, as when
    /// the removal arrives live; a collection element writes emptied here joins
    /// it. False, nothing done, when ours is not such a collection, or not newer.
    pub fn merge_older_removal(
        &mut self,
        hash: u64,
        key: &[u8],
        ts: u64,
        limits: &super::elements::MergeLimits,
    ) -> bool {
        if self.find(hash, key).is_none() && self.elements(hash, key).is_some() {
            // Emptied here by element writes: the removal joins their state.
            self.join_whole_removal(hash, key, ts);
            return true;
        }
        let newer = self.find(hash, key).filter(|entry| entry.ts > ts);
        let Some(emptied) = newer.and_then(|entry| super::elements::empty_like(&entry.value))
        else {
            return false;
        };
        self.merge_elements(hash, key, &emptied, &Elements::new(ts), limits)
    }

    /// Merge a peer's collection (`entry`, its element timestamps `their_state`)
    /// with ours that element writes emptied here (the key is under its grave,
    /// its element timestamps current) or that a DEL older than theirs removed:
    /// the merged elements go in as the key, or stay removed under the grave if
    /// none is left. Gives the entry back, nothing done, when the key is here, or
    /// removed without element timestamps after theirs (or never).
    pub fn merge_into_emptied(
        &mut self,
        hash: u64,
        mut entry: EntryBox,
        their_state: &Elements,
        limits: &super::elements::MergeLimits,
    ) -> Result<(), EntryBox> {
        if self.find(hash, entry.key()).is_some() {
            return Err(entry);
        }
        let ours = match self.elements(hash, entry.key()) {
            Some(state) => state.clone(),
            // Removed whole here (a DEL), before their collection's last write:
            // the removal saw every add no newer than itself, as when their
            // element writes arrive live.
            None => match self.removal_as_elements(hash, entry.key()) {
                Some(removal) if removal.newest < entry.ts => removal,
                _ => return Err(entry),
            },
        };
        let Some(emptied) = super::elements::empty_like(&entry.value) else {
            return Err(entry);
        };
        let Some(merged) =
            super::elements::merge(&mut entry.value, their_state, &emptied, &ours, limits)
        else {
            return Err(entry);
        };
        let key = entry.key().to_vec();
        if super::elements::is_empty(&entry.value) {
            entry.free(false);
            self.bury(&key, merged.newest);
        } else {
            entry.ts = merged.newest;
            self.insert(hash, entry);
        }
        self.set_elements(&key, merged);
        Ok(())
    }

    /// Merge the element timestamps of a collection a peer emptied element by
    /// element (`their_state`, under its grave) with ours of `key`: our elements its
    /// removals saw go (all of them: the key goes, under its grave), the others
    /// stay; where element writes emptied ours too, or a DEL removed it, the two
    /// join under the newer grave. False, nothing done, when our element
    /// timestamps of `key` are not current and it was not removed.
    pub fn merge_with_emptied(
        &mut self,
        hash: u64,
        key: &[u8],
        their_state: &Elements,
        limits: &super::elements::MergeLimits,
    ) -> bool {
        let ours = self.elements(hash, key).cloned();
        let Some(ours) = ours.or_else(|| self.removal_as_elements(hash, key)) else {
            return false;
        };
        if let Some(entry) = self.find(hash, key) {
            let Some(emptied) = super::elements::empty_like(&entry.value) else {
                return false;
            };
            return self.merge_elements(hash, key, &emptied, their_state, limits);
        }
        let nothing = || Value::Set(Box::default());
        let Some(merged) =
            super::elements::merge(&mut nothing(), &ours, &nothing(), their_state, limits)
        else {
            return false;
        };
        self.bury(key, merged.newest);
        self.set_elements(key, merged);
        true
    }

    /// A removal of the whole collection `key` at `ts` that saw every add no newer
    /// than itself, joined into its current element timestamps (see
    /// [`Elements::join_whole_removal`]); nothing when they are not current.
    /// A collection that element writes emptied, removed again after its grave,
    /// keeps its state under the newer grave, and the TTL register under it
    /// starts over from the removal (see [`ShardData::bury_again`]).
    pub fn join_whole_removal(&mut self, hash: u64, key: &[u8], ts: u64) {
        let newest = self.newest_ts(hash, key);
        let emptied = self.find(hash, key).is_none();
        let all = self.elements.as_mut();
        let Some(state) = all.and_then(|all| all.get_mut(key)) else {
            return;
        };
        if state.newest != newest {
            return;
        }
        state.join_whole_removal(ts);
        if emptied && ts > newest {
            state.newest = ts;
            self.bury_again(hash, key, ts);
        }
    }

    /// Absent `key` removed whole at its grave (a DEL: no element timestamps
    /// current), as element timestamps: every element removed then, having
    /// seen every add no newer. `None` when it is here or was never removed.
    pub fn removal_as_elements(&self, hash: u64, key: &[u8]) -> Option<Elements> {
        let removed = self.newest_ts(hash, key);
        (self.find(hash, key).is_none() && removed > 0).then(|| Elements::new(removed))
    }

    /// `key`'s TTL changed, its value did not: element timestamps current as of
    /// `before` (its timestamp until then) stay current under its new one.
    pub fn follow_elements(&mut self, hash: u64, key: &[u8], before: u64) {
        let now = self.newest_ts(hash, key);
        if let Some(state) = self.elements.as_mut().and_then(|all| all.get_mut(key)) {
            if state.newest == before {
                state.newest = now;
            }
        }
    }

    /// Drop the element timestamps of `key` (a write replaced what it holds).
    pub fn forget_elements(&mut self, key: &[u8]) {
        if let Some(all) = &mut self.elements {
            all.remove(key);
        }
    }

    /// Record `state` as the element timestamps of `key` (a merged full sync).
    pub fn set_elements(&mut self, key: &[u8], state: Elements) {
        if let Some(all) = &mut self.elements {
            all.insert(key.into(), state);
        }
    }

    /// Element timestamps kept here: (collections, marked elements).
    pub fn elements_held(&self) -> (usize, usize) {
        self.elements.as_ref().map_or((0, 0), |all| {
            (all.len(), all.values().map(|state| state.marks.len()).sum())
        })
    }

    /// Forget element timestamps older than `before` (no peer can send an older
    /// write any more; 0: none): a collection not written since goes back to
    /// costing nothing, the others lose their old tombstones. TTL registers that
    /// no longer say anything go too (see [`TtlMarks::collect`]). Returns how
    /// many registers a later pass may still drop.
    pub fn collect_elements(&mut self, before: u64) -> usize {
        let mut registers_left = 0;
        if let Some(marks) = &mut self.ttl_marks {
            let (table, graves) = (&self.table, self.graves.as_deref());
            registers_left = marks.collect(before, |key| {
                let hash = super::hash_key(key);
                match table.find(hash, |e| e.key() == key) {
                    Some(entry) => Some(entry.ts),
                    None => graves.map(|g| g.ts_of(key)).filter(|&ts| ts > 0),
                }
            });
        }
        if let Some(all) = &mut self.elements {
            all.retain(|_, state| state.newest >= before);
            super::release_sparse(all);
            for state in all.values_mut() {
                state
                    .marks
                    .retain(|_, mark| mark.is_alive() || mark.ts >= before);
            }
        }
        registers_left
    }

    /// Insert or replace; returns the entry that was replaced.
    pub fn insert(&mut self, hash: u64, entry: EntryBox) -> Option<EntryBox> {
        if let Some(graves) = &mut self.graves {
            graves.unbury(entry.key());
        }
        self.forget_ttl(entry.key());
        if entry.expire_at != 0 {
            index_add(&mut self.expires, entry.expire_at, hash);
        }
        super::members::note(&mut self.member_deadlines, hash, &entry.value);
        flip(&mut self.digest, entry.key(), entry.ts);
        match self.table.entry(
            hash,
            |e| e.key() == entry.key(),
            |e| super::hash_key(e.key()),
        ) {
            hashbrown::hash_table::Entry::Occupied(mut slot) => {
                let old = std::mem::replace(slot.get_mut(), entry);
                flip(&mut self.digest, old.key(), old.ts);
                if old.expire_at != 0 {
                    index_remove(&mut self.expires, old.expire_at, hash);
                }
                Some(old)
            }
            hashbrown::hash_table::Entry::Vacant(slot) => {
                slot.insert(entry);
                None
            }
        }
    }

    /// Store data under `key` in one probe: an existing entry is updated in place (no
    /// allocation), a missing one is created. `data` receives the MVCC timestamp the
    /// key held (0 if new), `access` the access field it held (`None` if new) and
    /// returns the one to keep. Returns the value that was replaced.
    pub fn upsert(
        &mut self,
        hash: u64,
        key: &[u8],
        access: impl FnOnce(Option<u32>) -> u32,
        data: impl FnOnce(u64) -> EntryData,
    ) -> Option<Value> {
        match self
            .table
            .entry(hash, |e| e.key() == key, |e| super::hash_key(e.key()))
        {
            hashbrown::hash_table::Entry::Occupied(mut slot) => {
                if let Some(marks) = &mut self.ttl_marks {
                    marks.forget(key);
                }
                let entry = slot.get_mut();
                let new = data(entry.ts);
                flip(&mut self.digest, key, entry.ts);
                flip(&mut self.digest, key, new.ts);
                if entry.expire_at != new.expire_at {
                    if entry.expire_at != 0 {
                        index_remove(&mut self.expires, entry.expire_at, hash);
                    }
                    if new.expire_at != 0 {
                        index_add(&mut self.expires, new.expire_at, hash);
                    }
                }
                entry.access = access(Some(entry.access));
                super::members::note(&mut self.member_deadlines, hash, &new.value);
                let old: &mut EntryData = entry;
                Some(std::mem::replace(old, new).value)
            }
            hashbrown::hash_table::Entry::Vacant(slot) => {
                // A key written again after its removal is stamped past its grave.
                let buried = self.graves.as_mut().map_or(0, |g| g.unbury(key));
                let new = data(buried);
                flip(&mut self.digest, key, new.ts);
                if new.expire_at != 0 {
                    index_add(&mut self.expires, new.expire_at, hash);
                }
                super::members::note(&mut self.member_deadlines, hash, &new.value);
                slot.insert(EntryBox::new(key, new, access(None)));
                None
            }
        }
    }

    pub fn remove(&mut self, hash: u64, key: &[u8]) -> Option<EntryBox> {
        let slot = self.table.find_entry(hash, |e| e.key() == key).ok()?;
        let (old, _) = slot.remove();
        flip(&mut self.digest, old.key(), old.ts);
        if old.expire_at != 0 {
            index_remove(&mut self.expires, old.expire_at, hash);
        }
        Some(old)
    }

    /// Give a live key the write timestamp `ts`: the one way an entry's timestamp
    /// changes in place, so the digest follows.
    pub fn restamp(&mut self, hash: u64, key: &[u8], ts: u64) {
        if let Some(entry) = self.table.find_mut(hash, |e| e.key() == key) {
            flip(&mut self.digest, key, entry.ts);
            flip(&mut self.digest, key, ts);
            entry.ts = ts;
        }
    }

    /// This shard's share of its database's digest (see `digest.rs`); `None`
    /// unless the node replicates actively.
    pub fn digest(&self) -> Option<u64> {
        debug_assert_eq!(
            self.digest,
            self.digest.map(|_| self
                .iter()
                .fold(0, |sum, e| sum ^ super::digest::part(e.key(), e.ts))),
            "a write changed an entry without keeping the digest"
        );
        self.digest
    }

    /// Change a key's deadline (0 = persist). Returns false if the key is absent.
    pub fn set_expire(&mut self, hash: u64, key: &[u8], at: u64) -> bool {
        let Some(entry) = self.table.find_mut(hash, |e| e.key() == key) else {
            return false;
        };
        let before = entry.expire_at;
        entry.expire_at = at;
        if before != 0 {
            index_remove(&mut self.expires, before, hash);
        }
        if at != 0 {
            index_add(&mut self.expires, at, hash);
        }
        true
    }

    /// Remove up to `limit` keys whose deadline is at or before `now`, handing each to
    /// `on_expired`, which returns the timestamp of the removal (for its grave).
    /// Returns how many were removed.
    pub fn expire_due(
        &mut self,
        now: u64,
        limit: usize,
        mut on_expired: impl FnMut(EntryBox) -> u64,
    ) -> usize {
        let mut removed = 0;
        while removed < limit {
            let Some((&(at, hash), _)) = self.expires.first_key_value() else {
                break;
            };
            if at > now {
                break;
            }
            // Every key with this hash and deadline is due; remove them all.
            while let Ok(slot) = self.table.find_entry(hash, |e| {
                e.expire_at == at && super::hash_key(e.key()) == hash
            }) {
                let (entry, _) = slot.remove();
                flip(&mut self.digest, entry.key(), entry.ts);
                index_remove(&mut self.expires, at, hash);
                let key: Option<Box<[u8]>> = self.graves.is_some().then(|| entry.key().into());
                let ts = on_expired(entry);
                if let Some(key) = key {
                    self.bury(&key, ts);
                }
                removed += 1;
            }
            // A stale index pair (should not happen) must not stall the cycle.
            self.expires.remove(&(at, hash));
        }
        removed
    }

    /// Earliest deadline in this shard.
    pub fn next_deadline(&self) -> Option<u64> {
        self.expires.first_key_value().map(|(&(at, _), _)| at)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.table.iter().map(|b| &**b)
    }

    /// Drop every entry, returning them so a caller can free a large set elsewhere;
    /// `ts` is the flush's timestamp, below which every key stays dead.
    pub fn take_all(&mut self, ts: u64) -> HashTable<EntryBox> {
        if let Some(graves) = &mut self.graves {
            graves.bury_all(ts);
        }
        self.expires.clear();
        self.member_deadlines.clear();
        if let Some(sum) = &mut self.digest {
            *sum = 0;
        }
        std::mem::take(&mut self.table)
    }

    /// A peer's flush at `ts`: drop the entries written before it, keep the newer
    /// ones (written here concurrently, they win), and bury the rest up to `ts`.
    pub fn take_older_than(&mut self, ts: u64) -> Vec<EntryBox> {
        let mut taken = Vec::new();
        let older: Vec<(u64, Box<[u8]>)> = self
            .table
            .iter()
            .filter(|e| e.ts < ts)
            .map(|e| (super::hash_key(e.key()), e.key().into()))
            .collect();
        for (hash, key) in older {
            if let Some(entry) = self.remove(hash, &key) {
                taken.push(entry);
            }
        }
        if let Some(graves) = &mut self.graves {
            graves.bury_all(ts);
        }
        taken
    }

    /// Exchange the contents of two shards (SWAPDB).
    pub fn swap(&mut self, other: &mut ShardData) {
        std::mem::swap(self, other);
    }

    /// Up to `n` entries for eviction to weigh: a run in table order from position
    /// `from` (taken modulo the count, wrapping), of all entries or, when `volatile`,
    /// of those with a deadline.
    pub fn sample(&self, volatile: bool, from: usize, n: usize, mut visit: impl FnMut(&Entry)) {
        if volatile {
            let count = self.expires.len();
            if count == 0 {
                return;
            }
            let run = self.expires.keys().cycle().skip(from % count);
            for &(at, hash) in run.take(n.min(count)) {
                if let Some(entry) = self.with_deadline(at, hash) {
                    visit(entry);
                }
            }
        } else {
            let count = self.table.len();
            if count == 0 {
                return;
            }
            let run = self.table.iter().cycle().skip(from % count);
            run.take(n.min(count)).for_each(|b| visit(b));
        }
    }

    /// The `n` entries with the nearest deadlines, nearest first.
    pub fn nearest_deadlines(&self, n: usize, mut visit: impl FnMut(&Entry)) {
        for &(at, hash) in self.expires.keys().take(n) {
            if let Some(entry) = self.with_deadline(at, hash) {
                visit(entry);
            }
        }
    }

    /// The entry an expiry index pair stands for.
    fn with_deadline(&self, at: u64, hash: u64) -> Option<&Entry> {
        self.table
            .find(hash, |e| {
                e.expire_at == at && super::hash_key(e.key()) == hash
            })
            .map(|b| &**b)
    }

    /// Offer every entry's allocations to `relocator` (active defragmentation), one
    /// key after another.
    pub fn relocate_entries(&mut self, relocator: &mut dyn crate::util::relocate::Relocator) {
        for entry in self.table.iter_mut() {
            entry.relocate(relocator);
            relocator.item_done();
        }
        self.relocate_table(relocator);
    }

    /// The table's own allocation (its slots outlive the keys deleted from it, and
    /// pin their pages): rebuilt at the same capacity when the relocator says it
    /// should move.
    fn relocate_table(&mut self, relocator: &mut dyn crate::util::relocate::Relocator) {
        let Some(slot) = self.table.iter().next() else {
            return;
        };
        if !relocator.claim_move(std::ptr::NonNull::from(slot).cast()) {
            return;
        }
        let capacity = self.table.capacity();
        let old = std::mem::replace(&mut self.table, HashTable::with_capacity(capacity));
        for entry in old {
            let hash = super::hash_key(entry.key());
            self.table
                .insert_unique(hash, entry, |e| super::hash_key(e.key()));
        }
    }

    /// The n-th entry in table order, for RANDOMKEY.
    pub fn nth(&self, n: usize) -> Option<&Entry> {
        self.table.iter().nth(n).map(|b| &**b)
    }
}

pub(super) fn index_add(index: &mut BTreeMap<(u64, u64), u32>, at: u64, hash: u64) {
    *index.entry((at, hash)).or_insert(0) += 1;
}

fn index_remove(index: &mut BTreeMap<(u64, u64), u32>, at: u64, hash: u64) {
    if let std::collections::btree_map::Entry::Occupied(mut e) = index.entry((at, hash)) {
        *e.get_mut() -= 1;
        if *e.get() == 0 {
            e.remove();
        }
    }
}

/// Do two states of a whole key count on copies of one write (one timestamp)
/// holding other values? Compared as the key holds them: one node reads the
/// base its INCRBY counts on as an integer, another the same value as the long
/// double its INCRBYFLOAT counts on.
fn copies_of_one_base(ours: &Counter, theirs: &Counter) -> bool {
    ours.base_ts == theirs.base_ts && ours.base.text() != theirs.base.text()
}

/// Is the write `counter` counts on this node's own?
fn writes_base(counter: &Counter) -> bool {
    crate::hlc::issued_here(counter.base_ts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::string::StrValue;

    fn entry(key: &[u8], expire_at: u64) -> EntryBox {
        let data = EntryData {
            value: Value::Str(StrValue::from_bytes(b"v")),
            expire_at,
            ts: 1,
        };
        EntryBox::new(key, data, 0)
    }

    /// A set of `members` stamped `ts`.
    fn set_entry(key: &[u8], members: &[&[u8]], ts: u64) -> EntryBox {
        let mut set = crate::types::set::Set::default();
        for member in members {
            set.insert(member, 512);
        }
        let data = EntryData {
            value: Value::Set(Box::new(set)),
            expire_at: 0,
            ts,
        };
        EntryBox::new(key, data, 0)
    }

    #[test]
    fn a_merge_that_empties_a_collection_keeps_the_merged_marks_under_its_grave() {
        use super::super::elements::{Elements, Mark, MergeLimits};
        // Ours holds {a}, added at 10; the peer's copy, emptied, removed a at 20
        // having seen that add. The key goes under a grave at 20 whose marks say
        // a is removed: a third copy still holding the add at 10 must not bring
        // it back.
        let mut shard = ShardData::default();
        shard.keep_graves(true);
        let (key, h) = (&b"s"[..], super::super::hash_key(b"s"));
        shard.insert(h, set_entry(key, &[b"a"], 10));
        let ours = shard.elements_to_mark(key, 5).expect("marks kept");
        ours.mark(b"a", Mark::added(10, false));
        let mut theirs = Elements::new(5);
        theirs.mark(b"a", Mark::removed(20, 10));
        let limits = MergeLimits::for_tests();
        let emptied = Value::Set(Box::default());
        assert!(shard.merge_elements(h, key, &emptied, &theirs, &limits));
        assert!(shard.find(h, key).is_none());
        assert_eq!(shard.newest_ts(h, key), 20);
        let state = shard
            .elements(h, key)
            .expect("marks current under the grave");
        assert_eq!(state.mark_of(b"a", false), Mark::removed(20, 10));
    }

    #[test]
    fn a_delete_joins_the_element_timestamps_a_full_sync_brings_for_its_key() {
        use super::super::elements::{Elements, Mark, MergeLimits};
        let limits = MergeLimits::for_tests();
        let mut shard = ShardData::default();
        shard.keep_graves(true);
        let (key, h) = (&b"s"[..], super::super::hash_key(b"s"));
        // Our DEL at 20 (no element timestamps); the peer emptied its copy
        // element by element at 25, its removal having seen a's add at 10.
        shard.bury(key, 20);
        let mut emptied = Elements::new(5);
        emptied.mark(b"a", Mark::removed(25, 10));
        assert!(shard.merge_with_emptied(h, key, &emptied, &limits));
        assert_eq!(shard.newest_ts(h, key), 25);
        // A third copy, written at 30, holds b added at 15: our DEL saw it.
        let entry = set_entry(key, &[b"b"], 30);
        let mut theirs = Elements::new(12);
        theirs.mark(b"b", Mark::added(15, false));
        theirs.mark(b"c", Mark::removed(30, 15));
        assert!(shard.merge_into_emptied(h, entry, &theirs, &limits).is_ok());
        assert!(shard.find(h, key).is_none());
        let state = shard
            .elements(h, key)
            .expect("marks current under the grave");
        assert!(!state.mark_of(b"b", false).is_alive());
    }

    #[test]
    fn copies_of_one_base_read_as_an_integer_and_as_a_float_hold_one_value() {
        use super::super::counters::Num;
        let as_integer = Counter::new(10, Num::Int(1));
        let as_float = Counter::new(10, Num::Float(b"1"[..].into()));
        assert!(!copies_of_one_base(&as_integer, &as_float));
        let appended_elsewhere = Counter::new(10, Num::Int(141));
        assert!(copies_of_one_base(&as_integer, &appended_elsewhere));
        assert!(!copies_of_one_base(
            &as_integer,
            &Counter::new(11, Num::Int(141))
        ));
    }

    #[test]
    fn expiry_index_follows_every_change() {
        let mut shard = ShardData::default();
        for i in 0..100u64 {
            let key = format!("k{i}");
            let h = super::super::hash_key(key.as_bytes());
            shard.insert(
                h,
                entry(key.as_bytes(), if i % 2 == 0 { 1000 + i } else { 0 }),
            );
        }
        assert_eq!(shard.volatile_len(), 50);
        let h0 = super::super::hash_key(b"k0");
        shard.set_expire(h0, b"k0", 0);
        assert_eq!(shard.volatile_len(), 49);
        let h2 = super::super::hash_key(b"k2");
        shard.remove(h2, b"k2");
        assert_eq!(shard.volatile_len(), 48);
        let h4 = super::super::hash_key(b"k4");
        shard.insert(h4, entry(b"k4", 0));
        assert_eq!(shard.volatile_len(), 47);
        let mut seen = Vec::new();
        let n = shard.expire_due(1050, usize::MAX, |e| {
            seen.push(e.expire_at);
            0
        });
        assert_eq!(n, seen.len());
        assert!(seen.iter().all(|&at| at <= 1050));
        assert_eq!(shard.next_deadline(), Some(1052));
        assert_eq!(shard.len(), 100 - 1 - n);
    }
}
