//! The RDB primitives: lengths, strings (plain, integer-encoded, LZF-compressed),
//! doubles and millisecond times, read from a [`Source`] and written to a [`Sink`].
//!
//! A length is one to nine bytes: the first byte's top two bits say how it goes on (6
//! bits in that byte, 14 bits over two, a 32- or 64-bit big-endian number after a
//! marker byte), or, as `11`, that a special string encoding follows instead.
//!
//! Both ends come in two kinds. A DUMP payload is one buffer: [`Bytes`] reads it in
//! place and `Vec<u8>` collects what is written. An RDB file is a stream:
//! [`ReadSource`] and [`WriteSink`] work over `io::Read` and `io::Write`, keep the
//! running CRC-64 an RDB file ends with, and never trust a declared length further
//! than the bytes that actually arrive.

use super::payload::Crc64;
use super::{Corrupt, Result};
use kvik_util::lzf;
use kvik_util::numbers::parse_i64;
use std::borrow::Cow;
use std::io;

/// The input ended before what it declared: a truncated file or payload.
pub const PAST_END: Corrupt = Corrupt("read past the end");

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

/// What a length field holds.
enum Length {
    Plain(u64),
    /// One of the special string encodings (`ENC_*`).
    Special(u8),
}

/// Where encoded values are read from. Implementors supply raw bytes; the RDB
/// primitives on top are provided.
pub trait Source<'a> {
    /// The next `n` bytes: borrowed when the source is a buffer.
    fn take(&mut self, n: usize) -> Result<Cow<'a, [u8]>>;

    /// How many bytes are left at most, when the source knows (a buffer does, a
    /// stream does not).
    fn left(&self) -> Option<usize>;

    fn byte(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let bytes = self.take(N)?;
        Ok(bytes[..].try_into().expect("took N bytes"))
    }

    /// A plain length (a number, not a string encoding).
    fn length(&mut self) -> Result<u64> {
        match length_field(self)? {
            Length::Plain(n) => Ok(n),
            Length::Special(_) => Err(Corrupt("string encoding where a length belongs")),
        }
    }

    /// A count of things that follow, each at least one byte long: more than the
    /// bytes left cannot be true. Callers still preallocate at most
    /// [`prealloc`]`(count)`, since a stream cannot say how much is left.
    fn count(&mut self) -> Result<usize> {
        usize::try_from(self.length()?)
            .ok()
            .filter(|&n| self.left().is_none_or(|left| n <= left))
            .ok_or(Corrupt("count larger than the payload"))
    }

    /// A string in any of its encodings.
    fn string(&mut self) -> Result<Cow<'a, [u8]>> {
        match length_field(self)? {
            Length::Plain(n) => {
                let n = usize::try_from(n).map_err(|_| Corrupt("string too long"))?;
                self.take(n)
            }
            Length::Special(ENC_INT8) => Ok(digits(i64::from(self.byte()? as i8))),
            Length::Special(ENC_INT16) => Ok(digits(i16::from_le_bytes(self.array()?).into())),
            Length::Special(ENC_INT32) => Ok(digits(i32::from_le_bytes(self.array()?).into())),
            Length::Special(ENC_LZF) => lzf_string(self).map(Cow::Owned),
            Length::Special(_) => Err(Corrupt("unknown string encoding")),
        }
    }

    /// A double as text after a length byte, with 253/254/255 for NaN, +inf and -inf
    /// (sorted sets before RDB version 8).
    fn text_double(&mut self) -> Result<f64> {
        let len = self.byte()?;
        match len {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            _ => {
                let text = self.take(len.into())?;
                let parsed = kvik_util::strtod::strtod(kvik_util::numbers::c_string(&text));
                // Redis reads it with `%lg`: a number at the start, the rest ignored.
                (parsed.len > 0)
                    .then_some(parsed.value)
                    .ok_or(Corrupt("unreadable double"))
            }
        }
    }

    /// An IEEE 754 double, little-endian.
    fn binary_double(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    /// A Unix time in milliseconds, 8 bytes little-endian.
    fn millis(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }
}

