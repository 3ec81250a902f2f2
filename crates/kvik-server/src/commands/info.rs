//! INFO: the server's report on itself, in Redis 7.0's layout.
//!
//! The reply is text: `# Section` headers, `name:value` lines, CRLF line ends, a blank
//! line between sections. Sections, their fields and the fields' order and formats
//! are Redis 7.0's, because monitoring tools and client libraries parse them (the
//! node-redis ready check waits for `loading:0`). Every value is kvik's own truth:
//! where kvik has no such mechanism yet (AOF, replicas, Lua, pub/sub), the field
//! reports the idle state Redis reports when that mechanism is off. kvik's own
//! extras (`kvik_version`, `server_threads`) come after Redis's fields of a section.
//!
//! Owns the text of the report. The figures come from [`crate::stats`], the server,
//! the keyspace and the configuration.

use super::table::{acl, flags, Command, Lock};
use super::{CmdResult, Ctx};
use crate::pubsub::Kind;
use crate::server::Server;
use crate::stats::{self, LatencyHistogram, Totals};
use crate::version::{REDIS_VERSION, VERSION};
use std::fmt::{Display, Write as _};
use std::sync::atomic::Ordering;
use std::time::Instant;

pub const COMMANDS: &[Command] = &[Command::new("info", -1, info)
    .flags(flags::LOADING | flags::STALE)
    .acl(acl::SLOW | acl::DANGEROUS)
    .tips(&[
        "nondeterministic_output",
        "request_policy:all_shards",
        "response_policy:special",
    ])
    // The keyspace section counts keys through the command's `Locked`, which inside
    // EXEC holds every shard already.
    .lock(Lock::Handler)
    .doc(
        "server",
        "1.0.0",
        "O(1)",
        "Reports information and statistics about the server.",
    )];

