//! Time to live as a register that converges, while active replication runs.
//!
//! Two nodes that change a key's TTL concurrently (EXPIRE 100 on one, EXPIRE 1000 on
//! the other, during a partition) must end with the same deadline whatever order
//! they hear the two changes in. Last writer wins would keep whichever change came
//! last by the clock; kvik keeps the longest instead: the TTL of a key is a register
//! merged by max, no deadline (PERSIST) counting as the latest of all, among the TTL
//! changes (EXPIRE family, PERSIST, GETEX's options) made since the key's last write
//! of its value. A value write (SET without KEEPTTL, APPEND, a list push ...) starts
//! the register over, and is ordered against TTL changes by last writer wins as
//! every write is. Max is order-independent, so every node computes the same TTL;
//! the price is that, since the last value write, a TTL can be lengthened or
//! removed but not shortened (EXPIRE then answers 0, as it does when GT says no).
//!
//! A set, hash or sorted set written element by element (SADD, HDEL ...) merges its
//! elements apart from its TTL: an element write is not a value write here, so it
//! neither starts the register over nor makes an older TTL change lose to it. The
//! register just follows the key's timestamp across such writes, the same way
//! element timestamps follow it across TTL changes. Element writes that empty the
//! collection leave it under the key's grave, with the key's deadline, as they
//! leave the element timestamps: a peer's TTL change that arrives meanwhile
//! merges into it, and an element write that brings the collection back gives it
//! that deadline (add-wins makes it the same collection as the peer's, which
//! was never emptied; a DEL or an expiry starts over). A counted string's
//! increments (INCR and its kin, which merge as counters) are no value writes
//! either: the register follows them as it follows element writes.
//!
//! What a node must know per key for that: when the value the register holds was
//! written, and whether the TTL changed since (a peer's TTL change older than the
//! key's last write here, but newer than its value, still merges). A [`TtlMarks`]
//! map holds it, per shard and only while the node replicates actively, for the
//! keys whose last write was a TTL change or an element write. A mark is valid
//! while the key's timestamp is the one the mark was taken at: any other write
//! restamps the key, which retires the mark without a lookup here.
//!
//! Owns the marks and the merge rule. Must not touch entries: the shard applies
//! what [`join`] decides.

use std::collections::HashMap;

use smallvec::SmallVec;

/// A key's TTL register, while it is current: the value write it started from, and
/// whether its TTL changed since (else only element writes came after the value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Since {
    pub value: u64,
    pub ttl_changed: bool,
}

impl Since {
    /// The register of a key whose value was written at `value`, with only
    /// element writes since.
    pub fn value_only(value: u64) -> Since {
        Since {
            value,
            ttl_changed: false,
        }
    }

    /// The register of a key whose TTL changed on the value written at `value`.
    pub fn ttl_changed_on(value: u64) -> Since {
        Since {
            value,
            ttl_changed: true,
        }
    }
}

/// A key's register, the key's timestamp it is valid at, and the key's deadline
/// then (what a collection emptied by element writes gets back when an element
/// write brings it back: see [`TtlMarks::follow`]).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mark {
    since: Since,
    at: u64,
    deadline: u64,
    /// The TTL changes the register merged that decide its deadline after any
    /// point in time, for a removal older than the key that reaches it later
    /// (see [`TtlMarks::restart_at_removal`]).
    changes: Changes,
}

/// TTL changes as (timestamp, deadline), oldest first, each deadline shorter than
/// the one before it: a change older than another and no longer than it decides
/// nothing the other does not, so the list stays short (one or two entries).
pub type Changes = SmallVec<[(u64, u64); 2]>;

/// The changes of a register known only by its newest write at `ts` and the
/// deadline it holds (a full sync's copy).
fn one_change(ts: u64, deadline: u64) -> Changes {
    smallvec::smallvec![(ts, deadline)]
}

/// Add the change made at `ts` to deadline `to` to `changes`.
pub fn add_change(changes: &mut Changes, ts: u64, to: u64) {
    if changes.iter().any(|&(t, d)| t >= ts && !lengthens(to, d)) {
        return;
    }
    // Those older and no longer than it decide nothing it does not.
    changes.retain(|&mut (t, d)| t > ts || lengthens(d, to));
    let at = changes
        .iter()
        .position(|&(t, _)| t > ts)
        .unwrap_or(changes.len());
    changes.insert(at, (ts, to));
}

