//! A sorted set: listpack while small, skiplist-equivalent beyond.

/// A sorted set: listpack while small, skiplist-equivalent beyond.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ZSet {}

impl ZSet {
    /// The encoding name OBJECT ENCODING reports.
    pub fn encoding_name(&self) -> &'static str {
        unimplemented!("ZSet encodings")
    }

    /// Approximate heap bytes owned.
    pub fn heap_size(&self) -> usize {
        0
    }
}
