//! Member expiry: deadlines on single members of a set, fields of a hash and members
//! of a sorted set (KeyDB's EXPIREMEMBER, Redis 7.4's HEXPIRE).
//!
//! A collection without member deadlines pays nothing for the feature: its
//! representation is wrapped in [`Expiring`], whose plain variant is the
//! representation itself (same size, the enum hides in the representation's niche).
//! Only once a member gets a deadline does the collection move behind one more box
//! that holds the representation and its [`MemberDeadlines`]; when the last deadline
//! goes, it moves back.
//!
//! Owns the deadline bookkeeping only. Must not decide when deadlines fire (the
//! keyspace does) nor what a removal emits (the commands and the keyspace do).

use hashbrown::HashTable;
use kvik_util::hash::hash_key;
use std::collections::BTreeSet;
use std::ops::{Deref, DerefMut};

/// The deadlines of some members of one collection, in Unix milliseconds.
///
/// Each member is stored once, in a table keyed by its hash; the order by deadline
/// holds (deadline, member hash) pairs, resolved through the table. About 70 bytes
/// a member with a deadline, instead of twice the member's bytes in two maps.
#[derive(Clone, Default)]
pub struct MemberDeadlines {
    /// (member, deadline), found by the member's hash.
    table: HashTable<(Box<[u8]>, u64)>,
    /// (deadline, member hash), for the next due member at once.
    order: BTreeSet<(u64, u64)>,
}

impl std::fmt::Debug for MemberDeadlines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pairs = self.iter().map(|(m, at)| (String::from_utf8_lossy(m), at));
        f.debug_map().entries(pairs).finish()
    }
}

impl PartialEq for MemberDeadlines {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(m, at)| other.get(m) == Some(at))
    }
}

impl MemberDeadlines {
    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The deadline of `member`, if it has one.
    pub fn get(&self, member: &[u8]) -> Option<u64> {
        let hash = hash_key(member);
        self.table
            .find(hash, |(m, _)| &m[..] == member)
            .map(|(_, at)| *at)
    }

    /// Give `member` the deadline `at`, replacing the one it had.
    pub fn set(&mut self, member: &[u8], at: u64) {
        self.remove(member);
        let hash = hash_key(member);
        self.table
            .insert_unique(hash, (member.into(), at), |(m, _)| hash_key(m));
        self.order.insert((at, hash));
    }

    /// Drop the deadline of `member`; returns it.
    pub fn remove(&mut self, member: &[u8]) -> Option<u64> {
        let hash = hash_key(member);
        let slot = self
            .table
            .find_entry(hash, |(m, _)| &m[..] == member)
            .ok()?;
        let ((_, at), _) = slot.remove();
        self.forget_order(at, hash);
        Some(at)
    }

    /// Drop one (deadline, hash) pair of the order, unless another member with the
    /// same hash and deadline still needs it.
    fn forget_order(&mut self, at: u64, hash: u64) {
        let shared = self
            .table
            .find(hash, |(m, a)| *a == at && hash_key(m) == hash);
        if shared.is_none() {
            self.order.remove(&(at, hash));
        }
    }

    /// The earliest deadline.
    pub fn next(&self) -> Option<u64> {
        self.order.first().map(|(at, _)| *at)
    }

    /// Take out the member with the earliest deadline if that deadline is at or before
    /// `now_ms`.
    pub fn pop_due(&mut self, now_ms: u64) -> Option<Box<[u8]>> {
        loop {
            let &(at, hash) = self.order.first()?;
            if at > now_ms {
                return None;
            }
            let found = self
                .table
                .find_entry(hash, |(m, a)| *a == at && hash_key(m) == hash);
            match found {
                Ok(slot) => {
                    let ((member, _), _) = slot.remove();
                    self.forget_order(at, hash);
                    return Some(member);
                }
                // Every pair names a member; were one not to, it must not block
                // the ones after it.
                Err(_) => {
                    self.order.remove(&(at, hash));
                }
            }
        }
    }

