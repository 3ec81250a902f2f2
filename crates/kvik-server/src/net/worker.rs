//! A worker thread: one `mio` poller over the listening sockets and the connections
//! dealt to this thread, plus its share of the periodic work (active expiry, idle
//! client timeouts).
//!
//! A connection never moves between threads once dealt (a thread that accepts one
//! out of turn hands it over at once, before it is a client). Other threads reach
//! this one only through its mailbox and waker (a dealt connection, CLIENT KILL,
//! CLIENT UNPAUSE, a blocked client's wake-up, shutdown).
//!
//! The loop also times out this thread's blocked clients: their deadlines sit in an
//! ordered set, and the poller never sleeps past the earliest one.
//!
//! A connection runs its commands checked out of the table ([`Worker::drive`]), so
//! that a long script it runs can serve the thread's other clients meanwhile
//! ([`super::busy`]).

use super::busy;
use super::conn::{Conn, Next, Reading, Resized};
use super::conns::Conns;
use super::stream::Stream;
use crate::client::{ClientInfo, ClientSnapshot, ClientState};
use crate::mailbox::WaitEnd;
use crate::mailbox::{Accepted, Message, WorkerHandle};
use crate::server::Server;
use crate::stats::ThreadStats;
use mio::event::Event;
use mio::net::{TcpListener, UnixListener};
use mio::{Events, Interest, Poll, Token};
use std::collections::{BTreeSet, VecDeque};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const WAKER: Token = Token(usize::MAX);
const UNIX_LISTENER: Token = Token(usize::MAX - 1);
const LISTENER_BASE: usize = usize::MAX - 2;
/// The `tls-port` listeners' tokens count down from here (below any number of
/// `bind` addresses the plain ones could take).
const TLS_LISTENER_BASE: usize = LISTENER_BASE - (1 << 16);

/// The share of a cron tick active expiry may use, in percent: Redis's 25%, plus 2%
/// for each step of `active-expire-effort` above 1.
fn expire_budget_percent(effort: u32) -> u32 {
    25 + 2 * effort.saturating_sub(1)
}

pub struct Worker {
    pub index: usize,
    server: Arc<Server>,
    poll: Poll,
    listeners: Vec<TcpListener>,
    /// The `tls-port` listening sockets.
    tls_listeners: Vec<TcpListener>,
    /// This thread's handle to the `unixsocket`, with its path.
    unix: Option<(UnixListener, Arc<str>)>,
    conns: Conns,
    /// Socket events polled but not handled yet. A queue rather than the poller's
    /// buffer, because a busy script serving the other clients must handle those the
    /// loop polled before it started, too (see [`super::busy`]).
    ready: VecDeque<Ready>,
    /// Connections whose events arrived while they were checked out (running a busy
    /// script that served the others): looked at again once they are back.
    missed_events: Vec<usize>,
    stats: Arc<ThreadStats>,
    /// Where the active expiry cycle resumes: (db, shard position).
    expire_cursor: crate::keyspace::ExpireCursor,
    /// What is left of this tick's active expiry budget, spent in slices of at most
    /// [`EXPIRE_SLICE`] between polls, so clients wait for one slice at most.
    expire_left: Duration,
    /// The budget's share of the tick, in percent: each slice is followed by a rest
    /// that keeps the cycle at that share of any stretch of time, so the budget is
    /// spread over the tick rather than spent in a burst at its start.
    expire_percent: u32,
    /// When the next slice may run (the rest after the last one ends).
    expire_next_slice: Instant,
    /// Expiry CPU time not yet counted in INFO's whole milliseconds.
    expire_cpu_us: u64,
    /// Deadlines of this thread's blocked clients: (unix ms, connection token).
    block_timers: BTreeSet<(u64, usize)>,
    /// Connections holding replies until their effects are written to the AOF
    /// (and fsynced with `appendfsync always`).
    aof_held: Vec<usize>,
    /// The defrag passes started when this thread last flushed its allocator cache.
    defrag_passes_seen: u64,
}

