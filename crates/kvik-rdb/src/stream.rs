//! Streams in RDB form (`STREAM_LISTPACKS`, `_2` from Redis 7.0, `_3` from 7.2).
//!
//! ```text
//! node-count  (node-key:16-byte-ID-string  node:listpack-string)*
//! length  last-id  [first-id  max-deleted-id  entries-added]      (_2 and later)
//! group-count  group*
//! group = name  last-id  [entries-read]                            (_2 and later)
//!         pel-count  (raw-ID:16  delivery-time:ms  delivery-count)*
//!         consumer-count  consumer*
//! consumer = name  seen-time:ms  [active-time:ms]  (_3)  pel-count  raw-ID:16*
//! ```
//!
//! IDs are two lengths (milliseconds, sequence), except raw IDs and node keys: 16
//! bytes, both halves big-endian. A node's listpack starts with its master entry
//! (live count, deleted count, the master field names, a 0), then each entry: flags,
//! the ID as differences from the node key, the values alone when the entry has
//! exactly the master fields (else a field count and the pairs), and the number of
//! listpack elements the entry took, which lets Redis walk backwards. kvik's stream
//! nodes keep the same layout ([`Node`]), so nodes go through one for one.
//!
//! Everything kvik's types rely on is checked: IDs ascending across and within
//! nodes and never above the stream's last ID, counts that agree with the entries,
//! each PEL entry owned by exactly one consumer of its group.

use super::decode::packed_int;
use super::io::{prealloc, write_len, write_millis, write_string, Sink, Source};
use super::listpack::{self, Writer};
use super::{Corrupt, Result};
use kvik_types::list::Element;
use kvik_types::stream::{Consumer, Group, Name, Node, Pending, Stream, StreamId};
use kvik_types::Value;
use std::collections::btree_map;
use std::collections::BTreeMap;

const DELETED: i64 = 1;
const SAME_FIELDS: i64 = 2;
/// What a group's entries-read holds when it is not known (Redis's -1 saved as an
/// unsigned length).
const UNKNOWN_ENTRIES_READ: u64 = u64::MAX;

/// Write `stream` as `STREAM_LISTPACKS_2`, what Redis 7.0 writes.
pub fn encode(out: &mut impl Sink, stream: &Stream, compress: bool) {
    write_len(out, stream.node_count() as u64);
    for (&first, node) in stream.nodes() {
        write_string(out, &raw_id(first), compress);
        write_string(out, &node_listpack(first, node), compress);
    }
    write_len(out, stream.len());
    write_id(out, stream.last_id);
    write_id(out, stream.first_id);
    write_id(out, stream.max_deleted_id);
    write_len(out, stream.entries_added);
    write_len(out, stream.groups.len() as u64);
    for (name, group) in &stream.groups {
        write_string(out, name, compress);
        write_group(out, group, compress);
    }
}

fn write_id(out: &mut impl Sink, id: StreamId) {
    write_len(out, id.ms);
    write_len(out, id.seq);
}

fn raw_id(id: StreamId) -> [u8; 16] {
    let mut raw = [0; 16];
    raw[..8].copy_from_slice(&id.ms.to_be_bytes());
    raw[8..].copy_from_slice(&id.seq.to_be_bytes());
    raw
}

fn write_group(out: &mut impl Sink, group: &Group, compress: bool) {
    write_id(out, group.last_id);
    write_len(out, group.entries_read.unwrap_or(UNKNOWN_ENTRIES_READ));
    write_len(out, group.pel.len() as u64);
    for (&id, pending) in &group.pel {
        out.put(&raw_id(id));
        write_millis(out, pending.delivered_at);
        write_len(out, pending.deliveries);
    }
    write_len(out, group.consumers.len() as u64);
    for (name, consumer) in &group.consumers {
        write_string(out, name, compress);
        write_millis(out, consumer.seen_at);
        write_len(out, consumer.pending.len() as u64);
        for &id in &consumer.pending {
            out.put(&raw_id(id));
        }
    }
}

/// The listpack Redis keeps for `node`, keyed `first`.
fn node_listpack(first: StreamId, node: &Node) -> Vec<u8> {
    let mut lp = Writer::new();
    let master: Vec<&[u8]> = node.master_fields().collect();
    lp.push(Element::Int(node.live.into()));
    lp.push(Element::Int(node.deleted.into()));
    lp.push(Element::Int(master.len() as i64));
    master.iter().for_each(|field| lp.push_bytes(field));
    lp.push(Element::Int(0));
    for (entry, deleted) in node.stored_entries(first) {
        let same = entry.fields.len() == master.len()
            && entry.fields.iter().zip(&master).all(|((f, _), m)| f == m);
        let flags = if deleted { DELETED } else { 0 } | if same { SAME_FIELDS } else { 0 };
        lp.push(Element::Int(flags));
        lp.push(Element::Int(entry.id.ms.wrapping_sub(first.ms) as i64));
        lp.push(Element::Int(entry.id.seq.wrapping_sub(first.seq) as i64));
        if !same {
            lp.push(Element::Int(entry.fields.len() as i64));
        }
        for (field, value) in &entry.fields {
            if !same {
                lp.push_bytes(field);
            }
            lp.push_bytes(value);
        }
        lp.push(Element::Int(entry_elements(entry.fields.len(), same)));
    }
    lp.finish()
}

