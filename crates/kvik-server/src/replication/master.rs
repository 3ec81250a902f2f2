//! Serving replicas: the feed of each replica connection, and full syncs.
//!
//! A replica connection stays with the worker thread that accepted it. After PSYNC
//! its output comes from its [`Feed`]: during a full sync, the chunks of the RDB a
//! sync thread produces; once online, the backlog's bytes from the replica's offset.
//! The worker copies from the feed whenever the socket has room and when the feed
//! wakes it through its mailbox ([`Host::wake_worker`](super::Host::wake_worker));
//! nothing here touches a connection.
//!
//! A full sync ([`Job`]) takes the forkless point-in-time snapshot once for every
//! replica that joined it before its point. At the point (every shard held) the
//! backlog's offset is read and the stream's database forgotten, so the RDB plus
//! the stream from that offset is exactly the dataset. Diskless (the default)
//! waits `repl-diskless-sync-delay` for more replicas, then streams the RDB to all
//! of them as it is written, in chunks they share, framed `$EOF:<mark>` ...
//! `<mark>`; with `repl-diskless-sync no` it is written to a file first and sent
//! as `$<length>`. Newlines keep the links alive while the sync waits.
//!
//! Owns the feeds and the sync threads. Must not touch connections or sockets.

use super::backlog::{Layout, Offsets, Read, LAYOUTS};
use super::{Replication, SyncPoint};
use crate::effects::NodeId;
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// RDB bytes waiting for the socket at most (the sync thread waits beyond): the
/// master's extra memory during a full sync. Twice what the worker takes at a time
/// (its 1 MB batches), so the socket never waits for the snapshot.
const PIPE_LIMIT: usize = 2 << 20;
/// The RDB is handed to the worker in chunks of this size.
pub const CHUNK: usize = 64 << 10;

pub use crate::client::ReplicaHello as Hello;

/// Bytes of a sync's output: one allocation, shared by every replica the sync
/// serves.
type Chunk = Arc<Vec<u8>>;

/// Where a replica's output comes from now.
enum Stage {
    /// Waiting for its snapshot to begin; keepalive newlines only.
    WaitSnapshot { chunks: VecDeque<Chunk> },
    /// The RDB is being sent; once it is all queued (`done`) and the chunks are
    /// out, the stream follows from `from`, the snapshot's offset.
    Transfer {
        chunks: VecDeque<Chunk>,
        queued: usize,
        from: u64,
        done: bool,
    },
    /// A diskless payload is out: the stream waits for the replica's first ACK,
    /// which says it read the end mark (bytes right behind the mark could be taken
    /// for the payload's, as Redis 7.0's replicas read it).
    AwaitAck { cursor: u64 },
    /// Streaming from the backlog.
    Online { cursor: u64 },
    /// Nothing more (an rdb-only transfer is complete, or the feed lost its place).
    Done,
}

/// One replica connection's output.
pub struct Feed {
    pub client_id: u64,
    /// The worker thread that owns the connection.
    pub worker: usize,
    pub ip: String,
    pub hello: Hello,
    /// The stream it reads.
    pub layout: Layout,
    /// An active kvik peer: the envelopes of its own writes are left out of what
    /// it reads (it would drop them), markers counting their bytes instead.
    peer: Option<NodeId>,
    stage: Mutex<Stage>,
    room: Condvar,
    /// The offset the replica acknowledged last (REPLCONF ACK) and when (unix ms).
    pub ack_offset: AtomicU64,
    pub ack_ms: AtomicU64,
    /// The payload is framed with an end mark (`$EOF:`).
    diskless: bool,
    /// The worker must look at the feed (a wake-up is on its way).
    wake_pending: AtomicBool,
    /// The replica acknowledged while its payload was still counted as in
    /// transfer (the last chunk written, the transfer not yet marked done): it has
    /// the whole payload, so its stream starts without waiting for another ACK.
    acked_in_transfer: AtomicBool,
    /// The connection is gone.
    closed: AtomicBool,
}

