//! Redis's listpack, the packed node format of lists, small hashes and sorted sets,
//! 7.2's small sets and stream nodes.
//!
//! ```text
//! total-bytes:u32le  count:u16le  entry*  0xFF
//! entry = encoding [data] backlen
//! ```
//!
//! An entry's first byte says what it holds: an integer of 7 bits (in that byte), 13,
//! 16, 24, 32 or 64 bits, or a string whose length has 6 bits (in that byte), 12 or
//! 32. `backlen` is the size of encoding and data, 7 bits per byte, written so it can
//! be read from its last byte backwards (the last byte holds the low bits; a set top
//! bit means more bytes to the left). A count of 65535 means "count them".
//!
//! The parser checks everything Redis's deep validation does: the header's size, each
//! entry within bounds, each back-length equal to its entry's size, the terminator
//! exactly at the end, the count when the header states one.

use super::{Corrupt, Result};
use kvik_types::list::Element;

const HEADER: usize = 6;
const EOF: u8 = 0xFF;
/// The header's count when there are too many to state.
const UNKNOWN_COUNT: u16 = u16::MAX;

const STR6: u8 = 0x80;
const INT13: u8 = 0xC0;
const STR12: u8 = 0xE0;
const STR32: u8 = 0xF0;
const INT16: u8 = 0xF1;
const INT24: u8 = 0xF2;
const INT32: u8 = 0xF3;
const INT64: u8 = 0xF4;

/// Every element of the listpack `blob`, checked.
pub fn parse(blob: &[u8]) -> Result<Vec<Element<'_>>> {
    if blob.len() < HEADER + 1 {
        return Err(Corrupt("listpack shorter than its header"));
    }
    let total = u32::from_le_bytes(blob[..4].try_into().expect("4 bytes"));
    if total as usize != blob.len() || blob[blob.len() - 1] != EOF {
        return Err(Corrupt("listpack size or terminator wrong"));
    }
    let stated = u16::from_le_bytes([blob[4], blob[5]]);
    let body = &blob[..blob.len() - 1];
    let mut elements = Vec::new();
    let mut at = HEADER;
    while at < body.len() {
        let (element, end) = entry(body, at)?;
        elements.push(element);
        at = end;
    }
    if stated != UNKNOWN_COUNT && usize::from(stated) != elements.len() {
        return Err(Corrupt("listpack count wrong"));
    }
    Ok(elements)
}

/// The entry at `at` and where the next one starts.
fn entry(body: &[u8], at: usize) -> Result<(Element<'_>, usize)> {
    let (element, size) = element_at(body, at)?;
    let backlen = backlen_size(size);
    let end = at + size + backlen;
    let stored = body
        .get(at + size..end)
        .ok_or(Corrupt("listpack entry past the end"))?;
    if decode_backlen(stored) != Some(size) {
        return Err(Corrupt("listpack back-length wrong"));
    }
    Ok((element, end))
}

/// The element at `at` and the size of its encoding and data.
fn element_at(body: &[u8], at: usize) -> Result<(Element<'_>, usize)> {
    let bytes = |from: usize, n: usize| {
        body.get(at + from..at + from + n)
            .ok_or(Corrupt("listpack entry past the end"))
    };
    let first = body[at];
    let signed = |n: usize| -> Result<i64> {
        let raw = bytes(1, n)?;
        let mut le = [0u8; 8];
        le[..n].copy_from_slice(raw);
        let shift = 64 - 8 * n as u32;
        Ok((i64::from_le_bytes(le) << shift) >> shift)
    };
    Ok(match first {
        0..=0x7F => (Element::Int(first.into()), 1),
        0x80..=0xBF => {
            let len = usize::from(first & 0x3F);
            (Element::Bytes(bytes(1, len)?), 1 + len)
        }
        0xC0..=0xDF => {
            let raw = i64::from(first & 0x1F) << 8 | i64::from(bytes(1, 1)?[0]);
            ((Element::Int((raw << 51) >> 51)), 2)
        }
        0xE0..=0xEF => {
            let len = usize::from(first & 0x0F) << 8 | usize::from(bytes(1, 1)?[0]);
            (Element::Bytes(bytes(2, len)?), 2 + len)
        }
        STR32 => {
            let len = u32::from_le_bytes(bytes(1, 4)?.try_into().expect("4 bytes")) as usize;
            (Element::Bytes(bytes(5, len)?), 5 + len)
        }
        INT16 => (Element::Int(signed(2)?), 3),
        INT24 => (Element::Int(signed(3)?), 4),
        INT32 => (Element::Int(signed(4)?), 5),
        INT64 => (Element::Int(signed(8)?), 9),
        _ => return Err(Corrupt("unknown listpack encoding")),
    })
}

/// Bytes the back-length of an entry of `size` takes.
fn backlen_size(size: usize) -> usize {
    match size {
        0..=127 => 1,
        128..=16_383 => 2,
        16_384..=2_097_151 => 3,
        2_097_152..=268_435_455 => 4,
        _ => 5,
    }
}

/// Read a back-length from its last byte backwards; `None` unless it spans exactly
/// `stored`.
fn decode_backlen(stored: &[u8]) -> Option<usize> {
    let mut value = 0usize;
    for (i, &byte) in stored.iter().rev().enumerate() {
        value |= usize::from(byte & 0x7F) << (7 * i);
        let last = i + 1 == stored.len();
        if (byte & 0x80 == 0) != last {
            return None;
        }
    }
    Some(value)
}

