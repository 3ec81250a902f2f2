//! The append-only file: Redis 7.0's multi-part AOF (a base, incremental files, a
//! manifest) fed by the effect stream, without fork.
//!
//! How a write reaches the disk: the command's effects reach [`AofSink`] inline,
//! under the effect log's lock, while the command still holds its shard locks; the
//! sink encodes them as RESP (a SELECT whenever the database changes) into one
//! in-memory buffer shared by every thread. A connection whose commands appended
//! effects holds its replies until the buffer is written past the position it saw
//! after them; its worker writes the whole buffer once per round
//! ([`Aof::write_out`]) and releases them. With `appendfsync always` they also wait
//! for the writer thread's fsync ([`writer`]; group commit: every thread's writes
//! since the last fsync share the next one), which tells the waiting workers
//! through their mailboxes ([`Aof::wait_for`]).
//!
//! A rewrite ([`rewrite`]) starts a new incremental file at the point in time of a
//! forkless snapshot and writes the snapshot as the new base; the manifest then
//! switches to it and the old files are deleted. Loading is [`load`].
//!
//! Owns the AOF files, the buffer, the writer thread and the AOF's INFO figures.
//! Must not run commands (loading hands each command to the caller) nor touch
//! clients or connections.

pub mod load;
pub mod manifest;
pub mod rewrite;
mod writer;

pub use manifest::{FileEntry, Manifest};
pub use writer::start_writer;

use crate::effects::{encode_command, EffectRef, EffectSink};
use crate::log_notice;
use kvik_config::Config;
use parking_lot::{Condvar, Mutex};
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// `appendfsync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fsync {
    Always,
    EverySec,
    No,
}

impl Fsync {
    fn from_name(name: &str) -> Fsync {
        match name {
            "always" => Fsync::Always,
            "no" => Fsync::No,
            _ => Fsync::EverySec,
        }
    }

    fn code(self) -> u8 {
        self as u8
    }

    fn from_code(code: u8) -> Fsync {
        [Fsync::Always, Fsync::EverySec, Fsync::No][code as usize]
    }
}

/// Whether effects are being written (Redis's `aof_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Off = 0,
    /// `CONFIG SET appendonly yes`: effects go to a new incremental file while the
    /// first base is written; on (`aof_enabled:1`) when it is in place.
    WaitRewrite = 1,
    On = 2,
}

/// What the sinks append and [`Aof::write_out`] takes.
#[derive(Default)]
struct Buffer {
    bytes: Vec<u8>,
    /// Where in `bytes` the writer moves to another file, and which (`None`: close
    /// the current one, the AOF was turned off).
    switches: Vec<(usize, Option<PathBuf>)>,
    /// The database the current incremental file last SELECTed.
    db: Option<usize>,
    /// The unix second of the last `#TS:` annotation (`aof-timestamp-enabled`).
    annotated_secs: u64,
    /// The position (bytes ever appended) at the end of `bytes`.
    end: u64,
    /// The writer sleeps and must be woken.
    writer_idle: bool,
    /// The writer is asked to look for work now.
    wake: bool,
    stop: bool,
}

/// Workers holding replies until the AOF is written (or fsynced) past a position.
struct Waiters {
    /// Per worker: the lowest position one of its connections waits for.
    lowest: Vec<u64>,
}

/// Statistics of rewrites, for INFO.
#[derive(Default)]
struct RewriteStats {
    running_since: Option<Instant>,
    last_secs: Option<i64>,
    last_ok: bool,
    count: u64,
    consecutive_failures: u64,
    /// Set to stop the running rewrite.
    cancel: Option<Arc<AtomicBool>>,
}

