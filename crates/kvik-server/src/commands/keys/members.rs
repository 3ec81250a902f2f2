//! KeyDB's member expiry: EXPIREMEMBER, EXPIREMEMBERAT and PEXPIREMEMBERAT give one
//! member of a set, field of a hash or member of a sorted set a deadline; TTL, PTTL
//! and PERSIST with a member argument (in [`super::expire`]) read and drop it.
//!
//! A deadline propagates as `PEXPIREMEMBERAT key member <absolute ms>`, so replicas
//! and the AOF expire the member at the same instant; the expiry itself propagates
//! as the removal (see `keyspace/members.rs`). A deadline already past removes the
//! member at once, as its expiry would.

use super::super::{args, CmdError, CmdResult, Ctx};

/// How the setters read their time argument.
#[derive(Clone, Copy)]
struct TimeArg {
    name: &'static str,
    unit_ms: i64,
    relative: bool,
}

/// `EXPIREMEMBER key member time [s|ms]`: relative, in seconds unless told.
pub(super) fn expiremember(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let amount = args::int(args[3])?;
    if args.len() > 5 {
        return Err("ERR Invalid number of arguments".into());
    }
    let unit_ms = match args.get(4) {
        None => 1000,
        Some(unit) if args::is(unit, "s") => 1000,
        Some(unit) if args::is(unit, "ms") => 1,
        Some(_) => return Err("ERR Invalid unit arg".into()),
    };
    let time = TimeArg {
        name: "expiremember",
        unit_ms,
        relative: true,
    };
    expire_member(ctx, args, amount, time)
}

/// `EXPIREMEMBERAT key member unix-seconds`.
pub(super) fn expirememberat(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let amount = args::int(args[3])?;
    let time = TimeArg {
        name: "expirememberat",
        unit_ms: 1000,
        relative: false,
    };
    expire_member(ctx, args, amount, time)
}

/// `PEXPIREMEMBERAT key member unix-ms`: what every setter propagates as.
pub(super) fn pexpirememberat(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let amount = args::int(args[3])?;
    let time = TimeArg {
        name: "pexpirememberat",
        unit_ms: 1,
        relative: false,
    };
    expire_member(ctx, args, amount, time)
}

/// The absolute deadline in ms, refusing what does not fit (KeyDB lets it wrap).
fn absolute_ms(amount: i64, time: TimeArg, now_ms: u64) -> Result<u64, CmdError> {
    let base = if time.relative { now_ms as i64 } else { 0 };
    amount
        .checked_mul(time.unit_ms)
        .and_then(|ms| ms.checked_add(base))
        .map(|ms| ms.max(0) as u64)
        .ok_or_else(|| format!("ERR invalid expire time in '{}' command", time.name).into())
}

/// 0 without the key or the member, KeyDB's error for a type without members, else
/// 1 with the deadline set.
fn expire_member(ctx: &mut Ctx, args: &[&[u8]], amount: i64, time: TimeArg) -> CmdResult {
    let (key, member) = (args[1], args[2]);
    let now = ctx.keys.now_ms;
    let at = absolute_ms(amount, time, now)?;
    let Some(entry) = ctx.keys.get(key) else {
        ctx.out.int(0);
        return Ok(());
    };
    if entry.value.members().is_none() {
        return Err("ERR object type is unsupported".into());
    }
    if !ctx.keys.set_member_deadline(key, member, at) {
        ctx.out.int(0);
        return Ok(());
    }
    let at_text = at.to_string();
    ctx.propagate(&[b"PEXPIREMEMBERAT", key, member, at_text.as_bytes()]);
    if at <= now {
        ctx.keys.expire_members_now(key);
    }
    ctx.out.int(1);
    Ok(())
}