/// The TTL marks of one shard.
#[derive(Default)]
pub struct TtlMarks {
    marks: HashMap<Box<[u8]>, Mark>,
}

impl TtlMarks {
    fn current(&self, key: &[u8], key_ts: u64) -> Option<&Mark> {
        if self.marks.is_empty() {
            return None;
        }
        self.marks.get(key).filter(|m| m.at == key_ts)
    }

    /// The register of `key` (whose timestamp, or grave's, is `key_ts`); `None`
    /// when its last write was neither a TTL change nor an element write.
    pub fn since(&self, key: &[u8], key_ts: u64) -> Option<Since> {
        self.current(key, key_ts).map(|m| m.since)
    }

    /// The TTL changes the register of `key` merged (see [`Changes`]).
    pub fn changes(&self, key: &[u8], key_ts: u64) -> Changes {
        self.current(key, key_ts)
            .map(|m| m.changes.clone())
            .unwrap_or_default()
    }

    /// The deadline the register of `key` gives it (see [`TtlMarks::since`]).
    pub fn deadline(&self, key: &[u8], key_ts: u64) -> Option<u64> {
        self.current(key, key_ts).map(|m| m.deadline)
    }

    /// `key`'s register is now `since`, its deadline `deadline`, made by
    /// `changes`; the key's timestamp is now `at`.
    pub fn note(&mut self, key: &[u8], since: Since, at: u64, deadline: u64, changes: Changes) {
        let mark = Mark {
            since,
            at,
            deadline,
            changes: if since.ttl_changed {
                changes
            } else {
                Changes::new()
            },
        };
        match self.marks.get_mut(key) {
            Some(old) => *old = mark,
            None => {
                self.marks.insert(key.into(), mark);
            }
        }
    }

    /// An element write took `key` from timestamp `before` to `at` (a grave's,
    /// when it emptied the collection), the key's deadline being `deadline`
    /// (`None`: the key is gone). Its register, current at `before`, goes on,
    /// under the grave too; else the value it holds is the one the key had at
    /// `before`, with no TTL change since. Returns the deadline the register
    /// gives the key: a collection emptied by element writes and written again
    /// the same way is the same collection, as its elements say (add-wins), and
    /// keeps its deadline.
    pub fn follow(&mut self, key: &[u8], before: u64, at: u64, deadline: Option<u64>) -> u64 {
        let (since, deadline, changes) = match self.current(key, before) {
            Some(mark) => (mark.since, mark.deadline, mark.changes.clone()),
            None => (
                Since::value_only(before),
                deadline.unwrap_or(0),
                Changes::new(),
            ),
        };
        self.note(key, since, at, deadline, changes);
        deadline
    }

    /// A peer's TTL change made at `ts` to deadline `to` reached `key` removed
    /// here at `grave_ts`. Element writes that emptied the key left its register
    /// under the grave: the register merges the change as the key would have
    /// (see [`lengthens`]). A removal of the whole key started the register
    /// over: a change newer than it is the first it holds. Either way, an
    /// element write that brings the collection back gives it that deadline, as
    /// the peer's collection has it.
    pub fn change_under_grave(&mut self, key: &[u8], grave_ts: u64, ts: u64, to: u64) {
        match self.marks.get_mut(key).filter(|m| m.at == grave_ts) {
            Some(mark) => {
                if !mark.since.ttl_changed || lengthens(to, mark.deadline) {
                    mark.deadline = to;
                }
                mark.since.ttl_changed = true;
                add_change(&mut mark.changes, ts, to);
            }
            // Older than the removal, it went with it.
            None if ts < grave_ts => {}
            None => {
                let since = Since::ttl_changed_on(grave_ts);
                self.note(key, since, grave_ts, to, one_change(ts, to));
            }
        }
    }

