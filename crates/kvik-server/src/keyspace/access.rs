//! What an entry's `access` field holds, and how an access changes it.
//!
//! Under every policy but the LFU ones the field is Redis's LRU clock: the time of the
//! last access in seconds, wrapping at 24 bits. Under `allkeys-lfu` and `volatile-lfu`
//! it holds Redis's LFU data instead: the time of the last access in minutes (16 bits,
//! wrapping) above an 8-bit logarithmic access counter. A new key's counter starts at
//! [`LFU_INITIAL_COUNTER`]; each access raises it by one with probability
//! `1 / ((counter - 5) * lfu-log-factor + 1)`, so it grows with the logarithm of the
//! accesses; every `lfu-decay-time` minutes without an access take one off.
//!
//! Changing the policy at runtime only changes how the field is read and written, as
//! in Redis: a value of the other kind is reinterpreted until accesses rewrite it.
//!
//! Owns: the meaning of the field, LFU growth and decay, the clock mode every thread
//! reads. Must not touch: entries (callers hand the field in and store what comes back).

use std::sync::atomic::{AtomicU64, Ordering};

/// The counter a key starts with under an LFU policy, so that a new key is not the
/// first to be evicted.
pub const LFU_INITIAL_COUNTER: u8 = 5;

/// How the `access` field is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessClock {
    /// The LRU clock.
    Lru,
    /// The LFU data, with `lfu-log-factor` and `lfu-decay-time`.
    Lfu { log_factor: u32, decay_minutes: u32 },
}

impl AccessClock {
    /// The field of a key created at `now_ms`.
    pub fn initial(self, now_ms: u64) -> u32 {
        match self {
            AccessClock::Lru => access_clock(now_ms),
            AccessClock::Lfu { .. } => lfu_field(minutes(now_ms), LFU_INITIAL_COUNTER),
        }
    }

    /// The field after an access at `now_ms`.
    pub fn accessed(self, field: u32, now_ms: u64) -> u32 {
        match self {
            AccessClock::Lru => access_clock(now_ms),
            AccessClock::Lfu {
                log_factor,
                decay_minutes,
            } => {
                let counter = lfu_counter(field, now_ms, decay_minutes);
                lfu_field(minutes(now_ms), log_increment(counter, log_factor))
            }
        }
    }

    /// The field when a key's value is replaced (SET of an existing key): the LRU
    /// clock starts again, as for a new value; the LFU data stays the key's, counting
    /// the lookup the write made unless the client asked not to touch keys.
    pub fn overwritten(self, field: u32, touch: bool, now_ms: u64) -> u32 {
        match self {
            AccessClock::Lfu { .. } if !touch => field,
            _ => self.accessed(field, now_ms),
        }
    }

    /// The key's access counter after decay (OBJECT FREQ); `None` under LRU.
    pub fn frequency(self, field: u32, now_ms: u64) -> Option<u8> {
        match self {
            AccessClock::Lru => None,
            AccessClock::Lfu { decay_minutes, .. } => {
                Some(lfu_counter(field, now_ms, decay_minutes))
            }
        }
    }

    /// The field RESTORE gives a key from its IDLETIME (seconds) or FREQ option:
    /// `None` when the option given is not the one this clock keeps, and the key
    /// keeps the field of a new key. An idle time longer than the 24-bit clock can
    /// look back is taken, as in Redis, as half the clock's span ahead.
    pub fn restored(self, idle_seconds: Option<u64>, freq: Option<u8>, now_ms: u64) -> Option<u32> {
        match (self, idle_seconds, freq) {
            (AccessClock::Lfu { .. }, _, Some(counter)) => {
                Some(lfu_field(minutes(now_ms), counter))
            }
            (AccessClock::Lru, Some(idle), _) => {
                let now = u64::from(access_clock(now_ms));
                let then = now
                    .checked_sub(idle)
                    .unwrap_or((now + LRU_CLOCK_MAX / 2) % LRU_CLOCK_MAX);
                Some(then as u32)
            }
            _ => None,
        }
    }

    /// How little the key has been used, for eviction (the larger, the better a
    /// candidate): seconds idle under LRU, 255 minus the decayed counter under LFU.
    pub fn coldness(self, field: u32, now_ms: u64) -> u64 {
        match self.frequency(field, now_ms) {
            Some(counter) => u64::from(255 - counter),
            None => idle_seconds(field, now_ms),
        }
    }
}

/// The clock mode every thread reads, in one word so a command pays one relaxed
/// load for it: bit 63 says LFU, bits 32..63 hold `lfu-decay-time`, the low 32 bits
/// `lfu-log-factor` (both are at most `i32::MAX`).
#[derive(Default)]
pub struct ClockMode(AtomicU64);

const LFU_BIT: u64 = 1 << 63;

impl ClockMode {
    pub fn set(&self, clock: AccessClock) {
        let word = match clock {
            AccessClock::Lru => 0,
            AccessClock::Lfu {
                log_factor,
                decay_minutes,
            } => LFU_BIT | u64::from(decay_minutes & 0x7FFF_FFFF) << 32 | u64::from(log_factor),
        };
        self.0.store(word, Ordering::Relaxed);
    }

    #[inline]
    pub fn get(&self) -> AccessClock {
        let word = self.0.load(Ordering::Relaxed);
        if word & LFU_BIT == 0 {
            return AccessClock::Lru;
        }
        AccessClock::Lfu {
            log_factor: word as u32,
            decay_minutes: ((word >> 32) & 0x7FFF_FFFF) as u32,
        }
    }
}

