//! Element timestamps of sets, hashes and sorted sets written while this node
//! replicates actively: what lets two nodes merge such a collection element by
//! element instead of keeping one side's whole value.
//!
//! Each element a write named (a member added or removed, a hash field set or
//! deleted) is marked with the write's timestamp: an add, or a removal that also
//! records the newest add of the element it saw ([`Mark::seen`]). The marks merge
//! *add-wins*: a removal takes away the adds it saw (those no newer than `seen`),
//! so an element re-added concurrently on another node (an add the removal never
//! saw) stays; of two adds the newer gives the value (a hash field's, a member's
//! score). An increment (HINCRBY, ZINCRBY) counts as an add of its element: a
//! removal takes it only if it saw it, and where two nodes count the element on
//! different values, the node that drops the other's write of it writes it again
//! as it holds it (see the command door's repairs of counted elements). Elements
//! without a mark count as added at the collection's base (when there)
//! or removed at it: the timestamp the key held when its first mark was made (its
//! creation, a grave, a whole-value write). [`Mark::join`] is commutative,
//! associative and idempotent, so every node ends with the same element whatever
//! order it heard the writes in, and a full sync merges two states element by
//! element the same way.
//!
//! A removal's `seen` travels with it: the effect of a removal carries one per
//! element it names (`observed`, in the envelope between active nodes), and a
//! replayed one is read from [`replaying_removal`].
//!
//! Marks are kept per shard, only while the node replicates actively, and only for
//! collections written while it does (a plain node pays one `None` per shard), and
//! forgotten once no peer can send an older write. A state is current only while
//! its newest timestamp is the key's (a collection emptied by an element write
//! keeps it under its grave); a write that is not element by element (a STORE,
//! RESTORE, EXPIRE) drops it, and the key falls back to last writer wins per key
//! until an element write starts a new one.
//!
//! Owns the marks, their merge and their byte form. Must not decide when a write is
//! replayed: the command door asks through [`super::Locked::elements_here`] and
//! records through [`super::Locked::mark_elements_since`].

use super::counters::Start;
use crate::types::Value;
use std::collections::HashMap;

/// Where a command's arguments name the elements of the collection at its key
/// (`args[1]`): items of `step` arguments from `first` to the end, the element at
/// offset `at` of each (SADD: 2, 1, 0; HSET: 2, 2, 0; ZADD: past its options, 2, 1),
/// whether the command removes them (SREM, HDEL, ZREM) or adds them, and whether
/// it counts on them (HINCRBY, ZINCRBY: the command door sets it from the command's
/// `MERGES_AS_COUNTER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElementSpan {
    pub first: usize,
    pub step: usize,
    pub at: usize,
    pub removes: bool,
    pub counts: bool,
}

impl ElementSpan {
    /// The mark a write stamped `ts` makes of an element it leaves there or not
    /// (`alive`), a removal having seen `seen`.
    pub fn mark(&self, ts: u64, alive: bool, seen: u64) -> Mark {
        match alive {
            true => Mark::added(ts, self.counts),
            false => Mark::removed(ts, seen),
        }
    }
}

impl ElementSpan {
    /// The elements `args` names.
    pub fn elements<'a, A: AsRef<[u8]>>(&self, args: &'a [A]) -> impl Iterator<Item = &'a [u8]> {
        let (step, at) = (self.step.max(1), self.at);
        args.get(self.first..)
            .unwrap_or_default()
            .chunks_exact(step)
            .map(move |item| item[at].as_ref())
    }
}

/// What one effect does to the element marks of the keys it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EffectOnMarks {
    /// It writes the elements `ElementSpan` finds (SADD, HDEL ...).
    Elements(ElementSpan),
    /// It changes only the key's TTL (EXPIRE, PERSIST ...): the marks still hold.
    TtlOnly,
    /// It writes the key whole (RESTORE, DEL, a STORE ...): the marks no longer hold.
    Whole,
}

/// What an element's last write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Added it, or set its value.
    Added,
    /// Counted on it (HINCRBY, ZINCRBY): an add whose value depends on what it
    /// counted on.
    Counted,
    /// Removed it.
    Removed,
}

/// One element's last write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    pub ts: u64,
    pub kind: Kind,
    /// A removal's newest add of the element it saw: the adds it takes away are
    /// those no newer. 0 for an add.
    pub seen: u64,
}

