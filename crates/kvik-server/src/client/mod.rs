//! Clients: the per-connection state commands see, and the registry other threads use
//! to list and kill clients.
//!
//! A connection's state ([`ClientState`]) belongs to the worker thread that accepted
//! it and is touched by nobody else. What other threads may need (CLIENT LIST, CLIENT
//! KILL, INFO clients) is a [`ClientInfo`] in the [`Registry`]: fixed facts, a kill flag,
//! and a snapshot of the changing fields that the owning thread refreshes each time it
//! writes replies. The line CLIENT LIST prints for a client is built here too, so every
//! command that describes clients says the same thing.

mod transaction;

pub use transaction::{Queued, Transaction, Watching};

use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// How the client wants replies (CLIENT REPLY).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyMode {
    On,
    Off,
    /// Skip the reply of the next command only.
    SkipNext,
    /// Skipping the reply of the command being run now.
    Skipping,
}

/// The classes CLIENT LIST TYPE and CLIENT KILL TYPE select.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientType {
    Normal,
    Replica,
    Pubsub,
    Master,
}

impl ClientType {
    /// The class named by a client (any case); `slave` is the old name of `replica`.
    pub fn parse(name: &[u8]) -> Option<ClientType> {
        let is = |s: &str| name.eq_ignore_ascii_case(s.as_bytes());
        if is("normal") {
            Some(ClientType::Normal)
        } else if is("replica") || is("slave") {
            Some(ClientType::Replica)
        } else if is("pubsub") {
            Some(ClientType::Pubsub)
        } else if is("master") {
            Some(ClientType::Master)
        } else {
            None
        }
    }
}

/// The changing facts about a client that CLIENT LIST shows.
#[derive(Debug, Clone, Default)]
pub struct ClientSnapshot {
    pub name: Option<Vec<u8>>,
    pub db: usize,
    pub last_interaction_ms: u64,
    pub last_command: &'static str,
    /// Bytes in the read buffer that are not yet consumed (`qbuf`).
    pub query_buffer: usize,
    /// Room left in the read buffer (`qbuf-free`).
    pub query_buffer_free: usize,
    /// Bytes of the arguments of the command being run (`argv-mem`); only the client
    /// running a command has any.
    pub argv_mem: usize,
    /// Reply bytes not yet written to the socket (`obl`).
    pub output_buffer: usize,
    /// The socket is full and the rest of the replies waits for it (`events=rw`).
    pub write_pending: bool,
    /// Capacity of the reply buffer (`rbs`).
    pub reply_buffer_size: usize,
    /// Largest reply batch the buffer held since the last write (`rbp`).
    pub reply_buffer_peak: usize,
    pub resp: u8,
    pub lib_name: Option<Vec<u8>>,
    pub lib_ver: Option<Vec<u8>>,
    pub no_evict: bool,
    pub no_touch: bool,
    /// Waiting in a blocking command (`flags=b`).
    pub blocked: bool,
    /// Between MULTI and EXEC (`flags=x`): how many commands are queued (`multi=`)
    /// and the bytes of their arguments (`multi-mem=`).
    pub multi: Option<(usize, usize)>,
    pub user: String,
    /// Subscribed channels, patterns and shard channels (`sub`, `psub`, `ssub`).
    pub subscriptions: (usize, usize, usize),
    /// In MONITOR mode (`flags=O`).
    pub monitor: bool,
    /// Client-side caching, while on (`flags=t`, `R`, `B` and `redir=`).
    pub tracking: Option<TrackingSummary>,
    /// A replica's connection (`S`), or our master's (`M`).
    pub replication: Option<ClientType>,
}

impl ClientSnapshot {
    /// A client subscribed to anything is a pub/sub client (MONITOR clients stay
    /// normal ones, as in Redis); the rest are normal until replication classifies
    /// its own.
    pub fn client_type(&self) -> ClientType {
        if let Some(role) = self.replication {
            role
        } else if self.is_subscriber() {
            ClientType::Pubsub
        } else {
            ClientType::Normal
        }
    }

