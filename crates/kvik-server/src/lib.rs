//! kvik: a multithreaded, Redis-compatible in-memory database server.
//!
//! The crate reads top-down like the life of a request:
//! - [`net`]: sockets and the worker threads' event loops, TCP, TLS ([`tls`] builds
//!   its configuration) and Unix alike;
//! - [`commands`]: the command table, the dispatcher and the command families;
//! - [`keyspace`]: databases, shards, entries, expiry, eviction, and the locks
//!   commands take;
//! - [`memory`]: used memory against `maxmemory`, and when to evict;
//! - [`blocking`]: clients waiting in blocking commands, woken across threads;
//! - [`pubsub`] and [`notify`]: channels, MONITOR and keyspace notifications, whose
//!   messages travel to the subscribers' threads through their mailboxes;
//! - [`tracking`]: client-side caching, whose invalidations travel the same way;
//! - [`types`]: the values keys hold (the `kvik-types` crate);
//! - [`persistence`]: the forms values take outside memory (the RDB codec, the
//!   `kvik-rdb` crate);
//! - [`aof`]: the append-only file, fed by the effect stream;
//! - [`loading`]: whether the dataset is being loaded (clients get -LOADING) and how
//!   far the load has got;
//! - [`effects`] and [`hlc`]: the ordered stream of deterministic writes and the clock
//!   that stamps them, which persistence and replication consume;
//! - [`replication`]: this node's role, the backlog, the replicas it serves and its
//!   link to a master (PSYNC2, as Redis 7.0 speaks it);
//! - [`slowlog`] and [`latency`]: the slow log and the latency monitor;
//! - [`metrics`]: the Prometheus endpoint, which reads what INFO reads;
//! - [`server`], [`client`], [`stats`], [`logging`], [`lazyfree`], [`util`]: the shared
//!   state and the supporting pieces ([`util`] is the `kvik-util` crate).
//!
//! The bottom layers are crates of their own, so that an upward import cannot
//! compile: `kvik-util` imports nothing of kvik's, `kvik-types` imports only
//! `kvik-util`, `kvik-rdb` only those two. They are re-exported here under their old
//! module paths (`crate::util`, `crate::types`, `crate::persistence::rdb`).

pub mod acl;
pub mod aof;
pub mod blocking;
pub mod client;
pub mod commands;
pub mod crash;
pub mod defrag;
pub mod effects;
pub mod errors;
pub mod hlc;
pub mod keyspace;
pub mod latency;
pub mod lazyfree;
pub mod listen;
pub mod loading;
pub mod logging;
pub mod mailbox;
pub mod memory;
pub mod metrics;
pub mod net;
pub mod notify;
pub mod oom_score;
pub mod persistence;
pub mod process;
pub mod pubsub;
pub mod replication;
pub mod scripting;
pub mod server;
pub mod slowlog;
pub mod snapshot;
pub mod startup;
pub mod stats;
pub mod supervise;
pub mod tls;
pub mod tracking;
pub mod version;

pub use kvik_types as types;
pub use kvik_util as util;
