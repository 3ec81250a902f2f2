//! RDB snapshots on disk: SAVE, BGSAVE, save points, the save before SHUTDOWN, and
//! loading `dir/dbfilename` at startup.
//!
//! A snapshot is point-in-time without fork(): [`job::Snapshot::begin`] marks every
//! shard pending while briefly holding them all (see `keyspace/capture.rs`), then
//! the shards are written one by one — by the saver thread for BGSAVE, by the
//! command's own thread for SAVE — while clients keep writing; a client that meets a
//! pending shard first serializes it for the snapshot. Files are written to
//! `temp-<pid>.rdb`, fsynced, then renamed over `dbfilename`, as Redis does.
//!
//! Owns the save bookkeeping behind LASTSAVE, INFO persistence and MISCONF, and the
//! saver thread (background saves and the save-points check). Must not touch the
//! RDB framing (`persistence::rdb::file`) or clients.

mod job;
mod load;

pub use load::Loaded;

use crate::keyspace::{Locked, Policy};
use crate::persistence::rdb::file::{self, LoadError};
use crate::persistence::rdb::io::WriteSink;
use crate::server::Server;
use crate::{log_notice, log_warning};
use job::{AccessData, AtPoint, Settings, Snapshot};
use kvik_config::Config;
use parking_lot::{Condvar, Mutex};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// How often the saver thread looks at the save points (Redis's cron runs them at
/// `hz`; a tenth of a second is as fine as anyone sets a save point).
const SAVE_POINTS_CHECK: Duration = Duration::from_millis(100);
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
enum Outcome {
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
struct Pending {
    snapshot: Arc<Snapshot>,
    point: AtPoint,
    cancel: Arc<AtomicBool>,
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

    /// Changes since the last successful save's point in time.
    pub fn changes_since_save(&self, dirty: u64) -> u64 {
        dirty.saturating_sub(self.dirty_at_save.load(Ordering::Relaxed))
    }

    fn record_success(&self, point: &AtPoint) {
        self.last_save
            .store(crate::hlc::unix_ms() / 1000, Ordering::Relaxed);
        self.dirty_at_save.store(point.dirty, Ordering::Relaxed);
        self.saves.fetch_add(1, Ordering::Relaxed);
        self.last_bgsave_ok.store(true, Ordering::Relaxed);
        self.update_refusal();
    }

