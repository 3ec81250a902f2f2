//! A set: intset or listpack while small, hashtable beyond.

/// A set: intset or listpack while small, hashtable beyond.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Set {}

impl Set {
    /// The encoding name OBJECT ENCODING reports.
    pub fn encoding_name(&self) -> &'static str {
        unimplemented!("Set encodings")
    }

    /// Approximate heap bytes owned.
    pub fn heap_size(&self) -> usize {
        0
    }
}
