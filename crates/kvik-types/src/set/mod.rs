//! A set: its two encodings and the operations the set commands are built from.
//!
//! As in Redis 7.0, a set is an [`IntSet`] (sorted packed integers) while every
//! member is an integer in canonical form and there are at most
//! `set-max-intset-entries` of them, and a [`MemberTable`] (OBJECT ENCODING
//! "hashtable") from the first member that breaks either rule on. It never goes
//! back, except that a set built afresh ([`Set::collect`], [`Set::rebuilt`]) picks
//! its encoding from its members again, which is what Redis's commands that build a
//! new set (SINTERSTORE, SPOP leaving few members, ...) do.
//!
//! Members are byte strings to clients. An intset member is the integer whose
//! canonical decimal form (`parse_i64`) is those bytes, so `01` or `+1` are never
//! intset members; [`MemberRef`] carries either form so that integers read from an
//! intset are not turned into text and back.

mod intset;
mod table;

use crate::member_expiry::{Expiring, MemberDeadlines, MemberExpiry};
use crate::SmallBytes;
pub use intset::IntSet;
use kvik_util::numbers::parse_i64;
use std::fmt;
use table::MemberTable;

/// A member as stored: an intset's integer or a hashtable's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberRef<'a> {
    Int(i64),
    Bytes(&'a [u8]),
}

impl<'a> MemberRef<'a> {
    /// The member as clients see it, formatting an integer into `digits`.
    pub fn bytes<'b>(self, digits: &'b mut itoa::Buffer) -> &'b [u8]
    where
        'a: 'b,
    {
        match self {
            MemberRef::Int(v) => digits.format(v).as_bytes(),
            MemberRef::Bytes(b) => b,
        }
    }

    /// The integer an intset would store this member as, if any.
    fn as_int(self) -> Option<i64> {
        match self {
            MemberRef::Int(v) => Some(v),
            MemberRef::Bytes(b) => parse_i64(b),
        }
    }

    pub fn to_owned(self) -> Member {
        match self {
            MemberRef::Int(v) => Member::Int(v),
            MemberRef::Bytes(b) => Member::Bytes(SmallBytes::new(b)),
        }
    }
}

/// A member taken out of a set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Member {
    Int(i64),
    Bytes(SmallBytes),
}

impl Member {
    pub fn as_ref(&self) -> MemberRef<'_> {
        match self {
            Member::Int(v) => MemberRef::Int(*v),
            Member::Bytes(b) => MemberRef::Bytes(b.as_slice()),
        }
    }
}

#[derive(Clone)]
enum Repr {
    Ints(IntSet),
    /// Boxed so that the many small sets stay small.
    Table(Box<MemberTable>),
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Ints(IntSet::default())
    }
}

/// A set of byte strings.
#[derive(Clone)]
pub struct Set {
    repr: Expiring<Repr>,
}

impl Default for Set {
    fn default() -> Self {
        Set {
            repr: Repr::default().into(),
        }
    }
}

