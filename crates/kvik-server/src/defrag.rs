//! Active defragmentation (`activedefrag`), with jemalloc's own means where Redis
//! patches its bundled copy: `experimental.utilization.query` tells, for a pointer,
//! how full its slab is and how full its size class is on average. An allocation in
//! a slab used less than the average is moved (copied into a fresh allocation made
//! without the thread cache, so jemalloc places it in its fullest slab, and the old
//! one freed), as Redis's activeDefragAlloc does; emptied slabs go back to the
//! system.
//!
//! The walk is incremental: one worker's timer runs [`Defrag::cycle`] `hz` times a
//! second, each time for a slice of CPU between `active-defrag-cycle-min` and `-max`
//! percent (more the more fragmented), one shard at a time under its lock, starting
//! when fragmentation passes `active-defrag-threshold-lower` and its bytes pass
//! `active-defrag-ignore-bytes`. Moved per key: the entry (key and header), a
//! string's bytes, a collection's top-level box (not its nodes or tables); per
//! shard, its hash table (rebuilt in a fresh allocation).
//!
//! Owns the defrag cycle's state and figures (INFO). Must not touch clients or the
//! command table; shards are taken as the active expiry cycle takes them.

use crate::keyspace::Keyspace;
use crate::util::relocate::Relocator;
use parking_lot::Mutex;
use std::alloc::Layout;
use std::ffi::{c_void, CStr};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;
use tikv_jemalloc_sys as jemalloc;

/// What the configuration says of defragmentation.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub enabled: bool,
    pub ignore_bytes: u64,
    pub threshold_lower: u32,
    pub threshold_upper: u32,
    pub cycle_min: u32,
    pub cycle_max: u32,
}

impl Settings {
    pub fn from_config(c: &kvik_config::Config) -> Settings {
        Settings {
            enabled: c.activedefrag,
            ignore_bytes: c.active_defrag_ignore_bytes,
            threshold_lower: c.active_defrag_threshold_lower,
            threshold_upper: c.active_defrag_threshold_upper,
            cycle_min: c.active_defrag_cycle_min,
            cycle_max: c.active_defrag_cycle_max,
        }
    }

    /// The CPU percent to spend at `frag_pct` fragmentation: `cycle-min` at the lower
    /// threshold, rising linearly to `cycle-max` at the upper one (Redis's
    /// computeDefragCycles).
    fn effort(&self, frag_pct: f64) -> u32 {
        let (lower, upper) = (self.threshold_lower as f64, self.threshold_upper as f64);
        let (min, max) = (self.cycle_min as f64, self.cycle_max as f64);
        let scaled = if upper > lower {
            min + (max - min) * (frag_pct - lower) / (upper - lower)
        } else {
            max
        };
        scaled.clamp(min, max) as u32
    }
}

/// The defrag cycle's progress and INFO's figures.
#[derive(Default)]
pub struct Defrag {
    walk: Mutex<Walk>,
    /// INFO's `active_defrag_running`: the CPU percent of the pass running, 0 when
    /// none runs.
    running_pct: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    key_hits: AtomicU64,
    key_misses: AtomicU64,
    /// Microseconds spent in finished passes.
    total_us: AtomicU64,
    /// Passes started: each worker flushes its thread cache once per pass.
    passes: AtomicU64,
}

#[derive(Default)]
struct Walk {
    /// The next shard (global id) of the pass running.
    cursor: usize,
    /// When the pass running started, and the moves counted before it.
    started: Option<(Instant, u64)>,
    /// When fragmentation was last weighed to start a pass.
    weighed: Option<Instant>,
    /// It was said once that defragmentation cannot run in this process.
    warned: bool,
}

/// How often fragmentation is weighed to start a pass (Redis: once a second).
const WEIGH_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// INFO's figures.
#[derive(Debug, Default, Clone, Copy)]
pub struct Figures {
    pub running_pct: u64,
    pub hits: u64,
    pub misses: u64,
    pub key_hits: u64,
    pub key_misses: u64,
    pub total_ms: u64,
    pub current_ms: u64,
}

