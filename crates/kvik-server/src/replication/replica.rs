//! The link to a master: one thread per link that connects, hands shakes, loads
//! the full sync as it arrives and applies the stream.
//!
//! The handshake is Redis 7.0's: PING, AUTH [masteruser] masterauth, REPLCONF
//! listening-port (and ip-address), REPLCONF capa eof capa psync2, then PSYNC with
//! our replication id and offset + 1 (or `? -1` with no history). A full sync's RDB
//! is taken as `repl-diskless-load` says: into a file first, then loaded
//! (`disabled`, and `on-empty-db` while keys are here); straight from the socket
//! into the keyspace (`on-empty-db` with none); or from the socket into a keyspace
//! beside the served one, swapped in once whole (`swapdb`). Nothing buffers the
//! whole payload in memory: the RDB reader takes exactly the file's bytes, then the
//! diskless mark is checked. The stream is then parsed command by command and each one runs through
//! the one command door as the master client; the bytes it came in are appended to
//! our own backlog, so our replicas get the master's stream and our offset is the
//! master's. REPLCONF ACK goes out every second and when the master asks.
//! With `tls-replication yes` the link is a rustls client session over the same
//! blocking socket ([`MasterSocket`]).
//!
//! Under active replication (see [`super::active`]) the link is one of this node's
//! several relations: it says who we are (`REPLCONF uuid`), resumes from the place
//! it reached in its master's stream (not from our own offset: our history is our
//! own), merges a full sync into the dataset instead of replacing it, and opens each
//! `RREPLAY` envelope to apply the write inside as the peer's, stamped with the
//! peer's timestamp, unless it was born here or was applied already. It keeps the
//! last watermark marker the peer sent (`REPLCONF WATERMARK`, see
//! [`super::watermark`]), which says how old a write the peer may still send.
//!
//! One applier per link, in stream order: commands of the stream depend on each
//! other's order across keys (MULTI, scripts, SELECT), and each runs under the
//! same shard locks a client's command takes, so clients reading the replica see
//! every command whole.
//!
//! Owns the link thread and the link's state for INFO. Must not touch connections
//! of clients or the command table (it applies through [`super::Host`]).

use super::Replication;
use super::{active, watermark};
use crate::client::ClientState;
use crate::effects::NodeId;
use crate::{log_notice, log_warning};
use kvik_resp::{Limits, Parsed, RequestParser};
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where the link stands (INFO's `master_link_status`, ROLE's state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    Connect,
    Connecting,
    Handshake,
    Sync,
    Connected,
}

impl LinkState {
    /// ROLE's words for it.
    pub fn role_name(self) -> &'static str {
        match self {
            LinkState::Connect => "connect",
            LinkState::Connecting => "connecting",
            LinkState::Handshake => "handshake",
            LinkState::Sync => "sync",
            LinkState::Connected => "connected",
        }
    }
}

/// The link to one master.
pub struct Link {
    pub host: String,
    pub port: u16,
    stopped: AtomicBool,
    state: Mutex<LinkState>,
    /// The socket, to shut it down from another thread when the link stops.
    socket: Mutex<Option<TcpStream>>,
    /// Unix ms of the last bytes from the master.
    pub last_io_ms: AtomicU64,
    /// Unix ms the link went down (0: never up yet).
    pub down_since_ms: AtomicU64,
    /// The master asked for an ACK (REPLCONF GETACK) in the command being applied.
    ack_asked: AtomicBool,
    /// Bytes of the stream read (`slave_read_repl_offset`).
    pub read_offset: AtomicU64,
    /// Bytes of the current full sync read so far, and expected (-1: unknown).
    pub sync_read: AtomicU64,
    pub sync_size: std::sync::atomic::AtomicI64,
    /// The id of the client applying the stream (0: none).
    master_client: AtomicU64,
    /// Active replication: the master's replication id and the offset of its
    /// stream applied here, from which the link resumes.
    history: Mutex<Option<(String, u64)>>,
    /// Active replication: the last watermark the master sent, applied in stream
    /// order (see [`super::watermark`]). Kept while the link is down: it still
    /// bounds what the master may send when it comes back.
    heard: Mutex<Option<watermark::Heard>>,
    /// The master's id, as it answered ours (an active link to a kvik or KeyDB
    /// master).
    master_uuid: Mutex<Option<NodeId>>,
}

/// Where an applier stands in a transaction of the stream (active replication).
#[derive(Default)]
struct Group<'r> {
    /// Inside MULTI ... EXEC of a transaction applied already: drop until EXEC.
    skipping: bool,
    /// Inside MULTI ... EXEC of a transaction being applied: its origin's turn,
    /// held until the EXEC ran.
    applying: Option<active::Turn<'r>>,
    /// Bytes of the open transaction (applying or skipping), counted as the place
    /// reached in the master's stream only at its EXEC: a link broken inside it
    /// resumes at its MULTI.
    held: u64,
}

