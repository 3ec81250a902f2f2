//! Active replication (KeyDB's active replica and multi-master): the wire form of
//! a write that travels between writable nodes, and the memory of what each origin
//! has had applied here.
//!
//! Between active nodes every write travels wrapped as KeyDB wraps it:
//! `RREPLAY <origin uuid> <the command, RESP-encoded> <db> <timestamp> [<seq>
//! [<seen>]]`. The uuid names the node where the write was born, the timestamp is
//! the HLC stamp its keys carry there (last writer wins by it), `seq` (kvik's
//! addition) is the write's number among its origin's writes, and `seen` (kvik's
//! too, only on a removal of collection elements) what the removal saw of each
//! element it names (keyspace/elements.rs), comma-separated. A node drops what it originated
//! itself (its own writes coming back around a ring) and what it has admitted
//! already (the same write reaching it by two paths of a mesh). A transaction
//! travels as a run MULTI ... EXEC of one origin, under one number, and is kept or
//! dropped whole: a run a broken link cut before its EXEC is taken back
//! ([`Turn::open_run`]) and applied whole when it comes again.
//!
//! Each origin numbers its writes 1, 2, 3, ... ([`crate::effects::Birth::seq`]),
//! and a node applies them in that order ([`Mark`]): a counter's per-node totals
//! and last-writer-wins both rely on a node holding a prefix of each origin's
//! writes. Several links can carry one origin's writes: each write is admitted and
//! applied under the origin's turn ([`Seen::turn`]), so that no link applies a
//! later write while an earlier one admitted by another link is still on its way
//! in. A write can come early by one path (a peer that merged a snapshot
//! passes on the writes after it, not the ones inside it): it is dropped, and the
//! origin's own link, which carries every write of the origin in order, brings it
//! after the missing ones. A gap that no path fills within [`GAP_WAIT`] while
//! every link is up (a node with no link to the origin, behind a peer that merged)
//! is given up: the writes after it apply from then on. While a link is down or
//! syncing, the gap waits: that link may be the one that brings it.
//!
//! A full sync served to a peer says which writes of each origin its snapshot
//! holds: the writes whose effects were applied before the snapshot's point (the
//! effect stream is read inline, under the shard locks the point also holds, so
//! nothing slips between), plus those of the snapshots merged here before. The
//! peer that merges it does not admit those writes again through its other links.
//!
//! Owns the envelope and the per-origin marks. Must not apply anything: the link
//! runs the unwrapped command through the [`super::Host`].

use crate::effects::{encode_bulk, encode_command, EffectRef, EffectSink, NodeId};
use parking_lot::{Condvar, Mutex};
use smallvec::SmallVec;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

/// The command name of the envelope.
pub const RREPLAY: &[u8] = b"RREPLAY";

/// The capability (`REPLCONF capa`) by which an active replica says it reads
/// kvik's envelopes; a replica that names itself (`REPLCONF uuid`) without it is
/// KeyDB's, and gets KeyDB's.
pub const KVIK_CAPA: &str = "kvik-rreplay";

/// The marker that stands in a peer's stream for `n` bytes left out there (the
/// envelopes of the peer's own writes, which it would drop): `REPLCONF SKIPPED
/// <n>`. The peer counts it as those `n` bytes, so its offsets stay the
/// stream's.
pub fn encode_skip(n: u64, out: &mut Vec<u8>) {
    let mut number = itoa::Buffer::new();
    encode_command(&[b"REPLCONF", SKIPPED, number.format(n).as_bytes()], out);
}

/// The bytes a marker ([`encode_skip`]) stands for, when `args` is one.
pub fn skipped(args: &[&[u8]]) -> Option<u64> {
    match args {
        [replconf, word, n]
            if replconf.eq_ignore_ascii_case(b"REPLCONF") && word.eq_ignore_ascii_case(SKIPPED) =>
        {
            std::str::from_utf8(n).ok()?.parse().ok()
        }
        _ => None,
    }
}

const SKIPPED: &[u8] = b"SKIPPED";