impl Defrag {
    pub fn figures(&self) -> Figures {
        let current_ms = self
            .walk
            .lock()
            .started
            .map_or(0, |(at, _)| at.elapsed().as_millis() as u64);
        Figures {
            running_pct: self.running_pct.load(Ordering::Relaxed),
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            key_hits: self.key_hits.load(Ordering::Relaxed),
            key_misses: self.key_misses.load(Ordering::Relaxed),
            total_ms: self.total_us.load(Ordering::Relaxed) / 1000,
            current_ms,
        }
    }

    /// Passes started so far: a worker that has not flushed its thread cache since
    /// the last one started does so ([`flush_thread_cache`]).
    pub fn passes(&self) -> u64 {
        self.passes.load(Ordering::Relaxed)
    }

    /// CONFIG RESETSTAT.
    pub fn reset_stats(&self) {
        for counter in [
            &self.hits,
            &self.misses,
            &self.key_hits,
            &self.key_misses,
            &self.total_us,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
    }

    /// One slice of defragmentation, from a worker's timer running `hz` times a
    /// second: start a pass when fragmentation calls for one, go on with the pass
    /// running for this tick's share of CPU, end it when every shard was seen.
    pub fn cycle(&self, keyspace: &Keyspace, settings: &Settings, hz: u64) {
        let mut walk = self.walk.lock();
        if !settings.enabled {
            if walk.started.is_some() {
                self.finish(&mut walk, "stopped");
            }
            return;
        }
        if !available() {
            if !std::mem::replace(&mut walk.warned, true) {
                crate::log_warning!(
                    "Active defragmentation cannot run: jemalloc is not this process's allocator"
                );
            }
            return;
        }
        if walk.started.is_none() && walk.weighed.is_some_and(|at| at.elapsed() < WEIGH_EVERY) {
            return;
        }
        walk.weighed = Some(Instant::now());
        let (frag_pct, frag_bytes) = fragmentation();
        let effort = settings.effort(frag_pct);
        if walk.started.is_none() {
            let needed =
                frag_pct > settings.threshold_lower as f64 && frag_bytes > settings.ignore_bytes;
            if !needed {
                return;
            }
            walk.started = Some((Instant::now(), self.hits.load(Ordering::Relaxed)));
            walk.cursor = 0;
            self.passes.fetch_add(1, Ordering::Relaxed);
            flush_thread_cache();
            crate::log_notice!(
                "Starting active defrag, frag={frag_pct:.0}%, frag_bytes={frag_bytes}, cpu={effort}%"
            );
        }
        // A pass may grow more aggressive as it goes, never less (as Redis).
        let running = self.running_pct.fetch_max(effort as u64, Ordering::Relaxed);
        let slice_us = 1_000_000 * running.max(effort as u64) / hz.max(1) / 100;
        let began = Instant::now();
        let _uncached = ThreadCacheOff::new();
        let mut relocator = Jemalloc::default();
        let shards = keyspace.databases() * keyspace.shards_per_db();
        while walk.cursor < shards && (began.elapsed().as_micros() as u64) < slice_us {
            keyspace
                .lock_for_use(walk.cursor)
                .relocate_entries(&mut relocator);
            walk.cursor += 1;
        }
        self.count(&relocator);
        if walk.cursor >= shards {
            self.finish(&mut walk, "done");
        }
    }

    fn count(&self, relocator: &Jemalloc) {
        self.hits.fetch_add(relocator.hits, Ordering::Relaxed);
        self.misses.fetch_add(relocator.misses, Ordering::Relaxed);
        self.key_hits
            .fetch_add(relocator.key_hits, Ordering::Relaxed);
        self.key_misses
            .fetch_add(relocator.key_misses, Ordering::Relaxed);
    }

    /// The pass ends (it saw every shard, or defragmentation was turned off).
    fn finish(&self, walk: &mut Walk, how: &str) {
        let Some((started, hits_before)) = walk.started.take() else {
            return;
        };
        walk.cursor = 0;
        self.running_pct.store(0, Ordering::Relaxed);
        let took = started.elapsed();
        self.total_us
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
        let moved = self.hits.load(Ordering::Relaxed) - hits_before;
        let (frag_pct, frag_bytes) = fragmentation();
        crate::log_notice!(
            "Active defrag {how} in {}ms, reallocated={moved}, frag={frag_pct:.0}%, frag_bytes={frag_bytes}",
            took.as_millis()
        );
    }
}

/// Give this thread's cached free regions back to their slabs. A region a thread
/// freed stays in its cache, and keeps its slab from being emptied, until the thread
/// allocates enough to flush it; idle threads never do. Each worker calls this
/// once per pass.
pub fn flush_thread_cache() {
    // SAFETY: a void mallctl: no old or new value is read or written.
    unsafe {
        jemalloc::mallctl(
            c"thread.tcache.flush".as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        );
    }
}

/// This thread's allocator cache, off while a slice of the walk runs: what the walk
/// allocates through the global allocator (a shard's rebuilt table) then comes from
/// the arena's current slab, and what it frees goes straight back to its slab,
/// instead of cycling through the cache's last freed regions.
struct ThreadCacheOff;

impl ThreadCacheOff {
    fn new() -> ThreadCacheOff {
        set_thread_cache(false);
        ThreadCacheOff
    }
}

impl Drop for ThreadCacheOff {
    fn drop(&mut self) {
        set_thread_cache(true);
    }
}

fn set_thread_cache(enabled: bool) {
    let mut value = enabled;
    // SAFETY: `thread.tcache.enabled` takes a bool; nothing is read back.
    unsafe {
        jemalloc::mallctl(
            c"thread.tcache.enabled".as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            (&mut value as *mut bool).cast(),
            std::mem::size_of::<bool>(),
        );
    }
}

/// The allocator's fragmentation: percent and bytes of active pages beyond what is
/// allocated (Redis's getAllocatorFragmentation).
fn fragmentation() -> (f64, u64) {
    let stats = crate::stats::allocator_stats();
    if stats.allocated == 0 {
        return (0.0, 0);
    }
    let pct = stats.active as f64 / stats.allocated as f64 * 100.0 - 100.0;
    (pct, stats.active.saturating_sub(stats.allocated))
}

/// The MIBs of the two mallctls a move needs, looked up once; `None` when jemalloc
/// is not the program's allocator (a test harness) or lacks the query.
struct Mibs {
    query: [usize; 3],
    lookup: [usize; 2],
}

fn mibs() -> Option<&'static Mibs> {
    static MIBS: OnceLock<Option<Mibs>> = OnceLock::new();
    MIBS.get_or_init(|| {
        // A pointer jemalloc did not make must never reach the query (its lookup
        // assumes the address is its own).
        if !jemalloc_is_the_allocator() {
            return None;
        }
        Some(Mibs {
            query: mib(c"experimental.utilization.query")?,
            lookup: mib(c"arenas.lookup")?,
        })
    })
    .as_ref()
}

