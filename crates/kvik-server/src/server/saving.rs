//! When the server saves, and what: SAVE, BGSAVE, BGSAVE SCHEDULE, the save points
//! (checked by the saver thread), the save before SHUTDOWN, FLUSHALL's save, and
//! loading `dir/dbfilename` at start-up and for DEBUG RELOAD. The mechanism (the
//! point-in-time snapshot, writing a file in place, the bookkeeping) is the snapshot
//! engine's ([`crate::snapshot`]); this is where it meets the rest of the server:
//! its configuration, its keyspace, its function libraries, its change counters.
//!
//! The AOF's rewrites start here too (BGREWRITEAOF, `CONFIG SET appendonly yes`,
//! the automatic rewrite, the first base at start-up): they take the same
//! snapshot, and the AOF engine ([`crate::aof`]) does the rest.

use super::Server;
use crate::keyspace::Locked;
use crate::persistence::rdb::file::LoadError;
use crate::snapshot::{
    load_file, rdb_path, settings, write_rdb, AtPoint, Form, LoadHow, Loaded, Outcome, Pending,
    SaveError, Snapshot, Target, BACKGROUND, FOREGROUND, SAVE_POINTS_CHECK,
};
use crate::{log_notice, log_warning};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// The total of the change counters of every thread (Redis's `dirty`).
fn dirty(server: &Server) -> u64 {
    crate::stats::sum(&server.thread_stats, |s| &s.dirty)
}

/// Fix a snapshot's point in time now. The caller must hold no shard lock.
fn begin(server: &Server) -> Result<(Arc<Snapshot>, AtPoint), SaveError> {
    begin_with(server, Form::Rdb, || {})
}

/// [`begin`] in `form`, running `at_point` at the point in time, while every shard
/// is held.
fn begin_with(
    server: &Server,
    form: Form,
    at_point: impl FnOnce(),
) -> Result<(Arc<Snapshot>, AtPoint), SaveError> {
    let mut settings = settings(&server.config.read(), server.keyspace.clock.get());
    settings.form = form;
    let functions = server.scripting.libraries.all();
    let codes = functions.iter().map(|l| l.code.clone()).collect();
    let mut repl = None;
    let begun = Snapshot::begin(&server.keyspace, settings, codes, || {
        at_point();
        repl = server.replication.save_info();
        dirty(server)
    });
    let (snapshot, mut point) = begun.ok_or(SaveError::InProgress)?;
    point.repl = repl;
    Ok((snapshot, point))
}

/// Write a begun snapshot to `dir/dbfilename` and end it.
fn write_file(
    server: &Server,
    snapshot: &Snapshot,
    point: &AtPoint,
    target: Target,
) -> Result<(), SaveError> {
    let (path, checks) = {
        let config = server.config.read();
        (rdb_path(&config), file_checks(&config))
    };
    let cancel = target.cancel;
    let fill = |sink: &mut _| snapshot.write(&server.keyspace, point, sink, cancel);
    let result = write_rdb(&server.persistence, &path, target, checks, fill);
    server.keyspace.end_capture();
    result
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
    let saver = state.saver().ok_or(SaveError::Failed)?;
    let (snapshot, point) = begin(server)?;
    let cancel = state.start_background();
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
    server.persistence.schedule();
}

