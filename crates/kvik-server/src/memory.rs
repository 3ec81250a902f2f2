//! `maxmemory`: how much memory kvik uses, measured cheaply enough to ask before
//! every write, and the eviction rounds that bring it back under the limit.
//!
//! **The figure** is jemalloc's `stats.allocated` less the heap bytes waiting in the
//! lazyfree thread (Redis counts used memory less `mem_not_counted_for_evict`, its
//! replication and AOF buffers; kvik has none, so that part is 0). Reading it fresh
//! means advancing jemalloc's statistics epoch, which merges every arena's counters
//! and costs tens of microseconds, so a shared `Gauge` keeps the last reading. One
//! thread refreshes it, at most once per millisecond of the commands' clock, when a
//! thread's projection reaches the limit (its own growth since the reading, times the
//! number of workers, as if every thread grew as fast) or the reading is
//! `Gauge::STALE_MS` old. Between refreshes each thread adds its own growth since the
//! reading, from jemalloc's per-thread counters (`thread.allocatedp` and
//! `thread.deallocatedp`: two loads), so a thread's own writes count at once, a
//! pipeline of big SETs included. Eviction subtracts what it freed from the gauge
//! right away, so other threads do not evict the same excess again.
//!
//! How far used memory may overshoot: what other threads allocate within a
//! millisecond (their growth shows at the next refresh), plus what one command adds
//! after it was let in below the limit (as in Redis, a command is checked before it
//! runs, not while), plus the commands other threads let in at the same time.
//!
//! **Eviction rounds**: a command flagged `denyoom` (and EXEC, scripts, commands
//! queued in MULTI) asks [`Memory::make_room`] first. Over the limit, the round
//! evicts keys ([`crate::keyspace::Evictor`]) until what it freed covers the excess,
//! measured by this thread's counters plus the bytes of values it handed to the
//! lazyfree thread. It stops after `maxmemory-eviction-tenacity`'s time limit (then
//! the workers go on with further rounds between their polls, as Redis's eviction
//! timer does, letting commands in meanwhile), or when no key may be evicted, which
//! refuses the command with the OOM error. One round runs at a time: a second
//! thread over the limit waits for it and finds memory freed.
//!
//! Owns: the gauge, the `maxmemory*` settings read per command, eviction rounds, the
//! time spent over the limit (INFO), timing rounds and evicted keys for the latency
//! monitor (`eviction-cycle`, `eviction-del`). Must not touch: which keys go and how
//! ([`crate::keyspace::Evictor`]), replies.

use crate::keyspace::{Evictor, KeyEnv, Policy};
use crate::latency::{Event, LatencyMonitor};
use kvik_config::Config;
use parking_lot::Mutex;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a round of eviction achieved (Redis's `EVICT_OK`, `EVICT_RUNNING`,
/// `EVICT_FAIL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Room {
    /// Used memory is within the limit.
    Fits,
    /// Still over, but the round ran out of time and eviction goes on: commands are
    /// let in meanwhile.
    Freeing,
    /// Over, and nothing may be evicted: commands that may grow memory are refused.
    Full,
}

/// Server-wide memory state.
pub struct Memory {
    /// `maxmemory` in bytes, 0 for none.
    limit: AtomicU64,
    /// Index in [`Policy::ALL`].
    policy: AtomicU8,
    samples: AtomicU32,
    tenacity: AtomicU32,
    gauge: Gauge,
    /// The pool and cursor; held for a whole round, so rounds never overlap.
    evictor: Mutex<Evictor>,
    /// A round stopped at its time limit still over the limit: the workers go on
    /// with more rounds between their polls.
    unfinished: AtomicBool,
    over: OverLimit,
    latency: Arc<LatencyMonitor>,
}

impl Memory {
    pub fn new(config: &Config, workers: usize, latency: Arc<LatencyMonitor>) -> Memory {
        let memory = Memory {
            limit: AtomicU64::new(0),
            policy: AtomicU8::new(0),
            samples: AtomicU32::new(5),
            tenacity: AtomicU32::new(10),
            gauge: Gauge::new(workers),
            evictor: Mutex::new(Evictor::default()),
            unfinished: AtomicBool::new(false),
            over: OverLimit::new(),
            latency,
        };
        memory.configure(config);
        memory
    }

