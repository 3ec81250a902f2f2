//! Streams: entries with increasing IDs, packed by node, and the consumer groups
//! reading them.
//!
//! Like Redis's radix tree of listpacks, the entries live in [`Node`]s of up to
//! `stream-node-max-entries` entries / `stream-node-max-bytes` bytes, each one packed
//! buffer, kept in a map from the node's first ID. Appends go to the last node (a new
//! one when it is full); deletions flag entries in place and drop a node once nothing
//! in it is live. Trimming removes whole nodes first, and only with exact trimming
//! flags entries inside the node where it stops, which is what makes `~` trimming
//! cheap and what its replies depend on.
//!
//! Besides the entries a stream remembers what XINFO and the group lag need: the last
//! generated ID, the first live ID, the largest deleted ID and how many entries were
//! ever added.

mod group;
mod node;
#[cfg(test)]
mod tests;

pub use group::{Consumer, Group, Name, Pending};
pub use node::{EntryRef, Node};

use std::collections::BTreeMap;
use std::fmt;

/// An entry ID: milliseconds and a sequence number, ordered as a pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// The ID right after this one, if any.
    pub fn next(self) -> Option<StreamId> {
        match self.seq.checked_add(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => self.ms.checked_add(1).map(|ms| StreamId { ms, seq: 0 }),
        }
    }

    /// The ID right before this one, if any.
    pub fn prev(self) -> Option<StreamId> {
        match self.seq.checked_sub(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => self
                .ms
                .checked_sub(1)
                .map(|ms| StreamId { ms, seq: u64::MAX }),
        }
    }

    pub fn is_zero(self) -> bool {
        self == StreamId::MIN
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// How big a node may grow (`stream-node-max-entries`, `stream-node-max-bytes`; 0 is
/// no limit).
#[derive(Clone, Copy, Debug)]
pub struct NodeLimits {
    pub max_entries: u64,
    pub max_bytes: u64,
}

/// What a trim keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimTo {
    /// At most this many entries.
    MaxLen(u64),
    /// No entry below this ID.
    MinId(StreamId),
}

/// A trim request: the target, whether whole nodes only (`~`), and at most how many
/// entries to remove (0 = no limit).
#[derive(Clone, Copy, Debug)]
pub struct Trim {
    pub to: TrimTo,
    pub approx: bool,
    pub limit: u64,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Stream {
    nodes: BTreeMap<StreamId, Node>,
    len: u64,
    pub last_id: StreamId,
    /// The first live ID (0-0 when empty): XINFO's `recorded-first-entry-id`.
    pub first_id: StreamId,
    pub max_deleted_id: StreamId,
    pub entries_added: u64,
    pub groups: BTreeMap<Vec<u8>, Group>,
}

impl Stream {
    pub fn new() -> Stream {
        Stream::default()
    }

    /// Live entries.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Nodes holding entries (XINFO's `radix-tree-keys`).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Append an entry with an ID above `last_id`; `pairs` holds field, value, ...
    pub fn append(&mut self, id: StreamId, pairs: &[&[u8]], limits: NodeLimits) {
        // A node only ever grows upwards. XSETID can move the last ID below a node
        // whose entries were all trimmed away; the entry then starts a node of its own.
        match self.nodes.iter_mut().next_back() {
            Some((&first, node)) if node.last < id && !is_full(node, pairs, limits) => {
                node.push(first, id, pairs)
            }
            last => {
                // The closed node takes no more entries: give back its spare room.
                if let Some((_, node)) = last {
                    node.shrink();
                }
                self.nodes.insert(id, Node::new(id, pairs));
            }
        }
        self.len += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.len == 1 {
            self.first_id = id;
        }
    }

    /// The live entries from `start` to `end` (inclusive), ascending or descending.
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
    ) -> Box<dyn Iterator<Item = EntryRef<'_>> + '_> {
        if start > end {
            return Box::new(std::iter::empty());
        }
        // The node holding `start` is the last one keyed at or before it.
        let from = self
            .nodes
            .range(..=start)
            .next_back()
            .map_or(start, |(k, _)| *k);
        let nodes = self.nodes.range(from..=end);
        let within = move |e: &EntryRef<'_>| e.id >= start && e.id <= end;
        if rev {
            Box::new(nodes.rev().flat_map(move |(first, node)| {
                let mut entries: Vec<EntryRef<'_>> = node.entries(*first).filter(within).collect();
                entries.reverse();
                entries
            }))
        } else {
            Box::new(nodes.flat_map(move |(first, node)| node.entries(*first).filter(within)))
        }
    }