impl Group<'_> {
    fn is_open(&self) -> bool {
        self.skipping || self.applying.is_some()
    }
}

impl Link {
    /// Start following `host`:`port` on a thread of its own.
    pub fn start(repl: Arc<Replication>, host: String, port: u16) -> Arc<Link> {
        let link = Arc::new(Link {
            host,
            port,
            stopped: AtomicBool::new(false),
            state: Mutex::new(LinkState::Connect),
            socket: Mutex::new(None),
            last_io_ms: AtomicU64::new(0),
            down_since_ms: AtomicU64::new(crate::hlc::unix_ms()),
            ack_asked: AtomicBool::new(false),
            read_offset: AtomicU64::new(0),
            sync_read: AtomicU64::new(0),
            sync_size: std::sync::atomic::AtomicI64::new(-1),
            master_client: AtomicU64::new(0),
            history: Mutex::new(None),
            heard: Mutex::new(None),
            master_uuid: Mutex::new(None),
        });
        log_notice!("Connecting to MASTER {}:{}", link.host, link.port);
        let runner = link.clone();
        let spawned = std::thread::Builder::new()
            .name("kvik-repl-link".into())
            .spawn(move || runner.run(&repl));
        if spawned.is_err() {
            log_warning!("Can't start the replication link thread");
        }
        link
    }

