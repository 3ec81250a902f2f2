//! Set commands: the table of the family and what its handlers share.
//!
//! The handlers live in one module per kind of work:
//! - [`members`]: adding, removing and testing members (SADD, SREM, SISMEMBER,
//!   SMISMEMBER, SCARD, SMEMBERS, SMOVE);
//! - [`random`]: random members (SPOP, SRANDMEMBER);
//! - [`algebra`]: intersections, unions and differences, and their STORE forms;
//! - [`scan`]: iterating a set with SSCAN.
//!
//! Every reply, error text, encoding and propagated effect follows Redis 7.0. A
//! command that empties a set deletes its key. Keyspace hits and misses count each
//! key read the way Redis reads it: the sources of SINTERSTORE and the like count,
//! the keys SADD, SREM, SPOP and SMOVE modify do not.

mod algebra;
mod members;
mod random;
mod scan;

use super::shared;
use super::table::{acl, flags, key_flags, Command};
use super::{errors, CmdError, Ctx};
use crate::keyspace::Locked;
use crate::types::set::{MemberRef, Set};
use crate::types::Value;
use kvik_resp::ReplyWriter;

const SET: u32 = acl::SET;
const READ_FAST: u32 = SET | acl::READ | acl::FAST;
const READ_SLOW: u32 = SET | acl::READ | acl::SLOW;
const WRITE_FAST: u32 = SET | acl::WRITE | acl::FAST;
const WRITE_SLOW: u32 = SET | acl::WRITE | acl::SLOW;

const RO_ACCESS: u32 = key_flags::RO | key_flags::ACCESS;
/// Commands with two kinds of keys: Redis gives each kind its own key spec; the one
/// spec kvik's table holds is Redis's first (the destination for STORE forms).
const STORE_KEYS: u32 = key_flags::OW | key_flags::UPDATE;

const UNORDERED: &[&str] = &["nondeterministic_output_order"];
const RANDOM: &[&str] = &["nondeterministic_output"];

// Complexities as COMMAND DOCS words them.
const INTER_COMPLEXITY: &str =
    "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.";
const ALL_SETS_COMPLEXITY: &str = "O(N) where N is the total number of elements in all given sets.";
const SSCAN_COMPLEXITY: &str = "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..";