/// How many listpack elements an entry takes before its own count: flags, two ID
/// differences and the values, plus the field count and names unless they are the
/// master fields.
fn entry_elements(fields: usize, same: bool) -> i64 {
    let values = 3 + fields;
    (if same { values } else { values + fields + 1 }) as i64
}

/// Read a stream of format `version` (1, 2 or 3: `STREAM_LISTPACKS` and its `_2`,
/// `_3`).
pub fn decode<'a>(src: &mut impl Source<'a>, version: u8) -> Result<Value> {
    let mut stream = Stream::new();
    let mut last_stored = None;
    let nodes = src.count()?;
    for _ in 0..nodes {
        let first = node_key(&src.string()?)?;
        if last_stored.is_some_and(|last| first <= last) {
            return Err(Corrupt("stream nodes out of order"));
        }
        let node = decode_node(first, &src.string()?)?;
        last_stored = Some(node.last);
        // A node with only deleted entries holds nothing a reader can see.
        if node.live > 0 {
            stream.push_node(first, node);
        }
    }
    if src.length()? != stream.len() {
        return Err(Corrupt("stream length disagrees with its entries"));
    }
    stream.last_id = read_id(src)?;
    if last_stored.is_some_and(|last| last > stream.last_id) {
        return Err(Corrupt("stream entry above the last ID"));
    }
    let first_live = stream.first_entry().map_or(StreamId::MIN, |e| e.id);
    if version >= 2 {
        stream.first_id = read_id(src)?;
        stream.max_deleted_id = read_id(src)?;
        stream.entries_added = src.length()?;
        if stream.entries_added < stream.len() {
            return Err(Corrupt("stream added fewer entries than it holds"));
        }
    } else {
        stream.first_id = first_live;
        stream.entries_added = stream.len();
    }
    read_groups(src, &mut stream, version)?;
    Ok(Value::Stream(Box::new(stream)))
}

fn node_key(key: &[u8]) -> Result<StreamId> {
    let raw: [u8; 16] = key.try_into().map_err(|_| Corrupt("node key not an ID"))?;
    Ok(id_of_raw(raw))
}

fn id_of_raw(raw: [u8; 16]) -> StreamId {
    let (ms, seq) = raw.split_at(8);
    StreamId {
        ms: u64::from_be_bytes(ms.try_into().expect("8 bytes")),
        seq: u64::from_be_bytes(seq.try_into().expect("8 bytes")),
    }
}

fn read_id<'a>(src: &mut impl Source<'a>) -> Result<StreamId> {
    Ok(StreamId {
        ms: src.length()?,
        seq: src.length()?,
    })
}

/// The elements of a node's listpack, read in order.
struct NodeElements<'e> {
    elements: std::slice::Iter<'e, Element<'e>>,
}

impl<'e> NodeElements<'e> {
    fn next(&mut self) -> Result<&'e Element<'e>> {
        self.elements
            .next()
            .ok_or(Corrupt("stream node ends inside an entry"))
    }

    fn int(&mut self) -> Result<i64> {
        packed_int(self.next()?)
    }

    fn count(&mut self) -> Result<usize> {
        usize::try_from(self.int()?).map_err(|_| Corrupt("negative count in stream node"))
    }

    fn bytes(&mut self) -> Result<Vec<u8>> {
        Ok(self.next()?.bytes(&mut itoa::Buffer::new()).to_vec())
    }

    fn is_done(&self) -> bool {
        self.elements.len() == 0
    }
}

/// Rebuild the node keyed `first` from its listpack.
fn decode_node(first: StreamId, blob: &[u8]) -> Result<Node> {
    let elements = listpack::parse(blob)?;
    let mut lp = NodeElements {
        elements: elements.iter(),
    };
    let (live, deleted) = (lp.int()?, lp.int()?);
    let field_count = lp.count()?;
    let master = (0..field_count)
        .map(|_| lp.bytes())
        .collect::<Result<Vec<_>>>()?;
    if lp.int()? != 0 {
        return Err(Corrupt("stream master entry not terminated"));
    }
    let master_refs: Vec<&[u8]> = master.iter().map(|f| &f[..]).collect();
    let mut node = Node::with_master_fields(first, &master_refs);
    let mut previous: Option<StreamId> = None;
    while !lp.is_done() {
        let (id, pairs, is_deleted) = decode_entry(&mut lp, first, &master)?;
        if previous.is_some_and(|p| id <= p) || id < first {
            return Err(Corrupt("stream entries out of order"));
        }
        previous = Some(id);
        let refs: Vec<&[u8]> = pairs.iter().map(|p| &p[..]).collect();
        node.push_stored(first, id, &refs, is_deleted);
    }
    if previous.is_none() {
        return Err(Corrupt("empty stream node"));
    }
    if i64::from(node.live) != live || i64::from(node.deleted) != deleted {
        return Err(Corrupt("stream node counts disagree with its entries"));
    }
    Ok(node)
}

