//! SWAPDB: two databases exchange their contents. Clients keep their selected index,
//! so each one now sees the other database's keys.

use super::super::{args, errors, CmdError, CmdResult, Ctx};
use super::under_own_locks;
use crate::keyspace::Locked;

/// A database index of SWAPDB: any `int`, else the given error; its range is checked
/// once both were read.
fn index(arg: &[u8], invalid: &'static str) -> Result<i64, CmdError> {
    args::int_in(arg, i32::MIN.into(), i32::MAX.into(), invalid)
        .map_err(|_| CmdError::from(invalid))
}

pub(super) fn swapdb(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let first = index(args[1], "ERR invalid first DB index")?;
    let second = index(args[2], "ERR invalid second DB index")?;
    let ks = &ctx.server.keyspace;
    let in_range = |i: i64| usize::try_from(i).ok().filter(|&i| i < ks.databases());
    let (Some(a), Some(b)) = (in_range(first), in_range(second)) else {
        return Err(errors::DB_OUT_OF_RANGE.into());
    };
    let locked = Locked::databases(ctx.key_env(), ctx.client.db, ctx.keys.now_ms, &[a, b]);
    under_own_locks(ctx, args, locked, |keys| {
        if a != b {
            for shard in 0..ks.shards_per_db() {
                let taken = std::mem::take(keys.shard_at(a, shard));
                let other = std::mem::replace(keys.shard_at(b, shard), taken);
                *keys.shard_at(a, shard) = other;
            }
        }
        keys.add_dirty(1);
    });
    ctx.out.ok();
    Ok(())
}