/// A node id as KeyDB writes it: the 36-character canonical UUID text.
pub fn uuid_text(id: &NodeId) -> String {
    uuid_bytes(id).iter().map(|&b| char::from(b)).collect()
}

/// [`uuid_text`] on the stack: every envelope carries one.
fn uuid_bytes(id: &NodeId) -> [u8; 36] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = [b'-'; 36];
    let mut at = 0;
    for (i, byte) in id.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            at += 1;
        }
        text[at] = HEX[usize::from(byte >> 4)];
        text[at + 1] = HEX[usize::from(byte & 15)];
        at += 2;
    }
    text
}

/// The node id a UUID text names (with or without dashes).
pub fn parse_uuid(text: &[u8]) -> Option<NodeId> {
    let mut digits = text
        .iter()
        .filter(|&&b| b != b'-')
        .map(|&b| char::from(b).to_digit(16));
    let mut id = NodeId::default();
    for byte in &mut id {
        let (high, low) = (digits.next()??, digits.next()??);
        *byte = (high << 4 | low) as u8;
    }
    digits.next().is_none().then_some(id)
}

/// Append the envelope of one effect to `out`: a peer's write applied here cut
/// down goes whole, as it was born.
pub fn encode(effect: &EffectRef<'_>, out: &mut Vec<u8>) {
    let born_argv: Option<SmallVec<[&[u8]; 8]>> = effect
        .as_born
        .map(|born| born.argv.iter().map(Vec::as_slice).collect());
    let (argv, seen) = match (&born_argv, effect.as_born) {
        (Some(argv), Some(born)) => (&argv[..], &born.observed[..]),
        _ => (effect.argv, effect.observed),
    };
    let stamp = Stamp {
        origin: &effect.origin,
        db: effect.db,
        ts: effect.ts,
        seq: Some(effect.seq),
        seen,
    };
    seal(&stamp, Inside::Argv(argv), out);
}

/// A write as KeyDB's stream carries it: where it was born, its database and its
/// timestamp there.
pub struct KeyDbWrite<'a> {
    pub origin: &'a NodeId,
    pub db: usize,
    pub ts: u64,
    pub argv: &'a [&'a [u8]],
}

/// Append the envelope of one write in KeyDB 6.3's layout for a KeyDB active
/// replica: `RREPLAY <our uuid> <command> <db> <mvcc>`, `mvcc` past every one
/// before it in the stream (KeyDB drops a write whose timestamp is not past the
/// last one it applied from the same uuid). A write born elsewhere travels as a
/// KeyDB node forwards what it replayed: its command is the envelope of its
/// origin, `RREPLAY <origin uuid> <command> <db> <ts>`, so that the origin (a
/// KeyDB node) recognises its own write and drops it.
pub fn encode_keydb(own: &NodeId, write: &KeyDbWrite<'_>, mvcc: u64, out: &mut Vec<u8>) {
    let argv = Inside::Argv(write.argv);
    let outer = Stamp {
        origin: own,
        db: write.db,
        ts: mvcc,
        seq: None,
        seen: &[],
    };
    if write.origin == own {
        return seal(&outer, argv, out);
    }
    let mut inner = Vec::new();
    let born = Stamp {
        origin: write.origin,
        ts: write.ts,
        ..outer
    };
    seal(&born, argv, &mut inner);
    seal(&outer, Inside::Encoded(&inner), out);
}

/// The command an envelope carries: to encode, or encoded already.
enum Inside<'a> {
    Argv(&'a [&'a [u8]]),
    Encoded(&'a [u8]),
}

/// Where a write was born and stamped: its origin, its database, its timestamp,
/// and its number and what its removal saw where the envelope says them.
struct Stamp<'a> {
    origin: &'a NodeId,
    db: usize,
    ts: u64,
    seq: Option<u64>,
    seen: &'a [u64],
}

