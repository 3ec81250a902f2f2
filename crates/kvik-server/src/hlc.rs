//! The hybrid logical clock that stamps every write with an MVCC timestamp.
//!
//! A timestamp is `physical_ms << 20 | counter << 10 | node tag` (KeyDB's MVCC
//! timestamps put the milliseconds at the same place): it follows wall-clock time, yet
//! never goes backwards and never repeats for the same key, even when the wall clock
//! stalls or steps back. Each worker thread keeps its own clock (no shared counter on
//! the hot path); writes to one key are serialized by its shard lock and each one
//! stamps the key with a timestamp past the key's previous one, so a key's history is
//! strictly increasing. Timestamps from peers advance the local clock past them.
//!
//! The low bits name the node that issued the timestamp (a tag drawn from its id; two
//! peers that drew one tag draw again, see [`shares_own_tag`]), so
//! that two nodes of an active-active mesh writing in the same millisecond still
//! issue different timestamps: last-writer-wins then has a total order to decide by,
//! and every node decides the same. The tag costs no memory: it lives inside the
//! 8-byte timestamp every entry already carries.
//!
//! A write replayed from a peer must carry the peer's timestamp, not a new one, so
//! that every node stamps the key alike: [`imposed`] makes this thread's clock hand
//! out that timestamp while the replayed command runs.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Bits below the millisecond part: the logical counter and the node tag.
pub const LOGICAL_BITS: u32 = 20;
/// Bits of the node tag, the lowest of a timestamp.
pub const TAG_BITS: u32 = 10;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;

/// This node's tag (set once at start-up from the node id).
static TAG: AtomicU64 = AtomicU64::new(0);

/// A thread's clock: one thread-local, so a write's stamp reaches it once.
struct Clock {
    /// The last timestamp this thread issued (or saw from a peer).
    last: Cell<u64>,
    /// The timestamp a replayed write carries (0: none), see [`imposed`].
    imposed: Cell<u64>,
}

thread_local! {
    static CLOCK: Clock = const {
        Clock {
            last: Cell::new(0),
            imposed: Cell::new(0),
        }
    };
}

/// Take this node's tag from its id (called once, at start-up).
pub fn set_node_tag(node_id: &[u8]) {
    TAG.store(tag_for(node_id), Ordering::Relaxed);
}

/// The tag of the node whose id is `node_id`.
pub fn tag_for(node_id: &[u8]) -> u64 {
    let tag = node_id
        .iter()
        .fold(0u64, |acc, &b| acc.rotate_left(8) ^ u64::from(b));
    tag & TAG_MASK
}

/// Does node `peer` (not this one) stamp its writes with this node's tag? Two
/// such nodes could issue the very same timestamp, and each would take the
/// other's writes for its own (the tag is drawn from each node's random id:
/// about one pair in a thousand), so one of them draws a new id when they meet
/// (`Replication::settle_shared_tag`).
pub fn shares_own_tag(peer: &[u8], own: &[u8]) -> bool {
    peer != own && tag_for(peer) == tag_for(own)
}

/// This node's tag: the one the timestamps of its own writes carry.
pub fn own_tag() -> u64 {
    TAG.load(Ordering::Relaxed)
}

/// The tag of the node that issued `ts`.
pub fn tag_of(ts: u64) -> u64 {
    ts & TAG_MASK
}

/// Did this node issue `ts` (is the write stamped with it one of its own)?
pub fn issued_here(ts: u64) -> bool {
    tag_of(ts) == own_tag()
}

/// The timestamp of the peer's write this thread is replaying, if it is.
pub fn imposed_now() -> Option<u64> {
    Some(CLOCK.with(|c| c.imposed.get())).filter(|&ts| ts != 0)
}

/// Run `f` with this thread's clock handing out `ts` (a peer's write being replayed);
/// the clock then moves past it.
pub fn imposed<R>(ts: u64, f: impl FnOnce() -> R) -> R {
    let before = CLOCK.with(|c| c.imposed.replace(ts));
    let result = f();
    CLOCK.with(|c| c.imposed.set(before));
    observe(ts);
    result
}

/// The clock readings of the commands under way, one slot a thread: a command
/// stamps its writes from the reading it started with (a transaction or script
/// keeps one for all its writes) and hands its effects to the stream when it ends,
/// so a promise that nothing written from now on is older than some timestamp (an
/// active node's watermark) must not go past the oldest reading still in use.
static READINGS: parking_lot::Mutex<Vec<std::sync::Arc<AtomicU64>>> =
    parking_lot::Mutex::new(Vec::new());

thread_local! {
    /// This thread's slot in [`READINGS`], and how many holds it has open.
    static READING: (std::sync::Arc<AtomicU64>, Cell<usize>) = {
        let slot = std::sync::Arc::new(AtomicU64::new(0));
        READINGS.lock().push(slot.clone());
        (slot, Cell::new(0))
    };
}