    /// Every (member, deadline) pair, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u64)> + '_ {
        self.table.iter().map(|(m, at)| (&m[..], *at))
    }

    /// Approximate heap bytes: per member its bytes, its table slot (with the
    /// table's spare room) and its share of the order's B-tree nodes.
    pub fn heap_size(&self) -> usize {
        const SLOT: usize = std::mem::size_of::<(Box<[u8]>, u64)>() + 1;
        const ORDER: usize = 24;
        let members: usize = self.table.iter().map(|(m, _)| m.len()).sum();
        members + self.table.capacity() * SLOT + self.order.len() * ORDER
    }
}

/// What the keyspace needs of a collection whose members can expire (sets, hashes,
/// sorted sets). Every removal of a member through the collection's own methods
/// drops that member's deadline, so a deadline always names a present member.
pub trait MemberExpiry {
    /// The deadlines, if any member has one.
    fn deadlines(&self) -> Option<&MemberDeadlines>;
    /// The deadlines, created empty if there were none: leave them non-empty or call
    /// [`MemberExpiry::tidy_deadlines`].
    fn deadlines_mut(&mut self) -> &mut MemberDeadlines;
    /// Drop the deadlines' box once it is empty.
    fn tidy_deadlines(&mut self);
    fn has_member(&self, member: &[u8]) -> bool;
    /// Remove a member (and its deadline); false if it was not there.
    fn remove_member(&mut self, member: &[u8]) -> bool;
    fn member_count(&self) -> usize;

    /// The earliest deadline of any member.
    fn next_deadline(&self) -> Option<u64> {
        self.deadlines()?.next()
    }

    /// The deadline of `member`, if it has one.
    fn deadline_of(&self, member: &[u8]) -> Option<u64> {
        self.deadlines()?.get(member)
    }

    /// Give `member` (which must be present) the deadline `at`.
    fn set_deadline(&mut self, member: &[u8], at: u64) {
        self.deadlines_mut().set(member, at);
    }

    /// Drop the deadline of `member`; returns it.
    fn clear_deadline(&mut self, member: &[u8]) -> Option<u64> {
        self.deadlines()?.get(member)?;
        let at = self.deadlines_mut().remove(member);
        self.tidy_deadlines();
        at
    }

    /// Remove the member with the earliest deadline if that deadline is at or before
    /// `now_ms`; returns it.
    fn pop_due(&mut self, now_ms: u64) -> Option<Box<[u8]>> {
        if self.next_deadline()? > now_ms {
            return None;
        }
        let member = self.deadlines_mut().pop_due(now_ms);
        self.tidy_deadlines();
        let member = member?;
        self.remove_member(&member);
        Some(member)
    }
}

/// A collection's representation `R`, plain or with member deadlines.
#[derive(Clone)]
pub enum Expiring<R> {
    Plain(R),
    With(Box<(R, MemberDeadlines)>),
}

impl<R: Default> Default for Expiring<R> {
    fn default() -> Self {
        Expiring::Plain(R::default())
    }
}

impl<R> From<R> for Expiring<R> {
    fn from(r: R) -> Self {
        Expiring::Plain(r)
    }
}

impl<R> Deref for Expiring<R> {
    type Target = R;
    fn deref(&self) -> &R {
        match self {
            Expiring::Plain(r) => r,
            Expiring::With(b) => &b.0,
        }
    }
}

impl<R> DerefMut for Expiring<R> {
    fn deref_mut(&mut self) -> &mut R {
        match self {
            Expiring::Plain(r) => r,
            Expiring::With(b) => &mut b.0,
        }
    }
}

impl<R: Default> Expiring<R> {
    /// The member deadlines, if any member has one.
    pub fn deadlines(&self) -> Option<&MemberDeadlines> {
        match self {
            Expiring::Plain(_) => None,
            Expiring::With(b) => Some(&b.1),
        }
    }

