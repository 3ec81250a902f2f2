//! [`Index`]: finds a field's position in a hashtable-encoded hash, and never stalls
//! for long while it grows.
//!
//! A single hashbrown table rehashes every entry at once when it grows: for a hash of
//! a million fields that is a pause of a hundred milliseconds or more, during which
//! the key's shard is locked. So the index is split into segments by the top bits of
//! the field hashes (extendible hashing): each segment is a small hashbrown table, and
//! when one is full it splits in two by the next bit instead of doubling, which moves
//! at most one segment's worth of slots. A directory of `2^depth` entries maps the top
//! `depth` bits to a segment; several entries share a segment until it splits.
//!
//! A slot holds the position of the pair and 32 bits of its field's hash, so that
//! growing or splitting never has to read the fields again (reading them means a
//! cache miss per field), and most mismatches are rejected without touching them.

use hashbrown::HashTable;

/// A segment is split rather than grown once it holds this many buckets.
const SEGMENT_BUCKETS: usize = 1 << 14;

/// hashbrown fills a table to 7/8 of its buckets.
const SEGMENT_CAPACITY: usize = SEGMENT_BUCKETS / 8 * 7;

/// Most top bits the directory uses; hashbrown takes the low bits of the same 32-bit
/// hash to pick buckets inside a segment, so both together stay within 32.
const MAX_DEPTH: u32 = 32 - SEGMENT_BUCKETS.trailing_zeros();

