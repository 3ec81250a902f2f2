//! Loading an RDB file into the keyspace: at startup and for DEBUG RELOAD.
//!
//! Owns turning what the file reader finds into entries and libraries: expired keys
//! are dropped (kvik is always a master), duplicates refused, access data restored.
//! Must not touch the file format (the reader's) or the save bookkeeping.

use super::KeyDelay;
use crate::keyspace::{
    hash_key, AccessClock, Counter, EntryBox, EntryData, KeyTtl, Keyspace, Locked, ShardData, Since,
};
use crate::keyspace::{Elements, MergeLimits, TtlChanges};
use crate::loading::Loading;
use crate::persistence::rdb::file::{self, KeyMeta, LoadError, Visitor};
use crate::persistence::rdb::Limits;
use crate::scripting::functions::{compile_library, Collision, Library};
use crate::scripting::Scripting;
use crate::types::Value;
use crate::{log_notice, log_warning};
use std::path::Path;

/// What a load put in memory.
#[derive(Debug, Default, Clone, Copy)]
pub struct Loaded {
    pub keys: u64,
    /// Keys whose deadline had passed, left out.
    pub expired: u64,
    /// The replication history the file was saved at (`repl-id`, `repl-offset`),
    /// from which a restarted node can continue partially (PSYNC2).
    pub repl: Option<([u8; 40], u64)>,
}

/// Where loaded keys go.
pub enum LoadTarget<'l, 'a> {
    /// The shards the caller holds (every shard of every database): a start-up
    /// load, DEBUG RELOAD, a replica's full sync.
    Held(&'l mut Locked<'a>),
    /// Each key's shard, locked for that key alone: an active replica merging a
    /// peer's full sync must neither stop its clients nor its own snapshots (two
    /// peers syncing from each other at once would wait on each other for ever).
    KeyByKey(&'l Keyspace),
}

impl LoadTarget<'_, '_> {
    /// Let the threads waiting for the held shards have them for a moment (a key
    /// by key load holds none between keys).
    fn let_waiters_in(&mut self) {
        if let LoadTarget::Held(locked) = self {
            locked.let_waiters_in();
        }
    }

    fn keyspace(&self) -> &Keyspace {
        match self {
            LoadTarget::Held(locked) => locked.keyspace(),
            LoadTarget::KeyByKey(keyspace) => keyspace,
        }
    }

    /// Run `f` on shard `shard` of database `db`.
    fn with_shard<R>(&mut self, db: usize, shard: usize, f: impl FnOnce(&mut ShardData) -> R) -> R {
        match self {
            LoadTarget::Held(locked) => f(locked.shard_at(db, shard)),
            LoadTarget::KeyByKey(keyspace) => {
                let id = keyspace.global_id(db, shard);
                f(&mut keyspace.lock_for_use(id))
            }
        }
    }
}

/// Fills the keyspace from a file's contents.
struct IntoKeyspace<'l, 'a> {
    target: LoadTarget<'l, 'a>,
    scripting: &'l Scripting,
    clock: AccessClock,
    now_ms: u64,
    libraries: Vec<Library>,
    loaded: Loaded,
    /// A key already in memory is replaced (DEBUG RELOAD MERGE), not refused.
    merge: bool,
    /// Keys whose deadline passed are kept: a replica's master deletes them.
    keep_expired: bool,
    /// What the file wrote before the next key about it (active replication).
    next: Beside,
    /// What a merge that adds elements to a collection needs.
    merge_limits: MergeLimits,
    /// Told the `kvik-seen` field (active replication).
    on_seen: Option<OnSeen<'l>>,
    /// Told each key whose peer's copy lost to ours (active replication).
    on_kept: Option<OnKept<'l>>,
    /// Where progress goes, and the loaded bytes at which others were last served.
    loading: Option<(&'l Loading, u64)>,
    /// `key-load-delay`.
    key_delay: KeyDelay,
}

impl IntoKeyspace<'_, '_> {
    /// A key of a merged peer's snapshot lost to our copy (whole, or the counted
    /// `elements` of it): say so (its shard is no longer held).
    fn ours_kept(&self, db: usize, key: &[u8], theirs: Option<u64>, elements: &[Vec<u8>]) {
        if let Some(on_kept) = self.on_kept {
            on_kept(db, key, theirs.unwrap_or(0), elements);
        }
    }

