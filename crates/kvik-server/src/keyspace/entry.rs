//! One key and what belongs to it, in a single allocation.
//!
//! An entry is a header (value, deadline, MVCC timestamp, access clock) followed by the
//! key's bytes, allocated together: one allocation per key instead of one for the
//! entry and one for a long key, and no fixed-size key buffer wasted on short keys.
//! With a 48-byte header, a key of up to 16 bytes fits jemalloc's 64-byte class.
//!
//! The shard tables hold [`EntryBox`]es, thin owning pointers (8 bytes a slot). Code
//! sees entries as `&Entry` / `&mut Entry`, where [`Entry`] is a dynamically sized
//! type ending in the key bytes. Because `Entry` is unsized it can never be moved or
//! swapped out of its allocation; the mutable parts a command may exchange live in
//! [`EntryData`], which carries nothing about the key.

use crate::types::Value;
use crate::util::relocate::Relocator;
use crate::util::size_class::size_class;
use std::alloc::{self, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// The parts of an entry commands change.
#[derive(Debug)]
pub struct EntryData {
    pub value: Value,
    /// Absolute deadline in Unix milliseconds; 0 when the key does not expire.
    pub expire_at: u64,
    /// MVCC timestamp of the last write (see [`crate::hlc`]).
    pub ts: u64,
}

/// A key and its data. Only ever behind a reference or an [`EntryBox`].
#[repr(C)]
pub struct Entry {
    data: EntryData,
    /// Access clock in seconds (LRU), for OBJECT IDLETIME and eviction.
    pub access: u32,
    key_len: u32,
    key: [u8],
}

/// The header of an entry's allocation: `Entry` without its key. Same layout as the
/// start of `Entry` (both `repr(C)`), used to compute sizes and to initialise.
#[repr(C)]
struct Header {
    data: EntryData,
    access: u32,
    key_len: u32,
}

/// What a key's slot in its shard's table costs beside the entry: the 8-byte pointer
/// and hashbrown's control byte.
pub const SLOT_BYTES: usize = 9;

/// What a deadline costs in its shard's expiry index: the (deadline, hash) -> count
/// pair (20 bytes) and its share of the B-tree node that holds it.
pub const EXPIRY_INDEX_BYTES: usize = 32;

impl Entry {
    /// The bytes this key costs (MEMORY USAGE): its allocation as jemalloc rounds it
    /// (header and key), its table slot, its deadline in the expiry index, and what
    /// its value owns.
    pub fn memory_usage(&self) -> usize {
        let allocation = size_class(layout_for(self.key.len()).size());
        let deadline = if self.data.expire_at != 0 {
            EXPIRY_INDEX_BYTES
        } else {
            0
        };
        allocation + SLOT_BYTES + deadline + self.data.value.heap_size()
    }

    pub fn key(&self) -> &[u8] {
        &self.key
    }

    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.data.expire_at != 0 && self.data.expire_at <= now_ms
    }
}

impl Deref for Entry {
    type Target = EntryData;
    fn deref(&self) -> &EntryData {
        &self.data
    }
}

impl DerefMut for Entry {
    fn deref_mut(&mut self) -> &mut EntryData {
        &mut self.data
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("key", &String::from_utf8_lossy(&self.key))
            .field("data", &self.data)
            .field("access", &self.access)
            .finish()
    }
}

/// The owning pointer to an entry's allocation.
pub struct EntryBox(NonNull<Header>);

// SAFETY: an EntryBox owns its allocation exclusively, like a Box; Value is Send+Sync.
unsafe impl Send for EntryBox {}
// SAFETY: shared access only hands out `&Entry`.
unsafe impl Sync for EntryBox {}

/// The allocation of an entry with a `key_len`-byte key: the header, the key, and
/// padding up to the alignment (a reference to the unsized `Entry` spans that much).
fn layout_for(key_len: usize) -> Layout {
    Layout::from_size_align(
        std::mem::size_of::<Header>() + key_len,
        std::mem::align_of::<Header>(),
    )
    .expect("entry layout")
    .pad_to_align()
}

impl EntryBox {
    /// Free a removed entry, in the background when `lazy` and it owns a big value
    /// (see [`crate::lazyfree::free`]). Returns the bytes left to the background
    /// thread.
    pub fn free(self, lazy: bool) -> u64 {
        let bytes = self.value.heap_size();
        crate::lazyfree::free(self, bytes, lazy)
    }

    /// A new entry for `key`. Keys are limited to 4 GiB by the length field, far above
    /// what `proto-max-bulk-len` lets a client send.
    pub fn new(key: &[u8], data: EntryData, access: u32) -> EntryBox {
        let key_len = u32::try_from(key.len()).expect("key longer than 4 GiB");
        let layout = layout_for(key.len());
        // SAFETY: the layout has a non-zero size (the header). The header is written
        // before anything reads it, and the key bytes are copied right after it, inside
        // the allocation (size_of::<Header>() + key.len() bytes).
        unsafe {
            let raw = alloc::alloc(layout) as *mut Header;
            let Some(ptr) = NonNull::new(raw) else {
                alloc::handle_alloc_error(layout)
            };
            raw.write(Header {
                data,
                access,
                key_len,
            });
            let key_at = (raw as *mut u8).add(std::mem::size_of::<Header>());
            std::ptr::copy_nonoverlapping(key.as_ptr(), key_at, key.len());
            EntryBox(ptr)
        }
    }

    fn key_len(&self) -> usize {
        // SAFETY: the header is initialised for the whole life of the box.
        unsafe { (*self.0.as_ptr()).key_len as usize }
    }

