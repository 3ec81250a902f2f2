//! Eviction: which key goes when used memory is over `maxmemory`, and its removal.
//!
//! Redis's approximation, over kvik's shards. Each round samples a few keys and keeps
//! the best candidates seen so far in a small pool ([`POOL_SIZE`]), ordered by a
//! score: seconds idle (LRU), 255 minus the decayed access counter (LFU), how soon
//! the deadline comes (TTL), or a random number (the random policies, which so pick
//! a random key among those sampled). The best candidate that still exists is
//! evicted. Sampling walks the shards of every database from a cursor that carries
//! over from round to round: `maxmemory-samples` keys from the next shards that have
//! candidates (a random run of a shard's keys; for volatile-ttl the shard's nearest
//! deadlines, which its expiry index keeps in order), passing over for a while the
//! databases where a whole pass found nothing. Keys are spread over shards by
//! their hash, so a run of a shard's keys is as random a sample as Redis's. A
//! volatile policy skips shards without deadlines without locking them (the
//! keyspace's deadline hints) and never evicts a key without one.
//!
//! Owns: the policies, the pool, the sampling walk, removing a chosen key (DEL
//! effect, `evicted` event, WATCH signal, INFO count: [`Locked::evict`]). Must not
//! touch: memory figures and how much to free ([`crate::memory`]), commands. It never
//! waits for a shard: it runs before a command takes its locks, but also from CONFIG
//! SET inside a transaction that holds some, so it only tries locks, one shard at a
//! time, and passes over a shard someone holds.

use super::{AccessClock, Entry, KeyEnv, Locked};

/// Candidates kept between rounds (Redis's eviction pool size).
const POOL_SIZE: usize = 16;

/// `maxmemory-policy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    NoEviction,
    AllKeysLru,
    VolatileLru,
    AllKeysLfu,
    VolatileLfu,
    AllKeysRandom,
    VolatileRandom,
    VolatileTtl,
}

/// How candidates are compared.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rank {
    /// By the access field: idle time or access counter.
    Access,
    Deadline,
    Random,
}

impl Policy {
    /// Every policy by its name, in a fixed order (the index stores it in an atomic).
    pub const ALL: [(&'static str, Policy); 8] = [
        ("noeviction", Policy::NoEviction),
        ("allkeys-lru", Policy::AllKeysLru),
        ("volatile-lru", Policy::VolatileLru),
        ("allkeys-lfu", Policy::AllKeysLfu),
        ("volatile-lfu", Policy::VolatileLfu),
        ("allkeys-random", Policy::AllKeysRandom),
        ("volatile-random", Policy::VolatileRandom),
        ("volatile-ttl", Policy::VolatileTtl),
    ];

    /// The policy named `name` (the configuration checked it is one of them).
    pub fn from_name(name: &str) -> Policy {
        Policy::ALL
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map_or(Policy::NoEviction, |&(_, p)| p)
    }

    /// Keys keep LFU data rather than the LRU clock under this policy.
    pub fn uses_lfu(self) -> bool {
        matches!(self, Policy::AllKeysLfu | Policy::VolatileLfu)
    }

    /// An LRU or LFU policy: candidates are compared by their access field.
    pub fn ranks_by_access(self) -> bool {
        matches!(
            self,
            Policy::AllKeysLru | Policy::VolatileLru | Policy::AllKeysLfu | Policy::VolatileLfu
        )
    }

    /// Only keys with a deadline may be evicted.
    fn volatile(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        )
    }

    fn rank(self) -> Rank {
        match self {
            Policy::AllKeysRandom | Policy::VolatileRandom => Rank::Random,
            Policy::VolatileTtl => Rank::Deadline,
            // noeviction never ranks anything.
            _ => Rank::Access,
        }
    }
}

/// A key the pool holds, by database and name.
struct Candidate {
    /// Larger is a better victim.
    score: u64,
    db: usize,
    key: Vec<u8>,
}

/// A database in which a whole pass of the walk found no candidate is passed over
/// for this long (so a server using one of 16 databases does not try 15,360 empty
/// shards on every pass); a key written there meanwhile waits as long to be a
/// candidate. Before eviction gives up, every database is looked at again.
const EMPTY_DB_PAUSE_MS: u64 = 100;

/// The eviction pool and the sampling cursor. One round runs at a time (the caller
/// holds it behind a mutex), so candidates found by one command's round serve the next.
#[derive(Default)]
pub struct Evictor {
    /// Ascending by score: the best candidate is last.
    pool: Vec<Candidate>,
    /// The global id of the next shard to sample.
    cursor: usize,
    /// Per database, what the walk knows of its emptiness.
    dbs: Vec<DbWalk>,
}

#[derive(Default, Clone, Copy)]
struct DbWalk {
    /// Shards in a row the walk found without candidates.
    empty_run: usize,
    /// The walk passes the database over until then (ms).
    skip_until_ms: u64,
}