    /// Take the `maxmemory*` parameters (at start and after CONFIG SET).
    pub fn configure(&self, c: &Config) {
        let policy = Policy::from_name(&c.maxmemory_policy);
        let index = Policy::ALL.iter().position(|&(_, p)| p == policy);
        self.policy
            .store(index.unwrap_or(0) as u8, Ordering::Relaxed);
        self.samples.store(c.maxmemory_samples, Ordering::Relaxed);
        self.tenacity
            .store(c.maxmemory_eviction_tenacity, Ordering::Relaxed);
        self.limit.store(c.maxmemory, Ordering::Relaxed);
    }

    /// `maxmemory`, when set. For servers without a limit this one relaxed load is
    /// the whole cost of the check.
    #[inline]
    pub fn limit(&self) -> Option<u64> {
        match self.limit.load(Ordering::Relaxed) {
            0 => None,
            limit => Some(limit),
        }
    }

    fn policy(&self) -> Policy {
        Policy::ALL[self.policy.load(Ordering::Relaxed) as usize].1
    }

    /// Whether Redis would share the objects of small integers now: not under a
    /// limit with an LRU or LFU policy, which needs each key's own access field.
    pub fn shares_integers(&self) -> bool {
        self.limit().is_none() || !self.policy().ranks_by_access()
    }

    /// Before a command that may grow memory, run by the thread `env` counts for at
    /// the commands' time `now_ms`: evict while over the limit, as the policy allows.
    pub fn make_room(&self, env: KeyEnv, now_ms: u64) -> Room {
        let Some(limit) = self.limit() else {
            return Room::Fits;
        };
        let room = if self.gauge.estimate(limit, now_ms) <= limit {
            Room::Fits
        } else {
            self.evict(env, limit, now_ms)
        };
        self.over.note(room);
        room
    }

    /// A round ran out of time with memory still over the limit.
    #[inline]
    pub fn eviction_unfinished(&self) -> bool {
        self.unfinished.load(Ordering::Relaxed)
    }

    /// Between the workers' polls while [`Memory::eviction_unfinished`]: go on
    /// evicting, as Redis's eviction timer does, unless another thread is at it.
    /// Returns whether this thread ran a round.
    pub fn continue_eviction(&self, env: KeyEnv, now_ms: u64) -> bool {
        let (Some(limit), Some(policy)) = (self.limit(), self.evicting_policy()) else {
            self.unfinished.store(false, Ordering::Relaxed);
            return false;
        };
        let Some(mut evictor) = self.evictor.try_lock() else {
            return false;
        };
        let room = self.round(&mut evictor, env, policy, limit, now_ms);
        self.over.note(room);
        true
    }

    /// Evict until the excess is freed, the time limit passes or nothing may go.
    fn evict(&self, env: KeyEnv, limit: u64, now_ms: u64) -> Room {
        match self.evicting_policy() {
            Some(policy) => self.round(&mut self.evictor.lock(), env, policy, limit, now_ms),
            None => Room::Full,
        }
    }

    /// The policy, unless it is `noeviction`.
    fn evicting_policy(&self) -> Option<Policy> {
        Some(self.policy()).filter(|&p| p != Policy::NoEviction)
    }

    /// One round, holding the evictor.
    fn round(
        &self,
        evictor: &mut Evictor,
        env: KeyEnv,
        policy: Policy,
        limit: u64,
        now_ms: u64,
    ) -> Room {
        // Another thread's round may have freed enough while this one waited.
        let used = self.gauge.estimate(limit, now_ms);
        if used <= limit {
            self.unfinished.store(false, Ordering::Relaxed);
            return Room::Fits;
        }
        let samples = self.samples.load(Ordering::Relaxed) as usize;
        let time_limit = round_time_limit(self.tenacity.load(Ordering::Relaxed));
        let started = Instant::now();
        let counted_from = thread_net();
        let (mut deferred, mut evicted) = (0, 0u64);
        let freed_here = || counted_from.wrapping_sub(thread_net()) as i64;
        // Each key's removal is timed only for a monitor that may keep it.
        let timing_keys = self.latency.is_on();
        let room = loop {
            if freed_here() + deferred as i64 >= (used - limit) as i64 {
                break Room::Fits;
            }
            let key_started = timing_keys.then(Instant::now);
            let Some(bytes) = evictor.evict_one(env, policy, samples, now_ms) else {
                break Room::Full;
            };
            if let Some(at) = key_started {
                self.latency.note(Event::EvictionDel, at.elapsed());
            }
            deferred += bytes;
            evicted += 1;
            if evicted % 16 == 0 && time_limit.is_some_and(|t| started.elapsed() >= t) {
                break Room::Freeing;
            }
        };
        self.gauge.freed(freed_here(), deferred);
        self.unfinished
            .store(room == Room::Freeing, Ordering::Relaxed);
        self.latency.note(Event::EvictionCycle, started.elapsed());
        room
    }

