//! BITFIELD and BITFIELD_RO: signed (`i1`..`i64`) and unsigned (`u1`..`u63`)
//! integers at any bit offset of a string, big-endian as bit 0 is the first byte's
//! most significant bit.
//!
//! Every subcommand is parsed before any runs, so a malformed one anywhere changes
//! nothing. A command with only GETs reads (a missing key reads as zeros) and
//! propagates nothing; one that writes first grows the string to reach its farthest
//! field, then runs the subcommands in order, each SET and INCRBY obeying the
//! OVERFLOW mode in force where it appears. It propagates as sent when the string
//! changed, growth included.

use super::{bit_offset, writable_bits, Growth};
use crate::commands::strings::read_string;
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::notify::class;

const BAD_TYPE: &str = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

/// An integer type: its signedness and width in bits.
#[derive(Clone, Copy)]
struct Field {
    signed: bool,
    bits: u32,
}

/// What a SET or INCRBY does with a result that does not fit its field.
#[derive(Clone, Copy)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy)]
enum Action {
    Get,
    Set(i64),
    IncrBy(i64),
}

struct FieldOp {
    field: Field,
    offset: u64,
    action: Action,
    overflow: Overflow,
}

pub fn bitfield(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    run(ctx, args, false)
}

pub fn bitfield_ro(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    run(ctx, args, true)
}

fn run(ctx: &mut Ctx, args: &[&[u8]], read_only: bool) -> CmdResult {
    let key = args[1];
    let ops = parse_ops(ctx, &args[2..])?;
    let last_written_bit = ops
        .iter()
        .filter(|op| !matches!(op.action, Action::Get))
        .map(|op| op.offset + u64::from(op.field.bits) - 1)
        .max();
    let Some(last_bit) = last_written_bit else {
        return reply_reads(ctx, key, &ops);
    };
    if read_only {
        return Err("ERR BITFIELD_RO only supports the GET subcommand".into());
    }
    let (buf, growth) = writable_bits(ctx.keys, key, last_bit)?;
    let mut changed = growth == Growth::Grown;
    ctx.out.array(ops.len());
    for op in &ops {
        match apply(buf, op) {
            Some((reply, value_changed)) => {
                changed |= value_changed;
                ctx.out.int(reply);
            }
            None => ctx.out.null(),
        }
    }
    if changed && growth != Growth::Created {
        ctx.keys.modified(key);
    }
    if changed || growth == Growth::Created {
        ctx.keys.notify(class::BITMAP, "setbit", key);
    }
    Ok(())
}

/// Reply to a command with only GETs.
fn reply_reads(ctx: &mut Ctx, key: &[u8], ops: &[FieldOp]) -> CmdResult {
    let mut digits = itoa::Buffer::new();
    let bytes = read_string(ctx.keys, key)?.map_or(&[][..], |value| value.bytes(&mut digits));
    ctx.out.array(ops.len());
    for op in ops {
        ctx.out.int(get(bytes, op.offset, op.field));
    }
    Ok(())
}

fn parse_ops(ctx: &Ctx, mut rest: &[&[u8]]) -> Result<Vec<FieldOp>, CmdError> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    while let Some((&name, tail)) = rest.split_first() {
        let takes = if args::is(name, "get") {
            2
        } else if args::is(name, "set") || args::is(name, "incrby") {
            3
        } else if args::is(name, "overflow") && !tail.is_empty() {
            overflow = parse_overflow(tail[0])?;
            rest = &tail[1..];
            continue;
        } else {
            0
        };
        if takes == 0 || tail.len() < takes {
            return Err(errors::SYNTAX.into());
        }
        let field = parse_field(tail[0])?;
        let offset = bit_offset(ctx, tail[1], Some(field.bits))?;
        let action = match takes {
            2 => Action::Get,
            _ if args::is(name, "set") => Action::Set(args::int(tail[2])?),
            _ => Action::IncrBy(args::int(tail[2])?),
        };
        ops.push(FieldOp {
            field,
            offset,
            action,
            overflow,
        });
        rest = &tail[takes..];
    }
    Ok(ops)
}

fn parse_overflow(arg: &[u8]) -> Result<Overflow, CmdError> {
    [
        ("wrap", Overflow::Wrap),
        ("sat", Overflow::Sat),
        ("fail", Overflow::Fail),
    ]
    .into_iter()
    .find(|(name, _)| args::is(arg, name))
    .map(|(_, mode)| mode)
    .ok_or(CmdError::from("ERR Invalid OVERFLOW type specified"))
}

/// `i<bits>` or `u<bits>` (lower case only, as Redis reads them).
fn parse_field(arg: &[u8]) -> Result<Field, CmdError> {
    let (signed, max_bits) = match arg.first() {
        Some(b'i') => (true, 64),
        Some(b'u') => (false, 63),
        _ => return Err(BAD_TYPE.into()),
    };
    match args::int(&arg[1..]) {
        Ok(bits) if (1..=max_bits).contains(&bits) => Ok(Field {
            signed,
            bits: bits as u32,
        }),
        _ => Err(BAD_TYPE.into()),
    }
}