/// What a fill found.
#[derive(Debug, PartialEq, Eq)]
pub enum Filled {
    /// More may follow.
    Going,
    /// The replica's bytes are gone from the backlog (it fell too far behind), or
    /// an rdb-only transfer ended: close the connection once written.
    Finished,
}

impl Feed {
    fn new(
        (client_id, worker, ip): (u64, usize, String),
        hello: Hello,
        layout: Layout,
        stage: Stage,
    ) -> Feed {
        let peer = hello.uuid.filter(|_| hello.kvik && layout == Layout::Own);
        Feed {
            client_id,
            worker,
            ip,
            hello,
            layout,
            peer,
            stage: Mutex::new(stage),
            room: Condvar::new(),
            ack_offset: AtomicU64::new(0),
            ack_ms: AtomicU64::new(crate::hlc::unix_ms()),
            diskless: false,
            wake_pending: AtomicBool::new(false),
            acked_in_transfer: AtomicBool::new(false),
            closed: AtomicBool::new(false),
        }
    }

    /// The worker is looking now: later appends must wake it again.
    pub fn woken(&self) {
        self.wake_pending.store(false, Ordering::Release);
    }

    /// Copy at most `max` bytes of output onto `out` (the connection's reply buffer).
    pub fn fill(&self, repl: &Replication, out: &mut Vec<u8>, max: usize) -> Filled {
        let mut stage = self.stage.lock();
        match &mut *stage {
            Stage::WaitSnapshot { chunks } => {
                for chunk in chunks.drain(..) {
                    out.extend_from_slice(&chunk);
                }
                Filled::Going
            }
            Stage::Transfer {
                chunks,
                queued,
                from,
                done,
            } => {
                let mut copied = 0;
                while copied < max {
                    let Some(chunk) = chunks.pop_front() else {
                        break;
                    };
                    copied += chunk.len();
                    *queued -= chunk.len();
                    out.extend_from_slice(&chunk);
                }
                self.room.notify_all();
                match (chunks.is_empty() && *done, *from) {
                    (true, _) if self.hello.rdb_only => {
                        *stage = Stage::Done;
                        Filled::Finished
                    }
                    (true, cursor) => {
                        crate::log_notice!(
                            "Synchronization with replica {}:{} succeeded",
                            self.ip,
                            self.hello.listening_port
                        );
                        let acked = self.acked_in_transfer.load(Ordering::Acquire);
                        *stage = match self.diskless && !acked {
                            true => Stage::AwaitAck { cursor },
                            false => Stage::Online { cursor },
                        };
                        drop(stage);
                        repl.replicas.update_needed(repl);
                        Filled::Going
                    }
                    _ => Filled::Going,
                }
            }
            Stage::Online { cursor } => match self.read(repl, *cursor, max, out) {
                Read::Copied(n) => {
                    *cursor += n as u64;
                    drop(stage);
                    if n > 0 {
                        // The ring may let go of what every replica has now.
                        repl.replicas.update_needed(repl);
                    }
                    Filled::Going
                }
                Read::Lost => {
                    let kept = repl.backlog.grow_retention(self.layout);
                    crate::log_warning!(
                        "Client id={} addr={}:{} (replica) is too far behind: its stream is gone from the backlog; closing it (the backlog now keeps up to {kept} bytes for replicas)",
                        self.client_id,
                        self.ip,
                        self.hello.listening_port
                    );
                    *stage = Stage::Done;
                    Filled::Finished
                }
            },
            Stage::AwaitAck { .. } => Filled::Going,
            Stage::Done => Filled::Finished,
        }
    }

    /// The stream from `cursor`, as this replica reads it.
    fn read(&self, repl: &Replication, cursor: u64, max: usize, out: &mut Vec<u8>) -> Read {
        match &self.peer {
            Some(peer) if repl.is_active() => repl.backlog.read_for_peer(cursor, max, peer, out),
            _ => repl.backlog.read(self.layout, cursor, max, out),
        }
    }

    /// The replica acknowledged: a stream waiting for that starts.
    fn acked(&self, repl: &Replication) {
        let mut stage = self.stage.lock();
        match *stage {
            Stage::AwaitAck { cursor } => *stage = Stage::Online { cursor },
            Stage::Transfer { .. } => self.acked_in_transfer.store(true, Ordering::Release),
            _ => return,
        }
        drop(stage);
        self.wake(repl);
    }