/// Append `RREPLAY <origin uuid> <command> <db> <ts> [<seq> [<seen>]]`, the
/// command encoded in place (this runs for every write an active node replicates).
fn seal(stamp: &Stamp<'_>, inside: Inside<'_>, out: &mut Vec<u8>) {
    let (mut db_text, mut ts_text, mut seq_text) = (
        itoa::Buffer::new(),
        itoa::Buffer::new(),
        itoa::Buffer::new(),
    );
    let mut seen_text = Vec::new();
    let mut tail: SmallVec<[&[u8]; 4]> = SmallVec::new();
    tail.push(db_text.format(stamp.db).as_bytes());
    tail.push(ts_text.format(stamp.ts).as_bytes());
    tail.extend(stamp.seq.map(|seq| seq_text.format(seq).as_bytes()));
    if stamp.seq.is_some() && !stamp.seen.is_empty() {
        crate::keyspace::encode_seen(stamp.seen, &mut seen_text);
        tail.push(&seen_text);
    }
    let origin = stamp.origin;
    let mut number = itoa::Buffer::new();
    out.push(b'*');
    out.extend_from_slice(number.format(3 + tail.len()).as_bytes());
    out.extend_from_slice(b"\r\n$7\r\nRREPLAY\r\n$36\r\n");
    out.extend_from_slice(&uuid_bytes(origin));
    out.extend_from_slice(b"\r\n");
    match inside {
        Inside::Argv(argv) => {
            let len = crate::effects::Effect::encoded_len(argv);
            out.push(b'$');
            out.extend_from_slice(number.format(len).as_bytes());
            out.extend_from_slice(b"\r\n");
            encode_command(argv, out);
            out.extend_from_slice(b"\r\n");
        }
        Inside::Encoded(command) => encode_bulk(command, out),
    }
    for arg in tail {
        encode_bulk(arg, out);
    }
}

/// The HLC timestamp of a write whose KeyDB `mvcc` timestamp is
/// `milliseconds << 20 | counter`: the milliseconds stay where they are (the HLC
/// puts them at the same place), the counter takes the HLC's counter bits (KeyDB's
/// counts the writes of one millisecond; past 1023 of them it stays at 1023) and
/// the low bits name the origin, as every HLC timestamp does.
pub fn hlc_of_mvcc(mvcc: u64, origin: &NodeId) -> u64 {
    let logical = (1u64 << crate::hlc::LOGICAL_BITS) - 1;
    let counter =
        (mvcc & logical).min((1 << (crate::hlc::LOGICAL_BITS - crate::hlc::TAG_BITS)) - 1);
    (mvcc & !logical) | counter << crate::hlc::TAG_BITS | crate::hlc::tag_for(origin)
}

/// An envelope, opened.
#[derive(Debug, PartialEq, Eq)]
pub struct Envelope<'a> {
    pub origin: NodeId,
    /// The RESP encoding of the command inside.
    pub command: &'a [u8],
    /// `None`: the database the stream selected last (KeyDB's three-argument form).
    pub db: Option<usize>,
    /// 0 when the sender gave none (the write is then stamped here). A KeyDB
    /// sender's MVCC timestamp comes converted ([`hlc_of_mvcc`]).
    pub ts: u64,
    /// `None` when the sender gave none (KeyDB): nothing to recognise it by.
    pub seq: Option<u64>,
    /// What a removal of collection elements saw of each (empty: the sender said
    /// nothing).
    pub seen: Vec<u64>,
}

/// Open `RREPLAY uuid command [db [ts [seq [seen]]]]`; `None` when it is
/// malformed. Without `seq` it is KeyDB's envelope, whose timestamp is its MVCC
/// form.
pub fn open<'a>(args: &[&'a [u8]]) -> Option<Envelope<'a>> {
    if args.len() < 3 || args.len() > 7 {
        return None;
    }
    let number = |i: usize| -> Option<Option<u64>> {
        match args.get(i) {
            None => Some(None),
            Some(text) => std::str::from_utf8(text).ok()?.parse().ok().map(Some),
        }
    };
    let origin = parse_uuid(args[1])?;
    let seq = number(5)?;
    let ts = match (number(4)?.unwrap_or(0), seq) {
        (0, _) => 0,
        (ts, Some(_)) => ts,
        (mvcc, None) => hlc_of_mvcc(mvcc, &origin),
    };
    Some(Envelope {
        origin,
        command: args[2],
        db: number(3)?.map(|db| db as usize),
        ts,
        seq,
        seen: match args.get(6) {
            Some(text) => crate::keyspace::decode_seen(text)?,
            None => Vec::new(),
        },
    })
}

