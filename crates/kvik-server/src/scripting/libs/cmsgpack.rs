//! `cmsgpack`: MessagePack encoding of Lua values, byte for byte as lua-cmsgpack 0.4.0
//! (the version bundled with Redis) produces and reads it.
//!
//! Its choices, which decide the bytes: a number that is an exact 64-bit integer is
//! packed as the smallest integer type, any other number as a float32 when that is
//! lossless and a float64 otherwise; strings are always `str` types (never `bin`); a
//! table whose keys are exactly 1..n is an array (the empty table too), any other a
//! map in `next` order; tables nested 16 deep are packed as nil. Unpacking rejects
//! `bin` and `ext` types, and hits the same Lua stack limits as the original.

use std::ffi::c_int;

use mlua::ffi::{self, lua_State};

use super::{
    bytes_arg, c_double_to_i32, c_double_to_i64, ensure_stack, integer_arg, lua_functions,
    push_bytes, register, set_string_field, string_at, Failure, Outcome,
};

/// Tables at this depth are packed as nil (so cycles end).
const MAX_NESTING: usize = 16;

// ---------------------------------------------------------------- packing

/// `cmsgpack.pack(...)`: every argument packed, one after the other.
unsafe fn pack(l: *mut lua_State) -> Outcome {
    let count = ffi::lua_gettop(l);
    if count == 0 {
        return Err(Failure::argument(0, "MessagePack pack needs input."));
    }
    let mut out = Vec::new();
    for arg in 1..=count {
        ensure_stack(l, 1, "in function mp_check")?;
        ffi::lua_pushvalue(l, arg);
        encode_top(l, &mut out, 0)?;
    }
    push_bytes(l, &out);
    Ok(1)
}

/// Packs the value on top of the stack and pops it.
unsafe fn encode_top(l: *mut lua_State, out: &mut Vec<u8>, level: usize) -> Result<(), Failure> {
    match ffi::lua_type(l, -1) {
        ffi::LUA_TSTRING => encode_bytes(out, string_at(l, -1, false).unwrap_or_default()),
        ffi::LUA_TBOOLEAN => out.push(if ffi::lua_toboolean(l, -1) != 0 {
            0xc3
        } else {
            0xc2
        }),
        ffi::LUA_TNUMBER => encode_number(out, ffi::lua_tonumber(l, -1)),
        ffi::LUA_TTABLE if level < MAX_NESTING => encode_table(l, out, level)?,
        _ => out.push(0xc0),
    }
    ffi::lua_pop(l, 1);
    Ok(())
}

