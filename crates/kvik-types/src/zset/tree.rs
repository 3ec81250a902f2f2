//! An order-statistics B+tree: the order of a big sorted set.
//!
//! The tree keeps [`Key`]s (a score and the slab id of its member) in the set's
//! order and knows how many keys every subtree holds, so finding the key at a rank,
//! and inserting or removing at a rank, take O(log n). It never compares members
//! itself: a search takes a predicate that holds for a prefix of the keys
//! ([`Tree::partition_point`]) and the set supplies predicates that look members up.
//! To make that possible without visiting every child, each child of an inner node
//! carries its key count and its smallest key.
//!
//! Memory: a leaf holds up to [`LEAF_CAP`] keys as two parallel arrays (12 bytes a
//! key, one 1 KiB allocation per leaf). Inner nodes hold about one child per
//! [`LEAF_CAP`] keys, so they add little. Splits at either end of the tree leave the
//! old node full instead of halving it: sets that grow at one end (scores that are
//! timestamps or counters) keep their leaves full.

use std::ops::Range;

/// A position in the order: the score, then the member's id in the set's slab.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Key {
    pub score: f64,
    pub id: u32,
}

/// Keys per leaf: with the length, a leaf is exactly 1016 bytes (a 1 KiB size class).
const LEAF_CAP: usize = 84;
/// Children per inner node.
const INNER_CAP: usize = 32;
/// Below these a node is merged with or refilled from a neighbour. A third, not a
/// half, so that a node split in two does not merge back at the next removal.
const LEAF_MIN: usize = LEAF_CAP / 3;
const INNER_MIN: usize = INNER_CAP / 3;

#[derive(Clone)]
struct Leaf {
    len: u32,
    scores: [f64; LEAF_CAP],
    ids: [u32; LEAF_CAP],
}

#[derive(Clone)]
struct Child {
    /// Keys in the subtree.
    count: usize,
    /// Its smallest key.
    min: Key,
    node: Node,
}

#[derive(Clone)]
enum Node {
    Leaf(Box<Leaf>),
    Inner(Vec<Child>),
}

/// Where an insertion lands in the whole tree; a full node split at the end the
/// set grows from stays full.
#[derive(Clone, Copy, PartialEq)]
enum Edge {
    Start,
    End,
    Middle,
}

#[derive(Clone)]
pub struct Tree {
    root: Node,
    len: usize,
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            root: Node::Leaf(Leaf::empty()),
            len: 0,
        }
    }
}

impl Tree {
    pub fn len(&self) -> usize {
        self.len
    }

    /// A tree of keys already in order.
    pub fn from_sorted(keys: &[Key]) -> Tree {
        if keys.is_empty() {
            return Tree::default();
        }
        let mut level: Vec<Child> = even_chunks(keys.len(), LEAF_CAP)
            .map(|range| Child::of(Node::Leaf(Leaf::from_keys(&keys[range]))))
            .collect();
        while level.len() > 1 {
            let mut nodes = level.into_iter();
            level = even_chunks(nodes.len(), INNER_CAP)
                .map(|range| Child::of(Node::Inner(nodes.by_ref().take(range.len()).collect())))
                .collect();
        }
        let root = level.pop().expect("a non-empty tree has a root").node;
        Tree {
            root,
            len: keys.len(),
        }
    }

    /// The number of leading keys for which `pred` holds. `pred` must hold for a
    /// prefix of the keys and fail for the rest.
    pub fn partition_point(&self, mut pred: impl FnMut(Key) -> bool) -> usize {
        let mut node = &self.root;
        let mut before = 0;
        loop {
            match node {
                Node::Leaf(leaf) => return before + leaf.partition_point(&mut pred),
                Node::Inner(children) => {
                    // The boundary is inside the last child whose smallest key holds.
                    let holding = children.partition_point(|c| pred(c.min));
                    let Some(last) = holding.checked_sub(1) else {
                        return before;
                    };
                    before += children[..last].iter().map(|c| c.count).sum::<usize>();
                    node = &children[last].node;
                }
            }
        }
    }

