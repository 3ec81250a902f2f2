//! Stream commands: the table of the family and what its handlers share (ID parsing,
//! looking streams up, writing entries).
//!
//! The handlers live in one module per kind of work:
//! - XADD, XTRIM, XDEL, XSETID and XLEN in [`write`];
//! - XRANGE and XREVRANGE in [`range`];
//! - XREAD and XREADGROUP, which may wait for entries, in [`read`];
//! - XGROUP's subcommands in [`groups`];
//! - XACK, XPENDING, XCLAIM and XAUTOCLAIM in [`pending`];
//! - XINFO's subcommands in [`info`];
//! - the effects replicas get for group reads and claims in [`effects`].
//!
//! Replies, error texts and the effects replicas get follow Redis 7.0: XADD propagates
//! the ID it chose and, after a `~` trim, what the trim did (`MAXLEN = <length>` or
//! `MINID = <first id>`); XREADGROUP and the claims propagate one idempotent XCLAIM
//! per entry they hand out (and XGROUP SETID when a NOACK read moved the group).
//!
//! Keyspace events (class `t`) are raised only for what changed, as in Redis: `xadd`
//! (then `xtrim` if its trim removed anything), `xtrim` and `xdel` when they removed
//! entries, `xsetid`, the `xgroup-*` events of XGROUP, and `xgroup-createconsumer`
//! when a read or a claim brings its consumer into being.

mod effects;
mod groups;
mod info;
mod pending;
mod range;
mod read;
mod write;

use super::table::{acl, flags, key_flags, Command, FindKeys, KeySpec};
use super::{args, errors, CmdError};
use crate::keyspace::Locked;
use crate::types::stream::{EntryRef, Stream, StreamId};
use crate::types::Value;
use crate::util::numbers::parse_i64;
use kvik_resp::ReplyWriter;

const READ_FAST: u32 = acl::STREAM | acl::READ | acl::FAST;
const READ_SLOW: u32 = acl::STREAM | acl::READ | acl::SLOW;
const WRITE_FAST: u32 = acl::STREAM | acl::WRITE | acl::FAST;
const WRITE_SLOW: u32 = acl::STREAM | acl::WRITE | acl::SLOW;

const RO: u32 = key_flags::RO;
const RO_ACCESS: u32 = key_flags::RO | key_flags::ACCESS;
const RW_UPDATE: u32 = key_flags::RW | key_flags::UPDATE;
const RW_DELETE: u32 = key_flags::RW | key_flags::DELETE;
const RW_INSERT: u32 = key_flags::RW | key_flags::INSERT;

/// XREAD's and XREADGROUP's keys: the first half of the arguments after STREAMS
/// (the IDs are the other half), searched for from `startfrom` so that a group or
/// consumer named "streams" is not taken for the keyword.
const fn streams_after_keyword(startfrom: i32) -> KeySpec {
    let half = FindKeys::Range {
        lastkey: -1,
        step: 1,
        limit: 2,
    };
    KeySpec::after_keyword("STREAMS", startfrom, half).flags(RO_ACCESS)
}

const RANDOM: &[&str] = &["nondeterministic_output"];