/// Are the program's allocations jemalloc's? Then an allocation shows in jemalloc's
/// count of this thread's allocated bytes (a test harness may use the system's).
fn jemalloc_is_the_allocator() -> bool {
    let Ok(counter) = tikv_jemalloc_ctl::thread::allocatedp::read() else {
        return false;
    };
    let before = counter.get();
    let probe = std::hint::black_box(vec![1u8; 4096]);
    let after = counter.get();
    drop(probe);
    after >= before + 4096
}

/// Whether active defragmentation can run in this process.
pub fn available() -> bool {
    mibs().is_some()
}

fn mib<const N: usize>(name: &CStr) -> Option<[usize; N]> {
    let mut mib = [0usize; N];
    let mut len = N;
    // SAFETY: `mib` has room for `len` components; the name is NUL-terminated.
    let rc = unsafe { jemalloc::mallctlnametomib(name.as_ptr(), mib.as_mut_ptr(), &mut len) };
    (rc == 0 && len == N).then_some(mib)
}

/// What `experimental.utilization.query` says of a pointer's slab.
#[repr(C)]
struct Utilization {
    /// The slab the next allocation of its size class goes to (null: none has room).
    slabcur: *mut c_void,
    nfree: usize,
    nregs: usize,
    /// The slab's size in bytes.
    size: usize,
    /// Free and total regions of the size class's slabs in the pointer's arena.
    bin_nfree: usize,
    bin_nregs: usize,
}

