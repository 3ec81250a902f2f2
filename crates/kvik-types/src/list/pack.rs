//! A pack: the elements of one list node, encoded back to back in one allocation (the
//! part Redis's listpack plays).
//!
//! Each entry is `header [payload] backlen`:
//! - the header's first byte (the tag) says what the entry holds: an integer from 0 to
//!   127 in the tag itself, one up to 3711 in the tag and one more byte, any other in
//!   the 1 to 8 bytes that follow, or a string whose length follows (or, up to 63
//!   bytes, sits in the tag);
//! - `backlen` is the size of header and payload, 7 bits a byte, written to be read from
//!   its last byte backwards. It lets a reader step from the end of an entry to its
//!   start, so a pack can be walked from either end, which pops from the tail and
//!   searches from the tail need.
//!
//! A string that is the canonical decimal form of an `i64` is always stored as that
//! integer (a short string of digits takes 2 to 5 bytes instead of up to 22), and
//! anything else always as a string, so two elements are equal exactly when their
//! [`Element`]s are: comparing never needs to format or parse.
//!
//! A pack may be held LZF-compressed (the interior nodes of a list under
//! `list-compress-depth`). Reads through `&self` then decompress into a copy kept
//! beside the compressed bytes until [`Pack::forget_reads`]; every change
//! decompresses the pack in place first, and it stays raw until compressed again.

use super::End;
use kvik_util::lzf;
use kvik_util::numbers::parse_i64;
use std::fmt;
use std::ops::Range;
use std::sync::OnceLock;

/// Packs smaller than this are never compressed, as in Redis.
const MIN_COMPRESS_BYTES: usize = 48;
/// A pack stays raw unless compressing saves at least this many bytes, as in Redis.
const MIN_COMPRESS_IMPROVE: usize = 8;

/// Integers 0..=127 are the tag itself.
const UINT7_MAX: u8 = 0x7F;
/// 0x80..=0xBF: a string of up to 63 bytes, its length in the tag's low 6 bits.
const STR6: u8 = 0x80;
const STR6_MAX: usize = 0x3F;
/// 0xC0..=0xDF: a string of up to 8191 bytes, its length in the tag's low 5 bits and
/// the next byte.
const STR13: u8 = 0xC0;
const STR13_MAX: usize = 0x1FFF;
/// A string whose length follows in 4 bytes, little-endian.
const STR32: u8 = 0xE0;
/// A string whose length follows in 8 bytes, little-endian.
const STR64: u8 = 0xE1;
/// 0xE2..=0xEF: the integers 128..=3711 in two bytes: the tag's offset from 0xE2 is
/// the high part of `n - 128`, the next byte the low 8 bits (small counters and ids
/// are common list elements).
const UINT12: u8 = 0xE2;
const UINT12_MIN: i64 = 128;
const UINT12_MAX: i64 = UINT12_MIN + 14 * 256 - 1;
/// 0xF0..=0xF4: a two's complement integer of 1, 2, 3, 4 or 8 bytes, little-endian.
const INT: u8 = 0xF0;
const INT_WIDTHS: [usize; 5] = [1, 2, 3, 4, 8];

/// One list element as stored: a byte string, or the integer whose canonical decimal
/// form the element is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Element<'a> {
    Bytes(&'a [u8]),
    Int(i64),
}

impl<'a> Element<'a> {
    /// The element `bytes` are stored as (and compared as).
    pub fn of(bytes: &'a [u8]) -> Self {
        match parse_i64(bytes) {
            Some(n) => Element::Int(n),
            None => Element::Bytes(bytes),
        }
    }

    /// The element's bytes; an integer is formatted into `scratch`.
    pub fn bytes<'b>(self, scratch: &'b mut itoa::Buffer) -> &'b [u8]
    where
        'a: 'b,
    {
        match self {
            Element::Bytes(b) => b,
            Element::Int(n) => scratch.format(n).as_bytes(),
        }
    }

    pub fn to_vec(self) -> Vec<u8> {
        self.bytes(&mut itoa::Buffer::new()).to_vec()
    }
}

