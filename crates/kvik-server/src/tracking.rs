//! Client-side caching (CLIENT TRACKING): which clients may hold which keys, and
//! telling them when those keys change, as Redis 7.0 does.
//!
//! A client tracks in one of two ways, chosen by CLIENT TRACKING ON:
//! - *default*: the keys of the read-only commands it runs (found by the command
//!   table's key specs) go into the tracking table, key name -> readers. They are
//!   remembered while the command still holds the keys' shard locks, so no write can
//!   slip between the read and the remembering. A write to a key takes its entry out
//!   and tells each reader once. OPTIN and OPTOUT narrow which reads count (CLIENT
//!   CACHING). Past `tracking-table-max-keys` keys, random keys are invalidated until
//!   the table fits again.
//! - *BCAST*: the client registers key prefixes; every written key that starts with
//!   one is told to that prefix's clients. The keys a worker thread wrote in one turn
//!   of its event loop go out together, sorted, one message per prefix.
//!
//! FLUSHDB and FLUSHALL tell every tracking client that everything changed (a null)
//! and empty the table. As in Redis, the table knows key names, not databases.
//!
//! Writes are heard through the keyspace's observer of every key
//! ([`KeyObservers::hear_all_keys`]), switched on only while there is tracking to do:
//! a server nobody tracks on pays one relaxed load per write. An observer runs under a
//! shard lock, so it only notes what to send in its thread's [`Outbox`]; the worker
//! sends it before it next sleeps ([`before_sleep`]), except the invalidations for the
//! client whose command caused them, which follow that command's reply
//! ([`after_command`]).
//!
//! Delivery never touches another thread's connection: an [`Invalidation`] goes to the
//! tracking client's worker ([`Message::Invalidate`]), which checks that the client
//! still tracks in that mode, applies NOLOOP, and writes the pushes (RESP3), or forwards
//! them to the client it redirects to. That client's worker writes them as pushes
//! (RESP3) or as messages of the `__redis__:invalidate` channel (RESP2 in subscribed
//! mode). A redirect target found gone is reported to the tracking client
//! (`tracking-redir-broken`).

use crate::client::{self, ClientInfo, ClientState, ClientTracking};
use crate::keyspace::{hash_key, KeyObserver, KeyObservers};
use crate::mailbox::{Invalidation, Keys, Message, WorkerHandle};
use kvik_resp::ReplyWriter;
use parking_lot::{Mutex, RwLock};
use smallvec::SmallVec;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// The channel invalidations travel on for RESP2 clients (through REDIRECT).
pub const CHANNEL: &[u8] = b"__redis__:invalidate";

/// What client-side caching needs of the server: the tracking table, the keyspace's
/// observers (to hear writes), the client registry (redirect targets), the worker
/// mailboxes, and `tracking-table-max-keys`.
#[derive(Clone, Copy)]
pub struct Env<'a> {
    pub table: &'a Tracking,
    pub observers: &'a KeyObservers,
    pub clients: &'a client::Registry,
    pub workers: &'a [WorkerHandle],
    pub max_keys: u64,
}

/// How to reach a client's connection from any thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    pub client: u64,
    pub worker: usize,
    pub token: usize,
}

impl Endpoint {
    pub fn of(info: &ClientInfo) -> Self {
        Endpoint {
            client: info.id,
            worker: info.worker,
            token: info.token,
        }
    }
}

/// The tracking table is spread over this many locks by key.
const STRIPES: usize = 64;

/// Key name -> the clients that read it since it last changed.
type KeyTable = HashMap<Vec<u8>, SmallVec<[Endpoint; 1]>, foldhash::fast::RandomState>;

/// The server's side of client-side caching.
pub struct Tracking {
    table: Box<[Mutex<KeyTable>]>,
    /// Keys in the table (INFO `tracking_total_keys`).
    keys: AtomicUsize,
    /// (key, client) pairs in the table (INFO `tracking_total_items`).
    items: AtomicUsize,
    /// Every tracking client. Its lock also orders switching the observer of every
    /// key on and off.
    clients: Mutex<HashMap<u64, Endpoint>>,
    client_count: AtomicUsize,
    /// BCAST prefix -> the clients that registered it.
    prefixes: RwLock<BTreeMap<Vec<u8>, Vec<Endpoint>>>,
    prefix_count: AtomicUsize,
    /// The keyspace's observer of every key is on (mirrors its bit, for the cheap
    /// check of [`before_sleep`]).
    hearing: AtomicBool,
    /// Rounds of eviction in a row that ended still over the limit: each tries
    /// harder. Locked by the one thread evicting.
    eviction_rounds: Mutex<usize>,
}

