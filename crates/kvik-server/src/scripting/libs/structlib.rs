//! `struct`: packing Lua values into binary strings and back, as the `struct` 0.2
//! library bundled with Redis does it (`struct.pack`, `struct.unpack`, `struct.size`).
//!
//! A format is read one letter at a time: `>`/`<` switch to big/little endian, `!n`
//! sets the largest alignment (8 without `n`), `b h l T i I` (lower case signed, `in`
//! with a size of n bytes), `f d` floats, `s` a zero-terminated string, `cn` n raw
//! bytes (`c0`: the whole string when packing, the previous number as length when
//! unpacking), `x` a zero byte and space is ignored. Integers go through 64-bit C
//! conversions, so out-of-range numbers pack like the original does on x86-64.

use std::ffi::c_int;

use mlua::ffi::{self, lua_State};

use super::{
    bytes_arg, c_double_to_i64, ensure_stack, integer_arg, lua_functions, number_arg, push_bytes,
    register, Failure, Outcome,
};

/// The widest integer a format may ask for, in bytes (`i32`).
const MAX_INT_SIZE: usize = 32;

/// The alignment `!` sets without a number: the strictest one of the platform.
const MAX_ALIGN: c_int = 8;

/// Endianness and alignment in force at a point of the format.
struct Header {
    little_endian: bool,
    align: usize,
}

impl Default for Header {
    fn default() -> Self {
        Header {
            little_endian: cfg!(target_endian = "little"),
            align: 1,
        }
    }
}

/// The letters of a format string (which ends at its first NUL, as a C string would).
struct Format<'a> {
    letters: &'a [u8],
    at: usize,
}

impl<'a> Format<'a> {
    fn new(text: &'a [u8]) -> Self {
        let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
        Format {
            letters: &text[..end],
            at: 0,
        }
    }

    fn next_letter(&mut self) -> Option<u8> {
        let letter = *self.letters.get(self.at)?;
        self.at += 1;
        Some(letter)
    }

    /// The number written right after a letter, or `default` if there is none.
    fn number(&mut self, default: c_int) -> Result<c_int, Failure> {
        let mut value: c_int = 0;
        let mut seen = false;
        while let Some(&digit @ b'0'..=b'9') = self.letters.get(self.at) {
            let digit = c_int::from(digit - b'0');
            if value > c_int::MAX / 10 || value * 10 > c_int::MAX - digit {
                return Err(Failure::positioned("integral size overflow"));
            }
            value = value * 10 + digit;
            seen = true;
            self.at += 1;
        }
        Ok(if seen { value } else { default })
    }

    /// How many bytes `letter` takes (0 for letters that are not values).
    fn size_of(&mut self, letter: u8) -> Result<usize, Failure> {
        Ok(match letter {
            b'b' | b'B' | b'x' => 1,
            b'h' | b'H' => 2,
            b'l' | b'L' | b'T' | b'd' => 8,
            b'f' => 4,
            // A negative count only comes from an overflowing size; C reads it unsigned.
            b'c' => self.number(1)? as usize,
            b'i' | b'I' => {
                let size = self.number(4)?;
                if size as usize > MAX_INT_SIZE {
                    return Err(Failure::positioned(format!(
                        "integral size {size} is larger than limit of {MAX_INT_SIZE}"
                    )));
                }
                size as usize
            }
            _ => 0,
        })
    }

    /// Applies a letter that is not a value: endianness, alignment or space.
    fn control(&mut self, letter: u8, header: &mut Header) -> Result<(), Failure> {
        match letter {
            b' ' => {}
            b'>' => header.little_endian = false,
            b'<' => header.little_endian = true,
            b'!' => {
                let align = self.number(MAX_ALIGN)?;
                if align <= 0 || align & (align - 1) != 0 {
                    return Err(Failure::positioned(format!(
                        "alignment {align} is not a power of 2"
                    )));
                }
                header.align = align as usize;
            }
            _ => {
                let mut message = b"invalid format option '".to_vec();
                message.extend([letter, b'\'']);
                return Err(Failure::argument(1, message));
            }
        }
        Ok(())
    }
}

