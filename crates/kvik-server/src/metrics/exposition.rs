//! The page a scrape gets, in Prometheus's text exposition format.
//!
//! Most of it is INFO read the way redis_exporter reads it: each numeric field it
//! knows under the name it gives (`used_memory` is `redis_memory_used_bytes`),
//! statuses as 1 or 0, `cmdstat_*` as per-command counters, `db<N>` as per-database
//! gauges, replica and master lines as labelled gauges, and the instance's identity
//! as the labels of `redis_instance_info`. What INFO has no field for comes from the
//! counters behind it: per-thread figures (`kvik_thread_*`) and per-command latency
//! histograms (`kvik_command_latency_seconds`), from the histograms INFO's
//! latencystats section reads.

use crate::commands;
use crate::server::Server;
use crate::stats;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

const GAUGE: &str = "gauge";
const COUNTER: &str = "counter";
const HISTOGRAM: &str = "histogram";

/// An INFO field published as it is: (field, metric name without `redis_`, type).
const FIELDS: &[(&str, &str, &str)] = &[
    // Server
    ("uptime_in_seconds", "uptime_in_seconds", GAUGE),
    ("process_id", "process_id", GAUGE),
    ("server_threads", "server_threads_total", GAUGE),
    // Clients
    ("connected_clients", "connected_clients", GAUGE),
    ("blocked_clients", "blocked_clients", GAUGE),
    ("tracking_clients", "tracking_clients", GAUGE),
    (
        "clients_in_timeout_table",
        "clients_in_timeout_table",
        GAUGE,
    ),
    (
        "client_recent_max_output_buffer",
        "client_recent_max_output_buffer_bytes",
        GAUGE,
    ),
    (
        "client_recent_max_input_buffer",
        "client_recent_max_input_buffer_bytes",
        GAUGE,
    ),
    // Memory
    ("allocator_active", "allocator_active_bytes", GAUGE),
    ("allocator_allocated", "allocator_allocated_bytes", GAUGE),
    ("allocator_resident", "allocator_resident_bytes", GAUGE),
    ("allocator_frag_ratio", "allocator_frag_ratio", GAUGE),
    ("allocator_frag_bytes", "allocator_frag_bytes", GAUGE),
    ("allocator_rss_ratio", "allocator_rss_ratio", GAUGE),
    ("allocator_rss_bytes", "allocator_rss_bytes", GAUGE),
    ("used_memory", "memory_used_bytes", GAUGE),
    ("used_memory_rss", "memory_used_rss_bytes", GAUGE),
    ("used_memory_peak", "memory_used_peak_bytes", GAUGE),
    ("used_memory_lua", "memory_used_lua_bytes", GAUGE),
    ("used_memory_overhead", "memory_used_overhead_bytes", GAUGE),
    ("used_memory_startup", "memory_used_startup_bytes", GAUGE),
    ("used_memory_dataset", "memory_used_dataset_bytes", GAUGE),
    ("used_memory_scripts", "memory_used_scripts_bytes", GAUGE),
    ("maxmemory", "memory_max_bytes", GAUGE),
    ("mem_fragmentation_ratio", "mem_fragmentation_ratio", GAUGE),
    ("mem_fragmentation_bytes", "mem_fragmentation_bytes", GAUGE),
    ("mem_clients_slaves", "mem_clients_slaves", GAUGE),
    ("mem_clients_normal", "mem_clients_normal", GAUGE),
    (
        "mem_not_counted_for_evict",
        "mem_not_counted_for_eviction_bytes",
        GAUGE,
    ),
    (
        "lazyfree_pending_objects",
        "lazyfree_pending_objects",
        GAUGE,
    ),
    ("active_defrag_running", "active_defrag_running", GAUGE),
    // Persistence
    ("loading", "loading_dump_file", GAUGE),
    (
        "rdb_changes_since_last_save",
        "rdb_changes_since_last_save",
        GAUGE,
    ),
    ("rdb_bgsave_in_progress", "rdb_bgsave_in_progress", GAUGE),
    (
        "rdb_last_save_time",
        "rdb_last_save_timestamp_seconds",
        GAUGE,
    ),
    ("rdb_last_bgsave_status", "rdb_last_bgsave_status", GAUGE),
    (
        "rdb_last_bgsave_time_sec",
        "rdb_last_bgsave_duration_sec",
        GAUGE,
    ),
    (
        "rdb_current_bgsave_time_sec",
        "rdb_current_bgsave_duration_sec",
        GAUGE,
    ),
    ("rdb_last_cow_size", "rdb_last_cow_size_bytes", GAUGE),
    ("aof_enabled", "aof_enabled", GAUGE),
    ("aof_rewrite_in_progress", "aof_rewrite_in_progress", GAUGE),
    ("aof_rewrite_scheduled", "aof_rewrite_scheduled", GAUGE),
    (
        "aof_last_rewrite_time_sec",
        "aof_last_rewrite_duration_sec",
        GAUGE,
    ),
    (
        "aof_current_rewrite_time_sec",
        "aof_current_rewrite_duration_sec",
        GAUGE,
    ),
    ("aof_last_cow_size", "aof_last_cow_size_bytes", GAUGE),
    ("aof_current_size", "aof_current_size_bytes", GAUGE),
    ("aof_base_size", "aof_base_size_bytes", GAUGE),
    ("aof_pending_rewrite", "aof_pending_rewrite", GAUGE),
    ("aof_buffer_length", "aof_buffer_length", GAUGE),
    ("aof_pending_bio_fsync", "aof_pending_bio_fsync", GAUGE),
    ("aof_delayed_fsync", "aof_delayed_fsync", GAUGE),
    (
        "aof_last_bgrewrite_status",
        "aof_last_bgrewrite_status",
        GAUGE,
    ),
    ("aof_last_write_status", "aof_last_write_status", GAUGE),
    // Stats
    (
        "total_connections_received",
        "connections_received_total",
        COUNTER,
    ),
    (
        "total_commands_processed",
        "commands_processed_total",
        COUNTER,
    ),
    (
        "rejected_connections",
        "rejected_connections_total",
        COUNTER,
    ),
    ("total_net_input_bytes", "net_input_bytes_total", COUNTER),
    ("total_net_output_bytes", "net_output_bytes_total", COUNTER),
    ("expired_keys", "expired_keys_total", COUNTER),
    ("evicted_keys", "evicted_keys_total", COUNTER),
    ("keyspace_hits", "keyspace_hits_total", COUNTER),
    ("keyspace_misses", "keyspace_misses_total", COUNTER),
    ("expired_stale_perc", "expired_stale_percentage", GAUGE),
    (
        "expired_time_cap_reached_count",
        "expired_time_cap_reached_total",
        GAUGE,
    ),
    ("pubsub_channels", "pubsub_channels", GAUGE),
    ("pubsub_patterns", "pubsub_patterns", GAUGE),
    ("latest_fork_usec", "latest_fork_usec", GAUGE),
    ("sync_full", "replica_resyncs_full", GAUGE),
    ("sync_partial_ok", "replica_partial_resync_accepted", GAUGE),
    ("sync_partial_err", "replica_partial_resync_denied", GAUGE),
    (
        "slave_expires_tracked_keys",
        "slave_expires_tracked_keys",
        GAUGE,
    ),
    // Replication
    ("connected_slaves", "connected_slaves", GAUGE),
    ("master_repl_offset", "master_repl_offset", GAUGE),
    ("second_repl_offset", "second_repl_offset", GAUGE),
    ("repl_backlog_size", "replication_backlog_bytes", GAUGE),
    ("repl_backlog_active", "repl_backlog_is_active", GAUGE),
    (
        "repl_backlog_first_byte_offset",
        "repl_backlog_first_byte_offset",
        GAUGE,
    ),
    ("repl_backlog_histlen", "repl_backlog_history_bytes", GAUGE),
    ("slave_priority", "slave_priority", GAUGE),
    // CPU
    ("used_cpu_sys", "cpu_sys_seconds_total", COUNTER),
    ("used_cpu_user", "cpu_user_seconds_total", COUNTER),
    (
        "used_cpu_sys_children",
        "cpu_sys_children_seconds_total",
        COUNTER,
    ),
    (
        "used_cpu_user_children",
        "cpu_user_children_seconds_total",
        COUNTER,
    ),
];