    /// The live entry `id`, if there is one.
    pub fn get(&self, id: StreamId) -> Option<EntryRef<'_>> {
        self.range(id, id, false).next()
    }

    pub fn contains(&self, id: StreamId) -> bool {
        self.get(id).is_some()
    }

    pub fn first_entry(&self) -> Option<EntryRef<'_>> {
        self.range(StreamId::MIN, StreamId::MAX, false).next()
    }

    pub fn last_entry(&self) -> Option<EntryRef<'_>> {
        self.range(StreamId::MIN, StreamId::MAX, true).next()
    }

    /// Delete the live entry `id` (XDEL). True if it was there.
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some((&first, node)) = self.nodes.range_mut(..=id).next_back() else {
            return false;
        };
        if !node.delete(first, id) {
            return false;
        }
        if node.live == 0 {
            self.nodes.remove(&first);
        }
        self.len -= 1;
        self.max_deleted_id = self.max_deleted_id.max(id);
        self.refresh_first_id();
        true
    }

    /// Remove entries from the start as `trim` asks; returns how many went.
    pub fn trim(&mut self, trim: Trim) -> u64 {
        let mut removed = 0;
        while let Some((&first, node)) = self.nodes.iter_mut().next() {
            if let TrimTo::MaxLen(max) = trim.to {
                if self.len <= max {
                    break;
                }
            }
            let live = u64::from(node.live);
            if trim.limit != 0 && removed + live > trim.limit {
                break;
            }
            let whole = match trim.to {
                TrimTo::MaxLen(max) => self.len - live >= max,
                TrimTo::MinId(min) => node.last < min,
            };
            if whole {
                self.nodes.remove(&first);
                self.len -= live;
                removed += live;
                continue;
            }
            if trim.approx {
                break;
            }
            let mut excess = match trim.to {
                TrimTo::MaxLen(max) => self.len - max,
                TrimTo::MinId(_) => u64::MAX,
            };
            let dropped = node.delete_while(first, |id| match trim.to {
                TrimTo::MaxLen(_) => excess.checked_sub(1).map(|left| excess = left).is_some(),
                TrimTo::MinId(min) => id < min,
            });
            self.len -= dropped;
            removed += dropped;
            break;
        }
        self.refresh_first_id();
        removed
    }

    fn refresh_first_id(&mut self) {
        self.first_id = self.first_entry().map_or(StreamId::MIN, |e| e.id);
    }

    /// The first ID stored, deleted entries included, or the largest ID when there is
    /// none: what an approximate MINID trim is rewritten to for replicas.
    pub fn first_stored_id(&self) -> StreamId {
        self.nodes.keys().next().copied().unwrap_or(StreamId::MAX)
    }

    /// Could a deleted entry lie between `start` and the end of the stream?
    pub fn has_tombstones_from(&self, start: StreamId) -> bool {
        if self.len == 0 || self.max_deleted_id.is_zero() || self.first_id > self.max_deleted_id {
            return false;
        }
        start <= self.max_deleted_id
    }

    /// How many entries were added up to and including `id`, when that can be known
    /// (the entries-read counter of a group that read to `id`).
    pub fn entries_up_to(&self, id: StreamId) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.len == 0 && id <= self.last_id {
            return Some(self.entries_added);
        }
        match id.cmp(&self.last_id) {
            std::cmp::Ordering::Equal => return Some(self.entries_added),
            std::cmp::Ordering::Greater => return None,
            std::cmp::Ordering::Less => {}
        }
        if self.max_deleted_id.is_zero() || self.max_deleted_id < self.first_id {
            match id.cmp(&self.first_id) {
                std::cmp::Ordering::Less => return Some(self.entries_added - self.len),
                std::cmp::Ordering::Equal => return Some(self.entries_added - self.len + 1),
                std::cmp::Ordering::Greater => {}
            }
        }
        None
    }

    /// How many entries `group` has yet to read, when that can be known (`lag`). It
    /// goes negative when a group was told it read more than was ever added (SETID
    /// with ENTRIESREAD), as in Redis.
    pub fn lag(&self, group: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        let read = match group.entries_read {
            Some(read) if !self.has_tombstones_from(group.last_id) => Some(read),
            _ => self.entries_up_to(group.last_id),
        };
        read.map(|read| self.entries_added as i64 - read as i64)
    }

    /// Move `group`'s read position to `id`, delivered by a `>` read, keeping its
    /// entries-read counter as Redis does.
    pub fn advance_group(&mut self, name: &[u8], id: StreamId) {
        let tombstones = self.has_tombstones_from(id);
        let estimate = self.entries_up_to(id);
        let added = self.entries_added;
        let Some(group) = self.groups.get_mut(name) else {
            return;
        };
        if id <= group.last_id {
            return;
        }
        match group.entries_read {
            Some(read) if !tombstones => group.entries_read = Some(read + 1),
            _ if added != 0 => group.entries_read = estimate,
            _ => {}
        }
        group.last_id = id;
    }

    /// Nodes of a radix tree over the nodes' 16-byte keys (XINFO's
    /// `radix-tree-nodes`): one per branching point, one per run of bytes shared
    /// below it, one per leaf.
    pub fn radix_nodes(&self) -> usize {
        let keys: Vec<[u8; 16]> = self.nodes.keys().map(|id| rax_key(*id)).collect();
        if keys.is_empty() {
            return 1;
        }
        radix_subtree(&keys, 0)
    }

    pub fn heap_size(&self) -> usize {
        self.nodes
            .values()
            .map(|n| n.heap_size() + 48)
            .sum::<usize>()
            + self
                .groups
                .iter()
                .map(|(k, g)| k.len() + g.heap_size())
                .sum::<usize>()
    }

    /// Add a whole node keyed by its first ID, which must be above every ID stored so
    /// far (a stream being rebuilt from its serialized form); its live entries count.
    pub fn push_node(&mut self, first: StreamId, node: Node) {
        self.len += u64::from(node.live);
        self.nodes.insert(first, node);
    }

    /// The nodes with their first IDs, for tests and fingerprints.
    pub fn nodes(&self) -> impl Iterator<Item = (&StreamId, &Node)> {
        self.nodes.iter()
    }
}