    /// A peer's removal of the whole `key` (DEL, UNLINK) made at `removed`
    /// reached it here older than its last write, at `key_ts`, which element
    /// writes made: to the TTL register the removal is a value write, so the
    /// register starts over from it: the TTL changes older than the removal
    /// go, the newer ones stay, and the key ends with the deadline they give,
    /// as on the nodes that met the removal first and merged them on it.
    /// Returns the key's deadline now, `None` when the register was not older
    /// than the removal (nothing changes).
    pub fn restart_at_removal(&mut self, key: &[u8], key_ts: u64, removed: u64) -> Option<u64> {
        let mark = self.current(key, key_ts)?;
        if mark.since.value >= removed {
            return None;
        }
        let changes: Changes = mark
            .changes
            .iter()
            .copied()
            .filter(|&(t, _)| t > removed)
            .collect();
        let since = Since {
            value: removed,
            ttl_changed: !changes.is_empty(),
        };
        let deadline = changes.first().map_or(0, |&(_, d)| d);
        self.note(key, since, key_ts, deadline, changes);
        Some(deadline)
    }

    /// `key`, whose register was current at `key_ts`, was removed whole at
    /// `removed`, where its grave now stands: the register starts over from the
    /// removal (see [`TtlMarks::restart_at_removal`]) and stays under the
    /// grave. Returns the register kept there; `None`, nothing kept, when none
    /// was current.
    pub fn restart_under_grave(&mut self, key: &[u8], key_ts: u64, removed: u64) -> Option<Since> {
        self.restart_at_removal(key, key_ts, removed)?;
        let mark = self.marks.get_mut(key)?;
        mark.at = removed;
        Some(mark.since)
    }

    /// Forget the marks that no longer say anything: those retired (`key_ts`
    /// says a key's timestamp now, or its grave's, `None` when it has neither),
    /// and the registers with no TTL change whose last write is older than
    /// `before` (no peer can send an older write: the value they name is the
    /// key's timestamp on every node). Registers with TTL changes stay until the
    /// key's next value write. Returns how many registers without a TTL change
    /// are left (a later pass, with a later `before`, drops them).
    pub fn collect(&mut self, before: u64, key_ts: impl Fn(&[u8]) -> Option<u64>) -> usize {
        self.marks.retain(|key, mark| {
            key_ts(key) == Some(mark.at) && (mark.since.ttl_changed || mark.at >= before)
        });
        super::release_sparse(&mut self.marks);
        self.marks
            .values()
            .filter(|mark| !mark.since.ttl_changed)
            .count()
    }

    /// `key`'s value was written again.
    pub fn forget(&mut self, key: &[u8]) {
        if !self.marks.is_empty() {
            self.marks.remove(key);
        }
    }
}

/// Would a TTL change to deadline `at` make a key whose deadline is `current`
/// live longer? Deadlines are Unix ms; 0 is none, the latest of all.
pub fn lengthens(at: u64, current: u64) -> bool {
    current != 0 && (at == 0 || at > current)
}

/// The longer-lived of two deadlines (0: none).
pub fn later(a: u64, b: u64) -> u64 {
    if lengthens(b, a) {
        b
    } else {
        a
    }
}

/// What a copy of a key says about its TTL register (ours, or a peer's full sync).
#[derive(Debug, Clone, Copy)]
pub struct KeyTtl {
    /// The key's timestamp.
    pub ts: u64,
    /// Its register, if its last write was a TTL change or an element write.
    pub since: Option<Since>,
    pub expire_at: u64,
}

impl KeyTtl {
    /// The value write its register holds.
    pub fn value(&self) -> u64 {
        self.since.map_or(self.ts, |s| s.value)
    }

    fn ttl_changed(&self) -> bool {
        self.since.is_some_and(|s| s.ttl_changed)
    }

    /// The TTL changes that made this copy's register: `changes`, or when a
    /// copy names none (one from an older build), the change its timestamp and
    /// deadline say at most.
    pub fn changes_known(&self, changes: &Changes) -> Changes {
        match self.ttl_changed() && changes.is_empty() {
            true => one_change(self.ts, self.expire_at),
            false => changes.clone(),
        }
    }
}

