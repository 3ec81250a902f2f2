//! Counters of an active-replication node: what each node added to a key (or to a
//! hash field, or a sorted-set member's score) since the write the increments build
//! on.
//!
//! Two nodes that increment one key during a partition must both end with the sum of
//! all increments. While they exchange their streams that holds by itself (a peer's
//! INCR is replayed, not judged by last writer). A long break heals by a full sync,
//! which carries states, not operations: so each node keeps, for the keys and
//! elements it counts, the base (the write the counting started from: its timestamp
//! and value) and per node the total it added since with the timestamp of its last
//! increment. Merging two states on the same base takes each node's newer total (a
//! node's total only changes with its own increments, so the newer one includes the
//! older); a newer base wins outright (a SET resets the counter, increments made
//! before it are forgotten). The value is the base plus the totals, kept
//! materialized in the entry, so reads pay nothing; a base that holds no number
//! ("abc") takes none, and the key holds it while the peers' increments newer
//! than it wait in the state, to count should a reset between the two that
//! holds a number reach the node later ([`Counter::waits`]).
//!
//! A reset can reach a node after increments newer than it, made by a node that
//! had not seen it (a partition): the increments newer than the reset count on
//! the value it wrote, the older ones are gone, as on a node that met the reset
//! first ([`Counter::rebased`], and a full sync's merge of a newer base). To split
//! a node's total at any reset, each part also remembers its increments one by
//! one, until no peer can send a reset older than them (the watermarks that
//! collect tombstones fold them: [`Counter::fold`]) or [`RECENT_MAX`] newer ones
//! push them out; a reset older than a folded increment is judged by last writer
//! of the key instead.
//!
//! A removal of an element (HDEL, ZREM) takes only what it saw: the element's
//! base and the increments no newer than the newest add of it the removal saw
//! (its `seen`). An increment it did not see, even one older than the removal,
//! stays, counted on nothing (zero), as on the node that removed it, whose next
//! increment counts from just past that add, not from the removal. So the state
//! after a removal starts at `seen` marked as a removal ([`Start`]: after the add
//! stamped `seen`, which it took), and a node that meets the removal after
//! increments it did not see keeps only those ([`Counter::after_removal_that_saw`]).
//!
//! Every counting command (INCR, INCRBY, DECR, DECRBY, INCRBYFLOAT, HINCRBY,
//! HINCRBYFLOAT, ZINCRBY) counts here. Float sums depend on the order of their
//! terms, so the value is always computed one way, the base then each node's total
//! in node-id order, each node's total being the sum of its increments in the order
//! it made them (every node applies an origin's writes in that order): the nodes end
//! with the same bytes whatever order they heard the increments in. INCRBYFLOAT and
//! HINCRBYFLOAT sum in long double precision and print as Redis does; ZINCRBY's
//! scores are doubles.
//!
//! A whole key's state is current only while its newest timestamp is the key's: any
//! other write to the key makes it stale, and the next increment starts a new one
//! from that write. An element's state is current while the element holds the
//! state's value (a write of the other fields leaves it current; one of the element
//! that stores another value, or removes it, makes it stale), and starts from the
//! element's own last write (its mark, see `elements.rs`), so two states of an
//! element are on the same base when they start at one write, as a whole key's
//! are. Kept per shard, only while the node replicates actively.
//!
//! Owns the states, their merge and their materialized values. Must not decide when
//! an increment is replayed: the counting commands record increments through
//! [`super::Locked::count_start`] and [`super::Locked::count_end`].

use crate::effects::NodeId;
use crate::types::string::StrValue;
use crate::types::Value;
use crate::util::numbers::{incr_by_float, parse_i64};
use smallvec::SmallVec;
use std::collections::{HashMap, VecDeque};

/// A counted number: an integer (INCR, HINCRBY), a long double kept as the text
/// Redis prints it (INCRBYFLOAT, HINCRBYFLOAT) or a score (ZINCRBY); or, as a
/// whole key's base only, a value that holds no number (`Text`), on which the
/// increments newer than it wait (see [`Counter::waits`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Num {
    Int(i64),
    Float(Box<[u8]>),
    Score(f64),
    Text(Box<[u8]>),
}

impl Num {
    /// `self + other`: integers wrap (each node's INCR refused what overflows), a
    /// float term makes the sum a long double, scores add as doubles. A float sum
    /// that is not finite keeps `self` (each node refused such an increment).
    /// A value that holds no number takes nothing: it stays as it is.
    pub fn add(&self, other: &Num) -> Num {
        match (self, other) {
            (Num::Text(_), _) | (_, Num::Text(_)) => self.clone(),
            (Num::Int(a), Num::Int(b)) => Num::Int(a.wrapping_add(*b)),
            (Num::Score(a), b) | (b, Num::Score(a)) => Num::Score(a + b.as_f64()),
            (a, b) => match incr_by_float(&a.text(), &b.text()) {
                Ok(sum) => Num::Float(sum.into()),
                Err(_) => self.clone(),
            },
        }
    }

    fn as_f64(&self) -> f64 {
        match self {
            Num::Int(n) => *n as f64,
            Num::Score(x) => *x,
            Num::Float(text) | Num::Text(text) => std::str::from_utf8(text)
                .ok()
                .and_then(|t| t.parse().ok())
                .unwrap_or(0.0),
        }
    }

    /// The number as a string or hash field holds it.
    pub fn text(&self) -> Vec<u8> {
        match self {
            Num::Int(n) => itoa::Buffer::new().format(*n).as_bytes().to_vec(),
            Num::Float(text) | Num::Text(text) => text.to_vec(),
            Num::Score(x) => x.to_string().into_bytes(),
        }
    }

    /// Zero, of the kind `self` is (an increment's: never `Text`).
    fn zero_like(&self) -> Num {
        match self {
            Num::Int(_) | Num::Text(_) => Num::Int(0),
            Num::Float(_) => Num::Float(b"0"[..].into()),
            Num::Score(_) => Num::Score(0.0),
        }
    }