fn info(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let wanted = selected_sections(&args[1..]);
    let keyspace_wanted = SECTIONS
        .iter()
        .zip(&wanted)
        .any(|(s, &w)| w && s.name == "keyspace");
    let mut dbs = DbLines::default();
    if keyspace_wanted {
        let count = ctx.server.keyspace.databases();
        dbs.stats = (0..count).map(|db| ctx.keys.db_stats(db)).collect();
        if ctx.server.keyspace.keeps_graves() {
            dbs.digests = (0..count).map(|db| ctx.keys.db_digest(db)).collect();
        }
    }
    let text = report(ctx.server, &wanted, dbs);
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

/// What the crash report says of the server: every INFO section (key counts left
/// out: they would take shard locks a crashed thread may hold) and CLIENT LIST.
pub fn crash_details(server: &Server) -> String {
    let all: Vec<bool> = SECTIONS.iter().map(|s| s.name != "keyspace").collect();
    let mut out = String::from("\n------ INFO OUTPUT ------\n");
    out.push_str(&report(server, &all, DbLines::default()));
    out.push_str("\n------ CLIENT LIST OUTPUT ------\n");
    let now = crate::hlc::unix_ms();
    for client in server.clients.all() {
        client.describe(&client.snapshot.lock(), now, &mut out);
    }
    out
}

/// Every section, key counts included (each database's shards locked in turn): what
/// the Prometheus endpoint reads, so that its numbers are INFO's.
pub fn everything(server: &Server) -> String {
    let all = vec![true; SECTIONS.len()];
    let keyspace = &server.keyspace;
    let count = keyspace.databases();
    let dbs = DbLines {
        stats: (0..count).map(|db| keyspace.db_stats(db)).collect(),
        digests: match keyspace.keeps_graves() {
            true => (0..count).map(|db| keyspace.db_digest(db)).collect(),
            false => Vec::new(),
        },
    };
    report(server, &all, dbs)
}

/// What INFO keyspace says of each database, read by the caller.
#[derive(Default)]
struct DbLines {
    /// (keys, keys with a deadline).
    stats: Vec<(usize, usize)>,
    /// The digest of each database, while this node replicates actively.
    digests: Vec<Option<u64>>,
}

/// One section of the report.
struct Section {
    /// The name INFO takes as an argument.
    name: &'static str,
    /// The header line's text.
    title: &'static str,
    /// Part of a plain `INFO` (`default`).
    in_default: bool,
    write: fn(&Server, &mut Report),
}

/// Every section, in the order Redis prints them.
const SECTIONS: &[Section] = &[
    section("server", "Server", true, server_section),
    section("clients", "Clients", true, clients_section),
    section("memory", "Memory", true, memory_section),
    section("persistence", "Persistence", true, persistence_section),
    section("stats", "Stats", true, stats_section),
    section("replication", "Replication", true, replication_section),
    section("cpu", "CPU", true, cpu_section),
    section("modules", "Modules", true, |_, _| {}),
    section("commandstats", "Commandstats", false, commandstats_section),
    section("errorstats", "Errorstats", true, errorstats_section),
    section("latencystats", "Latencystats", false, latencystats_section),
    section("cluster", "Cluster", true, cluster_section),
    section("keyspace", "Keyspace", true, keyspace_section),
];

const fn section(
    name: &'static str,
    title: &'static str,
    in_default: bool,
    write: fn(&Server, &mut Report),
) -> Section {
    Section {
        name,
        title,
        in_default,
        write,
    }
}

/// Which sections the arguments ask for, as a flag per entry of [`SECTIONS`].
/// No argument means `default`; `all` and `everything` mean every section (kvik has
/// no module sections, which is where they differ in Redis); unknown names add
/// nothing. The report keeps Redis's section order whatever the arguments' order.
fn selected_sections(args: &[&[u8]]) -> Vec<bool> {
    let mut wanted = vec![false; SECTIONS.len()];
    let mut select = |pick: &dyn Fn(&Section) -> bool| {
        for (w, s) in wanted.iter_mut().zip(SECTIONS) {
            *w |= pick(s);
        }
    };
    if args.is_empty() {
        select(&|s| s.in_default);
    }
    for arg in args {
        let name = String::from_utf8_lossy(arg).to_ascii_lowercase();
        match name.as_str() {
            "default" => select(&|s| s.in_default),
            "all" | "everything" => select(&|_| true),
            _ => select(&|s| s.name == name),
        }
    }
    wanted
}

/// The report's text for the chosen sections.
fn report(server: &Server, wanted: &[bool], dbs: DbLines) -> String {
    let mut report = Report {
        dbs,
        ..Report::default()
    };
    for (section, _) in SECTIONS.iter().zip(wanted).filter(|(_, &w)| w) {
        report.header(section.title);
        (section.write)(server, &mut report);
    }
    report.text
}

/// The text being built.
#[derive(Default)]
struct Report {
    text: String,
    /// Per database, counted by the caller.
    dbs: DbLines,
}

impl Report {
    fn header(&mut self, title: &str) {
        if !self.text.is_empty() {
            self.text.push_str("\r\n");
        }
        let _ = write!(self.text, "# {title}\r\n");
    }

    fn field(&mut self, name: &str, value: impl Display) {
        let _ = write!(self.text, "{name}:{value}\r\n");
    }
}

fn server_section(server: &Server, r: &mut Report) {
    let now_us = crate::hlc::unix_us();
    let uptime = now_us / 1_000_000 - server.start_ms / 1000;
    let config = server.config.read();
    r.field("redis_version", REDIS_VERSION);
    r.field("redis_git_sha1", "00000000");
    r.field("redis_git_dirty", 0);
    r.field("redis_build_id", build_id());
    r.field("redis_mode", "standalone");
    r.field("os", os_name());
    r.field("arch_bits", usize::BITS);
    r.field("monotonic_clock", "POSIX clock_gettime");
    r.field("multiplexing_api", "epoll");
    r.field("atomicvar_api", "c11-builtin");
    // Not built by gcc: Redis prints zeros then.
    r.field("gcc_version", "0.0.0");
    r.field("process_id", std::process::id());
    r.field(
        "process_supervised",
        crate::supervise::reported(&config.supervised),
    );
    r.field("run_id", &server.run_id);
    r.field("tcp_port", server.port.load(Ordering::Relaxed));
    r.field("server_time_usec", now_us);
    r.field("uptime_in_seconds", uptime);
    r.field("uptime_in_days", uptime / 86400);
    r.field("hz", server.hot.hz.load(Ordering::Relaxed));
    r.field("configured_hz", config.hz);
    r.field(
        "lru_clock",
        crate::keyspace::access_clock(crate::hlc::unix_ms()),
    );
    let exe = std::env::current_exe().unwrap_or_default();
    r.field("executable", exe.display());
    let config_file = server
        .config_file
        .as_deref()
        .unwrap_or(std::path::Path::new(""));
    r.field("config_file", config_file.display());
    r.field("io_threads_active", 0);
    if let Some(left) = server.shutdown.remaining_ms() {
        r.field("shutdown_in_milliseconds", left);
    }
    r.field("kvik_version", VERSION);
    r.field("server_threads", server.worker_count());
}

/// A stable identifier of this build, in the shape of Redis's build id.
fn build_id() -> String {
    use sha1::{Digest, Sha1};
    let digest = Sha1::digest(format!("kvik-{VERSION}").as_bytes());
    hex::encode(&digest[..8])
}

/// `Linux 6.1.0-13-amd64 x86_64`: kernel name, release and machine, as `uname -srm`.
fn os_name() -> String {
    // SAFETY: uname fills the plain struct it is given; a zeroed one is valid input.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    let text = |field: &[libc::c_char]| {
        let bytes: Vec<u8> = field
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!(
        "{} {} {}",
        text(&u.sysname),
        text(&u.release),
        text(&u.machine)
    )
}

fn clients_section(server: &Server, r: &mut Report) {
    let buffers = client_buffers(server);
    r.field("connected_clients", server.clients.connected());
    r.field("cluster_connections", 0);
    r.field("maxclients", server.hot.maxclients.load(Ordering::Relaxed));
    r.field("client_recent_max_input_buffer", buffers.max_input);
    r.field("client_recent_max_output_buffer", buffers.max_output);
    let paused = server.pause.waiting_clients();
    r.field(
        "blocked_clients",
        server.blocking.blocked_clients() + paused,
    );
    r.field("tracking_clients", server.tracking.client_count());
    r.field(
        "clients_in_timeout_table",
        server.blocking.clients_with_timeout(),
    );
}

/// The clients' buffer sizes, from the snapshots their threads keep current.
#[derive(Default)]
struct ClientBuffers {
    max_input: usize,
    max_output: usize,
    total: u64,
}

fn client_buffers(server: &Server) -> ClientBuffers {
    let mut b = ClientBuffers::default();
    for client in server.clients.all() {
        let s = client.snapshot.lock();
        b.max_input = b.max_input.max(s.query_buffer);
        b.max_output = b.max_output.max(s.output_buffer);
        b.total += (s.query_buffer + s.query_buffer_free + s.output_buffer) as u64;
    }
    b
}

/// The scripting engine's share of INFO memory. Scripts and functions run in one Lua
/// state per thread, so the states' bytes are reported as the eval engine's (Redis
/// keeps one state for each engine), and the functions' as 0.
fn scripting_memory(server: &Server, r: &mut Report) {
    let scripting = &server.scripting;
    let vm = scripting.running.vm_bytes();
    let (cached_scripts, scripts_bytes) = scripting.cache_memory();
    let (libraries, functions) = scripting.libraries.counts();
    let functions_bytes = scripting.libraries.memory();
    r.field("used_memory_lua", vm);
    r.field("used_memory_vm_eval", vm);
    r.field("used_memory_lua_human", bytes_to_human(vm as u64));
    r.field("used_memory_scripts_eval", scripts_bytes);
    r.field("number_of_cached_scripts", cached_scripts);
    r.field("number_of_functions", functions);
    r.field("number_of_libraries", libraries);
    r.field("used_memory_vm_functions", 0);
    r.field("used_memory_vm_total", vm);
    r.field("used_memory_vm_total_human", bytes_to_human(vm as u64));
    r.field("used_memory_functions", functions_bytes);
    let scripts = scripts_bytes + functions_bytes;
    r.field("used_memory_scripts", scripts);
    r.field("used_memory_scripts_human", bytes_to_human(scripts as u64));
}

/// The memory figures INFO memory and MEMORY STATS share, read once.
pub struct MemoryFigures {
    pub alloc: stats::AllocatorStats,
    /// Used memory: jemalloc's allocated bytes.
    pub used: u64,
    pub peak: u64,
    pub rss: u64,
    /// Allocated when the server had started.
    pub startup: u64,
    /// The clients' query and reply buffers.
    pub clients: u64,
    /// What kvik knows to be bookkeeping rather than data: the memory it started
    /// with and the clients' buffers.
    pub overhead: u64,
}

impl MemoryFigures {
    pub fn read(server: &Server) -> MemoryFigures {
        let alloc = stats::allocator_stats();
        let used = alloc.allocated;
        let peak = server
            .memory_peak
            .fetch_max(used, Ordering::Relaxed)
            .max(used);
        let clients = client_buffers(server).total;
        MemoryFigures {
            alloc,
            used,
            peak,
            rss: stats::rss_bytes(),
            startup: server.memory_startup,
            clients,
            overhead: server.memory_startup + clients,
        }
    }

    /// Used memory beyond what the server started with (never 0, it divides).
    pub fn net_usage(&self) -> u64 {
        self.used.saturating_sub(self.startup).max(1)
    }
}

fn memory_section(server: &Server, r: &mut Report) {
    let m = MemoryFigures::read(server);
    let (used, peak, rss, startup, alloc, overhead) =
        (m.used, m.peak, m.rss, m.startup, m.alloc, m.overhead);
    let system = stats::total_system_memory();
    let clients = m.clients;
    let dataset = used.saturating_sub(overhead);
    let net_usage = m.net_usage();
    let (maxmemory, policy) = {
        let c = server.config.read();
        (c.maxmemory, c.maxmemory_policy.clone())
    };
    r.field("used_memory", used);
    r.field("used_memory_human", bytes_to_human(used));
    r.field("used_memory_rss", rss);
    r.field("used_memory_rss_human", bytes_to_human(rss));
    r.field("used_memory_peak", peak);
    r.field("used_memory_peak_human", bytes_to_human(peak));
    r.field("used_memory_peak_perc", percent(used, peak));
    r.field("used_memory_overhead", overhead);
    r.field("used_memory_startup", startup);
    r.field("used_memory_dataset", dataset);
    r.field("used_memory_dataset_perc", percent(dataset, net_usage));
    r.field("allocator_allocated", alloc.allocated);
    r.field("allocator_active", alloc.active);
    r.field("allocator_resident", alloc.resident);
    r.field("total_system_memory", system);
    r.field("total_system_memory_human", bytes_to_human(system));
    scripting_memory(server, r);
    r.field("maxmemory", maxmemory);
    r.field("maxmemory_human", bytes_to_human(maxmemory));
    r.field("maxmemory_policy", policy);
    r.field("allocator_frag_ratio", ratio(alloc.active, alloc.allocated));
    r.field(
        "allocator_frag_bytes",
        difference(alloc.active, alloc.allocated),
    );
    r.field("allocator_rss_ratio", ratio(alloc.resident, alloc.active));
    r.field(
        "allocator_rss_bytes",
        difference(alloc.resident, alloc.active),
    );
    r.field("rss_overhead_ratio", ratio(rss, alloc.resident));
    r.field("rss_overhead_bytes", difference(rss, alloc.resident));
    r.field("mem_fragmentation_ratio", ratio(rss, used));
    r.field("mem_fragmentation_bytes", difference(rss, used));
    r.field("mem_not_counted_for_evict", 0);
    r.field("mem_replication_backlog", 0);
    r.field("mem_total_replication_buffers", 0);
    r.field("mem_clients_slaves", 0);
    r.field("mem_clients_normal", clients);
    r.field("mem_cluster_links", 0);
    r.field("mem_aof_buffer", 0);
    r.field("mem_allocator", stats::allocator_name());
    r.field("active_defrag_running", server.defrag.figures().running_pct);
    let (pending, freed) = crate::lazyfree::object_counts();
    r.field("lazyfree_pending_objects", pending);
    r.field("lazyfreed_objects", freed);
}

/// A byte count the way Redis shows it to humans: `512B`, `1.50K`, `967.37M`, `2.00G`.
pub fn bytes_to_human(n: u64) -> String {
    if n < 1024 {
        return format!("{n}B");
    }
    let mut unit_size = 1024u64;
    for unit in ["K", "M", "G", "T", "P"] {
        if n / unit_size < 1024 {
            return format!("{:.2}{unit}", n as f64 / unit_size as f64);
        }
        unit_size *= 1024;
    }
    format!("{n}B")
}

/// `a / b` with two decimals (Redis's ratio fields).
fn ratio(a: u64, b: u64) -> String {
    format!("{:.2}", a as f64 / b.max(1) as f64)
}

/// `a * 100 / b` with two decimals and a percent sign.
fn percent(a: u64, b: u64) -> String {
    format!("{:.2}%", a as f64 * 100.0 / b.max(1) as f64)
}

/// `a - b`, negative when `b` is larger.
fn difference(a: u64, b: u64) -> i128 {
    a as i128 - b as i128
}

fn persistence_section(server: &Server, r: &mut Report) {
    let state = &server.persistence;
    let dirty = stats::sum(&server.thread_stats, |s| &s.dirty);
    let loaded = *state.last_load.lock();
    let loading = server.loading.progress();
    r.field("loading", u8::from(server.loading.is_active()));
    r.field("async_loading", u8::from(server.loading.is_async()));
    r.field("current_cow_peak", 0);
    r.field("current_cow_size", 0);
    r.field("current_cow_size_age", 0);
    r.field("current_fork_perc", "0.00");
    r.field("current_save_keys_processed", 0);
    r.field("current_save_keys_total", 0);
    r.field(
        "rdb_changes_since_last_save",
        state.changes_since_save(dirty),
    );
    r.field(
        "rdb_bgsave_in_progress",
        u8::from(state.bgsave_in_progress()),
    );
    r.field("rdb_last_save_time", state.last_save());
    let status = if state.last_bgsave_ok() { "ok" } else { "err" };
    r.field("rdb_last_bgsave_status", status);
    r.field("rdb_last_bgsave_time_sec", state.last_bgsave_secs());
    r.field("rdb_current_bgsave_time_sec", state.current_bgsave_secs());
    r.field("rdb_saves", state.saves());
    r.field("rdb_last_cow_size", 0);
    r.field("rdb_last_load_keys_expired", loaded.expired);
    r.field("rdb_last_load_keys_loaded", loaded.keys);
    aof_fields(server, r);
    if let Some(progress) = loading {
        loading_fields(&progress, r);
    }
}

/// What INFO persistence adds while the dataset loads, as Redis 7.0 prints it.
fn loading_fields(progress: &crate::loading::Progress, r: &mut Report) {
    let now_secs = crate::hlc::unix_ms() / 1000;
    r.field("loading_start_time", progress.start_time);
    r.field("loading_total_bytes", progress.total_bytes);
    r.field("loading_rdb_used_mem", progress.rdb_used_mem);
    r.field("loading_loaded_bytes", progress.loaded_bytes);
    r.field("loading_loaded_perc", format!("{:.2}", progress.percent()));
    r.field("loading_eta_seconds", progress.eta_seconds(now_secs));
}

/// The aof_* fields of INFO persistence, as Redis 7.0 prints them (the sizes only
/// while the AOF is on). No fork: the copy-on-write figure is 0.
fn aof_fields(server: &Server, r: &mut Report) {
    let aof = &server.aof;
    let rewrite = aof.rewrite_info();
    let ok = |yes: bool| if yes { "ok" } else { "err" };
    // On while its first rewrite runs, as Redis counts it.
    let on = aof.is_on();
    r.field("aof_enabled", u8::from(on));
    r.field("aof_rewrite_in_progress", u8::from(rewrite.in_progress));
    r.field("aof_rewrite_scheduled", u8::from(aof.rewrite_scheduled()));
    r.field("aof_last_rewrite_time_sec", rewrite.last_secs);
    r.field("aof_current_rewrite_time_sec", rewrite.current_secs);
    r.field("aof_last_bgrewrite_status", ok(rewrite.last_ok));
    r.field("aof_rewrites", rewrite.count);
    r.field(
        "aof_rewrites_consecutive_failures",
        rewrite.consecutive_failures,
    );
    r.field("aof_last_write_status", ok(aof.last_write_ok()));
    r.field("aof_last_cow_size", 0);
    r.field("module_fork_in_progress", 0);
    r.field("module_fork_last_cow_size", 0);
    if on {
        r.field("aof_current_size", aof.current_size());
        r.field("aof_base_size", aof.base_size());
        r.field("aof_pending_rewrite", u8::from(aof.rewrite_scheduled()));
        r.field("aof_buffer_length", aof.buffer_len());
        r.field("aof_pending_bio_fsync", u8::from(aof.fsync_running()));
        r.field(
            "aof_delayed_fsync",
            aof.delayed_fsyncs
                .load(std::sync::atomic::Ordering::Relaxed),
        );
    }
}

fn stats_section(server: &Server, r: &mut Report) {
    let all = &server.thread_stats;
    let sum =
        |pick: fn(&stats::ThreadStats) -> &std::sync::atomic::AtomicU64| stats::sum(all, pick);
    let totals = Totals {
        commands: sum(|s| &s.commands),
        net_input_bytes: sum(|s| &s.net_input_bytes),
        net_output_bytes: sum(|s| &s.net_output_bytes),
    };
    let rates = server.rates.sample(Instant::now(), totals);
    r.field(
        "total_connections_received",
        sum(|s| &s.connections_received),
    );
    r.field("total_commands_processed", totals.commands);
    r.field("instantaneous_ops_per_sec", rates.ops_per_sec);
    r.field("total_net_input_bytes", totals.net_input_bytes);
    r.field("total_net_output_bytes", totals.net_output_bytes);
    r.field("total_net_repl_input_bytes", 0);
    r.field("total_net_repl_output_bytes", 0);
    r.field(
        "instantaneous_input_kbps",
        format!("{:.2}", rates.input_kbps),
    );
    r.field(
        "instantaneous_output_kbps",
        format!("{:.2}", rates.output_kbps),
    );
    r.field("instantaneous_input_repl_kbps", "0.00");
    r.field("instantaneous_output_repl_kbps", "0.00");
    r.field("rejected_connections", sum(|s| &s.rejected_connections));
    let syncs = &server.replication.replicas.syncs;
    r.field("sync_full", syncs.full.load(Ordering::Relaxed));
    r.field("sync_partial_ok", syncs.partial_ok.load(Ordering::Relaxed));
    r.field(
        "sync_partial_err",
        syncs.partial_err.load(Ordering::Relaxed),
    );
    r.field("expired_keys", sum(|s| &s.expired_keys));
    r.field("expired_stale_perc", "0.00");
    r.field("expired_time_cap_reached_count", 0);
    r.field(
        "expire_cycle_cpu_milliseconds",
        sum(|s| &s.expire_cycle_cpu_ms),
    );
    r.field("evicted_keys", sum(|s| &s.evicted_keys));
    r.field("evicted_clients", sum(|s| &s.evicted_clients));
    let (exceeded_total, exceeded_now) = server.memory.exceeded_ms();
    r.field("total_eviction_exceeded_time", exceeded_total);
    r.field("current_eviction_exceeded_time", exceeded_now);
    r.field("keyspace_hits", sum(|s| &s.keyspace_hits));
    r.field("keyspace_misses", sum(|s| &s.keyspace_misses));
    let hub = &server.pubsub;
    r.field("pubsub_channels", hub.active_count(Kind::Channel));
    r.field("pubsub_patterns", hub.active_count(Kind::Pattern));
    r.field("pubsubshard_channels", hub.active_count(Kind::Shard));
    for idle in [
        "latest_fork_usec",
        "total_forks",
        "migrate_cached_sockets",
        "slave_expires_tracked_keys",
    ] {
        r.field(idle, 0);
    }
    let defrag = server.defrag.figures();
    r.field("active_defrag_hits", defrag.hits);
    r.field("active_defrag_misses", defrag.misses);
    r.field("active_defrag_key_hits", defrag.key_hits);
    r.field("active_defrag_key_misses", defrag.key_misses);
    r.field("total_active_defrag_time", defrag.total_ms);
    r.field("current_active_defrag_time", defrag.current_ms);
    let tracking = &server.tracking;
    r.field("tracking_total_keys", tracking.total_keys());
    r.field("tracking_total_items", tracking.total_items());
    r.field("tracking_total_prefixes", tracking.total_prefixes());
    r.field(
        "unexpected_error_replies",
        sum(|s| &s.unexpected_error_replies),
    );
    r.field("total_error_replies", sum(|s| &s.total_error_replies));
    r.field("dump_payload_sanitizations", 0);
    // Not counted yet by the event loops.
    r.field("total_reads_processed", 0);
    r.field("total_writes_processed", 0);
    r.field("io_threaded_reads_processed", 0);
    r.field("io_threaded_writes_processed", 0);
    r.field("reply_buffer_shrinks", sum(|s| &s.reply_buffer_shrinks));
    r.field("reply_buffer_expands", sum(|s| &s.reply_buffer_expands));
}

/// One master link's fields of INFO replication, named with `prefix` (empty for
/// the first master, `_N` for the others).
fn link_fields(
    r: &mut Report,
    repl: &crate::replication::Replication,
    link: &crate::replication::replica::Link,
    prefix: &str,
    now_ms: u64,
) {
    let secs_since = |ms: u64| (now_ms.saturating_sub(ms) / 1000) as i64;
    r.field(&format!("master{prefix}_host"), &link.host);
    r.field(&format!("master{prefix}_port"), link.port);
    let up = link.is_up();
    r.field(
        &format!("master{prefix}_link_status"),
        if up { "up" } else { "down" },
    );
    let last_io = link.last_io_ms.load(Ordering::Relaxed);
    r.field(
        &format!("master{prefix}_last_io_seconds_ago"),
        if last_io == 0 {
            -1
        } else {
            secs_since(last_io)
        },
    );
    let syncing = link.state() == crate::replication::replica::LinkState::Sync;
    r.field(
        &format!("master{prefix}_sync_in_progress"),
        u8::from(syncing),
    );
    r.field(
        &format!("slave{prefix}_read_repl_offset"),
        link.read_offset.load(Ordering::Relaxed),
    );
    r.field(
        &format!("slave{prefix}_repl_offset"),
        link.applied_offset().unwrap_or(repl.offset()),
    );
    if syncing {
        let total = link.sync_size.load(Ordering::Relaxed);
        let read = link.sync_read.load(Ordering::Relaxed);
        r.field(&format!("master{prefix}_sync_total_bytes"), total);
        r.field(&format!("master{prefix}_sync_read_bytes"), read);
        r.field(
            &format!("master{prefix}_sync_left_bytes"),
            (total - read as i64).max(0),
        );
        let perc = if total > 0 {
            read as f64 * 100.0 / total as f64
        } else {
            0.0
        };
        r.field(&format!("master{prefix}_sync_perc"), format!("{perc:.2}"));
        r.field(
            &format!("master{prefix}_sync_last_io_seconds_ago"),
            secs_since(last_io),
        );
    }
    if !up {
        let since = link.down_since_ms.load(Ordering::Relaxed);
        r.field(
            &format!("master{prefix}_link_down_since_seconds"),
            if since == 0 { -1 } else { secs_since(since) },
        );
    }
}

/// INFO replication, every field Redis 7.0 prints, in its order.
fn replication_section(server: &Server, r: &mut Report) {
    let repl = &server.replication;
    let (backlog_size, priority, read_only, announced, min_replicas, min_lag) = {
        let c = server.config.read();
        (
            c.repl_backlog_size,
            c.replica_priority,
            c.replica_read_only,
            c.replica_announced,
            c.min_replicas_to_write,
            c.min_replicas_max_lag,
        )
    };
    let now_ms = crate::hlc::unix_ms();
    let secs_since = |ms: u64| (now_ms.saturating_sub(ms) / 1000) as i64;
    let links = repl.links();
    match links.first() {
        None => r.field("role", "master"),
        Some(_) => {
            r.field(
                "role",
                if repl.is_active() {
                    "active-replica"
                } else {
                    "slave"
                },
            );
            if links.len() > 1 {
                // KeyDB's multi-master summary: up only while every link is.
                let all_up = links.iter().all(|l| l.is_up());
                r.field(
                    "master_global_link_status",
                    if all_up { "up" } else { "down" },
                );
            }
            for (n, link) in links.iter().enumerate() {
                // The first master's fields read as Redis's; the others' as KeyDB
                // names them, `master_1_host` and on.
                let prefix = match n {
                    0 => String::new(),
                    n => format!("_{n}"),
                };
                link_fields(r, repl, link, &prefix, now_ms);
            }
            r.field("slave_priority", priority);
            r.field("slave_read_only", u8::from(read_only && !repl.is_active()));
            r.field("replica_announced", u8::from(announced));
        }
    }
    if repl.is_active() {
        // kvik's own: the tombstones of removed keys kept for the peers.
        let (graves, bytes) = server.keyspace.graves_held();
        r.field("active_replica_tombstones", graves);
        r.field("active_replica_tombstones_bytes", bytes);
        // Element timestamps of sets, hashes and sorted sets written while active.
        let (collections, marks) = server.keyspace.elements_held();
        r.field("active_replica_element_collections", collections);
        r.field("active_replica_element_marks", marks);
        // Counted states (per-node totals) not settled yet.
        r.field("active_replica_counters", server.keyspace.counters_held());
    }
    let replicas = repl.replicas.all();
    r.field("connected_slaves", replicas.len());
    if min_replicas > 0 && min_lag > 0 {
        r.field("min_slaves_good_slaves", repl.good_replicas());
    }
    for (i, feed) in replicas.iter().enumerate() {
        let ack = feed.ack_ms.load(Ordering::Relaxed);
        r.field(
            &format!("slave{i}"),
            format!(
                "ip={},port={},state={},offset={},lag={}",
                feed.ip,
                feed.hello.listening_port,
                feed.state_name(),
                feed.ack_offset.load(Ordering::Relaxed),
                secs_since(ack)
            ),
        );
    }
    let ids = repl.ids();
    let failover = repl.failover();
    r.field(
        "master_failover_state",
        crate::replication::failover::state_name(failover.as_ref()),
    );
    r.field("master_replid", &ids.replid);
    r.field("master_replid2", &ids.replid2);
    r.field("master_repl_offset", repl.offset());
    r.field("second_repl_offset", ids.second_offset);
    let active = repl.backlog.is_active();
    let (first, histlen) = if active { repl.backlog.span() } else { (0, 0) };
    r.field("repl_backlog_active", u8::from(active));
    r.field("repl_backlog_size", backlog_size);
    r.field("repl_backlog_first_byte_offset", first);
    r.field("repl_backlog_histlen", histlen);
}

/// The CPU section. kvik has no single main thread: the `_main_thread` figures are
/// those of the worker thread answering this INFO.
fn cpu_section(_server: &Server, r: &mut Report) {
    let (me_sys, me_user) = cpu_seconds(libc::RUSAGE_SELF);
    let (kids_sys, kids_user) = cpu_seconds(libc::RUSAGE_CHILDREN);
    let (thread_sys, thread_user) = cpu_seconds(libc::RUSAGE_THREAD);
    r.field("used_cpu_sys", format!("{me_sys:.6}"));
    r.field("used_cpu_user", format!("{me_user:.6}"));
    r.field("used_cpu_sys_children", format!("{kids_sys:.6}"));
    r.field("used_cpu_user_children", format!("{kids_user:.6}"));
    r.field("used_cpu_sys_main_thread", format!("{thread_sys:.6}"));
    r.field("used_cpu_user_main_thread", format!("{thread_user:.6}"));
}

/// (system, user) CPU seconds from getrusage.
fn cpu_seconds(who: libc::c_int) -> (f64, f64) {
    // SAFETY: getrusage fills the plain struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(ru.ru_stime), secs(ru.ru_utime))
}

/// One command's counters, summed over the threads.
#[derive(Default)]
struct CommandTotals {
    calls: u64,
    usec: u64,
    rejected: u64,
    failed: u64,
}

/// Every command and subcommand with its summed counters, by name.
fn command_totals(server: &Server) -> Vec<(&'static str, CommandTotals)> {
    let mut rows: Vec<_> = super::registry()
        .iter()
        .map(|(id, cmd)| {
            let mut t = CommandTotals::default();
            for s in &server.thread_stats {
                let c = &s.per_command[id];
                t.calls += c.calls.load(Ordering::Relaxed);
                t.usec += c.usec.load(Ordering::Relaxed);
                t.rejected += c.rejected_calls.load(Ordering::Relaxed);
                t.failed += c.failed_calls.load(Ordering::Relaxed);
            }
            (cmd.name, t)
        })
        .collect();
    rows.sort_by_key(|(name, _)| *name);
    rows
}

fn commandstats_section(server: &Server, r: &mut Report) {
    for (name, t) in command_totals(server) {
        if t.calls == 0 && t.rejected == 0 && t.failed == 0 {
            continue;
        }
        let per_call = t.usec as f64 / t.calls.max(1) as f64;
        r.field(
            &format!("cmdstat_{name}"),
            format_args!(
                "calls={},usec={},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}",
                t.calls, t.usec, t.rejected, t.failed
            ),
        );
    }
}

fn errorstats_section(server: &Server, r: &mut Report) {
    for (prefix, count) in server.errorstats() {
        r.field(
            &format!("errorstat_{prefix}"),
            format_args!("count={count}"),
        );
    }
}

/// Per-command latency percentiles (`latency-tracking-info-percentiles`), in
/// microseconds, from the threads' histograms merged.
fn latencystats_section(server: &Server, r: &mut Report) {
    let percentiles = server
        .config
        .read()
        .latency_tracking_info_percentiles
        .clone();
    let mut rows: Vec<(&str, Vec<u64>)> = super::registry()
        .iter()
        .filter_map(|(id, cmd)| Some((cmd.name, stats::merged_latency(&server.thread_stats, id)?)))
        .collect();
    rows.sort_by_key(|(name, _)| *name);
    for (name, counts) in rows {
        let values: Vec<String> = percentiles
            .iter()
            .map(|&p| {
                let nanos = LatencyHistogram::percentile(&counts, p).unwrap_or(0);
                format!("p{p}={:.3}", nanos as f64 / 1000.0)
            })
            .collect();
        r.field(
            &format!("latency_percentiles_usec_{name}"),
            values.join(","),
        );
    }
}

fn cluster_section(_server: &Server, r: &mut Report) {
    r.field("cluster_enabled", 0);
}

/// Non-empty databases. `avg_ttl` stays 0: the expiry cycle does not estimate it yet.
/// An active replica adds each database's digest (16 hex digits), equal on nodes
/// that converged.
fn keyspace_section(_server: &Server, r: &mut Report) {
    let DbLines { stats, digests } = std::mem::take(&mut r.dbs);
    for (db, (keys, expires)) in stats.into_iter().enumerate() {
        if keys > 0 {
            let digest = digests
                .get(db)
                .copied()
                .flatten()
                .map(|d| format!(",digest={d:016x}"))
                .unwrap_or_default();
            r.field(
                &format!("db{db}"),
                format_args!("keys={keys},expires={expires},avg_ttl=0{digest}"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes_like_redis() {
        assert_eq!(bytes_to_human(0), "0B");
        assert_eq!(bytes_to_human(1023), "1023B");
        assert_eq!(bytes_to_human(1024), "1.00K");
        assert_eq!(bytes_to_human(990584), "967.37K");
        assert_eq!(bytes_to_human(7421952), "7.08M");
        assert_eq!(bytes_to_human(25276502016), "23.54G");
        assert_eq!(bytes_to_human(3 << 40), "3.00T");
        assert_eq!(bytes_to_human(5 << 50), "5.00P");
        assert_eq!(bytes_to_human(u64::MAX), format!("{}B", u64::MAX));
    }

    #[test]
    fn section_selection() {
        let pick = |args: &[&str]| -> Vec<&str> {
            let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            let wanted = selected_sections(&args);
            SECTIONS
                .iter()
                .zip(wanted)
                .filter(|(_, w)| *w)
                .map(|(s, _)| s.name)
                .collect()
        };
        assert_eq!(pick(&[]).len(), 11);
        assert!(!pick(&[]).contains(&"commandstats"));
        assert_eq!(pick(&["everything"]).len(), SECTIONS.len());
        assert_eq!(pick(&["ALL"]).len(), SECTIONS.len());
        assert_eq!(pick(&["keyspace", "Server"]), ["server", "keyspace"]);
        assert_eq!(pick(&["nosuch"]), Vec::<&str>::new());
        assert_eq!(pick(&["default", "commandstats"]).len(), 12);
    }
}
