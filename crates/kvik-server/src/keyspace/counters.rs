//! Counters of an active-replication node: what each node added to a key since
//! the write the increments build on.
//!
//! Two nodes that increment one key during a partition must both end with the sum of
//! all increments. While they exchange their streams that holds by itself (a peer's
//! INCR is replayed, not judged by last writer). A long break heals by a full sync,
//! which carries states, not operations: so each node keeps, for the keys it counts,
//! the base (the write the counting started from: its timestamp and value) and per
//! node the total it added since with the timestamp of its last increment. Merging
//! two states on the same base takes each node's newer total (a node's total only
//! changes with its own increments, so the newer one includes the older); a newer
//! base wins outright (a SET resets the counter, increments made before it are
//! forgotten). The key's value is the base plus the totals, kept materialized in the
//! entry, so reads pay nothing.
//!
//! A state is current only while its newest timestamp is the key's: any other write
//! to the key makes it stale, and the next increment starts a new one from that
//! write. Kept per shard, only while the node replicates actively.
//!
//! Owns the state and its merge. Must not decide when an increment is replayed:
//! the command door records increments through [`super::Locked::count_increment`].

use crate::effects::NodeId;
use smallvec::SmallVec;

/// One counted key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter {
    /// The write the counting started from.
    pub base_ts: u64,
    pub base: i64,
    /// Per node: what it added since the base, and its last increment's timestamp.
    pub parts: SmallVec<[(NodeId, i64, u64); 2]>,
}

impl Counter {
    /// Counting starts on a key that held `base`, written at `base_ts`.
    pub fn new(base_ts: u64, base: i64) -> Counter {
        Counter {
            base_ts,
            base,
            parts: SmallVec::new(),
        }
    }

    /// The newest timestamp the state knows: the key's, while the state is current.
    pub fn newest_ts(&self) -> u64 {
        self.parts.iter().map(|p| p.2).fold(self.base_ts, u64::max)
    }

    /// The key's value: the base plus every node's total (wrapping, as the totals
    /// themselves never overflow past what INCR allowed on each node).
    pub fn value(&self) -> i64 {
        self.parts
            .iter()
            .fold(self.base, |sum, p| sum.wrapping_add(p.1))
    }

    /// Is `node`'s increment stamped `ts` in its total already? A node's
    /// increments of one key are stamped in increasing order, and its total holds
    /// every one up to its last: one at or before that is met again (through a
    /// second link, or after a merged snapshot that held it).
    pub fn holds(&self, node: &NodeId, ts: u64) -> bool {
        self.parts.iter().any(|p| p.0 == *node && p.2 >= ts)
    }

    /// `node` added `delta` at `ts`.
    pub fn add(&mut self, node: NodeId, delta: i64, ts: u64) {
        match self.parts.iter_mut().find(|p| p.0 == node) {
            Some(part) => {
                part.1 = part.1.wrapping_add(delta);
                part.2 = part.2.max(ts);
            }
            None => self.parts.push((node, delta, ts)),
        }
    }

    /// Take in a peer's state of the same key. Returns whether ours changed.
    pub fn merge(&mut self, theirs: &Counter) -> bool {
        if theirs.base_ts > self.base_ts {
            *self = theirs.clone();
            return true;
        }
        if theirs.base_ts < self.base_ts {
            return false;
        }
        let mut changed = false;
        for &(node, total, ts) in &theirs.parts {
            match self.parts.iter_mut().find(|p| p.0 == node) {
                Some(part) if part.2 >= ts => {}
                Some(part) => {
                    *part = (node, total, ts);
                    changed = true;
                }
                None => {
                    self.parts.push((node, total, ts));
                    changed = true;
                }
            }
        }
        changed
    }

    /// The state as text, for a snapshot's aux field:
    /// `<base_ts> <base> [<node hex>:<total>:<ts>]...`.
    pub fn encode(&self) -> String {
        let mut text = format!("{} {}", self.base_ts, self.base);
        for (node, total, ts) in &self.parts {
            text.push_str(&format!(" {}:{total}:{ts}", hex::encode(node)));
        }
        text
    }

    /// The state [`Counter::encode`] wrote; `None` when malformed.
    pub fn decode(text: &[u8]) -> Option<Counter> {
        let text = std::str::from_utf8(text).ok()?;
        let mut words = text.split(' ');
        let base_ts = words.next()?.parse().ok()?;
        let base = words.next()?.parse().ok()?;
        let mut counter = Counter::new(base_ts, base);
        for word in words {
            let mut fields = word.split(':');
            let node = NodeId::try_from(hex::decode(fields.next()?).ok()?.as_slice()).ok()?;
            let total = fields.next()?.parse().ok()?;
            let ts = fields.next()?.parse().ok()?;
            counter.parts.push((node, total, ts));
        }
        Some(counter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn increments_on_both_sides_of_a_partition_add_up() {
        // SET k 1 everywhere, then A adds 3 and B adds 1 apart.
        let mut a = Counter::new(10, 1);
        a.add([1; 16], 1, 11);
        a.add([1; 16], 2, 12);
        let mut b = Counter::new(10, 1);
        b.add([2; 16], 1, 13);
        let (a0, b0) = (a.clone(), b.clone());
        assert!(a.merge(&b0) && b.merge(&a0));
        assert_eq!((a.value(), b.value()), (5, 5));
        assert!(!a.merge(&b), "merging again changes nothing");
        assert_eq!(a.newest_ts(), 13);
        assert!(a.holds(&[2; 16], 13) && a.holds(&[1; 16], 11));
        assert!(!a.holds(&[2; 16], 14) && !a.holds(&[3; 16], 1));
    }

    #[test]
    fn a_newer_base_wins_and_an_older_one_loses() {
        let mut old = Counter::new(10, 1);
        old.add([1; 16], 5, 11);
        let reset = Counter::new(20, 100);
        assert!(!reset.clone().merge(&old));
        assert!(old.merge(&reset));
        assert_eq!(old.value(), 100);
    }

    #[test]
    fn the_text_form_reads_back() {
        let mut c = Counter::new(7, -3);
        c.add([0xab; 16], 9, 8);
        assert_eq!(Counter::decode(c.encode().as_bytes()), Some(c));
        assert_eq!(Counter::decode(b"x 1"), None);
        assert_eq!(Counter::decode(b"1 2 zz:1:2"), None);
    }
}