    /// The offset this replica needs next, while its connection is up.
    fn needs(&self) -> Option<u64> {
        match &*self.stage.lock() {
            Stage::Online { cursor } | Stage::AwaitAck { cursor } => Some(*cursor),
            Stage::Transfer { from, .. } => Some(*from),
            _ => None,
        }
    }

    /// INFO's slave line `state=`.
    pub fn state_name(&self) -> &'static str {
        match &*self.stage.lock() {
            Stage::WaitSnapshot { .. } => "wait_bgsave",
            Stage::Transfer { .. } => "send_bulk",
            Stage::Online { .. } | Stage::AwaitAck { .. } | Stage::Done => "online",
        }
    }

    /// The end of the stream this replica reads: what it acknowledges once it
    /// has everything.
    pub fn stream_end(&self, repl: &Replication) -> u64 {
        repl.backlog.offsets()[self.layout as usize]
    }

    pub fn is_online(&self) -> bool {
        matches!(&*self.stage.lock(), Stage::Online { .. })
    }

    /// Queue bytes for the socket from the sync thread; waits while too much is
    /// queued. False once the connection is gone.
    fn send(&self, bytes: Chunk, repl: &Replication) -> bool {
        let mut stage = self.stage.lock();
        loop {
            if self.closed.load(Ordering::Acquire) {
                return false;
            }
            match &mut *stage {
                Stage::WaitSnapshot { chunks } => {
                    chunks.push_back(bytes);
                    break;
                }
                Stage::Transfer { chunks, queued, .. } if *queued < PIPE_LIMIT => {
                    *queued += bytes.len();
                    chunks.push_back(bytes);
                    break;
                }
                Stage::Transfer { .. } => {
                    self.room.wait_for(&mut stage, Duration::from_millis(100));
                }
                _ => return false,
            }
        }
        drop(stage);
        self.wake(repl);
        true
    }

    /// The snapshot began at `offset`: what follows is the transfer.
    fn start_transfer(&self, offset: u64) {
        let mut stage = self.stage.lock();
        if let Stage::WaitSnapshot { chunks } = &mut *stage {
            let chunks = std::mem::take(chunks);
            let queued = chunks.iter().map(|c| c.len()).sum();
            *stage = Stage::Transfer {
                chunks,
                queued,
                from: offset,
                done: false,
            };
        }
    }

    /// The whole RDB is queued; the stream follows.
    fn end_transfer(&self, repl: &Replication) {
        if let Stage::Transfer { done, .. } = &mut *self.stage.lock() {
            *done = true;
        }
        self.wake(repl);
    }

    /// The worker stopped before the feed was empty: have it look again.
    pub fn wake_again(&self, repl: &Replication) {
        self.wake(repl);
    }

    fn wake(&self, repl: &Replication) {
        if !self.wake_pending.swap(true, Ordering::AcqRel) {
            repl.host().wake_worker(self.worker);
        }
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        *self.stage.lock() = Stage::Done;
        self.room.notify_all();
    }
}

/// The replicas this node serves.
#[derive(Default)]
pub struct Replicas {
    feeds: Mutex<Vec<Arc<Feed>>>,
    /// Full syncs that replicas may still join (their snapshot has not begun).
    waiting: Mutex<Vec<Arc<Job>>>,
    /// What syncs were asked of this node (INFO stats).
    pub syncs: SyncCounts,
}

/// INFO's `sync_full`, `sync_partial_ok` and `sync_partial_err`, as Redis counts
/// them: every full sync served (SYNC, a refused PSYNC, `redis-cli --rdb`), every
/// PSYNC continued, every PSYNC that named a history and could not continue it.
#[derive(Default)]
pub struct SyncCounts {
    pub full: AtomicU64,
    pub partial_ok: AtomicU64,
    pub partial_err: AtomicU64,
}

impl SyncCounts {
    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        for counter in [&self.full, &self.partial_ok, &self.partial_err] {
            counter.store(0, Ordering::Relaxed);
        }
    }
}

