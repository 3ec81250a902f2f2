//! RDB bytes to values: every type byte Redis 7.0 loads (and 7.2's sets as
//! listpacks), each rebuilt in the encoding a value loaded now gets under the
//! configured thresholds, as Redis converts what it loads.
//!
//! What kvik's types could not hold faithfully is refused as corrupt: empty
//! collections (Redis refuses them too), duplicate members or fields, NaN scores.

use super::io::{prealloc, Source};
use super::{intset, kind, listpack, stream, ziplist, zipmap, Corrupt, Result};
use kvik_types::cron::CronJob;
use kvik_types::hash::{self, Hash};
use kvik_types::list::{Element, End, List, NodeLimit};
use kvik_types::set::{IntSet, Set};
use kvik_types::string::StrValue;
use kvik_types::zset::{self, ZSet};
use kvik_types::{EncodingLimits, Value};
use kvik_util::numbers::{c_string, parse_i64};
use kvik_util::strtod::strtod;
use std::borrow::Cow;
use std::collections::HashSet;

/// The encoding thresholds in force, which decide how a loaded value is held.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub hash: hash::Limits,
    pub zset: zset::Limits,
    /// `set-max-intset-entries`.
    pub max_intset: usize,
    /// `list-max-listpack-size`.
    pub list_node: NodeLimit,
}

impl From<&EncodingLimits> for Limits {
    fn from(e: &EncodingLimits) -> Limits {
        Limits {
            hash: e.hash(),
            zset: e.zset(),
            max_intset: e.max_intset(),
            list_node: e.list_node(),
        }
    }
}

/// A quicklist node's container (RDB type `LIST_QUICKLIST_2`): one element stored
/// as it is, or a listpack of several.
pub(super) const CONTAINER_PLAIN: u64 = 1;
pub(super) const CONTAINER_PACKED: u64 = 2;

/// Read one value: its type byte, then its body.
pub fn decode<'a>(src: &mut impl Source<'a>, limits: &Limits) -> Result<Value> {
    let type_byte = src.byte()?;
    decode_body(type_byte, src, limits)
}

/// Is `byte` the type byte of a value kvik can read? (In an RDB file the byte before
/// a key is either that or an opcode.)
pub fn is_value_type(byte: u8) -> bool {
    matches!(byte, 0..=5 | 9..=21 | kind::CRON)
}

/// Is `byte` a module value's type byte (which kvik cannot read without the module)?
pub fn is_module_type(byte: u8) -> bool {
    matches!(byte, kind::MODULE | kind::MODULE_2)
}

/// Read the body of a value whose type byte `type_byte` was already read (an RDB
/// file reads it to tell values from opcodes).
pub fn decode_body<'a>(type_byte: u8, src: &mut impl Source<'a>, limits: &Limits) -> Result<Value> {
    let value = match type_byte {
        kind::STRING => Value::Str(StrValue::from_bytes(&src.string()?)),
        kind::LIST => list(plain_elements(src)?, limits)?,
        kind::LIST_ZIPLIST => list(ziplist::parse(&src.string()?)?, limits)?,
        kind::LIST_QUICKLIST => quicklist(src, limits)?,
        kind::LIST_QUICKLIST_2 => quicklist_2(src, limits)?,
        kind::SET => set(plain_elements(src)?, limits)?,
        kind::SET_INTSET => intset_set(&src.string()?, limits)?,
        kind::SET_LISTPACK => set(listpack::parse(&src.string()?)?, limits)?,
        kind::HASH => plain_hash(src, limits)?,
        kind::HASH_ZIPMAP => {
            let blob = src.string()?;
            hash(zipmap::parse(&blob)?.into_iter(), limits)?
        }
        kind::HASH_ZIPLIST => packed_hash(ziplist::parse(&src.string()?)?, limits)?,
        kind::HASH_LISTPACK => packed_hash(listpack::parse(&src.string()?)?, limits)?,
        kind::ZSET => plain_zset(src, limits, |src| src.text_double())?,
        kind::ZSET_2 => plain_zset(src, limits, |src| src.binary_double())?,
        kind::ZSET_ZIPLIST => packed_zset(ziplist::parse(&src.string()?)?, limits)?,
        kind::ZSET_LISTPACK => packed_zset(listpack::parse(&src.string()?)?, limits)?,
        kind::STREAM_LISTPACKS => stream::decode(src, 1)?,
        kind::STREAM_LISTPACKS_2 => stream::decode(src, 2)?,
        kind::STREAM_LISTPACKS_3 => stream::decode(src, 3)?,
        kind::CRON => cron(src)?,
        kind::MODULE | kind::MODULE_2 => return Err(Corrupt("module values are not supported")),
        _ => return Err(Corrupt("unknown value type")),
    };
    Ok(value)
}