impl Mark {
    pub fn added(ts: u64, counted: bool) -> Mark {
        let kind = if counted { Kind::Counted } else { Kind::Added };
        Mark { ts, kind, seen: 0 }
    }

    pub fn removed(ts: u64, seen: u64) -> Mark {
        Mark {
            ts,
            kind: Kind::Removed,
            seen,
        }
    }

    /// Was this write an increment (HINCRBY, ZINCRBY)?
    pub fn is_counted(&self) -> bool {
        self.kind == Kind::Counted
    }

    /// Is the element there after this write?
    pub fn is_alive(&self) -> bool {
        self.kind != Kind::Removed
    }

    /// The newest add of the element a removal marked now would see: this add, or
    /// what the removal this is had seen.
    pub fn observed(&self) -> u64 {
        match self.kind {
            Kind::Removed => self.seen,
            _ => self.ts,
        }
    }

    /// Where counting on the element starts after this write (see
    /// [`super::counters::Start`]): an add's value, or, after a removal, nothing
    /// from just past the newest add it saw. A removal takes only what it saw:
    /// an increment it did not see, older than the removal or not, still counts.
    pub fn counts_from(&self) -> Start {
        match self.kind {
            Kind::Removed => Start::removal(self.seen),
            _ => Start::write(self.ts),
        }
    }

    /// Does this add (or increment) outlive `removal`: one that did not see it?
    fn outlives(&self, removal: &Mark) -> bool {
        self.ts > removal.seen
    }

    /// The mark of an element both writes were made to, in any order: of two adds
    /// the newer (of an add and an increment stamped alike, the increment: what
    /// the element holds was counted), of two removals the newest and all they
    /// saw, an add against a removal the add if it outlives it.
    pub fn join(self, other: Mark) -> Mark {
        let rank = |m: &Mark| (m.ts, m.is_counted());
        match (self.is_alive(), other.is_alive()) {
            (true, true) if rank(&other) > rank(&self) => other,
            (true, true) => self,
            (false, false) => Mark::removed(self.ts.max(other.ts), self.seen.max(other.seen)),
            (true, false) if self.outlives(&other) => self,
            (false, true) if other.outlives(&self) => other,
            (true, false) => other,
            (false, true) => self,
        }
    }

    /// Does a peer's write `theirs` of an element marked `self` here apply (change
    /// what is here)? An add applies unless an add here is newer (the same add met
    /// again applies alike), or a removal here saw it; a counter's increment adds
    /// to any add, and over a removal applies as an add does; a removal applies
    /// unless the add here outlives it (over nothing it changes nothing, but its
    /// mark joins).
    pub fn admits(&self, theirs: &Mark) -> bool {
        match (self.is_alive(), theirs.kind) {
            (true, Kind::Added) => theirs.ts >= self.ts,
            (true, Kind::Counted) => true,
            (true, Kind::Removed) => !self.outlives(theirs),
            (false, Kind::Removed) => true,
            (false, _) => theirs.outlives(self),
        }
    }
}

/// The marks of one collection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Elements {
    /// Unmarked elements count as written at this timestamp.
    pub base: u64,
    /// The newest timestamp the state knows: the key's, while it is current.
    pub newest: u64,
    pub marks: HashMap<Box<[u8]>, Mark>,
}

/// What a mark costs beside its element's bytes: the boxed slice, the mark and the
/// map's slot (as a grave is counted).
pub const MARK_OVERHEAD: usize = 16 + 24 + 8;

/// One element of a collection as a peer's write meets it here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Here {
    pub mark: Mark,
    /// Has it a mark of its own (else it reads the collection's base)?
    pub marked: bool,
}

impl Elements {
    /// A state for a key that held everything it holds as of `base`.
    pub fn new(base: u64) -> Elements {
        Elements {
            base,
            newest: base,
            marks: HashMap::new(),
        }
    }

    /// The mark of `element`, which the collection holds or not (`held`): its own,
    /// or an add or a removal at the base.
    pub fn mark_of(&self, element: &[u8], held: bool) -> Mark {
        self.here(element, held).mark
    }

    /// `element` (which the collection holds or not) as a peer's write meets it.
    pub fn here(&self, element: &[u8], held: bool) -> Here {
        match self.marks.get(element) {
            Some(&mark) => Here { mark, marked: true },
            None => Here {
                mark: match held {
                    true => Mark::added(self.base, false),
                    false => Mark::removed(self.base, self.base),
                },
                marked: false,
            },
        }
    }

