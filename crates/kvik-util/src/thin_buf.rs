//! `ThinBuf`: a growable byte buffer behind one thin pointer, its length and capacity
//! kept in the allocation, in front of the bytes.
//!
//! The buffer of a `raw` string. A `Vec<u8>` would make the string value 24 bytes and
//! every entry's header bigger; a `Box<Vec<u8>>` keeps the value small but puts a
//! second pointer chase (to the `Vec`, then to its bytes) on every read of the string.
//! Here the entry points at the allocation and the bytes follow its 16-byte header.
//! The `thin-vec` crate has the same layout but copies, extends and resizes one
//! element at a time (updating the length after each), several times slower than one
//! `memcpy` for the byte runs strings are made of; this type does whole runs.
//!
//! Owns nothing but its allocation. Allocation failure aborts, as in `Vec`.

use std::alloc::{self, Layout};
use std::ops::{Deref, DerefMut, Range};
use std::ptr::NonNull;

#[repr(C)]
struct Header {
    len: usize,
    cap: usize,
}

const HEADER: usize = std::mem::size_of::<Header>();

/// A growable byte buffer with its length and capacity inside the allocation.
pub struct ThinBuf {
    /// The header, followed by `cap` bytes of which the first `len` are the data.
    ptr: NonNull<Header>,
}

// SAFETY: a ThinBuf owns its allocation exclusively, like a Vec<u8>.
unsafe impl Send for ThinBuf {}
// SAFETY: shared access only reads.
unsafe impl Sync for ThinBuf {}

fn layout(cap: usize) -> Layout {
    Layout::from_size_align(
        HEADER.checked_add(cap).expect("buffer size overflows"),
        std::mem::align_of::<Header>(),
    )
    .expect("buffer layout")
}

impl ThinBuf {
    /// An empty buffer with room for `cap` bytes.
    pub fn with_capacity(cap: usize) -> Self {
        let layout = layout(cap);
        // SAFETY: the layout is never zero-sized (it has the header). The header is
        // written before anything reads it.
        unsafe {
            let raw = alloc::alloc(layout) as *mut Header;
            let Some(ptr) = NonNull::new(raw) else {
                alloc::handle_alloc_error(layout)
            };
            raw.write(Header { len: 0, cap });
            ThinBuf { ptr }
        }
    }

    pub fn from_slice(bytes: &[u8]) -> Self {
        let mut buf = Self::with_capacity(bytes.len());
        buf.extend_from_slice(bytes);
        buf
    }

    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> Self {
        let mut buf = Self::with_capacity(len);
        buf.resize_zeroed(len);
        buf
    }

    fn header(&self) -> &Header {
        // SAFETY: the pointer is to a live, initialised header.
        unsafe { self.ptr.as_ref() }
    }

    pub fn len(&self) -> usize {
        self.header().len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn capacity(&self) -> usize {
        self.header().cap
    }

    /// The first byte of the data area (valid for `cap` bytes).
    fn data(&self) -> *mut u8 {
        // SAFETY: the data area starts right after the header, inside the allocation.
        unsafe { (self.ptr.as_ptr() as *mut u8).add(HEADER) }
    }

    /// Make room for `additional` more bytes, at least doubling the capacity when it
    /// has to grow, so that repeated appends are amortised O(1).
    pub fn reserve(&mut self, additional: usize) {
        let (len, cap) = (self.len(), self.capacity());
        let needed = len.checked_add(additional).expect("buffer size overflows");
        if needed <= cap {
            return;
        }
        let new_cap = needed.max(cap.saturating_mul(2)).max(8);
        let new_layout = layout(new_cap);
        // SAFETY: the allocation was made with `layout(cap)`; the new size is not
        // zero. realloc keeps the header and the data, and the capacity is updated
        // before anything relies on it.
        unsafe {
            let raw = alloc::realloc(self.ptr.as_ptr() as *mut u8, layout(cap), new_layout.size())
                as *mut Header;
            let Some(ptr) = NonNull::new(raw) else {
                alloc::handle_alloc_error(new_layout)
            };
            self.ptr = ptr;
            (*raw).cap = new_cap;
        }
    }

    /// Offer the allocation to `relocator` (active defragmentation); returns whether
    /// it moved.
    pub fn relocate(&mut self, relocator: &mut dyn crate::relocate::Relocator) -> bool {
        let layout = layout(self.capacity());
        // SAFETY: the buffer owns a live allocation made with `layout(cap)`, and
        // `&mut self` is the only access to it; a moved one holds the same header
        // and bytes.
        match unsafe { relocator.relocate(self.ptr.cast(), layout) } {
            Some(new) => {
                self.ptr = new.cast();
                true
            }
            None => false,
        }
    }

    /// # Safety
    /// `len` is at most the capacity, and the bytes up to it are initialised.
    unsafe fn set_len(&mut self, len: usize) {
        debug_assert!(len <= self.capacity());
        // SAFETY: the header is live and this is the only reference to it.
        unsafe { (*self.ptr.as_ptr()).len = len };
    }

    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        let len = self.len();
        // SAFETY: `reserve` made room for the bytes after the data; they are written
        // before the length covers them.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.data().add(len), bytes.len());
            self.set_len(len + bytes.len());
        }
    }

    /// Grow to `new_len` bytes with zeros, or cut down to it.
    pub fn resize_zeroed(&mut self, new_len: usize) {
        let len = self.len();
        if new_len <= len {
            // SAFETY: shorter than before: initialised.
            unsafe { self.set_len(new_len) };
            return;
        }
        self.reserve(new_len - len);
        // SAFETY: `reserve` made room; the new bytes are zeroed before the length
        // covers them.
        unsafe {
            std::ptr::write_bytes(self.data().add(len), 0, new_len - len);
            self.set_len(new_len);
        }
    }

    /// Replace the bytes in `range` with `with`, moving the tail once.
    pub fn splice(&mut self, range: Range<usize>, with: &[u8]) {
        let len = self.len();
        assert!(
            range.start <= range.end && range.end <= len,
            "splice range out of bounds"
        );
        let tail = len - range.end;
        let new_len = range.start + with.len() + tail;
        self.reserve(new_len.saturating_sub(len));
        // SAFETY: the capacity covers both the old and the new length; the tail moves
        // with an overlapping copy, then the replacement fills the gap.
        unsafe {
            let data = self.data();
            std::ptr::copy(
                data.add(range.end),
                data.add(range.start + with.len()),
                tail,
            );
            std::ptr::copy_nonoverlapping(with.as_ptr(), data.add(range.start), with.len());
            self.set_len(new_len);
        }
    }
}