/// The INFO fields that name the instance, as `redis_instance_info`'s labels.
const IDENTITY: &[&str] = &[
    "role",
    "redis_version",
    "redis_build_id",
    "redis_mode",
    "os",
    "maxmemory_policy",
    "tcp_port",
    "run_id",
    "process_id",
];

/// The latency histograms' bounds: each power of two nanoseconds from about a
/// microsecond to about a second, where the histograms' buckets begin exactly.
const LATENCY_EXPONENTS: std::ops::RangeInclusive<u32> = 10..=30;

/// The whole page.
pub fn render(server: &Server) -> String {
    let info = commands::info::everything(server);
    let fields: Vec<(&str, &str)> = info
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once(':'))
        .collect();
    let mut page = Page::default();
    page.add("up", GAUGE, "Whether the server answers.", "", "1".into());
    instance_info(&fields, &mut page);
    for &(name, value) in &fields {
        info_field(name, value, &mut page);
    }
    databases(server, &fields, &mut page);
    master_link(&fields, &mut page);
    threads(server, &mut page);
    latencies(server, &fields, &mut page);
    page.text()
}

/// Metric families by name, each with its samples (labels, value).
#[derive(Default)]
struct Page {
    families: BTreeMap<String, Family>,
}

struct Family {
    kind: &'static str,
    help: String,
    samples: Vec<Sample>,
}