/// A command on this thread started with the clock at `now_ms` and may stamp
/// writes from it until [`release_reading`] (holds nest: the outermost counts).
/// A plain store: a marker that reads the slots a moment before a hold lands is
/// covered by the watermark's grace (`replication/watermark.rs`).
pub fn hold_reading(now_ms: u64) {
    READING.with(|(slot, depth)| {
        if depth.get() == 0 {
            slot.store(now_ms.max(1), Ordering::Release);
        }
        depth.set(depth.get() + 1);
    });
}

/// The command that held this thread's reading has handed its effects over.
pub fn release_reading() {
    READING.with(|(slot, depth)| {
        depth.set(depth.get().saturating_sub(1));
        if depth.get() == 0 {
            slot.store(0, Ordering::Release);
        }
    });
}

/// The oldest clock reading (milliseconds) a command under way may still stamp
/// writes from, if any is.
pub fn oldest_reading() -> Option<u64> {
    READINGS
        .lock()
        .iter()
        .map(|slot| slot.load(Ordering::Acquire))
        .filter(|&ms| ms != 0)
        .min()
}

/// Milliseconds since the Unix epoch.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Microseconds since the Unix epoch.
pub fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// A fresh timestamp from this thread's clock that is greater than `after` (the
/// timestamp the key held before this write) and than any this thread issued before.
/// `now_ms` is the caller's reading of the wall clock (commands read it once).
pub fn next_after(after: u64, now_ms: u64) -> u64 {
    CLOCK.with(|clock| {
        let imposed = clock.imposed.get();
        if imposed != 0 {
            // A replayed write is stamped with its own timestamp; one that merges
            // with newer local writes (a counter's increment) keeps the newer one, so
            // every node ends on the largest, whatever the order it heard them in.
            return imposed.max(after);
        }
        let last = &clock.last;
        let lowest = (now_ms << LOGICAL_BITS).max(last.get() + 1).max(after + 1);
        // The lowest timestamp at or above `lowest` whose low bits are our tag.
        let mut ts = (lowest & !TAG_MASK) | TAG.load(Ordering::Relaxed);
        if ts < lowest {
            ts += 1 << TAG_BITS;
        }
        last.set(ts);
        ts
    })
}

/// The lowest timestamp past `after` that carries this node's tag, whatever the
/// clock reads: a write of this node's ordered just after `after` (a repair of
/// what it held as of then), and apart from the same repair by another node.
pub fn own_stamp_after(after: u64) -> u64 {
    let lowest = after + 1;
    let ts = (lowest & !TAG_MASK) | TAG.load(Ordering::Relaxed);
    if ts < lowest {
        ts + (1 << TAG_BITS)
    } else {
        ts
    }
}

/// Advance this thread's clock past a timestamp seen from elsewhere.
pub fn observe(seen: u64) {
    CLOCK.with(|c| c.last.set(c.last.get().max(seen)));
}

/// The millisecond part of a timestamp.
pub fn physical_ms(ts: u64) -> u64 {
    ts >> LOGICAL_BITS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_holds_its_first_reading_until_its_outermost_command_ends() {
        std::thread::spawn(|| {
            let mine = || READING.with(|(slot, _)| slot.load(Ordering::SeqCst));
            hold_reading(100);
            hold_reading(200);
            assert_eq!(mine(), 100);
            assert!(oldest_reading().is_some_and(|ms| ms <= 100));
            release_reading();
            assert_eq!(mine(), 100);
            release_reading();
            assert_eq!(mine(), 0);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn strictly_increasing_and_past_the_key() {
        let a = next_after(0, unix_ms());
        let b = next_after(0, unix_ms());
        assert!(b > a);
        let future = (unix_ms() + 10_000) << LOGICAL_BITS;
        let c = next_after(future, unix_ms());
        assert!(c > future);
        assert!(next_after(0, unix_ms()) > c);
        assert!(physical_ms(a) <= unix_ms());
    }

    #[test]
    fn a_peer_whose_id_gives_our_tag_is_told_apart() {
        let own = [7u8; 16];
        // Another id folding to the same ten bits: bytes 7 and 15 both land in
        // the lowest eight after the rotations, so one bit flipped in each cancels.
        let mut peer = own;
        peer[7] ^= 1;
        peer[15] ^= 1;
        assert_eq!(tag_for(&peer), tag_for(&own));
        assert!(shares_own_tag(&peer, &own));
        assert!(!shares_own_tag(&own, &own), "ourselves");
        let mut other = own;
        other[15] ^= 1;
        assert!(!shares_own_tag(&other, &own));
    }

    #[test]
    fn the_low_bits_name_the_node_and_imposed_stamps_win() {
        set_node_tag(&[1, 2, 3]);
        let tag = tag_of(next_after(0, unix_ms()));
        let peer = (unix_ms() + 5) << LOGICAL_BITS | ((tag + 1) & TAG_MASK);
        assert_eq!(imposed(peer, || next_after(0, unix_ms())), peer);
        let after = next_after(peer, unix_ms());
        assert!(after > peer);
        assert_eq!(tag_of(after), tag);
    }
}
