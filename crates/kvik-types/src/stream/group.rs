//! Consumer groups: where a group has read to, what it delivered and to whom.
//!
//! The group's pending entries list (PEL) maps each delivered but unacknowledged ID to
//! its consumer, last delivery time and delivery count; each consumer keeps the set of
//! IDs pending for it, so both views stay ordered by ID as XPENDING walks them.

use super::StreamId;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A consumer name, shared between the consumer and its pending entries.
pub type Name = Arc<[u8]>;

#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// The last ID delivered to the group (`>` reads after it).
    pub last_id: StreamId,
    /// How many entries the group has read, when known (`entries-read`).
    pub entries_read: Option<u64>,
    pub pel: BTreeMap<StreamId, Pending>,
    pub consumers: BTreeMap<Name, Consumer>,
}

/// A delivered entry waiting for its XACK.
#[derive(Clone, Debug, PartialEq)]
pub struct Pending {
    pub consumer: Name,
    /// Unix ms of the last delivery.
    pub delivered_at: u64,
    pub deliveries: u64,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Consumer {
    /// Unix ms of the last time it read or claimed.
    pub seen_at: u64,
    pub pending: BTreeSet<StreamId>,
}

impl Group {
    pub fn new(last_id: StreamId, entries_read: Option<u64>) -> Group {
        Group {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
        }
    }

    /// The consumer called `name`, created if missing; true if it was created.
    pub fn consumer(&mut self, name: &[u8], now: u64) -> (&mut Consumer, bool) {
        let created = !self.consumers.contains_key(name);
        let consumer = self
            .consumers
            .entry(Name::from(name))
            .or_insert_with(|| Consumer {
                seen_at: now,
                pending: BTreeSet::new(),
            });
        (consumer, created)
    }

    /// The shared name of an existing consumer.
    pub fn consumer_name(&self, name: &[u8]) -> Option<Name> {
        self.consumers.get_key_value(name).map(|(k, _)| k.clone())
    }

    /// Give `id` to `consumer` (which exists), delivered at `now` with the given
    /// delivery count: a new pending entry, or one taken from whoever held it.
    pub fn assign(&mut self, id: StreamId, consumer: &Name, now: u64, deliveries: u64) {
        let pending = Pending {
            consumer: consumer.clone(),
            delivered_at: now,
            deliveries,
        };
        if let Some(old) = self.pel.insert(id, pending) {
            if let Some(previous) = self.consumers.get_mut(&old.consumer) {
                previous.pending.remove(&id);
            }
        }
        if let Some(owner) = self.consumers.get_mut(consumer) {
            owner.pending.insert(id);
        }
    }

    /// Drop `id` from the PEL (XACK, or its entry is gone). True if it was pending.
    pub fn acknowledge(&mut self, id: StreamId) -> bool {
        let Some(pending) = self.pel.remove(&id) else {
            return false;
        };
        if let Some(owner) = self.consumers.get_mut(&pending.consumer) {
            owner.pending.remove(&id);
        }
        true
    }

    /// Delete a consumer and its pending entries; how many it had, or `None`.
    pub fn remove_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let consumer = self.consumers.remove(name)?;
        for id in &consumer.pending {
            self.pel.remove(id);
        }
        Some(consumer.pending.len())
    }

    pub fn heap_size(&self) -> usize {
        self.pel.len() * 64
            + self
                .consumers
                .iter()
                .map(|(name, c)| name.len() + 64 + c.pending.len() * 24)
                .sum::<usize>()
    }
}
