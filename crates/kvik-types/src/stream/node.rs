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
//!
//! Besides its own size a node keeps the size Redis's listpack for the same entries
//! would have ([`Node::redis_bytes`]): whether a node is full under
//! `stream-node-max-bytes` is decided on that figure, so nodes close where Redis's
//! close and approximate trims remove what Redis's remove.

use super::StreamId;
use kvik_util::numbers::parse_i64;

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
    /// Redis's listpack bytes for the master fields and the entries (the header and
    /// the live/deleted counters are added by [`Node::redis_bytes`]).
    redis_body: u32,
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
        let fields: Vec<&[u8]> = pairs.iter().step_by(2).copied().collect();
        let mut node = Node::with_master_fields(id, &fields);
        node.push(id, id, pairs);
        node
    }

    /// A node keyed `first` holding no entry yet, whose entries with exactly
    /// `fields` will be stored without them (a node being rebuilt from its
    /// serialized form names its master fields itself).
    pub fn with_master_fields(first: StreamId, fields: &[&[u8]]) -> Node {
        let mut buf = Vec::with_capacity(64);
        put_varint(&mut buf, fields.len() as u64);
        let mut redis_body = lp_int_size(fields.len() as i64) + lp_int_size(0);
        for field in fields {
            put_bytes(&mut buf, field);
            redis_body += lp_string_size(field);
        }
        Node {
            entries_at: buf.len() as u32,
            buf,
            live: 0,
            deleted: 0,
            last: first,
            redis_body: redis_body as u32,
        }
    }

    /// Entries stored, deleted ones included (what the node-size limit counts).
    pub fn stored(&self) -> u64 {
        u64::from(self.live + self.deleted)
    }

    /// Bytes of the packed buffer.
    pub fn bytes(&self) -> usize {
        self.buf.len()
    }

    /// The size of Redis's listpack holding these entries: a 7-byte header and end,
    /// the live and deleted counters, the master fields, the entries.
    pub fn redis_bytes(&self) -> usize {
        7 + lp_int_size(i64::from(self.live))
            + lp_int_size(i64::from(self.deleted))
            + self.redis_body as usize
    }

    /// Append an entry; `first` is the node's first ID, `id` is above every ID here.
    pub fn push(&mut self, first: StreamId, id: StreamId, pairs: &[&[u8]]) {
        let same = self.master_fields().eq(pairs.iter().step_by(2).copied());
        self.redis_body += redis_entry_size(first, id, pairs, same) as u32;
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

    /// The field names of the node's first entry, which entries with the same fields
    /// leave out.
    pub fn master_fields(&self) -> impl Iterator<Item = &[u8]> + '_ {
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

    /// Every stored entry in ID order, deleted ones included, each with whether it is
    /// deleted (what a serialized node holds).
    pub fn stored_entries(&self, first: StreamId) -> impl Iterator<Item = (EntryRef<'_>, bool)> {
        self.slots(first).map(|s| (s.entry, s.deleted))
    }

    /// Append an entry as [`Node::push`] does, flagged deleted at once when `deleted`
    /// (a node being rebuilt from its serialized form).
    pub fn push_stored(&mut self, first: StreamId, id: StreamId, pairs: &[&[u8]], deleted: bool) {
        let offset = self.buf.len();
        self.push(first, id, pairs);
        if deleted {
            self.flag_deleted(offset);
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

/// Redis's listpack bytes for one entry: flags, the ID as two differences from the
/// node's first ID, the field count and fields unless they are the master fields, the
/// values, and the element count that lets Redis walk backwards.
fn redis_entry_size(first: StreamId, id: StreamId, pairs: &[&[u8]], same: bool) -> usize {
    let fields = pairs.len() / 2;
    let mut elements = 3 + fields;
    let mut size = lp_int_size(0)
        + lp_int_size(id.ms.wrapping_sub(first.ms) as i64)
        + lp_int_size(id.seq.wrapping_sub(first.seq) as i64);
    let values = pairs.iter().skip(1).step_by(2);
    size += values.map(|v| lp_string_size(v)).sum::<usize>();
    if !same {
        elements += fields + 1;
        size += lp_int_size(fields as i64);
        size += pairs
            .iter()
            .step_by(2)
            .map(|f| lp_string_size(f))
            .sum::<usize>();
    }
    size + lp_int_size(elements as i64)
}

/// A listpack element holding an integer: its encoding, then its back-length byte.
fn lp_int_size(n: i64) -> usize {
    let encoded = match n {
        0..=127 => 1,
        -4096..=4095 => 2,
        -32768..=32767 => 3,
        -8_388_608..=8_388_607 => 4,
        -2_147_483_648..=2_147_483_647 => 5,
        _ => 9,
    };
    encoded + 1
}

/// A listpack element holding a string (one that reads as an integer is stored as
/// one): header, bytes, back-length.
fn lp_string_size(s: &[u8]) -> usize {
    if let Some(n) = parse_i64(s) {
        return lp_int_size(n);
    }
    let header = match s.len() {
        0..=63 => 1,
        64..=4095 => 2,
        _ => 5,
    };
    let element = header + s.len();
    let backlen = match element {
        0..=127 => 1,
        128..=16_383 => 2,
        16_384..=2_097_151 => 3,
        2_097_152..=268_435_455 => 4,
        _ => 5,
    };
    element + backlen
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
