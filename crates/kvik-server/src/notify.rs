//! Keyspace notifications (`notify-keyspace-events`): the events commands raise on the
//! keys they change, published through the pub/sub hub.
//!
//! An event has a class (one bit of [`class`]), a name (`lpush`, `expired`, ...) and a
//! key. When its class is enabled it is published on `__keyspace@<db>__:<key>` with the
//! event name as the message (if `K` is on) and on `__keyevent@<db>__:<event>` with the
//! key as the message (if `E` is on), in that order. There is one way to raise an
//! event: [`Locked::notify`] (or [`Locked::notify_in`] for a key of another database)
//! on the keys a command holds; the keyspace layer raises `expired`, `new`, `evicted`
//! and `keymiss` itself. This module keeps the classes and the publishing behind it.
//!
//! [`Locked::notify`]: crate::keyspace::Locked::notify
//! [`Locked::notify_in`]: crate::keyspace::Locked::notify_in
//!
//! Every emission starts with one relaxed load of the enabled classes, so a server with
//! notifications off (the default) pays nothing else.

use crate::pubsub::{Bus, Kind};
use std::sync::atomic::Ordering;

/// The event classes, the letters of `notify-keyspace-events`.
pub mod class {
    pub use kvik_config::notify::{
        EVICTED, EXPIRED, GENERIC, HASH, KEYEVENT, KEYSPACE, KEY_MISS, LIST, MODULE, NEW, SET,
        STREAM, STRING, ZSET,
    };
    /// The bitmap commands raise string events, as Redis's do.
    pub const BITMAP: u32 = STRING;
}

impl Bus<'_> {
    /// Raise event `event` of class `class` on `key` of database `db`: what
    /// [`Locked::notify`] does, for a caller without a `Locked` (active expiry).
    ///
    /// [`Locked::notify`]: crate::keyspace::Locked::notify
    #[inline]
    pub fn notify(&self, class: u32, event: &str, db: usize, key: &[u8]) {
        let enabled = self.hub.keyspace_events.load(Ordering::Relaxed);
        if enabled & class != 0 {
            self.publish_event(enabled, event, db, key);
        }
    }

    // Out of line, so that the gate inlined into every command stays one load and a
    // branch.
    #[inline(never)]
    fn publish_event(&self, enabled: u32, event: &str, db: usize, key: &[u8]) {
        if enabled & class::KEYSPACE != 0 {
            let channel = [format!("__keyspace@{db}__:").as_bytes(), key].concat();
            self.publish(Kind::Channel, &channel, event.as_bytes(), None);
        }
        if enabled & class::KEYEVENT != 0 {
            let channel = format!("__keyevent@{db}__:{event}");
            self.publish(Kind::Channel, channel.as_bytes(), key, None);
        }
    }
}
