//! Sorted-set commands: the table of the family and what its handlers share.
//!
//! The handlers live in one module per kind of work:
//! - ZADD, ZINCRBY and ZREM in [`add`];
//! - single lookups and counts (ZCARD, ZSCORE, ZMSCORE, ZRANK, ZREVRANK, ZCOUNT,
//!   ZLEXCOUNT) in [`read`];
//! - the ZRANGE family, ZRANGESTORE and the ZREMRANGEBY commands in [`range`];
//! - ZPOPMIN, ZPOPMAX and ZMPOP, and the popping the blocking forms reuse, in [`pop`];
//! - BZPOPMIN, BZPOPMAX and BZMPOP, which wait for a key to get members, in
//!   [`blocking`];
//! - ZRANDMEMBER in [`random`];
//! - ZUNION, ZINTER, ZDIFF, ZINTERCARD and the STORE forms in [`combine`];
//! - ZSCAN in [`scan`].
//!
//! Replies, error texts, encodings and propagated effects follow Redis 7.0. The
//! effects that are not the command itself: ZMPOP and BZMPOP propagate as ZPOPMIN or
//! ZPOPMAX with the number of members they took, BZPOPMIN and BZPOPMAX as ZPOPMIN or
//! ZPOPMAX without one.

mod add;
pub(crate) use add::zadd;
mod blocking;
mod combine;
pub mod pop;
mod random;
mod range;
mod read;
mod scan;

use super::shared;
use super::shared::settle_collection;
use super::table::{acl, flags, key_flags, Command};
use super::{errors, CmdError};
use crate::keyspace::Locked;
use crate::notify::class;
use crate::server::Server;
use crate::types::zset::{Limits, ZSet};
use crate::types::Value;
use crate::util::numbers::write_f64;
use kvik_resp::ReplyWriter;

const ZS: u32 = acl::SORTEDSET;
const READ_FAST: u32 = ZS | acl::READ | acl::FAST;
const READ_SLOW: u32 = ZS | acl::READ | acl::SLOW;
const WRITE_FAST: u32 = ZS | acl::WRITE | acl::FAST;
const WRITE_SLOW: u32 = ZS | acl::WRITE | acl::SLOW;
const BLOCKING_FAST: u32 = WRITE_FAST | acl::BLOCKING;

const RO: u32 = key_flags::RO;
const RO_ACCESS: u32 = key_flags::RO | key_flags::ACCESS;
const RW_DELETE: u32 = key_flags::RW | key_flags::DELETE;
const RW_POP: u32 = key_flags::RW | key_flags::ACCESS | key_flags::DELETE;
const OW_UPDATE: u32 = key_flags::OW | key_flags::UPDATE;

const RANDOM: &[&str] = &["nondeterministic_output"];

// Complexities as COMMAND DOCS words them.
const LOG_N: &str = "O(log(N)) with N being the number of elements in the sorted set.";
const RANGE: &str = "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.";
const RANGE_BY: &str = "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).";
const REMOVE_RANGE: &str = "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.";
const MPOP: &str = "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.";
const POP: &str = "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.";
const UNION: &str = "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.";
const INTER: &str = "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.";
const DIFF: &str = "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.";