    /// The member deadlines, created empty if there were none. Leave them non-empty
    /// or call [`Expiring::tidy`].
    pub fn deadlines_mut(&mut self) -> &mut MemberDeadlines {
        if let Expiring::Plain(r) = self {
            let r = std::mem::take(r);
            *self = Expiring::With(Box::new((r, MemberDeadlines::default())));
        }
        match self {
            Expiring::With(b) => &mut b.1,
            Expiring::Plain(_) => unreachable!("made With above"),
        }
    }

    /// A member left: forget its deadline.
    pub fn forget(&mut self, member: &[u8]) {
        if let Expiring::With(b) = self {
            b.1.remove(member);
            self.tidy();
        }
    }

    /// Every member left: forget every deadline.
    pub fn forget_all(&mut self) {
        if let Expiring::With(b) = self {
            b.1 = MemberDeadlines::default();
            self.tidy();
        }
    }

    /// Back to the plain representation once no deadline is left.
    pub fn tidy(&mut self) {
        if matches!(self, Expiring::With(b) if b.1.is_empty()) {
            let Expiring::With(b) = std::mem::take(self) else {
                unreachable!("checked above")
            };
            *self = Expiring::Plain(b.0);
        }
    }

    /// Heap bytes of the deadlines and their box.
    pub fn deadlines_heap_size(&self) -> usize {
        match self {
            Expiring::Plain(_) => 0,
            Expiring::With(b) => std::mem::size_of::<(R, MemberDeadlines)>() + b.1.heap_size(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_pop_in_order_and_replace() {
        let mut d = MemberDeadlines::default();
        d.set(b"a", 30);
        d.set(b"b", 10);
        d.set(b"c", 20);
        d.set(b"a", 5);
        assert_eq!(d.len(), 3);
        assert_eq!(d.next(), Some(5));
        assert_eq!(d.pop_due(4), None);
        assert_eq!(d.pop_due(15).as_deref(), Some(&b"a"[..]));
        assert_eq!(d.pop_due(15).as_deref(), Some(&b"b"[..]));
        assert_eq!(d.pop_due(15), None);
        assert_eq!(d.remove(b"c"), Some(20));
        assert!(d.is_empty());
    }

    #[test]
    fn deadlines_agree_with_a_model() {
        use std::collections::BTreeMap;
        let mut d = MemberDeadlines::default();
        let mut model: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
        for i in 0..2000u64 {
            let member = format!("m{}", i % 700).into_bytes();
            let at = (i * 7919) % 500;
            if i % 5 == 0 {
                assert_eq!(d.remove(&member), model.remove(&member));
            } else {
                d.set(&member, at);
                model.insert(member, at);
            }
        }
        assert_eq!(d.len(), model.len());
        let mut popped = Vec::new();
        while let Some(m) = d.pop_due(u64::MAX) {
            popped.push((model[&m[..]], m.to_vec()));
        }
        assert_eq!(popped.len(), model.len());
        assert!(popped.windows(2).all(|w| w[0].0 <= w[1].0));
        assert!(d.is_empty() && d.next().is_none());
    }

    #[test]
    fn collections_without_deadlines_keep_their_size() {
        // The wrapper hides in the representations' niches: a set, a hash and a
        // sorted set are no bigger than their bare representations were.
        assert_eq!(std::mem::size_of::<crate::set::Set>(), 32);
        assert_eq!(std::mem::size_of::<crate::hash::Hash>(), 32);
        assert_eq!(std::mem::size_of::<crate::zset::ZSet>(), 32);
    }

    #[test]
    fn the_wrapper_goes_plain_when_the_last_deadline_goes() {
        let mut e: Expiring<Vec<u8>> = Expiring::default();
        e.push(1);
        e.deadlines_mut().set(b"x", 1);
        assert!(matches!(e, Expiring::With(_)));
        e.forget(b"x");
        assert!(matches!(e, Expiring::Plain(_)));
        assert_eq!(*e, vec![1]);
    }
}