impl Set {
    /// A set of the given members, encoded as a new set holding them would be.
    pub fn collect<'m>(members: impl IntoIterator<Item = MemberRef<'m>>, max_intset: usize) -> Set {
        let mut set = Set::default();
        for member in members {
            set.insert_member(member, max_intset);
        }
        set
    }

    /// The same members in a new set, encoded afresh, without member deadlines; a
    /// hashtable that stays one keeps its members' order.
    pub fn rebuilt(&self, max_intset: usize) -> Set {
        match &*self.repr {
            Repr::Ints(ints) => Set {
                repr: Repr::Ints(ints.clone()).into(),
            },
            Repr::Table(t) => Set::collect(t.iter().map(MemberRef::Bytes), max_intset),
        }
    }

    /// Encode this set afresh (after many removals), keeping its member deadlines.
    pub fn rebuild(&mut self, max_intset: usize) {
        let deadlines = self.repr.deadlines().cloned();
        let mut fresh = self.rebuilt(max_intset);
        if let Some(deadlines) = deadlines {
            *fresh.repr.deadlines_mut() = deadlines;
        }
        *self = fresh;
    }

    /// A set of the members of `ints`, kept in their width as Redis keeps a loaded
    /// intset, unless they are more than `max_intset`.
    pub fn from_intset(ints: IntSet, max_intset: usize) -> Set {
        let mut set = Set {
            repr: Repr::Ints(ints).into(),
        };
        if set.len() > max_intset {
            set.convert_to_table();
        }
        set
    }

    /// The intset, when that is the encoding.
    pub fn as_intset(&self) -> Option<&IntSet> {
        match &*self.repr {
            Repr::Ints(ints) => Some(ints),
            Repr::Table(_) => None,
        }
    }

    /// The encoding name OBJECT ENCODING reports.
    pub fn encoding_name(&self) -> &'static str {
        match *self.repr {
            Repr::Ints(_) => "intset",
            Repr::Table(_) => "hashtable",
        }
    }

    /// Approximate heap bytes owned.
    pub fn heap_size(&self) -> usize {
        let repr = match &*self.repr {
            Repr::Ints(s) => s.heap_size(),
            Repr::Table(t) => std::mem::size_of::<MemberTable>() + t.heap_size(),
        };
        repr + self.repr.deadlines_heap_size()
    }

    pub fn len(&self) -> usize {
        match &*self.repr {
            Repr::Ints(s) => s.len(),
            Repr::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        match &*self.repr {
            Repr::Ints(s) => s.is_empty(),
            Repr::Table(t) => t.is_empty(),
        }
    }

    /// Is `member` (as a client sent it) in the set?
    pub fn contains(&self, member: &[u8]) -> bool {
        self.contains_member(MemberRef::Bytes(member))
    }

    pub fn contains_member(&self, member: MemberRef) -> bool {
        match &*self.repr {
            Repr::Ints(s) => member.as_int().is_some_and(|v| s.contains(v)),
            Repr::Table(t) => t.contains(member.bytes(&mut itoa::Buffer::new())),
        }
    }

    /// Add `member`, converting to a hashtable when it, or the new size, no longer
    /// fits an intset. False if it was already a member.
    pub fn insert(&mut self, member: &[u8], max_intset: usize) -> bool {
        self.insert_member(MemberRef::Bytes(member), max_intset)
    }

    pub fn insert_member(&mut self, member: MemberRef, max_intset: usize) -> bool {
        if let Repr::Ints(s) = &mut *self.repr {
            match member.as_int() {
                Some(v) => {
                    let added = s.insert(v);
                    if s.len() > max_intset {
                        self.convert_to_table();
                    }
                    return added;
                }
                None => self.convert_to_table(),
            }
        }
        let Repr::Table(t) = &mut *self.repr else {
            unreachable!("converted above")
        };
        t.insert(member.bytes(&mut itoa::Buffer::new()))
    }

    /// Remove `member`; false if it was not there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        self.remove_member(MemberRef::Bytes(member))
    }

    pub fn remove_member(&mut self, member: MemberRef) -> bool {
        let mut digits = itoa::Buffer::new();
        let removed = match &mut *self.repr {
            Repr::Ints(s) => member.as_int().is_some_and(|v| s.remove(v)),
            Repr::Table(t) => t.remove(member.bytes(&mut digits)),
        };
        if removed {
            self.repr.forget(member.bytes(&mut digits));
        }
        removed
    }

    /// The member at `position` (0 <= position < len): positions are how callers
    /// pick members at random. An intset's positions are in ascending order.
    pub fn get(&self, position: usize) -> MemberRef<'_> {
        match &*self.repr {
            Repr::Ints(s) => MemberRef::Int(s.get(position)),
            Repr::Table(t) => MemberRef::Bytes(t.get(position)),
        }
    }

    /// Remove and return the member at `position`.
    pub fn remove_at(&mut self, position: usize) -> Member {
        let member = match &mut *self.repr {
            Repr::Ints(s) => Member::Int(s.remove_at(position)),
            Repr::Table(t) => Member::Bytes(t.remove_at(position)),
        };
        self.repr
            .forget(member.as_ref().bytes(&mut itoa::Buffer::new()));
        member
    }

    /// Every member: ascending for an intset, in no particular order otherwise.
    pub fn iter(&self) -> impl Iterator<Item = MemberRef<'_>> + '_ {
        (0..self.len()).map(|position| self.get(position))
    }

    /// One step of SSCAN: visit members from `cursor` on and return the cursor for
    /// the next call, 0 when the scan is complete. An intset is visited whole in one
    /// call, as Redis does; a hashtable about `count` members at a time, with the
    /// guarantee described at [`MemberTable::scan`].
    pub fn scan<'s>(
        &'s self,
        cursor: u64,
        count: usize,
        mut visit: impl FnMut(MemberRef<'s>),
    ) -> u64 {
        match &*self.repr {
            Repr::Ints(s) => {
                s.iter().for_each(|v| visit(MemberRef::Int(v)));
                0
            }
            Repr::Table(t) => t.scan(cursor, count, |m| visit(MemberRef::Bytes(m))),
        }
    }

    fn convert_to_table(&mut self) {
        if let Repr::Ints(s) = &*self.repr {
            let mut table = MemberTable::with_capacity(s.len() + 1);
            let mut digits = itoa::Buffer::new();
            for v in s.iter() {
                table.insert(digits.format(v).as_bytes());
            }
            *self.repr = Repr::Table(Box::new(table));
        }
    }
}

impl MemberExpiry for Set {
    fn deadlines(&self) -> Option<&MemberDeadlines> {
        self.repr.deadlines()
    }
    fn deadlines_mut(&mut self) -> &mut MemberDeadlines {
        self.repr.deadlines_mut()
    }
    fn tidy_deadlines(&mut self) {
        self.repr.tidy()
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

/// Two sets are equal when they hold the same members, whatever their encodings.
impl PartialEq for Set {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|m| other.contains_member(m))
    }
}

impl fmt::Debug for Set {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut digits = itoa::Buffer::new();
        let mut list = f.debug_set();
        for m in self.iter() {
            list.entry(&String::from_utf8_lossy(m.bytes(&mut digits)));
        }
        list.finish()
    }
}

#[cfg(test)]
mod tests;
