//! HINCRBY and HINCRBYFLOAT: add to the number a field holds (a missing field or key
//! counts as 0). The increment is checked before the key's type, as in Redis.
//!
//! HINCRBYFLOAT computes in long double precision and stores the text it replies
//! with; it propagates as `HSET key field <result>`, so that replicas store the same
//! bytes whatever their floating point does.

use super::{limits, write_hash};
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::util::numbers::{hincr_by_float, parse_hincr_increment, parse_i64};

pub fn hincrby(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (field, increment) = (args[2], args::int(args[3])?);
    let limits = limits(ctx);
    let sum = write_hash(ctx.keys, args[1], "hincrby", |hash| {
        let current = match hash.get(field) {
            None => 0,
            Some(text) => {
                parse_i64(text).ok_or(CmdError::from("ERR hash value is not an integer"))?
            }
        };
        let sum = current
            .checked_add(increment)
            .ok_or(CmdError::from(errors::OVERFLOW))?;
        hash.insert(field, itoa::Buffer::new().format(sum).as_bytes(), limits);
        Ok((sum, 1))
    })?;
    ctx.out.int(sum);
    Ok(())
}

pub fn hincrbyfloat(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, field) = (args[1], args[2]);
    let increment = parse_hincr_increment(args[3]).map_err(|e| CmdError::from(e.message()))?;
    let limits = limits(ctx);
    let sum = write_hash(ctx.keys, key, "hincrbyfloat", |hash| {
        let sum =
            hincr_by_float(hash.get(field), increment).map_err(|e| CmdError::from(e.message()))?;
        hash.insert(field, &sum, limits);
        Ok((sum, 1))
    })?;
    ctx.out.bulk(&sum);
    ctx.propagate(&[b"HSET", key, field, &sum]);
    Ok(())
}
