//! Networking: listening sockets and the worker threads' event loops.
//!
//! Owns sockets, buffers and the threads that drive them. Must not interpret commands
//! (that is [`crate::commands`]) or touch keys directly.

mod busy;
mod conn;
mod conns;
mod stream;
pub mod worker;

pub use busy::serve_clients_while_busy;

use crate::mailbox::WorkerHandle;
use crate::server::Server;
use mio::Poll;
use std::io;
use std::sync::Arc;
use std::thread::JoinHandle;

/// The `unixsocket` listening socket and its path.
pub type UnixSocket = (std::os::unix::net::UnixListener, Arc<str>);

/// The bound TCP sockets: those of `port` and those of `tls-port`.
pub struct TcpListeners {
    pub plain: Vec<std::net::TcpListener>,
    pub tls: Vec<std::net::TcpListener>,
}

/// Start `server.worker_count()` event-loop threads over the bound sockets: the TCP
/// ones (plain and TLS) and the Unix one, which every thread accepts on alike.
pub fn start_workers(
    server: &Arc<Server>,
    listeners: &TcpListeners,
    unix: Option<&UnixSocket>,
    affinity: bool,
) -> io::Result<Vec<JoinHandle<()>>> {
    crate::scripting::set_serve_while_busy(serve_clients_while_busy);
    let count = server.worker_count();
    let mut polls = Vec::with_capacity(count);
    let mut handles = Vec::with_capacity(count);
    for index in 0..count {
        let poll = Poll::new()?;
        let waker = mio::Waker::new(poll.registry(), worker::WAKER)?;
        handles.push(WorkerHandle {
            index,
            mailbox: Default::default(),
            waker,
        });
        polls.push(poll);
    }
    if server.workers.set(handles).is_err() {
        return Err(io::Error::other("workers already started"));
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpulist = server.config.read().server_cpulist.clone();
    let mut threads = Vec::with_capacity(count);
    for (index, poll) in polls.into_iter().enumerate() {
        let mine = handles_of(&listeners.plain)?;
        let mine_tls = handles_of(&listeners.tls)?;
        let unix = unix
            .map(|(l, path)| {
                let l = l.try_clone()?;
                l.set_nonblocking(true)?;
                Ok::<_, io::Error>((mio::net::UnixListener::from_std(l), path.clone()))
            })
            .transpose()?;
        let w = worker::Worker::new(index, server.clone(), poll, mine, mine_tls, unix)?;
        let cpulist = cpulist.clone();
        let t = std::thread::Builder::new()
            .name(format!("kvik-worker-{index}"))
            .spawn(move || {
                if affinity {
                    pin_to_cpu(index % cpus);
                } else {
                    crate::process::run_on_cpus(&cpulist);
                }
                w.run()
            })?;
        threads.push(t);
    }
    Ok(threads)
}

/// This thread's own non-blocking handles to listening sockets.
fn handles_of(listeners: &[std::net::TcpListener]) -> io::Result<Vec<mio::net::TcpListener>> {
    listeners
        .iter()
        .map(|l| {
            let l = l.try_clone()?;
            l.set_nonblocking(true)?;
            Ok(mio::net::TcpListener::from_std(l))
        })
        .collect()
}

/// Pin the calling thread to one CPU (`server-thread-affinity yes`).
fn pin_to_cpu(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; sched_setaffinity only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}
