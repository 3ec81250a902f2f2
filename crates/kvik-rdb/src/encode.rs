//! Values to RDB bytes, with the type choices Redis 7.0 makes (RDB version 10): the
//! compact encodings become their packed blobs (intset, listpack), the big ones plain
//! element lists, lists always a quicklist of listpack nodes.

use super::decode::{CONTAINER_PACKED, CONTAINER_PLAIN};
use super::io::{write_binary_double, write_int, write_len, write_millis, write_string, Sink};
use super::listpack::Writer;
use super::{intset, kind, stream};
use kvik_types::cron::CronJob;
use kvik_types::hash::Hash;
use kvik_types::list::{Element, List};
use kvik_types::set::Set;
use kvik_types::string::StrValue;
use kvik_types::zset::ZSet;
use kvik_types::Value;
use kvik_util::numbers::write_f64;

/// Elements this big get a plain node of their own (Redis's default
/// `packed_threshold`).
const PLAIN_ELEMENT: usize = 1 << 30;

/// Append `value`'s type byte and body to `out`; strings longer than 20 bytes are
/// LZF-compressed when `compress` and it saves space (`rdbcompression`).
pub fn encode(value: &Value, out: &mut impl Sink, compress: bool) {
    match value {
        Value::Str(s) => {
            out.put_byte(kind::STRING);
            string(out, s, compress);
        }
        Value::List(list) => {
            out.put_byte(kind::LIST_QUICKLIST_2);
            quicklist(out, list, compress);
        }
        Value::Set(set) => self::set(out, set, compress),
        Value::Hash(hash) => self::hash(out, hash, compress),
        Value::ZSet(zset) => self::zset(out, zset, compress),
        Value::Stream(s) => {
            out.put_byte(kind::STREAM_LISTPACKS_2);
            stream::encode(out, s, compress);
        }
        Value::Cron(job) => cron(out, job, compress),
    }
}

/// KeyDB's layout: script, start and interval (ms), the keys, the arguments.
fn cron(out: &mut impl Sink, job: &CronJob, compress: bool) {
    out.put_byte(kind::CRON);
    write_string(out, &job.script, compress);
    write_millis(out, job.start_ms);
    write_millis(out, job.interval_ms);
    for strings in [&job.keys, &job.args] {
        write_len(out, strings.len() as u64);
        for s in strings {
            write_string(out, s, compress);
        }
    }
}

fn string(out: &mut impl Sink, s: &StrValue, compress: bool) {
    match s {
        StrValue::Int(n) => write_int(out, *n),
        other => write_string(out, other.bytes(&mut itoa::Buffer::new()), compress),
    }
}

fn quicklist(out: &mut impl Sink, list: &List, compress: bool) {
    write_len(out, list.node_count() as u64);
    list.for_each_node(|node| {
        let mut elements = node.peekable();
        let first = elements.next().expect("a non-empty list has no empty node");
        match (first, elements.peek()) {
            (Element::Bytes(big), None) if big.len() >= PLAIN_ELEMENT => {
                write_len(out, CONTAINER_PLAIN);
                write_string(out, big, compress);
            }
            _ => {
                write_len(out, CONTAINER_PACKED);
                let mut lp = Writer::new();
                lp.push(first);
                elements.for_each(|e| lp.push(e));
                write_string(out, &lp.finish(), compress);
            }
        }
    });
}

fn set(out: &mut impl Sink, set: &Set, compress: bool) {
    if let Some(ints) = set.as_intset() {
        out.put_byte(kind::SET_INTSET);
        let blob = intset::build(ints.width(), ints.len(), ints.iter());
        write_string(out, &blob, compress);
        return;
    }
    out.put_byte(kind::SET);
    write_len(out, set.len() as u64);
    let mut digits = itoa::Buffer::new();
    for member in set.iter() {
        write_string(out, member.bytes(&mut digits), compress);
    }
}

fn hash(out: &mut impl Sink, hash: &Hash, compress: bool) {
    if hash.encoding_name() == "listpack" {
        out.put_byte(kind::HASH_LISTPACK);
        let mut lp = Writer::new();
        for (field, value) in hash.iter() {
            lp.push_bytes(field);
            lp.push_bytes(value);
        }
        write_string(out, &lp.finish(), compress);
        return;
    }
    out.put_byte(kind::HASH);
    write_len(out, hash.len() as u64);
    for (field, value) in hash.iter() {
        write_string(out, field, compress);
        write_string(out, value, compress);
    }
}

fn zset(out: &mut impl Sink, zset: &ZSet, compress: bool) {
    if zset.encoding_name() == "listpack" {
        out.put_byte(kind::ZSET_LISTPACK);
        let mut lp = Writer::new();
        let mut text = Vec::with_capacity(24);
        zset.for_each(|member, score| {
            lp.push_bytes(member);
            // Redis stores a listpack score as its text (an integer when it is one).
            text.clear();
            write_f64(&mut text, score);
            lp.push_bytes(&text);
        });
        write_string(out, &lp.finish(), compress);
        return;
    }
    out.put_byte(kind::ZSET_2);
    write_len(out, zset.len() as u64);
    // Highest first, as Redis writes its skiplist from the tail.
    zset.visit(0..zset.len(), true, |member, score| {
        write_string(out, member, compress);
        write_binary_double(out, score);
    });
}
