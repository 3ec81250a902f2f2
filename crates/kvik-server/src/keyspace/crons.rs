//! Where KeyDB's scheduled scripts (KEYDB.CRON jobs) may live: the names of keys that
//! were given a job, so that the scheduler looks at those keys and not at the whole
//! keyspace.
//!
//! Owns only the list of names. An entry may be stale (the key was deleted, flushed
//! or overwritten since): the scheduler checks the key itself and forgets names that
//! no longer hold a job, so DEL, FLUSHALL and overwrites need no hook here. Must not
//! touch the jobs themselves or run anything.

use parking_lot::Mutex;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Default)]
pub struct CronIndex {
    names: Mutex<BTreeSet<(usize, Vec<u8>)>>,
    /// Mirror of `!names.is_empty()`: the scheduler's tick costs one load while
    /// no job exists.
    any: AtomicBool,
}

impl CronIndex {
    /// `key` of database `db` was given a job.
    pub fn note(&self, db: usize, key: &[u8]) {
        let mut names = self.names.lock();
        names.insert((db, key.to_vec()));
        self.any.store(true, Ordering::Relaxed);
    }

    /// `key` of database `db` holds no job any more.
    pub fn forget(&self, db: usize, key: &[u8]) {
        let mut names = self.names.lock();
        names.remove(&(db, key.to_vec()));
        self.any.store(!names.is_empty(), Ordering::Relaxed);
    }

    /// The names that may hold a job, in database then name order.
    pub fn candidates(&self) -> Vec<(usize, Vec<u8>)> {
        if !self.any.load(Ordering::Relaxed) {
            return Vec::new();
        }
        self.names.lock().iter().cloned().collect()
    }

    /// SWAPDB: the jobs of `a` are now in `b` and the other way round.
    pub fn swap_dbs(&self, a: usize, b: usize) {
        let mut names = self.names.lock();
        let swapped = std::mem::take(&mut *names)
            .into_iter()
            .map(|(db, key)| match db {
                d if d == a => (b, key),
                d if d == b => (a, key),
                _ => (db, key),
            })
            .collect();
        *names = swapped;
    }
}

#[cfg(test)]
mod tests {
    use super::CronIndex;

    #[test]
    fn names_are_noted_forgotten_and_follow_swapdb() {
        let index = CronIndex::default();
        assert!(index.candidates().is_empty());
        index.note(0, b"a");
        index.note(2, b"b");
        index.swap_dbs(0, 2);
        assert_eq!(index.candidates(), [(0, b"b".to_vec()), (2, b"a".to_vec())]);
        index.forget(0, b"b");
        index.forget(2, b"a");
        assert!(index.candidates().is_empty());
    }
}