    fn is_subscriber(&self) -> bool {
        self.subscriptions != (0, 0, 0)
    }

    /// CLIENT LIST's `flags=` letters in Redis's order, `N` when none applies.
    fn flags(&self, unix_socket: bool) -> String {
        let mut flags = String::new();
        match self.replication {
            Some(ClientType::Replica) => flags.push('S'),
            Some(ClientType::Master) => flags.push('M'),
            _ => {}
        }
        if self.monitor {
            flags.push('O');
        }
        if self.is_subscriber() {
            flags.push('P');
        }
        if self.blocked {
            flags.push('b');
        }
        if self.multi.is_some() {
            flags.push('x');
        }
        if let Some(tracking) = self.tracking {
            flags.push('t');
            if tracking.broken_redirect {
                flags.push('R');
            }
            if tracking.bcast {
                flags.push('B');
            }
        }
        if unix_socket {
            flags.push('U');
        }
        if self.no_evict {
            flags.push('e');
        }
        if self.no_touch {
            flags.push('T');
        }
        if flags.is_empty() {
            flags.push('N');
        }
        flags
    }

    /// Pending output as Redis splits it: up to [`REPLY_CHUNK`] bytes in the
    /// connection's own buffer (`obl`), the rest in `oll` chunks of `omem` bytes.
    fn output_split(&self) -> (usize, usize, usize) {
        let obl = self.output_buffer.min(REPLY_CHUNK);
        let omem = self.output_buffer - obl;
        (obl, omem.div_ceil(REPLY_CHUNK), omem)
    }

    /// A rough count of the memory this client holds: its buffers plus its state.
    pub fn total_memory(&self) -> usize {
        self.query_buffer
            + self.query_buffer_free
            + self.argv_mem
            + self.output_split().2
            + self.reply_buffer_size
            + std::mem::size_of::<ClientState>()
            + std::mem::size_of::<ClientInfo>()
    }
}

/// The shared face of a client.
pub struct ClientInfo {
    pub id: u64,
    /// Index of the worker thread that owns the connection, and the connection's
    /// token in that worker's poller (how messages for it find it).
    pub worker: usize,
    pub token: usize,
    pub addr: String,
    pub laddr: String,
    /// Connected through the `unixsocket` (`flags=U`).
    pub unix_socket: bool,
    pub fd: i32,
    pub created_ms: u64,
    /// Set by CLIENT KILL; the owner closes the connection when it sees it.
    pub killed: AtomicBool,
    pub snapshot: Mutex<ClientSnapshot>,
}

impl ClientInfo {
    /// A client the server runs itself, with no connection of a worker behind it
    /// (the link to a master, the AOF being loaded): `addr` is what CLIENT LIST shows.
    pub fn without_socket(id: u64, addr: String, snapshot: ClientSnapshot) -> ClientInfo {
        ClientInfo {
            id,
            worker: 0,
            token: usize::MAX,
            addr,
            laddr: String::new(),
            fd: -1,
            unix_socket: false,
            created_ms: crate::hlc::unix_ms(),
            killed: AtomicBool::new(false),
            snapshot: Mutex::new(snapshot),
        }
    }

