//! The effect stream: the one ordered sequence of deterministic writes behind AOF,
//! replication and active-active.
//!
//! Every write command appends the exact commands that reproduce it elsewhere
//! (EXPIRE becomes PEXPIREAT, an expired key becomes DEL, ...) while it still holds
//! the shard locks of the keys it wrote, so two conflicting writes appear here in the
//! order they were executed. Each effect carries its database, its argv, its MVCC
//! timestamp, the node it came from, and the offset at which it starts; the offset
//! grows by the size of the effect's RESP encoding, the way Redis counts
//! `master_repl_offset`.
//!
//! Owns the sequence and its subscribers. Must not decide *what* a command
//! propagates: commands and the keyspace do that.
//!
//! Nothing is recorded while nobody listens (no AOF, no replica, no test subscriber):
//! a write then pays one relaxed atomic load here, nothing more.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;

/// This node's identity in the effects it originates.
pub type NodeId = [u8; 16];

/// One deterministic write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effect {
    /// Offset of the first byte of this effect in the stream.
    pub offset: u64,
    pub db: usize,
    pub argv: Vec<Vec<u8>>,
    /// MVCC timestamp of the write (see [`crate::hlc`]).
    pub ts: u64,
    pub origin: NodeId,
}

impl Effect {
    /// Size of the RESP multibulk encoding of `argv`, which is what a replica receives.
    pub fn encoded_len(argv: &[&[u8]]) -> u64 {
        let digits = |n: usize| n.to_string().len() as u64;
        let mut len = 1 + digits(argv.len()) + 2;
        for a in argv {
            len += 1 + digits(a.len()) + 2 + a.len() as u64 + 2;
        }
        len
    }
}

/// An effect held back until its atomic group is complete
/// ([`EffectLog::append_group`]).
#[derive(Debug, Clone)]
pub struct GroupedEffect {
    pub db: usize,
    pub ts: u64,
    pub argv: Vec<Vec<u8>>,
}

struct Inner {
    offset: u64,
    subscribers: Vec<mpsc::Sender<Effect>>,
}

/// The node's effect stream.
pub struct EffectLog {
    recording: AtomicBool,
    /// Mirror of the offset for readers that must not take the lock (INFO).
    offset: AtomicU64,
    origin: NodeId,
    inner: Mutex<Inner>,
}

impl EffectLog {
    pub fn new(origin: NodeId) -> Self {
        EffectLog {
            recording: AtomicBool::new(false),
            offset: AtomicU64::new(0),
            origin,
            inner: Mutex::new(Inner {
                offset: 0,
                subscribers: Vec::new(),
            }),
        }
    }

    /// Is anyone listening? Writers skip building effects when not.
    #[inline]
    pub fn recording(&self) -> bool {
        self.recording.load(Ordering::Relaxed)
    }

    /// The offset the next effect will start at.
    pub fn offset(&self) -> u64 {
        self.offset.load(Ordering::Relaxed)
    }

    pub fn origin(&self) -> NodeId {
        self.origin
    }

    /// Append one effect. Call it while holding the shard locks of the keys written.
    pub fn append(&self, db: usize, ts: u64, argv: &[&[u8]]) {
        if !self.recording() {
            return;
        }
        let mut inner = self.inner.lock();
        self.push(&mut inner, db, ts, argv);
        if inner.subscribers.is_empty() {
            self.recording.store(false, Ordering::Relaxed);
        }
    }

    /// Give one effect its offset and send it to every subscriber.
    fn push(&self, inner: &mut Inner, db: usize, ts: u64, argv: &[&[u8]]) {
        let effect = Effect {
            offset: inner.offset,
            db,
            argv: argv.iter().map(|a| a.to_vec()).collect(),
            ts,
            origin: self.origin,
        };
        inner.offset += Effect::encoded_len(argv);
        self.offset.store(inner.offset, Ordering::Relaxed);
        inner.subscribers.retain(|s| s.send(effect.clone()).is_ok());
    }

    /// Append the effects of one atomic group (a transaction's or a script's writes)
    /// as one uninterrupted run: nothing another thread appends can fall between them.
    /// More than one is wrapped in MULTI ... EXEC (the MULTI in the first effect's
    /// database), so that a replica applies them at once too; a single effect goes
    /// alone, as Redis 7.0 propagates it. Call it while holding the shard locks of
    /// the keys written.
    pub fn append_group(&self, group: &[GroupedEffect]) {
        if group.is_empty() || !self.recording() {
            return;
        }
        let mut inner = self.inner.lock();
        let wrap = group.len() > 1;
        let (first, last) = (&group[0], &group[group.len() - 1]);
        if wrap {
            self.push(&mut inner, first.db, first.ts, &[b"MULTI"]);
        }
        for effect in group {
            let argv: Vec<&[u8]> = effect.argv.iter().map(Vec::as_slice).collect();
            self.push(&mut inner, effect.db, effect.ts, &argv);
        }
        if wrap {
            self.push(&mut inner, last.db, last.ts, &[b"EXEC"]);
        }
        if inner.subscribers.is_empty() {
            self.recording.store(false, Ordering::Relaxed);
        }
    }

    /// Receive every effect appended from now on. Dropping the receiver unsubscribes
    /// (noticed at the next append).
    pub fn subscribe(&self) -> mpsc::Receiver<Effect> {
        let (tx, rx) = mpsc::channel();
        let mut inner = self.inner.lock();
        inner.subscribers.push(tx);
        self.recording.store(true, Ordering::Relaxed);
        rx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_grow_by_resp_size() {
        let log = EffectLog::new([7; 16]);
        log.append(0, 1, &[b"SET", b"k", b"v"]);
        assert_eq!(log.offset(), 0, "nothing recorded without subscribers");
        let rx = log.subscribe();
        log.append(0, 1, &[b"SET", b"k", b"v"]);
        log.append(3, 2, &[b"DEL", b"k"]);
        let a = rx.recv().unwrap();
        let b = rx.recv().unwrap();
        assert_eq!(a.offset, 0);
        let set_len = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n".len() as u64;
        assert_eq!(b.offset, set_len);
        assert_eq!(b.db, 3);
        assert_eq!(b.origin, [7; 16]);
    }

    #[test]
    fn groups_of_several_effects_are_wrapped_in_multi_exec() {
        let log = EffectLog::new([7; 16]);
        let rx = log.subscribe();
        let effect = |db, word: &[u8]| GroupedEffect {
            db,
            ts: 1,
            argv: vec![word.to_vec()],
        };
        log.append_group(&[effect(2, b"A"), effect(3, b"B")]);
        log.append_group(&[effect(0, b"C")]);
        log.append_group(&[]);
        let seen: Vec<(usize, Vec<u8>)> = rx.try_iter().map(|e| (e.db, e.argv.concat())).collect();
        let expected: Vec<(usize, Vec<u8>)> = [
            (2, &b"MULTI"[..]),
            (2, b"A"),
            (3, b"B"),
            (3, b"EXEC"),
            (0, b"C"),
        ]
        .iter()
        .map(|&(db, w)| (db, w.to_vec()))
        .collect();
        assert_eq!(seen, expected);
    }
}
