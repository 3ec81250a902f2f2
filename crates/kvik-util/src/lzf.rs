//! LZF compression (of RDB strings, and of the interior nodes of lists under
//! `list-compress-depth`), written here instead of taken from the `lzf` crate (which
//! still decompresses, see [`decompress`]). The crate allocates and zeroes a 512 KiB hash
//! table on every call: for the many short strings of a snapshot, the page faults
//! of that table cost far more than compressing (a BGSAVE of 200,000 keys with
//! 32-byte values took 16 s). Here the table lives with the thread and its slots
//! carry the generation of the call that wrote them, so a slot left by an earlier
//! call reads as empty without any clearing: a call costs what its input costs.
//!
//! The output is byte for byte the crate's (a property test holds them equal), which
//! is liblzf's format, the one Redis reads and writes.

use std::cell::RefCell;

const HASH_BITS: u32 = 16;
const SLOTS: usize = 1 << HASH_BITS;
/// How far back a match may start.
const MAX_OFFSET: usize = 1 << 13;
/// The longest match one back-reference encodes.
const MAX_MATCH: usize = (1 << 8) + (1 << 3);
/// The longest run of literal bytes one header covers.
const MAX_LITERALS: usize = 1 << 5;

/// Where each 3-byte hash was last seen, stamped with the call that saw it.
struct Table {
    generation: u32,
    slots: Vec<(u32, u32)>,
}

impl Table {
    /// A new call: every slot written before reads as empty from now on.
    fn begin(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.slots.fill((0, 0));
            self.generation = 1;
        }
    }

    /// Record `pos` in `slot`; the position it held in this call (0: none).
    fn swap(&mut self, slot: usize, pos: usize) -> usize {
        let (generation, previous) = self.slots[slot];
        self.slots[slot] = (self.generation, pos as u32);
        if generation == self.generation {
            previous as usize
        } else {
            0
        }
    }

    fn set(&mut self, slot: usize, pos: usize) {
        self.slots[slot] = (self.generation, pos as u32);
    }
}

thread_local! {
    static TABLE: RefCell<Table> = RefCell::new(Table {
        generation: 0,
        slots: vec![(0, 0); SLOTS],
    });
}

fn first(data: &[u8], pos: usize) -> u32 {
    (u32::from(data[pos]) << 8) | u32::from(data[pos + 1])
}

fn next(hash: u32, data: &[u8], pos: usize) -> u32 {
    (hash << 8) | u32::from(data[pos + 2])
}

fn slot_of(hash: u32) -> usize {
    let h = u64::from(hash);
    ((h >> 8).wrapping_sub(h * 5) & (SLOTS as u64 - 1)) as usize
}

/// Compress `data` into `out` (replacing its contents); false when the result would
/// not be shorter than `data` (nothing worth storing compressed).
pub fn compress(data: &[u8], out: &mut Vec<u8>) -> bool {
    if data.len() < 2 {
        return false;
    }
    TABLE.with(|table| {
        let mut table = table.borrow_mut();
        table.begin();
        compress_with(&mut table, data, out)
    })
}