/// Run a SET or INCRBY (or a GET) on the grown string: its reply, or `None` when
/// OVERFLOW FAIL refused it, and whether it changed the stored bits.
fn apply(buf: &mut [u8], op: &FieldOp) -> Option<(i64, bool)> {
    let old = get(buf, op.offset, op.field);
    let wanted = match op.action {
        Action::Get => return Some((old, false)),
        // An unsigned field reads a negative value as the u64 of the same bits.
        Action::Set(v) if !op.field.signed => i128::from(v as u64),
        Action::Set(v) => i128::from(v),
        Action::IncrBy(by) => i128::from(old) + i128::from(by),
    };
    let new = fit(op.field, op.overflow, wanted)?;
    set(buf, op.offset, op.field.bits, new as u64);
    let reply = match op.action {
        Action::IncrBy(_) => new,
        _ => old,
    };
    Some((reply, new != old))
}

/// The value a field of type `field` stores for `value`, after the overflow mode
/// dealt with it; `None` when the mode is FAIL and it does not fit.
fn fit(field: Field, overflow: Overflow, value: i128) -> Option<i64> {
    let (min, max) = if field.signed {
        (
            -(1i128 << (field.bits - 1)),
            (1i128 << (field.bits - 1)) - 1,
        )
    } else {
        (0, (1i128 << field.bits) - 1)
    };
    if (min..=max).contains(&value) {
        return Some(value as i64);
    }
    match overflow {
        Overflow::Fail => None,
        Overflow::Sat => Some(value.clamp(min, max) as i64),
        Overflow::Wrap => Some(decode(value as u64 & mask(field.bits), field)),
    }
}

/// The field at bit `offset`; bits past the end of `bytes` read as zeros.
fn get(bytes: &[u8], offset: u64, field: Field) -> i64 {
    let (window, _) = window_at(bytes, offset);
    let shift = window_shift(offset, field.bits);
    decode((window >> shift) as u64 & mask(field.bits), field)
}

/// Store the low `bits` of `value` at bit `offset`, which `bytes` reaches.
fn set(bytes: &mut [u8], offset: u64, bits: u32, value: u64) {
    let (window, len) = window_at(bytes, offset);
    let shift = window_shift(offset, bits);
    let field_mask = u128::from(mask(bits)) << shift;
    let window = (window & !field_mask) | ((u128::from(value) << shift) & field_mask);
    let start = (offset >> 3) as usize;
    bytes[start..start + len].copy_from_slice(&window.to_be_bytes()[..len]);
}

/// The (up to) nine bytes from the one holding bit `offset`, enough for any field,
/// as the high end of a big-endian `u128` padded with zeros; and how many were there.
fn window_at(bytes: &[u8], offset: u64) -> (u128, usize) {
    let start = (offset >> 3) as usize;
    let available = &bytes[start.min(bytes.len())..];
    let len = available.len().min(9);
    let mut window = [0u8; 16];
    window[..len].copy_from_slice(&available[..len]);
    (u128::from_be_bytes(window), len)
}

/// How far right a window must shift to bring a field at `offset` to bit 0.
fn window_shift(offset: u64, bits: u32) -> u32 {
    128 - (offset & 7) as u32 - bits
}

fn mask(bits: u32) -> u64 {
    u64::MAX >> (64 - bits)
}

/// The integer the low `bits` of `raw` hold in a field of type `field`.
fn decode(raw: u64, field: Field) -> i64 {
    if field.signed {
        let unused = 64 - field.bits;
        ((raw << unused) as i64) >> unused
    } else {
        raw as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const I8: Field = Field {
        signed: true,
        bits: 8,
    };
    const U4: Field = Field {
        signed: false,
        bits: 4,
    };

    #[test]
    fn fields_cross_byte_boundaries() {
        let mut bytes = [0u8; 10];
        set(&mut bytes, 5, 8, 0xAB);
        assert_eq!(bytes[..2], [0x05, 0x58]);
        assert_eq!(get(&bytes, 5, I8), 0xABu8 as i8 as i64);
        set(&mut bytes, 7, 64, u64::MAX);
        let i64_field = Field {
            signed: true,
            bits: 64,
        };
        assert_eq!(get(&bytes, 7, i64_field), -1);
        assert_eq!(get(&bytes[..1], 4, U4), 5);
    }

    #[test]
    fn overflow_modes() {
        assert_eq!(fit(I8, Overflow::Wrap, 128), Some(-128));
        assert_eq!(fit(I8, Overflow::Sat, 300), Some(127));
        assert_eq!(fit(I8, Overflow::Sat, -300), Some(-128));
        assert_eq!(fit(I8, Overflow::Fail, 128), None);
        assert_eq!(fit(U4, Overflow::Wrap, 17), Some(1));
        assert_eq!(fit(U4, Overflow::Wrap, -1), Some(15));
        assert_eq!(fit(U4, Overflow::Sat, -1), Some(0));
        assert_eq!(fit(U4, Overflow::Fail, 15), Some(15));
    }
}
