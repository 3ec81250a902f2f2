//! [`PackedPair`]: a field and its value in one exact-size allocation behind a thin
//! pointer.
//!
//! A hashtable-encoded hash holds one of these per field, so each field costs one
//! allocation and an 8-byte slot (Redis: a 24-byte dict entry plus two strings). The
//! allocation holds the field's length and the value's length as varints, then the
//! field's bytes, then the value's; nothing else, so it is as small as it can be.

use super::varint;
use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::{self, NonNull};

pub struct PackedPair(NonNull<u8>);

// SAFETY: a PackedPair owns its allocation alone, as a `Box<[u8]>` would, and offers
// no interior mutability.
unsafe impl Send for PackedPair {}
unsafe impl Sync for PackedPair {}

/// Where the parts of a pair lie in its allocation.
struct Parts {
    header: usize,
    field: usize,
    value: usize,
}

impl Parts {
    fn size(&self) -> usize {
        self.header + self.field + self.value
    }
}

impl PackedPair {
    pub fn new(field: &[u8], value: &[u8]) -> PackedPair {
        let mut header = [0u8; 2 * varint::MAX_LEN];
        let (first, second) = header.split_at_mut(varint::MAX_LEN);
        let field_header = varint::write(first.try_into().expect("MAX_LEN bytes"), field.len());
        let value_header = varint::write(second.try_into().expect("MAX_LEN bytes"), value.len());
        let size = field_header + value_header + field.len() + value.len();
        let layout = Layout::from_size_align(size, 1).expect("a pair fits in memory");
        // SAFETY: the layout has a non-zero size (two header bytes at least).
        let base =
            NonNull::new(unsafe { alloc(layout) }).unwrap_or_else(|| handle_alloc_error(layout));
        // SAFETY: the allocation holds exactly the four parts copied in, one after the
        // other, and none of the sources overlaps it.
        unsafe {
            let mut at = base.as_ptr();
            for part in [
                &first[..field_header],
                &second[..value_header],
                field,
                value,
            ] {
                ptr::copy_nonoverlapping(part.as_ptr(), at, part.len());
                at = at.add(part.len());
            }
        }
        PackedPair(base)
    }

    fn parts(&self) -> Parts {
        // SAFETY: the two varints at the start lie inside the allocation: `new` wrote
        // them there and reading stops at their last byte.
        let byte_at = |i| unsafe { *self.0.as_ptr().add(i) };
        let (field, first) = varint::read(byte_at);
        let (value, second) = varint::read(|i| byte_at(first + i));
        Parts {
            header: first + second,
            field,
            value,
        }
    }

    /// The field and the value.
    pub fn get(&self) -> (&[u8], &[u8]) {
        let parts = self.parts();
        // SAFETY: both ranges lie inside the allocation, which `self` owns and keeps
        // unchanged for as long as the borrow lasts.
        unsafe {
            let field = self.0.as_ptr().add(parts.header);
            (
                std::slice::from_raw_parts(field, parts.field),
                std::slice::from_raw_parts(field.add(parts.field), parts.value),
            )
        }
    }

    pub fn field(&self) -> &[u8] {
        self.get().0
    }

    pub fn value(&self) -> &[u8] {
        self.get().1
    }

    /// Bytes allocated for the pair.
    pub fn alloc_size(&self) -> usize {
        self.parts().size()
    }
}

impl Drop for PackedPair {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.alloc_size(), 1).expect("layout of `new`");
        // SAFETY: allocated in `new` with this same layout, freed only here.
        unsafe { dealloc(self.0.as_ptr(), layout) }
    }
}

impl Clone for PackedPair {
    fn clone(&self) -> Self {
        let (field, value) = self.get();
        PackedPair::new(field, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_field_and_value() {
        for (f, v) in [(0, 0), (1, 0), (0, 5), (127, 128), (300, 70000)] {
            let field = vec![b'f'; f];
            let value = vec![b'v'; v];
            let pair = PackedPair::new(&field, &value);
            assert_eq!(pair.get(), (&field[..], &value[..]));
            assert_eq!(pair.alloc_size(), varint::len(f) + varint::len(v) + f + v);
            let copy = pair.clone();
            drop(pair);
            assert_eq!(copy.field(), &field[..]);
            assert_eq!(copy.value(), &value[..]);
        }
    }

    #[test]
    fn is_one_pointer() {
        assert_eq!(std::mem::size_of::<PackedPair>(), 8);
    }
}
