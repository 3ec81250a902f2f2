//! Member expiry in the keyspace: set members, hash fields and sorted-set members
//! whose deadlines (kept in the value, see [`crate::types::member_expiry`]) have
//! passed are removed lazily, when a command touches their key, and actively, by the
//! expiry cycle, a bounded number per shard visit.
//!
//! Each shard indexes the keys that hold member deadlines by (deadline, key hash),
//! as it indexes key deadlines. The index is a set of hints: every key with member
//! deadlines has a pair at or before its earliest one; a pair may be early or stale
//! (its member went another way), and is then dropped or moved when reached. So a
//! key is indexed once, not once per member, and commands that remove members never
//! touch the index. Nothing here costs anything while no member has a deadline.
//!
//! What an expired member emits is said once, in [`KeyEnv::members_expired`]: the
//! removal that reproduces it elsewhere (SREM, HDEL or ZREM, so replicas and the AOF
//! stay identical whatever their clocks), the WATCH signal and KeyDB's keyspace
//! event; a key left empty goes as an expired key goes (DEL, `expired`).
//!
//! Must not touch: key deadlines (shard.rs, expire.rs), what commands reply.

use super::shard::index_add;
use super::{hash_key, Entry, EntryBox, KeyEnv, Locked, ShardData};
use crate::notify::class;
use crate::types::Value;
use std::collections::BTreeMap;

/// Index a value's earliest member deadline, if it has one, under its key's hash.
pub(super) fn note(index: &mut BTreeMap<(u64, u64), u32>, hash: u64, value: &Value) {
    if let Some(at) = value.next_member_deadline() {
        index_add(index, at, hash);
    }
}

/// The command that removes one member of `value`'s type, as the effect stream
/// carries an expired member.
fn removal_command(value: &Value) -> &'static [u8] {
    match value {
        Value::Set(_) => b"SREM",
        Value::Hash(_) => b"HDEL",
        _ => b"ZREM",
    }
}

/// Take out up to `budget` members of `entry` whose deadlines are at or before
/// `now_ms`, earliest first.
fn pop_due(entry: &mut Entry, now_ms: u64, budget: usize) -> Vec<Box<[u8]>> {
    let mut gone = Vec::new();
    while gone.len() < budget {
        let Some(member) = entry.value.members_mut().and_then(|c| c.pop_due(now_ms)) else {
            break;
        };
        gone.push(member);
    }
    gone
}

/// A value whose due members a command does not see, as it was before they were
/// taken out (see [`Locked::hide_due_members`]).
pub(super) struct Hidden {
    db: usize,
    hash: u64,
    key: Vec<u8>,
    /// The entry's timestamp then: a write since leaves the entry as written.
    ts: u64,
    value: Value,
}

fn is_empty_collection(value: &Value) -> bool {
    value.members().is_some_and(|c| c.member_count() == 0)
}

impl ShardData {
    /// Does any key of this shard hold member deadlines (or did it, lately)?
    #[inline]
    pub fn has_member_deadlines(&self) -> bool {
        !self.member_deadlines.is_empty()
    }

    /// The earliest deadline of a key or a member in this shard: when the active
    /// cycle next has work here.
    pub fn next_due(&self) -> Option<u64> {
        let members = self
            .member_deadlines
            .first_key_value()
            .map(|(&(at, _), _)| at);
        match (self.next_deadline(), members) {
            (Some(key), Some(member)) => Some(key.min(member)),
            (key, member) => key.or(member),
        }
    }

    /// Index a member deadline `at` just given to the key with hash `hash` whose
    /// earliest member deadline was `previous` (None: it had none).
    pub fn note_member_deadline(&mut self, hash: u64, at: u64, previous: Option<u64>) {
        if previous.is_none_or(|p| at < p) {
            index_add(&mut self.member_deadlines, at, hash);
        }
    }