/// Builds a listpack the way Redis appends to one: integers (and strings that are
/// the canonical form of one) in the narrowest integer encoding, other strings by
/// length.
pub struct Writer {
    buf: Vec<u8>,
    count: usize,
}

impl Writer {
    pub fn new() -> Writer {
        Writer {
            buf: vec![0; HEADER],
            count: 0,
        }
    }

    /// Append a string, stored as an integer when it is the form of one.
    pub fn push_bytes(&mut self, bytes: &[u8]) {
        self.push(Element::of(bytes));
    }

    pub fn push(&mut self, element: Element<'_>) {
        let start = self.buf.len();
        match element {
            Element::Int(n) => self.put_int(n),
            Element::Bytes(s) => self.put_string(s),
        }
        let size = self.buf.len() - start;
        self.put_backlen(size);
        self.count += 1;
    }

    fn put_int(&mut self, n: i64) {
        let (tag, width) = match n {
            0..=127 => return self.buf.push(n as u8),
            -4096..=4095 => {
                let raw = (n as u16) & 0x1FFF;
                return self
                    .buf
                    .extend_from_slice(&[INT13 | (raw >> 8) as u8, raw as u8]);
            }
            -32_768..=32_767 => (INT16, 2),
            -8_388_608..=8_388_607 => (INT24, 3),
            -2_147_483_648..=2_147_483_647 => (INT32, 4),
            _ => (INT64, 8),
        };
        self.buf.push(tag);
        self.buf.extend_from_slice(&n.to_le_bytes()[..width]);
    }

    fn put_string(&mut self, s: &[u8]) {
        let len = s.len();
        if len < 64 {
            self.buf.push(STR6 | len as u8);
        } else if len < 4096 {
            self.buf
                .extend_from_slice(&[STR12 | (len >> 8) as u8, len as u8]);
        } else {
            self.buf.push(STR32);
            self.buf.extend_from_slice(&(len as u32).to_le_bytes());
        }
        self.buf.extend_from_slice(s);
    }

    /// The back-length: high bits first, every byte but the first flagged, so that a
    /// reader going backwards knows when to stop.
    fn put_backlen(&mut self, size: usize) {
        let n = backlen_size(size);
        for i in (0..n).rev() {
            let bits = (size >> (7 * i)) as u8 & 0x7F;
            self.buf.push(if i + 1 == n { bits } else { bits | 0x80 });
        }
    }

    /// The finished listpack.
    pub fn finish(mut self) -> Vec<u8> {
        self.buf.push(EOF);
        let total = self.buf.len() as u32;
        self.buf[..4].copy_from_slice(&total.to_le_bytes());
        let count = u16::try_from(self.count)
            .ok()
            .filter(|&c| c < UNKNOWN_COUNT)
            .unwrap_or(UNKNOWN_COUNT);
        self.buf[4..6].copy_from_slice(&count.to_le_bytes());
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pack(elements: &[Element]) -> Vec<u8> {
        let mut w = Writer::new();
        elements.iter().for_each(|&e| w.push(e));
        w.finish()
    }

    #[test]
    fn every_encoding_round_trips() {
        let long = vec![b'x'; 5000];
        let mid = vec![b'y'; 200];
        let elements = [
            Element::Int(0),
            Element::Int(127),
            Element::Int(128),
            Element::Int(-4096),
            Element::Int(4095),
            Element::Int(-32_768),
            Element::Int(8_388_607),
            Element::Int(-2_147_483_648),
            Element::Int(i64::MIN),
            Element::Int(i64::MAX),
            Element::Bytes(b""),
            Element::Bytes(b"hello"),
            Element::Bytes(&mid),
            Element::Bytes(&long),
        ];
        let blob = pack(&elements);
        assert_eq!(parse(&blob).unwrap(), elements);
    }

    #[test]
    fn bytes_match_redis() {
        // Redis 7.0's listpack of the hash f=v, n=12 (from its DUMP).
        let blob = pack(&[
            Element::Bytes(b"f"),
            Element::Bytes(b"v"),
            Element::Bytes(b"n"),
            Element::Int(12),
        ]);
        assert_eq!(
            blob,
            b"\x12\x00\x00\x00\x04\x00\x81f\x02\x81v\x02\x81n\x02\x0c\x01\xff"
        );
    }

    #[test]
    fn damage_is_refused() {
        let blob = pack(&[Element::Bytes(b"abc"), Element::Int(300)]);
        for cut in 0..blob.len() {
            assert!(parse(&blob[..cut]).is_err(), "cut at {cut}");
        }
        let mut count = blob.clone();
        count[4] = 3;
        assert!(parse(&count).is_err());
        let mut unknown = blob.clone();
        unknown[4..6].copy_from_slice(&[0xFF, 0xFF]);
        assert_eq!(parse(&unknown).unwrap().len(), 2);
        let mut backlen = blob.clone();
        backlen[10] ^= 1;
        assert!(parse(&backlen).is_err());
        let mut tag = blob;
        tag[6] = 0xF7;
        assert!(parse(&tag).is_err());
    }
}
