//! Single bits and bit ranges: SETBIT, GETBIT, BITCOUNT and BITPOS.
//!
//! BITCOUNT and BITPOS take their range in bytes, or in bits with the `BIT` unit;
//! both look at the key before parsing the range, so a missing key answers before a
//! malformed range could be noticed, as in Redis 7.0. Counting and searching go a
//! machine word at a time, with the two edge bytes masked to the range.

use super::{bit_at, bit_offset, clamp_range, writable_bits, Growth};
use crate::commands::strings::read_string;
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::notify::class;

const BAD_BIT: &str = "ERR bit is not an integer or out of range";

pub fn setbit(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let offset = bit_offset(ctx, args[2], None)?;
    let on = match args::int(args[3]) {
        Ok(0) => false,
        Ok(1) => true,
        _ => return Err(BAD_BIT.into()),
    };
    let (buf, growth) = writable_bits(ctx.keys, key, offset)?;
    let was_on = bit_at(buf, offset);
    let mask = 0x80 >> (offset & 7);
    let byte = &mut buf[(offset >> 3) as usize];
    if on {
        *byte |= mask;
    } else {
        *byte &= !mask;
    }
    if growth == Growth::Grown || (growth == Growth::Unchanged && was_on != on) {
        ctx.keys.modified(key);
    }
    if growth != Growth::Unchanged || was_on != on {
        ctx.keys.notify(class::BITMAP, "setbit", key);
    }
    ctx.out.int(i64::from(was_on));
    Ok(())
}

pub fn getbit(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let offset = bit_offset(ctx, args[2], None)?;
    let on = match read_string(ctx.keys, args[1])? {
        Some(value) => bit_at(value.bytes(&mut itoa::Buffer::new()), offset),
        None => false,
    };
    ctx.out.int(i64::from(on));
    Ok(())
}

/// Whether a range counts bytes or bits.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Byte,
    Bit,
}

fn unit(arg: &[u8]) -> Result<Unit, CmdError> {
    if args::is(arg, "bit") {
        Ok(Unit::Bit)
    } else if args::is(arg, "byte") {
        Ok(Unit::Byte)
    } else {
        Err(errors::SYNTAX.into())
    }
}

/// The first and last bit of a range resolved in `unit`s of a `len`-byte string.
fn bit_range(start: i64, end: i64, unit: Unit, len: usize) -> Option<(u64, u64)> {
    match unit {
        Unit::Bit => clamp_range(start, end, len as i64 * 8),
        Unit::Byte => clamp_range(start, end, len as i64).map(|(s, e)| (s * 8, e * 8 + 7)),
    }
}

pub fn bitcount(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let Some(value) = read_string(ctx.keys, args[1])? else {
        ctx.out.int(0);
        return Ok(());
    };
    let mut digits = itoa::Buffer::new();
    let bytes = value.bytes(&mut digits);
    let range = match args.len() {
        2 => bit_range(0, -1, Unit::Byte, bytes.len()),
        4 | 5 => {
            let (start, end) = (args::int(args[2])?, args::int(args[3])?);
            // Two negative indexes in the wrong order count nothing, whatever the unit.
            if start < 0 && end < 0 && start > end {
                None
            } else {
                let unit = args.get(4).map_or(Ok(Unit::Byte), |arg| unit(arg))?;
                bit_range(start, end, unit, bytes.len())
            }
        }
        _ => return Err(errors::SYNTAX.into()),
    };
    let count = range.map_or(0, |(first, last)| count_ones(bytes, first, last));
    ctx.out.int(count as i64);
    Ok(())
}

/// The set bits from bit `first` to bit `last`, both included and within `bytes`.
fn count_ones(bytes: &[u8], first: u64, last: u64) -> u64 {
    let (first_byte, last_byte) = ((first >> 3) as usize, (last >> 3) as usize);
    let whole = popcount(&bytes[first_byte..=last_byte]);
    let before = bytes[first_byte] & !(0xFF >> (first & 7));
    let after = bytes[last_byte] & (0xFF >> (last & 7)) >> 1;
    whole - u64::from(before.count_ones() + after.count_ones())
}

fn popcount(bytes: &[u8]) -> u64 {
    let words = bytes.chunks_exact(8);
    let tail: u64 = words
        .remainder()
        .iter()
        .map(|b| u64::from(b.count_ones()))
        .sum();
    words
        .map(|w| u64::from(u64::from_ne_bytes(w.try_into().expect("8 bytes")).count_ones()))
        .sum::<u64>()
        + tail
}

