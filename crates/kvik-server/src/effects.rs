//! The effect stream: the one ordered sequence of deterministic writes behind AOF,
//! replication and active-active.
//!
//! Every write command appends the exact commands that reproduce it elsewhere
//! (EXPIRE becomes PEXPIREAT, an expired key becomes DEL, ...) while it still holds
//! the shard locks of the keys it wrote, so two conflicting writes appear here in the
//! order they were executed. Each effect carries its database, its argv, its MVCC
//! timestamp, the node it came from, and the offset at which it starts; the offset
//! grows by the size of the effect's RESP encoding, the way Redis counts
//! `master_repl_offset`.
//!
//! Owns the sequence and its sinks. Must not decide *what* a command
//! propagates: commands and the keyspace do that.
//!
//! Each effect also says where it goes ([`Targets`]): the AOF, the replicas, or both
//! (the default). A script narrows that with `redis.set_repl` (REPL_AOF, REPL_REPLICA);
//! what it writes after `redis.set_repl(redis.REPL_NONE)` is not recorded at all. The
//! stream carries every effect meant for any destination; each consumer takes those
//! meant for it (an AOF writer the `aof` ones, replication the `replicas` ones).
//!
//! Consumers are [`EffectSink`]s, called inline, in stream order, under the log's
//! lock: the AOF and the replication backlog copy each effect's bytes into their
//! own buffers there, so that when a command's reply is written its effects are
//! already in every consumer's buffer (what appendfsync always and WAIT rely on).
//! A sink must not block or take other locks that a writer may hold. A channel
//! sink ([`EffectLog::subscribe`]) serves tests and tools that want owned effects.
//!
//! A write replayed from an active-replication peer keeps the identity it was born
//! with: while the replaying thread runs it inside [`replaying`], the effects it
//! yields carry the peer's origin and sequence number instead of ours, so that every
//! node passes it on as the peer's write, and a node that meets it again (its own, or
//! one it has applied by another path) knows it.
//!
//! Nothing is recorded while nobody listens (no AOF, no replica, no test subscriber):
//! a write then pays one relaxed atomic load here, nothing more.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

/// This node's identity in the effects it originates.
pub type NodeId = [u8; 16];

/// This node's id: the origin of the writes it makes, whose timestamps carry its
/// tag (`hlc.rs`). Drawn at start-up, and drawn again when a peer turns out to
/// stamp its writes with the same tag (`Replication::settle_shared_tag`). Read
/// on every write and increment of an active node, written once in a long
/// while: a sequence lock, so that readers only load. The ids the node had
/// before stay its own: its writes under them, met again through a mesh, are
/// not applied twice.
pub struct Identity {
    /// Odd while the id is being written.
    version: AtomicU64,
    halves: [AtomicU64; 2],
    has_formers: AtomicBool,
    formers: parking_lot::RwLock<Vec<NodeId>>,
}

impl Identity {
    pub fn new(id: NodeId) -> Identity {
        let (high, low) = halves_of(&id);
        Identity {
            version: AtomicU64::new(0),
            halves: [AtomicU64::new(high), AtomicU64::new(low)],
            has_formers: AtomicBool::new(false),
            formers: parking_lot::RwLock::new(Vec::new()),
        }
    }

    /// The id now.
    pub fn current(&self) -> NodeId {
        loop {
            let before = self.version.load(Ordering::Acquire);
            let high = self.halves[0].load(Ordering::Relaxed);
            let low = self.halves[1].load(Ordering::Relaxed);
            std::sync::atomic::fence(Ordering::Acquire);
            if before & 1 == 0 && self.version.load(Ordering::Relaxed) == before {
                return (u128::from(high) << 64 | u128::from(low)).to_be_bytes();
            }
            std::hint::spin_loop();
        }
    }

    /// Is `id` this node's, now or before?
    pub fn is_own(&self, id: &NodeId) -> bool {
        *id == self.current()
            || (self.has_formers.load(Ordering::Acquire) && self.formers.read().contains(id))
    }

