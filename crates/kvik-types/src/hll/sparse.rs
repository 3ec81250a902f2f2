//! The sparse encoding: registers as a run-length code, for HyperLogLogs that have
//! seen few elements. Three opcodes, exactly Redis's:
//!
//! - `ZERO`  `00llllll`: 1..=64 registers at zero;
//! - `XZERO` `01llllll llllllll`: 1..=16384 registers at zero;
//! - `VAL`   `1vvvvvll`: 1..=4 registers at value 1..=32.
//!
//! Lengths and values are stored minus one. Setting a register rewrites the opcode
//! that covers it in place (splitting a run into up to three opcodes), then merges
//! equal neighbouring `VAL`s the way Redis does, so that the same additions produce
//! the same bytes. A value above 32, or a value that would grow the string past
//! `hll-sparse-max-bytes`, calls for the dense encoding instead.

use super::{Corrupt, HEADER_LEN, REGISTERS};
use kvik_util::thin_buf::ThinBuf;
use std::fmt::Write as _;

/// The largest value a `VAL` opcode holds.
pub const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;
const ZERO_MAX_LEN: usize = 64;
const VAL_BIT: u8 = 0x80;
const XZERO_BIT: u8 = 0x40;
/// How many opcodes after the one before a change are looked at for merging.
const MERGE_SCAN: usize = 5;

/// One opcode: a run of registers that share a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Zero(usize),
    XZero(usize),
    Val { value: u8, len: usize },
}

impl Op {
    /// The opcode at the start of `bytes` (not empty). An `XZERO` cut short by the end
    /// of the string reads its missing byte as 0, as Redis reads the terminator there.
    pub fn read(bytes: &[u8]) -> Op {
        let byte = bytes[0];
        if byte & VAL_BIT != 0 {
            Op::Val {
                value: ((byte >> 2) & 0x1f) + 1,
                len: usize::from(byte & 0x3) + 1,
            }
        } else if byte & XZERO_BIT != 0 {
            let low = bytes.get(1).copied().unwrap_or(0);
            Op::XZero((usize::from(byte & 0x3f) << 8 | usize::from(low)) + 1)
        } else {
            Op::Zero(usize::from(byte & 0x3f) + 1)
        }
    }

    /// Bytes the opcode takes.
    pub fn size(self) -> usize {
        match self {
            Op::XZero(_) => 2,
            Op::Zero(_) | Op::Val { .. } => 1,
        }
    }

    /// Registers the opcode covers.
    pub fn span(self) -> usize {
        match self {
            Op::Zero(len) | Op::XZero(len) | Op::Val { len, .. } => len,
        }
    }
}

/// The opcodes of a sparse body (the bytes after the header), in order.
pub fn ops(body: &[u8]) -> impl Iterator<Item = Op> + '_ {
    let mut rest = body;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let op = Op::read(rest);
        rest = &rest[op.size().min(rest.len())..];
        Some(op)
    })
}

/// Call `on_value(first_register, len, value)` for every `VAL` run of a sparse body.
/// The runs must cover exactly the 16384 registers; anything else is corrupt.
pub fn for_each_value(
    body: &[u8],
    mut on_value: impl FnMut(usize, usize, u8),
) -> Result<(), Corrupt> {
    let mut index = 0;
    for op in ops(body) {
        if index + op.span() > REGISTERS {
            return Err(Corrupt);
        }
        if let Op::Val { value, len } = op {
            on_value(index, len, value);
        }
        index += op.span();
    }
    if index == REGISTERS {
        Ok(())
    } else {
        Err(Corrupt)
    }
}

/// The body of an HLL with every register at zero.
pub fn empty_body() -> Vec<u8> {
    let mut body = Opcodes::default();
    body.push_zeros(REGISTERS);
    body.as_slice().to_vec()
}

/// PFDEBUG DECODE's text: `z:len` for ZERO, `Z:len` for XZERO, `v:value,len` for VAL.
pub fn decode(body: &[u8]) -> String {
    let mut text = String::new();
    for op in ops(body) {
        let _ = match op {
            Op::Zero(len) => write!(text, "z:{len} "),
            Op::XZero(len) => write!(text, "Z:{len} "),
            Op::Val { value, len } => write!(text, "v:{value},{len} "),
        };
    }
    text.truncate(text.trim_end().len());
    text
}

/// What setting a register in the sparse encoding came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOutcome {
    /// The register already held at least the value.
    Unchanged,
    Updated,
    /// The value does not fit the sparse encoding (too big, or the string would grow
    /// past the limit): convert to dense and set it there. Nothing was changed.
    NeedsDense,
    /// The opcodes do not reach the register.
    Corrupt,
}