impl fmt::Debug for Element<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Element::Bytes(b) => write!(f, "{:?}", String::from_utf8_lossy(b)),
            Element::Int(n) => write!(f, "{n}"),
        }
    }
}

/// An entry's header, built on the stack before it is written.
struct Header {
    bytes: [u8; 9],
    len: usize,
}

impl Header {
    /// The header of `element`, and the payload that follows it.
    fn of(element: Element<'_>) -> (Header, &[u8]) {
        let mut h = Header {
            bytes: [0; 9],
            len: 1,
        };
        match element {
            Element::Int(n @ 0..=0x7F) => h.bytes[0] = n as u8,
            Element::Int(n @ UINT12_MIN..=UINT12_MAX) => {
                let offset = n - UINT12_MIN;
                h.bytes[0] = UINT12 + (offset >> 8) as u8;
                h.bytes[1] = offset as u8;
                h.len = 2;
            }
            Element::Int(n) => {
                let (i, &width) = INT_WIDTHS
                    .iter()
                    .enumerate()
                    .find(|(_, &w)| fits_in_bytes(n, w))
                    .expect("every i64 fits in 8 bytes");
                h.bytes[0] = INT + i as u8;
                h.bytes[1..=width].copy_from_slice(&n.to_le_bytes()[..width]);
                h.len += width;
            }
            Element::Bytes(s) => {
                let len = s.len();
                if len <= STR6_MAX {
                    h.bytes[0] = STR6 | len as u8;
                } else if len <= STR13_MAX {
                    h.bytes[0] = STR13 | (len >> 8) as u8;
                    h.bytes[1] = len as u8;
                    h.len = 2;
                } else if let Ok(len) = u32::try_from(len) {
                    h.bytes[0] = STR32;
                    h.bytes[1..5].copy_from_slice(&len.to_le_bytes());
                    h.len = 5;
                } else {
                    h.bytes[0] = STR64;
                    h.bytes[1..9].copy_from_slice(&(len as u64).to_le_bytes());
                    h.len = 9;
                }
            }
        }
        let payload = match element {
            Element::Bytes(s) => s,
            Element::Int(_) => &[],
        };
        (h, payload)
    }
}

fn fits_in_bytes(n: i64, width: usize) -> bool {
    let bits = 8 * width as u32;
    bits >= 64 || (-(1i64 << (bits - 1))..(1i64 << (bits - 1))).contains(&n)
}

/// Bytes the backlen of an entry body of `body` bytes takes.
fn backlen_len(body: usize) -> usize {
    let significant_bits = usize::BITS - body.leading_zeros();
    (significant_bits.max(1) as usize).div_ceil(7)
}

/// Write the backlen of `body` into `dst` (exactly `backlen_len(body)` bytes): the last
/// byte holds the lowest 7 bits, and every byte but the first has its high bit set to
/// say that more bytes lie to its left.
fn write_backlen(dst: &mut [u8], body: usize) {
    let mut rest = body;
    for (i, byte) in dst.iter_mut().enumerate().rev() {
        let more = if i > 0 { 0x80 } else { 0 };
        *byte = (rest & 0x7F) as u8 | more;
        rest >>= 7;
    }
}

/// The body size recorded by the backlen that ends at `end`, and the backlen's length.
fn read_backlen(bytes: &[u8], end: usize) -> (usize, usize) {
    let mut at = end - 1;
    let mut body = usize::from(bytes[at] & 0x7F);
    let mut shift = 7;
    while bytes[at] & 0x80 != 0 {
        at -= 1;
        body |= usize::from(bytes[at] & 0x7F) << shift;
        shift += 7;
    }
    (body, end - at)
}

/// Bytes an entry holding `element` takes.
pub fn entry_len(element: Element<'_>) -> usize {
    let (header, payload) = Header::of(element);
    let body = header.len + payload.len();
    body + backlen_len(body)
}

