//! Commands: the table, the dispatcher and one module per command family.
//!
//! [`call`] (`door.rs`) is the one door every command goes through. It runs the
//! admission checks that apply to all commands (`admission.rs`: known name, arity,
//! authentication, `maxmemory`, MISCONF, a busy script), takes the shard locks the
//! table says the command needs, runs the handler with its [`Ctx`] (`context.rs`),
//! and appends the command's effects to the effect stream before the locks are
//! released; then it serves the clients blocked on the keys the command wrote
//! ([`blocking`]). Handlers only do their own work: parse their arguments, read and
//! write keys through [`crate::keyspace::Locked`], write replies.

pub mod acl;
pub mod args;
pub mod blocking;
pub mod table;

pub mod bitmaps;
pub mod client;
pub mod cluster;
pub mod config;
pub mod connection;
pub mod debug;
pub mod functions;
pub mod geo;
pub mod hashes;
pub mod hyperloglog;
pub mod info;
pub mod introspection;
pub mod keys;
pub mod latency;
pub mod lists;
pub mod lolwut;
pub mod memory;
pub mod module;
pub mod pubsub;
pub mod replication;
pub mod scripting;
pub mod server;
pub mod sets;
pub mod shared;
pub mod slowlog;
pub mod sort;
pub mod streams;
pub mod strings;
pub mod transactions;
pub mod zsets;

mod admission;
mod context;
mod door;

use table::Registry;

pub use crate::errors::{self, CmdError, CmdResult};
pub use admission::{held_by_pause, lookup_name, may_grow_memory, may_replicate};
pub use context::{Ctx, Held};
pub use door::{
    call, call_unread, count_call, count_error_reply, finish_call, plan_locks, redacted,
    remember_script_reads, run_locked, write_error, Ran, Unread, REDACTED,
};

/// The command table: every family's entries, in the order COMMAND lists them,
/// gathered once per process (the entries are constants; nothing changes them).
/// Every command looks itself up here several times: the fast path is one load.
#[inline]
pub fn registry() -> &'static Registry {
    match REGISTRY.get() {
        Some(registry) => registry,
        None => gather_registry(),
    }
}

static REGISTRY: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();

#[cold]
fn gather_registry() -> &'static Registry {
    REGISTRY.get_or_init(|| {
        Registry::new(&[
            strings::COMMANDS,
            bitmaps::COMMANDS,
            hyperloglog::COMMANDS,
            keys::COMMANDS,
            lists::COMMANDS,
            hashes::COMMANDS,
            sets::COMMANDS,
            zsets::COMMANDS,
            geo::COMMANDS,
            streams::COMMANDS,
            sort::COMMANDS,
            pubsub::COMMANDS,
            connection::COMMANDS,
            client::COMMANDS,
            server::COMMANDS,
            acl::COMMANDS,
            replication::COMMANDS,
            info::COMMANDS,
            config::COMMANDS,
            introspection::COMMANDS,
            transactions::COMMANDS,
            debug::COMMANDS,
            scripting::COMMANDS,
            functions::COMMANDS,
            slowlog::COMMANDS,
            latency::COMMANDS,
            memory::COMMANDS,
            cluster::COMMANDS,
            module::COMMANDS,
            lolwut::COMMANDS,
        ])
    })
}