    /// Stop the link: its thread ends at its next read.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        if let Some(socket) = self.socket.lock().take() {
            let _ = socket.shutdown(Shutdown::Both);
        }
    }

    /// Break the connection: the link connects again (and says who we are
    /// again: this node drew a new id).
    pub fn reconnect(&self) {
        if let Some(socket) = self.socket.lock().as_ref() {
            let _ = socket.shutdown(Shutdown::Both);
        }
    }

    /// The master's id, once it answered ours.
    pub fn master_uuid(&self) -> Option<NodeId> {
        *self.master_uuid.lock()
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Stopped, or the server is shutting down.
    fn must_end(&self, repl: &Replication) -> bool {
        self.is_stopped() || repl.host().stopping()
    }

    pub fn state(&self) -> LinkState {
        *self.state.lock()
    }

    /// `master_link_status:up`.
    pub fn is_up(&self) -> bool {
        self.state() == LinkState::Connected
    }

    /// The id of the client applying this link's stream (0: none now).
    pub fn master_client_id(&self) -> u64 {
        self.master_client.load(Ordering::Acquire)
    }

    /// Active replication: the offset of the master's stream applied here.
    pub fn applied_offset(&self) -> Option<u64> {
        self.history.lock().as_ref().map(|h| h.1)
    }

    /// The last watermark applied from the master (`None`: it never sent one, as
    /// a KeyDB master does not).
    pub fn heard(&self) -> Option<watermark::Heard> {
        *self.heard.lock()
    }

    /// The offset this link acknowledges: our own stream's (a chain passes the
    /// master's bytes on, so they are the same), or under active replication the
    /// place reached in the master's.
    fn ack_offset(&self, repl: &Replication) -> u64 {
        match repl.is_active() {
            true => self.applied_offset().unwrap_or(0),
            false => repl.offset(),
        }
    }

    /// REPLCONF GETACK from the master: acknowledge once the command is applied.
    pub fn ask_ack(&self) {
        self.ack_asked.store(true, Ordering::Release);
    }

    fn set_state(&self, state: LinkState) {
        *self.state.lock() = state;
    }

    fn run(self: Arc<Self>, repl: &Replication) {
        // A link made at start-up connects once the dataset is loaded.
        while !repl.has_begun() && !self.must_end(repl) {
            std::thread::sleep(Duration::from_millis(10));
        }
        while !self.must_end(repl) {
            let result = self.session(repl);
            let was_up = self.is_up();
            self.set_state(LinkState::Connect);
            *self.socket.lock() = None;
            if was_up {
                self.down_since_ms
                    .store(crate::hlc::unix_ms(), Ordering::Release);
            }
            if self.must_end(repl) {
                break;
            }
            if let Err(e) = result {
                log_warning!("Connection with master lost ({e}); reconnecting");
            }
            let retry_at = Instant::now() + Duration::from_secs(1);
            while Instant::now() < retry_at && !self.must_end(repl) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// One connection to the master, from connect to the link breaking.
    fn session(&self, repl: &Replication) -> io::Result<()> {
        let config = repl.host().config();
        self.set_state(LinkState::Connecting);
        let addr = (self.host.as_str(), self.port)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::other("no address for the master"))?;
        let timeout = Duration::from_secs(config.repl_timeout as u64);
        let stream = connect_from(&config.bind_source_addr, addr, timeout)?;
        stream.set_nodelay(!config.repl_disable_tcp_nodelay)?;
        stream.set_read_timeout(Some(Duration::from_secs(config.repl_timeout as u64)))?;
        *self.socket.lock() = Some(stream.try_clone()?);
        if self.is_stopped() {
            return Ok(());
        }
        let stream = MasterSocket::over(stream, &config, &self.host)?;
        log_notice!("MASTER <-> REPLICA sync started");
        self.set_state(LinkState::Handshake);
        let mut wire = Wire::new(stream, self);
        let active = repl.is_active();
        let uuid = active.then(|| active::uuid_text(&repl.node_id()));
        let master = handshake(&mut wire, &config, repl.host().port(), uuid.as_deref())?;
        *self.master_uuid.lock() = master;
        if master.is_some_and(|id| repl.settle_shared_tag(&id)) {
            return Err(io::Error::other("this node took a new id"));
        }
        let history = if active {
            self.history.lock().clone().map(|(id, at)| (id, at + 1))
        } else {
            repl.backlog
                .is_active()
                .then(|| (repl.replid(), repl.offset() + 1))
        };
        let mut asked = match &history {
            Some((id, offset)) => format!("PSYNC {id} {offset}"),
            None => "PSYNC ? -1".to_string(),
        };
        if repl.failing_over() {
            asked.push_str(" FAILOVER");
        }
        log_notice!(
            "Trying a partial resynchronization (request {}).",
            &asked[6..]
        );
        wire.send(&asked.split(' ').collect::<Vec<_>>())?;
        let reply = wire.reply_line()?;
        self.set_state(LinkState::Sync);
        if let Some(rest) = reply.strip_prefix("+FULLRESYNC ") {
            let (id, offset) = rest.split_once(' ').ok_or_else(|| bad_reply(&reply))?;
            let offset: u64 = offset.trim().parse().map_err(|_| bad_reply(&reply))?;
            log_notice!("Full resync from master: {id}:{offset}");
            self.full_sync(repl, &mut wire, id, offset)?;
        } else if let Some(rest) = reply.strip_prefix("+CONTINUE") {
            let new_id = rest.trim();
            log_notice!("Successful partial resynchronization with master.");
            if active {
                if let (false, Some(history)) = (new_id.is_empty(), self.history.lock().as_mut()) {
                    history.0 = new_id.to_string();
                }
            } else if !new_id.is_empty() && new_id != repl.replid() {
                // The master's history took a new id (it was promoted): ours
                // becomes the second one, valid up to where we are.
                repl.shift_ids(new_id.to_string());
                log_notice!("Master replication ID changed to {new_id}");
            }
        } else {
            if repl.failing_over() {
                // The target refused to take over: stay the master.
                log_warning!(
                    "Failover target refused the PSYNC FAILOVER request ({reply}); rolling back"
                );
                repl.rollback_failover();
                return Ok(());
            }
            return Err(io::Error::other(format!(
                "unexpected reply to PSYNC from master: {reply}"
            )));
        }
        self.set_state(LinkState::Connected);
        repl.failover_done();
        log_notice!("MASTER <-> REPLICA sync: Finished with success");
        self.stream(repl, wire)
    }

    /// Take the full sync's RDB: straight from the socket or through a file, as
    /// `repl-diskless-load` says (see [`Intake`]).
    fn full_sync(
        &self,
        repl: &Replication,
        wire: &mut Wire,
        replid: &str,
        offset: u64,
    ) -> io::Result<()> {
        let header = wire.reply_line()?;
        let eof_mark = match header.strip_prefix("$EOF:") {
            Some(mark) if mark.len() == 40 => Some(mark.as_bytes().to_vec()),
            Some(_) => return Err(bad_reply(&header)),
            None => None,
        };
        let size: i64 = match &eof_mark {
            Some(_) => -1,
            None => header
                .strip_prefix('$')
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| bad_reply(&header))?,
        };
        self.sync_size.store(size, Ordering::Release);
        let config = repl.host().config();
        let active = repl.is_active();
        let intake = Intake::choose(&config, repl, replid);
        log_notice!(
            "MASTER <-> REPLICA sync: receiving {} from master to {}",
            if size < 0 {
                "streamed RDB".to_string()
            } else {
                format!("{size} bytes")
            },
            if intake == Intake::Disk {
                "disk"
            } else {
                "the keyspace"
            }
        );
        wire.counted = 0;
        let _turn = repl.sync_turn();
        // Which writes of each origin the master's snapshot holds: dropped when met
        // again through another link, from before its first key is merged; no
        // link applies those origins' writes until the merge ends.
        let holds = std::cell::RefCell::new(None);
        let on_seen = |text: &[u8]| match active::decode_marks(text) {
            Some(marks) => *holds.borrow_mut() = Some(repl.seen.merging(marks)),
            None => log_warning!("Ignoring a malformed kvik-seen field from master"),
        };
        let keys = match intake {
            Intake::Disk => {
                let path = receive_to_disk(wire, &config, size, eof_mark.as_deref())?;
                log_notice!("MASTER <-> REPLICA sync: Loading DB in memory");
                let file = std::fs::File::open(&path)?;
                let mut reader = io::BufReader::with_capacity(1 << 16, file);
                let loaded = match active {
                    true => repl.host().merge(&mut reader, &on_seen),
                    false => repl.host().load(&mut reader),
                };
                if config.rdb_del_sync_files && !persists(&config) {
                    // Nothing else would keep it: the file only carried the sync.
                    let _ = std::fs::remove_file(&path);
                }
                loaded.map_err(failed_load)?
            }
            Intake::Socket | Intake::Beside { .. } => {
                let loaded = match intake {
                    _ if active => repl.host().merge(wire, &on_seen),
                    Intake::Beside { serve } => repl.host().load_beside(wire, serve),
                    _ => repl.host().load(wire),
                };
                let keys = loaded.map_err(failed_load)?;
                end_of_payload(wire, size, eof_mark.as_deref())?;
                keys
            }
        };
        log_notice!("MASTER <-> REPLICA sync: Loading DB in memory done ({keys} keys)");
        if active {
            // Merged into our own history, which goes on: only the link's place in
            // the master's stream is new, and our snapshots hold the writes it held.
            if let Some(merging) = holds.into_inner() {
                merging.merged();
            }
            *self.history.lock() = Some((replid.to_string(), offset));
            return Ok(());
        }
        repl.adopt_ids(replid.to_string());
        repl.backlog.reset(offset);
        Ok(())
    }

    /// Apply the stream until the link breaks.
    fn stream(&self, repl: &Replication, mut wire: Wire) -> io::Result<()> {
        let host = repl.host().clone();
        let timeout = Duration::from_secs(host.config().repl_timeout as u64);
        wire.stream
            .set_read_timeout(Some(Duration::from_millis(100)))?;
        wire.compact();
        let mut master = host.master_client(&format!("{}:{}", self.host, self.port));
        self.master_client.store(master.id(), Ordering::Release);
        let mut parser = RequestParser::new();
        let limits = Limits::default();
        let mut last_ack = Instant::now();
        let mut last_read = Instant::now();
        let mut group = Group::default();
        self.read_offset
            .store(self.ack_offset(repl), Ordering::Release);
        wire.send_ack(self.ack_offset(repl))?;
        let result = loop {
            let mut start = 0;
            let mut failed = None;
            // A watermark was applied: the master learns at once that we are past
            // it (it collects its tombstones by that), not at the next second.
            let mut heard_watermark = false;
            while start < wire.buf.len() {
                let data = &wire.buf[start..];
                match parser.parse(data, limits) {
                    Ok(Parsed::Command { consumed }) => {
                        let before = self.ack_offset(repl);
                        let args: SmallVec<[&[u8]; 8]> = parser.args(data).collect();
                        match active::skipped(&args).filter(|_| repl.is_active()) {
                            // Our own writes, left out: the place in the master's
                            // stream moves past them (at EXEC, inside a transaction).
                            Some(n) => {
                                self.skip_marker(n, consumed);
                                match group.is_open() {
                                    true => group.held += n,
                                    false => self.advance_history(n),
                                }
                            }
                            None => {
                                if let Some(marker) =
                                    watermark::decode(&args).filter(|_| repl.is_active())
                                {
                                    self.hear(marker);
                                    heard_watermark = true;
                                } else if args[0].eq_ignore_ascii_case(active::RREPLAY) {
                                    self.replay(repl, &mut master, &args, &mut group, 0);
                                } else {
                                    host.apply(&mut master, &args);
                                }
                                if group.is_open() {
                                    group.held += consumed as u64;
                                } else {
                                    let held = std::mem::take(&mut group.held);
                                    self.passed(repl, &data[..consumed], held);
                                }
                            }
                        }
                        start += consumed;
                        if self.ack_asked.swap(false, Ordering::AcqRel) {
                            send_ack(&mut wire.stream, before)?;
                            last_ack = Instant::now();
                        }
                    }
                    Ok(Parsed::Skip { consumed }) if group.is_open() => {
                        group.held += consumed as u64;
                        start += consumed;
                    }
                    Ok(Parsed::Skip { consumed }) => {
                        self.passed(repl, &data[..consumed], 0);
                        start += consumed;
                    }
                    Ok(Parsed::Incomplete { .. }) => break,
                    Err(e) => {
                        failed = Some(io::Error::other(format!("protocol error from master: {e}")));
                        break;
                    }
                }
            }
            wire.buf.drain(..start);
            if let Some(e) = failed {
                break Err(e);
            }
            if heard_watermark || last_ack.elapsed() >= Duration::from_secs(1) {
                send_ack(&mut wire.stream, self.ack_offset(repl))?;
                last_ack = Instant::now();
            }
            match wire.fill() {
                Ok(0) => break Err(io::Error::other("master closed the connection")),
                Ok(n) => {
                    self.read_offset.fetch_add(n as u64, Ordering::AcqRel);
                    last_read = Instant::now();
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    if last_read.elapsed() > timeout {
                        break Err(io::Error::other("timeout: no data from master"));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
            if self.must_end(repl) {
                break Ok(());
            }
            if master.info.is_killed() {
                break Err(io::Error::other("the master client was killed"));
            }
        };
        self.master_client.store(0, Ordering::Release);
        host.master_client_gone(&master);
        result
    }

    /// Bytes of the master's stream were applied: a chain passes them on to its own
    /// replicas verbatim; an active node, whose stream is its own, counts them (and
    /// the `held` bytes of the transaction they end) as the place reached in the
    /// master's.
    fn passed(&self, repl: &Replication, bytes: &[u8], held: u64) {
        if !repl.is_active() {
            return repl.backlog.append_raw(bytes);
        }
        self.advance_history(held + bytes.len() as u64);
    }

    /// The master left `n` bytes of its stream out (our own writes), sending a
    /// marker of `marker` bytes instead: what we read of its stream counts them.
    fn skip_marker(&self, n: u64, marker: usize) {
        self.read_offset
            .fetch_add(n.saturating_sub(marker as u64), Ordering::AcqRel);
    }

    /// A watermark from the master, met after everything before it was applied.
    fn hear(&self, marker: Option<watermark::Heard>) {
        match marker {
            Some(heard) => *self.heard.lock() = Some(heard),
            None => log_warning!(
                "Ignoring a malformed REPLCONF WATERMARK from master {}:{}",
                self.host,
                self.port
            ),
        }
    }

    /// Our place in the master's stream moves `n` bytes on.
    fn advance_history(&self, n: u64) {
        if let Some(history) = self.history.lock().as_mut() {
            history.1 += n;
        }
    }

    /// Apply the write inside an `RREPLAY` envelope as the peer's: stamped with its
    /// timestamp and carrying its birth, so it applies only where it is the newest
    /// write and travels on as the peer's. A write born here, or applied already
    /// (met by another path of a mesh), is dropped; a transaction is kept or
    /// dropped whole. Each write is admitted and applied under its origin's turn.
    /// A KeyDB peer wraps the envelopes it forwards in its own: such a one is
    /// opened in turn (`depth` envelopes deep), once the outer one is admitted.
    fn replay<'r>(
        &self,
        repl: &'r Replication,
        master: &mut ClientState,
        args: &[&[u8]],
        group: &mut Group<'r>,
        depth: usize,
    ) {
        let Some(envelope) = active::open(args) else {
            log_warning!(
                "Dropping a malformed RREPLAY from master {}:{}",
                self.host,
                self.port
            );
            return;
        };
        if repl.is_own(&envelope.origin) {
            return;
        }
        let mut parser = RequestParser::new();
        let command = envelope.command;
        if !matches!(
            parser.parse(command, Limits::default()),
            Ok(Parsed::Command { .. })
        ) {
            log_warning!("Dropping an RREPLAY whose command does not parse");
            return;
        }
        let argv: SmallVec<[&[u8]; 8]> = parser.args(command).collect();
        let seq = envelope.seq.unwrap_or(0);
        let settled = || repl.links().iter().all(|l| l.is_up());
        if argv[0].eq_ignore_ascii_case(active::RREPLAY) && depth < MAX_NESTING {
            let admitted = {
                let _turn = repl.seen.turn(&envelope.origin);
                repl.seen
                    .admit(&envelope.origin, seq, envelope.ts, &settled)
            };
            if admitted {
                if let Some(db) = envelope.db {
                    master.db = db;
                }
                self.replay(repl, master, &argv, group, depth + 1);
            }
            return;
        }
        let is = |name: &str| argv[0].eq_ignore_ascii_case(name.as_bytes());
        if group.skipping {
            group.skipping = !is("EXEC");
            return;
        }
        // A transaction's commands share its number: admitted at its MULTI.
        let (turn, in_group) = match group.applying.take() {
            Some(turn) => (turn, true),
            None => {
                let turn = repl.seen.turn(&envelope.origin);
                if !repl
                    .seen
                    .admit(&envelope.origin, seq, envelope.ts, &settled)
                {
                    group.skipping = is("MULTI");
                    return;
                }
                (turn, false)
            }
        };
        if let Some(db) = envelope.db {
            master.db = db;
        }
        let birth = crate::effects::Birth {
            origin: envelope.origin,
            seq,
        };
        let host = repl.host();
        let seen = &envelope.seen;
        let mut apply = || {
            crate::effects::replaying(birth, || {
                crate::keyspace::replaying_removal(seen, || host.apply(master, &argv))
            })
        };
        match envelope.ts {
            0 => apply(),
            ts => crate::hlc::imposed(ts, apply),
        }
        let mut turn = turn;
        if !is("EXEC") && (in_group || is("MULTI")) {
            turn.open_run(seq);
            group.applying = Some(turn);
        } else {
            turn.close_run();
            repl.seen.done(&envelope.origin, seq);
        }
    }
}

/// How many envelopes deep a forwarded write is opened (a chain of KeyDB nodes
/// wraps it once per node it passed).
const MAX_NESTING: usize = 8;

/// How a replica takes a full sync's RDB (`repl-diskless-load`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Intake {
    /// `disabled`, or `on-empty-db` with keys here: into a file first, loaded once
    /// whole (the dataset stays until the transfer is complete).
    Disk,
    /// Straight from the socket into the emptied dataset (`on-empty-db` with no
    /// key here).
    Socket,
    /// `swapdb`: from the socket into a dataset beside ours, swapped in at the end;
    /// ours is kept when the sync fails. `serve`: the master's history is ours
    /// (only a partial resync failed), so clients keep reading the old dataset
    /// meanwhile, as Redis's async loading does.
    Beside { serve: bool },
}

impl Intake {
    fn choose(config: &kvik_config::Config, repl: &Replication, replid: &str) -> Intake {
        match config.repl_diskless_load.as_str() {
            "swapdb" => Intake::Beside {
                serve: repl.replid() == replid,
            },
            "on-empty-db" if repl.host().dataset_is_empty() => Intake::Socket,
            _ => Intake::Disk,
        }
    }
}

/// Does the node persist its dataset (save points or the AOF)? `rdb-del-sync-files`
/// removes a sync's file only when nothing does.
fn persists(config: &kvik_config::Config) -> bool {
    !config.save.is_empty() || config.appendonly
}

fn failed_load(why: String) -> io::Error {
    io::Error::other(format!("loading the RDB from master failed: {why}"))
}

/// After an RDB read from the socket: the diskless end mark must follow; a sized
/// payload's bytes past the file's footer are not the stream.
fn end_of_payload(wire: &mut Wire, size: i64, eof_mark: Option<&[u8]>) -> io::Result<()> {
    match eof_mark {
        Some(mark) => {
            let mut end = [0u8; 40];
            wire.read_exact(&mut end)?;
            if end[..] != mark[..] {
                return Err(io::Error::other(
                    "the diskless payload's end mark does not match",
                ));
            }
        }
        None => {
            let extra = (size as u64).saturating_sub(wire.counted);
            io::copy(&mut (&mut *wire).take(extra), &mut io::sink())?;
        }
    }
    Ok(())
}

/// Write the payload to a temporary file in `dir`, then put it in place as the
/// RDB file (`dbfilename`), as Redis's replicas do; its path. A diskless payload
/// ends where its last 40 bytes are the end mark.
fn receive_to_disk(
    wire: &mut Wire,
    config: &kvik_config::Config,
    size: i64,
    eof_mark: Option<&[u8]>,
) -> io::Result<std::path::PathBuf> {
    let dir = std::path::Path::new(&config.dir);
    let temp = dir.join(format!(
        "temp-{}.{}.rdb",
        crate::hlc::unix_ms() / 1000,
        std::process::id()
    ));
    let written = write_payload(wire, &temp, size, eof_mark);
    let placed = written.and_then(|()| {
        let path = dir.join(&config.dbfilename);
        std::fs::rename(&temp, &path).map(|()| path)
    });
    if placed.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    placed
}

fn write_payload(
    wire: &mut Wire,
    path: &std::path::Path,
    size: i64,
    eof_mark: Option<&[u8]>,
) -> io::Result<()> {
    let mut file = std::fs::File::create(path)?;
    let Some(mark) = eof_mark else {
        let copied = io::copy(&mut (&mut *wire).take(size as u64), &mut file)?;
        if copied < size as u64 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "master closed the connection during the transfer",
            ));
        }
        return file.sync_all();
    };
    let mut chunk = vec![0u8; 64 << 10];
    // The last bytes written, to find the mark across reads.
    let mut tail: Vec<u8> = Vec::with_capacity(2 * mark.len());
    let mut written = 0u64;
    loop {
        let n = wire.read(&mut chunk)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "master closed the connection during the transfer",
            ));
        }
        file.write_all(&chunk[..n])?;
        written += n as u64;
        tail.extend_from_slice(&chunk[..n]);
        let keep = tail.len().saturating_sub(mark.len());
        tail.drain(..keep);
        if tail == mark {
            file.set_len(written - mark.len() as u64)?;
            return file.sync_all();
        }
    }
}

