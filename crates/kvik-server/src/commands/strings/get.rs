//! Reading whole values: GET, MGET, and the two reads that also write, GETDEL and
//! GETEX.
//!
//! Effects: GETDEL propagates as `DEL key`; GETEX never as itself but as what it did
//! to the key: `PEXPIREAT key <ms>` for a new deadline, `DEL key` for an absolute one
//! already past, `PERSIST key` when it removed a deadline, nothing otherwise.

use super::options::{self, deadline, OptionsOf};
use super::{read_string, reply_value};
use crate::commands::{CmdResult, Ctx};
use crate::notify::class;

pub fn get(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    reply_value(ctx, args[1])?;
    Ok(())
}

/// MGET answers nil for a key that holds another type instead of failing.
pub fn mget(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ctx.out.array(args.len() - 1);
    for key in &args[1..] {
        match read_string(ctx.keys, key) {
            Ok(Some(s)) => ctx.out.bulk(s.bytes(&mut itoa::Buffer::new())),
            Ok(None) | Err(_) => ctx.out.null(),
        }
    }
    Ok(())
}

pub fn getdel(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    if reply_value(ctx, key)? {
        ctx.keys.remove(key);
        ctx.keys.notify(class::GENERIC, "del", key);
        ctx.propagate(&[b"DEL", key]);
    }
    Ok(())
}

/// GETEX checks, in Redis's order: the options' syntax, then the key (a missing key
/// is nil even when the deadline is malformed), its type, and only then the deadline.
pub fn getex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let o = options::parse(&args[2..], OptionsOf::GetEx)?;
    let now = ctx.keys.now_ms;
    let Some(value) = read_string(ctx.keys, key)? else {
        ctx.out.null();
        return Ok(());
    };
    let expire = match o.expire {
        Some((unit, arg)) => Some((unit, deadline(arg, unit, now, "getex")?)),
        None => None,
    };
    ctx.out.bulk(value.bytes(&mut itoa::Buffer::new()));
    match expire {
        Some((unit, at)) if unit.is_absolute() && at <= now => {
            ctx.keys.remove(key);
            ctx.keys.notify(class::GENERIC, "del", key);
            ctx.propagate(&[b"DEL", key]);
        }
        Some((_, at)) => {
            ctx.keys.set_expire(key, at);
            ctx.keys.notify(class::GENERIC, "expire", key);
            let mut digits = itoa::Buffer::new();
            ctx.propagate(&[b"PEXPIREAT", key, digits.format(at).as_bytes()]);
        }
        None if o.persist && ctx.keys.get(key).is_some_and(|e| e.expire_at != 0) => {
            ctx.keys.set_expire(key, 0);
            ctx.keys.notify(class::GENERIC, "persist", key);
            ctx.propagate(&[b"PERSIST", key]);
        }
        None => {}
    }
    Ok(())
}