/// A socket event, as polled.
#[derive(Clone, Copy)]
struct Ready {
    token: Token,
    readable: bool,
    writable: bool,
    reading: Reading,
}

impl Ready {
    fn of(event: &Event, token: Token) -> Self {
        Ready {
            token,
            readable: event.is_readable(),
            writable: event.is_writable(),
            reading: if event.is_read_closed() {
                Reading::Drain
            } else {
                Reading::UntilShort
            },
        }
    }

    /// An event whose details were not kept: look at everything.
    fn unknown(token: Token) -> Self {
        Ready {
            token,
            readable: true,
            writable: true,
            reading: Reading::Drain,
        }
    }
}

/// Which port a listening socket serves.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Port {
    Plain,
    Tls,
}

impl Port {
    fn token(self, i: usize) -> Token {
        match self {
            Port::Plain => Token(LISTENER_BASE - i),
            Port::Tls => Token(TLS_LISTENER_BASE - i),
        }
    }
}

impl Worker {
    pub fn new(
        index: usize,
        server: Arc<Server>,
        poll: Poll,
        mut listeners: Vec<TcpListener>,
        mut tls_listeners: Vec<TcpListener>,
        mut unix: Option<(UnixListener, Arc<str>)>,
    ) -> io::Result<Self> {
        for (i, l) in listeners.iter_mut().enumerate() {
            poll.registry()
                .register(l, Port::Plain.token(i), Interest::READABLE)?;
        }
        for (i, l) in tls_listeners.iter_mut().enumerate() {
            poll.registry()
                .register(l, Port::Tls.token(i), Interest::READABLE)?;
        }
        if let Some((l, _)) = unix.as_mut() {
            poll.registry()
                .register(l, UNIX_LISTENER, Interest::READABLE)?;
        }
        let stats = server.thread_stats[index].clone();
        Ok(Worker {
            index,
            server,
            poll,
            listeners,
            tls_listeners,
            unix,
            conns: Conns::default(),
            ready: VecDeque::new(),
            missed_events: Vec::new(),
            stats,
            expire_cursor: Default::default(),
            expire_left: Duration::ZERO,
            expire_percent: expire_budget_percent(1),
            expire_next_slice: Instant::now(),
            expire_cpu_us: 0,
            block_timers: BTreeSet::new(),
            aof_held: Vec::new(),
            defrag_passes_seen: 0,
        })
    }

    /// Run until shutdown.
    pub fn run(mut self) {
        WorkerHandle::enter(self.index);
        let mut events = Events::with_capacity(1024);
        let mut next_cron = Instant::now();
        let mut woke = next_cron;
        loop {
            let period =
                Duration::from_millis(1000 / self.server.hot.hz.load(Ordering::Relaxed).max(1));
            let now = Instant::now();
            if now >= next_cron {
                self.cron(period);
                next_cron = now + period;
            }
            let mut timeout = next_cron.saturating_duration_since(Instant::now());
            // While clients are paused, wake often to resume them soon after the pause
            // ends (the per-connection check stays off the path when nobody paused).
            if self.server.pause.is_active() {
                timeout = timeout.min(Duration::from_millis(10));
            }
            if let Some(&(at, _)) = self.block_timers.first() {
                let left = at.saturating_sub(crate::hlc::unix_ms());
                timeout = timeout.min(Duration::from_millis(left));
            }
            // An eviction round that ran out of time goes on between polls (another
            // thread may be at it: look again in a millisecond).
            if self.server.memory.eviction_unfinished() {
                let env = self.server.key_env(&self.stats);
                let now = crate::hlc::unix_ms();
                if self.server.memory.continue_eviction(env, now) {
                    timeout = Duration::ZERO;
                } else {
                    timeout = timeout.min(Duration::from_millis(1));
                }
            }
            // An expiry cycle that ran out of its slice goes on between polls, in
            // slices with rests between them, until the tick's budget is spent or
            // nothing more is due.
            if !self.expire_left.is_zero() {
                if Instant::now() >= self.expire_next_slice {
                    self.active_expire_slice();
                }
                if !self.expire_left.is_zero() {
                    let rest = self
                        .expire_next_slice
                        .saturating_duration_since(Instant::now());
                    timeout = timeout.min(rest);
                }
            }
            self.write_aof_round();
            // What this thread sent itself (a publisher and its subscribers sharing
            // it, the invalidations its writes caused) leaves now, with the replies
            // of the round, not after a wake-up.
            loop {
                crate::tracking::before_sleep(&self.server.tracking_env());
                if !self.own_handle().has_mail() {
                    break;
                }
                if self.handle_mailbox() {
                    return;
                }
            }
            let busy = woke.elapsed().as_micros() as u64;
            self.stats.add(&self.stats.busy_usec, busy);
            let polled = self.poll.poll(&mut events, Some(timeout));
            woke = Instant::now();
            if let Err(e) = polled {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                crate::log_warning!("Event loop poll failed: {e}");
                return;
            }
            // Messages first: what another thread sent before this client's next
            // command arrived (a pub/sub message, a MONITOR line) goes out before that
            // command's reply.
            if self.queue_events(&events) && self.handle_mailbox() {
                return;
            }
            self.handle_ready();
            while let Some(key) = self.missed_events.pop() {
                self.on_conn_event(key, Ready::unknown(Token(key)));
            }
            self.time_out_blocked();
            if self.server.shutdown_requested.load(Ordering::Acquire) {
                return;
            }
        }
    }