fn encode_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    let len = bytes.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend([0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend((len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend((len as u32).to_be_bytes());
    }
    out.extend_from_slice(bytes);
}

fn encode_number(out: &mut Vec<u8>, number: f64) {
    let integer = c_double_to_i64(number);
    if integer as f64 == number {
        encode_integer(out, integer);
        return;
    }
    let single = number as f32;
    if f64::from(single) == number {
        out.push(0xca);
        out.extend(single.to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend(number.to_be_bytes());
    }
}

fn encode_integer(out: &mut Vec<u8>, n: i64) {
    match n {
        0..=127 => out.push(n as u8),
        128..=0xff => out.extend([0xcc, n as u8]),
        0x100..=0xffff => {
            out.push(0xcd);
            out.extend((n as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0xce);
            out.extend((n as u32).to_be_bytes());
        }
        0x1_0000_0000.. => {
            out.push(0xcf);
            out.extend(n.to_be_bytes());
        }
        -32..=-1 => out.push(n as u8),
        -128..=-33 => out.extend([0xd0, n as u8]),
        -32768..=-129 => {
            out.push(0xd1);
            out.extend((n as i16).to_be_bytes());
        }
        -2_147_483_648..=-32769 => {
            out.push(0xd2);
            out.extend((n as i32).to_be_bytes());
        }
        _ => {
            out.push(0xd3);
            out.extend(n.to_be_bytes());
        }
    }
}

/// Packs the table on top of the stack as an array or a map.
unsafe fn encode_table(l: *mut lua_State, out: &mut Vec<u8>, level: usize) -> Result<(), Failure> {
    ensure_stack(l, 3, "in function mp_encode_lua_table")?;
    if is_array(l) {
        let len = ffi::lua_objlen(l, -1);
        encode_header(out, len, 0x90, 0xdc);
        for index in 1..=len {
            ffi::lua_rawgeti_(l, -1, index as c_int);
            encode_top(l, out, level + 1)?;
        }
    } else {
        encode_header(out, entry_count(l), 0x80, 0xde);
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, -2) != 0 {
            ffi::lua_pushvalue(l, -2);
            encode_top(l, out, level + 1)?;
            encode_top(l, out, level + 1)?;
        }
    }
    Ok(())
}

/// The header of an array or map of `len` entries: fix form, then 16 and 32 bits.
fn encode_header(out: &mut Vec<u8>, len: usize, fix: u8, wide16: u8) {
    if len <= 15 {
        out.push(fix | len as u8);
    } else if len <= 0xffff {
        out.push(wide16);
        out.extend((len as u16).to_be_bytes());
    } else {
        out.push(wide16 + 1);
        out.extend((len as u32).to_be_bytes());
    }
}

unsafe fn entry_count(l: *mut lua_State) -> usize {
    let mut count = 0;
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        ffi::lua_pop(l, 1);
        count += 1;
    }
    count
}

/// Whether the keys of the table on top of the stack are exactly 1..n, each a
/// positive number that is an exact C `int`.
unsafe fn is_array(l: *mut lua_State) -> bool {
    let mut count: i64 = 0;
    let mut max: i64 = 0;
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        ffi::lua_pop(l, 1);
        let key = ffi::lua_tonumber(l, -1);
        if ffi::lua_type(l, -1) != ffi::LUA_TNUMBER
            || key <= 0.0
            || f64::from(c_double_to_i32(key)) != key
        {
            ffi::lua_pop(l, 1);
            return false;
        }
        max = max.max(key as i64);
        count += 1;
    }
    max == count
}

// ---------------------------------------------------------------- unpacking

const MISSING_BYTES: &str = "Missing bytes in input.";
const BAD_FORMAT: &str = "Bad data format in input.";

/// The unread part of the input.
struct Cursor<'a> {
    rest: &'a [u8],
}

impl<'a> Cursor<'a> {
    /// Takes `n` bytes, or fails like the original when fewer are left.
    fn take(&mut self, n: usize) -> Result<&'a [u8], Failure> {
        if self.rest.len() < n {
            return Err(Failure::positioned(MISSING_BYTES));
        }
        let (taken, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(taken)
    }

    /// The big-endian unsigned number in the `N` bytes after the type byte, both
    /// consumed.
    fn number<const N: usize>(&mut self) -> Result<u64, Failure> {
        let bytes = self.take(1 + N)?;
        Ok(bytes[1..]
            .iter()
            .fold(0, |value, &b| (value << 8) | u64::from(b)))
    }

    /// A string whose length sits in the `N` bytes after the type byte.
    fn sized_bytes<const N: usize>(&mut self) -> Result<&'a [u8], Failure> {
        let header = self.length::<N>()?;
        self.take(header)
    }

    /// A length in the `N` bytes after the type byte, both consumed.
    fn length<const N: usize>(&mut self) -> Result<usize, Failure> {
        Ok(self.number::<N>()? as usize)
    }
}

/// An array or map being decoded, whose table is on the stack.
enum OpenTable {
    /// `left` elements to go; the index of the next one is on the stack.
    Array { left: usize, index: usize },
    /// `left` entries to go; `key_read` when the current entry's key is on the stack.
    Map { left: usize, key_read: bool },
}

