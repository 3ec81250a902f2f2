//! Replication as Redis 7.0 speaks it (PSYNC2): this node's role, its replication
//! ids and offsets, the backlog, the replicas it serves ([`master`]) and its links to
//! masters ([`replica`]).
//!
//! With KeyDB's `active-replica yes` a replica stays writable and its own writes
//! flow to its masters (each node of a pair is the other's replica); with
//! `multi-master yes` it follows several masters at once. Such a node keeps its own
//! history: its backlog carries its effects (its clients' writes and the ones it
//! applied from peers) as envelopes ([`active`]), each link keeps the place it
//! reached in its master's stream, and a full sync from a master merges into the
//! dataset (newest write wins, key by key) instead of replacing it.
//!
//! Active nodes tell each other, by markers in their streams, how old a write
//! they may still send ([`watermark`]); tombstones older than what every peer
//! said and acknowledged are collected here, from the replication cron.
//!
//! The stream replicas receive is the backlog's ([`backlog`]): on a master, an
//! effect sink that encodes the effects meant for replicas; on a replica, the bytes
//! its master sent, passed on verbatim (so chains count the same offsets). Its byte
//! count is `master_repl_offset`.
//!
//! Owns the replication state that INFO, ROLE and the commands read. Must not touch
//! the command table or connections: what it needs from above (running a command as
//! the master client, loading and taking snapshots, waking a worker) comes through
//! the [`Host`] seam handed down at start-up.

pub mod active;
pub mod backlog;
pub mod failover;
pub mod master;
pub mod replica;
pub mod watermark;

use crate::client::ClientState;
use crate::effects::{EffectSink, NodeId};
use backlog::Backlog;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// What replication needs from the layers above it, handed down at start-up.
pub trait Host: Send + Sync {
    /// The configuration now (a copy).
    fn config(&self) -> kvik_config::Config;
    /// The TCP port clients reach this node on.
    fn port(&self) -> u16;
    /// A client to apply a master's stream with: authenticated, flagged master.
    fn master_client(&self, addr: &str) -> ClientState;
    /// The master client is gone.
    fn master_client_gone(&self, client: &ClientState);
    /// Run one command of the master's stream as the master client (its reply is
    /// dropped).
    fn apply(&self, master: &mut ClientState, args: &[&[u8]]);
    /// Replace the whole dataset with the RDB read from `src`, as a replica loads a
    /// full sync (expired keys kept: the master's DELs remove them).
    fn load(&self, src: &mut dyn std::io::Read) -> Result<u64, String>;
    /// Load the RDB read from `src` beside the dataset, and swap it in once read
    /// whole (`repl-diskless-load swapdb`); on failure the dataset stays. Clients
    /// keep being served meanwhile when `serve`, else get -LOADING.
    fn load_beside(&self, src: &mut dyn std::io::Read, serve: bool) -> Result<u64, String>;
    /// No database holds a key (`repl-diskless-load on-empty-db`).
    fn dataset_is_empty(&self) -> bool;
    /// Drop the tombstones of keys removed before timestamp `before`, the
    /// element timestamps older than it, and what counters and TTL registers keep
    /// only until then; how many of those are left for a later pass.
    fn collect_graves(&self, before: u64) -> usize;
    /// Forget the oldest tombstones beyond `max_bytes`; how many went.
    fn bound_graves(&self, max_bytes: usize) -> usize;
    /// Merge the RDB read from `src` into the dataset, as an active replica takes a
    /// full sync: a key replaces ours only when its write is newer (by the
    /// timestamps the file carries), and the file's tombstones remove older keys.
    /// `on_seen` gets the file's `kvik-seen` field (which writes of each origin it
    /// holds) before its first key.
    fn merge(&self, src: &mut dyn std::io::Read, on_seen: &dyn Fn(&[u8])) -> Result<u64, String>;
    /// Write a point-in-time snapshot of the dataset to `out` as a complete RDB.
    /// `at_point` runs while every shard is held and returns what the file's aux
    /// fields say of replication. `Err(None)`: another snapshot is being taken, try
    /// again later; `Err(Some(why))`: it failed.
    fn snapshot(
        &self,
        at_point: &mut dyn FnMut() -> SyncPoint,
        out: &mut dyn std::io::Write,
    ) -> Result<(), Option<String>>;
    /// Hand every effect from now on to `sink` (called at a snapshot's point).
    fn listen_effects(&self, sink: Arc<dyn EffectSink>);
    /// Wake worker `index`: one of its replicas has something to send.
    fn wake_worker(&self, index: usize);
    /// The node became a replica (keys stop expiring on their own) or a master.
    fn role_changed(&self, replica: bool);
    /// Pause writes from clients (FAILOVER), or resume them.
    fn pause_writes(&self, pause: bool);
    /// The server is stopping (or gone): replication's threads end.
    fn stopping(&self) -> bool;
    /// This node's writes are born as `new`'s from now on, stamped with its tag
    /// (see [`crate::effects::EffectLog::take_new_origin`]); `then` runs at the
    /// same point, every shard held.
    fn take_new_node_id(&self, new: NodeId, then: &dyn Fn());
}

