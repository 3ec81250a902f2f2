//! The small encoding of a sorted set (OBJECT ENCODING "listpack"): every entry in
//! one byte buffer, in order, sized exactly as Redis sizes its listpack.
//!
//! An entry is the member's length as a LEB128 varint, the member's bytes, then the
//! score: an integral score of at most 2^53 in magnitude as a varint (zigzag, then
//! shifted left by one), any other as the varint 1 and its 8 little-endian bytes. So
//! a short member with a small integral score costs two bytes of overhead, and one
//! with any other score ten. Every operation is a linear walk, which is what a set
//! of at most `zset-max-listpack-entries` (128) small members can afford, and what
//! Redis's listpack does too.

use std::ops::Range;

/// The varint that announces a score stored as 8 raw bytes.
const RAW_SCORE: u64 = 1;
/// Integral scores up to this magnitude are stored as varints (every integer up to
/// it is exactly a double).
const MAX_VARINT_SCORE: f64 = (1u64 << 53) as f64;

#[derive(Clone, Default)]
pub struct Listpack {
    buf: Vec<u8>,
    len: u32,
}

/// One entry, with where its bytes are in the buffer.
#[derive(Clone, Copy)]
struct Entry<'a> {
    member: &'a [u8],
    score: f64,
    at: usize,
    end: usize,
}

/// Walks the entries from a byte offset on.
struct Entries<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Iterator for Entries<'a> {
    type Item = Entry<'a>;

    fn next(&mut self) -> Option<Entry<'a>> {
        if self.at >= self.buf.len() {
            return None;
        }
        let start = self.at;
        let (member_len, member_at) = read_varint(self.buf, start);
        let score_at = member_at + member_len as usize;
        let (score, end) = read_score(self.buf, score_at);
        self.at = end;
        Some(Entry {
            member: &self.buf[member_at..score_at],
            score,
            at: start,
            end,
        })
    }
}

impl Listpack {
    /// A listpack of entries already in order.
    pub fn from_sorted<'m>(entries: impl IntoIterator<Item = (&'m [u8], f64)>) -> Listpack {
        let mut lp = Listpack::default();
        for (member, score) in entries {
            let end = lp.buf.len();
            lp.write_at(end, member, score);
        }
        lp
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn heap_size(&self) -> usize {
        self.buf.capacity()
    }

    fn entries(&self) -> Entries<'_> {
        Entries {
            buf: &self.buf,
            at: 0,
        }
    }

    /// Every entry in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        self.entries().map(|e| (e.member, e.score))
    }

    /// The rank and entry of `member`.
    fn find(&self, member: &[u8]) -> Option<(usize, Entry<'_>)> {
        self.entries().enumerate().find(|(_, e)| e.member == member)
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.find(member).map(|(_, e)| e.score)
    }

    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        self.find(member).map(|(rank, _)| rank)
    }

    /// The entry at `rank` (< len).
    pub fn get(&self, rank: usize) -> (&[u8], f64) {
        self.iter().nth(rank).expect("rank within the listpack")
    }

    /// Add a member that is not in the set yet, at its place in the order.
    pub fn insert(&mut self, member: &[u8], score: f64) {
        let at = self
            .entries()
            .find(|e| !super::sorts_before(e.member, e.score, member, score))
            .map_or(self.buf.len(), |e| e.at);
        self.write_at(at, member, score);
    }

    /// Remove `member`; returns its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let (_, e) = self.find(member)?;
        let (score, bytes) = (e.score, e.at..e.end);
        self.buf.drain(bytes);
        self.buf.shrink_to_fit();
        self.len -= 1;
        Some(score)
    }

    /// The first rank at or after `from` for which `pred` fails, walking on from
    /// `from` (so, as in Redis, a walk that starts inside a range stops at its end
    /// even when scores are not what a lexicographic range assumes).
    pub fn partition_point(&self, from: usize, mut pred: impl FnMut(&[u8], f64) -> bool) -> usize {
        from + self
            .iter()
            .skip(from)
            .take_while(|&(m, s)| pred(m, s))
            .count()
    }

    /// Call `f` with the entries whose ranks are in `ranks`, in order or in reverse.
    pub fn visit<'l>(
        &'l self,
        ranks: Range<usize>,
        reverse: bool,
        f: &mut impl FnMut(&'l [u8], f64),
    ) {
        let wanted = self.iter().skip(ranks.start).take(ranks.len());
        if reverse {
            let picked: Vec<(&[u8], f64)> = wanted.collect();
            picked.into_iter().rev().for_each(|(m, s)| f(m, s));
        } else {
            wanted.for_each(|(m, s)| f(m, s));
        }
    }

    /// Remove the entries whose ranks are in `ranks`, showing each to `f` first.
    pub fn remove_ranks(&mut self, ranks: Range<usize>, f: &mut impl FnMut(&[u8], f64)) {
        let mut bytes = self.buf.len()..self.buf.len();
        let mut removed = 0;
        for e in self.entries().skip(ranks.start).take(ranks.len()) {
            if removed == 0 {
                bytes.start = e.at;
            }
            bytes.end = e.end;
            removed += 1;
            f(e.member, e.score);
        }
        if removed > 0 {
            self.buf.drain(bytes);
            self.buf.shrink_to_fit();
            self.len -= removed;
        }
    }

    /// -0 is integral, so it is stored as the integer 0 and reads back as 0, as it
    /// does from Redis's listpack (a skiplist keeps -0).
    fn write_at(&mut self, at: usize, member: &[u8], score: f64) {
        let mut entry = Vec::with_capacity(member.len() + 2 * MAX_VARINT_BYTES + 8);
        write_varint(&mut entry, member.len() as u64);
        entry.extend_from_slice(member);
        write_score(&mut entry, score);
        self.buf.reserve_exact(entry.len());
        self.buf.splice(at..at, entry);
        self.len += 1;
    }
}

