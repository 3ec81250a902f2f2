//! List commands: the table of the family and what its handlers share.
//!
//! The handlers live by kind of work:
//! - [`push`]: adding at the ends (LPUSH, RPUSH, LPUSHX, RPUSHX);
//! - [`pop`]: taking from the ends (LPOP, RPOP, LMPOP) and moving between lists
//!   (LMOVE, RPOPLPUSH), with the pieces the blocking commands reuse;
//! - [`read`]: LLEN, LINDEX, LRANGE, LPOS;
//! - [`edit`]: changes inside a list (LSET, LTRIM, LREM, LINSERT);
//! - [`blocking`]: BLPOP, BRPOP, BLMPOP, BLMOVE, BRPOPLPUSH, which wait for a list.
//!
//! Replies, error texts, the order of checks and the effects follow Redis 7.0. A list
//! is never left empty: the command that takes its last element deletes the key.

mod blocking;
mod edit;
mod pop;
mod push;
mod read;

pub use pop::{first_list, move_element, pop_and_reply, pop_with_key, MultiPop};
pub use push::push_items;

use super::shared::settle_collection;
use super::table::{acl, flags, key_flags as kf, Command};
use super::{errors, CmdError, Ctx};
use crate::keyspace::Locked;
use crate::notify::class;
use crate::types::list::{End, List, NodeLimit, Reading};
use crate::types::Value;
use crate::util::numbers::parse_i64;

const LIST: u32 = acl::LIST;
const WRITE_FAST: u32 = LIST | acl::WRITE | acl::FAST;
const WRITE_SLOW: u32 = LIST | acl::WRITE | acl::SLOW;
const READ_SLOW: u32 = LIST | acl::READ | acl::SLOW;
const BLOCKING_ACL: u32 = WRITE_SLOW | acl::BLOCKING;
/// BLPOP, BRPOP, BLMOVE and BRPOPLPUSH may not run in scripts (BLMPOP, newer, may).
const BLOCKING_FLAGS: u32 = flags::WRITE | flags::NOSCRIPT | flags::BLOCKING;

const PUSH_COMPLEXITY: &str = "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.";
const POP_COMPLEXITY: &str = "O(N) where N is the number of elements returned";
const LINDEX_COMPLEXITY: &str = "O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).";
const LSET_COMPLEXITY: &str = "O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).";
const LRANGE_COMPLEXITY: &str = "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.";
const LINSERT_COMPLEXITY: &str = "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).";
const LPOS_COMPLEXITY: &str = "O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.";
const BPOP_COMPLEXITY: &str = "O(N) where N is the number of provided keys.";
const BMOVE_SUMMARY: &str =
    "Pop an element from a list, push it to another list and return it; or block until one is available";