/// Whether `node` takes no more entries, by Redis's rule: its listpack plus the raw
/// bytes of the new entry would reach `stream-node-max-bytes` (1 GB when 0), or it
/// stores (live or deleted) `stream-node-max-entries` entries.
fn is_full(node: &Node, pairs: &[&[u8]], limits: NodeLimits) -> bool {
    const LISTPACK_MAX: u64 = 1 << 30;
    let max_bytes = match limits.max_bytes {
        0 => LISTPACK_MAX,
        n => n.min(LISTPACK_MAX),
    };
    let adding: usize = pairs.iter().map(|p| p.len()).sum();
    (node.redis_bytes() + adding) as u64 >= max_bytes
        || (limits.max_entries != 0 && node.stored() >= limits.max_entries)
}

fn rax_key(id: StreamId) -> [u8; 16] {
    let mut key = [0; 16];
    key[..8].copy_from_slice(&id.ms.to_be_bytes());
    key[8..].copy_from_slice(&id.seq.to_be_bytes());
    key
}

/// Radix-tree nodes below a point `depth` bytes into the sorted, distinct `keys`.
fn radix_subtree(keys: &[[u8; 16]], depth: usize) -> usize {
    if depth == 16 {
        return 1;
    }
    let (first, last) = (&keys[0], &keys[keys.len() - 1]);
    let shared = (depth..16).take_while(|&i| first[i] == last[i]).count();
    if shared > 0 {
        // One compressed node for the shared run, then what is below it.
        return 1 + radix_subtree(keys, depth + shared);
    }
    let mut count = 1;
    let mut start = 0;
    while start < keys.len() {
        let byte = keys[start][depth];
        let end = start
            + keys[start..]
                .iter()
                .take_while(|k| k[depth] == byte)
                .count();
        count += radix_subtree(&keys[start..end], depth + 1);
        start = end;
    }
    count
}