/// What a full sync's snapshot records of replication at its point in time.
pub struct SyncPoint {
    pub replid: String,
    pub offset: u64,
    /// Active replication: which writes of each origin the snapshot holds
    /// ([`active::encode_marks`]).
    pub seen: Option<String>,
}

/// The replication ids (PSYNC2): the current one, and the previous one with the
/// offset up to which it is valid (set when a replica becomes a master or follows
/// a promoted one).
#[derive(Debug, Clone)]
pub struct Ids {
    pub replid: String,
    pub replid2: String,
    /// `second_repl_offset`: -1 when there is no previous id.
    pub second_offset: i64,
}

/// A fresh replication id: 40 random hex characters.
pub fn new_replid() -> String {
    hex::encode(rand::random::<[u8; 20]>())
}

/// The replication state of the node.
pub struct Replication {
    pub backlog: Arc<Backlog>,
    ids: Mutex<Ids>,
    /// The links to our masters, when we are a replica (one, unless multi-master).
    links: Mutex<Vec<Arc<replica::Link>>>,
    /// Mirror of `!links.is_empty()`, read by every write command.
    is_replica: AtomicBool,
    /// `replica-read-only`, mirrored for the same readers.
    read_only: AtomicBool,
    /// `replica-serve-stale-data`.
    serve_stale: AtomicBool,
    /// `min-replicas-to-write` and `min-replicas-max-lag`.
    min_replicas: AtomicU64,
    min_replicas_lag: AtomicU64,
    /// The replicas we serve.
    pub replicas: master::Replicas,
    /// This node's id (the origin of the writes it makes), shared with the
    /// effect log.
    identity: Arc<crate::effects::Identity>,
    /// Held while this node draws a new id (see [`Replication::settle_shared_tag`]).
    renewing: Mutex<()>,
    /// `active-replica`: a replica that takes writes and sends them on.
    active: AtomicBool,
    /// `multi-master`: several links at once.
    multi_master: AtomicBool,
    /// What each origin has had applied here (active replication); an effect sink
    /// once the node replicates actively.
    pub seen: Arc<active::Seen>,
    /// `seen` is one of the effect log's sinks.
    seen_listening: AtomicBool,
    /// The dataset is loaded: links may connect (see [`Replication::begin`]).
    begun: AtomicBool,
    /// Held by the link loading a full sync: with several masters, one loads at a
    /// time (a node restarting in a mesh must not take every peer's dataset into
    /// memory at once).
    sync_turn: Mutex<()>,
    /// The backlog is one of the effect log's sinks.
    listening: AtomicBool,
    /// A FAILOVER under way.
    failover: Mutex<Option<failover::Failover>>,
    /// The watermark markers sent to our active peers (see [`watermark`]).
    watermarks_sent: Mutex<watermark::Sent>,
    /// Clients in WAIT: (their wait, the offset, how many replicas).
    waits: Mutex<Vec<(Arc<crate::blocking::Waiter>, backlog::Offsets, usize)>>,
    host: OnceLock<Arc<dyn Host>>,
}

