//! Writing the buffer to the files, and the writer and fsync threads.
//!
//! Whoever has replies waiting for the AOF writes the whole buffer at once
//! ([`Aof::write_out`]): a worker thread once per event-loop round, before it
//! answers the clients whose commands appended effects (as Redis writes before it
//! replies), so the effects of all its clients of the round cost one write. With
//! `always`, that worker then fsyncs too when nobody else is at it
//! ([`Aof::sync_for_held_replies`]), else the writer thread fsyncs as soon as
//! replies wait for it (group commit: every thread's writes since the last fsync
//! share the next one, made on its own descriptor while workers go on writing).
//! With `everysec` the writer thread asks the fsync thread for one a second
//! (Redis's bio fsync); while that one runs, writes are postponed (a write would
//! queue behind it in the kernel) and their replies held, for two seconds at
//! most: then the write goes through anyway and counts in `aof_delayed_fsync`, as
//! Redis 7.0's `flushAppendOnlyFile` does. The writer also writes what nobody else
//! did (effects of the active expiry cycle, postponed
//! writes), and retries a failed write every [`RETRY`]: meanwhile writes are
//! refused (MISCONF) and held replies stay held, so nothing is acknowledged that is
//! not written (fsynced with `always`). Must not touch the manifest (the rewrite
//! and start-up do).

