//! The hybrid logical clock that stamps every write with an MVCC timestamp.
//!
//! A timestamp is `physical_ms << 16 | logical`: it follows wall-clock time, yet never
//! goes backwards and never repeats for the same key, even when the wall clock stalls
//! or steps back. Each worker thread keeps its own clock (no shared counter on the hot
//! path); writes to one key are serialized by its shard lock and each one stamps the
//! key with a timestamp past the key's previous one, so a key's history is strictly
//! increasing. Timestamps from peers advance the local clock past them (replication).

use std::cell::Cell;
use std::time::{SystemTime, UNIX_EPOCH};

/// Bits of the logical counter below the millisecond part.
pub const LOGICAL_BITS: u32 = 16;

thread_local! {
    static LAST: Cell<u64> = const { Cell::new(0) };
}

/// Milliseconds since the Unix epoch.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Microseconds since the Unix epoch.
pub fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// A fresh timestamp from this thread's clock that is greater than `after` (the
/// timestamp the key held before this write) and than any this thread issued before.
/// `now_ms` is the caller's reading of the wall clock (commands read it once).
pub fn next_after(after: u64, now_ms: u64) -> u64 {
    LAST.with(|last| {
        let physical = now_ms << LOGICAL_BITS;
        let ts = physical.max(last.get() + 1).max(after + 1);
        last.set(ts);
        ts
    })
}

/// Advance this thread's clock past a timestamp seen from elsewhere.
pub fn observe(seen: u64) {
    LAST.with(|last| last.set(last.get().max(seen)));
}

/// The millisecond part of a timestamp.
pub fn physical_ms(ts: u64) -> u64 {
    ts >> LOGICAL_BITS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strictly_increasing_and_past_the_key() {
        let a = next_after(0, unix_ms());
        let b = next_after(0, unix_ms());
        assert!(b > a);
        let future = (unix_ms() + 10_000) << LOGICAL_BITS;
        let c = next_after(future, unix_ms());
        assert!(c > future);
        assert!(next_after(0, unix_ms()) > c);
        assert!(physical_ms(a) <= unix_ms());
    }
}
