//! String commands: the table of the family and what its handlers share.
//!
//! The handlers live in one module per kind of work:
//! - [`options`]: the expire and condition options SET and GETEX share;
//! - [`set`]: writing whole values (SET and its shorthands, GETSET, MSET, MSETNX);
//! - [`get`]: reading whole values (GET, MGET, GETDEL, GETEX);
//! - [`counters`]: the INCR family and INCRBYFLOAT;
//! - [`edit`]: lengths and byte ranges (STRLEN, APPEND, GETRANGE, SETRANGE);
//! - [`lcs`]: the longest common subsequence of two strings.
//!
//! Every reply, error text, encoding and propagated effect follows Redis 7.0.

mod counters;
mod edit;
mod get;
mod lcs;
mod options;
mod set;

use options::Expiry;

use super::table::{acl, flags, key_flags, Command, FoundKeys, KeySpec};
use super::{errors, CmdError, Ctx};
use crate::keyspace::Locked;
use crate::types::string::StrValue;
use crate::types::Value;

const STR: u32 = acl::STRING;
const READ_FAST: u32 = STR | acl::READ | acl::FAST;
const READ_SLOW: u32 = STR | acl::READ | acl::SLOW;
const WRITE_FAST: u32 = STR | acl::WRITE | acl::FAST;
const WRITE_SLOW: u32 = STR | acl::WRITE | acl::SLOW;

// Complexities too long to sit in the table, as COMMAND DOCS words them.
const APPEND_COMPLEXITY: &str = "O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.";
const SETRANGE_COMPLEXITY: &str = "O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.";
const RANGE_COMPLEXITY: &str = "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.";

pub const COMMANDS: &[Command] = &[
    Command::new("get", 2, get::get)
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, 1, 1)
        .doc("string", "1.0.0", "O(1)", "Get the value of a key"),
    Command::new("set", -3, set::set)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE_SLOW)
        .key_spec(
            KeySpec::range(1, 1, 1)
                .flags(
                    key_flags::RW
                        | key_flags::ACCESS
                        | key_flags::UPDATE
                        | key_flags::VARIABLE_FLAGS,
                )
                .notes("RW and ACCESS due to the optional `GET` argument"),
        )
        .settle_key_flags(set_key_flags)
        .doc("string", "1.0.0", "O(1)", "Set the string value of a key"),
    Command::new("setnx", 3, set::setnx)
        .flags(flags::WRITE | flags::DENYOOM | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::OW | key_flags::INSERT)
        .doc(
            "string",
            "1.0.0",
            "O(1)",
            "Set the value of a key, only if the key does not exist",
        ),
    Command::new("setex", 4, set::setex)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .key_flags(key_flags::OW | key_flags::UPDATE)
        .doc(
            "string",
            "2.0.0",
            "O(1)",
            "Set the value and expiration of a key",
        ),
    Command::new("psetex", 4, set::psetex)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .key_flags(key_flags::OW | key_flags::UPDATE)
        .doc(
            "string",
            "2.6.0",
            "O(1)",
            "Set the value and expiration in milliseconds of a key",
        ),
    Command::new("getset", 3, set::getset)
        .flags(flags::WRITE | flags::DENYOOM | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .doc(
            "string",
            "1.0.0",
            "O(1)",
            "Set the string value of a key and return its old value",
        ),
    Command::new("getdel", 2, get::getdel)
        .flags(flags::WRITE | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::ACCESS | key_flags::DELETE)
        .doc(
            "string",
            "6.2.0",
            "O(1)",
            "Get the value of a key and delete the key",
        ),
    Command::new("getex", -2, get::getex)
        .flags(flags::WRITE | flags::FAST)
        .acl(WRITE_FAST)
        .key_spec(
            KeySpec::range(1, 1, 1)
                .flags(key_flags::RW | key_flags::ACCESS | key_flags::UPDATE)
                .notes("RW and UPDATE because it changes the TTL"),
        )
        .doc(
            "string",
            "6.2.0",
            "O(1)",
            "Get the value of a key and optionally set its expiration",
        ),
    Command::new("mget", -2, get::mget)
        .tips(&["request_policy:multi_shard"])
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, -1, 1)
        .doc(
            "string",
            "1.0.0",
            "O(N) where N is the number of keys to retrieve.",
            "Get the values of all the given keys",
        ),
    Command::new("mset", -3, set::mset)
        .tips(&[
            "request_policy:multi_shard",
            "response_policy:all_succeeded",
        ])
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE_SLOW)
        .keys(1, -1, 2)
        .key_flags(key_flags::OW | key_flags::UPDATE)
        .doc(
            "string",
            "1.0.1",
            "O(N) where N is the number of keys to set.",
            "Set multiple keys to multiple values",
        ),
    Command::new("msetnx", -3, set::msetnx)
        .tips(&["request_policy:multi_shard", "response_policy:agg_min"])
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE_SLOW)
        .keys(1, -1, 2)
        .key_flags(key_flags::OW | key_flags::INSERT)
        .doc(
            "string",
            "1.0.1",
            "O(N) where N is the number of keys to set.",
            "Set multiple keys to multiple values, only if none of the keys exist",
        ),
    Command::new("append", 3, edit::append)
        .flags(flags::WRITE | flags::DENYOOM | flags::FAST)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::INSERT)
        .doc(
            "string",
            "2.0.0",
            APPEND_COMPLEXITY,
            "Append a value to a key",
        ),
    Command::new("strlen", 2, edit::strlen)
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RO)
        .doc(
            "string",
            "2.2.0",
            "O(1)",
            "Get the length of the value stored in a key",
        ),
    Command::new("incr", 2, counters::incr)
        .flags(flags::WRITE | flags::DENYOOM | flags::FAST | flags::MERGES_AS_COUNTER)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .doc(
            "string",
            "1.0.0",
            "O(1)",
            "Increment the integer value of a key by one",
        ),
    Command::new("decr", 2, counters::decr)
        .flags(flags::WRITE | flags::DENYOOM | flags::FAST | flags::MERGES_AS_COUNTER)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .doc(
            "string",
            "1.0.0",
            "O(1)",
            "Decrement the integer value of a key by one",
        ),
    Command::new("incrby", 3, counters::incrby)
        .flags(flags::WRITE | flags::DENYOOM | flags::FAST | flags::MERGES_AS_COUNTER)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .doc(
            "string",
            "1.0.0",
            "O(1)",
            "Increment the integer value of a key by the given amount",
        ),
    Command::new("decrby", 3, counters::decrby)
        .flags(flags::WRITE | flags::DENYOOM | flags::FAST | flags::MERGES_AS_COUNTER)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .doc(
            "string",
            "1.0.0",
            "O(1)",
            "Decrement the integer value of a key by the given number",
        ),
    Command::new("incrbyfloat", 3, counters::incrbyfloat)
        .flags(flags::WRITE | flags::DENYOOM | flags::FAST | flags::MERGES_AS_COUNTER)
        .acl(WRITE_FAST)
        .keys(1, 1, 1)
        .doc(
            "string",
            "2.6.0",
            "O(1)",
            "Increment the float value of a key by the given amount",
        ),
    Command::new("getrange", 4, edit::getrange)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .doc(
            "string",
            "2.4.0",
            RANGE_COMPLEXITY,
            "Get a substring of the string stored at a key",
        ),
    Command::new("substr", 4, edit::getrange)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .doc(
            "string",
            "1.0.0",
            RANGE_COMPLEXITY,
            "Get a substring of the string stored at a key",
        ),
    Command::new("setrange", 4, edit::setrange)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::UPDATE)
        .doc(
            "string",
            "2.2.0",
            SETRANGE_COMPLEXITY,
            "Overwrite part of a string at key starting at the specified offset",
        ),
    Command::new("lcs", -3, lcs::lcs)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 2, 1)
        .doc(
            "string",
            "7.0.0",
            "O(N*M) where N and M are the lengths of s1 and s2, respectively",
            "Find longest common substring",
        ),
];