/// Raise register `index` of the sparse HLL `hll` (header included) to `value`, keeping
/// the whole string within `max_bytes` when it grows.
pub fn set(hll: &mut ThinBuf, index: usize, value: u8, max_bytes: u64) -> SetOutcome {
    if value > VAL_MAX_VALUE {
        return SetOutcome::NeedsDense;
    }
    let Some(Located {
        at,
        first,
        prev,
        op,
    }) = locate(hll, index)
    else {
        return SetOutcome::Corrupt;
    };
    match op {
        Op::Val { value: old, .. } if old >= value => return SetOutcome::Unchanged,
        // A run of one register is rewritten where it is.
        Op::Val { len: 1, .. } | Op::Zero(1) => hll[at] = val_op(value, 1),
        _ => {
            let replacement = split(op, index - first, value);
            let replacement = replacement.as_slice();
            let growth = replacement.len().saturating_sub(op.size());
            if growth > 0 && (hll.len() + growth) as u64 > max_bytes {
                return SetOutcome::NeedsDense;
            }
            // An XZERO cut short by the end of a corrupt string: Redis read its
            // missing byte from the terminator, and as much of the replacement falls
            // off the end with it.
            let overhang = (at + op.size()).saturating_sub(hll.len());
            let replacement = &replacement[..replacement.len() - overhang];
            // The tail moves once, in place; nothing is allocated beyond the string's
            // own growth.
            hll.splice(at..at + op.size() - overhang, replacement);
        }
    }
    merge_neighbours(hll, prev.unwrap_or(HEADER_LEN));
    SetOutcome::Updated
}

/// Where the opcode covering a register is.
struct Located {
    /// Its offset in the string.
    at: usize,
    /// The first register it covers.
    first: usize,
    /// The offset of the opcode before it, if any.
    prev: Option<usize>,
    op: Op,
}

fn locate(hll: &[u8], index: usize) -> Option<Located> {
    let (mut at, mut first, mut prev) = (HEADER_LEN, 0, None);
    while at < hll.len() {
        let op = Op::read(&hll[at..]);
        if index < first + op.span() {
            return Some(Located {
                at,
                first,
                prev,
                op,
            });
        }
        prev = Some(at);
        at += op.size();
        first += op.span();
    }
    None
}

/// The opcodes replacing `op` when the register `offset` places into its run takes
/// `value`: the part of the run before it, the register alone, the part after it.
fn split(op: Op, offset: usize, value: u8) -> Opcodes {
    let after = op.span() - offset - 1;
    let mut seq = Opcodes::default();
    match op {
        Op::Val { value: old, .. } => {
            if offset > 0 {
                seq.push(val_op(old, offset));
            }
            seq.push(val_op(value, 1));
            if after > 0 {
                seq.push(val_op(old, after));
            }
        }
        Op::Zero(_) | Op::XZero(_) => {
            seq.push_zeros(offset);
            seq.push(val_op(value, 1));
            seq.push_zeros(after);
        }
    }
    seq
}

/// A few opcode bytes built on the stack: at most five, what one opcode splits into
/// (XZERO, VAL, XZERO).
#[derive(Default)]
struct Opcodes {
    bytes: [u8; 5],
    len: usize,
}

impl Opcodes {
    fn push(&mut self, byte: u8) {
        self.bytes[self.len] = byte;
        self.len += 1;
    }

