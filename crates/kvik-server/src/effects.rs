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
}