    /// The node is `new` from now on (one writer at a time: see
    /// [`EffectLog::take_new_origin`]).
    fn replace(&self, new: NodeId) {
        let former = self.current();
        self.formers.write().push(former);
        self.has_formers.store(true, Ordering::Release);
        let (high, low) = halves_of(&new);
        let version = self.version.load(Ordering::Relaxed);
        self.version.store(version + 1, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
        self.halves[0].store(high, Ordering::Relaxed);
        self.halves[1].store(low, Ordering::Relaxed);
        self.version.store(version + 2, Ordering::Release);
    }
}

/// The id as two words, the way [`Identity`] keeps it.
fn halves_of(id: &NodeId) -> (u64, u64) {
    let whole = u128::from_be_bytes(*id);
    ((whole >> 64) as u64, whole as u64)
}

/// Where a replayed write was born: its node and its place in that node's stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Birth {
    pub origin: NodeId,
    /// The write's number among its origin's writes for replicas: 1, 2, 3, ...
    /// without gaps, whatever thread made it (timestamps do not grow across
    /// threads), an atomic group's effects sharing one. A peer that has met every
    /// number up to n knows it holds every write of the origin up to n.
    pub seq: u64,
}

thread_local! {
    static REPLAYING: std::cell::Cell<Option<Birth>> = const { std::cell::Cell::new(None) };
}

/// Run `f` so that the effects it yields are this node's own, even while a peer's
/// write is being applied (a repair this node sends of its own value).
pub fn as_own<R>(f: impl FnOnce() -> R) -> R {
    let before = REPLAYING.with(|r| r.replace(None));
    let result = f();
    REPLAYING.with(|r| r.set(before));
    result
}

/// Is this thread applying a peer's write (inside [`replaying`])?
pub fn replaying_now() -> bool {
    birth_now().is_some()
}

/// The birth of the peer's write this thread is applying, if it is.
pub fn birth_now() -> Option<Birth> {
    REPLAYING.with(std::cell::Cell::get)
}

/// Run `f` (a peer's write being applied) so that the effects it yields carry
/// `birth` instead of this node's identity.
pub fn replaying<R>(birth: Birth, f: impl FnOnce() -> R) -> R {
    let before = REPLAYING.with(|r| r.replace(Some(birth)));
    let result = f();
    REPLAYING.with(|r| r.set(before));
    result
}

/// Where an effect goes: a set of destinations. The bits are Redis's, which scripts
/// see as `redis.REPL_AOF` (1) and `redis.REPL_REPLICA` (2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Targets(u8);

impl Targets {
    /// Nowhere: the write is not propagated (`redis.REPL_NONE`).
    pub const NONE: Targets = Targets(0);
    /// The append-only file only (`redis.REPL_AOF`).
    pub const AOF: Targets = Targets(1);
    /// The replicas only (`redis.REPL_REPLICA`).
    pub const REPLICAS: Targets = Targets(2);
    /// Every destination: what every write propagates unless a script says otherwise.
    pub const ALL: Targets = Targets(3);
    /// The active-replication peers alone (kvik's envelope stream), never the AOF
    /// nor a plain replica: a peer's command dropped here that still travels on with
    /// its transaction (see [`crate::keyspace::Locked::forward_dropped`]). Not one of
    /// Redis's bits: scripts cannot name it.
    pub const PEERS: Targets = Targets(4);
    /// The AOF and the replicas that are not kvik peers (plain replicas, KeyDB
    /// nodes), never the peers' envelope stream: what this node tells them of a
    /// peer's write it applied otherwise than the write says (a counter's reset
    /// that went under later increments, see
    /// [`crate::keyspace::Locked::recount_after_reset`]); the peers judge that
    /// write themselves. Not one of Redis's bits: scripts cannot name it.
    pub const BESIDE_PEERS: Targets = Targets(1 | 8);

