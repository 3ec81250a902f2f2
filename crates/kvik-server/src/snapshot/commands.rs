//! A snapshot's keys as the commands that rebuild them: the AOF base written with
//! `aof-use-rdb-preamble no`, in the form Redis 7.0's rewrite gives it
//! (`rewriteAppendOnlyFileRio`): SET, RPUSH, SADD, ZADD and HMSET of at most 64
//! items each, streams as XADD, XSETID, XGROUP CREATE, XCLAIM and XGROUP
//! CREATECONSUMER, then PEXPIREAT for a deadline (and KeyDB's PEXPIREMEMBERAT for
//! members' deadlines, KEYDB.CRON for a scheduled script); FUNCTION LOAD for each library and SELECT before each
//! database.
//!
//! Owns only the command form of values; which keys and when is the snapshot's.

use crate::effects::encode_command;
use crate::types::stream::{Stream, StreamId};
use crate::types::Value;
use crate::util::numbers::format_f64;

/// Items per command, as Redis's `AOF_REWRITE_ITEMS_PER_CMD`.
const ITEMS_PER_COMMAND: usize = 64;

/// `FUNCTION LOAD <code>` for one library.
pub fn write_function(out: &mut Vec<u8>, code: &[u8]) {
    encode_command(&[b"FUNCTION", b"LOAD", code], out);
}

/// `SELECT <db>` before a database's keys.
pub fn write_select(out: &mut Vec<u8>, db: usize) {
    encode_command(&[b"SELECT", db.to_string().as_bytes()], out);
}

/// The commands that rebuild `key` holding `value`, with its deadline (0: none).
pub fn write_key(out: &mut Vec<u8>, key: &[u8], value: &Value, expire_at: u64) {
    let mut digits = itoa::Buffer::new();
    match value {
        Value::Str(s) => encode_command(&[b"SET", key, s.bytes(&mut digits)], out),
        Value::List(list) => {
            let mut items = Batches::new(out, b"RPUSH", key);
            list.for_each_node(|elements| {
                for element in elements {
                    items.push(&[element.bytes(&mut digits)]);
                }
            });
        }
        Value::Set(set) => {
            let mut items = Batches::new(out, b"SADD", key);
            for member in set.iter() {
                items.push(&[member.bytes(&mut digits)]);
            }
        }
        Value::ZSet(zset) => {
            let mut items = Batches::new(out, b"ZADD", key);
            zset.for_each(|member, score| items.push(&[format_f64(score).as_bytes(), member]));
        }
        Value::Hash(hash) => {
            let mut items = Batches::new(out, b"HMSET", key);
            for (field, value) in hash.iter() {
                items.push(&[field, value]);
            }
        }
        Value::Stream(stream) => write_stream(out, key, stream),
        Value::Cron(job) => {
            let argv = job.command(key);
            let args: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
            encode_command(&args, out);
        }
    }
    if expire_at != 0 {
        encode_command(&[b"PEXPIREAT", key, expire_at.to_string().as_bytes()], out);
    }
    if let Some(deadlines) = value.members().and_then(|m| m.deadlines()) {
        for (member, at) in deadlines.iter() {
            let at = at.to_string();
            encode_command(&[b"PEXPIREMEMBERAT", key, member, at.as_bytes()], out);
        }
    }
}

