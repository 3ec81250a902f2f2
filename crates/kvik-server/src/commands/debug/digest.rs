//! The dataset fingerprint of DEBUG DIGEST and DEBUG DIGEST-VALUE, computed exactly as
//! Redis computes it, so a kvik node and a Redis server holding the same data print
//! the same 40 hex digits (tests and replication checks compare them).
//!
//! Two ways of folding bytes into a 20-byte accumulator build it:
//! - [`xor_in`] XORs in the SHA1 of the bytes: the order of the parts does not matter
//!   (the keys of a database, the members of a set);
//! - [`mix_in`] does the same and then replaces the accumulator by its own SHA1: the
//!   order matters (a key before its value, the elements of a list).
//!
//! A key's part is its name mixed in, then its type code, then its value (one
//! function per type below), then a marker when it has a deadline (not the deadline
//! itself, so copies whose clocks differ agree). Each database that holds keys mixes
//! in its index, then XORs in every key's part.

use crate::keyspace::{Entry, Locked};
use crate::types::hash::Hash;
use crate::types::list::List;
use crate::types::set::Set;
use crate::types::stream::{Stream, StreamId};
use crate::types::string::StrValue;
use crate::types::zset::ZSet;
use crate::types::Value;
use crate::util::numbers::format_f64;
use sha1::{Digest as _, Sha1};

pub type Fingerprint = [u8; 20];

/// XOR the SHA1 of `data` into `acc`.
pub fn xor_in(acc: &mut Fingerprint, data: &[u8]) {
    let hash = Sha1::digest(data);
    for (a, h) in acc.iter_mut().zip(hash) {
        *a ^= h;
    }
}

/// XOR the SHA1 of `data` into `acc`, then hash `acc` itself.
pub fn mix_in(acc: &mut Fingerprint, data: &[u8]) {
    xor_in(acc, data);
    *acc = Sha1::digest(*acc).into();
}

/// The type numbers Redis folds in before a value.
fn type_code(value: &Value) -> u32 {
    match value {
        Value::Str(_) => 0,
        Value::List(_) => 1,
        Value::Set(_) => 2,
        Value::ZSet(_) => 3,
        Value::Hash(_) => 4,
        Value::Stream(_) => 6,
        // After Redis's module type (5): KeyDB's OBJ_CRON.
        Value::Cron(_) => 7,
    }
}

/// A value's own part, by type.
fn mix_value(acc: &mut Fingerprint, value: &Value) {
    match value {
        Value::Str(s) => mix_string(acc, s),
        Value::List(list) => mix_list(acc, list),
        Value::Set(set) => xor_set(acc, set),
        Value::Hash(hash) => xor_hash(acc, hash),
        Value::ZSet(zset) => xor_zset(acc, zset),
        Value::Stream(stream) => mix_stream(acc, stream),
        Value::Cron(job) => mix_cron(acc, job),
    }
}

/// A scheduled script counts by the command that sets it again (schedule included).
fn mix_cron(acc: &mut Fingerprint, job: &crate::types::cron::CronJob) {
    for arg in job.command(b"") {
        mix_in(acc, &arg);
    }
}

/// A stream counts by its entries in order: each ID (as `ms.seq`), then its fields and
/// values. Consumer groups do not count, as in Redis 7.0.
fn mix_stream(acc: &mut Fingerprint, stream: &Stream) {
    for entry in stream.range(StreamId::MIN, StreamId::MAX, false) {
        mix_in(acc, format!("{}.{}", entry.id.ms, entry.id.seq).as_bytes());
        for (field, value) in &entry.fields {
            mix_in(acc, field);
            mix_in(acc, value);
        }
    }
}

/// A string counts by its bytes, whatever its encoding (an integer by its digits).
fn mix_string(acc: &mut Fingerprint, s: &StrValue) {
    mix_in(acc, s.bytes(&mut itoa::Buffer::new()));
}

/// A list counts by its elements in order.
/// Node by node, so that compressed nodes are decompressed one at a time and no copy
/// stays behind.
fn mix_list(acc: &mut Fingerprint, list: &List) {
    let mut scratch = itoa::Buffer::new();
    list.for_each_node(|elements| {
        for element in elements {
            mix_in(acc, element.bytes(&mut scratch));
        }
    });
}

/// A set counts by its members in any order.
fn xor_set(acc: &mut Fingerprint, set: &Set) {
    let mut digits = itoa::Buffer::new();
    for member in set.iter() {
        xor_in(acc, member.bytes(&mut digits));
    }
}

/// A hash counts by its (field, value) pairs in any order, each pair in order.
fn xor_hash(acc: &mut Fingerprint, hash: &Hash) {
    for (field, value) in hash.iter() {
        xor_pair(acc, field, value);
    }
}

/// A sorted set counts by its (member, score) pairs in any order, the score as
/// Redis 7.0 prints it (`%.17g`).
fn xor_zset(acc: &mut Fingerprint, zset: &ZSet) {
    zset.for_each(|member, score| xor_pair(acc, member, format_f64(score).as_bytes()));
}

/// Fold one pair, its two parts in order, into an order-free accumulator.
fn xor_pair(acc: &mut Fingerprint, first: &[u8], second: &[u8]) {
    let mut pair = [0; 20];
    mix_in(&mut pair, first);
    mix_in(&mut pair, second);
    xor_in(acc, &pair);
}

/// Fold an entry's type, value and expiry marker into `acc`.
fn fold_entry(acc: &mut Fingerprint, entry: &Entry) {
    mix_in(acc, &type_code(&entry.value).to_be_bytes());
    mix_value(acc, &entry.value);
    if entry.expire_at != 0 {
        xor_in(acc, b"!!expire!!");
    }
}

/// DEBUG DIGEST-VALUE's fingerprint of one entry: its value, not its name.
pub fn value(entry: &Entry) -> Fingerprint {
    let mut acc = [0; 20];
    fold_entry(&mut acc, entry);
    acc
}

/// DEBUG DIGEST's fingerprint of every database `locked` holds (all of them).
/// Keys due to expire but not yet removed count, as in Redis.
pub fn dataset(locked: &mut Locked) -> Fingerprint {
    let ks = locked.keyspace();
    let shards = ks.shards_per_db();
    let mut total = [0; 20];
    for db in 0..ks.databases() {
        if (0..shards).all(|s| locked.shard_at(db, s).is_empty()) {
            continue;
        }
        mix_in(&mut total, &(db as u32).to_be_bytes());
        for s in 0..shards {
            for entry in locked.shard_at(db, s).iter() {
                let mut part = [0; 20];
                mix_in(&mut part, entry.key());
                fold_entry(&mut part, entry);
                xor_in(&mut total, &part);
            }
        }
    }
    total
}
