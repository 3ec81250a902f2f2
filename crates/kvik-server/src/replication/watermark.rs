//! Watermarks: how an active node learns that no peer can still send it a write
//! older than some timestamp, so that tombstones older than that can go.
//!
//! A tombstone at timestamp `t` guards against two things: a peer's older write
//! (`< t`) to the key still arriving (live, forwarded through a mesh), and a peer
//! that has not applied the removal yet serving or taking a full sync without it.
//! Every [`PERIOD`], while something here or at a peer still waits to be collected,
//! an active node appends a marker to the stream its kvik peers read:
//! `REPLCONF WATERMARK <holding> <h0> <h1> ... <h(LEVELS-1)>`, ordinary bytes of
//! the stream (counted in its offsets like any command).
//!
//! - `h0` bounds the node's own writes: anything it writes after the marker is
//!   stamped at or after it (its clock now, less [`GRACE_MS`] for a command that
//!   read the clock just before the marker, and no later than the oldest reading a
//!   command under way stamps from: a long script appends its effects, stamped
//!   from its start, when it ends).
//! - `h(i)` is the lowest `h(i-1)` the node last heard from each of its links (0
//!   for a link that never sent a marker, such as a KeyDB peer's): a write born
//!   `i` hops away and forwarded here in order is bounded by it. Each level is
//!   built from the level below only, so a ring of nodes that hear each other
//!   never holds its own old value up (a plain minimum over every link would:
//!   each node's value would wait for its own, forever). A mesh whose nodes are at
//!   most [`LEVELS`] hops apart is covered whole.
//!
//! A link keeps the last marker it applied, in stream order ([`Heard`]): once
//! applied, every write of that peer that may still come is at or after the
//! smallest of its levels. The node keeps, per marker it sent, the offset just
//! past it and the bound it then had on every tombstone it could still make
//! ([`Sent`]); a peer whose acknowledgement reached that offset has applied every
//! removal before it. Tombstones older than the smallest of both over every link
//! and every active peer are collected (`Replication::collect_graves`).
//!
//! `holding` says the sender still keeps tombstones (or element timestamps, or
//! what counters and TTL registers keep only until a watermark passes): its
//! peers keep sending markers while it does, so that it can collect them; once
//! nothing is held anywhere the markers stop and a quiet mesh's offsets stand
//! still.
//!
//! Owns the marker's form and the bookkeeping of markers sent and heard. Must not
//! touch the keyspace or the backlog.

use crate::effects::encode_command;
use std::collections::VecDeque;
use std::time::Duration;

/// The marker's subcommand (`REPLCONF WATERMARK ...`).
const WATERMARK: &[u8] = b"WATERMARK";

/// How many hops of forwarding a marker accounts for.
pub const LEVELS: usize = 4;

/// How often an active node that holds tombstones sends a marker.
pub const PERIOD: Duration = Duration::from_millis(100);

/// How long before a marker a command may have read the clock its writes are
/// stamped with (it appends its effects once it ran).
pub const GRACE_MS: u64 = 1000;

/// A marker's bounds, by hops from its sender.
pub type Levels = [u64; LEVELS];

/// The last marker applied from one link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Heard {
    /// The sender still holds tombstones.
    pub holding: bool,
    pub levels: Levels,
}

impl Heard {
    /// The bound on every write that may still come from this link.
    pub fn bound(&self) -> u64 {
        self.levels.iter().copied().min().unwrap_or(0)
    }
}

/// The bound this node's own writes after a marker sent now are at or after: its
/// clock now less the grace, or the oldest reading a command under way stamps its
/// writes from (`oldest_reading`, [`crate::hlc::oldest_reading`]: a long script).
pub fn own_bound(now_ms: u64, oldest_reading: Option<u64>) -> u64 {
    let ms = now_ms
        .saturating_sub(GRACE_MS)
        .min(oldest_reading.unwrap_or(u64::MAX));
    ms << crate::hlc::LOGICAL_BITS
}

/// The levels of a marker sent now: `own` first, then each level built from the
/// level below heard from every link (`None`: a link that sent none).
pub fn levels_to_send(own: u64, links: &[Option<Heard>]) -> Levels {
    std::array::from_fn(|level| match level {
        0 => own,
        _ => links
            .iter()
            .map(|heard| heard.map_or(0, |h| h.levels[level - 1]))
            .min()
            .unwrap_or(u64::MAX),
    })
}

/// The bound on every write that may still reach this node over `links` (no
/// link: nothing can).
pub fn links_bound(links: &[Option<Heard>]) -> u64 {
    links
        .iter()
        .map(|heard| heard.map_or(0, |h| h.bound()))
        .min()
        .unwrap_or(u64::MAX)
}

/// Append the marker to `out`.
pub fn encode(holding: bool, levels: &Levels, out: &mut Vec<u8>) {
    let texts: Vec<String> = levels.iter().map(u64::to_string).collect();
    let mut argv: Vec<&[u8]> = vec![b"REPLCONF", WATERMARK, if holding { b"1" } else { b"0" }];
    argv.extend(texts.iter().map(String::as_bytes));
    encode_command(&argv, out);
}

/// The marker `args` is, if it is one (`Some(None)`: a marker, malformed).
pub fn decode(args: &[&[u8]]) -> Option<Option<Heard>> {
    let [replconf, word, holding, levels @ ..] = args else {
        return None;
    };
    if !replconf.eq_ignore_ascii_case(b"REPLCONF") || !word.eq_ignore_ascii_case(WATERMARK) {
        return None;
    }
    let number = |text: &[u8]| std::str::from_utf8(text).ok()?.parse::<u64>().ok();
    let parsed = (|| {
        let holding = match *holding {
            b"0" => false,
            b"1" => true,
            _ => return None,
        };
        let mut heard = Heard {
            holding,
            levels: [0; LEVELS],
        };
        if levels.len() != LEVELS {
            return None;
        }
        for (level, text) in heard.levels.iter_mut().zip(levels) {
            *level = number(text)?;
        }
        Some(heard)
    })();
    Some(parsed)
}