/// The longest varint: a u64 takes 10 bytes of 7 bits.
const MAX_VARINT_BYTES: usize = 10;

fn write_score(out: &mut Vec<u8>, score: f64) {
    if score.fract() == 0.0 && score.abs() <= MAX_VARINT_SCORE {
        let n = score as i64;
        let zigzag = ((n << 1) ^ (n >> 63)) as u64;
        write_varint(out, zigzag << 1);
    } else {
        write_varint(out, RAW_SCORE);
        out.extend_from_slice(&score.to_le_bytes());
    }
}

/// The score at `at`, and the offset just after it.
fn read_score(buf: &[u8], at: usize) -> (f64, usize) {
    let (word, after) = read_varint(buf, at);
    if word == RAW_SCORE {
        let bytes = buf[after..after + 8].try_into().expect("8 score bytes");
        return (f64::from_le_bytes(bytes), after + 8);
    }
    let zigzag = word >> 1;
    let n = (zigzag >> 1) as i64 ^ -((zigzag & 1) as i64);
    (n as f64, after)
}

fn write_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// The varint at `at`, and the offset just after it.
fn read_varint(buf: &[u8], mut at: usize) -> (u64, usize) {
    let (mut n, mut shift) = (0u64, 0);
    loop {
        let byte = buf[at];
        at += 1;
        n |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return (n, at);
        }
        shift += 7;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        for n in [0, 1, 127, 128, 300, 16_383, 16_384, 1 << 40, u64::MAX] {
            let mut buf = Vec::new();
            write_varint(&mut buf, n);
            assert!(buf.len() <= MAX_VARINT_BYTES);
            assert_eq!(read_varint(&buf, 0), (n, buf.len()));
        }
    }

    #[test]
    fn scores_round_trip_in_their_shortest_form() {
        let two53 = (1u64 << 53) as f64;
        for (score, len) in [
            (0.0, 1),
            (-1.0, 1),
            (31.0, 1),
            (32.0, 2),
            (-1e6, 4),
            (two53, 8),
            (-two53, 8),
            (two53 * 2.0, 9),
            (1.5, 9),
            (f64::INFINITY, 9),
            (f64::NEG_INFINITY, 9),
            (1e300, 9),
            (5e-324, 9),
        ] {
            let mut buf = Vec::new();
            write_score(&mut buf, score);
            assert_eq!(buf.len(), len, "{score}");
            assert_eq!(read_score(&buf, 0), (score, len), "{score}");
        }
    }

    #[test]
    fn keeps_order_and_finds_members() {
        let mut lp = Listpack::default();
        lp.insert(b"b", 2.0);
        lp.insert(b"a", 2.0);
        lp.insert(&[b'x'; 200], -1.0);
        lp.insert(b"c", 1.0);
        let order: Vec<(Vec<u8>, f64)> = lp.iter().map(|(m, s)| (m.to_vec(), s)).collect();
        assert_eq!(
            order,
            vec![
                (vec![b'x'; 200], -1.0),
                (b"c".to_vec(), 1.0),
                (b"a".to_vec(), 2.0),
                (b"b".to_vec(), 2.0)
            ]
        );
        assert_eq!(lp.rank(b"a"), Some(2));
        assert_eq!(lp.remove(b"c"), Some(1.0));
        assert_eq!(lp.score(b"c"), None);
        let mut gone = Vec::new();
        lp.remove_ranks(0..2, &mut |m, _| gone.push(m.to_vec()));
        assert_eq!(gone, vec![vec![b'x'; 200], b"a".to_vec()]);
        assert_eq!((lp.len(), lp.get(0)), (1, (&b"b"[..], 2.0)));
    }
}
