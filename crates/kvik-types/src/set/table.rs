//! The hashtable encoding: members side by side in one dense array, found through a
//! hash index that stores only their positions (4 bytes each).
//!
//! Why this shape rather than a hash set of members:
//! - memory: a member costs its 24-byte [`SmallBytes`] (inline up to 22 bytes) plus a
//!   4-byte slot and a control byte in the index, against Redis's 24-byte dict entry,
//!   its sds string and an 8-byte bucket;
//! - a uniformly random member (SPOP, SRANDMEMBER) is one random position, with no
//!   probing for a non-empty bucket;
//! - a scan cursor that survives growth (see [`MemberTable::scan`]).
//!
//! Removal moves the last member into the freed position (and repoints its index
//! slot), so the array stays dense; both halves shrink once mostly empty.
//!
//! The array grows by about a quarter at a time, to sizes that fill the allocator's
//! size classes (see [`capacity_for`]). The index is a hashbrown table and doubles: the
//! step from n to 2n members rehashes it at once (some milliseconds per million
//! members), not incrementally as Redis's dict does.

use crate::SmallBytes;
use hashbrown::hash_table::{Entry, HashTable};
use std::hash::BuildHasher;
use std::sync::LazyLock;

/// Members are hashed with a per-process seed, so clients cannot aim them at one slot.
static HASHER: LazyLock<foldhash::fast::FixedState> =
    LazyLock::new(|| foldhash::fast::FixedState::with_seed(rand::random()));

fn hash_of(member: &[u8]) -> u64 {
    HASHER.hash_one(member)
}

/// Below this many slots a table is not worth shrinking.
const MIN_SHRINK_CAPACITY: usize = 64;

/// The capacity to grow the member array to when it must hold `needed` members: the
/// most that fits the allocator's size class for that many. jemalloc has four size
/// classes per doubling (between 2^k and 2^(k+1) bytes they are 2^(k-2) apart), so
/// at most a fifth of the array is spare and no bytes are lost to rounding, where
/// doubling could leave half of it empty and then round up. Growth stays geometric,
/// so pushing is still amortised O(1).
fn capacity_for(needed: usize) -> usize {
    const SLOT: usize = std::mem::size_of::<SmallBytes>();
    let bytes = needed * SLOT;
    let spacing = (bytes.next_power_of_two() / 8).max(64);
    bytes.div_ceil(spacing) * spacing / SLOT
}

#[derive(Clone, Default)]
pub struct MemberTable {
    members: Vec<SmallBytes>,
    /// Positions in `members`, hashed by the member they point at.
    index: HashTable<u32>,
}

impl MemberTable {
    pub fn with_capacity(capacity: usize) -> Self {
        MemberTable {
            members: Vec::with_capacity(capacity),
            index: HashTable::with_capacity(capacity),
        }
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The member at `position` (0 <= position < len).
    pub fn get(&self, position: usize) -> &[u8] {
        self.members[position].as_slice()
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.members.iter().map(SmallBytes::as_slice)
    }

    pub fn contains(&self, member: &[u8]) -> bool {
        let members = &self.members;
        self.index
            .find(hash_of(member), |&at| {
                members[at as usize].as_slice() == member
            })
            .is_some()
    }

    /// Add `member`; false if it was already there.
    pub fn insert(&mut self, member: &[u8]) -> bool {
        let position = u32::try_from(self.members.len()).expect("a set holds under 2^32 members");
        let members = &self.members;
        let entry = self.index.entry(
            hash_of(member),
            |&at| members[at as usize].as_slice() == member,
            |&at| hash_of(members[at as usize].as_slice()),
        );
        match entry {
            Entry::Occupied(_) => false,
            Entry::Vacant(slot) => {
                slot.insert(position);
                if self.members.len() == self.members.capacity() {
                    let room = capacity_for(self.members.len() + 1) - self.members.len();
                    self.members.reserve_exact(room);
                }
                self.members.push(SmallBytes::new(member));
                true
            }
        }
    }

    /// Remove `member`; false if it was not there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        let members = &self.members;
        let found = self.index.find_entry(hash_of(member), |&at| {
            members[at as usize].as_slice() == member
        });
        match found {
            Ok(slot) => {
                let at = slot.remove().0 as usize;
                self.close_gap(at);
                true
            }
            Err(_) => false,
        }
    }

    /// Remove and return the member at `position`.
    pub fn remove_at(&mut self, position: usize) -> SmallBytes {
        let hash = hash_of(self.members[position].as_slice());
        self.index
            .find_entry(hash, |&at| at as usize == position)
            .unwrap_or_else(|_| unreachable!("every member is indexed"))
            .remove();
        self.close_gap(position)
    }

    /// Take the member at `position` out of the array (its index slot is already
    /// gone) by moving the last member into its place.
    fn close_gap(&mut self, position: usize) -> SmallBytes {
        let last = self.members.len() - 1;
        if position != last {
            let hash = hash_of(self.members[last].as_slice());
            let slot = self
                .index
                .find_mut(hash, |&at| at as usize == last)
                .unwrap_or_else(|| unreachable!("every member is indexed"));
            *slot = position as u32;
        }
        let taken = self.members.swap_remove(position);
        self.shrink_if_sparse();
        taken
    }