/// Start the saver thread: it writes background saves and checks the save points.
pub fn start_saver(server: Arc<Server>) -> std::io::Result<std::thread::JoinHandle<()>> {
    let (tx, rx) = mpsc::channel();
    server.persistence.set_saver(tx);
    let cpulist = server.config.read().bgsave_cpulist.clone();
    std::thread::Builder::new()
        .name("kvik-saver".into())
        .spawn(move || {
            crate::process::run_on_cpus(&cpulist);
            saver_loop(&server, &rx)
        })
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
    if state.take_scheduled() {
        // An AOF rewrite's snapshot runs: after it, then.
        if let Err(SaveError::InProgress) = bgsave(server) {
            state.schedule();
        }
        return;
    }
    let now = crate::hlc::unix_ms() / 1000;
    let changes = state.changes_since_save(dirty(server));
    let since_save = now.saturating_sub(state.last_save());
    let may_retry = state.may_retry(now);
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
/// default when save points are set. A background save and an AOF rewrite are
/// stopped first (the AOF itself is written and fsynced when the threads stop).
/// A supervisor hears that the server is stopping, and what the save is doing.
pub fn save_before_exit(server: &Server, asked: Option<bool>) -> Result<(), SaveError> {
    crate::supervise::stopping();
    if server.aof.is_on() && server.aof.rewrite_in_progress() {
        log_warning!("There is a child rewriting the AOF. Killing it!");
    }
    server.aof.cancel_rewrite();
    server.persistence.cancel_background();
    let wanted = asked.unwrap_or_else(|| !server.config.read().save.is_empty());
    // A half-loaded dataset is never saved over the file it comes from, as in Redis.
    if !wanted || server.loading.is_active() {
        return Ok(());
    }
    log_notice!("Saving the final RDB snapshot before exiting.");
    crate::supervise::status("Saving the final RDB snapshot");
    save(server).inspect_err(|_| {
        log_warning!("Error trying to save the DB, can't exit.");
        crate::supervise::status("Error trying to save the DB, can't exit.");
    })
}

/// May the server exit, as far as the AOF is concerned? Not while the first
/// rewrite after `CONFIG SET appendonly yes` runs (the dataset is in no AOF yet),
/// unless the shutdown is forced: Redis 7.0's finishShutdown.
pub fn aof_lets_exit(server: &Server, force: bool) -> bool {
    let aof = &server.aof;
    if aof.state() != crate::aof::State::WaitRewrite || !aof.rewrite_in_progress() {
        return true;
    }
    if force {
        log_warning!("Writing initial AOF. Exit anyway.");
        return true;
    }
    log_warning!("Writing initial AOF, can't exit.");
    crate::supervise::status("Writing initial AOF, can't exit.");
    false
}

/// Remove the temp files this process's saves, rewrites and disk-backed syncs may
/// have left (`temp-<pid>.rdb`, `temp-bgsave-<pid>.rdb`, `temp-repl-<pid>-<id>.rdb`,
/// `temp-rewriteaof-bg-<pid>.aof`): at exit, and when a second SIGINT cuts a save
/// short, as Redis removes its `temp-<pid>.rdb`.
pub fn remove_temp_files(server: &Server) {
    let dir = std::path::PathBuf::from(&server.config.read().dir);
    let pid = std::process::id().to_string();
    // The AOF's folder is relative to the working directory, as its files are.
    for folder in [dir, server.aof.dir().to_path_buf()] {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let ours = name.starts_with("temp-") && name.split(['-', '.']).any(|part| part == pid);
            if ours {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// How a saved file is protected: (`rdbchecksum`, `rdb-save-incremental-fsync`).
fn file_checks(config: &kvik_config::Config) -> (bool, bool) {
    (config.rdbchecksum, config.rdb_save_incremental_fsync)
}

/// FLUSHALL with save points set saves the now empty dataset, as Redis 7.0 does,
/// from the handler that holds every shard: no snapshot is needed for empty
/// databases, only the function libraries. A background save is stopped first.
/// As in Redis 7.0, the save clears the change counter, the FLUSHALL included:
/// `uncounted` is what the running command (or transaction) has changed so far and
/// is counted when it ends.
pub fn save_after_flushall(server: &Server, uncounted: u64) {
    let state = &server.persistence;
    state.cancel_background_nowait();
    let (path, checks, settings) = {
        let config = server.config.read();
        (
            rdb_path(&config),
            file_checks(&config),
            settings(&config, server.keyspace.clock.get()),
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
    if write_rdb(state, &path, target, checks, fill).is_ok() {
        state.record_direct_save(point.now_ms, dirty(server) + uncounted);
        log_notice!("DB saved on disk");
    }
}

/// Load `dir/dbfilename` into the keyspace that `locked` holds entirely. A missing
/// file is an empty dataset. With `merge` a key of the file replaces one in memory;
/// without, such a duplicate is an error. Clients get -LOADING meanwhile.
pub fn load(
    server: &Server,
    locked: &mut Locked,
    merge: bool,
) -> Result<Option<Loaded>, LoadError> {
    let (path, checksum, pace) = {
        let config = server.config.read();
        (rdb_path(&config), config.rdbchecksum, loading_pace(&config))
    };
    let Ok(size) = std::fs::metadata(&path).map(|m| m.len()) else {
        return Ok(None);
    };
    let limits = crate::persistence::rdb::Limits::from(&server.hot.encoding());
    let _underway = server.loading.begin(size, pace.interval_bytes);
    let how = LoadHow {
        verify_checksum: checksum,
        merge,
        loading: Some(&server.loading),
        key_delay_us: pace.key_delay_us,
        ..LoadHow::default()
    };
    let loaded = load_file(&path, locked, &server.scripting, &limits, how)?;
    *server.persistence.last_load.lock() = loaded;
    Ok(Some(loaded))
}

/// How a load paces itself: `loading-process-events-interval-bytes` and
/// `key-load-delay`.
#[derive(Debug, Clone, Copy)]
pub struct LoadingPace {
    pub interval_bytes: u64,
    pub key_delay_us: i32,
}

pub fn loading_pace(config: &kvik_config::Config) -> LoadingPace {
    LoadingPace {
        interval_bytes: u64::from(config.loading_process_events_interval_bytes),
        key_delay_us: config.key_load_delay,
    }
}

/// The redis-check-rdb style report on the RDB file (after it failed to load).
pub fn check_report(server: &Server) -> String {
    let (path, name) = {
        let config = server.config.read();
        (rdb_path(&config), config.dbfilename.clone())
    };
    let limits = crate::persistence::rdb::Limits::from(&server.hot.encoding());
    crate::snapshot::check::report(&path, &name, &limits)
}

/// Load the RDB file at start-up, logging as Redis does.
pub fn load_at_startup(server: &Server) -> Result<(), LoadError> {
    let started = Instant::now();
    let env = server.key_env(&server.thread_stats[0]);
    let all: Vec<usize> = (0..server.keyspace.databases()).collect();
    let mut locked = Locked::databases(env, 0, crate::hlc::unix_ms(), &all);
    if let Some(loaded) = load(server, &mut locked, false)? {
        if let Some((replid, offset)) = loaded.repl {
            server
                .replication
                .restore(String::from_utf8_lossy(&replid).into_owned(), offset);
        }
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

/// Start the AOF before the workers serve, when `appendonly` is on: the first base
/// is written from the dataset when the AOF has none, then new effects go to the
/// last incremental file (a new one if there is none).
pub fn start_aof(server: &Server) -> std::io::Result<()> {
    if !server.config.read().appendonly {
        return Ok(());
    }
    let aof = &server.aof;
    let manifest = aof.manifest();
    if manifest.base.is_none() && manifest.incrs.is_empty() {
        let form = aof_base_form(&server.config.read());
        let (snapshot, point) = begin_with(server, form, || {})
            .map_err(|_| std::io::Error::other("a snapshot is running"))?;
        let never = AtomicBool::new(false);
        let checks = crate::aof::rewrite::BaseChecks::of(&server.config.read(), form);
        let written = aof.create_base_on_start(checks, |sink| {
            snapshot
                .write(&server.keyspace, &point, sink, &never)
                .is_ok()
        });
        server.keyspace.end_capture();
        written?;
    }
    server.effects.add_sink(aof.sink(), |_| {});
    aof.open_on_start()
}

/// The form of a new AOF base: an RDB (`aof-use-rdb-preamble yes`) or commands.
fn aof_base_form(config: &kvik_config::Config) -> Form {
    if config.aof_use_rdb_preamble {
        Form::Rdb
    } else {
        Form::Commands
    }
}

/// Why BGREWRITEAOF did not start a rewrite.
#[derive(Debug, PartialEq, Eq)]
pub enum RewriteRefused {
    InProgress,
    /// A background save runs: the rewrite starts after it.
    Scheduled,
    Failed,
}

/// BGREWRITEAOF: a new incremental file from the snapshot's point in time on, and
/// the snapshot written as the new base by the rewriter thread.
pub fn bgrewriteaof(server: &Server) -> Result<(), RewriteRefused> {
    let aof = &server.aof;
    if aof.rewrite_in_progress() {
        return Err(RewriteRefused::InProgress);
    }
    if server.persistence.bgsave_in_progress() {
        aof.schedule_rewrite();
        return Err(RewriteRefused::Scheduled);
    }
    let rewrite = aof.begin_rewrite().map_err(|e| match e {
        crate::aof::rewrite::StartError::InProgress => RewriteRefused::InProgress,
        crate::aof::rewrite::StartError::Failed => RewriteRefused::Failed,
    })?;
    let turning_on = aof.state() == crate::aof::State::WaitRewrite;
    let form = aof_base_form(&server.config.read());
    let begun = begin_with(server, form, || {
        aof.rewrite_point(&rewrite);
        if turning_on {
            server.effects.add_sink(aof.sink(), |_| {});
        }
    });
    let Ok((snapshot, point)) = begun else {
        // A save's snapshot began meanwhile: after it, then.
        aof.abandon_rewrite(rewrite);
        aof.schedule_rewrite();
        return Err(RewriteRefused::Scheduled);
    };
    log_notice!(
        "Background append only file rewriting started by pid {}",
        std::process::id()
    );
    let job = crate::aof::rewrite::Job {
        rewrite,
        snapshot,
        point,
    };
    if let Err(job) = aof.send_rewrite(job) {
        write_aof_base(server, *job);
    }
    Ok(())
}

/// Write a rewrite's snapshot as the new base and switch the AOF to it.
fn write_aof_base(server: &Server, job: crate::aof::rewrite::Job) {
    let checks = crate::aof::rewrite::BaseChecks::of(&server.config.read(), job.snapshot.form());
    let cancel = &job.rewrite.cancel;
    let base = server.aof.write_base(checks, |sink| {
        job.snapshot
            .write(&server.keyspace, &job.point, sink, cancel)
            .is_ok()
    });
    server.keyspace.end_capture();
    server.aof.finish_rewrite(job.rewrite, base);
}

/// `CONFIG SET appendonly yes|no`. Turning it on starts a rewrite (scheduled if a
/// save runs) and the AOF is on once its base is in place.
pub fn set_appendonly(server: &Server, on: bool) -> Result<(), String> {
    let aof = &server.aof;
    if !on {
        aof.cancel_rewrite();
        aof.turn_off();
        return Ok(());
    }
    if aof.state() != crate::aof::State::Off {
        return Ok(());
    }
    aof.prepare_turn_on().inspect_err(|e| log_warning!("{e}"))?;
    match bgrewriteaof(server) {
        Ok(()) => Ok(()),
        Err(RewriteRefused::Scheduled) => {
            log_warning!("AOF was enabled but there is already another background operation. An AOF background was scheduled to start when possible.");
            Ok(())
        }
        Err(RewriteRefused::InProgress) => {
            // A rewrite of the AOF while it was off: turning on waits for another.
            aof.schedule_rewrite();
            Ok(())
        }
        Err(RewriteRefused::Failed) => {
            log_warning!("Redis needs to enable the AOF but can't trigger a background AOF rewrite operation. Check the above logs for more info about the error.");
            aof.turn_off();
            Err("Unable to turn on AOF. Check server logs.".into())
        }
    }
}

/// Start the rewriter thread: it writes the rewrites' bases and starts the
/// scheduled and automatic rewrites.
pub fn start_aof_rewriter(server: Arc<Server>) -> std::io::Result<std::thread::JoinHandle<()>> {
    let (tx, rx) = mpsc::channel();
    server.aof.set_rewriter(tx);
    std::thread::Builder::new()
        .name("kvik-aof-rewrite".into())
        .spawn(move || loop {
            match rx.recv_timeout(SAVE_POINTS_CHECK) {
                Ok(job) => write_aof_base(&server, job),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if server.shutdown_requested.load(Ordering::Acquire) {
                        return;
                    }
                    run_aof_checks(&server);
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            }
        })
}

/// Start a scheduled rewrite once no save runs, or an automatic one when the AOF
/// has grown enough.
fn run_aof_checks(server: &Server) {
    let aof = &server.aof;
    let saving = server.persistence.bgsave_in_progress();
    aof.other_save_running.store(saving, Ordering::Relaxed);
    if saving || aof.rewrite_in_progress() {
        return;
    }
    if aof.take_scheduled_rewrite() {
        let _ = bgrewriteaof(server);
    } else if aof.wants_auto_rewrite() {
        let (base, current) = (aof.base_size().max(1), aof.current_size());
        log_notice!(
            "Starting automatic rewriting of AOF on {}% growth",
            current.saturating_sub(base) * 100 / base
        );
        let _ = bgrewriteaof(server);
    }
}
