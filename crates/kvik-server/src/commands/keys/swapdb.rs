//! SWAPDB: two databases exchange their contents. Clients keep their selected index,
//! so each one now sees the other database's keys.

use super::super::table::{LockRequest, Need, Needs};
use super::super::{args, errors, CmdError, CmdResult, Ctx};

/// A database index of SWAPDB: any `int`, else the given error; its range is checked
/// once both were read.
fn index(arg: &[u8], invalid: &'static str) -> Result<i64, CmdError> {
    args::int_in(arg, i32::MIN.into(), i32::MAX.into(), invalid)
        .map_err(|_| CmdError::from(invalid))
}

/// The two databases, when both indexes are valid.
fn databases(args: &[&[u8]], count: usize) -> Result<(usize, usize), CmdError> {
    let first = index(args[1], "ERR invalid first DB index")?;
    let second = index(args[2], "ERR invalid second DB index")?;
    let in_range = |i: i64| usize::try_from(i).ok().filter(|&i| i < count);
    match (in_range(first), in_range(second)) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(errors::DB_OUT_OF_RANGE.into()),
    }
}

/// What SWAPDB locks: every shard of both databases.
pub(super) fn swapdb_needs(request: &LockRequest) -> Needs {
    match databases(request.args, request.databases) {
        Ok((a, b)) => Needs::from_iter([Need::Db(a), Need::Db(b)]),
        Err(_) => Needs::new(),
    }
}

pub(super) fn swapdb(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let ks = &ctx.server.keyspace;
    let (a, b) = databases(args, ks.databases())?;
    let keys = &mut *ctx.keys;
    if a != b {
        // The watched keys of each database that either side holds change.
        keys.signal_db_replaced(a, Some(b));
        keys.signal_db_replaced(b, Some(a));
        for shard in 0..ks.shards_per_db() {
            let taken = std::mem::take(keys.shard_at(a, shard));
            let other = std::mem::replace(keys.shard_at(b, shard), taken);
            *keys.shard_at(a, shard) = other;
        }
        ks.crons.swap_dbs(a, b);
    }
    keys.add_dirty(1);
    ctx.out.ok();
    Ok(())
}
