//! The latency monitor: for each kind of event that can stall clients, the last 160
//! seconds in which one took at least `latency-monitor-threshold` milliseconds, with
//! the worst time of each such second and of all time (LATENCY LATEST, HISTORY,
//! GRAPH, DOCTOR).
//!
//! The events are those of Redis's that kvik has: commands (`command`, and
//! `fast-command` for commands flagged `fast`), a worker's active expiry cycle
//! (`expire-cycle`), a round of eviction (`eviction-cycle`) and the removal of one
//! evicted key (`eviction-del`). With the monitor off (threshold 0) noting an event
//! is one relaxed load; on, a sample below the threshold costs a comparison more, and
//! only a sample above it takes the monitor's mutex.
//!
//! Owns: the samples and the threshold. Must not touch: the replies (the command
//! layer, [`crate::commands::latency`]).

use kvik_config::Config;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Samples kept per event: one per second in which the event was slow.
pub const SAMPLES: usize = 160;

/// A kind of event the monitor times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Command,
    FastCommand,
    ExpireCycle,
    EvictionCycle,
    EvictionDel,
}

impl Event {
    /// Every event, in the order LATENCY LATEST lists them.
    pub const ALL: [Event; 5] = [
        Event::Command,
        Event::FastCommand,
        Event::ExpireCycle,
        Event::EvictionCycle,
        Event::EvictionDel,
    ];

    /// The name clients know the event by.
    pub fn name(self) -> &'static str {
        match self {
            Event::Command => "command",
            Event::FastCommand => "fast-command",
            Event::ExpireCycle => "expire-cycle",
            Event::EvictionCycle => "eviction-cycle",
            Event::EvictionDel => "eviction-del",
        }
    }

    /// The event a client names (exactly, as Redis matches event names).
    pub fn from_name(name: &[u8]) -> Option<Event> {
        Event::ALL.into_iter().find(|e| e.name().as_bytes() == name)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The worst latency seen in one second.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sample {
    /// Unix time in seconds; 0 for a slot never filled.
    pub time: u64,
    pub latency_ms: u64,
}

/// One event's samples: a ring of the last [`SAMPLES`] slow seconds.
#[derive(Debug, Clone)]
pub struct Series {
    samples: [Sample; SAMPLES],
    /// Where the next second's sample goes.
    next: usize,
    /// The worst latency since the series began.
    pub max_ms: u64,
}

impl Default for Series {
    fn default() -> Series {
        Series {
            samples: [Sample::default(); SAMPLES],
            next: 0,
            max_ms: 0,
        }
    }
}

impl Series {
    /// Note `latency_ms` at `time`: a second already sampled keeps its worst.
    pub fn add(&mut self, time: u64, latency_ms: u64) {
        self.max_ms = self.max_ms.max(latency_ms);
        let last = &mut self.samples[(self.next + SAMPLES - 1) % SAMPLES];
        if last.time == time {
            last.latency_ms = last.latency_ms.max(latency_ms);
            return;
        }
        self.samples[self.next] = Sample { time, latency_ms };
        self.next = (self.next + 1) % SAMPLES;
    }

    /// The newest sample.
    pub fn latest(&self) -> Sample {
        self.samples[(self.next + SAMPLES - 1) % SAMPLES]
    }

    /// The samples, oldest first.
    pub fn history(&self) -> impl Iterator<Item = Sample> + '_ {
        let (newer, older) = self.samples.split_at(self.next);
        older.iter().chain(newer).copied().filter(|s| s.time != 0)
    }
}

pub struct LatencyMonitor {
    /// `latency-monitor-threshold` in ms; 0 turns the monitor off.
    threshold_ms: AtomicU64,
    series: Mutex<[Option<Box<Series>>; Event::ALL.len()]>,
}

impl LatencyMonitor {
    pub fn new(config: &Config) -> LatencyMonitor {
        let monitor = LatencyMonitor {
            threshold_ms: AtomicU64::new(0),
            series: Mutex::new(Default::default()),
        };
        monitor.configure(config);
        monitor
    }

    /// Take `latency-monitor-threshold` (at start and after CONFIG SET).
    pub fn configure(&self, c: &Config) {
        self.threshold_ms
            .store(c.latency_monitor_threshold, Ordering::Relaxed);
    }

    /// The threshold in ms, `None` when the monitor is off.
    pub fn threshold_ms(&self) -> Option<u64> {
        Some(self.threshold_ms.load(Ordering::Relaxed)).filter(|&t| t > 0)
    }

    /// Is the monitor on? (Callers skip timing what it would not keep.)
    #[inline]
    pub fn is_on(&self) -> bool {
        self.threshold_ms.load(Ordering::Relaxed) != 0
    }

    /// An `event` took `elapsed`: keep it if that reaches the threshold.
    #[inline]
    pub fn note(&self, event: Event, elapsed: Duration) {
        let ms = elapsed.as_millis() as u64;
        if self.threshold_ms().is_some_and(|t| ms >= t) {
            self.add(event, crate::hlc::unix_ms() / 1000, ms);
        }
    }

    fn add(&self, event: Event, time: u64, latency_ms: u64) {
        let mut series = self.series.lock();
        series[event.index()]
            .get_or_insert_with(Box::default)
            .add(time, latency_ms);
    }

    /// The events that have samples, with a copy of their series.
    pub fn all(&self) -> Vec<(Event, Series)> {
        let series = self.series.lock();
        Event::ALL
            .into_iter()
            .filter_map(|e| Some((e, (**series[e.index()].as_ref()?).clone())))
            .collect()
    }

    /// A copy of `event`'s series, if it has samples.
    pub fn series(&self, event: Event) -> Option<Series> {
        self.series.lock()[event.index()].as_deref().cloned()
    }

    /// Forget `event`'s samples; whether it had any.
    pub fn reset(&self, event: Event) -> bool {
        self.series.lock()[event.index()].take().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sample_per_second_with_its_worst() {
        let mut series = Series::default();
        series.add(100, 7);
        series.add(100, 20);
        series.add(100, 3);
        series.add(101, 5);
        let history: Vec<Sample> = series.history().collect();
        assert_eq!(
            history,
            [
                Sample {
                    time: 100,
                    latency_ms: 20
                },
                Sample {
                    time: 101,
                    latency_ms: 5
                }
            ]
        );
        assert_eq!(series.latest().latency_ms, 5);
        assert_eq!(series.max_ms, 20);
    }

    #[test]
    fn the_ring_keeps_the_newest_seconds() {
        let mut series = Series::default();
        for t in 1..=SAMPLES as u64 + 10 {
            series.add(t, t);
        }
        let times: Vec<u64> = series.history().map(|s| s.time).collect();
        assert_eq!(times.len(), SAMPLES);
        assert_eq!(times[0], 11);
        assert_eq!(*times.last().unwrap(), SAMPLES as u64 + 10);
    }

    #[test]
    fn samples_below_the_threshold_are_not_kept() {
        let mut config = Config::default();
        let monitor = LatencyMonitor::new(&config);
        monitor.note(Event::Command, Duration::from_secs(1));
        assert!(monitor.all().is_empty(), "off by default");
        config.latency_monitor_threshold = 10;
        monitor.configure(&config);
        monitor.note(Event::Command, Duration::from_millis(9));
        assert!(monitor.all().is_empty());
        monitor.note(Event::ExpireCycle, Duration::from_millis(10));
        let all = monitor.all();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].0, Event::ExpireCycle);
        assert!(monitor.reset(Event::ExpireCycle));
        assert!(!monitor.reset(Event::ExpireCycle));
    }
}