    /// Every `loading-process-events-interval-bytes`, let the threads waiting for
    /// the shards have them for a moment (INFO keyspace shows the keys loaded so
    /// far, as Redis serves clients while it loads), and give up if SHUTDOWN came.
    fn serve_others(&mut self) -> Result<(), LoadError> {
        let Some((loading, mark)) = &mut self.loading else {
            return Ok(());
        };
        if !loading.serve_due(mark) {
            return Ok(());
        }
        if loading.stop_requested() {
            return Err(LoadError::Refused("Loading stopped by a shutdown".into()));
        }
        self.target.let_waiters_in();
        Ok(())
    }
}

/// What an active replica's snapshot writes before a key about it: its counted
/// states (the whole key's, `None`, or its elements'), its TTL register (the value
/// write its TTL was changed since, or element writes were made since), and its
/// element timestamps.
#[derive(Default)]
struct Beside {
    counters: Vec<(Option<Vec<u8>>, Counter)>,
    ttl_since: Option<Since>,
    /// The deadline a grave's TTL register keeps (a collection element writes
    /// emptied).
    grave_deadline: Option<u64>,
    /// The TTL changes that made that register.
    ttl_changes: TtlChanges,
    elements: Option<Elements>,
}

/// A key's TTL register as `kvik-ttl-since` writes it: the value write's
/// timestamp, then `unchanged` when only element writes came since, then under a
/// grave `deadline <ms>`, then `change <ts> <ms>` for each TTL change that made it.
fn parse_ttl_since(text: &str) -> Option<(Since, Option<u64>, TtlChanges)> {
    let mut words = text.split(' ');
    let value = words.next()?.parse().ok()?;
    let (mut ttl_changed, mut deadline, mut changes) = (true, None, TtlChanges::new());
    while let Some(word) = words.next() {
        match word {
            file::TTL_UNCHANGED => ttl_changed = false,
            file::TTL_DEADLINE => deadline = Some(words.next()?.parse().ok()?),
            file::TTL_CHANGE => {
                let ts = words.next()?.parse().ok()?;
                changes.push((ts, words.next()?.parse().ok()?));
            }
            _ => return None,
        }
    }
    Some((Since { value, ttl_changed }, deadline, changes))
}

/// What became of a file's key.
enum Merged {
    /// It went in, in place of this entry if one was there.
    Put(Option<EntryBox>),
    /// It merged into our copy, or holds what ours holds.
    Joined,
    /// Ours won whole and differs from it: the peer must be sent ours (its copy
    /// may hold its own write with one of ours applied on top, a value nobody
    /// else has, which no later write of ours would mend).
    OursKept,
    /// Their count went on over our write of the whole key, newer than the
    /// count's base (`u64`): their base lost to our write, which the peer must
    /// be sent (judged against that base, not against their key's newest
    /// write, an increment that counts on ours now).
    OursUnderTheirCount(u64),
    /// It merged into our copy, which kept these elements as we counted on them
    /// over the peer's plain writes of them: the peer must be sent them.
    CountedKept(Vec<Vec<u8>>),
}

/// Put a file's key into `s`, with what the file wrote before it. Loading a file,
/// the key goes in. Merging a peer's (`merge`): a collection both nodes wrote
/// element by element merges its elements, a whole key both counted merges its
/// per-node totals, a key both hold with the same value write merges its TTL
/// registers; otherwise the key goes in only where it is the newest write (last
/// writer wins, tombstones included), and then each element both nodes counted
/// merges its totals into whichever value was kept.
fn merge_key(
    s: &mut ShardData,
    hash: u64,
    mut entry: EntryBox,
    ts: Option<u64>,
    merge: bool,
    beside: Beside,
    limits: &MergeLimits,
) -> Merged {
    let key = entry.key().to_vec();
    let Beside {
        counters,
        ttl_since,
        ttl_changes,
        elements,
        ..
    } = beside;
    if !merge {
        let key_ts = entry.ts;
        let replaced = s.insert(hash, entry);
        if let Some(since) = ttl_since {
            s.note_copied_ttl(&key, since, key_ts, &ttl_changes);
        }
        for (member, counter) in counters {
            s.set_counter(&key, member.as_deref(), counter);
        }
        if let Some(state) = elements {
            s.set_elements(&key, state);
        }
        return Merged::Put(replaced);
    }
    let (whole, members): (Vec<_>, Vec<_>) = counters.into_iter().partition(|c| c.0.is_none());
    // Their TTL register, and ours before a merge restamps our key.
    let their_ttl = ts.map(|ts| KeyTtl {
        ts,
        since: ttl_since,
        expire_at: entry.expire_at,
    });
    let our_ttl = s.key_ttl(hash, &key);
    let our_changes = s.ttl_changes(hash, &key);
    // Our removal of the whole key (a grave without element timestamps): to
    // their TTL register it is a value write, when newer than theirs, as live.
    let our_removal = (s.find(hash, &key).is_none() && s.elements(hash, &key).is_none())
        .then(|| s.newest_ts(hash, &key))
        .filter(|&removed| removed > 0);
    if let Some(theirs) = &elements {
        // Our element states, taken before the merge restamps the key (a state is
        // current only while its newest write is the key's).
        let ours = our_member_counters(s, hash, &key, &members);
        // Our removals of the elements they counted (here, or under the grave of
        // a collection they emptied), taken before the merge joins the marks.
        let our_removals = our_removals_of(s, hash, &key, &members);
        let counted = match (s.find(hash, &key), s.elements(hash, &key)) {
            (Some(_), Some(state)) => crate::keyspace::counted_over(state, theirs, |m, seen| {
                s.member_counter(hash, &key, m)
                    .is_some_and(|c| c.after_removal_that_saw(seen).is_some())
            }),
            _ => Vec::new(),
        };
        // Merged element by element into our collection, or into the one
        // element writes emptied here (which holds no count of ours to send).
        let merged = match s.merge_elements(hash, &key, &entry.value, theirs, limits) {
            true => Ok(counted),
            false => s
                .merge_into_emptied(hash, entry, theirs, limits)
                .map(|()| Vec::new()),
        };
        match merged {
            Ok(counted) => {
                let ours_then = (our_ttl, &our_changes);
                join_ttls(s, hash, &key, ours_then, (their_ttl, &ttl_changes));
                restart_ttl_at(s, hash, &key, our_removal);
                // The elements both nodes counted add up on top of the merged value.
                put_member_counters(
                    s,
                    hash,
                    &key,
                    members,
                    ours,
                    MergedAs::Elements(&our_removals, theirs),
                );
                return match counted.is_empty() {
                    true => Merged::Joined,
                    false => Merged::CountedKept(counted),
                };
            }
            Err(back) => entry = back,
        }
    }
    // A removal of ours is a value write to the register (see `our_key_ttl`).
    let registers = Registers {
        ours: (our_ttl.or_else(|| our_key_ttl(s, hash, &key)), &our_changes),
        theirs: (their_ttl, &ttl_changes),
    };
    let their_count = match whole.first() {
        Some((_, theirs)) => Some(theirs.clone()),
        None => their_uncounted_copy(s, hash, &entry, their_ttl),
    };
    if let Some(theirs) = &their_count {
        let peer_holds_a_copy = s.holds_the_written_base(hash, &key, theirs);
        if s.merge_counter(hash, &key, None, theirs) {
            // Increments and TTL changes leave each other: the TTL registers
            // join as well (a newer base, a write of the whole value such as
            // SETEX, brings its deadline, as on the peer that counted on it).
            registers.settle(s, hash, &key);
            if peer_holds_a_copy {
                return Merged::OursKept;
            }
            return Merged::Joined;
        }
    }
    match reset_under_increments(s, hash, entry, ts, whole.first().map(|c| &c.1), &registers) {
        Ok(merged) => return merged,
        Err(back) => entry = back,
    }
    // The same value on both sides, its TTL changed on one or both: the TTL
    // registers merge. (Not a count they started from our removal, which a
    // register our grave keeps names as its value write too: their key, which
    // holds their increments since, goes in.)
    let counted_on_our_removal = !whole.is_empty() && s.find(hash, &key).is_none();
    if let Some(theirs) = their_ttl.filter(|_| !counted_on_our_removal) {
        match copies_of_one_value_write(s, hash, entry, theirs) {
            Ok(merged) => return merged,
            Err(back) => entry = back,
        }
        if s.merge_ttl(hash, &key, theirs) {
            return Merged::Joined;
        }
    }
    let older = ts.is_some_and(|ts| s.newest_ts(hash, &key) >= ts);
    let differs = older && s.find(hash, &key).is_none_or(|e| !same_copy(e, &entry));
    // Our current element states, taken before their key may be replaced.
    let ours = our_member_counters(s, hash, &key, &members);
    let replaced = (!older).then(|| s.insert(hash, entry));
    if !older {
        if let Some((_, theirs)) = whole.into_iter().next() {
            s.set_counter(&key, None, theirs);
        }
        if let Some(state) = elements {
            s.set_elements(&key, state);
        }
        // Their TTL register comes with their key, or a TTL change older than
        // it that they merged would apply here as it is.
        if let Some(since) = ttl_since {
            let key_ts = s.newest_ts(hash, &key);
            s.note_copied_ttl(&key, since, key_ts, &ttl_changes);
        }
        restart_ttl_at(s, hash, &key, our_removal);
    }
    let merged_as = match older {
        true => MergedAs::OursKept,
        false => MergedAs::TheirsPut,
    };
    put_member_counters(s, hash, &key, members, ours, merged_as);
    match replaced {
        Some(replaced) => Merged::Put(replaced),
        None if differs => Merged::OursKept,
        None => Merged::Joined,
    }
}

/// What our copy of `key` says about its TTL register ([`ShardData::key_ttl`]);
/// a key removed here without one left under its grave (a DEL) holds a
/// register started over at the removal, a value write to it.
fn our_key_ttl(s: &ShardData, hash: u64, key: &[u8]) -> Option<KeyTtl> {
    s.key_ttl(hash, key).or_else(|| {
        let removed = s.newest_ts(hash, key);
        (s.find(hash, key).is_none() && removed > 0).then(|| removal_ttl(removed))
    })
}

/// The TTL register of a key removed whole at `ts`, with no TTL change since.
fn removal_ttl(ts: u64) -> KeyTtl {
    KeyTtl {
        ts,
        since: Some(Since::value_only(ts)),
        expire_at: 0,
    }
}

/// A collection whose elements merged with a peer's copy: its TTL is a register
/// of its own beside the elements, and the two join (ours may be the one element
/// writes that emptied it left under its grave; with none, theirs comes in, under
/// the grave too when the merge left nothing: an element write that brings the
/// collection back takes its deadline, as on the peer).
fn join_ttls(
    s: &mut ShardData,
    hash: u64,
    key: &[u8],
    (ours, our_changes): (Option<KeyTtl>, &TtlChanges),
    (theirs, their_changes): (Option<KeyTtl>, &TtlChanges),
) {
    match (ours, theirs) {
        (Some(ours), Some(theirs)) => {
            s.join_ttl(hash, key, (ours, our_changes), (theirs, their_changes))
        }
        (
            None,
            Some(
                theirs @ KeyTtl {
                    since: Some(since), ..
                },
            ),
        ) => match s.find(hash, key).map(|e| e.ts) {
            Some(key_ts) => s.note_copied_ttl(key, since, key_ts, their_changes),
            None => {
                let theirs = (theirs, their_changes);
                s.join_ttl(hash, key, theirs, theirs);
            }
        },
        _ => {}
    }
}

/// Their copy of a key went in (whole, or merged element by element) where we
/// had removed the key whole at `removed`: to the TTL register the removal is a
/// value write, which their register started before.
fn restart_ttl_at(s: &mut ShardData, hash: u64, key: &[u8], removed: Option<u64>) {
    if let Some(removed) = removed {
        s.restart_ttl_at_removal(hash, key, removed);
    }
}

/// A full sync where one side counts increments on a whole key, on a base older
/// than the other side's write of its whole value (or its removal), and newer
/// than that write: the write goes under them, as it does live (see
/// `Counter::rebased`). The increments newer than it count on what it left, the
/// older ones are gone; the TTL registers join (the write's deadline, with the
/// TTL changes newer than it). `Err` gives the file's key back when neither
/// side's state splits at the other's write (it merges otherwise).
fn reset_under_increments(
    s: &mut ShardData,
    hash: u64,
    entry: EntryBox,
    ts: Option<u64>,
    theirs: Option<&Counter>,
    registers: &Registers,
) -> Result<Merged, EntryBox> {
    let Some(ts) = ts else {
        return Err(entry);
    };
    let key = entry.key().to_vec();
    let their_value = registers.theirs.0.map_or(ts, |copy| copy.value());
    let (our_value, our_ts) = (s.value_written_at(hash, &key), s.newest_ts(hash, &key));
    // The register of our copy, as it settles with theirs.
    let mut our_register = registers.ours;
    let merged = match (s.counter(hash, &key).cloned(), theirs) {
        // Ours counts on a base older than their write: their key goes in.
        (Some(ours), None) => {
            let Some(at) = split_point(&ours, their_value, ts) else {
                return Err(entry);
            };
            let rebased = ours.rebased_on(at, Some(&entry.value));
            let replaced = s.insert(hash, entry);
            match rebased {
                Some(counter) => s.put_counter(hash, &key, None, counter),
                None => s.forget_counter(&key),
            }
            Merged::Put(replaced)
        }
        // Theirs counts on a base older than our write: ours stays, theirs
        // count on it (the peer does the same when our write reaches it; a
        // TTL change of ours it merges into its count instead, so it is sent
        // our key as the base its count goes on over).
        (None, Some(theirs)) => {
            let Some(at) = split_point(theirs, our_value, our_ts) else {
                return Err(entry);
            };
            let our_ttl_change_split_it = at > our_value;
            let ours = s.find(hash, &key).map(|e| &e.value);
            let Some(counter) = theirs.rebased_on(at, ours) else {
                return Ok(Merged::Joined);
            };
            let mut replaced = None;
            if s.find(hash, &key).is_none() {
                // Our removal, with increments after it: the key comes back,
                // without a deadline.
                let mut back = entry;
                back.expire_at = 0;
                replaced = Some(s.insert(hash, back));
            }
            s.put_counter(hash, &key, None, counter);
            if our_ttl_change_split_it {
                // Their count goes on over our key as the write at that TTL
                // change, as it does on the nodes the key is sent to: the
                // register starts over there, with its deadline.
                our_register.0 = our_register.0.map(|ttl| KeyTtl {
                    ts: at,
                    since: None,
                    expire_at: ttl.expire_at,
                });
            }
            match replaced {
                Some(replaced) => Merged::Put(replaced),
                None if our_ttl_change_split_it => Merged::OursUnderTheirCount(theirs.base_ts),
                None => Merged::Joined,
            }
        }
        _ => return Err(entry),
    };
    Registers {
        ours: our_register,
        theirs: registers.theirs,
    }
    .settle(s, hash, &key);
    Ok(merged)
}

/// Where a count splits at the other copy of its key, which holds a write of
/// its value made at `value` and whose newest write is `newest` (a TTL change
/// since, when later): at the value write where the count holds increments
/// newer than it, as live (an increment is judged by the value write it
/// follows, whatever TTL change came between); else at the newest write (that
/// copy's key wins whole over the increments older than its TTL change, as a
/// repair of it does live). `None` when it splits at neither.
fn split_point(counter: &Counter, value: u64, newest: u64) -> Option<u64> {
    [value, newest]
        .into_iter()
        .find(|&at| counter.splits_at(at))
}

/// The TTL registers of both copies of a key, as they were before the merge,
/// each with the TTL changes that made it.
struct Registers<'a> {
    ours: (Option<KeyTtl>, &'a TtlChanges),
    theirs: (Option<KeyTtl>, &'a TtlChanges),
}

impl Registers<'_> {
    /// The copies' counts merged (or one went under the other's increments):
    /// increments and TTL changes leave each other, so the key, live, carries
    /// the newest write of either copy, and its register joins both.
    fn settle(&self, s: &mut ShardData, hash: u64, key: &[u8]) {
        if s.find(hash, key).is_none() {
            return;
        }
        let newest = [self.ours.0, self.theirs.0]
            .iter()
            .flatten()
            .map(|copy| copy.ts)
            .fold(s.newest_ts(hash, key), u64::max);
        s.restamp(hash, key, newest);
        join_ttls(s, hash, key, self.ours, self.theirs);
    }
}

/// Their copy of whole string `key` where it holds uncounted the value our
/// count starts from (TTL changes since on their side): a count of nothing on
/// that base (see [`crate::keyspace::uncounted`]).
fn their_uncounted_copy(
    s: &ShardData,
    hash: u64,
    entry: &EntryBox,
    their_ttl: Option<KeyTtl>,
) -> Option<Counter> {
    let ours = s.counter(hash, entry.key())?;
    crate::keyspace::uncounted(&entry.value, their_ttl?.value(), ours)
}

/// A full sync where both copies of a key hold the same value write (one
/// timestamp) with other values: a write that reads the value it changes (a
/// push) that one node applied on a value of its own. Only the writer's copy is
/// the write as made, and neither copy says whether it is (in a mesh the writer
/// may be a third node, and either copy may be its value sent whole since): the
/// key keeps ours, the TTL registers merge as they do for one value, and the
/// peer is sent ours. Where the writer is another node, our copy reaches it and
/// it answers with its own, whole, which settles the tie on every node (see the
/// command door's repairs). `Err` gives the file's key back when the copies are
/// not such.
fn copies_of_one_value_write(
    s: &mut ShardData,
    hash: u64,
    entry: EntryBox,
    theirs: KeyTtl,
) -> Result<Merged, EntryBox> {
    let key = entry.key().to_vec();
    let differs = s
        .find(hash, &key)
        .is_some_and(|ours| ours.value != entry.value);
    let one_write = s
        .key_ttl(hash, &key)
        .is_some_and(|ours| ours.value() == theirs.value());
    if !(differs && one_write) {
        return Err(entry);
    }
    s.merge_ttl(hash, &key, theirs);
    Ok(Merged::OursKept)
}

/// Do two copies of a key hold the same write: timestamp, value and deadline?
fn same_copy(ours: &crate::keyspace::Entry, theirs: &EntryBox) -> bool {
    ours.ts == theirs.ts && ours.expire_at == theirs.expire_at && ours.value == theirs.value
}

type MemberCounters = Vec<(Option<Vec<u8>>, Counter)>;

/// Our states of the elements of `key` a peer's snapshot counted.
fn our_member_counters(
    s: &ShardData,
    hash: u64,
    key: &[u8],
    members: &MemberCounters,
) -> Vec<Option<Counter>> {
    members
        .iter()
        .map(|(m, _)| s.counter_of(hash, key, m.as_deref()).cloned())
        .collect()
}

/// What our element marks of `key` (current, or under the grave of a
/// collection element writes emptied, or a DEL's grave: every element removed
/// then) say of each element a peer's snapshot counted: the newest add of it
/// our removal saw, where we removed it last.
fn our_removals_of(
    s: &ShardData,
    hash: u64,
    key: &[u8],
    members: &MemberCounters,
) -> Vec<Option<u64>> {
    let value = s.find(hash, key).map(|e| &e.value);
    let state = s.elements(hash, key).cloned();
    let state = state.or_else(|| s.removal_as_elements(hash, key));
    members
        .iter()
        .map(|(m, _)| {
            let (state, member) = (state.as_ref()?, m.as_deref()?);
            let held = value.is_some_and(|v| crate::keyspace::holds_element(v, member));
            let mark = state.mark_of(member, held);
            (!mark.is_alive()).then_some(mark.seen)
        })
        .collect()
}

/// How a key whose elements a peer counted merged.
#[derive(Clone, Copy)]
enum MergedAs<'a> {
    /// Per key, ours kept.
    OursKept,
    /// Per key, theirs went in.
    TheirsPut,
    /// Element by element, with what our last removal of each element they
    /// counted saw (see [`our_removals_of`]) and their element timestamps.
    Elements(&'a [Option<u64>], &'a crate::keyspace::Elements),
}

/// Each element both nodes counted takes the merged totals. One only the peer
/// counted takes the peer's state where their key went in, or where the
/// collection merged element by element and their write of the element is the
/// one it holds now (their increment came last); where our removal of it came
/// last, the peer's state less what that removal saw (the increments it did not
/// see count on nothing, as they do live here). Any other state we kept of it
/// is forgotten: it counted what the element no longer holds.
fn put_member_counters(
    s: &mut ShardData,
    hash: u64,
    key: &[u8],
    members: MemberCounters,
    ours: Vec<Option<Counter>>,
    merged_as: MergedAs,
) {
    for (i, ((member, theirs), ours)) in members.into_iter().zip(ours).enumerate() {
        let member = member.as_deref();
        match (ours, merged_as, member) {
            (Some(mut ours), _, _) => {
                ours.merge(&theirs, true);
                s.put_counter(hash, key, member, ours);
            }
            (None, MergedAs::TheirsPut, _) => s.set_counter(key, member, theirs),
            (None, MergedAs::Elements(removals, their_state), Some(member)) => {
                let counts = match removals.get(i).copied().flatten() {
                    Some(seen) => theirs.after_removal_that_saw(seen),
                    None => {
                        let their_mark = their_state.marks.get(member);
                        let merged = s.elements(hash, key).and_then(|m| m.marks.get(member));
                        (their_mark.is_some() && merged == their_mark).then_some(theirs)
                    }
                };
                s.forget_member_counter(key, member);
                if let Some(counts) = counts {
                    s.put_member_counter_if_held(hash, key, member, counts);
                }
            }
            (None, _, _) => {}
        }
    }
}

impl Visitor for IntoKeyspace<'_, '_> {
    fn aux(&mut self, name: &[u8], value: &[u8]) {
        if name == file::ELEMENTS {
            self.next.elements = Elements::decode(value);
            return;
        }
        let value = String::from_utf8_lossy(value);
        match name {
            b"redis-ver" => log_notice!("Loading RDB produced by version {value}"),
            b"ctime" => {
                let ctime: i64 = value.parse().unwrap_or(0);
                let age = (self.now_ms / 1000) as i64 - ctime;
                log_notice!("RDB age {age} seconds");
            }
            b"repl-id" => {
                if let Ok(id) = <[u8; 40]>::try_from(value.as_bytes()) {
                    self.loaded.repl = Some((id, self.loaded.repl.map_or(0, |r| r.1)));
                }
            }
            b"repl-offset" => {
                if let (Some(r), Ok(offset)) = (self.loaded.repl.as_mut(), value.parse()) {
                    r.1 = offset;
                }
            }
            name if name == file::COUNTER => {
                self.next
                    .counters
                    .extend(crate::keyspace::decode_counter_aux(value.as_bytes()));
            }
            name if name == file::TTL_SINCE => {
                let parsed = parse_ttl_since(&value);
                let (since, deadline, changes) = match parsed {
                    Some((since, deadline, changes)) => (Some(since), deadline, changes),
                    None => (None, None, TtlChanges::new()),
                };
                self.next.ttl_since = since;
                self.next.grave_deadline = deadline;
                self.next.ttl_changes = changes;
            }
            name if name == file::SEEN.as_bytes() => {
                if let Some(on_seen) = self.on_seen {
                    on_seen(value.as_bytes());
                }
            }
            b"used-mem" => {
                let bytes: f64 = value.parse().unwrap_or(0.0);
                if let Some((loading, _)) = self.loading {
                    loading.note_rdb_used_mem(bytes as u64);
                }
                log_notice!(
                    "RDB memory usage when created {:.2} Mb",
                    bytes / 1024.0 / 1024.0
                );
            }
            _ => {}
        }
    }