fn query(mibs: &Mibs, ptr: NonNull<u8>) -> Option<Utilization> {
    let mut out = Utilization {
        slabcur: std::ptr::null_mut(),
        nfree: 0,
        nregs: 0,
        size: 0,
        bin_nfree: 0,
        bin_nregs: 0,
    };
    let mut out_len = std::mem::size_of::<Utilization>();
    let mut input = ptr.as_ptr() as *mut c_void;
    // SAFETY: the output is the six words the query writes; the input is one pointer,
    // which jemalloc only looks up (an unknown one gives zeros).
    let rc = unsafe {
        jemalloc::mallctlbymib(
            mibs.query.as_ptr(),
            mibs.query.len(),
            (&mut out as *mut Utilization).cast(),
            &mut out_len,
            (&mut input as *mut *mut c_void).cast(),
            std::mem::size_of::<*mut c_void>(),
        )
    };
    (rc == 0).then_some(out)
}

/// Is the allocation at `ptr` worth moving? Only from a slab that has free regions,
/// is not the one new allocations go to, and is used no more than its size class's
/// slabs are on average (Redis's jemalloc defrag hint).
fn worth_moving(ptr: NonNull<u8>, u: &Utilization) -> bool {
    if u.nregs <= 1 || u.nfree == 0 || u.slabcur.is_null() {
        return false;
    }
    let start = u.slabcur as usize;
    if (start..start + u.size).contains(&(ptr.as_ptr() as usize)) {
        return false;
    }
    let used = (u.nregs - u.nfree) as u128;
    let bin_used = u.bin_nregs.saturating_sub(u.bin_nfree) as u128;
    used * u.bin_nregs as u128 <= bin_used * u.nregs as u128
}

/// The arena an allocation belongs to, so that its copy is made there.
fn arena_of(mibs: &Mibs, ptr: NonNull<u8>) -> Option<u32> {
    let mut arena: u32 = 0;
    let mut len = std::mem::size_of::<u32>();
    let mut input = ptr.as_ptr() as *mut c_void;
    // SAFETY: the output is one unsigned; the input one pointer jemalloc looks up.
    let rc = unsafe {
        jemalloc::mallctlbymib(
            mibs.lookup.as_ptr(),
            mibs.lookup.len(),
            (&mut arena as *mut u32).cast(),
            &mut len,
            (&mut input as *mut *mut c_void).cast(),
            std::mem::size_of::<*mut c_void>(),
        )
    };
    (rc == 0).then_some(arena)
}

/// jemalloc's flags for an allocation of `layout` as the global allocator
/// (tikv-jemallocator) makes it: an alignment only where the size class does not give
/// it already.
fn layout_flags(layout: Layout) -> i32 {
    const MIN_ALIGN: usize = 16;
    if layout.align() <= MIN_ALIGN && layout.align() <= layout.size() {
        0
    } else {
        jemalloc::MALLOCX_ALIGN(layout.align())
    }
}

/// Moves allocations that sit in under-used slabs, counting as INFO does.
#[derive(Default)]
struct Jemalloc {
    hits: u64,
    misses: u64,
    key_hits: u64,
    key_misses: u64,
    /// Something of the current key moved.
    key_moved: bool,
}