    /// Remove about `limit` due members, from the key whose index pair is earliest
    /// on. `on_key` hears each key that lost members (still in place, possibly
    /// empty) with the members it lost; an emptied key is then taken out and handed
    /// to `on_emptied` (which returns the timestamp of its removal, for its grave).
    /// Returns how many members went.
    fn expire_members_due(
        &mut self,
        now_ms: u64,
        limit: usize,
        mut on_key: impl FnMut(&mut Entry, &[Box<[u8]>]),
        mut on_emptied: impl FnMut(EntryBox) -> u64,
    ) -> usize {
        let mut removed = 0;
        while removed < limit {
            let Some((&(at, hash), _)) = self.member_deadlines.first_key_value() else {
                break;
            };
            if at > now_ms {
                break;
            }
            // Every key under this hash is looked at and indexed afresh, so the pair
            // can go whatever it stood for.
            self.member_deadlines.remove(&(at, hash));
            let mut emptied = Vec::new();
            for slot in self.table.iter_hash_mut(hash) {
                let entry: &mut Entry = slot;
                if entry.value.next_member_deadline().is_none() || hash_key(entry.key()) != hash {
                    continue;
                }
                let gone = pop_due(entry, now_ms, limit.saturating_sub(removed));
                if !gone.is_empty() {
                    removed += gone.len();
                    let before = entry.ts;
                    on_key(entry, &gone);
                    super::shard::flip(&mut self.digest, entry.key(), before);
                    super::shard::flip(&mut self.digest, entry.key(), entry.ts);
                }
                if is_empty_collection(&entry.value) {
                    emptied.push(entry.key().to_vec());
                } else {
                    note(&mut self.member_deadlines, hash, &entry.value);
                }
            }
            for key in emptied {
                if let Some(entry) = self.remove(hash, &key) {
                    let ts = on_emptied(entry);
                    self.bury(&key, ts);
                }
            }
        }
        removed
    }
}

impl KeyEnv<'_> {
    /// What follows members the server removed from `entry` because their
    /// deadlines passed: per member, the removal effect (stamped after the key's
    /// last write, the key stamped with it; `append` puts it where the caller's
    /// effects go); then the WATCH signal and the keyspace event: KeyDB's `srem`
    /// for a set that still has members, Redis 7.4's `hexpired` for a hash, none
    /// for a sorted set (KeyDB sends none); an emptied key's `expired` follows from
    /// its removal.
    pub fn members_expired(
        &self,
        db: usize,
        entry: &mut Entry,
        members: &[Box<[u8]>],
        now_ms: u64,
        mut append: impl FnMut(u64, &[&[u8]]),
    ) {
        let command = removal_command(&entry.value);
        for member in members {
            entry.ts = crate::hlc::next_after(entry.ts, now_ms);
            append(entry.ts, &[command, entry.key(), member]);
        }
        self.keyspace.signal_modified(db, entry.key());
        match &entry.value {
            Value::Set(_) if !is_empty_collection(&entry.value) => {
                self.bus.notify(class::SET, "srem", db, entry.key())
            }
            Value::Hash(_) => self.bus.notify(class::HASH, "hexpired", db, entry.key()),
            _ => {}
        }
    }
}

/// The active cycle's share of member expiry in one locked shard of `db`: about
/// `limit` due members go, with what they emit.
pub(super) fn expire_due_members(
    env: &KeyEnv,
    db: usize,
    shard: &mut ShardData,
    now_ms: u64,
    limit: usize,
) {
    if !shard.has_member_deadlines() {
        return;
    }
    let append = |ts, argv: &[&[u8]]| env.effects.append(db, ts, argv);
    shard.expire_members_due(
        now_ms,
        limit,
        |entry, gone| env.members_expired(db, entry, gone, now_ms, append),
        |entry| {
            let expired = (class::EXPIRED, "expired");
            env.removed_by_server(db, &entry, now_ms, |s| &s.expired_keys, expired, append)
        },
    );
}

