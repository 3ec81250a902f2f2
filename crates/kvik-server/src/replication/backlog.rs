//! The replication backlog: the replication stream as bytes, in a ring, and its
//! offset (`master_repl_offset`).
//!
//! On a master the backlog is an [`EffectSink`]: it encodes each effect meant for
//! replicas as RESP, preceded by a SELECT when the database changes, exactly the
//! bytes a replica receives, so its byte count is the offset a Redis replica counts.
//! On a replica it is fed the raw bytes the link applied instead
//! ([`Backlog::append_raw`]), so that the replica's own replicas (a chain) receive
//! the master's stream and count the same offsets.
//!
//! Under active replication every effect is written as an `RREPLAY` envelope
//! instead (see [`super::active`]), which names its database itself: peers learn
//! where each write was born and when.
//!
//! The ring keeps at least `repl-backlog-size` bytes for partial resyncs, and more
//! while a connected replica still needs them (its feed reads from here: the ring is
//! every replica's output buffer), up to the replica output buffer hard limit.
//!
//! Owns the bytes, the offsets and the SELECT / PING framing. Must not touch sockets
//! or connections: feeds copy from here and are woken through [`Backlog::on_append`].

use crate::effects::{encode_command, EffectRef, EffectSink, NodeId};
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

/// What a ring read found.
#[derive(Debug, PartialEq, Eq)]
pub enum Read {
    /// This many bytes were copied (0: nothing new).
    Copied(usize),
    /// The bytes asked for are gone from the ring.
    Lost,
}

/// The form of the stream a replica reads, each a stream of its own (its own
/// bytes, offsets and, for the side ones, replication id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// The node's own stream: plain commands, or kvik's envelopes while the node
    /// replicates actively (what its kvik peers read).
    Own = 0,
    /// Plain commands with SELECTs, for the replicas of an actively replicating
    /// node that read no envelope (redis-server, a kvik replica that is not
    /// active).
    Plain = 1,
    /// KeyDB 6.3's envelopes, for its active replicas.
    KeyDb = 2,
}

/// A position in every stream: an offset per [`Layout`].
pub type Offsets = [u64; 3];

pub const LAYOUTS: [Layout; 3] = [Layout::Own, Layout::Plain, Layout::KeyDb];

struct Ring {
    bytes: VecDeque<u8>,
    /// Offset of the first byte held (Redis's `repl_backlog_first_byte_offset` - 1).
    start: u64,
    /// The database the stream last selected (`None`: unknown, select first).
    db: Option<usize>,
    /// Inside MULTI ... EXEC: a PING or GETACK must wait for the EXEC.
    in_group: bool,
    waiting: Vec<&'static [u8]>,
    /// Bytes kept for partial resyncs.
    size: usize,
    /// The most kept for replicas that still need older bytes.
    retain_max: usize,
    /// The own stream under active replication: effects go out as envelopes.
    /// This node's id, and whether writes born elsewhere are passed on (not with
    /// `multi-master-no-forward`).
    envelopes: Option<(NodeId, bool)>,
    /// The oldest offset a connected replica still needs (`u64::MAX`: none).
    needed: u64,
    /// A side stream's replication id, new each time the stream begins.
    replid: String,
    /// KeyDB's stream: the last MVCC timestamp sent, per origin (KeyDB drops a
    /// write whose timestamp is not past the last one of its origin).
    mvcc: HashMap<NodeId, u64>,
    /// The own stream under active replication: where each envelope lies and
    /// where it was born, oldest first (a peer's feed leaves out the ones born
    /// there).
    envelopes_at: VecDeque<Extent>,
    /// The origins [`Extent::origin`] numbers.
    origins: Vec<NodeId>,
    /// Where each effect is encoded before it is appended (kept, so that
    /// encoding allocates nothing once it is big enough).
    scratch: Vec<u8>,
}

/// Where one envelope lies in the stream.
#[derive(Clone, Copy)]
struct Extent {
    start: u64,
    len: u32,
    /// Its origin's place in [`Ring::origins`].
    origin: u16,
}

impl Extent {
    fn end(&self) -> u64 {
        self.start + u64::from(self.len)
    }
}

