//! A list: listpack while small, quicklist beyond.

/// A list: listpack while small, quicklist beyond.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct List {}

impl List {
    /// The encoding name OBJECT ENCODING reports.
    pub fn encoding_name(&self) -> &'static str {
        unimplemented!("List encodings")
    }

    /// Approximate heap bytes owned.
    pub fn heap_size(&self) -> usize {
        0
    }
}