/// Connect to the master from `bind-source-addr` when it is set (a host with
/// several addresses, where the master's firewall knows only one), as Redis does.
fn connect_from(source: &str, addr: SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
    if source.is_empty() {
        return TcpStream::connect_timeout(&addr, timeout);
    }
    let ip: std::net::IpAddr = source
        .parse()
        .map_err(|_| io::Error::other(format!("bind-source-addr '{source}' is not an address")))?;
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    socket.bind(&SocketAddr::new(ip, 0).into())?;
    socket.connect_timeout(&addr.into(), timeout)?;
    Ok(socket.into())
}

fn bad_reply(line: &str) -> io::Error {
    io::Error::other(format!("bad reply from master: {line}"))
}

fn send_ack(stream: &mut MasterSocket, offset: u64) -> io::Result<()> {
    let offset = offset.to_string();
    let mut bytes = Vec::new();
    crate::effects::encode_command(&[b"REPLCONF", b"ACK", offset.as_bytes()], &mut bytes);
    stream.write_all(&bytes)
}

/// PING, AUTH, REPLCONF: what a replica says before PSYNC; an active replica also
/// says who it is (`uuid`), as KeyDB's do, and learns who the master is (its
/// answer, returned).
fn handshake(
    wire: &mut Wire,
    config: &kvik_config::Config,
    port: u16,
    uuid: Option<&str>,
) -> io::Result<Option<NodeId>> {
    wire.send(&["PING"])?;
    let pong = wire.reply_line()?;
    // An error about authentication is fine here: AUTH comes next.
    if pong.starts_with('-')
        && !pong.starts_with("-NOAUTH")
        && !pong.starts_with("-NOPERM")
        && !pong.starts_with("-ERR operation not permitted")
    {
        return Err(io::Error::other(format!(
            "Error reply to PING from master: '{pong}'"
        )));
    }
    if let Some(pass) = &config.masterauth {
        match &config.masteruser {
            Some(user) => wire.send(&["AUTH", user, pass])?,
            None => wire.send(&["AUTH", pass])?,
        }
        let reply = wire.reply_line()?;
        if reply.starts_with('-') {
            return Err(io::Error::other(format!(
                "Unable to AUTH to MASTER: {reply}"
            )));
        }
    }
    // A replica on TLS is reached on its TLS port, as Redis announces it.
    let announced = match config.replica_announce_port {
        0 if config.tls_replication && config.tls_port != 0 => config.tls_port,
        0 => port,
        p => p,
    }
    .to_string();
    wire.send(&["REPLCONF", "listening-port", &announced])?;
    let reply = wire.reply_line()?;
    if reply.starts_with('-') {
        log_notice!("(Non critical) Master does not understand REPLCONF listening-port: {reply}");
    }
    if !config.replica_announce_ip.is_empty() {
        wire.send(&["REPLCONF", "ip-address", &config.replica_announce_ip])?;
        let reply = wire.reply_line()?;
        if reply.starts_with('-') {
            log_notice!("(Non critical) Master does not understand REPLCONF ip-address: {reply}");
        }
    }
    // An active replica also says what KeyDB's say (`activeExpire`: it expires
    // keys itself) and that it is kvik's: a kvik master then sends it kvik's
    // envelopes (a KeyDB master ignores what it does not know).
    match uuid {
        Some(_) => wire.send(&[
            "REPLCONF",
            "capa",
            "eof",
            "capa",
            "psync2",
            "capa",
            "activeExpire",
            "capa",
            active::KVIK_CAPA,
        ])?,
        None => wire.send(&["REPLCONF", "capa", "eof", "capa", "psync2"])?,
    }
    let reply = wire.reply_line()?;
    if reply.starts_with('-') {
        log_notice!("(Non critical) Master does not understand REPLCONF capa: {reply}");
    }
    let Some(uuid) = uuid else {
        return Ok(None);
    };
    wire.send(&["REPLCONF", "uuid", uuid])?;
    let reply = wire.reply_line()?;
    if reply.starts_with('-') {
        log_notice!("(Non critical) Master does not understand REPLCONF uuid: {reply}");
    }
    Ok(reply
        .strip_prefix('+')
        .and_then(|id| active::parse_uuid(id.trim().as_bytes())))
}