    fn function(&mut self, code: Vec<u8>) -> Result<(), LoadError> {
        let library = compile_library(self.scripting, &code)
            .map_err(|e| LoadError::Refused(format!("Failed loading library, {}", e.0)))?;
        self.libraries.push(library);
        Ok(())
    }

    fn has_db(&self, db: u64) -> bool {
        db < self.target.keyspace().databases() as u64
    }

    /// Size the database's shards for the keys announced, each for its share. The
    /// count is capped: a corrupt file must not make the load allocate without end
    /// (past the cap, tables grow as keys arrive).
    fn db_size_hint(&mut self, db: usize, keys: u64, _volatile: u64) {
        const MOST_KEYS_PRESIZED: u64 = 1 << 24;
        let shards = self.target.keyspace().shards_per_db();
        let per_shard = keys.min(MOST_KEYS_PRESIZED) as usize / shards;
        for shard in 0..shards {
            self.target.with_shard(db, shard, |s| s.reserve(per_shard));
        }
    }

    fn key(
        &mut self,
        db: usize,
        key: Vec<u8>,
        value: Value,
        meta: KeyMeta,
    ) -> Result<(), LoadError> {
        self.key_delay.after_keys(1);
        self.serve_others()?;
        // What was written before this key belongs to it, kept or not.
        let beside = std::mem::take(&mut self.next);
        if meta.expire_at != 0 && meta.expire_at < self.now_ms && !self.keep_expired {
            self.loaded.expired += 1;
            return Ok(());
        }
        let access = self
            .clock
            .restored(meta.idle_seconds, meta.freq, self.now_ms)
            .unwrap_or_else(|| self.clock.initial(self.now_ms));
        let hash = hash_key(&key);
        let shard = self.target.keyspace().shard_of(hash);
        if let Some(ts) = meta.ts {
            crate::hlc::observe(ts);
        }
        if matches!(value, Value::Cron(_)) {
            self.target.keyspace().crons.note(db, &key);
        }
        let data = EntryData {
            value,
            expire_at: meta.expire_at,
            ts: meta
                .ts
                .unwrap_or_else(|| crate::hlc::next_after(0, self.now_ms)),
        };
        let entry = EntryBox::new(&key, data, access);
        let (merge, ts, limits) = (self.merge, meta.ts, self.merge_limits);
        let replaced = match self.target.with_shard(db, shard, |s| {
            merge_key(s, hash, entry, ts, merge, beside, &limits)
        }) {
            Merged::Put(replaced) => replaced,
            Merged::Joined => return Ok(()),
            Merged::OursKept => {
                self.ours_kept(db, &key, ts, &[]);
                return Ok(());
            }
            Merged::OursUnderTheirCount(their_base) => {
                self.ours_kept(db, &key, Some(their_base), &[]);
                return Ok(());
            }
            Merged::CountedKept(elements) => {
                self.ours_kept(db, &key, ts, &elements);
                return Ok(());
            }
        };
        if matches!(self.target, LoadTarget::KeyByKey(_)) {
            self.target.keyspace().signal_modified(db, &key);
        }
        if replaced.is_some() && !self.merge {
            return Err(LoadError::Refused(format!(
                "RDB has duplicated key '{}' in DB {db}",
                String::from_utf8_lossy(&key)
            )));
        }
        self.loaded.keys += 1;
        Ok(())
    }