    /// The destinations `redis.set_repl` names by these bits; `None` for bits
    /// outside them.
    pub fn from_bits(bits: i32) -> Option<Targets> {
        u8::try_from(bits)
            .ok()
            .filter(|b| b & !Self::ALL.0 == 0)
            .map(Targets)
    }

    pub fn aof(self) -> bool {
        self.0 & Self::AOF.0 != 0
    }

    pub fn replicas(self) -> bool {
        self.0 & Self::REPLICAS.0 != 0
    }

    /// Does it go to the active peers alone ([`Targets::PEERS`])?
    pub fn peers_only(self) -> bool {
        self == Self::PEERS
    }

    /// Does it go to the replicas that are not kvik peers alone, beside the AOF
    /// ([`Targets::BESIDE_PEERS`])?
    pub fn beside_peers(self) -> bool {
        self.0 & 8 != 0
    }

    pub fn is_none(self) -> bool {
        self == Self::NONE
    }

    /// The destinations in both sets.
    pub fn and(self, other: Targets) -> Targets {
        Targets(self.0 & other.0)
    }
}

/// One deterministic write, as a sink sees it: borrowed, valid for the call.
#[derive(Debug, Clone, Copy)]
pub struct EffectRef<'a> {
    /// Where this effect starts (see [`Effect::offset`]).
    pub offset: u64,
    pub db: usize,
    pub argv: &'a [&'a [u8]],
    pub ts: u64,
    pub origin: NodeId,
    /// Its number among its origin's writes ([`Birth::seq`]); 0 when unknown (a
    /// KeyDB peer's write, or one for the AOF alone).
    pub seq: u64,
    /// Where it goes; never [`Targets::NONE`].
    pub targets: Targets,
    /// For a removal of elements under active replication: the newest add of each
    /// it saw (keyspace/elements.rs); empty otherwise.
    pub observed: &'a [u64],
    /// A peer's write applied here cut down: the whole of it, for the active peers.
    pub as_born: Option<&'a AsBorn>,
}

/// A peer's write of collection elements that applied here cut down (elements
/// that changed nothing here left out), as it was born: what the active peers get
/// instead of the cut-down form the AOF and plain replicas get. Each peer judges
/// every element itself, and a peer that meets the write by two paths keeps the
/// copy it met first: that copy must be the whole write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsBorn {
    pub argv: Vec<Vec<u8>>,
    /// What its removal saw of each element (see [`EffectRef::observed`]).
    pub observed: Vec<u64>,
}

impl EffectRef<'_> {
    /// Was this write born elsewhere (replayed from an active-replication peer)?
    pub fn is_replayed(&self, own: &NodeId) -> bool {
        self.origin != *own
    }

    /// An owned copy.
    pub fn to_owned(&self) -> Effect {
        Effect {
            offset: self.offset,
            db: self.db,
            argv: self.argv.iter().map(|a| a.to_vec()).collect(),
            ts: self.ts,
            origin: self.origin,
            seq: self.seq,
            targets: self.targets,
            observed: self.observed.to_vec(),
            as_born: self.as_born.map(|born| Box::new(born.clone())),
        }
    }
}

/// A consumer of the effect stream (the AOF, the replication backlog, a channel).
pub trait EffectSink: Send + Sync {
    /// Take one effect, in stream order, under the log's lock: copy what is needed
    /// and return; never block. `false` unsubscribes this sink.
    fn take(&self, effect: &EffectRef<'_>) -> bool;
}

/// Sends owned copies of every effect to a channel, until the receiver is dropped.
struct ChannelSink(Mutex<mpsc::Sender<Effect>>);

impl EffectSink for ChannelSink {
    fn take(&self, effect: &EffectRef<'_>) -> bool {
        self.0.lock().send(effect.to_owned()).is_ok()
    }
}

/// One deterministic write, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effect {
    /// Where this effect starts in the replication stream: the offset grows by the
    /// size of each effect that goes to the replicas, so an effect for the AOF alone
    /// starts where the next one will.
    pub offset: u64,
    pub db: usize,
    pub argv: Vec<Vec<u8>>,
    /// MVCC timestamp of the write (see [`crate::hlc`]).
    pub ts: u64,
    pub origin: NodeId,
    /// See [`EffectRef::seq`].
    pub seq: u64,
    /// Where it goes; never [`Targets::NONE`].
    pub targets: Targets,
    /// See [`EffectRef::observed`].
    pub observed: Vec<u64>,
    /// See [`EffectRef::as_born`].
    pub as_born: Option<Box<AsBorn>>,
}