struct Sample {
    /// What follows the family's name: empty, or a histogram's `_bucket`, `_sum`,
    /// `_count`.
    suffix: &'static str,
    labels: String,
    value: String,
}

impl Page {
    /// One sample of `redis_<name>` (or of `name` itself when it starts with `kvik_`).
    fn add(&mut self, name: &str, kind: &'static str, help: &str, labels: &str, value: String) {
        self.add_part(name, kind, help, "", labels, value);
    }

    /// One sample of a family whose samples carry suffixes (a histogram).
    fn add_part(
        &mut self,
        name: &str,
        kind: &'static str,
        help: &str,
        suffix: &'static str,
        labels: &str,
        value: String,
    ) {
        let full = if name.starts_with("kvik_") {
            name.to_string()
        } else {
            format!("redis_{name}")
        };
        self.families
            .entry(full)
            .or_insert_with(|| Family {
                kind,
                help: help.to_string(),
                samples: Vec::new(),
            })
            .samples
            .push(Sample {
                suffix,
                labels: labels.to_string(),
                value,
            });
    }

    fn text(&self) -> String {
        let mut out = String::new();
        for (name, family) in &self.families {
            let _ = writeln!(out, "# HELP {name} {}", family.help);
            let _ = writeln!(out, "# TYPE {name} {}", family.kind);
            for sample in &family.samples {
                let braces = if sample.labels.is_empty() {
                    String::new()
                } else {
                    format!("{{{}}}", sample.labels)
                };
                let _ = writeln!(out, "{name}{}{braces} {}", sample.suffix, sample.value);
            }
        }
        out
    }
}

/// `name="value"` pairs, values escaped as the format requires.
fn labels(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(name, value)| {
            let escaped = value
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            format!("{name}=\"{escaped}\"")
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A field's value as a number: numbers as they are, statuses (`ok`, `up`) as 1
/// and their failures as 0; `None` for text.
fn number(value: &str) -> Option<String> {
    match value {
        "ok" | "up" => Some("1".into()),
        "err" | "down" => Some("0".into()),
        _ => value.parse::<f64>().ok().map(|_| value.to_string()),
    }
}

fn field<'a>(fields: &[(&str, &'a str)], name: &str) -> Option<&'a str> {
    fields.iter().find(|(n, _)| *n == name).map(|&(_, v)| v)
}