const GROUP_SUBCOMMANDS: &[Command] = &[
    Command::new("xgroup|create", -5, groups::create)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE_SLOW)
        .keys(2, 2, 1)
        .key_flags(RW_INSERT)
        .doc("stream", "5.0.0", "O(1)", "Create a consumer group."),
    Command::new("xgroup|setid", -5, groups::setid)
        .flags(flags::WRITE)
        .acl(WRITE_SLOW)
        .keys(2, 2, 1)
        .key_flags(RW_UPDATE)
        .doc(
            "stream",
            "5.0.0",
            "O(1)",
            "Set a consumer group to an arbitrary last delivered ID value.",
        ),
    Command::new("xgroup|destroy", 4, groups::destroy)
        .flags(flags::WRITE)
        .acl(WRITE_SLOW)
        .keys(2, 2, 1)
        .key_flags(RW_DELETE)
        .doc(
            "stream",
            "5.0.0",
            "O(N) where N is the number of entries in the group's pending entries list (PEL).",
            "Destroy a consumer group.",
        ),
    Command::new("xgroup|createconsumer", 5, groups::create_consumer)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE_SLOW)
        .keys(2, 2, 1)
        .key_flags(RW_INSERT)
        .doc(
            "stream",
            "6.2.0",
            "O(1)",
            "Create a consumer in a consumer group.",
        ),
    Command::new("xgroup|delconsumer", 5, groups::delete_consumer)
        .flags(flags::WRITE)
        .acl(WRITE_SLOW)
        .keys(2, 2, 1)
        .key_flags(RW_DELETE)
        .doc(
            "stream",
            "5.0.0",
            "O(1)",
            "Delete a consumer from a consumer group.",
        ),
    Command::new("xgroup|help", 2, groups::help)
        .flags(flags::LOADING | flags::STALE)
        .acl(acl::STREAM | acl::SLOW)
        .doc(
            "stream",
            "5.0.0",
            "O(1)",
            "Show helpful text about the different subcommands",
        ),
];

const INFO_SUBCOMMANDS: &[Command] = &[
    Command::new("xinfo|consumers", 4, info::consumers)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(2, 2, 1)
        .key_flags(RO_ACCESS)
        .tips(RANDOM)
        .doc(
            "stream",
            "5.0.0",
            "O(1)",
            "List the consumers in a consumer group",
        ),
    Command::new("xinfo|groups", 3, info::groups)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(2, 2, 1)
        .key_flags(RO_ACCESS)
        .doc(
            "stream",
            "5.0.0",
            "O(1)",
            "List the consumer groups of a stream",
        ),
    Command::new("xinfo|stream", -3, info::stream)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(2, 2, 1)
        .key_flags(RO_ACCESS)
        .doc("stream", "5.0.0", "O(1)", "Get information about a stream"),
    Command::new("xinfo|help", 2, info::help)
        .flags(flags::LOADING | flags::STALE)
        .acl(acl::STREAM | acl::SLOW)
        .doc(
            "stream",
            "5.0.0",
            "O(1)",
            "Show helpful text about the different subcommands",
        ),
];