/// The numbers of one origin's writes met here: all up to `floor`, and `ahead`
/// (held by a merged snapshot beyond a gap); since when a write waits for a gap.
#[derive(Debug, Default, Clone)]
pub struct Mark {
    floor: u64,
    ahead: BTreeSet<u64>,
    gap_since: Option<Instant>,
}

impl PartialEq for Mark {
    fn eq(&self, other: &Mark) -> bool {
        (self.floor, &self.ahead) == (other.floor, &other.ahead)
    }
}

/// How long writes that come after a missing one are dropped, waiting for a
/// path to bring it, before it is given up (counted while every link is up).
pub const GAP_WAIT: Duration = Duration::from_secs(10);

impl Mark {
    pub fn holds(&self, seq: u64) -> bool {
        seq <= self.floor || self.ahead.contains(&seq)
    }

    /// Admit `seq` when it is the next one (or the gap before it was waited on for
    /// long enough, at `now`, with every link `settled` meanwhile); whether it was.
    pub fn admit(&mut self, seq: u64, now: Instant, settled: &dyn Fn() -> bool) -> bool {
        if self.holds(seq) {
            return false;
        }
        if seq != self.floor + 1 {
            if !settled() {
                self.gap_since = None;
                return false;
            }
            let since = *self.gap_since.get_or_insert(now);
            if now.duration_since(since) < GAP_WAIT {
                return false;
            }
            self.floor = seq - 1;
            let floor = self.floor;
            self.ahead.retain(|&s| s > floor);
        }
        self.gap_since = None;
        self.floor = seq;
        self.settle();
        true
    }

    /// `seq`, admitted last, was not applied after all (a transaction cut before
    /// its EXEC): it is to be admitted again.
    pub fn take_back(&mut self, seq: u64) {
        if self.floor == seq {
            self.floor -= 1;
        }
        self.ahead.remove(&seq);
    }

    /// Note `seq` as met, in whatever order.
    pub fn add(&mut self, seq: u64) {
        if !self.holds(seq) {
            self.ahead.insert(seq);
            self.settle();
        }
    }

    /// Take in every number `other` holds.
    pub fn join(&mut self, other: &Mark) {
        self.floor = self.floor.max(other.floor);
        self.ahead.extend(other.ahead.iter().copied());
        let floor = self.floor;
        self.ahead.retain(|&s| s > floor);
        self.settle();
    }

    /// Fold into the floor the numbers that follow it.
    fn settle(&mut self) {
        while self.ahead.first() == Some(&(self.floor + 1)) {
            self.ahead.pop_first();
            self.floor += 1;
        }
    }
}

/// Per origin, the numbers of its writes met.
pub type Marks = HashMap<NodeId, Mark>;

/// What each origin has had admitted and applied here.
#[derive(Default)]
pub struct Seen {
    /// The writes admitted (what a link drops when it meets them again).
    admitted: Mutex<Marks>,
    /// The writes in the dataset: whose effects were applied here (fed as an
    /// effect sink), that were done with no effect, or that a merged snapshot
    /// held. What a snapshot taken now holds.
    applied: Mutex<Marks>,
    /// Per origin, the timestamp of the last unnumbered write admitted (a KeyDB
    /// peer's).
    unnumbered: Mutex<HashMap<NodeId, u64>>,
    /// The origins whose write a link is admitting and applying now.
    busy: Mutex<HashSet<NodeId>>,
    freed: Condvar,
}

/// One origin's turn: while it is held, no other link admits or applies a write
/// of that origin. Ends when dropped.
pub struct Turn<'s> {
    seen: &'s Seen,
    origin: NodeId,
    /// The number of a transaction admitted under this turn whose EXEC has not run.
    open_run: Option<u64>,
}