    fn warning(&mut self, message: std::fmt::Arguments<'_>) {
        log_warning!("{message}");
    }

    /// A peer removed `key` at `ts`: an older key here goes, and the grave stays
    /// (only while this node keeps graves, that is, replicates actively).
    fn grave(&mut self, db: usize, key: &[u8], ts: u64) {
        let hash = hash_key(key);
        let shard = self.target.keyspace().shard_of(hash);
        // A collection the peer emptied element by element: its element
        // timestamps say which of ours its removals saw.
        let beside = std::mem::take(&mut self.next);
        let their_elements = beside.elements;
        // And the TTL register it keeps under its grave.
        let their_changes = beside.ttl_changes;
        let their_ttl = beside.ttl_since.map(|since| KeyTtl {
            ts,
            since: Some(since),
            expire_at: beside.grave_deadline.unwrap_or(0),
        });
        let (limits, merge) = (self.merge_limits, self.merge);
        let kept = self.target.with_shard(db, shard, |shard| {
            if shard.graves().is_none() {
                return false;
            }
            if let Some(theirs) = their_elements.as_ref().filter(|_| merge) {
                let our_ttl = our_key_ttl(shard, hash, key);
                let our_changes = shard.ttl_changes(hash, key);
                // Merged element by element: nothing of ours to send whole.
                if shard.merge_with_emptied(hash, key, theirs, &limits) {
                    let ours = (our_ttl, &our_changes);
                    join_ttls(shard, hash, key, ours, (their_ttl, &their_changes));
                    return false;
                }
            }
            // A DEL older than our collection takes its older elements, as live.
            if merge
                && their_elements.is_none()
                && shard.merge_older_removal(hash, key, ts, &limits)
            {
                // To the TTL register it is a value write, as live; the TTL
                // changes they kept under the grave, newer than it, join it.
                shard.restart_ttl_at_removal(hash, key, ts);
                if let (Some(ours), Some(theirs)) = (shard.key_ttl(hash, key), their_ttl) {
                    let ours = (ours, &shard.ttl_changes(hash, key));
                    shard.join_ttl(hash, key, ours, (theirs, &their_changes));
                }
                return false;
            }
            let ours = shard.counter(hash, key).filter(|c| c.splits_at(ts));
            if let Some(counter) = ours.and_then(|c| c.rebased_on(ts, None)) {
                // Our increments newer than the removal count from nothing, as
                // they do live: the key lives on holding them. To its TTL
                // register the removal is a value write: only our TTL changes
                // newer than it stay.
                let (our_ttl, our_changes) =
                    (shard.key_ttl(hash, key), shard.ttl_changes(hash, key));
                shard.put_counter(hash, key, None, counter);
                let registers = Registers {
                    ours: (our_ttl, &our_changes),
                    theirs: (Some(removal_ttl(ts)), &TtlChanges::new()),
                };
                registers.settle(shard, hash, key);
                return false;
            }
            if shard.find(hash, key).is_some_and(|e| e.ts < ts) {
                if let Some(entry) = shard.remove(hash, key) {
                    entry.free(false);
                }
            }
            if shard.find(hash, key).is_none() {
                let (our_ttl, our_changes) =
                    (our_key_ttl(shard, hash, key), shard.ttl_changes(hash, key));
                shard.bury(key, ts);
                if let Some(state) = their_elements.filter(|state| state.newest == ts) {
                    shard.set_elements(key, state);
                }
                // The TTL registers under the two graves join (TTL changes newer
                // than a DEL, the deadline of a collection element writes
                // emptied); a grave without one is a removal, which to a
                // register is a value write.
                let their_ttl = their_ttl.or_else(|| our_ttl.map(|_| removal_ttl(ts)));
                let ours = (our_ttl, &our_changes);
                join_ttls(shard, hash, key, ours, (their_ttl, &their_changes));
                return false;
            }
            true
        });
        // Our newer copy lives on: the peer, which removed it, may apply a write
        // of ours to nothing and hold part of the value.
        if kept {
            self.ours_kept(db, key, Some(ts), &[]);
        }
    }

