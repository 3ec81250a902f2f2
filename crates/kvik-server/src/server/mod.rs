//! The server: state shared by every thread, and its start-up.
//!
//! [`Server`] ties the pieces together: configuration, keyspace, effect stream, client
//! registry, blocked clients, command table, statistics, and the handles used to reach
//! each worker thread. It is created once, shared by reference, and never locked as a
//! whole.

mod client_eviction;
pub mod renames;
pub mod saving;
pub mod shutdown;

use crate::blocking;
use crate::client;
use crate::effects::{EffectLog, NodeId};
use crate::keyspace::{AccessClock, KeyEnv, Keyspace, Policy, DEFAULT_SHARD_BITS};
use crate::mailbox::{Message, WorkerHandle};
use crate::pubsub::{Bus, Hub};
use crate::stats::{RateSampler, ThreadStats};
pub use crate::types::EncodingLimits;
use kvik_config::Config;
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// Configuration values read on hot paths, kept as atomics so readers take no lock.
pub struct HotConfig {
    pub proto_max_bulk_len: AtomicU64,
    pub client_query_buffer_limit: AtomicU64,
    pub maxclients: AtomicUsize,
    pub timeout_secs: AtomicU64,
    pub hz: AtomicU64,
    pub active_expire: AtomicBool,
    pub latency_tracking: AtomicBool,
    /// The shortest command duration, in µs, that the slow log or the latency
    /// monitor keeps (`u64::MAX` when both are off): one comparison per command
    /// tells whether either needs to look at it.
    pub slow_call_us: AtomicU64,
    /// `hll-sparse-max-bytes`: the longest a sparse HyperLogLog may grow.
    pub hll_sparse_max_bytes: AtomicU64,
    /// `tracking-table-max-keys`: keys the client-side caching table may hold.
    pub tracking_table_max_keys: AtomicU64,
    /// `client-output-buffer-limit` per class (normal, replica, pubsub).
    output_limits: [[AtomicU64; 3]; 3],
    /// Thresholds for the compact encodings of collections, one atomic each so
    /// readers on every thread write nothing shared.
    encoding: [AtomicI64; 7],
}

/// The thresholds of the compact encodings as `Config` has them.
pub fn encoding_limits(c: &Config) -> EncodingLimits {
    EncodingLimits {
        list_max_listpack_size: c.list_max_listpack_size as i64,
        list_compress_depth: c.list_compress_depth as u64,
        hash_max_listpack_entries: c.hash_max_listpack_entries,
        hash_max_listpack_value: c.hash_max_listpack_value,
        set_max_intset_entries: c.set_max_intset_entries,
        zset_max_listpack_entries: c.zset_max_listpack_entries,
        zset_max_listpack_value: c.zset_max_listpack_value,
    }
}

/// [`EncodingLimits`] as the seven atomics [`HotConfig`] keeps.
fn encoding_to_array(e: EncodingLimits) -> [i64; 7] {
    [
        e.list_max_listpack_size,
        e.list_compress_depth as i64,
        e.hash_max_listpack_entries as i64,
        e.hash_max_listpack_value as i64,
        e.set_max_intset_entries as i64,
        e.zset_max_listpack_entries as i64,
        e.zset_max_listpack_value as i64,
    ]
}

fn encoding_from_array(a: [i64; 7]) -> EncodingLimits {
    EncodingLimits {
        list_max_listpack_size: a[0],
        list_compress_depth: a[1] as u64,
        hash_max_listpack_entries: a[2] as u64,
        hash_max_listpack_value: a[3] as u64,
        set_max_intset_entries: a[4] as u64,
        zset_max_listpack_entries: a[5] as u64,
        zset_max_listpack_value: a[6] as u64,
    }
}

