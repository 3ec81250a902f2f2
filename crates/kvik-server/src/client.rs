//! Clients: the per-connection state commands see, and the registry other threads use
//! to list and kill clients.
//!
//! A connection's state ([`ClientState`]) belongs to the worker thread that accepted
//! it and is touched by nobody else. What other threads may need (CLIENT LIST, CLIENT
//! KILL, INFO clients) is a [`ClientInfo`] in the [`Registry`]: fixed facts, a kill flag,
//! and a snapshot of the changing fields that the owning thread refreshes after each
//! batch of commands.

use parking_lot::Mutex;
use std::collections::BTreeMap;
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

/// The changing facts about a client that CLIENT LIST shows.
#[derive(Debug, Clone, Default)]
pub struct ClientSnapshot {
    pub name: Option<Vec<u8>>,
    pub db: usize,
    pub last_interaction_ms: u64,
    pub last_command: &'static str,
    pub query_buffer: usize,
    pub query_buffer_free: usize,
    pub output_buffer: usize,
    pub resp: u8,
    pub lib_name: Option<Vec<u8>>,
    pub lib_ver: Option<Vec<u8>>,
    pub no_evict: bool,
    pub no_touch: bool,
    pub user: String,
}

/// The shared face of a client.
pub struct ClientInfo {
    pub id: u64,
    /// Index of the worker thread that owns the connection.
    pub worker: usize,
    pub addr: String,
    pub laddr: String,
    pub fd: i32,
    pub created_ms: u64,
    /// Set by CLIENT KILL; the owner closes the connection when it sees it.
    pub killed: AtomicBool,
    pub snapshot: Mutex<ClientSnapshot>,
}

/// Everything a command may read or change about the client that sent it.
pub struct ClientState {
    pub info: Arc<ClientInfo>,
    pub db: usize,
    pub name: Option<Vec<u8>>,
    pub authenticated: bool,
    pub user: String,
    pub reply_mode: ReplyMode,
    pub no_evict: bool,
    pub no_touch: bool,
    pub lib_name: Option<Vec<u8>>,
    pub lib_ver: Option<Vec<u8>>,
    /// Close the connection once the pending replies are written (QUIT, errors).
    pub close_after_reply: bool,
    /// The command being run, for CLIENT LIST's `cmd=`.
    pub last_command: &'static str,
}

impl ClientState {
    pub fn new(info: Arc<ClientInfo>, authenticated: bool) -> Self {
        ClientState {
            info,
            db: 0,
            name: None,
            authenticated,
            user: "default".into(),
            reply_mode: ReplyMode::On,
            no_evict: false,
            no_touch: false,
            lib_name: None,
            lib_ver: None,
            close_after_reply: false,
            last_command: "NULL",
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
