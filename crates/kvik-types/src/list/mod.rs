//! The list type: a deque of compact nodes, Redis's quicklist in spirit.
//!
//! Elements live in [`Pack`]s, byte buffers that hold one node's entries back to back
//! (see [`pack`]): a few bytes of overhead per element instead of a pointer and an
//! allocation each. A small list is a single pack held inline (no node deque at all);
//! once the pack would outgrow the node limit (`list-max-listpack-size`, see
//! [`NodeLimit`]), a new node starts and the packs move into a `VecDeque`, so pushes
//! and pops at either end stay O(1) however long the list gets, and reaching an index
//! walks node counts from the nearer end, then entries within one node.
//!
//! Redis 7.0 reports every list as `quicklist` (its listpack encoding for small lists
//! came in 7.2), so OBJECT ENCODING does too, whatever the shape inside.
//!
//! Under `list-compress-depth` N > 0, the nodes more than N from either end are held
//! LZF-compressed (see [`pack`]), as Redis 7.0 does: pushes and pops touch only the
//! end nodes, which stay raw; when a node is added or dropped at an end, the node
//! that moves N deep is compressed and those within N decompressed. A read of an
//! interior node decompresses a copy that [`List::forget_reads`] drops (the command
//! layer reads through [`Reading`], which does so when the command is done); a change
//! to an interior node decompresses it and compresses it again afterwards. The depth
//! comes with each write ([`NodeLimit`]), so CONFIG SET applies to the nodes written
//! next.
//!
//! Invariants: there is always at least one node; a node is empty only when it is the
//! only one (an empty list); a node holding two or more entries respects the limit it
//! was built under (a single element larger than a node gets a node of its own).
//!
//! The packed threshold (DEBUG QUICKLIST-PACKED-THRESHOLD, 1 GB unless a test lowers
//! it) plays the part of Redis's "plain" nodes: no node of two or more entries
//! reaches it, so an element of that size or more always has a node of its own.

mod pack;

pub use pack::Element;

use pack::{Entries, Pack};
use std::collections::VecDeque;
use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Redis's default packed threshold: elements from 1 GB up get a node of their own.
const DEFAULT_PACKED_THRESHOLD: usize = 1 << 30;

/// See the module's last paragraph; process-wide, as in Redis.
static PACKED_THRESHOLD: AtomicUsize = AtomicUsize::new(DEFAULT_PACKED_THRESHOLD);

/// DEBUG QUICKLIST-PACKED-THRESHOLD: set the packed threshold (0 restores the
/// default). False, and nothing changes, above 4 GB less 1 MB, as Redis refuses.
pub fn set_packed_threshold(bytes: u64) -> bool {
    if bytes > (1 << 32) - (1 << 20) {
        return false;
    }
    let bytes = match bytes {
        0 => DEFAULT_PACKED_THRESHOLD,
        n => n as usize,
    };
    PACKED_THRESHOLD.store(bytes, Ordering::Relaxed);
    true
}

/// Either end of a list (LEFT is the head, RIGHT the tail).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Head,
    Tail,
}

/// How big a node may grow, from `list-max-listpack-size`, and how many nodes at
/// each end stay uncompressed, from `list-compress-depth` (0: none is compressed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLimit {
    fill: Fill,
    compress_depth: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fill {
    /// At most this many entries (and never more than [`SAFETY_BYTES`]).
    Entries(usize),
    /// At most this many bytes of entries.
    Bytes(usize),
}

/// The most bytes a node limited by entry count may hold, as in Redis.
const SAFETY_BYTES: usize = 8192;

impl NodeLimit {
    /// The limit a `list-max-listpack-size` value sets: a positive value counts
    /// entries, -1 to -5 mean 4, 8, 16, 32 or 64 KB. Anything else lets Redis 7.0 put
    /// only one element in each node, and so does kvik.
    pub fn from_config(fill: i64) -> NodeLimit {
        match fill {
            1.. => NodeLimit::entries(fill as usize),
            -5..=-1 => NodeLimit::bytes(4096 << (-fill - 1)),
            _ => NodeLimit::entries(0),
        }
    }

