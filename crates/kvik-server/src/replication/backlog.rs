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

use crate::effects::{encode_command, Birth, EffectRef, EffectSink, NodeId};
use parking_lot::Mutex;
use std::collections::VecDeque;
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
    /// Active replication: effects go out as envelopes. This node's id, and whether
    /// writes born elsewhere are passed on (not with `multi-master-no-forward`).
    envelopes: Option<(NodeId, bool)>,
    /// The oldest offset a connected replica still needs (`u64::MAX`: none).
    needed: u64,
}

/// The stream's bytes and offset.
pub struct Backlog {
    ring: Mutex<Ring>,
    /// Mirror of the end offset for lock-free readers (INFO, ROLE, ACK).
    offset: AtomicU64,
    /// The stream has begun (a replica attached, or this node synced with a master):
    /// before that Redis has no backlog and the offset does not move.
    active: AtomicBool,
    /// Effects feed the ring (a master); a replica's ring is fed raw bytes only.
    from_effects: AtomicBool,
    /// Called after each append (outside nothing: under the ring's caller's locks),
    /// to wake the feeds; set once at start-up.
    wake: OnceLock<Box<dyn Fn() + Send + Sync>>,
}

impl Backlog {
    pub fn new(size: usize) -> Backlog {
        Backlog {
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
            }),
            offset: AtomicU64::new(0),
            active: AtomicBool::new(false),
            from_effects: AtomicBool::new(false),
            wake: OnceLock::new(),
        }
    }

    /// Set what wakes the feeds after an append.
    pub fn on_append(&self, wake: Box<dyn Fn() + Send + Sync>) {
        let _ = self.wake.set(wake);
    }

    /// `master_repl_offset`: bytes of stream so far.
    pub fn offset(&self) -> u64 {
        self.offset.load(Ordering::Acquire)
    }

    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// Start (or restart) the stream at `offset`, empty; the next effect selects its
    /// database first.
    pub fn reset(&self, offset: u64) {
        let mut ring = self.ring.lock();
        ring.bytes.clear();
        ring.start = offset;
        ring.db = None;
        ring.in_group = false;
        ring.waiting.clear();
        self.offset.store(offset, Ordering::Release);
        self.active.store(true, Ordering::Release);
    }

    /// Free the ring (`repl-backlog-ttl` passed without replicas), as Redis frees
    /// its backlog: nothing is kept and the offset stands still until a full sync
    /// begins the stream again ([`Backlog::mark_sync_point`]).
    pub fn free(&self) {
        let mut ring = self.ring.lock();
        ring.bytes = VecDeque::new();
        ring.start = self.offset();
        ring.db = None;
        ring.in_group = false;
        ring.waiting.clear();
        self.active.store(false, Ordering::Release);
    }

    /// Take effects from now on (a master), or only raw bytes (a replica). A master
    /// selects its database before its first effect (the stream's last SELECT may
    /// have come from a master before).
    pub fn set_from_effects(&self, yes: bool) {
        let mut ring = self.ring.lock();
        if yes && !self.from_effects() {
            ring.db = None;
        }
        self.from_effects.store(yes, Ordering::Release);
    }

    pub fn from_effects(&self) -> bool {
        self.from_effects.load(Ordering::Acquire)
    }

    /// Write effects as active replication's envelopes from now on (`Some((our id,
    /// forward))`), or as plain commands.
    pub fn set_envelopes(&self, envelopes: Option<(NodeId, bool)>) {
        self.ring.lock().envelopes = envelopes;
    }

    /// `repl-backlog-size` and the replica output hard limit (0: none) changed.
    pub fn resize(&self, size: usize, replica_hard_limit: u64) {
        let mut ring = self.ring.lock();
        ring.size = size;
        ring.retain_max = match replica_hard_limit {
            0 => usize::MAX,
            hard => size.max(hard as usize),
        };
    }

    /// A replica lost its place (it fell further behind than the ring keeps for
    /// replicas): keep twice as much from now on, so that its next sync, made under
    /// the same load, can catch up instead of looping through full syncs. Returns
    /// the new bound.
    pub fn grow_retention(&self) -> usize {
        let mut ring = self.ring.lock();
        ring.retain_max = ring.retain_max.saturating_mul(2);
        ring.retain_max
    }

    /// A new full sync starts here: the offset now (its point in time, with every
    /// shard held) and the database unknown, so the stream selects again, as Redis
    /// resets `slaveseldb`. Begins the stream if it had not begun.
    pub fn mark_sync_point(&self) -> u64 {
        let mut ring = self.ring.lock();
        if !self.active.load(Ordering::Acquire) {
            ring.start = self.offset.load(Ordering::Acquire);
            self.active.store(true, Ordering::Release);
        }
        ring.db = None;
        self.offset.load(Ordering::Acquire)
    }

    /// Append bytes a master sent (a replica's stream, passed on verbatim).
    pub fn append_raw(&self, bytes: &[u8]) {
        let mut ring = self.ring.lock();
        self.push(&mut ring, bytes);
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

    /// Append a command of the master's own (PING, REPLCONF GETACK) between effects.
    fn control(&self, command: &'static [u8]) {
        if !self.is_active() {
            return;
        }
        let mut ring = self.ring.lock();
        if ring.in_group {
            if !ring.waiting.contains(&command) {
                ring.waiting.push(command);
            }
            return;
        }
        self.push(&mut ring, command);
        drop(ring);
        self.wake();
    }

    /// The oldest offset connected replicas still need (`u64::MAX`: none).
    pub fn set_needed(&self, offset: u64) {
        self.ring.lock().needed = offset;
    }

    /// Copy the stream from `offset` to its end, at most `max` bytes, onto `out`.
    pub fn read(&self, offset: u64, max: usize, out: &mut Vec<u8>) -> Read {
        let ring = self.ring.lock();
        if offset < ring.start {
            return Read::Lost;
        }
        let from = (offset - ring.start) as usize;
        if from > ring.bytes.len() {
            return Read::Lost;
        }
        let n = (ring.bytes.len() - from).min(max);
        let (a, b) = ring.bytes.as_slices();
        let (end, split) = (from + n, a.len());
        out.extend_from_slice(&a[from.min(split)..end.min(split)]);
        out.extend_from_slice(&b[from.saturating_sub(split)..end.saturating_sub(split)]);
        Read::Copied(n)
    }

    /// Can a replica continue from `offset` (the next byte it needs)?
    pub fn holds(&self, offset: u64) -> bool {
        let ring = self.ring.lock();
        self.active.load(Ordering::Acquire)
            && offset >= ring.start
            && offset <= ring.start + ring.bytes.len() as u64
    }

    /// INFO's `repl_backlog_first_byte_offset` and `repl_backlog_histlen`.
    pub fn span(&self) -> (u64, u64) {
        let ring = self.ring.lock();
        (ring.start + 1, ring.bytes.len() as u64)
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
        }
    }

    fn wake(&self) {
        if let Some(wake) = self.wake.get() {
            wake();
        }
    }
}

