//! FAILOVER: a coordinated switch of roles between this master and one of its
//! replicas, as Redis 7.0 runs it. Writes are paused; once a replica (the one named
//! with TO, else the first) has acknowledged everything, this node follows it and
//! its PSYNC carries `FAILOVER`, which makes the replica promote itself and answer
//! `+CONTINUE` with its new id; then writes resume (now refused: we are a replica).
//! A timeout without FORCE, or ABORT, rolls back: writes resume on this master.
//!
//! Owns the failover's state (INFO's `master_failover_state`). Must not touch
//! clients: pausing goes through the [`Host`](super::Host).

use super::Replication;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Where a failover stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    WaitingForSync,
    InProgress,
}

/// A failover under way.
#[derive(Debug, Clone)]
pub struct Failover {
    pub target: Option<(String, u16)>,
    /// Unix ms after which it gives up (0: never).
    pub deadline_ms: u64,
    /// At the deadline, fail over to the target anyway.
    pub force: bool,
    pub stage: Stage,
}

/// INFO's `master_failover_state`.
pub fn state_name(failover: Option<&Failover>) -> &'static str {
    match failover.map(|f| f.stage) {
        None => "no-failover",
        Some(Stage::WaitingForSync) => "waiting-for-sync",
        Some(Stage::InProgress) => "failover-in-progress",
    }
}

impl Replication {
    pub fn failover(&self) -> Option<Failover> {
        self.failover.lock().clone()
    }

    /// FAILOVER [TO host port [FORCE]] [TIMEOUT ms]: checked by the command, started
    /// here; writes pause until it ends.
    pub fn start_failover(&self, failover: Failover) {
        *self.failover.lock() = Some(failover);
        self.host().pause_writes(true);
        self.backlog.ask_acks();
    }

    /// FAILOVER ABORT, or its timeout: writes resume on this master. False when no
    /// failover waits for its replica.
    pub fn abort_failover(&self) -> bool {
        let mut failover = self.failover.lock();
        if failover.as_ref().map(|f| f.stage) != Some(Stage::WaitingForSync) {
            return false;
        }
        *failover = None;
        drop(failover);
        self.host().pause_writes(false);
        crate::log_notice!("FAILOVER to replica aborted");
        true
    }

    /// The link's PSYNC was answered: the failover is over.
    pub(super) fn failover_done(&self) {
        if self.failover.lock().take().is_some() {
            self.host().pause_writes(false);
            crate::log_notice!(
                "Failover target accepted the PSYNC FAILOVER request: failover complete"
            );
        }
    }

    /// The target refused: be the master again, writes resumed.
    pub(super) fn rollback_failover(&self) {
        self.promote();
        if self.failover.lock().take().is_some() {
            self.host().pause_writes(false);
        }
    }

    /// Is the link being made for a failover (its PSYNC says FAILOVER)?
    pub(super) fn failing_over(&self) -> bool {
        self.failover.lock().as_ref().map(|f| f.stage) == Some(Stage::InProgress)
    }

    /// From the cron: hand over once a replica has everything, or give up.
    pub(super) fn failover_cron(self: &Arc<Self>) {
        let Some(failover) = self.failover() else {
            return;
        };
        if failover.stage != Stage::WaitingForSync {
            return;
        }
        let now = crate::hlc::unix_ms();
        let timed_out = failover.deadline_ms != 0 && now >= failover.deadline_ms;
        let target = self.synced_replica(failover.target.as_ref());
        let chosen = match (target, timed_out) {
            (Some(target), _) => target,
            (None, true) if failover.force => failover.target.clone().expect("FORCE has TO"),
            (None, true) => {
                self.abort_failover();
                return;
            }
            (None, false) => {
                self.backlog.ask_acks();
                return;
            }
        };
        if let Some(f) = self.failover.lock().as_mut() {
            f.stage = Stage::InProgress;
        }
        crate::log_notice!(
            "Failover target {}:{} is synced, failing over to it",
            chosen.0,
            chosen.1
        );
        self.follow(chosen.0, chosen.1);
    }

    /// A replica online that acknowledged our whole stream (the one named, if any).
    fn synced_replica(&self, named: Option<&(String, u16)>) -> Option<(String, u16)> {
        self.replicas.all().into_iter().find_map(|feed| {
            let at = (feed.ip.clone(), feed.hello.listening_port);
            let wanted = named.is_none_or(|n| *n == at);
            let synced = feed.is_online()
                && feed.ack_offset.load(Ordering::Acquire) == feed.stream_end(self);
            (wanted && synced).then_some(at)
        })
    }

    /// Is `host`:`port` one of our replicas, and is it online?
    pub fn replica_at(&self, host: &str, port: u16) -> Option<bool> {
        self.replicas
            .all()
            .into_iter()
            .find(|f| f.ip == host && f.hello.listening_port == port)
            .map(|f| f.is_online())
    }
}
