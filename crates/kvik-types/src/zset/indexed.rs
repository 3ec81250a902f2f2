//! The big encoding of a sorted set (OBJECT ENCODING "skiplist", Redis's name for
//! it, though it is no skiplist): three parts that share one copy of each member.
//!
//! - a slab of slots, each a member and its score (32 bytes; members of up to 22
//!   bytes live inline). A member keeps its slot, its id, for as long as it is in
//!   the set; freed slots are chained and reused.
//! - a hash index of ids by member (4 bytes a bucket plus hashbrown's control
//!   byte): ZSCORE, ZADD and ZREM find a member in O(1).
//! - the [`Tree`] of (score, id) keys in the set's order, with subtree counts:
//!   ranks and ranges in O(log n), ordered walks at memory speed.
//!
//! About 60 bytes a member for short members (Redis's skiplist and dict take about
//! 110). Ids being stable also gives ZSCAN a simple cursor: the next slot to look at.
//! A member present for the whole scan keeps its slot, so it is returned.

use super::tree::{Key, Tree};
use crate::SmallBytes;
use hashbrown::HashTable;
use kvik_util::hash::hash_key;
use std::ops::Range;

/// End of the free list.
const NO_SLOT: u32 = u32::MAX;

#[derive(Clone)]
enum Slot {
    Used { member: SmallBytes, score: f64 },
    Free { next: u32 },
}

#[derive(Clone)]
pub struct Indexed {
    slots: Vec<Slot>,
    /// First free slot, or [`NO_SLOT`].
    free: u32,
    /// Heap bytes of members too long to sit inline.
    member_heap: usize,
    by_member: HashTable<u32>,
    order: Tree,
}

/// The member in slot `id` (which is in use).
fn member_of(slots: &[Slot], id: u32) -> &[u8] {
    match &slots[id as usize] {
        Slot::Used { member, .. } => member.as_slice(),
        Slot::Free { .. } => unreachable!("a free slot is never referenced"),
    }
}

