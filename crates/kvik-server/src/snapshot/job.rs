//! One point-in-time snapshot: what was fixed at its point (key counts, function
//! libraries, aux fields), the shards captured ahead of the writer, and the writer
//! that streams the whole RDB into any [`Sink`] — a file now; a replica's socket or
//! an AOF base file can take the same stream.
//!
//! Owns serializing shards and ordering them into a file. Must not touch files,
//! clients or the save bookkeeping (`mod.rs` does those).

use crate::keyspace::{idle_seconds, AccessClock, Entry, Keyspace, ShardCapture, ShardData};
use crate::persistence::rdb::file::{self, KeyMeta};
use crate::persistence::rdb::io::Sink;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Which access data goes in front of each key, as Redis decides it from
/// `maxmemory-policy`: the idle time under an LRU policy, the counter under LFU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessData {
    None,
    Idle,
    Freq,
}

/// The form a snapshot takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// An RDB file (without its footer).
    Rdb,
    /// The commands that rebuild the dataset: an AOF base written with
    /// `aof-use-rdb-preamble no` (see [`super::commands`]).
    Commands,
}

/// How keys are written.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub form: Form,
    /// `rdbcompression`.
    pub compress: bool,
    pub access: AccessData,
    /// How access fields read (LRU clock or LFU data).
    pub clock: AccessClock,
    /// `rdb-key-save-delay`: a testing knob that slows the writer by this much per
    /// key it serializes itself (never the commands that capture a shard), in
    /// microseconds ([`super::KeyDelay`]).
    pub key_delay: i32,
    /// Active replication: each key's timestamp and the shards' tombstones go in
    /// the file, for a peer to merge it by.
    pub timestamps: bool,
}

/// What the snapshot fixed at its point in time besides the shards.
#[derive(Default)]
pub struct AtPoint {
    /// Per database: (keys, keys with a deadline).
    pub counts: Vec<(usize, usize)>,
    /// The function libraries' code.
    pub functions: Vec<Vec<u8>>,
    /// The server's change counter at the point (what a successful save clears).
    pub dirty: u64,
    /// Unix ms of the point.
    pub now_ms: u64,
    /// The replication id and offset the dataset is at (a full sync's, or a
    /// master's with a backlog): saved as the `repl-id` / `repl-offset` aux fields,
    /// which let a restarted replica continue partially (PSYNC2).
    pub repl: Option<(String, u64)>,
    /// Active replication: which writes of each origin the dataset holds (the
    /// `kvik-seen` aux field, for the peer that merges a full sync).
    pub seen: Option<String>,
}

/// The capture side: shards serialized by whoever met them first.
pub struct Snapshot {
    settings: Settings,
    now_ms: u64,
    /// Shards captured ahead of the writer, by global id, until it writes them.
    captured: Mutex<HashMap<usize, Vec<u8>>>,
}

impl ShardCapture for Snapshot {
    fn capture(&self, global_id: usize, shard: &ShardData) {
        let bytes = self.serialize(shard);
        self.captured.lock().insert(global_id, bytes);
    }
}

/// The writer stopped because it was told to (SHUTDOWN, FLUSHALL during a BGSAVE).
#[derive(Debug)]
pub struct Cancelled;

impl Snapshot {
    pub fn new(settings: Settings, now_ms: u64) -> Snapshot {
        Snapshot {
            settings,
            now_ms,
            captured: Mutex::new(HashMap::new()),
        }
    }

    /// Start a snapshot of `keyspace` now. `None` when another one runs.
    pub fn begin(
        keyspace: &Keyspace,
        settings: Settings,
        functions: Vec<Vec<u8>>,
        dirty: impl FnOnce() -> u64,
    ) -> Option<(Arc<Snapshot>, AtPoint)> {
        let now_ms = crate::hlc::unix_ms();
        let snapshot = Arc::new(Snapshot::new(settings, now_ms));
        let mut point = AtPoint {
            functions,
            now_ms,
            ..AtPoint::default()
        };
        let per_db = keyspace.shards_per_db();
        let started = keyspace.begin_capture(snapshot.clone(), |shards| {
            point.counts = shards
                .chunks(per_db)
                .map(|db| {
                    db.iter()
                        .fold((0, 0), |(k, v), s| (k + s.len(), v + s.volatile_len()))
                })
                .collect();
            point.dirty = dirty();
        });
        started.then_some((snapshot, point))
    }

    pub fn form(&self) -> Form {
        self.settings.form
    }

