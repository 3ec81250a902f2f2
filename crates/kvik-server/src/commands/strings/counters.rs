//! Counters: INCR, DECR, INCRBY, DECRBY and INCRBYFLOAT. A missing key counts as 0;
//! the key keeps its deadline.
//!
//! Integer results are stored int-encoded. INCRBYFLOAT computes in long double
//! precision (see [`incr_by_float`]), stores the text it replies with (never
//! int-encoded, as in Redis), and propagates as `SET key <result> KEEPTTL`, so that
//! replicas hold the same bytes whatever their floating point does.
//!
//! Under active replication every one of them counts (`Locked::count_start` before
//! the write, `Locked::count_end` after): the key takes, and the reply shows, the
//! value of its counted state, and INCRBYFLOAT travels as itself, so that peers add
//! the increment to this node's total instead of overwriting theirs. A peer's
//! INCRBY counted here on a float goes on to the peers as itself and to the AOF and
//! the plain replicas as the value it made (they would refuse it on a float). A
//! peer's increment of a value that holds no number ("abc") is not refused: it
//! waits in the key's count (see `Counter::waits`), writing nothing.

use super::{store, Expiry};
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::keyspace::{Counting, Num};
use crate::notify::class;
use crate::types::string::StrValue;
use crate::util::numbers::{incr_by_float, IncrFloatError};

pub fn incr(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    incr_by(ctx, args[1], 1)
}

pub fn decr(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    incr_by(ctx, args[1], -1)
}

pub fn incrby(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    incr_by(ctx, args[1], args::int(args[2])?)
}

pub fn decrby(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let delta = args::int(args[2])?
        .checked_neg()
        .ok_or(CmdError::from("ERR decrement would overflow"))?;
    incr_by(ctx, args[1], delta)
}

/// Add `delta` to the integer at `key`.
fn incr_by(ctx: &mut Ctx, key: &[u8], delta: i64) -> CmdResult {
    let by = Num::Int(delta);
    let counting = match ctx.keys.count_start(key, None, &by) {
        Some(counter) if waits_for_a_number(&counter) => {
            return keep_waiting(ctx, key, counter, &by);
        }
        counting => counting,
    };
    // A peer's increment of a counter that a concurrent INCRBYFLOAT made a float
    // here still counts (its node's total is in the sum the peer holds): the
    // stored value is the counted sum, whatever the running value was.
    let merges_into_float = counting.is_some() && crate::effects::replaying_now();
    let current = match ctx.keys.get(key) {
        None => 0,
        Some(entry) => {
            let text = entry
                .value
                .as_str()
                .ok_or(CmdError::from(errors::WRONGTYPE))?;
            match text.as_i64() {
                Some(current) => current,
                None if merges_into_float => 0,
                None => return Err(errors::NOT_INTEGER.into()),
            }
        }
    };
    let new = current
        .checked_add(delta)
        .ok_or(CmdError::from(errors::OVERFLOW))?;
    store(ctx.keys, key, StrValue::Int(new), Expiry::Keep);
    let new = match counting.map(|c| ctx.keys.count_end(key, None, c, &by)) {
        Some(Num::Int(counted)) => counted,
        Some(counted) => {
            if merges_into_float {
                let delta = delta.to_string();
                ctx.keys
                    .propagate_counted_on_float(&[b"INCRBY", key, delta.as_bytes()], None);
                ctx.propagated = true;
            }
            crate::util::numbers::parse_i64(&counted.text()).unwrap_or(new)
        }
        None => new,
    };
    ctx.keys.notify(class::STRING, "incrby", key);
    ctx.out.int(new);
    Ok(())
}

pub fn incrbyfloat(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, increment) = (args[1], args[2]);
    let by = Num::Float(increment.into());
    let counting = match ctx.keys.count_start(key, None, &by) {
        Some(counter) if waits_for_a_number(&counter) => {
            return keep_waiting(ctx, key, counter, &by);
        }
        counting => counting,
    };
    let mut digits = itoa::Buffer::new();
    let sum = match ctx.keys.get(key) {
        None => incr_by_float(b"0", increment),
        Some(entry) => {
            let current = entry
                .value
                .as_str()
                .ok_or(CmdError::from(errors::WRONGTYPE))?;
            incr_by_float(current.bytes(&mut digits), increment)
        }
    }
    .map_err(|e| match e {
        IncrFloatError::NotAFloat => CmdError::from(errors::NOT_FLOAT),
        IncrFloatError::NanOrInfinity => {
            CmdError::from("ERR increment would produce NaN or Infinity")
        }
    })?;
    store(
        ctx.keys,
        key,
        StrValue::from_bytes_unencoded(&sum),
        Expiry::Keep,
    );
    ctx.keys.notify(class::STRING, "incrbyfloat", key);
    match counting {
        Some(counter) => ctx
            .out
            .bulk(&ctx.keys.count_end(key, None, counter, &by).text()),
        None => {
            ctx.out.bulk(&sum);
            ctx.propagate(&[b"SET", key, &sum, b"KEEPTTL"]);
        }
    }
    Ok(())
}

/// Is `counting` the state a peer's increment adds to on a value that holds no
/// number (see `Counter::waits`)? Our own increment of such a value is refused,
/// as in Redis.
fn waits_for_a_number(counting: &Counting) -> bool {
    counting.waits() && crate::effects::replaying_now()
}

/// Keep a peer's increment `by` of `key` waiting in `counting` (see
/// [`waits_for_a_number`]), as on a node that met it before the value the key
/// holds: the value stays. It writes no effect of its own: it goes on to the
/// peers as it was born (a peer's write that changed nothing here), and the
/// AOF and the plain replicas, which would refuse it, hold the value already.
fn keep_waiting(ctx: &mut Ctx, key: &[u8], counting: Counting, by: &Num) -> CmdResult {
    let held = ctx.keys.count_end(key, None, counting, by);
    ctx.out.bulk(&held.text());
    Ok(())
}