    /// Queue the socket events of a poll; returns whether the waker fired (the
    /// mailbox has mail), which is the caller's business.
    fn queue_events(&mut self, events: &Events) -> bool {
        let mut woken = false;
        for event in events.iter() {
            match event.token() {
                WAKER => woken = true,
                token => self.ready.push_back(Ready::of(event, token)),
            }
        }
        woken
    }

    /// Handle the queued socket events: connections to accept, clients' sockets ready.
    fn handle_ready(&mut self) {
        while let Some(ready) = self.ready.pop_front() {
            match ready.token {
                UNIX_LISTENER => self.accept_unix(),
                t if t.0 > LISTENER_BASE - self.listeners.len() && t.0 <= LISTENER_BASE => {
                    self.accept_all(Port::Plain, LISTENER_BASE - t.0)
                }
                t if t.0 > TLS_LISTENER_BASE - self.tls_listeners.len()
                    && t.0 <= TLS_LISTENER_BASE =>
                {
                    self.accept_all(Port::Tls, TLS_LISTENER_BASE - t.0)
                }
                Token(key) => self.on_conn_event(key, ready),
            }
        }
    }

    pub(super) fn server(&self) -> &Arc<Server> {
        &self.server
    }

    pub(super) fn stats(&self) -> &Arc<ThreadStats> {
        &self.stats
    }

    /// Serve the other clients from inside a script of this thread that has run past
    /// `busy-reply-threshold` (see [`super::busy`]): whatever the sockets have now,
    /// without waiting, and the connections other threads dealt this one. The rest
    /// of the mailbox, timers and cron wait for the script to end.
    pub(super) fn serve_while_busy(&mut self) {
        let mut events = Events::with_capacity(256);
        if self.poll.poll(&mut events, Some(Duration::ZERO)).is_ok() {
            // The waker's mail waits: the loop reads the mailbox before it sleeps.
            self.queue_events(&events);
        }
        for accepted in self.own_handle().take_adopted() {
            self.accept(accepted);
        }
        self.handle_ready();
    }

    fn own_handle(&self) -> &WorkerHandle {
        &self.server.workers.get().expect("workers")[self.index]
    }