/// The matcher: literal runs, each led by a length byte written once the run ends,
/// and back-references of 2 or 3 bytes.
fn compress_with(table: &mut Table, data: &[u8], out: &mut Vec<u8>) -> bool {
    let n = data.len();
    out.clear();
    out.resize(n, 0);
    // A run's length byte goes first: start one.
    let mut len_out = 1usize;
    let mut literals = 0usize;
    let mut pos = 0usize;
    let mut hash = first(data, 0);
    while pos < n - 2 {
        hash = next(hash, data, pos);
        let reference = table.swap(slot_of(hash), pos);
        let offset = pos.wrapping_sub(reference).wrapping_sub(1);
        let matches = offset < MAX_OFFSET
            && pos + 4 < n
            && reference > 0
            && reference < n - 2
            && data[reference..reference + 3] == data[pos..pos + 3];
        if matches {
            // End the literal run (or take back its header if it is empty).
            out[len_out - literals - 1] = (literals as u8).wrapping_sub(1);
            if literals == 0 {
                len_out -= 1;
            }
            if len_out + 4 >= n {
                return false;
            }
            let longest = (n - pos - 2).min(MAX_MATCH);
            let mut len = 3;
            while len < longest && data[reference + len] == data[pos + len] {
                len += 1;
            }
            // Stored as the bytes matched minus 2.
            let len = len - 2;
            pos += 1;
            let high = (offset >> 8) as u8;
            if len < 7 {
                out[len_out] = high.wrapping_add((len << 5) as u8);
                len_out += 1;
            } else {
                out[len_out] = high.wrapping_add(7 << 5);
                out[len_out + 1] = (len as u8).wrapping_sub(7);
                len_out += 2;
            }
            out[len_out] = offset as u8;
            // Past the offset byte, and a new run's header.
            len_out += 2;
            literals = 0;
            pos += len - 1;
            if pos >= n {
                break;
            }
            hash = first(data, pos);
            hash = next(hash, data, pos);
            table.set(slot_of(hash), pos);
            pos += 1;
            hash = next(hash, data, pos);
            table.set(slot_of(hash), pos);
            pos += 1;
        } else {
            if len_out >= n {
                return false;
            }
            push_literal(out, &mut len_out, &mut literals, data[pos]);
            pos += 1;
        }
    }
    if len_out + 3 > n {
        return false;
    }
    while pos < n {
        push_literal(out, &mut len_out, &mut literals, data[pos]);
        pos += 1;
    }
    out[len_out - literals - 1] = (literals as u8).wrapping_sub(1);
    if literals == 0 {
        len_out -= 1;
    }
    out.truncate(len_out);
    true
}

/// One more literal byte; a full run gets its header and a new run starts.
fn push_literal(out: &mut [u8], len_out: &mut usize, literals: &mut usize, byte: u8) {
    *literals += 1;
    out[*len_out] = byte;
    *len_out += 1;
    if *literals == MAX_LITERALS {
        out[*len_out - *literals - 1] = (*literals as u8).wrapping_sub(1);
        *literals = 0;
        *len_out += 1;
    }
}

/// The `len` bytes that `packed` (the output of [`compress`]) holds; `None` when it
/// is not valid LZF or does not expand to exactly `len` bytes.
pub fn decompress(packed: &[u8], len: usize) -> Option<Vec<u8>> {
    lzf::decompress(packed, len)
        .ok()
        .filter(|bytes| bytes.len() == len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ours(data: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        compress(data, &mut out).then_some(out)
    }

    /// Inputs with repeats (what compresses), from a small alphabet.
    fn repetitive() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec((prop::collection::vec(0u8..4, 1..12), 1usize..40), 0..30).prop_map(
            |parts| {
                parts
                    .into_iter()
                    .flat_map(|(piece, times)| piece.repeat(times))
                    .collect()
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        #[test]
        fn output_is_the_crates(data in prop::collection::vec(any::<u8>(), 0..600)) {
            prop_assert_eq!(ours(&data), lzf::compress(&data).ok());
        }

        #[test]
        fn output_is_the_crates_on_repeats(data in repetitive()) {
            prop_assert_eq!(ours(&data), lzf::compress(&data).ok());
        }

        #[test]
        fn it_round_trips(data in repetitive()) {
            if let Some(packed) = ours(&data) {
                prop_assert_eq!(lzf::decompress(&packed, data.len()).unwrap(), data);
            }
        }
    }

    #[test]
    fn a_table_left_by_a_longer_input_does_not_leak_into_the_next() {
        let long: Vec<u8> = b"abcabcabcabcabcabcabcabcabcabc".repeat(20);
        let short = b"abcabcabcabcabcabcabcabcxyz".to_vec();
        assert_eq!(ours(&long), lzf::compress(&long).ok());
        assert_eq!(ours(&short), lzf::compress(&short).ok());
        assert_eq!(ours(b"a"), None);
        assert_eq!(ours(b""), None);
    }
}