    /// The text form of a snapshot: integers as they are, `f<text>` for a long
    /// double, `s<double>` for a score (Rust's shortest form, which reads back
    /// exactly), `t<hex>` for a value that holds no number (any bytes). A reader
    /// that knows no `t` takes the whole state for malformed and keeps the key
    /// uncounted, as it was before such states were kept.
    fn encode(&self) -> String {
        match self {
            Num::Int(n) => n.to_string(),
            Num::Float(text) => format!("f{}", String::from_utf8_lossy(text)),
            Num::Score(x) => format!("s{x}"),
            Num::Text(text) => format!("t{}", hex::encode(text)),
        }
    }

    fn decode(text: &str) -> Option<Num> {
        if let Some(float) = text.strip_prefix('f') {
            return incr_by_float(float.as_bytes(), b"0")
                .ok()
                .map(|_| Num::Float(float.as_bytes().into()));
        }
        if let Some(bytes) = text.strip_prefix('t') {
            return hex::decode(bytes).ok().map(|b| Num::Text(b.into()));
        }
        if let Some(score) = text.strip_prefix('s') {
            return score
                .parse()
                .ok()
                .filter(|x: &f64| !x.is_nan())
                .map(Num::Score);
        }
        text.parse().ok().map(Num::Int)
    }
}

/// One node's share of a counted key or element.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub node: NodeId,
    /// What it added since the base, summed in the order it made the increments.
    pub total: Num,
    /// Its last increment's timestamp.
    pub last_ts: u64,
    /// The newest of its increments no longer remembered one by one (0: none).
    pub folded_to: u64,
    /// Its increments newer than `folded_to`, oldest first: a reset that arrives
    /// late keeps those newer than it (see [`Counter::rebased`]). A queue: a hot
    /// counter pushes one in and one out at every increment. Freed once folded
    /// away, so a counter at rest costs no more than its totals.
    pub recent: VecDeque<(u64, Num)>,
}

/// The most increments a node's part remembers one by one; older ones are folded
/// into its total. Bounds a counter's memory where no watermark folds them (a
/// long partition, a peer that sends none).
pub const RECENT_MAX: usize = 256;

/// Where counting starts: a write stamped `ts`, or (`removal`) a removal of an
/// element that saw the add stamped `ts`, which comes just after that add (it
/// took it). Ordered by time, a removal after the write it saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Start {
    pub ts: u64,
    pub removal: bool,
}

impl Start {
    pub fn write(ts: u64) -> Start {
        Start { ts, removal: false }
    }

    /// A removal that saw the adds up to `seen`.
    pub fn removal(seen: u64) -> Start {
        Start {
            ts: seen,
            removal: true,
        }
    }

    /// Is an increment stamped `ts` gone with what counting starts from: older
    /// than its write, or one its removal saw? (An increment stamped like the
    /// write is of the same atomic group, after it: it counts.)
    pub fn took(&self, ts: u64) -> bool {
        ts < self.ts || (self.removal && ts == self.ts)
    }
}

/// One counted key or element.
#[derive(Debug, Clone, PartialEq)]
pub struct Counter {
    /// The write the counting started from (or, `removal`, the add the removal
    /// it started from saw: see [`Start`]).
    pub base_ts: u64,
    pub removal: bool,
    pub base: Num,
    /// Per node, in node-id order: what it added since the base. One inline: most
    /// keys are counted by one node at a time, and a map of millions of them
    /// pays for every inline slot.
    pub parts: SmallVec<[Part; 1]>,
}

impl Counter {
    /// Counting starts on a key (or element) that held `base`, written at `base_ts`.
    pub fn new(base_ts: u64, base: Num) -> Counter {
        Counter::starting(Start::write(base_ts), base)
    }

    /// Counting starts at `start` on an element (or key) that held `base` (a
    /// removal's: nothing, zero).
    pub fn starting(start: Start, base: Num) -> Counter {
        Counter {
            base_ts: start.ts,
            removal: start.removal,
            base,
            parts: SmallVec::new(),
        }
    }

    /// Does the base hold no number (a whole key's, [`Num::Text`])? Its
    /// increments then wait: the key holds the base as written, and they are
    /// kept, not refused, until a reset older than them that holds a number
    /// goes under them ([`Counter::rebased`], a full sync's merge) and they
    /// count on it, as on a node that met that reset first. A node's own
    /// increment of such a value is still refused, as in Redis: only its peers'
    /// wait.
    pub fn waits(&self) -> bool {
        matches!(self.base, Num::Text(_))
    }

    /// Where this state's counting starts.
    pub fn start(&self) -> Start {
        Start {
            ts: self.base_ts,
            removal: self.removal,
        }
    }

    /// The newest timestamp the state knows: the key's, while the state is current.
    pub fn newest_ts(&self) -> u64 {
        self.parts
            .iter()
            .map(|p| p.last_ts)
            .fold(self.base_ts, u64::max)
    }

    /// The value: the base plus every node's total, in node-id order (the one order
    /// every node sums in).
    pub fn value(&self) -> Num {
        self.parts
            .iter()
            .fold(self.base.clone(), |sum, p| sum.add(&p.total))
    }

    /// Is `node`'s increment stamped `ts` in its total already? A node's
    /// increments of one key are stamped in increasing order, and its total holds
    /// every one up to its last: one at or before that is met again (through a
    /// second link, or after a merged snapshot that held it).
    pub fn holds(&self, node: &NodeId, ts: u64) -> bool {
        self.parts
            .iter()
            .any(|p| p.node == *node && p.last_ts >= ts)
    }

    /// `node` added `by` at `ts`.
    pub fn add(&mut self, node: NodeId, by: &Num, ts: u64) {
        let at = match self.parts.binary_search_by(|p| p.node.cmp(&node)) {
            Ok(at) => at,
            Err(at) => {
                let part = Part {
                    node,
                    total: by.zero_like(),
                    last_ts: 0,
                    folded_to: 0,
                    recent: VecDeque::new(),
                };
                self.parts.insert(at, part);
                at
            }
        };
        let part = &mut self.parts[at];
        part.total = part.total.add(by);
        part.last_ts = part.last_ts.max(ts);
        part.recent.push_back((ts, by.clone()));
        if part.recent.len() > RECENT_MAX {
            if let Some((oldest, _)) = part.recent.pop_front() {
                part.folded_to = part.folded_to.max(oldest);
            }
        }
    }