/// How many elements to reserve room for ahead of a declared count: enough to
/// avoid regrowth for ordinary values, never so much that a lying count costs
/// memory before its elements have arrived.
pub fn prealloc(count: usize) -> usize {
    count.min(4096)
}

fn length_field<'a, S: Source<'a> + ?Sized>(src: &mut S) -> Result<Length> {
    let first = src.byte()?;
    Ok(match first >> 6 {
        0 => Length::Plain(u64::from(first & 0x3f)),
        1 => Length::Plain(u64::from(first & 0x3f) << 8 | u64::from(src.byte()?)),
        3 => Length::Special(first & 0x3f),
        _ if first == LEN_32BIT => Length::Plain(u32::from_be_bytes(src.array()?).into()),
        _ if first == LEN_64BIT => Length::Plain(u64::from_be_bytes(src.array()?)),
        _ => return Err(Corrupt("unknown length encoding")),
    })
}

fn lzf_string<'a, S: Source<'a> + ?Sized>(src: &mut S) -> Result<Vec<u8>> {
    let compressed_len = usize::try_from(src.length()?).map_err(|_| Corrupt("LZF too long"))?;
    let len = usize::try_from(src.length()?).map_err(|_| Corrupt("LZF too long"))?;
    let compressed = src.take(compressed_len)?;
    if len > compressed_len.saturating_mul(LZF_MAX_RATIO) {
        return Err(Corrupt("LZF length beyond what its input can hold"));
    }
    lzf::decompress(&compressed, len).ok_or(Corrupt("invalid LZF string"))
}

fn digits(n: i64) -> Cow<'static, [u8]> {
    Cow::Owned(itoa::Buffer::new().format(n).as_bytes().to_vec())
}

/// A buffer being read in place (a DUMP payload, a loaded file).
pub struct Bytes<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Bytes<'a> {
    pub fn new(buf: &'a [u8]) -> Bytes<'a> {
        Bytes { buf, at: 0 }
    }
}

impl<'a> Source<'a> for Bytes<'a> {
    fn take(&mut self, n: usize) -> Result<Cow<'a, [u8]>> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.buf.len())
            .ok_or(PAST_END)?;
        let bytes = &self.buf[self.at..end];
        self.at = end;
        Ok(Cow::Borrowed(bytes))
    }

    fn left(&self) -> Option<usize> {
        Some(self.buf.len() - self.at)
    }
}

/// A stream being read (an RDB file, a full resync): every string is copied out,
/// and the CRC-64 of everything read so far is kept.
pub struct ReadSource<R> {
    inner: R,
    crc: Crc64,
}

/// A declared length is only believed this far ahead of the bytes that arrived: a
/// lie meets the end of the stream before it costs more memory than that.
const READ_CHUNK: usize = 1 << 20;

impl<R: io::Read> ReadSource<R> {
    pub fn new(inner: R) -> ReadSource<R> {
        ReadSource {
            inner,
            crc: Crc64::default(),
        }
    }

    /// The CRC-64 of every byte read so far.
    pub fn crc(&self) -> u64 {
        self.crc.value()
    }
}

impl<'a, R: io::Read> Source<'a> for ReadSource<R> {
    fn take(&mut self, n: usize) -> Result<Cow<'a, [u8]>> {
        let mut bytes = Vec::with_capacity(n.min(READ_CHUNK));
        while bytes.len() < n {
            let want = (n - bytes.len()).min(READ_CHUNK);
            let mut chunk = io::Read::take(&mut self.inner, want as u64);
            let got =
                io::Read::read_to_end(&mut chunk, &mut bytes).map_err(|_| Corrupt("read error"))?;
            if got == 0 {
                return Err(PAST_END);
            }
        }
        self.crc.update(&bytes);
        Ok(Cow::Owned(bytes))
    }

    fn left(&self) -> Option<usize> {
        None
    }
}

