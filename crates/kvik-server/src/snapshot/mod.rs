//! RDB snapshots on disk: the point-in-time snapshot, writing it to a file in
//! place, loading a file, and the save bookkeeping. When the server saves (SAVE,
//! BGSAVE, save points, SHUTDOWN, FLUSHALL) is decided above, in `server::saving`.
//!
//! A snapshot is point-in-time without fork(): [`job::Snapshot::begin`] marks every
//! shard pending while briefly holding them all (see `keyspace/capture.rs`), then
//! the shards are written one by one — by the saver thread for BGSAVE, by the
//! command's own thread for SAVE — while clients keep writing; a client that meets a
//! pending shard first serializes it for the snapshot. Files are written to
//! `temp-<pid>.rdb`, fsynced, then renamed over `dbfilename`, as Redis does.
//!
//! Owns the save bookkeeping behind LASTSAVE, INFO persistence and MISCONF, and the
//! saver thread's queue. Must not touch the RDB framing (`persistence::rdb::file`),
//! clients, or the server's other state.

pub mod check;
mod commands;
mod job;
mod load;

pub use job::{AtPoint, Form, Snapshot};
pub use load::{load_file, load_reader, read_into, LoadHow, LoadTarget, Loaded, OnKept, OnSeen};

use crate::keyspace::{AccessClock, Policy};
use crate::log_warning;
use crate::persistence::rdb::file;
use crate::persistence::rdb::io::WriteSink;
use job::{AccessData, Settings};
use kvik_config::Config;
use parking_lot::{Condvar, Mutex};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// How often the saver thread looks at the save points (Redis's cron runs them at
/// `hz`; a tenth of a second is as fine as anyone sets a save point).
pub const SAVE_POINTS_CHECK: Duration = Duration::from_millis(100);
/// After a failed background save, save points wait this long before trying again
/// (Redis's `CONFIG_BGSAVE_RETRY_DELAY`).
const RETRY_DELAY_SECS: u64 = 5;

/// Why a save did not happen.
#[derive(Debug)]
pub enum SaveError {
    /// Another snapshot is being written.
    InProgress,
    /// The file could not be written (logged already).
    Failed,
    /// Stopped on purpose (SHUTDOWN, FLUSHALL).
    Cancelled,
}

/// How a background save ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Saved,
    Failed,
    /// Stopped on purpose: not a failure (no MISCONF), as for Redis's child killed
    /// with SIGUSR1.
    Cancelled,
}

/// A background save being written.
struct Background {
    started: Instant,
    cancel: Arc<AtomicBool>,
}

/// A snapshot begun by BGSAVE, for the saver thread to write.
pub struct Pending {
    pub snapshot: Arc<Snapshot>,
    pub point: AtPoint,
    pub cancel: Arc<AtomicBool>,
}

/// The save state of the server.
pub struct Persistence {
    /// The saver thread's queue (set once it runs).
    saver: Mutex<Option<mpsc::Sender<Pending>>>,
    running: Mutex<Option<Background>>,
    /// Signalled when a background save ends.
    ended: Condvar,
    /// BGSAVE SCHEDULE (or BGSAVE inside a transaction): start one when possible.
    scheduled: AtomicBool,
    /// Unix seconds of the last successful save (the start, before any).
    last_save: AtomicU64,
    /// The change counter when the last successful save's point was taken.
    dirty_at_save: AtomicU64,
    last_bgsave_ok: AtomicBool,
    last_bgsave_secs: AtomicI64,
    last_bgsave_try: AtomicU64,
    saves: AtomicU64,
    /// MISCONF: the last background save failed, stop-writes-on-bgsave-error is on
    /// and save points are set. Read by every write command: one relaxed load.
    refuse_writes: AtomicBool,
    stop_writes_on_error: AtomicBool,
    has_save_points: AtomicBool,
    pub last_load: Mutex<Loaded>,
    /// Held by a background save from its last look at its cancel flag until its
    /// file is renamed in place, and by whoever cancels it: a cancelled save's file
    /// never replaces a newer one.
    rename_lock: Mutex<()>,
}

