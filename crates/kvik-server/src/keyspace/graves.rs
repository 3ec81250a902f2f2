//! Tombstones ("graves") of deleted keys, kept while active replication runs.
//!
//! In an active-active mesh a deleted key must stay deleted: a peer's older write to
//! it, arriving late over a healed link or inside a resync, must not bring it back.
//! So a removal (DEL, UNLINK, expiry, eviction, a write that empties a collection)
//! leaves the key's name with the timestamp of its removal, and a flush leaves a
//! floor: every key of the shard is dead up to that timestamp. A replayed write
//! applies only when it is newer than what the key holds, grave included; a new
//! local write is stamped past the grave.
//!
//! Graves exist only in shards of a node that replicates actively (a plain node pays
//! one `None` per shard). They are dropped once every peer has acknowledged them
//! and none can still send anything older ([`Graves::collect`], with the bound
//! the replication's watermarks give), and their bytes are counted for INFO and
//! bounded (`active-replica-tombstones-max-memory`, [`Graves::forget_oldest`]).
//!
//! Owns the graves of one shard. Must not decide when a write is replayed: the
//! command door asks through [`super::Locked::is_stale`].

use std::collections::HashMap;

/// The graves of one shard.
#[derive(Default)]
pub struct Graves {
    keys: HashMap<Box<[u8]>, u64>,
    /// Every key is dead up to this timestamp (the last flush).
    floor: u64,
    /// Graves up to this timestamp were forgotten to bound their memory (see
    /// [`Graves::forget_oldest`]): a key not here counts as removed up to it. Not a
    /// flush: keys that live here stay, and snapshots do not carry it.
    horizon: u64,
    /// Bytes the graves hold (keys plus the map's share per grave).
    bytes: usize,
}

/// What a grave costs beside its key's bytes: the boxed slice, the timestamp and
/// the map's slot.
const GRAVE_OVERHEAD: usize = 16 + 8 + 8;

impl Graves {
    /// The timestamp up to which `key` is dead (0: never deleted).
    pub fn ts_of(&self, key: &[u8]) -> u64 {
        self.keys
            .get(key)
            .copied()
            .unwrap_or(0)
            .max(self.floor)
            .max(self.horizon)
    }

    /// `key` was removed at `ts`.
    pub fn bury(&mut self, key: &[u8], ts: u64) {
        if ts <= self.floor.max(self.horizon) {
            return;
        }
        match self.keys.get_mut(key) {
            Some(old) => *old = (*old).max(ts),
            None => {
                self.bytes += key.len() + GRAVE_OVERHEAD;
                self.keys.insert(key.into(), ts);
            }
        }
    }

    /// `key` lives again: its grave goes, and the timestamp the new write must pass
    /// comes back.
    pub fn unbury(&mut self, key: &[u8]) -> u64 {
        let ts = match self.keys.remove(key) {
            Some(ts) => {
                self.bytes -= key.len() + GRAVE_OVERHEAD;
                ts
            }
            None => 0,
        };
        ts.max(self.floor).max(self.horizon)
    }

    /// Every key of the shard was removed at `ts` (a flush).
    pub fn bury_all(&mut self, ts: u64) {
        self.floor = self.floor.max(ts);
        let floor = self.floor;
        let bytes = &mut self.bytes;
        self.keys.retain(|key, grave| {
            let keep = *grave > floor;
            if !keep {
                *bytes -= key.len() + GRAVE_OVERHEAD;
            }
            keep
        });
    }

    /// Drop the graves older than `before` (every peer applied them, and none
    /// can send an older write any more). Returns how many went.
    pub fn collect(&mut self, before: u64) -> usize {
        if before == 0 {
            return 0;
        }
        let was = self.keys.len();
        let bytes = &mut self.bytes;
        self.keys.retain(|key, grave| {
            let keep = *grave >= before;
            if !keep {
                *bytes -= key.len() + GRAVE_OVERHEAD;
            }
            keep
        });
        was - self.keys.len()
    }

    /// Bound the graves' memory to `max_bytes`: forget the oldest, raising the
    /// horizon to the newest forgotten. Returns how many went.
    pub fn forget_oldest(&mut self, max_bytes: usize) -> usize {
        if self.bytes <= max_bytes {
            return 0;
        }
        let mut by_age: Vec<(u64, usize)> = self
            .keys
            .iter()
            .map(|(key, &ts)| (ts, key.len() + GRAVE_OVERHEAD))
            .collect();
        by_age.sort_unstable();
        let mut left = self.bytes;
        let mut newest_forgotten = 0;
        for (ts, bytes) in by_age {
            if left <= max_bytes {
                break;
            }
            left -= bytes;
            newest_forgotten = ts;
        }
        self.horizon = self.horizon.max(newest_forgotten);
        // Graves at the horizon go too: it covers them.
        self.collect(newest_forgotten + 1)
    }

    /// The timestamp up to which a key not here counts as removed because its grave
    /// was forgotten (0: none was).
    pub fn horizon(&self) -> u64 {
        self.horizon
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Each grave, for a snapshot sent to a peer.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u64)> {
        self.keys.iter().map(|(k, &ts)| (&**k, ts))
    }

    pub fn floor(&self) -> u64 {
        self.floor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grave_keeps_the_newest_removal_and_a_flush_covers_older_ones() {
        let mut graves = Graves::default();
        graves.bury(b"a", 10);
        graves.bury(b"a", 7);
        graves.bury(b"b", 20);
        assert_eq!(graves.ts_of(b"a"), 10);
        graves.bury_all(15);
        assert_eq!(graves.ts_of(b"a"), 15);
        assert_eq!(graves.ts_of(b"b"), 20);
        assert_eq!(graves.ts_of(b"c"), 15);
        assert_eq!(graves.len(), 1);
        assert_eq!(graves.unbury(b"b"), 20);
        assert_eq!(graves.bytes(), 0);
        graves.bury(b"d", 30);
        assert_eq!(graves.collect(31), 1);
        assert_eq!(graves.len(), 0);
    }

    #[test]
    fn over_its_bound_a_shard_forgets_its_oldest_graves_behind_a_horizon() {
        let mut graves = Graves::default();
        for ts in 1..=10u64 {
            graves.bury(format!("k{ts:02}").as_bytes(), ts * 10);
        }
        let each = 3 + GRAVE_OVERHEAD;
        assert_eq!(graves.forget_oldest(10 * each), 0);
        assert_eq!(graves.forget_oldest(4 * each), 6);
        assert_eq!(graves.len(), 4);
        assert!(graves.bytes() <= 4 * each);
        assert_eq!(graves.horizon(), 60);
        // A forgotten key, and any key not here, counts as removed up to it.
        assert_eq!(graves.ts_of(b"k03"), 60);
        assert_eq!(graves.ts_of(b"never"), 60);
        assert_eq!(graves.ts_of(b"k09"), 90);
        assert_eq!(graves.floor(), 0, "not a flush");
    }
}
