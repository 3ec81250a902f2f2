//! HyperLogLog values, in Redis's exact string format, so that a value written by
//! either server (GET/SET, DUMP/RESTORE) counts the same in the other.
//!
//! The value is a plain string: a 16-byte header, then the registers.
//!
//! ```text
//! "HYLL" | encoding (0 dense, 1 sparse) | 3 unused bytes | cached cardinality
//! ```
//!
//! The cardinality is 8 bytes little-endian; the top bit of its last byte set means
//! the cache is stale. Each element is hashed with MurmurHash64A: the low 14 bits pick
//! one of 16384 registers, and the register keeps the longest run of zero bits (plus
//! one) seen in the rest. [`dense`] packs the registers six bits each; [`sparse`]
//! run-length codes them and is used until a register passes 32 or the string passes
//! `hll-sparse-max-bytes`. [`estimate`] turns the registers into a count.
//!
//! Functions here take a value already accepted by [`encoding`]; what the sparse
//! opcodes say is checked as they are read ([`Corrupt`]).

mod dense;
mod estimate;
mod murmur;
pub mod selftest;
mod sparse;

use estimate::{Histogram, Tally};
use kvik_util::thin_buf::ThinBuf;

/// Bits of the hash that pick a register.
const P: usize = 14;
/// Bits left for the run of zeros.
const Q: usize = 64 - P;
pub const REGISTERS: usize = 1 << P;
pub const HEADER_LEN: usize = 16;
/// The exact length of a dense value.
pub const DENSE_LEN: usize = HEADER_LEN + dense::BYTES;

const MAGIC: &[u8; 4] = b"HYLL";
const ENCODING_AT: usize = 4;
const CARDINALITY_AT: usize = 8;
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
/// Set in the last byte of the cached cardinality when the cache is stale.
const STALE_BIT: u8 = 0x80;
const HASH_SEED: u32 = 0xadc83b19;

/// One byte per register: the working form of merges and unions.
pub type Registers = [u8; REGISTERS];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Dense,
    Sparse,
}

impl Encoding {
    /// The name PFDEBUG ENCODING reports.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Dense => "dense",
            Encoding::Sparse => "sparse",
        }
    }
}

/// The sparse opcodes do not describe exactly 16384 registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

/// The encoding of `bytes` if they pass for a HyperLogLog as Redis checks it: the
/// magic, a known encoding, and the exact length for dense.
pub fn encoding(bytes: &[u8]) -> Option<Encoding> {
    if bytes.len() < HEADER_LEN || &bytes[..MAGIC.len()] != MAGIC {
        return None;
    }
    match bytes[ENCODING_AT] {
        DENSE if bytes.len() == DENSE_LEN => Some(Encoding::Dense),
        SPARSE => Some(Encoding::Sparse),
        _ => None,
    }
}

/// A new HyperLogLog with every register at zero: sparse, cached cardinality 0.
pub fn new() -> ThinBuf {
    let mut hll = ThinBuf::zeroed(HEADER_LEN);
    hll[..MAGIC.len()].copy_from_slice(MAGIC);
    hll[ENCODING_AT] = SPARSE;
    hll.extend_from_slice(&sparse::empty_body());
    hll
}

fn is_dense(hll: &[u8]) -> bool {
    hll[ENCODING_AT] == DENSE
}

/// The register an element goes to and the value it offers: the run of zero bits
/// above the register bits, plus one (at most Q + 1).
fn position(element: &[u8]) -> (usize, u8) {
    let hash = murmur::murmur64a(element, HASH_SEED);
    let index = (hash as usize) & (REGISTERS - 1);
    let rest = (hash >> P) | 1 << Q;
    (index, rest.trailing_zeros() as u8 + 1)
}

/// Add an element. Returns whether a register changed.
pub fn add(hll: &mut ThinBuf, element: &[u8], sparse_max_bytes: u64) -> Result<bool, Corrupt> {
    let (index, value) = position(element);
    raise(hll, index, value, sparse_max_bytes)
}