impl Persistence {
    pub fn new(config: &Config, start_ms: u64) -> Persistence {
        let state = Persistence {
            saver: Mutex::new(None),
            running: Mutex::new(None),
            ended: Condvar::new(),
            scheduled: AtomicBool::new(false),
            last_save: AtomicU64::new(start_ms / 1000),
            dirty_at_save: AtomicU64::new(0),
            last_bgsave_ok: AtomicBool::new(true),
            last_bgsave_secs: AtomicI64::new(-1),
            last_bgsave_try: AtomicU64::new(0),
            saves: AtomicU64::new(0),
            refuse_writes: AtomicBool::new(false),
            stop_writes_on_error: AtomicBool::new(false),
            has_save_points: AtomicBool::new(false),
            last_load: Mutex::new(Loaded::default()),
            rename_lock: Mutex::new(()),
        };
        state.configure(config);
        state
    }

    /// Re-read the parameters behind MISCONF (after CONFIG SET).
    pub fn configure(&self, config: &Config) {
        self.stop_writes_on_error
            .store(config.stop_writes_on_bgsave_error, Ordering::Relaxed);
        self.has_save_points
            .store(!config.save.is_empty(), Ordering::Relaxed);
        self.update_refusal();
    }

    fn update_refusal(&self) {
        let refuse = !self.last_bgsave_ok.load(Ordering::Relaxed)
            && self.stop_writes_on_error.load(Ordering::Relaxed)
            && self.has_save_points.load(Ordering::Relaxed);
        self.refuse_writes.store(refuse, Ordering::Relaxed);
    }

    /// Must write commands get the MISCONF error?
    #[inline]
    pub fn refuses_writes(&self) -> bool {
        self.refuse_writes.load(Ordering::Relaxed)
    }

    pub fn last_save(&self) -> u64 {
        self.last_save.load(Ordering::Relaxed)
    }

    pub fn bgsave_in_progress(&self) -> bool {
        self.running.lock().is_some()
    }

    /// Seconds the running background save has taken so far, or -1.
    pub fn current_bgsave_secs(&self) -> i64 {
        self.running
            .lock()
            .as_ref()
            .map_or(-1, |b| b.started.elapsed().as_secs() as i64)
    }

    pub fn last_bgsave_ok(&self) -> bool {
        self.last_bgsave_ok.load(Ordering::Relaxed)
    }

    pub fn last_bgsave_secs(&self) -> i64 {
        self.last_bgsave_secs.load(Ordering::Relaxed)
    }

    pub fn saves(&self) -> u64 {
        self.saves.load(Ordering::Relaxed)
    }

    /// Hand background saves to the saver thread's queue.
    pub fn set_saver(&self, saver: mpsc::Sender<Pending>) {
        *self.saver.lock() = Some(saver);
    }

    /// The saver thread's queue, once it runs.
    pub fn saver(&self) -> Option<mpsc::Sender<Pending>> {
        self.saver.lock().clone()
    }

    /// A background save starts now: its cancel flag.
    pub fn start_background(&self) -> Arc<AtomicBool> {
        let cancel = Arc::new(AtomicBool::new(false));
        *self.running.lock() = Some(Background {
            started: Instant::now(),
            cancel: cancel.clone(),
        });
        self.last_bgsave_try
            .store(crate::hlc::unix_ms() / 1000, Ordering::Relaxed);
        cancel
    }

    /// BGSAVE SCHEDULE: the saver thread starts one when it can.
    pub fn schedule(&self) {
        self.scheduled.store(true, Ordering::Relaxed);
    }

    /// Was a background save scheduled? Clears the request.
    pub fn take_scheduled(&self) -> bool {
        self.scheduled.swap(false, Ordering::Relaxed)
    }

    /// After a failed background save, save points wait [`RETRY_DELAY_SECS`]
    /// before trying again.
    pub fn may_retry(&self, now_secs: u64) -> bool {
        self.last_bgsave_ok()
            || now_secs.saturating_sub(self.last_bgsave_try.load(Ordering::Relaxed))
                > RETRY_DELAY_SECS
    }