/// The socket to the master, read through a buffer that lines, the RDB reader and
/// the stream parser share.
struct Wire<'l> {
    stream: MasterSocket,
    buf: Vec<u8>,
    /// Where the unread bytes of `buf` start.
    pos: usize,
    /// Bytes handed out through [`Read`] since it was last reset.
    counted: u64,
    link: &'l Link,
}

impl<'l> Wire<'l> {
    fn new(stream: MasterSocket, link: &'l Link) -> Self {
        Wire {
            stream,
            buf: Vec::with_capacity(64 << 10),
            pos: 0,
            counted: 0,
            link,
        }
    }

    fn send(&mut self, args: &[&str]) -> io::Result<()> {
        let argv: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let mut bytes = Vec::new();
        crate::effects::encode_command(&argv, &mut bytes);
        self.stream.write_all(&bytes)
    }

    fn send_ack(&mut self, offset: u64) -> io::Result<()> {
        send_ack(&mut self.stream, offset)
    }

    /// Read more from the socket onto the buffer; the bytes read.
    fn fill(&mut self) -> io::Result<usize> {
        self.compact();
        let len = self.buf.len();
        self.buf.resize(len + (64 << 10), 0);
        let got = self.stream.read(&mut self.buf[len..]);
        self.buf.truncate(len + *got.as_ref().unwrap_or(&0));
        if let Ok(n) = got {
            if n > 0 {
                self.link
                    .last_io_ms
                    .store(crate::hlc::unix_ms(), Ordering::Relaxed);
            }
        }
        got
    }