// SAFETY: a move copies the bytes into a fresh allocation of the same size class and
// alignment (the flags the global allocator uses, so it may free it), then frees the
// old one; otherwise the pointer is left alone.
unsafe impl Relocator for Jemalloc {
    unsafe fn relocate(&mut self, ptr: NonNull<u8>, layout: Layout) -> Option<NonNull<u8>> {
        let mibs = mibs()?;
        let utilization = query(mibs, ptr)?;
        if !worth_moving(ptr, &utilization) {
            self.misses += 1;
            return None;
        }
        let arena = arena_of(mibs, ptr)?;
        let flags = layout_flags(layout) | jemalloc::MALLOCX_TCACHE_NONE;
        // SAFETY: the size is not zero (the caller's allocation has it). Made and
        // freed without the thread cache: the copy goes to the arena's current slab,
        // the old region straight back to its slab.
        unsafe {
            let new = jemalloc::mallocx(
                layout.size(),
                flags | jemalloc::MALLOCX_ARENA(arena as usize),
            ) as *mut u8;
            let new = NonNull::new(new)?;
            std::ptr::copy_nonoverlapping(ptr.as_ptr(), new.as_ptr(), layout.size());
            jemalloc::sdallocx(ptr.as_ptr().cast(), layout.size(), flags);
            self.hits += 1;
            self.key_moved = true;
            Some(new)
        }
    }

    fn claim_move(&mut self, inside: NonNull<u8>) -> bool {
        let Some(utilization) = mibs().and_then(|mibs| query(mibs, inside)) else {
            return false;
        };
        let worth = worth_moving(inside, &utilization);
        if worth {
            self.hits += 1;
        } else {
            self.misses += 1;
        }
        worth
    }

    fn item_done(&mut self) {
        if std::mem::take(&mut self.key_moved) {
            self.key_hits += 1;
        } else {
            self.key_misses += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            enabled: true,
            ignore_bytes: 0,
            threshold_lower: 10,
            threshold_upper: 100,
            cycle_min: 1,
            cycle_max: 25,
        }
    }

    #[test]
    fn a_process_whose_allocator_is_not_jemalloc_never_queries_it() {
        // The test harness allocates with the system's allocator.
        assert!(!available());
        let defrag = Defrag::default();
        let keyspace = Keyspace::new(1, 2);
        defrag.cycle(&keyspace, &settings(), 10);
        assert_eq!(defrag.figures().hits, 0);
    }

    #[test]
    fn effort_rises_with_fragmentation_between_the_bounds() {
        let s = settings();
        assert_eq!(s.effort(5.0), 1);
        assert_eq!(s.effort(10.0), 1);
        assert_eq!(s.effort(55.0), 13);
        assert_eq!(s.effort(100.0), 25);
        assert_eq!(s.effort(400.0), 25);
    }

    #[test]
    fn only_under_used_slabs_outside_the_current_one_are_left() {
        let slab = |slabcur: usize, nfree, bin_nfree| Utilization {
            slabcur: slabcur as *mut c_void,
            nfree,
            nregs: 64,
            size: 4096,
            bin_nfree,
            bin_nregs: 640,
        };
        let ptr = NonNull::new(0x10_0040 as *mut u8).unwrap();
        // 10% used against a bin 50% used: move.
        assert!(worth_moving(ptr, &slab(0x20_0000, 58, 320)));
        // In the current slab: stay.
        assert!(!worth_moving(ptr, &slab(0x10_0000, 58, 320)));
        // Full slab: stay. Fuller than the average: stay.
        assert!(!worth_moving(ptr, &slab(0x20_0000, 0, 320)));
        assert!(!worth_moving(ptr, &slab(0x20_0000, 10, 320)));
        // Every slab full but ours, no current slab: stay.
        assert!(!worth_moving(ptr, &slab(0, 58, 58)));
    }
}