impl Turn<'_> {
    /// Transaction `seq` was admitted (its MULTI ran): the turn is held until its
    /// EXEC, and a turn dropped before that (the link broke inside the run) takes
    /// the admission back, so that the whole run is applied when it comes again.
    pub fn open_run(&mut self, seq: u64) {
        self.open_run = Some(seq);
    }

    /// The transaction's EXEC ran.
    pub fn close_run(&mut self) {
        self.open_run = None;
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if let Some(seq) = self.open_run.take() {
            if let Some(mark) = self.seen.admitted.lock().get_mut(&self.origin) {
                mark.take_back(seq);
            }
        }
        self.seen.busy.lock().remove(&self.origin);
        self.seen.freed.notify_all();
    }
}

impl Seen {
    /// Is the write `seq` of `origin` the next one to apply here? If so it counts
    /// as admitted from now. Unnumbered writes (0: a KeyDB peer's) go by their
    /// timestamp `ts`, as KeyDB decides: admitted when it is past the last one
    /// admitted from their origin (or when they carry none).
    /// `settled`: is every link up (asked only when a write waits for a gap)?
    pub fn admit(&self, origin: &NodeId, seq: u64, ts: u64, settled: &dyn Fn() -> bool) -> bool {
        if seq == 0 {
            let mut unnumbered = self.unnumbered.lock();
            let last = unnumbered.entry(*origin).or_default();
            let newer = ts == 0 || ts > *last;
            *last = (*last).max(ts);
            return newer;
        }
        self.admitted
            .lock()
            .entry(*origin)
            .or_default()
            .admit(seq, Instant::now(), settled)
    }

    /// Wait for `origin`'s turn: a write of it is admitted and applied (a
    /// transaction, until its EXEC ran) while the turn is held.
    pub fn turn(&self, origin: &NodeId) -> Turn<'_> {
        let mut busy = self.busy.lock();
        while busy.contains(origin) {
            self.freed.wait(&mut busy);
        }
        busy.insert(*origin);
        Turn {
            seen: self,
            origin: *origin,
            open_run: None,
        }
    }

    /// An admitted write (a transaction: at its EXEC) was applied, with or without
    /// an effect.
    pub fn done(&self, origin: &NodeId, seq: u64) {
        if seq != 0 {
            self.applied.lock().entry(*origin).or_default().add(seq);
        }
    }

    /// The writes a snapshot taken now holds, as [`encode_marks`] writes them.
    /// Call it at the snapshot's point.
    pub fn applied_now(&self) -> String {
        encode_marks(&self.applied.lock())
    }

    /// A peer's snapshot holding `marks` is being merged: its writes met again
    /// through another link are dropped from now on. Each origin's write being
    /// applied now ends first (it might be one of them), and until the merge ends
    /// (the [`Merging`] is dropped) no link applies a write of those origins: one
    /// that follows the snapshot's, applied before the snapshot's key is merged,
    /// would leave that key newer here than the snapshot's, which the merge would
    /// then drop with the writes it held (an origin's writes seen here would skip
    /// some).
    pub fn merging(&self, marks: Marks) -> Merging<'_> {
        let mut origins: Vec<NodeId> = marks.keys().copied().collect();
        origins.sort_unstable();
        let turns = origins.iter().map(|origin| self.turn(origin)).collect();
        join(&mut self.admitted.lock(), &marks);
        Merging {
            seen: self,
            marks,
            _turns: turns,
        }
    }

    /// A peer's snapshot holding `marks` is merged: our own snapshots hold its
    /// writes from now on.
    fn merged(&self, marks: &Marks) {
        join(&mut self.applied.lock(), marks);
    }
}

/// A peer's snapshot being merged ([`Seen::merging`]): holds its origins' turns.
pub struct Merging<'s> {
    seen: &'s Seen,
    marks: Marks,
    _turns: Vec<Turn<'s>>,
}