    /// Give memory back once three quarters of the room is unused, keeping room
    /// for as many members again (so alternating adds and removes cannot thrash).
    fn shrink_if_sparse(&mut self) {
        let len = self.members.len();
        if self.members.capacity() > MIN_SHRINK_CAPACITY && len * 4 <= self.members.capacity() {
            self.members.shrink_to(len * 2);
        }
        if self.index.capacity() > MIN_SHRINK_CAPACITY && len * 4 <= self.index.capacity() {
            let members = &self.members;
            self.index
                .shrink_to(len * 2, |&at| hash_of(members[at as usize].as_slice()));
        }
    }

    /// Visit up to `count` members from `cursor` on and return the cursor to continue
    /// from (0 when done; 0 also starts a scan).
    ///
    /// The cursor is a position in the member array, and a scan walks it from the end
    /// towards the front: cursor `c` means "positions below `c` remain". A removal
    /// only ever moves a member from the end to a lower position, and additions go at
    /// the end, so a member that is in the set for the whole scan can only move
    /// further into the part still to visit: it is returned at least once, whatever
    /// the set grew or shrank to between calls. A member moved that way after being
    /// returned may be returned again, as Redis also allows. A cursor past the end
    /// (the set shrank, or it came from elsewhere) is read as the end.
    pub fn scan<'s>(&'s self, cursor: u64, count: usize, mut visit: impl FnMut(&'s [u8])) -> u64 {
        let len = self.members.len();
        let end = match usize::try_from(cursor) {
            Ok(0) | Err(_) => len,
            Ok(c) => c.min(len),
        };
        let start = end.saturating_sub(count.max(1));
        for member in self.members[start..end].iter().rev() {
            visit(member.as_slice());
        }
        start as u64
    }

    /// Approximate heap bytes: the array, the index and long members' own buffers.
    pub fn heap_size(&self) -> usize {
        let array = self.members.capacity() * std::mem::size_of::<SmallBytes>();
        let long_members: usize = self.members.iter().map(SmallBytes::heap_size).sum();
        array + self.index.allocation_size() + long_members
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table_of(n: usize) -> MemberTable {
        let mut t = MemberTable::default();
        for i in 0..n {
            assert!(t.insert(format!("m{i}").as_bytes()));
        }
        t
    }

    #[test]
    fn insert_remove_contains() {
        let mut t = table_of(100);
        assert!(!t.insert(b"m5"));
        assert!(t.contains(b"m99"));
        assert!(t.remove(b"m0"));
        assert!(!t.remove(b"m0"));
        assert!(!t.contains(b"m0"));
        assert_eq!(t.len(), 99);
        // The last member moved into the freed position and is still found.
        assert_eq!(t.get(0), b"m99");
        assert!(t.contains(b"m99"));
        let taken = t.remove_at(0);
        assert_eq!(taken.as_slice(), b"m99");
        assert!(!t.contains(b"m99"));
        for i in 1..99 {
            assert!(t.contains(format!("m{i}").as_bytes()), "m{i}");
        }
    }

    #[test]
    fn the_array_grows_to_whole_size_classes() {
        assert_eq!(capacity_for(1), 2, "64 bytes");
        assert_eq!(capacity_for(1_000_000), 1 << 20, "24 MiB");
        assert_eq!(capacity_for(600_000), 14 * 1024 * 1024 / 24, "14 MiB");
        // Past the smallest sizes (where the minimum spacing makes bigger steps).
        let mut grown = 1000;
        while grown < 10_000_000 {
            let next = capacity_for(grown + 1);
            assert!(
                next * 4 <= grown * 5 + 8,
                "{grown} -> {next}: at most a quarter more"
            );
            grown = next;
        }
    }

    #[test]
    fn shrinks_when_emptied() {
        let mut t = table_of(10_000);
        for i in 0..9_990 {
            assert!(t.remove(format!("m{i}").as_bytes()));
        }
        assert!(t.heap_size() < 10_000, "{}", t.heap_size());
        for i in 9_990..10_000 {
            assert!(t.contains(format!("m{i}").as_bytes()));
        }
    }

    #[test]
    fn a_scan_sees_every_member_that_stays_despite_growth_and_removals() {
        let mut t = table_of(1000);
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut round = 0;
        loop {
            cursor = t.scan(cursor, 37, |m| {
                seen.insert(m.to_vec());
            });
            // Between calls: grow a lot, and remove members that are not "stable"
            // (the stable ones are m0..m499).
            for i in 0..50 {
                t.insert(format!("new{round}-{i}").as_bytes());
            }
            for i in 0..20 {
                t.remove(format!("m{}", 500 + round * 20 + i).as_bytes());
            }
            round += 1;
            if cursor == 0 {
                break;
            }
        }
        for i in 0..500 {
            assert!(seen.contains(format!("m{i}").as_bytes()), "m{i} missed");
        }
    }
}