/// SET's key flags for COMMAND GETKEYSANDFLAGS: without GET it only overwrites.
fn set_key_flags(args: &[&[u8]], keys: &mut FoundKeys) {
    if !args[3..].iter().any(|a| a.eq_ignore_ascii_case(b"GET")) {
        keys.set_flags(key_flags::OW | key_flags::UPDATE);
    }
}

/// The string value of a live key: `Ok(None)` if absent, WRONGTYPE if not a string.
/// Counts a keyspace hit or miss, as Redis does for the lookups of reading commands.
pub fn read_string<'k>(
    keys: &'k mut Locked<'_>,
    key: &[u8],
) -> Result<Option<&'k StrValue>, CmdError> {
    keys.read(key)
        .map(|entry| {
            entry
                .value
                .as_str()
                .ok_or(CmdError::from(errors::WRONGTYPE))
        })
        .transpose()
}

/// Reply with the string at `key`, or nil when there is none (what GET replies).
/// Returns whether the key existed.
fn reply_value(ctx: &mut Ctx, key: &[u8]) -> Result<bool, CmdError> {
    match read_string(ctx.keys, key)? {
        Some(s) => {
            ctx.out.bulk(s.bytes(&mut itoa::Buffer::new()));
            Ok(true)
        }
        None => {
            ctx.out.null();
            Ok(false)
        }
    }
}

/// Store a string under `key`, replacing whatever was there, with the deadline
/// `expiry` says. Keeping the deadline rewrites the value inside the live entry, which
/// is what Redis's overwrite does (INCR, INCRBYFLOAT, SET KEEPTTL).
fn store(keys: &mut Locked<'_>, key: &[u8], value: StrValue, expiry: Expiry) {
    let expire_at = match expiry {
        Expiry::None => 0,
        Expiry::At(at) => at,
        Expiry::Keep => {
            if let Some(entry) = keys.get(key) {
                entry.value = Value::Str(value);
                keys.modified(key);
                return;
            }
            0
        }
    };
    keys.set(key, Value::Str(value), expire_at);
}