impl HotConfig {
    fn from_config(c: &Config) -> Self {
        HotConfig {
            proto_max_bulk_len: AtomicU64::new(c.proto_max_bulk_len),
            client_query_buffer_limit: AtomicU64::new(c.client_query_buffer_limit),
            maxclients: AtomicUsize::new(c.maxclients as usize),
            timeout_secs: AtomicU64::new(c.timeout),
            hz: AtomicU64::new(c.hz.clamp(1, 500) as u64),
            active_expire: AtomicBool::new(true),
            latency_tracking: AtomicBool::new(c.latency_tracking),
            slow_call_us: AtomicU64::new(slow_call_us(c)),
            hll_sparse_max_bytes: AtomicU64::new(c.hll_sparse_max_bytes),
            tracking_table_max_keys: AtomicU64::new(c.tracking_table_max_keys),
            output_limits: c
                .client_output_buffer_limit
                .map(|l| [l.hard, l.soft, l.soft_seconds].map(AtomicU64::new)),
            encoding: encoding_to_array(encoding_limits(c)).map(AtomicI64::new),
        }
    }

    /// The current collection encoding thresholds.
    pub fn encoding(&self) -> EncodingLimits {
        encoding_from_array(self.encoding.each_ref().map(|a| a.load(Ordering::Relaxed)))
    }

    /// Re-read the values after CONFIG SET.
    pub fn refresh(&self, c: &Config) {
        let fresh = HotConfig::from_config(c);
        self.proto_max_bulk_len
            .store(fresh.proto_max_bulk_len.into_inner(), Ordering::Relaxed);
        self.client_query_buffer_limit.store(
            fresh.client_query_buffer_limit.into_inner(),
            Ordering::Relaxed,
        );
        self.maxclients
            .store(fresh.maxclients.into_inner(), Ordering::Relaxed);
        self.timeout_secs
            .store(fresh.timeout_secs.into_inner(), Ordering::Relaxed);
        self.hz.store(fresh.hz.into_inner(), Ordering::Relaxed);
        self.latency_tracking
            .store(fresh.latency_tracking.into_inner(), Ordering::Relaxed);
        self.slow_call_us
            .store(fresh.slow_call_us.into_inner(), Ordering::Relaxed);
        self.hll_sparse_max_bytes
            .store(fresh.hll_sparse_max_bytes.into_inner(), Ordering::Relaxed);
        self.tracking_table_max_keys.store(
            fresh.tracking_table_max_keys.into_inner(),
            Ordering::Relaxed,
        );
        for (mine, new) in self.encoding.iter().zip(fresh.encoding) {
            mine.store(new.into_inner(), Ordering::Relaxed);
        }
        for (mine, new) in self.output_limits.iter().zip(fresh.output_limits) {
            for (m, n) in mine.iter().zip(new) {
                m.store(n.into_inner(), Ordering::Relaxed);
            }
        }
    }

    /// The output buffer limit of a client class (`kvik_config::CLASS_*`).
    pub fn output_limit(&self, class: usize) -> kvik_config::ClientBufferLimit {
        let [hard, soft, soft_seconds] = self.output_limits[class]
            .each_ref()
            .map(|a| a.load(Ordering::Relaxed));
        kvik_config::ClientBufferLimit {
            hard,
            soft,
            soft_seconds,
        }
    }
}

/// [`HotConfig::slow_call_us`]: the lower of `slowlog-log-slower-than` (negative:
/// off) and `latency-monitor-threshold` (0: off, in ms).
fn slow_call_us(c: &Config) -> u64 {
    let slowlog = crate::slowlog::threshold_us(c.slowlog_log_slower_than);
    let latency = match c.latency_monitor_threshold {
        0 => u64::MAX,
        ms => ms.saturating_mul(1000),
    };
    slowlog.min(latency)
}

/// Switches DEBUG turns, for tests and fuzzers.
pub struct DebugSwitches {
    /// DEBUG SET-SKIP-CHECKSUM-VALIDATION: RESTORE and FUNCTION RESTORE take a
    /// payload whose CRC is wrong, so corrupt-payload fuzzers reach the decoder.
    pub skip_checksum_validation: AtomicBool,
    /// DEBUG PAUSE-CRON: the workers' periodic work (expiry, idle clients, client
    /// eviction) waits.
    pub cron_paused: AtomicBool,
    /// DEBUG REPLYBUFFER RESIZING 0 turns off the cron's resizing of idle clients'
    /// reply buffers.
    pub reply_buffer_resizing_off: AtomicBool,
    /// DEBUG REPLYBUFFER PEAK-RESET-TIME: milliseconds between resets of a
    /// client's reply buffer peak, -1 for never.
    pub reply_peak_reset_ms: AtomicI64,
}