/// One stream: its ring and offset.
struct Stream {
    ring: Mutex<Ring>,
    /// Mirror of the end offset for lock-free readers (INFO, ROLE, ACK).
    offset: AtomicU64,
    /// The stream has begun (a replica attached, or this node synced with a master):
    /// before that Redis has no backlog and the offset does not move.
    active: AtomicBool,
}

impl Stream {
    fn new(size: usize) -> Stream {
        Stream {
            ring: Mutex::new(Ring {
                bytes: VecDeque::new(),
                start: 0,
                db: None,
                in_group: false,
                waiting: Vec::new(),
                size,
                retain_max: size,
                needed: u64::MAX,
                envelopes: None,
                replid: String::new(),
                mvcc: HashMap::new(),
                envelopes_at: VecDeque::new(),
                origins: Vec::new(),
                scratch: Vec::new(),
            }),
            offset: AtomicU64::new(0),
            active: AtomicBool::new(false),
        }
    }

    fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    fn offset(&self) -> u64 {
        self.offset.load(Ordering::Acquire)
    }

    fn push(&self, ring: &mut Ring, bytes: &[u8]) {
        ring.bytes.extend(bytes);
        let end = self.offset.load(Ordering::Relaxed) + bytes.len() as u64;
        self.offset.store(end, Ordering::Release);
        // Keep `size` bytes, more while a replica still needs them (within bounds).
        let keep_for_replicas = end.saturating_sub(ring.needed.min(end)) as usize;
        let keep = ring.size.max(keep_for_replicas.min(ring.retain_max));
        if ring.bytes.len() > keep {
            let drop = ring.bytes.len() - keep;
            ring.bytes.drain(..drop);
            ring.start += drop as u64;
            while ring
                .envelopes_at
                .front()
                .is_some_and(|e| e.start < ring.start)
            {
                ring.envelopes_at.pop_front();
            }
        }
    }

    /// Note that the envelope of a write born at `origin` is about to be appended,
    /// `len` bytes.
    fn note_envelope(&self, ring: &mut Ring, origin: &NodeId, len: usize) {
        let index = match ring.origins.iter().position(|o| o == origin) {
            Some(index) => index,
            None => {
                ring.origins.push(*origin);
                ring.origins.len() - 1
            }
        };
        let (Ok(origin), Ok(len)) = (u16::try_from(index), u32::try_from(len)) else {
            return;
        };
        ring.envelopes_at.push_back(Extent {
            start: self.offset.load(Ordering::Relaxed),
            len,
            origin,
        });
    }

    /// Append one effect in this stream's form (nothing when it does not go to
    /// this stream's replicas); a PING waiting for an EXEC follows it.
    fn take(&self, layout: Layout, own: Option<(NodeId, bool)>, effect: &EffectRef<'_>) {
        let mut ring = self.ring.lock();
        let forwarded = own.is_some_and(|(id, forward)| !forward && effect.origin != id);
        if forwarded && layout != Layout::Plain {
            return;
        }
        let mut bytes = std::mem::take(&mut ring.scratch);
        bytes.clear();
        match (layout, own) {
            (Layout::Own, Some(_)) => {
                super::active::encode(effect, &mut bytes);
                self.note_envelope(&mut ring, &effect.origin, bytes.len());
            }
            (Layout::KeyDb, Some((id, _))) => {
                // Each envelope's timestamp past the one before it, as KeyDB's
                // clock makes them: ours outside, the origin's inside a forwarded one.
                let mut next = |origin: NodeId| {
                    let last = ring.mvcc.entry(origin).or_default();
                    *last = effect.ts.max(*last + 1);
                    *last
                };
                let ts = match effect.origin == id {
                    true => 0,
                    false => next(effect.origin),
                };
                let mvcc = next(id);
                let write = super::active::KeyDbWrite {
                    origin: &effect.origin,
                    db: effect.db,
                    ts,
                    argv: effect.argv,
                };
                super::active::encode_keydb(&id, &write, mvcc, &mut bytes);
            }
            _ => {
                if ring.db != Some(effect.db) {
                    let db = effect.db.to_string();
                    encode_command(&[b"SELECT", db.as_bytes()], &mut bytes);
                    ring.db = Some(effect.db);
                }
                encode_command(effect.argv, &mut bytes);
            }
        }
        self.push(&mut ring, &bytes);
        ring.scratch = bytes;
        match effect.argv.first() {
            Some(name) if name.eq_ignore_ascii_case(b"MULTI") => ring.in_group = true,
            Some(name) if name.eq_ignore_ascii_case(b"EXEC") => {
                ring.in_group = false;
                for command in std::mem::take(&mut ring.waiting) {
                    self.push(&mut ring, command);
                }
            }
            _ => {}
        }
    }

