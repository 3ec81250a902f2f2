//! Pub/Sub and MONITOR: who listens to what, and how a message reaches them.
//!
//! The [`Hub`] on the server maps channels, patterns and shard channels to their
//! subscribers, and keeps the list of MONITOR clients. A subscriber is known by its
//! client id, the worker thread that owns its connection, its token there and the
//! protocol it speaks. Publishing never touches another thread's connection: the
//! message frame is encoded once per protocol, and the bytes go to each subscriber's
//! worker through its mailbox ([`Message::Deliver`]), one message per worker and frame,
//! which appends them to the connection's reply buffer and writes them. A mailbox is a
//! FIFO, so the messages of one publisher arrive in the order they were published.
//!
//! A connection's own side of its subscriptions is [`Subscriptions`], kept in its
//! client state: the replies that count subscriptions, unsubscribing from everything
//! (UNSUBSCRIBE without arguments, RESET, disconnect) and CLIENT LIST read it.

use crate::mailbox::{Message, WorkerHandle};
use crate::util::glob::glob_match;
use kvik_resp::{Protocol, ReplyWriter};
use parking_lot::RwLock;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

/// The three namespaces a client can subscribe in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// SUBSCRIBE / PUBLISH.
    Channel,
    /// PSUBSCRIBE: glob patterns over the channels of PUBLISH.
    Pattern,
    /// SSUBSCRIBE / SPUBLISH: shard channels, a namespace of their own.
    Shard,
}

impl Kind {
    /// The first element of the confirmation pushed for (un)subscribing.
    pub fn subscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"subscribe",
            Kind::Pattern => b"psubscribe",
            Kind::Shard => b"ssubscribe",
        }
    }

    pub fn unsubscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"unsubscribe",
            Kind::Pattern => b"punsubscribe",
            Kind::Shard => b"sunsubscribe",
        }
    }
}

/// Someone a message can be sent to: a connection on some worker thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subscriber {
    pub client: u64,
    pub worker: usize,
    pub token: usize,
    pub protocol: Protocol,
}

/// Channel maps are split over this many locks by channel hash, so publishers on
/// different channels do not share a lock's cache line.
const STRIPES: usize = 16;

type Listeners = HashMap<Vec<u8>, Vec<Subscriber>>;

/// One namespace of exact names (channels or shard channels).
struct NameMap {
    stripes: Box<[RwLock<Listeners>]>,
    /// How many names have at least one subscriber (INFO's counts).
    names: AtomicUsize,
}

impl NameMap {
    fn new() -> Self {
        NameMap {
            stripes: (0..STRIPES).map(|_| RwLock::default()).collect(),
            names: AtomicUsize::new(0),
        }
    }

    fn stripe(&self, name: &[u8]) -> &RwLock<Listeners> {
        &self.stripes[crate::util::hash::hash_key(name) as usize % STRIPES]
    }

    fn add(&self, name: &[u8], who: Subscriber) {
        let mut map = self.stripe(name).write();
        let list = map.entry(name.to_vec()).or_insert_with(|| {
            self.names.fetch_add(1, Ordering::Relaxed);
            Vec::new()
        });
        list.push(who);
    }

