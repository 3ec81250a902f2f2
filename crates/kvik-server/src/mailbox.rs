//! The worker mailboxes: how one thread reaches another.
//!
//! Each worker thread owns its connections and is the only one to touch them. What
//! another thread needs done there (a blocked client's reply, a pub/sub message, an
//! invalidation, CLIENT KILL, a connection dealt to it) travels as a [`Message`] into
//! the worker's mailbox, and the worker's waker interrupts its poll. This module is a
//! leaf: the engines that post (blocking, pub/sub, tracking) import it, and it imports
//! none of them, so the messages carry only plain data.

use parking_lot::Mutex;
use std::sync::Arc;

/// A message for a worker thread, delivered through its mailbox and waker.
#[derive(Debug)]
pub enum Message {
    /// A connection another thread accepted, handed to this one because it is this
    /// thread's turn (see `Server::take_accept_turn`): register it as a client here.
    Adopt(Accepted),
    /// Look for clients whose kill flag is set and close them.
    KillFlagged,
    /// Stop the event loop.
    Shutdown,
    /// Clients were unpaused: resume those waiting.
    Unpaused,
    /// The wait of a blocked client was ended by another thread (served, CLIENT
    /// UNBLOCK): write `reply` to the connection at `token`, if it is still client
    /// `client`'s, and resume its commands. `end` says how the wait ended.
    Unblocked {
        token: usize,
        client: u64,
        reply: Vec<u8>,
        end: WaitEnd,
    },
    /// CONFIG SET port/bind bound new listening sockets: accept on these from now on
    /// (each worker registers its own handle) and close the old ones.
    Listen(Arc<Vec<std::net::TcpListener>>),
    /// The same for the `tls-port` listening sockets (CONFIG SET tls-port/bind).
    ListenTls(Arc<Vec<std::net::TcpListener>>),
    /// Pub/sub messages and MONITOR lines: append `bytes` (already encoded in the
    /// targets' protocol) to the reply buffer of each (token, client id) in `targets`
    /// that is still connected, and write them.
    Deliver {
        bytes: Arc<[u8]>,
        targets: Vec<(usize, u64)>,
    },
    /// A replica feed of this thread has bytes to send (the replication stream
    /// grew, or a full sync's RDB has a new chunk): write from the feeds.
    ReplicaFeed,
    /// The AOF is fsynced (or written, as `appendfsync` requires) past a position
    /// some of this thread's connections hold their replies for: write those now.
    AofReleased,
    /// Client-side caching: tell the connection at `token`, if it is still client
    /// `client`'s, that keys it may cache changed .
    Invalidate {
        token: usize,
        client: u64,
        invalidation: Arc<Invalidation>,
    },
}

/// A connection just accepted, not yet any thread's client: plain std sockets, so it
/// can travel to the thread whose turn it is.
#[derive(Debug)]
pub enum Accepted {
    /// From this peer address.
    Tcp(std::net::TcpStream, std::net::SocketAddr),
    /// On the `tls-port`, from this peer address, to handshake with this
    /// configuration (the one in force when it was accepted).
    Tls(
        std::net::TcpStream,
        std::net::SocketAddr,
        Arc<rustls::ServerConfig>,
    ),
    /// Through the `unixsocket` at this path.
    Unix(std::os::unix::net::UnixStream, Arc<str>),
}

thread_local! {
    /// The index of the worker thread running here (`usize::MAX` elsewhere).
    static OWN_WORKER: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

/// How to reach a worker thread from another one.
pub struct WorkerHandle {
    pub index: usize,
    pub mailbox: Mutex<Vec<Message>>,
    pub waker: mio::Waker,
}

impl WorkerHandle {
    /// Mark the calling thread as worker `index` (see [`WorkerHandle::send`]).
    pub fn enter(index: usize) {
        OWN_WORKER.with(|w| w.set(index));
    }

    pub fn send(&self, message: Message) {
        let mut mailbox = self.mailbox.lock();
        let was_empty = mailbox.is_empty();
        mailbox.push(message);
        drop(mailbox);
        // The worker empties the whole mailbox per wake-up: a message joining others
        // that are still waiting rides on the wake-up the first of them sent, which
        // spares a publisher a syscall per message. A worker writing to its own
        // mailbox needs none either: it reads it before it next sleeps.
        if was_empty && OWN_WORKER.with(|w| w.get()) != self.index {
            // A failed wake means the loop is gone; nothing more to do.
            let _ = self.waker.wake();
        }
    }

    /// Take the connections dealt to this thread out of its mailbox, leaving the
    /// other messages in their order.
    pub fn take_adopted(&self) -> Vec<Accepted> {
        let mut mailbox = self.mailbox.lock();
        if !mailbox.iter().any(|m| matches!(m, Message::Adopt(..))) {
            return Vec::new();
        }
        let mut adopted = Vec::new();
        for message in std::mem::take(&mut *mailbox) {
            match message {
                Message::Adopt(accepted) => adopted.push(accepted),
                other => mailbox.push(other),
            }
        }
        adopted
    }

    /// Messages are waiting.
    pub fn has_mail(&self) -> bool {
        !self.mailbox.lock().is_empty()
    }
}

/// How a wait ended, for counting the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitEnd {
    /// The command ran to its end; otherwise it timed out or CLIENT UNBLOCK ended it.
    pub served: bool,
    /// Its reply is an error.
    pub failed: bool,
}

impl WaitEnd {
    /// Ended by its timeout, or by CLIENT UNBLOCK with the timeout's reply.
    pub const TIMED_OUT: WaitEnd = WaitEnd {
        served: false,
        failed: false,
    };
}

/// One invalidation message's keys; `None` is a flush's "every key" (a null).
pub type Keys = Option<Vec<Vec<u8>>>;

/// What a tracking client's worker is told to tell it (client-side caching).
#[derive(Debug)]
pub enum Invalidation {
    /// Keys it read (default mode), one message each, or `None`: a flush, which
    /// every tracking client hears.
    Read(Vec<Option<Vec<u8>>>),
    /// Keys written under one of its prefixes (BCAST), in one message, each with the
    /// id of the client whose command wrote it (0: none, an expiry), for NOLOOP.
    Broadcast(Vec<(Vec<u8>, u64)>),
    /// Forwarded to the client a tracking client redirects to: the messages the
    /// tracking client's settings let through.
    Redirected(Vec<Keys>),
}