    /// A save written without a snapshot (FLUSHALL's empty dataset) at `now_ms`,
    /// when the change counter (with the changes still to be counted) reads `dirty`.
    pub fn record_direct_save(&self, now_ms: u64, dirty: u64) {
        self.last_save.store(now_ms / 1000, Ordering::Relaxed);
        self.dirty_at_save.store(dirty, Ordering::Relaxed);
        self.saves.fetch_add(1, Ordering::Relaxed);
    }

    /// Changes since the last successful save's point in time.
    pub fn changes_since_save(&self, dirty: u64) -> u64 {
        dirty.saturating_sub(self.dirty_at_save.load(Ordering::Relaxed))
    }

    pub fn record_success(&self, point: &AtPoint) {
        self.last_save
            .store(crate::hlc::unix_ms() / 1000, Ordering::Relaxed);
        self.dirty_at_save.store(point.dirty, Ordering::Relaxed);
        self.saves.fetch_add(1, Ordering::Relaxed);
        self.last_bgsave_ok.store(true, Ordering::Relaxed);
        self.update_refusal();
    }

    pub fn record_background_end(&self, outcome: Outcome, took: Duration) {
        self.last_bgsave_secs
            .store(took.as_secs() as i64, Ordering::Relaxed);
        if outcome == Outcome::Failed {
            self.last_bgsave_ok.store(false, Ordering::Relaxed);
            self.update_refusal();
        }
        *self.running.lock() = None;
        self.ended.notify_all();
    }

    /// Stop the background save if one runs, and wait until it is gone. The caller
    /// must hold no shard lock (the writer may be waiting for one).
    pub fn cancel_background(&self) {
        self.cancel_background_nowait();
        let mut running = self.running.lock();
        while running.is_some() {
            self.ended.wait(&mut running);
        }
    }

    /// Tell the background save, if one runs, to stop and not to put its file in
    /// place; it stops at its next shard. For callers holding shard locks.
    pub fn cancel_background_nowait(&self) {
        let _renaming = self.rename_lock.lock();
        if let Some(bg) = self.running.lock().as_ref() {
            log_warning!("There is a child saving an .rdb. Killing it!");
            bg.cancel.store(true, Ordering::Relaxed);
        }
    }
}

/// Where the RDB file is: `dir/dbfilename`.
pub fn rdb_path(config: &Config) -> PathBuf {
    Path::new(&config.dir).join(&config.dbfilename)
}

/// How a snapshot taken under `config` writes its keys; `clock` is what the keys'
/// access fields hold.
pub fn settings(config: &Config, clock: AccessClock) -> Settings {
    let policy = Policy::from_name(&config.maxmemory_policy);
    let access = if policy.uses_lfu() {
        AccessData::Freq
    } else if policy.ranks_by_access() {
        AccessData::Idle
    } else {
        AccessData::None
    };
    Settings {
        form: Form::Rdb,
        compress: config.rdbcompression,
        access,
        clock,
        key_delay: config.rdb_key_save_delay,
        timestamps: config.active_replica,
    }
}

/// Redis's `debugDelay` behind `rdb-key-save-delay` and `key-load-delay`: so many
/// microseconds per key, or when negative, one microsecond every that many keys
/// (Redis sleeps at random with that odds; counting gives the same pace).
#[derive(Debug, Clone, Copy)]
pub struct KeyDelay {
    micros: i64,
    keys: u64,
}

impl KeyDelay {
    pub fn new(micros: i32) -> Self {
        KeyDelay {
            micros: i64::from(micros),
            keys: 0,
        }
    }

    /// How long `keys` more keys should take.
    pub fn for_keys(&mut self, keys: u64) -> Duration {
        let micros = match self.micros {
            0 => return Duration::ZERO,
            m if m > 0 => m as u64 * keys,
            m => {
                let every = m.unsigned_abs();
                let before = self.keys / every;
                self.keys += keys;
                self.keys / every - before
            }
        };
        Duration::from_micros(micros)
    }

    /// Sleep for `keys` more keys.
    pub fn after_keys(&mut self, keys: u64) {
        let pause = self.for_keys(keys);
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
    }
}