impl Default for Tracking {
    fn default() -> Self {
        Tracking {
            table: (0..STRIPES).map(|_| Mutex::default()).collect(),
            keys: AtomicUsize::new(0),
            items: AtomicUsize::new(0),
            clients: Mutex::default(),
            client_count: AtomicUsize::new(0),
            prefixes: RwLock::default(),
            prefix_count: AtomicUsize::new(0),
            hearing: AtomicBool::new(false),
            eviction_rounds: Mutex::new(0),
        }
    }
}

/// What the observer noted on this thread, waiting to be sent.
#[derive(Default)]
struct Outbox {
    /// The tracking client whose command runs on this thread now, and its NOLOOP.
    current: Option<(u64, bool)>,
    /// Invalidations for `current`, to follow its reply (`None`: a flush).
    own: Vec<Option<Vec<u8>>>,
    /// Invalidations for the other clients, in order.
    read: Vec<(Endpoint, Option<Vec<u8>>)>,
    /// BCAST: prefix -> key written under it -> the writer's id.
    broadcast: BTreeMap<Vec<u8>, BTreeMap<Vec<u8>, u64>>,
}

impl Outbox {
    fn has_mail(&self) -> bool {
        !self.read.is_empty() || !self.broadcast.is_empty()
    }

    /// Queue an invalidation for `to`: after the reply if it is the client running a
    /// command here, not at all if that client asked for NOLOOP.
    fn queue(&mut self, to: Endpoint, key: Option<Vec<u8>>) {
        match self.current {
            Some((me, noloop)) if me == to.client => {
                if !noloop || key.is_none() {
                    self.own.push(key);
                }
            }
            _ => self.read.push((to, key)),
        }
    }

    fn writer(&self) -> u64 {
        self.current.map_or(0, |(id, _)| id)
    }
}

thread_local! {
    static OUTBOX: RefCell<Outbox> = RefCell::default();
}

impl Tracking {
    fn stripe(&self, key: &[u8]) -> &Mutex<KeyTable> {
        &self.table[hash_key(key) as usize % STRIPES]
    }

    /// INFO's `tracking_clients`.
    pub fn client_count(&self) -> usize {
        self.client_count.load(Ordering::Relaxed)
    }

    /// INFO's `tracking_total_keys`.
    pub fn total_keys(&self) -> usize {
        self.keys.load(Ordering::Relaxed)
    }

    /// INFO's `tracking_total_items`.
    pub fn total_items(&self) -> usize {
        self.items.load(Ordering::Relaxed)
    }

    /// INFO's `tracking_total_prefixes`.
    pub fn total_prefixes(&self) -> usize {
        self.prefix_count.load(Ordering::Relaxed)
    }

    /// A client turned tracking on: from now on every write is heard.
    fn start(&self, observers: &KeyObservers, who: Endpoint) {
        let mut clients = self.clients.lock();
        if clients.insert(who.client, who).is_none() {
            self.client_count.fetch_add(1, Ordering::Relaxed);
        }
        self.hearing.store(true, Ordering::Relaxed);
        observers.hear_all_keys(true);
    }