    /// Append a command of the master's own (PING, REPLCONF GETACK) between
    /// effects; inside a MULTI ... EXEC it waits for the EXEC. Whether it went in.
    fn control(&self, command: &'static [u8]) -> bool {
        if !self.is_active() {
            return false;
        }
        let mut ring = self.ring.lock();
        if ring.in_group {
            if !ring.waiting.contains(&command) {
                ring.waiting.push(command);
            }
            return false;
        }
        self.push(&mut ring, command);
        true
    }

    fn free(&self) {
        let mut ring = self.ring.lock();
        ring.bytes = VecDeque::new();
        ring.envelopes_at = VecDeque::new();
        ring.start = self.offset();
        ring.db = None;
        ring.in_group = false;
        ring.waiting.clear();
        ring.mvcc.clear();
        self.active.store(false, Ordering::Release);
    }
}

/// The streams' bytes and offsets.
pub struct Backlog {
    streams: [Stream; 3],
    /// Effects feed the rings (a master); a replica's own ring is fed raw bytes only.
    from_effects: AtomicBool,
    /// Called after each append (outside nothing: under the ring's caller's locks),
    /// to wake the feeds; set once at start-up.
    wake: OnceLock<Box<dyn Fn() + Send + Sync>>,
}

impl Backlog {
    pub fn new(size: usize) -> Backlog {
        Backlog {
            streams: LAYOUTS.map(|_| Stream::new(size)),
            from_effects: AtomicBool::new(false),
            wake: OnceLock::new(),
        }
    }

    fn stream(&self, layout: Layout) -> &Stream {
        &self.streams[layout as usize]
    }

    fn own(&self) -> &Stream {
        self.stream(Layout::Own)
    }

    /// Set what wakes the feeds after an append.
    pub fn on_append(&self, wake: Box<dyn Fn() + Send + Sync>) {
        let _ = self.wake.set(wake);
    }

    /// `master_repl_offset`: bytes of the own stream so far.
    pub fn offset(&self) -> u64 {
        self.own().offset()
    }

    /// The end offset of each stream, by [`Layout`].
    pub fn offsets(&self) -> Offsets {
        LAYOUTS.map(|layout| self.stream(layout).offset())
    }

    pub fn is_active(&self) -> bool {
        self.own().is_active()
    }

    /// Start (or restart) the own stream at `offset`, empty; the next effect
    /// selects its database first.
    pub fn reset(&self, offset: u64) {
        let own = self.own();
        let mut ring = own.ring.lock();
        ring.bytes.clear();
        ring.envelopes_at.clear();
        ring.start = offset;
        ring.db = None;
        ring.in_group = false;
        ring.waiting.clear();
        own.offset.store(offset, Ordering::Release);
        own.active.store(true, Ordering::Release);
    }

    /// Free the rings (`repl-backlog-ttl` passed without replicas), as Redis frees
    /// its backlog: nothing is kept and the offset stands still until a full sync
    /// begins the stream again ([`Backlog::mark_sync_point`]).
    pub fn free(&self) {
        for stream in &self.streams {
            stream.free();
        }
    }

    /// Take effects from now on (a master), or only raw bytes (a replica). A master
    /// selects its database before its first effect (the stream's last SELECT may
    /// have come from a master before).
    pub fn set_from_effects(&self, yes: bool) {
        let mut ring = self.own().ring.lock();
        if yes && !self.from_effects() {
            ring.db = None;
        }
        self.from_effects.store(yes, Ordering::Release);
    }

    pub fn from_effects(&self) -> bool {
        self.from_effects.load(Ordering::Acquire)
    }

    /// Write the own stream's effects as active replication's envelopes from now
    /// on (`Some((our id, forward))`), or as plain commands.
    pub fn set_envelopes(&self, envelopes: Option<(NodeId, bool)>) {
        self.own().ring.lock().envelopes = envelopes;
    }