/// The deadline, register and changes two copies of a key end with, each with
/// the changes that made its register. Of two registers on
/// the same value write, TTL changes beat the value write's own deadline, and of
/// two with changes the later deadline wins. Of registers on different value
/// writes, the newer write's, with the older register's changes made after that
/// write merged into it, as they merge live into a register started over.
pub fn join(
    (ours, our_changes): (KeyTtl, &Changes),
    (theirs, their_changes): (KeyTtl, &Changes),
) -> (u64, Since, Changes) {
    let (our_changes, their_changes) = (
        ours.changes_known(our_changes),
        theirs.changes_known(their_changes),
    );
    if ours.value() != theirs.value() {
        let (newer, mut changes, older_changes) = if theirs.value() > ours.value() {
            (theirs, their_changes, our_changes)
        } else {
            (ours, our_changes, their_changes)
        };
        let mut since = newer.since.unwrap_or(Since::value_only(newer.ts));
        let mut expire_at = newer.expire_at;
        for &(ts, to) in older_changes.iter().filter(|&&(ts, _)| ts > since.value) {
            expire_at = if since.ttl_changed {
                later(expire_at, to)
            } else {
                to
            };
            since.ttl_changed = true;
            add_change(&mut changes, ts, to);
        }
        return (expire_at, since, changes);
    }
    let expire_at = match (ours.ttl_changed(), theirs.ttl_changed()) {
        (false, true) => theirs.expire_at,
        (true, true) => later(ours.expire_at, theirs.expire_at),
        _ => ours.expire_at,
    };
    let since = Since {
        value: ours.value(),
        ttl_changed: ours.ttl_changed() || theirs.ttl_changed(),
    };
    let mut changes = our_changes;
    for &(ts, to) in &their_changes {
        add_change(&mut changes, ts, to);
    }
    (expire_at, since, changes)
}