impl Indexed {
    /// A set of entries already in order.
    pub fn from_sorted<'m>(entries: impl ExactSizeIterator<Item = (&'m [u8], f64)>) -> Indexed {
        let mut set = Indexed {
            slots: Vec::with_capacity(entries.len()),
            free: NO_SLOT,
            member_heap: 0,
            by_member: HashTable::with_capacity(entries.len()),
            order: Tree::default(),
        };
        let mut keys = Vec::with_capacity(entries.len());
        for (member, score) in entries {
            let id = set.occupy(member, score);
            set.index(id, member);
            keys.push(Key { score, id });
        }
        set.order = Tree::from_sorted(&keys);
        set
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn heap_size(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.member_heap
            + self.by_member.allocation_size()
            + self.order.heap_size()
    }

    fn member(&self, id: u32) -> &[u8] {
        member_of(&self.slots, id)
    }

    fn score_of(&self, id: u32) -> f64 {
        match self.slots[id as usize] {
            Slot::Used { score, .. } => score,
            Slot::Free { .. } => unreachable!("a free slot is never referenced"),
        }
    }

    fn find(&self, member: &[u8]) -> Option<u32> {
        let slots = &self.slots;
        self.by_member
            .find(hash_key(member), |&id| member_of(slots, id) == member)
            .copied()
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.find(member).map(|id| self.score_of(id))
    }

    /// Does the key sort before the entry (`score`, `member`)?
    fn before(&self, key: Key, score: f64, member: &[u8]) -> bool {
        super::sorts_before(self.member(key.id), key.score, member, score)
    }

    /// The rank the entry (`score`, `member`) has, or would have, in the order.
    fn rank_of(&self, score: f64, member: &[u8]) -> usize {
        self.order
            .partition_point(|key| self.before(key, score, member))
    }

    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let id = self.find(member)?;
        Some(self.rank_of(self.score_of(id), member))
    }

    /// The entry at `rank` (< len).
    pub fn get(&self, rank: usize) -> (&[u8], f64) {
        let key = self.order.get(rank);
        (self.member(key.id), key.score)
    }

    /// Add a member that is not in the set yet.
    pub fn insert(&mut self, member: &[u8], score: f64) {
        let id = self.occupy(member, score);
        self.index(id, member);
        let rank = self.rank_of(score, member);
        self.order.insert(rank, Key { score, id });
    }

    /// Give a member of the set a new score. A score that keeps the member between
    /// the same neighbours is changed in place.
    pub fn update(&mut self, member: &[u8], score: f64) {
        let id = self.find(member).expect("updating a member of the set");
        let rank = self.rank_of(self.score_of(id), member);
        let after_previous = rank == 0 || self.before(self.order.get(rank - 1), score, member);
        let before_next =
            rank + 1 == self.len() || !self.before(self.order.get(rank + 1), score, member);
        let key = Key { score, id };
        if after_previous && before_next {
            self.order.replace(rank, key);
        } else {
            self.order.remove(rank);
            let rank = self.rank_of(score, member);
            self.order.insert(rank, key);
        }
        if let Slot::Used { score: s, .. } = &mut self.slots[id as usize] {
            *s = score;
        }
    }

    /// Remove `member`; returns its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let slots = &self.slots;
        let (id, _) = self
            .by_member
            .find_entry(hash_key(member), |&id| member_of(slots, id) == member)
            .ok()?
            .remove();
        let score = self.score_of(id);
        let rank = self.rank_of(score, member);
        self.order.remove(rank);
        self.release(id);
        Some(score)
    }

    /// The first rank at or after `from` for which `pred` fails; `pred` holds for a
    /// prefix of the order.
    pub fn partition_point(&self, from: usize, mut pred: impl FnMut(&[u8], f64) -> bool) -> usize {
        self.order
            .partition_point(|key| pred(self.member(key.id), key.score))
            .max(from)
    }

    /// Call `f` with the entries whose ranks are in `ranks`, in order or in reverse.
    pub fn visit<'s>(
        &'s self,
        ranks: Range<usize>,
        reverse: bool,
        f: &mut impl FnMut(&'s [u8], f64),
    ) {
        self.order
            .visit(ranks, reverse, &mut |key| f(self.member(key.id), key.score));
    }

    /// Remove the entries whose ranks are in `ranks`, showing each to `f` first.
    pub fn remove_ranks(&mut self, ranks: Range<usize>, f: &mut impl FnMut(&[u8], f64)) {
        for _ in ranks.clone() {
            let key = self.order.remove(ranks.start);
            let member = member_of(&self.slots, key.id);
            f(member, key.score);
            self.by_member
                .find_entry(hash_key(member), |&id| id == key.id)
                .expect("every member is indexed")
                .remove();
            self.release(key.id);
        }
    }

    /// Visit up to `count` slots from `cursor` on, calling `f` with their entries;
    /// returns the cursor to continue from, 0 when done.
    pub fn scan<'s>(&'s self, cursor: u64, count: usize, f: &mut impl FnMut(&'s [u8], f64)) -> u64 {
        let start = usize::try_from(cursor)
            .unwrap_or(usize::MAX)
            .min(self.slots.len());
        let end = start.saturating_add(count).min(self.slots.len());
        for slot in &self.slots[start..end] {
            if let Slot::Used { member, score } = slot {
                f(member.as_slice(), *score);
            }
        }
        if end == self.slots.len() {
            0
        } else {
            end as u64
        }
    }

    /// Put an entry in a free slot; returns its id.
    fn occupy(&mut self, member: &[u8], score: f64) -> u32 {
        let member = SmallBytes::new(member);
        self.member_heap += member.heap_size();
        let slot = Slot::Used { member, score };
        if self.free == NO_SLOT {
            let id = u32::try_from(self.slots.len())
                .ok()
                .filter(|&id| id != NO_SLOT)
                .expect("a sorted set holds fewer than 2^32 - 1 members");
            self.slots.push(slot);
            return id;
        }
        let id = self.free;
        match std::mem::replace(&mut self.slots[id as usize], slot) {
            Slot::Free { next } => self.free = next,
            Slot::Used { .. } => unreachable!("the free list holds free slots"),
        }
        id
    }

    /// Free slot `id` (already out of the index and the order).
    fn release(&mut self, id: u32) {
        let freed = Slot::Free { next: self.free };
        if let Slot::Used { member, .. } = std::mem::replace(&mut self.slots[id as usize], freed) {
            self.member_heap -= member.heap_size();
        }
        self.free = id;
    }

    fn index(&mut self, id: u32, member: &[u8]) {
        let slots = &self.slots;
        self.by_member
            .insert_unique(hash_key(member), id, |&id| hash_key(member_of(slots, id)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_32_bytes() {
        assert_eq!(std::mem::size_of::<Slot>(), 32);
    }

    #[test]
    fn freed_slots_are_reused_and_scan_sees_every_member() {
        let mut set = Indexed::from_sorted(std::iter::empty());
        for i in 0..100u32 {
            set.insert(format!("m{i}").as_bytes(), f64::from(i % 7));
        }
        for i in (0..100u32).step_by(2) {
            assert_eq!(
                set.remove(format!("m{i}").as_bytes()),
                Some(f64::from(i % 7))
            );
        }
        set.insert(b"new", 3.5);
        assert_eq!(set.slots.len(), 100);
        let mut seen = Vec::new();
        let mut cursor = 0;
        loop {
            cursor = set.scan(cursor, 7, &mut |m, _| seen.push(m.to_vec()));
            if cursor == 0 {
                break;
            }
        }
        assert_eq!(seen.len(), 51);
        assert_eq!(set.len(), 51);
    }
}
