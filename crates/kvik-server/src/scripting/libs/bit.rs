//! `bit`: 32-bit bitwise operations on Lua 5.1 numbers, as LuaBitOp 1.0 gives them.
//!
//! Every argument is reduced to 32 bits the way LuaBitOp does: rounded to the nearest
//! integer (ties to even) and taken modulo 2^32; every result is the signed 32-bit
//! value of the bits, so `bit.tobit(2^31)` is `-2147483648`.

use std::ffi::c_int;

use mlua::ffi::{self, lua_State};

use super::{lua_functions, push_bytes, register, type_error, Failure, Outcome};

/// Adding 2^52 + 2^51 to a double whose magnitude is below 2^51 leaves the integer
/// nearest to it (ties to even) in the low bits of the mantissa: the reduction every
/// LuaBitOp argument goes through, kept as is so huge or odd inputs agree too.
const ROUNDING_BIAS: f64 = 6_755_399_441_055_744.0;

fn to_bits(x: f64) -> u32 {
    (x + ROUNDING_BIAS).to_bits() as u32
}

/// The 32 bits of argument `arg`. Like LuaBitOp, only a zero result is checked for
/// not being a number at all: anything else that converts is taken.
unsafe fn bits_arg(l: *mut lua_State, arg: c_int) -> Result<u32, Failure> {
    let bits = to_bits(ffi::lua_tonumber(l, arg));
    if bits == 0 && ffi::lua_isnumber(l, arg) == 0 {
        return Err(type_error(l, arg, "number"));
    }
    Ok(bits)
}

unsafe fn push_bits(l: *mut lua_State, bits: u32) -> Outcome {
    ffi::lua_pushnumber(l, bits as i32 as f64);
    Ok(1)
}

unsafe fn tobit(l: *mut lua_State) -> Outcome {
    push_bits(l, bits_arg(l, 1)?)
}

unsafe fn bnot(l: *mut lua_State) -> Outcome {
    push_bits(l, !bits_arg(l, 1)?)
}

unsafe fn bswap(l: *mut lua_State) -> Outcome {
    push_bits(l, bits_arg(l, 1)?.swap_bytes())
}

/// Folds every argument into the first with `op`, reading them from the last one
/// down to the second, which decides which bad argument is reported first.
unsafe fn fold(l: *mut lua_State, op: fn(u32, u32) -> u32) -> Outcome {
    let mut bits = bits_arg(l, 1)?;
    for arg in (2..=ffi::lua_gettop(l)).rev() {
        bits = op(bits, bits_arg(l, arg)?);
    }
    push_bits(l, bits)
}

unsafe fn band(l: *mut lua_State) -> Outcome {
    fold(l, |a, b| a & b)
}

unsafe fn bor(l: *mut lua_State) -> Outcome {
    fold(l, |a, b| a | b)
}

unsafe fn bxor(l: *mut lua_State) -> Outcome {
    fold(l, |a, b| a ^ b)
}

/// Applies a shift or rotation by the second argument taken modulo 32.
unsafe fn shift(l: *mut lua_State, op: fn(u32, u32) -> u32) -> Outcome {
    let bits = bits_arg(l, 1)?;
    let count = bits_arg(l, 2)? & 31;
    push_bits(l, op(bits, count))
}

unsafe fn lshift(l: *mut lua_State) -> Outcome {
    shift(l, |b, n| b << n)
}

unsafe fn rshift(l: *mut lua_State) -> Outcome {
    shift(l, |b, n| b >> n)
}

unsafe fn arshift(l: *mut lua_State) -> Outcome {
    shift(l, |b, n| ((b as i32) >> n) as u32)
}

unsafe fn rol(l: *mut lua_State) -> Outcome {
    shift(l, u32::rotate_left)
}

unsafe fn ror(l: *mut lua_State) -> Outcome {
    shift(l, u32::rotate_right)
}

/// `bit.tohex(x [, n])`: the low `|n|` hex digits of `x` (8 at most, 8 by default),
/// upper case when `n` is negative.
unsafe fn tohex(l: *mut lua_State) -> Outcome {
    let mut bits = bits_arg(l, 1)?;
    let requested = if ffi::lua_isnone(l, 2) != 0 {
        8
    } else {
        bits_arg(l, 2)? as i32
    };
    let digits: &[u8; 16] = if requested < 0 {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let width = requested.unsigned_abs().min(8) as usize;
    let mut text = [0u8; 8];
    for slot in text[..width].iter_mut().rev() {
        *slot = digits[(bits & 15) as usize];
        bits >>= 4;
    }
    push_bytes(l, &text[..width]);
    Ok(1)
}

lua_functions! {
    tobit_entry => tobit,
    bnot_entry => bnot,
    band_entry => band,
    bor_entry => bor,
    bxor_entry => bxor,
    lshift_entry => lshift,
    rshift_entry => rshift,
    arshift_entry => arshift,
    rol_entry => rol,
    ror_entry => ror,
    bswap_entry => bswap,
    tohex_entry => tohex,
    open => open_library,
}

unsafe fn open_library(l: *mut lua_State) -> Outcome {
    register(
        l,
        c"bit",
        &[
            (c"tobit", tobit_entry),
            (c"bnot", bnot_entry),
            (c"band", band_entry),
            (c"bor", bor_entry),
            (c"bxor", bxor_entry),
            (c"lshift", lshift_entry),
            (c"rshift", rshift_entry),
            (c"arshift", arshift_entry),
            (c"rol", rol_entry),
            (c"ror", ror_entry),
            (c"bswap", bswap_entry),
            (c"tohex", tohex_entry),
        ],
    );
    Ok(1)
}