pub const COMMANDS: &[Command] = &[
    Command::new("zadd", -4, add::zadd)
        .flags(flags::WRITE | flags::DENYOOM | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::UPDATE)
        .doc("sorted-set", "1.2.0", "O(log(N)) for each item added, where N is the number of elements in the sorted set.", "Add one or more members to a sorted set, or update its score if it already exists")
        .elements(add::zadd_elements),
    Command::new("zincrby", 4, add::zincrby)
        .flags(flags::WRITE | flags::DENYOOM | flags::FAST | flags::MERGES_AS_COUNTER)
        .counts_member(3)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::ACCESS | key_flags::UPDATE)
        .doc("sorted-set", "1.2.0", "O(log(N)) where N is the number of elements in the sorted set.", "Increment the score of a member in a sorted set")
        .elements(shared::value_then_element),
    Command::new("zrem", -3, add::zrem)
        .flags(flags::WRITE | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(RW_DELETE)
        .doc("sorted-set", "1.2.0", "O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.", "Remove one or more members from a sorted set")
        .elements(shared::one_removed_element_per_arg),
    Command::new("zcard", 2, read::zcard)
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, 1, 1)
        .key_flags(RO)
        .doc("sorted-set", "1.2.0", "O(1)", "Get the number of members in a sorted set"),
    Command::new("zscore", 3, read::zscore)
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc("sorted-set", "1.2.0", "O(1)", "Get the score associated with the given member in a sorted set"),
    Command::new("zmscore", -3, read::zmscore)
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc("sorted-set", "6.2.0", "O(N) where N is the number of members being requested.", "Get the score associated with the given members in a sorted set"),
    Command::new("zrank", 3, read::zrank)
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc("sorted-set", "2.0.0", "O(log(N))", "Determine the index of a member in a sorted set"),
    Command::new("zrevrank", 3, read::zrevrank)
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc("sorted-set", "2.0.0", "O(log(N))", "Determine the index of a member in a sorted set, with scores ordered from high to low"),
    Command::new("zcount", 4, read::zcount)
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc("sorted-set", "2.0.0", LOG_N, "Count the members in a sorted set with scores within the given values"),
    Command::new("zlexcount", 4, read::zlexcount)
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc("sorted-set", "2.8.9", LOG_N, "Count the number of members in a sorted set between a given lexicographical range"),
    Command::new("zrange", -4, range::zrange)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc("sorted-set", "1.2.0", RANGE, "Return a range of members in a sorted set"),
    Command::new("zrangestore", -5, range::zrangestore)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .key_flags(OW_UPDATE)
        .keys(2, 2, 1)
        .key_flags(RO_ACCESS)
        .doc("sorted-set", "6.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key.", "Store a range of members from sorted set into another key"),
    Command::new("zrevrange", -4, range::zrevrange)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc("sorted-set", "1.2.0", RANGE, "Return a range of members in a sorted set, by index, with scores ordered from high to low"),
    Command::new("zrangebyscore", -4, range::zrangebyscore)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc("sorted-set", "1.0.5", RANGE_BY, "Return a range of members in a sorted set, by score"),
    Command::new("zrevrangebyscore", -4, range::zrevrangebyscore)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc("sorted-set", "2.2.0", RANGE_BY, "Return a range of members in a sorted set, by score, with scores ordered from high to low"),
    Command::new("zrangebylex", -4, range::zrangebylex)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc("sorted-set", "2.8.9", RANGE_BY, "Return a range of members in a sorted set, by lexicographical range"),
    Command::new("zrevrangebylex", -4, range::zrevrangebylex)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc("sorted-set", "2.8.9", RANGE_BY, "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings."),
    Command::new("zremrangebyrank", 4, range::zremrangebyrank)
        .flags(flags::WRITE)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .key_flags(RW_DELETE)
        .doc("sorted-set", "2.0.0", REMOVE_RANGE, "Remove all members in a sorted set within the given indexes"),
    Command::new("zremrangebyscore", 4, range::zremrangebyscore)
        .flags(flags::WRITE)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .key_flags(RW_DELETE)
        .doc("sorted-set", "1.2.0", REMOVE_RANGE, "Remove all members in a sorted set within the given scores"),
    Command::new("zremrangebylex", 4, range::zremrangebylex)
        .flags(flags::WRITE)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .key_flags(RW_DELETE)
        .doc("sorted-set", "2.8.9", REMOVE_RANGE, "Remove all members in a sorted set between the given lexicographical range"),
    Command::new("zpopmin", -2, pop::zpopmin)
        .flags(flags::WRITE | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(RW_POP)
        .doc("sorted-set", "5.0.0", POP, "Remove and return members with the lowest scores in a sorted set"),
    Command::new("zpopmax", -2, pop::zpopmax)
        .flags(flags::WRITE | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(RW_POP)
        .doc("sorted-set", "5.0.0", POP, "Remove and return members with the highest scores in a sorted set"),
    Command::new("zmpop", -4, pop::zmpop)
        .flags(flags::WRITE)
        .acl(WRITE_SLOW)
        .numkeys(1, 1)
        .key_flags(RW_POP)
        .doc("sorted-set", "7.0.0", MPOP, "Remove and return members with scores in a sorted set"),
    Command::new("bzpopmin", -3, blocking::bzpopmin)
        .flags(flags::WRITE | flags::NOSCRIPT | flags::BLOCKING | flags::FAST)
        .acl(BLOCKING_FAST)
        .keys(1, -2, 1)
        .key_flags(RW_POP)
        .doc("sorted-set", "5.0.0", LOG_N, "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available"),
    Command::new("bzpopmax", -3, blocking::bzpopmax)
        .flags(flags::WRITE | flags::NOSCRIPT | flags::BLOCKING | flags::FAST)
        .acl(BLOCKING_FAST)
        .keys(1, -2, 1)
        .key_flags(RW_POP)
        .doc("sorted-set", "5.0.0", LOG_N, "Remove and return the member with the highest score from one or more sorted sets, or block until one is available"),
    Command::new("bzmpop", -5, blocking::bzmpop)
        .flags(flags::WRITE | flags::BLOCKING)
        .acl(WRITE_SLOW | acl::BLOCKING)
        .numkeys(2, 1)
        .key_flags(RW_POP)
        .doc("sorted-set", "7.0.0", MPOP, "Remove and return members with scores in a sorted set or block until one is available"),
    Command::new("zrandmember", -2, random::zrandmember)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .tips(RANDOM)
        .doc("sorted-set", "6.2.0", "O(N) where N is the number of elements returned", "Get one or multiple random elements from a sorted set"),
    Command::new("zunion", -3, combine::zunion)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .numkeys(1, 1)
        .key_flags(RO_ACCESS)
        .doc("sorted-set", "6.2.0", UNION, "Add multiple sorted sets"),
    Command::new("zinter", -3, combine::zinter)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .numkeys(1, 1)
        .key_flags(RO_ACCESS)
        .doc("sorted-set", "6.2.0", INTER, "Intersect multiple sorted sets"),
    Command::new("zdiff", -3, combine::zdiff)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .numkeys(1, 1)
        .key_flags(RO_ACCESS)
        .doc("sorted-set", "6.2.0", DIFF, "Subtract multiple sorted sets"),
    Command::new("zintercard", -3, combine::zintercard)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .numkeys(1, 1)
        .key_flags(RO_ACCESS)
        .doc("sorted-set", "7.0.0", "O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets.", "Intersect multiple sorted sets and return the cardinality of the result"),
    // The STORE forms: the destination, then the counted inputs.
    Command::new("zunionstore", -4, combine::zunionstore)
        .flags(flags::WRITE | flags::DENYOOM | flags::MOVABLE_KEYS)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .key_flags(OW_UPDATE)
        .numkeys(2, 1)
        .key_flags(RO_ACCESS)
        .doc("sorted-set", "2.0.0", "O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.", "Add multiple sorted sets and store the resulting sorted set in a new key"),
    Command::new("zinterstore", -4, combine::zinterstore)
        .flags(flags::WRITE | flags::DENYOOM | flags::MOVABLE_KEYS)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .key_flags(OW_UPDATE)
        .numkeys(2, 1)
        .key_flags(RO_ACCESS)
        .doc("sorted-set", "2.0.0", INTER, "Intersect multiple sorted sets and store the resulting sorted set in a new key"),
    Command::new("zdiffstore", -4, combine::zdiffstore)
        .flags(flags::WRITE | flags::DENYOOM | flags::MOVABLE_KEYS)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .key_flags(OW_UPDATE)
        .numkeys(2, 1)
        .key_flags(RO_ACCESS)
        .doc("sorted-set", "6.2.0", DIFF, "Subtract multiple sorted sets and store the resulting sorted set in a new key"),
    Command::new("zscan", -3, scan::zscan)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .tips(RANDOM)
        .doc("sorted-set", "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..", "Incrementally iterate sorted sets elements and associated scores"),
];

/// Error texts of the family.
const NOT_A_SCORE_RANGE: &str = "ERR min or max is not a float";
const NOT_A_LEX_RANGE: &str = "ERR min or max not valid string range item";
const NAN_SCORE: &str = "ERR resulting score is not a number (NaN)";

/// The sorted set at `key` for a read, counting the keyspace hit or miss as Redis's
/// read lookups do.
pub(crate) fn read_zset<'k>(
    keys: &'k mut Locked<'_>,
    key: &[u8],
) -> Result<Option<&'k ZSet>, CmdError> {
    keys.read(key)
        .map(|entry| match &entry.value {
            Value::ZSet(zset) => Ok(&**zset),
            _ => Err(errors::WRONGTYPE.into()),
        })
        .transpose()
}

