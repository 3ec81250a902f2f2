//! Redis 7.4's hash-field expiry, on the member expiry mechanism KeyDB's
//! EXPIREMEMBER uses (`keyspace/members.rs`): HEXPIRE, HPEXPIRE, HEXPIREAT and
//! HPEXPIREAT set field deadlines, HTTL, HPTTL, HEXPIRETIME and HPEXPIRETIME read
//! them, HPERSIST drops them. Each answers one code per field, as Redis documents:
//! -2 no such field (or key), 0 condition not met, 1 set, 2 deleted (a deadline
//! already past); -1 for a field without deadline.
//!
//! A deadline set propagates as `HPEXPIREAT key <ms> FIELDS n field...` (the
//! fields it was set on, the condition already decided), a field deleted at once
//! as `HDEL`, so replicas and the AOF end up with the same deadlines.

use super::super::{args, CmdError, CmdResult, Ctx};
use crate::commands::errors;
use crate::commands::shared::settle_collection;
use crate::notify::class;
use crate::types::member_expiry::MemberExpiry;
use crate::types::Value;

/// The largest absolute deadline Redis accepts for a field: 2^48 - 1 ms.
const MAX_DEADLINE_MS: i64 = (1 << 48) - 1;

const FIELDS_MISSING: &str =
    "ERR Mandatory argument FIELDS is missing or not at the right position";

/// How a setter reads its time argument.
#[derive(Clone, Copy)]
struct TimeArg {
    name: &'static str,
    unit_ms: i64,
    relative: bool,
}

pub(super) fn hexpire(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    set_deadlines(
        ctx,
        args,
        TimeArg {
            name: "hexpire",
            unit_ms: 1000,
            relative: true,
        },
    )
}

pub(super) fn hpexpire(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    set_deadlines(
        ctx,
        args,
        TimeArg {
            name: "hpexpire",
            unit_ms: 1,
            relative: true,
        },
    )
}

pub(super) fn hexpireat(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    set_deadlines(
        ctx,
        args,
        TimeArg {
            name: "hexpireat",
            unit_ms: 1000,
            relative: false,
        },
    )
}

pub(super) fn hpexpireat(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    set_deadlines(
        ctx,
        args,
        TimeArg {
            name: "hpexpireat",
            unit_ms: 1,
            relative: false,
        },
    )
}

/// The NX / XX / GT / LT condition of a setter (one at most).
#[derive(Clone, Copy)]
enum Condition {
    Always,
    Nx,
    Xx,
    Gt,
    Lt,
}

impl Condition {
    fn parse(arg: &[u8]) -> Option<Condition> {
        [
            ("NX", Condition::Nx),
            ("XX", Condition::Xx),
            ("GT", Condition::Gt),
            ("LT", Condition::Lt),
        ]
        .into_iter()
        .find(|(name, _)| args::is(arg, name))
        .map(|(_, c)| c)
    }

    /// May a field whose deadline is `current` get `at`? No deadline counts as an
    /// infinitely distant one for GT and LT.
    fn allows(self, current: Option<u64>, at: u64) -> bool {
        match self {
            Condition::Always => true,
            Condition::Nx => current.is_none(),
            Condition::Xx => current.is_some(),
            Condition::Gt => current.is_some_and(|c| at > c),
            Condition::Lt => current.is_none_or(|c| at < c),
        }
    }
}

