//! Writing whole values: SET and its shorthands (SETNX, SETEX, PSETEX), GETSET, MSET
//! and MSETNX. Values are stored with the encoding Redis's SET picks (int when the
//! bytes are a canonical integer, else embstr or raw by length).
//!
//! Effects: a write with a deadline propagates as `SET key value PXAT <ms>`, so a
//! replica or an AOF replay expires the key at the same instant however late it runs;
//! SET ... GET propagates without its GET words; GETSET as a plain SET. Everything
//! else propagates as sent, and a write that did not happen propagates nothing.

use super::options::{self, deadline, ExpireUnit, Expiry, OptionsOf, StringOptions};
use super::{reply_value, store};
use crate::commands::{args, CmdError, CmdResult, Ctx};
use crate::notify::class;
use crate::types::string::StrValue;
use smallvec::SmallVec;

/// What all SET-like commands do: check the deadline, reply with the old value for
/// GET, apply NX/XX, store. Returns whether the value was stored.
fn set_generic(
    ctx: &mut Ctx,
    command: &str,
    key: &[u8],
    value: &[u8],
    o: &StringOptions,
) -> Result<bool, CmdError> {
    let now = ctx.keys.now_ms;
    let expire_at = o
        .expire
        .map(|(unit, arg)| deadline(arg, unit, now, command))
        .transpose()?;
    if o.get {
        reply_value(ctx, key)?;
    }
    // Only NX and XX need to know whether the key exists: a plain SET skips the lookup.
    let refused = match (o.nx, o.xx) {
        (true, _) => ctx.keys.exists(key),
        (_, true) => !ctx.keys.exists(key),
        _ => false,
    };
    if refused {
        return Ok(false);
    }
    let expiry = match expire_at {
        Some(at) => Expiry::At(at),
        None if o.keepttl => Expiry::Keep,
        None => Expiry::None,
    };
    store(ctx.keys, key, StrValue::from_bytes(value), expiry);
    ctx.keys.notify(class::STRING, "set", key);
    if expire_at.is_some() {
        ctx.keys.notify(class::GENERIC, "expire", key);
    }
    if let Some(at) = expire_at {
        let mut digits = itoa::Buffer::new();
        let at = digits.format(at).as_bytes();
        ctx.propagate(&[b"SET", key, value, b"PXAT", at]);
    }
    Ok(true)
}

pub fn set(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let o = options::parse(&args[3..], OptionsOf::Set)?;
    let stored = set_generic(ctx, "set", args[1], args[2], &o)?;
    if o.get {
        if stored && o.expire.is_none() {
            propagate_without_get(ctx, args);
        }
    } else if stored {
        ctx.out.ok();
    } else {
        ctx.out.null();
    }
    Ok(())
}

/// A replica has nobody to send the old value to: SET propagates without its GET
/// words (which may be repeated). Only called without a deadline, so no option value
/// can be mistaken for a GET.
fn propagate_without_get(ctx: &mut Ctx, args: &[&[u8]]) {
    let argv: SmallVec<[&[u8]; 8]> = args
        .iter()
        .enumerate()
        .filter(|&(i, arg)| i < 3 || !args::is(arg, "GET"))
        .map(|(_, arg)| *arg)
        .collect();
    ctx.propagate(&argv);
}

pub fn setnx(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let o = StringOptions {
        nx: true,
        ..Default::default()
    };
    let stored = set_generic(ctx, "setnx", args[1], args[2], &o)?;
    ctx.out.int(stored as i64);
    Ok(())
}

pub fn setex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    set_with_ttl(ctx, args, "setex", ExpireUnit::Seconds)
}

pub fn psetex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    set_with_ttl(ctx, args, "psetex", ExpireUnit::Millis)
}

/// SETEX and PSETEX: `key ttl value`.
fn set_with_ttl(ctx: &mut Ctx, args: &[&[u8]], command: &str, unit: ExpireUnit) -> CmdResult {
    let o = StringOptions {
        expire: Some((unit, args[2])),
        ..Default::default()
    };
    set_generic(ctx, command, args[1], args[3], &o)?;
    ctx.out.ok();
    Ok(())
}

pub fn getset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, value) = (args[1], args[2]);
    reply_value(ctx, key)?;
    store(ctx.keys, key, StrValue::from_bytes(value), Expiry::None);
    ctx.keys.notify(class::STRING, "set", key);
    ctx.propagate(&[b"SET", key, value]);
    Ok(())
}

pub fn mset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    store_pairs(ctx, key_value_pairs(args, "mset")?);
    ctx.out.ok();
    Ok(())
}

/// MSETNX sets every pair or, if any of the keys exists, none.
pub fn msetnx(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let pairs = key_value_pairs(args, "msetnx")?;
    if pairs.clone().any(|pair| ctx.keys.exists(pair[0])) {
        ctx.out.int(0);
        return Ok(());
    }
    store_pairs(ctx, pairs);
    ctx.out.int(1);
    Ok(())
}

/// MSET's and MSETNX's writes: each value stored under its key, without a deadline.
fn store_pairs(ctx: &mut Ctx, pairs: std::slice::ChunksExact<'_, &[u8]>) {
    for pair in pairs {
        store(
            ctx.keys,
            pair[0],
            StrValue::from_bytes(pair[1]),
            Expiry::None,
        );
        ctx.keys.notify(class::STRING, "set", pair[0]);
    }
}

/// The `key value` pairs of MSET and MSETNX; an odd count is an arity error.
fn key_value_pairs<'s, 'a>(
    args: &'s [&'a [u8]],
    command: &str,
) -> Result<std::slice::ChunksExact<'s, &'a [u8]>, CmdError> {
    if args.len().is_multiple_of(2) {
        return Err(format!("ERR wrong number of arguments for '{command}' command").into());
    }
    Ok(args[1..].chunks_exact(2))
}
