//! Serving a worker's other clients while one of its clients runs a long script.
//!
//! A worker runs one command at a time, so while a script runs, the other clients of
//! its thread would hear nothing until it ends: with `server-threads 1`, not even
//! SCRIPT KILL or SHUTDOWN NOSAVE could reach the server. Redis meets the same
//! problem on its one thread by polling its event loop from inside the script; kvik
//! does the same per worker. While a connection runs commands, its worker is the
//! *host* of this thread ([`hosting`]); once a script has run past
//! `busy-reply-threshold`, the script's instruction hook calls
//! [`serve_clients_while_busy`], which polls the worker's sockets without waiting and
//! runs what its other clients sent: new connections are accepted, allow-busy
//! commands (SCRIPT KILL, FUNCTION KILL, SHUTDOWN NOSAVE, AUTH, ...) run, anything
//! else is answered BUSY ([`crate::scripting::serving_while_busy`] tells `call`), and no command waits
//! for a shard lock (the script may hold it, and it cannot move on until we return).
//! The mailbox, timers and cron wait for the script to end.
//!
//! Owns the thread-local host record. Must not run commands itself: the worker does.

use super::worker::Worker;
use crate::server::Server;
use crate::stats::ThreadStats;
use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often, at most, a busy script stops to serve the other clients.
const SERVE_EVERY: Duration = Duration::from_millis(1);

#[derive(Clone, Copy)]
struct Host {
    worker: *mut Worker,
    last_served: Option<Instant>,
}

thread_local! {
    static HOST: Cell<Option<Host>> = const { Cell::new(None) };
}

/// Run `work` with `worker` as this thread's host, giving it the worker's server and
/// statistics. `work` must not touch the worker (the caller checks the connection it
/// runs out of the worker's table first); while it runs, the worker is reached only
/// through the host record, by [`serve_clients_while_busy`].
pub(super) fn hosting<R>(worker: &mut Worker, work: impl FnOnce(&Server, &ThreadStats) -> R) -> R {
    let (server, stats) = (Arc::as_ptr(worker.server()), Arc::as_ptr(worker.stats()));
    let worker: *mut Worker = worker;
    let _restore = Restore(HOST.replace(Some(Host {
        worker,
        last_served: None,
    })));
    // SAFETY: the server and the statistics live in their own `Arc` allocations, which
    // the worker keeps alive for longer than this call, and are not part of the
    // worker's memory, so the `&mut Worker` made from the host record while `work`
    // runs does not alias them.
    work(unsafe { &*server }, unsafe { &*stats })
}

/// Puts the previous host record back, also when the work unwinds.
struct Restore(Option<Host>);

impl Drop for Restore {
    fn drop(&mut self) {
        HOST.set(self.0.take());
    }
}

/// Called by a script's instruction hook: once the script (started at `started`) has
/// run past `busy-reply-threshold`, serve what this thread's other clients sent, at
/// most once per [`SERVE_EVERY`].
pub fn serve_clients_while_busy(started: Instant) {
    // Taken for the length of the serving, so nothing served can re-enter it.
    let Some(mut host) = HOST.take() else {
        return;
    };
    // SAFETY: the host record exists only while `hosting` runs its work, which does
    // not touch the worker; this is the only reference to it for this call.
    let worker = unsafe { &mut *host.worker };
    let due = host
        .last_served
        .is_none_or(|at| at.elapsed() >= SERVE_EVERY);
    if due && started.elapsed() > worker.server().scripting.threshold() {
        worker.serve_while_busy();
        host.last_served = Some(Instant::now());
    }
    HOST.set(Some(host));
}
