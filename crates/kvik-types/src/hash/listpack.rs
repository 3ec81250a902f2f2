//! [`Listpack`]: the compact encoding of a small hash, its field/value pairs one after
//! the other in a single buffer, in insertion order.
//!
//! Each field and each value is its length as a varint followed by its bytes, so a
//! short string costs one byte of overhead (Redis's listpack spends two, plus a
//! six-byte header). Lookups walk the buffer, which is cheap because a hash stays in
//! this encoding only while it has few, short entries; the buffer grows by exactly
//! what is added, never by doubling, so a small hash wastes no slack.

use super::varint;

#[derive(Clone, Default)]
pub struct Listpack {
    bytes: Vec<u8>,
    /// Number of field/value pairs.
    pairs: u32,
}

/// Where a pair lies in the buffer.
struct Span {
    /// Start of the field's length.
    start: usize,
    /// Start of the value's length.
    value: usize,
    /// One past the value's last byte.
    end: usize,
}

impl Listpack {
    pub fn len(&self) -> usize {
        self.pairs as usize
    }

    /// Bytes of the encoded pairs.
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    pub fn heap_size(&self) -> usize {
        self.bytes.capacity()
    }

    pub fn iter(&self) -> Iter<'_> {
        Iter {
            rest: &self.bytes,
            left: self.len(),
        }
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.iter().find(|(f, _)| *f == field).map(|(_, v)| v)
    }

    /// Set `field` to `value`, in place if the field is there, else at the end.
    /// Returns whether the field is new.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        if let Some(span) = self.find(field) {
            let mut encoded = Vec::with_capacity(varint::len(value.len()) + value.len());
            push_entry(&mut encoded, value);
            self.bytes.splice(span.value..span.end, encoded);
            return false;
        }
        let added = varint::len(field.len()) + field.len() + varint::len(value.len()) + value.len();
        self.bytes.reserve_exact(added);
        push_entry(&mut self.bytes, field);
        push_entry(&mut self.bytes, value);
        self.pairs += 1;
        true
    }

    /// Remove `field`; returns whether it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        let Some(span) = self.find(field) else {
            return false;
        };
        self.bytes.drain(span.start..span.end);
        self.pairs -= 1;
        true
    }

    fn find(&self, field: &[u8]) -> Option<Span> {
        let mut at = 0;
        while at < self.bytes.len() {
            let (f, value) = entry_at(&self.bytes, at);
            let (_, end) = entry_at(&self.bytes, value);
            if &self.bytes[f.clone()] == field {
                return Some(Span {
                    start: at,
                    value,
                    end,
                });
            }
            at = end;
        }
        None
    }
}

/// Append one encoded string.
fn push_entry(out: &mut Vec<u8>, bytes: &[u8]) {
    varint::push(out, bytes.len());
    out.extend_from_slice(bytes);
}

/// The bytes of the string encoded at `at`, and where the next one starts.
fn entry_at(buf: &[u8], at: usize) -> (std::ops::Range<usize>, usize) {
    let (len, header) = varint::read(|i| buf[at + i]);
    let start = at + header;
    (start..start + len, start + len)
}

/// The pairs of a listpack, in order.
pub struct Iter<'a> {
    rest: &'a [u8],
    left: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let rest = self.rest;
        let (field, value_at) = entry_at(rest, 0);
        let (value, end) = entry_at(rest, value_at);
        self.rest = &rest[end..];
        self.left -= 1;
        Some((&rest[field], &rest[value]))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Iter<'_> {}