    /// Stop remembering one by one the increments older than `before`: no peer
    /// can send a reset older than that any more. Returns whether some are still
    /// remembered.
    pub fn fold(&mut self, before: u64) -> bool {
        for part in &mut self.parts {
            let older = part.recent.partition_point(|(ts, _)| *ts < before);
            if older > 0 {
                part.folded_to = part.folded_to.max(part.recent[older - 1].0);
                part.recent.drain(..older);
                if part.recent.is_empty() {
                    part.recent = VecDeque::new();
                }
            }
        }
        self.parts.iter().any(|p| !p.recent.is_empty())
    }

    /// A reset stamped `ts` (a write of the whole value, a removal) that arrives
    /// after increments newer than it: is this state older than the reset by its
    /// base, newer by its increments, and does it remember one by one every
    /// increment newer than `ts` (so [`Counter::rebased`] can keep them)?
    pub fn splits_at(&self, ts: u64) -> bool {
        self.base_ts < ts && self.newest_ts() > ts && self.parts.iter().all(|p| p.folded_to <= ts)
    }

    /// A write of the whole value stamped as this state's base (the node that
    /// made the base sending it again as it holds it, see the door's repairs),
    /// met after increments on it: do those count on it instead, every one
    /// newer than it being remembered one by one (see [`Counter::rebased`])?
    pub fn rebases_at(&self, ts: u64) -> bool {
        self.base_ts == ts && self.newest_ts() > ts && self.parts.iter().all(|p| p.folded_to <= ts)
    }

    /// The state counting is in after a reset stamped `ts` put under this one:
    /// the increments newer than the reset counted on the value it wrote, each
    /// node's in the order it made them; the older ones are gone, as on every
    /// node that met the reset first. `base_of(by)` reads the reset's value as a
    /// number `by` counts on (a removed key is zero, and a string that holds no
    /// number one they wait on, see [`counted_on`]); an increment the value
    /// takes no such number for (a value of another type) is refused until one
    /// counts. `None` when none counts.
    pub fn rebased(&self, ts: u64, base_of: impl Fn(&Num) -> Option<Num>) -> Option<Counter> {
        replay_after(
            Start::write(ts),
            self.remembered_after(ts).collect(),
            base_of,
        )
    }

    /// This state of an element after a removal of it that saw its adds up to
    /// `seen`, met after increments the removal did not see: those count on
    /// nothing (zero) from just past `seen`, as on the node that removed it; the
    /// base and the increments the removal saw are gone. Unchanged when the base
    /// is newer than what the removal saw. `None` when it cannot tell (some
    /// increment newer than `seen` is folded) or nothing is left.
    pub fn after_removal_that_saw(&self, seen: u64) -> Option<Counter> {
        let removal = Start::removal(seen);
        if self.start() >= removal {
            return Some(self.clone());
        }
        if self.parts.iter().any(|p| p.folded_to > seen) {
            return None;
        }
        let kept = self.remembered_after(seen).collect();
        replay_after(removal, kept, |by| Some(by.zero_like()))
    }

    /// The increments of every node this state remembers one by one that are
    /// newer than `ts`: (timestamp, node, amount).
    fn remembered_after(&self, ts: u64) -> impl Iterator<Item = (u64, NodeId, &Num)> {
        self.parts.iter().flat_map(move |p| {
            p.recent
                .iter()
                .filter(move |(at, _)| *at > ts)
                .map(|(at, by)| (*at, p.node, by))
        })
    }

    /// This state (on the newer base) merged with `older`, a state on an older
    /// base: every increment either remembers that is newer than our base
    /// counts on it, in the order they were made, as on a node that met our base
    /// first (on a base that holds no number they wait, see [`Counter::waits`]).
    /// `None` when some increment newer than our base is no longer remembered
    /// one by one (folded).
    fn replayed_with(&self, older: &Counter) -> Option<Counter> {
        let base_ts = self.base_ts;
        let mut parts = self.parts.iter().chain(&older.parts);
        if parts.any(|p| p.folded_to > base_ts) {
            return None;
        }
        let kept = self
            .remembered_after(base_ts)
            .chain(older.remembered_after(base_ts))
            .collect();
        let base = Value::Str(StrValue::from_bytes(&self.base.text()));
        let replayed = replay_after(self.start(), kept, |by| counted_on(Some(&base), by));
        Some(replayed.unwrap_or_else(|| Counter::starting(self.start(), self.base.clone())))
    }

    /// [`Counter::rebased`] on a reset of a whole string that left `value`
    /// (`None`: it removed the key).
    pub fn rebased_on(&self, ts: u64, value: Option<&Value>) -> Option<Counter> {
        self.rebased(ts, |by| counted_on(value, by))
    }

    /// Take in a peer's state of the same key or element. Returns whether ours
    /// changed. The states are on the same base when they start at one write (or
    /// removal, see [`Start`]): each node's newer total is kept. Otherwise the
    /// newer start wins, and the increments newer than it that the other state
    /// remembers count on it, as they did on the node that met that start first
    /// (a whole key's base is a value of its own, which refuses an increment of
    /// another kind: see [`Counter::rebased`]; an element's, `element`, takes
    /// them all, as its counting command did).
    pub fn merge(&mut self, theirs: &Counter, element: bool) -> bool {
        if theirs.start() == self.start() {
            return self.take_newer_parts(theirs);
        }
        let (newer, older) = match theirs.start() > self.start() {
            true => (theirs, &*self),
            false => (&*self, theirs),
        };
        if let Some(replayed) = (!element).then(|| newer.replayed_with(older)).flatten() {
            let changed = replayed != *self;
            *self = replayed;
            return changed;
        }
        if theirs.start() > self.start() {
            let mut merged = theirs.clone();
            merged.count_remembered_after(self);
            *self = merged;
            return true;
        }
        self.count_remembered_after(theirs)
    }

