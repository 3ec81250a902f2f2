//! Point-in-time captures of the keyspace without fork(): the hook a snapshot uses.
//!
//! [`Keyspace::begin_capture`] locks every shard (in the global ascending order, like
//! any command) and marks each *pending*; that moment is the snapshot's point in
//! time. From then on whoever next locks a pending shard — a command, the active
//! expiry cycle, or the snapshot's own writer — first hands it, as it still is, to
//! the [`ShardCapture`] and clears the mark, and only then changes it. So every
//! shard is captured exactly once, in its state at the point, and the extra memory is
//! what has been captured but not yet written out, never a copy of the dataset.
//!
//! Commands that held locks when the capture began finished before it could take
//! their shards, so they are wholly inside the snapshot; commands that lock later
//! capture before they write, so they are wholly outside. A transaction never falls
//! in between: it takes all its shards before its first write.
//!
//! Owns the pending marks and the current capture. Must not touch files, sockets or
//! encodings: what a capture does with a shard is the capture's business.

use super::{Keyspace, ShardData};
use parking_lot::MutexGuard;
use std::sync::Arc;

/// Receives each shard as it was at the capture's point in time.
pub trait ShardCapture: Send + Sync {
    /// Shard `global_id` ([`Keyspace::global_id`]), locked by the caller, before
    /// anything changes it. Runs on whichever thread met the shard first, maybe
    /// holding other shard locks: it must not lock shards itself.
    fn capture(&self, global_id: usize, shard: &ShardData);
}

impl Keyspace {
    /// Called with every shard lock just taken, before the holder reads or writes
    /// it. Costs a test of a field of the locked shard when no capture runs.
    #[inline]
    pub(super) fn before_use(&self, global_id: usize, shard: &mut ShardData) {
        if shard.capture_pending {
            self.capture_now(global_id, shard);
        }
    }

    /// Lock shard `global_id` for use outside a command (the active expiry cycle),
    /// with the same hand-over to a pending capture as a command's lock.
    pub fn lock_for_use(&self, global_id: usize) -> MutexGuard<'_, ShardData> {
        let mut shard = self.shard_by_id(global_id).lock();
        self.before_use(global_id, &mut shard);
        shard
    }

    #[cold]
    fn capture_now(&self, global_id: usize, shard: &mut ShardData) {
        shard.capture_pending = false;
        let capture = self.capture.lock().clone();
        if let Some(capture) = capture {
            capture.capture(global_id, shard);
        }
    }

    /// Start `capture` now: every shard is marked pending while all are locked.
    /// `at_point` sees every shard (in global id order) at the point in time, to
    /// count what it needs. Refuses (returns false) when a capture already runs.
    ///
    /// The caller must hold no shard lock.
    pub fn begin_capture(
        &self,
        capture: Arc<dyn ShardCapture>,
        at_point: impl FnOnce(&[MutexGuard<'_, ShardData>]),
    ) -> bool {
        let mut current = self.capture.lock();
        if current.is_some() {
            return false;
        }
        let mut guards = Vec::with_capacity(self.databases() * self.shards_per_db());
        for db in 0..self.databases() {
            for shard in 0..self.shards_per_db() {
                guards.push(self.shard(db, shard).lock());
            }
        }
        for guard in guards.iter_mut() {
            guard.capture_pending = true;
        }
        at_point(&guards);
        *current = Some(capture);
        true
    }

    /// The snapshot writer's turn at shard `global_id`: if it is still pending,
    /// `serialize` it now (under its lock) and clear the mark; `None` when someone
    /// captured it already.
    pub fn capture_if_pending<T>(
        &self,
        global_id: usize,
        serialize: impl FnOnce(&ShardData) -> T,
    ) -> Option<T> {
        let mut shard = self.shard_by_id(global_id).lock();
        if !shard.capture_pending {
            return None;
        }
        shard.capture_pending = false;
        Some(serialize(&shard))
    }

    /// The capture is over (written out, failed or cancelled): clear the marks of
    /// shards nobody took (a cancelled capture leaves some, a writer that skips
    /// empty shards too), then forget it.
    ///
    /// The marks go first and without the capture's slot held: a command holding
    /// a pending shard takes the slot to hand the shard over ([`Self::before_use`]),
    /// so holding the slot while waiting for shard locks would deadlock with it.
    /// The capture stays installed until no mark is left, so no new one can begin
    /// meanwhile and have its marks cleared by this.
    pub fn end_capture(&self) {
        if !self.capturing() {
            return;
        }
        for db in 0..self.databases() {
            for shard in 0..self.shards_per_db() {
                self.shard(db, shard).lock().capture_pending = false;
            }
        }
        *self.capture.lock() = None;
    }

    /// Is a capture running?
    pub fn capturing(&self) -> bool {
        self.capture.lock().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    struct Ignore;

    impl ShardCapture for Ignore {
        fn capture(&self, _global_id: usize, _shard: &ShardData) {}
    }

    /// A capture that ends with shards still pending (its writer skipped them)
    /// while commands take those shards: the command hands its shard over under
    /// the shard's lock, the end clears the marks; neither may wait for the other
    /// (they once did, and a snapshot's end froze the server). The rounds run on
    /// their own threads, so a deadlock fails the test instead of hanging it.
    #[test]
    fn a_capture_ends_while_commands_take_its_pending_shards() {
        let keyspace = Arc::new(Keyspace::new(1, 2));
        let shards = keyspace.shards_per_db();
        let done = Arc::new(AtomicBool::new(false));
        let commands = {
            let (keyspace, done) = (keyspace.clone(), done.clone());
            std::thread::spawn(move || {
                for id in (0..shards).cycle() {
                    if done.load(Ordering::Acquire) {
                        return;
                    }
                    drop(keyspace.lock_for_use(id));
                }
            })
        };
        let (ended, rounds_over) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for _ in 0..100_000 {
                assert!(keyspace.begin_capture(Arc::new(Ignore), |_| {}));
                keyspace.end_capture();
                assert!(!keyspace.capturing());
            }
            let _ = ended.send(());
        });
        let over = rounds_over.recv_timeout(Duration::from_secs(60));
        done.store(true, Ordering::Release);
        assert!(
            over.is_ok(),
            "a capture's end and a command wait for each other"
        );
        commands.join().unwrap();
    }
}