pub const COMMANDS: &[Command] = &[
    Command::new("sadd", -3, members::sadd)
        .flags(flags::WRITE | flags::DENYOOM | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::INSERT)
        .doc(
            "set",
            "1.0.0",
            "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
            "Add one or more members to a set",
        )
        .elements(shared::one_element_per_arg),
    Command::new("srem", -3, members::srem)
        .flags(flags::WRITE | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::DELETE)
        .doc(
            "set",
            "1.0.0",
            "O(N) where N is the number of members to be removed.",
            "Remove one or more members from a set",
        )
        .elements(shared::one_removed_element_per_arg),
    Command::new("smembers", 2, members::smembers)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .tips(UNORDERED)
        .doc(
            "set",
            "1.0.0",
            "O(N) where N is the set cardinality.",
            "Get all the members in a set",
        ),
    Command::new("sismember", 3, members::sismember)
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RO)
        .doc(
            "set",
            "1.0.0",
            "O(1)",
            "Determine if a given value is a member of a set",
        ),
    Command::new("smismember", -3, members::smismember)
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc(
            "set",
            "6.2.0",
            "O(N) where N is the number of elements being checked for membership",
            "Returns the membership associated with the given elements for a set",
        ),
    Command::new("scard", 2, members::scard)
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RO)
        .doc("set", "1.0.0", "O(1)", "Get the number of members in a set"),
    Command::new("smove", 4, members::smove)
        .flags(flags::WRITE | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::ACCESS | key_flags::DELETE)
        .keys(2, 2, 1)
        .key_flags(key_flags::RW | key_flags::INSERT)
        .doc(
            "set",
            "1.0.0",
            "O(1)",
            "Move a member from one set to another",
        ),
    Command::new("spop", -2, random::spop)
        .flags(flags::WRITE | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::ACCESS | key_flags::DELETE)
        .tips(RANDOM)
        .doc(
            "set",
            "1.0.0",
            "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.",
            "Remove and return one or multiple random members from a set",
        ),
    Command::new("srandmember", -2, random::srandmember)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .tips(RANDOM)
        .doc(
            "set",
            "1.0.0",
            "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.",
            "Get one or multiple random members from a set",
        ),
    Command::new("sinter", -2, algebra::sinter)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, -1, 1)
        .key_flags(RO_ACCESS)
        .tips(UNORDERED)
        .doc("set", "1.0.0", INTER_COMPLEXITY, "Intersect multiple sets"),
    Command::new("sintercard", -3, algebra::sintercard)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .numkeys(1, 1)
        .key_flags(RO_ACCESS)
        .doc(
            "set",
            "7.0.0",
            INTER_COMPLEXITY,
            "Intersect multiple sets and return the cardinality of the result",
        ),
    Command::new("sinterstore", -3, algebra::sinterstore)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::UPDATE)
        .keys(2, -1, 1)
        .key_flags(key_flags::RO | key_flags::ACCESS)
        .doc(
            "set",
            "1.0.0",
            INTER_COMPLEXITY,
            "Intersect multiple sets and store the resulting set in a key",
        ),
    Command::new("sunion", -2, algebra::sunion)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, -1, 1)
        .key_flags(RO_ACCESS)
        .tips(UNORDERED)
        .doc("set", "1.0.0", ALL_SETS_COMPLEXITY, "Add multiple sets"),
    Command::new("sunionstore", -3, algebra::sunionstore)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .key_flags(STORE_KEYS)
        .keys(2, -1, 1)
        .key_flags(key_flags::RO | key_flags::ACCESS)
        .doc(
            "set",
            "1.0.0",
            ALL_SETS_COMPLEXITY,
            "Add multiple sets and store the resulting set in a key",
        ),
    Command::new("sdiff", -2, algebra::sdiff)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, -1, 1)
        .key_flags(RO_ACCESS)
        .tips(UNORDERED)
        .doc("set", "1.0.0", ALL_SETS_COMPLEXITY, "Subtract multiple sets"),
    Command::new("sdiffstore", -3, algebra::sdiffstore)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .key_flags(STORE_KEYS)
        .keys(2, -1, 1)
        .key_flags(key_flags::RO | key_flags::ACCESS)
        .doc(
            "set",
            "1.0.0",
            ALL_SETS_COMPLEXITY,
            "Subtract multiple sets and store the resulting set in a key",
        ),
    Command::new("sscan", -3, scan::sscan)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .tips(RANDOM)
        .doc(
            "set",
            "2.8.0",
            SSCAN_COMPLEXITY,
            "Incrementally iterate Set elements",
        ),
];

/// The set held by a value, or WRONGTYPE.
fn as_set(value: &mut Value) -> Result<&mut Set, CmdError> {
    match value {
        Value::Set(s) => Ok(s),
        _ => Err(errors::WRONGTYPE.into()),
    }
}

/// The set at `key` for a reading command: `Ok(None)` if absent, WRONGTYPE if the key
/// holds something else. Counts a keyspace hit or miss.
fn read_set<'k>(keys: &'k mut Locked<'_>, key: &[u8]) -> Result<Option<&'k Set>, CmdError> {
    keys.read(key)
        .map(|entry| as_set(&mut entry.value).map(|s| &*s))
        .transpose()
}

/// The set at `key` for a writing command (no hit or miss counted).
fn write_set<'k>(keys: &'k mut Locked<'_>, key: &[u8]) -> Result<Option<&'k mut Set>, CmdError> {
    keys.get(key).map(|e| as_set(&mut e.value)).transpose()
}

/// `set-max-intset-entries` as it is now.
fn max_intset(ctx: &Ctx) -> usize {
    ctx.server.hot.encoding().max_intset()
}

fn reply_member(out: &mut ReplyWriter, member: MemberRef) {
    match member {
        MemberRef::Int(v) => out.bulk_int(v),
        MemberRef::Bytes(b) => out.bulk(b),
    }
}

/// Members as a set reply (RESP2: an array).
fn reply_set<'m>(
    out: &mut ReplyWriter,
    len: usize,
    members: impl IntoIterator<Item = MemberRef<'m>>,
) {
    out.set(len);
    members.into_iter().for_each(|m| reply_member(out, m));
}
