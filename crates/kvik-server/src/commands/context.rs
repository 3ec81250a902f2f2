//! What a handler works with: [`Ctx`] (the server, the client, its reply, the shards
//! `call` locked) and [`Held`] (the shards a handler that locks for itself asked
//! for). The door that builds them is `door.rs`; the checks before it, `admission.rs`.

use crate::client::ClientState;
use crate::effects::Targets;
use crate::keyspace::{KeyEnv, Locked};
use crate::server::Server;
use crate::stats::ThreadStats;
use kvik_resp::ReplyWriter;
use std::time::Instant;

/// What a handler works with.
pub struct Ctx<'c, 'a> {
    pub server: &'a Server,
    pub client: &'c mut ClientState,
    pub out: &'c mut ReplyWriter,
    /// The shards `call` locked for this command (see [`Lock`](super::table::Lock)).
    pub keys: &'c mut Locked<'a>,
    pub stats: &'a ThreadStats,
    /// The handler appended its own effects; `call` must not append the argv.
    pub propagated: bool,
    /// Changes made that `keys` did not count (EXEC's, made under its own `Locked`).
    pub extra_dirty: u64,
    /// The handler wrote an error reply of its own (a script's returned error) and
    /// counted it in INFO errorstats itself: the call counts as failed.
    pub replied_error: bool,
    /// When the command started (a script's run counts from here for BUSY).
    pub started: Instant,
}

impl<'c, 'a> Ctx<'c, 'a> {
    /// Append an effect in place of the command's own argv (call it while the keys are
    /// still locked, i.e. from the handler).
    pub fn propagate(&mut self, argv: &[&[u8]]) {
        let db = self.keys.db;
        self.keys.propagate(db, argv);
        self.propagated = true;
    }

    /// Propagate `argv` to `targets` only, within what the command may propagate at
    /// all (a script's `redis.set_repl`, a master's stream going to the AOF alone).
    pub fn propagate_to(&mut self, argv: &[&[u8]], targets: Targets) {
        let allowed = self.keys.effect_targets;
        self.keys.effect_targets = allowed.and(targets);
        self.propagate(argv);
        self.keys.effect_targets = allowed;
    }

    /// The environment a handler needs to take locks of its own.
    pub fn key_env(&self) -> KeyEnv<'a> {
        self.keys.env()
    }
}

/// Shards a [`Lock::Handler`](super::table::Lock::Handler) command asked for with [`Held::lock`].
pub enum Held<'r, 'a> {
    /// Held already by the caller of the command.
    Borrowed(&'r mut Locked<'a>),
    /// Locked for the command; released when this is dropped. Boxed: a `Locked` is
    /// large, and few commands lock for themselves.
    Owned(Box<Locked<'a>>),
}

impl<'r, 'a> Held<'r, 'a> {
    /// For [`Lock::Handler`](super::table::Lock::Handler) commands: the shards `ids`
    /// ([`crate::keyspace::Keyspace::global_id`]) from `keys`, the `Locked` the command
    /// runs under, when it holds them all (inside EXEC), else locked afresh (a plain
    /// call holds nothing, so nothing is taken out of order). Changes made under fresh
    /// locks are the handler's own business: `call` neither counts nor propagates them.
    pub fn lock(keys: &'r mut Locked<'a>, ids: &[usize]) -> Self {
        if ids.iter().all(|&id| keys.holds(id)) {
            return Held::Borrowed(keys);
        }
        // Taking more while holding some could go out of order: whoever runs a
        // `Lock::Handler` command holds all it may ask for, or nothing.
        debug_assert!(
            ids.iter().all(|&id| !keys.holds(id)),
            "a Lock::Handler command runs under some of the shards it needs"
        );
        let mut fresh = Locked::shard_ids(keys.env(), keys.db, keys.now_ms, ids);
        fresh.touch = keys.touch;
        Held::Owned(Box::new(fresh))
    }
}

impl<'a> std::ops::Deref for Held<'_, 'a> {
    type Target = Locked<'a>;
    fn deref(&self) -> &Locked<'a> {
        match self {
            Held::Borrowed(locked) => locked,
            Held::Owned(locked) => locked,
        }
    }
}

impl<'a> std::ops::DerefMut for Held<'_, 'a> {
    fn deref_mut(&mut self) -> &mut Locked<'a> {
        match self {
            Held::Borrowed(locked) => locked,
            Held::Owned(locked) => locked,
        }
    }
}
