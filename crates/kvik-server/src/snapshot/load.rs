//! Loading an RDB file into the keyspace: at startup and for DEBUG RELOAD.
//!
//! Owns turning what the file reader finds into entries and libraries: expired keys
//! are dropped (kvik is always a master), duplicates refused, access data restored.
//! Must not touch the file format (the reader's) or the save bookkeeping.

use super::KeyDelay;
use crate::keyspace::{hash_key, AccessClock, EntryBox, EntryData, Locked};
use crate::loading::Loading;
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
    /// Where progress goes, and the loaded bytes at which others were last served.
    loading: Option<(&'l Loading, u64)>,
    /// `key-load-delay`.
    key_delay: KeyDelay,
}

impl IntoKeyspace<'_, '_> {
    /// Every `loading-process-events-interval-bytes`, let the threads waiting for
    /// the shards have them for a moment (INFO keyspace shows the keys loaded so
    /// far, as Redis serves clients while it loads), and give up if SHUTDOWN came.
    fn serve_others(&mut self) -> Result<(), LoadError> {
        let Some((loading, mark)) = &mut self.loading else {
            return Ok(());
        };
        if !loading.serve_due(mark) {
            return Ok(());
        }
        if loading.stop_requested() {
            return Err(LoadError::Refused("Loading stopped by a shutdown".into()));
        }
        self.locked.let_waiters_in();
        Ok(())
    }
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
                if let Some((loading, _)) = self.loading {
                    loading.note_rdb_used_mem(bytes as u64);
                }
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
        self.key_delay.after_keys(1);
        self.serve_others()?;
        if meta.expire_at != 0 && meta.expire_at < self.now_ms && !self.keep_expired {
            self.loaded.expired += 1;
            return Ok(());
        }
        let access = self
            .clock
            .restored(meta.idle_seconds, meta.freq, self.now_ms)
            .unwrap_or_else(|| self.clock.initial(self.now_ms));
        let data = EntryData {
            value,
            expire_at: meta.expire_at,
            ts: crate::hlc::next_after(0, self.now_ms),
        };
        let hash = hash_key(&key);
        let shard = self.locked.keyspace().shard_of(hash);
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
}

/// Load the file at `path` into the shards `locked` holds (all of them), adding its
/// function libraries. On error the keys read so far stay: the caller exits (start)
/// or reports it (DEBUG RELOAD), as Redis does. The file's bytes count as loaded
/// for the load under way, if `how` names one.
pub fn load_file(
    path: &Path,
    locked: &mut Locked,
    scripting: &Scripting,
    limits: &Limits,
    how: LoadHow,
) -> Result<Loaded, LoadError> {
    let reader = std::fs::File::open(path).map_err(LoadError::Io)?;
    let buffered = std::io::BufReader::with_capacity(1 << 16, reader);
    match how.loading {
        Some(loading) => load_reader(loading.counted(buffered), locked, scripting, limits, how),
        None => load_reader(buffered, locked, scripting, limits, how),
    }
}

/// How a load treats what it finds.
#[derive(Clone, Copy, Default)]
pub struct LoadHow<'p> {
    /// `rdbchecksum`: check the footer.
    pub verify_checksum: bool,
    /// Replace keys already in memory instead of refusing them.
    pub merge: bool,
    /// Keep keys whose deadline passed (a replica loading its master's sync).
    pub keep_expired: bool,
    /// The load under way, which the reader counts bytes for: others are served
    /// at its interval, and a shutdown stops the load.
    pub loading: Option<&'p Loading>,
    /// `key-load-delay`: microseconds slept per key (negative: one every that
    /// many keys), for tests that need a slow load.
    pub key_delay_us: i32,
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
        loading: how.loading.map(|l| (l, l.loaded_bytes())),
        key_delay: KeyDelay::new(how.key_delay_us),
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