impl Replication {
    pub fn new(
        config: &kvik_config::Config,
        replid: String,
        identity: Arc<crate::effects::Identity>,
    ) -> Replication {
        let repl = Replication {
            backlog: Arc::new(Backlog::new(config.repl_backlog_size as usize)),
            ids: Mutex::new(Ids {
                replid,
                replid2: "0".repeat(40),
                second_offset: -1,
            }),
            links: Mutex::new(Vec::new()),
            is_replica: AtomicBool::new(false),
            read_only: AtomicBool::new(true),
            serve_stale: AtomicBool::new(true),
            min_replicas: AtomicU64::new(0),
            min_replicas_lag: AtomicU64::new(10),
            replicas: master::Replicas::default(),
            identity,
            renewing: Mutex::new(()),
            active: AtomicBool::new(false),
            multi_master: AtomicBool::new(false),
            seen: Arc::default(),
            seen_listening: AtomicBool::new(false),
            sync_turn: Mutex::new(()),
            begun: AtomicBool::new(false),
            listening: AtomicBool::new(false),
            waits: Mutex::new(Vec::new()),
            watermarks_sent: Mutex::default(),
            failover: Mutex::new(None),
            host: OnceLock::new(),
        };
        repl.configure(config);
        repl
    }

    /// Apply the replication settings after CONFIG SET.
    pub fn configure(&self, c: &kvik_config::Config) {
        let hard = c.client_output_buffer_limit[kvik_config::CLASS_REPLICA].hard;
        self.backlog.resize(c.repl_backlog_size as usize, hard);
        self.read_only.store(c.replica_read_only, Ordering::Relaxed);
        self.serve_stale
            .store(c.replica_serve_stale_data, Ordering::Relaxed);
        self.min_replicas
            .store(c.min_replicas_to_write as u64, Ordering::Relaxed);
        self.min_replicas_lag
            .store(c.min_replicas_max_lag as u64, Ordering::Relaxed);
        self.multi_master.store(c.multi_master, Ordering::Relaxed);
        self.active.store(c.active_replica, Ordering::Relaxed);
        let envelopes = c
            .active_replica
            .then_some((self.node_id(), !c.multi_master_no_forward));
        self.backlog.set_envelopes(envelopes);
    }

    /// This node's id now: the origin of the writes it makes.
    pub fn node_id(&self) -> NodeId {
        self.identity.current()
    }

    /// Is `id` this node's, now or before it drew a new one?
    pub fn is_own(&self, id: &NodeId) -> bool {
        self.identity.is_own(id)
    }

    /// Active replication: peer `peer` (a replica that named itself, or a master
    /// that answered our name with its own) stamps its writes with this node's
    /// timestamp tag, so the two could issue the very same timestamp, and one
    /// would take the other's writes for its own. Of the two, the node whose id
    /// is the greater draws a new one, with a tag no peer it knows has (each
    /// decides alike, so exactly one of them does), and reconnects its links so
    /// that its masters learn it. Returns whether this node drew one.
    pub fn settle_shared_tag(&self, peer: &NodeId) -> bool {
        let _one_at_a_time = self.renewing.lock();
        let own = self.node_id();
        if !crate::hlc::shares_own_tag(peer, &own) {
            return false;
        }
        if own < *peer {
            crate::log_notice!(
                "Active replica {} stamps its writes with this node's timestamp tag: \
                 the node with the greater id, that one, draws a new id",
                active::uuid_text(peer)
            );
            return false;
        }
        let mut taken: Vec<u64> = self
            .known_peers()
            .iter()
            .map(|p| crate::hlc::tag_for(p))
            .collect();
        taken.push(crate::hlc::tag_for(peer));
        let new = loop {
            let drawn: NodeId = rand::random();
            if !taken.contains(&crate::hlc::tag_for(&drawn)) {
                break drawn;
            }
        };
        crate::log_warning!(
            "Active replica {} stamps its writes with this node's timestamp tag: \
             this node takes a new node id, {}",
            active::uuid_text(peer),
            active::uuid_text(&new)
        );
        self.take_node_id(new);
        true
    }

    /// This node is `new` from now on (its former ids stay its own), and its
    /// links connect again to tell their masters.
    pub fn take_node_id(&self, new: NodeId) {
        let forward = !self.host().config().multi_master_no_forward;
        let envelopes = self.is_active().then_some((new, forward));
        self.host()
            .take_new_node_id(new, &|| self.backlog.set_envelopes(envelopes));
        for link in self.links() {
            link.reconnect();
        }
    }

