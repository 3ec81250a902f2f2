//! Whether the server is loading its dataset (an RDB or AOF at start-up, DEBUG
//! RELOAD, DEBUG LOADAOF, a replica's full sync) and how far it has got: what INFO
//! persistence shows as `loading:1` and the `loading_*` fields, and what makes
//! commands not flagged `loading` get `-LOADING` meanwhile, as in Redis.
//!
//! Loaders count the bytes they read through [`Counted`] and ask
//! [`Loading::serve_due`] when to let other threads in (every
//! `loading-process-events-interval-bytes`, Redis's processEventsWhileBlocked).
//! Owns only these figures: it must not touch the keyspace, clients or files.

use parking_lot::{Condvar, Mutex};
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::thread::ThreadId;

/// The loading state of the server.
#[derive(Default)]
pub struct Loading {
    /// Loads under way (a start-up load nests the file's own inside the wait for it).
    depth: AtomicU32,
    /// The thread that loads: the commands it runs (an AOF's) are the load itself.
    loader: Mutex<Option<ThreadId>>,
    start_time: AtomicU64,
    total_bytes: AtomicU64,
    loaded_bytes: AtomicU64,
    rdb_used_mem: AtomicU64,
    /// Bytes between two chances for other threads to be served.
    interval_bytes: AtomicU64,
    /// SHUTDOWN came while loading: the load stops at its next chance.
    stop: AtomicBool,
    /// A replica loads its master's dataset beside the one it serves
    /// (`repl-diskless-load swapdb`, same history): INFO's `async_loading:1`, and
    /// only commands flagged `no-async-loading` get -LOADING.
    asynchronous: AtomicBool,
    /// The server is starting (its workers serve, the dataset is not there yet, no
    /// file is being read): commands wait, as redis-server's clients wait in the
    /// listen backlog until it serves. Holds the starting thread.
    starting: Mutex<Option<ThreadId>>,
    is_starting: AtomicBool,
    started: Condvar,
}

/// What INFO persistence shows while loading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub start_time: u64,
    pub total_bytes: u64,
    pub rdb_used_mem: u64,
    pub loaded_bytes: u64,
}

impl Progress {
    /// `loading_loaded_perc`, as Redis computes it.
    pub fn percent(&self) -> f64 {
        if self.total_bytes == 0 {
            return 0.0;
        }
        self.loaded_bytes as f64 * 100.0 / self.total_bytes as f64
    }

    /// `loading_eta_seconds`, as Redis estimates it: 1 in the first second.
    pub fn eta_seconds(&self, now_secs: u64) -> u64 {
        let elapsed = now_secs.saturating_sub(self.start_time);
        if elapsed == 0 {
            return 1;
        }
        let remaining = if self.total_bytes == 0 {
            1
        } else {
            self.total_bytes.saturating_sub(self.loaded_bytes)
        };
        elapsed * remaining / (self.loaded_bytes + 1)
    }
}

/// A load under way; it ends when this is dropped.
pub struct Underway<'l> {
    loading: &'l Loading,
}

impl Drop for Underway<'_> {
    fn drop(&mut self) {
        if self.loading.depth.fetch_sub(1, Ordering::AcqRel) == 1 {
            *self.loading.loader.lock() = None;
            self.loading.stop.store(false, Ordering::Release);
        }
    }
}

/// A load beside the served dataset; it ends when this is dropped.
pub struct AsyncUnderway<'l> {
    loading: &'l Loading,
}

impl Drop for AsyncUnderway<'_> {
    fn drop(&mut self) {
        self.loading.asynchronous.store(false, Ordering::Release);
        self.loading.stop.store(false, Ordering::Release);
    }
}

/// The server is starting; it has started when this is dropped.
pub struct Starting<'l> {
    loading: &'l Loading,
}

impl Drop for Starting<'_> {
    fn drop(&mut self) {
        *self.loading.starting.lock() = None;
        self.loading.is_starting.store(false, Ordering::Release);
        self.loading.started.notify_all();
    }
}

