//! The parameter table: the single source of truth for every directive kvik
//! accepts. One `params!` entry declares the typed field of [`Config`], the
//! directive name and its alias, flags, the default (as CONFIG GET prints it),
//! the value type with its bounds, and one line of documentation. The macro
//! generates the struct, and for each entry a getter/setter pair (plain `fn`
//! pointers) that the loader, CONFIG GET/SET/REWRITE and the docs all use.

use crate::parse::{fmt_bool, parse_bool, parse_i64, parse_memory, ERR_BOOL, ERR_INT, ERR_MEMORY};
use crate::special::*;

/// The parameter cannot be changed by CONFIG SET.
pub const IMMUTABLE: u16 = 1 << 0;
/// CONFIG SET refuses it unless `enable-protected-configs` allows it.
pub const PROTECTED: u16 = 1 << 1;
/// Holds a secret (passwords): never to be logged or shown in SLOWLOG/MONITOR.
pub const SENSITIVE: u16 = 1 << 2;
/// Not listed by CONFIG GET with a pattern; only an exact name shows it.
pub const HIDDEN: u16 = 1 << 3;
/// Takes several arguments (`save 3600 1 300 100`); a single non-empty
/// argument is split on spaces.
pub const MULTI_ARG: u16 = 1 << 4;
/// A KeyDB extension (not in Redis 7.0).
pub const KEYDB: u16 = 1 << 5;
/// kvik honours this parameter today. Parameters without it are accepted,
/// stored, shown and rewritten for compatibility, but have no effect yet.
pub const LIVE: u16 = 1 << 6;
/// The default depends on the machine (cwd, CPU count); `default` describes it.
pub const DYNAMIC_DEFAULT: u16 = 1 << 7;
/// kvik works as the default says and cannot do otherwise: any other value is
/// refused, at start-up and by CONFIG SET, with an error saying kvik does not
/// support it (so a configuration that sets the default still loads).
pub const ONLY_DEFAULT: u16 = 1 << 8;
/// A hint about the platform that kvik's design has no use for: accepted, and named
/// in a start-up warning when the configuration sets it (`doc` says why).
pub const NO_EFFECT: u16 = 1 << 9;

/// The type of a parameter's value, with its bounds.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// `yes` / `no`.
    Bool,
    /// A decimal integer in `[min, max]`.
    Int { min: i64, max: i64 },
    /// An octal integer in `[min, max]` (e.g. `unixsocketperm 700`).
    Octal { min: i64, max: i64 },
    /// A byte count with optional unit (`k`, `kb`, `m`, `mb`, `g`, `gb`).
    Memory { min: u64, max: u64 },
    /// One of a fixed set of words, case-insensitive.
    Enum(&'static [&'static str]),
    /// A free string.
    String,
    /// Its own syntax, described in words.
    Special(&'static str),
}

pub type Getter = fn(&Config) -> String;
pub type Setter = fn(&mut Config, &[String]) -> Result<(), String>;

/// One configuration parameter.
pub struct Param {
    /// Canonical name (what CONFIG REWRITE writes).
    pub name: &'static str,
    /// Other accepted name (Redis's `slave*` and `*-ziplist-*`, or `io-threads`).
    pub alias: Option<&'static str>,
    /// Bit set of the flag constants of this module.
    pub flags: u16,
    /// Value type and bounds.
    pub kind: Kind,
    /// Default, as CONFIG GET prints it (a description when DYNAMIC_DEFAULT).
    pub default: &'static str,
    /// One line of meaning.
    pub doc: &'static str,
    pub(crate) get: Getter,
    pub(crate) set: Setter,
}

impl Param {
    pub fn has(&self, flag: u16) -> bool {
        self.flags & flag != 0
    }

    /// The current value of this parameter in `cfg`, as CONFIG GET prints it.
    pub fn value(&self, cfg: &Config) -> String {
        (self.get)(cfg)
    }

    /// Set this parameter in `cfg` from its arguments: the value's own checks, then
    /// kvik's (an [`ONLY_DEFAULT`] parameter takes no value but its default).
    pub fn assign(&self, cfg: &mut Config, args: &[String]) -> Result<(), String> {
        (self.set)(cfg, args)?;
        if self.has(ONLY_DEFAULT) {
            let value = (self.get)(cfg);
            if value != self.default {
                return Err(format!(
                    "kvik does not support {} '{value}' (only its default, '{}')",
                    self.name, self.default
                ));
            }
        }
        Ok(())
    }

    /// The start-up warning a configuration that sets a [`NO_EFFECT`] parameter gets.
    pub fn no_effect_warning(&self) -> String {
        format!(
            "WARNING: '{}' has no effect in kvik: {}",
            self.name, self.doc
        )
    }
}

impl std::fmt::Debug for Param {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Param")
            .field("name", &self.name)
            .field("alias", &self.alias)
            .finish()
    }
}

/// Finds a parameter by name or alias, case-insensitively. The boolean tells
/// whether `name` matched the alias.
pub fn lookup(name: &str) -> Option<(&'static Param, bool)> {
    PARAMS.iter().find_map(|p| {
        if p.name.eq_ignore_ascii_case(name) {
            Some((p, false))
        } else if p.alias.is_some_and(|a| a.eq_ignore_ascii_case(name)) {
            Some((p, true))
        } else {
            None
        }
    })
}

pub(crate) fn single(args: &[String]) -> Result<&str, String> {
    match args {
        [one] => Ok(one.as_str()),
        _ => Err("wrong number of arguments".to_string()),
    }
}

pub(crate) fn int_in(args: &[String], min: i64, max: i64) -> Result<i64, String> {
    let v = parse_i64(single(args)?).ok_or(ERR_INT)?;
    if v < min || v > max {
        return Err(format!(
            "argument must be between {min} and {max} inclusive"
        ));
    }
    Ok(v)
}