/// The AOF of a server.
pub struct Aof {
    /// `dir/appenddirname`, relative to the working directory (`dir`).
    dir: PathBuf,
    /// `appendfilename`.
    filename: String,
    buffer: Mutex<Buffer>,
    has_work: Condvar,
    /// Mirror of `Buffer::end` for lock-free readers.
    appended: AtomicU64,
    /// The file being written; held while writing to it.
    output: Mutex<writer::Output>,
    /// The position up to which the buffer is written to the files.
    written: AtomicU64,
    /// Bytes were written since the last fsync.
    unsynced: AtomicBool,
    /// The position up to which replies may go out (fsynced with `always`, written
    /// otherwise).
    released: AtomicU64,
    fsync: AtomicU8,
    no_fsync_on_rewrite: AtomicBool,
    /// `aof-timestamp-enabled`.
    timestamps: AtomicBool,
    state: AtomicU8,
    /// DEBUG LOADAOF is loading: its effects are not appended.
    sink_paused: AtomicBool,
    /// Bumped when the AOF is turned off: the sinks of before unsubscribe.
    generation: AtomicU64,
    manifest: Mutex<Manifest>,
    waiters: Mutex<Waiters>,
    /// How to wake worker `i` when its connections' position is released.
    notify: OnceLock<Box<dyn Fn(usize) + Send + Sync>>,
    /// The last write or fsync error (`aof_last_write_status:err`).
    write_error: Mutex<Option<String>>,
    write_failed: AtomicBool,
    rewrite: Mutex<RewriteStats>,
    rewrite_scheduled: AtomicBool,
    /// Sizes for INFO and auto rewrite: the base at the last rewrite, and the whole
    /// AOF now (base plus incremental files).
    base_size: AtomicU64,
    current_size: AtomicU64,
    /// `rdbchecksum`, `aof-use-rdb-preamble`, `aof-load-truncated`, the auto rewrite
    /// thresholds, `aof-disable-auto-gc`: read when used.
    settings: Mutex<Settings>,
    /// The rewriter thread's queue (set once it runs).
    rewriter: Mutex<Option<std::sync::mpsc::Sender<rewrite::Job>>>,
    /// Another save runs (BGSAVE): `no-appendfsync-on-rewrite` skips fsyncs then too.
    pub other_save_running: AtomicBool,
    /// Writes that went through while the background fsync had been stuck for two
    /// seconds (`aof_delayed_fsync`).
    pub delayed_fsyncs: AtomicI64,
    /// The background fsync of `everysec` runs: writes wait for it (two seconds
    /// at most), as Redis postpones them while its bio thread fsyncs.
    fsync_running: AtomicBool,
    /// Held by whoever fsyncs (the writer thread, the fsync thread, a worker whose
    /// replies wait): one fsync at a time, so that what one releases was synced.
    sync_lock: Mutex<()>,
    /// A write waits for the background fsync (the writer thread tries it again
    /// every [`writer::RETRY`]).
    write_postponed: AtomicBool,
    /// DEBUG AOF-FLUSH-SLEEP: microseconds slept before writing the buffer.
    debug_flush_sleep_us: AtomicU64,
    /// DEBUG AOF-FSYNC-SLEEP: microseconds slept before each fsync.
    debug_fsync_sleep_us: AtomicU64,
}

/// Settings read off the hot path.
#[derive(Debug, Clone, Copy)]
struct Settings {
    auto_percentage: u32,
    auto_min_size: u64,
    keep_history: bool,
}

impl Aof {
    /// The AOF of a server configured by `config`, off until started.
    pub fn new(config: &Config, workers: usize) -> Aof {
        let aof = Aof {
            dir: PathBuf::from(&config.appenddirname),
            filename: config.appendfilename.clone(),
            buffer: Mutex::new(Buffer::default()),
            has_work: Condvar::new(),
            appended: AtomicU64::new(0),
            output: Mutex::new(writer::Output::default()),
            written: AtomicU64::new(0),
            unsynced: AtomicBool::new(false),
            released: AtomicU64::new(0),
            fsync: AtomicU8::new(Fsync::EverySec.code()),
            no_fsync_on_rewrite: AtomicBool::new(false),
            timestamps: AtomicBool::new(false),
            state: AtomicU8::new(State::Off as u8),
            sink_paused: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            manifest: Mutex::new(Manifest::default()),
            waiters: Mutex::new(Waiters {
                lowest: vec![u64::MAX; workers.max(1)],
            }),
            notify: OnceLock::new(),
            write_error: Mutex::new(None),
            write_failed: AtomicBool::new(false),
            rewrite: Mutex::new(RewriteStats {
                last_ok: true,
                ..RewriteStats::default()
            }),
            rewrite_scheduled: AtomicBool::new(false),
            base_size: AtomicU64::new(0),
            current_size: AtomicU64::new(0),
            settings: Mutex::new(Settings {
                auto_percentage: 0,
                auto_min_size: 0,
                keep_history: false,
            }),
            rewriter: Mutex::new(None),
            other_save_running: AtomicBool::new(false),
            delayed_fsyncs: AtomicI64::new(0),
            fsync_running: AtomicBool::new(false),
            sync_lock: Mutex::new(()),
            write_postponed: AtomicBool::new(false),
            debug_flush_sleep_us: AtomicU64::new(0),
            debug_fsync_sleep_us: AtomicU64::new(0),
        };
        aof.configure(config);
        aof
    }