pub const COMMANDS: &[Command] = &[
    Command::new("xadd", -5, write::xadd)
        .flags(flags::WRITE | flags::DENYOOM | flags::FAST)
        .acl(WRITE_FAST)
        .key_spec(KeySpec::range(1, 1, 1).flags(RW_UPDATE).notes(
            "UPDATE instead of INSERT because of the optional trimming feature",
        ))
        .tips(RANDOM)
        .doc("stream", "5.0.0", "O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.", "Appends a new entry to a stream"),
    Command::new("xlen", 2, write::xlen)
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, 1, 1)
        .key_flags(RO)
        .doc("stream", "5.0.0", "O(1)", "Return the number of entries in a stream"),
    Command::new("xrange", -4, range::xrange)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc("stream", "5.0.0", "O(N) with N being the number of elements being returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).", "Return a range of elements in a stream, with IDs matching the specified IDs interval"),
    Command::new("xrevrange", -4, range::xrevrange)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc("stream", "5.0.0", "O(N) with N being the number of elements returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).", "Return a range of elements in a stream, with IDs matching the specified IDs interval, in reverse order (from greater to smaller IDs) compared to XRANGE"),
    Command::new("xdel", -3, write::xdel)
        .flags(flags::WRITE | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(RW_DELETE)
        .doc("stream", "5.0.0", "O(1) for each single item to delete in the stream, regardless of the stream size.", "Removes the specified entries from the stream. Returns the number of items actually deleted, that may be different from the number of IDs passed in case certain IDs do not exist."),
    Command::new("xtrim", -4, write::xtrim)
        .flags(flags::WRITE)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .key_flags(RW_DELETE)
        .tips(RANDOM)
        .doc("stream", "5.0.0", "O(N), with N being the number of evicted entries. Constant times are very small however, since entries are organized in macro nodes containing multiple entries that can be released with a single deallocation.", "Trims the stream to (approximately if '~' is passed) a certain size"),
    Command::new("xsetid", -3, write::xsetid)
        .flags(flags::WRITE | flags::DENYOOM | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(RW_UPDATE)
        .doc("stream", "5.0.0", "O(1)", "An internal command for replicating stream values"),
    Command::new("xread", -4, read::read)
        .flags(flags::READONLY | flags::BLOCKING | flags::MOVABLE_KEYS)
        .acl(READ_SLOW | acl::BLOCKING)
        .key_spec(streams_after_keyword(1))
        .doc("stream", "5.0.0", "For each stream mentioned: O(N) with N being the number of elements being returned, it means that XREAD-ing with a fixed COUNT is O(1). Note that when the BLOCK option is used, XADD will pay O(M) time in order to serve the M clients blocked on the stream getting new data.", "Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block."),
    Command::new("xreadgroup", -7, read::read)
        .flags(flags::WRITE | flags::BLOCKING | flags::MOVABLE_KEYS)
        .acl(WRITE_SLOW | acl::BLOCKING)
        .key_spec(streams_after_keyword(4))
        .doc("stream", "5.0.0", "For each stream mentioned: O(M) with M being the number of elements returned. If M is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1). On the other side when XREADGROUP blocks, XADD will pay the O(N) time in order to serve the N clients blocked on the stream getting new data.", "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block."),
    Command::new("xgroup", -2, groups::help)
        .acl(acl::SLOW)
        .doc("stream", "5.0.0", "Depends on subcommand.", "A container for consumer groups commands")
        .subcommands(GROUP_SUBCOMMANDS),
    Command::new("xack", -4, pending::xack)
        .flags(flags::WRITE | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(RW_UPDATE)
        .doc("stream", "5.0.0", "O(1) for each message ID processed.", "Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group. Return value of the command is the number of messages successfully acknowledged, that is, the IDs we were actually able to resolve in the PEL."),
    Command::new("xpending", -3, pending::xpending)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .tips(RANDOM)
        .doc("stream", "5.0.0", "O(N) with N being the number of elements returned, so asking for a small fixed number of entries per call is O(1). O(M), where M is the total number of entries scanned when used with the IDLE filter. When the command returns just the summary and the list of consumers is small, it runs in O(1) time; otherwise, an additional O(N) time for iterating every consumer.", "Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged."),
    Command::new("xclaim", -6, pending::xclaim)
        .flags(flags::WRITE | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(RW_UPDATE)
        .tips(RANDOM)
        .doc("stream", "5.0.0", "O(log N) with N being the number of messages in the PEL of the consumer group.", "Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer."),
    Command::new("xautoclaim", -6, pending::xautoclaim)
        .flags(flags::WRITE | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(RW_DELETE)
        .tips(RANDOM)
        .doc("stream", "6.2.0", "O(1) if COUNT is small.", "Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer."),
    Command::new("xinfo", -2, info::help)
        .acl(acl::SLOW)
        .doc("stream", "5.0.0", "Depends on subcommand.", "A container for stream introspection commands")
        .subcommands(INFO_SUBCOMMANDS),
];

const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

/// An ID argument: `ms-seq`, or `ms` with `missing_seq` as its sequence; `-` and `+`
/// stand for the smallest and largest IDs unless `strict`.
pub fn parse_id(arg: &[u8], missing_seq: u64, strict: bool) -> Result<StreamId, CmdError> {
    match arg {
        b"-" | b"+" if strict => Err(INVALID_ID.into()),
        b"-" => Ok(StreamId::MIN),
        b"+" => Ok(StreamId::MAX),
        _ => parse_parts(arg, missing_seq, false)
            .map(|(id, _)| id)
            .ok_or_else(|| INVALID_ID.into()),
    }
}

/// XADD's ID: like a strict [`parse_id`], and `ms-*` leaves the sequence to be chosen
/// (the flag says whether the sequence was given).
pub fn parse_add_id(arg: &[u8]) -> Result<(StreamId, bool), CmdError> {
    if arg == b"-" || arg == b"+" {
        return Err(INVALID_ID.into());
    }
    parse_parts(arg, 0, true).ok_or_else(|| INVALID_ID.into())
}

fn parse_parts(arg: &[u8], missing_seq: u64, star_seq: bool) -> Option<(StreamId, bool)> {
    if arg.len() > 127 {
        return None;
    }
    let (ms, seq) = match arg.iter().position(|&b| b == b'-') {
        Some(dash) => (&arg[..dash], Some(&arg[dash + 1..])),
        None => (arg, None),
    };
    let ms = parse_u64_like_c(ms)?;
    match seq {
        Some(b"*") if star_seq => Some((StreamId::new(ms, 0), false)),
        Some(seq) => Some((StreamId::new(ms, parse_u64_like_c(seq)?), true)),
        None => Some((StreamId::new(ms, missing_seq), true)),
    }
}

/// An unsigned number as Redis reads ID parts: a plain integer, or failing that what
/// C's `strtoull` accepts whole (leading spaces, a sign; a minus wraps around).
fn parse_u64_like_c(s: &[u8]) -> Option<u64> {
    if let Some(n) = parse_i64(s) {
        return u64::try_from(n).ok();
    }
    let text = std::str::from_utf8(s).ok()?;
    let text = text.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (negative, digits) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(if negative { n.wrapping_neg() } else { n })
}

/// A COUNT-like integer argument.
fn int_arg(arg: &[u8]) -> Result<i64, CmdError> {
    args::int(arg)
}

/// The stream at `key`, if any; another type is WRONGTYPE.
pub fn stream_mut<'l>(
    keys: &'l mut Locked<'_>,
    key: &[u8],
) -> Result<Option<&'l mut Stream>, CmdError> {
    match keys.get(key) {
        None => Ok(None),
        Some(entry) => match &mut entry.value {
            Value::Stream(stream) => Ok(Some(stream)),
            _ => Err(errors::WRONGTYPE.into()),
        },
    }
}

/// The stream at `key` for a reading command (counts a keyspace hit or miss).
pub fn stream_read<'l>(
    keys: &'l mut Locked<'_>,
    key: &[u8],
) -> Result<Option<&'l mut Stream>, CmdError> {
    match keys.read(key) {
        None => Ok(None),
        Some(entry) => match &mut entry.value {
            Value::Stream(stream) => Ok(Some(stream)),
            _ => Err(errors::WRONGTYPE.into()),
        },
    }
}

pub fn write_id(out: &mut ReplyWriter, id: StreamId) {
    out.bulk(id.to_string().as_bytes());
}

/// `[id, [field, value, ...]]`
pub fn write_entry(out: &mut ReplyWriter, entry: &EntryRef<'_>) {
    out.array(2);
    write_id(out, entry.id);
    write_fields(out, entry);
}

fn write_fields(out: &mut ReplyWriter, entry: &EntryRef<'_>) {
    out.array(entry.fields.len() * 2);
    for (field, value) in &entry.fields {
        out.bulk(field);
        out.bulk(value);
    }
}

pub fn write_entries<'e>(out: &mut ReplyWriter, entries: &[EntryRef<'e>]) {
    out.array(entries.len());
    for entry in entries {
        write_entry(out, entry);
    }
}

/// The ID as an argument of a propagated command.
fn id_arg(id: StreamId) -> Vec<u8> {
    id.to_string().into_bytes()
}