    /// The timestamp of `element`'s last write.
    pub fn ts_of(&self, element: &[u8]) -> u64 {
        self.marks.get(element).map_or(self.base, |m| m.ts)
    }

    /// Where counting on `element` starts (see [`Mark::counts_from`]); an
    /// unmarked element, at the collection's base.
    pub fn counts_from(&self, element: &[u8]) -> Start {
        self.marks
            .get(element)
            .map_or(Start::write(self.base), Mark::counts_from)
    }

    /// `element` was written by `mark` (joined with its mark: see [`Mark::join`]).
    pub fn mark(&mut self, element: &[u8], mark: Mark) {
        self.newest = self.newest.max(mark.ts);
        match self.marks.get_mut(element) {
            Some(old) => *old = old.join(mark),
            None => {
                self.marks.insert(element.into(), mark);
            }
        }
    }

    /// Join a removal of the whole collection at `ts` that saw every add no
    /// newer than itself (a peer's DEL, where the collection is newer here) into
    /// the elements it finds removed and the unmarked ones (the base). The
    /// elements still held that it takes are marked by their own removal.
    pub fn join_whole_removal(&mut self, ts: u64) {
        let removal = Mark::removed(ts, ts);
        for mark in self.marks.values_mut().filter(|m| !m.is_alive()) {
            *mark = mark.join(removal);
        }
        self.base = self.base.max(ts);
    }

    /// Bytes the marks hold (INFO and the docs' cost).
    pub fn bytes(&self) -> usize {
        self.marks.keys().map(|k| k.len() + MARK_OVERHEAD).sum()
    }

    /// The state as bytes, for a snapshot's aux field: `<base> <newest>` as 8 bytes
    /// each, then per mark its timestamp (8), its kind (1: 0 removed, 1 added, 2
    /// counted), a removal's `seen` (8), the element's length (4) and bytes, every
    /// number little-endian.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.bytes());
        out.extend_from_slice(&self.base.to_le_bytes());
        out.extend_from_slice(&self.newest.to_le_bytes());
        for (element, mark) in &self.marks {
            out.extend_from_slice(&mark.ts.to_le_bytes());
            out.push(match mark.kind {
                Kind::Removed => 0,
                Kind::Added => 1,
                Kind::Counted => 2,
            });
            if mark.kind == Kind::Removed {
                out.extend_from_slice(&mark.seen.to_le_bytes());
            }
            out.extend_from_slice(&(element.len() as u32).to_le_bytes());
            out.extend_from_slice(element);
        }
        out
    }

    /// The state [`Elements::encode`] wrote; `None` when malformed.
    pub fn decode(mut bytes: &[u8]) -> Option<Elements> {
        let mut take = |n: usize| -> Option<&[u8]> {
            let (head, rest) = (bytes.get(..n)?, bytes.get(n..)?);
            bytes = rest;
            Some(head)
        };
        let u64_of = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or_default());
        let base = u64_of(take(8)?);
        let newest = u64_of(take(8)?);
        let mut state = Elements {
            base,
            newest,
            marks: HashMap::new(),
        };
        while let Some(ts) = take(8) {
            let ts = u64_of(ts);
            let mark = match take(1)? {
                [0] => Mark::removed(ts, u64_of(take(8)?)),
                [1] => Mark::added(ts, false),
                [2] => Mark::added(ts, true),
                _ => return None,
            };
            let len = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
            let element = take(len)?;
            state.marks.insert(element.into(), mark);
        }
        Some(state)
    }
}