impl Default for DebugSwitches {
    fn default() -> Self {
        DebugSwitches {
            skip_checksum_validation: AtomicBool::new(false),
            cron_paused: AtomicBool::new(false),
            reply_buffer_resizing_off: AtomicBool::new(false),
            reply_peak_reset_ms: AtomicI64::new(REPLY_PEAK_RESET_MS),
        }
    }
}

/// How often a client's reply buffer peak is forgotten by default (Redis's
/// `REPLY_BUFFER_DEFAULT_PEAK_RESET_TIME`).
pub const REPLY_PEAK_RESET_MS: i64 = 5000;

impl DebugSwitches {
    /// Milliseconds between reply buffer peak resets, `None` for never.
    pub fn reply_peak_reset(&self) -> Option<u64> {
        u64::try_from(self.reply_peak_reset_ms.load(Ordering::Relaxed)).ok()
    }

    /// How payloads' checksums are treated now.
    pub fn payload_checksum(&self) -> crate::persistence::rdb::payload::Checksum {
        use crate::persistence::rdb::payload::Checksum;
        if self.skip_checksum_validation.load(Ordering::Relaxed) {
            Checksum::Skip
        } else {
            Checksum::Verify
        }
    }
}

/// CLIENT PAUSE state.
#[derive(Default)]
pub struct Pause {
    /// Unix ms until which clients are paused (0 = not paused).
    pub until_ms: AtomicU64,
    /// Only write commands are paused (CLIENT PAUSE ... WRITE).
    pub writes_only: AtomicBool,
    /// Connections waiting for the pause to end (INFO's `blocked_clients` counts
    /// them, as Redis does: tools wait on that figure).
    waiting: AtomicUsize,
    /// A shutdown waits for replicas: writes wait too, whatever CLIENT PAUSE and
    /// CLIENT UNPAUSE do (Redis pauses for each purpose apart).
    for_shutdown: AtomicBool,
}

impl Pause {
    /// Cheap check for the common case: nobody paused clients.
    #[inline]
    pub fn is_active(&self) -> bool {
        self.until_ms.load(Ordering::Relaxed) != 0 || self.for_shutdown.load(Ordering::Relaxed)
    }

    /// Must a command with these flags wait now? A pause found over is cleared, so
    /// later commands skip the check.
    pub fn blocks(&self, now_ms: u64, is_write: bool) -> bool {
        if is_write && self.for_shutdown.load(Ordering::Acquire) {
            return true;
        }
        let until = self.until_ms.load(Ordering::Acquire);
        if until != 0 && now_ms >= until {
            let _ = self
                .until_ms
                .compare_exchange(until, 0, Ordering::AcqRel, Ordering::Relaxed);
            return false;
        }
        until != 0 && (is_write || !self.writes_only.load(Ordering::Acquire))
    }

    /// Pause clients until `until_ms`. A pause already in force keeps its later end
    /// and its stricter mode (pausing everything beats pausing writes).
    pub fn start(&self, until_ms: u64, writes_only: bool) {
        let now = crate::hlc::unix_ms();
        let in_force = self.until_ms.load(Ordering::Acquire) > now;
        if !writes_only || !in_force {
            self.writes_only.store(writes_only, Ordering::Release);
        }
        self.until_ms.fetch_max(until_ms, Ordering::AcqRel);
    }