impl Locked<'_> {
    /// Lazy member expiry: remove the due members of `key` (live, in `db`), with
    /// what they emit. Returns whether the key went with them (it had no other
    /// members left). While expiry is held, members stay, as keys do.
    pub(super) fn expire_members_if_due(&mut self, db: usize, hash: u64, key: &[u8]) -> bool {
        // Every lookup of a key without a deadline comes here: the shard's own
        // count answers first, nothing else is read unless it has member deadlines.
        if !self.shard_mut(db, hash).has_member_deadlines() {
            return false;
        }
        let now = self.now_ms;
        let env = self.env();
        if env.keyspace.expiry_held(now) {
            return !env.from_master && self.hide_due_members(db, hash, key);
        }
        let Some(entry) = self.shard_mut(db, hash).find_mut(hash, key) else {
            return false;
        };
        if entry.value.next_member_deadline().is_none_or(|at| at > now) {
            return false;
        }
        let gone = pop_due(entry, now, usize::MAX);
        let mut effects = Vec::new();
        let before = entry.ts;
        env.members_expired(db, entry, &gone, now, |ts, argv| {
            effects.push((ts, argv.iter().map(|a| a.to_vec()).collect::<Vec<_>>()));
        });
        let (emptied, after) = (is_empty_collection(&entry.value), entry.ts);
        let shard = self.shard_mut(db, hash);
        super::shard::flip(&mut shard.digest, key, before);
        super::shard::flip(&mut shard.digest, key, after);
        for (ts, argv) in effects {
            let argv: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
            // Not the command's own write: it goes everywhere, as an expired key's DEL.
            self.emit(db, ts, &argv, crate::effects::Targets::ALL);
        }
        if !emptied {
            return false;
        }
        let entry = self
            .shard_mut(db, hash)
            .remove(hash, key)
            .expect("entry found above");
        self.expired(db, &entry);
        true
    }

    /// While expiry is held: a client's command does not see the due members of
    /// `key` (as it does not see a due key), yet they stay until the master removes
    /// them. They are taken out of the value for the command, which is put back as it
    /// was when the command's locks go ([`Locked::unhide_members`]). Returns whether
    /// the key reads as gone (every member is due).
    fn hide_due_members(&mut self, db: usize, hash: u64, key: &[u8]) -> bool {
        let now = self.now_ms;
        let Some(entry) = self.shard_mut(db, hash).find_mut(hash, key) else {
            return false;
        };
        // Hidden already, down to nothing, by an earlier read of this command.
        if is_empty_collection(&entry.value) {
            return true;
        }
        if entry.value.next_member_deadline().is_none_or(|at| at > now) {
            return false;
        }
        let original = entry.value.clone();
        pop_due(entry, now, usize::MAX);
        let emptied = is_empty_collection(&entry.value);
        let ts = entry.ts;
        self.hidden.push(Hidden {
            db,
            hash,
            key: key.to_vec(),
            ts,
            value: original,
        });
        emptied
    }

    /// Put back the values [`Locked::hide_due_members`] took members out of, unless
    /// the command wrote them since (a writable replica's own write is the truth).
    pub(super) fn unhide_members(&mut self) {
        let ks = self.env().keyspace;
        for hidden in std::mem::take(&mut self.hidden) {
            if !self.holds(ks.global_id(hidden.db, ks.shard_of(hidden.hash))) {
                continue;
            }
            let shard = self.shard_mut(hidden.db, hidden.hash);
            if let Some(entry) = shard.find_mut(hidden.hash, &hidden.key) {
                if entry.ts == hidden.ts {
                    entry.value = hidden.value;
                }
            }
        }
    }

    /// Remove the due members of `key` (selected database) now, as their lazy
    /// expiry would (a deadline set in the past).
    pub fn expire_members_now(&mut self, key: &[u8]) {
        let (db, hash) = (self.db, hash_key(key));
        self.expire_members_if_due(db, hash, key);
    }

    /// Give `member` of `key` (a live set, hash or sorted set in the selected
    /// database, holding `member`) the deadline `at`, as a change of the key.
    /// False if there is no such key or member.
    pub fn set_member_deadline(&mut self, key: &[u8], member: &[u8], at: u64) -> bool {
        let Some(entry) = self.get(key) else {
            return false;
        };
        let Some(collection) = entry.value.members_mut() else {
            return false;
        };
        if !collection.has_member(member) {
            return false;
        }
        let previous = collection.next_deadline();
        collection.set_deadline(member, at);
        let (db, hash) = (self.db, hash_key(key));
        self.shard_mut(db, hash)
            .note_member_deadline(hash, at, previous);
        self.modified(key);
        true
    }

    /// Drop the deadline of `member` of `key` (selected database), as a change of
    /// the key. False if it had none.
    pub fn clear_member_deadline(&mut self, key: &[u8], member: &[u8]) -> bool {
        let cleared = self
            .get(key)
            .and_then(|e| e.value.members_mut())
            .and_then(|c| c.clear_deadline(member))
            .is_some();
        if cleared {
            self.modified(key);
        }
        cleared
    }
}