use super::{Aof, Fsync};
use crate::{log_notice, log_warning};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a failed or postponed write is tried again (Redis's cron, at `hz 10`).
pub(super) const RETRY: Duration = Duration::from_millis(100);
/// `everysec`.
const SECOND: Duration = Duration::from_secs(1);
/// How long a write waits for a running background fsync before it goes through.
const MAX_POSTPONE: Duration = Duration::from_secs(2);

/// The file being written and what is taken from the buffer but not written yet.
#[derive(Default)]
pub(super) struct Output {
    file: Option<Arc<File>>,
    queue: Vec<u8>,
    /// Where in `queue` the writer moves to another file.
    switches: VecDeque<(usize, Option<PathBuf>)>,
    /// The position at the end of `queue`.
    queue_end: u64,
    pub(super) failing: bool,
    /// Since when writes wait for the background fsync (Redis's
    /// `aof_flush_postponed_start`).
    postponed_since: Option<Instant>,
}

impl Aof {
    /// Write everything appended so far to the current file (moving between files
    /// where a rewrite or `appendonly no` says), and release the replies that
    /// waited only for the write. A failure keeps what was not written. With
    /// `everysec`, a write is postponed while the background fsync runs (two
    /// seconds at most; see the module's comment).
    pub fn write_out(&self) -> io::Result<()> {
        self.write_pending(false)
    }

    /// Write everything appended so far, even while the background fsync runs
    /// (shutdown, DEBUG LOADAOF: Redis's forced flush).
    pub fn write_out_now(&self) -> io::Result<()> {
        self.write_pending(true)
    }

    fn write_pending(&self, force: bool) -> io::Result<()> {
        let mut out = self.output.lock();
        if !force && self.has_pending(&out) && self.postpones_write(&mut out) {
            // The bytes stay in the buffer (`aof_buffer_length` shows them).
            return Ok(());
        }
        out.postponed_since = None;
        self.write_postponed.store(false, Ordering::Release);
        {
            let mut buffer = self.buffer.lock();
            let base = out.queue.len();
            let moved = buffer.switches.drain(..).map(|(at, p)| (base + at, p));
            out.switches.extend(moved);
            out.queue.append(&mut buffer.bytes);
            out.queue_end = buffer.end;
        }
        if out.failing && self.state() == super::State::Off {
            out.drop_until_closed();
        }
        self.debug_flush_sleep();
        let queued = out.queue.len();
        let result = self.write_queue(&mut out);
        let wrote = out.queue.len() < queued;
        self.note_write(&result);
        out.failing = result.is_err();
        if result.is_ok() {
            self.written.store(out.queue_end, Ordering::Release);
            if !self.must_fsync_before_reply() {
                self.release(out.queue_end);
            } else if wrote {
                // Replies wait for these bytes' fsync.
                drop(out);
                self.wake_writer();
            }
        }
        result
    }

    /// Is there anything to write, or a file to switch to?
    fn has_pending(&self, out: &Output) -> bool {
        if !out.queue.is_empty() || !out.switches.is_empty() {
            return true;
        }
        let buffer = self.buffer.lock();
        !buffer.bytes.is_empty() || !buffer.switches.is_empty()
    }

    /// With `everysec`, while the background fsync runs: postpone the write,
    /// unless it has waited [`MAX_POSTPONE`] already (then it goes through and
    /// counts as delayed). Decides whether to postpone.
    fn postpones_write(&self, out: &mut Output) -> bool {
        let fsync_runs =
            self.fsync_policy() == Fsync::EverySec && self.fsync_running.load(Ordering::Acquire);
        if !fsync_runs {
            return false;
        }
        let since = *out.postponed_since.get_or_insert_with(Instant::now);
        if since.elapsed() < MAX_POSTPONE {
            self.write_postponed.store(true, Ordering::Release);
            return true;
        }
        self.delayed_fsyncs.fetch_add(1, Ordering::Relaxed);
        log_notice!(
            "Asynchronous AOF fsync is taking too long (disk is busy?). Writing the AOF buffer without waiting for fsync to complete, this may slow down Redis."
        );
        false
    }

    fn debug_flush_sleep(&self) {
        let micros = self.debug_flush_sleep_us.load(Ordering::Relaxed);
        if micros > 0 {
            std::thread::sleep(Duration::from_micros(micros));
        }
    }

    /// Is there something appended that nobody wrote yet (and no failure that the
    /// writer thread retries)?
    #[inline]
    pub fn has_unwritten(&self) -> bool {
        self.appended() > self.written.load(Ordering::Acquire)
            && !self.write_failed.load(Ordering::Relaxed)
    }

    /// Write the queue, moving between files where the switches say. What could not
    /// be written stays queued.
    fn write_queue(&self, out: &mut Output) -> io::Result<()> {
        let mut done = 0;
        let result = loop {
            let upto = out.switches.front().map_or(out.queue.len(), |s| s.0);
            if let Err(e) = self.write_bytes(out, &mut done, upto) {
                break Err(e);
            }
            let Some((_, next)) = out.switches.front().cloned() else {
                break Ok(());
            };
            if let Err(e) = self.open(out, next) {
                break Err(e);
            }
            out.switches.pop_front();
        };
        out.queue.drain(..done);
        for s in &mut out.switches {
            s.0 -= done;
        }
        result
    }

    /// Write `queue[*done..upto]` to the current file, advancing `done` by what was
    /// written. Without a file (the AOF is off) the bytes are dropped.
    fn write_bytes(&self, out: &mut Output, done: &mut usize, upto: usize) -> io::Result<()> {
        let Some(file) = out.file.as_ref() else {
            *done = upto;
            return Ok(());
        };
        while *done < upto {
            match (&**file).write(&out.queue[*done..upto]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    *done += n;
                    self.unsynced.store(true, Ordering::Release);
                    self.current_size.fetch_add(n as u64, Ordering::Relaxed);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Leave the current file (fsynced) for `next`, or for none.
    fn open(&self, out: &mut Output, next: Option<PathBuf>) -> io::Result<()> {
        if let Some(file) = out.file.take() {
            file.sync_data()?;
        }
        if let Some(path) = next {
            let file = File::options().create(true).append(true).open(&path)?;
            out.file = Some(Arc::new(file));
        }
        Ok(())
    }

    /// Does the policy in force want the fsync before the replies go out?
    pub(super) fn must_fsync_before_reply(&self) -> bool {
        self.fsync_policy() == Fsync::Always && !self.fsync_skipped()
    }

    /// `no-appendfsync-on-rewrite` while a rewrite or a save runs.
    fn fsync_skipped(&self) -> bool {
        self.no_fsync_on_rewrite.load(Ordering::Relaxed)
            && (self.rewrite_in_progress() || self.other_save_running.load(Ordering::Relaxed))
    }

    /// fsync what is written to the current file, then release the replies that
    /// waited for it. The fsync runs on a handle of its own: workers keep writing
    /// meanwhile, and their writes wait for the next one.
    fn sync(&self) -> bool {
        let _one_at_a_time = self.sync_lock.lock();
        self.sync_locked()
    }

    /// With `always`, a worker whose replies wait for the fsync makes it itself
    /// when nobody else is at it, instead of handing it to the writer thread and
    /// waiting to be told: two thread hand-offs fewer for its clients. Another
    /// thread's fsync under way covers, or its next one will, what this one wrote.
    pub fn sync_for_held_replies(&self) {
        if self.fsync_policy() != Fsync::Always
            || self.fsync_skipped()
            || !self.unsynced.load(Ordering::Acquire)
        {
            return;
        }
        if let Some(_one_at_a_time) = self.sync_lock.try_lock() {
            self.sync_locked();
        }
    }

    fn sync_locked(&self) -> bool {
        let (file, pos) = {
            let out = self.output.lock();
            (out.file.clone(), self.written.load(Ordering::Acquire))
        };
        let Some(file) = file.filter(|_| self.unsynced.swap(false, Ordering::AcqRel)) else {
            self.release(pos);
            return true;
        };
        let sleep = self.debug_fsync_sleep_us.load(Ordering::Relaxed);
        if sleep > 0 {
            std::thread::sleep(Duration::from_micros(sleep));
        }
        match file.sync_data() {
            Ok(()) => {
                self.release(pos);
                true
            }
            Err(e) => {
                self.unsynced.store(true, Ordering::Release);
                log_warning!(
                    "Can't persist AOF for fsync error when the AOF fsync policy is '{}': {}",
                    policy_name(self.fsync_policy()),
                    super::describe_io_error(&e)
                );
                self.note_write(&Err(e));
                self.output.lock().failing = true;
                false
            }
        }
    }

    /// Hand the fsync to the fsync thread unless it still runs the last one.
    fn sync_in_background(&self, fsync_thread: &Sender<()>) {
        if !self.fsync_running.swap(true, Ordering::AcqRel) && fsync_thread.send(()).is_err() {
            self.fsync_running.store(false, Ordering::Release);
        }
    }
}

impl Output {
    /// The AOF was turned off while writes failed: what was queued for the file
    /// it closed is wanted by nobody any more.
    fn drop_until_closed(&mut self) {
        let Some(last_close) = self.switches.iter().rposition(|s| s.1.is_none()) else {
            return;
        };
        let at = self.switches[last_close].0;
        self.queue.drain(..at);
        self.switches.drain(..=last_close);
        for s in &mut self.switches {
            s.0 -= at;
        }
        self.file = None;
    }
}

/// Start the writer thread of `aof` (which starts the fsync thread).
pub fn start_writer(aof: Arc<Aof>) -> io::Result<std::thread::JoinHandle<()>> {
    let (requests, received) = channel();
    let fsyncing = aof.clone();
    std::thread::Builder::new()
        .name("kvik-aof-fsync".into())
        .spawn(move || run_fsyncs(&fsyncing, received))?;
    std::thread::Builder::new()
        .name("kvik-aof".into())
        .spawn(move || run(&aof, &requests))
}

fn run(aof: &Aof, fsync_thread: &Sender<()>) {
    let mut last_fsync = Instant::now();
    let mut last_round = Instant::now();
    loop {
        let stop = wait_for_work(aof, last_round);
        last_round = Instant::now();
        let written = if stop {
            aof.write_out_now()
        } else {
            aof.write_out()
        };
        if written.is_ok() {
            match aof.fsync_policy() {
                Fsync::Always if !aof.fsync_skipped() => {
                    aof.sync();
                }
                Fsync::EverySec if last_fsync.elapsed() >= SECOND && !aof.fsync_skipped() => {
                    aof.sync_in_background(fsync_thread);
                    last_fsync = Instant::now();
                }
                _ => {}
            }
        }
        if stop {
            aof.sync();
            return;
        }
    }
}

/// The fsync thread: one fsync per request, then the writer is woken to write
/// what waited for it. Ends when the writer thread does.
fn run_fsyncs(aof: &Aof, requests: Receiver<()>) {
    for () in requests {
        aof.sync();
        aof.fsync_running.store(false, Ordering::Release);
        aof.wake_writer();
    }
}

/// Sleep until there is work: replies waiting for an fsync (`always`), a file to
/// switch, a wake-up, the next round (each second: the due fsync and what nobody
/// wrote; each [`RETRY`] while writes fail), or the end. Returns whether to stop.
fn wait_for_work(aof: &Aof, last_round: Instant) -> bool {
    let mut buffer = aof.buffer.lock();
    loop {
        if buffer.stop {
            return true;
        }
        let failing = aof.write_failed.load(Ordering::Relaxed);
        let waited_for = aof.fsync_policy() == Fsync::Always
            && aof.unsynced.load(Ordering::Acquire)
            && aof.has_waiters();
        if !buffer.switches.is_empty() || waited_for || buffer.wake {
            buffer.wake = false;
            return false;
        }
        let postponed = aof.write_postponed.load(Ordering::Acquire);
        let period = if failing || postponed { RETRY } else { SECOND };
        let due = last_round + period;
        let now = Instant::now();
        if now >= due {
            return false;
        }
        buffer.writer_idle = true;
        aof.has_work.wait_for(&mut buffer, due - now);
        buffer.writer_idle = false;
    }
}

fn policy_name(policy: Fsync) -> &'static str {
    match policy {
        Fsync::Always => "always",
        Fsync::EverySec => "everysec",
        Fsync::No => "no",
    }
}
