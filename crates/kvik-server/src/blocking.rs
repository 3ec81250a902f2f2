//! Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, XREAD ...):
//! the clients waiting, by key, and the rules of ending a wait. The command side,
//! blocking a client and serving waiters after a write, is in
//! `commands::blocking`; this engine knows nothing of clients' connections or of
//! the command table.
//!
//! A blocking command that finds none of its keys ready registers a [`Waiter`] here
//! while it still holds its keys' shard locks, and its connection stops running
//! commands. Whoever writes to the keyspace afterwards, on any thread, serves the
//! waiters of the keys it wrote right after its command, once its own locks are
//! released: for each waiter in the order they blocked, it locks the keys the waiter
//! needs, checks again that the key is ready, finishes the waiter's command there
//! (reply and effects, encoded in the waiter's protocol) and sends the reply bytes to
//! the waiter's worker thread through its mailbox. That thread writes them and resumes
//! the client's later commands.
//!
//! Registering under the shard locks is what makes a wake-up impossible to miss: a
//! writer that takes the same lock later sees the waiter, and one that took it earlier
//! left the data the command found.
//!
//! Every way a wait can end (served, timed out, CLIENT UNBLOCK, disconnect) first
//! *claims* the waiter. Only one claim succeeds, so a client is never both served and
//! timed out; whoever claimed it takes it out of the registry ([`Registry::retire`]).

use crate::errors::{CmdError, CmdResult};
use crate::keyspace::{hash_key, Locked};
use crate::types::EncodingLimits;
use crate::types::Value;
use kvik_resp::{Protocol, ReplyWriter};
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What a blocked command does once one of its keys is ready. Each blocking command
/// family supplies one implementation per command shape (BLPOP, BLMOVE, BZPOPMIN ...).
pub trait Action: Send + Sync {
    /// Whether a key holding `value` lets the command finish (a list for BLPOP).
    fn ready(&self, value: &Value) -> bool;

    /// Whether the command can finish now that `key` holds `value` (`None`: the key is
    /// gone). Commands whose readiness depends on the key, or that end (with an error)
    /// when their key goes away, like XREADGROUP, refine it.
    fn ready_at(&self, _key: &[u8], value: Option<&Value>) -> bool {
        value.is_some_and(|v| self.ready(v))
    }

    /// The reply when the wait ends unserved (its timeout, CLIENT UNBLOCK): a null
    /// array for the commands that wait on keys; WAIT counts its acknowledgements.
    fn timeout_reply(&self, protocol: Protocol) -> Vec<u8> {
        timeout_reply(protocol)
    }

    /// A key the command writes besides the one it takes from (BLMOVE's destination):
    /// it is locked too, and its own waiters are served afterwards.
    fn also_writes(&self) -> Option<&[u8]> {
        None
    }

    /// Finish the command from the ready `key`, its shards locked in `keys` (in the
    /// waiter's database): write the reply to `out` and append the effects. An error
    /// becomes the client's reply and ends its wait all the same.
    fn serve(
        &self,
        limits: &EncodingLimits,
        keys: &mut Locked<'_>,
        out: &mut ReplyWriter,
        key: &[u8],
    ) -> CmdResult;
}

/// A wait on no key (WAIT, a SHUTDOWN waiting for replicas): no key ever serves it;
/// whoever ends it answers, or its timeout does with what `reply` writes.
pub struct Keyless<F: Fn(&mut ReplyWriter) + Send + Sync>(pub F);

impl<F: Fn(&mut ReplyWriter) + Send + Sync> Action for Keyless<F> {
    fn ready(&self, _value: &Value) -> bool {
        false
    }

    fn timeout_reply(&self, protocol: Protocol) -> Vec<u8> {
        let mut out = ReplyWriter::with_buf(Vec::new(), protocol);
        (self.0)(&mut out);
        out.buf
    }