    fn handle_mailbox(&mut self) -> bool {
        let messages = std::mem::take(&mut *self.own_handle().mailbox.lock());
        // Connections that received pub/sub messages: written once, after all of them.
        let mut delivered = Vec::new();
        for m in messages {
            match m {
                Message::Deliver { bytes, targets } => {
                    self.append_output(&bytes, &targets, &mut delivered)
                }
                Message::Invalidate {
                    token,
                    client,
                    invalidation,
                } => self.invalidate(token, client, &invalidation, &mut delivered),
                Message::Unblocked {
                    token,
                    client,
                    reply,
                    end,
                } => self.wake(token, client, &reply, end),
                Message::AofReleased => self.flush_aof_held(),
                Message::Shutdown => return true,
                Message::KillFlagged => {
                    let doomed: Vec<usize> = self
                        .conns
                        .iter()
                        .filter(|(_, c)| c.state.info.killed.load(Ordering::Acquire))
                        .map(|(k, _)| k)
                        .collect();
                    for key in doomed {
                        self.close(key);
                    }
                }
                Message::Unpaused => self.resume_paused(),
                Message::ReplicaFeed => delivered.extend(
                    self.conns
                        .iter()
                        .filter(|(_, c)| c.state.is_replica)
                        .map(|(k, _)| k),
                ),
                Message::Listen(listeners) => self.listen_on(Port::Plain, &listeners),
                Message::ListenTls(listeners) => self.listen_on(Port::Tls, &listeners),
                Message::Adopt(accepted) => self.accept(accepted),
            }
        }
        delivered.sort_unstable();
        delivered.dedup();
        for token in delivered {
            let Some(conn) = self.conns.get_mut(token) else {
                continue;
            };
            let next = conn.flush(&self.server, &self.stats);
            self.settle(token, next);
        }
        false
    }

    /// Queue `bytes` (pub/sub messages, MONITOR lines) on each target connection that
    /// is still the client it was sent to; the tokens queued on go to `delivered`.
    fn append_output(
        &mut self,
        bytes: &[u8],
        targets: &[(usize, u64)],
        delivered: &mut Vec<usize>,
    ) {
        for &(token, client) in targets {
            match self.conns.get_mut(token) {
                Some(conn) if conn.state.id() == client => {
                    conn.out.raw(bytes);
                    delivered.push(token);
                }
                // Gone meanwhile (its slot may hold another client now): dropped.
                _ => {}
            }
        }
    }

    /// Tell the client at `token`, if it is still `client`, that keys it may cache
    /// changed; the token goes to `delivered` to be written.
    fn invalidate(
        &mut self,
        token: usize,
        client: u64,
        invalidation: &crate::mailbox::Invalidation,
        delivered: &mut Vec<usize>,
    ) {
        if let Some(conn) = self.conns.get_mut(token) {
            if conn.state.id() == client {
                crate::tracking::receive(
                    &self.server.tracking_env(),
                    &mut conn.state,
                    &mut conn.out,
                    invalidation,
                );
                delivered.push(token);
            }
        }
    }

    /// Replace the listening sockets of a port (CONFIG SET port / tls-port / bind).
    fn listen_on(&mut self, port: Port, listeners: &[std::net::TcpListener]) {
        let mine = match port {
            Port::Plain => &mut self.listeners,
            Port::Tls => &mut self.tls_listeners,
        };
        for mut old in std::mem::take(mine) {
            let _ = self.poll.registry().deregister(&mut old);
        }
        for (i, l) in listeners.iter().enumerate() {
            let handle = l
                .try_clone()
                .and_then(|l| l.set_nonblocking(true).map(|_| l));
            match handle {
                Ok(l) => {
                    let mut l = TcpListener::from_std(l);
                    if self
                        .poll
                        .registry()
                        .register(&mut l, port.token(i), Interest::READABLE)
                        .is_ok()
                    {
                        match port {
                            Port::Plain => self.listeners.push(l),
                            Port::Tls => self.tls_listeners.push(l),
                        }
                    }
                }
                Err(e) => crate::log_warning!("Listening on a new address failed: {e}"),
            }
        }
    }

