//! Freeing big values off the hot path.
//!
//! Dropping a table of a million keys, or a collection of a million elements, takes
//! long enough to stall every client of the thread doing it. Such drops can be
//! handed to one background thread instead (Redis's lazyfree); small ones are freed
//! inline, where handing them over would cost more than freeing them. Which removals
//! do so is the `lazyfree-lazy-*` settings' call ([`Policy`]), as in Redis: UNLINK
//! and FLUSHALL ASYNC always, DEL, FLUSHALL, implicit deletes (overwrites), expiry
//! and eviction when their setting says so.
//!
//! What waits to be freed is counted: objects (keys, or values) for INFO's
//! `lazyfree_pending_objects` and `lazyfreed_objects`, and the heap bytes of the values
//! handed over, which maxmemory does not count as used (they are on their way out,
//! and eviction would otherwise go on evicting while the background thread frees).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::OnceLock;

/// Something to drop, with what it counts for while it waits.
struct Garbage {
    value: Box<dyn Send>,
    objects: u64,
    bytes: u64,
}

/// Why a key's value is being freed: each cause has its `lazyfree-lazy-*` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// DEL (`lazyfree-lazy-user-del`).
    UserDel,
    /// FLUSHALL / FLUSHDB without ASYNC or SYNC (`lazyfree-lazy-user-flush`).
    UserFlush,
    /// A key the server deletes for a command: an overwrite by SET, RENAME, a
    /// *STORE destination, RESTORE REPLACE (`lazyfree-lazy-server-del`).
    ServerDel,
    /// Expiry (`lazyfree-lazy-expire`).
    Expire,
    /// Eviction (`lazyfree-lazy-eviction`).
    Eviction,
    /// UNLINK, FLUSHALL ASYNC: always in the background.
    Asked,
    /// FLUSHALL SYNC: always inline.
    Refused,
}

/// The `lazyfree-lazy-*` settings, read on every removal.
#[derive(Debug, Default)]
pub struct Policy {
    user_del: AtomicBool,
    user_flush: AtomicBool,
    server_del: AtomicBool,
    expire: AtomicBool,
    eviction: AtomicBool,
}

impl Policy {
    /// Take the settings (at start-up and after CONFIG SET).
    pub fn configure(&self, c: &kvik_config::Config) {
        for (flag, value) in [
            (&self.user_del, c.lazyfree_lazy_user_del),
            (&self.user_flush, c.lazyfree_lazy_user_flush),
            (&self.server_del, c.lazyfree_lazy_server_del),
            (&self.expire, c.lazyfree_lazy_expire),
            (&self.eviction, c.lazyfree_lazy_eviction),
        ] {
            flag.store(value, Ordering::Relaxed);
        }
    }

    /// Whether a big value removed for `cause` goes to the background thread.
    pub fn lazy(&self, cause: Cause) -> bool {
        let flag = match cause {
            Cause::UserDel => &self.user_del,
            Cause::UserFlush => &self.user_flush,
            Cause::ServerDel => &self.server_del,
            Cause::Expire => &self.expire,
            Cause::Eviction => &self.eviction,
            Cause::Asked => return true,
            Cause::Refused => return false,
        };
        flag.load(Ordering::Relaxed)
    }
}

static FREEER: OnceLock<mpsc::Sender<Garbage>> = OnceLock::new();
static PENDING_OBJECTS: AtomicU64 = AtomicU64::new(0);
static PENDING_BYTES: AtomicU64 = AtomicU64::new(0);
static FREED_OBJECTS: AtomicU64 = AtomicU64::new(0);

fn freeer() -> &'static mpsc::Sender<Garbage> {
    FREEER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Garbage>();
        std::thread::Builder::new()
            .name("kvik-lazyfree".into())
            .spawn(move || {
                crate::process::run_on_bio_cpus();
                for Garbage {
                    value,
                    objects,
                    bytes,
                } in rx
                {
                    drop(value);
                    settle(objects, bytes);
                    FREED_OBJECTS.fetch_add(objects, Ordering::Relaxed);
                }
            })
            .expect("spawn the lazyfree thread");
        tx
    })
}

/// Take freed (or unsent) garbage off the pending counts.
fn settle(objects: u64, bytes: u64) {
    PENDING_OBJECTS.fetch_sub(objects, Ordering::Relaxed);
    PENDING_BYTES.fetch_sub(bytes, Ordering::Relaxed);
}

/// Drop `value` on the background thread. It counts as `objects` pending objects
/// (the keys of a flushed table, one for a value) and `bytes` pending bytes until then.
pub fn drop_later<T: Send + 'static>(value: T, objects: u64, bytes: u64) {
    PENDING_OBJECTS.fetch_add(objects, Ordering::Relaxed);
    PENDING_BYTES.fetch_add(bytes, Ordering::Relaxed);
    let garbage = Garbage {
        value: Box::new(value),
        objects,
        bytes,
    };
    if let Err(unsent) = freeer().send(garbage) {
        drop(unsent.0.value);
        settle(objects, bytes);
    }
}

/// Values owning more than this many heap bytes are freed in the background.
pub const BACKGROUND_FREE_BYTES: usize = 64 * 1024;

/// Free `garbage`, one object owning `bytes` of heap: on the background thread when
/// `lazy` and big, so deleting a collection of millions of elements costs its
/// thread almost nothing; inline otherwise. Returns the bytes left to the
/// background thread (0 when freed here).
pub fn free<T: Send + 'static>(garbage: T, bytes: usize, lazy: bool) -> u64 {
    if lazy && bytes > BACKGROUND_FREE_BYTES {
        drop_later(garbage, 1, bytes as u64);
        return bytes as u64;
    }
    0
}

/// Free a replaced value the same way.
pub fn free_value(value: crate::types::Value, lazy: bool) {
    let bytes = value.heap_size();
    free(value, bytes, lazy);
}

/// Heap bytes handed to the background thread and not freed yet.
pub fn pending_bytes() -> u64 {
    PENDING_BYTES.load(Ordering::Relaxed)
}

/// (objects waiting to be freed, objects freed since start or CONFIG RESETSTAT).
pub fn object_counts() -> (u64, u64) {
    (
        PENDING_OBJECTS.load(Ordering::Relaxed),
        FREED_OBJECTS.load(Ordering::Relaxed),
    )
}

/// CONFIG RESETSTAT zeroes `lazyfreed_objects`.
pub fn reset_stats() {
    FREED_OBJECTS.store(0, Ordering::Relaxed);
}