    /// INFO stats: (`total_eviction_exceeded_time`, `current_eviction_exceeded_time`)
    /// in milliseconds.
    pub fn exceeded_ms(&self) -> (u64, u64) {
        self.over.ms()
    }
}

/// How long one round may evict: `maxmemory-eviction-tenacity` 0..10 gives 0..500 µs
/// in steps of 50, then each step adds 15% (about two minutes at 99); 100 sets no
/// limit (Redis's documented progression).
fn round_time_limit(tenacity: u32) -> Option<Duration> {
    match tenacity {
        0..=10 => Some(Duration::from_micros(50 * u64::from(tenacity))),
        11..=99 => Some(Duration::from_secs_f64(
            500e-6 * 1.15f64.powi(tenacity as i32 - 10),
        )),
        _ => None,
    }
}

/// The used-memory figure shared by all threads (see the module documentation).
struct Gauge {
    /// The last reading less what evictions freed since, shifted left 16 bits, with
    /// a 16-bit reading number below: one word, so a thread sees a reading and its
    /// number together and knows when to restart counting its own growth.
    state: AtomicU64,
    /// The commands' clock (ms) at the last reading: limits refreshes to one per ms.
    read_at_ms: AtomicU64,
    workers: i64,
}

thread_local! {
    /// (reading number, this thread's allocated-minus-freed bytes then): the start
    /// of this thread's own growth since the reading it last saw.
    static BASE: Cell<Option<(u16, u64)>> = const { Cell::new(None) };
}

impl Gauge {
    /// After this many ms a reading is refreshed even far from the limit, so that
    /// memory other threads allocated or freed is noticed.
    const STALE_MS: u64 = 100;

    fn new(workers: usize) -> Gauge {
        Gauge {
            state: AtomicU64::new(counted_now() << 16),
            read_at_ms: AtomicU64::new(0),
            workers: workers.max(1) as i64,
        }
    }

    /// Used memory as this thread sees it at `now_ms`, refreshing the reading when
    /// the projection reaches `limit` or the reading is stale.
    fn estimate(&self, limit: u64, now_ms: u64) -> u64 {
        let (used, number) = self.reading();
        let own = own_growth(number);
        let projected = used as i64 + own.max(0) * self.workers;
        let read_at = self.read_at_ms.load(Ordering::Relaxed);
        let due = projected > limit as i64 || now_ms >= read_at + Self::STALE_MS;
        if !(due && now_ms > read_at && self.refresh(read_at, now_ms)) {
            return (used as i64 + own).max(0) as u64;
        }
        let (used, number) = self.reading();
        (used as i64 + own_growth(number)).max(0) as u64
    }

    /// Take a fresh reading, unless another thread claimed this millisecond's.
    fn refresh(&self, read_at: u64, now_ms: u64) -> bool {
        let claimed = self
            .read_at_ms
            .compare_exchange(read_at, now_ms, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok();
        if claimed {
            let number = (self.reading().1).wrapping_add(1);
            self.state
                .store(counted_now() << 16 | u64::from(number), Ordering::Release);
        }
        claimed
    }

    /// (bytes, reading number).
    fn reading(&self) -> (u64, u16) {
        let state = self.state.load(Ordering::Acquire);
        (state >> 16, state as u16)
    }

    /// An eviction round on this thread freed `here` bytes through its own counters
    /// and handed `deferred` more to the lazyfree thread: every thread sees them gone
    /// at once, and this thread's own growth stays what it was.
    fn freed(&self, here: i64, deferred: u64) {
        let total = (here.max(0) as u64).saturating_add(deferred);
        let _ = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |state| {
                let used = (state >> 16).saturating_sub(total);
                Some(used << 16 | (state & 0xFFFF))
            });
        BASE.with(|base| {
            if let Some((number, start)) = base.get() {
                base.set(Some((number, start.wrapping_sub(here as u64))));
            }
        });
    }
}

/// What counts against `maxmemory` now (an epoch advance: keep it rare).
fn counted_now() -> u64 {
    crate::stats::allocated_now().saturating_sub(crate::lazyfree::pending_bytes())
}