fn instance_info(fields: &[(&str, &str)], page: &mut Page) {
    let pairs: Vec<(&str, &str)> = IDENTITY
        .iter()
        .map(|&name| (name, field(fields, name).unwrap_or("")))
        .collect();
    let help = "Information about the instance.";
    page.add("instance_info", GAUGE, help, &labels(&pairs), "1".into());
}

/// One INFO line: a mapped field, a command's or an error's counters, or a replica.
fn info_field(name: &str, value: &str, page: &mut Page) {
    if let Some(&(_, metric, kind)) = FIELDS.iter().find(|(f, _, _)| *f == name) {
        if let Some(n) = number(value) {
            page.add(metric, kind, &format!("INFO field {name}."), "", n);
        }
    } else if let Some(cmd) = name.strip_prefix("cmdstat_") {
        command_stats(cmd, value, page);
    } else if let Some(prefix) = name.strip_prefix("errorstat_") {
        let count = attribute(value, "count").unwrap_or("0");
        let help = "Error replies, by error prefix.";
        let pairs = labels(&[("err", prefix)]);
        page.add("errors_total", COUNTER, help, &pairs, count.into());
    } else if name.starts_with("slave") && name[5..].parse::<u32>().is_ok() {
        replica(value, page);
    }
}

/// `a=1,b=2` lists (commandstats, keyspace, replicas): the value of `key`.
fn attribute<'a>(list: &'a str, key: &str) -> Option<&'a str> {
    list.split(',')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

fn command_stats(cmd: &str, value: &str, page: &mut Page) {
    let pairs = labels(&[("cmd", cmd)]);
    let get = |key| attribute(value, key).unwrap_or("0");
    let seconds = get("usec").parse::<f64>().unwrap_or(0.0) / 1e6;
    let families = [
        (
            "commands_total",
            "Calls, by command.",
            get("calls").to_string(),
        ),
        (
            "commands_duration_seconds_total",
            "Seconds spent running each command.",
            seconds.to_string(),
        ),
        (
            "commands_rejected_calls_total",
            "Calls refused before running, by command.",
            get("rejected_calls").to_string(),
        ),
        (
            "commands_failed_calls_total",
            "Calls that ran and failed, by command.",
            get("failed_calls").to_string(),
        ),
    ];
    for (name, help, n) in families {
        page.add(name, COUNTER, help, &pairs, n);
    }
}

/// A replica's line of INFO replication on a master.
fn replica(value: &str, page: &mut Page) {
    let get = |key| attribute(value, key).unwrap_or("");
    let pairs = labels(&[
        ("slave_ip", get("ip")),
        ("slave_port", get("port")),
        ("slave_state", get("state")),
    ]);
    if let Some(offset) = number(get("offset")) {
        let help = "Offset a replica has acknowledged.";
        page.add("connected_slave_offset_bytes", GAUGE, help, &pairs, offset);
    }
    if let Some(lag) = number(get("lag")) {
        let help = "Seconds since a replica's last acknowledgement.";
        page.add("connected_slave_lag_seconds", GAUGE, help, &pairs, lag);
    }
}

/// Keys per database, every database (empty ones as 0, which INFO leaves out).
fn databases(server: &Server, fields: &[(&str, &str)], page: &mut Page) {
    for db in 0..server.keyspace.databases() {
        let name = format!("db{db}");
        let line = field(fields, &name).unwrap_or("");
        let pairs = labels(&[("db", &name)]);
        let get = |key| attribute(line, key).unwrap_or("0").to_string();
        let avg_ttl = get("avg_ttl").parse::<f64>().unwrap_or(0.0) / 1000.0;
        page.add("db_keys", GAUGE, "Keys, by database.", &pairs, get("keys"));
        let help = "Keys with a time to live, by database.";
        page.add("db_keys_expiring", GAUGE, help, &pairs, get("expires"));
        let help = "Average time to live in seconds, by database.";
        page.add(
            "db_avg_ttl_seconds",
            GAUGE,
            help,
            &pairs,
            avg_ttl.to_string(),
        );
    }
}