    fn as_entry_ptr(&self) -> *mut Entry {
        // A slice pointer with the key's length, cast to the DST: the metadata of
        // `Entry` is the length of its trailing `key`.
        std::ptr::slice_from_raw_parts_mut(self.0.as_ptr() as *mut u8, self.key_len()) as *mut Entry
    }

    /// Offer the value's allocations, then the entry's own, to `relocator` (active
    /// defragmentation).
    pub fn relocate(&mut self, relocator: &mut dyn Relocator) {
        self.value.relocate(relocator);
        let layout = layout_for(self.key_len());
        // SAFETY: the box owns a live allocation made with this layout and `&mut self`
        // is the only access to it; a moved allocation holds the same header and key.
        if let Some(new) = unsafe { relocator.relocate(self.0.cast(), layout) } {
            self.0 = new.cast();
        }
    }

    /// The same data and access clock under another key (RENAME).
    pub fn renamed(self, key: &[u8]) -> EntryBox {
        let (data, access) = self.into_data();
        EntryBox::new(key, data, access)
    }

    /// Take the data out, freeing the allocation.
    pub fn into_data(self) -> (EntryData, u32) {
        let key_len = self.key_len();
        let ptr = self.0.as_ptr();
        std::mem::forget(self);
        // SAFETY: `ptr` is the live allocation this box owned; the header is read out
        // once (moving the value) and the memory is freed without dropping it again.
        unsafe {
            let header = ptr.read();
            alloc::dealloc(ptr as *mut u8, layout_for(key_len));
            (header.data, header.access)
        }
    }
}

impl Deref for EntryBox {
    type Target = Entry;
    fn deref(&self) -> &Entry {
        // SAFETY: the allocation holds an initialised header followed by `key_len`
        // key bytes, which is exactly an `Entry` with that metadata.
        unsafe { &*self.as_entry_ptr() }
    }
}

impl DerefMut for EntryBox {
    fn deref_mut(&mut self) -> &mut Entry {
        // SAFETY: as in `deref`, and `&mut self` makes the access exclusive.
        unsafe { &mut *self.as_entry_ptr() }
    }
}

impl Drop for EntryBox {
    fn drop(&mut self) {
        let layout = layout_for(self.key_len());
        // SAFETY: the header is initialised and dropped exactly once here (the value
        // may own memory); then the allocation is freed with the layout it was made with.
        unsafe {
            std::ptr::drop_in_place(self.0.as_ptr());
            alloc::dealloc(self.0.as_ptr() as *mut u8, layout);
        }
    }
}

impl std::fmt::Debug for EntryBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::string::StrValue;

    fn data(v: &[u8]) -> EntryData {
        EntryData {
            value: Value::Str(StrValue::from_bytes(v)),
            expire_at: 0,
            ts: 1,
        }
    }

    #[test]
    fn key_and_data_round_trip() {
        for len in [0usize, 1, 16, 17, 300] {
            let key: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut e = EntryBox::new(&key, data(&vec![b'v'; len * 3]), 7);
            assert_eq!(e.key(), &key[..]);
            assert_eq!(e.access, 7);
            e.expire_at = 99;
            e.value = Value::Str(StrValue::from_bytes(b"changed"));
            assert_eq!(e.expire_at, 99);
            assert!(e.is_expired(100));
            let (d, access) = e.into_data();
            assert_eq!(d.value, Value::Str(StrValue::from_bytes(b"changed")));
            assert_eq!(access, 7);
        }
    }

    #[test]
    fn a_short_key_fits_one_small_allocation() {
        assert_eq!(std::mem::size_of::<Header>(), 48);
        assert_eq!(std::mem::size_of::<EntryBox>(), 8);
        assert_eq!(layout_for(16).size(), 64);
    }

    /// Moves every allocation through the global allocator.
    struct MoveAll(usize);

    // SAFETY: copies into a fresh allocation of the same layout, frees the old one.
    unsafe impl Relocator for MoveAll {
        unsafe fn relocate(&mut self, ptr: NonNull<u8>, layout: Layout) -> Option<NonNull<u8>> {
            // SAFETY: the caller hands over a live allocation made with `layout`.
            unsafe {
                let new = NonNull::new(alloc::alloc(layout))?;
                std::ptr::copy_nonoverlapping(ptr.as_ptr(), new.as_ptr(), layout.size());
                alloc::dealloc(ptr.as_ptr(), layout);
                self.0 += 1;
                Some(new)
            }
        }

        fn claim_move(&mut self, _inside: NonNull<u8>) -> bool {
            true
        }
    }

    #[test]
    fn a_relocated_entry_keeps_its_key_and_value() {
        let long = vec![b'x'; 100];
        let mut e = EntryBox::new(b"some key", data(&long), 3);
        let mut relocator = MoveAll(0);
        e.relocate(&mut relocator);
        assert_eq!(relocator.0, 2, "the entry and its string");
        assert_eq!(e.key(), b"some key");
        assert_eq!(e.value, Value::Str(StrValue::from_bytes(&long)));
        assert_eq!(e.access, 3);
    }

    #[test]
    fn swapping_data_keeps_each_key() {
        let mut a = EntryBox::new(b"a", data(b"1"), 0);
        let mut b = EntryBox::new(b"a much longer key than a", data(b"2"), 0);
        std::mem::swap(&mut **a as &mut EntryData, &mut **b);
        assert_eq!(a.key(), b"a");
        assert_eq!(b.key(), b"a much longer key than a");
        assert_eq!(a.value, Value::Str(StrValue::from_bytes(b"2")));
    }
}
