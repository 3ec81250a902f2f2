//! Time to live as a register that converges, while active replication runs.
//!
//! Two nodes that change a key's TTL concurrently (EXPIRE 100 on one, EXPIRE 1000 on
//! the other, during a partition) must end with the same deadline whatever order
//! they hear the two changes in. Last writer wins would keep whichever change came
//! last by the clock; kvik keeps the longest instead: the TTL of a key is a register
//! merged by max, no deadline (PERSIST) counting as the latest of all, among the TTL
//! changes (EXPIRE family, PERSIST, GETEX's options) made since the key's last write
//! of its value. A value write (SET without KEEPTTL, APPEND, a list push ...) starts
//! the register over, and is ordered against TTL changes by last writer wins as
//! every write is. Max is order-independent, so every node computes the same TTL;
//! the price is that, since the last value write, a TTL can be lengthened or
//! removed but not shortened (EXPIRE then answers 0, as it does when GT says no).
//!
//! What a node must know per key for that: whether the key's TTL was changed since
//! its value was written, and when the value was written (a peer's TTL change older
//! than the key's last TTL change here, but newer than its value, still merges). A
//! [`TtlMarks`] map holds it for those keys only, per shard, and only while the node
//! replicates actively. A mark is valid while the key's timestamp is the one the
//! mark was taken at: any other write restamps the key, which retires the mark
//! without a lookup here.
//!
//! Owns the marks and the merge rule. Must not touch entries: the shard applies
//! what [`later`] decides.

use std::collections::HashMap;

/// When the value of a key whose TTL changed was written, and the key's timestamp
/// after its last TTL change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mark {
    since: u64,
    at: u64,
}

/// The TTL marks of one shard.
#[derive(Default)]
pub struct TtlMarks {
    marks: HashMap<Box<[u8]>, Mark>,
}

impl TtlMarks {
    /// The timestamp of the value write that `key` (whose timestamp is `key_ts`)
    /// has had TTL changes since; `None` when its last write was not a TTL change.
    pub fn since(&self, key: &[u8], key_ts: u64) -> Option<u64> {
        if self.marks.is_empty() {
            return None;
        }
        self.marks
            .get(key)
            .filter(|m| m.at == key_ts)
            .map(|m| m.since)
    }

    /// `key`'s TTL changed, on the value written at `since`; the key's timestamp is
    /// now `at`.
    pub fn note(&mut self, key: &[u8], since: u64, at: u64) {
        match self.marks.get_mut(key) {
            Some(mark) => *mark = Mark { since, at },
            None => {
                self.marks.insert(key.into(), Mark { since, at });
            }
        }
    }

    /// `key`'s value was written again, or the key removed.
    pub fn forget(&mut self, key: &[u8]) {
        if !self.marks.is_empty() {
            self.marks.remove(key);
        }
    }
}

/// Would a TTL change to deadline `at` make a key whose deadline is `current`
/// live longer? Deadlines are Unix ms; 0 is none, the latest of all.
pub fn lengthens(at: u64, current: u64) -> bool {
    current != 0 && (at == 0 || at > current)
}

/// The longer-lived of two deadlines (0: none).
pub fn later(a: u64, b: u64) -> u64 {
    if lengthens(b, a) {
        b
    } else {
        a
    }
}

/// What a copy of a key says about its TTL register (ours, or a peer's full sync).
#[derive(Debug, Clone, Copy)]
pub struct KeyTtl {
    /// The key's timestamp.
    pub ts: u64,
    /// The value write its TTL changed since, if its last write was a TTL change.
    pub since: Option<u64>,
    pub expire_at: u64,
}

/// The deadline, timestamp and value timestamp a key ends with when a peer's copy
/// and ours hold the same value write and at least one of them changed its TTL
/// since: the register merges (TTL changes beat the value write's own deadline;
/// between two, the later deadline). `None` when they hold different value writes:
/// then the newer write wins whole, as any write does.
pub fn merge(ours: KeyTtl, theirs: KeyTtl) -> Option<(u64, u64, u64)> {
    let our_value = ours.since.unwrap_or(ours.ts);
    let their_value = theirs.since.unwrap_or(theirs.ts);
    if our_value != their_value {
        return None;
    }
    let expire_at = match (ours.since, theirs.since) {
        (None, None) => return None,
        (Some(_), None) => ours.expire_at,
        (None, Some(_)) => theirs.expire_at,
        (Some(_), Some(_)) => later(ours.expire_at, theirs.expire_at),
    };
    Some((expire_at, ours.ts.max(theirs.ts), our_value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_deadline_is_the_latest_and_the_longer_wins() {
        assert!(lengthens(0, 100));
        assert!(!lengthens(100, 0));
        assert!(!lengthens(0, 0));
        assert!(lengthens(200, 100));
        assert!(!lengthens(50, 100));
        assert_eq!(later(100, 1000), 1000);
        assert_eq!(later(1000, 100), 1000);
        assert_eq!(later(0, 100), 0);
        assert_eq!(later(100, 0), 0);
    }

    #[test]
    fn a_mark_is_valid_only_at_the_timestamp_it_was_taken() {
        let mut marks = TtlMarks::default();
        marks.note(b"k", 10, 20);
        assert_eq!(marks.since(b"k", 20), Some(10));
        assert_eq!(marks.since(b"k", 21), None, "written since");
        marks.forget(b"k");
        assert_eq!(marks.since(b"k", 20), None);
    }

    #[test]
    fn a_full_sync_merges_ttls_of_the_same_value_in_either_order() {
        let ours = KeyTtl {
            ts: 30,
            since: Some(10),
            expire_at: 100,
        };
        let theirs = KeyTtl {
            ts: 20,
            since: Some(10),
            expire_at: 1000,
        };
        assert_eq!(merge(ours, theirs), Some((1000, 30, 10)));
        let theirs_plain = KeyTtl {
            ts: 10,
            since: None,
            expire_at: 0,
        };
        assert_eq!(merge(ours, theirs_plain), Some((100, 30, 10)));
        let theirs_newer_value = KeyTtl {
            ts: 40,
            since: None,
            expire_at: 0,
        };
        assert_eq!(merge(ours, theirs_newer_value), None);
    }
}