/// On a replica: the link to its master.
fn master_link(fields: &[(&str, &str)], page: &mut Page) {
    let (Some(host), Some(port)) = (field(fields, "master_host"), field(fields, "master_port"))
    else {
        return;
    };
    let pairs = labels(&[("master_host", host), ("master_port", port)]);
    let up = field(fields, "master_link_status") == Some("up");
    let help = "Whether the link to the master is up.";
    page.add(
        "master_link_up",
        GAUGE,
        help,
        &pairs,
        u8::from(up).to_string(),
    );
    for (name, help) in [
        (
            "master_sync_in_progress",
            "Whether a full sync is under way.",
        ),
        (
            "master_last_io_seconds_ago",
            "Seconds since the last exchange with the master.",
        ),
    ] {
        if let Some(n) = field(fields, name).and_then(number) {
            page.add(name, GAUGE, help, &pairs, n);
        }
    }
}

/// What each server thread did and holds.
fn threads(server: &Server, page: &mut Page) {
    let mut connections = vec![0u64; server.thread_stats.len()];
    for client in server.clients.all() {
        if let Some(n) = connections.get_mut(client.worker) {
            *n += 1;
        }
    }
    for (i, s) in server.thread_stats.iter().enumerate() {
        let pairs = labels(&[("thread", &i.to_string())]);
        let read = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
        let busy = read(&s.busy_usec) as f64 / 1e6;
        let rows: [(&str, &'static str, &str, String); 4] = [
            (
                "kvik_thread_commands_total",
                COUNTER,
                "Commands run, by server thread.",
                read(&s.commands).to_string(),
            ),
            (
                "kvik_thread_busy_seconds_total",
                COUNTER,
                "Seconds each server thread's event loop spent awake.",
                busy.to_string(),
            ),
            (
                "kvik_thread_connections",
                GAUGE,
                "Client connections, by the server thread that serves them.",
                connections[i].to_string(),
            ),
            (
                "kvik_thread_connections_received_total",
                COUNTER,
                "Connections accepted, by server thread.",
                read(&s.connections_received).to_string(),
            ),
        ];
        for (name, kind, help, value) in rows {
            page.add(name, kind, help, &pairs, value);
        }
    }
}

/// Per-command latency histograms, summed over the threads.
fn latencies(server: &Server, fields: &[(&str, &str)], page: &mut Page) {
    let name = "kvik_command_latency_seconds";
    let help = "Time to run each command, as INFO latencystats measures it.";
    for (id, cmd) in commands::registry().iter() {
        let Some(counts) = stats::merged_latency(&server.thread_stats, id) else {
            continue;
        };
        let usec = field(fields, &format!("cmdstat_{}", cmd.name))
            .and_then(|line| attribute(line, "usec"))
            .and_then(|u| u.parse::<f64>().ok())
            .unwrap_or(0.0);
        for exponent in LATENCY_EXPONENTS {
            let le = format!("{:e}", (1u64 << exponent) as f64 / 1e9);
            let pairs = labels(&[("cmd", cmd.name), ("le", &le)]);
            let below = stats::count_below_power_of_two(&counts, exponent);
            page.add_part(name, HISTOGRAM, help, "_bucket", &pairs, below.to_string());
        }
        let total: u64 = counts.iter().sum();
        let all = labels(&[("cmd", cmd.name), ("le", "+Inf")]);
        page.add_part(name, HISTOGRAM, help, "_bucket", &all, total.to_string());
        let pairs = labels(&[("cmd", cmd.name)]);
        let seconds = (usec / 1e6).to_string();
        page.add_part(name, HISTOGRAM, help, "_sum", &pairs, seconds);
        page.add_part(name, HISTOGRAM, help, "_count", &pairs, total.to_string());
    }
}
