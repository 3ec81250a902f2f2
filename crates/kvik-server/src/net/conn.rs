//! One client connection: its socket, read buffer, parser, reply buffer and state.
//!
//! Reading drains the socket (the poller is edge-triggered), parsing and running each
//! complete command as bytes arrive; every reply of the batch goes into one buffer that
//! leaves in a single write, so a pipeline of N commands costs one read and one write.
//!
//! A client waiting in a blocking command keeps being read (so a disconnect is seen
//! at once) but runs nothing more until the wait ends.

use super::stream::Stream;
use crate::client::{ClientState, QueryBufferUsage};
use crate::commands;
use crate::mailbox::WaitEnd;
use crate::replication::master::{Feed, Filled};
use crate::server::Server;
use crate::stats::ThreadStats;
use kvik_resp::{Limits, Parsed, ReplyWriter, RequestParser};
use smallvec::SmallVec;
use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Bytes read per `read` call when nothing larger is expected.
const READ_CHUNK: usize = 16 * 1024;
/// How long a connection stays idle before its read buffer is freed (Redis frees an
/// idle client's query buffer after two seconds).
const IDLE_BUFFER_MS: u64 = 2000;
/// A replica's connection takes at most this much from its feed at a time, and
/// only once what it took before is nearly written.
const FEED_BATCH: usize = 1 << 20;
/// Feed batches written in one go before the worker serves its other clients.
const FEED_ROUNDS: usize = 16;
/// Reply buffers larger than this are released once written, not kept for reuse.
const KEEP_REPLY_CAPACITY: usize = 64 * 1024;
/// The smallest reply buffer the cron shrinks an idle client's to, and the largest
/// it grows one to (Redis's PROTO_REPLY_MIN_BYTES and PROTO_REPLY_CHUNK_BYTES).
const REPLY_MIN_BYTES: usize = 1024;
const REPLY_CHUNK_BYTES: usize = 16 * 1024;

/// How far to read when a connection's socket is readable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Until the socket has nothing more (`EAGAIN`): the peer closed its side (the
    /// event that said so will not come again), or what the event said is not known.
    Drain,
    /// Stop after a read that left room in the buffer: the socket was empty then, and
    /// data arriving later raises a new event (the poller is edge-triggered, and each
    /// arrival re-arms it). Saves a read call per request at pipeline depth 1.
    UntilShort,
}

/// What the worker should do with a connection after an event.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// Keep it; `wants_write` says whether replies are still pending.
    Keep {
        wants_write: bool,
    },
    Close,
}

pub struct Conn {
    pub stream: Stream,
    /// Read buffer; bytes `..filled` are data (from the start of an unparsed command).
    buf: Vec<u8>,
    filled: usize,
    parser: RequestParser,
    pub out: ReplyWriter,
    /// Bytes of `out.buf` already written to the socket.
    written: usize,
    pub state: ClientState,
    /// A command is waiting for CLIENT UNPAUSE before it can run.
    paused: bool,
    /// WRITABLE interest is registered.
    pub write_registered: bool,
    /// Unix ms since which pending output has stayed over the soft limit of the
    /// client's class (`client-output-buffer-limit`).
    over_soft_limit_since: Option<u64>,
    /// A replica's output (after SYNC / PSYNC), found once it asked.
    feed: Option<Arc<Feed>>,
    /// The replies wait until the AOF is written (fsynced with `appendfsync
    /// always`) up to here: the position after the effects of this client's
    /// commands.
    pub aof_hold: Option<u64>,
    /// The worker has this connection in its list of those holding replies.
    pub aof_listed: bool,
    /// The most reply bytes the buffer held at once since `reply_peak_reset_at`
    /// (CLIENT LIST's `rbp`), which the cron sizes the buffer by.
    reply_peak: usize,
    reply_peak_reset_at: u64,
}

/// What the cron did to a reply buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resized {
    Shrunk,
    Expanded,
}

impl Conn {
    pub fn new(stream: Stream, state: ClientState) -> Self {
        Conn {
            stream,
            buf: vec![0; READ_CHUNK],
            filled: 0,
            parser: RequestParser::new(),
            out: ReplyWriter::default(),
            written: 0,
            state,
            paused: false,
            write_registered: false,
            over_soft_limit_since: None,
            feed: None,
            aof_hold: None,
            aof_listed: false,
            reply_peak: 0,
            reply_peak_reset_at: crate::hlc::unix_ms(),
        }
    }