    fn accept_all(&mut self, port: Port, listener: usize) {
        // The configuration in force now: CONFIG SET may replace it meanwhile.
        let tls = match port {
            Port::Plain => None,
            Port::Tls => match self.server.tls.server_config() {
                Some(config) => Some(config),
                None => {
                    crate::log_warning!("Accepting on the tls-port with no TLS configured");
                    return;
                }
            },
        };
        self.accept_each(|w| {
            let listeners = match port {
                Port::Plain => &w.listeners,
                Port::Tls => &w.tls_listeners,
            };
            let (stream, addr) = listeners[listener].accept()?;
            // mio's stream is registered nowhere yet: as a std stream it travels
            // freely.
            let stream = std::net::TcpStream::from(std::os::fd::OwnedFd::from(stream));
            Ok(match &tls {
                None => Accepted::Tcp(stream, addr),
                Some(config) => Accepted::Tls(stream, addr, config.clone()),
            })
        });
    }

    fn accept_unix(&mut self) {
        self.accept_each(|w| {
            let Some((listener, path)) = &w.unix else {
                return Err(io::ErrorKind::WouldBlock.into());
            };
            let (stream, _) = listener.accept()?;
            let stream = std::os::unix::net::UnixStream::from(std::os::fd::OwnedFd::from(stream));
            Ok(Accepted::Unix(stream, path.clone()))
        });
    }