    /// The key at `rank` (< len).
    pub fn get(&self, rank: usize) -> Key {
        debug_assert!(rank < self.len);
        let (mut node, mut rank) = (&self.root, rank);
        loop {
            match node {
                Node::Leaf(leaf) => return leaf.key(rank),
                Node::Inner(children) => {
                    let (i, local) = child_holding(children, rank);
                    (node, rank) = (&children[i].node, local);
                }
            }
        }
    }

    /// Put `key` at `rank` (<= len); the caller keeps the order.
    pub fn insert(&mut self, rank: usize, key: Key) {
        debug_assert!(rank <= self.len);
        let edge = match rank {
            0 => Edge::Start,
            r if r == self.len => Edge::End,
            _ => Edge::Middle,
        };
        if let Some(right) = self.root.insert(rank, key, edge) {
            let left = std::mem::replace(&mut self.root, Node::Inner(Vec::new()));
            self.root = Node::Inner(vec![Child::of(left), Child::of(right)]);
        }
        self.len += 1;
    }

    /// Replace the key at `rank` with one that sorts at the same place.
    pub fn replace(&mut self, rank: usize, key: Key) {
        debug_assert!(rank < self.len);
        self.root.replace(rank, key);
    }

    /// Take out the key at `rank` (< len).
    pub fn remove(&mut self, rank: usize) -> Key {
        debug_assert!(rank < self.len);
        let key = self.root.remove(rank);
        self.len -= 1;
        // A root left with one child gives way to it; an empty one to an empty leaf.
        while let Node::Inner(children) = &mut self.root {
            match children.len() {
                0 => self.root = Node::Leaf(Leaf::empty()),
                1 => self.root = children.pop().expect("one child").node,
                _ => break,
            }
        }
        key
    }

    /// Call `f` with the keys whose ranks are in `ranks`, in order or in reverse.
    pub fn visit(&self, ranks: Range<usize>, reverse: bool, f: &mut impl FnMut(Key)) {
        let ranks = ranks.start..ranks.end.min(self.len);
        if !ranks.is_empty() {
            self.root.visit(self.len, ranks, reverse, f);
        }
    }

    /// Approximate heap bytes: leaves about three quarters full, and their parents.
    pub fn heap_size(&self) -> usize {
        let leaves = self.len.div_ceil(LEAF_CAP * 3 / 4);
        let inner = leaves.div_ceil(INNER_CAP * 3 / 4);
        leaves * std::mem::size_of::<Leaf>() + inner * INNER_CAP * std::mem::size_of::<Child>()
    }
}

/// `len` items cut into as few chunks of at most `cap` as possible, of even sizes.
fn even_chunks(len: usize, cap: usize) -> impl Iterator<Item = Range<usize>> {
    let chunks = len.div_ceil(cap);
    (0..chunks).map(move |i| (i * len / chunks)..((i + 1) * len / chunks))
}

/// The child holding `rank`, and the rank inside it.
fn child_holding(children: &[Child], mut rank: usize) -> (usize, usize) {
    for (i, c) in children.iter().enumerate() {
        if rank < c.count {
            return (i, rank);
        }
        rank -= c.count;
    }
    unreachable!("rank beyond the subtree")
}

/// The child an insertion at `rank` goes to: a rank on the boundary of two children
/// ends the first one, so its smallest key stays put.
fn child_for_insert(children: &[Child], mut rank: usize) -> (usize, usize) {
    let last = children.len() - 1;
    for (i, c) in children.iter().enumerate() {
        if rank <= c.count || i == last {
            return (i, rank);
        }
        rank -= c.count;
    }
    unreachable!("an inner node has children")
}

impl Child {
    fn of(node: Node) -> Child {
        Child {
            count: node.count(),
            min: node.min(),
            node,
        }
    }
}

impl Node {
    /// Keys in the subtree.
    fn count(&self) -> usize {
        match self {
            Node::Leaf(leaf) => leaf.len(),
            Node::Inner(children) => children.iter().map(|c| c.count).sum(),
        }
    }