impl Loading {
    /// The server starts (on this thread): commands from other threads wait until
    /// the returned value is dropped, or get -LOADING while a file loads meanwhile.
    pub fn hold_startup(&self) -> Starting<'_> {
        *self.starting.lock() = Some(std::thread::current().id());
        self.is_starting.store(true, Ordering::Release);
        Starting { loading: self }
    }

    /// Wait while the server is starting and no file is being loaded (then the
    /// command gets -LOADING instead). One relaxed load once started.
    pub fn wait_while_starting(&self) {
        if !self.is_starting.load(Ordering::Acquire) {
            return;
        }
        let me = std::thread::current().id();
        let mut starting = self.starting.lock();
        while starting.is_some_and(|t| t != me) && !self.is_active() {
            // A load that begins meanwhile does not signal: look again shortly.
            self.started
                .wait_for(&mut starting, std::time::Duration::from_millis(10));
        }
    }

    /// Start loading `total_bytes` (0 when unknown) on this thread, serving others
    /// every `interval_bytes`. The figures start over; the state lasts until the
    /// returned value is dropped.
    pub fn begin(&self, total_bytes: u64, interval_bytes: u64) -> Underway<'_> {
        *self.loader.lock() = Some(std::thread::current().id());
        self.reset_figures(total_bytes, interval_bytes);
        self.depth.fetch_add(1, Ordering::AcqRel);
        Underway { loading: self }
    }

    /// Start loading beside the served dataset (clients keep being served); the
    /// state lasts until the returned value is dropped.
    pub fn begin_async(&self, interval_bytes: u64) -> AsyncUnderway<'_> {
        self.reset_figures(0, interval_bytes);
        self.asynchronous.store(true, Ordering::Release);
        AsyncUnderway { loading: self }
    }

    fn reset_figures(&self, total_bytes: u64, interval_bytes: u64) {
        self.start_time
            .store(crate::hlc::unix_ms() / 1000, Ordering::Relaxed);
        self.total_bytes.store(total_bytes, Ordering::Relaxed);
        self.loaded_bytes.store(0, Ordering::Relaxed);
        self.rdb_used_mem.store(0, Ordering::Relaxed);
        self.interval_bytes
            .store(interval_bytes.max(1), Ordering::Relaxed);
    }

    /// Is a load beside the served dataset under way (`async_loading`)?
    #[inline]
    pub fn is_async(&self) -> bool {
        self.asynchronous.load(Ordering::Acquire)
    }

    /// Is a load under way?
    #[inline]
    pub fn is_active(&self) -> bool {
        self.depth.load(Ordering::Acquire) > 0
    }

    /// Must a command from this thread be refused with -LOADING? While a load is
    /// under way, yes, unless this thread is the loader (the AOF's commands).
    #[inline]
    pub fn refuses_here(&self) -> bool {
        self.is_active() && *self.loader.lock() != Some(std::thread::current().id())
    }

    /// The figures of the load under way, if one is.
    pub fn progress(&self) -> Option<Progress> {
        (self.is_active() || self.is_async()).then(|| Progress {
            start_time: self.start_time.load(Ordering::Relaxed),
            total_bytes: self.total_bytes.load(Ordering::Relaxed),
            rdb_used_mem: self.rdb_used_mem.load(Ordering::Relaxed),
            loaded_bytes: self.loaded_bytes.load(Ordering::Relaxed),
        })
    }

    /// The memory the RDB being loaded says its server used (`used-mem`).
    pub fn note_rdb_used_mem(&self, bytes: u64) {
        self.rdb_used_mem.store(bytes, Ordering::Relaxed);
    }

    /// The load's size, once known (an AOF's files are measured after it began).
    pub fn set_total_bytes(&self, bytes: u64) {
        self.total_bytes.store(bytes, Ordering::Relaxed);
    }

    /// `bytes` more were read by a loader that counts for itself.
    pub fn add_loaded(&self, bytes: u64) {
        self.loaded_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn loaded_bytes(&self) -> u64 {
        self.loaded_bytes.load(Ordering::Relaxed)
    }

    /// Has the load read another interval's worth since `*mark`? Moves the mark.
    pub fn serve_due(&self, mark: &mut u64) -> bool {
        let loaded = self.loaded_bytes();
        if loaded < *mark + self.interval_bytes.load(Ordering::Relaxed) {
            return false;
        }
        *mark = loaded;
        true
    }

    /// SHUTDOWN while loading: the load gives up at its next chance.
    pub fn request_stop(&self) {
        if self.is_active() || self.is_async() {
            self.stop.store(true, Ordering::Release);
        }
    }

    pub fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// A reader that counts what `inner` gives as loaded bytes.
    pub fn counted<R: Read>(&self, inner: R) -> Counted<'_, R> {
        Counted {
            inner,
            loading: self,
            unpublished: 0,
        }
    }
}

/// Bytes a [`Counted`] reader gathers before adding them to the shared figure: the
/// RDB reader asks for a few bytes at a time, and one shared add per read would
/// cost the load more than the figure is worth.
const PUBLISH_EVERY: u64 = 1024;

/// A reader whose bytes count as loaded ([`Loading::counted`]).
pub struct Counted<'l, R> {
    inner: R,
    loading: &'l Loading,
    unpublished: u64,
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.unpublished += n as u64;
        if self.unpublished >= PUBLISH_EVERY {
            self.loading
                .add_loaded(std::mem::take(&mut self.unpublished));
        }
        Ok(n)
    }
}

impl<R> Drop for Counted<'_, R> {
    fn drop(&mut self) {
        self.loading.add_loaded(self.unpublished);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_is_active_until_its_last_guard_goes() {
        let loading = Loading::default();
        assert!(!loading.is_active());
        let outer = loading.begin(0, 1024);
        let inner = loading.begin(100, 1024);
        drop(inner);
        assert!(loading.is_active());
        assert!(
            !loading.refuses_here(),
            "the loader's own thread is not refused"
        );
        drop(outer);
        assert!(!loading.is_active());
        assert_eq!(loading.progress(), None);
    }

    #[test]
    fn counted_bytes_make_progress_and_pace_the_load() {
        let loading = Loading::default();
        let _underway = loading.begin(4096, 1024);
        let mut sink = Vec::new();
        let mut mark = 0;
        loading
            .counted(&[0u8; 1000][..])
            .read_to_end(&mut sink)
            .unwrap();
        assert!(!loading.serve_due(&mut mark));
        loading
            .counted(&[0u8; 1048][..])
            .read_to_end(&mut sink)
            .unwrap();
        assert!(loading.serve_due(&mut mark));
        assert!(!loading.serve_due(&mut mark));
        let progress = loading.progress().unwrap();
        assert_eq!(progress.loaded_bytes, 2048);
        assert_eq!(format!("{:.2}", progress.percent()), "50.00");
        let later = progress.start_time + 2;
        assert_eq!(progress.eta_seconds(later), 2 * 2048 / 2049);
    }
}
