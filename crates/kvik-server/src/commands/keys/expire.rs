//! Key deadlines: EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT set them; TTL, PTTL,
//! EXPIRETIME and PEXPIRETIME read them; PERSIST drops them. TTL, PTTL and PERSIST
//! also take a member, for KeyDB's member deadlines (set in [`super::members`]).
//!
//! Setting a deadline propagates as `PEXPIREAT key <absolute ms> [conditions]`, so a
//! replica, or an AOF replayed later, expires the key at the same instant whatever
//! its own clock says when the effect arrives. A deadline already in the past deletes
//! the key on the spot and propagates `DEL key`.
//!
//! Under active replication these commands change a TTL register that merges by max
//! across nodes (`keyspace/ttl.rs`): the table flags them `MERGES_AS_TTL`.

use super::super::{args, CmdError, CmdResult, Ctx};
use super::count_read;
use crate::notify::class;

/// The four setters differ only in how their time argument reads.
#[derive(Clone, Copy)]
struct TimeArg {
    /// The command's name, for its error text.
    name: &'static str,
    /// Milliseconds per unit of the argument.
    unit_ms: i64,
    /// Relative to now (EXPIRE, PEXPIRE) or a Unix time (EXPIREAT, PEXPIREAT).
    relative: bool,
}

pub(super) fn expire(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    set_deadline(
        ctx,
        args,
        TimeArg {
            name: "expire",
            unit_ms: 1000,
            relative: true,
        },
    )
}

pub(super) fn pexpire(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    set_deadline(
        ctx,
        args,
        TimeArg {
            name: "pexpire",
            unit_ms: 1,
            relative: true,
        },
    )
}

pub(super) fn expireat(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    set_deadline(
        ctx,
        args,
        TimeArg {
            name: "expireat",
            unit_ms: 1000,
            relative: false,
        },
    )
}

pub(super) fn pexpireat(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    set_deadline(
        ctx,
        args,
        TimeArg {
            name: "pexpireat",
            unit_ms: 1,
            relative: false,
        },
    )
}

/// The NX / XX / GT / LT conditions of the setters.
#[derive(Default)]
struct Conditions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

impl Conditions {
    fn parse(options: &[&[u8]]) -> Result<Self, CmdError> {
        let mut c = Conditions::default();
        for &opt in options {
            let flag = if args::is(opt, "NX") {
                &mut c.nx
            } else if args::is(opt, "XX") {
                &mut c.xx
            } else if args::is(opt, "GT") {
                &mut c.gt
            } else if args::is(opt, "LT") {
                &mut c.lt
            } else {
                let opt = String::from_utf8_lossy(opt);
                return Err(format!("ERR Unsupported option {opt}").into());
            };
            *flag = true;
        }
        if c.nx && (c.xx || c.gt || c.lt) {
            return Err(
                "ERR NX and XX, GT or LT options at the same time are not compatible".into(),
            );
        }
        if c.gt && c.lt {
            return Err("ERR GT and LT options at the same time are not compatible".into());
        }
        Ok(c)
    }

    /// May a key whose deadline is `current` (0: none) get the deadline `when`?
    /// No deadline counts as an infinitely distant one for GT and LT.
    fn allow(&self, current: u64, when: i64) -> bool {
        let has_ttl = current != 0;
        let current = current as i64;
        !(self.nx && has_ttl
            || self.xx && !has_ttl
            || self.gt && (!has_ttl || when <= current)
            || self.lt && has_ttl && when >= current)
    }
}

/// The absolute deadline in ms an argument names, with Redis's overflow checks.
/// Negative and past deadlines are valid: they delete the key.
fn absolute_ms(arg: &[u8], time: TimeArg, now_ms: u64) -> Result<i64, CmdError> {
    let n = args::int(arg)?;
    let invalid = || {
        CmdError::from(format!(
            "ERR invalid expire time in '{}' command",
            time.name
        ))
    };
    let ms = n.checked_mul(time.unit_ms).ok_or_else(invalid)?;
    let base = if time.relative { now_ms as i64 } else { 0 };
    if ms > i64::MAX - base {
        return Err(invalid());
    }
    Ok(ms + base)
}