    /// A peer flushed database `db` at `ts`: older keys here go.
    fn graves_floor(&mut self, db: usize, ts: u64) {
        if !self.merge {
            return;
        }
        for shard in 0..self.target.keyspace().shards_per_db() {
            self.target.with_shard(db, shard, |shard| {
                if shard.graves().is_some() {
                    for entry in shard.take_older_than(ts) {
                        entry.free(false);
                    }
                }
            });
        }
    }
}

/// Load the file at `path` into the shards `locked` holds (all of them), adding its
/// function libraries. On error the keys read so far stay: the caller exits (start)
/// or reports it (DEBUG RELOAD), as Redis does. The file's bytes count as loaded
/// for the load under way, if `how` names one.
pub fn load_file(
    path: &Path,
    locked: &mut Locked,
    scripting: &Scripting,
    limits: &Limits,
    how: LoadHow,
) -> Result<Loaded, LoadError> {
    let reader = std::fs::File::open(path).map_err(LoadError::Io)?;
    let buffered = std::io::BufReader::with_capacity(1 << 16, reader);
    match how.loading {
        Some(loading) => load_reader(loading.counted(buffered), locked, scripting, limits, how),
        None => load_reader(buffered, locked, scripting, limits, how),
    }
}

/// What is told a file's `kvik-seen` field (its text).
pub type OnSeen<'a> = &'a dyn Fn(&[u8]);

/// Told each key (its database and name) whose copy in a merged peer's snapshot
/// (stamped as the timestamp given, 0 when it carried none) lost whole to ours
/// and differs from it, once the merge let go of its shard.
pub type OnKept<'a> = &'a dyn Fn(usize, &[u8], u64, &[Vec<u8>]);

/// How a load treats what it finds.
#[derive(Clone, Copy, Default)]
pub struct LoadHow<'p> {
    /// `rdbchecksum`: check the footer.
    pub verify_checksum: bool,
    /// Replace keys already in memory instead of refusing them.
    pub merge: bool,
    /// Keep keys whose deadline passed (a replica loading its master's sync).
    pub keep_expired: bool,
    /// The load under way, which the reader counts bytes for: others are served
    /// at its interval, and a shutdown stops the load.
    pub loading: Option<&'p Loading>,
    /// `key-load-delay`: microseconds slept per key (negative: one every that
    /// many keys), for tests that need a slow load.
    pub key_delay_us: i32,
    /// The file's libraries replace every library, once the file is read whole (a
    /// load beside the served dataset keeps the old ones until then).
    pub replace_libraries: bool,
    /// Told the file's `kvik-seen` field (which writes of each origin it holds),
    /// before its first key: an active replica merging a peer's full sync.
    pub on_seen: Option<OnSeen<'p>>,
    /// Told each key of a merged peer's snapshot that lost to ours.
    pub on_kept: Option<OnKept<'p>>,
}

