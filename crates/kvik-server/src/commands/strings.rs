//! String commands.

use super::table::{acl, flags, Command};
use super::{args, errors, CmdError, CmdResult, Ctx};
use crate::keyspace::Locked;
use crate::types::string::StrValue;
use crate::types::Value;

const STR: u32 = acl::STRING;

pub const COMMANDS: &[Command] = &[
    Command::new("get", 2, get)
        .flags(flags::READONLY | flags::FAST)
        .acl(STR | acl::READ | acl::FAST)
        .keys(1, 1, 1)
        .doc("string", "1.0.0", "O(1)", "Returns the string value of a key."),
    Command::new("set", -3, set)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(STR | acl::WRITE | acl::SLOW)
        .keys(1, 1, 1)
        .doc("string", "1.0.0", "O(1)", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist."),
    Command::new("mget", -2, mget)
        .flags(flags::READONLY | flags::FAST)
        .acl(STR | acl::READ | acl::FAST)
        .keys(1, -1, 1)
        .doc("string", "1.0.0", "O(N) where N is the number of keys to retrieve.", "Atomically returns the string values of one or more keys."),
    Command::new("mset", -3, mset)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(STR | acl::WRITE | acl::SLOW)
        .keys(1, -1, 2)
        .doc("string", "1.0.1", "O(N) where N is the number of keys to set.", "Atomically creates or modifies the string values of one or more keys."),
    Command::new("incr", 2, incr)
        .flags(flags::WRITE | flags::DENYOOM | flags::FAST)
        .acl(STR | acl::WRITE | acl::FAST)
        .keys(1, 1, 1)
        .doc("string", "1.0.0", "O(1)", "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."),
    Command::new("decr", 2, decr)
        .flags(flags::WRITE | flags::DENYOOM | flags::FAST)
        .acl(STR | acl::WRITE | acl::FAST)
        .keys(1, 1, 1)
        .doc("string", "1.0.0", "O(1)", "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."),
    Command::new("incrby", 3, incrby)
        .flags(flags::WRITE | flags::DENYOOM | flags::FAST)
        .acl(STR | acl::WRITE | acl::FAST)
        .keys(1, 1, 1)
        .doc("string", "1.0.0", "O(1)", "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist."),
    Command::new("decrby", 3, decrby)
        .flags(flags::WRITE | flags::DENYOOM | flags::FAST)
        .acl(STR | acl::WRITE | acl::FAST)
        .keys(1, 1, 1)
        .doc("string", "1.0.0", "O(1)", "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist."),
]
.as_slice();

/// The string value of a live key: `Ok(None)` if absent, WRONGTYPE if not a string.
/// Counts a keyspace hit or miss.
pub fn read_string<'k>(
    ctx_keys: &'k mut Locked<'_>,
    key: &[u8],
) -> Result<Option<&'k StrValue>, CmdError> {
    let stats = ctx_keys.env().stats;
    match ctx_keys.get(key) {
        None => {
            stats.add(&stats.keyspace_misses, 1);
            Ok(None)
        }
        Some(entry) => {
            stats.add(&stats.keyspace_hits, 1);
            entry
                .value
                .as_str()
                .map(Some)
                .ok_or_else(|| errors::WRONGTYPE.into())
        }
    }
}

fn get(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match read_string(ctx.keys, args[1])? {
        Some(s) => ctx.out.bulk(s.bytes(&mut itoa::Buffer::new())),
        None => ctx.out.null(),
    }
    Ok(())
}

fn mget(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ctx.out.array(args.len() - 1);
    for key in &args[1..] {
        match read_string(ctx.keys, key) {
            Ok(Some(s)) => ctx.out.bulk(s.bytes(&mut itoa::Buffer::new())),
            Ok(None) | Err(_) => ctx.out.null(),
        }
    }
    Ok(())
}

/// When a SET-like command makes the key expire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// Drop any deadline.
    None,
    /// Keep the deadline the key has (KEEPTTL).
    Keep,
    /// At this Unix time in ms.
    At(u64),
}

/// The units an expire argument can come in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpireUnit {
    Seconds,
    Millis,
    UnixSeconds,
    UnixMillis,
}

/// Turn an EX/PX/EXAT/PXAT argument into an absolute deadline, with Redis's checks:
/// not an integer, not positive, or overflowing gives the command's error.
pub fn deadline(arg: &[u8], unit: ExpireUnit, now_ms: u64, command: &str) -> Result<u64, CmdError> {
    let n = args::int(arg)?;
    let invalid = || CmdError::from(format!("ERR invalid expire time in '{command}' command"));
    if n <= 0 {
        return Err(invalid());
    }
    let ms = match unit {
        ExpireUnit::Seconds | ExpireUnit::UnixSeconds => n.checked_mul(1000).ok_or_else(invalid)?,
        ExpireUnit::Millis | ExpireUnit::UnixMillis => n,
    };
    let at = match unit {
        ExpireUnit::Seconds | ExpireUnit::Millis => {
            ms.checked_add(now_ms as i64).ok_or_else(invalid)?
        }
        ExpireUnit::UnixSeconds | ExpireUnit::UnixMillis => ms,
    };
    Ok(at as u64)
}