/// `FIELDS numfields field...` starting at `args[at]`: the fields, with Redis's
/// errors for a missing keyword and a count that is not positive or does not match.
fn fields_at<'a>(args: &'a [&'a [u8]], at: usize) -> Result<&'a [&'a [u8]], CmdError> {
    if !args.get(at).is_some_and(|a| args::is(a, "FIELDS")) {
        return Err(FIELDS_MISSING.into());
    }
    let count = args
        .get(at + 1)
        .and_then(|n| crate::util::numbers::parse_i64(n));
    let Some(count) = count.filter(|&n| n >= 1) else {
        return Err("ERR Number of fields must be a positive integer".into());
    };
    let fields = &args[at + 2..];
    if count as usize != fields.len() {
        return Err("ERR The `numfields` parameter must match the number of arguments".into());
    }
    Ok(fields)
}

/// The absolute deadline a setter's time argument names, with Redis's checks.
fn deadline(arg: &[u8], time: TimeArg, now_ms: u64) -> Result<u64, CmdError> {
    let amount = args::int(arg)?;
    if amount < 0 {
        return Err("ERR invalid expire time, must be >= 0".into());
    }
    let base = if time.relative { now_ms as i64 } else { 0 };
    let invalid = || {
        CmdError::from(format!(
            "ERR invalid expire time in '{}' command",
            time.name
        ))
    };
    let ms = amount.checked_mul(time.unit_ms).ok_or_else(invalid)?;
    if ms > MAX_DEADLINE_MS - base {
        return Err(invalid());
    }
    Ok((ms + base) as u64)
}

/// Is there a hash at `key`? WRONGTYPE for another type; `Ok(false)` when missing.
fn has_hash(ctx: &mut Ctx, key: &[u8]) -> Result<bool, CmdError> {
    match ctx.keys.get(key).map(|e| &e.value) {
        None => Ok(false),
        Some(Value::Hash(_)) => Ok(true),
        Some(_) => Err(errors::WRONGTYPE.into()),
    }
}

/// Reply with `codes` as an array of integers.
fn reply_codes(ctx: &mut Ctx, codes: impl ExactSizeIterator<Item = i64>) {
    ctx.out.array(codes.len());
    for code in codes {
        ctx.out.int(code);
    }
}

fn set_deadlines(ctx: &mut Ctx, args: &[&[u8]], time: TimeArg) -> CmdResult {
    let key = args[1];
    let exists = has_hash(ctx, key)?;
    let now = ctx.keys.now_ms;
    let at = deadline(args[2], time, now)?;
    let (condition, fields_from) = if args::is(args[3], "FIELDS") {
        (Condition::Always, 3)
    } else {
        match Condition::parse(args[3]) {
            Some(condition) => (condition, 4),
            None => return Err(FIELDS_MISSING.into()),
        }
    };
    let fields = fields_at(args, fields_from)?;
    if !exists {
        reply_codes(ctx, fields.iter().map(|_| -2));
        return Ok(());
    }
    let mut codes = Vec::with_capacity(fields.len());
    let (mut set, mut deleted) = (Vec::new(), Vec::new());
    for &field in fields {
        let Some(Value::Hash(hash)) = ctx.keys.get(key).map(|e| &mut e.value) else {
            // The hash went with its last field, deleted just before.
            codes.push(-2);
            continue;
        };
        if !hash.contains(field) {
            codes.push(-2);
        } else if !condition.allows(hash.deadline_of(field), at) {
            codes.push(0);
        } else if at <= now {
            hash.remove(field);
            let emptied = hash.is_empty();
            settle_collection(ctx.keys, key, emptied);
            deleted.push(field);
            codes.push(2);
        } else {
            ctx.keys.set_member_deadline(key, field, at);
            set.push(field);
            codes.push(1);
        }
    }
    if !set.is_empty() {
        let at_text = at.to_string();
        let count = set.len().to_string();
        let mut effect: Vec<&[u8]> = vec![b"HPEXPIREAT", key, at_text.as_bytes(), b"FIELDS"];
        effect.push(count.as_bytes());
        effect.extend_from_slice(&set);
        ctx.propagate(&effect);
        ctx.keys.notify(class::HASH, "hexpire", key);
    }
    if !deleted.is_empty() {
        let mut effect: Vec<&[u8]> = vec![b"HDEL", key];
        effect.extend_from_slice(&deleted);
        ctx.propagate(&effect);
        ctx.keys.notify(class::HASH, "hdel", key);
    }
    reply_codes(ctx, codes.into_iter());
    Ok(())
}

/// How a reader reports a deadline.
#[derive(Clone, Copy)]
enum Report {
    /// Time left, in seconds rounded up (HTTL) or ms (HPTTL).
    Remaining { in_ms: bool },
    /// The Unix time, in seconds (HEXPIRETIME) or ms (HPEXPIRETIME).
    Absolute { in_ms: bool },
}

pub(super) fn httl(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    report_deadlines(ctx, args, Report::Remaining { in_ms: false })
}

pub(super) fn hpttl(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    report_deadlines(ctx, args, Report::Remaining { in_ms: true })
}

pub(super) fn hexpiretime(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    report_deadlines(ctx, args, Report::Absolute { in_ms: false })
}

pub(super) fn hpexpiretime(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    report_deadlines(ctx, args, Report::Absolute { in_ms: true })
}

fn report_deadlines(ctx: &mut Ctx, args: &[&[u8]], report: Report) -> CmdResult {
    let now = ctx.keys.now_ms;
    let hash = super::read_hash(ctx.keys, args[1])?;
    let fields = fields_at(args, 2)?;
    let code = |field: &[u8]| -> i64 {
        let Some(hash) = hash else { return -2 };
        if !hash.contains(field) {
            return -2;
        }
        let Some(at) = hash.deadline_of(field) else {
            return -1;
        };
        let (ms, in_ms) = match report {
            Report::Remaining { in_ms } => (at.saturating_sub(now), in_ms),
            Report::Absolute { in_ms } => (at, in_ms),
        };
        if in_ms {
            ms as i64
        } else {
            ms.div_ceil(1000) as i64
        }
    };
    let codes: Vec<i64> = fields.iter().map(|f| code(f)).collect();
    reply_codes(ctx, codes.into_iter());
    Ok(())
}

/// HPERSIST key FIELDS n field...: -2 no such field, -1 no deadline, 1 dropped.
pub(super) fn hpersist(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let exists = has_hash(ctx, key)?;
    let fields = fields_at(args, 2)?;
    let mut persisted = Vec::new();
    let codes: Vec<i64> = fields
        .iter()
        .map(|&field| {
            let Some(Value::Hash(hash)) = ctx.keys.get(key).map(|e| &e.value) else {
                return -2;
            };
            if !exists || !hash.contains(field) {
                -2
            } else if ctx.keys.clear_member_deadline(key, field) {
                persisted.push(field);
                1
            } else {
                -1
            }
        })
        .collect();
    if !persisted.is_empty() {
        let count = persisted.len().to_string();
        let mut effect: Vec<&[u8]> = vec![b"HPERSIST", key, b"FIELDS", count.as_bytes()];
        effect.extend_from_slice(&persisted);
        ctx.propagate(&effect);
        ctx.keys.notify(class::HASH, "hpersist", key);
    }
    reply_codes(ctx, codes.into_iter());
    Ok(())
}
