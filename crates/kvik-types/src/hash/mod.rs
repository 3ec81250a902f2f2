//! A hash: a map of fields to values, both byte strings.
//!
//! Two encodings, as in Redis 7.0, with the names OBJECT ENCODING reports:
//! - `listpack` ([`Listpack`]): every pair in one buffer, in insertion order, while
//!   the hash has at most `hash-max-listpack-entries` fields and no field or value
//!   longer than `hash-max-listpack-value` bytes;
//! - `hashtable` ([`Table`]): O(1) lookups once either limit is passed.
//!
//! A hash converts when an insertion passes a limit and never converts back. The
//! conversion keeps the order, so even a hashtable lists its fields in insertion
//! order until the first removal (Redis's dict order is unspecified; clients cannot
//! rely on either).

mod index;
mod listpack;
mod pair;
mod table;
mod varint;

use crate::member_expiry::{Expiring, MemberDeadlines, MemberExpiry};
use listpack::Listpack;
use std::fmt;
use table::Table;

/// Past these, a hash leaves the listpack encoding (Redis's `hash-max-listpack-*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_listpack_entries: usize,
    pub max_listpack_value: usize,
}

impl Default for Limits {
    /// Redis 7.0's defaults.
    fn default() -> Self {
        Limits {
            max_listpack_entries: 512,
            max_listpack_value: 64,
        }
    }
}

/// Redis never lets a listpack grow past 1 GB, whatever the limits say.
const LISTPACK_MAX_BYTES: usize = 1 << 30;

/// A hash in one of its two encodings.
#[derive(Clone)]
pub struct Hash(Expiring<Encoding>);

#[derive(Clone)]
enum Encoding {
    Listpack(Listpack),
    Table(Box<Table>),
}

impl Default for Hash {
    fn default() -> Self {
        Hash(Encoding::default().into())
    }
}

impl Default for Encoding {
    fn default() -> Self {
        Encoding::Listpack(Listpack::default())
    }
}

impl Hash {
    /// The encoding name OBJECT ENCODING reports.
    pub fn encoding_name(&self) -> &'static str {
        match &*self.0 {
            Encoding::Listpack(_) => "listpack",
            Encoding::Table(_) => "hashtable",
        }
    }

    /// Approximate heap bytes owned.
    pub fn heap_size(&self) -> usize {
        let repr = match &*self.0 {
            Encoding::Listpack(l) => l.heap_size(),
            Encoding::Table(t) => std::mem::size_of::<Table>() + t.heap_size(),
        };
        repr + self.0.deadlines_heap_size()
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        match &*self.0 {
            Encoding::Listpack(l) => l.len(),
            Encoding::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &*self.0 {
            Encoding::Listpack(l) => l.get(field),
            Encoding::Table(t) => t.get(field),
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Every field and its value: insertion order for a listpack, unspecified for a
    /// hashtable.
    pub fn iter(&self) -> Iter<'_> {
        match &*self.0 {
            Encoding::Listpack(l) => Iter(Pairs::Listpack(l.iter())),
            Encoding::Table(t) => Iter(Pairs::Table(t.iter())),
        }
    }

    /// Set `field` to `value`; returns whether the field is new. Converts to a
    /// hashtable first when the field or the value is too long for a listpack, and
    /// after, when the listpack has too many fields.
    pub fn insert(&mut self, field: &[u8], value: &[u8], limits: Limits) -> bool {
        if let Encoding::Listpack(l) = &*self.0 {
            let too_long = field.len().max(value.len()) > limits.max_listpack_value;
            if too_long || l.byte_len() + field.len() + value.len() > LISTPACK_MAX_BYTES {
                self.convert_to_table();
            }
        }
        match &mut *self.0 {
            Encoding::Listpack(l) => {
                let new = l.insert(field, value);
                if l.len() > limits.max_listpack_entries {
                    self.convert_to_table();
                }
                new
            }
            Encoding::Table(t) => t.insert(field, value),
        }
    }

    /// Remove `field`; returns whether it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        let removed = match &mut *self.0 {
            Encoding::Listpack(l) => l.remove(field),
            Encoding::Table(t) => t.remove(field),
        };
        if removed {
            self.0.forget(field);
        }
        removed
    }

    fn convert_to_table(&mut self) {
        if let Encoding::Listpack(l) = &*self.0 {
            let mut table = Table::with_capacity(l.len());
            for (field, value) in l.iter() {
                table.insert(field, value);
            }
            *self.0 = Encoding::Table(Box::new(table));
        }
    }

    /// One step of HSCAN: visit pairs from `cursor` on and return the cursor of the
    /// next step (0: done). A listpack is visited whole in one step, as Redis does; a
    /// hashtable `count` pairs at a time, never missing a field that is present from
    /// the first step to the last (see [`table`]'s documentation).
    pub fn scan<'a>(
        &'a self,
        cursor: u64,
        count: usize,
        mut visit: impl FnMut(&'a [u8], &'a [u8]),
    ) -> u64 {
        match &*self.0 {
            Encoding::Listpack(l) => {
                l.iter().for_each(|(f, v)| visit(f, v));
                0
            }
            Encoding::Table(t) => t.scan(cursor, count, visit),
        }
    }

    /// The pairs by position, for picking at random: O(1) per pick (a listpack is
    /// indexed once, in O(N)).
    pub fn positions(&self) -> Positions<'_> {
        match &*self.0 {
            Encoding::Listpack(l) => Positions(Indexed::Listed(l.iter().collect())),
            Encoding::Table(t) => Positions(Indexed::Table(t)),
        }
    }
}