    /// Drop the bytes already handed out.
    fn compact(&mut self) {
        self.buf.drain(..self.pos);
        self.pos = 0;
    }

    /// One reply line, without its CRLF; the newlines a master sends to keep the
    /// link alive while it prepares a sync are skipped.
    fn reply_line(&mut self) -> io::Result<String> {
        loop {
            if let Some(end) = self.buf[self.pos..].iter().position(|&b| b == b'\n') {
                let line = &self.buf[self.pos..self.pos + end];
                self.pos += end + 1;
                let text = String::from_utf8_lossy(line).trim_end().to_string();
                if text.is_empty() {
                    continue;
                }
                return Ok(text);
            }
            if self.fill()? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "master closed the connection",
                ));
            }
        }
    }
}

impl Read for Wire<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.buf.len() && self.fill()? == 0 {
            return Ok(0);
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        self.counted += n as u64;
        self.link.sync_read.store(self.counted, Ordering::Relaxed);
        Ok(n)
    }
}

/// The socket to the master: plain TCP, or a TLS session over it
/// (`tls-replication yes`). Blocking both, with the read timeout set on the TCP
/// socket underneath.
enum MasterSocket {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl MasterSocket {
    /// `stream` as this replica's settings want it; the TLS handshake happens at
    /// the first read or write.
    fn over(stream: TcpStream, config: &kvik_config::Config, host: &str) -> io::Result<Self> {
        if !config.tls_replication {
            return Ok(MasterSocket::Plain(stream));
        }
        let tls = crate::tls::client_config(config)
            .and_then(|c| Ok((Arc::new(c), crate::tls::server_name(host)?)))
            .and_then(|(c, name)| rustls::ClientConnection::new(c, name).map_err(|e| e.to_string()))
            .map_err(|why| io::Error::other(format!("TLS to the master: {why}")))?;
        Ok(MasterSocket::Tls(Box::new(rustls::StreamOwned::new(
            tls, stream,
        ))))
    }

    fn tcp(&self) -> &TcpStream {
        match self {
            MasterSocket::Plain(s) => s,
            MasterSocket::Tls(s) => &s.sock,
        }
    }

    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.tcp().set_read_timeout(timeout)
    }
}

impl Read for MasterSocket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            MasterSocket::Plain(s) => s.read(buf),
            MasterSocket::Tls(s) => s.read(buf),
        }
    }
}

impl Write for MasterSocket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            MasterSocket::Plain(s) => s.write(buf),
            MasterSocket::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            MasterSocket::Plain(s) => s.flush(),
            MasterSocket::Tls(s) => s.flush(),
        }
    }
}
