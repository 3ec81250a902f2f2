//! Element timestamps of sets, hashes and sorted sets written while this node
//! replicates actively: what lets two nodes merge such a collection element by
//! element instead of keeping one side's whole value.
//!
//! Each element a write named (a member added or removed, a hash field set or
//! deleted) is marked with the write's timestamp and whether the element is there
//! after it; a removed element keeps its mark as a tombstone. Elements without a
//! mark count as written at the collection's base: the timestamp the key held when
//! its first mark was made (its creation, a grave, a whole-value write). A peer's
//! write then applies to an element only if it is newer than the element's mark,
//! and equal timestamps are the same write met again, so every node ends with the
//! same element whatever order it heard the writes in; a full sync merges two
//! states element by element the same way.
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
//! replayed: the command door asks through [`super::Locked::current_elements`] and
//! records through [`super::Locked::mark_elements_since`].

use crate::types::Value;
use std::collections::HashMap;

/// Where a command's arguments name the elements of the collection at its key
/// (`args[1]`): items of `step` arguments from `first` to the end, the element at
/// offset `at` of each (SADD: 2, 1, 0; HSET: 2, 2, 0; ZADD: past its options, 2, 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElementSpan {
    pub first: usize,
    pub step: usize,
    pub at: usize,
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

/// One element's last write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    pub ts: u64,
    /// Is the element in the collection after that write (false: a tombstone)?
    pub alive: bool,
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
pub const MARK_OVERHEAD: usize = 16 + 16 + 8;

impl Elements {
    /// A state for a key that held everything it holds as of `base`.
    pub fn new(base: u64) -> Elements {
        Elements {
            base,
            newest: base,
            marks: HashMap::new(),
        }
    }

    /// The timestamp of `element`'s last write.
    pub fn ts_of(&self, element: &[u8]) -> u64 {
        self.marks.get(element).map_or(self.base, |m| m.ts)
    }

    /// Is `element` removed at `ts` or later (a tombstone a counter's increment
    /// must not bring back)?
    pub fn removed_since(&self, element: &[u8], ts: u64) -> bool {
        self.marks
            .get(element)
            .is_some_and(|m| !m.alive && m.ts >= ts)
    }

    /// `element` was written at `ts`, and is there after it or not.
    pub fn mark(&mut self, element: &[u8], ts: u64, alive: bool) {
        self.newest = self.newest.max(ts);
        match self.marks.get_mut(element) {
            Some(mark) if mark.ts > ts => {}
            Some(mark) => *mark = Mark { ts, alive },
            None => {
                self.marks.insert(element.into(), Mark { ts, alive });
            }
        }
    }

    /// Bytes the marks hold (INFO and the docs' cost).
    pub fn bytes(&self) -> usize {
        self.marks.keys().map(|k| k.len() + MARK_OVERHEAD).sum()
    }

    /// The state as bytes, for a snapshot's aux field: `<base> <newest>` as 8 bytes
    /// each, then per mark its timestamp (8), 1 if alive else 0 (1), the element's
    /// length (4) and bytes, every number little-endian.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.bytes());
        out.extend_from_slice(&self.base.to_le_bytes());
        out.extend_from_slice(&self.newest.to_le_bytes());
        for (element, mark) in &self.marks {
            out.extend_from_slice(&mark.ts.to_le_bytes());
            out.push(u8::from(mark.alive));
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
            let alive = match take(1)? {
                [0] => false,
                [1] => true,
                _ => return None,
            };
            let len = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
            let element = take(len)?;
            state.marks.insert(element.into(), Mark { ts, alive });
        }
        Some(state)
    }
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

/// What a collection holds for one element: a member, a field's value, a score.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
enum Held {
    Member,
    Field(Vec<u8>),
    Score(f64),
}

/// One element of a collection on one side of a merge: its write's timestamp and
/// what it holds there (`None`: absent).
struct Side {
    ts: u64,
    held: Option<Held>,
}