    /// The ids of the peers this node knows: its masters' and its active replicas'.
    fn known_peers(&self) -> Vec<NodeId> {
        let masters: Vec<NodeId> = self
            .links()
            .iter()
            .filter_map(|l| l.master_uuid())
            .collect();
        let replicas = self.replicas.all().into_iter().filter_map(|f| f.hello.uuid);
        masters.into_iter().chain(replicas).collect()
    }

    /// `active-replica yes`: writable, and its writes go to its masters.
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    /// A master under `min-replicas-to-write` with fewer good replicas: writes get
    /// NOREPLICAS.
    pub fn lacks_good_replicas(&self) -> bool {
        let min = self.min_replicas.load(Ordering::Relaxed);
        min > 0 && !self.is_replica() && (self.good_replicas() as u64) < min
    }

    /// Replicas online that acknowledged within `min-replicas-max-lag` seconds.
    pub fn good_replicas(&self) -> usize {
        self.replicas
            .good(self.min_replicas_lag.load(Ordering::Relaxed))
    }

    /// Hand down what replication needs from above.
    pub fn set_host(self: &Arc<Self>, host: Arc<dyn Host>) {
        let repl = Arc::downgrade(self);
        self.backlog.on_append(Box::new(move || {
            if let Some(repl) = repl.upgrade() {
                repl.replicas.wake_all(&repl);
            }
        }));
        let _ = self.host.set(host);
        // The role is taken now, so that the first client already sees a replica
        // (INFO, ROLE, READONLY); the links connect once `begin` says the dataset
        // is loaded.
        for (host, port) in self.host().config().replicaof {
            self.follow(host, port);
        }
    }

    /// Once the dataset is loaded (with the replication history its RDB kept): the
    /// links to the masters connect, and the replication cron starts.
    pub fn begin(self: &Arc<Self>) {
        if self.is_active() || !self.is_replica() && self.backlog.is_active() {
            // A master restored from its RDB keeps its stream going, so its replicas
            // can continue; an active replica's stream is its own writes.
            self.listen_effects();
        }
        self.begun.store(true, Ordering::Release);
        let repl = Arc::downgrade(self);
        let cron = std::thread::Builder::new()
            .name("kvik-repl-cron".into())
            .spawn(move || cron(&repl));
        if cron.is_err() {
            crate::log_warning!("Can't start the replication cron thread");
        }
    }

    pub fn host(&self) -> &Arc<dyn Host> {
        self.host.get().expect("replication host set at start-up")
    }

    pub fn ids(&self) -> Ids {
        self.ids.lock().clone()
    }

    pub fn replid(&self) -> String {
        self.ids.lock().replid.clone()
    }

    pub fn is_replica(&self) -> bool {
        self.is_replica.load(Ordering::Relaxed)
    }

    /// Writes from ordinary clients get READONLY (never on an active replica).
    pub fn refuses_writes(&self) -> bool {
        self.is_replica() && self.read_only.load(Ordering::Relaxed) && !self.is_active()
    }

    /// A replica whose link is down and which must not serve stale data: commands
    /// not flagged `stale` get MASTERDOWN. Never an active replica: it serves reads
    /// and writes whatever its links (its data is its own).
    pub fn refuses_stale(&self) -> bool {
        self.is_replica()
            && !self.is_active()
            && !self.serve_stale.load(Ordering::Relaxed)
            && self.links.lock().iter().any(|l| !l.is_up())
    }

    /// The link to our (first) master.
    pub fn link(&self) -> Option<Arc<replica::Link>> {
        self.links.lock().first().cloned()
    }

    /// Every link, in the order they were made (INFO's `master_N_*`).
    pub fn links(&self) -> Vec<Arc<replica::Link>> {
        self.links.lock().clone()
    }

    /// The link whose master client `client_id` is (REPLCONF GETACK from it).
    pub fn link_of_client(&self, client_id: u64) -> Option<Arc<replica::Link>> {
        self.links
            .lock()
            .iter()
            .find(|l| l.master_client_id() == client_id)
            .cloned()
    }