/// Padding needed before a value of `size` bytes at offset `offset`.
fn padding(offset: usize, header: &Header, letter: u8, size: usize) -> usize {
    if size == 0 || letter == b'c' {
        return 0;
    }
    let align = size.min(header.align);
    align.wrapping_sub(offset & (align - 1)) & (align - 1)
}

fn is_integer_letter(letter: u8) -> bool {
    matches!(
        letter,
        b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I'
    )
}

/// C's `(unsigned long)x` as x86-64 code computes it, out-of-range values included
/// (negative numbers wrap around, as through a signed conversion).
fn c_double_to_u64(x: f64) -> u64 {
    const HIGH_BIT: f64 = 9_223_372_036_854_775_808.0;
    if x >= HIGH_BIT {
        (c_double_to_i64(x - HIGH_BIT) as u64) ^ (1 << 63)
    } else {
        c_double_to_i64(x) as u64
    }
}

/// Appends the low `size` bytes of `number` in the given byte order; bytes beyond
/// the eighth are zero, even for negative numbers.
fn put_integer(out: &mut Vec<u8>, number: f64, little_endian: bool, size: usize) {
    let mut value = c_double_to_u64(number);
    let start = out.len();
    for _ in 0..size {
        out.push((value & 0xff) as u8);
        value = value.checked_shr(8).unwrap_or(0);
    }
    if !little_endian {
        out[start..].reverse();
    }
}

/// Reads an integer of `bytes.len()` bytes; only the last eight read count, and the
/// sign extension of wide signed integers follows x86's shift-count masking.
fn get_integer(bytes: &[u8], little_endian: bool, signed: bool) -> f64 {
    let push = |value: u64, byte: &u8| (value << 8) | u64::from(*byte);
    let value = if little_endian {
        bytes.iter().rev().fold(0, push)
    } else {
        bytes.iter().fold(0, push)
    };
    if !signed {
        return value as f64;
    }
    let mask = u64::MAX << ((bytes.len() * 8).wrapping_sub(1) % 64);
    let extended = if value & mask != 0 {
        value | mask
    } else {
        value
    };
    extended as i64 as f64
}

/// Bytes of a float or double in the order the header asks for.
fn ordered<const N: usize>(mut native_le: [u8; N], little_endian: bool) -> [u8; N] {
    if !little_endian {
        native_le.reverse();
    }
    native_le
}

/// `struct.pack(format, ...)`.
unsafe fn pack(l: *mut lua_State) -> Outcome {
    let mut format = Format::new(bytes_arg(l, 1)?);
    let mut header = Header::default();
    let mut out = Vec::new();
    // The original pushes a marker here, so a missing first value reads as nil.
    ffi::lua_pushnil(l);
    let mut arg = 2;
    while let Some(letter) = format.next_letter() {
        let mut size = format.size_of(letter)?;
        out.resize(out.len() + padding(out.len(), &header, letter, size), 0);
        match letter {
            _ if is_integer_letter(letter) => {
                put_integer(&mut out, number_arg(l, arg)?, header.little_endian, size);
                arg += 1;
            }
            b'x' => out.push(0),
            b'f' => {
                let value = number_arg(l, arg)? as f32;
                arg += 1;
                out.extend(ordered(value.to_le_bytes(), header.little_endian));
            }
            b'd' => {
                let value = number_arg(l, arg)?;
                arg += 1;
                out.extend(ordered(value.to_le_bytes(), header.little_endian));
            }
            b'c' | b's' => {
                let text = bytes_arg(l, arg)?;
                arg += 1;
                if size == 0 {
                    size = text.len();
                }
                if text.len() < size {
                    // The original reports the argument after the short string.
                    return Err(Failure::argument(arg, "string too short"));
                }
                out.extend_from_slice(&text[..size]);
                if letter == b's' {
                    out.push(0);
                }
            }
            _ => format.control(letter, &mut header)?,
        }
    }
    push_bytes(l, &out);
    Ok(1)
}

fn data_too_short() -> Failure {
    Failure::argument(2, "data string too short")
}