    /// At most `max` entries a node.
    pub fn entries(max: usize) -> NodeLimit {
        NodeLimit {
            fill: Fill::Entries(max),
            compress_depth: 0,
        }
    }

    /// At most `max` bytes of entries a node.
    pub fn bytes(max: usize) -> NodeLimit {
        NodeLimit {
            fill: Fill::Bytes(max),
            compress_depth: 0,
        }
    }

    /// The same limit, keeping all but `depth` nodes at each end compressed.
    pub fn compressing(self, depth: usize) -> NodeLimit {
        NodeLimit {
            compress_depth: depth,
            ..self
        }
    }

    /// May a node hold `count` entries taking `bytes`? Never two or more reaching
    /// the packed threshold.
    fn allows(self, bytes: usize, count: usize) -> bool {
        let within = match self.fill {
            Fill::Entries(max) => count <= max && bytes <= SAFETY_BYTES,
            Fill::Bytes(max) => bytes <= max,
        };
        within && (count < 2 || bytes < PACKED_THRESHOLD.load(Ordering::Relaxed))
    }
}

/// The nodes of a list: one pack inline while it is small, a deque of packs beyond.
#[derive(Clone)]
enum Nodes {
    One(Pack),
    Many(VecDeque<Pack>),
}

impl Nodes {
    fn count(&self) -> usize {
        match self {
            Nodes::One(_) => 1,
            Nodes::Many(d) => d.len(),
        }
    }

    fn get(&self, i: usize) -> &Pack {
        match self {
            Nodes::One(p) => p,
            Nodes::Many(d) => &d[i],
        }
    }

    fn get_mut(&mut self, i: usize) -> &mut Pack {
        match self {
            Nodes::One(p) => p,
            Nodes::Many(d) => &mut d[i],
        }
    }

    /// The packs in order.
    fn iter(&self) -> impl DoubleEndedIterator<Item = &Pack> + ExactSizeIterator + '_ {
        (0..self.count()).map(|i| self.get(i))
    }

    /// The deque of packs, made from the single pack when there is only one.
    fn many(&mut self) -> &mut VecDeque<Pack> {
        if let Nodes::One(p) = self {
            let mut d = VecDeque::with_capacity(4);
            d.push_back(std::mem::take(p));
            *self = Nodes::Many(d);
        }
        match self {
            Nodes::Many(d) => d,
            Nodes::One(_) => unreachable!("converted above"),
        }
    }

    /// Insert a node so that it becomes node `i`.
    fn insert(&mut self, i: usize, pack: Pack) {
        self.many().insert(i, pack);
    }

    /// Drop node `i` (the last node left is emptied instead, see the invariants).
    fn remove(&mut self, i: usize) {
        match self {
            Nodes::Many(d) if d.len() > 1 => {
                d.remove(i);
            }
            _ => *self.get_mut(i) = Pack::default(),
        }
    }

    /// Keep the `depth` nodes at each end raw and compress the ones just inside them
    /// (run when a node comes or goes at an end; the deeper ones are compressed
    /// already). Nothing is compressed under depth 0.
    fn settle_ends(&mut self, depth: usize) {
        let Nodes::Many(d) = self else { return };
        if depth == 0 {
            return;
        }
        let n = d.len();
        for i in 0..depth.min(n) {
            d[i].decompress();
            d[n - 1 - i].decompress();
        }
        if n > 2 * depth {
            d[depth].compress();
            d[n - 1 - depth].compress();
        }
    }

    /// Compress the nodes in `touched` that lie deeper than `depth` from both ends.
    fn settle(&mut self, touched: std::ops::Range<usize>, depth: usize) {
        let Nodes::Many(d) = self else { return };
        let n = d.len();
        if depth == 0 || n <= 2 * depth {
            return;
        }
        let deep = touched.start.max(depth)..touched.end.min(n - depth);
        if !deep.is_empty() {
            d.range_mut(deep).for_each(Pack::compress);
        }
    }

    /// Drop empty nodes and merge neighbours whose entries fit in one node together.
    fn compact(&mut self, limit: NodeLimit) {
        let Nodes::Many(d) = self else { return };
        let mut packed: VecDeque<Pack> = VecDeque::with_capacity(d.len());
        for pack in d.drain(..).filter(|p| !p.is_empty()) {
            match packed.back_mut() {
                Some(last)
                    if limit.allows(last.byte_len() + pack.byte_len(), last.len() + pack.len()) =>
                {
                    last.append(pack)
                }
                _ => packed.push_back(pack),
            }
        }
        if packed.is_empty() {
            packed.push_back(Pack::default());
        }
        *d = packed;
    }
}