/// Seconds between the LRU clock reading `access` and `now_ms`, across the clock's
/// 24-bit wrap (OBJECT IDLETIME, DEBUG OBJECT, eviction).
pub fn idle_seconds(access: u32, now_ms: u64) -> u64 {
    let (now, then) = (access_clock(now_ms) as u64, access as u64);
    if now >= then {
        now - then
    } else {
        now + LRU_CLOCK_MAX - then
    }
}

/// Where the LRU clock wraps, as Redis's.
const LRU_CLOCK_MAX: u64 = (1 << 24) - 1;

/// The LRU clock at `now_ms`: seconds, wrapping at 24 bits like Redis's.
pub fn access_clock(now_ms: u64) -> u32 {
    ((now_ms / 1000) & 0xFF_FFFF) as u32
}

/// The LFU time: minutes, wrapping at 16 bits.
fn minutes(now_ms: u64) -> u32 {
    ((now_ms / 60_000) & 0xFFFF) as u32
}

fn lfu_field(minutes: u32, counter: u8) -> u32 {
    minutes << 8 | u32::from(counter)
}

/// The counter of LFU data `field` at `now_ms`, less one for every `decay_minutes`
/// since the last access (none when `decay_minutes` is 0).
fn lfu_counter(field: u32, now_ms: u64, decay_minutes: u32) -> u8 {
    let counter = (field & 0xFF) as u8;
    if decay_minutes == 0 {
        return counter;
    }
    let (then, now) = ((field >> 8) & 0xFFFF, minutes(now_ms));
    let elapsed = if now >= then {
        now - then
    } else {
        0xFFFF - then + now
    };
    let periods = (elapsed / decay_minutes).min(255) as u8;
    counter.saturating_sub(periods)
}

/// One access's worth of growth: the counter rises by one with a probability that
/// falls as it grows, and stays at 255 once there.
fn log_increment(counter: u8, log_factor: u32) -> u8 {
    if counter == u8::MAX {
        return counter;
    }
    let above_start = f64::from(counter.saturating_sub(LFU_INITIAL_COUNTER));
    let chance = 1.0 / (above_start * f64::from(log_factor) + 1.0);
    if rand::random::<f64>() < chance {
        counter + 1
    } else {
        counter
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LFU: AccessClock = AccessClock::Lfu {
        log_factor: 10,
        decay_minutes: 1,
    };

    #[test]
    fn a_new_key_counts_five_and_its_first_access_six() {
        let now = 1_700_000_000_000;
        let field = LFU.initial(now);
        assert_eq!(LFU.frequency(field, now), Some(5));
        let field = LFU.accessed(field, now);
        assert_eq!(LFU.frequency(field, now), Some(6));
        assert_eq!(AccessClock::Lru.frequency(field, now), None);
    }

    #[test]
    fn counters_grow_logarithmically() {
        let now = 1_700_000_000_000;
        let mut field = LFU.initial(now);
        for _ in 0..1000 {
            field = LFU.accessed(field, now);
        }
        // Reaching 5 + k takes about 5 k^2 accesses with factor 10: some 19 after 1000
        // (12 to 29 in 20,000 simulated runs).
        let counter = LFU.frequency(field, now).unwrap();
        assert!((10..=32).contains(&counter), "{counter}");
        let fast = AccessClock::Lfu {
            log_factor: 0,
            decay_minutes: 1,
        };
        let mut field = fast.initial(now);
        for _ in 0..300 {
            field = fast.accessed(field, now);
        }
        assert_eq!(fast.frequency(field, now), Some(255));
    }

    #[test]
    fn counters_decay_per_period_and_across_the_wrap() {
        let now = 1_700_000_000_000;
        let field = lfu_field(minutes(now), 20);
        assert_eq!(LFU.frequency(field, now + 3 * 60_000), Some(17));
        let slow = AccessClock::Lfu {
            log_factor: 10,
            decay_minutes: 2,
        };
        assert_eq!(slow.frequency(field, now + 5 * 60_000), Some(18));
        let off = AccessClock::Lfu {
            log_factor: 10,
            decay_minutes: 0,
        };
        assert_eq!(off.frequency(field, now + 500 * 60_000), Some(20));
        assert_eq!(LFU.frequency(field, now + 100 * 60_000), Some(0));
        // Written at minute 0xFFFF, read at minute 1: Redis counts one minute across
        // the wrap there.
        assert_eq!(lfu_counter(lfu_field(0xFFFF, 9), 60_000, 1), 8);
    }

    #[test]
    fn overwriting_keeps_lfu_data_and_restarts_the_lru_clock() {
        let now = 1_700_000_000_000;
        let field = lfu_field(minutes(now), 9);
        assert_eq!(LFU.overwritten(field, false, now), field);
        assert!(LFU.frequency(LFU.overwritten(field, true, now), now) >= Some(9));
        let later = now + 5000;
        assert_eq!(
            AccessClock::Lru.overwritten(access_clock(now), false, later),
            access_clock(later)
        );
    }

    #[test]
    fn the_mode_word_round_trips() {
        let mode = ClockMode::default();
        assert_eq!(mode.get(), AccessClock::Lru);
        let lfu = AccessClock::Lfu {
            log_factor: i32::MAX as u32,
            decay_minutes: i32::MAX as u32,
        };
        mode.set(lfu);
        assert_eq!(mode.get(), lfu);
        mode.set(LFU);
        assert_eq!(mode.get(), LFU);
        assert_eq!(LFU.coldness(LFU.initial(0), 0), 250);
        assert_eq!(AccessClock::Lru.coldness(access_clock(0), 7000), 7);
    }
}