/// KeyDB's scheduled script. The single-shot flag is not in the body (KeyDB does
/// not keep it): the file's `kvik-cron-single` field after the key restores it.
fn cron<'a>(src: &mut impl Source<'a>) -> Result<Value> {
    let script = src.string()?.into_owned();
    let start_ms = src.millis()?;
    let interval_ms = src.millis()?;
    if interval_ms == 0 {
        return Err(Corrupt("cron job without an interval"));
    }
    let owned = |v: Vec<Cow<'a, [u8]>>| v.into_iter().map(Cow::into_owned).collect();
    let keys = owned(plain_elements(src)?);
    let args = owned(plain_elements(src)?);
    Ok(Value::Cron(Box::new(CronJob {
        script,
        start_ms,
        interval_ms,
        keys,
        args,
        single: false,
    })))
}

/// A count, then that many strings.
fn plain_elements<'a>(src: &mut impl Source<'a>) -> Result<Vec<Cow<'a, [u8]>>> {
    let count = src.count()?;
    let mut elements = Vec::with_capacity(prealloc(count));
    for _ in 0..count {
        elements.push(src.string()?);
    }
    Ok(elements)
}

/// The bytes of a packed element or a read string.
trait AsBytes {
    fn with_bytes<T>(&self, f: impl FnOnce(&[u8]) -> T) -> T;
}

impl AsBytes for Element<'_> {
    fn with_bytes<T>(&self, f: impl FnOnce(&[u8]) -> T) -> T {
        f(self.bytes(&mut itoa::Buffer::new()))
    }
}

impl AsBytes for Cow<'_, [u8]> {
    fn with_bytes<T>(&self, f: impl FnOnce(&[u8]) -> T) -> T {
        f(self)
    }
}

/// A list of `elements`, refused when empty.
fn list(elements: Vec<impl AsBytes>, limits: &Limits) -> Result<Value> {
    let mut list = List::new();
    append(&mut list, &elements, limits);
    non_empty_list(list)
}

/// Push `elements` at the tail of `list`, in nodes as `limits` size them.
fn append(list: &mut List, elements: &[impl AsBytes], limits: &Limits) {
    for element in elements {
        element.with_bytes(|bytes| list.push(End::Tail, bytes, limits.list_node));
    }
}

/// Redis 3.2 to 6.2's quicklist: a count of ziplist nodes. Empty nodes are skipped
/// (some versions saved them), but the list as a whole must hold something.
fn quicklist<'a>(src: &mut impl Source<'a>, limits: &Limits) -> Result<Value> {
    let nodes = src.count()?;
    let mut list = List::new();
    for _ in 0..nodes {
        append(&mut list, &ziplist::parse(&src.string()?)?, limits);
    }
    non_empty_list(list)
}

/// Redis 7's quicklist: each node says whether it is a listpack or one plain
/// element.
fn quicklist_2<'a>(src: &mut impl Source<'a>, limits: &Limits) -> Result<Value> {
    let nodes = src.count()?;
    let mut list = List::new();
    for _ in 0..nodes {
        let container = src.length()?;
        let blob = src.string()?;
        match container {
            CONTAINER_PLAIN => list.push(End::Tail, &blob, limits.list_node),
            CONTAINER_PACKED => append(&mut list, &listpack::parse(&blob)?, limits),
            _ => return Err(Corrupt("unknown quicklist container")),
        }
    }
    non_empty_list(list)
}

fn non_empty_list(list: List) -> Result<Value> {
    if list.is_empty() {
        return Err(Corrupt::EMPTY_COLLECTION);
    }
    Ok(Value::List(Box::new(list)))
}

/// A set of `members`, each at most once.
fn set(members: Vec<impl AsBytes>, limits: &Limits) -> Result<Value> {
    let mut set = Set::default();
    for member in &members {
        if !member.with_bytes(|bytes| set.insert(bytes, limits.max_intset)) {
            return Err(Corrupt("duplicate set member"));
        }
    }
    if set.is_empty() {
        return Err(Corrupt::EMPTY_COLLECTION);
    }
    Ok(Value::Set(Box::new(set)))
}

/// An intset blob, kept in its width as Redis keeps a loaded intset.
fn intset_set(blob: &[u8], limits: &Limits) -> Result<Value> {
    let (width, members) = intset::parse(blob)?;
    if members.is_empty() {
        return Err(Corrupt::EMPTY_COLLECTION);
    }
    let mut ints = IntSet::with_width(width);
    for member in members {
        ints.insert(member);
    }
    let set = Set::from_intset(ints, limits.max_intset);
    Ok(Value::Set(Box::new(set)))
}