/// Write the entry of `element` into `dst`, which is exactly `entry_len` bytes.
fn write_entry(dst: &mut [u8], element: Element<'_>) {
    let (header, payload) = Header::of(element);
    let body = header.len + payload.len();
    dst[..header.len].copy_from_slice(&header.bytes[..header.len]);
    dst[header.len..body].copy_from_slice(payload);
    write_backlen(&mut dst[body..], body);
}

fn read_uint(bytes: &[u8]) -> u64 {
    let mut le = [0u8; 8];
    le[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(le)
}

/// The entry that starts at `start`: its element and where the next entry starts.
fn decode(bytes: &[u8], start: usize) -> (Element<'_>, usize) {
    let tag = bytes[start];
    let string = |len: usize, header: usize| {
        let from = start + header;
        (Element::Bytes(&bytes[from..from + len]), header + len)
    };
    let (element, body) = match tag {
        0..=UINT7_MAX => (Element::Int(i64::from(tag)), 1),
        0x80..=0xBF => string(usize::from(tag) & STR6_MAX, 1),
        0xC0..=0xDF => string(
            (usize::from(tag & 0x1F) << 8) | usize::from(bytes[start + 1]),
            2,
        ),
        STR32 => string(read_uint(&bytes[start + 1..start + 5]) as usize, 5),
        STR64 => string(read_uint(&bytes[start + 1..start + 9]) as usize, 9),
        UINT12..=0xEF => {
            let offset = (i64::from(tag - UINT12) << 8) | i64::from(bytes[start + 1]);
            (Element::Int(UINT12_MIN + offset), 2)
        }
        INT..=0xF4 => {
            let width = INT_WIDTHS[usize::from(tag - INT)];
            let raw = read_uint(&bytes[start + 1..start + 1 + width]);
            let unused = 64 - 8 * width as u32;
            let n = ((raw << unused) as i64) >> unused;
            (Element::Int(n), 1 + width)
        }
        _ => unreachable!("list entry with unknown tag {tag:#x}"),
    };
    (element, start + body + backlen_len(body))
}

/// One entry found in a pack: where it lies and what it holds.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    pub span: (usize, usize),
    pub element: Element<'a>,
}

impl Entry<'_> {
    pub fn range(&self) -> Range<usize> {
        self.span.0..self.span.1
    }
}

/// A cursor over the entries of a pack between two byte offsets, from either end.
#[derive(Debug, Clone)]
pub struct Entries<'a> {
    bytes: &'a [u8],
    front: usize,
    back: usize,
}

impl<'a> Entries<'a> {
    /// No entries at all.
    pub fn none() -> Self {
        Entries {
            bytes: &[],
            front: 0,
            back: 0,
        }
    }

    /// Only the entries from the one starting at `start` on.
    pub fn starting_at(mut self, start: usize) -> Self {
        self.front = start;
        self
    }

    /// Only the entries up to the one ending at `end`.
    pub fn ending_at(mut self, end: usize) -> Self {
        self.back = end;
        self
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = Entry<'a>;

    fn next(&mut self) -> Option<Entry<'a>> {
        if self.front >= self.back {
            return None;
        }
        let start = self.front;
        let (element, end) = decode(self.bytes, start);
        self.front = end;
        Some(Entry {
            span: (start, end),
            element,
        })
    }
}

impl DoubleEndedIterator for Entries<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.front >= self.back {
            return None;
        }
        let end = self.back;
        let (body, backlen) = read_backlen(self.bytes, end);
        let start = end - backlen - body;
        self.back = start;
        Some(Entry {
            span: (start, end),
            element: decode(self.bytes, start).0,
        })
    }
}

/// The entries of one node.
#[derive(Debug, Clone, Default)]
pub struct Pack {
    /// The entries; empty while the pack is compressed.
    bytes: Vec<u8>,
    count: u32,
    lzf: Option<Box<Compressed>>,
}

