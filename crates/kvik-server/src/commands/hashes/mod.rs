//! Hash commands: the table of the family and what its handlers share.
//!
//! The handlers live in one module per kind of work:
//! - [`read`]: lookups and whole-hash reads (HGET, HMGET, HGETALL, HKEYS, HVALS,
//!   HLEN, HSTRLEN, HEXISTS);
//! - [`write`]: setting, deleting and renaming fields (HSET, HMSET, HSETNX, HDEL,
//!   KeyDB's KEYDB.HRENAME);
//! - [`counters`]: HINCRBY and HINCRBYFLOAT;
//! - [`expire`]: Redis 7.4's field deadlines (HEXPIRE family, HTTL family,
//!   HPERSIST), on the member expiry KeyDB's EXPIREMEMBER uses;
//! - [`random`]: random fields (HRANDFIELD);
//! - [`scan`]: iterating with a cursor (HSCAN).
//!
//! Every reply, error text, encoding and propagated effect follows Redis 7.0 (7.4 for
//! field deadlines). Reading
//! commands count keyspace hits and misses; writing ones do not (Redis's
//! `lookupKeyWrite`). A write that leaves a hash empty deletes the key, and a
//! command that changes nothing propagates nothing.

mod counters;
mod expire;
mod random;
mod read;
pub(crate) mod scan;
mod write;

use super::shared;
use super::shared::settle_collection;
use super::table::{acl, flags, key_flags, Command};
use super::{errors, CmdError, Ctx};
use crate::keyspace::Locked;
use crate::notify::class;
use crate::types::hash::{Hash, Limits};
use crate::types::Value;

const HASH: u32 = acl::HASH;
const READ_FAST: u32 = HASH | acl::READ | acl::FAST;
const READ_SLOW: u32 = HASH | acl::READ | acl::SLOW;
const WRITE_FAST: u32 = HASH | acl::WRITE | acl::FAST;

const UNORDERED: &[&str] = &["nondeterministic_output_order"];
const RANDOM: &[&str] = &["nondeterministic_output"];

const HSET_COMPLEXITY: &str = "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.";
const HSCAN_COMPLEXITY: &str = "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..";
const WHOLE_HASH: &str = "O(N) where N is the size of the hash.";

/// A command of the family: one key, at argument 1.
const fn hash_command(
    name: &'static str,
    arity: i32,
    handler: super::table::Handler,
    since: &'static str,
    complexity: &'static str,
    summary: &'static str,
) -> Command {
    Command::new(name, arity, handler)
        .keys(1, 1, 1)
        .doc("hash", since, complexity, summary)
}

const WRITES: u32 = flags::WRITE | flags::DENYOOM | flags::FAST;
const READS: u32 = flags::READONLY | flags::FAST;