    /// Re-read the settings that may change at run time (after CONFIG SET).
    pub fn configure(&self, config: &Config) {
        self.fsync.store(
            Fsync::from_name(&config.appendfsync).code(),
            Ordering::Relaxed,
        );
        self.no_fsync_on_rewrite
            .store(config.no_appendfsync_on_rewrite, Ordering::Relaxed);
        self.timestamps
            .store(config.aof_timestamp_enabled, Ordering::Relaxed);
        *self.settings.lock() = Settings {
            auto_percentage: config.auto_aof_rewrite_percentage,
            auto_min_size: config.auto_aof_rewrite_min_size,
            keep_history: config.aof_disable_auto_gc,
        };
        // Replies held for an fsync that the new policy will not make go out.
        if !self.must_fsync_before_reply() {
            self.release(self.written.load(Ordering::Acquire));
        }
        self.wake_writer();
    }

    /// How the worker threads are woken when held replies may go out.
    pub fn set_notify(&self, notify: Box<dyn Fn(usize) + Send + Sync>) {
        let _ = self.notify.set(notify);
    }

    pub fn fsync_policy(&self) -> Fsync {
        Fsync::from_code(self.fsync.load(Ordering::Relaxed))
    }

    pub fn state(&self) -> State {
        match self.state.load(Ordering::Acquire) {
            0 => State::Off,
            1 => State::WaitRewrite,
            _ => State::On,
        }
    }

    fn set_state(&self, state: State) {
        self.state.store(state as u8, Ordering::Release);
    }