/// This thread's growth since reading `number`, starting the count when the thread
/// first sees it.
fn own_growth(number: u16) -> i64 {
    let net = thread_net();
    BASE.with(|base| match base.get() {
        Some((seen, start)) if seen == number => net.wrapping_sub(start) as i64,
        _ => {
            base.set(Some((number, net)));
            0
        }
    })
}

thread_local! {
    /// jemalloc's counters of this thread (`None` where jemalloc cannot say).
    static COUNTERS: Option<(ThreadCounter, ThreadCounter)> = thread_counters();
}

type ThreadCounter = tikv_jemalloc_ctl::thread::ThreadLocal<u64>;

fn thread_counters() -> Option<(ThreadCounter, ThreadCounter)> {
    use tikv_jemalloc_ctl::thread::{allocatedp, deallocatedp};
    Some((allocatedp::read().ok()?, deallocatedp::read().ok()?))
}

/// Bytes this thread allocated minus bytes it freed, wrapping (only differences
/// mean anything). Zero where jemalloc is not the program's allocator.
fn thread_net() -> u64 {
    COUNTERS.with(|c| c.map_or(0, |(a, d)| a.get().wrapping_sub(d.get())))
}

/// How long used memory has been over the limit (INFO stats), from the results of
/// the checks: a period opens when one finds memory over and eviction unfinished or
/// impossible, and closes when one finds it fits.
struct OverLimit {
    start: Instant,
    /// Microseconds since `start` when the open period began, 0 when none is open.
    since_us: AtomicU64,
    total_us: AtomicU64,
}

impl OverLimit {
    fn new() -> OverLimit {
        OverLimit {
            start: Instant::now(),
            since_us: AtomicU64::new(0),
            total_us: AtomicU64::new(0),
        }
    }

    fn now_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64 + 1
    }

    fn note(&self, room: Room) {
        let since = self.since_us.load(Ordering::Relaxed);
        let over = room != Room::Fits;
        if over == (since != 0) {
            return;
        }
        let next = if over { self.now_us() } else { 0 };
        let swapped =
            self.since_us
                .compare_exchange(since, next, Ordering::AcqRel, Ordering::Relaxed);
        // The thread that closes a period adds it up.
        if swapped.is_ok() && !over {
            let lasted = self.now_us().saturating_sub(since);
            self.total_us.fetch_add(lasted, Ordering::Relaxed);
        }
    }

    /// (total including the open period, the open period) in ms.
    fn ms(&self) -> (u64, u64) {
        let since = self.since_us.load(Ordering::Relaxed);
        let current = if since == 0 {
            0
        } else {
            self.now_us().saturating_sub(since)
        };
        let total = self.total_us.load(Ordering::Relaxed) + current;
        (total / 1000, current / 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenacity_time_limits() {
        assert_eq!(round_time_limit(0), Some(Duration::ZERO));
        assert_eq!(round_time_limit(10), Some(Duration::from_micros(500)));
        let eleven = round_time_limit(11).unwrap().as_micros();
        assert!((574..=576).contains(&eleven), "{eleven}");
        let top = round_time_limit(99).unwrap().as_secs();
        assert!((100..=130).contains(&top), "{top}");
        assert_eq!(round_time_limit(100), None);
    }

    #[test]
    fn over_limit_periods_add_up() {
        let over = OverLimit::new();
        assert_eq!(over.ms(), (0, 0));
        over.note(Room::Full);
        std::thread::sleep(Duration::from_millis(5));
        over.note(Room::Freeing);
        let (total, current) = over.ms();
        assert!(current >= 5 && total >= current, "{total} {current}");
        over.note(Room::Fits);
        let (total, current) = over.ms();
        assert_eq!(current, 0);
        assert!(total >= 5);
    }

    #[test]
    fn evictions_show_in_every_threads_estimate() {
        let gauge = Gauge::new(4);
        let (used, limit) = (100 << 20, 1 << 40);
        gauge.state.store(used << 16, Ordering::Relaxed);
        gauge.read_at_ms.store(1, Ordering::Relaxed);
        let elsewhere = || std::thread::scope(|s| s.spawn(|| gauge.estimate(limit, 2)).join());
        assert_eq!(elsewhere().unwrap(), used);
        gauge.freed(0, 1 << 20);
        assert_eq!(elsewhere().unwrap(), used - (1 << 20));
        assert_eq!(gauge.reading().1, 0);
    }
}