    /// `repl-backlog-size` and the replica output hard limit (0: none) changed.
    pub fn resize(&self, size: usize, replica_hard_limit: u64) {
        for stream in &self.streams {
            let mut ring = stream.ring.lock();
            ring.size = size;
            ring.retain_max = match replica_hard_limit {
                0 => usize::MAX,
                hard => size.max(hard as usize),
            };
        }
    }

    /// A replica lost its place (it fell further behind than the ring keeps for
    /// replicas): keep twice as much from now on, so that its next sync, made under
    /// the same load, can catch up instead of looping through full syncs. Returns
    /// the new bound.
    pub fn grow_retention(&self, layout: Layout) -> usize {
        let mut ring = self.stream(layout).ring.lock();
        ring.retain_max = ring.retain_max.saturating_mul(2);
        ring.retain_max
    }

    /// A new full sync of a `layout` replica starts here: the offset now (its
    /// point in time, with every shard held) and the database unknown, so the
    /// stream selects again, as Redis resets `slaveseldb`. Begins the stream if it
    /// had not begun; a side stream begun anew takes a new replication id (it is
    /// returned; the own stream's id is the node's).
    pub fn mark_sync_point(&self, layout: Layout) -> (Option<String>, u64) {
        let stream = self.stream(layout);
        let mut ring = stream.ring.lock();
        if !stream.is_active() {
            ring.start = stream.offset();
            if layout != Layout::Own {
                ring.replid = super::new_replid();
            }
            stream.active.store(true, Ordering::Release);
        }
        ring.db = None;
        let replid = (layout != Layout::Own).then(|| ring.replid.clone());
        (replid, stream.offset())
    }

    /// The replication id of a side stream, once it began.
    pub fn replid_of(&self, layout: Layout) -> Option<String> {
        let stream = self.stream(layout);
        (layout != Layout::Own && stream.is_active()).then(|| stream.ring.lock().replid.clone())
    }

    /// Append bytes a master sent (a replica's stream, passed on verbatim).
    pub fn append_raw(&self, bytes: &[u8]) {
        let own = self.own();
        let mut ring = own.ring.lock();
        own.push(&mut ring, bytes);
        drop(ring);
        self.wake();
    }

    /// Append a PING, as a master does every `repl-ping-replica-period`; inside a
    /// MULTI ... EXEC it waits for the EXEC.
    pub fn ping(&self) {
        self.control(PING);
    }

    /// Ask the replicas to acknowledge their offset now (WAIT); like a PING, it
    /// waits for the end of a MULTI ... EXEC.
    pub fn ask_acks(&self) {
        self.control(GETACK);
    }

    /// Append a command of the master's own (PING, REPLCONF GETACK) to every
    /// stream begun: every form reads them plain (KeyDB's replicas too).
    fn control(&self, command: &'static [u8]) {
        let mut appended = false;
        for stream in &self.streams {
            appended |= stream.control(command);
        }
        if appended {
            self.wake();
        }
    }

    /// Append a watermark marker (`bytes`, see [`super::watermark`]) to the own
    /// stream, for the kvik peers that read it: only while it carries kvik's
    /// envelopes (a redis-server or KeyDB replica reads a side stream, which never
    /// has one), and not inside a MULTI ... EXEC (the next one will do). Returns
    /// the offset just past it, when it went in.
    pub fn watermark(&self, bytes: &[u8]) -> Option<u64> {
        let own = self.own();
        let mut ring = own.ring.lock();
        if !own.is_active() || !self.from_effects() || ring.envelopes.is_none() || ring.in_group {
            return None;
        }
        own.push(&mut ring, bytes);
        let end = own.offset();
        drop(ring);
        self.wake();
        Some(end)
    }

    /// The oldest offset connected `layout` replicas still need (`u64::MAX`: none).
    pub fn set_needed(&self, layout: Layout, offset: u64) {
        self.stream(layout).ring.lock().needed = offset;
    }

    /// Copy the `layout` stream from `offset` to its end, at most `max` bytes, onto
    /// `out`.
    pub fn read(&self, layout: Layout, offset: u64, max: usize, out: &mut Vec<u8>) -> Read {
        let ring = self.stream(layout).ring.lock();
        if offset < ring.start {
            return Read::Lost;
        }
        let from = (offset - ring.start) as usize;
        if from > ring.bytes.len() {
            return Read::Lost;
        }
        let n = (ring.bytes.len() - from).min(max);
        copy(&ring, from, from + n, out);
        Read::Copied(n)
    }