/// A pack's entries, LZF-compressed.
#[derive(Debug, Clone)]
struct Compressed {
    packed: Box<[u8]>,
    raw_len: usize,
    /// The entries decompressed for a read through `&self`, until `forget_reads`.
    read_copy: OnceLock<Box<[u8]>>,
}

impl Compressed {
    fn unpack(&self) -> Vec<u8> {
        lzf::decompress(&self.packed, self.raw_len).expect("a pack compressed here decompresses")
    }
}

impl Pack {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes of entries (as they are when raw).
    pub fn byte_len(&self) -> usize {
        self.lzf.as_ref().map_or(self.bytes.len(), |z| z.raw_len)
    }

    pub fn heap_size(&self) -> usize {
        self.bytes.capacity()
            + self.lzf.as_ref().map_or(0, |z| {
                std::mem::size_of::<Compressed>()
                    + z.packed.len()
                    + z.read_copy.get().map_or(0, |copy| copy.len())
            })
    }

    pub fn is_compressed(&self) -> bool {
        self.lzf.is_some()
    }

    /// The entries' bytes, decompressed into the read copy when the pack is compressed.
    fn raw(&self) -> &[u8] {
        match &self.lzf {
            None => &self.bytes,
            Some(z) => z.read_copy.get_or_init(|| z.unpack().into_boxed_slice()),
        }
    }

    /// Hand the entries, raw, to `visit` without keeping a decompressed copy.
    pub fn with_entries<R>(&self, visit: impl FnOnce(Entries<'_>) -> R) -> R {
        match self.lzf.as_ref().filter(|z| z.read_copy.get().is_none()) {
            Some(z) => {
                let bytes = z.unpack();
                visit(Entries {
                    bytes: &bytes,
                    front: 0,
                    back: bytes.len(),
                })
            }
            None => visit(self.entries()),
        }
    }

    pub fn entries(&self) -> Entries<'_> {
        let bytes = self.raw();
        Entries {
            bytes,
            front: 0,
            back: bytes.len(),
        }
    }

    /// Hold the entries compressed, unless the pack is small or compressing saves
    /// too little (as Redis decides).
    pub fn compress(&mut self) {
        if self.lzf.is_some() || self.bytes.len() < MIN_COMPRESS_BYTES {
            return;
        }
        let mut packed = Vec::new();
        if !lzf::compress(&self.bytes, &mut packed)
            || packed.len() + MIN_COMPRESS_IMPROVE >= self.bytes.len()
        {
            return;
        }
        self.lzf = Some(Box::new(Compressed {
            packed: packed.into_boxed_slice(),
            raw_len: self.bytes.len(),
            read_copy: OnceLock::new(),
        }));
        self.bytes = Vec::new();
    }

    /// Hold the entries raw (before a change, or near a list's end).
    pub fn decompress(&mut self) {
        if let Some(mut z) = self.lzf.take() {
            self.bytes = match z.read_copy.take() {
                Some(copy) => copy.into_vec(),
                None => z.unpack(),
            };
        }
    }

    /// Whether a read through `&self` left a decompressed copy.
    #[cfg(test)]
    pub fn has_read_copy(&self) -> bool {
        self.lzf
            .as_ref()
            .is_some_and(|z| z.read_copy.get().is_some())
    }

    /// Drop the copy a read through `&self` decompressed (the pack stays compressed).
    pub fn forget_reads(&mut self) {
        if let Some(z) = &mut self.lzf {
            z.read_copy.take();
        }
    }

    /// Where entry `n` starts (`n == len()`: the end of the pack), found by walking
    /// from the nearer end.
    pub fn offset_of(&self, n: usize) -> usize {
        let count = self.len();
        if n >= count {
            return self.byte_len();
        }
        let entry = if n < count / 2 {
            self.entries().nth(n)
        } else {
            self.entries().nth_back(count - 1 - n)
        };
        entry.expect("n < count").span.0
    }

