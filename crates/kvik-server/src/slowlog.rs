//! The slow log: the last `slowlog-max-len` commands that ran for at least
//! `slowlog-log-slower-than` microseconds, newest first, as SLOWLOG GET shows them.
//!
//! Deciding costs one relaxed load and one comparison per command: the threshold
//! lives in an atomic (`u64::MAX` when the log is off, so "off" needs no second
//! test), compared with the duration the dispatcher measures anyway. The log itself
//! is one mutex, taken only to add an entry (its arguments are copied and cut before
//! the lock is taken) or to read or reset the log, so a server where nothing is slow
//! never touches it.
//!
//! Owns: the entries, their ids, the threshold and length limit. Must not touch:
//! which commands are logged and with which arguments shown (the command layer,
//! [`crate::commands::slowlog`]).

use kvik_config::Config;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// At most this many arguments are kept; the last one kept then says how many more
/// there were.
const MAX_ARGS: usize = 32;
/// At most this many bytes of each argument are kept.
const MAX_ARG_BYTES: usize = 128;

/// One logged command.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Unique, growing from 0 over the server's life (a reset does not restart it).
    pub id: u64,
    /// Unix time in seconds when the command was logged.
    pub time: u64,
    pub duration_us: u64,
    /// The arguments, cut as Redis cuts them (see [`Call::new`]).
    pub args: Vec<Vec<u8>>,
    /// `ip:port` of the client (`?:0` for a script's commands).
    pub client_addr: String,
    pub client_name: Vec<u8>,
}

/// What a command leaves in the log before it gets its id and time.
#[derive(Debug, Clone)]
pub struct Call {
    args: Vec<Vec<u8>>,
    duration_us: u64,
}

impl Call {
    /// A call of `args` that took `duration_us`. Past [`MAX_ARGS`] arguments the last
    /// one kept reads `... (N more arguments)`; an argument longer than
    /// [`MAX_ARG_BYTES`] keeps its start followed by `... (N more bytes)`: long
    /// command lines must not make the log hold megabytes.
    pub fn new(args: &[&[u8]], duration_us: u64) -> Call {
        let kept = if args.len() > MAX_ARGS {
            MAX_ARGS - 1
        } else {
            args.len()
        };
        let mut cut: Vec<Vec<u8>> = args[..kept].iter().map(|a| cut_arg(a)).collect();
        if kept < args.len() {
            let more = args.len() - kept;
            cut.push(format!("... ({more} more arguments)").into_bytes());
        }
        Call {
            args: cut,
            duration_us,
        }
    }
}

fn cut_arg(arg: &[u8]) -> Vec<u8> {
    if arg.len() <= MAX_ARG_BYTES {
        return arg.to_vec();
    }
    let mut kept = arg[..MAX_ARG_BYTES].to_vec();
    let more = arg.len() - MAX_ARG_BYTES;
    kept.extend_from_slice(format!("... ({more} more bytes)").as_bytes());
    kept
}

#[derive(Default)]
struct Log {
    /// Newest first.
    entries: VecDeque<Entry>,
    next_id: u64,
}

pub struct SlowLog {
    /// `slowlog-log-slower-than` in µs, `u64::MAX` when negative (off).
    threshold_us: AtomicU64,
    max_len: AtomicUsize,
    log: Mutex<Log>,
}

impl SlowLog {
    pub fn new(config: &Config) -> SlowLog {
        let log = SlowLog {
            threshold_us: AtomicU64::new(u64::MAX),
            max_len: AtomicUsize::new(0),
            log: Mutex::default(),
        };
        log.configure(config);
        log
    }

    /// Take the `slowlog-*` parameters (at start and after CONFIG SET). A shorter
    /// `slowlog-max-len` trims the log at its next entry, as in Redis.
    pub fn configure(&self, c: &Config) {
        self.threshold_us
            .store(threshold_us(c.slowlog_log_slower_than), Ordering::Relaxed);
        let max_len = usize::try_from(c.slowlog_max_len).unwrap_or(usize::MAX);
        self.max_len.store(max_len, Ordering::Relaxed);
    }

    /// Does a command that ran this long belong in the log?
    #[inline]
    pub fn is_slow(&self, elapsed: Duration) -> bool {
        elapsed.as_micros() as u64 >= self.threshold_us.load(Ordering::Relaxed)
    }

    /// Add `call`, made by the client at `client_addr` named `client_name`, as the
    /// newest entry, dropping the oldest ones beyond `slowlog-max-len`.
    pub fn push(&self, call: Call, client_addr: String, client_name: Vec<u8>) {
        let time = crate::hlc::unix_ms() / 1000;
        let max_len = self.max_len.load(Ordering::Relaxed);
        let mut log = self.log.lock();
        let id = log.next_id;
        log.next_id += 1;
        log.entries.push_front(Entry {
            id,
            time,
            duration_us: call.duration_us,
            args: call.args,
            client_addr,
            client_name,
        });
        log.entries.truncate(max_len);
    }

    /// The newest `count` entries, newest first.
    pub fn latest(&self, count: usize) -> Vec<Entry> {
        let log = self.log.lock();
        log.entries.iter().take(count).cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.log.lock().entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forget every entry; ids go on from where they were.
    pub fn reset(&self) {
        // Taken out under the lock, freed after it.
        let _dropped = std::mem::take(&mut self.log.lock().entries);
    }
}

/// The threshold as compared: a negative `slowlog-log-slower-than` turns the log off.
pub fn threshold_us(setting: i64) -> u64 {
    u64::try_from(setting).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(n: usize, len: usize) -> Vec<Vec<u8>> {
        (0..n).map(|i| vec![b'a' + (i % 26) as u8; len]).collect()
    }

    fn cut(args: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        Call::new(&refs, 0).args
    }

    #[test]
    fn arguments_are_cut_as_redis_cuts_them() {
        assert_eq!(cut(&args(32, 3)), args(32, 3));
        let many = cut(&args(42, 3));
        assert_eq!(many.len(), 32);
        assert_eq!(many[..31], args(31, 3)[..]);
        assert_eq!(many[31], b"... (11 more arguments)");
        assert_eq!(cut(&args(1, 128)), args(1, 128));
        let long = &cut(&args(1, 130))[0];
        assert_eq!(&long[..128], &args(1, 128)[0][..]);
        assert_eq!(&long[128..], b"... (2 more bytes)");
    }

    #[test]
    fn log_keeps_the_newest_and_counts_on_across_resets() {
        let mut config = Config {
            slowlog_max_len: 2,
            slowlog_log_slower_than: 5,
            ..Config::default()
        };
        let log = SlowLog::new(&config);
        assert!(!log.is_slow(Duration::from_micros(4)));
        assert!(log.is_slow(Duration::from_micros(5)));
        for n in 0..3 {
            log.push(Call::new(&[b"x"], n), "a:1".into(), Vec::new());
        }
        let ids: Vec<u64> = log.latest(10).iter().map(|e| e.id).collect();
        assert_eq!(ids, [2, 1]);
        log.reset();
        assert!(log.is_empty());
        log.push(Call::new(&[b"x"], 0), "a:1".into(), Vec::new());
        assert_eq!(log.latest(1)[0].id, 3);
        config.slowlog_log_slower_than = -1;
        log.configure(&config);
        assert!(!log.is_slow(Duration::from_secs(3600)));
    }
}