    /// Copy the own stream from `offset` as [`Backlog::read`] does, for the feed
    /// of the active peer `peer`, leaving out the envelopes of the writes born
    /// there (it would drop them): each run of them becomes one marker saying how
    /// many bytes it held ([`super::active::encode_skip`]), which the peer counts
    /// as those bytes, so its offsets stay the stream's. `Copied` says how far the
    /// stream was read (bytes copied and left out).
    pub fn read_for_peer(&self, offset: u64, max: usize, peer: &NodeId, out: &mut Vec<u8>) -> Read {
        let ring = self.own().ring.lock();
        let end = ring.start + ring.bytes.len() as u64;
        if offset < ring.start || offset > end {
            return Read::Lost;
        }
        let Some(peer) = ring.origins.iter().position(|o| o == peer) else {
            drop(ring);
            return self.read(Layout::Own, offset, max, out);
        };
        let extents = &ring.envelopes_at;
        let mut next = extents.partition_point(|e| e.start < offset);
        let (mut at, mut copied) = (offset, 0);
        while at < end && copied < max {
            // The peer's next envelope, and the bytes before it.
            while extents
                .get(next)
                .is_some_and(|e| usize::from(e.origin) != peer)
            {
                next += 1;
            }
            let skip_at = extents.get(next).map_or(end, |e| e.start);
            if skip_at > at {
                let upto = skip_at.min(at.saturating_add((max - copied) as u64));
                copy(
                    &ring,
                    (at - ring.start) as usize,
                    (upto - ring.start) as usize,
                    out,
                );
                copied += (upto - at) as usize;
                at = upto;
                continue;
            }
            let mut run_end = at;
            while let Some(e) = extents
                .get(next)
                .filter(|e| e.start == run_end && usize::from(e.origin) == peer)
            {
                run_end = e.end();
                next += 1;
            }
            super::active::encode_skip(run_end - at, out);
            at = run_end;
        }
        Read::Copied((at - offset) as usize)
    }

    /// Can a `layout` replica continue from `offset` (the next byte it needs)?
    pub fn holds(&self, layout: Layout, offset: u64) -> bool {
        let stream = self.stream(layout);
        let ring = stream.ring.lock();
        stream.is_active() && offset >= ring.start && offset <= ring.start + ring.bytes.len() as u64
    }

    /// INFO's `repl_backlog_first_byte_offset` and `repl_backlog_histlen`.
    pub fn span(&self) -> (u64, u64) {
        let ring = self.own().ring.lock();
        (ring.start + 1, ring.bytes.len() as u64)
    }

    fn wake(&self) {
        if let Some(wake) = self.wake.get() {
            wake();
        }
    }
}

/// Append the ring's bytes `from..to` (indexes into the ring) to `out`.
fn copy(ring: &Ring, from: usize, to: usize, out: &mut Vec<u8>) {
    let (a, b) = ring.bytes.as_slices();
    let split = a.len();
    out.extend_from_slice(&a[from.min(split)..to.min(split)]);
    out.extend_from_slice(&b[from.saturating_sub(split)..to.saturating_sub(split)]);
}

const PING: &[u8] = b"*1\r\n$4\r\nPING\r\n";
const GETACK: &[u8] = b"*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n";