    /// REPLICAOF host port: follow that master (a no-op when already following it).
    /// With `multi-master` it is added to the masters followed; otherwise it
    /// replaces the one followed.
    pub fn follow(self: &Arc<Self>, host: String, port: u16) -> bool {
        let mut links = self.links.lock();
        if links.iter().any(|l| l.host == host && l.port == port) {
            return false;
        }
        if !self.multi_master.load(Ordering::Relaxed) {
            for old in links.drain(..) {
                old.stop();
            }
        }
        if !self.is_active() {
            // From now on only the master's bytes feed the backlog; our replicas are
            // disconnected, to resync against the new history (PSYNC2 lets them
            // continue when it is the same).
            self.backlog.set_from_effects(false);
            self.replicas.disconnect_all(self);
        }
        self.is_replica.store(true, Ordering::Release);
        self.host().role_changed(true);
        links.push(replica::Link::start(self.clone(), host, port));
        true
    }

    /// REPLICAOF REMOVE host port (multi-master): stop following that master. The
    /// node becomes a master when it was the last.
    pub fn unfollow(&self, host: &str, port: u16) -> bool {
        let mut links = self.links.lock();
        let Some(at) = links
            .iter()
            .position(|l| l.host.eq_ignore_ascii_case(host) && l.port == port)
        else {
            return false;
        };
        links.remove(at).stop();
        let last = links.is_empty();
        drop(links);
        if last {
            self.become_master();
        }
        true
    }

    /// REPLICAOF NO ONE: become a master. The old id becomes the second one, valid
    /// up to the offset reached, so our replicas (and the old master's other
    /// replicas) can continue partially.
    pub fn promote(&self) -> bool {
        let old: Vec<_> = self.links.lock().drain(..).collect();
        if old.is_empty() {
            return false;
        }
        for link in old {
            link.stop();
        }
        self.become_master();
        true
    }

    /// PSYNC ... FAILOVER from our master naming our history: it hands its role to
    /// us. False (and nothing changes) when the id is not ours.
    pub fn promote_for_failover(&self, replid: &str) -> bool {
        if replid != self.replid() {
            return false;
        }
        self.promote()
    }

    fn become_master(&self) {
        self.is_replica.store(false, Ordering::Release);
        self.host().role_changed(false);
        if self.is_active() {
            // Our history was ours all along: the replicas continue as they were.
            return;
        }
        self.shift_ids(new_replid());
        self.listen_effects();
        self.replicas.disconnect_all(self);
    }

    /// Switch to `replid`, keeping the old id valid up to the present offset.
    fn shift_ids(&self, replid: String) {
        let mut ids = self.ids.lock();
        ids.replid2 = std::mem::replace(&mut ids.replid, replid);
        ids.second_offset = self.backlog.offset() as i64 + 1;
    }

    /// A new history: a fresh id and no previous one, so that no replica can continue
    /// the old one (Redis's changeReplicationId + clearReplicationId2).
    pub fn change_ids(&self) {
        self.adopt_ids(new_replid());
    }

    /// A full sync from the master set the history: its id, nothing before.
    fn adopt_ids(&self, replid: String) {
        *self.ids.lock() = Ids {
            replid,
            replid2: "0".repeat(40),
            second_offset: -1,
        };
    }

    /// Make the backlog one of the effect log's sinks, once (at a snapshot's point,
    /// or when a replica becomes a master). A master with no replica has no backlog
    /// and records nothing, as in Redis.
    fn listen_effects(&self) {
        if !self.listening.swap(true, Ordering::AcqRel) {
            self.host().listen_effects(self.backlog.clone());
        }
        if self.is_active() && !self.seen_listening.swap(true, Ordering::AcqRel) {
            self.host().listen_effects(self.seen.clone());
        }
        if !self.is_replica() || self.is_active() {
            self.backlog.set_from_effects(true);
        }
    }

    /// What a save records of the replication history (the `repl-id` and
    /// `repl-offset` aux fields): the id and offset of our stream, once it began.
    pub fn save_info(&self) -> Option<(String, u64)> {
        self.backlog
            .is_active()
            .then(|| (self.replid(), self.backlog.offset()))
    }

    /// At start-up, the RDB loaded says where our history stood: continue from
    /// there, so our master (or our replicas) can resume partially.
    pub fn restore(&self, replid: String, offset: u64) {
        self.adopt_ids(replid);
        self.backlog.reset(offset);
        crate::log_notice!("Restored the replication ID and offset from the RDB file ({offset})");
    }