    /// Seconds since the connection was accepted (`age=`).
    pub fn age_secs(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.created_ms) / 1000
    }

    /// Flag the client for closing. Returns false if someone flagged it first, so
    /// two concurrent kills count it once.
    pub fn mark_killed(&self) -> bool {
        !self.killed.swap(true, Ordering::AcqRel)
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    /// Append this client's CLIENT LIST line (with its newline) to `out`, as Redis 7.0
    /// words it.
    pub fn describe(&self, snap: &ClientSnapshot, now_ms: u64, out: &mut String) {
        let name = snap.name.as_deref().unwrap_or_default();
        let events = if snap.write_pending { "rw" } else { "r" };
        let (multi, multi_mem) = snap.multi.map_or((-1, 0), |(n, mem)| (n as i64, mem));
        let (sub, psub, ssub) = snap.subscriptions;
        let (obl, oll, omem) = snap.output_split();
        let redir = snap.tracking.map_or(-1, |t| t.redirect as i64);
        let _ = writeln!(
            out,
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} \
             sub={sub} psub={psub} ssub={ssub} multi={} qbuf={} qbuf-free={} argv-mem={} \
             multi-mem={} rbs={} rbp={} obl={obl} oll={oll} omem={omem} tot-mem={} events={} \
             cmd={} user={} redir={redir} resp={}",
            self.id,
            self.addr,
            self.laddr,
            self.fd,
            String::from_utf8_lossy(name),
            self.age_secs(now_ms),
            now_ms.saturating_sub(snap.last_interaction_ms) / 1000,
            snap.flags(self.unix_socket),
            snap.db,
            multi,
            snap.query_buffer,
            snap.query_buffer_free,
            snap.argv_mem,
            multi_mem,
            snap.reply_buffer_size,
            snap.reply_buffer_peak,
            snap.total_memory(),
            events,
            snap.last_command,
            snap.user,
            snap.resp,
        );
    }
}

/// The size of the reply buffer Redis keeps inside each client, and of the blocks it
/// chains after it: CLIENT LIST splits pending output the same way.
const REPLY_CHUNK: usize = 16 * 1024;

/// The read buffer around the command being run, as the connection reports it before
/// each command (CLIENT LIST and CLIENT INFO show it for the caller).
#[derive(Debug, Clone, Copy, Default)]
pub struct QueryBufferUsage {
    /// Bytes from the start of the current command to the end of the data read.
    pub used: usize,
    /// Room left after the data read.
    pub free: usize,
}

/// Everything a command may read or change about the client that sent it.
pub struct ClientState {
    pub info: Arc<ClientInfo>,
    pub db: usize,
    pub name: Option<Vec<u8>>,
    pub authenticated: bool,
    pub user: String,
    /// The ACL user whose permissions apply, with its cached "may run anything".
    pub acl: crate::acl::Session,
    pub reply_mode: ReplyMode,
    /// Push frames written while replies are silenced (CLIENT REPLY OFF/SKIP):
    /// Redis sends pushes whatever the reply mode (its `CLIENT_PUSHING`), so they
    /// survive the silencing of the command that wrote them.
    pub pushes: Vec<u8>,
    pub no_evict: bool,
    pub no_touch: bool,
    pub lib_name: Option<Vec<u8>>,
    pub lib_ver: Option<Vec<u8>>,
    /// Close the connection once the pending replies are written (QUIT, errors).
    pub close_after_reply: bool,
    /// The command being run, for CLIENT LIST's `cmd=`.
    pub last_command: &'static str,
    pub query_buffer: QueryBufferUsage,
    /// The blocking command this client waits in (BLPOP ...): while set, the
    /// connection runs none of its later commands.
    pub blocked: Option<crate::blocking::Blocked>,
    /// Blocking commands must not wait now: set while a transaction or a script runs
    /// its commands, where they answer at once as if their timeout had passed.
    pub deny_blocking: bool,
    /// Between MULTI and EXEC: the commands queued so far.
    pub multi: Option<Transaction>,
    /// The keys WATCHed, until EXEC, DISCARD, UNWATCH or RESET.
    pub watching: Option<Watching>,
    /// Pub/sub subscriptions; any makes a RESP2 connection accept only the
    /// subscription commands.
    pub pubsub: crate::pubsub::Subscriptions,
    /// In MONITOR mode: every command the server runs is sent to this client.
    pub monitor: bool,
    /// A script is running the client's commands (`redis.call`): MONITOR shows them
    /// as coming from `lua`.
    pub running_script: bool,
    /// The memory check before the current command found used memory over
    /// `maxmemory` with nothing left to evict: the scripts it runs may not start
    /// writing (Redis's `pre_command_oom_state`).
    pub over_memory: bool,
    /// Client-side caching settings, while CLIENT TRACKING is on.
    pub tracking: Option<ClientTracking>,
    /// This client is our master's link, applying its stream.
    pub is_master: bool,
    /// This connection is one of our replicas (after SYNC / PSYNC): its output
    /// comes from the replication feed.
    pub is_replica: bool,
    /// What it said about itself with REPLCONF, for when it asks to sync.
    pub replica_hello: ReplicaHello,
}