    fn serve(
        &self,
        _limits: &EncodingLimits,
        _keys: &mut Locked<'_>,
        _out: &mut ReplyWriter,
        _key: &[u8],
    ) -> CmdResult {
        Ok(())
    }
}

/// A client waiting in a blocking command.
pub struct Waiter {
    pub client: u64,
    /// The worker thread that owns the connection, and its token there.
    pub worker: usize,
    pub token: usize,
    pub db: usize,
    /// The keys waited on, each once, in the order the command named them.
    pub keys: Vec<Vec<u8>>,
    /// The protocol the reply is encoded in.
    pub protocol: Protocol,
    pub has_timeout: bool,
    claimed: AtomicBool,
    /// What the command does once a key is ready.
    pub action: Box<dyn Action>,
}

impl Waiter {
    /// A waiter for client `client`, whose connection is `(worker, token)`, on
    /// `keys` of database `db` (each kept once, in order).
    pub fn new(
        client: u64,
        (worker, token): (usize, usize),
        db: usize,
        keys: &[&[u8]],
        protocol: Protocol,
        has_timeout: bool,
        action: Box<dyn Action>,
    ) -> Waiter {
        let mut distinct: Vec<Vec<u8>> = Vec::with_capacity(keys.len());
        for key in keys {
            if !distinct.iter().any(|k| k == key) {
                distinct.push(key.to_vec());
            }
        }
        Waiter {
            client,
            worker,
            token,
            db,
            keys: distinct,
            protocol,
            has_timeout,
            claimed: AtomicBool::new(false),
            action,
        }
    }

    /// Take the right to end this wait. True for exactly one caller.
    pub fn claim(&self) -> bool {
        !self.claimed.swap(true, Ordering::AcqRel)
    }

    pub fn is_claimed(&self) -> bool {
        self.claimed.load(Ordering::Acquire)
    }
}

/// A connection's side of a wait: kept in its client state while it is blocked.
pub struct Blocked {
    pub waiter: Arc<Waiter>,
    /// Unix ms at which the wait times out; `None` waits forever.
    pub deadline: Option<u64>,
    /// The command's id in the table, and how long its first run took: the call is
    /// counted once, when the wait ends, as Redis does (`call` fills both in).
    pub command: usize,
    pub ran_for: Duration,
    /// The slow log's entry, when the first run was slow enough for it: it is
    /// logged if the wait ends served, as Redis logs a blocking command.
    pub slow: Option<crate::slowlog::Call>,
    /// The reply is dropped (CLIENT REPLY OFF or SKIP was in force when it blocked).
    pub silent: bool,
    /// The owning worker has put the deadline on its timer list.
    pub timer_armed: bool,
}

/// Waiters are spread over this many locks by key, so serving unrelated keys does not
/// contend.
const STRIPES: usize = 64;

type Queues = HashMap<(usize, Vec<u8>), VecDeque<Arc<Waiter>>>;

/// Every waiting client, by the keys it waits on (first come, first served) and by
/// client id.
pub struct Registry {
    stripes: Box<[Mutex<Queues>]>,
    by_client: Mutex<HashMap<u64, Arc<Waiter>>>,
    blocked: AtomicUsize,
    with_timeout: AtomicUsize,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            stripes: (0..STRIPES).map(|_| Mutex::default()).collect(),
            by_client: Mutex::default(),
            blocked: AtomicUsize::new(0),
            with_timeout: AtomicUsize::new(0),
        }
    }
}

impl Registry {
    /// Nobody waits: the one check every write pays (a relaxed load).
    #[inline]
    pub fn is_idle(&self) -> bool {
        self.blocked.load(Ordering::Relaxed) == 0
    }

    /// INFO's `blocked_clients`.
    pub fn blocked_clients(&self) -> usize {
        self.blocked.load(Ordering::Relaxed)
    }

    /// INFO's `clients_in_timeout_table`: waiters with a timeout.
    pub fn clients_with_timeout(&self) -> usize {
        self.with_timeout.load(Ordering::Relaxed)
    }