/// Raise register `index` to `value` if it is lower, converting a sparse value to
/// dense when the value does not fit it. Returns whether the register changed.
pub fn raise(
    hll: &mut ThinBuf,
    index: usize,
    value: u8,
    sparse_max_bytes: u64,
) -> Result<bool, Corrupt> {
    if !is_dense(hll) {
        match sparse::set(hll, index, value, sparse_max_bytes) {
            sparse::SetOutcome::Unchanged => return Ok(false),
            sparse::SetOutcome::Updated => {
                invalidate_cache(hll);
                return Ok(true);
            }
            sparse::SetOutcome::Corrupt => return Err(Corrupt),
            sparse::SetOutcome::NeedsDense => {
                to_dense(hll)?;
            }
        }
    }
    Ok(dense::raise(&mut hll[HEADER_LEN..], index, value))
}

/// Raise every register to the matching value of `max` (PFMERGE's write), register
/// by register while sparse, so the bytes come out as Redis's.
pub fn raise_all(hll: &mut ThinBuf, max: &Registers, sparse_max_bytes: u64) -> Result<(), Corrupt> {
    for (index, &value) in max.iter().enumerate() {
        if is_dense(hll) {
            dense::raise_all(&mut hll[HEADER_LEN..], max);
            break;
        }
        if value > 0 {
            raise(hll, index, value, sparse_max_bytes)?;
        }
    }
    Ok(())
}

/// Convert a sparse value to dense, keeping the header (cached cardinality and the
/// unused bytes included). Returns whether there was anything to convert.
pub fn to_dense(hll: &mut ThinBuf) -> Result<bool, Corrupt> {
    if is_dense(hll) {
        return Ok(false);
    }
    let mut dense = ThinBuf::zeroed(DENSE_LEN);
    dense[..HEADER_LEN].copy_from_slice(&hll[..HEADER_LEN]);
    dense[ENCODING_AT] = DENSE;
    let registers = &mut dense[HEADER_LEN..];
    sparse::for_each_value(&hll[HEADER_LEN..], |first, len, value| {
        for index in first..first + len {
            dense::set(registers, index, value);
        }
    })?;
    *hll = dense;
    Ok(true)
}

/// The cached cardinality, unless stale.
pub fn cached_cardinality(hll: &[u8]) -> Option<u64> {
    let bytes: [u8; 8] = hll[CARDINALITY_AT..HEADER_LEN].try_into().expect("8 bytes");
    (bytes[7] & STALE_BIT == 0).then(|| u64::from_le_bytes(bytes))
}

pub fn cache_cardinality(hll: &mut [u8], cardinality: u64) {
    hll[CARDINALITY_AT..HEADER_LEN].copy_from_slice(&cardinality.to_le_bytes());
}

pub fn invalidate_cache(hll: &mut [u8]) {
    hll[HEADER_LEN - 1] |= STALE_BIT;
}

/// The estimated cardinality, computed from the registers (the cache is not read).
pub fn cardinality(hll: &[u8]) -> Result<u64, Corrupt> {
    let body = &hll[HEADER_LEN..];
    if is_dense(hll) {
        return Ok(estimate::cardinality(&dense::histogram(body)));
    }
    let mut histogram: Histogram = [0; 64];
    let mut nonzero = 0;
    sparse::for_each_value(body, |_, len, value| {
        histogram[usize::from(value)] += len as u32;
        nonzero += len as u32;
    })?;
    histogram[0] = REGISTERS as u32 - nonzero;
    Ok(estimate::cardinality(&histogram))
}

/// The estimated cardinality of registers held one per byte (a union).
pub fn cardinality_of(registers: &Registers) -> u64 {
    let mut tally = Tally::new();
    for group in registers.chunks_exact(8) {
        tally.add(group.try_into().expect("8 registers"));
    }
    estimate::cardinality(&tally.histogram())
}

