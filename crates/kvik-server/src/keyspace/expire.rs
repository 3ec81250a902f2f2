//! The active expiry cycle: each worker thread deletes the due keys of its share of
//! the shards (shard `i` of every database belongs to worker `i % workers`), within
//! a time budget per cycle (Redis's adaptive effort), resuming where its last cycle
//! stopped. A shard whose earliest deadline is still ahead is skipped without its
//! lock. What an expired key emits is said once, in [`KeyEnv::removed_by_server`].

use super::KeyEnv;
use crate::notify::class;
use std::time::{Duration, Instant};

/// Where a worker's next cycle resumes.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExpireCursor {
    db: usize,
    /// The position among the worker's shards of `db`.
    pos: usize,
}

/// Delete due keys in the share of worker `worker` (of `workers`) for about
/// `budget`, from `cursor` on. Returns whether the budget ran out before the share
/// was walked (more may be due).
pub fn active_expire_cycle(
    env: &KeyEnv,
    (worker, workers): (usize, usize),
    cursor: &mut ExpireCursor,
    budget: Duration,
) -> bool {
    /// Shards visited between two looks at the clock.
    const CLOCK_EVERY: usize = 64;
    /// Keys one visit of a shard may delete before moving on.
    const KEYS_PER_VISIT: usize = 256;
    let started = Instant::now();
    let ks = env.keyspace;
    let mut now = crate::hlc::unix_ms();
    if ks.expiry_held(now) {
        return false;
    }
    // This worker's shards of one database: worker, worker + workers, ...
    let per_db = ks.shards_per_db().saturating_sub(worker).div_ceil(workers);
    let dbs = ks.databases();
    let ExpireCursor { mut db, mut pos } = *cursor;
    let mut out_of_time = false;
    // A shard that was locked and worked on costs far more than one skipped by its
    // hint: the clock is read after each of those, so a short budget holds.
    let mut worked = false;
    for visited in 0..dbs * per_db {
        if worked || visited % CLOCK_EVERY == CLOCK_EVERY - 1 {
            if started.elapsed() >= budget {
                out_of_time = true;
                break;
            }
            now = crate::hlc::unix_ms();
            worked = false;
        }
        if pos >= per_db {
            pos = 0;
            db = (db + 1) % dbs;
        }
        let id = ks.global_id(db, worker + pos * workers);
        if ks.deadline_hint(id) > now {
            pos += 1;
            continue;
        }
        worked = true;
        let mut shard = ks.lock_for_use(id);
        shard.expire_due(now, KEYS_PER_VISIT, |entry| {
            let expired = (class::EXPIRED, "expired");
            let ts = env.removed_by_server(
                db,
                &entry,
                now,
                |s| &s.expired_keys,
                expired,
                |ts, argv| env.effects.append(db, ts, argv),
            );
            entry.free(ks.lazy(crate::lazyfree::Cause::Expire));
            ts
        });
        super::members::expire_due_members(env, db, &mut shard, now, KEYS_PER_VISIT);
        let next = shard.next_due();
        ks.note_deadline(id, next);
        if next.is_none_or(|at| at > now) {
            pos += 1;
        }
        // Otherwise more is due here: stay on this shard.
    }
    *cursor = ExpireCursor { db, pos };
    out_of_time
}