    /// The AOF directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn filename(&self) -> &str {
        &self.filename
    }

    fn path_of(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The position after every effect appended so far.
    #[inline]
    pub fn appended(&self) -> u64 {
        self.appended.load(Ordering::Acquire)
    }

    /// Is the AOF taking effects? Replies then wait until their effects are
    /// written (fsynced too with `appendfsync always`). One relaxed load.
    #[inline]
    pub fn is_on(&self) -> bool {
        self.state.load(Ordering::Relaxed) != State::Off as u8
    }

    /// May replies that waited for position `pos` go out?
    #[inline]
    pub fn is_released(&self, pos: u64) -> bool {
        self.released.load(Ordering::Acquire) >= pos
    }

    /// A connection of worker `worker` holds replies until `pos` is released: the
    /// worker is notified once it is (at once if it already is).
    pub fn wait_for(&self, worker: usize, pos: u64) {
        {
            let mut waiters = self.waiters.lock();
            if let Some(lowest) = waiters.lowest.get_mut(worker) {
                *lowest = (*lowest).min(pos);
            }
        }
        // The writer stores `released` before it looks at the waiters: one of the
        // two sees the other.
        if self.is_released(pos) {
            self.release_waiters(self.released.load(Ordering::Acquire));
        }
    }

    /// Does a worker wait for a position?
    fn has_waiters(&self) -> bool {
        self.waiters.lock().lowest.iter().any(|&p| p != u64::MAX)
    }

    /// Everything before `pos` may be acknowledged: notify the workers waiting
    /// for it.
    fn release(&self, pos: u64) {
        self.released.fetch_max(pos, Ordering::AcqRel);
        self.release_waiters(pos);
    }

    fn release_waiters(&self, pos: u64) {
        let ready: Vec<usize> = {
            let mut waiters = self.waiters.lock();
            waiters
                .lowest
                .iter_mut()
                .enumerate()
                .filter(|(_, lowest)| **lowest <= pos)
                .map(|(worker, lowest)| {
                    *lowest = u64::MAX;
                    worker
                })
                .collect()
        };
        if let Some(notify) = self.notify.get() {
            for worker in ready {
                notify(worker);
            }
        }
    }

    fn wake_writer(&self) {
        let mut buffer = self.buffer.lock();
        buffer.wake = true;
        if buffer.writer_idle {
            buffer.writer_idle = false;
            self.has_work.notify_one();
        }
    }

    /// A sink for the effect log, valid until the AOF is turned off.
    pub fn sink(self: &Arc<Self>) -> Arc<AofSink> {
        Arc::new(AofSink {
            aof: self.clone(),
            generation: self.generation.load(Ordering::Acquire),
        })
    }

    /// Append one effect's RESP encoding (after a SELECT if its database is not the
    /// current file's, and with `aof-timestamp-enabled` a `#TS:<unix seconds>`
    /// annotation first when the second changed, as Redis 7.0 writes them).
    fn append(&self, db: usize, argv: &[&[u8]]) {
        let mut buffer = self.buffer.lock();
        let before = buffer.bytes.len();
        if self.timestamps.load(Ordering::Relaxed) {
            let now = crate::hlc::unix_ms() / 1000;
            if now > buffer.annotated_secs {
                let line = format!("#TS:{now}\r\n");
                buffer.bytes.extend_from_slice(line.as_bytes());
                buffer.annotated_secs = now;
            }
        }
        if buffer.db != Some(db) {
            let db_text = db.to_string();
            encode_command(&[b"SELECT", db_text.as_bytes()], &mut buffer.bytes);
            buffer.db = Some(db);
        }
        encode_command(argv, &mut buffer.bytes);
        buffer.end += (buffer.bytes.len() - before) as u64;
        self.appended.store(buffer.end, Ordering::Release);
        APPENDED_HERE.with(|here| here.set(buffer.end));
    }

    /// From here on the writer writes to `path` (a new incremental file, whose first
    /// command SELECTs again), or closes its file (`None`).
    fn switch_file(&self, path: Option<PathBuf>) {
        let mut buffer = self.buffer.lock();
        let at = buffer.bytes.len();
        buffer.switches.push((at, path));
        buffer.db = None;
        drop(buffer);
        self.wake_writer();
    }

    /// Write the manifest to a temp file, fsync it and rename it in place.
    fn persist_manifest(&self, manifest: &Manifest) -> std::io::Result<()> {
        let temp = self.path_of(&manifest::temp_manifest_name(&self.filename));
        let text = manifest.render();
        let mut file = std::fs::File::create(&temp)?;
        std::io::Write::write_all(&mut file, text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(
            &temp,
            self.path_of(&manifest::manifest_name(&self.filename)),
        )?;
        std::fs::File::open(&self.dir)?.sync_all()
    }

    /// Read the manifest in the AOF directory, if there is one. A bad one is
    /// logged as Redis logs it (the line, then what is wrong with it).
    pub fn read_manifest(&self) -> Result<Option<Manifest>, String> {
        let path = self.path_of(&manifest::manifest_name(&self.filename));
        match std::fs::read(&path) {
            Ok(text) => Manifest::parse(&text).map(Some).map_err(|(e, line)| {
                if let Some(line) = line {
                    crate::log_warning!(">>> '{line}'");
                }
                e
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!(
                "Unable to open the AOF manifest file {}: {e}",
                manifest::manifest_name(&self.filename)
            )),
        }
    }

    /// Use `manifest` (read at start-up) as the AOF's.
    pub fn adopt_manifest(&self, manifest: Manifest) {
        *self.manifest.lock() = manifest;
        self.refresh_sizes();
    }

    /// A copy of the manifest.
    pub fn manifest(&self) -> Manifest {
        self.manifest.lock().clone()
    }

    /// Start writing at server start, with the dataset loaded from this AOF: new
    /// effects go to the last incremental file, or to a new one when there is none.
    /// The caller wrote a base already when the manifest had none.
    pub fn open_on_start(&self) -> std::io::Result<()> {
        let mut manifest = self.manifest.lock();
        let path = match manifest.incrs.last() {
            Some(last) => self.path_of(&last.name),
            None => {
                let entry = manifest.add_incr(&self.filename);
                let path = self.path_of(&entry.name);
                std::fs::File::create(&path)?;
                self.persist_manifest(&manifest)?;
                log_notice!("Creating AOF incr file {} on server start", entry.name);
                path
            }
        };
        drop(manifest);
        self.switch_file(Some(path));
        self.set_state(State::On);
        Ok(())
    }

    /// `appendonly no` (CONFIG SET, or a failed start): write what is buffered,
    /// fsync, close the file and stop taking effects.
    pub fn turn_off(&self) {
        if self.state() == State::Off {
            return;
        }
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.set_state(State::Off);
        self.switch_file(None);
    }

    /// Wait (a few seconds at most) until everything appended so far is written,
    /// and fsynced where the policy says so.
    pub fn wait_written(&self) {
        let target = self.appended();
        let deadline = Instant::now() + std::time::Duration::from_secs(5);
        let _ = self.write_out_now();
        self.wake_writer();
        while !self.is_released(target) && Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// DEBUG AOF-FLUSH-SLEEP: sleep `micros` before each write of the buffer (0:
    /// never), as Redis's test hook does.
    pub fn set_debug_flush_sleep(&self, micros: u64) {
        self.debug_flush_sleep_us.store(micros, Ordering::Relaxed);
    }

    /// DEBUG AOF-FSYNC-SLEEP: sleep `micros` before each fsync (0: never), so
    /// that tests can see what a stuck disk does to writers.
    pub fn set_debug_fsync_sleep(&self, micros: u64) {
        self.debug_fsync_sleep_us.store(micros, Ordering::Relaxed);
    }

    /// Stop taking effects until the guard is dropped (DEBUG LOADAOF's own load).
    pub fn pause_sink(&self) -> SinkPause<'_> {
        self.sink_paused.store(true, Ordering::Release);
        SinkPause(self)
    }

    /// Stop the writer thread once it has written what is buffered.
    pub fn stop_writer(&self) {
        self.buffer.lock().stop = true;
        self.wake_writer();
    }

    /// Refuse writes? (the last write or fsync of the AOF failed.)
    #[inline]
    pub fn refuses_writes(&self) -> bool {
        self.write_failed.load(Ordering::Relaxed)
            && self.state.load(Ordering::Relaxed) != State::Off as u8
    }

    /// The error a refused write gets, as Redis words it.
    pub fn misconf_error(&self) -> String {
        let why = self.write_error.lock().clone().unwrap_or_default();
        format!("MISCONF Errors writing to the AOF file: {why}")
    }

    fn note_write(&self, result: &std::io::Result<()>) {
        match result {
            Ok(()) => {
                if self.write_failed.swap(false, Ordering::AcqRel) {
                    log_notice!("AOF write error looks solved, Redis can write again.");
                }
            }
            Err(e) => {
                let why = describe_io_error(e);
                if !self.write_failed.swap(true, Ordering::AcqRel) {
                    crate::log_warning!("Error writing to the AOF file: {why}");
                }
                *self.write_error.lock() = Some(why);
            }
        }
    }

    pub fn last_write_ok(&self) -> bool {
        !self.write_failed.load(Ordering::Relaxed)
    }

    /// Does the background fsync run (`aof_pending_bio_fsync`)?
    pub fn fsync_running(&self) -> bool {
        self.fsync_running.load(Ordering::Acquire)
    }

    /// Bytes waiting in the buffer (`aof_buffer_length`).
    pub fn buffer_len(&self) -> usize {
        self.buffer.lock().bytes.len()
    }

    /// Size of the base file at the last rewrite (`aof_base_size`).
    pub fn base_size(&self) -> u64 {
        self.base_size.load(Ordering::Relaxed)
    }

    /// Size of the AOF, base and incremental files (`aof_current_size`).
    pub fn current_size(&self) -> u64 {
        self.current_size.load(Ordering::Relaxed)
    }

    /// Re-measure the files the manifest lists.
    fn refresh_sizes(&self) {
        let manifest = self.manifest.lock();
        let size = |f: &FileEntry| std::fs::metadata(self.path_of(&f.name)).map_or(0, |m| m.len());
        let base = manifest.base.as_ref().map_or(0, size);
        let incr: u64 = manifest.incrs.iter().map(size).sum();
        self.base_size.store(base, Ordering::Relaxed);
        self.current_size.store(base + incr, Ordering::Relaxed);
    }

    /// Hand rewrites' snapshots to the rewriter thread's queue.
    pub fn set_rewriter(&self, queue: std::sync::mpsc::Sender<rewrite::Job>) {
        *self.rewriter.lock() = Some(queue);
    }

    /// Queue a rewrite's snapshot for the rewriter thread; the job back when there
    /// is none.
    pub fn send_rewrite(&self, job: rewrite::Job) -> Result<(), Box<rewrite::Job>> {
        match self.rewriter.lock().as_ref() {
            Some(queue) => queue.send(job).map_err(|unsent| Box::new(unsent.0)),
            None => Err(Box::new(job)),
        }
    }

    /// BGREWRITEAOF while a save runs: start the rewrite when it is over.
    pub fn schedule_rewrite(&self) {
        self.rewrite_scheduled.store(true, Ordering::Relaxed);
    }

    pub fn rewrite_scheduled(&self) -> bool {
        self.rewrite_scheduled.load(Ordering::Relaxed)
    }

    /// Was a rewrite scheduled? Clears the request.
    pub fn take_scheduled_rewrite(&self) -> bool {
        self.rewrite_scheduled.swap(false, Ordering::Relaxed)
    }

    pub fn rewrite_in_progress(&self) -> bool {
        self.rewrite.lock().running_since.is_some()
    }

    /// Has the AOF grown past `auto-aof-rewrite-percentage` of its base, and past
    /// `auto-aof-rewrite-min-size`?
    pub fn wants_auto_rewrite(&self) -> bool {
        if self.state() != State::On || self.rewrite_in_progress() {
            return false;
        }
        let settings = *self.settings.lock();
        let current = self.current_size();
        if settings.auto_percentage == 0 || current < settings.auto_min_size {
            return false;
        }
        let base = self.base_size().max(1);
        let growth = (current.saturating_sub(base)) * 100 / base;
        growth >= settings.auto_percentage as u64
    }

    /// What INFO persistence says about rewrites.
    pub fn rewrite_info(&self) -> RewriteInfo {
        let r = self.rewrite.lock();
        RewriteInfo {
            in_progress: r.running_since.is_some(),
            last_secs: r.last_secs.unwrap_or(-1),
            current_secs: r.running_since.map_or(-1, |s| s.elapsed().as_secs() as i64),
            last_ok: r.last_ok,
            count: r.count,
            consecutive_failures: r.consecutive_failures,
        }
    }
}

/// What INFO says about rewrites.
pub struct RewriteInfo {
    pub in_progress: bool,
    pub last_secs: i64,
    pub current_secs: i64,
    pub last_ok: bool,
    pub count: u64,
    pub consecutive_failures: u64,
}

/// Effects are taken again when dropped (see [`Aof::pause_sink`]).
pub struct SinkPause<'a>(&'a Aof);

impl Drop for SinkPause<'_> {
    fn drop(&mut self) {
        self.0.sink_paused.store(false, Ordering::Release);
    }
}

/// The AOF's consumer of the effect stream: takes the effects meant for the AOF.
pub struct AofSink {
    aof: Arc<Aof>,
    generation: u64,
}

thread_local! {
    /// Where the buffer ended after the last effect this thread appended (sinks run
    /// on the thread that appends the effect).
    static APPENDED_HERE: Cell<u64> = const { Cell::new(0) };
}

/// The AOF position after the last effect appended by this thread (0: none yet): a
/// connection compares it before and after its commands to know whether they, and
/// not another thread's clients, wrote something its replies must wait for.
pub fn appended_here() -> u64 {
    APPENDED_HERE.with(Cell::get)
}

impl EffectSink for AofSink {
    fn take(&self, effect: &EffectRef<'_>) -> bool {
        if self.aof.generation.load(Ordering::Acquire) != self.generation {
            return false;
        }
        if effect.targets.aof() && !self.aof.sink_paused.load(Ordering::Acquire) {
            self.aof.append(effect.db, effect.argv);
        }
        true
    }
}

/// An I/O error as Redis's `strerror` words it (without Rust's "(os error N)").
pub fn describe_io_error(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}