    /// The opcode for `len` zero registers (none for 0).
    fn push_zeros(&mut self, len: usize) {
        if len == 0 {
            return;
        }
        let stored = len - 1;
        if len > ZERO_MAX_LEN {
            self.push(XZERO_BIT | (stored >> 8) as u8);
            self.push(stored as u8);
        } else {
            self.push(stored as u8);
        }
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Join neighbouring `VAL`s of equal value whose lengths fit one opcode, looking at
/// a few opcodes from offset `from` (the opcode before the one just changed).
fn merge_neighbours(hll: &mut ThinBuf, from: usize) {
    let mut at = from;
    let mut budget = MERGE_SCAN;
    while at < hll.len() && budget > 0 {
        budget -= 1;
        let op = Op::read(&hll[at..]);
        let Op::Val { value, len } = op else {
            at += op.size();
            continue;
        };
        if let Some(&next) = hll.get(at + 1) {
            if let Op::Val { value: v, len: l } = Op::read(&[next]) {
                if v == value && len + l <= VAL_MAX_LEN {
                    hll[at + 1] = val_op(value, len + l);
                    hll.splice(at..at + 1, &[]);
                    // Stay: the merged opcode may join the one after it too.
                    continue;
                }
            }
        }
        at += 1;
    }
}

/// A `VAL` opcode.
fn val_op(value: u8, len: usize) -> u8 {
    VAL_BIT | (value - 1) << 2 | (len - 1) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> ThinBuf {
        let mut hll = ThinBuf::zeroed(HEADER_LEN);
        hll.extend_from_slice(&empty_body());
        hll
    }

    fn text(hll: &[u8]) -> String {
        decode(&hll[HEADER_LEN..])
    }

    #[test]
    fn empty_is_one_xzero() {
        assert_eq!(empty_body(), [0x7f, 0xff]);
        assert_eq!(decode(&empty_body()), "Z:16384");
    }

    #[test]
    fn setting_splits_runs() {
        let mut hll = fresh();
        assert_eq!(set(&mut hll, 100, 3, 3000), SetOutcome::Updated);
        assert_eq!(text(&hll), "Z:100 v:3,1 Z:16283");
        assert_eq!(set(&mut hll, 100, 2, 3000), SetOutcome::Unchanged);
        assert_eq!(set(&mut hll, 0, 1, 3000), SetOutcome::Updated);
        // Runs longer than 64 stay XZERO, shorter ones become ZERO.
        assert_eq!(text(&hll), "v:1,1 Z:99 v:3,1 Z:16283");
        assert_eq!(set(&mut hll, 102, 4, 3000), SetOutcome::Updated);
        assert_eq!(text(&hll), "v:1,1 Z:99 v:3,1 z:1 v:4,1 Z:16281");
        assert_eq!(set(&mut hll, 16383, 5, 3000), SetOutcome::Updated);
        assert_eq!(text(&hll), "v:1,1 Z:99 v:3,1 z:1 v:4,1 Z:16280 v:5,1");
    }

    #[test]
    fn equal_neighbours_merge() {
        let mut hll = fresh();
        for index in [10, 12, 11, 13] {
            assert_eq!(set(&mut hll, index, 2, 3000), SetOutcome::Updated);
        }
        assert_eq!(text(&hll), "z:10 v:2,4 Z:16370");
        assert_eq!(set(&mut hll, 14, 2, 3000), SetOutcome::Updated);
        assert_eq!(text(&hll), "z:10 v:2,4 v:2,1 Z:16369");
        // Raising a register inside a VAL run splits it in three; the tail of the
        // run then joins the next VAL.
        assert_eq!(set(&mut hll, 11, 7, 3000), SetOutcome::Updated);
        assert_eq!(text(&hll), "z:10 v:2,1 v:7,1 v:2,3 Z:16369");
    }

    #[test]
    fn big_values_and_growth_call_for_dense() {
        let mut hll = fresh();
        assert_eq!(set(&mut hll, 5, 33, 3000), SetOutcome::NeedsDense);
        assert_eq!(set(&mut hll, 5, 1, 19), SetOutcome::NeedsDense);
        assert_eq!(hll.len(), HEADER_LEN + 2);
        assert_eq!(set(&mut hll, 5, 1, 21), SetOutcome::Updated);
    }

    #[test]
    fn a_cut_short_xzero_loses_the_last_byte_of_its_split() {
        // XZERO with its second byte missing: 0x3f00 + 1 registers, read as Redis does.
        let mut hll = ThinBuf::zeroed(HEADER_LEN);
        hll.extend_from_slice(&[0x7f]);
        assert_eq!(set(&mut hll, 5, 2, 3000), SetOutcome::Updated);
        // z:5, v:2,1, then an XZERO of 16123 whose second byte fell off.
        assert_eq!(&hll[HEADER_LEN..], &[0x04, 0x84, 0x7e]);
    }

    #[test]
    fn runs_must_cover_every_register() {
        let mut seen = 0;
        for_each_value(&[0x40, 0x01, 0x80, 0x7f, 0xfc], |_, len, _| seen += len).unwrap();
        assert_eq!(seen, 1);
        assert_eq!(for_each_value(&[0x7f, 0xfe], |_, _, _| {}), Err(Corrupt));
        assert_eq!(
            for_each_value(&[0x7f, 0xff, 0x80], |_, _, _| {}),
            Err(Corrupt)
        );
        assert_eq!(
            set(&mut ThinBuf::zeroed(HEADER_LEN), 0, 1, 3000),
            SetOutcome::Corrupt
        );
    }
}
