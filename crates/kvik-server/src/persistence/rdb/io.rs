//! The RDB primitives: lengths, strings (plain, integer-encoded, LZF-compressed),
//! doubles and millisecond times, read from a bounded cursor and written to a vector.
//!
//! A length is one to nine bytes: the first byte's top two bits say how it goes on (6
//! bits in that byte, 14 bits over two, a 32- or 64-bit big-endian number after a
//! marker byte), or, as `11`, that a special string encoding follows instead.

use super::{Corrupt, Result};
use crate::util::numbers::parse_i64;
use std::borrow::Cow;

/// The special string encodings, after a `11` length tag.
const ENC_INT8: u8 = 0;
const ENC_INT16: u8 = 1;
const ENC_INT32: u8 = 2;
const ENC_LZF: u8 = 3;

const LEN_32BIT: u8 = 0x80;
const LEN_64BIT: u8 = 0x81;

/// Redis never compresses a string of 20 bytes or fewer, and keeps the compressed
/// form only when it saves at least 4 bytes.
const LZF_MIN_LEN: usize = 21;
const LZF_MIN_SAVING: usize = 4;
/// The most bytes one LZF byte of input can stand for (a back-reference of 3 bytes
/// copies up to 264): a declared length beyond this many times the compressed size
/// is a lie, refused before anything is allocated for it.
const LZF_MAX_RATIO: usize = 88;

/// A cursor over the bytes of a payload; every read checks it stays inside them.
pub struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

/// What a length field holds.
enum Length {
    Plain(u64),
    /// One of the special string encodings (`ENC_*`).
    Special(u8),
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, at: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.at
    }

    pub fn byte(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.buf.len())
            .ok_or(Corrupt("read past the end"))?;
        let bytes = &self.buf[self.at..end];
        self.at = end;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("took N bytes"))
    }

    fn length(&mut self) -> Result<Length> {
        let first = self.byte()?;
        Ok(match first >> 6 {
            0 => Length::Plain(u64::from(first & 0x3f)),
            1 => Length::Plain(u64::from(first & 0x3f) << 8 | u64::from(self.byte()?)),
            3 => Length::Special(first & 0x3f),
            _ if first == LEN_32BIT => Length::Plain(u32::from_be_bytes(self.array()?).into()),
            _ if first == LEN_64BIT => Length::Plain(u64::from_be_bytes(self.array()?)),
            _ => return Err(Corrupt("unknown length encoding")),
        })
    }

    /// A plain length (a number, not a string encoding).
    pub fn len(&mut self) -> Result<u64> {
        match self.length()? {
            Length::Plain(n) => Ok(n),
            Length::Special(_) => Err(Corrupt("string encoding where a length belongs")),
        }
    }

    /// A count of things that follow, each at least one byte long: more than the
    /// bytes left cannot be true, which bounds what a caller preallocates from it.
    pub fn count(&mut self) -> Result<usize> {
        usize::try_from(self.len()?)
            .ok()
            .filter(|&n| n <= self.remaining())
            .ok_or(Corrupt("count larger than the payload"))
    }

    /// A string in any of its encodings: borrowed when stored plain.
    pub fn string(&mut self) -> Result<Cow<'a, [u8]>> {
        match self.length()? {
            Length::Plain(n) => {
                let n = usize::try_from(n).map_err(|_| Corrupt("string too long"))?;
                Ok(Cow::Borrowed(self.take(n)?))
            }
            Length::Special(ENC_INT8) => Ok(digits(i64::from(self.byte()? as i8))),
            Length::Special(ENC_INT16) => Ok(digits(i16::from_le_bytes(self.array()?).into())),
            Length::Special(ENC_INT32) => Ok(digits(i32::from_le_bytes(self.array()?).into())),
            Length::Special(ENC_LZF) => self.lzf().map(Cow::Owned),
            Length::Special(_) => Err(Corrupt("unknown string encoding")),
        }
    }

    fn lzf(&mut self) -> Result<Vec<u8>> {
        let compressed_len = usize::try_from(self.len()?).map_err(|_| Corrupt("LZF too long"))?;
        let len = usize::try_from(self.len()?).map_err(|_| Corrupt("LZF too long"))?;
        let compressed = self.take(compressed_len)?;
        if len > compressed_len.saturating_mul(LZF_MAX_RATIO) {
            return Err(Corrupt("LZF length beyond what its input can hold"));
        }
        match lzf::decompress(compressed, len) {
            Ok(bytes) if bytes.len() == len => Ok(bytes),
            _ => Err(Corrupt("invalid LZF string")),
        }
    }

    /// A double as text after a length byte, with 253/254/255 for NaN, +inf and -inf
    /// (sorted sets before RDB version 8).
    pub fn text_double(&mut self) -> Result<f64> {
        let len = self.byte()?;
        match len {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            _ => {
                let text = self.take(len.into())?;
                let parsed = crate::util::strtod::strtod(crate::util::numbers::c_string(text));
                // `%lg` wants a number at the start and ignores what follows it.
                (parsed.len > 0)
                    .then_some(parsed.value)
                    .ok_or(Corrupt("unreadable double"))
            }
        }
    }

    /// An IEEE 754 double, little-endian.
    pub fn binary_double(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    /// A Unix time in milliseconds, 8 bytes little-endian.
    pub fn millis(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    /// 16 raw bytes of a stream ID: milliseconds then sequence, big-endian.
    pub fn raw_id(&mut self) -> Result<[u8; 16]> {
        self.array()
    }
}

fn digits(n: i64) -> Cow<'static, [u8]> {
    Cow::Owned(itoa::Buffer::new().format(n).as_bytes().to_vec())
}