/// What a replica says about itself with REPLCONF before SYNC / PSYNC.
#[derive(Debug, Clone, Default)]
pub struct ReplicaHello {
    /// `listening-port`.
    pub listening_port: u16,
    /// `ip-address`.
    pub ip: Option<String>,
    /// `capa eof`: it reads a diskless payload.
    pub eof: bool,
    /// `rdb-only 1`: it wants the RDB and nothing after (redis-cli --rdb).
    pub rdb_only: bool,
    /// It sent SYNC, not PSYNC: the payload comes without `+FULLRESYNC`.
    pub plain_sync: bool,
    /// `uuid`: an active replica's node id (KeyDB's handshake).
    pub uuid: Option<[u8; 16]>,
    /// `capa kvik-rreplay`: it reads kvik's envelopes (a kvik active replica).
    pub kvik: bool,
}

impl ClientState {
    /// Whether the reply of the command being run is dropped (CLIENT REPLY OFF, or
    /// the command CLIENT REPLY SKIP skips).
    pub fn replies_silenced(&self) -> bool {
        matches!(self.reply_mode, ReplyMode::Off | ReplyMode::Skipping)
    }

    pub fn new(info: Arc<ClientInfo>, authenticated: bool) -> Self {
        ClientState {
            info,
            db: 0,
            name: None,
            authenticated,
            user: "default".into(),
            acl: crate::acl::Session::internal(),
            reply_mode: ReplyMode::On,
            pushes: Vec::new(),
            no_evict: false,
            no_touch: false,
            lib_name: None,
            lib_ver: None,
            close_after_reply: false,
            last_command: "NULL",
            query_buffer: QueryBufferUsage::default(),
            blocked: None,
            deny_blocking: false,
            running_script: false,
            over_memory: false,
            multi: None,
            watching: None,
            pubsub: Default::default(),
            monitor: false,
            tracking: None,
            is_master: false,
            is_replica: false,
            replica_hello: ReplicaHello::default(),
        }
    }

    pub fn id(&self) -> u64 {
        self.info.id
    }

    /// CLIENT SETNAME / HELLO SETNAME: the name shows in CLIENT LIST at once.
    pub fn set_name(&mut self, name: Option<Vec<u8>>) {
        self.info.snapshot.lock().name = name.clone();
        self.name = name;
    }

    /// CLIENT SETINFO LIB-NAME: shows in CLIENT LIST at once.
    pub fn set_lib_name(&mut self, lib_name: Option<Vec<u8>>) {
        self.info.snapshot.lock().lib_name = lib_name.clone();
        self.lib_name = lib_name;
    }

    /// CLIENT SETINFO LIB-VER: shows in CLIENT LIST at once.
    pub fn set_lib_ver(&mut self, lib_ver: Option<Vec<u8>>) {
        self.info.snapshot.lock().lib_ver = lib_ver.clone();
        self.lib_ver = lib_ver;
    }

    /// CLIENT TRACKING ON/OFF: shows in CLIENT LIST at once.
    pub fn set_tracking(&mut self, tracking: Option<ClientTracking>) {
        self.tracking = tracking;
        self.publish_tracking();
    }

    /// Show a change of the tracking settings (a redirect found broken) in CLIENT LIST.
    pub fn publish_tracking(&self) {
        self.info.snapshot.lock().tracking = self.tracking.as_ref().map(|t| t.summary());
    }

