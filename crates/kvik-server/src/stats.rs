//! Counters for INFO. Each worker thread owns a [`ThreadStats`] and is nearly its only
//! writer, so increments stay in that core's cache; INFO sums all of them. Per-command
//! call counts, times and latency histograms live beside them, indexed by the command
//! table's ids.
//!
//! Also here: the sampler behind INFO's `instantaneous_*` rates and the allocator and
//! process memory figures INFO memory (and MEMORY STATS) report.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Counters of one thread.
#[derive(Default)]
pub struct ThreadStats {
    pub commands: AtomicU64,
    pub connections_received: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub expired_keys: AtomicU64,
    pub evicted_keys: AtomicU64,
    /// Clients closed to bring client memory under `maxmemory-clients`.
    pub evicted_clients: AtomicU64,
    pub keyspace_hits: AtomicU64,
    pub keyspace_misses: AtomicU64,
    pub net_input_bytes: AtomicU64,
    pub net_output_bytes: AtomicU64,
    pub total_error_replies: AtomicU64,
    pub unexpected_error_replies: AtomicU64,
    pub dirty: AtomicU64,
    pub expire_cycle_cpu_ms: AtomicU64,
    /// Reply buffers the cron shrank or grew (INFO `reply_buffer_shrinks` /
    /// `reply_buffer_expands`).
    pub reply_buffer_shrinks: AtomicU64,
    pub reply_buffer_expands: AtomicU64,
    /// Microseconds the thread's event loop spent awake (not waiting in poll).
    pub busy_usec: AtomicU64,
    /// Per command id: calls, microseconds, rejected calls, failed calls.
    pub per_command: Box<[CommandStats]>,
}

#[derive(Default)]
pub struct CommandStats {
    pub calls: AtomicU64,
    pub usec: AtomicU64,
    pub rejected_calls: AtomicU64,
    pub failed_calls: AtomicU64,
    /// Allocated on the command's first call on this thread: most commands are never
    /// called, and a histogram is a few kilobytes.
    pub latency: OnceLock<LatencyHistogram>,
}

impl CommandStats {
    /// Count one execution's latency (INFO latencystats).
    #[inline]
    pub fn record_latency(&self, elapsed: Duration) {
        self.latency
            .get_or_init(LatencyHistogram::default)
            .record(elapsed.as_nanos() as u64);
    }
}

impl ThreadStats {
    pub fn new(commands: usize) -> Self {
        ThreadStats {
            per_command: (0..commands).map(|_| CommandStats::default()).collect(),
            ..Default::default()
        }
    }