    /// A connection starts or stops waiting for the pause to end.
    pub fn note_waiting(&self, waiting: bool) {
        if waiting {
            self.waiting.fetch_add(1, Ordering::Relaxed);
        } else {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Connections waiting for the pause to end.
    pub fn waiting_clients(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// CLIENT UNPAUSE. The caller wakes the waiting clients.
    pub fn end(&self) {
        self.until_ms.store(0, Ordering::Release);
        self.writes_only.store(false, Ordering::Release);
    }
}

pub struct Server {
    pub config: RwLock<Config>,
    pub config_file: Option<PathBuf>,
    pub hot: HotConfig,
    pub keyspace: Keyspace,
    pub effects: EffectLog,
    pub clients: client::Registry,
    /// Clients waiting in blocking commands, by key.
    pub blocking: blocking::Registry,
    /// Pub/sub subscriptions, MONITOR clients and the keyspace notification switch.
    pub pubsub: Hub,
    /// Client-side caching: the tracking table, tracking clients and BCAST prefixes.
    pub tracking: Arc<crate::tracking::Tracking>,
    /// One per worker thread (each written only by its own thread).
    pub thread_stats: Vec<Arc<ThreadStats>>,
    errorstats: Mutex<BTreeMap<String, u64>>,
    pub workers: OnceLock<Vec<WorkerHandle>>,
    /// Counts accepted connections, to deal them out (see [`Server::take_accept_turn`]).
    accept_turn: AtomicUsize,
    /// Held by the one client-eviction pass running, with the unix ms the last
    /// one started (see `client_eviction.rs`).
    client_eviction: Mutex<u64>,
    pub pause: Pause,
    /// What DEBUG has switched.
    pub debug: DebugSwitches,
    /// Script cache, function libraries and running scripts.
    pub scripting: crate::scripting::Scripting,
    pub start_ms: u64,
    /// The replication id / run id (40 hex characters).
    pub run_id: String,
    /// The TCP port actually bound (differs from the config when it says 0).
    pub port: AtomicU64,
    pub shutdown_requested: AtomicBool,
    pub stat_reset_ms: AtomicU64,
    /// Samples behind INFO's `instantaneous_*` rates.
    pub rates: RateSampler,
    /// The most memory seen allocated (INFO's `used_memory_peak`), raised whenever
    /// the figure is read.
    pub memory_peak: AtomicU64,
    /// Memory allocated when the server was created, before any client or key.
    pub memory_startup: u64,
    /// Used memory against `maxmemory`, and eviction.
    pub memory: crate::memory::Memory,
    /// SLOWLOG's entries.
    pub slowlog: crate::slowlog::SlowLog,
    /// LATENCY's events (shared with `memory`, which times eviction).
    pub latency: Arc<crate::latency::LatencyMonitor>,
    /// RDB saves: their state, the saver thread's queue, MISCONF.
    pub persistence: crate::snapshot::Persistence,
    /// The replication role, ids, backlog, replicas and master link.
    pub replication: Arc<crate::replication::Replication>,
    /// The append-only file: its buffer, writer thread, files and rewrites.
    pub aof: Arc<crate::aof::Aof>,
    /// Whether the dataset is being loaded, and how far it has got.
    pub loading: crate::loading::Loading,
    /// The TLS configuration new connections on the `tls-port` handshake with.
    pub tls: crate::tls::TlsContext,
    /// The graceful shutdown in progress, if any.
    pub shutdown: shutdown::Shutdown,
    /// Active defragmentation: its walk and figures.
    pub defrag: crate::defrag::Defrag,
    /// The ACL users, their log, and the check every command passes.
    pub acl: crate::acl::Acl,
    /// `rename-command`: the names commands answer to.
    pub renames: renames::Renames,
}

impl Server {
    /// The state of a server whose command table `catalog` describes (the
    /// per-command statistics are sized by it; the ACL rules name its commands).
    pub fn new(config: Config, config_file: Option<PathBuf>, catalog: crate::acl::Catalog) -> Self {
        let command_count = catalog.len();
        let acl = crate::acl::Acl::new(catalog, &config);
        let threads = config.server_threads.max(1);
        let thread_stats = (0..threads)
            .map(|_| Arc::new(ThreadStats::new(command_count)))
            .collect();
        let node_id: NodeId = rand::random();
        crate::hlc::set_node_tag(&node_id);
        let effects = EffectLog::new(node_id);
        let run_id = hex::encode(rand::random::<[u8; 20]>());
        let memory_startup = crate::stats::allocator_stats().allocated;
        let keyspace = Keyspace::new(config.databases.max(1), DEFAULT_SHARD_BITS);
        keyspace.clock.set(access_clock_of(&config));
        keyspace.lazyfree.configure(&config);
        keyspace.keep_graves(config.active_replica);
        let tracking = Arc::new(crate::tracking::Tracking::default());
        keyspace.observers.install_all_keys(tracking.clone());
        let scripting = crate::scripting::Scripting::default();
        let start_ms = crate::hlc::unix_ms();
        scripting.set_threshold(config.busy_reply_threshold);
        let latency = Arc::new(crate::latency::LatencyMonitor::new(&config));
        Server {
            hot: HotConfig::from_config(&config),
            keyspace,
            tracking,
            replication: Arc::new(crate::replication::Replication::new(
                &config,
                run_id.clone(),
                effects.identity(),
            )),
            effects,
            clients: client::Registry::default(),
            blocking: blocking::Registry::default(),
            pubsub: Hub::new(config.notify_keyspace_events),
            thread_stats,
            errorstats: Mutex::new(BTreeMap::new()),
            workers: OnceLock::new(),
            accept_turn: AtomicUsize::new(0),
            client_eviction: Mutex::new(0),
            pause: Pause::default(),
            debug: DebugSwitches::default(),
            scripting,
            start_ms,
            persistence: crate::snapshot::Persistence::new(&config, start_ms),
            aof: Arc::new(crate::aof::Aof::new(&config, threads)),
            loading: crate::loading::Loading::default(),
            shutdown: shutdown::Shutdown::default(),
            defrag: crate::defrag::Defrag::default(),
            run_id,
            port: AtomicU64::new(config.port as u64),
            shutdown_requested: AtomicBool::new(false),
            stat_reset_ms: AtomicU64::new(crate::hlc::unix_ms()),
            rates: RateSampler::default(),
            memory_peak: AtomicU64::new(memory_startup),
            memory_startup,
            memory: crate::memory::Memory::new(&config, threads, latency.clone()),
            slowlog: crate::slowlog::SlowLog::new(&config),
            latency,
            acl,
            renames: renames::Renames::new(&config.rename_commands),
            config: RwLock::new(config),
            config_file,
            tls: Default::default(),
        }
    }

    /// Count an error reply under its prefix (INFO errorstats).
    pub fn count_error(&self, prefix: &str) {
        *self
            .errorstats
            .lock()
            .entry(prefix.to_string())
            .or_insert(0) += 1;
    }

    pub fn errorstats(&self) -> BTreeMap<String, u64> {
        self.errorstats.lock().clone()
    }

    pub fn reset_stats(&self) {
        self.errorstats.lock().clear();
        for s in &self.thread_stats {
            s.reset();
        }
        self.rates.clear();
        crate::lazyfree::reset_stats();
        self.replication.replicas.syncs.reset();
        self.defrag.reset_stats();
        self.memory_peak.store(0, Ordering::Relaxed);
        self.stat_reset_ms
            .store(crate::hlc::unix_ms(), Ordering::Relaxed);
    }

    /// Apply a changed configuration to the copies read on hot paths (after CONFIG SET).
    pub fn refresh_hot(&self, c: &Config) {
        self.hot.refresh(c);
        self.scripting.set_threshold(c.busy_reply_threshold);
        self.keyspace.clock.set(access_clock_of(c));
        self.keyspace.lazyfree.configure(c);
        self.memory.configure(c);
        self.slowlog.configure(c);
        self.latency.configure(c);
        self.persistence.configure(c);
        self.replication.configure(c);
        // An active replica keeps tombstones of removed keys (see keyspace/graves.rs).
        self.keyspace.keep_graves(c.active_replica);
        self.aof.configure(c);
        self.acl.configure(c);
        self.pubsub
            .keyspace_events
            .store(c.notify_keyspace_events, Ordering::Relaxed);
    }

    /// The hub and the worker mailboxes: how to reach subscribers from here.
    pub fn bus(&self) -> Bus<'_> {
        Bus {
            hub: &self.pubsub,
            workers: self.workers.get().map_or(&[], Vec::as_slice),
        }
    }

    /// What client-side caching needs of the server.
    pub fn tracking_env(&self) -> crate::tracking::Env<'_> {
        crate::tracking::Env {
            table: &self.tracking,
            observers: &self.keyspace.observers,
            clients: &self.clients,
            workers: self.workers.get().map_or(&[], Vec::as_slice),
            max_keys: self.hot.tracking_table_max_keys.load(Ordering::Relaxed),
        }
    }

    /// What a [`crate::keyspace::Locked`] needs besides the shards, for a command run
    /// by the thread that owns `stats`.
    pub fn key_env<'a>(&'a self, stats: &'a ThreadStats) -> KeyEnv<'a> {
        KeyEnv {
            keyspace: &self.keyspace,
            effects: &self.effects,
            stats,
            bus: self.bus(),
            wait_gate: None,
            from_master: false,
        }
    }

    pub fn worker_count(&self) -> usize {
        self.thread_stats.len()
    }

    /// Send every worker thread the message `make` builds.
    pub fn broadcast(&self, make: impl Fn() -> Message) {
        for w in self.workers.get().into_iter().flatten() {
            w.send(make());
        }
    }

    /// The worker thread that gets the next accepted connection: each in turn.
    ///
    /// Every thread polls the shared listening socket, and the kernel wakes them in
    /// a fixed order, so an idle server would leave every connection with the thread
    /// that happens to be woken first; the turn spreads a burst of connections (a
    /// benchmark's fifty clients) over all threads instead.
    pub fn take_accept_turn(&self) -> usize {
        let threads = self.worker_count().max(1);
        self.accept_turn.fetch_add(1, Ordering::Relaxed) % threads
    }

    /// CLIENT PAUSE: hold back the commands the mode says until `until_ms`, and keep
    /// the dataset static meanwhile (no key expires), as Redis 7.0 does.
    pub fn pause_clients(&self, until_ms: u64, writes_only: bool) {
        self.pause.start(until_ms, writes_only);
        self.keyspace.hold_expiry(until_ms);
    }

    /// CLIENT UNPAUSE: end the pause and resume the waiting clients.
    pub fn unpause_clients(&self) {
        self.pause.end();
        self.hold_expiry_while_paused();
        self.broadcast(|| Message::Unpaused);
    }

    /// A shutdown that waits for replicas pauses writes (and expiry) until it ends;
    /// one that is cancelled resumes them.
    pub fn pause_writes_for_shutdown(&self, pause: bool) {
        self.pause.for_shutdown.store(pause, Ordering::Release);
        self.hold_expiry_while_paused();
        if !pause {
            self.broadcast(|| Message::Unpaused);
        }
    }

    /// Keys stay while any pause is in force (CLIENT PAUSE's until its end, a
    /// shutdown's until it ends) and expire again after.
    fn hold_expiry_while_paused(&self) {
        self.keyspace.release_expiry();
        let until = self.pause.until_ms.load(Ordering::Acquire);
        if until != 0 {
            self.keyspace.hold_expiry(until);
        }
        if self.pause.for_shutdown.load(Ordering::Acquire) {
            self.keyspace.hold_expiry(u64::MAX);
        }
    }

    /// End a claimed wait: send its reply to the waiter's worker thread.
    pub fn unblock(&self, waiter: &blocking::Waiter, reply: Vec<u8>, end: crate::mailbox::WaitEnd) {
        if let Some(workers) = self.workers.get() {
            workers[waiter.worker].send(Message::Unblocked {
                token: waiter.token,
                client: waiter.client,
                reply,
                end,
            });
        }
    }

    /// Ask every thread to stop; the main thread finishes the shutdown.
    pub fn request_shutdown(&self) {
        self.shutdown_requested.store(true, Ordering::Release);
        self.loading.request_stop();
        // A script that never ends would keep its thread from ever stopping.
        self.scripting.running.abort_all();
        self.broadcast(|| Message::Shutdown);
    }
}

/// What keys' access fields hold: LFU data under an LFU policy, else the LRU clock.
fn access_clock_of(c: &Config) -> AccessClock {
    if Policy::from_name(&c.maxmemory_policy).uses_lfu() {
        AccessClock::Lfu {
            log_factor: c.lfu_log_factor,
            decay_minutes: c.lfu_decay_time,
        }
    } else {
        AccessClock::Lru
    }
}
