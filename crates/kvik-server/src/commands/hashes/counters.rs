//! HINCRBY and HINCRBYFLOAT: add to the number a field holds (a missing field or key
//! counts as 0). The increment is checked before the key's type, as in Redis.
//!
//! HINCRBYFLOAT computes in long double precision and stores the text it replies
//! with; it propagates as `HSET key field <result>`, so that replicas store the same
//! bytes whatever their floating point does.
//!
//! Under active replication both count the field (`Locked::count_start` before the
//! write, `Locked::count_end` after): it takes, and the reply shows, the value of
//! its counted state, and HINCRBYFLOAT travels as itself, so that peers add the
//! increment to this node's total instead of overwriting theirs.

use super::{limits, write_hash};
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::keyspace::Num;
use crate::util::numbers::{hincr_by_float, parse_hincr_increment, parse_i64};

pub fn hincrby(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, field, increment) = (args[1], args[2], args::int(args[3])?);
    let by = Num::Int(increment);
    let counting = ctx.keys.count_start(key, Some(field), &by);
    // A peer's increment of a field that a concurrent HINCRBYFLOAT made a float
    // here still counts, as on a whole string (see `strings::counters`).
    let merges_into_float = counting.is_some() && crate::effects::replaying_now();
    let limits = limits(ctx);
    let sum = write_hash(ctx.keys, key, "hincrby", |hash| {
        let current = match hash.get(field).map(parse_i64) {
            None => 0,
            Some(Some(current)) => current,
            Some(None) if merges_into_float => 0,
            Some(None) => return Err("ERR hash value is not an integer".into()),
        };
        let sum = current
            .checked_add(increment)
            .ok_or(CmdError::from(errors::OVERFLOW))?;
        hash.insert(field, itoa::Buffer::new().format(sum).as_bytes(), limits);
        Ok((sum, 1))
    })?;
    let sum = match counting.map(|c| ctx.keys.count_end(key, Some(field), c, &by)) {
        Some(Num::Int(counted)) => counted,
        Some(counted) => {
            if merges_into_float {
                ctx.keys.propagate_counted_on_float(&args[..4], Some(field));
                ctx.propagated = true;
            }
            parse_i64(&counted.text()).unwrap_or(sum)
        }
        None => sum,
    };
    ctx.out.int(sum);
    Ok(())
}

pub fn hincrbyfloat(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, field) = (args[1], args[2]);
    let increment = parse_hincr_increment(args[3]).map_err(|e| CmdError::from(e.message()))?;
    let by = Num::Float(args[3].into());
    let counting = ctx.keys.count_start(key, Some(field), &by);
    let limits = limits(ctx);
    let sum = write_hash(ctx.keys, key, "hincrbyfloat", |hash| {
        let sum =
            hincr_by_float(hash.get(field), increment).map_err(|e| CmdError::from(e.message()))?;
        hash.insert(field, &sum, limits);
        Ok((sum, 1))
    })?;
    match counting {
        Some(counter) => {
            let counted = ctx.keys.count_end(key, Some(field), counter, &by);
            ctx.out.bulk(&counted.text());
        }
        None => {
            ctx.out.bulk(&sum);
            ctx.propagate(&[b"HSET", key, field, &sum]);
        }
    }
    Ok(())
}