    /// Count `n` more. Only the thread that owns these stats writes them (a worker
    /// its own), so a plain load and store is enough: no locked instruction on the
    /// per-command path. Readers (INFO) may see a slightly stale value; a concurrent
    /// RESETSTAT may lose to an increment, as it may in Redis between two commands.
    #[inline]
    pub fn add(&self, counter: &AtomicU64, n: u64) {
        counter.store(
            counter.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    }

    /// Zero every counter (CONFIG RESETSTAT).
    pub fn reset(&self) {
        for c in [
            &self.commands,
            &self.connections_received,
            &self.rejected_connections,
            &self.expired_keys,
            &self.evicted_keys,
            &self.evicted_clients,
            &self.keyspace_hits,
            &self.keyspace_misses,
            &self.net_input_bytes,
            &self.net_output_bytes,
            &self.total_error_replies,
            &self.unexpected_error_replies,
            &self.expire_cycle_cpu_ms,
            &self.reply_buffer_shrinks,
            &self.reply_buffer_expands,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        for c in self.per_command.iter() {
            for f in [&c.calls, &c.usec, &c.rejected_calls, &c.failed_calls] {
                f.store(0, Ordering::Relaxed);
            }
            if let Some(h) = c.latency.get() {
                h.clear();
            }
        }
    }
}

/// Command `id`'s latency histogram merged over all threads (bucket counts for
/// [`LatencyHistogram::percentile`]), or `None` when no call of it was recorded.
pub fn merged_latency(all: &[std::sync::Arc<ThreadStats>], id: usize) -> Option<Vec<u64>> {
    let mut counts = LatencyHistogram::empty_counts();
    let mut any = false;
    for h in all.iter().filter_map(|s| s.per_command[id].latency.get()) {
        h.add_to(&mut counts);
        any = true;
    }
    (any && counts.iter().any(|&n| n > 0)).then_some(counts)
}

/// Sum one counter over all threads.
pub fn sum(all: &[std::sync::Arc<ThreadStats>], pick: impl Fn(&ThreadStats) -> &AtomicU64) -> u64 {
    all.iter().map(|s| pick(s).load(Ordering::Relaxed)).sum()
}

/// A latency histogram cheap enough to update on every command: log-linear buckets
/// over nanoseconds (each power of two split into 16 equal parts, so a bucket spans at
/// most 1/16 of its values: about two significant digits, like Redis's HDR histograms
/// at their default precision), one relaxed atomic add per sample. Nothing is
/// allocated or locked when recording. Samples beyond ~18 minutes share the top bucket.
pub struct LatencyHistogram {
    buckets: Box<[AtomicU64]>,
}

/// log2 of the buckets per power of two.
const SUB_BITS: u32 = 4;
const SUB_BUCKETS: u64 = 1 << SUB_BITS;
/// The largest power of two with buckets of its own (2^40 ns is about 18 minutes).
const TOP_EXPONENT: u32 = 39;
const LATENCY_BUCKETS: usize = ((TOP_EXPONENT - SUB_BITS + 2) as u64 * SUB_BUCKETS) as usize;

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram {
            buckets: (0..LATENCY_BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl LatencyHistogram {
    #[inline]
    pub fn record(&self, nanos: u64) {
        self.buckets[bucket_of(nanos)].fetch_add(1, Ordering::Relaxed);
    }

    fn clear(&self) {
        for b in self.buckets.iter() {
            b.store(0, Ordering::Relaxed);
        }
    }

    /// Add this histogram's counts into `into` (INFO merges the threads' histograms).
    pub fn add_to(&self, into: &mut [u64]) {
        for (sum, b) in into.iter_mut().zip(self.buckets.iter()) {
            *sum += b.load(Ordering::Relaxed);
        }
    }

    /// A zeroed array of merged counts to pass to [`LatencyHistogram::add_to`].
    pub fn empty_counts() -> Vec<u64> {
        vec![0; LATENCY_BUCKETS]
    }

    /// The value in nanoseconds at or below which `percentile` percent of the samples
    /// in `counts` lie: the highest value of the bucket holding that rank. `None` when
    /// there are no samples.
    pub fn percentile(counts: &[u64], percentile: f64) -> Option<u64> {
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = ((percentile / 100.0 * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (i, &n) in counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(bucket_top(i));
            }
        }
        Some(bucket_top(counts.len() - 1))
    }
}

/// Redis 7.0's LATENCY HISTOGRAM steps: (microseconds, cumulative count) at
/// each power of two nanoseconds from 1024 up, only where the count grew. Redis
/// reads its HDR histogram (two significant digits) at those levels and names each
/// step by the highest nanosecond value of the bucket holding the level, in whole
/// microseconds (so 2^16 ns reads 66); the steps are named the same here, and each
/// counts the samples below its level, which the buckets here mark exactly.
pub fn cumulative_by_powers_of_two(counts: &[u64]) -> Vec<(u64, u64)> {
    const FIRST_EXPONENT: u32 = 10;
    let total: u64 = counts.iter().sum();
    let mut steps = Vec::new();
    let mut below = 0;
    for exponent in FIRST_EXPONENT.. {
        let level = 1u64 << exponent;
        let cumulative = count_below_power_of_two(counts, exponent);
        if cumulative > below {
            let redis_bucket_top = level + (level >> 7) - 1;
            steps.push((redis_bucket_top / 1000, cumulative));
            below = cumulative;
        }
        if cumulative == total {
            break;
        }
    }
    steps
}

/// How many samples of `counts` lie below 2^`exponent` nanoseconds: exact, as every
/// power of two starts a bucket.
pub fn count_below_power_of_two(counts: &[u64], exponent: u32) -> u64 {
    if exponent > TOP_EXPONENT {
        counts.iter().sum()
    } else {
        counts[..bucket_of(1u64 << exponent)].iter().sum()
    }
}

/// The bucket of a sample: values below 16 have one bucket each; above, the position
/// of the highest set bit picks the power of two and the next four bits the part of it.
#[inline]
fn bucket_of(nanos: u64) -> usize {
    if nanos < SUB_BUCKETS {
        return nanos as usize;
    }
    let exponent = 63 - nanos.leading_zeros();
    if exponent > TOP_EXPONENT {
        return LATENCY_BUCKETS - 1;
    }
    let part = (nanos >> (exponent - SUB_BITS)) & (SUB_BUCKETS - 1);
    ((exponent - SUB_BITS + 1) as u64 * SUB_BUCKETS + part) as usize
}

/// The highest value that falls in bucket `i`.
fn bucket_top(i: usize) -> u64 {
    let i = i as u64;
    if i < SUB_BUCKETS {
        return i;
    }
    let exponent = (i / SUB_BUCKETS) as u32 + SUB_BITS - 1;
    let width = 1u64 << (exponent - SUB_BITS);
    let low = (SUB_BUCKETS + i % SUB_BUCKETS) << (exponent - SUB_BITS);
    low + width - 1
}

/// The running totals the `instantaneous_*` rates are computed from.
#[derive(Debug, Clone, Copy, Default)]
pub struct Totals {
    pub commands: u64,
    pub net_input_bytes: u64,
    pub net_output_bytes: u64,
}

/// Per-second rates over the last moments (INFO's `instantaneous_*` fields).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rates {
    pub ops_per_sec: u64,
    pub input_kbps: f64,
    pub output_kbps: f64,
}

/// Samples of the running totals, taken when someone asks for the rates (INFO), at
/// most one per [`RateSampler::MIN_GAP`]. The rate is the change between the oldest
/// sample kept and now; samples older than [`RateSampler::WINDOW`] are dropped except
/// the newest of them, which stays as the base. So a monitor calling INFO every second
/// sees the last second's rate, and a single INFO after a quiet hour sees that hour's
/// average. Sampling on demand keeps the worker threads' loops free of it.
#[derive(Default)]
pub struct RateSampler {
    samples: Mutex<VecDeque<(Instant, Totals)>>,
}

impl RateSampler {
    /// The span the rates cover when samples are frequent (Redis: 16 samples, 100 ms).
    pub const WINDOW: Duration = Duration::from_millis(1600);
    pub const MIN_GAP: Duration = Duration::from_millis(100);

    /// Record `now`'s totals and return the rates since the base sample.
    pub fn sample(&self, now: Instant, totals: Totals) -> Rates {
        let mut samples = self.samples.lock();
        while samples.len() >= 2 && now.duration_since(samples[1].0) >= Self::WINDOW {
            samples.pop_front();
        }
        let rates = match samples.front() {
            Some(&(at, base)) if now > at => rates_between(base, totals, now - at),
            _ => Rates::default(),
        };
        let recent = samples
            .back()
            .is_some_and(|&(at, _)| now.duration_since(at) < Self::MIN_GAP);
        if !recent {
            samples.push_back((now, totals));
        }
        rates
    }

    /// Forget every sample (CONFIG RESETSTAT zeroes the totals they refer to).
    pub fn clear(&self) {
        self.samples.lock().clear();
    }
}

fn rates_between(base: Totals, now: Totals, elapsed: Duration) -> Rates {
    let secs = elapsed.as_secs_f64();
    let per_sec = |from: u64, to: u64| to.saturating_sub(from) as f64 / secs;
    Rates {
        ops_per_sec: per_sec(base.commands, now.commands).round() as u64,
        input_kbps: per_sec(base.net_input_bytes, now.net_input_bytes) / 1024.0,
        output_kbps: per_sec(base.net_output_bytes, now.net_output_bytes) / 1024.0,
    }
}

/// The allocator's view of memory, in bytes (jemalloc's `stats.*`).
#[derive(Debug, Clone, Copy, Default)]
pub struct AllocatorStats {
    /// Bytes handed out to the program.
    pub allocated: u64,
    /// Bytes in pages the allocator has in use (allocated plus fragmentation).
    pub active: u64,
    /// Bytes of physical memory the allocator holds.
    pub resident: u64,
}

/// Fresh allocator figures. jemalloc caches its statistics, so the epoch is advanced
/// first. Where jemalloc is not the program's allocator (a test harness), the figures
/// describe jemalloc's own small arena.
pub fn allocator_stats() -> AllocatorStats {
    use tikv_jemalloc_ctl::{epoch, stats};
    let _ = epoch::advance();
    let read = |r: tikv_jemalloc_ctl::Result<usize>| r.unwrap_or(0) as u64;
    AllocatorStats {
        allocated: read(stats::allocated::read()),
        active: read(stats::active::read()),
        resident: read(stats::resident::read()),
    }
}

/// Fresh `stats.allocated` alone, through MIBs looked up once: what the maxmemory
/// gauge refreshes from. The epoch advance merges every arena's statistics, which
/// costs tens of microseconds; callers keep the result a while.
pub fn allocated_now() -> u64 {
    use tikv_jemalloc_ctl::{epoch, epoch_mib, stats};
    static MIBS: OnceLock<Option<(epoch_mib, stats::allocated_mib)>> = OnceLock::new();
    let mibs = MIBS.get_or_init(|| Some((epoch::mib().ok()?, stats::allocated::mib().ok()?)));
    let Some((advance, allocated)) = mibs else {
        return 0;
    };
    let _ = advance.advance();
    allocated.read().unwrap_or(0) as u64
}

/// The allocator's name and version as INFO's `mem_allocator` shows it: `jemalloc-5.3.0`.
pub fn allocator_name() -> String {
    let version = tikv_jemalloc_ctl::version::read().unwrap_or("unknown");
    let release = version.split('-').next().unwrap_or(version);
    format!("jemalloc-{release}")
}

/// jemalloc's own statistics report (MEMORY MALLOC-STATS), as its
/// `malloc_stats_print` writes it.
pub fn allocator_report() -> String {
    unsafe extern "C" fn append(into: *mut libc::c_void, text: *const libc::c_char) {
        // SAFETY: `into` is the `Vec` passed below, alive and not otherwise borrowed
        // during the call; jemalloc hands over a NUL-terminated string.
        unsafe {
            let into = &mut *(into as *mut Vec<u8>);
            into.extend_from_slice(std::ffi::CStr::from_ptr(text).to_bytes());
        }
    }
    let mut report: Vec<u8> = Vec::new();
    // SAFETY: the callback only appends to `report`, which outlives the call; a null
    // options string asks for the default report.
    unsafe {
        tikv_jemalloc_sys::malloc_stats_print(
            Some(append),
            (&mut report as *mut Vec<u8>).cast(),
            std::ptr::null(),
        );
    }
    String::from_utf8_lossy(&report).into_owned()
}

/// Have jemalloc return its dirty pages to the system at once (MEMORY PURGE), in
/// every arena (`MALLCTL_ARENAS_ALL` is 4096).
pub fn purge_allocator() {
    // SAFETY: a void mallctl: no old or new value is read or written.
    unsafe {
        tikv_jemalloc_sys::mallctl(
            c"arena.4096.purge".as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        );
    }
}

/// Resident set size of the process from `/proc/self/statm` (0 where unavailable).
pub fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * page_size()
}

/// Physical memory of the machine (INFO's `total_system_memory`).
pub fn total_system_memory() -> u64 {
    // SAFETY: sysconf only reads system constants.
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    pages.max(0) as u64 * page_size()
}

fn page_size() -> u64 {
    // SAFETY: sysconf only reads system constants.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as u64
    } else {
        4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_their_values() {
        for v in [0, 1, 15, 16, 17, 31, 32, 1000, 9023, 1 << 20, (1 << 40) - 1] {
            let b = bucket_of(v);
            assert!(bucket_top(b) >= v, "{v} above its bucket's top");
            if b > 0 {
                assert!(bucket_top(b - 1) < v, "{v} fits an earlier bucket");
            }
        }
        assert_eq!(bucket_of(u64::MAX), LATENCY_BUCKETS - 1);
    }

    #[test]
    fn percentiles_within_a_sixteenth() {
        let h = LatencyHistogram::default();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let mut counts = LatencyHistogram::empty_counts();
        h.add_to(&mut counts);
        let p50 = LatencyHistogram::percentile(&counts, 50.0).unwrap();
        assert!((500_000..=500_000 + 500_000 / 16).contains(&p50), "{p50}");
        let p100 = LatencyHistogram::percentile(&counts, 100.0).unwrap();
        assert!(p100 >= 1_000_000);
        assert_eq!(LatencyHistogram::percentile(&[0; 4], 50.0), None);
    }

    #[test]
    fn rates_from_the_oldest_kept_sample() {
        let sampler = RateSampler::default();
        let t0 = Instant::now();
        let totals = |c, i, o| Totals {
            commands: c,
            net_input_bytes: i,
            net_output_bytes: o,
        };
        assert_eq!(sampler.sample(t0, totals(0, 0, 0)), Rates::default());
        let r = sampler.sample(t0 + Duration::from_secs(1), totals(500, 2048, 1024));
        assert_eq!(r.ops_per_sec, 500);
        assert!((r.input_kbps - 2.0).abs() < 1e-9);
        assert!((r.output_kbps - 1.0).abs() < 1e-9);
        // Ten seconds later the one-second-old base is still the newest old sample.
        let r = sampler.sample(t0 + Duration::from_secs(11), totals(1500, 2048, 1024));
        assert_eq!(r.ops_per_sec, 100);
        sampler.clear();
        let r = sampler.sample(t0 + Duration::from_secs(12), totals(0, 0, 0));
        assert_eq!(r, Rates::default());
    }
}