fn set_deadline(ctx: &mut Ctx, args: &[&[u8]], time: TimeArg) -> CmdResult {
    let key = args[1];
    let conditions = Conditions::parse(&args[3..])?;
    let now = ctx.keys.now_ms;
    let when = absolute_ms(args[2], time, now)?;
    let current = match ctx.keys.get(key) {
        Some(entry) => entry.expire_at,
        None => {
            ctx.keys.ttl_change_of_absent(key, when.max(1) as u64);
            ctx.out.int(0);
            return Ok(());
        }
    };
    if !conditions.allow(current, when) {
        ctx.out.int(0);
        return Ok(());
    }
    // Under active replication a TTL that was changed since the key's value was
    // written only grows (see keyspace/ttl.rs), as if GT were given: a deadline
    // already past may then leave the key as it is.
    let deadline = when.max(1) as u64;
    if when <= now as i64 && !ctx.keys.keeps_ttl(key, deadline) {
        ctx.keys.remove(key);
        ctx.keys.notify(class::GENERIC, "del", key);
        ctx.propagate(&[b"DEL", key]);
    } else if !ctx.keys.set_expire(key, deadline) {
        ctx.out.int(0);
        return Ok(());
    } else {
        ctx.keys.notify(class::GENERIC, "expire", key);
        // PEXPIREAT already says what it did; the others are rewritten to it, their
        // conditions kept.
        if time.relative || time.unit_ms != 1 {
            let when = when.to_string();
            let mut effect: Vec<&[u8]> = vec![b"PEXPIREAT", key, when.as_bytes()];
            effect.extend_from_slice(&args[3..]);
            ctx.propagate(&effect);
        }
    }
    ctx.out.int(1);
    Ok(())
}

/// How a reader reports a deadline.
#[derive(Clone, Copy)]
enum Report {
    /// Time left (TTL, PTTL).
    Remaining,
    /// The Unix time itself (EXPIRETIME, PEXPIRETIME).
    Absolute,
}

/// `TTL key [member]`: a member's deadline is KeyDB's addition.
pub(super) fn ttl(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match args {
        [_, key] => report_deadline(ctx, key, Report::Remaining, false),
        [_, key, member] => report_member_deadline(ctx, key, member, false),
        _ => Err(INVALID_ARGUMENTS.into()),
    }
}

pub(super) fn pttl(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match args {
        [_, key] => report_deadline(ctx, key, Report::Remaining, true),
        [_, key, member] => report_member_deadline(ctx, key, member, true),
        _ => Err(INVALID_ARGUMENTS.into()),
    }
}

/// KeyDB's reply to TTL, PTTL and PERSIST with more than a member.
const INVALID_ARGUMENTS: &str = "ERR Invalid arguments";

pub(super) fn expiretime(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    report_deadline(ctx, args[1], Report::Absolute, false)
}

pub(super) fn pexpiretime(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    report_deadline(ctx, args[1], Report::Absolute, true)
}

/// -2 for a missing key, -1 for a key without deadline, else the deadline in ms or
/// in seconds rounded to the nearest. Reading a deadline is not an access: the key's
/// access clock stays as it was.
fn report_deadline(ctx: &mut Ctx, key: &[u8], report: Report, in_ms: bool) -> CmdResult {
    let deadline = ctx.keys.peek(key).map(|e| e.expire_at);
    reply_deadline(ctx, deadline, report, in_ms)
}

/// As for a key, -2 without the key; -1 when the member has no deadline (or is not
/// there, or the key has no members), as KeyDB answers.
fn report_member_deadline(ctx: &mut Ctx, key: &[u8], member: &[u8], in_ms: bool) -> CmdResult {
    let deadline = ctx.keys.peek(key).map(|e| {
        e.value
            .members()
            .and_then(|c| c.deadline_of(member))
            .unwrap_or(0)
    });
    reply_deadline(ctx, deadline, Report::Remaining, in_ms)
}

/// Reply with `deadline` (None: no key; 0: none) as `report` and `in_ms` say.
fn reply_deadline(ctx: &mut Ctx, deadline: Option<u64>, report: Report, in_ms: bool) -> CmdResult {
    let now = ctx.keys.now_ms;
    count_read(ctx.stats, deadline.is_some());
    let reply = match deadline {
        None => -2,
        Some(0) => -1,
        Some(at) => {
            let ms = match report {
                Report::Remaining => at.saturating_sub(now),
                Report::Absolute => at,
            };
            let value = if in_ms { ms } else { (ms + 500) / 1000 };
            value as i64
        }
    };
    ctx.out.int(reply);
    Ok(())
}

/// `PERSIST key [member]`: a member's deadline is KeyDB's addition.
pub(super) fn persist(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let had_deadline = match args {
        [_, _] => {
            let had = match ctx.keys.get(key) {
                Some(entry) => Some(entry.expire_at != 0),
                None => {
                    ctx.keys.ttl_change_of_absent(key, 0);
                    None
                }
            };
            // A peer's PERSIST is a change of the TTL register here too, even
            // where the key has no deadline (see keyspace/ttl.rs).
            let replayed = had.is_some() && crate::hlc::imposed_now().is_some();
            if had == Some(true) || replayed {
                ctx.keys.set_expire(key, 0);
            }
            had == Some(true)
        }
        [_, _, member] => ctx.keys.clear_member_deadline(key, member),
        _ => return Err(INVALID_ARGUMENTS.into()),
    };
    if had_deadline {
        ctx.keys.notify(class::GENERIC, "persist", key);
    }
    ctx.out.int(had_deadline.into());
    Ok(())
}