/// A command that adds elements: `write denyoom fast`, key `RW insert`.
const fn pusher(name: &'static str, handler: super::table::Handler) -> Command {
    Command::new(name, -3, handler)
        .flags(flags::WRITE | flags::DENYOOM | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(kf::RW | kf::INSERT)
}

/// LPOP or RPOP: `write fast`, key `RW access delete`.
const fn popper(name: &'static str, handler: super::table::Handler) -> Command {
    Command::new(name, -2, handler)
        .flags(flags::WRITE | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(kf::RW | kf::ACCESS | kf::DELETE)
}

pub const COMMANDS: &[Command] = &[
    pusher("lpush", push::lpush).doc(
        "list",
        "1.0.0",
        PUSH_COMPLEXITY,
        "Prepend one or multiple elements to a list",
    ),
    pusher("rpush", push::rpush).doc(
        "list",
        "1.0.0",
        PUSH_COMPLEXITY,
        "Append one or multiple elements to a list",
    ),
    pusher("lpushx", push::lpushx).doc(
        "list",
        "2.2.0",
        PUSH_COMPLEXITY,
        "Prepend an element to a list, only if the list exists",
    ),
    pusher("rpushx", push::rpushx).doc(
        "list",
        "2.2.0",
        PUSH_COMPLEXITY,
        "Append an element to a list, only if the list exists",
    ),
    popper("lpop", pop::lpop).doc(
        "list",
        "1.0.0",
        POP_COMPLEXITY,
        "Remove and get the first elements in a list",
    ),
    popper("rpop", pop::rpop).doc(
        "list",
        "1.0.0",
        POP_COMPLEXITY,
        "Remove and get the last elements in a list",
    ),
    Command::new("lmpop", -4, pop::lmpop)
        .flags(flags::WRITE)
        .acl(WRITE_SLOW)
        .numkeys(1, 1)
        .key_flags(kf::RW | kf::ACCESS | kf::DELETE)
        .doc(
            "list",
            "7.0.0",
            "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
            "Pop elements from a list",
        ),
    Command::new("lmove", 5, pop::lmove)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .key_flags(kf::RW | kf::ACCESS | kf::DELETE)
        .keys(2, 2, 1)
        .key_flags(kf::RW | kf::INSERT)
        .doc(
            "list",
            "6.2.0",
            "O(1)",
            "Pop an element from a list, push it to another list and return it",
        ),
    Command::new("rpoplpush", 3, pop::rpoplpush)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .key_flags(kf::RW | kf::ACCESS | kf::DELETE)
        .keys(2, 2, 1)
        .key_flags(kf::RW | kf::INSERT)
        .doc(
            "list",
            "1.2.0",
            "O(1)",
            "Remove the last element in a list, prepend it to another list and return it",
        ),
    Command::new("blpop", -3, blocking::blpop)
        .flags(BLOCKING_FLAGS)
        .acl(BLOCKING_ACL)
        .keys(1, -2, 1)
        .key_flags(kf::RW | kf::ACCESS | kf::DELETE)
        .doc(
            "list",
            "2.0.0",
            BPOP_COMPLEXITY,
            "Remove and get the first element in a list, or block until one is available",
        ),
    Command::new("brpop", -3, blocking::brpop)
        .flags(BLOCKING_FLAGS)
        .acl(BLOCKING_ACL)
        .keys(1, -2, 1)
        .key_flags(kf::RW | kf::ACCESS | kf::DELETE)
        .doc(
            "list",
            "2.0.0",
            BPOP_COMPLEXITY,
            "Remove and get the last element in a list, or block until one is available",
        ),
    Command::new("blmpop", -5, blocking::blmpop)
        .flags(flags::WRITE | flags::BLOCKING)
        .acl(BLOCKING_ACL)
        .numkeys(2, 1)
        .key_flags(kf::RW | kf::ACCESS | kf::DELETE)
        .doc(
            "list",
            "7.0.0",
            "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
            "Pop elements from a list, or block until one is available",
        ),
    Command::new("blmove", 6, blocking::blmove)
        .flags(BLOCKING_FLAGS | flags::DENYOOM)
        .acl(BLOCKING_ACL)
        .keys(1, 1, 1)
        .key_flags(kf::RW | kf::ACCESS | kf::DELETE)
        .keys(2, 2, 1)
        .key_flags(kf::RW | kf::INSERT)
        .doc("list", "6.2.0", "O(1)", BMOVE_SUMMARY),
    Command::new("brpoplpush", 4, blocking::brpoplpush)
        .flags(BLOCKING_FLAGS | flags::DENYOOM)
        .acl(BLOCKING_ACL)
        .keys(1, 1, 1)
        .key_flags(kf::RW | kf::ACCESS | kf::DELETE)
        .keys(2, 2, 1)
        .key_flags(kf::RW | kf::INSERT)
        .doc("list", "2.2.0", "O(1)", BMOVE_SUMMARY),
    Command::new("llen", 2, read::llen)
        .flags(flags::READONLY | flags::FAST)
        .acl(LIST | acl::READ | acl::FAST)
        .keys(1, 1, 1)
        .key_flags(kf::RO)
        .doc("list", "1.0.0", "O(1)", "Get the length of a list"),
    Command::new("lindex", 3, read::lindex)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .doc(
            "list",
            "1.0.0",
            LINDEX_COMPLEXITY,
            "Get an element from a list by its index",
        ),
    Command::new("lrange", 4, read::lrange)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .doc(
            "list",
            "1.0.0",
            LRANGE_COMPLEXITY,
            "Get a range of elements from a list",
        ),
    Command::new("lpos", -3, read::lpos)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .doc(
            "list",
            "6.0.6",
            LPOS_COMPLEXITY,
            "Return the index of matching elements on a list",
        ),
    Command::new("lset", 4, edit::lset)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .key_flags(kf::RW | kf::UPDATE)
        .doc(
            "list",
            "1.0.0",
            LSET_COMPLEXITY,
            "Set the value of an element in a list by its index",
        ),
    Command::new("ltrim", 4, edit::ltrim)
        .flags(flags::WRITE)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .key_flags(kf::RW | kf::DELETE)
        .doc(
            "list",
            "1.0.0",
            "O(N) where N is the number of elements to be removed by the operation.",
            "Trim a list to the specified range",
        ),
    Command::new("lrem", 4, edit::lrem)
        .flags(flags::WRITE)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .key_flags(kf::RW | kf::DELETE)
        .doc(
            "list",
            "1.0.0",
            "O(N+M) where N is the length of the list and M is the number of elements removed.",
            "Remove elements from a list",
        ),
    Command::new("linsert", 5, edit::linsert)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .key_flags(kf::RW | kf::INSERT)
        .doc(
            "list",
            "2.2.0",
            LINSERT_COMPLEXITY,
            "Insert an element before or after another element in a list",
        ),
];

/// The list at `key` for a command that changes it: `Ok(None)` if there is none,
/// WRONGTYPE if the key holds another type. Write lookups count no keyspace hits or
/// misses, as in Redis.
pub(crate) fn list_mut<'k>(
    keys: &'k mut Locked<'_>,
    key: &[u8],
) -> Result<Option<&'k mut List>, CmdError> {
    match keys.get(key) {
        None => Ok(None),
        Some(entry) => match &mut entry.value {
            Value::List(list) => Ok(Some(list)),
            _ => Err(errors::WRONGTYPE.into()),
        },
    }
}

