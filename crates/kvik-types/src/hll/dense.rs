//! The dense encoding: 16384 registers of six bits each, packed into 12288 bytes.
//!
//! Register `i` occupies bits `6i .. 6i+6` of the bytes read as one little-endian bit
//! stream: its low bits sit in the high part of one byte and the rest in the low part
//! of the next. This is Redis's layout, which is what makes a dense value written by
//! one server readable by the other. Bulk readers take six bytes (eight registers) at
//! a time.

use super::estimate::{Histogram, Tally};
use super::{Registers, REGISTERS};

/// Bits per register.
const BITS: usize = 6;
/// The largest value a register can hold.
const MAX_VALUE: u16 = (1 << BITS) - 1;
/// Bytes of the register array.
pub const BYTES: usize = REGISTERS * BITS / 8;
/// Bytes holding one group of eight registers.
const GROUP_BYTES: usize = 6;
const GROUP_REGISTERS: usize = 8;

/// Register `index`. The last register ends exactly at the last byte.
pub fn get(registers: &[u8], index: usize) -> u8 {
    let bit = index * BITS;
    let (byte, shift) = (bit / 8, bit % 8);
    let low = u16::from(registers[byte]);
    let high = u16::from(registers.get(byte + 1).copied().unwrap_or(0));
    (((high << 8 | low) >> shift) & MAX_VALUE) as u8
}

/// Store `value` (at most 63) in register `index`.
pub fn set(registers: &mut [u8], index: usize, value: u8) {
    let bit = index * BITS;
    let (byte, shift) = (bit / 8, bit % 8);
    let mask = MAX_VALUE << shift;
    let bits = u16::from(value) << shift;
    registers[byte] = (registers[byte] & !(mask as u8)) | bits as u8;
    if let Some(next) = registers.get_mut(byte + 1) {
        *next = (*next & !((mask >> 8) as u8)) | (bits >> 8) as u8;
    }
}

/// Raise register `index` to `value` if it is lower. Returns whether it changed.
pub fn raise(registers: &mut [u8], index: usize, value: u8) -> bool {
    if value > get(registers, index) {
        set(registers, index, value);
        true
    } else {
        false
    }
}

/// The registers of one six-byte group, one per byte. The 48 bits are spread in
/// three steps, each moving the upper half of every lane up into a lane twice as
/// wide: 24-bit halves into 32-bit lanes, 12-bit into 16-bit, 6-bit into bytes.
fn unpack_group(group: &[u8]) -> [u8; GROUP_REGISTERS] {
    let mut word = [0u8; 8];
    word[..GROUP_BYTES].copy_from_slice(group);
    let w = u64::from_le_bytes(word);
    let w = (w & 0x0000_0000_00ff_ffff) | (w & 0x0000_ffff_ff00_0000) << 8;
    let w = (w & 0x0000_0fff_0000_0fff) | (w & 0x00ff_f000_00ff_f000) << 4;
    let w = (w & 0x003f_003f_003f_003f) | (w & 0x0fc0_0fc0_0fc0_0fc0) << 2;
    w.to_le_bytes()
}

/// Six bytes holding eight register values (each at most 63): [`unpack_group`]
/// backwards.
fn pack_group(values: [u8; GROUP_REGISTERS]) -> [u8; GROUP_BYTES] {
    let w = u64::from_le_bytes(values);
    let w = (w & 0x003f_003f_003f_003f) | (w & 0x3f00_3f00_3f00_3f00) >> 2;
    let w = (w & 0x0000_0fff_0000_0fff) | (w & 0x0fff_0000_0fff_0000) >> 4;
    let w = (w & 0x0000_0000_00ff_ffff) | (w & 0x00ff_ffff_0000_0000) >> 8;
    let bytes = w.to_le_bytes();
    std::array::from_fn(|i| bytes[i])
}

/// How many registers hold each value.
pub fn histogram(registers: &[u8]) -> Histogram {
    let mut tally = Tally::new();
    for group in registers.chunks_exact(GROUP_BYTES) {
        tally.add(unpack_group(group));
    }
    tally.histogram()
}

/// Raise each of `max` to the matching register.
pub fn merge_into(registers: &[u8], max: &mut Registers) {
    let groups = registers.chunks_exact(GROUP_BYTES);
    for (group, out) in groups.zip(max.chunks_exact_mut(GROUP_REGISTERS)) {
        for (m, v) in out.iter_mut().zip(unpack_group(group)) {
            *m = (*m).max(v);
        }
    }
}

/// Raise each register to the matching value of `max`.
pub fn raise_all(registers: &mut [u8], max: &Registers) {
    let groups = registers.chunks_exact_mut(GROUP_BYTES);
    for (group, wanted) in groups.zip(max.chunks_exact(GROUP_REGISTERS)) {
        let mut values = unpack_group(group);
        for (v, w) in values.iter_mut().zip(wanted) {
            *v = (*v).max(*w);
        }
        group.copy_from_slice(&pack_group(values));
    }
}

/// Every register, one byte each.
pub fn unpack(registers: &[u8]) -> Box<Registers> {
    let mut all = Box::new([0u8; REGISTERS]);
    for (group, out) in registers
        .chunks_exact(GROUP_BYTES)
        .zip(all.chunks_exact_mut(GROUP_REGISTERS))
    {
        out.copy_from_slice(&unpack_group(group));
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_round_trip_without_touching_neighbours() {
        let mut regs = vec![0u8; BYTES];
        let value_of = |i: usize| ((i * 7 + 3) % 64) as u8;
        for i in 0..REGISTERS {
            set(&mut regs, i, value_of(i));
        }
        for i in 0..REGISTERS {
            assert_eq!(get(&regs, i), value_of(i), "register {i}");
        }
        let all = unpack(&regs);
        assert!((0..REGISTERS).all(|i| all[i] == value_of(i)));
    }

    #[test]
    fn layout_is_little_endian_bit_stream() {
        let mut regs = vec![0u8; BYTES];
        set(&mut regs, 0, 0b111111);
        assert_eq!(regs[..2], [0b0011_1111, 0]);
        set(&mut regs, 1, 0b000011);
        assert_eq!(regs[..2], [0b1111_1111, 0]);
        set(&mut regs, 1, 0b111100);
        assert_eq!(regs[..2], [0b0011_1111, 0b0000_1111]);
        set(&mut regs, REGISTERS - 1, 63);
        assert_eq!(regs[BYTES - 1], 0b1111_1100);
    }

    #[test]
    fn bulk_merge_and_raise_agree_with_single_registers() {
        let mut regs = vec![0u8; BYTES];
        for i in (0..REGISTERS).step_by(3) {
            set(&mut regs, i, (i % 50) as u8);
        }
        let mut max = [0u8; REGISTERS];
        for (i, m) in max.iter_mut().enumerate().step_by(2) {
            *m = (i % 40) as u8;
        }
        let mut merged = max;
        merge_into(&regs, &mut merged);
        raise_all(&mut regs, &max);
        for (i, m) in merged.iter().enumerate() {
            assert_eq!(get(&regs, i), *m);
        }
        let histogram = histogram(&regs);
        assert_eq!(histogram.iter().sum::<u32>(), REGISTERS as u32);
        assert_eq!(
            histogram[0],
            (0..REGISTERS).filter(|&i| merged[i] == 0).count() as u32
        );
    }
}