thread_local! {
    static REMOVAL_SEEN: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Run `f` (a peer's write being applied) with `seen` as what its removal saw of
/// each element it names, in order (empty: not a removal, or its sender said
/// nothing: then it saw everything older than itself).
pub fn replaying_removal<R>(seen: &[u64], f: impl FnOnce() -> R) -> R {
    let before = REMOVAL_SEEN.with(|s| std::mem::replace(&mut *s.borrow_mut(), seen.to_vec()));
    let result = f();
    REMOVAL_SEEN.with(|s| *s.borrow_mut() = before);
    result
}

/// The whole list of what the removal being replayed on this thread saw (a
/// transaction keeps it with the command it queues).
pub fn removal_seen_now() -> Vec<u64> {
    REMOVAL_SEEN.with(|s| s.borrow().clone())
}

/// What the removal being replayed on this thread saw of its `i`th element, if its
/// sender said.
pub fn removal_seen(i: usize) -> Option<u64> {
    REMOVAL_SEEN.with(|s| s.borrow().get(i).copied())
}

/// The `seen` list of a removal as the envelope carries it: the numbers in
/// decimal, comma-separated.
pub fn encode_seen(seen: &[u64], out: &mut Vec<u8>) {
    let mut number = itoa::Buffer::new();
    for (i, n) in seen.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(number.format(*n).as_bytes());
    }
}

/// The list [`encode_seen`] wrote; `None` when malformed.
pub fn decode_seen(text: &[u8]) -> Option<Vec<u64>> {
    if text.is_empty() {
        return Some(Vec::new());
    }
    text.split(|&b| b == b',')
        .map(|n| std::str::from_utf8(n).ok()?.parse().ok())
        .collect()
}

/// Does collection `value` hold `element` (a set's member, a hash's field, a sorted
/// set's member)? Other types hold no elements.
pub fn holds(value: &Value, element: &[u8]) -> bool {
    match value {
        Value::Set(set) => set.contains(element),
        Value::Hash(hash) => hash.contains(element),
        Value::ZSet(zset) => zset.score(element).is_some(),
        _ => false,
    }
}

/// The encoding limits a merge that adds elements needs.
#[derive(Debug, Clone, Copy)]
pub struct MergeLimits {
    pub max_intset: usize,
    pub hash: crate::types::hash::Limits,
    pub zset: crate::types::zset::Limits,
}

#[cfg(test)]
impl MergeLimits {
    /// Redis's default encoding limits, for tests.
    pub fn for_tests() -> MergeLimits {
        MergeLimits {
            max_intset: 512,
            hash: Default::default(),
            zset: crate::types::zset::Limits {
                max_entries: 128,
                max_value: 64,
            },
        }
    }
}

/// What a collection holds for one element: a member, a field's value, a score.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
enum Held {
    Member,
    Field(Vec<u8>),
    Score(f64),
}

/// One element of a collection on one side of a merge: its mark and what it
/// holds there (`None`: absent).
struct Side {
    mark: Mark,
    held: Option<Held>,
}

/// Does their element replace ours in a merge whose marks joined to `joined`? Only
/// an add does: one the joined mark keeps that is newer than ours, or (the same
/// add met on both sides, or elements both sides hold unmarked at one base) of a
/// greater value, so that every node picks the same.
fn theirs_wins(ours: &Side, theirs: &Side, joined: Mark) -> bool {
    if !joined.is_alive() || theirs.held.is_none() {
        return false;
    }
    match &ours.held {
        None => true,
        Some(_) if theirs.mark.ts != ours.mark.ts => joined == theirs.mark,
        Some(mine) => theirs.held.as_ref().is_some_and(|v| v > mine),
    }
}

/// The write that sets `element` of collection `value` (at `key`) to what it
/// holds there: HSET of a hash field, ZADD of a sorted-set member's score. `None`
/// when it holds no such element, or for a set (its members hold no value, and
/// nobody counts on them).
pub fn setting_write(value: &Value, key: &[u8], element: &[u8]) -> Option<Vec<Vec<u8>>> {
    let (name, words) = match held(value, element)? {
        Held::Member => return None,
        Held::Field(v) => (&b"HSET"[..], [element.to_vec(), v]),
        Held::Score(score) => {
            let mut text = Vec::new();
            crate::util::numbers::write_f64(&mut text, score);
            (&b"ZADD"[..], [text, element.to_vec()])
        }
    };
    let mut argv = vec![name.to_vec(), key.to_vec()];
    argv.extend(words);
    Some(argv)
}

fn held(value: &Value, element: &[u8]) -> Option<Held> {
    match value {
        Value::Set(set) => set.contains(element).then_some(Held::Member),
        Value::Hash(hash) => hash.get(element).map(|v| Held::Field(v.to_vec())),
        Value::ZSet(zset) => zset.score(element).map(Held::Score),
        _ => None,
    }
}

fn put(value: &mut Value, element: &[u8], held: Option<Held>, limits: &MergeLimits) {
    match (value, held) {
        (Value::Set(set), Some(_)) => {
            set.insert(element, limits.max_intset);
        }
        (Value::Hash(hash), Some(Held::Field(v))) => {
            hash.insert(element, &v, limits.hash);
        }
        (Value::ZSet(zset), Some(Held::Score(score))) => {
            zset.set_score(element, score, limits.zset);
        }
        (Value::Set(set), None) => {
            set.remove(element);
        }
        (Value::Hash(hash), None) => {
            hash.remove(element);
        }
        (Value::ZSet(zset), None) => {
            zset.remove(element);
        }
        _ => {}
    }
}

/// The elements of our collection (`our_state`) that a merge with a peer's
/// (`their_state`) keeps as we counted on them (HINCRBY, ZINCRBY) over the peer's
/// plain write of them (an HSET / ZADD our counting never saw): the peer counts
/// our increments on its own value of them (which may hold what ours does now,
/// and not once counted), so this node writes them again (see the command door's
/// repairs of counted elements), as it does when it drops such a write live. A
/// removal of theirs our counting never saw needs that only where our state
/// cannot take from its count what the removal saw (`takes_removal(element,
/// seen)` is false: see [`super::Counter::after_removal_that_saw`]); otherwise
/// both nodes count the increments it did not see on nothing.
pub fn counted_over(
    our_state: &Elements,
    their_state: &Elements,
    takes_removal: impl Fn(&[u8], u64) -> bool,
) -> Vec<Vec<u8>> {
    our_state
        .marks
        .iter()
        .filter(|(element, &mark)| {
            // Only a write of theirs: an element they hold unmarked, as of their
            // base, is one both sides hold alike, and our increment counts the
            // same on it there.
            let theirs_written = their_state.marks.get(*element);
            theirs_written.is_some_and(|&their_mark| {
                mark.is_counted()
                    && !their_mark.is_counted()
                    && mark.join(their_mark) == mark
                    && (their_mark.is_alive() || !takes_removal(element, their_mark.seen))
            })
        })
        .map(|(element, _)| element.to_vec())
        .collect()
}

/// An empty collection of `value`'s type, for merging a collection with one its
/// node emptied (`None` for other types).
pub fn empty_like(value: &Value) -> Option<Value> {
    match value {
        Value::Set(_) => Some(Value::Set(Box::default())),
        Value::Hash(_) => Some(Value::Hash(Box::default())),
        Value::ZSet(_) => Some(Value::ZSet(Box::default())),
        _ => None,
    }
}

/// Is collection `value` empty (a merge removed every element)?
pub fn is_empty(value: &Value) -> bool {
    match value {
        Value::Set(set) => set.is_empty(),
        Value::Hash(hash) => hash.is_empty(),
        Value::ZSet(zset) => zset.is_empty(),
        _ => false,
    }
}

fn names(value: &Value, state: &Elements, into: &mut std::collections::HashSet<Vec<u8>>) {
    let mut digits = itoa::Buffer::new();
    match value {
        Value::Set(set) => into.extend(set.iter().map(|m| m.bytes(&mut digits).to_vec())),
        Value::Hash(hash) => into.extend(hash.iter().map(|(f, _)| f.to_vec())),
        Value::ZSet(zset) => zset.for_each(|m, _| {
            into.insert(m.to_vec());
        }),
        _ => {}
    }
    into.extend(state.marks.keys().map(|k| k.to_vec()));
}

/// Merge a peer's collection (`theirs`, its element timestamps `their_state`) into
/// ours of the same type, element by element: each element's marks join (see
/// [`Mark::join`]), and it holds the value of the add that wins (see
/// [`theirs_wins`]). Returns the merged timestamps, or `None` (nothing done) when
/// the two are not collections of one type.
pub fn merge(
    ours: &mut Value,
    our_state: &Elements,
    theirs: &Value,
    their_state: &Elements,
    limits: &MergeLimits,
) -> Option<Elements> {
    let same_type = matches!(
        (&*ours, theirs),
        (Value::Set(_), Value::Set(_))
            | (Value::Hash(_), Value::Hash(_))
            | (Value::ZSet(_), Value::ZSet(_))
    );
    if !same_type {
        return None;
    }
    let mut all = std::collections::HashSet::new();
    names(ours, our_state, &mut all);
    names(theirs, their_state, &mut all);
    let mut merged = Elements::new(our_state.base.max(their_state.base));
    merged.newest = our_state.newest.max(their_state.newest);
    for element in all {
        let side = |value: &Value, state: &Elements| {
            let held = held(value, &element);
            Side {
                mark: state.mark_of(&element, held.is_some()),
                held,
            }
        };
        let (mine, other) = (side(ours, our_state), side(theirs, their_state));
        let joined = mine.mark.join(other.mark);
        if theirs_wins(&mine, &other, joined) {
            put(ours, &element, other.held, limits);
        } else if !joined.is_alive() && mine.held.is_some() {
            put(ours, &element, None, limits);
        }
        let marked =
            our_state.marks.contains_key(&*element) || their_state.marks.contains_key(&*element);
        if marked || joined.ts != merged.base {
            merged.marks.insert(element.into(), joined);
        }
    }
    Some(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every mark over a few timestamps: adds, counted adds, removals that saw
    /// any older add.
    fn all_marks() -> Vec<Mark> {
        let mut all = Vec::new();
        for ts in 1..=4 {
            all.push(Mark::added(ts, false));
            all.push(Mark::added(ts, true));
            for seen in 0..ts {
                all.push(Mark::removed(ts, seen));
            }
        }
        all
    }

    #[test]
    fn joining_marks_is_order_free_for_adds_increments_and_removals() {
        let all = all_marks();
        for &a in &all {
            assert_eq!(a.join(a), a);
            for &b in &all {
                assert_eq!(a.join(b).is_alive(), b.join(a).is_alive(), "{a:?} {b:?}");
                if a.join(b).is_alive() {
                    assert_eq!(a.join(b), b.join(a), "{a:?} {b:?}");
                }
                for &c in &all {
                    let (left, right) = (a.join(b).join(c), a.join(b.join(c)));
                    assert_eq!(left.is_alive(), right.is_alive(), "{a:?} {b:?} {c:?}");
                    if left.is_alive() {
                        assert_eq!(left, right, "{a:?} {b:?} {c:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_write_applies_where_its_join_takes_it() {
        for &here in &all_marks() {
            for &theirs in &all_marks() {
                let joined = here.join(theirs);
                if theirs.is_alive() && !here.is_alive() {
                    assert_eq!(
                        here.admits(&theirs),
                        joined.is_alive(),
                        "{here:?} {theirs:?}"
                    );
                }
                if !theirs.is_alive() && here.is_alive() {
                    assert_eq!(
                        here.admits(&theirs),
                        !joined.is_alive(),
                        "{here:?} {theirs:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_removal_takes_the_adds_it_saw_and_no_other() {
        let removal = Mark::removed(10, 5);
        // The add it removed, and an older one: gone.
        assert!(!Mark::added(5, false).join(removal).is_alive());
        assert!(!removal.join(Mark::added(3, false)).is_alive());
        // An add it never saw, older than the removal itself: it stays.
        assert!(Mark::added(7, false).join(removal).is_alive());
        assert!(!Mark::added(5, false).admits(&Mark::removed(10, 4)));
        assert!(Mark::added(5, false).admits(&removal));
        assert!(removal.admits(&Mark::added(6, false)));
        // A counter's increment counts as an add: the removal takes the ones it
        // saw, not one it never saw, older than the removal or not.
        assert!(!Mark::added(4, true).join(removal).is_alive());
        assert!(Mark::added(7, true).join(removal).is_alive());
        assert!(removal.admits(&Mark::added(9, true)));
        assert!(!removal.admits(&Mark::added(5, true)));
        // Two removals: the newest, with all they saw.
        assert_eq!(removal.join(Mark::removed(8, 7)), Mark::removed(10, 7));
        // Counting after it starts just past the add it saw, not at the
        // removal: an increment at 7 it never saw counts there.
        assert_eq!(removal.counts_from(), Start::removal(5));
        assert!(!removal.counts_from().took(7) && removal.counts_from().took(5));
        assert_eq!(Mark::added(7, true).counts_from(), Start::write(7));
        let mut state = Elements::new(3);
        state.mark(b"r", removal);
        assert_eq!(state.counts_from(b"r"), Start::removal(5));
        assert_eq!(state.counts_from(b"unmarked"), Start::write(3));
    }

    #[test]
    fn marks_join_and_unmarked_elements_read_the_base() {
        let mut state = Elements::new(5);
        state.mark(b"a", Mark::added(10, false));
        state.mark(b"a", Mark::removed(7, 5));
        state.mark(b"b", Mark::removed(12, 5));
        assert_eq!(state.ts_of(b"a"), 10);
        assert_eq!(state.ts_of(b"z"), 5);
        assert_eq!(state.mark_of(b"z", true), Mark::added(5, false));
        assert_eq!(state.mark_of(b"z", false), Mark::removed(5, 5));
        assert!(!state.here(b"z", true).marked);
        assert_eq!(state.newest, 12);
    }

    #[test]
    fn a_merge_rewrites_our_counted_elements_that_outlive_the_peers_plain_writes() {
        let mut ours = Elements::new(1);
        ours.mark(b"a", Mark::added(10, true));
        ours.mark(b"b", Mark::added(5, false));
        ours.mark(b"c", Mark::added(6, true));
        ours.mark(b"d", Mark::added(6, true));
        ours.mark(b"e", Mark::added(6, true));
        let mut theirs = Elements::new(1);
        // a: their older HSET; b: their increment; c: their newer HSET; d:
        // their removal that never saw our increment; e: not written there.
        theirs.mark(b"a", Mark::added(7, false));
        theirs.mark(b"b", Mark::added(8, true));
        theirs.mark(b"c", Mark::added(9, false));
        theirs.mark(b"d", Mark::removed(8, 4));
        let mut kept = counted_over(&ours, &theirs, |_, _| false);
        kept.sort();
        assert_eq!(kept, [b"a".to_vec(), b"d".to_vec()]);
        // Where our state takes from its count what their removal saw, both
        // count on nothing the increments it did not see: nothing to rewrite.
        let kept = counted_over(&ours, &theirs, |element, seen| element == b"d" && seen == 4);
        assert_eq!(kept, [b"a".to_vec()]);
    }

    #[test]
    fn the_byte_forms_read_back() {
        let mut state = Elements::new(3);
        state.mark(b"x\0y", Mark::added(9, false));
        state.mark(b"", Mark::removed(11, 4));
        state.mark(b"n", Mark::added(12, true));
        assert_eq!(Elements::decode(&state.encode()), Some(state));
        assert_eq!(Elements::decode(b"short"), None);
        let mut text = Vec::new();
        encode_seen(&[7, 0, 123], &mut text);
        assert_eq!(text, b"7,0,123");
        assert_eq!(decode_seen(&text), Some(vec![7, 0, 123]));
        assert_eq!(decode_seen(b""), Some(vec![]));
        assert_eq!(decode_seen(b"1,x"), None);
    }

    #[test]
    fn a_merge_takes_each_element_from_the_side_whose_write_wins() {
        let limits = MergeLimits::for_tests();
        let set = |members: &[&[u8]]| {
            let mut s = crate::types::set::Set::default();
            for m in members {
                s.insert(m, 512);
            }
            Value::Set(Box::new(s))
        };
        // Both held {m, x, y} at 5. Ours removed m at 10 and y at 13 (each saw the
        // add at 5) and added a at 11; theirs added m again at 8 (an add our
        // removal never saw) and b at 9, and still holds y as added at 5.
        let mut ours = set(&[b"x", b"a"]);
        let mut our_state = Elements::new(5);
        our_state.mark(b"m", Mark::removed(10, 5));
        our_state.mark(b"y", Mark::removed(13, 5));
        our_state.mark(b"a", Mark::added(11, false));
        let theirs = set(&[b"x", b"m", b"b", b"y"]);
        let mut their_state = Elements::new(5);
        their_state.mark(b"m", Mark::added(8, false));
        their_state.mark(b"b", Mark::added(9, false));
        let members = |v: &Value| {
            let mut all = std::collections::HashSet::new();
            names(v, &Elements::default(), &mut all);
            let mut all: Vec<Vec<u8>> = all.into_iter().collect();
            all.sort();
            all
        };
        let merged = merge(&mut ours, &our_state, &theirs, &their_state, &limits).unwrap();
        assert_eq!(members(&ours), [&b"a"[..], b"b", b"m", b"x"]);
        assert_eq!(merged.marks[&b"m"[..]], Mark::added(8, false));
        assert_eq!(merged.marks[&b"y"[..]], Mark::removed(13, 5));
        assert_eq!(merged.newest, 13);
        // The other way round ends the same.
        let mut back = theirs.clone();
        let merged_back = merge(
            &mut back,
            &their_state,
            &set(&[b"x", b"a"]),
            &our_state,
            &limits,
        )
        .unwrap();
        assert_eq!(members(&back), members(&ours));
        assert_eq!(merged_back, merged);
        assert!(merge(
            &mut ours,
            &our_state,
            &Value::Str(crate::types::string::StrValue::Int(1)),
            &their_state,
            &limits
        )
        .is_none());
    }
}
