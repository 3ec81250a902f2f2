//! Writing the buffer to the files, and the writer thread.
//!
//! Whoever has replies waiting for the AOF writes the whole buffer at once
//! ([`Aof::write_out`]): a worker thread once per event-loop round, before it
//! answers the clients whose commands appended effects (as Redis writes before it
//! replies), so the effects of all its clients of the round cost one write. The
//! writer thread fsyncs: with `always` as soon as replies wait for it (group
//! commit: every thread's writes since the last fsync share the next one, made on
//! its own descriptor while workers go on writing), with `everysec` once a second.
//! It also writes what nobody else did (effects of the active expiry cycle), and
//! retries a failed write every [`RETRY`]: meanwhile writes are refused (MISCONF)
//! and held replies stay held, so nothing is acknowledged that is not written
//! (fsynced with `always`). Must not touch the manifest (the rewrite and start-up
//! do).

use super::{Aof, Fsync};
use crate::log_warning;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a failed write is tried again.
const RETRY: Duration = Duration::from_millis(100);
/// `everysec`.
const SECOND: Duration = Duration::from_secs(1);

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
}

impl Aof {
    /// Write everything appended so far to the current file (moving between files
    /// where a rewrite or `appendonly no` says), and release the replies that
    /// waited only for the write. A failure keeps what was not written.
    pub fn write_out(&self) -> io::Result<()> {
        let mut out = self.output.lock();
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
    fn sync(&self, last_fsync: &mut Instant) -> bool {
        let (file, pos) = {
            let out = self.output.lock();
            (out.file.clone(), self.written.load(Ordering::Acquire))
        };
        let Some(file) = file.filter(|_| self.unsynced.swap(false, Ordering::AcqRel)) else {
            self.release(pos);
            return true;
        };
        let started = Instant::now();
        let result = file.sync_data();
        // Writes queued behind an fsync stuck this long count as delayed, as
        // Redis's `aof_delayed_fsync` counts them.
        if started.elapsed() > SECOND * 2 {
            self.delayed_fsyncs.fetch_add(1, Ordering::Relaxed);
        }
        *last_fsync = Instant::now();
        match result {
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

/// Start the writer thread of `aof`.
pub fn start_writer(aof: Arc<Aof>) -> io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("kvik-aof".into())
        .spawn(move || run(&aof))
}

fn run(aof: &Aof) {
    let mut last_fsync = Instant::now();
    let mut last_round = Instant::now();
    loop {
        let stop = wait_for_work(aof, last_round);
        last_round = Instant::now();
        let written = aof.write_out().is_ok();
        if written {
            match aof.fsync_policy() {
                Fsync::Always if !aof.fsync_skipped() => {
                    aof.sync(&mut last_fsync);
                }
                Fsync::EverySec if last_fsync.elapsed() >= SECOND && !aof.fsync_skipped() => {
                    aof.sync(&mut last_fsync);
                }
                _ => {}
            }
        }
        if stop {
            aof.sync(&mut last_fsync);
            return;
        }
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
        let period = if failing { RETRY } else { SECOND };
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