    /// Same base: each node's newer total.
    fn take_newer_parts(&mut self, theirs: &Counter) -> bool {
        let mut changed = false;
        for part in &theirs.parts {
            match self.parts.binary_search_by(|p| p.node.cmp(&part.node)) {
                Ok(at) if self.parts[at].last_ts >= part.last_ts => {}
                Ok(at) => {
                    self.parts[at] = part.clone();
                    changed = true;
                }
                Err(at) => {
                    self.parts.insert(at, part.clone());
                    changed = true;
                }
            }
        }
        changed
    }

    /// Count the increments `older` (a state on an older base) remembers that
    /// are newer than our base and not counted here yet. Returns whether any was.
    fn count_remembered_after(&mut self, older: &Counter) -> bool {
        let mut changed = false;
        for part in &older.parts {
            for (at, by) in &part.recent {
                if *at > self.base_ts && !self.holds(&part.node, *at) {
                    self.add(part.node, by, *at);
                    changed = true;
                }
            }
        }
        changed
    }

    /// The state as text, for a snapshot's aux field:
    /// `<base_ts>[r] <base> [<node hex>:<total>:<ts>:<folded_to>[:<ts>=<by>]...]...`
    /// (`r`: counting starts at a removal that saw the add stamped `base_ts`).
    /// (A reader that knows only the first three fields of a node's word reads
    /// its totals.)
    pub fn encode(&self) -> String {
        let removal = if self.removal { "r" } else { "" };
        let mut text = format!("{}{removal} {}", self.base_ts, self.base.encode());
        for part in &self.parts {
            text.push_str(&format!(
                " {}:{}:{}:{}",
                hex::encode(part.node),
                part.total.encode(),
                part.last_ts,
                part.folded_to
            ));
            for (at, by) in &part.recent {
                text.push_str(&format!(":{at}={}", by.encode()));
            }
        }
        text
    }

    /// The state [`Counter::encode`] wrote; `None` when malformed. A node's word
    /// without the increments it remembers (an older writer's) remembers none.
    pub fn decode(text: &[u8]) -> Option<Counter> {
        let text = std::str::from_utf8(text).ok()?;
        let mut words = text.split(' ');
        let start = words.next()?;
        let start = match start.strip_suffix('r') {
            Some(seen) => Start::removal(seen.parse().ok()?),
            None => Start::write(start.parse().ok()?),
        };
        let base = Num::decode(words.next()?)?;
        let mut counter = Counter::starting(start, base);
        for word in words {
            let mut fields = word.split(':');
            let node = NodeId::try_from(hex::decode(fields.next()?).ok()?.as_slice()).ok()?;
            let total = Num::decode(fields.next()?)?;
            let last_ts = fields.next()?.parse().ok()?;
            let folded_to = match fields.next() {
                Some(folded_to) => folded_to.parse().ok()?,
                None => last_ts,
            };
            let recent = fields
                .map(|field| {
                    let (at, by) = field.split_once('=')?;
                    Some((at.parse().ok()?, Num::decode(by)?))
                })
                .collect::<Option<VecDeque<_>>>()?;
            let part = Part {
                node,
                total,
                last_ts,
                folded_to,
                recent,
            };
            match counter.parts.binary_search_by(|p| p.node.cmp(&node)) {
                Err(at) => counter.parts.insert(at, part),
                Ok(_) => return None,
            }
        }
        Some(counter)
    }
}

/// The counted states of one key: of the whole key (a string), or of its elements
/// (hash fields, sorted-set members). The elements' map is boxed: a string's
/// state (the most common) then carries 8 bytes for it instead of an empty map's 48.
#[derive(Debug, Default, Clone)]
pub struct Counted {
    pub whole: Option<Counter>,
    #[allow(clippy::box_collection)]
    members: Option<Box<HashMap<Box<[u8]>, Counter>>>,
}

impl Counted {
    /// The state of element `member`.
    pub fn member(&self, member: &[u8]) -> Option<&Counter> {
        self.members.as_ref()?.get(member)
    }

    /// The states of the elements, by element.
    pub fn members(&self) -> impl Iterator<Item = (&[u8], &Counter)> {
        self.members
            .iter()
            .flat_map(|m| m.iter().map(|(k, c)| (&**k, c)))
    }

    /// Every state the key holds, the whole key's and its elements'.
    pub fn states_mut(&mut self) -> impl Iterator<Item = &mut Counter> {
        let members = self.members.iter_mut().flat_map(|m| m.values_mut());
        self.whole.iter_mut().chain(members)
    }

    /// The state of element `member`, to change in place.
    pub fn member_mut(&mut self, member: &[u8]) -> Option<&mut Counter> {
        self.members.as_mut()?.get_mut(member)
    }

    /// Record `counter` as element `member`'s state.
    pub fn set_member(&mut self, member: &[u8], counter: Counter) {
        self.members
            .get_or_insert_with(Box::default)
            .insert(member.into(), counter);
    }

    /// Forget element `member`'s state.
    pub fn forget_member(&mut self, member: &[u8]) {
        if let Some(members) = &mut self.members {
            members.remove(member);
            if members.is_empty() {
                self.members = None;
            }
        }
    }

    /// How many states it holds.
    pub fn len(&self) -> usize {
        usize::from(self.whole.is_some()) + self.members.as_ref().map_or(0, |m| m.len())
    }

    /// Holds it no state at all?
    pub fn is_empty(&self) -> bool {
        self.whole.is_none() && self.members.is_none()
    }
}

/// A snapshot's aux field for an element's state: `m <member hex> <state>`; a
/// whole key's is the state alone.
pub fn encode_member(member: &[u8], counter: &Counter) -> String {
    format!("m {} {}", hex::encode(member), counter.encode())
}

