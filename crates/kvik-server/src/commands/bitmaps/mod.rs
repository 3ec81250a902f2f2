//! Bitmap commands: strings read and written as arrays of bits.
//!
//! - [`bits`]: single bits and bit ranges (SETBIT, GETBIT, BITCOUNT, BITPOS);
//! - [`bitop`]: bitwise AND, OR, XOR and NOT of whole strings (BITOP);
//! - [`bitfield`]: integers of any width at any bit offset (BITFIELD, BITFIELD_RO).
//!
//! Bit 0 is the most significant bit of the first byte, as in Redis. Every reply,
//! error text and propagated effect follows Redis 7.0; a string a bitmap command
//! writes in place becomes `raw`.

mod bitfield;
mod bitop;
mod bits;

use super::table::{acl, flags, key_flags, Command, FoundKeys, KeySpec};
use super::{errors, CmdError, Ctx};
use crate::keyspace::Locked;
use crate::types::string::StrValue;
use crate::types::Value;
use crate::util::numbers::parse_i64;
use crate::util::thin_buf::ThinBuf;
use std::sync::atomic::Ordering;

const READ_FAST: u32 = acl::BITMAP | acl::READ | acl::FAST;
const READ_SLOW: u32 = acl::BITMAP | acl::READ | acl::SLOW;
const WRITE_SLOW: u32 = acl::BITMAP | acl::WRITE | acl::SLOW;
const BITFIELD_COMPLEXITY: &str = "O(1) for each subcommand specified";

pub const COMMANDS: &[Command] = &[
    Command::new("setbit", 4, bits::setbit)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE_SLOW)
        .keys(1, 1, 1)
        .doc(
            "bitmap",
            "2.2.0",
            "O(1)",
            "Sets or clears the bit at offset in the string value stored at key",
        ),
    Command::new("getbit", 3, bits::getbit)
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, 1, 1)
        .doc(
            "bitmap",
            "2.2.0",
            "O(1)",
            "Returns the bit value at offset in the string value stored at key",
        ),
    Command::new("bitcount", -2, bits::bitcount)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .doc("bitmap", "2.6.0", "O(N)", "Count set bits in a string"),
    Command::new("bitpos", -3, bits::bitpos)
        .flags(flags::READONLY)
        .acl(READ_SLOW)
        .keys(1, 1, 1)
        .doc(
            "bitmap",
            "2.8.7",
            "O(N)",
            "Find first bit set or clear in a string",
        ),
    Command::new("bitop", -4, bitop::bitop)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE_SLOW)
        .keys(2, 2, 1)
        .key_flags(key_flags::OW | key_flags::UPDATE)
        .keys(3, -1, 1)
        .key_flags(key_flags::RO | key_flags::ACCESS)
        .doc(
            "bitmap",
            "2.6.0",
            "O(N)",
            "Perform bitwise operations between strings",
        ),
    Command::new("bitfield", -2, bitfield::bitfield)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE_SLOW)
        .key_spec(
            KeySpec::range(1, 1, 1)
                .flags(key_flags::RW | key_flags::ACCESS | key_flags::UPDATE | key_flags::VARIABLE_FLAGS)
                .notes("This command allows both access and modification of the key"),
        )
        .settle_key_flags(bitfield_key_flags)
        .doc(
            "bitmap",
            "3.2.0",
            BITFIELD_COMPLEXITY,
            "Perform arbitrary bitfield integer operations on strings",
        ),
    Command::new("bitfield_ro", -2, bitfield::bitfield_ro)
        .flags(flags::READONLY | flags::FAST)
        .acl(READ_FAST)
        .keys(1, 1, 1)
        .doc(
            "bitmap",
            "6.0.0",
            BITFIELD_COMPLEXITY,
            "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD",
        ),
];

