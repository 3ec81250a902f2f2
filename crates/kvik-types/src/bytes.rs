//! A compact byte string for keys and small values: up to 22 bytes inline, longer ones
//! in one exact-size heap allocation. 24 bytes in all, against 32+ for `Vec<u8>` plus
//! its allocation; most keys in real workloads are short.

use std::borrow::Borrow;
use std::fmt;

/// Longest byte string stored inline.
pub const INLINE_CAP: usize = 22;

#[derive(Clone)]
pub enum SmallBytes {
    Inline { len: u8, data: [u8; INLINE_CAP] },
    Heap(Box<[u8]>),
}

impl SmallBytes {
    pub fn new(bytes: &[u8]) -> Self {
        if bytes.len() <= INLINE_CAP {
            let mut data = [0u8; INLINE_CAP];
            data[..bytes.len()].copy_from_slice(bytes);
            SmallBytes::Inline {
                len: bytes.len() as u8,
                data,
            }
        } else {
            SmallBytes::Heap(bytes.into())
        }
    }

    pub fn as_slice(&self) -> &[u8] {
        match self {
            SmallBytes::Inline { len, data } => &data[..*len as usize],
            SmallBytes::Heap(b) => b,
        }
    }

    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes allocated outside the struct itself.
    pub fn heap_size(&self) -> usize {
        match self {
            SmallBytes::Inline { .. } => 0,
            SmallBytes::Heap(b) => b.len(),
        }
    }
}

impl PartialEq for SmallBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for SmallBytes {}

impl Borrow<[u8]> for SmallBytes {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl fmt::Debug for SmallBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_roundtrip() {
        assert_eq!(std::mem::size_of::<SmallBytes>(), 24);
        for len in [0, 1, 22, 23, 100] {
            let data: Vec<u8> = (0..len as u8).collect();
            let b = SmallBytes::new(&data);
            assert_eq!(b.as_slice(), &data[..]);
            assert_eq!(b.heap_size() > 0, len > INLINE_CAP);
        }
    }
}
