//! The graceful shutdown, as Redis 7.0 runs it: SHUTDOWN and SIGTERM/SIGINT first
//! let lagging replicas catch up (writes paused, replicas asked for their offset,
//! at most `shutdown-timeout` seconds), then save and stop. While it waits the server
//! still answers, so `SHUTDOWN ABORT` can cancel it; the SHUTDOWN clients waiting
//! then get `-ERR Errors trying to SHUTDOWN. Check logs.`, as they do when the final
//! save fails or the first AOF is still being written.
//!
//! Owns the state of the shutdown in progress (its flags, deadline, waiting clients)
//! and the watcher thread that finishes it. Must not touch connections: the waiting
//! clients are blocking waiters, answered through their worker's mailbox.

use super::Server;
use crate::blocking::Waiter;
use crate::mailbox::WaitEnd;
use crate::{log_notice, log_warning};
use kvik_config::shutdown::{FORCE, NOSAVE, NOW, SAVE};
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The reply of a SHUTDOWN that did not stop the server (its save failed, or it
/// was aborted while waiting for replicas).
pub const FAILED: &str = "ERR Errors trying to SHUTDOWN. Check logs.";

/// How often the watcher looks at the replicas' offsets while it waits (Redis's cron
/// runs at `hz` 10).
const POLL: Duration = Duration::from_millis(10);

/// What starting a shutdown came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Prepared {
    /// The server is stopping (the final save, if any, is done).
    Exiting,
    /// Waiting for replicas (or for the shutdown already in progress); the watcher
    /// finishes it.
    Waiting,
    /// The final save failed: the server goes on.
    Failed,
}

#[derive(Default)]
struct State {
    /// Unix ms at which the wait for replicas ends; 0 while no shutdown is in
    /// progress (Redis's `shutdown_mstime`).
    deadline_ms: u64,
    /// The final steps run (the save): it can no longer be aborted.
    finishing: bool,
    /// Writes are paused for the wait.
    paused: bool,
    /// The SHUTDOWN flags it runs with (`kvik_config::shutdown` bits).
    flags: u8,
    /// SHUTDOWN clients blocked until it ends.
    waiters: Vec<Arc<Waiter>>,
}

/// The shutdown in progress, if any.
#[derive(Default)]
pub struct Shutdown {
    state: Mutex<State>,
    /// Wakes the watcher when a wait begins.
    begun: Condvar,
    /// A signal asked for a shutdown that has not ended (Redis's `shutdown_asap`).
    signalled: AtomicBool,
}

impl Shutdown {
    /// INFO's `shutdown_in_milliseconds`: how long the wait for replicas has left,
    /// while one runs.
    pub fn remaining_ms(&self) -> Option<u64> {
        let deadline = self.state.lock().deadline_ms;
        (deadline != 0).then(|| deadline.saturating_sub(crate::hlc::unix_ms()))
    }

    /// A shutdown signal arrived; returns whether one had already arrived and its
    /// shutdown has not ended (a second SIGINT then means "exit now").
    pub fn note_signal(&self) -> bool {
        self.signalled.swap(true, Ordering::AcqRel)
    }
}

/// Start shutting down with `flags` (Redis's prepareForShutdown). Unless NOW is among
/// them or `shutdown-timeout` is 0, lagging replicas are waited for: writes pause,
/// the replicas are asked for their offset, and `park` is called (under the
/// shutdown's lock) to block the asking client, whose waiter is answered if the
/// shutdown does not end the server. A shutdown already waiting takes the client in
/// as well, whatever its flags, as in Redis.
pub fn prepare(server: &Server, flags: u8, park: impl FnOnce() -> Option<Arc<Waiter>>) -> Prepared {
    start(server, flags, false, park).unwrap_or(Prepared::Failed)
}

/// [`prepare`] for a signal: nothing happens (`None`) when the signal's request was
/// aborted before it began, or a shutdown is already under way.
pub fn prepare_on_signal(server: &Server, flags: u8) -> Option<Prepared> {
    start(server, flags, true, || None)
}

fn start(
    server: &Server,
    flags: u8,
    signalled: bool,
    park: impl FnOnce() -> Option<Arc<Waiter>>,
) -> Option<Prepared> {
    let shutdown = &server.shutdown;
    let mut state = shutdown.state.lock();
    let under_way = state.deadline_ms != 0 || state.finishing;
    if signalled && (under_way || !shutdown.signalled.load(Ordering::Acquire)) {
        return None;
    }
    if under_way {
        state.waiters.extend(park());
        return Some(Prepared::Waiting);
    }
    log_warning!("User requested shutdown...");
    let timeout_secs = server.config.read().shutdown_timeout as u64;
    if flags & NOW == 0 && timeout_secs != 0 && !replicas_in_sync(server) {
        state.deadline_ms = crate::hlc::unix_ms() + timeout_secs * 1000;
        state.flags = flags;
        state.waiters.extend(park());
        if !server.pause.is_active() {
            server.replication.backlog.ask_acks();
        }
        server.pause_writes_for_shutdown(true);
        state.paused = true;
        log_notice!("Waiting for replicas before shutting down.");
        shutdown.begun.notify_all();
        return Some(Prepared::Waiting);
    }
    state.flags = flags;
    state.finishing = true;
    drop(state);
    Some(if finish(server) {
        Prepared::Exiting
    } else {
        Prepared::Failed
    })
}