/// BITFIELD's key flags for COMMAND GETKEYSANDFLAGS: read-only when it has no SET or
/// INCRBY (each operation is read with the arguments it takes).
fn bitfield_key_flags(args: &[&[u8]], keys: &mut FoundKeys) {
    let mut i = 2;
    while i < args.len() {
        let left = args.len() - i - 1;
        let is = |word: &str| args[i].eq_ignore_ascii_case(word.as_bytes());
        if (is("set") || is("incrby")) && left >= 3 {
            return;
        }
        i += match () {
            _ if is("get") && left >= 2 => 3,
            _ if is("overflow") && left >= 1 => 2,
            _ => 1,
        };
    }
    keys.set_flags(key_flags::RO | key_flags::ACCESS);
}

/// The error for a bit offset that is not a number, negative, or beyond the longest
/// string a client may build.
const BAD_OFFSET: &str = "ERR bit offset is not an integer or out of range";

/// A bit offset argument. With `field_bits` set (BITFIELD), `#n` means the n-th field
/// of that width, i.e. bit `n * field_bits`.
fn bit_offset(ctx: &Ctx, arg: &[u8], field_bits: Option<u32>) -> Result<u64, CmdError> {
    let (digits, scale) = match (arg.first(), field_bits) {
        (Some(b'#'), Some(bits)) => (&arg[1..], i64::from(bits)),
        _ => (arg, 1),
    };
    let offset = parse_i64(digits)
        .ok_or(CmdError::from(BAD_OFFSET))?
        .wrapping_mul(scale);
    let max_bytes = ctx.server.hot.proto_max_bulk_len.load(Ordering::Relaxed);
    if offset < 0 || (offset as u64 >> 3) >= max_bytes {
        return Err(BAD_OFFSET.into());
    }
    Ok(offset as u64)
}

/// Whether [`writable_bits`] had to make the string longer to reach the bit.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Growth {
    /// The key did not exist; storing it already counted as a change.
    Created,
    Grown,
    Unchanged,
}

/// The bytes of the string at `key`, as a `raw` buffer zero-extended so that bit
/// `last_bit` exists; a missing key becomes a string of zero bytes.
fn writable_bits<'k>(
    keys: &'k mut Locked<'_>,
    key: &[u8],
    last_bit: u64,
) -> Result<(&'k mut ThinBuf, Growth), CmdError> {
    let needed = (last_bit >> 3) as usize + 1;
    let growth = match keys.get(key) {
        None => {
            let zeros = StrValue::Raw(ThinBuf::zeroed(needed));
            keys.set(key, Value::Str(zeros), 0);
            Growth::Created
        }
        Some(entry) => {
            let value = entry
                .value
                .as_str_mut()
                .ok_or(CmdError::from(errors::WRONGTYPE))?;
            let buf = value.make_raw();
            if buf.len() < needed {
                buf.resize_zeroed(needed);
                Growth::Grown
            } else {
                Growth::Unchanged
            }
        }
    };
    let entry = keys.get(key).expect("the key was just found or stored");
    let buf = entry
        .value
        .as_str_mut()
        .expect("the key holds a string")
        .make_raw();
    Ok((buf, growth))
}

/// The bit at `offset` (0 = most significant bit of the first byte); bits past the
/// end read as 0.
fn bit_at(bytes: &[u8], offset: u64) -> bool {
    bytes
        .get((offset >> 3) as usize)
        .is_some_and(|byte| byte & (0x80 >> (offset & 7)) != 0)
}

/// Start and end indexes (bytes or bits) the way BITCOUNT and BITPOS resolve them in
/// a string of `len` units: negative ones count from the end, both are clamped to the
/// string, and `None` means an empty range.
fn clamp_range(start: i64, end: i64, len: i64) -> Option<(u64, u64)> {
    let from_end = |i: i64| if i < 0 { (len + i).max(0) } else { i };
    let (start, end) = (from_end(start), from_end(end).min(len - 1));
    (start <= end).then_some((start as u64, end as u64))
}