/// Where encoded values go.
pub trait Sink {
    fn put(&mut self, bytes: &[u8]);

    fn put_byte(&mut self, byte: u8) {
        self.put(&[byte]);
    }
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    fn put_byte(&mut self, byte: u8) {
        self.push(byte);
    }
}

/// A stream being written (an RDB file, a full resync): buffered, checksummed, and
/// holding on to the first write error so that encoding code need not thread one
/// through every call; [`WriteSink::finish`] reports it.
pub struct WriteSink<W: io::Write> {
    inner: W,
    buf: Vec<u8>,
    crc: Crc64,
    error: Option<io::Error>,
}

const WRITE_BUFFER: usize = 64 * 1024;

impl<W: io::Write> WriteSink<W> {
    pub fn new(inner: W) -> WriteSink<W> {
        WriteSink {
            inner,
            buf: Vec::with_capacity(WRITE_BUFFER),
            crc: Crc64::default(),
            error: None,
        }
    }

    /// The CRC-64 of every byte put so far.
    pub fn crc(&self) -> u64 {
        self.crc.value()
    }

    fn flush_buffer(&mut self) {
        if self.error.is_none() {
            if let Err(e) = self.inner.write_all(&self.buf) {
                self.error = Some(e);
            }
        }
        self.buf.clear();
    }

    /// Write out what is buffered; the writer back, or the first error met.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush_buffer();
        match self.error.take() {
            Some(e) => Err(e),
            None => {
                self.inner.flush()?;
                Ok(self.inner)
            }
        }
    }
}

impl<W: io::Write> Sink for WriteSink<W> {
    fn put(&mut self, bytes: &[u8]) {
        self.crc.update(bytes);
        if self.buf.len() + bytes.len() > WRITE_BUFFER {
            self.flush_buffer();
        }
        if bytes.len() >= WRITE_BUFFER {
            self.buf.extend_from_slice(bytes);
            self.flush_buffer();
        } else {
            self.buf.extend_from_slice(bytes);
        }
    }
}

pub fn write_len(out: &mut impl Sink, n: u64) {
    if n < 1 << 6 {
        out.put_byte(n as u8);
    } else if n < 1 << 14 {
        out.put(&(0x4000 | n as u16).to_be_bytes());
    } else if let Ok(n) = u32::try_from(n) {
        out.put_byte(LEN_32BIT);
        out.put(&n.to_be_bytes());
    } else {
        out.put_byte(LEN_64BIT);
        out.put(&n.to_be_bytes());
    }
}

/// A string as Redis saves one: as an 8/16/32-bit integer when it is the canonical
/// form of one (at most 11 bytes), LZF-compressed when `compress` and that saves
/// enough, else plain.
pub fn write_string(out: &mut impl Sink, bytes: &[u8], compress: bool) {
    if bytes.len() <= 11 && parse_i64(bytes).is_some_and(|n| write_small_int(out, n)) {
        return;
    }
    if compress && bytes.len() >= LZF_MIN_LEN && write_lzf(out, bytes) {
        return;
    }
    write_len(out, bytes.len() as u64);
    out.put(bytes);
}

/// Write `bytes` LZF-compressed if that saves enough; false if it does not.
fn write_lzf(out: &mut impl Sink, bytes: &[u8]) -> bool {
    let mut packed = Vec::new();
    if !lzf::compress(bytes, &mut packed) {
        return false;
    }
    if packed.len() > bytes.len() - LZF_MIN_SAVING {
        return false;
    }
    out.put_byte(0xC0 | ENC_LZF);
    write_len(out, packed.len() as u64);
    write_len(out, bytes.len() as u64);
    out.put(&packed);
    true
}

/// An integer-valued string: integer-encoded when it fits 32 bits, else its digits.
pub fn write_int(out: &mut impl Sink, n: i64) {
    if !write_small_int(out, n) {
        let mut digits = itoa::Buffer::new();
        let text = digits.format(n).as_bytes();
        write_len(out, text.len() as u64);
        out.put(text);
    }
}