/// Which temp file a save writes, and what may cancel it.
#[derive(Clone, Copy)]
pub struct Target<'c> {
    /// Foreground saves use `temp-<pid>.rdb`, as Redis's SAVE does; a background one
    /// gets its own name, since a foreground save (FLUSHALL's) may run beside it.
    pub temp_name: &'static str,
    pub cancel: &'c AtomicBool,
}

/// The temp file name of a foreground save.
pub const FOREGROUND: &str = "temp";
/// The temp file name of a background save.
pub const BACKGROUND: &str = "temp-bgsave";

/// Bytes written between two fsyncs of an RDB file being saved, with
/// `rdb-save-incremental-fsync` (Redis's REDIS_AUTOSYNC_BYTES).
const INCREMENTAL_FSYNC_BYTES: usize = 4 * 1024 * 1024;

/// The temp file a save (or an AOF rewrite) writes. With `rdb-save-incremental-fsync`
/// (`aof-rewrite-incremental-fsync`) it is synced every [`INCREMENTAL_FSYNC_BYTES`],
/// so the kernel never piles up the whole file's dirty pages for the final fsync to
/// flush at once (a latency spike for everything else writing to the disk).
pub struct RdbFile {
    file: std::fs::File,
    incremental: bool,
    unsynced: usize,
}

impl RdbFile {
    pub fn new(file: std::fs::File, incremental: bool) -> Self {
        RdbFile {
            file,
            incremental,
            unsynced: 0,
        }
    }

    /// Flush what is written to the disk.
    pub fn sync_all(&self) -> std::io::Result<()> {
        self.file.sync_all()
    }
}

impl std::io::Write for RdbFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        if self.incremental {
            self.unsynced += n;
            if self.unsynced >= INCREMENTAL_FSYNC_BYTES {
                self.file.sync_data()?;
                self.unsynced = 0;
            }
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Write an RDB through `fill` (everything before the footer) to a temp file in the
/// directory of `path`, fsync it (along the way too when `incremental_fsync`) and
/// rename it over `path`, unless cancelled.
pub fn write_rdb(
    state: &Persistence,
    path: &Path,
    target: Target,
    (checksum, incremental_fsync): (bool, bool),
    fill: impl FnOnce(&mut WriteSink<RdbFile>) -> Result<(), job::Cancelled>,
) -> Result<(), SaveError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let temp_name = format!("{}-{}.rdb", target.temp_name, std::process::id());
    let temp = dir.join(&temp_name);
    let file = std::fs::File::create(&temp).map_err(|e| {
        log_warning!(
            "Failed opening the temp RDB file {temp_name} (in server root dir {}) for saving: {e}",
            dir.display()
        );
        SaveError::Failed
    })?;
    let mut sink = WriteSink::new(RdbFile::new(file, incremental_fsync));
    let filled = fill(&mut sink);
    let written = file::finish(sink, checksum).and_then(|f| f.sync_all());
    let renaming = state.rename_lock.lock();
    if filled.is_err() || target.cancel.load(Ordering::Relaxed) {
        let _ = std::fs::remove_file(&temp);
        return Err(SaveError::Cancelled);
    }
    let placed = written
        .and_then(|()| std::fs::rename(&temp, path))
        .and_then(|()| std::fs::File::open(dir)?.sync_all());
    drop(renaming);
    placed.map_err(|e| {
        log_warning!("Write error saving DB on disk: {e}");
        let _ = std::fs::remove_file(&temp);
        SaveError::Failed
    })
}

#[cfg(test)]
mod tests {
    use super::KeyDelay;
    use std::time::Duration;

    #[test]
    fn a_negative_key_delay_is_one_microsecond_every_so_many_keys() {
        let mut every_third = KeyDelay::new(-3);
        let slept: Vec<Duration> = (0..6).map(|_| every_third.for_keys(1)).collect();
        let micros: Vec<u128> = slept.iter().map(Duration::as_micros).collect();
        assert_eq!(micros, [0, 0, 1, 0, 0, 1]);
        assert_eq!(KeyDelay::new(-3).for_keys(10), Duration::from_micros(3));
        assert_eq!(KeyDelay::new(5).for_keys(4), Duration::from_micros(20));
        assert_eq!(KeyDelay::new(0).for_keys(4), Duration::ZERO);
    }
}