    /// The socket is readable: read what it has (see [`Reading`]), run every complete
    /// command, write.
    pub fn on_readable(&mut self, server: &Server, stats: &ThreadStats, reading: Reading) -> Next {
        loop {
            if self.filled == self.buf.len() {
                // An idle connection holds no buffer at all (see `release_idle_buffer`).
                let grown = (self.buf.len() * 2).max(READ_CHUNK);
                self.buf.resize(grown, 0);
            }
            let room = self.buf.len() - self.filled;
            match self.stream.read(&mut self.buf[self.filled..]) {
                Ok(0) => {
                    // The peer is done sending, maybe right behind its last command
                    // (`printf 'SET k v\r\n' | nc -q0 ...`): its replies still go out,
                    // as far as the socket takes them now (unless they wait for
                    // the AOF).
                    if self.releases_replies(server) {
                        let _ = self.write_pending(stats);
                    }
                    return Next::Close;
                }
                Ok(n) => {
                    stats.add(&stats.net_input_bytes, n as u64);
                    self.filled += n;
                    if self.filled as u64
                        > server.hot.client_query_buffer_limit.load(Ordering::Relaxed)
                    {
                        crate::log_warning!(
                            "Closing client that reached max query buffer length: id={} addr={} (qbuf initial bytes: {:?})",
                            self.state.id(),
                            self.state.info.addr,
                            String::from_utf8_lossy(&self.buf[..self.filled.min(64)]));
                        return Next::Close;
                    }
                    self.run_commands(server, stats);
                    if self.state.close_after_reply || (reading == Reading::UntilShort && n < room)
                    {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return Next::Close,
            }
        }
        self.flush(server, stats)
    }

    /// Run every complete command in the read buffer.
    pub fn run_commands(&mut self, server: &Server, stats: &ThreadStats) {
        let max_bulk_len = server.hot.proto_max_bulk_len.load(Ordering::Relaxed) as i64;
        // One clock reading for the batch: commands read in one pass run "at once".
        let now_ms = crate::hlc::unix_ms();
        let mut start = 0;
        let mut grow_to = 0;
        let aof_before = server.aof.is_on().then(crate::aof::appended_here);
        self.bound_replies(server);
        while start < self.filled
            && !self.out.overflowed()
            && !self.state.close_after_reply
            && !self.paused
            && self.state.blocked.is_none()
        {
            let data = &self.buf[start..self.filled];
            // Re-read per command: an AUTH earlier in the batch lifts the limits.
            let limits = Limits {
                max_bulk_len,
                authenticated: self.state.authenticated,
            };
            match self.parser.parse(data, limits) {
                Ok(Parsed::Command { consumed }) => {
                    let args: SmallVec<[&[u8]; 8]> = self.parser.args(data).collect();
                    if commands::held_by_pause(server, &self.state, &args, now_ms) {
                        // Run it again from scratch once clients are unpaused.
                        drop(args);
                        self.set_paused(server, true);
                        self.parser = RequestParser::new();
                        break;
                    }
                    self.state.query_buffer = QueryBufferUsage {
                        used: self.filled - start,
                        free: self.buf.len() - self.filled,
                    };
                    commands::call(server, stats, &mut self.state, &mut self.out, &args, now_ms);
                    start += consumed;
                }
                Ok(Parsed::Skip { consumed }) => start += consumed,
                Ok(Parsed::Incomplete { hint }) => {
                    grow_to = (self.filled - start) + hint;
                    break;
                }
                Err(e) => {
                    crate::log_verbose!(
                        "Protocol error ({}) from client: id={} addr={}",
                        e.0,
                        self.state.id(),
                        self.state.info.addr
                    );
                    commands::write_error(server, stats, &mut self.out, &format!("ERR {e}"));
                    self.state.close_after_reply = true;
                    start = self.filled;
                }
            }
        }
        if let Some(before) = aof_before {
            self.hold_for_aof(before);
        }
        // Only commands' replies are bounded while built; messages delivered later
        // are checked when they are written (`over_output_limit`).
        self.out.limit = 0;
        self.buf.copy_within(start..self.filled, 0);
        self.filled -= start;
        if grow_to > self.buf.len() {
            // Grow once for a large argument instead of doubling repeatedly.
            self.buf.resize(grow_to, 0);
        }
        if self.filled == 0 && self.buf.len() > 4 * READ_CHUNK {
            self.buf = vec![0; READ_CHUNK];
        }
    }

    /// The wait of the blocking command this client is in has ended with `reply`:
    /// queue the reply (unless the client turned replies off before it blocked) and
    /// count the call; a served call slow enough goes to the slow log. A timeout is
    /// not logged, as in Redis; nor is CLIENT UNBLOCK (Redis 7.0 logs it as an entry
    /// without arguments). The caller then runs the commands that waited behind it.
    pub fn unblock(&mut self, server: &Server, stats: &ThreadStats, reply: &[u8], end: WaitEnd) {
        let Some(blocked) = self.state.blocked.take() else {
            return;
        };
        // The command that served it wrote its effects (a pop) on another thread.
        if server.aof.is_on() {
            self.aof_hold = Some(server.aof.appended());
        }
        if !blocked.silent {
            self.out.raw(reply);
        }
        commands::count_call(server, stats, blocked.command, blocked.ran_for, end.failed);
        if let Some(call) = blocked.slow.filter(|_| end.served) {
            commands::slowlog::push(server, commands::slowlog::Origin::Client(&self.state), call);
        }
    }

    /// With the AOF on, if the commands just run appended effects (this thread's
    /// last AOF position moved since `before`: other threads' writes do not hold a
    /// read's reply), their replies wait until the effects are written (and fsynced
    /// with `appendfsync always`): the worker writes them at the end of its round,
    /// as Redis writes the AOF before it replies.
    fn hold_for_aof(&mut self, before: u64) {
        let after = crate::aof::appended_here();
        if after != before {
            self.aof_hold = Some(after);
        }
    }

    /// May the replies go out, as far as the AOF is concerned? Clears a hold that
    /// the AOF has released.
    fn releases_replies(&mut self, server: &Server) -> bool {
        match self.aof_hold {
            Some(pos) if !server.aof.is_released(pos) => false,
            _ => {
                self.aof_hold = None;
                true
            }
        }
    }

    /// Write pending replies. Returns whether the connection stays open and still
    /// has bytes to write; a client whose unwritten replies pass its output buffer
    /// limit is closed. Replies held for the AOF stay until their effects are
    /// written, or fsynced (the worker flushes again then).
    pub fn flush(&mut self, server: &Server, stats: &ThreadStats) -> Next {
        if !self.releases_replies(server) {
            return Next::Keep { wants_write: false };
        }
        if self.out.overflowed() {
            // A reply outgrew the hard limit while it was built: what it holds is
            // not sent, the client goes (Redis closes it the same way, at once).
            crate::log_warning!(
                "Client {} scheduled to be closed ASAP for overcoming of output buffer limits.",
                self.describe()
            );
            return Next::Close;
        }
        if self.state.is_replica {
            return self.flush_feed(server, stats);
        }
        let batch = self.out.buf.len() - self.written;
        self.reply_peak = self.reply_peak.max(self.out.buf.len());
        // Published before the replies leave, as if they will all be written: a
        // client holding its reply may at once ask, on another connection, what
        // CLIENT LIST says about it.
        self.publish_snapshot(batch, 0);
        let mut next = self.write_pending(stats);
        let unwritten = self.out.buf.len() - self.written;
        if unwritten > 0 {
            self.publish_snapshot(batch, unwritten);
        }
        if next == (Next::Keep { wants_write: true }) && self.over_output_limit(server) {
            crate::log_warning!(
                "Client {} scheduled to be closed ASAP for overcoming of output buffer limits.",
                self.describe()
            );
            next = Next::Close;
        }
        next
    }

    /// A replica's connection: write what its feed has (the RDB of its full sync,
    /// then the stream) as fast as the socket takes it. The feed wakes this thread
    /// when it has more. A feed that ends (an rdb-only transfer, a replica too far
    /// behind, a role change) closes the connection once its bytes are out.
    fn flush_feed(&mut self, server: &Server, stats: &ThreadStats) -> Next {
        let repl = &server.replication;
        if self.feed.is_none() {
            self.feed = repl.replicas.of_client(self.state.id());
        }
        let Some(feed) = self.feed.clone() else {
            self.state.close_after_reply = true;
            return self.write_pending(stats);
        };
        // One buffer for the connection's life, the size of a batch: regrown by
        // doubling for every batch, it would leave the allocator a trail of freed
        // copies (resident memory during a full sync).
        let batch_room = FEED_BATCH + crate::replication::master::CHUNK;
        if self.out.buf.capacity() < batch_room {
            self.out.buf.reserve_exact(batch_room - self.out.buf.len());
        }
        for _ in 0..FEED_ROUNDS {
            feed.woken();
            let pending = self.out.buf.len() - self.written;
            if pending < FEED_BATCH {
                // Only what is not yet written stays, so the batch fits.
                self.out.buf.drain(..self.written);
                self.written = 0;
                if feed.fill(repl, &mut self.out.buf, FEED_BATCH - pending) == Filled::Finished {
                    self.state.close_after_reply = true;
                }
            }
            let had = self.out.buf.len() - self.written;
            let next = self.write_pending(stats);
            if had == 0 || next != (Next::Keep { wants_write: false }) {
                return next;
            }
        }
        // More may be waiting: look again at the next turn of the loop.
        feed.wake_again(repl);
        Next::Keep { wants_write: false }
    }

    /// Has the output waiting for the socket passed the hard limit of the client's
    /// class, or stayed over the soft limit for longer than its seconds?
    fn over_output_limit(&mut self, server: &Server) -> bool {
        let limit = server.hot.output_limit(self.output_class());
        let pending = (self.out.buf.len() - self.written) as u64;
        if limit.hard > 0 && pending >= limit.hard {
            return true;
        }
        if limit.soft == 0 || pending < limit.soft {
            self.over_soft_limit_since = None;
            return false;
        }
        let now = crate::hlc::unix_ms();
        let since = *self.over_soft_limit_since.get_or_insert(now);
        now - since > limit.soft_seconds * 1000
    }

    /// The `client-output-buffer-limit` class of this client.
    fn output_class(&self) -> usize {
        if self.state.pubsub.is_active() {
            kvik_config::CLASS_PUBSUB
        } else {
            kvik_config::CLASS_NORMAL
        }
    }

    /// Let the replies of the commands about to run grow only to the hard output
    /// limit of the client's class beyond what is already written (none when the
    /// class has no hard limit), so a huge reply stops being built there.
    fn bound_replies(&mut self, server: &Server) {
        let hard = server.hot.output_limit(self.output_class()).hard;
        self.out.limit = match usize::try_from(hard) {
            Ok(0) => 0,
            Ok(hard) => self.written.saturating_add(hard),
            Err(_) => 0,
        };
    }

    /// This client's CLIENT LIST line, without its newline (for log lines).
    fn describe(&self) -> String {
        let mut line = String::new();
        let snap = self.state.info.snapshot.lock().clone();
        self.state
            .info
            .describe(&snap, crate::hlc::unix_ms(), &mut line);
        line.truncate(line.trim_end().len());
        line
    }

    fn write_pending(&mut self, stats: &ThreadStats) -> Next {
        while self.written < self.out.buf.len() {
            match self.stream.write(&self.out.buf[self.written..]) {
                Ok(0) => {
                    // The peer is done sending, maybe right behind its last command
                    // (`printf 'SET k v\r\n' | nc -q0 ...`): its replies still go out,
                    // as far as the socket takes them now.
                    let _ = self.write_pending(stats);
                    return Next::Close;
                }
                Ok(n) => {
                    stats.add(&stats.net_output_bytes, n as u64);
                    self.written += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Next::Keep { wants_write: true };
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return Next::Close,
            }
        }
        // A TLS session may still hold records of these replies.
        match self.stream.flush() {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Next::Keep { wants_write: true };
            }
            Err(_) => return Next::Close,
        }
        self.out.buf.clear();
        self.written = 0;
        // A replica's feed keeps its batch-sized buffer (see `flush_feed`).
        if self.out.buf.capacity() > KEEP_REPLY_CAPACITY && self.feed.is_none() {
            self.out.buf = Vec::with_capacity(READ_CHUNK);
        }
        if self.state.close_after_reply {
            return Next::Close;
        }
        Next::Keep { wants_write: false }
    }

    /// Refresh what CLIENT LIST shows about this client, for a write of `batch`
    /// reply bytes that leaves `unwritten` of them waiting for the socket.
    fn publish_snapshot(&self, batch: usize, unwritten: usize) {
        let mut snap = self.state.info.snapshot.lock();
        snap.db = self.state.db;
        snap.last_interaction_ms = crate::hlc::unix_ms();
        snap.last_command = self.state.last_command;
        snap.query_buffer = self.filled;
        snap.query_buffer_free = self.buf.len() - self.filled;
        snap.output_buffer = unwritten;
        snap.write_pending = unwritten > 0;
        snap.reply_buffer_size = self.out.buf.capacity();
        snap.reply_buffer_peak = self.reply_peak.max(batch);
        snap.resp = if self.out.is_resp3() { 3 } else { 2 };
        snap.no_evict = self.state.no_evict;
        snap.no_touch = self.state.no_touch;
        snap.blocked = self.state.blocked.is_some();
        snap.subscriptions = self.state.pubsub.counts();
        snap.monitor = self.state.monitor;
    }

    /// Redis 7.0's reply buffer resizing, from the cron: an idle buffer whose peak
    /// stayed under half its size shrinks to the peak (at least 1 KB), one the
    /// peak filled grows to twice its size (at most 16 KB); the peak is forgotten
    /// every DEBUG REPLYBUFFER PEAK-RESET-TIME (5 s), so a client gone quiet gets a
    /// small buffer back. DEBUG REPLYBUFFER RESIZING 0 turns it off.
    pub fn resize_reply_buffer(&mut self, server: &Server, now_ms: u64) -> Option<Resized> {
        let debug = &server.debug;
        if debug.reply_buffer_resizing_off.load(Ordering::Relaxed) || !self.out.buf.is_empty() {
            return None;
        }
        let size = self.out.buf.capacity();
        let (shrink_to, expand_to) = (size / 2, size * 2);
        let resized = if shrink_to >= REPLY_MIN_BYTES && self.reply_peak < shrink_to {
            let new_size = REPLY_MIN_BYTES.max(self.reply_peak + 1);
            Some((new_size, Resized::Shrunk))
        } else if expand_to < REPLY_CHUNK_BYTES * 2 && size > 0 && self.reply_peak >= size {
            Some((REPLY_CHUNK_BYTES.min(expand_to), Resized::Expanded))
        } else {
            None
        };
        if debug
            .reply_peak_reset()
            .is_some_and(|every| now_ms.saturating_sub(self.reply_peak_reset_at) >= every)
        {
            self.reply_peak = 0;
            self.reply_peak_reset_at = now_ms;
        }
        let (new_size, how) = resized?;
        self.out.buf = Vec::with_capacity(new_size);
        let mut snap = self.state.info.snapshot.lock();
        snap.reply_buffer_size = self.out.buf.capacity();
        snap.reply_buffer_peak = self.reply_peak;
        Some(how)
    }

    /// A connection idle for [`IDLE_BUFFER_MS`] with nothing pending gives its read
    /// buffer back, as Redis frees an idle client's query buffer: thousands of idle
    /// connections then cost no buffer memory (CLIENT LIST shows `qbuf-free=0`).
    pub fn release_idle_buffer(&mut self, now_ms: u64) {
        if self.filled != 0 || self.buf.is_empty() {
            return;
        }
        let mut snap = self.state.info.snapshot.lock();
        if now_ms.saturating_sub(snap.last_interaction_ms) >= IDLE_BUFFER_MS {
            self.buf = Vec::new();
            snap.query_buffer_free = 0;
        }
    }

    /// Is the connection waiting for CLIENT PAUSE to end?
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Start or stop waiting for CLIENT PAUSE to end (counted for INFO).
    pub fn set_paused(&mut self, server: &Server, paused: bool) {
        if self.paused != paused {
            self.paused = paused;
            server.pause.note_waiting(paused);
        }
    }

    /// Milliseconds since this client last sent a command.
    pub fn idle_ms(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.state.info.snapshot.lock().last_interaction_ms)
    }
}