/// Spreads a 32-bit hash over the 64 bits hashbrown reads: the low bits (bucket)
/// depend on the low bits of `hash`, the top seven (tag) on all of them, so slots
/// of one segment, which share their top bits, still get varied tags.
fn spread(hash: u32) -> u64 {
    u64::from(hash).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

#[derive(Clone, Copy)]
struct Slot {
    position: u32,
    hash: u32,
}

#[derive(Clone)]
struct Segment {
    slots: HashTable<Slot>,
    /// How many top bits all of this segment's hashes share.
    depth: u32,
}

#[derive(Clone)]
pub struct Index {
    /// Segment number for each value of the top `depth` bits of a hash.
    directory: Vec<u32>,
    depth: u32,
    segments: Vec<Segment>,
}

impl Index {
    pub fn with_capacity(n: usize) -> Index {
        Index {
            directory: vec![0],
            depth: 0,
            segments: vec![Segment {
                slots: HashTable::with_capacity(n.min(SEGMENT_CAPACITY)),
                depth: 0,
            }],
        }
    }

    /// Bytes allocated: the directory, the segment headers and every bucket (a slot
    /// plus hashbrown's control byte).
    pub fn heap_size(&self) -> usize {
        let buckets: usize = self
            .segments
            .iter()
            .map(|s| s.slots.capacity() * 8 / 7)
            .sum();
        self.directory.capacity() * std::mem::size_of::<u32>()
            + self.segments.capacity() * std::mem::size_of::<Segment>()
            + buckets * (std::mem::size_of::<Slot>() + 1)
    }

    fn segment_of(&self, hash: u32) -> usize {
        let top = hash.checked_shr(32 - self.depth).unwrap_or(0);
        self.directory[top as usize] as usize
    }

    /// The position whose slot has `hash` and for which `is_it` holds.
    pub fn find(&self, hash: u32, mut is_it: impl FnMut(u32) -> bool) -> Option<u32> {
        self.segments[self.segment_of(hash)]
            .slots
            .find(spread(hash), |s| s.hash == hash && is_it(s.position))
            .map(|s| s.position)
    }

    /// Point the slot of `hash` and position `from` at position `to`.
    pub fn move_position(&mut self, hash: u32, from: u32, to: u32) {
        let segment = self.segment_of(hash);
        let slot = self.segments[segment]
            .slots
            .find_mut(spread(hash), |s| s.hash == hash && s.position == from)
            .expect("every position is indexed");
        slot.position = to;
    }

    /// Index a position that is not indexed yet.
    pub fn insert(&mut self, hash: u32, position: u32) {
        let mut segment = self.segment_of(hash);
        while self.is_full(segment) && self.segments[segment].depth < MAX_DEPTH {
            self.split(segment);
            segment = self.segment_of(hash);
        }
        self.segments[segment]
            .slots
            .insert_unique(spread(hash), Slot { position, hash }, |s| spread(s.hash));
    }

    /// Remove the slot of `hash` for which `is_it` holds; returns its position.
    pub fn remove(&mut self, hash: u32, mut is_it: impl FnMut(u32) -> bool) -> Option<u32> {
        let at = self.segment_of(hash);
        let segment = &mut self.segments[at];
        let found = segment
            .slots
            .find_entry(spread(hash), |s| s.hash == hash && is_it(s.position))
            .ok()?;
        let position = found.remove().0.position;
        let slots = &mut segment.slots;
        // Give memory back once a segment is mostly empty, keeping room to grow.
        if slots.capacity() > 64 && slots.len() * 8 < slots.capacity() {
            slots.shrink_to(slots.len() * 2, |s| spread(s.hash));
        }
        Some(position)
    }

    /// Would the next insertion make hashbrown grow the segment past
    /// [`SEGMENT_BUCKETS`]? hashbrown grows a table that has no room left (removed
    /// slots still take room) when the new slot would make it more than half full;
    /// otherwise it only clears the removed slots in place. Half of a full-size
    /// segment's capacity or more fits in no smaller segment.
    fn is_full(&self, segment: usize) -> bool {
        let slots = &self.segments[segment].slots;
        slots.len() == slots.capacity() && slots.len() >= SEGMENT_CAPACITY / 2
    }

    /// Split a full segment by the next bit of its hashes: the slots with that bit set
    /// move to a new segment, and the directory entries for them follow.
    fn split(&mut self, segment: usize) {
        let depth = self.segments[segment].depth;
        if depth == self.depth {
            self.directory = (0..self.directory.len() * 2)
                .map(|i| self.directory[i / 2])
                .collect();
            self.depth += 1;
        }
        let bit = 1u32 << (31 - depth);
        let mut moved = HashTable::with_capacity(SEGMENT_CAPACITY);
        for slot in self.segments[segment]
            .slots
            .extract_if(|s| s.hash & bit != 0)
        {
            moved.insert_unique(spread(slot.hash), slot, |s| spread(s.hash));
        }
        let new = u32::try_from(self.segments.len()).expect("fewer than 2^32 segments");
        self.segments[segment].depth = depth + 1;
        self.segments.push(Segment {
            slots: moved,
            depth: depth + 1,
        });
        // The directory entries of the old segment whose next bit is set: with
        // `self.depth` bits per entry, that bit sits `self.depth - depth - 1` from
        // the bottom.
        let shift = self.depth - depth - 1;
        for (top, entry) in self.directory.iter_mut().enumerate() {
            if *entry as usize == segment && (top >> shift) & 1 == 1 {
                *entry = new;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hashes that fill segments unevenly: many share their top bits.
    fn hash_of(i: u32) -> u32 {
        let h = i.wrapping_mul(0x85eb_ca6b).rotate_left(13);
        if i.is_multiple_of(3) {
            h & 0x0fff_ffff
        } else {
            h
        }
    }

    #[test]
    fn splits_keep_every_position_findable() {
        let n = 200_000u32;
        let mut index = Index::with_capacity(0);
        for i in 0..n {
            index.insert(hash_of(i), i);
        }
        assert!(
            index.segments.len() > 8,
            "{} segments",
            index.segments.len()
        );
        for segment in &index.segments {
            assert!(segment.slots.capacity() <= SEGMENT_CAPACITY);
        }
        for i in 0..n {
            assert_eq!(index.find(hash_of(i), |p| p == i), Some(i), "{i}");
        }
        for i in (0..n).step_by(2) {
            assert_eq!(index.remove(hash_of(i), |p| p == i), Some(i));
        }
        for i in 0..n {
            let expected = (!i.is_multiple_of(2)).then_some(i);
            assert_eq!(index.find(hash_of(i), |p| p == i), expected, "{i}");
        }
        index.move_position(hash_of(1), 1, 7);
        assert_eq!(index.find(hash_of(1), |p| p == 7), Some(7));
        assert!(index.heap_size() > (n as usize / 2) * 9);
    }
}