impl Replicas {
    pub fn count(&self) -> usize {
        self.feeds.lock().len()
    }

    pub fn all(&self) -> Vec<Arc<Feed>> {
        self.feeds.lock().clone()
    }

    /// The feed of the connection of client `id`.
    pub fn of_client(&self, id: u64) -> Option<Arc<Feed>> {
        self.feeds
            .lock()
            .iter()
            .find(|f| f.client_id == id)
            .cloned()
    }

    /// REPLCONF ACK from client `id`.
    pub fn ack(&self, id: u64, offset: u64, repl: &Replication) {
        if let Some(feed) = self.of_client(id) {
            feed.ack_offset.fetch_max(offset, Ordering::AcqRel);
            feed.ack_ms.store(crate::hlc::unix_ms(), Ordering::Release);
            feed.acked(repl);
        }
    }

    /// The connection of client `id` closed.
    pub fn gone(&self, id: u64, repl: &Replication) {
        let mut feeds = self.feeds.lock();
        if let Some(at) = feeds.iter().position(|f| f.client_id == id) {
            let feed = feeds.remove(at);
            feed.close();
            crate::log_notice!(
                "Connection with replica {}:{} lost.",
                feed.ip,
                feed.hello.listening_port
            );
        }
        drop(feeds);
        self.update_needed(repl);
    }

    /// Close every replica connection (the node changed role).
    pub fn disconnect_all(&self, repl: &Replication) {
        for feed in self.feeds.lock().drain(..) {
            feed.close();
            repl.host().wake_worker(feed.worker);
        }
        self.update_needed(repl);
    }

    /// Wake the workers of the replicas that stream from the backlog.
    pub fn wake_all(&self, repl: &Replication) {
        for feed in self.feeds.lock().iter() {
            feed.wake(repl);
        }
    }

    /// Tell the backlog the oldest offset of each stream a replica still needs.
    fn update_needed(&self, repl: &Replication) {
        let feeds = self.feeds.lock();
        for layout in LAYOUTS {
            let needed = feeds
                .iter()
                .filter(|f| f.layout == layout)
                .filter_map(|f| f.needs())
                .min();
            repl.backlog.set_needed(layout, needed.unwrap_or(u64::MAX));
        }
    }

    /// Replicas online whose last ack is at most `max_lag_secs` old
    /// (`min_slaves_good_slaves`).
    pub fn good(&self, max_lag_secs: u64) -> usize {
        let now = crate::hlc::unix_ms();
        self.feeds
            .lock()
            .iter()
            .filter(|f| {
                f.is_online()
                    && now.saturating_sub(f.ack_ms.load(Ordering::Acquire)) <= max_lag_secs * 1000
            })
            .count()
    }

    /// Replicas that acknowledged their stream up to `offsets` at least (WAIT;
    /// the end of each stream, by [`Layout`], when the write was made).
    pub fn acked(&self, offsets: Offsets) -> usize {
        self.feeds
            .lock()
            .iter()
            .filter(|f| f.ack_offset.load(Ordering::Acquire) >= offsets[f.layout as usize])
            .count()
    }

    fn add(&self, feed: Arc<Feed>) {
        self.feeds.lock().push(feed);
    }

    /// Add `feed` to a full sync of its framing and stream that has not begun, if
    /// there is one.
    fn join_waiting(&self, diskless: bool, feed: &Arc<Feed>) -> Option<Arc<Job>> {
        let waiting = self.waiting.lock();
        let job = waiting
            .iter()
            .find(|j| j.diskless == diskless && j.layout == feed.layout)?;
        job.members.lock().push(feed.clone());
        Some(job.clone())
    }

    /// `job` takes no more replicas.
    fn close_waiting(&self, job: &Job) {
        self.waiting.lock().retain(|j| !std::ptr::eq(&**j, job));
    }
}

/// What PSYNC answered.
pub enum Psync {
    /// `+CONTINUE <replid>`: the stream follows from the replica's offset.
    Continue(String),
    /// A full sync was started; its `+FULLRESYNC` comes through the feed.
    Full,
}

