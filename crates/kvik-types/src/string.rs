//! The string type and its encodings, mirroring what Redis reports:
//!
//! - `int`: the value is the canonical decimal form of an i64 (as `string2ll` accepts),
//!   stored as the integer itself; INCR works on it without parsing.
//! - `embstr`: up to 44 bytes, never modified in place since it was set. Up to 22 bytes
//!   live inside the value itself; longer ones in one exact-size allocation.
//! - `raw`: anything longer, and any string APPEND, SETRANGE or a bitmap command
//!   touched, in a growable buffer so repeated appends are amortised O(1). The buffer
//!   keeps its length and capacity in its own allocation ([`ThinBuf`]), so the value
//!   points straight at the bytes: reading a raw string costs one pointer chase from
//!   the entry, not two.

use kvik_util::numbers::parse_i64;
use kvik_util::thin_buf::ThinBuf;

/// Longest string Redis stores as `embstr`.
pub const EMBSTR_MAX: usize = 44;
const INLINE_CAP: usize = 22;

#[derive(Debug, Clone)]
pub enum StrValue {
    Int(i64),
    Inline { len: u8, data: [u8; INLINE_CAP] },
    Emb(Box<[u8]>),
    Raw(ThinBuf),
}

impl PartialEq for StrValue {
    fn eq(&self, other: &Self) -> bool {
        let (mut a, mut b) = (itoa::Buffer::new(), itoa::Buffer::new());
        self.bytes(&mut a) == other.bytes(&mut b)
    }
}

impl StrValue {
    /// Offer the string's allocation, if it has one, to `relocator` (active
    /// defragmentation); returns whether it moved.
    pub fn relocate(&mut self, relocator: &mut dyn kvik_util::relocate::Relocator) -> bool {
        match self {
            StrValue::Emb(bytes) => kvik_util::relocate::relocate_bytes(bytes, relocator),
            StrValue::Raw(buf) => buf.relocate(relocator),
            StrValue::Int(_) | StrValue::Inline { .. } => false,
        }
    }

    /// The value SET stores: integer-encoded when it can be, else by length.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        match canonical_i64(bytes) {
            Some(n) => StrValue::Int(n),
            None => Self::from_bytes_unencoded(bytes),
        }
    }

    /// A string stored as given, without trying the integer encoding (what Redis does
    /// for INCRBYFLOAT results and other strings it builds itself).
    pub fn from_bytes_unencoded(bytes: &[u8]) -> Self {
        if bytes.len() <= INLINE_CAP {
            let mut data = [0u8; INLINE_CAP];
            data[..bytes.len()].copy_from_slice(bytes);
            StrValue::Inline {
                len: bytes.len() as u8,
                data,
            }
        } else if bytes.len() <= EMBSTR_MAX {
            StrValue::Emb(bytes.into())
        } else {
            StrValue::Raw(ThinBuf::from_slice(bytes))
        }
    }

    /// A `raw` string of a buffer built by a command (APPEND, SETRANGE, BITOP ...).
    pub fn raw(bytes: &[u8]) -> Self {
        StrValue::Raw(ThinBuf::from_slice(bytes))
    }

    pub fn encoding_name(&self) -> &'static str {
        match self {
            StrValue::Int(_) => "int",
            StrValue::Inline { .. } | StrValue::Emb(_) => "embstr",
            StrValue::Raw(_) => "raw",
        }
    }

    /// The bytes of the value. Integers are formatted into `scratch`.
    pub fn bytes<'a>(&'a self, scratch: &'a mut itoa::Buffer) -> &'a [u8] {
        match self {
            StrValue::Int(n) => scratch.format(*n).as_bytes(),
            StrValue::Inline { len, data } => &data[..*len as usize],
            StrValue::Emb(b) => b,
            StrValue::Raw(v) => v,
        }
    }

    pub fn to_vec(&self) -> Vec<u8> {
        self.bytes(&mut itoa::Buffer::new()).to_vec()
    }

    pub fn len(&self) -> usize {
        match self {
            StrValue::Int(n) => itoa::Buffer::new().format(*n).len(),
            StrValue::Inline { len, .. } => *len as usize,
            StrValue::Emb(b) => b.len(),
            StrValue::Raw(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The integer this string holds, if it is one by Redis's rules.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            StrValue::Int(n) => Some(*n),
            other => {
                let bytes = other.bytes_no_int();
                if bytes.len() > 20 {
                    return None;
                }
                parse_i64(bytes)
            }
        }
    }

    fn bytes_no_int(&self) -> &[u8] {
        match self {
            StrValue::Int(_) => &[],
            StrValue::Inline { len, data } => &data[..*len as usize],
            StrValue::Emb(b) => b,
            StrValue::Raw(v) => v,
        }
    }

    /// A growable buffer for in-place modification; the value becomes `raw`, as in Redis.
    pub fn make_raw(&mut self) -> &mut ThinBuf {
        if !matches!(self, StrValue::Raw(_)) {
            *self = StrValue::raw(self.bytes(&mut itoa::Buffer::new()));
        }
        match self {
            StrValue::Raw(v) => v,
            _ => unreachable!("converted to raw above"),
        }
    }

    pub fn heap_size(&self) -> usize {
        match self {
            StrValue::Int(_) | StrValue::Inline { .. } => 0,
            StrValue::Emb(b) => b.len(),
            // The length and capacity live in the allocation, before the bytes.
            StrValue::Raw(v) => v.capacity() + 2 * std::mem::size_of::<usize>(),
        }
    }
}

/// The integer `bytes` spell, if they are exactly its decimal form: only then can the
/// `int` encoding give the same bytes back (`"01"` or `"+1"` must stay strings).
fn canonical_i64(bytes: &[u8]) -> Option<i64> {
    if bytes.len() > 20 {
        return None;
    }
    parse_i64(bytes).filter(|n| itoa::Buffer::new().format(*n).as_bytes() == bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_follow_redis() {
        assert_eq!(StrValue::from_bytes(b"12345").encoding_name(), "int");
        assert_eq!(
            StrValue::from_bytes(b"-9223372036854775808").encoding_name(),
            "int"
        );
        assert_eq!(StrValue::from_bytes(b"012").encoding_name(), "embstr");
        assert_eq!(StrValue::from_bytes(b"+1").encoding_name(), "embstr");
        assert_eq!(StrValue::from_bytes(b"-0").encoding_name(), "embstr");
        assert_eq!(StrValue::from_bytes(b"+1").to_vec(), b"+1");
        assert_eq!(StrValue::from_bytes(&[b'a'; 44]).encoding_name(), "embstr");
        assert_eq!(StrValue::from_bytes(&[b'a'; 45]).encoding_name(), "raw");
        let mut v = StrValue::from_bytes(b"ab");
        v.make_raw().extend_from_slice(b"c");
        assert_eq!(v.encoding_name(), "raw");
        assert_eq!(v.to_vec(), b"abc");
        assert_eq!(std::mem::size_of::<StrValue>(), 24);
    }
}