/// SHUTDOWN ABORT: cancel the shutdown in progress, or the one a signal asked for.
/// False when there is none, or once the final save began (it can no longer be
/// aborted).
pub fn abort(server: &Server) -> bool {
    let mut state = server.shutdown.state.lock();
    if state.finishing {
        return false;
    }
    let waiting = state.deadline_ms != 0;
    let signalled = server.shutdown.signalled.load(Ordering::Acquire);
    if !waiting && !signalled {
        return false;
    }
    let waiters = end(server, &mut state);
    drop(state);
    answer_failed(server, waiters);
    log_notice!("Shutdown manually aborted.");
    true
}

/// The thread that finishes a shutdown once the replicas caught up or the timeout
/// passed (Redis does it from its cron).
pub fn start_watcher(server: Arc<Server>) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("kvik-shutdown".into())
        .spawn(move || watch(&server))
}

fn watch(server: &Server) {
    let shutdown = &server.shutdown;
    loop {
        {
            let mut state = shutdown.state.lock();
            while state.deadline_ms == 0 {
                if server.shutdown_requested.load(Ordering::Acquire) {
                    return;
                }
                shutdown
                    .begun
                    .wait_for(&mut state, Duration::from_millis(100));
            }
            let due = crate::hlc::unix_ms() >= state.deadline_ms;
            if !due && !replicas_in_sync(server) {
                drop(state);
                std::thread::sleep(POLL);
                continue;
            }
            state.deadline_ms = 0;
            state.finishing = true;
        }
        if finish(server) {
            return;
        }
    }
}

/// Every replica acknowledged the whole stream (Redis's isReadyToShutdown: replicas
/// still syncing count as lagging).
fn replicas_in_sync(server: &Server) -> bool {
    let repl = &server.replication;
    repl.replicas
        .all()
        .iter()
        .all(|feed| feed.ack_offset.load(Ordering::Acquire) == feed.stream_end(repl))
}

/// The last steps (Redis's finishShutdown): say which replicas lag, refuse to
/// exit while the first AOF is written, save as the flags and `save` say, and
/// stop the workers. Without FORCE, a refusal or a failed save cancels the
/// shutdown and the server goes on; returns whether it stops.
fn finish(server: &Server) -> bool {
    let flags = server.shutdown.state.lock().flags;
    let force = flags & FORCE != 0;
    log_replicas(server);
    if !super::saving::aof_lets_exit(server, force) || !save_unless_forced(server, flags) {
        log_warning!("Errors trying to shut down the server. Check the logs for more information.");
        cancel(server);
        return false;
    }
    server.request_shutdown();
    true
}

/// The final save as the flags and `save` say; false when it failed and the
/// shutdown is not forced.
fn save_unless_forced(server: &Server, flags: u8) -> bool {
    let asked = match (flags & SAVE != 0, flags & NOSAVE != 0) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    };
    if super::saving::save_before_exit(server, asked).is_ok() {
        return true;
    }
    if flags & FORCE == 0 {
        return false;
    }
    log_warning!("Error trying to save the DB. Exit anyway.");
    true
}

/// A warning per lagging replica, then how many are in sync.
fn log_replicas(server: &Server) {
    let replicas = server.replication.replicas.all();
    if replicas.is_empty() {
        return;
    }
    let now = crate::hlc::unix_ms();
    let mut lagging = 0;
    for feed in &replicas {
        let acked = feed.ack_offset.load(Ordering::Acquire);
        let offset = feed.stream_end(&server.replication);
        if acked == offset {
            continue;
        }
        lagging += 1;
        let lag = if feed.is_online() {
            now.saturating_sub(feed.ack_ms.load(Ordering::Acquire)) / 1000
        } else {
            0
        };
        log_warning!(
            "Lagging replica {}:{} reported offset {} behind master, lag={lag}, state={}.",
            feed.ip,
            feed.hello.listening_port,
            offset as i64 - acked as i64,
            feed.state_name()
        );
    }
    log_notice!(
        "{} of {} replicas are in sync when shutting down.",
        replicas.len() - lagging,
        replicas.len()
    );
}

/// The shutdown ends without stopping the server: writes resume, a signal's request
/// is forgotten, and the SHUTDOWN clients waiting get the error.
fn cancel(server: &Server) {
    let waiters = end(server, &mut server.shutdown.state.lock());
    answer_failed(server, waiters);
}

/// Forget the shutdown (its lock held): resume writes, clear its state, and hand
/// back its waiting clients.
fn end(server: &Server, state: &mut State) -> Vec<Arc<Waiter>> {
    if std::mem::take(&mut state.paused) {
        server.pause_writes_for_shutdown(false);
    }
    (state.deadline_ms, state.finishing, state.flags) = (0, false, 0);
    server.shutdown.signalled.store(false, Ordering::Release);
    std::mem::take(&mut state.waiters)
}

/// The SHUTDOWN clients of a shutdown that did not end the server get the error.
fn answer_failed(server: &Server, waiters: Vec<Arc<Waiter>>) {
    for waiter in waiters {
        if server.blocking.end_wait(&waiter) {
            let mut out = kvik_resp::ReplyWriter::with_buf(Vec::new(), waiter.protocol);
            out.error(FAILED);
            let failed = WaitEnd {
                served: true,
                failed: true,
            };
            server.unblock(&waiter, out.buf, failed);
        }
    }
}
