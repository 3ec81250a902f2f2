//! One node of a stream: a run of consecutive entries packed in a single buffer.
//!
//! The buffer starts with the node's *master fields*, the field names of the first
//! entry added to it. Each entry follows as:
//!
//! ```text
//! flags:u8  ms-delta:varint  seq:varint  body
//! ```
//!
//! `ms-delta` is the entry's milliseconds minus the node's first ID's (IDs only grow
//! within a node). When the entry has exactly the master fields, in order, the
//! `SAME_FIELDS` flag is set and the body is just the values; otherwise it is a field
//! count and the field/value pairs. Strings are a varint length and the bytes.
//!
//! Deleting an entry only sets its `DELETED` flag, as Redis marks listpack entries:
//! offsets stay valid, and a node whose entries are all deleted is dropped by the
//! stream. A node is never rewritten, only appended to and flagged.

use super::StreamId;

const DELETED: u8 = 1;
const SAME_FIELDS: u8 = 2;

/// A node's entries, packed. The node's first ID is its key in the stream's map.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    buf: Vec<u8>,
    /// Where the entries start (after the master fields).
    entries_at: u32,
    /// Entries not deleted.
    pub live: u32,
    /// Entries flagged deleted, still taking room.
    pub deleted: u32,
    /// The last ID stored, deleted or not.
    pub last: StreamId,
}

/// One entry read from a node.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryRef<'a> {
    pub id: StreamId,
    /// Field/value pairs in the order they were added.
    pub fields: Vec<(&'a [u8], &'a [u8])>,
}

impl Node {
    /// A node whose first entry is `id` with these field/value pairs (`pairs` holds
    /// field, value, field, value ...).
    pub fn new(id: StreamId, pairs: &[&[u8]]) -> Node {
        let mut buf = Vec::with_capacity(64);
        put_varint(&mut buf, (pairs.len() / 2) as u64);
        for field in pairs.iter().step_by(2) {
            put_bytes(&mut buf, field);
        }
        let mut node = Node {
            entries_at: buf.len() as u32,
            buf,
            live: 0,
            deleted: 0,
            last: id,
        };
        node.push(id, id, pairs);
        node
    }

    /// Entries stored, deleted ones included (what the node-size limit counts).
    pub fn stored(&self) -> u64 {
        u64::from(self.live + self.deleted)
    }

    /// Bytes of the packed buffer.
    pub fn bytes(&self) -> usize {
        self.buf.len()
    }

    /// Bytes the buffer would grow by to store these pairs (an upper bound).
    pub fn entry_size(pairs: &[&[u8]]) -> usize {
        1 + 20 + pairs.iter().map(|p| p.len() + 5).sum::<usize>()
    }

    /// Append an entry; `first` is the node's first ID, `id` is above every ID here.
    pub fn push(&mut self, first: StreamId, id: StreamId, pairs: &[&[u8]]) {
        let same = self.master_fields().eq(pairs.iter().step_by(2).copied());
        self.buf.push(if same { SAME_FIELDS } else { 0 });
        put_varint(&mut self.buf, id.ms - first.ms);
        put_varint(&mut self.buf, id.seq);
        if same {
            for value in pairs.iter().skip(1).step_by(2) {
                put_bytes(&mut self.buf, value);
            }
        } else {
            put_varint(&mut self.buf, (pairs.len() / 2) as u64);
            for part in pairs {
                put_bytes(&mut self.buf, part);
            }
        }
        self.live += 1;
        self.last = id;
    }

    fn master_fields(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let mut at = 0;
        let count = get_varint(&self.buf, &mut at);
        (0..count).map(move |_| get_bytes(&self.buf, &mut at))
    }

    /// Every entry, live and deleted, in ID order, with its offset and flag.
    fn slots(&self, first: StreamId) -> Slots<'_> {
        Slots {
            node: self,
            first,
            master: self.master_fields().collect(),
            at: self.entries_at as usize,
        }
    }

    /// The live entries in ID order.
    pub fn entries(&self, first: StreamId) -> impl Iterator<Item = EntryRef<'_>> + '_ {
        self.slots(first).filter(|s| !s.deleted).map(|s| s.entry)
    }

    /// Flag the live entry `id` deleted. False if there is none.
    pub fn delete(&mut self, first: StreamId, id: StreamId) -> bool {
        let found = self
            .slots(first)
            .find(|s| s.entry.id == id && !s.deleted)
            .map(|s| s.offset);
        match found {
            Some(offset) => {
                self.flag_deleted(offset);
                true
            }
            None => false,
        }
    }

    /// Flag deleted the live entries (in ID order) for which `doomed` says so, until it
    /// first says no. Returns how many went.
    pub fn delete_while(
        &mut self,
        first: StreamId,
        mut doomed: impl FnMut(StreamId) -> bool,
    ) -> u64 {
        let offsets: Vec<usize> = self
            .slots(first)
            .filter(|s| !s.deleted)
            .take_while(|s| doomed(s.entry.id))
            .map(|s| s.offset)
            .collect();
        for &offset in &offsets {
            self.flag_deleted(offset);
        }
        offsets.len() as u64
    }

    fn flag_deleted(&mut self, offset: usize) {
        self.buf[offset] |= DELETED;
        self.live -= 1;
        self.deleted += 1;
    }

    /// Drop the buffer's spare capacity.
    pub fn shrink(&mut self) {
        self.buf.shrink_to_fit();
    }

    /// Heap bytes owned.
    pub fn heap_size(&self) -> usize {
        self.buf.capacity()
    }
}

/// One stored entry with where it sits.
struct Slot<'a> {
    offset: usize,
    deleted: bool,
    entry: EntryRef<'a>,
}

struct Slots<'a> {
    node: &'a Node,
    first: StreamId,
    master: Vec<&'a [u8]>,
    at: usize,
}

impl<'a> Iterator for Slots<'a> {
    type Item = Slot<'a>;

    fn next(&mut self) -> Option<Slot<'a>> {
        let buf = &self.node.buf;
        if self.at >= buf.len() {
            return None;
        }
        let offset = self.at;
        let flags = buf[offset];
        self.at += 1;
        let ms = self.first.ms + get_varint(buf, &mut self.at);
        let seq = get_varint(buf, &mut self.at);
        let fields = if flags & SAME_FIELDS != 0 {
            let at = &mut self.at;
            self.master
                .iter()
                .map(|&field| (field, get_bytes(buf, at)))
                .collect()
        } else {
            let count = get_varint(buf, &mut self.at);
            (0..count)
                .map(|_| {
                    let field = get_bytes(buf, &mut self.at);
                    (field, get_bytes(buf, &mut self.at))
                })
                .collect()
        };
        Some(Slot {
            offset,
            deleted: flags & DELETED != 0,
            entry: EntryRef {
                id: StreamId { ms, seq },
                fields,
            },
        })
    }
}

fn put_varint(buf: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        buf.push((n as u8) | 0x80);
        n >>= 7;
    }
    buf.push(n as u8);
}

fn get_varint(buf: &[u8], at: &mut usize) -> u64 {
    let mut n = 0u64;
    let mut shift = 0;
    loop {
        let byte = buf[*at];
        *at += 1;
        n |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return n;
        }
        shift += 7;
    }
}

fn put_bytes(buf: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(buf, bytes.len() as u64);
    buf.extend_from_slice(bytes);
}

fn get_bytes<'a>(buf: &'a [u8], at: &mut usize) -> &'a [u8] {
    let len = get_varint(buf, at) as usize;
    let bytes = &buf[*at..*at + len];
    *at += len;
    bytes
}