/// A state read from a snapshot's aux field: the element it counts (`None`: the
/// whole key) and the state.
pub fn decode_aux(text: &[u8]) -> Option<(Option<Vec<u8>>, Counter)> {
    match text.strip_prefix(b"m ") {
        None => Some((None, Counter::decode(text)?)),
        Some(rest) => {
            let at = rest.iter().position(|&b| b == b' ')?;
            let member = hex::decode(&rest[..at]).ok()?;
            Some((Some(member), Counter::decode(&rest[at + 1..])?))
        }
    }
}

/// Count `kept` (increments newer than a reset at `start`, each once however
/// many states held it) on the value the reset wrote, in the order they were
/// made, as [`Counter::rebased`] says: `base_of(by)` reads that value as a
/// number of `by`'s kind.
fn replay_after(
    start: Start,
    mut kept: Vec<(u64, NodeId, &Num)>,
    base_of: impl Fn(&Num) -> Option<Num>,
) -> Option<Counter> {
    kept.sort_by_key(|(at, node, _)| (*at, *node));
    kept.dedup_by_key(|(at, node, _)| (*at, *node));
    let mut counter: Option<Counter> = None;
    for (at, node, by) in kept {
        if counter.is_none() {
            counter = base_of(by).map(|base| Counter::starting(start, base));
        }
        if let Some(counter) = &mut counter {
            counter.add(node, by, at);
        }
    }
    counter
}

/// What `member` of `value` (the whole string when `None`) holds, read as a number
/// of `like`'s kind; a missing element or key is zero. `None` when it holds no such
/// number (the command refuses it).
pub fn element(value: Option<&Value>, member: Option<&[u8]>, like: &Num) -> Option<Num> {
    let text: Option<Vec<u8>> = match (value, member) {
        (None, _) => None,
        (Some(Value::Str(s)), None) => {
            if let (Num::Int(_), Some(n)) = (like, s.as_i64()) {
                return Some(Num::Int(n));
            }
            Some(s.bytes(&mut itoa::Buffer::new()).to_vec())
        }
        (Some(Value::Hash(h)), Some(field)) => h.get(field).map(<[u8]>::to_vec),
        (Some(Value::ZSet(z)), Some(m)) => return Some(Num::Score(z.score(m).unwrap_or(0.0))),
        _ => return None,
    };
    let Some(text) = text else {
        return Some(like.zero_like());
    };
    match like {
        Num::Int(_) => parse_i64(&text).map(Num::Int),
        Num::Float(_) => incr_by_float(&text, b"0")
            .ok()
            .map(|_| Num::Float(text.into())),
        Num::Score(_) | Num::Text(_) => None,
    }
}

/// What an increment `like` that a node made on its own value (a peer's, being
/// replayed, or one merged in) counts on where string `value` (`None`: no key)
/// is its base: the value as a number of its kind, or, for an integer increment
/// on a value that holds none ("1.5", a concurrent INCRBYFLOAT's sum, a reset
/// written by another node), the value as a long double. Counting it there
/// rather than refusing it (as INCRBY on "1.5" refuses itself on the node that
/// runs it) makes what an increment adds depend only on which base it counts
/// on, never on what the node running the merge met first: a refusal forgotten
/// on one node, where another node met a newer base (a later reset, an
/// INCRBYFLOAT under it) that takes the increment, would leave them apart.
/// A string that holds no number at all ("abc") is a base the increment waits
/// on ([`Num::Text`], see [`Counter::waits`]), for the same reason. `None` when
/// the value is no string.
pub fn counted_on(value: Option<&Value>, like: &Num) -> Option<Num> {
    element(value, None, like)
        .or_else(|| match like {
            Num::Int(_) => element(value, None, &Num::Float(b"0"[..].into())),
            _ => None,
        })
        .or_else(|| match value {
            Some(Value::Str(s)) => Some(Num::Text(s.bytes(&mut itoa::Buffer::new()).into())),
            _ => None,
        })
}

/// Does `value` hold a number a peer's increment of the whole key counts on (a
/// string an INCRBYFLOAT would take)?
pub fn holds_number(value: &Value) -> bool {
    element(Some(value), None, &Num::Float(b"0"[..].into())).is_some()
}

/// Does string `value` hold exactly `num` (a whole key's state is current)?
pub fn holds_whole(value: &Value, num: &Num) -> bool {
    match (value, num) {
        (Value::Str(StrValue::Int(n)), Num::Int(m)) => n == m,
        (Value::Str(s), num) => s.bytes(&mut itoa::Buffer::new()) == &num.text()[..],
        _ => false,
    }
}

/// A copy of a whole string that holds uncounted `value`, last written at
/// `written_at` (TTL changes since leave it), seen against `counted`, a count
/// on the same write: a count of nothing on that base, to merge as any count.
/// `None` when the copy holds another write, or that write as another value.
pub fn uncounted(value: &Value, written_at: u64, counted: &Counter) -> Option<Counter> {
    let same_write = written_at == counted.base_ts && !counted.removal;
    (same_write && holds_whole(value, &counted.base))
        .then(|| Counter::new(written_at, counted.base.clone()))
}

/// Does `member` of `value` hold exactly `num` (an element's state is current)?
pub fn holds(value: &Value, member: &[u8], num: &Num) -> bool {
    match (value, num) {
        (Value::ZSet(z), Num::Score(x)) => z.score(member) == Some(*x),
        (Value::Hash(h), num) => h.get(member) == Some(&num.text()[..]),
        _ => false,
    }
}

/// Store `num` as what `member` of `value` (the whole string when `None`) holds.
/// The element exists (it was just incremented, or a merged state's element is
/// kept): a hash field's new value replaces the old in place.
pub fn materialize(value: &mut Value, member: Option<&[u8]>, num: &Num) {
    match (value, member, num) {
        (Value::Str(s), None, Num::Int(n)) => *s = StrValue::Int(*n),
        (Value::Str(s), None, Num::Text(text)) => *s = StrValue::from_bytes(text),
        (Value::Str(s), None, num) => *s = StrValue::from_bytes_unencoded(&num.text()),
        (Value::Hash(h), Some(field), num) if h.get(field).is_some() => {
            h.insert(field, &num.text(), IN_PLACE);
        }
        (Value::ZSet(z), Some(m), Num::Score(x)) if z.score(m).is_some() => {
            z.set_score(m, *x, SCORE_IN_PLACE);
        }
        _ => {}
    }
}

