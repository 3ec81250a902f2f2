//! A hash: listpack while small, hashtable beyond.

/// A hash: listpack while small, hashtable beyond.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Hash {}

impl Hash {
    /// The encoding name OBJECT ENCODING reports.
    pub fn encoding_name(&self) -> &'static str {
        unimplemented!("Hash encodings")
    }

    /// Approximate heap bytes owned.
    pub fn heap_size(&self) -> usize {
        0
    }
}