pub fn write_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.extend_from_slice(&(0x4000 | n as u16).to_be_bytes());
    } else if let Ok(n) = u32::try_from(n) {
        out.push(LEN_32BIT);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(LEN_64BIT);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// A string as Redis saves one: as an 8/16/32-bit integer when it is the canonical
/// form of one (at most 11 bytes), LZF-compressed when `compress` and that saves
/// enough, else plain.
pub fn write_string(out: &mut Vec<u8>, bytes: &[u8], compress: bool) {
    if bytes.len() <= 11 && parse_i64(bytes).is_some_and(|n| write_small_int(out, n)) {
        return;
    }
    if compress && bytes.len() >= LZF_MIN_LEN {
        if let Ok(packed) = lzf::compress(bytes) {
            if packed.len() <= bytes.len() - LZF_MIN_SAVING {
                out.push(0xC0 | ENC_LZF);
                write_len(out, packed.len() as u64);
                write_len(out, bytes.len() as u64);
                out.extend_from_slice(&packed);
                return;
            }
        }
    }
    write_len(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// An integer-valued string: integer-encoded when it fits 32 bits, else its digits.
pub fn write_int(out: &mut Vec<u8>, n: i64) {
    if !write_small_int(out, n) {
        let mut digits = itoa::Buffer::new();
        let text = digits.format(n).as_bytes();
        write_len(out, text.len() as u64);
        out.extend_from_slice(text);
    }
}

/// Write `n` in the narrowest integer string encoding, if one holds it.
fn write_small_int(out: &mut Vec<u8>, n: i64) -> bool {
    if let Ok(n) = i8::try_from(n) {
        out.extend_from_slice(&[0xC0 | ENC_INT8, n as u8]);
    } else if let Ok(n) = i16::try_from(n) {
        out.push(0xC0 | ENC_INT16);
        out.extend_from_slice(&n.to_le_bytes());
    } else if let Ok(n) = i32::try_from(n) {
        out.push(0xC0 | ENC_INT32);
        out.extend_from_slice(&n.to_le_bytes());
    } else {
        return false;
    }
    true
}

pub fn write_binary_double(out: &mut Vec<u8>, d: f64) {
    out.extend_from_slice(&d.to_le_bytes());
}

pub fn write_millis(out: &mut Vec<u8>, ms: i64) {
    out.extend_from_slice(&ms.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut out = Vec::new();
        f(&mut out);
        out
    }

    #[test]
    fn lengths_take_the_narrowest_form() {
        for (n, bytes) in [
            (0u64, &b"\x00"[..]),
            (63, b"\x3f"),
            (64, b"\x40\x40"),
            (16383, b"\x7f\xff"),
            (16384, b"\x80\x00\x00\x40\x00"),
            (1 << 32, b"\x81\x00\x00\x00\x01\x00\x00\x00\x00"),
        ] {
            assert_eq!(written(|o| write_len(o, n)), bytes);
            assert_eq!(Reader::new(bytes).len(), Ok(n));
        }
        assert!(Reader::new(b"\x82").len().is_err());
        assert!(Reader::new(b"\xc0\x01").len().is_err());
    }

    #[test]
    fn strings_use_integer_and_lzf_encodings_as_redis_does() {
        assert_eq!(written(|o| write_string(o, b"-5", true)), b"\xc0\xfb");
        assert_eq!(written(|o| write_string(o, b"300", true)), b"\xc1\x2c\x01");
        assert_eq!(
            written(|o| write_string(o, b"70000", true)),
            b"\xc2\x70\x11\x01\x00"
        );
        assert_eq!(written(|o| write_string(o, b"007", true)), b"\x03007");
        assert_eq!(written(|o| write_int(o, 1 << 40)), b"\x0d1099511627776");
        let long = [b'a'; 100];
        let packed = written(|o| write_string(o, &long, true));
        assert_eq!(packed[0], 0xC3);
        assert!(packed.len() < 20);
        assert_eq!(Reader::new(&packed).string().unwrap(), &long[..]);
        assert_eq!(written(|o| write_string(o, &long, false)).len(), 101);
        for encoded in [&b"\xc0\xfb"[..], b"\xc1\x2c\x01", b"\xc2\x70\x11\x01\x00"] {
            let text = Reader::new(encoded).string().unwrap().into_owned();
            assert_eq!(written(|o| write_string(o, &text, true)), encoded);
        }
    }

    #[test]
    fn lzf_lies_are_refused_before_allocating() {
        // Claims 4 GB from three bytes of input.
        assert!(Reader::new(b"\xc3\x03\x80\xff\xff\xff\xff\x00ab")
            .string()
            .is_err());
        // A back-reference before the start.
        assert!(Reader::new(b"\xc3\x02\x05\x20\x05").string().is_err());
        // The right bytes but a different declared length.
        assert!(Reader::new(b"\xc3\x04\x04\x02abc").string().is_err());
        assert_eq!(
            Reader::new(b"\xc3\x04\x03\x02abc").string().unwrap(),
            &b"abc"[..]
        );
    }

    #[test]
    fn counts_are_bounded_by_the_bytes_left() {
        assert!(Reader::new(b"\x80\xff\xff\xff\xff").count().is_err());
        assert_eq!(Reader::new(b"\x02ab").count(), Ok(2));
    }
}
