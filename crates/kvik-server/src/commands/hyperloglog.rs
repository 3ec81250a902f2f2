//! HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG and PFSELFTEST, over
//! values in Redis's own string format ([`crate::types::hll`]).
//!
//! A HyperLogLog is an ordinary string, changed in place (which makes it `raw`, as
//! in Redis). Replies, errors, encodings and effects follow Redis 7.0:
//! - PFADD counts one change per register it raised (plus one for a new key);
//! - PFCOUNT of one key fills the cached cardinality when it is stale, which is a
//!   change of the string, so that PFCOUNT is propagated; with several keys it counts
//!   their union and changes nothing;
//! - PFMERGE's destination is one of its sources; it turns dense when any source is;
//! - PFDEBUG GETREG and TODENSE convert to dense, a change that is propagated.
//!
//! Keyspace events are string events (class `$`): `pfadd` when PFADD created the key
//! or raised a register, and on PFMERGE's destination whenever the merge succeeds.
//! PFCOUNT and PFDEBUG raise none (PFCOUNT's and PFMERGE's read lookups raise
//! `keymiss` for each missing key, the destination of PFMERGE included).

use super::table::{acl, flags, key_flags, Command, KeySpec};
use super::{errors, CmdError, CmdResult, Ctx};
use crate::keyspace::{Entry, Locked};
use crate::notify::class;
use crate::types::hll::{self, Encoding, Registers, REGISTERS};
use crate::types::string::StrValue;
use crate::types::Value;
use crate::util::thin_buf::ThinBuf;
use std::sync::atomic::Ordering;

const HLL: u32 = acl::HYPERLOGLOG;
const DEBUG_ACL: u32 = HLL | acl::ADMIN | acl::SLOW | acl::DANGEROUS;

pub const COMMANDS: &[Command] = &[
    Command::new("pfadd", -2, pfadd)
        .flags(flags::WRITE | flags::DENYOOM | flags::FAST)
        .acl(HLL | acl::WRITE | acl::FAST)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::INSERT)
        .doc(
            "hyperloglog",
            "2.8.9",
            "O(1) to add every element.",
            "Adds the specified elements to the specified HyperLogLog.",
        ),
    // It may rewrite the key's cached cardinality (and propagate that), so it counts
    // as a write for read-only scripts and CLIENT PAUSE WRITE, as in Redis.
    Command::new("pfcount", -2, pfcount)
        .flags(flags::READONLY | flags::MAY_REPLICATE)
        .acl(HLL | acl::READ | acl::SLOW)
        .key_spec(KeySpec::range(1, -1, 1).flags(key_flags::RW | key_flags::ACCESS).notes(
            "RW because it may change the internal representation of the key, and propagate to replicas",
        ))
        .doc(
            "hyperloglog",
            "2.8.9",
            "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.",
            "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).",
        ),
    Command::new("pfmerge", -2, pfmerge)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(HLL | acl::WRITE | acl::SLOW)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::ACCESS | key_flags::INSERT)
        .keys(2, -1, 1)
        .key_flags(key_flags::RO | key_flags::ACCESS)
        .doc(
            "hyperloglog",
            "2.8.9",
            "O(N) to merge N HyperLogLogs, but with high constant times.",
            "Merge N different HyperLogLogs into a single one.",
        ),
    Command::new("pfdebug", 3, pfdebug)
        .flags(flags::WRITE | flags::DENYOOM | flags::ADMIN)
        .acl(DEBUG_ACL | acl::WRITE)
        .keys(2, 2, 1)
        .key_flags(key_flags::RW | key_flags::ACCESS)
        .doc(
            "hyperloglog",
            "2.8.9",
            "N/A",
            "Internal commands for debugging HyperLogLog values",
        ),
    Command::new("pfselftest", 1, pfselftest)
        .flags(flags::ADMIN)
        .acl(DEBUG_ACL)
        .doc(
            "hyperloglog",
            "2.8.9",
            "N/A",
            "An internal command for testing HyperLogLog values",
        ),
];

/// A string that is not a HyperLogLog.
const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
/// A HyperLogLog whose sparse opcodes do not add up.
const CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";

impl From<hll::Corrupt> for CmdError {
    fn from(_: hll::Corrupt) -> Self {
        CORRUPT.into()
    }
}

/// The bytes of a value that passes for a HyperLogLog, or Redis's error for it.
fn hll_bytes(value: &Value) -> Result<&[u8], CmdError> {
    let string = value.as_str().ok_or(CmdError::from(errors::WRONGTYPE))?;
    let bytes: &[u8] = match string {
        // An integer-encoded string is never one (Redis checks the encoding first).
        StrValue::Int(_) => &[],
        StrValue::Inline { len, data } => &data[..usize::from(*len)],
        StrValue::Emb(bytes) => bytes,
        StrValue::Raw(bytes) => bytes,
    };
    match hll::encoding(bytes) {
        Some(_) => Ok(bytes),
        None => Err(NOT_HLL.into()),
    }
}

/// The HyperLogLog in a looked-up entry as a buffer to change in place; `None` if
/// there is no key. Callers look keys up as Redis does: PFCOUNT of one key as a read
/// (a keyspace hit or miss), the others as writes.
fn hll_in(entry: Option<&mut Entry>) -> Result<Option<&mut ThinBuf>, CmdError> {
    let Some(entry) = entry else {
        return Ok(None);
    };
    hll_bytes(&entry.value)?;
    let string = entry.value.as_str_mut().expect("checked to be a string");
    Ok(Some(string.make_raw()))
}