/// One entry: its ID, its field/value pairs (flattened) and whether it is deleted.
fn decode_entry(
    lp: &mut NodeElements<'_>,
    first: StreamId,
    master: &[Vec<u8>],
) -> Result<(StreamId, Vec<Vec<u8>>, bool)> {
    let flags = lp.int()?;
    if flags & !(DELETED | SAME_FIELDS) != 0 {
        return Err(Corrupt("unknown stream entry flags"));
    }
    let id = StreamId {
        ms: first.ms.wrapping_add(lp.int()? as u64),
        seq: first.seq.wrapping_add(lp.int()? as u64),
    };
    let same = flags & SAME_FIELDS != 0;
    let field_count = if same { master.len() } else { lp.count()? };
    let mut pairs = Vec::with_capacity(prealloc(field_count * 2));
    for _ in 0..field_count {
        let field = if same {
            master[pairs.len() / 2].clone()
        } else {
            lp.bytes()?
        };
        pairs.push(field);
        pairs.push(lp.bytes()?);
    }
    if lp.int()? != entry_elements(field_count, same) {
        return Err(Corrupt("stream entry element count wrong"));
    }
    Ok((id, pairs, flags & DELETED != 0))
}

fn read_groups<'a>(src: &mut impl Source<'a>, stream: &mut Stream, version: u8) -> Result<()> {
    let count = src.count()?;
    for _ in 0..count {
        let name = src.string()?.into_owned();
        let last_id = read_id(src)?;
        let entries_read = if version >= 2 {
            Some(src.length()?).filter(|&n| n != UNKNOWN_ENTRIES_READ)
        } else {
            stream.entries_up_to(last_id)
        };
        let mut group = Group::new(last_id, entries_read);
        let owners = read_pel(src)?;
        read_consumers(src, &mut group, owners, version)?;
        match stream.groups.entry(name) {
            btree_map::Entry::Occupied(_) => return Err(Corrupt("duplicate consumer group")),
            btree_map::Entry::Vacant(slot) => slot.insert(group),
        };
    }
    Ok(())
}

/// A group's PEL, before the consumers that own its entries are known: the
/// delivery time and count of each ID.
type Unowned = BTreeMap<StreamId, (u64, u64)>;

fn read_pel<'a>(src: &mut impl Source<'a>) -> Result<Unowned> {
    let count = src.count()?;
    let mut pel = Unowned::new();
    for _ in 0..count {
        let id = id_of_raw(src.array()?);
        let delivered_at = src.millis()?;
        let deliveries = src.length()?;
        if pel.insert(id, (delivered_at, deliveries)).is_some() {
            return Err(Corrupt("duplicate PEL entry"));
        }
    }
    Ok(pel)
}

/// The consumers, each claiming its pending entries from `unowned`; every entry
/// must end up claimed exactly once.
fn read_consumers<'a>(
    src: &mut impl Source<'a>,
    group: &mut Group,
    mut unowned: Unowned,
    version: u8,
) -> Result<()> {
    let count = src.count()?;
    for _ in 0..count {
        let name = Name::from(&src.string()?[..]);
        let seen_at = src.millis()?;
        if version >= 3 {
            // Redis 7.2's active time: kvik keeps one time per consumer, the seen time.
            src.millis()?;
        }
        let mut consumer = Consumer {
            seen_at,
            ..Consumer::default()
        };
        let pending = src.count()?;
        for _ in 0..pending {
            let id = id_of_raw(src.array()?);
            let (delivered_at, deliveries) = unowned
                .remove(&id)
                .ok_or(Corrupt("consumer PEL entry not in its group's PEL once"))?;
            consumer.pending.insert(id);
            let owner = Pending {
                consumer: name.clone(),
                delivered_at,
                deliveries,
            };
            group.pel.insert(id, owner);
        }
        if group.consumers.insert(name, consumer).is_some() {
            return Err(Corrupt("duplicate consumer"));
        }
    }
    if !unowned.is_empty() {
        return Err(Corrupt("PEL entry without a consumer"));
    }
    Ok(())
}