    /// The smallest key (the node is not empty).
    fn min(&self) -> Key {
        match self {
            Node::Leaf(leaf) => leaf.key(0),
            Node::Inner(children) => children[0].min,
        }
    }

    /// Entries of the node itself: keys of a leaf, children of an inner node.
    fn width(&self) -> usize {
        match self {
            Node::Leaf(leaf) => leaf.len(),
            Node::Inner(children) => children.len(),
        }
    }

    fn is_empty(&self) -> bool {
        self.width() == 0
    }

    fn is_underfull(&self) -> bool {
        match self {
            Node::Leaf(leaf) => leaf.len() < LEAF_MIN,
            Node::Inner(children) => children.len() < INNER_MIN,
        }
    }

    fn capacity(&self) -> usize {
        match self {
            Node::Leaf(_) => LEAF_CAP,
            Node::Inner(_) => INNER_CAP,
        }
    }

    /// Insert at `rank`; a node that overflows splits and returns its right part.
    fn insert(&mut self, rank: usize, key: Key, edge: Edge) -> Option<Node> {
        match self {
            Node::Leaf(leaf) => leaf.insert_or_split(rank, key, edge).map(Node::Leaf),
            Node::Inner(children) => {
                let (i, local) = child_for_insert(children, rank);
                let split = children[i].node.insert(local, key, edge);
                let child = &mut children[i];
                child.count += 1;
                child.min = child.node.min();
                let right = Child::of(split?);
                child.count -= right.count;
                children.insert(i + 1, right);
                if children.len() <= INNER_CAP {
                    return None;
                }
                let at = match edge {
                    Edge::Start => 1,
                    Edge::End => INNER_CAP,
                    Edge::Middle => children.len() / 2,
                };
                Some(Node::Inner(children.split_off(at)))
            }
        }
    }

    fn replace(&mut self, rank: usize, key: Key) {
        match self {
            Node::Leaf(leaf) => leaf.set(rank, key),
            Node::Inner(children) => {
                let (i, local) = child_holding(children, rank);
                children[i].node.replace(local, key);
                children[i].min = children[i].node.min();
            }
        }
    }

    fn remove(&mut self, rank: usize) -> Key {
        match self {
            Node::Leaf(leaf) => leaf.remove(rank),
            Node::Inner(children) => {
                let (i, local) = child_holding(children, rank);
                let key = children[i].node.remove(local);
                children[i].count -= 1;
                restore_child(children, i);
                key
            }
        }
    }

    /// `count` is the node's own key count; `ranks` lies within it.
    fn visit(&self, count: usize, ranks: Range<usize>, reverse: bool, f: &mut impl FnMut(Key)) {
        match self {
            Node::Leaf(leaf) => {
                if reverse {
                    ranks.rev().for_each(|i| f(leaf.key(i)));
                } else {
                    ranks.for_each(|i| f(leaf.key(i)));
                }
            }
            Node::Inner(children) => {
                let mut visit_child = |c: &Child, start: usize| {
                    let from = ranks.start.max(start) - start;
                    let to = ranks.end.min(start + c.count).saturating_sub(start);
                    if from < to {
                        c.node.visit(c.count, from..to, reverse, f);
                    }
                };
                if reverse {
                    let mut end = count;
                    for c in children.iter().rev() {
                        let start = end - c.count;
                        if start < ranks.end {
                            visit_child(c, start);
                        }
                        if start <= ranks.start {
                            break;
                        }
                        end = start;
                    }
                } else {
                    let mut start = 0;
                    for c in children {
                        if start >= ranks.end {
                            break;
                        }
                        if start + c.count > ranks.start {
                            visit_child(c, start);
                        }
                        start += c.count;
                    }
                }
            }
        }
    }

    /// Move everything of `other` (a node of the same level) after this node's own.
    fn append(&mut self, other: Node) {
        match (self, other) {
            (Node::Leaf(a), Node::Leaf(b)) => a.append(&b, 0..b.len()),
            (Node::Inner(a), Node::Inner(mut b)) => a.append(&mut b),
            _ => unreachable!("siblings are at the same level"),
        }
    }
}