    fn record_background_end(&self, outcome: Outcome, took: Duration) {
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
    fn cancel_background(&self) {
        self.cancel_background_nowait();
        let mut running = self.running.lock();
        while running.is_some() {
            self.ended.wait(&mut running);
        }
    }

    /// Tell the background save, if one runs, to stop and not to put its file in
    /// place; it stops at its next shard. For callers holding shard locks.
    fn cancel_background_nowait(&self) {
        let _renaming = self.rename_lock.lock();
        if let Some(bg) = self.running.lock().as_ref() {
            log_warning!("There is a child saving an .rdb. Killing it!");
            bg.cancel.store(true, Ordering::Relaxed);
        }
    }
}

/// The total of the change counters of every thread (Redis's `dirty`).
fn dirty(server: &Server) -> u64 {
    crate::stats::sum(&server.thread_stats, |s| &s.dirty)
}

/// Where the RDB file is: `dir/dbfilename`.
pub fn rdb_path(config: &Config) -> PathBuf {
    Path::new(&config.dir).join(&config.dbfilename)
}

fn settings(server: &Server, config: &Config) -> Settings {
    let policy = Policy::from_name(&config.maxmemory_policy);
    let access = if policy.uses_lfu() {
        AccessData::Freq
    } else if policy.ranks_by_access() {
        AccessData::Idle
    } else {
        AccessData::None
    };
    Settings {
        compress: config.rdbcompression,
        access,
        clock: server.keyspace.clock.get(),
        key_delay: Duration::from_micros(config.rdb_key_save_delay.max(0) as u64),
    }
}

/// Fix a snapshot's point in time now. The caller must hold no shard lock.
fn begin(server: &Server) -> Result<(Arc<Snapshot>, AtPoint), SaveError> {
    let settings = settings(server, &server.config.read());
    let functions = server.scripting.libraries.all();
    let codes = functions.iter().map(|l| l.code.clone()).collect();
    Snapshot::begin(&server.keyspace, settings, codes, || dirty(server))
        .ok_or(SaveError::InProgress)
}

/// Write a begun snapshot to `dir/dbfilename` and end it.
fn write_file(
    server: &Server,
    snapshot: &Snapshot,
    point: &AtPoint,
    target: Target,
) -> Result<(), SaveError> {
    let (path, checksum) = {
        let config = server.config.read();
        (rdb_path(&config), config.rdbchecksum)
    };
    let cancel = target.cancel;
    let fill = |sink: &mut _| snapshot.write(&server.keyspace, point, sink, cancel);
    let result = write_rdb(&server.persistence, &path, target, checksum, fill);
    server.keyspace.end_capture();
    result
}

/// Which temp file a save writes, and what may cancel it.
#[derive(Clone, Copy)]
struct Target<'c> {
    /// Foreground saves use `temp-<pid>.rdb`, as Redis's SAVE does; a background one
    /// gets its own name, since a foreground save (FLUSHALL's) may run beside it.
    temp_name: &'static str,
    cancel: &'c AtomicBool,
}

const FOREGROUND: &str = "temp";
const BACKGROUND: &str = "temp-bgsave";

/// Write an RDB through `fill` (everything before the footer) to a temp file in the
/// directory of `path`, fsync it and rename it over `path`, unless cancelled.
fn write_rdb(
    state: &Persistence,
    path: &Path,
    target: Target,
    checksum: bool,
    fill: impl FnOnce(&mut WriteSink<std::fs::File>) -> Result<(), job::Cancelled>,
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
    let mut sink = WriteSink::new(file);
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

/// SAVE: a snapshot written by the calling thread (which holds no shard lock).
/// Other clients keep running; the file is the dataset as it was when SAVE began.
pub fn save(server: &Server) -> Result<(), SaveError> {
    if server.persistence.bgsave_in_progress() {
        return Err(SaveError::InProgress);
    }
    let (snapshot, point) = begin(server)?;
    let never = AtomicBool::new(false);
    let target = Target {
        temp_name: FOREGROUND,
        cancel: &never,
    };
    write_file(server, &snapshot, &point, target)?;
    server.persistence.record_success(&point);
    log_notice!("DB saved on disk");
    Ok(())
}

/// BGSAVE: fix the point in time now and let the saver thread write it. The
/// capture itself is exclusive, so two saves can never begin together.
pub fn bgsave(server: &Server) -> Result<(), SaveError> {
    let state = &server.persistence;
    if state.bgsave_in_progress() {
        return Err(SaveError::InProgress);
    }
    let saver = state.saver.lock().clone().ok_or(SaveError::Failed)?;
    let (snapshot, point) = begin(server)?;
    let cancel = Arc::new(AtomicBool::new(false));
    *state.running.lock() = Some(Background {
        started: Instant::now(),
        cancel: cancel.clone(),
    });
    state
        .last_bgsave_try
        .store(crate::hlc::unix_ms() / 1000, Ordering::Relaxed);
    log_notice!("Background saving started by pid {}", std::process::id());
    let pending = Pending {
        snapshot,
        point,
        cancel,
    };
    if saver.send(pending).is_err() {
        server.keyspace.end_capture();
        state.record_background_end(Outcome::Failed, Duration::ZERO);
        return Err(SaveError::Failed);
    }
    Ok(())
}

/// BGSAVE SCHEDULE, or BGSAVE in a transaction: the saver thread starts one soon.
pub fn schedule_bgsave(server: &Server) {
    server.persistence.scheduled.store(true, Ordering::Relaxed);
}

/// Start the saver thread: it writes background saves and checks the save points.
pub fn start_saver(server: Arc<Server>) -> std::io::Result<std::thread::JoinHandle<()>> {
    let (tx, rx) = mpsc::channel();
    *server.persistence.saver.lock() = Some(tx);
    std::thread::Builder::new()
        .name("kvik-saver".into())
        .spawn(move || saver_loop(&server, &rx))
}

fn saver_loop(server: &Server, rx: &mpsc::Receiver<Pending>) {
    loop {
        match rx.recv_timeout(SAVE_POINTS_CHECK) {
            Ok(pending) => write_background(server, pending),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if server.shutdown_requested.load(Ordering::Acquire) {
                    return;
                }
                run_save_points(server);
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}

fn write_background(server: &Server, pending: Pending) {
    let started = Instant::now();
    let target = Target {
        temp_name: BACKGROUND,
        cancel: &pending.cancel,
    };
    let outcome = match write_file(server, &pending.snapshot, &pending.point, target) {
        Ok(()) => {
            server.persistence.record_success(&pending.point);
            log_notice!("DB saved on disk");
            log_notice!("Background saving terminated with success");
            Outcome::Saved
        }
        Err(SaveError::Cancelled) => {
            log_warning!("Background saving terminated by signal 10");
            Outcome::Cancelled
        }
        Err(_) => {
            log_warning!("Background saving error");
            Outcome::Failed
        }
    };
    server
        .persistence
        .record_background_end(outcome, started.elapsed());
}

/// Start a background save when one was scheduled or a save point is reached.
fn run_save_points(server: &Server) {
    let state = &server.persistence;
    if state.bgsave_in_progress() {
        return;
    }
    if state.scheduled.swap(false, Ordering::Relaxed) {
        let _ = bgsave(server);
        return;
    }
    let now = crate::hlc::unix_ms() / 1000;
    let changes = state.changes_since_save(dirty(server));
    let since_save = now.saturating_sub(state.last_save());
    let may_retry = state.last_bgsave_ok()
        || now.saturating_sub(state.last_bgsave_try.load(Ordering::Relaxed)) > RETRY_DELAY_SECS;
    let points = server.config.read().save.clone();
    let reached = points
        .iter()
        .find(|&&(secs, min_changes)| changes >= min_changes && since_save >= secs);
    if let (Some(&(secs, min_changes)), true) = (reached, may_retry) {
        log_notice!("{min_changes} changes in {secs} seconds. Saving...");
        let _ = bgsave(server);
    }
}

/// The save SHUTDOWN (and SIGTERM) makes before exiting: when `save` says so, or by
/// default when save points are set. A background save is stopped first.
pub fn save_before_exit(server: &Server, asked: Option<bool>) -> Result<(), SaveError> {
    server.persistence.cancel_background();
    let wanted = asked.unwrap_or_else(|| !server.config.read().save.is_empty());
    if !wanted {
        return Ok(());
    }
    log_notice!("Saving the final RDB snapshot before exiting.");
    save(server).inspect_err(|_| log_warning!("Error trying to save the DB, can't exit."))
}

/// FLUSHALL with save points set saves the now empty dataset, as Redis 7.0 does,
/// from the handler that holds every shard: no snapshot is needed for empty
/// databases, only the function libraries. A background save is stopped first.
/// Like Redis, the change counter is not cleared (the FLUSHALL itself is unsaved).
pub fn save_after_flushall(server: &Server) {
    let state = &server.persistence;
    state.cancel_background_nowait();
    let (path, checksum, settings) = {
        let config = server.config.read();
        (
            rdb_path(&config),
            config.rdbchecksum,
            settings(server, &config),
        )
    };
    let libraries = server.scripting.libraries.all();
    let point = AtPoint {
        functions: libraries.iter().map(|l| l.code.clone()).collect(),
        now_ms: crate::hlc::unix_ms(),
        ..AtPoint::default()
    };
    // No database has keys at this point, so writing it touches no shard.
    let empty = Snapshot::new(settings, point.now_ms);
    let never = AtomicBool::new(false);
    let target = Target {
        temp_name: FOREGROUND,
        cancel: &never,
    };
    let fill = |sink: &mut _| empty.write(&server.keyspace, &point, sink, &never);
    if write_rdb(state, &path, target, checksum, fill).is_ok() {
        state
            .last_save
            .store(point.now_ms / 1000, Ordering::Relaxed);
        state.saves.fetch_add(1, Ordering::Relaxed);
        log_notice!("DB saved on disk");
    }
}

/// Load `dir/dbfilename` into the keyspace that `locked` holds entirely. A missing
/// file is an empty dataset. With `merge` a key of the file replaces one in memory;
/// without, such a duplicate is an error.
pub fn load(
    server: &Server,
    locked: &mut Locked,
    merge: bool,
) -> Result<Option<Loaded>, LoadError> {
    let (path, checksum) = {
        let config = server.config.read();
        (rdb_path(&config), config.rdbchecksum)
    };
    if !path.exists() {
        return Ok(None);
    }
    let limits = crate::persistence::rdb::Limits::from(&server.hot.encoding());
    let loaded = load::load_file(&path, locked, &server.scripting, &limits, checksum, merge)?;
    *server.persistence.last_load.lock() = loaded;
    Ok(Some(loaded))
}

/// Load the RDB file before the server starts serving, logging as Redis does.
pub fn load_at_startup(server: &Server) -> Result<(), LoadError> {
    let started = Instant::now();
    let env = server.key_env(&server.thread_stats[0]);
    let all: Vec<usize> = (0..server.keyspace.databases()).collect();
    let mut locked = Locked::databases(env, 0, crate::hlc::unix_ms(), &all);
    if let Some(loaded) = load(server, &mut locked, false)? {
        log_notice!(
            "Done loading RDB, keys loaded: {}, keys expired: {}.",
            loaded.keys,
            loaded.expired
        );
        log_notice!(
            "DB loaded from disk: {:.3} seconds",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
