//! Loading an RDB file into the keyspace: at startup and for DEBUG RELOAD.
//!
//! Owns turning what the file reader finds into entries and libraries: expired keys
//! are dropped (kvik is always a master), duplicates refused, access data restored.
//! Must not touch the file format (the reader's) or the save bookkeeping.

use crate::keyspace::{hash_key, AccessClock, EntryBox, EntryData, Locked};
use crate::persistence::rdb::file::{self, KeyMeta, LoadError, Visitor};
use crate::persistence::rdb::Limits;
use crate::scripting::functions::{compile_library, Collision, Library};
use crate::scripting::Scripting;
use crate::types::Value;
use crate::{log_notice, log_warning};
use std::path::Path;

/// What a load put in memory.
#[derive(Debug, Default, Clone, Copy)]
pub struct Loaded {
    pub keys: u64,
    /// Keys whose deadline had passed, left out.
    pub expired: u64,
    /// The replication history the file was saved at (`repl-id`, `repl-offset`),
    /// from which a restarted node can continue partially (PSYNC2).
    pub repl: Option<([u8; 40], u64)>,
}

/// Fills the shards a [`Locked`] holds (every shard of every database).
struct IntoKeyspace<'l, 'a> {
    locked: &'l mut Locked<'a>,
    scripting: &'l Scripting,
    clock: AccessClock,
    now_ms: u64,
    libraries: Vec<Library>,
    loaded: Loaded,
    /// A key already in memory is replaced (DEBUG RELOAD MERGE), not refused.
    merge: bool,
    /// Keys whose deadline passed are kept: a replica's master deletes them.
    keep_expired: bool,
}

impl Visitor for IntoKeyspace<'_, '_> {
    fn aux(&mut self, name: &[u8], value: &[u8]) {
        let value = String::from_utf8_lossy(value);
        match name {
            b"redis-ver" => log_notice!("Loading RDB produced by version {value}"),
            b"ctime" => {
                let ctime: i64 = value.parse().unwrap_or(0);
                let age = (self.now_ms / 1000) as i64 - ctime;
                log_notice!("RDB age {age} seconds");
            }
            b"repl-id" => {
                if let Ok(id) = <[u8; 40]>::try_from(value.as_bytes()) {
                    self.loaded.repl = Some((id, self.loaded.repl.map_or(0, |r| r.1)));
                }
            }
            b"repl-offset" => {
                if let (Some(r), Ok(offset)) = (self.loaded.repl.as_mut(), value.parse()) {
                    r.1 = offset;
                }
            }
            b"used-mem" => {
                let bytes: f64 = value.parse().unwrap_or(0.0);
                log_notice!(
                    "RDB memory usage when created {:.2} Mb",
                    bytes / 1024.0 / 1024.0
                );
            }
            _ => {}
        }
    }

    fn function(&mut self, code: Vec<u8>) -> Result<(), LoadError> {
        let library = compile_library(self.scripting, &code)
            .map_err(|e| LoadError::Refused(format!("Failed loading library, {}", e.0)))?;
        self.libraries.push(library);
        Ok(())
    }

    fn has_db(&self, db: u64) -> bool {
        db < self.locked.keyspace().databases() as u64
    }

    /// Size the database's shards for the keys announced, each for its share. The
    /// count is capped: a corrupt file must not make the load allocate without end
    /// (past the cap, tables grow as keys arrive).
    fn db_size_hint(&mut self, db: usize, keys: u64, _volatile: u64) {
        const MOST_KEYS_PRESIZED: u64 = 1 << 24;
        let shards = self.locked.keyspace().shards_per_db();
        let per_shard = keys.min(MOST_KEYS_PRESIZED) as usize / shards;
        for shard in 0..shards {
            self.locked.shard_at(db, shard).reserve(per_shard);
        }
    }

    fn key(
        &mut self,
        db: usize,
        key: Vec<u8>,
        value: Value,
        meta: KeyMeta,
    ) -> Result<(), LoadError> {
        if meta.expire_at != 0 && meta.expire_at < self.now_ms && !self.keep_expired {
            self.loaded.expired += 1;
            return Ok(());
        }
        let access = self
            .clock
            .restored(meta.idle_seconds, meta.freq, self.now_ms)
            .unwrap_or_else(|| self.clock.initial(self.now_ms));
        let hash = hash_key(&key);
        let shard = self.locked.keyspace().shard_of(hash);
        if let Some(ts) = meta.ts {
            // An active-replication peer's key: it is merged only where it is the
            // newest write (last writer wins, tombstones included).
            crate::hlc::observe(ts);
            if self.merge && self.locked.shard_at(db, shard).newest_ts(hash, &key) >= ts {
                return Ok(());
            }
        }
        let data = EntryData {
            value,
            expire_at: meta.expire_at,
            ts: meta
                .ts
                .unwrap_or_else(|| crate::hlc::next_after(0, self.now_ms)),
        };
        let entry = EntryBox::new(&key, data, access);
        let replaced = self.locked.shard_at(db, shard).insert(hash, entry);
        if replaced.is_some() && !self.merge {
            return Err(LoadError::Refused(format!(
                "RDB has duplicated key '{}' in DB {db}",
                String::from_utf8_lossy(&key)
            )));
        }
        self.loaded.keys += 1;
        Ok(())
    }