/// PSYNC (or SYNC, with `replid` None) from client `client_id` of worker `worker`:
/// continue from `offset` when the history allows it, else start a full sync.
pub fn psync(
    repl: &Arc<Replication>,
    (client_id, worker, ip): (u64, usize, String),
    hello: Hello,
    asked: Option<(&str, u64)>,
) -> Psync {
    let counts = &repl.replicas.syncs;
    let layout = layout_for(repl, &hello);
    let who = (client_id, worker, ip);
    if let Some((replid, offset)) = asked.filter(|_| !hello.rdb_only) {
        if repl.can_continue(layout, replid, offset) {
            counts.partial_ok.fetch_add(1, Ordering::Relaxed);
            // PSYNC counts from 1; the cursor is the bytes before.
            let cursor = offset - 1;
            let stage = Stage::Online { cursor };
            let feed = Arc::new(Feed::new(who, hello, layout, stage));
            feed.ack_offset.store(cursor, Ordering::Release);
            repl.replicas.add(feed.clone());
            repl.replicas.update_needed(repl);
            crate::log_notice!(
                "Partial resynchronization request from {}:{} accepted. Sending {} bytes of backlog starting from offset {offset}.",
                feed.ip,
                feed.hello.listening_port,
                feed.stream_end(repl).saturating_sub(cursor)
            );
            return Psync::Continue(replid.to_string());
        }
        // `PSYNC ? -1` names no history: it asks for a full sync, it is not refused one.
        if replid != "?" {
            counts.partial_err.fetch_add(1, Ordering::Relaxed);
        }
    }
    counts.full.fetch_add(1, Ordering::Relaxed);
    let diskless = repl.host().config().repl_diskless_sync && hello.eof;
    let stage = Stage::WaitSnapshot {
        chunks: VecDeque::new(),
    };
    let mut feed = Feed::new(who, hello, layout, stage);
    feed.diskless = diskless;
    let feed = Arc::new(feed);
    repl.replicas.add(feed.clone());
    if let Some(job) = repl.replicas.join_waiting(diskless, &feed) {
        crate::log_notice!(
            "Replica {}:{} asks for synchronization; it joins the full sync ({}) waiting to start with {} other replica(s)",
            feed.ip,
            feed.hello.listening_port,
            job.framing(),
            job.members.lock().len() - 1
        );
        return Psync::Full;
    }
    let job = Arc::new(Job {
        diskless,
        layout,
        members: Mutex::new(vec![feed.clone()]),
        since: Instant::now(),
    });
    crate::log_notice!(
        "Replica {}:{} asks for synchronization; starting a full resync ({})",
        feed.ip,
        feed.hello.listening_port,
        job.framing()
    );
    repl.replicas.waiting.lock().push(job.clone());
    let repl = repl.clone();
    let spawned = std::thread::Builder::new()
        .name("kvik-repl-sync".into())
        .spawn(move || job.run(&repl));
    if spawned.is_err() {
        crate::log_warning!("Can't start a thread for a full sync");
    }
    Psync::Full
}

/// The stream a replica that said `hello` reads: under active replication, a
/// kvik peer reads the own stream (kvik's envelopes), a KeyDB node (it names
/// itself, not as kvik's) KeyDB's envelopes, any other replica plain commands.
fn layout_for(repl: &Replication, hello: &Hello) -> Layout {
    match (repl.is_active(), hello.uuid, hello.kvik) {
        (false, _, _) | (true, Some(_), true) => Layout::Own,
        (true, Some(_), false) => Layout::KeyDb,
        (true, None, _) => Layout::Plain,
    }
}

/// One full sync: one snapshot, sent to every replica that joined before its point
/// in time. A diskless one waits `repl-diskless-sync-delay` seconds from its first
/// replica for others to join (starting early once
/// `repl-diskless-sync-max-replicas` wait), as Redis 7.0's does; a disk one starts
/// at once, and the replicas asking while it waits for another snapshot join it.
struct Job {
    diskless: bool,
    /// The stream its replicas read.
    layout: Layout,
    /// The replicas it serves. Replicas join while the job is in
    /// [`Replicas::waiting`]; once its point is passed the list only shrinks (a
    /// replica gone).
    members: Mutex<Vec<Arc<Feed>>>,
    /// When its first replica asked.
    since: Instant,
}

