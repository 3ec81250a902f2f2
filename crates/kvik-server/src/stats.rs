//! Counters for INFO. Each worker thread owns a [`ThreadStats`] and is nearly its only
//! writer, so increments stay in that core's cache; INFO sums all of them. Per-command
//! call counts and times live beside them, indexed by the command table's ids.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of one thread.
#[derive(Default)]
pub struct ThreadStats {
    pub commands: AtomicU64,
    pub connections_received: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub expired_keys: AtomicU64,
    pub evicted_keys: AtomicU64,
    pub keyspace_hits: AtomicU64,
    pub keyspace_misses: AtomicU64,
    pub net_input_bytes: AtomicU64,
    pub net_output_bytes: AtomicU64,
    pub total_error_replies: AtomicU64,
    pub unexpected_error_replies: AtomicU64,
    pub dirty: AtomicU64,
    pub expire_cycle_cpu_ms: AtomicU64,
    /// Per command id: calls, microseconds, rejected calls, failed calls.
    pub per_command: Box<[CommandStats]>,
}

#[derive(Default)]
pub struct CommandStats {
    pub calls: AtomicU64,
    pub usec: AtomicU64,
    pub rejected_calls: AtomicU64,
    pub failed_calls: AtomicU64,
}

impl ThreadStats {
    pub fn new(commands: usize) -> Self {
        ThreadStats {
            per_command: (0..commands).map(|_| CommandStats::default()).collect(),
            ..Default::default()
        }
    }

    #[inline]
    pub fn add(&self, counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Zero every counter (CONFIG RESETSTAT).
    pub fn reset(&self) {
        for c in [
            &self.commands,
            &self.connections_received,
            &self.rejected_connections,
            &self.expired_keys,
            &self.evicted_keys,
            &self.keyspace_hits,
            &self.keyspace_misses,
            &self.net_input_bytes,
            &self.net_output_bytes,
            &self.total_error_replies,
            &self.unexpected_error_replies,
            &self.expire_cycle_cpu_ms,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        for c in self.per_command.iter() {
            for f in [&c.calls, &c.usec, &c.rejected_calls, &c.failed_calls] {
                f.store(0, Ordering::Relaxed);
            }
        }
    }
}

/// Sum one counter over all threads.
pub fn sum(all: &[std::sync::Arc<ThreadStats>], pick: impl Fn(&ThreadStats) -> &AtomicU64) -> u64 {
    all.iter().map(|s| pick(s).load(Ordering::Relaxed)).sum()
}