    /// What CLIENT LIST shows for this client while it runs a command: the published
    /// snapshot is as old as the last batch of replies, so the fields the command
    /// itself changes come from the live state and its reply buffer (replies of the
    /// batch so far count in `obl`, but are not waiting for the socket yet).
    pub fn live_snapshot(
        &self,
        now_ms: u64,
        reply: &kvik_resp::ReplyWriter,
        argv_mem: usize,
    ) -> ClientSnapshot {
        let published = self.info.snapshot.lock().clone();
        ClientSnapshot {
            name: self.name.clone(),
            db: self.db,
            last_interaction_ms: now_ms,
            last_command: self.last_command,
            query_buffer: self.query_buffer.used,
            query_buffer_free: self.query_buffer.free,
            argv_mem,
            output_buffer: reply.buf.len(),
            reply_buffer_size: reply.buf.capacity(),
            resp: if reply.is_resp3() { 3 } else { 2 },
            no_evict: self.no_evict,
            no_touch: self.no_touch,
            multi: self.multi.as_ref().map(|t| t.usage()),
            user: self.user.clone(),
            subscriptions: self.pubsub.counts(),
            monitor: self.monitor,
            tracking: self.tracking.as_ref().map(|t| t.summary()),
            ..published
        }
    }
}

/// Every connected client, by id.
#[derive(Default)]
pub struct Registry {
    clients: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
    next_id: AtomicU64,
    connected: AtomicUsize,
}

impl Registry {
    /// Reserve a slot for a new connection; fails when `max` are connected already.
    pub fn try_reserve(&self, max: usize) -> bool {
        self.connected
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }

    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub fn add(&self, info: Arc<ClientInfo>) {
        self.clients.lock().insert(info.id, info);
    }

    pub fn remove(&self, id: u64) {
        if self.clients.lock().remove(&id).is_some() {
            self.connected.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Give back a reserved slot for a connection that was never added.
    pub fn release_reservation(&self) {
        self.connected.fetch_sub(1, Ordering::AcqRel);
    }

    pub fn connected(&self) -> usize {
        self.connected.load(Ordering::Acquire)
    }

    pub fn get(&self, id: u64) -> Option<Arc<ClientInfo>> {
        self.clients.lock().get(&id).cloned()
    }

    /// A snapshot of all clients, in id order.
    pub fn all(&self) -> Vec<Arc<ClientInfo>> {
        self.clients.lock().values().cloned().collect()
    }
}

/// A client's settings from CLIENT TRACKING ON, kept in its state while it tracks.
#[derive(Debug, Clone, Default)]
pub struct ClientTracking {
    /// The id of the client that receives the invalidations instead (REDIRECT), 0
    /// for none.
    pub redirect: u64,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    /// CLIENT CACHING was given for the next command (or transaction).
    pub caching: bool,
    /// The redirect target was found gone.
    pub broken_redirect: bool,
    /// BCAST prefixes, in the order TRACKINGINFO lists them.
    pub prefixes: BTreeSet<Vec<u8>>,
}

/// What CLIENT LIST shows about a tracking client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrackingSummary {
    pub redirect: u64,
    pub bcast: bool,
    pub broken_redirect: bool,
}

impl ClientTracking {
    pub fn summary(&self) -> TrackingSummary {
        TrackingSummary {
            redirect: self.redirect,
            bcast: self.bcast,
            broken_redirect: self.broken_redirect,
        }
    }

    /// Do the reads of the command being run go into the tracking table? Not in
    /// BCAST mode; under OPTIN only after CLIENT CACHING YES, under OPTOUT unless
    /// after CLIENT CACHING NO.
    pub fn remembers_reads(&self) -> bool {
        if self.bcast {
            return false;
        }
        match (self.optin, self.optout) {
            (true, _) => self.caching,
            (_, true) => !self.caching,
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optin_and_optout_decide_which_reads_count() {
        let mut t = ClientTracking::default();
        assert!(t.remembers_reads());
        t.optin = true;
        assert!(!t.remembers_reads());
        t.caching = true;
        assert!(t.remembers_reads());
        t = ClientTracking {
            optout: true,
            ..ClientTracking::default()
        };
        assert!(t.remembers_reads());
        t.caching = true;
        assert!(!t.remembers_reads());
        t = ClientTracking {
            bcast: true,
            ..ClientTracking::default()
        };
        assert!(!t.remembers_reads());
    }
}