/// The sorted set at `key` for a write (no hit or miss counted).
fn zset_mut<'k>(keys: &'k mut Locked<'_>, key: &[u8]) -> Result<Option<&'k mut ZSet>, CmdError> {
    match keys.get(key) {
        None => Ok(None),
        Some(entry) => match &mut entry.value {
            Value::ZSet(zset) => Ok(Some(zset)),
            _ => Err(errors::WRONGTYPE.into()),
        },
    }
}

/// Change the sorted set at `key` in place with `change`, which returns its result
/// and whether it changed anything. Without a key there is nothing to change: `None`.
/// A set left empty is deleted, as Redis never keeps one. A change raises keyspace
/// `event` (then `del` if it emptied the set).
fn change_zset<T>(
    keys: &mut Locked<'_>,
    key: &[u8],
    event: &str,
    change: impl FnOnce(&mut ZSet) -> Result<(T, bool), CmdError>,
) -> Result<Option<T>, CmdError> {
    let Some(zset) = zset_mut(keys, key)? else {
        return Ok(None);
    };
    let (result, changed) = change(zset)?;
    let emptied = zset.is_empty();
    if changed {
        keys.notify(class::ZSET, event, key);
    }
    if changed || emptied {
        settle_collection(keys, key, emptied);
    }
    Ok(Some(result))
}