    /// May a replica that reads the `layout` stream continue at `offset` of
    /// history `replid` (PSYNC's offset: 1-based, the first byte it lacks)? A side
    /// stream's history is its own id alone.
    pub fn can_continue(&self, layout: backlog::Layout, replid: &str, offset: u64) -> bool {
        let known = match layout {
            backlog::Layout::Own => {
                let ids = self.ids.lock();
                replid == ids.replid
                    || (replid == ids.replid2 && offset as i64 <= ids.second_offset)
            }
            side => self.backlog.replid_of(side).as_deref() == Some(replid),
        };
        known && offset > 0 && self.backlog.holds(layout, offset - 1)
    }

    /// INFO's `master_repl_offset`, ROLE's offset.
    pub fn offset(&self) -> u64 {
        self.backlog.offset()
    }

    /// WAIT: `waiter` waits until `wanted` replicas acknowledged `offset`; the
    /// replicas are asked for their acknowledgement now.
    pub fn add_wait(
        &self,
        waiter: Arc<crate::blocking::Waiter>,
        offset: backlog::Offsets,
        wanted: usize,
    ) {
        self.waits.lock().push((waiter, offset, wanted));
        self.backlog.ask_acks();
    }

    /// The WAITs that enough replicas acknowledged, with how many did; they leave
    /// the list (as do those that ended otherwise).
    pub fn satisfied_waits(&self) -> Vec<(Arc<crate::blocking::Waiter>, usize)> {
        let mut done = Vec::new();
        self.waits.lock().retain(|(waiter, offset, wanted)| {
            if waiter.is_claimed() {
                return false;
            }
            let acked = self.replicas.acked(*offset);
            if acked >= *wanted {
                done.push((waiter.clone(), acked));
                return false;
            }
            true
        });
        done
    }

    /// `repl-backlog-ttl`: a master that has had no replica for `ttl_secs` frees its
    /// backlog and takes a new replication id, as Redis does (`0`: never).
    /// `no_replicas_since` is the cron's memory of when the last one left.
    fn expire_backlog(&self, no_replicas_since: &mut Option<std::time::Instant>, ttl_secs: u64) {
        if self.is_replica() || self.replicas.count() > 0 || !self.backlog.is_active() {
            *no_replicas_since = None;
            return;
        }
        let since = *no_replicas_since.get_or_insert_with(std::time::Instant::now);
        if ttl_secs == 0 || since.elapsed().as_secs() < ttl_secs {
            return;
        }
        self.change_ids();
        self.backlog.free();
        *no_replicas_since = None;
        crate::log_notice!(
            "Replication backlog freed after {ttl_secs} seconds without connected replicas."
        );
    }

    /// Has the server loaded its dataset (links may connect)?
    pub fn has_begun(&self) -> bool {
        self.begun.load(Ordering::Acquire)
    }

    /// Wait for this node's turn to load a full sync (one link at a time).
    pub fn sync_turn(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.sync_turn.lock()
    }

    /// Active replication: send our active peers a watermark marker (see
    /// [`watermark`]) while tombstones wait to be collected here (`holding`), a
    /// little after (`lately`: peers collecting the same ones need one sent after
    /// ours went) or at a peer whose link is up, so that a quiet mesh's streams
    /// stand still once nothing is held.
    fn send_watermark(&self, holding: bool, lately: bool) {
        if !self.is_active() {
            return;
        }
        let links = self.links();
        let peers_hold = links
            .iter()
            .any(|l| l.is_up() && l.heard().is_some_and(|h| h.holding));
        if !holding && !lately && !peers_hold {
            return;
        }
        let heard: Vec<_> = links.iter().map(|l| l.heard()).collect();
        let own = watermark::own_bound(crate::hlc::unix_ms(), crate::hlc::oldest_reading());
        let mut bytes = Vec::new();
        watermark::encode(holding, &watermark::levels_to_send(own, &heard), &mut bytes);
        // Every tombstone made after the marker is at or after this: our own
        // removals by our clock, replayed ones by what the links may still send.
        let bound = own.min(watermark::links_bound(&heard));
        if let Some(end) = self.backlog.watermark(&bytes) {
            self.watermarks_sent.lock().push(end, bound);
        }
    }