pub fn bitpos(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let wanted = match args::int(args[2])? {
        0 => false,
        1 => true,
        _ => return Err("ERR The bit argument must be 1 or 0.".into()),
    };
    // A missing key is an endless run of zeros.
    let Some(value) = read_string(ctx.keys, args[1])? else {
        ctx.out.int(if wanted { -1 } else { 0 });
        return Ok(());
    };
    let mut digits = itoa::Buffer::new();
    let bytes = value.bytes(&mut digits);
    let (range, end_given) = match args.len() {
        3 => (bit_range(0, -1, Unit::Byte, bytes.len()), false),
        4..=6 => {
            let start = args::int(args[3])?;
            let unit = args.get(5).map_or(Ok(Unit::Byte), |arg| unit(arg))?;
            let end = args.get(4).map(|arg| args::int(arg)).transpose()?;
            (
                bit_range(start, end.unwrap_or(-1), unit, bytes.len()),
                end.is_some(),
            )
        }
        _ => return Err(errors::SYNTAX.into()),
    };
    let position = match range {
        None => -1,
        Some((first, last)) => match find_bit(bytes, wanted, first, last) {
            Some(at) => at as i64,
            // Past a string searched to its end come the zeros of the padding; an
            // explicit end excludes them.
            None if !wanted && !end_given => last as i64 + 1,
            None => -1,
        },
    };
    ctx.out.int(position);
    Ok(())
}

/// The first bit equal to `wanted` from bit `first` to bit `last` (both included and
/// within `bytes`).
fn find_bit(bytes: &[u8], wanted: bool, first: u64, last: u64) -> Option<u64> {
    let (first_byte, last_byte) = ((first >> 3) as usize, (last >> 3) as usize);
    // Flip the bytes so that the search is always for a one.
    let flip = if wanted { 0 } else { 0xFF };
    let in_range = |i: usize| {
        let mut mask = 0xFFu8;
        if i == first_byte {
            mask &= 0xFF >> (first & 7);
        }
        if i == last_byte {
            mask &= !((0xFF >> (last & 7)) >> 1);
        }
        (bytes[i] ^ flip) & mask
    };
    let hit = |i: usize, byte: u8| Some(i as u64 * 8 + u64::from(byte.leading_zeros()));
    let head = in_range(first_byte);
    if head != 0 || first_byte == last_byte {
        return if head != 0 {
            hit(first_byte, head)
        } else {
            None
        };
    }
    let middle = &bytes[first_byte + 1..last_byte];
    let flip_word = u64::from_ne_bytes([flip; 8]);
    let mut i = 0;
    for word in middle.chunks_exact(8) {
        if u64::from_ne_bytes(word.try_into().expect("8 bytes")) != flip_word {
            break;
        }
        i += 8;
    }
    for (j, byte) in middle[i..].iter().enumerate() {
        if byte ^ flip != 0 {
            return hit(first_byte + 1 + i + j, byte ^ flip);
        }
    }
    let tail = in_range(last_byte);
    (tail != 0).then(|| hit(last_byte, tail)).flatten()
}

#[cfg(test)]
mod tests {
    use super::{count_ones, find_bit};

    #[test]
    fn counts_within_bit_ranges() {
        let bytes = [0xFF, 0x0F, 0xF0, 0xFF, 0, 0, 0, 0, 0, 0xFF];
        assert_eq!(count_ones(&bytes, 0, 79), 32);
        assert_eq!(count_ones(&bytes, 1, 6), 6);
        assert_eq!(count_ones(&bytes, 12, 19), 8);
        assert_eq!(count_ones(&bytes, 13, 13), 1);
        assert_eq!(count_ones(&bytes, 72, 79), 8);
    }

    #[test]
    fn finds_bits_within_ranges() {
        let bytes = [0xFF, 0x0F, 0, 0, 0, 0, 0, 0, 0, 0, 0x01];
        assert_eq!(find_bit(&bytes, true, 0, 87), Some(0));
        assert_eq!(find_bit(&bytes, true, 8, 87), Some(12));
        assert_eq!(find_bit(&bytes, true, 16, 87), Some(87));
        assert_eq!(find_bit(&bytes, true, 16, 86), None);
        assert_eq!(find_bit(&bytes, false, 0, 87), Some(8));
        assert_eq!(find_bit(&bytes, false, 12, 87), Some(16));
        assert_eq!(find_bit(&bytes, false, 0, 7), None);
        assert_eq!(find_bit(&bytes, true, 13, 13), Some(13));
    }
}