    fn remove(&self, name: &[u8], client: u64) {
        let mut map = self.stripe(name).write();
        if let Some(list) = map.get_mut(name) {
            list.retain(|s| s.client != client);
            if list.is_empty() {
                map.remove(name);
                self.names.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// The names `client` is subscribed to.
    fn of_client(&self, client: u64) -> Vec<Vec<u8>> {
        let mut found = Vec::new();
        for stripe in self.stripes.iter() {
            let map = stripe.read();
            found.extend(
                map.iter()
                    .filter(|(_, list)| list.iter().any(|s| s.client == client))
                    .map(|(name, _)| name.clone()),
            );
        }
        found
    }

    fn count(&self, name: &[u8]) -> usize {
        self.stripe(name).read().get(name).map_or(0, Vec::len)
    }

    /// The names with subscribers that match `pattern` (all of them without one).
    fn matching(&self, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        let mut found = Vec::new();
        for stripe in self.stripes.iter() {
            let map = stripe.read();
            found.extend(
                map.keys()
                    .filter(|name| pattern.is_none_or(|p| glob_match(p, name, false)))
                    .cloned(),
            );
        }
        found
    }
}

/// Every subscription and every MONITOR client of the server.
pub struct Hub {
    channels: NameMap,
    shard_channels: NameMap,
    /// Pattern -> subscribers, in the order the patterns were first subscribed.
    patterns: RwLock<Vec<(Vec<u8>, Vec<Subscriber>)>>,
    pattern_count: AtomicUsize,
    monitors: RwLock<Vec<Subscriber>>,
    monitor_count: AtomicUsize,
    /// `notify-keyspace-events` as class bits (see [`crate::notify`]); 0 = off.
    pub keyspace_events: AtomicU32,
}

impl Hub {
    pub fn new(keyspace_events: u32) -> Self {
        Hub {
            channels: NameMap::new(),
            shard_channels: NameMap::new(),
            patterns: RwLock::default(),
            pattern_count: AtomicUsize::new(0),
            monitors: RwLock::default(),
            monitor_count: AtomicUsize::new(0),
            keyspace_events: AtomicU32::new(keyspace_events),
        }
    }

    fn names(&self, kind: Kind) -> &NameMap {
        match kind {
            Kind::Shard => &self.shard_channels,
            _ => &self.channels,
        }
    }

    /// Add a subscription. The caller has checked the client does not hold it yet.
    pub fn subscribe(&self, kind: Kind, name: &[u8], who: Subscriber) {
        if kind != Kind::Pattern {
            return self.names(kind).add(name, who);
        }
        let mut patterns = self.patterns.write();
        match patterns.iter_mut().find(|(p, _)| p == name) {
            Some((_, list)) => list.push(who),
            None => {
                patterns.push((name.to_vec(), vec![who]));
                self.pattern_count.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    pub fn unsubscribe(&self, kind: Kind, name: &[u8], client: u64) {
        if kind != Kind::Pattern {
            return self.names(kind).remove(name, client);
        }
        let mut patterns = self.patterns.write();
        if let Some(at) = patterns.iter().position(|(p, _)| p == name) {
            patterns[at].1.retain(|s| s.client != client);
            if patterns[at].1.is_empty() {
                patterns.remove(at);
                self.pattern_count.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// Every subscription of `client`, by kind (the ACL checks them when its
    /// user's channels change).
    pub fn subscriptions_of(&self, client: u64) -> Vec<(Kind, Vec<u8>)> {
        let mut found: Vec<(Kind, Vec<u8>)> = Vec::new();
        for kind in [Kind::Channel, Kind::Shard] {
            found.extend(
                self.names(kind)
                    .of_client(client)
                    .into_iter()
                    .map(|n| (kind, n)),
            );
        }
        let patterns = self.patterns.read();
        found.extend(
            patterns
                .iter()
                .filter(|(_, list)| list.iter().any(|s| s.client == client))
                .map(|(p, _)| (Kind::Pattern, p.clone())),
        );
        found
    }

    /// PUBSUB CHANNELS / SHARDCHANNELS.
    pub fn active(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        self.names(kind).matching(pattern)
    }

    /// PUBSUB NUMSUB / SHARDNUMSUB: subscribers of one name (patterns not counted).
    pub fn subscribers(&self, kind: Kind, name: &[u8]) -> usize {
        self.names(kind).count(name)
    }

    /// Distinct names with subscribers: INFO's `pubsub_channels`, `pubsub_patterns`
    /// and `pubsubshard_channels`, and PUBSUB NUMPAT.
    pub fn active_count(&self, kind: Kind) -> usize {
        match kind {
            Kind::Pattern => self.pattern_count.load(Ordering::Relaxed),
            _ => self.names(kind).names.load(Ordering::Relaxed),
        }
    }

    /// Start sending every command to `who` (MONITOR).
    pub fn add_monitor(&self, who: Subscriber) {
        self.monitors.write().push(who);
        self.monitor_count.fetch_add(1, Ordering::Relaxed);
    }

    pub fn remove_monitor(&self, client: u64) {
        let mut monitors = self.monitors.write();
        let before = monitors.len();
        monitors.retain(|m| m.client != client);
        let gone = before - monitors.len();
        self.monitor_count.fetch_sub(gone, Ordering::Relaxed);
    }

    /// Is anyone monitoring? One relaxed load: what every command pays for MONITOR.
    #[inline]
    pub fn has_monitors(&self) -> bool {
        self.monitor_count.load(Ordering::Relaxed) != 0
    }
}

/// The hub plus the mailboxes of the worker threads: everything needed to send a
/// message to subscribers from any thread.
#[derive(Clone, Copy)]
pub struct Bus<'a> {
    pub hub: &'a Hub,
    pub workers: &'a [WorkerHandle],
}

/// The connection publishing, when it may be a subscriber itself: its own copy of a
/// message goes straight into its reply buffer (ahead of the PUBLISH reply, as Redis
/// orders them) instead of through the mailbox.
pub struct Publisher<'o> {
    pub client: u64,
    pub out: &'o mut ReplyWriter,
}

impl Bus<'_> {
    /// Send `message` to the subscribers of `channel` (and, for [`Kind::Channel`], of
    /// every matching pattern). Returns how many receptions that made (a client
    /// matching through two patterns counts twice), PUBLISH's reply.
    pub fn publish(
        &self,
        kind: Kind,
        channel: &[u8],
        message: &[u8],
        mut me: Option<Publisher<'_>>,
    ) -> usize {
        let mut sent = 0;
        {
            let map = self.hub.names(kind).stripe(channel).read();
            if let Some(list) = map.get(channel) {
                let frame = Frame::Message {
                    kind,
                    channel,
                    message,
                };
                sent += self.send(&frame, list, me.as_mut());
            }
        }
        if kind == Kind::Channel && self.hub.pattern_count.load(Ordering::Relaxed) != 0 {
            let patterns = self.hub.patterns.read();
            for (pattern, list) in patterns.iter() {
                if glob_match(pattern, channel, false) {
                    let frame = Frame::PatternMessage {
                        pattern,
                        channel,
                        message,
                    };
                    sent += self.send(&frame, list, me.as_mut());
                }
            }
        }
        sent
    }

    /// Send one command line to every MONITOR client (see [`monitor_line`]).
    pub fn feed_monitors(&self, line: &[u8]) {
        let monitors = self.hub.monitors.read();
        self.send(&Frame::Raw(line), &monitors, None);
    }

    /// Send `frame` to each of `to`: one mailbox message per worker and protocol.
    fn send(
        &self,
        frame: &Frame<'_>,
        to: &[Subscriber],
        mut me: Option<&mut Publisher<'_>>,
    ) -> usize {
        let mut encoded: [Option<Arc<[u8]>>; 2] = [None, None];
        // Targets per (worker, protocol), allocated only for the workers involved.
        let mut batches: Vec<Option<Vec<(usize, u64)>>> = vec![None; self.workers.len() * 2];
        for who in to {
            if let Some(me) = me.as_deref_mut().filter(|me| me.client == who.client) {
                frame.encode(me.out);
                continue;
            }
            let slot = who.worker * 2 + (who.protocol == Protocol::Resp3) as usize;
            if let Some(batch) = batches.get_mut(slot) {
                batch
                    .get_or_insert_with(Vec::new)
                    .push((who.token, who.client));
            }
        }
        for (slot, batch) in batches.into_iter().enumerate() {
            let Some(targets) = batch else { continue };
            let protocol = if slot % 2 == 1 {
                Protocol::Resp3
            } else {
                Protocol::Resp2
            };
            let bytes = encoded[slot % 2]
                .get_or_insert_with(|| frame.to_bytes(protocol))
                .clone();
            self.workers[slot / 2].send(Message::Deliver { bytes, targets });
        }
        to.len()
    }
}

/// What a subscriber receives.
enum Frame<'m> {
    /// `message` / `smessage`: [kind, channel, payload].
    Message {
        kind: Kind,
        channel: &'m [u8],
        message: &'m [u8],
    },
    /// `pmessage`: [pattern, channel, payload].
    PatternMessage {
        pattern: &'m [u8],
        channel: &'m [u8],
        message: &'m [u8],
    },
    /// Bytes already encoded, the same in every protocol (MONITOR lines).
    Raw(&'m [u8]),
}

impl Frame<'_> {
    fn encode(&self, out: &mut ReplyWriter) {
        match *self {
            Frame::Message {
                kind,
                channel,
                message,
            } => {
                out.push(3);
                out.bulk(if kind == Kind::Shard {
                    b"smessage"
                } else {
                    b"message"
                });
                out.bulk(channel);
                out.bulk(message);
            }
            Frame::PatternMessage {
                pattern,
                channel,
                message,
            } => {
                out.push(4);
                out.bulk(b"pmessage");
                out.bulk(pattern);
                out.bulk(channel);
                out.bulk(message);
            }
            Frame::Raw(bytes) => out.raw(bytes),
        }
    }

    fn to_bytes(&self, protocol: Protocol) -> Arc<[u8]> {
        let mut out = ReplyWriter::with_buf(Vec::new(), protocol);
        self.encode(&mut out);
        out.buf.into()
    }
}

/// What one connection is subscribed to.
#[derive(Debug, Default)]
pub struct Subscriptions {
    channels: HashSet<Vec<u8>>,
    /// In subscription order: PUNSUBSCRIBE without arguments leaves them in it.
    patterns: Vec<Vec<u8>>,
    shard_channels: HashSet<Vec<u8>>,
}

impl Subscriptions {
    pub fn has(&self, kind: Kind, name: &[u8]) -> bool {
        match kind {
            Kind::Channel => self.channels.contains(name),
            Kind::Pattern => self.patterns.iter().any(|p| p == name),
            Kind::Shard => self.shard_channels.contains(name),
        }
    }

    /// Record a subscription; false if it was there already.
    pub fn add(&mut self, kind: Kind, name: &[u8]) -> bool {
        if self.has(kind, name) {
            return false;
        }
        match kind {
            Kind::Channel => self.channels.insert(name.to_vec()),
            Kind::Pattern => {
                self.patterns.push(name.to_vec());
                true
            }
            Kind::Shard => self.shard_channels.insert(name.to_vec()),
        }
    }

    /// Forget a subscription; false if there was none.
    pub fn remove(&mut self, kind: Kind, name: &[u8]) -> bool {
        match kind {
            Kind::Channel => self.channels.remove(name),
            Kind::Pattern => {
                let before = self.patterns.len();
                self.patterns.retain(|p| p != name);
                before != self.patterns.len()
            }
            Kind::Shard => self.shard_channels.remove(name),
        }
    }

    /// Every name held in one namespace.
    pub fn names(&self, kind: Kind) -> Vec<Vec<u8>> {
        match kind {
            Kind::Channel => self.channels.iter().cloned().collect(),
            Kind::Pattern => self.patterns.clone(),
            Kind::Shard => self.shard_channels.iter().cloned().collect(),
        }
    }

    /// (channels, patterns, shard channels): CLIENT LIST's `sub`, `psub`, `ssub`.
    pub fn counts(&self) -> (usize, usize, usize) {
        (
            self.channels.len(),
            self.patterns.len(),
            self.shard_channels.len(),
        )
    }

    /// The count a (un)subscribe confirmation reports: channels and patterns together,
    /// shard channels on their own.
    pub fn reply_count(&self, kind: Kind) -> usize {
        match kind {
            Kind::Shard => self.shard_channels.len(),
            _ => self.channels.len() + self.patterns.len(),
        }
    }

    /// Subscribed to anything: the connection is in subscribed mode (a `pubsub`
    /// client for CLIENT LIST/KILL and the output buffer limits).
    pub fn is_active(&self) -> bool {
        !(self.channels.is_empty() && self.patterns.is_empty() && self.shard_channels.is_empty())
    }
}

/// A MONITOR line, as Redis words it: `+<secs>.<usecs> [<db> <addr>] "arg" ...`, each
/// argument quoted and escaped.
pub fn monitor_line(unix_us: u64, db: usize, addr: &str, args: &[&[u8]]) -> Vec<u8> {
    let mut line = format!(
        "+{}.{:06} [{} {}]",
        unix_us / 1_000_000,
        unix_us % 1_000_000,
        db,
        addr
    )
    .into_bytes();
    for arg in args {
        line.push(b' ');
        quote_into(&mut line, arg);
    }
    line.extend_from_slice(b"\r\n");
    line
}

/// Append `arg` in double quotes with C-style escapes for quotes, backslashes,
/// control characters and bytes outside printable ASCII.
pub fn quote_into(out: &mut Vec<u8>, arg: &[u8]) {
    out.push(b'"');
    for &b in arg {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monitor_lines_quote_like_redis() {
        let line = monitor_line(
            1_700_000_000_000_042,
            3,
            "127.0.0.1:5000",
            &[b"SET", b"k y", b"q\"\\\n\r\t\x07\x08\x01\xff"],
        );
        assert_eq!(
            String::from_utf8(line).unwrap(),
            "+1700000000.000042 [3 127.0.0.1:5000] \"SET\" \"k y\" \"q\\\"\\\\\\n\\r\\t\\a\\b\\x01\\xff\"\r\n"
        );
    }

    #[test]
    fn reply_counts_keep_shard_channels_apart() {
        let mut s = Subscriptions::default();
        assert!(s.add(Kind::Channel, b"a"));
        assert!(!s.add(Kind::Channel, b"a"));
        assert!(s.add(Kind::Pattern, b"p*"));
        assert!(s.add(Kind::Shard, b"s"));
        assert_eq!(s.reply_count(Kind::Channel), 2);
        assert_eq!(s.reply_count(Kind::Shard), 1);
        assert!(s.remove(Kind::Pattern, b"p*"));
        assert_eq!(s.counts(), (1, 0, 1));
    }
}
