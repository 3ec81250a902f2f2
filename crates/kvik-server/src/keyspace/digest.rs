//! The per-database digest of an active replica: cheap enough for monitoring to
//! poll, equal on nodes that converged.
//!
//! DEBUG DIGEST hashes every value, a pass over the whole dataset. Active replicas
//! that converged hold the same keys with the same write timestamps (a replayed
//! write is stamped with its origin's timestamp, whose low bits name the origin
//! node), so a digest of the (key, timestamp) pairs tells the same: each shard keeps
//! the XOR of one 64-bit hash per entry, updated as entries come, go or are
//! restamped (O(1) per write), and a database's digest is the XOR of its shards'
//! (read without a pass over the keys). XOR makes it independent of the order
//! writes arrived in. Only shards of a node that replicates actively keep it: a
//! plain node pays nothing.
//!
//! The hash is seeded with a constant, not per process like the keyspace's own,
//! so that every node computes the same one. Owns the hash; the shard keeps the
//! sum.

use std::hash::{BuildHasher, Hasher};

/// Fixed on every node (the keyspace's hasher is seeded per process).
const SEED: u64 = 0x6b76_696b_6469_6773;

/// One entry's share of its shard's digest.
pub fn part(key: &[u8], ts: u64) -> u64 {
    let mut hasher = foldhash::fast::FixedState::with_seed(SEED).build_hasher();
    hasher.write(key);
    hasher.write_u64(ts);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_depends_on_the_key_and_its_timestamp() {
        assert_eq!(part(b"k", 1), part(b"k", 1));
        assert_ne!(part(b"k", 1), part(b"k", 2));
        assert_ne!(part(b"k", 1), part(b"j", 1));
    }
}