/// After a removal below `children[i]`: drop it if empty, else merge it with or
/// refill it from a neighbour if it fell below the minimum, and refresh the smallest
/// keys that may have changed.
fn restore_child(children: &mut Vec<Child>, i: usize) {
    if children[i].node.is_empty() {
        children.remove(i);
        return;
    }
    if !children[i].node.is_underfull() || children.len() == 1 {
        children[i].min = children[i].node.min();
        return;
    }
    let left = if i + 1 < children.len() { i } else { i - 1 };
    let (a, b) = (&children[left].node, &children[left + 1].node);
    if a.width() + b.width() <= a.capacity() {
        let b = children.remove(left + 1);
        let a = &mut children[left];
        a.node.append(b.node);
        a.count += b.count;
        a.min = a.node.min();
    } else {
        let (head, tail) = children.split_at_mut(left + 1);
        even_out(&mut head[left], &mut tail[0]);
    }
}

/// Share the entries of two neighbours evenly between them.
fn even_out(a: &mut Child, b: &mut Child) {
    let total = a.node.width() + b.node.width();
    let want_a = total / 2;
    match (&mut a.node, &mut b.node) {
        (Node::Leaf(la), Node::Leaf(lb)) => {
            if la.len() > want_a {
                let moved = la.split_off(want_a);
                moved.append_all_to_front_of(lb);
            } else {
                let take = want_a - la.len();
                la.append(lb, 0..take);
                lb.drop_front(take);
            }
        }
        (Node::Inner(ca), Node::Inner(cb)) => {
            if ca.len() > want_a {
                let moved = ca.split_off(want_a);
                cb.splice(0..0, moved);
            } else {
                let take = want_a - ca.len();
                ca.extend(cb.drain(..take));
            }
        }
        _ => unreachable!("siblings are at the same level"),
    }
    for c in [a, b] {
        c.count = c.node.count();
        c.min = c.node.min();
    }
}

impl Leaf {
    fn empty() -> Box<Leaf> {
        Box::new(Leaf {
            len: 0,
            scores: [0.0; LEAF_CAP],
            ids: [0; LEAF_CAP],
        })
    }

    fn from_keys(keys: &[Key]) -> Box<Leaf> {
        let mut leaf = Leaf::empty();
        for (i, key) in keys.iter().enumerate() {
            leaf.scores[i] = key.score;
            leaf.ids[i] = key.id;
        }
        leaf.len = keys.len() as u32;
        leaf
    }

    fn len(&self) -> usize {
        self.len as usize
    }

    fn key(&self, i: usize) -> Key {
        Key {
            score: self.scores[i],
            id: self.ids[i],
        }
    }

    fn set(&mut self, i: usize, key: Key) {
        self.scores[i] = key.score;
        self.ids[i] = key.id;
    }

