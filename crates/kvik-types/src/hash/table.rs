//! [`Table`]: the hashtable encoding of a large hash.
//!
//! The pairs live in a vector, each a [`PackedPair`] (one thin pointer to one
//! allocation), and an [`Index`] of positions into that vector finds a field by its
//! hash. Against Redis's dict (a bucket pointer, a 24-byte entry and two strings per
//! field) this spends 8 bytes of vector slot, 9 bytes per index bucket and a single
//! allocation per field.
//!
//! The vector also gives every field a position, which is what HSCAN's cursor and
//! HRANDFIELD use:
//! - A field is removed by moving the last pair into its place (`swap_remove`), and a
//!   new field goes at the end. Pairs therefore only ever move *down*, from the last
//!   position to a lower one, and positions never change otherwise (growing or
//!   shrinking the vector or the index keeps them).
//! - [`Table::scan`] walks positions from the top down, and its cursor is the
//!   position below which nothing has been visited yet. A pair that sits below the
//!   cursor stays below it (it can only move down), so a field present for the whole
//!   scan is returned at least once, whatever is inserted or removed in between. A
//!   field may come back twice (when the last pair, already visited, moves into a hole
//!   below the cursor), which SCAN's contract allows.
//! - A random field is a random position: exactly uniform, O(1).

use super::index::Index;
use super::pair::PackedPair;
use kvik_util::size_class::size_class;
use std::hash::BuildHasher;
use std::sync::LazyLock;

/// One seed for every hash's fields, drawn at start-up, so that field hashes cannot be
/// predicted from outside.
static FIELD_HASHER: LazyLock<foldhash::fast::FixedState> =
    LazyLock::new(|| foldhash::fast::FixedState::with_seed(rand::random()));

/// The 32 bits of a field's hash the index keeps.
fn field_hash(field: &[u8]) -> u32 {
    (FIELD_HASHER.hash_one(field) >> 32) as u32
}

/// Below this many slots, a sparse vector of pairs is not worth shrinking.
const MIN_SHRINK_CAPACITY: usize = 64;

#[derive(Clone)]
pub struct Table {
    /// The pairs; see the module documentation for how they move.
    pairs: Vec<PackedPair>,
    /// Positions in `pairs`, keyed by the hash of the field there.
    index: Index,
    /// Bytes the allocator hands out for the pairs themselves.
    pair_bytes: usize,
}

impl Table {
    pub fn with_capacity(n: usize) -> Table {
        Table {
            pairs: Vec::with_capacity(n),
            index: Index::with_capacity(n),
            pair_bytes: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn heap_size(&self) -> usize {
        self.pairs.capacity() * std::mem::size_of::<PackedPair>()
            + self.index.heap_size()
            + self.pair_bytes
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        let at = self.position(field)?;
        Some(self.pairs[at].value())
    }

    fn position(&self, field: &[u8]) -> Option<usize> {
        let pairs = &self.pairs;
        self.index
            .find(field_hash(field), |at| pairs[at as usize].field() == field)
            .map(|at| at as usize)
    }

    /// The pair at a position below [`Table::len`].
    pub fn pair_at(&self, at: usize) -> (&[u8], &[u8]) {
        self.pairs[at].get()
    }

    pub fn iter(&self) -> Iter<'_> {
        Iter(self.pairs.iter())
    }

    /// Set `field` to `value`; returns whether the field is new.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        let new = PackedPair::new(field, value);
        self.pair_bytes += size_class(new.alloc_size());
        let hash = field_hash(field);
        let pairs = &self.pairs;
        if let Some(at) = self
            .index
            .find(hash, |at| pairs[at as usize].field() == field)
        {
            let old = std::mem::replace(&mut self.pairs[at as usize], new);
            self.pair_bytes -= size_class(old.alloc_size());
            return false;
        }
        let at = u32::try_from(self.pairs.len()).expect("a hash holds under 2^32 fields");
        self.index.insert(hash, at);
        self.pairs.push(new);
        true
    }

    /// Remove `field`; returns whether it was there. The last pair takes its place.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        let pairs = &self.pairs;
        let Some(at) = self
            .index
            .remove(field_hash(field), |at| pairs[at as usize].field() == field)
        else {
            return false;
        };
        let last = (self.pairs.len() - 1) as u32;
        if at != last {
            let moved = field_hash(self.pairs[last as usize].field());
            self.index.move_position(moved, last, at);
        }
        let removed = self.pairs.swap_remove(at as usize);
        self.pair_bytes -= size_class(removed.alloc_size());
        if self.pairs.capacity() >= MIN_SHRINK_CAPACITY
            && self.pairs.len() * 8 <= self.pairs.capacity()
        {
            self.pairs.shrink_to(self.pairs.len() * 2);
        }
        true
    }

    /// Visit up to `count` pairs below `cursor` (0: start from the top), from the top
    /// down; returns the cursor to continue from, 0 when every position has been
    /// visited. See the module documentation for why nothing is missed.
    pub fn scan<'a>(
        &'a self,
        cursor: u64,
        count: usize,
        mut visit: impl FnMut(&'a [u8], &'a [u8]),
    ) -> u64 {
        let len = self.pairs.len();
        let top = match cursor {
            0 => len,
            c => usize::try_from(c).map_or(len, |c| c.min(len)),
        };
        let bottom = top.saturating_sub(count);
        for pair in self.pairs[bottom..top].iter().rev() {
            let (field, value) = pair.get();
            visit(field, value);
        }
        bottom as u64
    }
}

/// The pairs of a table, by position.
pub struct Iter<'a>(std::slice::Iter<'a, PackedPair>);

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(PackedPair::get)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl ExactSizeIterator for Iter<'_> {}