impl Merging<'_> {
    /// The whole snapshot is merged: our own snapshots hold its writes from now on,
    /// and the links apply its origins' later writes again.
    pub fn merged(self) {
        self.seen.merged(&self.marks);
    }
}

fn join(ours: &mut Marks, theirs: &Marks) {
    for (origin, mark) in theirs {
        ours.entry(*origin).or_default().join(mark);
    }
}

/// The effects applied here, as they happen (under the shard locks of their
/// writes, in the order they were applied).
impl EffectSink for Seen {
    fn take(&self, effect: &EffectRef<'_>) -> bool {
        self.done(&effect.origin, effect.seq);
        true
    }
}

/// Marks as text, for a snapshot's `kvik-seen` aux field: per origin
/// `<uuid hex>:<floor>[,<seq>]...`, separated by spaces.
pub fn encode_marks(marks: &Marks) -> String {
    let words: Vec<String> = marks
        .iter()
        .map(|(origin, mark)| {
            let mut word = format!("{}:{}", hex::encode(origin), mark.floor);
            for seq in &mark.ahead {
                word.push_str(&format!(",{seq}"));
            }
            word
        })
        .collect();
    words.join(" ")
}

/// The marks [`encode_marks`] wrote; `None` when malformed.
pub fn decode_marks(text: &[u8]) -> Option<Marks> {
    let text = std::str::from_utf8(text).ok()?;
    let mut marks = Marks::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let (origin, numbers) = word.split_once(':')?;
        let origin = NodeId::try_from(hex::decode(origin).ok()?.as_slice()).ok()?;
        let mut numbers = numbers.split(',');
        let mut mark = Mark {
            floor: numbers.next()?.parse().ok()?,
            ahead: BTreeSet::new(),
            gap_since: None,
        };
        for seq in numbers {
            let seq = seq.parse().ok()?;
            if seq > mark.floor {
                mark.ahead.insert(seq);
            }
        }
        mark.settle();
        marks.insert(origin, mark);
    }
    Some(marks)
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Seen {
        fn admit_now(&self, origin: &NodeId, seq: u64) -> bool {
            self.admit(origin, seq, 0, &|| true)
        }
    }

    #[test]
    fn an_envelope_opens_to_what_was_sealed() {
        let mut out = Vec::new();
        let effect = EffectRef {
            offset: 0,
            db: 3,
            argv: &[b"SREM", b"k", b"v"],
            ts: 123456,
            origin: [0xab; 16],
            seq: 77,
            targets: crate::effects::Targets::ALL,
            observed: &[120000],
            as_born: None,
        };
        encode(&effect, &mut out);
        let mut parser = kvik_resp::RequestParser::new();
        let parsed = parser.parse(&out, kvik_resp::Limits::default()).unwrap();
        assert!(matches!(parsed, kvik_resp::Parsed::Command { .. }));
        let args: Vec<&[u8]> = parser.args(&out).collect();
        let envelope = open(&args).unwrap();
        assert_eq!(envelope.origin, [0xab; 16]);
        assert_eq!(
            envelope.command,
            b"*3\r\n$4\r\nSREM\r\n$1\r\nk\r\n$1\r\nv\r\n"
        );
        assert_eq!(
            (envelope.db, envelope.ts, envelope.seq, envelope.seen),
            (Some(3), 123456, Some(77), vec![120000])
        );
        let id = *b"\x01\x23\x45\x67\x89\xab\xcd\xef\xfe\xdc\xba\x98\x76\x54\x32\x10";
        assert_eq!(uuid_text(&id), "01234567-89ab-cdef-fedc-ba9876543210");
        assert_eq!(parse_uuid(uuid_text(&id).as_bytes()), Some(id));
        assert_eq!(parse_uuid(b"0123456789ABCDEFfedcba9876543210"), Some(id));
        assert_eq!(parse_uuid(b"01234567-89ab-cdef-fedc-ba987654321"), None);
        assert_eq!(parse_uuid(b"01234567-89ab-cdef-fedc-ba98765432100"), None);
        assert_eq!(parse_uuid(b"0123456g-89ab-cdef-fedc-ba9876543210"), None);
    }

    #[test]
    fn keydbs_short_form_opens_and_bad_ones_do_not() {
        let args: [&[u8]; 3] = [
            b"RREPLAY",
            b"f4d5b2b5-4f07-4ee5-a4f2-5dc98507dfce",
            b"*1\r\n$4\r\nPING\r\n",
        ];
        let envelope = open(&args).unwrap();
        assert_eq!((envelope.db, envelope.ts, envelope.seq), (None, 0, None));
        assert!(open(&[b"RREPLAY", b"nope", b"x"]).is_none());
        assert!(open(&[b"RREPLAY", args[1], b"x", b"zero"]).is_none());
    }

    /// The arguments of the one command `bytes` holds.
    fn args_of(bytes: &[u8]) -> Vec<Vec<u8>> {
        let mut parser = kvik_resp::RequestParser::new();
        let parsed = parser.parse(bytes, kvik_resp::Limits::default()).unwrap();
        assert!(
            matches!(parsed, kvik_resp::Parsed::Command { consumed } if consumed == bytes.len())
        );
        parser.args(bytes).map(<[u8]>::to_vec).collect()
    }

    fn refs(args: &[Vec<u8>]) -> Vec<&[u8]> {
        args.iter().map(Vec::as_slice).collect()
    }

    #[test]
    fn keydbs_envelopes_wrap_what_they_forward_and_their_timestamps_convert() {
        let argv: [&[u8]; 3] = [b"SET", b"k", b"v"];
        let write = KeyDbWrite {
            origin: &[2; 16],
            db: 4,
            ts: 7 << 20 | 3,
            argv: &argv,
        };
        let mut out = Vec::new();
        encode_keydb(&[1; 16], &write, 9 << 20, &mut out);
        let outer_args = args_of(&out);
        let outer_refs = refs(&outer_args);
        let outer = open(&outer_refs).unwrap();
        assert_eq!(
            (outer_args.len(), outer.origin, outer.db, outer.seq),
            (5, [1; 16], Some(4), None)
        );
        assert_eq!(outer.ts, hlc_of_mvcc(9 << 20, &[1; 16]));
        let inner_args = args_of(outer.command);
        let inner_refs = refs(&inner_args);
        let inner = open(&inner_refs).unwrap();
        assert_eq!((inner.origin, inner.db), ([2; 16], Some(4)));
        assert_eq!(inner.command, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n");
        assert_eq!(inner.ts, 7 << 20 | 3 << 10 | crate::hlc::tag_for(&[2; 16]));
        // Our own writes go flat.
        let mut flat = Vec::new();
        let own = KeyDbWrite {
            origin: &[1; 16],
            ..write
        };
        encode_keydb(&[1; 16], &own, 9 << 20, &mut flat);
        let flat_args = args_of(&flat);
        assert_eq!(open(&refs(&flat_args)).unwrap().command, inner.command);
        // Past 1023 writes in a millisecond the counter stays at its top.
        assert_eq!(hlc_of_mvcc(5 << 20 | 4000, &[0; 16]) >> 10, 5 << 10 | 1023);
    }

    #[test]
    fn a_keydb_write_is_admitted_when_it_is_newer_than_its_origins_last() {
        let seen = Seen::default();
        let admit = |ts| seen.admit(&[7; 16], 0, ts, &|| true);
        assert!(admit(10) && admit(11));
        assert!(!admit(11) && !admit(5), "met already");
        assert!(admit(0) && admit(0), "without a timestamp, always");
        assert!(admit(12));
    }

    #[test]
    fn a_write_met_twice_is_admitted_once() {
        let seen = Seen::default();
        assert!(seen.admit_now(&[1; 16], 1));
        assert!(seen.admit_now(&[1; 16], 2));
        assert!(!seen.admit_now(&[1; 16], 1));
        assert!(!seen.admit_now(&[1; 16], 2));
        assert!(seen.admit_now(&[2; 16], 1));
        assert!(seen.admit_now(&[1; 16], 0) && seen.admit_now(&[1; 16], 0));
    }

    #[test]
    fn a_write_that_comes_early_waits_for_the_ones_before_it() {
        let mut mark = Mark::default();
        let start = Instant::now();
        let (up, down): (&dyn Fn() -> bool, &dyn Fn() -> bool) = (&|| true, &|| false);
        assert!(mark.admit(1, start, up));
        assert!(!mark.admit(3, start, up), "2 is missing");
        assert!(mark.admit(2, start, up) && mark.admit(3, start, up));
        assert!(!mark.admit(5, start, up));
        assert!(!mark.admit(6, start + GAP_WAIT / 2, up));
        assert!(!mark.admit(6, start + GAP_WAIT, down), "a link may bring 4");
        assert!(!mark.admit(6, start + GAP_WAIT, up), "waited anew");
        assert!(
            mark.admit(6, start + GAP_WAIT * 2, up),
            "4 and 5 are given up"
        );
        assert!(!mark.admit(4, start + GAP_WAIT * 2, up));
        assert!(mark.admit(7, start + GAP_WAIT * 2, up));
    }

    #[test]
    fn no_link_applies_a_merging_snapshots_origin_until_the_merge_ends() {
        let seen = std::sync::Arc::new(Seen::default());
        let marks = decode_marks(b"03030303030303030303030303030303:4").unwrap();
        let merging = seen.merging(marks);
        let link = {
            let seen = seen.clone();
            std::thread::spawn(move || {
                let _turn = seen.turn(&[3; 16]);
                seen.applied_now()
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!link.is_finished(), "the link waits for the merge");
        merging.merged();
        assert_eq!(link.join().unwrap(), "03030303030303030303030303030303:4");
    }

    #[test]
    fn a_transaction_cut_before_its_exec_is_admitted_again() {
        let seen = Seen::default();
        assert!(seen.admit_now(&[1; 16], 1));
        let mut turn = seen.turn(&[1; 16]);
        assert!(seen.admit_now(&[1; 16], 2));
        turn.open_run(2);
        drop(turn);
        assert!(seen.admit_now(&[1; 16], 2), "the cut run comes again whole");
        let mut turn = seen.turn(&[1; 16]);
        turn.open_run(2);
        turn.close_run();
        drop(turn);
        assert!(!seen.admit_now(&[1; 16], 2));
    }

    #[test]
    fn one_origins_turn_is_held_by_one_link_at_a_time() {
        let seen = std::sync::Arc::new(Seen::default());
        let turn = seen.turn(&[1; 16]);
        let other = seen.turn(&[2; 16]);
        let waiter = {
            let seen = seen.clone();
            std::thread::spawn(move || {
                let _turn = seen.turn(&[1; 16]);
                seen.admit_now(&[1; 16], 2)
            })
        };
        assert!(seen.admit_now(&[1; 16], 1));
        drop((turn, other));
        assert!(waiter.join().unwrap(), "1 came first");
    }

    #[test]
    fn a_merged_snapshots_writes_are_not_admitted_again() {
        let seen = Seen::default();
        seen.done(&[3; 16], 1);
        seen.done(&[3; 16], 2);
        seen.done(&[3; 16], 5);
        let theirs = decode_marks(seen.applied_now().as_bytes()).unwrap();
        assert_eq!(theirs[&[3; 16]].floor, 2);
        let peer = Seen::default();
        let merging = peer.merging(theirs.clone());
        assert!(!peer.admit_now(&[3; 16], 2) && !peer.admit_now(&[3; 16], 5));
        assert!(peer.admit_now(&[3; 16], 3) && peer.admit_now(&[3; 16], 4));
        assert!(peer.admit_now(&[3; 16], 6), "5 was in the snapshot");
        assert_eq!(peer.applied_now(), "");
        merging.merged();
        assert_eq!(decode_marks(peer.applied_now().as_bytes()), Some(theirs));
        assert_eq!(decode_marks(b""), Some(Marks::new()));
        assert_eq!(decode_marks(b"zz:1"), None);
        assert_eq!(decode_marks(b"0303:1,x"), None);
    }
}