/// Load an RDB read from `reader` (a file, an AOF's base or preamble, a replica's
/// socket: read as it arrives, never held whole) into the shards `locked` holds (all of them). The reader is
/// read up to the file's footer and no further.
pub fn load_reader(
    reader: impl std::io::Read,
    locked: &mut Locked,
    scripting: &Scripting,
    limits: &Limits,
    how: LoadHow,
) -> Result<Loaded, LoadError> {
    read_into(reader, LoadTarget::Held(locked), scripting, limits, how)
}

/// Load an RDB read from `reader` into `target`, as [`load_reader`] describes.
pub fn read_into(
    reader: impl std::io::Read,
    target: LoadTarget,
    scripting: &Scripting,
    limits: &Limits,
    how: LoadHow,
) -> Result<Loaded, LoadError> {
    let mut into = IntoKeyspace {
        clock: target.keyspace().clock.get(),
        now_ms: crate::hlc::unix_ms(),
        target,
        scripting,
        libraries: Vec::new(),
        loaded: Loaded::default(),
        merge: how.merge,
        keep_expired: how.keep_expired,
        next: Beside::default(),
        merge_limits: MergeLimits {
            max_intset: limits.max_intset,
            hash: limits.hash,
            zset: limits.zset,
        },
        on_seen: how.on_seen,
        on_kept: how.on_kept,
        loading: how.loading.map(|l| (l, l.loaded_bytes())),
        key_delay: KeyDelay::new(how.key_delay_us),
    };
    file::read(reader, limits, how.verify_checksum, &mut into)?;
    let (libraries, loaded) = (std::mem::take(&mut into.libraries), into.loaded);
    if how.replace_libraries {
        scripting.libraries.flush();
    }
    scripting
        .libraries
        .install(libraries, Collision::Replace)
        .map_err(|e| LoadError::Refused(format!("Failed loading library, {}", e.0)))?;
    note_deadlines(&mut into.target);
    Ok(loaded)
}

/// Tell the active expiry cycle where the loaded deadlines are.
fn note_deadlines(target: &mut LoadTarget) {
    let (dbs, shards) = {
        let ks = target.keyspace();
        (ks.databases(), ks.shards_per_db())
    };
    for db in 0..dbs {
        for shard in 0..shards {
            let next = target.with_shard(db, shard, |s| s.next_due());
            let ks = target.keyspace();
            ks.note_deadline(ks.global_id(db, shard), next);
        }
    }
}