/// `struct.unpack(format, data [, init])`: the values, then the position after them.
unsafe fn unpack(l: *mut lua_State) -> Outcome {
    let mut format = Format::new(bytes_arg(l, 1)?);
    let data = bytes_arg(l, 2)?;
    // A negative start wraps around to a huge offset, as the original's unsigned
    // arithmetic does: it then fails as "data string too short".
    let start = integer_arg(l, 3, Some(1))? as usize;
    if start == 0 {
        return Err(Failure::argument(3, "offset must be 1 or greater"));
    }
    let mut position = start - 1;
    let mut header = Header::default();
    let mut results: c_int = 0;
    while let Some(letter) = format.next_letter() {
        let mut size = format.size_of(letter)?;
        position = position.wrapping_add(padding(position, &header, letter, size));
        if size > data.len() || position > data.len() - size {
            return Err(data_too_short());
        }
        ensure_stack(l, 2, "too many results")?;
        match letter {
            _ if is_integer_letter(letter) => {
                let bytes = &data[position..position + size];
                ffi::lua_pushnumber(
                    l,
                    get_integer(bytes, header.little_endian, letter.is_ascii_lowercase()),
                );
                results += 1;
            }
            b'x' => {}
            b'f' => {
                let bytes: [u8; 4] = data[position..position + 4].try_into().expect("4 bytes");
                let value = f32::from_le_bytes(ordered(bytes, header.little_endian));
                ffi::lua_pushnumber(l, f64::from(value));
                results += 1;
            }
            b'd' => {
                let bytes: [u8; 8] = data[position..position + 8].try_into().expect("8 bytes");
                ffi::lua_pushnumber(l, f64::from_le_bytes(ordered(bytes, header.little_endian)));
                results += 1;
            }
            b'c' => {
                if size == 0 {
                    size = previous_size(l, results)?;
                    ffi::lua_pop(l, 1);
                    results -= 1;
                    if size > data.len() || position > data.len() - size {
                        return Err(data_too_short());
                    }
                }
                push_bytes(l, &data[position..position + size]);
                results += 1;
            }
            b's' => {
                let Some(length) = data[position..].iter().position(|&b| b == 0) else {
                    return Err(Failure::positioned("unfinished string in data"));
                };
                push_bytes(l, &data[position..position + length]);
                size = length + 1;
                results += 1;
            }
            _ => format.control(letter, &mut header)?,
        }
        position = position.wrapping_add(size);
    }
    ffi::lua_pushinteger(l, position.wrapping_add(1) as i64);
    Ok(results + 1)
}

/// The length `c0` takes when unpacking: the number unpacked just before it.
unsafe fn previous_size(l: *mut lua_State, results: c_int) -> Result<usize, Failure> {
    if results == 0 || ffi::lua_isnumber(l, -1) == 0 {
        return Err(Failure::positioned("format 'c0' needs a previous size"));
    }
    let length = ffi::lua_tonumber(l, -1);
    Ok(c_double_to_u64(length) as usize)
}

/// `struct.size(format)`: the bytes a format packs into; letters that are not
/// options are ignored, as the original does.
unsafe fn size(l: *mut lua_State) -> Outcome {
    let mut format = Format::new(bytes_arg(l, 1)?);
    let mut header = Header::default();
    let mut total: usize = 0;
    while let Some(letter) = format.next_letter() {
        let size = format.size_of(letter)?;
        total = total.wrapping_add(padding(total, &header, letter, size));
        if letter == b's' {
            return Err(Failure::argument(1, "option 's' has no fixed size"));
        }
        if letter == b'c' && size == 0 {
            return Err(Failure::argument(1, "option 'c0' has no fixed size"));
        }
        if !letter.is_ascii_alphanumeric() {
            format.control(letter, &mut header)?;
        }
        total = total.wrapping_add(size);
    }
    ffi::lua_pushinteger(l, total as i64);
    Ok(1)
}

lua_functions! {
    pack_entry => pack,
    unpack_entry => unpack,
    size_entry => size,
    open => open_library,
}

unsafe fn open_library(l: *mut lua_State) -> Outcome {
    register(
        l,
        c"struct",
        &[
            (c"pack", pack_entry),
            (c"unpack", unpack_entry),
            (c"size", size_entry),
        ],
    );
    Ok(1)
}