    /// Every key of a shard, as the file holds them, then its tombstones when the
    /// file is for active-replication peers.
    fn serialize(&self, shard: &ShardData) -> Vec<u8> {
        let mut out = Vec::new();
        if self.settings.form == Form::Commands {
            for entry in shard.iter() {
                super::commands::write_key(&mut out, entry.key(), &entry.value, entry.expire_at);
            }
            return out;
        }
        let counters = self.settings.timestamps && shard.counts_any();
        let elements = self.settings.timestamps && shard.marks_any();
        for entry in shard.iter() {
            if counters {
                let hash = crate::keyspace::hash_key(entry.key());
                if let Some(counter) = shard.counter(hash, entry.key()) {
                    file::write_counter(&mut out, counter.encode().as_bytes());
                }
                for (member, counter) in shard.member_counters(hash, entry.key()) {
                    let aux = crate::keyspace::encode_member_counter(member, counter);
                    file::write_counter(&mut out, aux.as_bytes());
                }
            }
            if let Some(since) = shard
                .ttl_since_of(entry)
                .filter(|_| self.settings.timestamps)
            {
                let changes = shard.ttl_changes_of(entry);
                file::write_ttl_since(&mut out, since.value, since.ttl_changed, None, &changes);
            }
            if elements {
                let hash = crate::keyspace::hash_key(entry.key());
                if let Some(state) = shard.elements(hash, entry.key()) {
                    file::write_elements(&mut out, &state.encode());
                }
            }
            file::write_key(
                &mut out,
                entry.key(),
                &entry.value,
                self.meta(entry),
                self.settings.compress,
            );
        }
        if let Some(graves) = shard.graves().filter(|_| self.settings.timestamps) {
            if graves.floor() != 0 {
                file::write_graves_floor(&mut out, graves.floor());
            }
            for (key, ts) in graves.iter() {
                // A collection emptied element by element: what its removals saw
                // goes before its grave.
                let hash = crate::keyspace::hash_key(key);
                if elements {
                    if let Some(state) = shard.elements(hash, key) {
                        file::write_elements(&mut out, &state.encode());
                    }
                }
                // And the TTL register it keeps there.
                if let Some(ttl) = shard.key_ttl(hash, key) {
                    if let Some(since) = ttl.since {
                        let (value, changed) = (since.value, since.ttl_changed);
                        let changes = shard.ttl_changes(hash, key);
                        let deadline = Some(ttl.expire_at);
                        file::write_ttl_since(&mut out, value, changed, deadline, &changes);
                    }
                }
                file::write_grave(&mut out, key, ts);
            }
        }
        out
    }

    fn meta(&self, entry: &Entry) -> KeyMeta {
        let clock = self.settings.clock;
        KeyMeta {
            expire_at: entry.expire_at,
            idle_seconds: (self.settings.access == AccessData::Idle)
                .then(|| idle_seconds(entry.access, self.now_ms)),
            freq: match self.settings.access {
                AccessData::Freq => clock.frequency(entry.access, self.now_ms),
                _ => None,
            },
            ts: self.settings.timestamps.then_some(entry.ts),
        }
    }

    /// Write the whole snapshot to `out`, up to (not including) the EOF opcode and
    /// footer. Checks `cancel` between shards.
    pub fn write(
        &self,
        keyspace: &Keyspace,
        point: &AtPoint,
        out: &mut impl Sink,
        cancel: &AtomicBool,
    ) -> Result<(), Cancelled> {
        let rdb = self.settings.form == Form::Rdb;
        if rdb {
            file::write_header(out, &aux_fields(point));
        }
        for code in &point.functions {
            if rdb {
                file::write_function(out, code);
            } else {
                let mut command = Vec::new();
                super::commands::write_function(&mut command, code);
                out.put(&command);
            }
        }
        for (db, &(keys, volatile)) in point.counts.iter().enumerate() {
            // A peer needs the tombstones of an empty database too.
            if keys == 0 && !self.settings.timestamps {
                continue;
            }
            if rdb {
                file::write_db_start(out, db, keys, volatile);
            } else {
                let mut select = Vec::new();
                super::commands::write_select(&mut select, db);
                out.put(&select);
            }
            let first = keyspace.global_id(db, 0);
            let db_ids = first..first + keyspace.shards_per_db();
            for id in db_ids.clone() {
                if cancel.load(Ordering::Relaxed) {
                    return Err(Cancelled);
                }
                self.write_captured(&db_ids, out);
                self.write_if_pending(keyspace, id, out);
            }
            // Every shard of the database is captured now: the last ones out.
            self.write_captured(&db_ids, out);
        }
        Ok(())
    }

