//! The thresholds at which a collection leaves its compact encoding (Redis's
//! `*-max-listpack-*` and `set-max-intset-entries`), and what each type reads of
//! them. The server keeps the values in force (CONFIG SET changes them at any time);
//! commands and the RDB loader copy them out when they build a value.

use crate::list::NodeLimit;
use crate::{hash, zset};

/// When a collection leaves its compact encoding (Redis's `*-max-listpack-*`,
/// `set-max-intset-entries`). Copied out by collection commands; changed by CONFIG SET.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodingLimits {
    /// `list-max-listpack-size`: entries per node if positive, else -1..-5 for
    /// 4/8/16/32/64 KB nodes.
    pub list_max_listpack_size: i64,
    pub list_compress_depth: u64,
    pub hash_max_listpack_entries: u64,
    pub hash_max_listpack_value: u64,
    pub set_max_intset_entries: u64,
    pub zset_max_listpack_entries: u64,
    pub zset_max_listpack_value: u64,
}

impl EncodingLimits {
    /// A hash's listpack limits.
    pub fn hash(&self) -> hash::Limits {
        hash::Limits {
            max_listpack_entries: saturating_usize(self.hash_max_listpack_entries),
            max_listpack_value: saturating_usize(self.hash_max_listpack_value),
        }
    }

    /// A sorted set's listpack limits.
    pub fn zset(&self) -> zset::Limits {
        zset::Limits {
            max_entries: saturating_usize(self.zset_max_listpack_entries),
            max_value: saturating_usize(self.zset_max_listpack_value),
        }
    }

    /// The most members a set keeps as an intset.
    pub fn max_intset(&self) -> usize {
        saturating_usize(self.set_max_intset_entries)
    }

    /// How full a list's node may grow, and how many at each end stay uncompressed.
    pub fn list_node(&self) -> NodeLimit {
        NodeLimit::from_config(self.list_max_listpack_size)
            .compressing(saturating_usize(self.list_compress_depth))
    }
}

fn saturating_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}