/// Limits that never convert a hash: a field replaced in place changes neither the
/// count of fields nor, past a few bytes, the size of a number's text.
const IN_PLACE: crate::types::hash::Limits = crate::types::hash::Limits {
    max_listpack_entries: usize::MAX,
    max_listpack_value: usize::MAX,
};

/// The same for a sorted set: a member's score changes, the members stay.
const SCORE_IN_PLACE: crate::types::zset::Limits = crate::types::zset::Limits {
    max_entries: usize::MAX,
    max_value: usize::MAX,
};

#[cfg(test)]
mod tests {
    use super::*;

    fn int(n: i64) -> Num {
        Num::Int(n)
    }

    #[test]
    fn increments_on_both_sides_of_a_partition_add_up() {
        // SET k 1 everywhere, then A adds 3 and B adds 1 apart.
        let mut a = Counter::new(10, int(1));
        a.add([1; 16], &int(1), 11);
        a.add([1; 16], &int(2), 12);
        let mut b = Counter::new(10, int(1));
        b.add([2; 16], &int(1), 13);
        let (a0, b0) = (a.clone(), b.clone());
        assert!(a.merge(&b0, false) && b.merge(&a0, false));
        assert_eq!((a.value(), b.value()), (int(5), int(5)));
        assert!(!a.merge(&b, false), "merging again changes nothing");
        assert_eq!(a.newest_ts(), 13);
        assert!(a.holds(&[2; 16], 13) && a.holds(&[1; 16], 11));
        assert!(!a.holds(&[2; 16], 14) && !a.holds(&[3; 16], 1));
    }

    #[test]
    fn a_copy_holding_the_base_uncounted_counts_nothing_on_it() {
        // B counts on the SET stamped 10; A holds its value uncounted, its TTL
        // changed since: a count of nothing on the same base, which merges.
        let mut b = Counter::new(10, int(1));
        b.add([2; 16], &int(1), 12);
        let one = Value::Str(StrValue::Int(1));
        let mut a = uncounted(&one, 10, &b).expect("the same write");
        assert!(a.merge(&b, false));
        assert_eq!(a.value(), int(2));
        assert_eq!(uncounted(&one, 11, &b), None, "another write");
        let other = Value::Str(StrValue::Int(7));
        assert_eq!(uncounted(&other, 10, &b), None, "another value");
    }

    #[test]
    fn a_newer_base_wins_and_an_older_one_loses() {
        let mut old = Counter::new(10, int(1));
        old.add([1; 16], &int(5), 11);
        let reset = Counter::new(20, int(100));
        assert!(!reset.clone().merge(&old, false));
        assert!(old.merge(&reset, false));
        assert_eq!(old.value(), int(100));
    }

    #[test]
    fn a_late_reset_keeps_the_increments_newer_than_it() {
        // Node 1 adds 5 then 3 on base 10; node 2's SET 100 at 15 comes between.
        let mut a = Counter::new(10, int(1));
        a.add([1; 16], &int(5), 12);
        a.add([1; 16], &int(3), 17);
        assert!(a.splits_at(15) && !a.splits_at(10) && !a.splits_at(17));
        assert!(a.rebases_at(10) && !a.rebases_at(15));
        let rebased = a.rebased(15, |_| Some(int(100))).unwrap();
        assert_eq!(rebased.value(), int(103));
        assert_eq!((rebased.base_ts, rebased.newest_ts()), (15, 17));
        // The node that set first counts the later increment on its base.
        let mut b = Counter::new(15, int(100));
        b.add([1; 16], &int(3), 17);
        assert_eq!(rebased, b);
        // A value that takes no number refuses them all.
        assert_eq!(a.rebased(15, |_| None), None);
    }

    #[test]
    fn a_full_sync_of_a_newer_base_keeps_our_increments_newer_than_it() {
        let mut ours = Counter::new(10, int(1));
        ours.add([1; 16], &int(5), 12);
        ours.add([1; 16], &int(3), 17);
        let theirs = Counter::new(15, int(100));
        assert!(ours.merge(&theirs, false));
        assert_eq!(ours.value(), int(103));
        let mut again = theirs.clone();
        let mut older = Counter::new(10, int(1));
        older.add([1; 16], &int(5), 12);
        older.add([1; 16], &int(3), 17);
        assert!(again.merge(&older, false));
        assert_eq!(again, ours);
        assert!(!again.merge(&older, false), "merging again changes nothing");
    }

    #[test]
    fn a_full_sync_counts_the_later_increments_of_both_on_the_newer_base() {
        // Node 3 renamed "1.5" onto the key at 20. Node 1 added integers at 21 and
        // 22 on its own older base, node 2 added 0.5 at 23 on another: all three
        // count on "1.5" (the integers as long doubles, though INCRBY refuses
        // itself on "1.5"), in whichever order the three states merge.
        let float = |text: &str| Num::Float(text.as_bytes().into());
        let reset = Counter::new(20, float("1.5"));
        let mut one = Counter::new(10, int(977));
        one.add([1; 16], &int(8), 21);
        one.add([1; 16], &int(4), 22);
        let mut two = Counter::new(15, float("676"));
        two.add([2; 16], &float("0.5"), 23);
        let mut on_one = one.clone();
        assert!(on_one.merge(&two, false) && on_one.merge(&reset, false));
        let mut on_reset = reset.clone();
        assert!(on_reset.merge(&two, false) && on_reset.merge(&one, false));
        assert_eq!(on_one, on_reset);
        assert_eq!(on_one.value().text(), b"14");
    }