/// Write `n` in the narrowest integer string encoding, if one holds it.
fn write_small_int(out: &mut impl Sink, n: i64) -> bool {
    if let Ok(n) = i8::try_from(n) {
        out.put(&[0xC0 | ENC_INT8, n as u8]);
    } else if let Ok(n) = i16::try_from(n) {
        out.put_byte(0xC0 | ENC_INT16);
        out.put(&n.to_le_bytes());
    } else if let Ok(n) = i32::try_from(n) {
        out.put_byte(0xC0 | ENC_INT32);
        out.put(&n.to_le_bytes());
    } else {
        return false;
    }
    true
}

pub fn write_binary_double(out: &mut impl Sink, d: f64) {
    out.put(&d.to_le_bytes());
}

pub fn write_millis(out: &mut impl Sink, ms: u64) {
    out.put(&ms.to_le_bytes());
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
            assert_eq!(Bytes::new(bytes).length(), Ok(n));
        }
        assert!(Bytes::new(b"\x82").length().is_err());
        assert!(Bytes::new(b"\xc0\x01").length().is_err());
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
        assert_eq!(Bytes::new(&packed).string().unwrap(), &long[..]);
        assert_eq!(written(|o| write_string(o, &long, false)).len(), 102);
        for encoded in [&b"\xc0\xfb"[..], b"\xc1\x2c\x01", b"\xc2\x70\x11\x01\x00"] {
            let text = Bytes::new(encoded).string().unwrap().into_owned();
            assert_eq!(written(|o| write_string(o, &text, true)), encoded);
        }
    }

    #[test]
    fn lzf_lies_are_refused_before_allocating() {
        // Claims 4 GB from three bytes of input.
        assert!(Bytes::new(b"\xc3\x03\x80\xff\xff\xff\xff\x00ab")
            .string()
            .is_err());
        // A back-reference before the start.
        assert!(Bytes::new(b"\xc3\x02\x05\x20\x05").string().is_err());
        // The right bytes but a different declared length.
        assert!(Bytes::new(b"\xc3\x04\x04\x02abc").string().is_err());
        assert_eq!(
            Bytes::new(b"\xc3\x04\x03\x02abc").string().unwrap(),
            &b"abc"[..]
        );
    }

    #[test]
    fn counts_are_bounded_by_the_bytes_left() {
        assert!(Bytes::new(b"\x80\xff\xff\xff\xff").count().is_err());
        assert_eq!(Bytes::new(b"\x02ab").count(), Ok(2));
    }

    #[test]
    fn streams_read_and_write_what_buffers_do() {
        let mut encoded = Vec::new();
        write_string(&mut encoded, &[b'q'; 300], true);
        write_string(&mut encoded, b"plain", true);
        write_millis(&mut encoded, 1_700_000_000_123);
        let mut sink = WriteSink::new(Vec::new());
        sink.put(&encoded);
        let crc = sink.crc();
        assert_eq!(sink.finish().unwrap(), encoded);
        assert_eq!(crc, Crc64::of(&encoded));
        let mut stream = ReadSource::new(&encoded[..]);
        assert_eq!(stream.string().unwrap(), &[b'q'; 300][..]);
        assert_eq!(stream.string().unwrap(), &b"plain"[..]);
        assert_eq!(stream.millis().unwrap(), 1_700_000_000_123);
        assert_eq!(stream.crc(), crc);
        assert!(stream.byte().is_err());
    }

    #[test]
    fn a_stream_does_not_believe_a_huge_length() {
        // 1 TB declared, 3 bytes present: fails at the end of the input, having
        // reserved one chunk at most.
        let mut stream = ReadSource::new(&b"\x81\x00\x00\x01\x00\x00\x00\x00\x00abc"[..]);
        assert!(stream.string().is_err());
        assert!(
            ReadSource::new(&b"\x81\x00\x00\x01\x00\x00\x00\x00\x00"[..])
                .count()
                .is_ok()
        );
    }
}