/// A count of pairs, then field and value strings.
fn plain_hash<'a>(src: &mut impl Source<'a>, limits: &Limits) -> Result<Value> {
    let count = src.count()?;
    let mut pairs = Vec::with_capacity(prealloc(count));
    for _ in 0..count {
        pairs.push((src.string()?, src.string()?));
    }
    hash(pairs.iter().map(|(f, v)| (&f[..], &v[..])), limits)
}

/// Fields and values alternating in a packed blob.
fn packed_hash(elements: Vec<Element<'_>>, limits: &Limits) -> Result<Value> {
    if !elements.len().is_multiple_of(2) {
        return Err(Corrupt("hash with a field and no value"));
    }
    let (mut field_digits, mut value_digits) = (itoa::Buffer::new(), itoa::Buffer::new());
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = elements
        .chunks_exact(2)
        .map(|pair| {
            (
                pair[0].bytes(&mut field_digits).to_vec(),
                pair[1].bytes(&mut value_digits).to_vec(),
            )
        })
        .collect();
    hash(pairs.iter().map(|(f, v)| (&f[..], &v[..])), limits)
}

/// A hash of `pairs`, each field at most once.
fn hash<'p>(pairs: impl Iterator<Item = (&'p [u8], &'p [u8])>, limits: &Limits) -> Result<Value> {
    let mut hash = Hash::default();
    for (field, value) in pairs {
        if !hash.insert(field, value, limits.hash) {
            return Err(Corrupt("duplicate hash field"));
        }
    }
    if hash.is_empty() {
        return Err(Corrupt::EMPTY_COLLECTION);
    }
    Ok(Value::Hash(Box::new(hash)))
}

/// A count of entries, then each member string and its score (`score` reads one).
fn plain_zset<'a, S: Source<'a>>(
    src: &mut S,
    limits: &Limits,
    score: impl Fn(&mut S) -> Result<f64>,
) -> Result<Value> {
    let count = src.count()?;
    let mut entries = Vec::with_capacity(prealloc(count));
    for _ in 0..count {
        let member = src.string()?;
        entries.push((member, score(src)?));
    }
    zset(entries.iter().map(|(m, s)| (&m[..], *s)).collect(), limits)
}

/// Members and scores alternating in a packed blob.
fn packed_zset(elements: Vec<Element<'_>>, limits: &Limits) -> Result<Value> {
    if !elements.len().is_multiple_of(2) {
        return Err(Corrupt("sorted set member without a score"));
    }
    let mut digits = itoa::Buffer::new();
    let members: Vec<Vec<u8>> = elements
        .iter()
        .step_by(2)
        .map(|m| m.bytes(&mut digits).to_vec())
        .collect();
    let scores = elements
        .iter()
        .skip(1)
        .step_by(2)
        .map(packed_score)
        .collect::<Result<Vec<f64>>>()?;
    zset(members.iter().map(|m| &m[..]).zip(scores).collect(), limits)
}

/// A score stored in a packed blob: an integer, or its text as `strtod` reads it.
fn packed_score(element: &Element<'_>) -> Result<f64> {
    match *element {
        Element::Int(n) => Ok(n as f64),
        Element::Bytes(text) => {
            let text = c_string(text);
            let parsed = strtod(text);
            (parsed.len == text.len() && !text.is_empty())
                .then_some(parsed.value)
                .ok_or(Corrupt("unreadable score"))
        }
    }
}

/// A sorted set of `entries`: no member twice, no NaN score.
fn zset(mut entries: Vec<(&[u8], f64)>, limits: &Limits) -> Result<Value> {
    if entries.is_empty() {
        return Err(Corrupt::EMPTY_COLLECTION);
    }
    if entries.iter().any(|(_, score)| score.is_nan()) {
        return Err(Corrupt("NaN score"));
    }
    let mut seen = HashSet::with_capacity(entries.len());
    if !entries.iter().all(|(member, _)| seen.insert(*member)) {
        return Err(Corrupt("duplicate sorted set member"));
    }
    Ok(Value::ZSet(Box::new(ZSet::from_entries(
        &mut entries,
        limits.zset,
    ))))
}

/// An integer stored in a packed blob (a stream node's counts and IDs), which a
/// string element may spell.
pub(super) fn packed_int(element: &Element<'_>) -> Result<i64> {
    match *element {
        Element::Int(n) => Ok(n),
        Element::Bytes(text) => parse_i64(text).ok_or(Corrupt("integer expected")),
    }
}