pub const COMMANDS: &[Command] = &[
    hash_command(
        "hset",
        -4,
        write::hset,
        "2.0.0",
        HSET_COMPLEXITY,
        "Set the string value of a hash field",
    )
    .flags(WRITES)
    .acl(WRITE_FAST)
    .key_flags(key_flags::RW | key_flags::UPDATE)
    .elements(shared::element_then_value),
    hash_command(
        "hsetnx",
        4,
        write::hsetnx,
        "2.0.0",
        "O(1)",
        "Set the value of a hash field, only if the field does not exist",
    )
    .flags(WRITES)
    .acl(WRITE_FAST)
    .key_flags(key_flags::RW | key_flags::INSERT),
    hash_command(
        "hmset",
        -4,
        write::hmset,
        "2.0.0",
        "O(N) where N is the number of fields being set.",
        "Set multiple hash fields to multiple values",
    )
    .flags(WRITES)
    .acl(WRITE_FAST)
    .key_flags(key_flags::RW | key_flags::UPDATE)
    .elements(shared::element_then_value),
    hash_command(
        "keydb.hrename",
        4,
        write::hrename,
        "6.0.0",
        "O(1)",
        "Rename a field of a hash, keeping its value (a KeyDB command)",
    )
    .flags(flags::WRITE | flags::FAST)
    .acl(WRITE_FAST)
    .key_flags(key_flags::RW | key_flags::UPDATE),
    hash_command(
        "hget",
        3,
        read::hget,
        "2.0.0",
        "O(1)",
        "Get the value of a hash field",
    )
    .flags(READS)
    .acl(READ_FAST),
    hash_command(
        "hmget",
        -3,
        read::hmget,
        "2.0.0",
        "O(N) where N is the number of fields being requested.",
        "Get the values of all the given hash fields",
    )
    .flags(READS)
    .acl(READ_FAST),
    hash_command(
        "hgetall",
        2,
        read::hgetall,
        "2.0.0",
        WHOLE_HASH,
        "Get all the fields and values in a hash",
    )
    .flags(flags::READONLY)
    .acl(READ_SLOW)
    .tips(UNORDERED),
    hash_command(
        "hdel",
        -3,
        write::hdel,
        "2.0.0",
        "O(N) where N is the number of fields to be removed.",
        "Delete one or more hash fields",
    )
    .flags(flags::WRITE | flags::FAST)
    .acl(WRITE_FAST)
    .key_flags(key_flags::RW | key_flags::DELETE)
    .elements(shared::one_removed_element_per_arg),
    hash_command(
        "hexists",
        3,
        read::hexists,
        "2.0.0",
        "O(1)",
        "Determine if a hash field exists",
    )
    .flags(READS)
    .acl(READ_FAST)
    .key_flags(key_flags::RO),
    hash_command(
        "hlen",
        2,
        read::hlen,
        "2.0.0",
        "O(1)",
        "Get the number of fields in a hash",
    )
    .flags(READS)
    .acl(READ_FAST)
    .key_flags(key_flags::RO),
    hash_command(
        "hkeys",
        2,
        read::hkeys,
        "2.0.0",
        WHOLE_HASH,
        "Get all the fields in a hash",
    )
    .flags(flags::READONLY)
    .acl(READ_SLOW)
    .tips(UNORDERED),
    hash_command(
        "hvals",
        2,
        read::hvals,
        "2.0.0",
        WHOLE_HASH,
        "Get all the values in a hash",
    )
    .flags(flags::READONLY)
    .acl(READ_SLOW)
    .tips(UNORDERED),
    hash_command(
        "hstrlen",
        3,
        read::hstrlen,
        "3.2.0",
        "O(1)",
        "Get the length of the value of a hash field",
    )
    .flags(READS)
    .acl(READ_FAST)
    .key_flags(key_flags::RO),
    hash_command(
        "hincrby",
        4,
        counters::hincrby,
        "2.0.0",
        "O(1)",
        "Increment the integer value of a hash field by the given number",
    )
    .flags(WRITES | flags::MERGES_AS_COUNTER)
    .counts_member(2)
    .acl(WRITE_FAST)
    .elements(shared::element_then_value),
    hash_command(
        "hincrbyfloat",
        4,
        counters::hincrbyfloat,
        "2.6.0",
        "O(1)",
        "Increment the float value of a hash field by the given amount",
    )
    .flags(WRITES | flags::MERGES_AS_COUNTER)
    .counts_member(2)
    .acl(WRITE_FAST)
    .elements(shared::element_then_value),
    hash_command(
        "hrandfield",
        -2,
        random::hrandfield,
        "6.2.0",
        "O(N) where N is the number of fields returned",
        "Get one or multiple random fields from a hash",
    )
    .flags(flags::READONLY)
    .acl(READ_SLOW)
    .tips(RANDOM),
    hash_command(
        "hscan",
        -3,
        scan::hscan,
        "2.8.0",
        HSCAN_COMPLEXITY,
        "Incrementally iterate hash fields and associated values",
    )
    .flags(flags::READONLY)
    .acl(READ_SLOW)
    .tips(RANDOM),
    hash_command(
        "hexpire",
        -6,
        expire::hexpire,
        "7.4.0",
        "O(N) where N is the number of specified fields",
        "Set expiry for hash field using relative time to expire (seconds)",
    )
    .flags(flags::WRITE | flags::FAST)
    .acl(WRITE_FAST)
    .key_flags(key_flags::RW | key_flags::UPDATE),
    hash_command(
        "hpexpire",
        -6,
        expire::hpexpire,
        "7.4.0",
        "O(N) where N is the number of specified fields",
        "Set expiry for hash field using relative time to expire (milliseconds)",
    )
    .flags(flags::WRITE | flags::FAST)
    .acl(WRITE_FAST)
    .key_flags(key_flags::RW | key_flags::UPDATE),
    hash_command(
        "hexpireat",
        -6,
        expire::hexpireat,
        "7.4.0",
        "O(N) where N is the number of specified fields",
        "Set expiry for hash field using an absolute Unix timestamp (seconds)",
    )
    .flags(flags::WRITE | flags::FAST)
    .acl(WRITE_FAST)
    .key_flags(key_flags::RW | key_flags::UPDATE),
    hash_command(
        "hpexpireat",
        -6,
        expire::hpexpireat,
        "7.4.0",
        "O(N) where N is the number of specified fields",
        "Set expiry for hash field using an absolute Unix timestamp (milliseconds)",
    )
    .flags(flags::WRITE | flags::FAST)
    .acl(WRITE_FAST)
    .key_flags(key_flags::RW | key_flags::UPDATE),
    hash_command(
        "httl",
        -5,
        expire::httl,
        "7.4.0",
        "O(N) where N is the number of specified fields",
        "Returns the TTL in seconds of a hash field",
    )
    .flags(READS)
    .acl(READ_FAST)
    .key_flags(key_flags::RO),
    hash_command(
        "hpttl",
        -5,
        expire::hpttl,
        "7.4.0",
        "O(N) where N is the number of specified fields",
        "Returns the TTL in milliseconds of a hash field",
    )
    .flags(READS)
    .acl(READ_FAST)
    .key_flags(key_flags::RO),
    hash_command(
        "hexpiretime",
        -5,
        expire::hexpiretime,
        "7.4.0",
        "O(N) where N is the number of specified fields",
        "Returns the expiration time of a hash field as a Unix timestamp, in seconds",
    )
    .flags(READS)
    .acl(READ_FAST)
    .key_flags(key_flags::RO),
    hash_command(
        "hpexpiretime",
        -5,
        expire::hpexpiretime,
        "7.4.0",
        "O(N) where N is the number of specified fields",
        "Returns the expiration time of a hash field as a Unix timestamp, in msec",
    )
    .flags(READS)
    .acl(READ_FAST)
    .key_flags(key_flags::RO),
    hash_command(
        "hpersist",
        -5,
        expire::hpersist,
        "7.4.0",
        "O(N) where N is the number of specified fields",
        "Removes the expiration time for each specified field",
    )
    .flags(flags::WRITE | flags::FAST)
    .acl(WRITE_FAST)
    .key_flags(key_flags::RW | key_flags::UPDATE),
];