impl Job {
    fn framing(&self) -> &'static str {
        if self.diskless {
            "diskless"
        } else {
            "disk"
        }
    }

    /// The replicas still connected (the others leave the list).
    fn live_members(&self) -> Vec<Arc<Feed>> {
        let mut members = self.members.lock();
        members.retain(|f| !f.closed.load(Ordering::Acquire));
        members.clone()
    }

    /// Newlines to every replica waiting, so their links stay alive.
    fn keep_alive(&self, repl: &Replication) {
        let newline: Chunk = Arc::new(b"\n".to_vec());
        for feed in self.live_members() {
            feed.send(newline.clone(), repl);
        }
    }

    /// A diskless job waits for more replicas: until the delay has passed since
    /// its first one asked, or enough replicas wait. False when every replica left.
    fn wait_for_replicas(&self, repl: &Replication) -> bool {
        let mut last_keepalive = Instant::now();
        loop {
            let config = repl.host().config();
            let waiting = self.live_members().len();
            if waiting == 0 || repl.host().stopping() {
                return false;
            }
            let delay = Duration::from_secs(config.repl_diskless_sync_delay.into());
            let enough = config.repl_diskless_sync_max_replicas as usize;
            if self.since.elapsed() >= delay || enough > 0 && waiting >= enough {
                return true;
            }
            if last_keepalive.elapsed() >= Duration::from_secs(1) {
                self.keep_alive(repl);
                last_keepalive = Instant::now();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The job, on its own thread.
    fn run(self: Arc<Self>, repl: &Replication) {
        if self.diskless && !self.wait_for_replicas(repl) {
            repl.replicas.close_waiting(&self);
            return;
        }
        let mut last_keepalive = Instant::now();
        let mut point = None;
        let outcome = loop {
            let result = match self.diskless {
                true => self.stream(repl, &mut point),
                false => self.via_disk(repl, &mut point),
            };
            match result {
                Err(None) => {
                    // Another snapshot is being written: wait for it, keeping the
                    // links (more replicas may join meanwhile).
                    if self.live_members().is_empty() || repl.host().stopping() {
                        repl.replicas.close_waiting(&self);
                        return;
                    }
                    if last_keepalive.elapsed() >= Duration::from_secs(1) {
                        self.keep_alive(repl);
                        last_keepalive = Instant::now();
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                other => break other,
            }
        };
        repl.replicas.close_waiting(&self);
        let members = self.live_members();
        match (outcome, point) {
            (Ok(()), Some(_)) => {
                for feed in members {
                    feed.end_transfer(repl);
                }
            }
            (Err(why), _) => {
                let why = why.unwrap_or_default();
                for feed in members {
                    crate::log_warning!(
                        "Full sync with replica {}:{} failed: {why}",
                        feed.ip,
                        feed.hello.listening_port,
                    );
                    repl.replicas.gone(feed.client_id, repl);
                    repl.host().wake_worker(feed.worker);
                }
            }
            (Ok(()), None) => {}
        }
    }

    /// The point in time of the sync: no replica joins any more; the backlog joins
    /// the effect stream (once), the offset is read and the stream's database
    /// forgotten (and, actively replicating, which writes of each origin are in);
    /// `+FULLRESYNC` is queued for each replica and, diskless, the payload's head.
    /// Runs with every shard held.
    fn point(&self, repl: &Replication, eof_mark: Option<&str>) -> SyncPoint {
        repl.replicas.close_waiting(self);
        repl.listen_effects();
        let (side_replid, offset) = repl.backlog.mark_sync_point(self.layout);
        let replid = side_replid.unwrap_or_else(|| repl.replid());
        let members = self.live_members();
        crate::log_notice!(
            "Starting a full sync snapshot ({}) for {} replica(s): {}",
            self.framing(),
            members.len(),
            members
                .iter()
                .map(|f| format!("{}:{}", f.ip, f.hello.listening_port))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let head: Chunk = Arc::new(match eof_mark {
            Some(mark) => format!("$EOF:{mark}\r\n").into_bytes(),
            None => Vec::new(),
        });
        for feed in &members {
            feed.start_transfer(offset);
            if !feed.hello.plain_sync {
                let line = format!("+FULLRESYNC {replid} {offset}\r\n").into_bytes();
                feed.send(Arc::new(line), repl);
            }
            if !head.is_empty() {
                feed.send(head.clone(), repl);
            }
        }
        repl.replicas.update_needed(repl);
        SyncPoint {
            replid,
            offset,
            seen: (repl.is_active() && self.layout == Layout::Own).then(|| repl.seen.applied_now()),
        }
    }

    /// Diskless: the RDB goes to every replica's socket as it is written, framed
    /// by an end mark.
    fn stream(&self, repl: &Replication, point: &mut Option<u64>) -> Result<(), Option<String>> {
        let mark = super::new_replid();
        let mut out = JobWriter::new(self, repl);
        let at = &mut || {
            let p = self.point(repl, Some(&mark));
            *point = Some(p.offset);
            p
        };
        repl.host().snapshot(at, &mut out)?;
        out.write_all(mark.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| Some(e.to_string()))
    }

    /// `repl-diskless-sync no` (or a replica without `capa eof`): the snapshot goes
    /// to a file in `dir` first, then to the replicas as `$<length>` and the file.
    fn via_disk(&self, repl: &Replication, point: &mut Option<u64>) -> Result<(), Option<String>> {
        let dir = repl.host().config().dir;
        let path = std::path::Path::new(&dir).join(format!(
            "temp-repl-{}-{}.rdb",
            std::process::id(),
            self.members.lock().first().map_or(0, |f| f.client_id)
        ));
        let mut file = std::fs::File::create(&path).map_err(|e| Some(e.to_string()))?;
        let at = &mut || {
            let p = self.point(repl, None);
            *point = Some(p.offset);
            p
        };
        let written = repl.host().snapshot(at, &mut file);
        drop(file);
        let sent = written.and_then(|()| self.send_file(repl, &path));
        let _ = std::fs::remove_file(&path);
        sent
    }

    fn send_file(&self, repl: &Replication, path: &std::path::Path) -> Result<(), Option<String>> {
        let bytes_err = |e: io::Error| Some(e.to_string());
        let len = std::fs::metadata(path).map_err(bytes_err)?.len();
        crate::log_notice!("Starting to transfer the RDB ({len} bytes) to the replicas");
        let mut out = JobWriter::new(self, repl);
        out.write_all(format!("${len}\r\n").as_bytes())
            .map_err(bytes_err)?;
        let mut file = std::fs::File::open(path).map_err(bytes_err)?;
        io::copy(&mut file, &mut out).map_err(bytes_err)?;
        out.flush().map_err(bytes_err)
    }
}

/// Writes a sync's RDB to every replica of the job, in shared chunks: one pass of
/// the snapshot, whatever the number of replicas. A replica gone leaves the job;
/// the write fails once none is left.
struct JobWriter<'a> {
    job: &'a Job,
    repl: &'a Replication,
    buf: Vec<u8>,
}

impl<'a> JobWriter<'a> {
    fn new(job: &'a Job, repl: &'a Replication) -> Self {
        JobWriter {
            job,
            repl,
            buf: Vec::with_capacity(CHUNK),
        }
    }
}

impl Write for JobWriter<'_> {
    /// Takes at most what fills the chunk: every chunk is one exact allocation of
    /// [`CHUNK`] bytes (a chunk grown past its capacity would double it).
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let taken = bytes.len().min(CHUNK - self.buf.len());
        self.buf.extend_from_slice(&bytes[..taken]);
        if self.buf.len() == CHUNK {
            self.flush()?;
        }
        Ok(taken)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Arc::new(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        let mut sent = false;
        for feed in self.job.live_members() {
            sent |= feed.send(chunk.clone(), self.repl);
        }
        match sent {
            true => Ok(()),
            false => Err(io::Error::new(io::ErrorKind::BrokenPipe, "replicas gone")),
        }
    }
}