/// The HyperLogLog at `key` for writing, stored empty first if there is none.
/// Returns it and whether it was created (which already counted as a change).
fn hll_or_new<'k>(
    keys: &'k mut Locked<'_>,
    key: &[u8],
) -> Result<(&'k mut ThinBuf, bool), CmdError> {
    let created = hll_in(keys.get(key))?.is_none();
    if created {
        keys.set(key, Value::Str(StrValue::Raw(hll::new())), 0);
    }
    let hll = hll_in(keys.get(key))?.expect("the key was just found or stored");
    Ok((hll, created))
}

/// `hll-sparse-max-bytes`: the longest a sparse value may grow.
fn sparse_max_bytes(ctx: &Ctx) -> u64 {
    ctx.server.hot.hll_sparse_max_bytes.load(Ordering::Relaxed)
}

fn pfadd(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let sparse_max = sparse_max_bytes(ctx);
    let (hll, created) = hll_or_new(ctx.keys, key)?;
    let mut raised = 0;
    for element in &args[2..] {
        // A corrupt value fails here with the registers raised so far kept, and, as
        // in Redis, nothing counted or propagated.
        if hll::add(hll, element, sparse_max)? {
            raised += 1;
        }
    }
    let changed = created || raised > 0;
    if changed {
        hll::invalidate_cache(hll);
        ctx.keys.notify(class::STRING, "pfadd", key);
    }
    if raised > 0 {
        // One change per register raised, as Redis counts them.
        ctx.keys.modified(key);
        ctx.keys.add_dirty(raised - 1);
    }
    ctx.out.int(i64::from(changed));
    Ok(())
}

fn pfcount(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 2 {
        return count_union(ctx, &args[1..]);
    }
    let key = args[1];
    let Some(hll) = hll_in(ctx.keys.read(key))? else {
        ctx.out.int(0);
        return Ok(());
    };
    let count = match hll::cached_cardinality(hll) {
        Some(count) => count,
        None => {
            let count = hll::cardinality(hll)?;
            hll::cache_cardinality(hll, count);
            ctx.keys.modified(key);
            count
        }
    };
    ctx.out.int(count as i64);
    Ok(())
}

/// PFCOUNT of several keys: the cardinality of their union, missing keys counting
/// as empty. Nothing is cached.
fn count_union(ctx: &mut Ctx, keys: &[&[u8]]) -> CmdResult {
    let mut max: Registers = [0; REGISTERS];
    for key in keys {
        if let Some(entry) = ctx.keys.read(key) {
            hll::merge_into(hll_bytes(&entry.value)?, &mut max)?;
        }
    }
    ctx.out.int(hll::cardinality_of(&max) as i64);
    Ok(())
}

fn pfmerge(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut max: Registers = [0; REGISTERS];
    let mut any_dense = false;
    // The destination is the first source.
    for key in &args[1..] {
        let Some(entry) = ctx.keys.read(key) else {
            continue;
        };
        let bytes = hll_bytes(&entry.value)?;
        any_dense |= hll::encoding(bytes) == Some(Encoding::Dense);
        hll::merge_into(bytes, &mut max)?;
    }
    let dest = args[1];
    let sparse_max = sparse_max_bytes(ctx);
    let (hll, created) = hll_or_new(ctx.keys, dest)?;
    if any_dense {
        hll::to_dense(hll)?;
    }
    hll::raise_all(hll, &max, sparse_max)?;
    hll::invalidate_cache(hll);
    if !created {
        ctx.keys.modified(dest);
    }
    ctx.keys.notify(class::STRING, "pfadd", dest);
    ctx.out.ok();
    Ok(())
}

fn pfdebug(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (subcommand, key) = (args[1], args[2]);
    let Some(hll) = hll_in(ctx.keys.get(key))? else {
        return Err("ERR The specified key does not exist".into());
    };
    match subcommand.to_ascii_lowercase().as_slice() {
        b"getreg" => {
            let converted = hll::to_dense(hll)?;
            let registers = hll::registers(hll)?;
            if converted {
                ctx.keys.modified(key);
            }
            ctx.out.array(REGISTERS);
            for &value in registers.iter() {
                ctx.out.int(i64::from(value));
            }
        }
        b"decode" => {
            let text = hll::decode(hll).ok_or("ERR HLL encoding is not sparse")?;
            ctx.out.bulk(text.as_bytes());
        }
        b"encoding" => {
            let encoding = hll::encoding(hll).expect("checked to be a HyperLogLog");
            ctx.out.simple(encoding.name());
        }
        b"todense" => {
            let converted = hll::to_dense(hll)?;
            if converted {
                ctx.keys.modified(key);
            }
            ctx.out.int(i64::from(converted));
        }
        _ => {
            return Err(format!(
                "ERR Unknown PFDEBUG subcommand '{}'",
                String::from_utf8_lossy(subcommand)
            )
            .into())
        }
    }
    Ok(())
}

fn pfselftest(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    hll::selftest::run().map_err(|failure| format!("ERR {failure}"))?;
    ctx.out.ok();
    Ok(())
}
