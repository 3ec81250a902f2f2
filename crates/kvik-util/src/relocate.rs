//! Moving an allocation to a better place (active defragmentation): the contract
//! between whoever decides where memory should go (the allocator's side, in
//! kvik-server) and the owners of the pointers (entries, strings), which must swap
//! in the new address.
//!
//! Owns the [`Relocator`] contract and the moves of the plain owning pointers this
//! crate and std know (`Box`). Must not know which allocator is behind it.

use std::alloc::Layout;
use std::ptr::NonNull;

/// Decides, allocation by allocation, whether to move it, and moves it.
///
/// # Safety
/// An implementation that returns `Some(new)` has copied the `layout.size()` bytes
/// at `ptr` to `new`, a fresh allocation of the global allocator with the same
/// `layout`, and freed `ptr`; one that returns `None` has left `ptr` untouched.
pub unsafe trait Relocator {
    /// # Safety
    /// `ptr` is a live allocation made by the global allocator with `layout`, and
    /// nothing reads or writes it during the call; after `Some(new)` the caller
    /// uses `new` in its place and never touches `ptr` again.
    unsafe fn relocate(&mut self, ptr: NonNull<u8>, layout: Layout) -> Option<NonNull<u8>>;

    /// Should the allocation that holds `inside` move? For owners that cannot hand
    /// their allocation over (a hash table's) and rebuild it themselves instead
    /// when the answer is yes (counted as a move).
    fn claim_move(&mut self, inside: NonNull<u8>) -> bool;

    /// Every allocation of one item (a key and its value) has been offered: for
    /// counts per item.
    fn item_done(&mut self) {}
}

/// Offer a box's allocation to `relocator`; returns whether it moved. Zero-sized
/// values own no allocation and stay.
pub fn relocate_box<T>(boxed: &mut Box<T>, relocator: &mut dyn Relocator) -> bool {
    let old: *mut T = &mut **boxed;
    // SAFETY: as `relocate_raw` asks, and `new` holds the same `T`.
    unsafe {
        relocate_raw(
            old,
            Layout::new::<T>(),
            relocator,
            |new| Box::from_raw(new.cast()),
            boxed,
        )
    }
}

/// [`relocate_box`] for a boxed byte slice.
pub fn relocate_bytes(boxed: &mut Box<[u8]>, relocator: &mut dyn Relocator) -> bool {
    let len = boxed.len();
    let old: *mut [u8] = &mut **boxed;
    let rebuild = |new: *mut u8| {
        // SAFETY: `new` holds the `len` bytes of the old slice.
        unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(new, len)) }
    };
    // SAFETY: as `relocate_raw` asks.
    unsafe {
        relocate_raw(
            old.cast::<u8>(),
            Layout::array::<u8>(len).expect("slice layout"),
            relocator,
            rebuild,
            boxed,
        )
    }
}

/// Offer the allocation of `boxed` (at `old`, made with `layout`) to `relocator`;
/// when it moves, `rebuild` makes the box at the new address and the old box is
/// forgotten (its allocation is already freed).
///
/// # Safety
/// `old` is the allocation `boxed` owns and `layout` the one it was made with;
/// `rebuild(new)` is a box of the same value at `new`.
unsafe fn relocate_raw<B, T>(
    old: *mut T,
    layout: Layout,
    relocator: &mut dyn Relocator,
    rebuild: impl FnOnce(*mut u8) -> B,
    boxed: &mut B,
) -> bool {
    if layout.size() == 0 {
        return false;
    }
    // SAFETY: a value with a non-zero size owns a live allocation of the global
    // allocator made with `layout`, and `&mut` makes this the only access to it.
    let moved = unsafe { relocator.relocate(NonNull::new_unchecked(old.cast::<u8>()), layout) };
    let Some(new) = moved else {
        return false;
    };
    std::mem::forget(std::mem::replace(boxed, rebuild(new.as_ptr())));
    true
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Moves every allocation it is offered, through the global allocator.
    pub struct MoveAll(pub usize);

    // SAFETY: copies the bytes into a fresh allocation of the same layout and frees
    // the old one.
    unsafe impl Relocator for MoveAll {
        unsafe fn relocate(&mut self, ptr: NonNull<u8>, layout: Layout) -> Option<NonNull<u8>> {
            // SAFETY: the caller hands over a live allocation made with `layout`.
            unsafe {
                let new = NonNull::new(std::alloc::alloc(layout))?;
                std::ptr::copy_nonoverlapping(ptr.as_ptr(), new.as_ptr(), layout.size());
                std::alloc::dealloc(ptr.as_ptr(), layout);
                self.0 += 1;
                Some(new)
            }
        }

        fn claim_move(&mut self, _inside: NonNull<u8>) -> bool {
            true
        }
    }

    #[test]
    fn a_moved_box_keeps_its_contents() {
        let mut boxed: Box<[u8]> = b"some bytes".to_vec().into_boxed_slice();
        let mut relocator = MoveAll(0);
        assert!(relocate_bytes(&mut boxed, &mut relocator));
        assert_eq!(&*boxed, b"some bytes");
        assert_eq!(relocator.0, 1);
        let mut empty: Box<[u8]> = Box::new([]);
        assert!(!relocate_bytes(&mut empty, &mut relocator));
        let mut value = Box::new(vec![1u32, 2, 3]);
        assert!(relocate_box(&mut value, &mut relocator));
        assert_eq!(*value, vec![1, 2, 3]);
    }
}