    #[test]
    fn an_integer_increment_counts_on_any_number_a_later_reset_or_float_leaves() {
        // A reset wrote "1.5" at 20; node 1's INCRBY 2 at 30, made on its own
        // integer, counts on it as a long double, as it does on the INCRBYFLOAT
        // sum a node that met node 2's 0.5 at 25 first holds: both orders end
        // alike. A value that holds no number takes none: it waits there.
        let float = |text: &str| Num::Float(text.as_bytes().into());
        let string = |text: &str| Value::Str(StrValue::from_bytes(text.as_bytes()));
        let mut counted = Counter::new(10, int(5));
        counted.add([1; 16], &int(2), 30);
        let rebased = counted.rebased_on(20, Some(&string("1.5"))).unwrap();
        assert_eq!(rebased.value().text(), b"3.5");
        let mut float_first = Counter::new(20, float("1.5"));
        float_first.add([2; 16], &float("0.5"), 25);
        float_first.add([1; 16], &int(2), 30);
        let mut int_first = rebased.clone();
        int_first.add([2; 16], &float("0.5"), 25);
        assert_eq!(int_first, float_first);
        assert_eq!(int_first.value().text(), b"4");
        let waiting = counted.rebased_on(20, Some(&string("abc"))).unwrap();
        assert!(waiting.waits());
        assert_eq!(counted_on(Some(&string("7")), &int(1)), Some(int(7)));
        assert_eq!(
            counted_on(Some(&Value::List(Default::default())), &int(1)),
            None
        );
    }

    fn string(text: &str) -> Value {
        Value::Str(StrValue::from_bytes(text.as_bytes()))
    }

    /// Node 1's INCR at 30, made on its 5 of 10, that met node 2's "abc" of 20.
    fn waiting_on_abc() -> Counter {
        let mut counted = Counter::new(10, int(5));
        counted.add([1; 16], &int(1), 30);
        counted.rebased_on(20, Some(&string("abc"))).unwrap()
    }

    /// A node that met node 3's SET 10 at 25 before node 1's INCR at 30.
    fn counted_on_ten() -> Counter {
        let mut counted = Counter::new(25, int(10));
        counted.add([1; 16], &int(1), 30);
        counted
    }

    #[test]
    fn increments_newer_than_a_value_that_holds_no_number_wait_on_it() {
        let waiting = waiting_on_abc();
        assert!(waiting.waits());
        assert_eq!(waiting.value(), Num::Text(b"abc"[..].into()));
        assert_eq!((waiting.base_ts, waiting.newest_ts()), (20, 30));
        assert!(waiting.holds(&[1; 16], 30));
        // A peer's increment met after "abc" waits alike: the same state.
        let base = counted_on(Some(&string("abc")), &int(1)).unwrap();
        let mut met_after = Counter::new(20, base);
        met_after.add([1; 16], &int(1), 30);
        assert_eq!(met_after, waiting);
        // More increments wait too; the value stays.
        met_after.add([2; 16], &Num::Float(b"0.5"[..].into()), 31);
        assert_eq!(met_after.value().text(), b"abc");
        // A float reads no better: "abc" is no long double either.
        let float = Num::Float(b"1"[..].into());
        assert!(matches!(
            counted_on(Some(&string("abc")), &float),
            Some(Num::Text(_))
        ));
    }

    #[test]
    fn waiting_increments_count_on_an_older_reset_that_holds_a_number() {
        // Node 3's SET 10 at 25, newer than "abc", older than the INCR, goes
        // under it: the INCR counts on 10, as on the node that met the SET first.
        let rebased = waiting_on_abc()
            .rebased_on(25, Some(&string("10")))
            .unwrap();
        assert!(!rebased.waits());
        assert_eq!(rebased, counted_on_ten());
        assert_eq!(rebased.value(), int(11));
        // "abc" reaching the node that counts on 10 is older than its base.
        assert!(!counted_on_ten().splits_at(20));
        // A later reset that holds no number makes them wait again.
        let again = counted_on_ten()
            .rebased_on(27, Some(&string("x y")))
            .unwrap();
        assert_eq!(again.value().text(), b"x y");
        assert_eq!(
            again.rebased_on(28, Some(&string("1"))).unwrap().value(),
            int(2)
        );
    }

    #[test]
    fn a_waiting_state_merges_alike_in_either_order() {
        let (waiting, ten) = (waiting_on_abc(), counted_on_ten());
        let (mut on_waiting, mut on_ten) = (waiting.clone(), ten.clone());
        assert!(on_waiting.merge(&ten, false));
        assert!(!on_ten.merge(&waiting, false));
        assert_eq!(on_waiting, on_ten);
        assert_eq!(on_ten.value(), int(11));
        // The node that counted the INCR on its own older base meets "abc" by
        // a full sync: both wait, in either order.
        let mut own = Counter::new(10, int(5));
        own.add([1; 16], &int(1), 30);
        let (mut on_own, mut on_abc) = (own.clone(), waiting.clone());
        assert!(on_own.merge(&waiting, false));
        assert!(!on_abc.merge(&own, false));
        assert_eq!(on_own, on_abc);
        assert!(on_own.waits());
        // Folded, they no longer split: a reset older than them is judged by
        // last writer, as for any folded increment.
        let mut folded = waiting.clone();
        assert!(!folded.fold(31));
        assert!(!folded.splits_at(25));
        assert_eq!(folded.value().text(), b"abc");
    }

    #[test]
    fn folded_increments_no_longer_split() {
        let mut a = Counter::new(10, int(1));
        a.add([1; 16], &int(5), 12);
        a.add([1; 16], &int(3), 17);
        assert!(a.fold(13));
        assert!(a.splits_at(14) && !a.splits_at(11));
        assert!(!a.fold(20));
        assert!(!a.splits_at(14));
        assert_eq!(a.value(), int(9));
        for ts in 0..RECENT_MAX as u64 + 5 {
            a.add([2; 16], &int(1), 100 + ts);
        }
        assert_eq!(a.parts[1].recent.len(), RECENT_MAX);
        assert_eq!(a.parts[1].folded_to, 104);
    }