    fn warning(&mut self, message: std::fmt::Arguments<'_>) {
        log_warning!("{message}");
    }

    /// A peer removed `key` at `ts`: an older key here goes, and the grave stays
    /// (only while this node keeps graves, that is, replicates actively).
    fn grave(&mut self, db: usize, key: &[u8], ts: u64) {
        let hash = hash_key(key);
        let shard = self.locked.keyspace().shard_of(hash);
        let shard = self.locked.shard_at(db, shard);
        if shard.graves().is_none() {
            return;
        }
        if shard.find(hash, key).is_some_and(|e| e.ts < ts) {
            if let Some(entry) = shard.remove(hash, key) {
                entry.free(false);
            }
        }
        if shard.find(hash, key).is_none() {
            shard.bury(key, ts);
        }
    }

    /// A peer flushed database `db` at `ts`: older keys here go.
    fn graves_floor(&mut self, db: usize, ts: u64) {
        if !self.merge {
            return;
        }
        for shard in 0..self.locked.keyspace().shards_per_db() {
            let shard = self.locked.shard_at(db, shard);
            if shard.graves().is_some() {
                for entry in shard.take_older_than(ts) {
                    entry.free(false);
                }
            }
        }
    }
}

/// Load the file at `path` into the shards `locked` holds (all of them), adding its
/// function libraries. On error the keys read so far stay: the caller exits (start)
/// or reports it (DEBUG RELOAD), as Redis does.
pub fn load_file(
    path: &Path,
    locked: &mut Locked,
    scripting: &Scripting,
    limits: &Limits,
    verify_checksum: bool,
    merge: bool,
) -> Result<Loaded, LoadError> {
    let reader = std::fs::File::open(path).map_err(LoadError::Io)?;
    let buffered = std::io::BufReader::with_capacity(1 << 16, reader);
    let how = LoadHow {
        verify_checksum,
        merge,
        keep_expired: false,
    };
    load_reader(buffered, locked, scripting, limits, how)
}

/// How a load treats what it finds.
#[derive(Debug, Clone, Copy)]
pub struct LoadHow {
    /// `rdbchecksum`: check the footer.
    pub verify_checksum: bool,
    /// Replace keys already in memory instead of refusing them.
    pub merge: bool,
    /// Keep keys whose deadline passed (a replica loading its master's sync).
    pub keep_expired: bool,
}

/// Load an RDB read from `reader` (a file, an AOF's base or preamble, a replica's
/// socket: read as it arrives, never held whole) into the shards `locked` holds (all of them). The reader is
/// read up to the file's footer and no further.
pub fn load_reader(
    reader: impl std::io::Read,
    locked: &mut Locked,
    scripting: &Scripting,
    limits: &Limits,
    how: LoadHow,
) -> Result<Loaded, LoadError> {
    let mut into = IntoKeyspace {
        clock: locked.clock(),
        now_ms: crate::hlc::unix_ms(),
        locked,
        scripting,
        libraries: Vec::new(),
        loaded: Loaded::default(),
        merge: how.merge,
        keep_expired: how.keep_expired,
    };
    file::read(reader, limits, how.verify_checksum, &mut into)?;
    let (libraries, loaded) = (std::mem::take(&mut into.libraries), into.loaded);
    scripting
        .libraries
        .install(libraries, Collision::Replace)
        .map_err(|e| LoadError::Refused(format!("Failed loading library, {}", e.0)))?;
    note_deadlines(locked);
    Ok(loaded)
}

/// Tell the active expiry cycle where the loaded deadlines are.
fn note_deadlines(locked: &mut Locked) {
    let ks = locked.keyspace();
    for db in 0..ks.databases() {
        for shard in 0..ks.shards_per_db() {
            let next = locked.shard_at(db, shard).next_due();
            ks.note_deadline(ks.global_id(db, shard), next);
        }
    }
}