/// A list of byte strings.
pub struct List {
    nodes: Nodes,
    len: usize,
    /// A read through `&self` may have left decompressed copies of compressed nodes.
    read_copies: AtomicBool,
}

impl Default for List {
    fn default() -> Self {
        List {
            nodes: Nodes::One(Pack::default()),
            len: 0,
            read_copies: AtomicBool::new(false),
        }
    }
}

impl Clone for List {
    fn clone(&self) -> Self {
        let mut copy = List {
            nodes: self.nodes.clone(),
            len: self.len,
            read_copies: AtomicBool::new(self.read_copies.load(Ordering::Relaxed)),
        };
        copy.forget_reads();
        copy
    }
}

/// A list being read: derefs to it, and drops the copies the reads decompressed when
/// it goes, so a compressed node is raw only while a command looks at it.
pub struct Reading<'a>(&'a mut List);

impl Deref for Reading<'_> {
    type Target = List;

    fn deref(&self) -> &List {
        self.0
    }
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        self.0.forget_reads();
    }
}

impl List {
    pub fn new() -> List {
        List::default()
    }

    /// The list, for reads that leave no decompressed copies behind once done.
    pub fn reading(&mut self) -> Reading<'_> {
        Reading(self)
    }

    /// Drop the decompressed copies earlier reads made of compressed nodes.
    pub fn forget_reads(&mut self) {
        if std::mem::take(self.read_copies.get_mut()) {
            for i in 0..self.nodes.count() {
                self.nodes.get_mut(i).forget_reads();
            }
        }
    }

    /// How many nodes are held compressed.
    #[cfg(test)]
    fn compressed_nodes(&self) -> usize {
        self.nodes.iter().filter(|p| p.is_compressed()).count()
    }

    /// Note that a read is about to look into `pack`.
    fn reading_node(&self, pack: &Pack) {
        if pack.is_compressed() {
            self.read_copies.store(true, Ordering::Relaxed);
        }
    }

    /// The encoding name OBJECT ENCODING reports (always this in Redis 7.0).
    pub fn encoding_name(&self) -> &'static str {
        "quicklist"
    }

    /// Approximate heap bytes owned (the list's own box included).
    pub fn heap_size(&self) -> usize {
        let deque = match &self.nodes {
            Nodes::One(_) => 0,
            Nodes::Many(d) => d.capacity() * std::mem::size_of::<Pack>(),
        };
        std::mem::size_of::<List>() + deque + self.nodes.iter().map(Pack::heap_size).sum::<usize>()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many nodes hold the elements.
    pub fn node_count(&self) -> usize {
        self.nodes.count()
    }

    /// Show `visit` each node, head to tail, as its elements (an RDB writer keeps the
    /// layout). Compressed nodes are decompressed one at a time and no copy is kept.
    pub fn for_each_node(&self, mut visit: impl FnMut(&mut dyn Iterator<Item = Element<'_>>)) {
        for pack in self.nodes.iter() {
            pack.with_entries(|entries| visit(&mut entries.map(|e| e.element)));
        }
    }

    /// The position Redis means by `index`: counted from the head, or from the tail
    /// when negative (-1 is the last element). `None` when out of range.
    pub fn position(&self, index: i64) -> Option<usize> {
        let from_head = if index < 0 {
            index.checked_add(self.len as i64)?
        } else {
            index
        };
        usize::try_from(from_head).ok().filter(|&i| i < self.len)
    }

    /// The element at position `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<Element<'_>> {
        (i < self.len).then(|| {
            let (node, start) = self.locate(i);
            self.reading_node(self.nodes.get(node));
            self.nodes.get(node).entry_at(start).element
        })
    }

    /// Every element, head to tail (`.rev()` walks from the tail).
    pub fn iter(&self) -> Iter<'_> {
        self.range(0, self.len)
    }

    /// Up to `count` elements from position `start` on.
    pub fn range(&self, start: usize, count: usize) -> Iter<'_> {
        let count = count.min(self.len.saturating_sub(start));
        if count == 0 {
            let empty = Entries::none();
            return Iter {
                list: self,
                front_node: 0,
                front: empty.clone(),
                back_node: 0,
                back: empty,
                remaining: 0,
            };
        }
        let (front_node, front_start) = self.locate(start);
        let (back_node, back_start) = self.locate(start + count - 1);
        self.reading_node(self.nodes.get(front_node));
        self.reading_node(self.nodes.get(back_node));
        let back_end = self.nodes.get(back_node).entry_at(back_start).span.1;
        Iter {
            list: self,
            front_node,
            front: self
                .nodes
                .get(front_node)
                .entries()
                .starting_at(front_start),
            back_node,
            back: self.nodes.get(back_node).entries().ending_at(back_end),
            remaining: count,
        }
    }

    /// Add `item` at `end`.
    pub fn push(&mut self, end: End, item: &[u8], limit: NodeLimit) {
        let element = Element::of(item);
        let i = self.end_node(end);
        let node = self.nodes.get_mut(i);
        let grown = node.byte_len() + pack::entry_len(element);
        if node.is_empty() || limit.allows(grown, node.len() + 1) {
            node.push(end, element);
        } else {
            let mut fresh = Pack::default();
            fresh.push(end, element);
            let at = match end {
                End::Head => 0,
                End::Tail => self.nodes.count(),
            };
            self.nodes.insert(at, fresh);
            self.nodes.settle_ends(limit.compress_depth);
        }
        self.len += 1;
        self.forget_reads();
    }

    /// Take one element from `end`.
    pub fn pop(&mut self, end: End) -> Option<Vec<u8>> {
        let mut taken = None;
        self.pop_many(end, 1, |e| taken = Some(e.to_vec()));
        taken
    }

    /// Take up to `n` elements from `end`, showing each to `visit` in the order they
    /// leave (from the tail: last element first). Returns how many were taken.
    pub fn pop_many(&mut self, end: End, n: usize, visit: impl FnMut(Element<'_>)) -> usize {
        let n = n.min(self.len);
        // Only the nodes the elements lie in are read (an interior node may be
        // compressed).
        match end {
            End::Head => self.range(0, n).for_each(visit),
            End::Tail => self.range(self.len - n, n).rev().for_each(visit),
        }
        self.discard(end, n);
        n
    }

    /// Drop up to `n` elements from `end`: whole nodes while they last, then the
    /// nearest part of one. A compressed node that becomes an end is decompressed
    /// when it is next touched.
    pub fn discard(&mut self, end: End, n: usize) {
        let mut left = n.min(self.len);
        self.len -= left;
        while left > 0 {
            let i = self.end_node(end);
            let node = self.nodes.get_mut(i);
            if node.len() <= left {
                left -= node.len();
                self.nodes.remove(i);
            } else {
                node.remove_from(end, left);
                left = 0;
            }
        }
        self.forget_reads();
    }

    /// Replace the element at position `i`; false when out of range.
    pub fn set(&mut self, i: usize, item: &[u8], limit: NodeLimit) -> bool {
        if i >= self.len {
            return false;
        }
        let (node, start) = self.locate(i);
        self.nodes
            .get_mut(node)
            .replace_at(start, Element::of(item));
        self.split_and_settle(node, limit);
        true
    }

    /// Insert `item` next to the first element equal to `pivot`, on its `side` (head
    /// side: before it). False when no element equals `pivot`.
    pub fn insert_beside(
        &mut self,
        pivot: &[u8],
        side: End,
        item: &[u8],
        limit: NodeLimit,
    ) -> bool {
        let pivot = Element::of(pivot);
        let found = self.nodes.iter().enumerate().find_map(|(i, pack)| {
            let span = pack.with_entries(|mut e| e.find(|e| e.element == pivot).map(|e| e.span));
            Some((i, span?))
        });
        let Some((node, (start, end))) = found else {
            return false;
        };
        let at = match side {
            End::Head => start,
            End::Tail => end,
        };
        self.nodes.get_mut(node).insert_at(at, Element::of(item));
        self.len += 1;
        self.split_and_settle(node, limit);
        true
    }

    /// Remove up to `max` elements equal to `item`, the first ones met walking from
    /// `from`. Returns how many went.
    pub fn remove_matching(
        &mut self,
        item: &[u8],
        max: usize,
        from: End,
        limit: NodeLimit,
    ) -> usize {
        let needle = Element::of(item);
        let count = self.nodes.count();
        let mut removed = 0;
        // Nodes searched without a match keep the copy the search decompressed.
        *self.read_copies.get_mut() = true;
        for k in 0..count {
            if removed == max {
                break;
            }
            let i = match from {
                End::Head => k,
                End::Tail => count - 1 - k,
            };
            removed += self
                .nodes
                .get_mut(i)
                .remove_matching(needle, max - removed, from);
        }
        if removed > 0 {
            self.len -= removed;
            self.nodes.compact(limit);
            let all = 0..self.nodes.count();
            self.nodes.settle(all, limit.compress_depth);
        }
        self.forget_reads();
        removed
    }

    /// The entries of node `i`, for a read.
    fn entries_of(&self, i: usize) -> Entries<'_> {
        let pack = self.nodes.get(i);
        self.reading_node(pack);
        pack.entries()
    }

    /// The node at `end`.
    fn end_node(&self, end: End) -> usize {
        match end {
            End::Head => 0,
            End::Tail => self.nodes.count() - 1,
        }
    }

    /// The node holding position `i` and where its entry starts there, found from
    /// the nearer end of the list.
    fn locate(&self, i: usize) -> (usize, usize) {
        let (node, within) = self.node_of(i);
        (node, self.nodes.get(node).offset_of(within))
    }

    /// The node holding position `i` (which must exist), and its index there.
    fn node_of(&self, i: usize) -> (usize, usize) {
        if i < self.len / 2 {
            let mut skip = i;
            for (n, pack) in self.nodes.iter().enumerate() {
                if skip < pack.len() {
                    return (n, skip);
                }
                skip -= pack.len();
            }
        } else {
            let mut from_tail = self.len - 1 - i;
            for (n, pack) in self.nodes.iter().enumerate().rev() {
                if from_tail < pack.len() {
                    return (n, pack.len() - 1 - from_tail);
                }
                from_tail -= pack.len();
            }
        }
        unreachable!("position {i} beyond a list of {}", self.len)
    }

    /// Split node `i` as [`Self::split_if_needed`] does, then compress the parts again
    /// where they lie deep enough, and drop the copies reads left.
    fn split_and_settle(&mut self, i: usize, limit: NodeLimit) {
        let before = self.nodes.count();
        self.split_if_needed(i, limit);
        let parts = 1 + self.nodes.count() - before;
        self.nodes.settle(i..i + parts, limit.compress_depth);
        self.forget_reads();
    }

    /// Halve node `i` until every part respects `limit` (after it grew in place).
    fn split_if_needed(&mut self, i: usize, limit: NodeLimit) {
        let node = self.nodes.get(i);
        if node.len() < 2 || limit.allows(node.byte_len(), node.len()) {
            return;
        }
        let half = node.len() / 2;
        let upper = self.nodes.get_mut(i).split_off(half);
        self.nodes.insert(i + 1, upper);
        self.split_if_needed(i + 1, limit);
        self.split_if_needed(i, limit);
    }
}

impl PartialEq for List {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl fmt::Debug for List {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The elements of a range of a list, from either end.
pub struct Iter<'a> {
    list: &'a List,
    front_node: usize,
    front: Entries<'a>,
    back_node: usize,
    back: Entries<'a>,
    /// Elements not yet yielded from either end; once it is zero the two cursors
    /// have met.
    remaining: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = Element<'a>;

    fn next(&mut self) -> Option<Element<'a>> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        loop {
            if let Some(entry) = self.front.next() {
                return Some(entry.element);
            }
            self.front_node += 1;
            self.front = self.list.entries_of(self.front_node);
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        loop {
            if let Some(entry) = self.back.next_back() {
                return Some(entry.element);
            }
            self.back_node -= 1;
            self.back = self.list.entries_of(self.back_node);
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests;