    /// A client turned tracking off (or left): forget its prefixes. The keys it read
    /// stay in the table until they change, as in Redis.
    fn stop(&self, who: Endpoint, prefixes: &BTreeSet<Vec<u8>>) {
        for prefix in prefixes {
            self.remove_prefix(prefix, who.client);
        }
        if self.clients.lock().remove(&who.client).is_some() {
            self.client_count.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Stop hearing writes once nobody tracks and the table is empty.
    fn stop_hearing_if_idle(&self, observers: &KeyObservers) {
        if self.client_count() != 0 || self.total_keys() != 0 {
            return;
        }
        // Decided under the lock `start` takes, so a client turning tracking on
        // meanwhile keeps the observer on.
        let clients = self.clients.lock();
        if clients.is_empty() && self.keys.load(Ordering::Relaxed) == 0 {
            self.hearing.store(false, Ordering::Relaxed);
            observers.hear_all_keys(false);
        }
    }

    fn add_prefix(&self, prefix: &[u8], who: Endpoint) {
        let mut prefixes = self.prefixes.write();
        let listeners = prefixes.entry(prefix.to_vec()).or_insert_with(|| {
            self.prefix_count.fetch_add(1, Ordering::Relaxed);
            Vec::new()
        });
        if !listeners.iter().any(|l| l.client == who.client) {
            listeners.push(who);
        }
    }

    fn remove_prefix(&self, prefix: &[u8], client: u64) {
        let mut prefixes = self.prefixes.write();
        if let Some(listeners) = prefixes.get_mut(prefix) {
            listeners.retain(|l| l.client != client);
            if listeners.is_empty() {
                prefixes.remove(prefix);
                self.prefix_count.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// Note that `reader` may cache `keys` from now on.
    pub fn remember<'k>(&self, reader: Endpoint, keys: impl Iterator<Item = &'k [u8]>) {
        for key in keys {
            let mut stripe = self.stripe(key).lock();
            match stripe.get_mut(key) {
                Some(readers) if readers.iter().any(|r| r.client == reader.client) => continue,
                Some(readers) => readers.push(reader),
                None => {
                    stripe.insert(key.to_vec(), SmallVec::from_elem(reader, 1));
                    self.keys.fetch_add(1, Ordering::Relaxed);
                }
            }
            self.items.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Take `key` out of the table and queue an invalidation for each of its readers.
    fn invalidate_read(&self, key: &[u8]) {
        let Some(readers) = self.stripe(key).lock().remove(key) else {
            return;
        };
        self.keys.fetch_sub(1, Ordering::Relaxed);
        self.items.fetch_sub(readers.len(), Ordering::Relaxed);
        OUTBOX.with_borrow_mut(|outbox| {
            for reader in readers {
                outbox.queue(reader, Some(key.to_vec()));
            }
        });
    }

    /// Queue `key` for the BCAST clients of every prefix it starts with.
    fn invalidate_prefixed(&self, key: &[u8]) {
        let matching: SmallVec<[Vec<u8>; 2]> = self
            .prefixes
            .read()
            .keys()
            .filter(|prefix| key.starts_with(prefix))
            .cloned()
            .collect();
        if matching.is_empty() {
            return;
        }
        OUTBOX.with_borrow_mut(|outbox| {
            let writer = outbox.writer();
            for prefix in matching {
                let keys = outbox.broadcast.entry(prefix).or_default();
                keys.insert(key.to_vec(), writer);
            }
        });
    }

    /// FLUSHDB / FLUSHALL: every tracking client hears that everything changed, and
    /// the table empties.
    pub fn flushed(&self) {
        if self.client_count() > 0 {
            let clients: Vec<Endpoint> = self.clients.lock().values().copied().collect();
            OUTBOX.with_borrow_mut(|outbox| {
                for client in clients {
                    outbox.queue(client, None);
                }
            });
        }
        for stripe in self.table.iter() {
            let dropped = std::mem::take(&mut *stripe.lock());
            let items: usize = dropped.values().map(|readers| readers.len()).sum();
            self.keys.fetch_sub(dropped.len(), Ordering::Relaxed);
            self.items.fetch_sub(items, Ordering::Relaxed);
        }
    }

    /// Invalidate random keys while the table holds more than `max` (0: no limit).
    /// Each round that ends still over the limit makes the next one try harder, as
    /// Redis does.
    fn enforce_limit(&self, max: usize) {
        if max == 0 || self.total_keys() <= max {
            return;
        }
        // One thread at a time: others would evict past the limit.
        let Some(mut rounds) = self.eviction_rounds.try_lock() else {
            return;
        };
        let effort = 100 * (*rounds + 1);
        let start: usize = rand::random();
        for attempt in 0..effort {
            if self.total_keys() <= max {
                *rounds = 0;
                return;
            }
            let stripe = &self.table[(start + attempt) % STRIPES];
            let victim = stripe.lock().keys().next().cloned();
            if let Some(key) = victim {
                self.invalidate_read(&key);
            }
        }
        *rounds += 1;
    }
}

impl KeyObserver for Tracking {
    fn key_modified(&self, _db: usize, key: &[u8]) {
        if self.keys.load(Ordering::Relaxed) != 0 {
            self.invalidate_read(key);
        }
        if self.prefix_count.load(Ordering::Relaxed) != 0 {
            self.invalidate_prefixed(key);
        }
    }
}

/// The settings CLIENT TRACKING ON asks for.
#[derive(Debug, Default)]
pub struct Request {
    pub redirect: Option<u64>,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    pub prefixes: Vec<Vec<u8>>,
}

/// Turn tracking on for `client` with `request`, already checked (by CLIENT
/// TRACKING). Settings given before are replaced, except the prefixes of a
/// client that stays in BCAST mode (new ones are added) and a pending CLIENT CACHING.
pub fn enable(env: &Env, client: &mut ClientState, request: Request) {
    let me = Endpoint::of(&client.info);
    let previous = client.tracking.take();
    if previous.is_none() {
        env.table.start(env.observers, me);
    }
    let previous = previous.unwrap_or_default();
    let mut tracking = ClientTracking {
        redirect: request.redirect.unwrap_or(0),
        bcast: request.bcast,
        optin: request.optin,
        optout: request.optout,
        noloop: request.noloop,
        caching: previous.caching,
        broken_redirect: false,
        prefixes: previous.prefixes,
    };
    if request.bcast {
        // No prefix given: the empty one, which every key starts with.
        let every_key = [Vec::new()];
        let prefixes = if request.prefixes.is_empty() {
            &every_key[..]
        } else {
            &request.prefixes[..]
        };
        for prefix in prefixes {
            if tracking.prefixes.insert(prefix.clone()) {
                env.table.add_prefix(prefix, me);
            }
        }
    }
    client.set_tracking(Some(tracking));
}

/// Turn tracking off for `client` (CLIENT TRACKING OFF, RESET, disconnecting).
pub fn disable(env: &Env, client: &mut ClientState) {
    if let Some(tracking) = client.tracking.take() {
        env.table
            .stop(Endpoint::of(&client.info), &tracking.prefixes);
        client.set_tracking(None);
    }
}

/// Before a tracking client's command: writes on this thread now come from it
/// (NOLOOP, and its own invalidations follow its reply).
pub fn before_command(client: &ClientState) {
    let noloop = client.tracking.as_ref().is_some_and(|t| t.noloop);
    OUTBOX.with_borrow_mut(|outbox| outbox.current = Some((client.id(), noloop)));
}

/// After a command of a client that tracks (or tracked when it started): the
/// invalidations its command caused for itself follow its reply, and a CLIENT
/// CACHING is used up unless this was a CLIENT command or the client is inside
/// MULTI (then it lasts until EXEC).
pub fn after_command(
    env: &Env,
    client: &mut ClientState,
    out: &mut ReplyWriter,
    keeps_caching: bool,
) {
    let own = OUTBOX.with_borrow_mut(|outbox| {
        outbox.current = None;
        std::mem::take(&mut outbox.own)
    });
    let keeps_caching = keeps_caching || client.multi.is_some();
    if let Some(tracking) = client.tracking.as_mut().filter(|_| !keeps_caching) {
        tracking.caching = false;
    }
    if !own.is_empty() {
        receive(env, client, out, &Invalidation::Read(own));
    }
}

/// A worker's turn of its event loop is over: evict from the table if it grew past
/// `tracking-table-max-keys`, switch the observer of every key off when nobody needs
/// it any more, and send what this thread's observer noted.
pub fn before_sleep(env: &Env) {
    let tracking = env.table;
    if tracking.hearing.load(Ordering::Relaxed) {
        tracking.enforce_limit(usize::try_from(env.max_keys).unwrap_or(usize::MAX));
        tracking.stop_hearing_if_idle(env.observers);
    }
    let outbox = OUTBOX.with_borrow_mut(|outbox| {
        outbox.has_mail().then(|| Outbox {
            read: std::mem::take(&mut outbox.read),
            broadcast: std::mem::take(&mut outbox.broadcast),
            ..Outbox::default()
        })
    });
    if let Some(outbox) = outbox {
        send(env, outbox);
    }
}

/// Send the noted invalidations: one mailbox message per client for the keys it
/// read, one per client and prefix for BCAST.
fn send(env: &Env, outbox: Outbox) {
    let mut per_client: Vec<(Endpoint, Vec<Option<Vec<u8>>>)> = Vec::new();
    let mut slot_of: HashMap<u64, usize> = HashMap::new();
    for (to, key) in outbox.read {
        let slot = *slot_of.entry(to.client).or_insert_with(|| {
            per_client.push((to, Vec::new()));
            per_client.len() - 1
        });
        per_client[slot].1.push(key);
    }
    for (to, keys) in per_client {
        post(env, to, Invalidation::Read(keys));
    }
    for (prefix, keys) in outbox.broadcast {
        let listeners = env.table.prefixes.read().get(&prefix).cloned();
        let Some(listeners) = listeners else { continue };
        let invalidation = Arc::new(Invalidation::Broadcast(keys.into_iter().collect()));
        for to in listeners {
            post_shared(env, to, invalidation.clone());
        }
    }
}

fn post(env: &Env, to: Endpoint, invalidation: Invalidation) {
    post_shared(env, to, Arc::new(invalidation));
}

fn post_shared(env: &Env, to: Endpoint, invalidation: Arc<Invalidation>) {
    if let Some(worker) = env.workers.get(to.worker) {
        worker.send(Message::Invalidate {
            token: to.token,
            client: to.client,
            invalidation,
        });
    }
}

/// On the worker of `client`: tell it of `invalidation` (see the module doc).
pub fn receive(
    env: &Env,
    client: &mut ClientState,
    out: &mut ReplyWriter,
    invalidation: &Invalidation,
) {
    if let Invalidation::Redirected(messages) = invalidation {
        write_messages(client, out, messages, true);
        return;
    }
    let Some(tracking) = &client.tracking else {
        return;
    };
    let messages: Vec<Keys> = match invalidation {
        Invalidation::Read(keys) => keys
            .iter()
            .filter(|key| key.is_none() || !tracking.bcast)
            .map(|key| key.as_ref().map(|k| vec![k.clone()]))
            .collect(),
        Invalidation::Broadcast(written) if tracking.bcast => {
            let me = client.id();
            let keys: Vec<Vec<u8>> = written
                .iter()
                .filter(|(_, writer)| !(tracking.noloop && *writer == me))
                .map(|(key, _)| key.clone())
                .collect();
            if keys.is_empty() {
                Vec::new()
            } else {
                vec![Some(keys)]
            }
        }
        _ => Vec::new(),
    };
    if !messages.is_empty() {
        deliver(env, client, out, messages);
    }
}

/// Write `messages` for a tracking client, or forward them to its redirect target.
fn deliver(env: &Env, client: &mut ClientState, out: &mut ReplyWriter, messages: Vec<Keys>) {
    let redirect = client.tracking.as_ref().map_or(0, |t| t.redirect);
    if redirect == 0 {
        write_messages(client, out, &messages, false);
        return;
    }
    if let Some(target) = env.clients.get(redirect) {
        post(
            env,
            Endpoint::of(&target),
            Invalidation::Redirected(messages),
        );
        return;
    }
    if let Some(tracking) = client.tracking.as_mut().filter(|t| !t.broken_redirect) {
        tracking.broken_redirect = true;
        client.publish_tracking();
    }
    // Redis reports the broken redirect once per message it could not send.
    if out.is_resp3() {
        for _ in &messages {
            out.push(2);
            out.bulk(b"tracking-redir-broken");
            out.int(redirect as i64);
        }
    }
}

/// Write invalidation messages to `client`: pushes in RESP3; in RESP2 only when they
/// come through a redirect and the client is in subscribed mode, as messages of the
/// invalidation channel; else nothing (RESP2 has no way to say it in band).
fn write_messages(
    client: &ClientState,
    out: &mut ReplyWriter,
    messages: &[Keys],
    redirected: bool,
) {
    let as_channel_message = redirected && client.pubsub.is_active();
    if !out.is_resp3() && !as_channel_message {
        return;
    }
    for keys in messages {
        if out.is_resp3() {
            out.push(2);
            out.bulk(b"invalidate");
        } else {
            out.array(3);
            out.bulk(b"message");
            out.bulk(CHANNEL);
        }
        match keys {
            Some(keys) => {
                out.array(keys.len());
                for key in keys {
                    out.bulk(key);
                }
            }
            None => out.null(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_forgets_a_key_once_it_is_invalidated() {
        let tracking = Tracking::default();
        let reader = Endpoint {
            client: 7,
            worker: 0,
            token: 3,
        };
        let keys: [&[u8]; 3] = [b"a", b"b", b"a"];
        tracking.remember(reader, keys.into_iter());
        assert_eq!((tracking.total_keys(), tracking.total_items()), (2, 2));
        tracking.key_modified(0, b"a");
        assert_eq!((tracking.total_keys(), tracking.total_items()), (1, 1));
        let queued = OUTBOX.with_borrow_mut(|o| std::mem::take(&mut o.read));
        assert_eq!(queued, vec![(reader, Some(b"a".to_vec()))]);
        tracking.enforce_limit(0);
        assert_eq!(tracking.total_keys(), 1);
        tracking.remember(reader, [b"c".as_slice()].into_iter());
        tracking.enforce_limit(1);
        assert_eq!(tracking.total_keys(), 1);
        OUTBOX.with_borrow_mut(|o| o.read.clear());
    }
}