impl EffectSink for Backlog {
    fn take(&self, effect: &EffectRef<'_>) -> bool {
        // A freed stream (or one not begun) records nothing: the offset stands
        // still, as Redis's does without a backlog.
        let peers_only = effect.targets.peers_only();
        let beside_peers = effect.targets.beside_peers();
        if !(effect.targets.replicas() || peers_only || beside_peers) || !self.from_effects() {
            return true;
        }
        let own = self.own().ring.lock().envelopes;
        if peers_only && own.is_none() {
            return true;
        }
        let mut appended = false;
        for layout in LAYOUTS {
            let stream = self.stream(layout);
            // The side streams run only beside envelopes: otherwise the own stream
            // is plain and serves every replica. What goes to the peers alone goes
            // in the envelope stream alone; what goes beside them, everywhere else.
            let takes = match layout {
                Layout::Own => !(beside_peers && own.is_some()),
                _ => own.is_some() && !peers_only,
            };
            if stream.is_active() && takes {
                stream.take(layout, own, effect);
                appended = true;
            }
        }
        if appended {
            self.wake();
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effects::{Birth, EffectLog, Targets};
    use std::sync::Arc;

    fn stream(b: &Backlog, from: u64) -> Vec<u8> {
        let mut out = Vec::new();
        assert_eq!(
            b.read(Layout::Own, from, usize::MAX, &mut out),
            Read::Copied(out.len())
        );
        out
    }

    #[test]
    fn effects_become_the_stream_with_selects_and_its_offset_counts_them() {
        let log = EffectLog::new([1; 16]);
        let backlog = Arc::new(Backlog::new(1 << 20));
        backlog.set_from_effects(true);
        log.add_sink(backlog.clone(), |_| {});
        let (_, start) = backlog.mark_sync_point(Layout::Own);
        log.append(0, 1, &[b"SET", b"k", b"v"]);
        log.append(0, 1, &[b"DEL", b"k"]);
        log.append_to(0, 1, &[b"SET", b"a", b"b"], Targets::AOF);
        log.append(3, 1, &[b"INCR", b"n"]);
        let expected =
            b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n\
*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n3\r\n*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n";
        assert_eq!(stream(&backlog, start), expected.to_vec());
        assert_eq!(backlog.offset(), start + expected.len() as u64);
        // A new sync point forgets the database: the next effect selects again.
        backlog.mark_sync_point(Layout::Own);
        log.append(3, 1, &[b"DEL", b"n"]);
        assert!(stream(&backlog, start + expected.len() as u64).starts_with(b"*2\r\n$6\r\nSELECT"));
    }

    #[test]
    fn a_ping_waits_for_the_end_of_a_transaction() {
        let backlog = Backlog::new(1 << 20);
        backlog.set_from_effects(true);
        backlog.reset(100);
        let log = EffectLog::new([1; 16]);
        let backlog = Arc::new(backlog);
        log.add_sink(backlog.clone(), |_| {});
        log.append(0, 1, &[b"MULTI"]);
        backlog.ping();
        log.append(0, 1, &[b"SET", b"k", b"v"]);
        log.append(0, 1, &[b"EXEC"]);
        let bytes = stream(&backlog, 100);
        assert!(bytes.ends_with(b"*1\r\n$4\r\nEXEC\r\n*1\r\n$4\r\nPING\r\n"));
    }

    #[test]
    fn the_ring_keeps_its_size_and_what_replicas_need() {
        let backlog = Backlog::new(16);
        backlog.resize(16, 64);
        backlog.reset(0);
        backlog.append_raw(&[b'x'; 40]);
        assert_eq!(backlog.span(), (25, 16));
        let mut out = Vec::new();
        assert_eq!(backlog.read(Layout::Own, 10, 100, &mut out), Read::Lost);
        backlog.set_needed(Layout::Own, 40);
        backlog.append_raw(&[b'y'; 40]);
        assert_eq!(
            backlog.read(Layout::Own, 40, 100, &mut out),
            Read::Copied(40)
        );
        backlog.append_raw(&[b'z'; 40]);
        assert_eq!(
            backlog.span(),
            (57, 64),
            "at most the hard limit for a lagging replica"
        );
        let holds = |at| backlog.holds(Layout::Own, at);
        assert!(holds(120) && !holds(40) && !holds(121));
    }

    fn side(b: &Backlog, layout: Layout, from: u64) -> Vec<u8> {
        let mut out = Vec::new();
        assert_eq!(
            b.read(layout, from, usize::MAX, &mut out),
            Read::Copied(out.len())
        );
        out
    }

    /// An active node's backlog (envelopes, forwarding), fed by its effect log.
    fn active_backlog(own: NodeId) -> (EffectLog, Arc<Backlog>) {
        let log = EffectLog::new(own);
        let backlog = Arc::new(Backlog::new(1 << 20));
        backlog.set_from_effects(true);
        backlog.set_envelopes(Some((own, true)));
        log.add_sink(backlog.clone(), |_| {});
        (log, backlog)
    }

    #[test]
    fn an_active_nodes_plain_replicas_get_plain_commands_in_a_stream_of_their_own() {
        let own_id = [1; 16];
        let (log, backlog) = active_backlog(own_id);
        backlog.mark_sync_point(Layout::Own);
        log.append(2, 1, &[b"SET", b"k", b"v"]);
        let (replid, start) = backlog.mark_sync_point(Layout::Plain);
        assert_eq!((replid.as_ref().map(String::len), start), (Some(40), 0));
        assert_eq!(backlog.replid_of(Layout::Plain), replid);
        log.append(2, 1, &[b"DEL", b"k"]);
        backlog.ping();
        let plain = side(&backlog, Layout::Plain, 0);
        assert_eq!(
            plain,
            b"*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n"
        );
        assert_eq!(
            backlog.offsets()[Layout::Plain as usize],
            plain.len() as u64
        );
        assert!(side(&backlog, Layout::Own, 0).starts_with(b"*6\r\n$7\r\nRREPLAY"));
        assert_eq!(backlog.replid_of(Layout::KeyDb), None, "not begun");
        backlog.free();
        let (again, _) = backlog.mark_sync_point(Layout::Plain);
        assert_ne!(again, replid, "a stream begun anew is a new history");
    }

    #[test]
    fn what_goes_to_the_peers_alone_stays_out_of_the_plain_and_keydb_streams() {
        let (log, backlog) = active_backlog([1; 16]);
        for layout in LAYOUTS {
            backlog.mark_sync_point(layout);
        }
        log.append_to(0, 1, &[b"DEL", b"k"], Targets::PEERS);
        let own = side(&backlog, Layout::Own, 0);
        assert!(own.starts_with(b"*6\r\n$7\r\nRREPLAY"), "{own:?}");
        assert!(side(&backlog, Layout::Plain, 0).is_empty());
        assert!(side(&backlog, Layout::KeyDb, 0).is_empty());
    }

    #[test]
    fn what_goes_beside_the_peers_stays_out_of_the_envelope_stream() {
        let (log, backlog) = active_backlog([1; 16]);
        for layout in LAYOUTS {
            backlog.mark_sync_point(layout);
        }
        log.append_to(0, 1, &[b"SET", b"k", b"3"], Targets::BESIDE_PEERS);
        assert!(side(&backlog, Layout::Own, 0).is_empty());
        let plain = side(&backlog, Layout::Plain, 0);
        assert!(plain.ends_with(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n3\r\n"));
        assert!(!side(&backlog, Layout::KeyDb, 0).is_empty());
        // Without envelopes the own stream is plain: it serves every replica.
        let plain_master = Backlog::new(1 << 20);
        plain_master.set_from_effects(true);
        let log = EffectLog::new([1; 16]);
        let plain_master = Arc::new(plain_master);
        log.add_sink(plain_master.clone(), |_| {});
        plain_master.mark_sync_point(Layout::Own);
        log.append_to(0, 1, &[b"SET", b"k", b"3"], Targets::BESIDE_PEERS);
        assert!(side(&plain_master, Layout::Own, 0).ends_with(b"$1\r\n3\r\n"));
    }

    #[test]
    fn keydb_replicas_get_keydbs_envelopes_with_rising_timestamps() {
        let own_id = [1; 16];
        let (log, backlog) = active_backlog(own_id);
        backlog.mark_sync_point(Layout::KeyDb);
        log.append(0, 50 << 20, &[b"SET", b"k", b"v"]);
        log.append(0, 40 << 20, &[b"SET", b"k", b"w"]);
        let stream = side(&backlog, Layout::KeyDb, 0);
        let mut parser = kvik_resp::RequestParser::new();
        let mut at = 0;
        let mut stamps = Vec::new();
        while at < stream.len() {
            let data = &stream[at..];
            let kvik_resp::Parsed::Command { consumed } =
                parser.parse(data, kvik_resp::Limits::default()).unwrap()
            else {
                panic!("a whole command")
            };
            let args: Vec<&[u8]> = parser.args(data).collect();
            assert_eq!(args.len(), 5, "KeyDB's layout has no seq");
            assert_eq!(args[1], super::super::active::uuid_text(&own_id).as_bytes());
            stamps.push(
                std::str::from_utf8(args[4])
                    .unwrap()
                    .parse::<u64>()
                    .unwrap(),
            );
            at += consumed;
        }
        assert_eq!(stamps, [50 << 20, (50 << 20) + 1]);
    }

    #[test]
    fn watermarks_go_only_to_the_envelope_stream_and_never_inside_a_transaction() {
        let marker = b"*3\r\n$8\r\nREPLCONF\r\n$9\r\nWATERMARK\r\n$1\r\n0\r\n";
        // A plain master's stream (a redis-server replica reads it): none.
        let plain = Backlog::new(1 << 20);
        plain.set_from_effects(true);
        plain.mark_sync_point(Layout::Own);
        assert_eq!(plain.watermark(marker), None);
        let own = [1; 16];
        let (log, backlog) = active_backlog(own);
        assert_eq!(backlog.watermark(marker), None, "no stream begun");
        backlog.mark_sync_point(Layout::Own);
        backlog.mark_sync_point(Layout::Plain);
        log.append(0, 1 << 20, &[b"SET", b"k", b"v"]);
        let before = backlog.offset();
        assert_eq!(
            backlog.watermark(marker),
            Some(before + marker.len() as u64)
        );
        log.append(0, 2 << 20, &[b"MULTI"]);
        assert_eq!(backlog.watermark(marker), None);
        log.append(0, 2 << 20, &[b"EXEC"]);
        let whole = side(&backlog, Layout::Own, 0);
        assert_eq!(
            whole.windows(marker.len()).filter(|w| w == marker).count(),
            1
        );
        assert_eq!(backlog.offset(), whole.len() as u64);
        let plain_side = side(&backlog, Layout::Plain, 0);
        assert!(!plain_side.windows(9).any(|w| w == b"WATERMARK"));
        // A peer's feed reads it as it is: it counts in the peer's offsets.
        let mut peer = Vec::new();
        backlog.read_for_peer(0, usize::MAX, &[2; 16], &mut peer);
        assert_eq!(peer, whole);
    }

    #[test]
    fn a_peer_reads_the_stream_without_its_own_writes_but_counts_their_bytes() {
        let (own, peer, other) = ([1; 16], [2; 16], [3; 16]);
        let (log, backlog) = active_backlog(own);
        backlog.mark_sync_point(Layout::Own);
        let born_at = |origin: NodeId, seq: u64, key: &[u8]| {
            let birth = Birth { origin, seq };
            crate::effects::replaying(birth, || log.append(0, seq << 20, &[b"SET", key, b"v"]));
        };
        born_at(peer, 1, b"p1");
        born_at(peer, 2, b"p2");
        log.append(0, 3 << 20, &[b"SET", b"mine", b"v"]);
        backlog.ping();
        born_at(other, 1, b"o1");
        born_at(peer, 3, b"p3");
        let whole = side(&backlog, Layout::Own, 0);
        let mut all = Vec::new();
        assert_eq!(
            backlog.read_for_peer(0, usize::MAX, &peer, &mut all),
            Read::Copied(whole.len())
        );
        // What the peer receives: markers for its writes, the rest as it is.
        let mut parser = kvik_resp::RequestParser::new();
        let (mut at, mut counted, mut keys) = (0, 0, Vec::new());
        while at < all.len() {
            let data = &all[at..];
            let kvik_resp::Parsed::Command { consumed } =
                parser.parse(data, kvik_resp::Limits::default()).unwrap()
            else {
                panic!("whole commands")
            };
            let args: Vec<&[u8]> = parser.args(data).collect();
            match super::super::active::skipped(&args) {
                Some(n) => counted += n as usize,
                None => {
                    counted += consumed;
                    match super::super::active::open(&args) {
                        Some(envelope) => {
                            assert_ne!(envelope.origin, peer);
                            keys.push(envelope.command.to_vec());
                        }
                        None => keys.push(args[0].to_vec()),
                    }
                }
            }
            at += consumed;
        }
        assert_eq!(counted, whole.len(), "the offsets are the stream's");
        assert_eq!(keys.len(), 3, "mine, PING, o1");
        assert!(all.len() < whole.len());
        // Read a few bytes at a time, from any place the peer can stand at.
        let mut pieces = Vec::new();
        let mut cursor = 0;
        while cursor < whole.len() as u64 {
            let Read::Copied(n) = backlog.read_for_peer(cursor, 7, &peer, &mut pieces) else {
                panic!("lost")
            };
            cursor += n as u64;
        }
        assert_eq!(pieces, all);
        // A feed for a node that wrote nothing here reads the stream whole.
        let mut plain = Vec::new();
        backlog.read_for_peer(0, usize::MAX, &[9; 16], &mut plain);
        assert_eq!(plain, whole);
    }
}