pub(crate) fn octal_in(args: &[String], min: i64, max: i64) -> Result<i64, String> {
    let s = single(args)?;
    let v = if !s.is_empty() && s.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        i64::from_str_radix(s, 8).ok()
    } else {
        None
    };
    let v = v.ok_or("argument couldn't be parsed as an octal number")?;
    if v < min || v > max {
        return Err(format!(
            "argument must be between {min} and {max} inclusive"
        ));
    }
    Ok(v)
}

pub(crate) fn memory_in(args: &[String], min: u64, max: u64) -> Result<u64, String> {
    let v = parse_memory(single(args)?).ok_or(ERR_MEMORY)?;
    if v < min || v > max {
        return Err(format!(
            "argument must be between {min} and {max} inclusive"
        ));
    }
    Ok(v)
}

pub(crate) fn enum_in(
    args: &[String],
    options: &'static [&'static str],
) -> Result<&'static str, String> {
    let s = single(args)?;
    options
        .iter()
        .find(|o| o.eq_ignore_ascii_case(s))
        .copied()
        .ok_or_else(|| {
            format!(
                "argument(s) must be one of the following: {}",
                options.join(", ")
            )
        })
}

pub(crate) fn bool_of(args: &[String]) -> Result<bool, String> {
    parse_bool(single(args)?).ok_or_else(|| ERR_BOOL.to_string())
}

macro_rules! params {
    ( $( $field:ident : $ty:ty = $kind:ident $( ( $($karg:expr),* ) )? ,
         $name:literal $( | $alias:literal )? , $flags:expr , $default:literal , $doc:literal ; )* ) => {
        /// Every configuration parameter, typed. Field names follow the
        /// directive names with `-` replaced by `_`. See `docs/configuration.md`.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Config {
            $( #[doc = $doc] pub $field: $ty, )*
            /// `rename-command` directives in order: (command, new name; empty = disabled).
            pub rename_commands: Vec<(String, String)>,
            /// `user` directives (ACL rules), each the arguments after `user`.
            pub users: Vec<Vec<String>>,
            /// `loadmodule` directives, each the arguments after `loadmodule`.
            pub loadmodules: Vec<Vec<String>>,
        }

        impl Config {
            /// All fields zero/empty: the base the table defaults are applied to.
            pub(crate) fn blank() -> Config {
                Config {
                    $( $field: Default::default(), )*
                    rename_commands: Vec::new(),
                    users: Vec::new(),
                    loadmodules: Vec::new(),
                }
            }
        }

        /// The table, in alphabetical order of canonical name.
        pub static PARAMS: &[Param] = &[ $(
            Param {
                name: $name,
                alias: params!(@alias $($alias)?),
                flags: $flags,
                kind: params!(@kind $kind $( ( $($karg),* ) )?),
                default: $default,
                doc: $doc,
                get: params!(@get $field, $kind $( ( $($karg),* ) )?),
                set: params!(@set $field, $ty, $kind $( ( $($karg),* ) )?),
            },
        )* ];
    };

    (@alias) => { None };
    (@alias $a:literal) => { Some($a) };

    (@kind Bool) => { Kind::Bool };
    (@kind Int($min:expr, $max:expr)) => { Kind::Int { min: $min, max: $max } };
    (@kind Octal($min:expr, $max:expr)) => { Kind::Octal { min: $min, max: $max } };
    (@kind Mem($min:expr, $max:expr)) => { Kind::Memory { min: $min, max: $max } };
    (@kind Enum($opts:expr)) => { Kind::Enum($opts) };
    (@kind Str) => { Kind::String };
    (@kind StrV($v:expr)) => { Kind::String };
    (@kind OptStr) => { Kind::String };
    (@kind Special($g:expr, $s:expr, $d:expr)) => { Kind::Special($d) };

    (@get $f:ident, Bool) => { |c: &Config| fmt_bool(c.$f) };
    (@get $f:ident, Int($min:expr, $max:expr)) => { |c: &Config| c.$f.to_string() };
    (@get $f:ident, Octal($min:expr, $max:expr)) => { |c: &Config| format!("{:o}", c.$f) };
    (@get $f:ident, Mem($min:expr, $max:expr)) => { |c: &Config| c.$f.to_string() };
    (@get $f:ident, Enum($opts:expr)) => { |c: &Config| c.$f.clone() };
    (@get $f:ident, Str) => { |c: &Config| c.$f.clone() };
    (@get $f:ident, StrV($v:expr)) => { |c: &Config| c.$f.clone() };
    (@get $f:ident, OptStr) => { |c: &Config| c.$f.clone().unwrap_or_default() };
    (@get $f:ident, Special($g:expr, $s:expr, $d:expr)) => { $g };

    (@set $f:ident, $ty:ty, Bool) => {
        |c: &mut Config, a: &[String]| -> Result<(), String> { c.$f = bool_of(a)?; Ok(()) }
    };
    (@set $f:ident, $ty:ty, Int($min:expr, $max:expr)) => {
        |c: &mut Config, a: &[String]| -> Result<(), String> {
            c.$f = int_in(a, $min, $max)? as $ty;
            Ok(())
        }
    };
    (@set $f:ident, $ty:ty, Octal($min:expr, $max:expr)) => {
        |c: &mut Config, a: &[String]| -> Result<(), String> {
            c.$f = octal_in(a, $min, $max)? as $ty;
            Ok(())
        }
    };
    (@set $f:ident, $ty:ty, Mem($min:expr, $max:expr)) => {
        |c: &mut Config, a: &[String]| -> Result<(), String> { c.$f = memory_in(a, $min, $max)?; Ok(()) }
    };
    (@set $f:ident, $ty:ty, Enum($opts:expr)) => {
        |c: &mut Config, a: &[String]| -> Result<(), String> { c.$f = enum_in(a, $opts)?.to_string(); Ok(()) }
    };
    (@set $f:ident, $ty:ty, Str) => {
        |c: &mut Config, a: &[String]| -> Result<(), String> { c.$f = single(a)?.to_string(); Ok(()) }
    };
    (@set $f:ident, $ty:ty, StrV($v:expr)) => {
        |c: &mut Config, a: &[String]| -> Result<(), String> {
            let s = single(a)?;
            ($v)(s)?;
            c.$f = s.to_string();
            Ok(())
        }
    };
    (@set $f:ident, $ty:ty, OptStr) => {
        |c: &mut Config, a: &[String]| -> Result<(), String> {
            let s = single(a)?;
            c.$f = if s.is_empty() { None } else { Some(s.to_string()) };
            Ok(())
        }
    };
    (@set $f:ident, $ty:ty, Special($g:expr, $s:expr, $d:expr)) => { $s };
}