    /// The entry starting at `start`.
    pub fn entry_at(&self, start: usize) -> Entry<'_> {
        self.entries()
            .starting_at(start)
            .next()
            .expect("an entry starts there")
    }

    pub fn push(&mut self, end: End, element: Element<'_>) {
        let at = match end {
            End::Head => 0,
            End::Tail => self.byte_len(),
        };
        self.insert_at(at, element);
    }

    /// Insert `element` as a new entry starting at byte `at` (an entry boundary).
    pub fn insert_at(&mut self, at: usize, element: Element<'_>) {
        self.decompress();
        let room = self.resize_span(at..at, entry_len(element));
        write_entry(room, element);
        self.count += 1;
    }

    /// Replace the entry starting at `start` with one holding `element`.
    pub fn replace_at(&mut self, start: usize, element: Element<'_>) {
        self.decompress();
        let old = self.entry_at(start).range();
        let room = self.resize_span(old, entry_len(element));
        write_entry(room, element);
    }

    /// Remove `n` entries (at most all) from `end`.
    pub fn remove_from(&mut self, end: End, n: usize) {
        self.decompress();
        let n = n.min(self.len());
        let span = match end {
            End::Head => 0..self.offset_of(n),
            End::Tail => self.offset_of(self.len() - n)..self.bytes.len(),
        };
        self.resize_span(span, 0);
        self.count -= n as u32;
    }

    /// Remove up to `max` entries equal to `needle`, the first ones met walking from
    /// `from`. Returns how many went.
    pub fn remove_matching(&mut self, needle: Element<'_>, max: usize, from: End) -> usize {
        let matching = |e: &Entry| e.element == needle;
        let mut doomed: Vec<Range<usize>> = match from {
            End::Head => self
                .entries()
                .filter(matching)
                .take(max)
                .map(|e| e.range())
                .collect(),
            End::Tail => self
                .entries()
                .rev()
                .filter(matching)
                .take(max)
                .map(|e| e.range())
                .collect(),
        };
        if from == End::Tail {
            doomed.reverse();
        }
        if !doomed.is_empty() {
            self.decompress();
        }
        self.cut_out(&doomed);
        doomed.len()
    }

    /// Remove the given entries (ascending, not overlapping) in one pass.
    fn cut_out(&mut self, doomed: &[Range<usize>]) {
        let Some(first) = doomed.first() else { return };
        let mut write = first.start;
        for (i, gone) in doomed.iter().enumerate() {
            let kept_end = doomed
                .get(i + 1)
                .map_or(self.bytes.len(), |next| next.start);
            self.bytes.copy_within(gone.end..kept_end, write);
            write += kept_end - gone.end;
        }
        self.bytes.truncate(write);
        self.count -= doomed.len() as u32;
        self.release_slack();
    }

    /// Split off the entries from the `n`th on into a new pack.
    pub fn split_off(&mut self, n: usize) -> Pack {
        self.decompress();
        let at = self.offset_of(n);
        let tail = Pack {
            bytes: self.bytes.split_off(at),
            count: self.count - n as u32,
            lzf: None,
        };
        self.count = n as u32;
        self.bytes.shrink_to_fit();
        tail
    }

    /// Move every entry of `other` after this pack's.
    pub fn append(&mut self, mut other: Pack) {
        self.decompress();
        other.decompress();
        self.bytes.reserve_exact(other.bytes.len());
        self.bytes.extend_from_slice(&other.bytes);
        self.count += other.count;
    }

    /// Make the bytes in `span` `new_len` long, moving what follows, and return them to
    /// be written. Grows to the exact size needed, as a listpack does: a node's bytes
    /// are most of a list's memory, and the allocator's size classes already leave
    /// room for the next few entries without moving.
    fn resize_span(&mut self, span: Range<usize>, new_len: usize) -> &mut [u8] {
        let old_total = self.bytes.len();
        let start = span.start;
        if new_len > span.len() {
            let grow = new_len - span.len();
            self.bytes.reserve_exact(grow);
            self.bytes.resize(old_total + grow, 0);
            self.bytes.copy_within(span.end..old_total, start + new_len);
        } else if new_len < span.len() {
            self.bytes.copy_within(span.end..old_total, start + new_len);
            self.bytes.truncate(old_total - (span.len() - new_len));
            self.release_slack();
        }
        &mut self.bytes[start..start + new_len]
    }

    /// Give memory back once a good part of the buffer is unused.
    fn release_slack(&mut self) {
        let unused = self.bytes.capacity() - self.bytes.len();
        if unused > 64 + self.bytes.len() / 4 {
            self.bytes.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pack_of(items: &[&[u8]]) -> Pack {
        let mut p = Pack::default();
        for item in items {
            p.push(End::Tail, Element::of(item));
        }
        p
    }

    fn contents(p: &Pack) -> Vec<Vec<u8>> {
        p.entries().map(|e| e.element.to_vec()).collect()
    }

    #[test]
    fn elements_round_trip_both_ways() {
        let long = vec![b'x'; 70_000];
        let mid = vec![b'y'; 300];
        let items: Vec<&[u8]> = vec![
            b"",
            b"0",
            b"127",
            b"128",
            b"383",
            b"3711",
            b"3712",
            b"-1",
            b"-128",
            b"-129",
            b"32767",
            b"32768",
            b"-8388608",
            b"8388608",
            b"2147483648",
            b"9223372036854775807",
            b"-9223372036854775808",
            b"9223372036854775808",
            b"01",
            b"+1",
            b"-0",
            b" 1",
            b"abc",
            &mid,
            &long,
        ];
        let p = pack_of(&items);
        assert_eq!(p.len(), items.len());
        let forward = contents(&p);
        assert_eq!(
            forward,
            items.iter().map(|i| i.to_vec()).collect::<Vec<_>>()
        );
        let mut backward: Vec<Vec<u8>> = p.entries().rev().map(|e| e.element.to_vec()).collect();
        backward.reverse();
        assert_eq!(backward, forward);
    }

    #[test]
    fn canonical_integers_are_stored_as_integers() {
        assert_eq!(Element::of(b"12"), Element::Int(12));
        assert_eq!(Element::of(b"012"), Element::Bytes(b"012"));
        assert_eq!(entry_len(Element::of(b"5")), 2);
        assert_eq!(entry_len(Element::of(b"1000")), 3);
        assert_eq!(entry_len(Element::of(b"3711")), 3);
        assert_eq!(entry_len(Element::of(b"3712")), 4);
        assert_eq!(entry_len(Element::of(b"abc")), 5);
    }

    #[test]
    fn backlen_sizes() {
        for body in [0, 1, 127, 128, 16_383, 16_384, 1 << 21, usize::MAX >> 1] {
            let mut buf = vec![0u8; backlen_len(body)];
            write_backlen(&mut buf, body);
            assert_eq!(read_backlen(&buf, buf.len()), (body, buf.len()), "{body}");
        }
    }

    #[test]
    fn edits_in_the_middle() {
        let mut p = pack_of(&[b"a", b"b", b"c", b"b", b"d"]);
        let at = p.offset_of(2);
        p.replace_at(at, Element::of(b"a much longer element than before"));
        p.insert_at(p.offset_of(1), Element::of(b"99"));
        assert_eq!(p.remove_matching(Element::of(b"b"), 1, End::Tail), 1);
        assert_eq!(
            contents(&p),
            [
                &b"a"[..],
                b"99",
                b"b",
                b"a much longer element than before",
                b"d"
            ]
        );
        let tail = p.split_off(3);
        assert_eq!(
            contents(&tail),
            [&b"a much longer element than before"[..], b"d"]
        );
        p.remove_from(End::Head, 2);
        p.append(tail);
        assert_eq!(p.len(), 3);
        assert_eq!(contents(&p)[0], b"b");
    }
}