/// The pairs of a hash, by position (see [`Hash::positions`]).
pub struct Positions<'a>(Indexed<'a>);

enum Indexed<'a> {
    Listed(Vec<(&'a [u8], &'a [u8])>),
    Table(&'a Table),
}

impl<'a> Positions<'a> {
    pub fn len(&self) -> usize {
        match &self.0 {
            Indexed::Listed(pairs) => pairs.len(),
            Indexed::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pair at `at`, below [`Positions::len`].
    pub fn get(&self, at: usize) -> (&'a [u8], &'a [u8]) {
        match &self.0 {
            Indexed::Listed(pairs) => pairs[at],
            Indexed::Table(t) => t.pair_at(at),
        }
    }
}

/// The pairs of a hash (see [`Hash::iter`]).
pub struct Iter<'a>(Pairs<'a>);

enum Pairs<'a> {
    Listpack(listpack::Iter<'a>),
    Table(table::Iter<'a>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            Pairs::Listpack(i) => i.next(),
            Pairs::Table(i) => i.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            Pairs::Listpack(i) => i.size_hint(),
            Pairs::Table(i) => i.size_hint(),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

/// Equal when they map the same fields to the same values, whatever their encodings
/// and orders.
impl PartialEq for Hash {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(f, v)| other.get(f) == Some(v))
    }
}

impl fmt::Debug for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        write!(f, "{} ", self.encoding_name())?;
        f.debug_map()
            .entries(self.iter().map(|(k, v)| (text(k), text(v))))
            .finish()
    }
}

#[cfg(test)]
mod tests;

impl MemberExpiry for Hash {
    fn deadlines(&self) -> Option<&MemberDeadlines> {
        self.0.deadlines()
    }
    fn deadlines_mut(&mut self) -> &mut MemberDeadlines {
        self.0.deadlines_mut()
    }
    fn tidy_deadlines(&mut self) {
        self.0.tidy()
    }
    fn has_member(&self, member: &[u8]) -> bool {
        self.contains(member)
    }
    fn remove_member(&mut self, member: &[u8]) -> bool {
        self.remove(member)
    }
    fn member_count(&self) -> usize {
        self.len()
    }
}