/// A stream: its entries, its IDs, then its groups with their pending entries and
/// consumers, as Redis 7.0 rewrites one.
fn write_stream(out: &mut Vec<u8>, key: &[u8], stream: &Stream) {
    for entry in stream.range(StreamId::MIN, StreamId::MAX, false) {
        let id = entry.id.to_string();
        let mut args: Vec<&[u8]> = vec![b"XADD", key, id.as_bytes()];
        for (field, value) in &entry.fields {
            args.extend([*field, *value]);
        }
        encode_command(&args, out);
    }
    if stream.is_empty() {
        // Redis's way to create an empty stream: add an entry and trim it away.
        encode_command(&[b"XADD", key, b"MAXLEN", b"0", b"0-1", b"x", b"y"], out);
    }
    let (last, added) = (stream.last_id.to_string(), stream.entries_added.to_string());
    let max_deleted = stream.max_deleted_id.to_string();
    encode_command(
        &[
            b"XSETID",
            key,
            last.as_bytes(),
            b"ENTRIESADDED",
            added.as_bytes(),
            b"MAXDELETEDID",
            max_deleted.as_bytes(),
        ],
        out,
    );
    for (name, group) in &stream.groups {
        let last_id = group.last_id.to_string();
        let read = group.entries_read.map_or(-1, |n| n as i64).to_string();
        encode_command(
            &[
                b"XGROUP",
                b"CREATE",
                key,
                name,
                last_id.as_bytes(),
                b"ENTRIESREAD",
                read.as_bytes(),
            ],
            out,
        );
        for (consumer_name, consumer) in &group.consumers {
            if consumer.pending.is_empty() {
                encode_command(
                    &[b"XGROUP", b"CREATECONSUMER", key, name, consumer_name],
                    out,
                );
                continue;
            }
            for id in &consumer.pending {
                let Some(pending) = group.pel.get(id) else {
                    continue;
                };
                let (id, time) = (id.to_string(), pending.delivered_at.to_string());
                let count = pending.deliveries.to_string();
                encode_command(
                    &[
                        b"XCLAIM",
                        key,
                        name,
                        consumer_name,
                        b"0",
                        id.as_bytes(),
                        b"TIME",
                        time.as_bytes(),
                        b"RETRYCOUNT",
                        count.as_bytes(),
                        b"JUSTID",
                        b"FORCE",
                    ],
                    out,
                );
            }
        }
    }
}

/// Items gathered into commands of at most [`ITEMS_PER_COMMAND`] each, every one
/// naming the same command and key (`RPUSH key ...`).
struct Batches<'o, 'k> {
    out: &'o mut Vec<u8>,
    command: &'static [u8],
    key: &'k [u8],
    items: Vec<Vec<u8>>,
    count: usize,
}

impl<'o, 'k> Batches<'o, 'k> {
    fn new(out: &'o mut Vec<u8>, command: &'static [u8], key: &'k [u8]) -> Self {
        Batches {
            out,
            command,
            key,
            items: Vec::new(),
            count: 0,
        }
    }

    /// One item: its parts (a member, or a score and a member).
    fn push(&mut self, parts: &[&[u8]]) {
        self.items.extend(parts.iter().map(|p| p.to_vec()));
        self.count += 1;
        if self.count == ITEMS_PER_COMMAND {
            self.emit();
        }
    }

    fn emit(&mut self) {
        if self.count == 0 {
            return;
        }
        let mut args: Vec<&[u8]> = vec![self.command, self.key];
        args.extend(self.items.iter().map(Vec::as_slice));
        encode_command(&args, self.out);
        self.items.clear();
        self.count = 0;
    }
}

impl Drop for Batches<'_, '_> {
    fn drop(&mut self) {
        self.emit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(out: &[u8]) -> Vec<Vec<String>> {
        let mut found = Vec::new();
        let mut text = std::str::from_utf8(out).unwrap().split("\r\n");
        while let Some(head) = text.next() {
            let Some(n) = head.strip_prefix('*') else {
                break;
            };
            let args = (0..n.parse::<usize>().unwrap())
                .map(|_| {
                    text.next();
                    text.next().unwrap().to_string()
                })
                .collect();
            found.push(args);
        }
        found
    }

    #[test]
    fn a_set_of_many_members_is_added_64_at_a_time_then_given_its_deadline() {
        let mut set = crate::types::set::Set::default();
        for i in 0..100 {
            set.insert(format!("m{i}").as_bytes(), 512);
        }
        let mut out = Vec::new();
        write_key(&mut out, b"k", &Value::Set(Box::new(set)), 1234);
        let found = commands(&out);
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(found[0].len(), 2 + 64);
        assert_eq!(found[1].len(), 2 + 36);
        assert_eq!(found[0][0], "SADD");
        assert_eq!(found[2], ["PEXPIREAT", "k", "1234"]);
    }
}
