//! The libraries Redis 7.0 gives scripts besides Lua's own: `cjson`, `cmsgpack`, `bit`
//! and `struct`, each behaving like the version bundled with Redis 7.0.15.
//!
//! They are written as C functions over the raw Lua API (through mlua's `ffi`) rather
//! than as mlua callbacks, because scripts observe details that only the raw API gives
//! for free: errors are plain strings carrying the caller's position (`luaL_error`),
//! argument errors name the function the way the caller spelled it (`luaL_argerror`),
//! and stack limits fail at the same depth as the originals.
//!
//! The one rule every function here follows: a Lua error unwinds the C stack with
//! `longjmp`, which skips Rust destructors. So the functions never raise errors
//! themselves: they return a [`Failure`], which [`run`] raises once their frames are
//! gone (only an allocation failure inside the Lua API can still unwind through them,
//! leaking what they hold).

mod bit;
mod cjson;
mod cmsgpack;
mod structlib;

use std::ffi::{c_char, c_int, CStr};

use mlua::ffi::{self, lua_State};

/// Opens the four libraries and sets the globals `cjson`, `cmsgpack`, `bit` and `struct`.
pub fn open_all(lua: &mlua::Lua) -> mlua::Result<()> {
    let openers: [ffi::lua_CFunction; 4] =
        [cjson::open, cmsgpack::open, bit::open, structlib::open];
    for open in openers {
        // SAFETY: each opener is a well-behaved C function over the Lua API.
        let function = unsafe { lua.create_c_function(open)? };
        function.call::<()>(())?;
    }
    Ok(())
}

/// The most stack slots a C function may use, as in Lua 5.1 (`LUAI_MAXCSTACK`):
/// the libraries fail with the same "stack overflow" errors as the originals.
const MAX_C_STACK: c_int = 8000;

/// Why a library function gives up; [`run`] raises it as a Lua error.
#[derive(Debug)]
pub(crate) enum Failure {
    /// A message prefixed with the caller's position, like `luaL_error`.
    Positioned(Vec<u8>),
    /// A message without a position, like the errors the Lua core raises itself
    /// ("table index is nil").
    Bare(Vec<u8>),
    /// "bad argument #n to 'name' (message)", like `luaL_argerror`.
    Argument(c_int, Vec<u8>),
}

impl Failure {
    pub(crate) fn positioned(message: impl Into<Vec<u8>>) -> Self {
        Failure::Positioned(message.into())
    }

    pub(crate) fn argument(arg: c_int, message: impl Into<Vec<u8>>) -> Self {
        Failure::Argument(arg, message.into())
    }
}

/// What a library function's body returns: the number of results it pushed.
pub(crate) type Outcome = Result<c_int, Failure>;

/// Runs a library function's body and raises its failure, if any, after the body's
/// Rust frames (and whatever they owned) are gone. A panic, which would otherwise
/// unwind through Lua's C frames, becomes a Lua error too.
pub(crate) unsafe fn run(l: *mut lua_State, body: impl FnOnce() -> Outcome) -> c_int {
    let outcome = crate::crash::recover(body)
        .unwrap_or_else(|| Err(Failure::positioned("internal error in a scripting library")));
    match outcome {
        Ok(results) => results,
        Err(failure) => raise(l, failure),
    }
}

/// Raises `failure` as a Lua error; never returns.
unsafe fn raise(l: *mut lua_State, failure: Failure) -> c_int {
    // The failure may come from a full stack; what is on it is no longer needed.
    ffi::lua_settop(l, 0);
    match failure {
        Failure::Positioned(message) => {
            ffi::luaL_where(l, 1);
            push_bytes(l, &message);
            drop(message);
            ffi::lua_concat(l, 2);
        }
        Failure::Bare(message) => {
            push_bytes(l, &message);
            drop(message);
        }
        Failure::Argument(arg, message) => {
            push_bytes(l, &message);
            drop(message);
            return ffi::luaL_argerror(l, arg, ffi::lua_tostring(l, -1));
        }
    }
    ffi::lua_error(l)
}

/// Declares `unsafe extern "C-unwind"` entry points that run a body with [`run`].
macro_rules! lua_functions {
    ($($entry:ident => $body:path),* $(,)?) => {
        $(
            pub(super) unsafe extern "C-unwind" fn $entry(l: *mut mlua::ffi::lua_State) -> std::ffi::c_int {
                unsafe { $crate::scripting::libs::run(l, || $body(l)) }
            }
        )*
    };
}
pub(crate) use lua_functions;

/// Registers `functions` into the global table `name` (created if missing) and leaves
/// that table on the stack, as `luaL_register` does for the C originals.
pub(crate) unsafe fn register(
    l: *mut lua_State,
    name: &CStr,
    functions: &[(&CStr, ffi::lua_CFunction)],
) {
    // Only the end marker: `luaL_register` finds or makes the table and the global.
    let end = [ffi::luaL_Reg {
        name: std::ptr::null(),
        func: functions[0].1,
    }];
    ffi::luaL_register(l, name.as_ptr(), end.as_ptr());
    for &(field, function) in functions {
        ffi::lua_pushcfunction(l, function);
        ffi::lua_setfield(l, -2, field.as_ptr());
    }
}