/// The deadline, timestamp and register a key ends with when a peer's copy and
/// ours hold the same value write and at least one of them changed its TTL since
/// (see [`join`]). `None` when they hold different value writes: then the newer
/// write wins whole, as any write does.
pub fn merge(ours: KeyTtl, theirs: KeyTtl) -> Option<(u64, u64, Since)> {
    if ours.value() != theirs.value() || !(ours.ttl_changed() || theirs.ttl_changed()) {
        return None;
    }
    let none = Changes::new();
    let (expire_at, since, _) = join((ours, &none), (theirs, &none));
    Some((expire_at, ours.ts.max(theirs.ts), since))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn without_changes((expire_at, since, _): (u64, Since, Changes)) -> (u64, Since) {
        (expire_at, since)
    }

    #[test]
    fn no_deadline_is_the_latest_and_the_longer_wins() {
        assert!(lengthens(0, 100));
        assert!(!lengthens(100, 0));
        assert!(!lengthens(0, 0));
        assert!(lengthens(200, 100));
        assert!(!lengthens(50, 100));
        assert_eq!(later(100, 1000), 1000);
        assert_eq!(later(1000, 100), 1000);
        assert_eq!(later(0, 100), 0);
        assert_eq!(later(100, 0), 0);
    }

    #[test]
    fn a_mark_is_valid_only_at_the_timestamp_it_was_taken() {
        let mut marks = TtlMarks::default();
        marks.note(b"k", Since::ttl_changed_on(10), 20, 0, one_change(20, 0));
        assert_eq!(marks.since(b"k", 20), Some(Since::ttl_changed_on(10)));
        assert_eq!(marks.since(b"k", 21), None, "written since");
        marks.forget(b"k");
        assert_eq!(marks.since(b"k", 20), None);
    }

    #[test]
    fn element_writes_carry_the_register_on() {
        let mut marks = TtlMarks::default();
        assert_eq!(marks.follow(b"k", 10, 20, Some(0)), 0);
        let unchanged = Since {
            value: 10,
            ttl_changed: false,
        };
        assert_eq!(marks.since(b"k", 20), Some(unchanged));
        marks.note(
            b"k",
            Since::ttl_changed_on(10),
            30,
            500,
            one_change(30, 500),
        );
        assert_eq!(marks.follow(b"k", 30, 40, Some(500)), 500);
        assert_eq!(marks.since(b"k", 40), Some(Since::ttl_changed_on(10)));
        // Emptied by an element write: the register stays under the grave, merges
        // a peer's TTL change there, and gives the collection written again its
        // deadline.
        assert_eq!(marks.follow(b"k", 40, 45, None), 500);
        marks.change_under_grave(b"k", 45, 46, 100);
        assert_eq!(marks.deadline(b"k", 45), Some(500), "the longer stays");
        marks.change_under_grave(b"k", 45, 46, 900);
        assert_eq!(marks.follow(b"k", 45, 47, Some(0)), 900);
        // A register retired by another write: the element write starts anew.
        assert_eq!(marks.follow(b"k", 50, 60, Some(7)), 7);
        let anew = Since {
            value: 50,
            ttl_changed: false,
        };
        assert_eq!(marks.since(b"k", 60), Some(anew));
        marks.note(b"changed", Since::ttl_changed_on(5), 6, 0, one_change(6, 0));
        marks.note(b"retired", Since::ttl_changed_on(5), 6, 0, one_change(6, 0));
        marks.collect(100, |key| Some(if key == b"retired" { 7 } else { 6 }));
        assert_eq!(marks.since(b"k", 60), None, "no TTL change, older than 100");
        assert_eq!(marks.since(b"changed", 6), Some(Since::ttl_changed_on(5)));
        assert!(!marks.marks.contains_key(b"retired".as_slice()));
    }

    #[test]
    fn a_removal_older_than_the_key_keeps_only_the_ttl_changes_made_after_it() {
        let mut changes = Changes::new();
        add_change(&mut changes, 10, 1000);
        add_change(&mut changes, 20, 300);
        add_change(&mut changes, 15, 500);
        assert_eq!(changes.as_slice(), &[(10, 1000), (15, 500), (20, 300)]);
        add_change(&mut changes, 30, 600);
        assert_eq!(
            changes.as_slice(),
            &[(10, 1000), (30, 600)],
            "older, shorter"
        );
        add_change(&mut changes, 5, 900);
        assert_eq!(
            changes.as_slice(),
            &[(10, 1000), (30, 600)],
            "older, shorter"
        );
        let mut marks = TtlMarks::default();
        marks.note(b"k", Since::ttl_changed_on(1), 40, 1000, changes);
        assert_eq!(marks.restart_at_removal(b"k", 40, 20), Some(600));
        assert_eq!(marks.since(b"k", 40), Some(Since::ttl_changed_on(20)));
        assert_eq!(
            marks.restart_at_removal(b"k", 40, 10),
            None,
            "older than the register"
        );
        assert_eq!(marks.restart_at_removal(b"k", 40, 35), Some(0));
        assert_eq!(marks.since(b"k", 40), Some(Since::value_only(35)));
    }

    #[test]
    fn a_full_sync_merges_ttls_of_the_same_value_in_either_order() {
        let ours = KeyTtl {
            ts: 30,
            since: Some(Since::ttl_changed_on(10)),
            expire_at: 100,
        };
        let theirs = KeyTtl {
            ts: 20,
            since: Some(Since::ttl_changed_on(10)),
            expire_at: 1000,
        };
        assert_eq!(
            merge(ours, theirs),
            Some((1000, 30, Since::ttl_changed_on(10)))
        );
        let theirs_plain = KeyTtl {
            ts: 10,
            since: None,
            expire_at: 0,
        };
        assert_eq!(
            merge(ours, theirs_plain),
            Some((100, 30, Since::ttl_changed_on(10)))
        );
        let theirs_newer_value = KeyTtl {
            ts: 40,
            since: None,
            expire_at: 0,
        };
        assert_eq!(merge(ours, theirs_newer_value), None);
    }

    #[test]
    fn element_writes_since_the_same_value_leave_the_ttl_changes_to_decide() {
        let elements_only = KeyTtl {
            ts: 50,
            since: Some(Since {
                value: 10,
                ttl_changed: false,
            }),
            expire_at: 0,
        };
        let expired = KeyTtl {
            ts: 20,
            since: Some(Since::ttl_changed_on(10)),
            expire_at: 100,
        };
        assert_eq!(
            without_changes(join(
                (elements_only, &Changes::new()),
                (expired, &Changes::new())
            )),
            (100, Since::ttl_changed_on(10))
        );
        assert_eq!(
            without_changes(join(
                (expired, &Changes::new()),
                (elements_only, &Changes::new())
            )),
            (100, Since::ttl_changed_on(10))
        );
        let persisted = KeyTtl {
            ts: 60,
            since: Some(Since::ttl_changed_on(10)),
            expire_at: 0,
        };
        assert_eq!(
            without_changes(join(
                (expired, &Changes::new()),
                (persisted, &Changes::new())
            )),
            (0, Since::ttl_changed_on(10))
        );
        let rewritten = KeyTtl {
            ts: 40,
            since: None,
            expire_at: 0,
        };
        let rewritten_since = Since {
            value: 40,
            ttl_changed: false,
        };
        assert_eq!(
            without_changes(join(
                (expired, &Changes::new()),
                (rewritten, &Changes::new())
            )),
            (0, rewritten_since)
        );
    }
}
