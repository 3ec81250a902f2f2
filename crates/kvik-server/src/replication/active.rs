//! Active replication (KeyDB's active replica and multi-master): the wire form of
//! a write that travels between writable nodes, and the memory of what each origin
//! has had applied here.
//!
//! Between active nodes every write travels wrapped as KeyDB wraps it:
//! `RREPLAY <origin uuid> <the command, RESP-encoded> <db> <timestamp> [<seq>]`.
//! The uuid names the node where the write was born, the timestamp is the HLC stamp
//! its keys carry there (last writer wins by it), and `seq` (kvik's addition) is the
//! write's place in its origin's stream. A node drops what it originated itself
//! (its own writes coming back around a ring) and what it has applied already (the
//! same write reaching it by two paths of a mesh): writes of one origin travel every
//! path in the origin's order, so one high-water mark per origin tells them apart.
//! A transaction travels as a run MULTI ... EXEC of one origin and is kept or
//! dropped whole.
//!
//! Owns the envelope and the per-origin marks. Must not apply anything: the link
//! runs the unwrapped command through the [`super::Host`].

use crate::effects::{encode_command, Birth, NodeId};
use parking_lot::Mutex;
use std::collections::HashMap;

/// The command name of the envelope.
pub const RREPLAY: &[u8] = b"RREPLAY";

/// A node id as KeyDB writes it: the 36-character canonical UUID text.
pub fn uuid_text(id: &NodeId) -> String {
    let hex = hex::encode(id);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// The node id a UUID text names (with or without dashes).
pub fn parse_uuid(text: &[u8]) -> Option<NodeId> {
    let hex: Vec<u8> = text.iter().copied().filter(|&b| b != b'-').collect();
    let bytes = hex::decode(hex).ok()?;
    NodeId::try_from(bytes.as_slice()).ok()
}

/// Append the envelope of one effect to `out`.
pub fn encode(birth: &Birth, db: usize, ts: u64, argv: &[&[u8]], out: &mut Vec<u8>) {
    let mut command = Vec::with_capacity(64);
    encode_command(argv, &mut command);
    let uuid = uuid_text(&birth.origin);
    let mut number = itoa::Buffer::new();
    let db = number.format(db).to_owned();
    let ts = number.format(ts).to_owned();
    let seq = number.format(birth.seq);
    encode_command(
        &[
            RREPLAY,
            uuid.as_bytes(),
            &command,
            db.as_bytes(),
            ts.as_bytes(),
            seq.as_bytes(),
        ],
        out,
    );
}

/// An envelope, opened.
#[derive(Debug, PartialEq, Eq)]
pub struct Envelope<'a> {
    pub origin: NodeId,
    /// The RESP encoding of the command inside.
    pub command: &'a [u8],
    /// `None`: the database the stream selected last (KeyDB's three-argument form).
    pub db: Option<usize>,
    /// 0 when the sender gave none (the write is then stamped here).
    pub ts: u64,
    /// `None` when the sender gave none (KeyDB): nothing to recognise it by.
    pub seq: Option<u64>,
}

/// Open `RREPLAY uuid command [db [ts [seq]]]`; `None` when it is malformed.
pub fn open<'a>(args: &[&'a [u8]]) -> Option<Envelope<'a>> {
    if args.len() < 3 || args.len() > 6 {
        return None;
    }
    let number = |i: usize| -> Option<Option<u64>> {
        match args.get(i) {
            None => Some(None),
            Some(text) => std::str::from_utf8(text).ok()?.parse().ok().map(Some),
        }
    };
    Some(Envelope {
        origin: parse_uuid(args[1])?,
        command: args[2],
        db: number(3)?.map(|db| db as usize),
        ts: number(4)?.unwrap_or(0),
        seq: number(5)?,
    })
}

/// What each origin has had applied here.
#[derive(Default)]
pub struct Seen {
    marks: Mutex<HashMap<NodeId, u64>>,
}

impl Seen {
    /// Is the write `seq` of `origin` new here? If so it counts as applied from now.
    pub fn admit(&self, origin: &NodeId, seq: u64) -> bool {
        let mut marks = self.marks.lock();
        let mark = marks.entry(*origin).or_insert(0);
        if seq != 0 && seq <= *mark {
            return false;
        }
        *mark = (*mark).max(seq);
        true
    }

    /// Forget every origin (a new history: this node's dataset was replaced).
    pub fn clear(&self) {
        self.marks.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_envelope_opens_to_what_was_sealed() {
        let birth = Birth {
            origin: [0xab; 16],
            seq: 77,
        };
        let mut out = Vec::new();
        encode(&birth, 3, 123456, &[b"SET", b"k", b"v"], &mut out);
        let mut parser = kvik_resp::RequestParser::new();
        let parsed = parser.parse(&out, kvik_resp::Limits::default()).unwrap();
        assert!(matches!(parsed, kvik_resp::Parsed::Command { .. }));
        let args: Vec<&[u8]> = parser.args(&out).collect();
        let envelope = open(&args).unwrap();
        assert_eq!(envelope.origin, [0xab; 16]);
        assert_eq!(
            envelope.command,
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
        );
        assert_eq!(
            (envelope.db, envelope.ts, envelope.seq),
            (Some(3), 123456, Some(77))
        );
        assert_eq!(uuid_text(&[0xab; 16]).len(), 36);
    }

    #[test]
    fn keydbs_short_form_opens_and_bad_ones_do_not() {
        let args: [&[u8]; 3] = [
            b"RREPLAY",
            b"f4d5b2b5-4f07-4ee5-a4f2-5dc98507dfce",
            b"*1\r\n$4\r\nPING\r\n",
        ];
        let envelope = open(&args).unwrap();
        assert_eq!((envelope.db, envelope.ts, envelope.seq), (None, 0, None));
        assert!(open(&[b"RREPLAY", b"nope", b"x"]).is_none());
        assert!(open(&[b"RREPLAY", args[1], b"x", b"zero"]).is_none());
    }

    #[test]
    fn a_write_met_twice_is_admitted_once() {
        let seen = Seen::default();
        assert!(seen.admit(&[1; 16], 10));
        assert!(seen.admit(&[1; 16], 20));
        assert!(!seen.admit(&[1; 16], 10));
        assert!(!seen.admit(&[1; 16], 20));
        assert!(seen.admit(&[2; 16], 5));
    }
}