    /// Active replication: the timestamp before which every tombstone can go.
    /// Tombstones guard against a peer's older write arriving late, and against a
    /// peer that has not applied a removal serving (or taking) a full sync without
    /// it; so a tombstone goes once every link's master said, by its last marker
    /// applied here, that it will send nothing older, and every active peer we
    /// serve acknowledged the stream past the marker that covers it. While a link
    /// is not up (cut, or loading a full sync) nothing goes; a KeyDB peer, which
    /// sends no marker, holds everything (only the memory bound applies then). A
    /// plain replica (redis-server) takes full syncs that replace its dataset: it
    /// holds nothing.
    fn collectable_before(&self) -> u64 {
        let links = self.links();
        if links.iter().any(|l| !l.is_up()) {
            return 0;
        }
        let heard: Vec<_> = links.iter().map(|l| l.heard()).collect();
        let mut before = watermark::own_bound(crate::hlc::unix_ms(), crate::hlc::oldest_reading())
            .min(watermark::links_bound(&heard));
        let sent = self.watermarks_sent.lock();
        for feed in self.replicas.all() {
            before = before.min(match feed.layout {
                backlog::Layout::Plain => continue,
                backlog::Layout::KeyDb => 0,
                backlog::Layout::Own if !feed.is_online() => 0,
                backlog::Layout::Own => sent.covered(feed.ack_offset.load(Ordering::Acquire)),
            });
        }
        before
    }

    /// Active replication: drop the tombstones (and element timestamps, counters'
    /// remembered increments and settled states, TTL registers) no peer needs
    /// any more; whether some are left.
    fn collect_graves(&self) -> bool {
        if !self.is_active() {
            return false;
        }
        self.host().collect_graves(self.collectable_before()) > 0
    }

    /// Active replication: keep the tombstones within
    /// `active-replica-tombstones-max-memory` (0: no bound).
    fn bound_graves(&self, max_bytes: u64) {
        if max_bytes > 0 && self.is_active() {
            self.host().bound_graves(max_bytes as usize);
        }
    }

    /// The PING a master sends its replicas every `repl-ping-replica-period`.
    pub fn ping_replicas(&self) {
        if !self.is_replica() && self.replicas.count() > 0 {
            self.backlog.ping();
        }
    }
}

/// How long markers go on after the last tombstone here was collected: peers
/// collecting the same ones need one sent after that.
const MARK_AFTER_HOLDING: std::time::Duration = std::time::Duration::from_millis(1500);

/// How often tombstones are collected and bounded (each pass goes over them all,
/// one shard lock at a time).
const COLLECT_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// What runs on a timer: the master's PINGs, a FAILOVER's progress, the backlog's
/// time to live, and under active replication the watermark markers and the
/// collection of tombstones.
fn cron(repl: &std::sync::Weak<Replication>) {
    let mut last_ping = std::time::Instant::now();
    let mut no_replicas_since = None;
    let mut last_collect = std::time::Instant::now();
    // Whether the last collection left tombstones, and when one last did.
    let (mut holding, mut held_at) = (false, None::<std::time::Instant>);
    loop {
        std::thread::sleep(watermark::PERIOD);
        let Some(repl) = repl.upgrade() else {
            return;
        };
        if repl.host().stopping() {
            return;
        }
        let config = repl.host().config();
        repl.expire_backlog(&mut no_replicas_since, config.repl_backlog_ttl);
        if last_collect.elapsed() >= COLLECT_EVERY {
            repl.bound_graves(config.active_replica_tombstones_max_memory);
            holding = repl.collect_graves();
            if holding {
                held_at = Some(std::time::Instant::now());
            }
            last_collect = std::time::Instant::now();
        }
        let lately = held_at.is_some_and(|at| at.elapsed() < MARK_AFTER_HOLDING);
        repl.send_watermark(holding, lately);
        let period = config.repl_ping_replica_period.max(1) as u64;
        if last_ping.elapsed().as_secs() >= period {
            repl.ping_replicas();
            last_ping = std::time::Instant::now();
        }
        repl.failover_cron();
    }
}