    fn stripe(&self, db: usize, key: &[u8]) -> &Mutex<Queues> {
        let at = (hash_key(key) as usize).wrapping_add(db) % STRIPES;
        &self.stripes[at]
    }

    /// Register a new waiter; the caller holds its keys' shard locks.
    pub fn add(&self, waiter: &Arc<Waiter>) {
        // The caller holds the keys' shard locks (see the module doc): a writer that
        // locks one of them next finds the count raised and the waiter queued.
        self.blocked.fetch_add(1, Ordering::AcqRel);
        if waiter.has_timeout {
            self.with_timeout.fetch_add(1, Ordering::Relaxed);
        }
        for key in &waiter.keys {
            self.stripe(waiter.db, key)
                .lock()
                .entry((waiter.db, key.clone()))
                .or_default()
                .push_back(waiter.clone());
        }
        self.by_client.lock().insert(waiter.client, waiter.clone());
    }

    /// Take a claimed waiter out. Only the one who claimed it calls this.
    pub fn retire(&self, waiter: &Arc<Waiter>) {
        for key in &waiter.keys {
            let mut queues = self.stripe(waiter.db, key).lock();
            let id = (waiter.db, key.clone());
            if let Some(queue) = queues.get_mut(&id) {
                queue.retain(|w| !Arc::ptr_eq(w, waiter));
                if queue.is_empty() {
                    queues.remove(&id);
                }
            }
        }
        self.by_client.lock().remove(&waiter.client);
        if waiter.has_timeout {
            self.with_timeout.fetch_sub(1, Ordering::Relaxed);
        }
        self.blocked.fetch_sub(1, Ordering::AcqRel);
    }

    /// End a wait that is not served (timeout, CLIENT UNBLOCK, disconnect): claim the
    /// waiter and retire it. False if someone else ended the wait first.
    pub fn end_wait(&self, waiter: &Arc<Waiter>) -> bool {
        let claimed = waiter.claim();
        if claimed {
            self.retire(waiter);
        }
        claimed
    }

    /// The clients waiting on `key`, longest-waiting first.
    pub fn queue(&self, db: usize, key: &[u8]) -> Vec<Arc<Waiter>> {
        let queues = self.stripe(db, key).lock();
        queues
            .get(&(db, key.to_vec()))
            .map_or_else(Vec::new, |q| q.iter().cloned().collect())
    }

    /// The wait of a client, if it is blocked.
    pub fn of_client(&self, client: u64) -> Option<Arc<Waiter>> {
        self.by_client.lock().get(&client).cloned()
    }

    /// Every key someone waits on, as (db, key).
    pub fn waited_keys(&self) -> Vec<(usize, Vec<u8>)> {
        self.stripes
            .iter()
            .flat_map(|s| s.lock().keys().cloned().collect::<Vec<_>>())
            .collect()
    }
}

/// A blocking command's timeout argument (seconds, fractions allowed) as a deadline in
/// unix ms; `None` for 0, which waits forever. A deadline past the end of the clock
/// waits forever too, as it does in Redis.
pub fn parse_timeout(arg: &[u8], now_ms: u64) -> Result<Option<u64>, CmdError> {
    let ms = crate::util::long_double::parse_timeout_seconds_ms(arg)
        .ok_or("ERR timeout is not a float or out of range")?;
    if ms < 0 {
        return Err("ERR timeout is negative".into());
    }
    if ms == 0 {
        return Ok(None);
    }
    Ok((now_ms as i64).checked_add(ms).map(|at| at as u64))
}

/// The reply of a wait that timed out (or was ended by CLIENT UNBLOCK ... TIMEOUT):
/// the null array for every blocking command, as Redis 7.0 answers.
pub fn timeout_reply(protocol: Protocol) -> Vec<u8> {
    let mut out = ReplyWriter::with_buf(Vec::new(), protocol);
    out.null_array();
    out.buf
}
