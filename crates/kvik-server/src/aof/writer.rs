//! The writer thread: takes the whole buffer the sinks filled, writes it to the
//! current incremental file, fsyncs as `appendfsync` says, and releases the replies
//! held for it (group commit: every thread's effects of the round share one write
//! and one fsync).
//!
//! A failed write keeps what was not written and tries again every
//! [`RETRY`]; meanwhile writes are refused (MISCONF) and held replies stay held, so
//! nothing is acknowledged that is not on disk. Owns the open file; must not touch
//! the manifest (the rewrite and start-up do).

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

/// Start the writer thread of `aof`.
pub fn start_writer(aof: Arc<Aof>) -> io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("kvik-aof".into())
        .spawn(move || Writer::new(aof).run())
}

struct Writer {
    aof: Arc<Aof>,
    file: Option<File>,
    /// Bytes taken from the buffer and not written yet.
    queue: Vec<u8>,
    /// Where in `queue` the writer moves to another file.
    switches: VecDeque<(usize, Option<PathBuf>)>,
    /// The position at the end of `queue`.
    queue_end: u64,
    /// Written but not fsynced.
    unsynced: bool,
    last_fsync: Instant,
    failing: bool,
}

impl Writer {
    fn new(aof: Arc<Aof>) -> Writer {
        Writer {
            aof,
            file: None,
            queue: Vec::new(),
            switches: VecDeque::new(),
            queue_end: 0,
            unsynced: false,
            last_fsync: Instant::now(),
            failing: false,
        }
    }

    fn run(mut self) {
        loop {
            let stop = self.take_work();
            let written = self.write_queue();
            self.aof.note_write(&written);
            self.failing = written.is_err();
            if written.is_ok() {
                self.sync_and_release();
            }
            if stop {
                self.sync_file();
                return;
            }
        }
    }

    /// Wait for bytes (or a due fsync, or a retry) and move them to the queue.
    /// Returns whether the thread is asked to stop.
    fn take_work(&mut self) -> bool {
        let aof = self.aof.clone();
        let mut buffer = aof.buffer.lock();
        loop {
            let pending = !buffer.bytes.is_empty() || !buffer.switches.is_empty();
            if pending || buffer.stop || self.failing || self.fsync_due() {
                break;
            }
            buffer.writer_idle = true;
            let wait = if self.unsynced { SECOND } else { SECOND * 10 };
            aof.has_work.wait_for(&mut buffer, wait);
            buffer.writer_idle = false;
            if self.fsync_due() || self.released_behind() {
                break;
            }
        }
        if self.failing {
            drop(buffer);
            std::thread::sleep(RETRY);
            buffer = aof.buffer.lock();
        }
        let base = self.queue.len();
        self.switches.extend(
            buffer
                .switches
                .drain(..)
                .map(|(at, path)| (base + at, path)),
        );
        self.queue.append(&mut buffer.bytes);
        self.queue_end = buffer.end;
        buffer.stop
    }

    fn fsync_due(&self) -> bool {
        self.unsynced
            && self.aof.fsync_policy() == Fsync::EverySec
            && self.last_fsync.elapsed() >= SECOND
    }

    /// Replies wait for a position already written, which the policy now in force
    /// releases without an fsync.
    fn released_behind(&self) -> bool {
        !self.aof.is_released(self.queue_end) && !self.must_fsync_before_reply()
    }

    /// Write the queue, moving between files where the switches say. What could not
    /// be written stays queued.
    fn write_queue(&mut self) -> io::Result<()> {
        if self.failing && self.aof.state() == super::State::Off {
            self.drop_until_closed();
        }
        let mut done = 0;
        let result = loop {
            let upto = self.switches.front().map_or(self.queue.len(), |s| s.0);
            if let Err(e) = self.write_bytes(&mut done, upto) {
                break Err(e);
            }
            let Some((_, next)) = self.switches.front().cloned() else {
                break Ok(());
            };
            if let Err(e) = self.open(next) {
                break Err(e);
            }
            self.switches.pop_front();
        };
        self.queue.drain(..done);
        for s in &mut self.switches {
            s.0 -= done;
        }
        result
    }

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
        self.unsynced = false;
    }

    /// Write `queue[*done..upto]` to the current file, advancing `done` by what was
    /// written. Without a file (the AOF is off) the bytes are dropped.
    fn write_bytes(&mut self, done: &mut usize, upto: usize) -> io::Result<()> {
        let Some(file) = self.file.as_mut() else {
            *done = upto;
            return Ok(());
        };
        while *done < upto {
            match file.write(&self.queue[*done..upto]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    *done += n;
                    self.unsynced = true;
                    self.aof.current_size.fetch_add(n as u64, Ordering::Relaxed);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Leave the current file (fsynced) for `next`, or for none.
    fn open(&mut self, next: Option<PathBuf>) -> io::Result<()> {
        self.sync_file();
        if let Some(path) = next {
            let file = File::options().create(true).append(true).open(&path)?;
            self.file = Some(file);
        } else {
            self.file = None;
        }
        Ok(())
    }

    /// Does the policy in force want the fsync before the replies go out?
    fn must_fsync_before_reply(&self) -> bool {
        self.aof.fsync_policy() == Fsync::Always && !self.fsync_skipped()
    }

    /// `no-appendfsync-on-rewrite` while a rewrite or a save runs.
    fn fsync_skipped(&self) -> bool {
        self.aof.no_fsync_on_rewrite.load(Ordering::Relaxed)
            && (self.aof.rewrite_in_progress()
                || self.aof.other_save_running.load(Ordering::Relaxed))
    }

    /// Everything queued is written: fsync as the policy says and release the
    /// replies held for it.
    fn sync_and_release(&mut self) {
        match self.aof.fsync_policy() {
            Fsync::Always if !self.fsync_skipped() => {
                if self.sync_file() {
                    self.aof.release(self.queue_end);
                }
            }
            Fsync::EverySec if self.fsync_due() && !self.fsync_skipped() => {
                self.sync_file();
                self.aof.release(self.queue_end);
            }
            _ => self.aof.release(self.queue_end),
        }
    }

    /// fsync the current file if it has unsynced bytes; false when that failed.
    fn sync_file(&mut self) -> bool {
        let Some(file) = self.file.as_ref().filter(|_| self.unsynced) else {
            return true;
        };
        let started = Instant::now();
        let result = file.sync_data();
        // Writes queued behind an fsync stuck this long count as delayed, as
        // Redis's `aof_delayed_fsync` counts them.
        if started.elapsed() > SECOND * 2 {
            self.aof.delayed_fsyncs.fetch_add(1, Ordering::Relaxed);
        }
        self.last_fsync = Instant::now();
        match result {
            Ok(()) => {
                self.unsynced = false;
                true
            }
            Err(e) => {
                log_warning!(
                    "Can't persist AOF for fsync error when the AOF fsync policy is '{}': {}",
                    policy_name(self.aof.fsync_policy()),
                    super::describe_io_error(&e)
                );
                self.aof.note_write(&Err(e));
                self.failing = true;
                false
            }
        }
    }
}

fn policy_name(policy: Fsync) -> &'static str {
    match policy {
        Fsync::Always => "always",
        Fsync::EverySec => "everysec",
        Fsync::No => "no",
    }
}