/// Decodes one value and pushes it. Nested arrays and maps are tracked in a list
/// rather than by recursion, so thousands of levels cannot exhaust the thread's stack.
unsafe fn decode_value(l: *mut lua_State, input: &mut Cursor) -> Result<(), Failure> {
    let mut open: Vec<OpenTable> = Vec::new();
    loop {
        if let Some(table) = begin_value(l, input)? {
            open.push(table);
            continue;
        }
        // A value is complete on top of the stack: store it in its table.
        while let Some(table) = open.last_mut() {
            let more = match table {
                OpenTable::Array { left, index } => {
                    ffi::lua_settable(l, -3);
                    *left -= 1;
                    *index += 1;
                    if *left > 0 {
                        ffi::lua_pushnumber(l, *index as f64);
                    }
                    *left > 0
                }
                OpenTable::Map {
                    key_read: key_read @ false,
                    ..
                } => {
                    *key_read = true;
                    true
                }
                OpenTable::Map { left, key_read } => {
                    check_key(l, -2)?;
                    ffi::lua_settable(l, -3);
                    *left -= 1;
                    *key_read = false;
                    *left > 0
                }
            };
            if more {
                break;
            }
            open.pop();
        }
        if open.is_empty() {
            return Ok(());
        }
    }
}

/// Pushes the value starting at the input: a complete one (`None`), or an array or
/// map with elements to come (with, for an array, the first index pushed).
unsafe fn begin_value(l: *mut lua_State, input: &mut Cursor) -> Result<Option<OpenTable>, Failure> {
    let Some(&kind) = input.rest.first() else {
        return Err(Failure::positioned(MISSING_BYTES));
    };
    ensure_stack(
        l,
        1,
        "too many return values at once; use unpack_one or unpack_limit instead.",
    )?;
    let number = match kind {
        0x00..=0x7f => {
            input.take(1)?;
            f64::from(kind)
        }
        0xe0..=0xff => {
            input.take(1)?;
            f64::from(kind as i8)
        }
        0xcc => input.number::<1>()? as f64,
        0xcd => input.number::<2>()? as f64,
        0xce => input.number::<4>()? as f64,
        // Pushed through a signed Lua integer, so the top half reads negative.
        0xcf | 0xd3 => input.number::<8>()? as i64 as f64,
        0xd0 => f64::from(input.number::<1>()? as i8),
        0xd1 => f64::from(input.number::<2>()? as i16),
        0xd2 => f64::from(input.number::<4>()? as i32),
        0xca => f64::from(f32::from_bits(input.number::<4>()? as u32)),
        0xcb => f64::from_bits(input.number::<8>()?),
        _ => return begin_other(l, input, kind),
    };
    ffi::lua_pushnumber(l, number);
    Ok(None)
}

/// [`begin_value`] for the kinds that are not numbers.
unsafe fn begin_other(
    l: *mut lua_State,
    input: &mut Cursor,
    kind: u8,
) -> Result<Option<OpenTable>, Failure> {
    let (is_array, len) = match kind {
        0xc0 => {
            input.take(1)?;
            ffi::lua_pushnil(l);
            return Ok(None);
        }
        0xc2 | 0xc3 => {
            input.take(1)?;
            ffi::lua_pushboolean(l, c_int::from(kind == 0xc3));
            return Ok(None);
        }
        0xa0..=0xbf => {
            let bytes = input.take(1 + usize::from(kind & 0x1f))?;
            push_bytes(l, &bytes[1..]);
            return Ok(None);
        }
        0xd9 => return push_string(l, input.sized_bytes::<1>()?),
        0xda => return push_string(l, input.sized_bytes::<2>()?),
        0xdb => return push_string(l, input.sized_bytes::<4>()?),
        0x90..=0x9f => {
            input.take(1)?;
            (true, usize::from(kind & 0x0f))
        }
        0xdc => (true, input.length::<2>()?),
        0xdd => (true, input.length::<4>()?),
        0x80..=0x8f => {
            input.take(1)?;
            (false, usize::from(kind & 0x0f))
        }
        0xde => (false, input.length::<2>()?),
        0xdf => (false, input.length::<4>()?),
        _ => return Err(Failure::positioned(BAD_FORMAT)),
    };
    ffi::lua_newtable(l);
    if !is_array {
        return Ok((len > 0).then_some(OpenTable::Map {
            left: len,
            key_read: false,
        }));
    }
    ensure_stack(l, 1, "in function mp_decode_to_lua_array")?;
    if len == 0 {
        return Ok(None);
    }
    ffi::lua_pushnumber(l, 1.0);
    Ok(Some(OpenTable::Array {
        left: len,
        index: 1,
    }))
}