const LL: i64 = i64::MAX;
const ULL: u64 = u64::MAX;
const LLM: u64 = i64::MAX as u64;
const INT: i64 = i32::MAX as i64;
const INT_MIN: i64 = i32::MIN as i64;
const UINT: i64 = u32::MAX as i64;
const PORT: i64 = 65535;

const IMM: u16 = IMMUTABLE;
const PROT: u16 = PROTECTED;
const SENS: u16 = SENSITIVE;
const HID: u16 = HIDDEN;
const MULTI: u16 = MULTI_ARG;
const KDB: u16 = KEYDB;
const DYN: u16 = DYNAMIC_DEFAULT;
const OD: u16 = ONLY_DEFAULT;
const NOEFF: u16 = NO_EFFECT;

const YES_NO_LOCAL: &[&str] = &["no", "yes", "local"];

params! {
    acl_pubsub_default: String = Enum(&["allchannels", "resetchannels"]),
        "acl-pubsub-default", LIVE, "resetchannels", "Default Pub/Sub channel permission of new ACL users.";
    aclfile: String = Str,
        "aclfile", IMM | LIVE, "", "External ACL users file.";
    acllog_max_len: u64 = Int(0, LL),
        "acllog-max-len", LIVE, "128", "Maximum entries kept in the ACL LOG.";
    active_client_balancing: bool = Bool,
        "active-client-balancing", KDB | OD, "yes", "Spread new connections evenly over the server threads (kvik deals them round-robin; `no` is not supported).";
    active_defrag_cycle_max: u32 = Int(1, 99),
        "active-defrag-cycle-max", LIVE, "25", "Maximum CPU percent spent on active defragmentation (reached at the upper threshold).";
    active_defrag_cycle_min: u32 = Int(1, 99),
        "active-defrag-cycle-min", LIVE, "1", "Minimum CPU percent spent on active defragmentation (at the lower threshold).";
    active_defrag_ignore_bytes: u64 = Mem(1, LLM),
        "active-defrag-ignore-bytes", LIVE, "104857600", "Fragmentation waste (allocator active minus allocated bytes) below which defragmentation does not start.";
    active_defrag_max_scan_fields: u64 = Int(1, LL),
        "active-defrag-max-scan-fields", LIVE, "1000", "Collections larger than this are defragmented in a separate step (kvik moves a key's entry, its string and its collection's top-level box: constant work per key, never more fields than this).";
    active_defrag_threshold_lower: u32 = Int(0, 1000),
        "active-defrag-threshold-lower", LIVE, "10", "Fragmentation percent at which defragmentation starts.";
    active_defrag_threshold_upper: u32 = Int(0, 1000),
        "active-defrag-threshold-upper", LIVE, "100", "Fragmentation percent at which maximum effort is used.";
    active_expire_effort: u32 = Int(1, 10),
        "active-expire-effort", LIVE, "1", "Effort (1-10) of the active expiry cycle: its share of each tick is 25% + 2% per step above 1, as in Redis.";
    active_replica: bool = Bool,
        "active-replica", IMM | KDB | LIVE, "no", "A replica accepts writes and sends them to its masters (active-active); conflicts resolve by last writer, counters add up.";
    active_replica_tombstones_max_memory: u64 = Mem(0, ULL),
        "active-replica-tombstones-max-memory", LIVE, "0", "Memory an active replica's tombstones may take (0 = no limit). Beyond it each shard forgets its oldest tombstones and drops, as deleted, a peer's write older than them to a key it does not hold (see docs/architecture.md for what that costs a peer away that long).";
    activedefrag: bool = Bool,
        "activedefrag", LIVE, "no", "Enable active memory defragmentation: allocations in under-used jemalloc slabs are moved (jemalloc's utilization query) by an incremental walk of the keyspace.";
    activerehashing: bool = Bool,
        "activerehashing", OD, "yes", "Rehash hash tables incrementally in the background (kvik's shard tables rehash as they grow; `no` is not supported).";
    always_show_logo: bool = Bool,
        "always-show-logo", IMM | LIVE, "no", "Print the ASCII logo at startup even when not logging to a terminal.";
    aof_disable_auto_gc: bool = Bool,
        "aof-disable-auto-gc", LIVE, "no", "Keep history AOF files after a rewrite instead of deleting them.";
    aof_load_truncated: bool = Bool,
        "aof-load-truncated", LIVE, "yes", "Load an AOF whose last command is truncated (dropping it) instead of refusing to start.";
    aof_rewrite_cpulist: String = Str,
        "aof_rewrite_cpulist", IMM, "", "CPU list for the AOF rewrite task.";
    aof_rewrite_incremental_fsync: bool = Bool,
        "aof-rewrite-incremental-fsync", LIVE, "yes", "fsync every 4 MB while writing an AOF base file.";
    aof_timestamp_enabled: bool = Bool,
        "aof-timestamp-enabled", LIVE, "no", "Write timestamp annotations into the AOF.";
    aof_use_rdb_preamble: bool = Bool,
        "aof-use-rdb-preamble", LIVE, "yes", "AOF rewrite writes the base file in RDB format (`no`: as the commands that rebuild the dataset, `.base.aof`).";
    appenddirname: String = StrV(check_appenddirname),
        "appenddirname", IMM | LIVE, "appendonlydir", "Directory (inside dir) holding the multi-part AOF files.";
    appendfilename: String = StrV(check_appendfilename),
        "appendfilename", IMM | LIVE, "appendonly.aof", "Base name of the AOF files.";
    appendfsync: String = Enum(&["everysec", "always", "no"]),
        "appendfsync", LIVE, "everysec", "When the AOF is fsynced: after every write, every second, or never.";
    appendonly: bool = Bool,
        "appendonly", LIVE, "no", "Enable the append-only file.";
    auto_aof_rewrite_min_size: u64 = Mem(0, LLM),
        "auto-aof-rewrite-min-size", LIVE, "67108864", "Minimum AOF size before an automatic rewrite.";
    auto_aof_rewrite_percentage: u32 = Int(0, INT),
        "auto-aof-rewrite-percentage", LIVE, "100", "AOF growth percent that triggers an automatic rewrite (0 = never).";
    bgsave_cpulist: String = Str,
        "bgsave_cpulist", IMM | LIVE, "", "CPUs the saver thread (BGSAVE, save points) runs on, e.g. `1,10-11` or `0-7:2`.";
    bind: Vec<String> = Special(get_bind, set_bind, "address list"),
        "bind", MULTI | LIVE, "* -::*", "Addresses to listen on (`-` prefix: skip if unavailable; `*` all IPv4, `::*` all IPv6).";
    bind_source_addr: String = Str,
        "bind-source-addr", LIVE, "", "Source address for outgoing replication connections.";
    bio_cpulist: String = Str,
        "bio_cpulist", IMM | LIVE, "", "CPUs the background threads (the lazyfree thread) run on.";
    busy_reply_threshold: u64 = Int(0, LL),
        "busy-reply-threshold" | "lua-time-limit", LIVE, "5000", "Milliseconds a script or function may run before other clients get BUSY.";
    client_output_buffer_limit: [ClientBufferLimit; 3] = Special(get_cobl, set_cobl, "class hard soft seconds ..."),
        "client-output-buffer-limit", MULTI | LIVE, "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        "Output buffer limits per client class (normal, replica, pubsub): hard bytes, soft bytes, soft seconds.";
    client_query_buffer_limit: u64 = Mem(1024 * 1024, LLM),
        "client-query-buffer-limit", LIVE, "1073741824", "Maximum size of a client's query buffer.";
    cluster_allow_pubsubshard_when_down: bool = Bool,
        "cluster-allow-pubsubshard-when-down", 0, "yes", "Serve sharded Pub/Sub while the cluster is down.";
    cluster_allow_reads_when_down: bool = Bool,
        "cluster-allow-reads-when-down", 0, "no", "Serve reads while the cluster is down.";
    cluster_allow_replica_migration: bool = Bool,
        "cluster-allow-replica-migration", 0, "yes", "Replicas may migrate to orphaned masters.";
    cluster_announce_bus_port: u16 = Int(0, PORT),
        "cluster-announce-bus-port", 0, "0", "Cluster bus port announced to peers.";
    cluster_announce_hostname: String = Str,
        "cluster-announce-hostname", 0, "", "Hostname announced to cluster peers.";
    cluster_announce_ip: String = Str,
        "cluster-announce-ip", 0, "", "IP announced to cluster peers.";
    cluster_announce_port: u16 = Int(0, PORT),
        "cluster-announce-port", 0, "0", "Client port announced to cluster peers.";
    cluster_announce_tls_port: u16 = Int(0, PORT),
        "cluster-announce-tls-port", 0, "0", "TLS port announced to cluster peers.";
    cluster_config_file: String = Str,
        "cluster-config-file", IMM, "nodes.conf", "File where the cluster state is saved.";
    cluster_enabled: bool = Bool,
        "cluster-enabled", IMM, "no", "Run in cluster mode.";
    cluster_link_sendbuf_limit: u64 = Mem(0, ULL),
        "cluster-link-sendbuf-limit", 0, "0", "Send buffer limit of a cluster bus link (0 = none).";
    cluster_migration_barrier: u32 = Int(0, INT),
        "cluster-migration-barrier", 0, "1", "Replicas a master keeps before one may migrate.";
    cluster_node_timeout: u64 = Int(0, LL),
        "cluster-node-timeout", 0, "15000", "Milliseconds before a cluster node is considered failing.";
    cluster_port: u16 = Int(0, PORT),
        "cluster-port", IMM, "0", "Cluster bus port (0 = port + 10000).";
    cluster_preferred_endpoint_type: String = Enum(&["ip", "hostname", "unknown-endpoint"]),
        "cluster-preferred-endpoint-type", 0, "ip", "Endpoint type shown in redirections and CLUSTER SLOTS.";
    cluster_replica_no_failover: bool = Bool,
        "cluster-replica-no-failover" | "cluster-slave-no-failover", 0, "no", "This replica never fails over its master automatically.";
    cluster_replica_validity_factor: u32 = Int(0, INT),
        "cluster-replica-validity-factor" | "cluster-slave-validity-factor", 0, "10", "Maximum disconnection (in node timeouts) for a replica to fail over.";
    cluster_require_full_coverage: bool = Bool,
        "cluster-require-full-coverage", 0, "yes", "Stop serving when some hash slots are not covered.";
    crash_log_enabled: bool = Bool,
        "crash-log-enabled", LIVE, "yes", "Write a crash report to the log on a fatal error.";
    crash_memcheck_enabled: bool = Bool,
        "crash-memcheck-enabled", NOEFF, "yes", "Run a memory test as part of the crash report (kvik's crash report has none).";
    daemonize: bool = Bool,
        "daemonize", IMM | LIVE, "no", "Run as a daemon in the background.";
    databases: usize = Int(1, INT),
        "databases", IMM | LIVE, "16", "Number of logical databases.";
    dbfilename: String = StrV(check_dbfilename),
        "dbfilename", PROT | LIVE, "dump.rdb", "Name of the RDB file.";
    dir: String = Special(get_dir, set_dir, "existing directory"),
        "dir", PROT | DYN | LIVE, "current directory", "Working directory: RDB, AOF and other files go here (shown absolute).";
    disable_thp: bool = Bool,
        "disable-thp", IMM | LIVE, "yes", "Disable transparent huge pages for the process (prctl PR_SET_THP_DISABLE).";
    dynamic_hz: bool = Bool,
        "dynamic-hz", LIVE, "yes", "Raise hz temporarily with many clients (doubling while over 200 clients per tick, up to 500).";
    enable_debug_command: String = Enum(YES_NO_LOCAL),
        "enable-debug-command", IMM | LIVE, "no", "Allow DEBUG: no, yes, or local (only from loopback/unix socket).";
    enable_module_command: String = Enum(YES_NO_LOCAL),
        "enable-module-command", IMM | LIVE, "no", "Allow MODULE LOAD/LOADEX/UNLOAD: no, yes, or local (kvik loads no modules).";
    enable_protected_configs: String = Enum(YES_NO_LOCAL),
        "enable-protected-configs", IMM | LIVE, "no", "Allow CONFIG SET of protected parameters (dir, dbfilename): no, yes, or local.";
    hash_max_listpack_entries: u64 = Int(0, LL),
        "hash-max-listpack-entries" | "hash-max-ziplist-entries", LIVE, "512", "Hashes with at most this many fields use the compact encoding.";
    hash_max_listpack_value: u64 = Mem(0, LLM),
        "hash-max-listpack-value" | "hash-max-ziplist-value", LIVE, "64", "Hashes whose values are at most this long use the compact encoding.";
    hll_sparse_max_bytes: u64 = Mem(0, LLM),
        "hll-sparse-max-bytes", LIVE, "3000", "HyperLogLog sparse representation size limit.";
    hz: u32 = Int(0, INT),
        "hz", LIVE, "10", "Frequency of background tasks per second (kept within 1..500).";
    ignore_warnings: String = Str,
        "ignore-warnings", LIVE, "", "Start-up warnings to silence (kvik gives none of those Redis names: ARM64-COW-BUG is about fork, which kvik does not use).";
    io_threads_do_reads: bool = Bool,
        "io-threads-do-reads", IMM | NOEFF, "no", "Let I/O threads read and parse too (every kvik server thread reads, parses and runs its own connections' commands).";
    jemalloc_bg_thread: bool = Bool,
        "jemalloc-bg-thread", LIVE, "yes", "Let jemalloc purge memory from a background thread.";
    key_load_delay: i32 = Int(INT_MIN, INT),
        "key-load-delay", HID | LIVE, "0", "Testing: microseconds of delay per key loaded from an RDB (negative: one microsecond every that many keys).";
    latency_monitor_threshold: u64 = Int(0, LL),
        "latency-monitor-threshold", LIVE, "0", "Milliseconds above which events are recorded by the latency monitor (0 = off).";
    latency_tracking: bool = Bool,
        "latency-tracking", LIVE, "yes", "Track per-command latency percentiles.";
    latency_tracking_info_percentiles: Vec<f64> = Special(get_percentiles, set_percentiles, "list of percentiles"),
        "latency-tracking-info-percentiles", MULTI | LIVE, "50 99 99.9", "Percentiles reported in INFO latencystats.";
    lazyfree_lazy_eviction: bool = Bool,
        "lazyfree-lazy-eviction", LIVE, "no", "Free evicted values in the background.";
    lazyfree_lazy_expire: bool = Bool,
        "lazyfree-lazy-expire", LIVE, "no", "Free expired values in the background.";
    lazyfree_lazy_server_del: bool = Bool,
        "lazyfree-lazy-server-del", LIVE, "no", "Free values deleted implicitly (overwrite, RENAME) in the background.";
    lazyfree_lazy_user_del: bool = Bool,
        "lazyfree-lazy-user-del", LIVE, "no", "DEL behaves like UNLINK.";
    lazyfree_lazy_user_flush: bool = Bool,
        "lazyfree-lazy-user-flush", LIVE, "no", "FLUSHDB/FLUSHALL without ASYNC or SYNC free in the background.";
    lfu_decay_time: u32 = Int(0, INT),
        "lfu-decay-time", LIVE, "1", "Minutes after which an LFU counter is halved.";
    lfu_log_factor: u32 = Int(0, INT),
        "lfu-log-factor", LIVE, "10", "Logarithmic factor of the LFU counter.";
    list_compress_depth: u32 = Int(0, INT),
        "list-compress-depth", LIVE, "0", "List nodes left uncompressed at each end; the ones between are held LZF-compressed (0 = no compression). A change applies to the nodes written next.";
    list_max_listpack_size: i32 = Int(INT_MIN, INT),
        "list-max-listpack-size" | "list-max-ziplist-size", LIVE, "-2", "Size of a list node: entries (positive) or -1..-5 for 4..64 KB.";
    loading_process_events_interval_bytes: u32 = Int(1024, INT),
        "loading-process-events-interval-bytes", HID | LIVE, "2097152", "Bytes loaded between the moments a load lets other threads at the keyspace (clients get -LOADING meanwhile; INFO and the other commands allowed while loading are answered).";
    logfile: String = Str,
        "logfile", IMM | LIVE, "", "Log file path; empty logs to standard output.";
    loglevel: String = Enum(&["debug", "verbose", "notice", "warning"]),
        "loglevel", LIVE, "notice", "Log verbosity: debug, verbose, notice or warning.";
    lua_enable_deprecated_api: bool = Bool,
        "lua-enable-deprecated-api", IMM | HID | OD, "no", "Expose deprecated Lua globals to scripts.";
    masterauth: Option<String> = OptStr,
        "masterauth", SENS | LIVE, "", "Password used to authenticate with the master.";
    masteruser: Option<String> = OptStr,
        "masteruser", LIVE, "", "User name used to authenticate with the master.";
    maxclients: u64 = Int(1, UINT),
        "maxclients", LIVE, "10000", "Maximum number of connected clients.";
    maxmemory: u64 = Mem(0, ULL),
        "maxmemory", LIVE, "0", "Memory limit for data (0 = none); beyond it maxmemory-policy applies.";
    maxmemory_clients: MaxmemoryClients = Special(get_maxmemory_clients, set_maxmemory_clients, "memory or percent"),
        "maxmemory-clients", LIVE, "0", "Total client memory limit, in bytes or as a percent of maxmemory (0 = none).";
    maxmemory_eviction_tenacity: u32 = Int(0, 100),
        "maxmemory-eviction-tenacity", LIVE, "10", "How hard eviction works per command (0-100).";
    maxmemory_policy: String = Enum(&["volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"]),
        "maxmemory-policy", LIVE, "noeviction", "What to evict when maxmemory is reached.";
    maxmemory_samples: u32 = Int(1, INT),
        "maxmemory-samples", LIVE, "5", "Keys sampled per eviction.";
    metrics_bind: String = Str,
        "metrics-bind", IMM | LIVE, "127.0.0.1", "Address the Prometheus `/metrics` endpoint listens on (a kvik extension).";
    metrics_port: u16 = Int(0, PORT),
        "metrics-port", IMM | LIVE, "0", "TCP port of the Prometheus `/metrics` endpoint (0 = off; a kvik extension).";
    min_clients_per_thread: u32 = Int(0, INT),
        "min-clients-per-thread", KDB | NOEFF, "20", "Clients a thread takes before new connections go to other threads (kvik deals every connection round-robin).";
    min_replicas_max_lag: u32 = Int(0, INT),
        "min-replicas-max-lag" | "min-slaves-max-lag", LIVE, "10", "Seconds of lag under which a replica counts for min-replicas-to-write.";
    min_replicas_to_write: u32 = Int(0, INT),
        "min-replicas-to-write" | "min-slaves-to-write", LIVE, "0", "Refuse writes with fewer good replicas than this (0 = off).";
    multi_master: bool = Bool,
        "multi-master", IMM | KDB | LIVE, "no", "Allow several replicaof masters at once.";
    multi_master_no_forward: bool = Bool,
        "multi-master-no-forward", KDB | LIVE, "no", "Do not forward writes received from one master to the others.";
    no_appendfsync_on_rewrite: bool = Bool,
        "no-appendfsync-on-rewrite", LIVE, "no", "Skip AOF fsync while a rewrite or save runs.";
    notify_keyspace_events: u32 = Special(get_notify, set_notify, "event class letters"),
        "notify-keyspace-events", LIVE, "", "Keyspace notification classes (letters of Ag$lshzxeKEtmdn).";
    oom_score_adj: String = Special(get_oom_score_adj, set_oom_score_adj, "no|yes|relative|absolute"),
        "oom-score-adj", LIVE, "no", "Adjust the process oom_score_adj: no, yes/relative, absolute.";
    oom_score_adj_values: [i32; 3] = Special(get_oom_values, set_oom_values, "three integers"),
        "oom-score-adj-values", MULTI | LIVE, "0 200 800", "oom_score_adj for master, replica and background child.";
    pidfile: String = Str,
        "pidfile", IMM | LIVE, "", "File the process id is written to.";
    port: u16 = Int(0, PORT),
        "port", LIVE, "6379", "TCP port to listen on (0 = none).";
    proc_title_template: String = StrV(check_proc_title),
        "proc-title-template", LIVE, "{title} {listen-addr} {server-mode}", "Template of the process title.";
    propagation_error_behavior: String = Enum(&["ignore", "panic", "panic-on-replicas"]),
        "propagation-error-behavior", LIVE, "ignore", "When a command from the master's stream or the AOF gets an error (logged and counted in unexpected_error_replies): go on (`ignore`), stop the process (`panic`), or stop only for a read-only replica's master stream (`panic-on-replicas`).";
    protected_mode: bool = Bool,
        "protected-mode", LIVE, "yes", "Without password and explicit bind, accept only loopback clients.";
    proto_max_bulk_len: u64 = Mem(1024 * 1024, LLM),
        "proto-max-bulk-len", LIVE, "536870912", "Maximum size of one bulk string in a request.";
    rdb_del_sync_files: bool = Bool,
        "rdb-del-sync-files", LIVE, "no", "Delete RDB files used only for replication when persistence is off (a replica's loaded sync file; a master's sync file is always temporary).";
    rdb_key_save_delay: i32 = Int(INT_MIN, INT),
        "rdb-key-save-delay", HID | LIVE, "0", "Testing: microseconds of delay per key saved (negative: one microsecond every that many keys).";
    rdb_save_incremental_fsync: bool = Bool,
        "rdb-save-incremental-fsync", LIVE, "yes", "fsync every 4 MB while saving an RDB.";
    rdbchecksum: bool = Bool,
        "rdbchecksum", IMM | LIVE, "yes", "Write and check the CRC64 of RDB files.";
    rdbcompression: bool = Bool,
        "rdbcompression", LIVE, "yes", "Compress strings in RDB files with LZF.";
    repl_backlog_size: u64 = Mem(1, LLM),
        "repl-backlog-size", LIVE, "1048576", "Size of the replication backlog (at least 16kb).";
    repl_backlog_ttl: u64 = Int(0, LL),
        "repl-backlog-ttl", LIVE, "3600", "Seconds without replicas after which the backlog is freed.";
    repl_disable_tcp_nodelay: bool = Bool,
        "repl-disable-tcp-nodelay", LIVE, "no", "Disable TCP_NODELAY on replica links.";
    repl_diskless_load: String = Enum(&["disabled", "on-empty-db", "swapdb"]),
        "repl-diskless-load", LIVE, "disabled", "How a replica loads a full sync: into a file first (`disabled`), from the socket when it has no key (`on-empty-db`), or from the socket beside the served dataset, swapped in when complete and kept on failure (`swapdb`).";
    repl_diskless_sync: bool = Bool,
        "repl-diskless-sync", LIVE, "yes", "Send full syncs straight to the replica socket.";
    repl_diskless_sync_delay: u32 = Int(0, INT),
        "repl-diskless-sync-delay", LIVE, "5", "Seconds a diskless sync waits for more replicas, which then share its one snapshot.";
    repl_diskless_sync_max_replicas: u32 = Int(0, INT),
        "repl-diskless-sync-max-replicas", LIVE, "0", "Start a diskless sync before its delay once this many replicas wait (0 = off).";
    repl_ping_replica_period: u32 = Int(1, INT),
        "repl-ping-replica-period" | "repl-ping-slave-period", LIVE, "10", "Seconds between pings from master to replicas.";
    repl_timeout: u32 = Int(1, INT),
        "repl-timeout", LIVE, "60", "Replication timeout in seconds.";
    replica_announce_ip: String = Str,
        "replica-announce-ip" | "slave-announce-ip", LIVE, "", "IP a replica announces to its master.";
    replica_announce_port: u16 = Int(0, PORT),
        "replica-announce-port" | "slave-announce-port", LIVE, "0", "Port a replica announces to its master.";
    replica_announced: bool = Bool,
        "replica-announced", LIVE, "yes", "Whether Sentinel should list this replica.";
    replica_ignore_disk_write_errors: bool = Bool,
        "replica-ignore-disk-write-errors", LIVE, "no", "A replica that cannot persist applies its master's writes with a warning; `no`: it stops the process on such a write.";
    replica_ignore_maxmemory: bool = Bool,
        "replica-ignore-maxmemory" | "slave-ignore-maxmemory", 0, "yes", "A replica does not evict on its own.";
    replica_lazy_flush: bool = Bool,
        "replica-lazy-flush" | "slave-lazy-flush", LIVE, "no", "A replica flushes its old data in the background on full sync.";
    replica_priority: u32 = Int(0, INT),
        "replica-priority" | "slave-priority", LIVE, "100", "Sentinel promotion priority (lower first, 0 = never).";
    replica_quorum: i32 = Int(-1, INT),
        "replica-quorum", KDB, "-1", "Masters that must acknowledge before a multi-master replica serves (-1 = all).";
    replica_read_only: bool = Bool,
        "replica-read-only" | "slave-read-only", LIVE, "yes", "Replicas refuse writes from clients.";
    replica_serve_stale_data: bool = Bool,
        "replica-serve-stale-data" | "slave-serve-stale-data", LIVE, "yes", "A replica serves possibly stale data while out of sync.";
    replica_weighting_factor: u32 = Int(1, INT),
        "replica-weighting-factor", KDB, "2", "A replica connection counts this many times when balancing threads.";
    replicaof: Vec<(String, u16)> = Special(get_replicaof, set_replicaof, "host port"),
        "replicaof" | "slaveof", IMM | MULTI | LIVE, "", "Replicate from this master (several lines with multi-master).";
    requirepass: Option<String> = OptStr,
        "requirepass", SENS | LIVE, "", "Password of the default user (empty = none).";
    sanitize_dump_payload: String = Enum(&["no", "yes", "clients"]),
        "sanitize-dump-payload", LIVE, "no", "Deep-check RESTORE payloads: no, yes, or only for normal clients (kvik always checks every payload as `yes` does).";
    save: Vec<(u64, u64)> = Special(get_save, set_save, "seconds changes ..."),
        "save", MULTI | LIVE, "3600 1 300 100 60 10000", "Snapshot points: pairs of seconds and changes; save when both are reached (empty = off).";
    server_cpulist: String = Str,
        "server_cpulist", IMM | LIVE, "", "CPUs the server threads run on (unless server-thread-affinity pins each to its own).";
    server_thread_affinity: bool = Special(get_affinity, set_affinity, "yes/no (true/false)"),
        "server-thread-affinity", IMM | KDB | LIVE, "no", "Pin server thread i to CPU i.";
    server_threads: usize = Int(1, 128),
        "server-threads" | "io-threads", IMM | KDB | LIVE | DYN, "number of CPUs, at most 16",
        "Worker threads, each running its own event loop.";
    set_max_intset_entries: u64 = Int(0, LL),
        "set-max-intset-entries", LIVE, "512", "Integer sets up to this size use the compact encoding.";
    set_proc_title: bool = Bool,
        "set-proc-title", IMM | LIVE, "yes", "Show the server's state in the process title (what ps and top print).";
    shutdown_on_sigint: u8 = Special(get_shutdown_sigint, set_shutdown_sigint, "default|save|nosave|now|force ..."),
        "shutdown-on-sigint", MULTI | LIVE, "default", "SHUTDOWN flags used on SIGINT.";
    shutdown_on_sigterm: u8 = Special(get_shutdown_sigterm, set_shutdown_sigterm, "default|save|nosave|now|force ..."),
        "shutdown-on-sigterm", MULTI | LIVE, "default", "SHUTDOWN flags used on SIGTERM.";
    shutdown_timeout: u32 = Int(0, INT),
        "shutdown-timeout", LIVE, "10", "Seconds SHUTDOWN (without NOW) and SIGTERM/SIGINT wait, writes paused, for lagging replicas to acknowledge the whole stream before saving and exiting (0: no wait).";
    slowlog_log_slower_than: i64 = Int(-1, LL),
        "slowlog-log-slower-than", LIVE, "10000", "Microseconds above which a command is logged in SLOWLOG (-1 = off).";
    slowlog_max_len: u64 = Int(0, LL),
        "slowlog-max-len", LIVE, "128", "Entries kept in SLOWLOG.";
    socket_mark_id: u32 = Int(0, UINT),
        "socket-mark-id", IMM | LIVE, "0", "SO_MARK set on the TCP listening sockets (needs CAP_NET_ADMIN).";
    stop_writes_on_bgsave_error: bool = Bool,
        "stop-writes-on-bgsave-error", LIVE, "yes", "Refuse writes after a failed background save.";
    stream_node_max_bytes: u64 = Mem(0, LLM),
        "stream-node-max-bytes", LIVE, "4096", "Maximum bytes of a stream node.";
    stream_node_max_entries: u64 = Int(0, LL),
        "stream-node-max-entries", LIVE, "100", "Maximum entries of a stream node.";
    supervised: String = Enum(&["upstart", "systemd", "auto", "no"]),
        "supervised", IMM | LIVE, "no", "Supervision mode: notify upstart/systemd when ready.";
    syslog_enabled: bool = Bool,
        "syslog-enabled", IMM | LIVE, "no", "Also log to syslog.";
    syslog_facility: String = Enum(&["user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"]),
        "syslog-facility", IMM | LIVE, "local0", "Syslog facility.";
    syslog_ident: String = Str,
        "syslog-ident", IMM | LIVE, "redis", "Syslog identity.";
    tcp_backlog: u32 = Int(0, INT),
        "tcp-backlog", IMM | LIVE, "511", "listen() backlog of the TCP and Unix listening sockets.";
    tcp_keepalive: u64 = Int(0, INT),
        "tcp-keepalive", LIVE, "300", "TCP keepalive interval in seconds (0 = off).";
    timeout: u64 = Int(0, INT),
        "timeout", LIVE, "0", "Close a client idle for this many seconds (0 = never).";
    tls_auth_clients: String = Enum(&["no", "yes", "optional"]),
        "tls-auth-clients", LIVE, "yes", "Client certificates on the tls-port: required (yes), checked when shown (optional), or not asked for (no).";
    tls_ca_cert_dir: String = Str,
        "tls-ca-cert-dir", LIVE, "", "Directory of CA certificates (PEM) that client and master certificates must chain to.";
    tls_ca_cert_file: String = Str,
        "tls-ca-cert-file", LIVE, "", "CA certificates (PEM) that client and master certificates must chain to.";
    tls_cert_file: String = Str,
        "tls-cert-file", LIVE, "", "Server certificate chain (PEM); CONFIG SET reloads it for new handshakes.";
    tls_ciphers: String = Str,
        "tls-ciphers", LIVE, "", "TLSv1.2 cipher suites, OpenSSL names separated by `:` (only the ECDHE AES-GCM and CHACHA20-POLY1305 suites rustls offers; others are refused).";
    tls_ciphersuites: String = Str,
        "tls-ciphersuites", LIVE, "", "TLSv1.3 cipher suites separated by `:` (TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256).";
    tls_client_cert_file: String = Str,
        "tls-client-cert-file", LIVE, "", "Certificate a replica shows its master (default: tls-cert-file).";
    tls_client_key_file: String = Str,
        "tls-client-key-file", LIVE, "", "Private key of tls-client-cert-file.";
    tls_client_key_file_pass: String = Str,
        "tls-client-key-file-pass", SENS | LIVE, "", "Passphrase of tls-client-key-file (encrypted PKCS#8).";
    tls_cluster: bool = Bool,
        "tls-cluster", NOEFF, "no", "Use TLS on the cluster bus: kvik has no cluster bus, so there is nothing to apply it to.";
    tls_dh_params_file: String = Str,
        "tls-dh-params-file", NOEFF, "", "Diffie-Hellman parameters: kvik's TLS library (rustls) uses only ECDHE key exchange, so there is nothing to apply them to.";
    tls_key_file: String = Str,
        "tls-key-file", LIVE, "", "Server private key (PEM: PKCS#8, PKCS#1 or SEC1); CONFIG SET reloads it for new handshakes.";
    tls_key_file_pass: String = Str,
        "tls-key-file-pass", SENS | LIVE, "", "Passphrase of tls-key-file (encrypted PKCS#8; OpenSSL's traditional encrypted PEM is refused).";
    tls_port: u16 = Int(0, PORT),
        "tls-port", LIVE, "0", "TLS port to listen on (0 = none), on the bind addresses; alongside port, or alone with port 0.";
    tls_prefer_server_ciphers: bool = Bool,
        "tls-prefer-server-ciphers", LIVE, "no", "Choose the cipher suite by the server's order rather than the client's.";
    tls_protocols: String = Str,
        "tls-protocols", LIVE, "", "Allowed TLS versions: TLSv1.2 and/or TLSv1.3 (empty: both; TLSv1 and TLSv1.1 are refused).";
    tls_replication: bool = Bool,
        "tls-replication", LIVE, "no", "A replica's link to its master uses TLS (the master's tls-port).";
    tls_session_cache_size: u32 = Int(0, INT),
        "tls-session-cache-size", LIVE, "20480", "TLS sessions kept for resumption (0 = no limit).";
    tls_session_cache_timeout: u32 = Int(0, INT),
        "tls-session-cache-timeout", LIVE, "300", "Seconds a cached TLS session can be resumed.";
    tls_session_caching: bool = Bool,
        "tls-session-caching", LIVE, "yes", "Let clients resume TLS sessions (TLSv1.2 session ids, TLSv1.3 tickets).";
    tracking_table_max_keys: u64 = Int(0, LL),
        "tracking-table-max-keys", LIVE, "1000000", "Keys tracked for client-side caching (0 = no limit).";
    unixsocket: String = Str,
        "unixsocket", IMM | LIVE, "", "Unix socket path to listen on (served by every server thread, like TCP).";
    unixsocketperm: u32 = Octal(0, 0o777),
        "unixsocketperm", IMM | LIVE, "0", "Permissions of the unix socket (octal).";
    use_exit_on_panic: bool = Bool,
        "use-exit-on-panic", IMM | HID | OD, "no", "Testing: exit instead of abort on panic.";
    watchdog_period: u32 = Int(0, INT),
        "watchdog-period", HID | OD, "0", "Debugging: software watchdog period in milliseconds.";
    zset_max_listpack_entries: u64 = Int(0, LL),
        "zset-max-listpack-entries" | "zset-max-ziplist-entries", LIVE, "128", "Sorted sets with at most this many members use the compact encoding.";
    zset_max_listpack_value: u64 = Mem(0, LLM),
        "zset-max-listpack-value" | "zset-max-ziplist-value", LIVE, "64", "Sorted sets whose members are at most this long use the compact encoding.";
}
