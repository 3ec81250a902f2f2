//! The hash of a key: one function shared by the keyspace (which shard, which
//! bucket) and everything that files keys by it (sorted-set members, pub/sub
//! channels, tracking tables, scripts).

use std::hash::BuildHasher;
use std::sync::LazyLock;

static HASHER: LazyLock<foldhash::fast::FixedState> =
    LazyLock::new(|| foldhash::fast::FixedState::with_seed(rand::random()));

/// The hash of a key, seeded per process so clients cannot aim keys at one bucket.
/// Its middle bits pick the shard; hashbrown uses the low and top bits inside it.
#[inline]
pub fn hash_key(key: &[u8]) -> u64 {
    HASHER.hash_one(key)
}