    fn partition_point(&self, mut pred: impl FnMut(Key) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if pred(self.key(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Insert at `i`; a full leaf splits first and returns its right part.
    fn insert_or_split(&mut self, i: usize, key: Key, edge: Edge) -> Option<Box<Leaf>> {
        if self.len() < LEAF_CAP {
            self.insert(i, key);
            return None;
        }
        let at = match edge {
            Edge::Start => 0,
            Edge::End => LEAF_CAP,
            Edge::Middle => LEAF_CAP / 2,
        };
        let mut right = self.split_off(at);
        if i < at || (i == at && at < LEAF_CAP) {
            self.insert(i, key);
        } else {
            right.insert(i - at, key);
        }
        Some(right)
    }

    fn insert(&mut self, i: usize, key: Key) {
        let len = self.len();
        self.scores.copy_within(i..len, i + 1);
        self.ids.copy_within(i..len, i + 1);
        self.set(i, key);
        self.len += 1;
    }

    fn remove(&mut self, i: usize) -> Key {
        let key = self.key(i);
        let len = self.len();
        self.scores.copy_within(i + 1..len, i);
        self.ids.copy_within(i + 1..len, i);
        self.len -= 1;
        key
    }

    /// Keys from `at` on, moved to a new leaf.
    fn split_off(&mut self, at: usize) -> Box<Leaf> {
        let mut right = Leaf::empty();
        right.append(self, at..self.len());
        self.len = at as u32;
        right
    }

    /// Copy `other`'s keys in `range` after this leaf's own.
    fn append(&mut self, other: &Leaf, range: Range<usize>) {
        let (len, n) = (self.len(), range.len());
        self.scores[len..len + n].copy_from_slice(&other.scores[range.clone()]);
        self.ids[len..len + n].copy_from_slice(&other.ids[range]);
        self.len += n as u32;
    }

    /// Put all of this leaf's keys in front of `other`'s.
    fn append_all_to_front_of(&self, other: &mut Leaf) {
        let (n, len) = (self.len(), other.len());
        other.scores.copy_within(0..len, n);
        other.ids.copy_within(0..len, n);
        other.scores[..n].copy_from_slice(&self.scores[..n]);
        other.ids[..n].copy_from_slice(&self.ids[..n]);
        other.len += n as u32;
    }

    fn drop_front(&mut self, n: usize) {
        let len = self.len();
        self.scores.copy_within(n..len, 0);
        self.ids.copy_within(n..len, 0);
        self.len -= n as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(score: f64, id: u32) -> Key {
        Key { score, id }
    }

    fn keys(tree: &Tree) -> Vec<Key> {
        let mut out = Vec::new();
        tree.visit(0..tree.len(), false, &mut |k| out.push(k));
        out
    }

    /// Every count and smallest key matches the subtree, and all leaves are at one depth.
    fn check(tree: &Tree) {
        fn walk(node: &Node, depth: usize, leaf_depth: &mut Option<usize>) -> usize {
            match node {
                Node::Leaf(leaf) => {
                    assert_eq!(*leaf_depth.get_or_insert(depth), depth);
                    leaf.len()
                }
                Node::Inner(children) => {
                    assert!(!children.is_empty() && children.len() <= INNER_CAP);
                    children
                        .iter()
                        .map(|c| {
                            let n = walk(&c.node, depth + 1, leaf_depth);
                            assert!(n > 0);
                            assert_eq!(n, c.count);
                            assert_eq!(c.min, c.node.min());
                            n
                        })
                        .sum()
                }
            }
        }
        assert_eq!(walk(&tree.root, 0, &mut None), tree.len());
    }

    #[test]
    fn leaf_fits_a_size_class() {
        assert_eq!(std::mem::size_of::<Leaf>(), 1016);
    }

    #[test]
    fn growing_at_either_end_keeps_leaves_full() {
        for descending in [false, true] {
            let mut tree = Tree::default();
            for i in 0..10_000u32 {
                let rank = if descending { 0 } else { tree.len() };
                let score = if descending {
                    -f64::from(i)
                } else {
                    f64::from(i)
                };
                tree.insert(rank, key(score, i));
            }
            check(&tree);
            let mut leaves = 0;
            count_leaves(&tree.root, &mut leaves);
            assert_eq!(
                leaves,
                10_000usize.div_ceil(LEAF_CAP),
                "descending {descending}"
            );
        }
    }

    fn count_leaves(node: &Node, n: &mut usize) {
        match node {
            Node::Leaf(_) => *n += 1,
            Node::Inner(children) => children.iter().for_each(|c| count_leaves(&c.node, n)),
        }
    }

    #[test]
    fn from_sorted_builds_a_valid_tree() {
        for n in [0, 1, 83, 84, 85, 1000, 84 * 32 + 1, 100_000] {
            let all: Vec<Key> = (0..n).map(|i| key(i as f64, i)).collect();
            let tree = Tree::from_sorted(&all);
            check(&tree);
            assert_eq!(keys(&tree), all);
            if n > 0 {
                assert_eq!(
                    tree.partition_point(|k| k.score < (n / 2) as f64),
                    n as usize / 2
                );
            }
        }
    }

    /// Enough keys for three levels of inner nodes to split, merge and even out.
    #[test]
    fn large_random_workload_keeps_the_tree_sound() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut tree = Tree::default();
        let mut model = std::collections::BTreeSet::new();
        let mut live: Vec<(u16, u32)> = Vec::new();
        let position = |tree: &Tree, (s, id): (u16, u32)| {
            tree.partition_point(|k| (k.score, k.id) < (f64::from(s), id))
        };
        for round in 0..3 {
            // Grow well past a full inner level, then shrink most of the way back.
            let (inserts, removals) = [(150_000, 120_000), (40_000, 60_000), (0, 10_000)][round];
            for id in 0..inserts {
                let k = ((next() % 2000) as u16, (round * 1_000_000 + id) as u32);
                tree.insert(position(&tree, k), key(f64::from(k.0), k.1));
                model.insert(k);
                live.push(k);
            }
            for _ in 0..removals.min(live.len()) {
                let k = live.swap_remove(next() as usize % live.len());
                let rank = position(&tree, k);
                assert_eq!(tree.remove(rank), key(f64::from(k.0), k.1));
                model.remove(&k);
            }
            check(&tree);
            let expected: Vec<Key> = model.iter().map(|&(s, id)| key(f64::from(s), id)).collect();
            assert_eq!(keys(&tree), expected);
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u32, u16),
        Remove(u32),
        Replace(u32),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (any::<u32>(), any::<u16>()).prop_map(|(r, s)| Op::Insert(r, s)),
            2 => any::<u32>().prop_map(Op::Remove),
            1 => any::<u32>().prop_map(Op::Replace),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Positional operations behave as on a Vec, and the tree stays well formed.
        #[test]
        fn behaves_like_a_vec(ops in proptest::collection::vec(op(), 1..3000)) {
            let mut tree = Tree::default();
            let mut model: Vec<Key> = Vec::new();
            for (n, op) in ops.into_iter().enumerate() {
                match op {
                    Op::Insert(r, s) => {
                        let rank = r as usize % (model.len() + 1);
                        let k = key(f64::from(s), n as u32);
                        tree.insert(rank, k);
                        model.insert(rank, k);
                    }
                    Op::Remove(r) if !model.is_empty() => {
                        let rank = r as usize % model.len();
                        prop_assert_eq!(tree.remove(rank), model.remove(rank));
                    }
                    Op::Replace(r) if !model.is_empty() => {
                        let rank = r as usize % model.len();
                        let k = key(-1.0, n as u32);
                        tree.replace(rank, k);
                        model[rank] = k;
                    }
                    _ => {}
                }
                prop_assert_eq!(tree.len(), model.len());
            }
            check(&tree);
            prop_assert_eq!(keys(&tree), model.clone());
            for rank in (0..model.len()).step_by(7) {
                prop_assert_eq!(tree.get(rank), model[rank]);
                let mut back = Vec::new();
                tree.visit(rank..model.len(), true, &mut |k| back.push(k));
                back.reverse();
                prop_assert_eq!(&back[..], &model[rank..]);
            }
            // Removing everything from the front leaves an empty, usable tree.
            while tree.len() > 0 {
                tree.remove(0);
            }
            check(&tree);
            tree.insert(0, key(1.0, 1));
            prop_assert_eq!(keys(&tree), vec![key(1.0, 1)]);
        }

        /// partition_point finds the boundary of a sorted tree.
        #[test]
        fn partition_point_finds_the_boundary(
            mut scores in proptest::collection::vec(0u16..500, 0..3000),
            probe in 0u16..520,
        ) {
            scores.sort_unstable();
            let mut tree = Tree::default();
            for (i, &s) in scores.iter().enumerate() {
                let rank = tree.partition_point(|k| k.score <= f64::from(s));
                tree.insert(rank, key(f64::from(s), i as u32));
            }
            let expected = scores.iter().filter(|&&s| s < probe).count();
            prop_assert_eq!(tree.partition_point(|k| k.score < f64::from(probe)), expected);
        }
    }
}