unsafe fn push_string(l: *mut lua_State, bytes: &[u8]) -> Result<Option<OpenTable>, Failure> {
    push_bytes(l, bytes);
    Ok(None)
}

/// The errors `lua_settable` would raise for a key that cannot index a table.
unsafe fn check_key(l: *mut lua_State, index: c_int) -> Result<(), Failure> {
    match ffi::lua_type(l, index) {
        ffi::LUA_TNIL => Err(Failure::Bare(b"table index is nil".to_vec())),
        ffi::LUA_TNUMBER if ffi::lua_tonumber(l, index).is_nan() => {
            Err(Failure::Bare(b"table index is NaN".to_vec()))
        }
        _ => Ok(()),
    }
}

/// Decodes up to `limit` values from byte `offset` on (everything when both are 0).
/// When not decoding everything, the offset to resume from (-1 at the end) comes
/// first.
unsafe fn unpack_from(l: *mut lua_State, limit: c_int, offset: c_int) -> Outcome {
    let data = bytes_arg(l, 1)?;
    let decode_all = limit == 0 && offset == 0;
    if offset < 0 || limit < 0 {
        return Err(Failure::positioned(format!(
            "Invalid request to unpack with offset of {offset} and limit of {}.",
            data.len() as c_int
        )));
    }
    if offset as usize > data.len() {
        return Err(Failure::positioned(format!(
            "Start offset {offset} greater than input length {}.",
            data.len() as c_int
        )));
    }
    let limit = if decode_all { c_int::MAX } else { limit };
    let mut input = Cursor {
        rest: &data[offset as usize..],
    };
    let mut count = 0;
    while !input.rest.is_empty() && count < limit {
        decode_value(l, &mut input)?;
        count += 1;
    }
    if !decode_all {
        ensure_stack(l, 1, "in function mp_unpack_full")?;
        let next = if input.rest.is_empty() {
            -1
        } else {
            (data.len() - input.rest.len()) as i64
        };
        ffi::lua_pushinteger(l, next);
        ffi::lua_insert(l, 2);
        count += 1;
    }
    Ok(count)
}

/// `cmsgpack.unpack(data)`: every value in `data`.
unsafe fn unpack(l: *mut lua_State) -> Outcome {
    unpack_from(l, 0, 0)
}

/// Drops the arguments after the first (without making up one when there is none).
unsafe fn keep_first_argument(l: *mut lua_State) {
    ffi::lua_settop(l, ffi::lua_gettop(l).min(1));
}

/// `cmsgpack.unpack_one(data [, offset])`: the next offset and one value.
unsafe fn unpack_one(l: *mut lua_State) -> Outcome {
    let offset = integer_arg(l, 2, Some(0))? as c_int;
    keep_first_argument(l);
    unpack_from(l, 1, offset)
}

/// `cmsgpack.unpack_limit(data, limit [, offset])`: the next offset and up to
/// `limit` values.
unsafe fn unpack_limit(l: *mut lua_State) -> Outcome {
    let limit = integer_arg(l, 2, None)? as c_int;
    let offset = integer_arg(l, 3, Some(0))? as c_int;
    keep_first_argument(l);
    unpack_from(l, limit, offset)
}

lua_functions! {
    pack_entry => pack,
    unpack_entry => unpack,
    unpack_one_entry => unpack_one,
    unpack_limit_entry => unpack_limit,
    open => open_library,
}

/// Sets the global `cmsgpack`, with the original's descriptive fields.
unsafe fn open_library(l: *mut lua_State) -> Outcome {
    register(
        l,
        c"cmsgpack",
        &[
            (c"pack", pack_entry),
            (c"unpack", unpack_entry),
            (c"unpack_one", unpack_one_entry),
            (c"unpack_limit", unpack_limit_entry),
        ],
    );
    set_string_field(l, c"_NAME", "cmsgpack");
    set_string_field(l, c"_VERSION", "lua-cmsgpack 0.4.0");
    set_string_field(l, c"_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo");
    set_string_field(l, c"_DESCRIPTION", "MessagePack C implementation for Lua");
    Ok(1)
}
