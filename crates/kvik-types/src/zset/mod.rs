//! Sorted sets: members ordered by score, ties broken by the members' bytes.
//!
//! Two encodings, with Redis 7.0's names and thresholds:
//! - [`Listpack`] ("listpack"): all entries in one byte buffer, while the set has at
//!   most `zset-max-listpack-entries` members of at most `zset-max-listpack-value`
//!   bytes each. Linear, compact.
//! - [`Indexed`] ("skiplist"): a slab of entries, a hash index by member and an
//!   order-statistics B+tree of (score, id) keys; O(1) member lookups, O(log n)
//!   ranks and ranges, less memory than Redis's skiplist plus dict (see
//!   `indexed.rs` for the layout and its costs).
//!
//! A set converts when an insertion breaks a threshold and never goes back, as in
//! Redis; a set built whole (ZUNIONSTORE, ZRANGESTORE, ...) gets the encoding its
//! contents call for.
//!
//! Everything positional works in ranks: a score or lexicographic range becomes the
//! span of ranks it covers ([`ZSet::score_span`], [`ZSet::lex_span`]), which the
//! commands then walk ([`ZSet::visit`]) or cut out ([`ZSet::remove_ranks`]). Popping
//! ([`ZSet::pop`]) is cutting at either end, shared by ZPOPMIN/ZPOPMAX, ZMPOP and,
//! later, their blocking forms.

mod indexed;
mod listpack;
mod range;
mod tree;

pub use range::{LexBound, LexRange, ScoreRange};

use crate::member_expiry::{Expiring, MemberDeadlines, MemberExpiry};
use indexed::Indexed;
use listpack::Listpack;
use std::cmp::Ordering;
use std::fmt;
use std::ops::Range;

/// When a listpack must become a skiplist (`zset-max-listpack-entries` and
/// `zset-max-listpack-value`).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_entries: usize,
    pub max_value: usize,
}

/// Which end of the order a pop takes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Min,
    Max,
}

/// The order of a sorted set: does (`member`, `score`) sort before (`other`,
/// `other_score`)? Scores are never NaN; -0 and 0 are equal, as in Redis.
pub fn sorts_before(member: &[u8], score: f64, other: &[u8], other_score: f64) -> bool {
    match score.partial_cmp(&other_score) {
        Some(Ordering::Less) => true,
        Some(Ordering::Greater) => false,
        _ => member < other,
    }
}

/// Put entries with distinct members in the order of a sorted set.
pub fn sort_entries(entries: &mut [(&[u8], f64)]) {
    entries.sort_unstable_by(|a, b| {
        a.1.partial_cmp(&b.1)
            .unwrap_or(Ordering::Equal)
            .then_with(|| a.0.cmp(b.0))
    });
}

#[derive(Clone)]
enum Repr {
    Listpack(Listpack),
    /// Boxed, so that the many small sets take 32 bytes, not the big encoding's 100.
    Skiplist(Box<Indexed>),
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Listpack(Listpack::default())
    }
}

/// A sorted set.
#[derive(Clone)]
pub struct ZSet {
    repr: Expiring<Repr>,
}

impl Default for ZSet {
    fn default() -> Self {
        ZSet {
            repr: Repr::default().into(),
        }
    }
}

impl ZSet {
    /// A set of the given entries (distinct members, any order), encoded as its
    /// contents and `limits` call for.
    pub fn from_entries(entries: &mut [(&[u8], f64)], limits: Limits) -> ZSet {
        sort_entries(entries);
        let fits = entries.len() <= limits.max_entries
            && entries.iter().all(|(m, _)| m.len() <= limits.max_value);
        let sorted = entries.iter().copied();
        let repr = if fits {
            Repr::Listpack(Listpack::from_sorted(sorted))
        } else {
            Repr::Skiplist(Box::new(Indexed::from_sorted(sorted)))
        };
        ZSet { repr: repr.into() }
    }

