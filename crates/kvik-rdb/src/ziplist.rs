//! Redis's ziplist, the packed format before listpacks (RDB types of Redis up to
//! 6.2): read only, since Redis 7 writes listpacks.
//!
//! ```text
//! total-bytes:u32le  tail-offset:u32le  count:u16le  entry*  0xFF
//! entry = prevlen encoding [data]
//! ```
//!
//! `prevlen` is the previous entry's size, in one byte below 254, else 0xFE and 4
//! bytes little-endian. The encoding byte says: a string with a 6-bit length (in that
//! byte), a 14-bit one (big-endian over two bytes) or a 32-bit one (big-endian after
//! 0x80); an integer of 8, 16, 24, 32 or 64 bits; or 0 to 12 in the byte itself.
//!
//! The parser checks what Redis's validation does: the header's size, the tail offset,
//! each entry within bounds and each `prevlen` equal to the entry before, the
//! terminator exactly at the end, the count when the header states one.

use super::{Corrupt, Result};
use kvik_types::list::Element;

const HEADER: usize = 10;
const END: u8 = 0xFF;
const BIG_PREVLEN: u8 = 0xFE;
const UNKNOWN_COUNT: u16 = u16::MAX;

/// Every element of the ziplist `blob`, checked.
pub fn parse(blob: &[u8]) -> Result<Vec<Element<'_>>> {
    if blob.len() < HEADER + 1 {
        return Err(Corrupt("ziplist shorter than its header"));
    }
    let word = |at: usize| u32::from_le_bytes(blob[at..at + 4].try_into().expect("4 bytes"));
    if word(0) as usize != blob.len() || blob[blob.len() - 1] != END {
        return Err(Corrupt("ziplist size or terminator wrong"));
    }
    let tail = word(4) as usize;
    let stated = u16::from_le_bytes([blob[8], blob[9]]);
    let body = &blob[..blob.len() - 1];
    let mut elements = Vec::new();
    let (mut at, mut previous_size, mut last_start) = (HEADER, 0, HEADER);
    while at < body.len() {
        let (element, size) = entry(body, at, previous_size)?;
        elements.push(element);
        last_start = at;
        previous_size = size;
        at += size;
    }
    if tail != last_start {
        return Err(Corrupt("ziplist tail offset wrong"));
    }
    if stated != UNKNOWN_COUNT && usize::from(stated) != elements.len() {
        return Err(Corrupt("ziplist count wrong"));
    }
    Ok(elements)
}

/// The entry at `at`, whose predecessor took `previous_size` bytes, and its size.
fn entry(body: &[u8], at: usize, previous_size: usize) -> Result<(Element<'_>, usize)> {
    let bytes = |from: usize, n: usize| {
        body.get(at + from..at + from + n)
            .ok_or(Corrupt("ziplist entry past the end"))
    };
    let (prevlen, header) = match body[at] {
        BIG_PREVLEN => {
            let raw = bytes(1, 4)?.try_into().expect("4 bytes");
            (u32::from_le_bytes(raw) as usize, 5)
        }
        END => return Err(Corrupt("ziplist terminator inside")),
        small => (usize::from(small), 1),
    };
    if prevlen != previous_size {
        return Err(Corrupt("ziplist prevlen wrong"));
    }
    let tag = bytes(header, 1)?[0];
    let signed = |n: usize| -> Result<i64> {
        let mut le = [0u8; 8];
        le[..n].copy_from_slice(bytes(header + 1, n)?);
        let shift = 64 - 8 * n as u32;
        Ok((i64::from_le_bytes(le) << shift) >> shift)
    };
    let (element, size) = match tag {
        0x00..=0x3F => {
            let len = usize::from(tag);
            (Element::Bytes(bytes(header + 1, len)?), 1 + len)
        }
        0x40..=0x7F => {
            let len = usize::from(tag & 0x3F) << 8 | usize::from(bytes(header + 1, 1)?[0]);
            (Element::Bytes(bytes(header + 2, len)?), 2 + len)
        }
        0x80 => {
            let raw = bytes(header + 1, 4)?.try_into().expect("4 bytes");
            let len = u32::from_be_bytes(raw) as usize;
            (Element::Bytes(bytes(header + 5, len)?), 5 + len)
        }
        0xC0 => (Element::Int(signed(2)?), 3),
        0xD0 => (Element::Int(signed(4)?), 5),
        0xE0 => (Element::Int(signed(8)?), 9),
        0xF0 => (Element::Int(signed(3)?), 4),
        0xFE => (Element::Int(signed(1)?), 2),
        0xF1..=0xFD => (Element::Int(i64::from(tag & 0x0F) - 1), 1),
        _ => return Err(Corrupt("unknown ziplist encoding")),
    };
    Ok((element, header + size))
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A ziplist of `elements` as Redis 6 built them (for the decoder's tests).
    pub fn build(elements: &[Element]) -> Vec<u8> {
        let mut body = Vec::new();
        let (mut previous, mut tail) = (0usize, HEADER);
        for &element in elements {
            let start = body.len();
            tail = HEADER + start;
            if previous < 254 {
                body.push(previous as u8);
            } else {
                body.push(BIG_PREVLEN);
                body.extend_from_slice(&(previous as u32).to_le_bytes());
            }
            match element {
                Element::Int(n @ 0..=12) => body.push(0xF1 + n as u8),
                Element::Int(n) if i8::try_from(n).is_ok() => body.extend([0xFE, n as u8]),
                Element::Int(n) if i16::try_from(n).is_ok() => {
                    body.push(0xC0);
                    body.extend_from_slice(&(n as i16).to_le_bytes());
                }
                Element::Int(n) => {
                    body.push(0xE0);
                    body.extend_from_slice(&n.to_le_bytes());
                }
                Element::Bytes(s) if s.len() < 64 => {
                    body.push(s.len() as u8);
                    body.extend_from_slice(s);
                }
                Element::Bytes(s) => {
                    body.push(0x80);
                    body.extend_from_slice(&(s.len() as u32).to_be_bytes());
                    body.extend_from_slice(s);
                }
            }
            previous = body.len() - start;
        }
        let mut blob = Vec::with_capacity(HEADER + body.len() + 1);
        blob.extend_from_slice(&((HEADER + body.len() + 1) as u32).to_le_bytes());
        blob.extend_from_slice(&(tail as u32).to_le_bytes());
        blob.extend_from_slice(&(elements.len() as u16).to_le_bytes());
        blob.extend_from_slice(&body);
        blob.push(END);
        blob
    }

    #[test]
    fn entries_round_trip_and_damage_is_refused() {
        let long = vec![b'z'; 300];
        let elements = [
            Element::Int(5),
            Element::Int(-100),
            Element::Int(30_000),
            Element::Int(i64::MIN),
            Element::Bytes(b"abc"),
            Element::Bytes(&long),
            Element::Bytes(b"after a long one"),
        ];
        let blob = build(&elements);
        assert_eq!(parse(&blob).unwrap(), elements);
        for cut in 0..blob.len() {
            assert!(parse(&blob[..cut]).is_err());
        }
        for at in HEADER..blob.len() - 1 {
            let mut bad = blob.clone();
            bad[at] ^= 0x40;
            assert_ne!(parse(&bad).ok(), Some(elements.to_vec()), "flip at {at}");
        }
        assert_eq!(parse(&build(&[])).unwrap(), vec![]);
    }
}
