//! Client eviction (`maxmemory-clients`, Redis 7.0): when the memory all clients
//! use (query and reply buffers, arguments, their state) passes the limit, the
//! clients using the most are closed, largest first, until the rest fit. Clients
//! with CLIENT NO-EVICT on are never chosen, nor replicas and masters (Redis evicts
//! normal and pub/sub clients only).
//!
//! A pass looks at the CLIENT LIST snapshots that every connection refreshes after
//! each read and write. Every worker's cron offers to make one; one runs at a time
//! and at most every [`PASS_EVERY_MS`], so two threads never close clients for the
//! same excess and many threads do not walk every client over and over. A chosen client is closed the way
//! CLIENT KILL closes it: flagged, and its thread told.

use super::Server;
use crate::client::{ClientInfo, ClientType};
use crate::mailbox::Message;
use crate::stats::ThreadStats;
use std::sync::Arc;

/// The shortest time between two passes (Redis's default `hz` tick).
const PASS_EVERY_MS: u64 = 100;

impl Server {
    /// Close clients, largest first, until the memory of all clients is under
    /// `maxmemory-clients` (a size, or a percentage of `maxmemory`; 0: no limit).
    /// Returns how many were closed. Counted in `stats` (INFO's `evicted_clients`).
    pub fn evict_clients_over_limit(&self, stats: &ThreadStats) -> usize {
        let limit = {
            let config = self.config.read();
            config.maxmemory_clients.bytes(config.maxmemory)
        };
        if limit == 0 {
            return 0;
        }
        let Some(mut last_pass) = self.client_eviction.try_lock() else {
            return 0;
        };
        let now = crate::hlc::unix_ms();
        if now.saturating_sub(*last_pass) < PASS_EVERY_MS {
            return 0;
        }
        *last_pass = now;
        let mut sized: Vec<(usize, bool, Arc<ClientInfo>)> = self
            .clients
            .all()
            .into_iter()
            .filter(|client| !client.is_killed())
            .map(|client| {
                let snap = client.snapshot.lock();
                let evictable = !snap.no_evict
                    && matches!(snap.client_type(), ClientType::Normal | ClientType::Pubsub);
                (snap.total_memory(), evictable, client.clone())
            })
            .collect();
        let mut total: usize = sized.iter().map(|(memory, ..)| memory).sum();
        if total as u64 <= limit {
            return 0;
        }
        sized.sort_by_key(|&(memory, ..)| std::cmp::Reverse(memory));
        let mut wake = vec![false; self.worker_count()];
        let mut evicted = 0;
        for (memory, evictable, client) in sized {
            if total as u64 <= limit {
                break;
            }
            if !evictable || !client.mark_killed() {
                continue;
            }
            let mut line = String::new();
            client.describe(&client.snapshot.lock(), now, &mut line);
            crate::log_verbose!("Evicting client: {}", line.trim_end());
            total -= memory;
            evicted += 1;
            wake[client.worker] = true;
        }
        if let Some(workers) = self.workers.get() {
            for (worker, _) in workers.iter().zip(wake).filter(|(_, w)| *w) {
                worker.send(Message::KillFlagged);
            }
        }
        stats.add(&stats.evicted_clients, evicted as u64);
        evicted
    }
}