/// Options of SET.
#[derive(Default)]
struct SetOptions {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    expire: Option<(ExpireUnit, usize)>,
}

fn parse_set_options(args: &[&[u8]]) -> Result<SetOptions, CmdError> {
    let mut o = SetOptions::default();
    let mut i = 3;
    while i < args.len() {
        let a = args[i];
        let has_next = i + 1 < args.len();
        let unit = if args::is(a, "EX") {
            Some(ExpireUnit::Seconds)
        } else if args::is(a, "PX") {
            Some(ExpireUnit::Millis)
        } else if args::is(a, "EXAT") {
            Some(ExpireUnit::UnixSeconds)
        } else if args::is(a, "PXAT") {
            Some(ExpireUnit::UnixMillis)
        } else {
            None
        };
        if args::is(a, "NX") && !o.xx {
            o.nx = true;
        } else if args::is(a, "XX") && !o.nx {
            o.xx = true;
        } else if args::is(a, "GET") {
            o.get = true;
        } else if args::is(a, "KEEPTTL") && o.expire.is_none() {
            o.keepttl = true;
        } else if let (Some(unit), true, true, false) =
            (unit, has_next, o.expire.is_none(), o.keepttl)
        {
            o.expire = Some((unit, i + 1));
            i += 1;
        } else {
            return Err(errors::SYNTAX.into());
        }
        i += 1;
    }
    Ok(o)
}

fn set(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let o = parse_set_options(args)?;
    let (key, value) = (args[1], args[2]);
    let now = ctx.keys.now_ms;
    let expire_at = match o.expire {
        Some((unit, at)) => Some(deadline(args[at], unit, now, "set")?),
        None => None,
    };
    let (exists, old_ttl) = match ctx.keys.get(key) {
        Some(e) => {
            if o.get && e.value.as_str().is_none() {
                return Err(errors::WRONGTYPE.into());
            }
            (true, e.expire_at)
        }
        None => (false, 0),
    };
    if o.get {
        match read_string(ctx.keys, key)? {
            Some(s) => ctx.out.bulk(s.bytes(&mut itoa::Buffer::new())),
            None => ctx.out.null(),
        }
    }
    if (o.nx && exists) || (o.xx && !exists) {
        if !o.get {
            ctx.out.null();
        }
        return Ok(());
    }
    let expiry = match (expire_at, o.keepttl) {
        (Some(at), _) => at,
        (None, true) => old_ttl,
        (None, false) => 0,
    };
    ctx.keys
        .set(key, Value::Str(StrValue::from_bytes(value)), expiry);
    if let Some(at) = expire_at {
        let at = at.to_string();
        ctx.propagate(&[b"SET", key, value, b"PXAT", at.as_bytes()]);
    }
    if !o.get {
        ctx.out.ok();
    }
    Ok(())
}

fn mset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() % 2 == 0 {
        return Err(format!("ERR wrong number of arguments for '{}' command", "mset").into());
    }
    for pair in args[1..].chunks(2) {
        ctx.keys
            .set(pair[0], Value::Str(StrValue::from_bytes(pair[1])), 0);
    }
    ctx.out.ok();
    Ok(())
}

/// Add `delta` to the integer at `key` (created as 0), keeping its TTL.
fn incr_by(ctx: &mut Ctx, key: &[u8], delta: i64) -> CmdResult {
    let current = match ctx.keys.get(key) {
        None => None,
        Some(e) => match &e.value {
            Value::Str(s) => Some((
                s.as_i64().ok_or(CmdError::from(errors::NOT_INTEGER))?,
                e.expire_at,
            )),
        },
    };
    let (old, ttl) = current.unwrap_or((0, 0));
    let new = old
        .checked_add(delta)
        .ok_or(CmdError::from(errors::OVERFLOW))?;
    match current {
        Some(_) => {
            if let Some(e) = ctx.keys.get(key) {
                e.value = Value::Str(StrValue::Int(new));
            }
            ctx.keys.modified(key);
        }
        None => {
            ctx.keys.set(key, Value::Str(StrValue::Int(new)), ttl);
        }
    }
    ctx.out.int(new);
    Ok(())
}

fn incr(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    incr_by(ctx, args[1], 1)
}

fn decr(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    incr_by(ctx, args[1], -1)
}

fn incrby(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    incr_by(ctx, args[1], args::int(args[2])?)
}

fn decrby(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = args::int(args[2])?;
    let delta = n
        .checked_neg()
        .ok_or(CmdError::from("ERR decrement would overflow"))?;
    incr_by(ctx, args[1], delta)
}