/// The list at `key` for a command that only reads it, counting a keyspace hit or
/// miss as Redis does for reads (a key of another type is a hit, then WRONGTYPE).
/// Compressed nodes the command reads are decompressed only until it is done.
fn read_list<'k>(keys: &'k mut Locked<'_>, key: &[u8]) -> Result<Option<Reading<'k>>, CmdError> {
    keys.read(key)
        .map(|entry| match &mut entry.value {
            Value::List(list) => Ok(list.reading()),
            _ => Err(errors::WRONGTYPE.into()),
        })
        .transpose()
}

/// Record that `changes` elements of the list at `key` were added, removed or
/// replaced in place by the command raising keyspace `event`: a list left empty is
/// deleted (a `del` event follows), any other is stamped as modified. Redis counts
/// one change per element, and so does the dirty counter here.
fn commit(keys: &mut Locked<'_>, key: &[u8], changes: usize, emptied: bool, event: &str) {
    if changes == 0 {
        return;
    }
    keys.notify(class::LIST, event, key);
    settle_collection(keys, key, emptied);
    keys.add_dirty(changes as u64 - 1);
}

/// The events of pushes and pops at each end.
fn push_event(end: End) -> &'static str {
    match end {
        End::Head => "lpush",
        End::Tail => "rpush",
    }
}

fn pop_event(end: End) -> &'static str {
    match end {
        End::Head => "lpop",
        End::Tail => "rpop",
    }
}

/// The node limit `list-max-listpack-size` currently sets.
fn node_limit(ctx: &Ctx) -> NodeLimit {
    ctx.server.hot.encoding().list_node()
}

/// LEFT or RIGHT, in any case; anything else is a syntax error.
fn parse_end(arg: &[u8]) -> Result<End, CmdError> {
    if arg.eq_ignore_ascii_case(b"left") {
        Ok(End::Head)
    } else if arg.eq_ignore_ascii_case(b"right") {
        Ok(End::Tail)
    } else {
        Err(errors::SYNTAX.into())
    }
}

/// An integer of at least `min`; anything else (not a number included) is `err`, the
/// way Redis's range-checked argument parsing answers.
fn int_at_least(arg: &[u8], min: i64, err: &'static str) -> Result<i64, CmdError> {
    parse_i64(arg)
        .filter(|&n| n >= min)
        .ok_or_else(|| err.into())
}