impl Drop for ThinBuf {
    fn drop(&mut self) {
        // SAFETY: made with this layout, freed once.
        unsafe { alloc::dealloc(self.ptr.as_ptr() as *mut u8, layout(self.capacity())) }
    }
}

impl Deref for ThinBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the first `len` bytes of the data area are initialised.
        unsafe { std::slice::from_raw_parts(self.data(), self.len()) }
    }
}

impl DerefMut for ThinBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.data(), self.len()) }
    }
}

impl Clone for ThinBuf {
    fn clone(&self) -> Self {
        Self::from_slice(self)
    }
}

impl std::fmt::Debug for ThinBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Extend(Vec<u8>),
        Resize(usize),
        Splice(usize, usize, Vec<u8>),
        Write(usize, u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..40).prop_map(Op::Extend),
            (0usize..200).prop_map(Op::Resize),
            (
                0usize..100,
                0usize..100,
                prop::collection::vec(any::<u8>(), 0..30)
            )
                .prop_map(|(a, b, w)| Op::Splice(a, b, w)),
            (0usize..200, any::<u8>()).prop_map(|(i, b)| Op::Write(i, b)),
        ]
    }

    proptest! {
        /// Every operation leaves the same bytes as a `Vec<u8>` given the same ones.
        #[test]
        fn behaves_like_a_vec(start in prop::collection::vec(any::<u8>(), 0..50),
                              ops in prop::collection::vec(op(), 0..40)) {
            let mut buf = ThinBuf::from_slice(&start);
            let mut model = start.clone();
            for op in ops {
                match op {
                    Op::Extend(bytes) => {
                        buf.extend_from_slice(&bytes);
                        model.extend_from_slice(&bytes);
                    }
                    Op::Resize(len) => {
                        buf.resize_zeroed(len);
                        model.resize(len, 0);
                    }
                    Op::Splice(a, b, with) => {
                        let len = model.len();
                        let (a, b) = (a.min(len), b.min(len));
                        let range = a.min(b)..a.max(b);
                        buf.splice(range.clone(), &with);
                        model.splice(range, with);
                    }
                    Op::Write(i, byte) => {
                        if let Some(at) = model.get_mut(i) {
                            *at = byte;
                            buf[i] = byte;
                        }
                    }
                }
                prop_assert_eq!(&buf[..], &model[..]);
                prop_assert!(buf.capacity() >= buf.len());
            }
            prop_assert_eq!(&buf.clone()[..], &model[..]);
        }
    }

    #[test]
    fn empty_and_zeroed_buffers() {
        let empty = ThinBuf::from_slice(b"");
        assert!(empty.is_empty());
        assert_eq!(&ThinBuf::zeroed(3)[..], &[0, 0, 0]);
        assert_eq!(&ThinBuf::with_capacity(0)[..], b"");
    }
}