/// How many markers sent are remembered one by one; older ones fold into one.
const SENT_KEPT: usize = 128;

/// The markers this node sent: the offset just past each, and the bound it then
/// had on any tombstone it could make later.
#[derive(Default)]
pub struct Sent {
    markers: VecDeque<(u64, u64)>,
    /// The newest marker folded out of `markers` (its offset and bound).
    oldest: (u64, u64),
}

impl Sent {
    /// A marker ending at `offset` went out; every tombstone made after it is at
    /// or after `bound`.
    pub fn push(&mut self, offset: u64, bound: u64) {
        if self.markers.len() == SENT_KEPT {
            if let Some(old) = self.markers.pop_front() {
                self.oldest = old;
            }
        }
        self.markers.push_back((offset, bound));
    }

    /// For a peer that acknowledged `ack`: every tombstone this node made before
    /// the bound returned is one the peer applied (0: none known).
    pub fn covered(&self, ack: u64) -> u64 {
        let newest = self
            .markers
            .iter()
            .rev()
            .find(|&&(offset, _)| offset <= ack)
            .copied();
        match newest {
            Some((_, bound)) => bound,
            None if self.oldest.0 != 0 && self.oldest.0 <= ack => self.oldest.1,
            None => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_own_bound_waits_for_the_oldest_reading_under_way() {
        let bits = crate::hlc::LOGICAL_BITS;
        assert_eq!(own_bound(10_000, None), 9_000 << bits);
        assert_eq!(own_bound(10_000, Some(9_500)), 9_000 << bits);
        assert_eq!(own_bound(10_000, Some(4_000)), 4_000 << bits);
    }

    fn heard(levels: Levels) -> Option<Heard> {
        Some(Heard {
            holding: false,
            levels,
        })
    }

    #[test]
    fn a_marker_reads_back_as_it_was_written() {
        let mut out = Vec::new();
        encode(true, &[5, 4, 3, u64::MAX], &mut out);
        let mut parser = kvik_resp::RequestParser::new();
        parser.parse(&out, kvik_resp::Limits::default()).unwrap();
        let args: Vec<&[u8]> = parser.args(&out).collect();
        let got = decode(&args).unwrap().unwrap();
        assert_eq!(got.levels, [5, 4, 3, u64::MAX]);
        assert!(got.holding);
        assert_eq!(got.bound(), 3);
        assert_eq!(decode(&[b"REPLCONF", b"ACK", b"1"]), None);
        assert_eq!(decode(&[b"REPLCONF", b"WATERMARK", b"1", b"2"]), Some(None));
    }

    #[test]
    fn each_level_comes_from_the_level_below_so_a_pair_moves_on() {
        // A and B hear each other: each one's levels keep up with both clocks
        // instead of waiting on their own old value.
        let (mut from_a, mut from_b): (Option<Heard>, Option<Heard>) = (None, None);
        for now in 1..=10u64 {
            let a = levels_to_send(now * 100, &[from_b]);
            let b = levels_to_send(now * 100 + 1, &[from_a]);
            from_a = heard(a);
            from_b = heard(b);
        }
        assert!(links_bound(&[from_b]) >= 600, "{from_b:?}");
        // A link that never sent a marker (a KeyDB peer) holds every level.
        assert_eq!(levels_to_send(7, &[from_a, None]), [7, 0, 0, 0]);
        assert_eq!(links_bound(&[from_a, None]), 0);
        // With no link nothing can come: only the own bound counts.
        assert_eq!(levels_to_send(7, &[]), [7, u64::MAX, u64::MAX, u64::MAX]);
        assert_eq!(links_bound(&[]), u64::MAX);
    }

    #[test]
    fn a_ring_of_three_moves_on_and_a_silent_link_stops_it() {
        // A -> B -> C -> A, each hearing the one before it.
        let mut heard_by: [Option<Heard>; 3] = [None; 3];
        for now in 1..=20u64 {
            let sent: Vec<Levels> = (0..3)
                .map(|i| levels_to_send(now * 100, &[heard_by[i]]))
                .collect();
            for i in 0..3 {
                heard_by[(i + 1) % 3] = heard(sent[i]);
            }
        }
        assert!(links_bound(&[heard_by[0]]) >= 1500);
        // C stops sending (cut off): what A hears stays where it was.
        let frozen = heard_by[0];
        assert_eq!(links_bound(&[frozen]), links_bound(&[heard_by[0]]));
    }

    #[test]
    fn a_peer_covers_the_markers_its_acknowledgement_reached() {
        let mut sent = Sent::default();
        assert_eq!(sent.covered(1000), 0);
        sent.push(100, 7);
        sent.push(200, 9);
        assert_eq!(sent.covered(99), 0);
        assert_eq!(sent.covered(150), 7);
        assert_eq!(sent.covered(200), 9);
        for i in 0..SENT_KEPT as u64 {
            sent.push(300 + i, 10 + i);
        }
        assert_eq!(sent.markers.len(), SENT_KEPT);
        assert_eq!(sent.covered(250), 9, "folded into the oldest");
        assert_eq!(sent.covered(150), 0, "older than anything kept");
    }
}
