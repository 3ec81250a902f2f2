//! Configuration: the table of every parameter kvik understands, parsing of
//! `redis.conf` / `keydb.conf` syntax and command-line directives, and the logic
//! behind CONFIG GET / SET / REWRITE.
//!
//! Owns: parameter names, aliases, types, defaults, validation and the text forms
//! Redis prints. Must not touch: sockets, the keyspace, or any server state; the
//! server reads the typed fields of [`Config`] and reacts to changes itself.

/// Every configuration parameter, typed. Field names follow the directive names
/// with `-` replaced by `_`.
#[derive(Debug, Clone)]
pub struct Config {
    pub port: u16,
    pub bind: Vec<String>,
    pub server_threads: usize,
    pub server_thread_affinity: bool,
    pub maxclients: u64,
    pub databases: usize,
    pub requirepass: Option<String>,
    pub protected_mode: bool,
    pub proto_max_bulk_len: u64,
    pub client_query_buffer_limit: u64,
    pub hz: u32,
    pub enable_debug_command: String,
    pub timeout: u64,
    pub tcp_keepalive: u64,
}

impl Default for Config {
    fn default() -> Self {
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        Config {
            port: 6379,
            bind: vec!["*".into(), "-::*".into()],
            server_threads: cpus.min(16),
            server_thread_affinity: false,
            maxclients: 10000,
            databases: 16,
            requirepass: None,
            protected_mode: true,
            proto_max_bulk_len: 512 * 1024 * 1024,
            client_query_buffer_limit: 1024 * 1024 * 1024,
            hz: 10,
            enable_debug_command: "no".into(),
            timeout: 0,
            tcp_keepalive: 300,
        }
    }
}