/// Which side's element wins a merge: the newer write; on a tie (the same write met
/// on both sides, or elements both sides hold unmarked at one base) an element
/// that is there beats a removal, and of two values the greater, so that every
/// node picks the same.
fn theirs_wins(ours: &Side, theirs: &Side) -> bool {
    if theirs.ts != ours.ts {
        return theirs.ts > ours.ts;
    }
    match (&ours.held, &theirs.held) {
        (None, Some(_)) => true,
        (Some(a), Some(b)) => b > a,
        _ => false,
    }
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
/// ours of the same type, element by element: each element takes the side whose
/// write of it is newer (see [`theirs_wins`]). Returns the merged timestamps, or
/// `None` (nothing done) when the two are not collections of one type.
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
        let mine = Side {
            ts: our_state.ts_of(&element),
            held: held(ours, &element),
        };
        let other = Side {
            ts: their_state.ts_of(&element),
            held: held(theirs, &element),
        };
        let won = if theirs_wins(&mine, &other) {
            put(ours, &element, other.held.clone(), limits);
            other
        } else {
            mine
        };
        let marked =
            our_state.marks.contains_key(&*element) || their_state.marks.contains_key(&*element);
        if marked || won.ts != merged.base {
            let mark = Mark {
                ts: won.ts,
                alive: won.held.is_some(),
            };
            merged.marks.insert(element.into(), mark);
        }
    }
    Some(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_keep_the_newest_write_and_unmarked_elements_read_the_base() {
        let mut state = Elements::new(5);
        state.mark(b"a", 10, true);
        state.mark(b"a", 7, false);
        state.mark(b"b", 12, false);
        assert_eq!(state.ts_of(b"a"), 10);
        assert_eq!(state.ts_of(b"z"), 5);
        assert!(state.removed_since(b"b", 12) && !state.removed_since(b"b", 13));
        assert!(!state.removed_since(b"a", 1));
        assert_eq!(state.newest, 12);
    }

    #[test]
    fn the_byte_form_reads_back() {
        let mut state = Elements::new(3);
        state.mark(b"x\0y", 9, true);
        state.mark(b"", 11, false);
        assert_eq!(Elements::decode(&state.encode()), Some(state));
        assert_eq!(Elements::decode(b"short"), None);
    }

    #[test]
    fn a_tie_keeps_the_element_and_the_greater_value() {
        let side = |ts, score: Option<f64>| Side {
            ts,
            held: score.map(Held::Score),
        };
        assert!(theirs_wins(&side(1, Some(1.0)), &side(2, None)));
        assert!(!theirs_wins(&side(2, None), &side(1, Some(1.0))));
        assert!(theirs_wins(&side(2, None), &side(2, Some(1.0))));
        assert!(!theirs_wins(&side(2, Some(1.0)), &side(2, None)));
        assert!(theirs_wins(&side(2, Some(1.0)), &side(2, Some(3.0))));
    }

    #[test]
    fn a_merge_takes_each_element_from_the_side_that_wrote_it_last() {
        let limits = MergeLimits {
            max_intset: 512,
            hash: Default::default(),
            zset: crate::types::zset::Limits {
                max_entries: 128,
                max_value: 64,
            },
        };
        let set = |members: &[&[u8]]| {
            let mut s = crate::types::set::Set::default();
            for m in members {
                s.insert(m, 512);
            }
            Value::Set(Box::new(s))
        };
        // Both held {m, x} at 5. Ours removed m at 10 and added a at 11; theirs
        // added m again at 12 and b at 9.
        let mut ours = set(&[b"x", b"a"]);
        let mut our_state = Elements::new(5);
        our_state.mark(b"m", 10, false);
        our_state.mark(b"a", 11, true);
        let theirs = set(&[b"x", b"m", b"b"]);
        let mut their_state = Elements::new(5);
        their_state.mark(b"m", 12, true);
        their_state.mark(b"b", 9, true);
        let members = |v: &Value| {
            let mut all = std::collections::HashSet::new();
            names(v, &Elements::default(), &mut all);
            let mut all: Vec<Vec<u8>> = all.into_iter().collect();
            all.sort();
            all
        };
        let merged = merge(&mut ours, &our_state, &theirs, &their_state, &limits).unwrap();
        assert_eq!(members(&ours), [&b"a"[..], b"b", b"m", b"x"]);
        assert_eq!(merged.ts_of(b"m"), 12);
        assert_eq!(merged.newest, 12);
        // The other way round ends the same.
        let mut back = theirs.clone();
        merge(
            &mut back,
            &their_state,
            &set(&[b"x", b"a"]),
            &our_state,
            &limits,
        )
        .unwrap();
        assert_eq!(members(&back), members(&ours));
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