const PING: &[u8] = b"*1\r\n$4\r\nPING\r\n";
const GETACK: &[u8] = b"*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n";

impl EffectSink for Backlog {
    fn take(&self, effect: &EffectRef<'_>) -> bool {
        // A freed backlog (or one not begun) records nothing: the offset stands
        // still, as Redis's does without a backlog.
        if !effect.targets.replicas() || !self.from_effects() || !self.is_active() {
            return true;
        }
        let mut bytes = Vec::with_capacity(64);
        let mut ring = self.ring.lock();
        match ring.envelopes {
            Some((own, forward)) => {
                if !forward && effect.origin != own {
                    return true;
                }
                let birth = Birth {
                    origin: effect.origin,
                    seq: effect.seq,
                };
                super::active::encode(&birth, effect.db, effect.ts, effect.argv, &mut bytes);
            }
            None => {
                if ring.db != Some(effect.db) {
                    let db = effect.db.to_string();
                    encode_command(&[b"SELECT", db.as_bytes()], &mut bytes);
                    ring.db = Some(effect.db);
                }
                encode_command(effect.argv, &mut bytes);
            }
        }
        self.push(&mut ring, &bytes);
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
        drop(ring);
        self.wake();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effects::{EffectLog, Targets};
    use std::sync::Arc;

    fn stream(b: &Backlog, from: u64) -> Vec<u8> {
        let mut out = Vec::new();
        assert_eq!(b.read(from, usize::MAX, &mut out), Read::Copied(out.len()));
        out
    }

    #[test]
    fn effects_become_the_stream_with_selects_and_its_offset_counts_them() {
        let log = EffectLog::new([1; 16]);
        let backlog = Arc::new(Backlog::new(1 << 20));
        backlog.set_from_effects(true);
        log.add_sink(backlog.clone(), |_| {});
        let start = backlog.mark_sync_point();
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
        backlog.mark_sync_point();
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
        assert_eq!(backlog.read(10, 100, &mut out), Read::Lost);
        backlog.set_needed(40);
        backlog.append_raw(&[b'y'; 40]);
        assert_eq!(backlog.read(40, 100, &mut out), Read::Copied(40));
        backlog.append_raw(&[b'z'; 40]);
        assert_eq!(
            backlog.span(),
            (57, 64),
            "at most the hard limit for a lagging replica"
        );
        assert!(backlog.holds(120) && !backlog.holds(40) && !backlog.holds(121));
    }
}