/// Store `zset` at `key` in place of whatever is there (a new value: no deadline),
/// raising `event`; an empty result deletes the key instead (`del`, if there was
/// one). Returns the stored length.
pub(crate) fn store(keys: &mut Locked<'_>, key: &[u8], zset: ZSet, event: &str) -> usize {
    let len = zset.len();
    if len == 0 {
        if keys.remove(key).is_some() {
            keys.notify(class::GENERIC, "del", key);
        }
    } else {
        keys.set(key, Value::ZSet(Box::new(zset)), 0);
        keys.notify(class::ZSET, event, key);
    }
    len
}

/// The encoding thresholds in force.
pub(crate) fn limits(server: &Server) -> Limits {
    server.hot.encoding().zset()
}

/// A score as Redis 7.0 replies with one: `%.17g` text, a bulk string in RESP2 and
/// a double in RESP3.
fn write_score(out: &mut ReplyWriter, score: f64) {
    let mut text = Vec::with_capacity(24);
    write_f64(&mut text, score);
    out.double_text(&text);
}

/// How a reply lays out the entries it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// Members only.
    Members,
    /// member, score, member, score, ...
    Flat,
    /// [member, score], [member, score], ...
    Pairs,
}

impl Layout {
    /// What WITHSCORES gives in ZRANGE and its kin: pairs in RESP3, flat in RESP2.
    fn with_scores(out: &ReplyWriter, with_scores: bool) -> Layout {
        match (with_scores, out.is_resp3()) {
            (false, _) => Layout::Members,
            (true, true) => Layout::Pairs,
            (true, false) => Layout::Flat,
        }
    }
}

/// Writes a list of entries in one [`Layout`].
struct EntryWriter {
    layout: Layout,
    score_text: Vec<u8>,
}

impl EntryWriter {
    fn new(layout: Layout) -> EntryWriter {
        EntryWriter {
            layout,
            score_text: Vec::with_capacity(24),
        }
    }

    /// The array header for `entries` entries.
    fn header(&self, out: &mut ReplyWriter, entries: usize) {
        match self.layout {
            Layout::Flat => out.array(entries * 2),
            Layout::Members | Layout::Pairs => out.array(entries),
        }
    }

    fn entry(&mut self, out: &mut ReplyWriter, member: &[u8], score: f64) {
        if self.layout == Layout::Pairs {
            out.array(2);
        }
        out.bulk(member);
        if self.layout != Layout::Members {
            self.score_text.clear();
            write_f64(&mut self.score_text, score);
            out.double_text(&self.score_text);
        }
    }

    /// A whole list: the header, then every entry.
    fn all(&mut self, out: &mut ReplyWriter, entries: &[(&[u8], f64)]) {
        self.header(out, entries.len());
        for &(member, score) in entries {
            self.entry(out, member, score);
        }
    }
}