impl Evictor {
    /// Evict one key under `policy` (not `noeviction`), sampling `samples` keys a
    /// round. Returns the bytes of its value left to the lazyfree thread, or `None`
    /// when there is no key the policy may evict.
    pub fn evict_one(
        &mut self,
        env: KeyEnv,
        policy: Policy,
        samples: usize,
        now_ms: u64,
    ) -> Option<u64> {
        let samples = if policy.rank() == Rank::Random {
            1
        } else {
            samples.max(1)
        };
        loop {
            let found = self.sample(env, policy, samples, now_ms);
            while let Some(best) = self.pool.pop() {
                if let Some(deferred) = remove(env, &best, policy, now_ms) {
                    return Some(deferred);
                }
            }
            if !found {
                return None;
            }
        }
    }

    /// Add up to `samples` candidates to the pool from the next shards that have
    /// some. Returns false when a whole walk over the keyspace found none.
    fn sample(&mut self, env: KeyEnv, policy: Policy, samples: usize, now_ms: u64) -> bool {
        if self.walk(env, policy, samples, now_ms) {
            return true;
        }
        // Databases passed over may have keys by now: look at all before giving up.
        if !self.dbs.iter().any(|d| d.skip_until_ms > now_ms) {
            return false;
        }
        self.dbs.fill(DbWalk::default());
        self.walk(env, policy, samples, now_ms)
    }

    /// Sample from shard after shard, from the cursor on, until `samples` keys are
    /// offered or every shard was seen once; false when none was.
    fn walk(&mut self, env: KeyEnv, policy: Policy, samples: usize, now_ms: u64) -> bool {
        let ks = env.keyspace;
        let per_db = ks.shards_per_db();
        let total = ks.databases() * per_db;
        self.dbs.resize(ks.databases(), DbWalk::default());
        let mut found = 0;
        for _ in 0..total {
            let id = self.cursor % total;
            let db = id / per_db;
            if self.dbs[db].skip_until_ms > now_ms {
                self.cursor = (db + 1) * per_db;
                continue;
            }
            self.cursor = id + 1;
            let offered = self.visit(env, policy, id, samples - found, now_ms);
            self.note_shard(db, per_db, offered > 0, now_ms);
            found += offered;
            if found >= samples {
                return true;
            }
        }
        found > 0
    }

    /// Offer up to `wanted` candidates of shard `id` to the pool, unless someone
    /// holds it or (volatile policies) its hint says it has no deadlines. Returns how
    /// many were offered.
    fn visit(
        &mut self,
        env: KeyEnv,
        policy: Policy,
        id: usize,
        wanted: usize,
        now_ms: u64,
    ) -> usize {
        let ks = env.keyspace;
        if policy.volatile() && ks.deadline_hint(id) == u64::MAX {
            return 0;
        }
        let db = id / ks.shards_per_db();
        let Some(data) = ks.shard_by_id(id).try_lock() else {
            return 0;
        };
        let clock = ks.clock.get();
        let mut offered = 0;
        let mut offer = |entry: &Entry| {
            let score = score(policy, clock, entry, now_ms);
            self.offer(score, db, entry.key());
            offered += 1;
        };
        match policy.rank() {
            Rank::Deadline => data.nearest_deadlines(wanted, &mut offer),
            _ => data.sample(policy.volatile(), rand::random(), wanted, &mut offer),
        }
        offered
    }

    /// Count a shard of `db` with or without candidates; a whole database's worth
    /// in a row without any passes it over for a while.
    fn note_shard(&mut self, db: usize, per_db: usize, had_candidates: bool, now_ms: u64) {
        let walk = &mut self.dbs[db];
        if had_candidates {
            walk.empty_run = 0;
            return;
        }
        walk.empty_run += 1;
        if walk.empty_run >= per_db {
            *walk = DbWalk {
                empty_run: 0,
                skip_until_ms: now_ms + EMPTY_DB_PAUSE_MS,
            };
        }
    }

    /// Keep a candidate if the pool has room or it beats the worst one there.
    fn offer(&mut self, score: u64, db: usize, key: &[u8]) {
        let full = self.pool.len() == POOL_SIZE;
        if full && self.pool[0].score >= score {
            return;
        }
        if self.pool.iter().any(|c| c.db == db && c.key == key) {
            return;
        }
        if full {
            self.pool.remove(0);
        }
        let at = self.pool.partition_point(|c| c.score <= score);
        let key = key.to_vec();
        self.pool.insert(at, Candidate { score, db, key });
    }
}

fn score(policy: Policy, clock: AccessClock, entry: &Entry, now_ms: u64) -> u64 {
    match policy.rank() {
        Rank::Access => clock.coldness(entry.access, now_ms),
        Rank::Deadline => u64::MAX - entry.expire_at,
        Rank::Random => rand::random(),
    }
}

/// Evict a candidate if it is still there (and, for a volatile policy, still has a
/// deadline) and its shard is free. Returns the bytes left to the lazyfree thread.
fn remove(env: KeyEnv, candidate: &Candidate, policy: Policy, now_ms: u64) -> Option<u64> {
    let id = env.keyspace.shard_id_of(candidate.db, &candidate.key);
    let mut locked = Locked::try_shard(env, candidate.db, now_ms, id)?;
    let entry = locked.evict(candidate.db, &candidate.key, policy.volatile())?;
    // The DEL is appended; the value may go once the shard is free again.
    drop(locked);
    Some(entry.free(env.keyspace.lazy(crate::lazyfree::Cause::Eviction)))
}