/// Sets `table[key] = value` for the table on top of the stack.
pub(crate) unsafe fn set_string_field(l: *mut lua_State, key: &CStr, value: &str) {
    push_bytes(l, value.as_bytes());
    ffi::lua_setfield(l, -2, key.as_ptr());
}

pub(crate) unsafe fn push_bytes(l: *mut lua_State, bytes: &[u8]) {
    ffi::lua_pushlstring_(l, bytes.as_ptr() as *const c_char, bytes.len());
}

/// The bytes of the string (or number, converted in place) at `index`; `None` for
/// other types. Lua keeps a NUL after the bytes, which `with_nul` includes.
pub(crate) unsafe fn string_at<'a>(
    l: *mut lua_State,
    index: c_int,
    with_nul: bool,
) -> Option<&'a [u8]> {
    let mut len = 0usize;
    let ptr = ffi::lua_tolstring(l, index, &mut len);
    if ptr.is_null() {
        return None;
    }
    Some(std::slice::from_raw_parts(
        ptr as *const u8,
        len + with_nul as usize,
    ))
}

/// "bad argument #arg to 'f' (expected expected, got type)", like `luaL_typerror`.
pub(crate) unsafe fn type_error(l: *mut lua_State, arg: c_int, expected: &str) -> Failure {
    let got = CStr::from_ptr(ffi::luaL_typename(l, arg)).to_bytes();
    Failure::Argument(arg, [expected.as_bytes(), b" expected, got ", got].concat())
}

/// `luaL_checklstring`, failing without raising: the string (or number, converted
/// in place) argument at `arg`.
pub(crate) unsafe fn bytes_arg<'a>(l: *mut lua_State, arg: c_int) -> Result<&'a [u8], Failure> {
    string_at(l, arg, false).ok_or_else(|| type_error(l, arg, "string"))
}

/// `luaL_checknumber`, failing without raising.
pub(crate) unsafe fn number_arg(l: *mut lua_State, arg: c_int) -> Result<f64, Failure> {
    let number = ffi::lua_tonumber(l, arg);
    if number == 0.0 && ffi::lua_isnumber(l, arg) == 0 {
        return Err(type_error(l, arg, "number"));
    }
    Ok(number)
}

/// `luaL_checkinteger` (or `luaL_optinteger` with a `default` for none or nil),
/// failing without raising.
pub(crate) unsafe fn integer_arg(
    l: *mut lua_State,
    arg: c_int,
    default: Option<i64>,
) -> Result<i64, Failure> {
    if let Some(default) = default.filter(|_| ffi::lua_isnoneornil(l, arg) != 0) {
        return Ok(default);
    }
    let integer = ffi::lua_tointeger_(l, arg);
    if integer == 0 && ffi::lua_isnumber(l, arg) == 0 {
        return Err(type_error(l, arg, "number"));
    }
    Ok(integer)
}

/// Whether the running C function may push `extra` more values: Lua 5.1's
/// `lua_checkstack`, whose limit the libraries run into at the same depths as the
/// originals.
pub(crate) unsafe fn stack_has_room(l: *mut lua_State, extra: c_int) -> bool {
    ffi::lua_gettop(l) + extra <= MAX_C_STACK && ffi::lua_checkstack(l, extra) != 0
}

/// `luaL_checkstack`, failing without raising: "stack overflow (what)".
pub(crate) unsafe fn ensure_stack(
    l: *mut lua_State,
    extra: c_int,
    what: &str,
) -> Result<(), Failure> {
    if stack_has_room(l, extra) {
        Ok(())
    } else {
        Err(Failure::positioned(format!("stack overflow ({what})")))
    }
}

/// C's `(int64_t)x` on x86-64: truncation, and `i64::MIN` for NaN or out of range
/// values (where Rust's `as` would saturate).
pub(crate) fn c_double_to_i64(x: f64) -> i64 {
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&x) {
        x as i64
    } else {
        i64::MIN
    }
}

/// C's `(int)x` on x86-64: truncation, and `i32::MIN` for NaN or out of range values.
pub(crate) fn c_double_to_i32(x: f64) -> i32 {
    if (-2_147_483_648.0..2_147_483_648.0).contains(&x) {
        x as i32
    } else {
        i32::MIN
    }
}

/// `snprintf("%.*g")`: the way the C libraries print numbers.
pub(crate) fn format_g(x: f64, precision: c_int) -> Vec<u8> {
    let mut buf = [0u8; 64];
    // SAFETY: the format takes exactly an int and a double, and `buf` is large
    // enough for any "%.14g" output (and snprintf truncates anyway).
    let written = unsafe {
        libc::snprintf(
            buf.as_mut_ptr() as *mut c_char,
            buf.len(),
            c"%.*g".as_ptr(),
            precision,
            x,
        )
    };
    buf[..(written.max(0) as usize).min(buf.len() - 1)].to_vec()
}