    /// The encoding name OBJECT ENCODING reports.
    pub fn encoding_name(&self) -> &'static str {
        match *self.repr {
            Repr::Listpack(_) => "listpack",
            Repr::Skiplist(_) => "skiplist",
        }
    }

    /// Approximate heap bytes owned.
    pub fn heap_size(&self) -> usize {
        let repr = match &*self.repr {
            Repr::Listpack(lp) => lp.heap_size(),
            Repr::Skiplist(set) => std::mem::size_of::<Indexed>() + set.heap_size(),
        };
        repr + self.repr.deadlines_heap_size()
    }

    pub fn len(&self) -> usize {
        match &*self.repr {
            Repr::Listpack(lp) => lp.len(),
            Repr::Skiplist(set) => set.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match &*self.repr {
            Repr::Listpack(lp) => lp.score(member),
            Repr::Skiplist(set) => set.score(member),
        }
    }

    /// The rank of `member` counted from the lowest score.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        match &*self.repr {
            Repr::Listpack(lp) => lp.rank(member),
            Repr::Skiplist(set) => set.rank(member),
        }
    }

    /// The entry at `rank` (< len).
    pub fn get(&self, rank: usize) -> (&[u8], f64) {
        match &*self.repr {
            Repr::Listpack(lp) => lp.get(rank),
            Repr::Skiplist(set) => set.get(rank),
        }
    }

    /// Set `member`'s score, adding it if new (converting to a skiplist first if the
    /// addition breaks `limits`). Returns the previous score.
    pub fn set_score(&mut self, member: &[u8], score: f64, limits: Limits) -> Option<f64> {
        let previous = self.score(member);
        match (&mut *self.repr, previous) {
            (_, Some(old)) if old == score => {}
            (Repr::Listpack(lp), Some(_)) => {
                lp.remove(member);
                lp.insert(member, score);
            }
            (Repr::Skiplist(set), Some(_)) => set.update(member, score),
            (Repr::Listpack(lp), None) => {
                if lp.len() < limits.max_entries && member.len() <= limits.max_value {
                    lp.insert(member, score);
                } else {
                    let mut set = Indexed::from_sorted(lp.iter().collect::<Vec<_>>().into_iter());
                    set.insert(member, score);
                    *self.repr = Repr::Skiplist(Box::new(set));
                }
            }
            (Repr::Skiplist(set), None) => set.insert(member, score),
        }
        previous
    }

    /// Remove `member`; returns its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let score = match &mut *self.repr {
            Repr::Listpack(lp) => lp.remove(member),
            Repr::Skiplist(set) => set.remove(member),
        };
        if score.is_some() {
            self.repr.forget(member);
        }
        score
    }

    /// The first rank at or after `from` where `pred` fails, `pred` holding for a
    /// prefix of the order from `from` on.
    fn partition_point(&self, from: usize, pred: impl FnMut(&[u8], f64) -> bool) -> usize {
        match &*self.repr {
            Repr::Listpack(lp) => lp.partition_point(from, pred),
            Repr::Skiplist(set) => set.partition_point(from, pred),
        }
    }

    /// The ranks of the entries whose scores are in `range`.
    pub fn score_span(&self, range: &ScoreRange) -> Range<usize> {
        let start = self.partition_point(0, |_, score| !range.reaches_min(score));
        let end = self.partition_point(start, |_, score| range.within_max(score));
        start..end
    }

    /// The ranks of the entries whose members are in `range`, found the way Redis
    /// finds them, after passing over `skip` entries (LIMIT's offset). That is
    /// meaningful when all scores are equal, as Redis documents; when they are not, a
    /// listpack gives Redis's exact answer anyway, because both walk it alike: nothing
    /// unless the last member reaches the minimum and the first is within the maximum;
    /// then, walking from the end the range is read from (the top for
    /// ZREVRANGEBYLEX: `from_top`), the first member past the near bound must be
    /// within the far one; from there `skip` entries are passed over unchecked, and
    /// the span runs while members stay on this side of the far bound. (Redis's
    /// skiplist answers that case by where its random levels lead.)
    pub fn lex_span(&self, range: &LexRange, from_top: bool, skip: usize) -> Range<usize> {
        let len = self.len();
        if range.is_empty()
            || len == 0
            || !range.reaches_min(self.get(len - 1).0)
            || !range.within_max(self.get(0).0)
        {
            return 0..0;
        }
        match &*self.repr {
            Repr::Listpack(lp) if from_top => {
                let members: Vec<&[u8]> = lp.iter().map(|(member, _)| member).collect();
                let Some(first) = members.iter().rposition(|m| range.within_max(m)) else {
                    return 0..0;
                };
                if !range.reaches_min(members[first]) || skip > first {
                    return 0..0;
                }
                let top = first - skip;
                let below = members[..=top]
                    .iter()
                    .rev()
                    .take_while(|m| range.reaches_min(m))
                    .count();
                top + 1 - below..top + 1
            }
            _ => {
                let first = self.partition_point(0, |member, _| !range.reaches_min(member));
                if first == len || !range.within_max(self.get(first).0) {
                    return 0..0;
                }
                // Walked from the top, the set is a skiplist, in which a span in order
                // is what the walk finds.
                let start = if from_top {
                    first
                } else {
                    first.saturating_add(skip).min(len)
                };
                let end = self.partition_point(start, |member, _| range.within_max(member));
                if from_top {
                    start..end.saturating_sub(skip).max(start)
                } else {
                    start..end
                }
            }
        }
    }

    /// Call `f` with the entries whose ranks are in `ranks`, lowest first, or
    /// highest first when `reverse`.
    pub fn visit<'z>(
        &'z self,
        ranks: Range<usize>,
        reverse: bool,
        mut f: impl FnMut(&'z [u8], f64),
    ) {
        match &*self.repr {
            Repr::Listpack(lp) => lp.visit(ranks, reverse, &mut f),
            Repr::Skiplist(set) => set.visit(ranks, reverse, &mut f),
        }
    }

    /// Every entry, lowest first.
    pub fn for_each<'z>(&'z self, f: impl FnMut(&'z [u8], f64)) {
        self.visit(0..self.len(), false, f)
    }

    /// Call `f` with the entries at the given ranks (each < len), in that order.
    pub fn visit_ranks<'z>(&'z self, ranks: &[usize], mut f: impl FnMut(&'z [u8], f64)) {
        match &*self.repr {
            Repr::Listpack(lp) => {
                let entries: Vec<(&[u8], f64)> = lp.iter().collect();
                ranks.iter().for_each(|&r| f(entries[r].0, entries[r].1));
            }
            Repr::Skiplist(set) => ranks.iter().for_each(|&r| {
                let (member, score) = set.get(r);
                f(member, score)
            }),
        }
    }

    /// Remove the entries whose ranks are in `ranks`, showing each to `f` first,
    /// lowest first.
    pub fn remove_ranks(&mut self, ranks: Range<usize>, mut f: impl FnMut(&[u8], f64)) {
        let mut gone = Vec::new();
        let deadlines = self.repr.deadlines().is_some();
        let mut f = |member: &[u8], score: f64| {
            if deadlines {
                gone.push(member.to_vec());
            }
            f(member, score)
        };
        match &mut *self.repr {
            Repr::Listpack(lp) => lp.remove_ranks(ranks, &mut f),
            Repr::Skiplist(set) => set.remove_ranks(ranks, &mut f),
        }
        for member in gone {
            self.repr.forget(&member);
        }
    }

    /// Take up to `count` entries from one end, in the order they are taken
    /// (lowest first from `Min`, highest first from `Max`).
    pub fn pop(&mut self, end: End, count: usize) -> Vec<(Vec<u8>, f64)> {
        let len = self.len();
        let n = count.min(len);
        let ranks = match end {
            End::Min => 0..n,
            End::Max => len - n..len,
        };
        let mut taken = Vec::with_capacity(n);
        self.remove_ranks(ranks, |member, score| taken.push((member.to_vec(), score)));
        if end == End::Max {
            taken.reverse();
        }
        taken
    }

    /// One step of ZSCAN: calls `f` with some entries from `cursor` on and returns
    /// the cursor to continue from (0: done). A listpack is returned whole.
    pub fn scan<'z>(&'z self, cursor: u64, count: usize, mut f: impl FnMut(&'z [u8], f64)) -> u64 {
        match &*self.repr {
            Repr::Listpack(lp) => {
                lp.iter().for_each(|(m, s)| f(m, s));
                0
            }
            Repr::Skiplist(set) => set.scan(cursor, count, &mut f),
        }
    }
}

/// Two sets are equal when they hold the same entries, whatever their encodings.
impl PartialEq for ZSet {
    fn eq(&self, other: &ZSet) -> bool {
        if self.len() != other.len() {
            return false;
        }
        let mut mine = Vec::with_capacity(self.len());
        self.for_each(|m, s| mine.push((m.to_vec(), s)));
        let mut i = 0;
        let mut equal = true;
        other.for_each(|m, s| {
            equal &= mine[i].0 == m && mine[i].1 == s;
            i += 1;
        });
        equal
    }
}

impl fmt::Debug for ZSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut entries = Vec::new();
        self.for_each(|m, s| entries.push((String::from_utf8_lossy(m).into_owned(), s)));
        f.debug_struct("ZSet")
            .field("encoding", &self.encoding_name())
            .field("entries", &entries)
            .finish()
    }
}

impl MemberExpiry for ZSet {
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
        self.score(member).is_some()
    }
    fn remove_member(&mut self, member: &[u8]) -> bool {
        self.remove(member).is_some()
    }
    fn member_count(&self) -> usize {
        self.len()
    }
}

#[cfg(test)]
mod tests;