    /// Shard `id`, serialized now if nobody captured it yet (those captured are
    /// written by [`Snapshot::write_captured`]).
    fn write_if_pending(&self, keyspace: &Keyspace, id: usize, out: &mut impl Sink) {
        let own = keyspace.capture_if_pending(id, |shard| (self.serialize(shard), shard.len()));
        if let Some((bytes, keys)) = own {
            out.put(&bytes);
            // Slept after the lock went, so the knob slows the save, not writers.
            super::KeyDelay::new(self.settings.key_delay).after_keys(keys as u64);
        }
    }

    /// Write out, and free, the shards of the database being written (global ids
    /// `db_ids`) that commands captured since the last look. The order of keys
    /// within a database is free in the file, so a captured shard goes out at
    /// once instead of waiting in memory for the writer to reach it: under
    /// writes spread over every shard, that wait held most of the dataset's
    /// serialized bytes at once.
    fn write_captured(&self, db_ids: &std::ops::Range<usize>, out: &mut impl Sink) {
        let ready: Vec<Vec<u8>> = {
            let mut captured = self.captured.lock();
            if captured.is_empty() {
                return;
            }
            let ids: Vec<usize> = captured
                .keys()
                .copied()
                .filter(|id| db_ids.contains(id))
                .collect();
            ids.iter().filter_map(|id| captured.remove(id)).collect()
        };
        for bytes in ready {
            out.put(&bytes);
        }
    }
}

/// The aux fields Redis 7.0 writes, in its order: with the replication ones when
/// the point has a replication id and offset.
fn aux_fields(point: &AtPoint) -> Vec<(&'static str, String)> {
    let used = crate::stats::allocator_stats().allocated;
    let mut fields = vec![
        ("redis-ver", crate::version::REDIS_VERSION.to_string()),
        ("redis-bits", usize::BITS.to_string()),
        ("ctime", (point.now_ms / 1000).to_string()),
        ("used-mem", used.to_string()),
    ];
    if let Some((replid, offset)) = &point.repl {
        fields.push(("repl-stream-db", "0".to_string()));
        fields.push(("repl-id", replid.clone()));
        fields.push(("repl-offset", offset.to_string()));
    }
    if let Some(seen) = &point.seen {
        fields.push((file::SEEN, seen.clone()));
    }
    fields.push(("aof-base", "0".to_string()));
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::{hash_key, EntryBox, EntryData};
    use crate::types::string::StrValue;
    use crate::types::Value;

    /// One key per shard of a one-database keyspace of four shards, by shard.
    fn one_key_per_shard(keyspace: &Keyspace) -> Vec<String> {
        let mut names: Vec<Option<String>> = vec![None; keyspace.shards_per_db()];
        for i in 0.. {
            let key = format!("k{i}");
            let shard = keyspace.shard_of(hash_key(key.as_bytes()));
            names[shard].get_or_insert(key);
            if names.iter().all(Option::is_some) {
                break;
            }
        }
        let names: Vec<String> = names.into_iter().flatten().collect();
        for (shard, key) in names.iter().enumerate() {
            let data = EntryData {
                value: Value::Str(StrValue::from_bytes(b"v")),
                expire_at: 0,
                ts: 1,
            };
            let entry = EntryBox::new(key.as_bytes(), data, 0);
            let mut locked = keyspace.shard(0, shard).lock();
            assert!(locked.insert(hash_key(key.as_bytes()), entry).is_none());
        }
        names
    }

    #[test]
    fn a_captured_shard_is_written_out_before_the_writer_reaches_it() {
        let keyspace = Keyspace::new(1, 2);
        let keys = one_key_per_shard(&keyspace);
        let settings = Settings {
            form: Form::Commands,
            compress: false,
            access: AccessData::None,
            clock: AccessClock::Lru,
            key_delay: 0,
            timestamps: false,
        };
        let (snapshot, point) = Snapshot::begin(&keyspace, settings, Vec::new(), || 0).unwrap();
        // A command meets the last shard first: it is captured...
        drop(keyspace.lock_for_use(3));
        assert_eq!(snapshot.captured.lock().len(), 1);
        let mut out = Vec::new();
        snapshot
            .write(&keyspace, &point, &mut out, &AtomicBool::new(false))
            .unwrap();
        keyspace.end_capture();
        // ...and goes out first, instead of waiting in memory for its turn.
        let text = String::from_utf8(out).unwrap();
        let at = |key: &str| text.find(&format!("\r\n{key}\r\n")).unwrap();
        assert!(keys[..3].iter().all(|key| at(&keys[3]) < at(key)), "{text}");
        assert!(snapshot.captured.lock().is_empty());
    }
}