/// Raise each of `max` to the matching register of `hll`.
pub fn merge_into(hll: &[u8], max: &mut Registers) -> Result<(), Corrupt> {
    let body = &hll[HEADER_LEN..];
    if is_dense(hll) {
        dense::merge_into(body, max);
        return Ok(());
    }
    sparse::for_each_value(body, |first, len, value| {
        for m in &mut max[first..first + len] {
            *m = (*m).max(value);
        }
    })
}

/// Every register, one byte each (PFDEBUG GETREG).
pub fn registers(hll: &[u8]) -> Result<Box<Registers>, Corrupt> {
    if is_dense(hll) {
        return Ok(dense::unpack(&hll[HEADER_LEN..]));
    }
    let mut all = Box::new([0u8; REGISTERS]);
    merge_into(hll, &mut all)?;
    Ok(all)
}

/// The sparse opcodes as PFDEBUG DECODE prints them; `None` for a dense value.
pub fn decode(hll: &[u8]) -> Option<String> {
    (!is_dense(hll)).then(|| sparse::decode(&hll[HEADER_LEN..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_value_is_redis_empty_hll() {
        let hll = new();
        assert_eq!(hll.len(), 18);
        assert_eq!(&hll[..5], b"HYLL\x01");
        assert_eq!(encoding(&hll), Some(Encoding::Sparse));
        assert_eq!(cached_cardinality(&hll), Some(0));
        assert_eq!(cardinality(&hll), Ok(0));
    }

    #[test]
    fn validation_follows_redis() {
        assert_eq!(encoding(b"HYLL"), None);
        assert_eq!(encoding(b"HYLL\x02\0\0\0\0\0\0\0\0\0\0\0"), None);
        assert_eq!(encoding(b"HYLL\x00\0\0\0\0\0\0\0\0\0\0\0"), None);
        assert_eq!(encoding(b"HYLX\x01\0\0\0\0\0\0\0\0\0\0\0"), None);
        // A sparse header with no opcodes passes the check; reading it fails.
        let bare = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0";
        assert_eq!(encoding(bare), Some(Encoding::Sparse));
        assert_eq!(cardinality(bare), Err(Corrupt));
    }

    #[test]
    fn cache_flag_is_top_bit_of_last_byte() {
        let mut hll = new();
        invalidate_cache(&mut hll);
        assert_eq!(hll[15], 0x80);
        assert_eq!(cached_cardinality(&hll), None);
        cache_cardinality(&mut hll, 0x0102);
        assert_eq!(&hll[8..16], &[2, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(cached_cardinality(&hll), Some(0x0102));
    }

    #[test]
    fn sparse_and_dense_count_alike_through_promotion() {
        let mut sparse = new();
        let mut dense = new();
        to_dense(&mut dense).unwrap();
        for i in 0..5000u32 {
            let element = i.to_string();
            add(&mut sparse, element.as_bytes(), 3000).unwrap();
            add(&mut dense, element.as_bytes(), 3000).unwrap();
            if i % 500 == 0 {
                assert_eq!(cardinality(&sparse), cardinality(&dense), "after {i}");
            }
        }
        assert_eq!(encoding(&sparse), Some(Encoding::Dense));
        assert_eq!(registers(&sparse), registers(&dense));
    }

    #[test]
    fn merge_and_raise_all_rebuild_the_union() {
        let (mut a, mut b, mut both) = (new(), new(), new());
        for i in 0..300u32 {
            let element = i.to_le_bytes();
            add(if i % 2 == 0 { &mut a } else { &mut b }, &element, 3000).unwrap();
            add(&mut both, &element, 3000).unwrap();
        }
        let mut max = [0u8; REGISTERS];
        merge_into(&a, &mut max).unwrap();
        merge_into(&b, &mut max).unwrap();
        assert_eq!(cardinality_of(&max), cardinality(&both).unwrap());
        let mut union = new();
        raise_all(&mut union, &max, 3000).unwrap();
        assert_eq!(registers(&union).unwrap(), registers(&both).unwrap());
    }
}