    /// Deal every connection waiting on a listening socket, `next` accepting one.
    fn accept_each(&mut self, next: impl Fn(&Self) -> io::Result<Accepted>) {
        loop {
            match next(self) {
                Ok(accepted) => self.deal(accepted),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    crate::log_warning!("Accepting client connection: {e}");
                    return;
                }
            }
        }
    }

    /// Give a connection just accepted to the thread whose turn it is.
    fn deal(&mut self, accepted: Accepted) {
        let turn = self.server.take_accept_turn();
        if turn == self.index {
            return self.accept(accepted);
        }
        self.server.workers.get().expect("workers")[turn].send(Message::Adopt(accepted));
    }

    /// Make a connection this thread's client.
    fn accept(&mut self, accepted: Accepted) {
        let server = &self.server;
        self.stats.add(&self.stats.connections_received, 1);
        let (mut stream, endpoint) = Stream::adopt(accepted);
        let max = server.hot.maxclients.load(Ordering::Relaxed);
        if !server.clients.try_reserve(max) {
            let _ = stream.write_all(b"-ERR max number of clients reached\r\n");
            self.stats.add(&self.stats.rejected_connections, 1);
            crate::log_verbose!(
                "Error registering fd event for the new client: max number of clients reached"
            );
            return;
        }
        let (protected, keepalive) = {
            let c = server.config.read();
            (c.protected_mode, c.tcp_keepalive)
        };
        if protected && server.acl.default_is_nopass() && !endpoint.local {
            let _ = stream.write_all(PROTECTED_MODE_DENIED);
            server.clients.release_reservation();
            return;
        }
        stream.set_tcp_options(keepalive);
        let id = server.clients.next_id();
        let now = crate::hlc::unix_ms();
        let info = Arc::new(ClientInfo {
            id,
            worker: self.index,
            // The slot the connection is inserted into below.
            token: self.conns.vacant_key(),
            addr: endpoint.addr,
            laddr: endpoint.laddr,
            unix_socket: endpoint.unix,
            fd: stream.as_raw_fd(),
            created_ms: now,
            killed: Default::default(),
            snapshot: parking_lot::Mutex::new(ClientSnapshot {
                last_interaction_ms: now,
                last_command: "NULL",
                resp: 2,
                user: "default".into(),
                ..Default::default()
            }),
        });
        let mut state = ClientState::new(info.clone(), !server.acl.default_needs_auth());
        state.acl = server.acl.default_session();
        let key = self.conns.vacant_key();
        let mut conn = Conn::new(stream, state);
        if let Err(e) =
            self.poll
                .registry()
                .register(&mut conn.stream, Token(key), Interest::READABLE)
        {
            crate::log_warning!("Error registering fd event for the new client: {e}");
            server.clients.release_reservation();
            return;
        }
        let inserted = self.conns.insert(conn);
        debug_assert_eq!(inserted, key, "the token registered is the slot taken");
        server.clients.add(info);
    }

    fn on_conn_event(&mut self, key: usize, ready: Ready) {
        if self.conns.is_checked_out(key) {
            self.missed_events.push(key);
            return;
        }
        self.drive(key, |conn, server, stats| {
            let mut next = Next::Keep {
                wants_write: conn.write_registered,
            };
            if ready.writable {
                next = conn.flush(server, stats);
            }
            if ready.readable && next != Next::Close && !conn.is_paused() {
                next = conn.on_readable(server, stats, ready.reading);
            }
            next
        });
    }

    /// Run `work` (which may run commands) on the connection at `key`, checked out of
    /// the table while it runs and with this worker as the thread's host, so that a
    /// long script it runs can serve the other clients; then apply the outcome.
    fn drive(&mut self, key: usize, work: impl FnOnce(&mut Conn, &Server, &ThreadStats) -> Next) {
        let Some(mut conn) = self.conns.check_out(key) else {
            return;
        };
        let next = busy::hosting(self, |server, stats| work(&mut conn, server, stats));
        self.conns.check_in(key, conn);
        self.settle(key, next);
    }

    /// Apply the outcome of an event to a connection: close it, or (un)register its
    /// interest in writability.
    fn settle(&mut self, key: usize, next: Next) {
        let Some(conn) = self.conns.get_mut(key) else {
            return;
        };
        if let Some(blocked) = conn.state.blocked.as_mut() {
            if let (Some(at), false) = (blocked.deadline, blocked.timer_armed) {
                self.block_timers.insert((at, key));
                blocked.timer_armed = true;
            }
        }
        if let Some(pos) = conn.aof_hold {
            if !conn.aof_listed {
                conn.aof_listed = true;
                self.aof_held.push(key);
            }
            self.server.aof.wait_for(self.index, pos);
        }
        let killed = conn.state.info.killed.load(Ordering::Acquire);
        match next {
            Next::Close => self.close(key),
            _ if killed => self.close(key),
            Next::Keep { wants_write } => {
                if wants_write != conn.write_registered {
                    let interest = if wants_write {
                        Interest::READABLE | Interest::WRITABLE
                    } else {
                        Interest::READABLE
                    };
                    if self
                        .poll
                        .registry()
                        .reregister(&mut conn.stream, Token(key), interest)
                        .is_err()
                    {
                        self.close(key);
                        return;
                    }
                    conn.write_registered = wants_write;
                }
            }
        }
    }

    fn close(&mut self, key: usize) {
        let Some(mut conn) = self.conns.remove(key) else {
            return;
        };
        let _ = self.poll.registry().deregister(&mut conn.stream);
        conn.set_paused(&self.server, false);
        crate::commands::pubsub::leave(&self.server, &mut conn.state);
        crate::tracking::disable(&self.server.tracking_env(), &mut conn.state);
        if let Some(blocked) = conn.state.blocked.take() {
            // Served meanwhile or not, nobody may serve it any more.
            self.server.blocking.end_wait(&blocked.waiter);
            if let Some(at) = blocked.deadline {
                self.block_timers.remove(&(at, key));
            }
        }
        if conn.state.is_replica {
            let repl = &self.server.replication;
            repl.replicas.gone(conn.state.id(), repl);
        }
        self.server.clients.remove(conn.state.id());
    }

    /// Before the loop sleeps: write the AOF's buffer (every client's effects of
    /// the round at once) and the replies that waited only for that; those that
    /// wait for an fsync go once this thread made it (when no other was at one),
    /// or when the thread that made it says.
    fn write_aof_round(&mut self) {
        let aof = &self.server.aof;
        if aof.has_unwritten() {
            // A failure is the writer thread's to retry; the replies stay held.
            let _ = aof.write_out();
        }
        if !self.aof_held.is_empty() {
            aof.sync_for_held_replies();
            self.flush_aof_held();
        }
    }

    /// The AOF released held replies: write those of the connections holding them
    /// (those still waiting for a later position are held again by `settle`).
    fn flush_aof_held(&mut self) {
        for key in std::mem::take(&mut self.aof_held) {
            if self.conns.is_checked_out(key) {
                // Running a script: looked at again once it is back.
                self.aof_held.push(key);
                continue;
            }
            let Some(conn) = self.conns.get_mut(key) else {
                continue;
            };
            conn.aof_listed = false;
            if conn.aof_hold.is_none() {
                continue;
            }
            let next = conn.flush(&self.server, &self.stats);
            self.settle(key, next);
        }
    }

    /// Another thread ended the wait of the client at `token` with `reply`.
    fn wake(&mut self, token: usize, client: u64, reply: &[u8], end: WaitEnd) {
        let Some(conn) = self.conns.get_mut(token) else {
            return;
        };
        // A message for a client that has gone meanwhile (its slot reused) is dropped.
        if conn.state.id() != client {
            return;
        }
        if let Some(at) = conn.state.blocked.as_ref().and_then(|b| b.deadline) {
            self.block_timers.remove(&(at, token));
        }
        self.finish_wait(token, reply, end);
    }

    /// Give a blocked client its reply, then run the commands that waited behind the
    /// blocking one and write everything.
    fn finish_wait(&mut self, token: usize, reply: &[u8], end: WaitEnd) {
        self.drive(token, |conn, server, stats| {
            conn.unblock(server, stats, reply, end);
            conn.run_commands(server, stats);
            conn.flush(server, stats)
        });
    }

    /// Answer the blocked clients whose deadline has passed with the timeout reply.
    fn time_out_blocked(&mut self) {
        let now = crate::hlc::unix_ms();
        while let Some(&(at, token)) = self.block_timers.first() {
            if at > now {
                return;
            }
            self.block_timers.pop_first();
            let Some(conn) = self.conns.get(token) else {
                continue;
            };
            let Some(blocked) = conn
                .state
                .blocked
                .as_ref()
                .filter(|b| b.deadline == Some(at))
            else {
                continue;
            };
            // Losing the claim means it is being served: its reply is on the way.
            if self.server.blocking.end_wait(&blocked.waiter) {
                let reply = blocked.waiter.action.timeout_reply(conn.out.protocol);
                self.finish_wait(token, &reply, WaitEnd::TIMED_OUT);
            }
        }
    }

    /// Run the commands of clients that were waiting for CLIENT UNPAUSE.
    fn resume_paused(&mut self) {
        let waiting: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, c)| c.is_paused())
            .map(|(k, _)| k)
            .collect();
        for key in waiting {
            self.drive(key, |conn, server, stats| {
                conn.set_paused(server, false);
                conn.run_commands(server, stats);
                if conn.is_paused() {
                    Next::Keep {
                        wants_write: conn.write_registered,
                    }
                } else {
                    conn.on_readable(server, stats, Reading::Drain)
                }
            });
        }
    }

    /// Periodic work, `hz` times a second.
    fn cron(&mut self, period: Duration) {
        if self.server.debug.cron_paused.load(Ordering::Relaxed) {
            return;
        }
        if self.conns.iter().any(|(_, c)| c.is_paused()) {
            self.resume_paused();
        }
        self.close_idle_clients();
        if self.index == 0 {
            self.adapt_hz();
            self.active_defrag();
            crate::commands::keys::cron::run_due(&self.server, &self.stats);
        }
        let defrag_passes = self.server.defrag.passes();
        if self.defrag_passes_seen != defrag_passes {
            self.defrag_passes_seen = defrag_passes;
            crate::defrag::flush_thread_cache();
        }
        let now = crate::hlc::unix_ms();
        for (_, conn) in self.conns.iter_mut() {
            conn.release_idle_buffer(now);
            match conn.resize_reply_buffer(&self.server, now) {
                Some(Resized::Shrunk) => self.stats.add(&self.stats.reply_buffer_shrinks, 1),
                Some(Resized::Expanded) => self.stats.add(&self.stats.reply_buffer_expands, 1),
                None => {}
            }
        }
        // The chosen clients close when their threads read the mailbox (this one
        // included, before it next sleeps).
        self.server.evict_clients_over_limit(&self.stats);
        crate::scripting::release_stale(&self.server.scripting);
        // A half-loaded dataset is not expired (the loader holds the shards), as
        // Redis's cron does not expire while loading.
        let active_expire = self.server.hot.active_expire.load(Ordering::Relaxed);
        if active_expire && !self.server.loading.is_active() {
            let effort = self.server.config.read().active_expire_effort;
            self.expire_percent = expire_budget_percent(effort);
            self.expire_left = period * self.expire_percent / 100;
            self.active_expire_slice();
        }
    }

    /// `activedefrag`: one slice of the walk, on one thread (the moves take each
    /// shard's lock, as a command would).
    fn active_defrag(&self) {
        let settings = crate::defrag::Settings::from_config(&self.server.config.read());
        let hz = self.server.hot.hz.load(Ordering::Relaxed);
        self.server
            .defrag
            .cycle(&self.server.keyspace, &settings, hz);
    }

    /// `dynamic-hz`: the tick rate every thread uses follows the number of clients
    /// (one thread sets it for all, as Redis's single cron does).
    fn adapt_hz(&self) {
        let (dynamic, configured) = {
            let c = self.server.config.read();
            (c.dynamic_hz, (c.hz as u64).clamp(1, MAX_HZ))
        };
        let hz = if dynamic {
            dynamic_hz(configured, self.server.clients.connected() as u64)
        } else {
            configured
        };
        self.server.hot.hz.store(hz, Ordering::Relaxed);
    }

    fn close_idle_clients(&mut self) {
        let timeout = self.server.hot.timeout_secs.load(Ordering::Relaxed);
        if timeout == 0 {
            return;
        }
        let now = crate::hlc::unix_ms();
        let idle: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, c)| c.state.blocked.is_none() && c.idle_ms(now) > timeout * 1000)
            .map(|(k, _)| k)
            .collect();
        for key in idle {
            crate::log_verbose!("Closing idle client");
            self.close(key);
        }
    }

    /// Delete due keys in this thread's share of the shards for one slice of what
    /// is left of the tick's budget (none left once nothing more is due, or while
    /// loading).
    fn active_expire_slice(&mut self) {
        if self.server.loading.is_active() {
            self.expire_left = Duration::ZERO;
            return;
        }
        let started = Instant::now();
        let server = &*self.server;
        let env = server.key_env(&self.stats);
        let share = (self.index, server.worker_count());
        let slice = self.expire_left.min(EXPIRE_SLICE);
        let more =
            crate::keyspace::active_expire_cycle(&env, share, &mut self.expire_cursor, slice);
        let took = started.elapsed();
        self.expire_next_slice =
            Instant::now() + took * (100 - self.expire_percent) / self.expire_percent;
        self.expire_left = match more {
            true => self.expire_left.saturating_sub(took),
            false => Duration::ZERO,
        };
        self.expire_cpu_us += took.as_micros() as u64;
        self.stats
            .add(&self.stats.expire_cycle_cpu_ms, self.expire_cpu_us / 1000);
        self.expire_cpu_us %= 1000;
        server
            .latency
            .note(crate::latency::Event::ExpireCycle, took);
    }
}

/// The longest the active expiry cycle keeps a thread from its clients at a time:
/// a tick's budget (a quarter of the tick at the default effort) is spent in slices
/// this long, each followed by a rest three times as long (at that effort) in which
/// the thread serves its clients. A request meets one slice at most, so a mass
/// expiry adds at most this much to its latency (Redis's fast cycle may take 1 ms,
/// its slow cycle 25 ms at once).
const EXPIRE_SLICE: Duration = Duration::from_micros(250);

/// The highest tick rate (Redis's CONFIG_MAX_HZ).
const MAX_HZ: u64 = 500;

/// Redis's dynamic hz: the configured rate doubled while there are more than 200
/// clients per tick, up to [`MAX_HZ`].
fn dynamic_hz(configured: u64, clients: u64) -> u64 {
    const CLIENTS_PER_TICK: u64 = 200;
    let mut hz = configured.max(1);
    while clients / hz > CLIENTS_PER_TICK {
        hz *= 2;
        if hz > MAX_HZ {
            return MAX_HZ;
        }
    }
    hz
}

const PROTECTED_MODE_DENIED: &[u8] = b"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";