/// The hash at a live key, for a reading command: `Ok(None)` if absent, WRONGTYPE if
/// not a hash. Counts a keyspace hit or miss, as Redis does for reading lookups.
pub fn read_hash<'k>(keys: &'k mut Locked<'_>, key: &[u8]) -> Result<Option<&'k Hash>, CmdError> {
    keys.read(key)
        .map(|entry| match &entry.value {
            Value::Hash(hash) => Ok(&**hash),
            _ => Err(errors::WRONGTYPE.into()),
        })
        .transpose()
}

/// Apply `change` to the hash at `key` (a new, empty one if the key is missing) and
/// account for what it did. `change` returns its result and the number of changes it
/// made, which is what Redis adds to its dirty counter; with none, nothing is stamped
/// or propagated. A hash left empty is deleted, and a new one left empty never stored,
/// so that an error inside `change` leaves no trace. A change raises keyspace
/// `event` (and `del` when it emptied the hash).
fn write_hash<R>(
    keys: &mut Locked<'_>,
    key: &[u8],
    event: &str,
    change: impl FnOnce(&mut Hash) -> Result<(R, u64), CmdError>,
) -> Result<R, CmdError> {
    let Some(entry) = keys.get(key) else {
        let mut hash = Hash::default();
        let (result, changes) = change(&mut hash)?;
        if !hash.is_empty() {
            keys.set(key, Value::Hash(Box::new(hash)), 0);
            keys.add_dirty(changes.saturating_sub(1));
            keys.notify(class::HASH, event, key);
        }
        return Ok(result);
    };
    let Value::Hash(hash) = &mut entry.value else {
        return Err(errors::WRONGTYPE.into());
    };
    let (result, changes) = change(hash)?;
    if changes > 0 {
        let emptied = hash.is_empty();
        keys.notify(class::HASH, event, key);
        settle_collection(keys, key, emptied);
        keys.add_dirty(changes - 1);
    }
    Ok(result)
}

/// The encoding thresholds in force (CONFIG SET may change them at any time).
fn limits(ctx: &Ctx) -> Limits {
    ctx.server.hot.encoding().hash()
}