    #[test]
    fn element_states_on_different_starts_keep_the_newer_and_the_increments_past_it() {
        // Both counted from the ZADD at 8; node 1's ZADD of the same score at
        // 10 reset it there, and node 2's increment at 9 went under it.
        let mut a = Counter::new(10, Num::Score(1.5));
        a.add([1; 16], &Num::Score(1.0), 30);
        let mut b = Counter::new(8, Num::Score(1.5));
        b.add([2; 16], &Num::Score(0.25), 9);
        b.add([2; 16], &Num::Score(0.5), 12);
        let (a0, b0) = (a.clone(), b.clone());
        assert!(a.merge(&b0, true) && b.merge(&a0, true));
        assert_eq!(a, b);
        assert_eq!(a.value(), Num::Score(3.0));
    }

    #[test]
    fn a_removal_takes_only_the_increments_it_saw() {
        // HSET f 5 at 10 everywhere, node 1's increment at 12 too. Apart, node 2
        // adds 2 at 15 and 4 at 22; node 1 removes f at 20, having seen its add
        // at 12, then adds 3 at 25.
        let (one, two) = ([1; 16], [2; 16]);
        let mut counting = Counter::new(10, int(5));
        counting.add(one, &int(1), 12);
        counting.add(two, &int(2), 15);
        counting.add(two, &int(4), 22);
        // Node 2 meets the removal: the base and the increment it saw go.
        let after = counting.after_removal_that_saw(12).unwrap();
        assert_eq!((after.value(), after.start()), (int(6), Start::removal(12)));
        // Node 1 counts from just past what its removal saw, not from the
        // removal: node 2's increments at 15 and 22 still count there.
        let mut remover = Counter::starting(Start::removal(12), int(0));
        remover.add(one, &int(3), 25);
        assert!(!remover.start().took(15) && remover.start().took(12));
        let mut live = after.clone();
        live.add(one, &int(3), 25);
        for ts in [15, 22] {
            let by = if ts == 15 { 2 } else { 4 };
            remover.add(two, &int(by), ts);
        }
        assert_eq!(live.value(), int(9));
        assert_eq!(remover, live);
        // A full sync of the state from before the removal ends the same, in
        // either direction.
        let mut remover = Counter::starting(Start::removal(12), int(0));
        remover.add(one, &int(3), 25);
        let mut synced = counting.clone();
        assert!(synced.merge(&remover, true));
        assert!(remover.merge(&counting, true));
        assert_eq!((synced.value(), remover.value()), (int(9), int(9)));
        assert_eq!(synced, remover);
    }

    #[test]
    fn a_removal_leaves_a_state_it_did_not_see_the_start_of() {
        // A removal that saw the write counting starts from takes it; one that
        // saw only older adds takes nothing.
        let mut c = Counter::new(12, int(5));
        c.add([2; 16], &int(2), 15);
        assert_eq!(c.after_removal_that_saw(12).unwrap().value(), int(2));
        assert_eq!(c.after_removal_that_saw(11), Some(c.clone()));
        assert!(Start::removal(12) > Start::write(12) && Start::write(13) > Start::removal(12));
        // An increment it did not see, folded: it cannot tell.
        c.fold(16);
        assert_eq!(c.after_removal_that_saw(12), None);
        // A removal that saw every increment leaves nothing.
        let mut d = Counter::new(12, int(5));
        d.add([2; 16], &int(2), 15);
        assert_eq!(d.after_removal_that_saw(15), None);
    }

    #[test]
    fn float_sums_are_the_same_whatever_order_the_increments_came_in() {
        let float = |t: &str| Num::Float(t.as_bytes().into());
        let (mut a, mut b) = (Counter::new(1, float("1")), Counter::new(1, float("1")));
        a.add([2; 16], &float("0.2"), 5);
        a.add([1; 16], &float("0.1"), 4);
        b.add([1; 16], &float("0.1"), 4);
        b.add([2; 16], &float("0.2"), 5);
        assert_eq!(a, b);
        assert_eq!(a.value().text(), b"1.3");
        let mixed = int(5).add(&float("0.5"));
        assert_eq!(mixed, float("5.5"));
    }

    #[test]
    fn the_text_form_reads_back() {
        let mut c = Counter::new(7, int(-3));
        c.add([0xab; 16], &int(9), 8);
        c.add([0x01; 16], &Num::Float(b"1.25"[..].into()), 9);
        assert_eq!(Counter::decode(c.encode().as_bytes()), Some(c.clone()));
        let mut s = Counter::new(7, Num::Score(0.1));
        s.add([0xab; 16], &Num::Score(-1e300), 8);
        assert_eq!(Counter::decode(s.encode().as_bytes()), Some(s.clone()));
        let mut r = Counter::starting(Start::removal(12), int(0));
        r.add([0xab; 16], &int(2), 15);
        assert!(r.encode().starts_with("12r 0 "));
        assert_eq!(Counter::decode(r.encode().as_bytes()), Some(r));
        let aux = encode_member(b"f 1", &s);
        assert_eq!(decode_aux(aux.as_bytes()), Some((Some(b"f 1".to_vec()), s)));
        assert_eq!(decode_aux(c.encode().as_bytes()), Some((None, c)));
        assert_eq!(Counter::decode(b"x 1"), None);
        assert_eq!(Counter::decode(b"1 2 zz:1:2"), None);
        assert_eq!(Counter::decode(b"1 fnope"), None);
        let mut t = Counter::new(20, Num::Text(b"a b:c=\x00"[..].into()));
        t.add([0xab; 16], &int(1), 30);
        assert!(t.encode().starts_with("20 t"));
        assert_eq!(Counter::decode(t.encode().as_bytes()), Some(t));
        assert_eq!(Counter::decode(b"1 tzz"), None);
        // An older writer's word: its totals, nothing remembered one by one.
        let old = Counter::decode(format!("7 -3 {}:9:8", hex::encode([0xab; 16])).as_bytes());
        let old = old.unwrap();
        assert_eq!((old.value(), old.parts[0].folded_to), (int(6), 8));
        assert!(old.parts[0].recent.is_empty());
    }
}