/// Append the RESP multibulk encoding of `argv` to `out`: an effect as replicas and
/// the AOF receive it (and the commands a replica sends its master).
pub fn encode_command(argv: &[&[u8]], out: &mut Vec<u8>) {
    out.push(b'*');
    out.extend_from_slice(itoa::Buffer::new().format(argv.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for arg in argv {
        encode_bulk(arg, out);
    }
}

/// Append one RESP bulk string.
pub fn encode_bulk(arg: &[u8], out: &mut Vec<u8>) {
    out.push(b'$');
    out.extend_from_slice(itoa::Buffer::new().format(arg.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(arg);
    out.extend_from_slice(b"\r\n");
}

impl Effect {
    /// Size of the RESP multibulk encoding of `argv`, which is what a replica receives.
    pub fn encoded_len(argv: &[&[u8]]) -> u64 {
        // Counted, not formatted: this runs for every effect while anyone listens.
        let digits = |n: usize| u64::from(n.checked_ilog10().unwrap_or(0)) + 1;
        let mut len = 1 + digits(argv.len()) + 2;
        for a in argv {
            len += 1 + digits(a.len()) + 2 + a.len() as u64 + 2;
        }
        len
    }
}

/// An effect held back until its atomic group is complete
/// ([`EffectLog::append_group`]).
#[derive(Debug, Clone)]
pub struct GroupedEffect {
    pub db: usize,
    pub ts: u64,
    pub argv: Vec<Vec<u8>>,
    pub targets: Targets,
    /// See [`EffectRef::observed`].
    pub observed: Vec<u64>,
    /// See [`EffectRef::as_born`].
    pub as_born: Option<Box<AsBorn>>,
}

struct Inner {
    offset: u64,
    /// The number of this node's last write for replicas ([`Birth::seq`]).
    own_seq: u64,
    sinks: Vec<Arc<dyn EffectSink>>,
}

/// The node's effect stream.
pub struct EffectLog {
    recording: AtomicBool,
    /// Mirror of the offset for readers that must not take the lock (INFO).
    offset: AtomicU64,
    identity: Arc<Identity>,
    inner: Mutex<Inner>,
}

impl EffectLog {
    pub fn new(origin: NodeId) -> Self {
        EffectLog {
            recording: AtomicBool::new(false),
            offset: AtomicU64::new(0),
            identity: Arc::new(Identity::new(origin)),
            inner: Mutex::new(Inner {
                offset: 0,
                own_seq: 0,
                sinks: Vec::new(),
            }),
        }
    }

    /// Is anyone listening? Writers skip building effects when not.
    #[inline]
    pub fn recording(&self) -> bool {
        self.recording.load(Ordering::Relaxed)
    }

    /// The offset the next effect will start at.
    pub fn offset(&self) -> u64 {
        self.offset.load(Ordering::Relaxed)
    }

    /// This node's id, for whoever must know it (replication's handshakes).
    pub fn identity(&self) -> Arc<Identity> {
        self.identity.clone()
    }

    /// The origin of this node's writes now.
    pub fn origin(&self) -> NodeId {
        self.identity.current()
    }

    /// From now on this node's writes are born as `new`'s, numbered from 1 (its
    /// peers meet a new origin), and stamped with its tag. Taken between two
    /// appends: with `then` (whatever else must change at the same point, such as
    /// the backlog's idea of whose envelopes are its own) under the log's lock.
    /// The caller holds every shard, so that no command is between stamping its
    /// writes and appending them.
    pub fn take_new_origin(&self, new: NodeId, then: impl FnOnce()) {
        let mut inner = self.inner.lock();
        self.identity.replace(new);
        crate::hlc::set_node_tag(&new);
        inner.own_seq = 0;
        then();
    }

    /// Append one effect for every destination. Call it while holding the shard
    /// locks of the keys written.
    pub fn append(&self, db: usize, ts: u64, argv: &[&[u8]]) {
        self.append_to(db, ts, argv, Targets::ALL);
    }

    /// Append one effect for `targets` (none: nothing is recorded). Call it while
    /// holding the shard locks of the keys written.
    pub fn append_to(&self, db: usize, ts: u64, argv: &[&[u8]], targets: Targets) {
        if !self.recording() || targets.is_none() {
            return;
        }
        let mut inner = self.inner.lock();
        let birth = self.birth(&mut inner, targets);
        self.push(&mut inner, birth, Self::draft(db, ts, argv, targets));
        self.note_sinks(&inner);
    }

    /// Where the write being appended (one effect, or one atomic group going to
    /// `targets`) was born: the peer's write being replayed, or ours, numbered
    /// next when it goes to replicas.
    fn birth(&self, inner: &mut Inner, targets: Targets) -> Birth {
        REPLAYING
            .with(std::cell::Cell::get)
            .unwrap_or_else(|| Birth {
                origin: self.identity.current(),
                seq: match targets.replicas() {
                    true => {
                        inner.own_seq += 1;
                        inner.own_seq
                    }
                    false => 0,
                },
            })
    }

    /// Give one effect (born as `birth`; its offset is filled in here) its offset
    /// and hand it to every sink.
    fn push(&self, inner: &mut Inner, birth: Birth, effect: EffectRef<'_>) {
        let effect = EffectRef {
            offset: inner.offset,
            origin: birth.origin,
            seq: birth.seq,
            ..effect
        };
        if effect.targets.replicas() {
            inner.offset += Effect::encoded_len(effect.argv);
            self.offset.store(inner.offset, Ordering::Relaxed);
        }
        inner.sinks.retain(|s| s.take(&effect));
    }

    /// An effect of `argv` for `targets`, its offset and birth yet to come.
    fn draft<'a>(db: usize, ts: u64, argv: &'a [&'a [u8]], targets: Targets) -> EffectRef<'a> {
        EffectRef {
            offset: 0,
            db,
            argv,
            ts,
            origin: NodeId::default(),
            seq: 0,
            targets,
            observed: &[],
            as_born: None,
        }
    }

    /// Stop recording once the last sink has gone.
    fn note_sinks(&self, inner: &Inner) {
        if inner.sinks.is_empty() {
            self.recording.store(false, Ordering::Relaxed);
        }
    }

    /// Append the effects of one atomic group (a transaction's or a script's writes)
    /// as one uninterrupted run: nothing another thread appends can fall between them.
    /// More than one is wrapped in MULTI ... EXEC (the MULTI in the first effect's
    /// database), so that a replica applies them at once too; a single effect goes
    /// alone, as Redis 7.0 propagates it. The group holds only effects that go
    /// somewhere (a script's REPL_NONE writes were never added), and MULTI and EXEC
    /// go to every destination whatever the effects' own targets, as in Redis 7.0
    /// (with both an AOF and replicas). Call it while holding the shard locks of the
    /// keys written.
    pub fn append_group(&self, group: &[GroupedEffect]) {
        if group.is_empty() || !self.recording() {
            return;
        }
        let mut inner = self.inner.lock();
        let wrap = group.len() > 1;
        let (first, last) = (&group[0], &group[group.len() - 1]);
        // A group of peers-only effects (a peer's transaction dropped whole here)
        // is wrapped for the peers alone.
        let wrap_targets = match group.iter().all(|e| e.targets.peers_only()) {
            true => Targets::PEERS,
            false => Targets::ALL,
        };
        let birth = self.birth(&mut inner, if wrap { wrap_targets } else { first.targets });
        if wrap {
            let multi = Self::draft(first.db, first.ts, &[b"MULTI"], wrap_targets);
            self.push(&mut inner, birth, multi);
        }
        for effect in group {
            let argv: Vec<&[u8]> = effect.argv.iter().map(Vec::as_slice).collect();
            let draft = EffectRef {
                observed: &effect.observed,
                as_born: effect.as_born.as_deref(),
                ..Self::draft(effect.db, effect.ts, &argv, effect.targets)
            };
            self.push(&mut inner, birth, draft);
        }
        if wrap {
            // The peers run the transaction at its EXEC, under its timestamp:
            // that of the last write they take. One that goes beside them alone
            // (a peer's reset restated for the AOF and plain replicas, stamped
            // as the key's newest write here) would make them run the reset as
            // a write of that time, which ties with the key there.
            let for_peers = group.iter().rev().find(|e| !e.targets.beside_peers());
            let ts = for_peers.unwrap_or(last).ts;
            let exec = Self::draft(last.db, ts, &[b"EXEC"], wrap_targets);
            self.push(&mut inner, birth, exec);
        }
        self.note_sinks(&inner);
    }

    /// Hand every effect appended from now on to `sink`, until its
    /// [`EffectSink::take`] says no more. `at_start` runs under the log's lock, before
    /// any effect reaches the sink, with the offset the first one will have: a
    /// consumer that starts from a snapshot learns there where the stream resumes.
    pub fn add_sink(&self, sink: Arc<dyn EffectSink>, at_start: impl FnOnce(u64)) {
        let mut inner = self.inner.lock();
        at_start(inner.offset);
        inner.sinks.push(sink);
        self.recording.store(true, Ordering::Relaxed);
    }

    /// Receive owned copies of every effect appended from now on. Dropping the
    /// receiver unsubscribes (noticed at the next append).
    pub fn subscribe(&self) -> mpsc::Receiver<Effect> {
        let (tx, rx) = mpsc::channel();
        self.add_sink(Arc::new(ChannelSink(Mutex::new(tx))), |_| {});
        rx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_origin_numbers_its_writes_from_one_and_the_former_stays_own() {
        let log = EffectLog::new([7; 16]);
        let rx = log.subscribe();
        log.append(0, 1, &[b"SET", b"k", b"v"]);
        log.append(0, 2, &[b"SET", b"k", b"w"]);
        log.take_new_origin([9; 16], || {});
        log.append(0, 3, &[b"SET", b"k", b"x"]);
        let births: Vec<(NodeId, u64)> = rx.try_iter().map(|e| (e.origin, e.seq)).collect();
        assert_eq!(births, vec![([7; 16], 1), ([7; 16], 2), ([9; 16], 1)]);
        let identity = log.identity();
        assert_eq!(identity.current(), [9; 16]);
        assert!(identity.is_own(&[7; 16]) && identity.is_own(&[9; 16]));
        assert!(!identity.is_own(&[8; 16]));
    }

    #[test]
    fn readers_of_the_id_never_see_half_of_two() {
        let identity = Arc::new(Identity::new([1; 16]));
        let reader = {
            let identity = identity.clone();
            std::thread::spawn(move || {
                for _ in 0..200_000 {
                    let id = identity.current();
                    assert!(id.iter().all(|&b| b == id[0]), "{id:?}");
                }
            })
        };
        for round in 0..2_000u32 {
            identity.replace([(round % 250) as u8 + 2; 16]);
        }
        reader.join().unwrap();
    }

    #[test]
    fn offsets_grow_by_resp_size() {
        let log = EffectLog::new([7; 16]);
        log.append(0, 1, &[b"SET", b"k", b"v"]);
        assert_eq!(log.offset(), 0, "nothing recorded without subscribers");
        let rx = log.subscribe();
        log.append(0, 1, &[b"SET", b"k", b"v"]);
        log.append(3, 2, &[b"DEL", b"k"]);
        let a = rx.recv().unwrap();
        let b = rx.recv().unwrap();
        assert_eq!(a.offset, 0);
        let set_len = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n".len() as u64;
        assert_eq!(b.offset, set_len);
        assert_eq!(b.db, 3);
        assert_eq!(b.origin, [7; 16]);
    }

    #[test]
    fn only_effects_for_replicas_advance_the_offset() {
        let log = EffectLog::new([7; 16]);
        let rx = log.subscribe();
        log.append_to(0, 1, &[b"SET", b"k", b"v"], Targets::AOF);
        log.append_to(0, 1, &[b"SET", b"k", b"w"], Targets::NONE);
        log.append_to(0, 1, &[b"SET", b"k", b"x"], Targets::REPLICAS);
        log.append(0, 1, &[b"DEL", b"k"]);
        let seen: Vec<(u64, Targets)> = rx.try_iter().map(|e| (e.offset, e.targets)).collect();
        let set_len = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n".len() as u64;
        assert_eq!(
            seen,
            [
                (0, Targets::AOF),
                (0, Targets::REPLICAS),
                (set_len, Targets::ALL)
            ]
        );
    }

    #[test]
    fn a_group_for_the_peers_alone_is_wrapped_for_them_alone() {
        let log = EffectLog::new([7; 16]);
        let rx = log.subscribe();
        let effect = |targets| GroupedEffect {
            db: 0,
            ts: 1,
            argv: vec![b"DEL".to_vec(), b"k".to_vec()],
            targets,
            observed: Vec::new(),
            as_born: None,
        };
        log.append_group(&[effect(Targets::PEERS), effect(Targets::PEERS)]);
        assert_eq!(log.offset(), 0, "the peers' effects take no replica offset");
        log.append_group(&[effect(Targets::PEERS), effect(Targets::ALL)]);
        let seen: Vec<Targets> = rx.try_iter().map(|e| e.targets).collect();
        let (peers, all) = (Targets::PEERS, Targets::ALL);
        assert_eq!(seen, [peers, peers, peers, peers, all, peers, all, all]);
    }

    #[test]
    fn set_repl_flags_are_the_target_bits() {
        assert_eq!(Targets::from_bits(0), Some(Targets::NONE));
        assert_eq!(Targets::from_bits(1), Some(Targets::AOF));
        assert_eq!(Targets::from_bits(2), Some(Targets::REPLICAS));
        assert_eq!(Targets::from_bits(3), Some(Targets::ALL));
        assert_eq!(Targets::from_bits(4), None);
        assert_eq!(Targets::from_bits(-1), None);
        assert!(Targets::ALL.aof() && Targets::ALL.replicas());
        assert!(!Targets::AOF.replicas() && !Targets::REPLICAS.aof());
    }

    #[test]
    fn groups_of_several_effects_are_wrapped_in_multi_exec() {
        let log = EffectLog::new([7; 16]);
        let rx = log.subscribe();
        let effect = |db, word: &[u8]| GroupedEffect {
            db,
            ts: 1,
            argv: vec![word.to_vec()],
            targets: Targets::ALL,
            observed: Vec::new(),
            as_born: None,
        };
        log.append_group(&[effect(2, b"A"), effect(3, b"B")]);
        log.append_group(&[effect(0, b"C")]);
        log.append_group(&[]);
        let seen: Vec<(usize, Vec<u8>)> = rx.try_iter().map(|e| (e.db, e.argv.concat())).collect();
        let expected: Vec<(usize, Vec<u8>)> = [
            (2, &b"MULTI"[..]),
            (2, b"A"),
            (3, b"B"),
            (3, b"EXEC"),
            (0, b"C"),
        ]
        .iter()
        .map(|&(db, w)| (db, w.to_vec()))
        .collect();
        assert_eq!(seen, expected);
    }
}
