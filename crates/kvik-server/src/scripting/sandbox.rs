//! A new Lua state with Redis's libraries and sandbox, and calls into it.
//!
//! Scripts get the base library (less its file and module functions; with Lua 5.1's
//! `coroutine`), `table`, `string`, `math`, and the libraries [`load_libraries`] adds; every
//! global and library table is read-only to them, so nothing one script does can leak
//! into the next. The Lua half of the sandbox and of the `redis` table lives in
//! `prelude.lua`; `redis.call`, `redis.pcall`, `redis.setresp` and `redis.set_repl`
//! are C functions in [`super::call`], and the parts that need Rust (SHA1, the log, error normalising)
//! are plain functions here. [`Sandbox::call`] runs a script, a function or a
//! library's code under the prelude's error handler.
//!
//! Code is only ever loaded as source text. Lua 5.1 would take a precompiled chunk
//! (one starting with the `ESC` byte `string.dump` writes) anywhere code is loaded, and
//! its undumper trusts the bytecode it reads, which is a known way out of any
//! sandbox. Redis's Lua hands such a chunk to the parser instead, which stops at the
//! `ESC` ("unexpected symbol near 'char(27)'"); kvik does the same with
//! [`text_chunk`] for scripts and libraries and with its own `loadstring` and `load`.

use super::call;
use super::convert::error_table_text;
use super::stack::Stack;
use crate::logging::{self, Level};
use mlua::ffi::{self, lua_State};
use mlua::{Function, Lua, LuaOptions, RegistryKey, StdLib, Table, Value};
use std::borrow::Cow;
use std::ffi::{c_char, c_int, c_void, CStr};

const PRELUDE: &str = include_str!("prelude.lua");
/// The prelude's chunk name, which Lua reports as the source of its functions.
pub const PRELUDE_NAME: &CStr = c"=kvik";

/// What the engine keeps of a state's prelude.
pub struct Sandbox {
    pub lua: Lua,
    /// The read-only view scripts run in.
    pub script_env: Table,
    /// The view library code runs in (its `redis` is restricted while it loads).
    pub library_env: Table,
    pub bridge: Table,
    pinned: Pinned,
    /// Runs since the collector last took a step.
    runs_since_gc: std::cell::Cell<u32>,
}

/// What every run pushes, kept in the Lua registry: reading one there is a single
/// array read, cheaper than moving an mlua handle over or interning a name.
struct Pinned {
    /// Turns an error into the table a script's error reply is made of, with the
    /// place in the script where it happened.
    error_handler: RegistryKey,
    /// The real globals table behind the read-only view (KEYS and ARGV go here).
    globals: RegistryKey,
    keys_name: RegistryKey,
    argv_name: RegistryKey,
}

/// What a called chunk gets.
pub enum Inputs<'i> {
    /// Nothing: a library's code.
    Nothing,
    /// An EVAL script: its keys and arguments as the globals KEYS and ARGV.
    Globals {
        keys: &'i [&'i [u8]],
        argv: &'i [&'i [u8]],
    },
    /// A function: its keys and arguments as its two parameters.
    Parameters {
        keys: &'i [&'i [u8]],
        argv: &'i [&'i [u8]],
    },
}

/// Adds the libraries Redis bundles besides Lua's own (cjson, cmsgpack, bit, struct)
/// to a new state's globals; the sandbox then makes them read-only with the rest.
pub fn load_libraries(lua: &Lua) -> mlua::Result<()> {
    super::libs::open_all(lua)
}

pub fn new_sandbox() -> mlua::Result<Sandbox> {
    let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG;
    // Rust panics do not cross into Lua here (callbacks catch nothing Lua could), and
    // scripts need Lua's own pcall, which the prelude wraps as Redis does.
    let options = LuaOptions::new().catch_rust_panics(false);
    // The debug library is only handed to the prelude (for error positions); it is
    // removed from the globals before any script runs.
    let lua = unsafe { Lua::unsafe_new_with(libs, options) };
    let globals = lua.globals();
    for name in [
        "dofile", "loadfile", "print", "getfenv", "setfenv", "module", "require", "newproxy",
    ] {
        globals.raw_set(name, mlua::Value::Nil)?;
    }
    globals.raw_set("package", mlua::Value::Nil)?;
    // SAFETY: both work only on the Lua stack they are given (see their comments).
    unsafe {
        globals.raw_set("loadstring", lua.create_c_function(text_loadstring)?)?;
        globals.raw_set("load", lua.create_c_function(text_load)?)?;
        globals.raw_set("getmetatable", lua.create_c_function(shown_metatable)?)?;
    }
    load_libraries(&lua)?;
    globals.raw_set("redis", redis_table(&lua)?)?;
    let c_functions = lua.create_table()?;
    for (name, c_function) in TRAMPOLINES.iter().chain(NATIVE) {
        // SAFETY: each only works on the Lua stack it was given (see `super::call`
        // for the native ones).
        c_functions.raw_set(*name, unsafe { lua.create_c_function(*c_function)? })?;
    }
    let prelude: Table = lua
        .load(PRELUDE)
        .set_name(PRELUDE_NAME.to_str().expect("ASCII"))
        .call((
            globals.clone(),
            c_functions,
            mlua::LightUserData(no_metatable()),
        ))?;
    let implementations: Table = prelude.get("impl")?;
    for (name, _) in TRAMPOLINES {
        let f: Function = implementations.get(*name)?;
        lua.set_named_registry_value(&registry_key(name), f)?;
    }
    let script_env: Table = prelude.get("globals")?;
    lua.set_globals(script_env.clone())?;
    let pinned = Pinned {
        error_handler: lua.create_registry_value(prelude.get::<Function>("error_handler")?)?,
        globals: lua.create_registry_value(globals)?,
        keys_name: lua.create_registry_value("KEYS")?,
        argv_name: lua.create_registry_value("ARGV")?,
    };
    Ok(Sandbox {
        script_env,
        library_env: prelude.get("library_globals")?,
        bridge: prelude.get("bridge")?,
        pinned,
        runs_since_gc: std::cell::Cell::new(0),
        lua,
    })
}

impl Sandbox {
    /// Calls `f` with `inputs` under the error handler: `Ok(Ok(result))`, or
    /// `Ok(Err(error))` with the handler's error table (or, should the handler itself
    /// fail, Lua's message). Works on the stack directly: this is every script's way
    /// in, and mlua's call would cost a reference for each value passed.
    ///
    /// `f` is kept in the registry, not held as an mlua handle: every live handle
    /// takes a slot of mlua's reference stack, which Lua 5.1 caps at 8000, so a cache
    /// of thousands of scripts held as handles would leave no room for anything else.
    pub fn call(&self, f: &RegistryKey, inputs: Inputs) -> mlua::Result<Result<Value, Value>> {
        let pinned = &self.pinned;
        self.lua.exec_raw_lua(|raw| unsafe {
            let stack = Stack::new(raw.state());
            let base = stack.top();
            let called = (|| {
                if !stack.ensure(8) {
                    return Err(mlua::Error::StackError);
                }
                stack.push_registered(&pinned.error_handler);
                stack.push_registered(f);
                let args = match inputs {
                    Inputs::Nothing => 0,
                    Inputs::Globals { keys, argv } => {
                        stack.push_registered(&pinned.globals);
                        let globals = stack.top();
                        stack.push_registered(&pinned.keys_name);
                        push_strings(stack, keys);
                        stack.set_pair(globals);
                        stack.push_registered(&pinned.argv_name);
                        push_strings(stack, argv);
                        stack.set_pair(globals);
                        stack.set_top(globals - 1);
                        0
                    }
                    Inputs::Parameters { keys, argv } => {
                        push_strings(stack, keys);
                        push_strings(stack, argv);
                        2
                    }
                };
                let status = mlua::ffi::lua_pcall(stack.state(), args, 1, base + 1);
                let value = raw.pop_value();
                self.collect_garbage_now_and_then(stack);
                Ok(if status == 0 { Ok(value) } else { Err(value) })
            })();
            stack.set_top(base);
            called
        })
    }
}

impl Sandbox {
    /// Redis's pacing of the collector: every [`GC_PERIOD`] runs, that many steps of
    /// collection. Left to itself, Lua lets garbage grow to twice the live memory
    /// before it collects, so each run's leftovers (KEYS, ARGV, replies) pile up in
    /// `used_memory_lua`; small steps often keep the state near its live size.
    fn collect_garbage_now_and_then(&self, stack: Stack) {
        let runs = self.runs_since_gc.get() + 1;
        if runs < GC_PERIOD {
            self.runs_since_gc.set(runs);
            return;
        }
        self.runs_since_gc.set(0);
        // SAFETY: the state is this sandbox's, in use by this thread only.
        unsafe { ffi::lua_gc(stack.state(), ffi::LUA_GCSTEP, GC_PERIOD as c_int) };
    }
}

/// How many runs go between two collection steps, and how big each is
/// (Redis's LUA_GC_CYCLE_PERIOD).
const GC_PERIOD: u32 = 50;

/// Pushes a Lua array of byte strings (KEYS, ARGV).
fn push_strings(stack: Stack, items: &[&[u8]]) {
    stack.push_table(items.len(), 0);
    let table = stack.top();
    for (i, item) in items.iter().enumerate() {
        stack.push_bytes(item);
        stack.set_index(table, i + 1);
    }
}

/// The members of `redis` that are C functions working on the Lua stack themselves.
const NATIVE: &[(&str, mlua::lua_CFunction)] = &[
    ("call", call::redis_call),
    ("pcall", call::redis_pcall),
    ("setresp", call::redis_setresp),
    ("set_repl", call::redis_set_repl),
];

/// The members of `redis` written in Lua are reached through C functions: Lua turns
/// `return redis.log(...)` into a tail call, which would erase the script's frame and
/// with it the line an error reply names; a C function keeps it, as Redis's own C
/// implementations do.
const TRAMPOLINES: &[(&str, mlua::lua_CFunction)] =
    &[("log", trampoline_log), ("sha1hex", trampoline_sha1hex)];

fn registry_key(name: &str) -> String {
    format!("kvik.redis.{name}")
}

macro_rules! trampoline {
    ($fn_name:ident, $key:literal) => {
        unsafe extern "C-unwind" fn $fn_name(state: *mut mlua::lua_State) -> std::ffi::c_int {
            forward(state, $key)
        }
    };
}

trampoline!(trampoline_log, c"kvik.redis.log");
trampoline!(trampoline_sha1hex, c"kvik.redis.sha1hex");

/// Calls the Lua function registered under `key` with this call's arguments and
/// returns all its results; its errors pass through.
///
/// # Safety
/// `state` is the Lua state calling this C function.
unsafe fn forward(state: *mut mlua::lua_State, key: &std::ffi::CStr) -> std::ffi::c_int {
    use mlua::ffi;
    let argc = ffi::lua_gettop(state);
    ffi::lua_getfield(state, ffi::LUA_REGISTRYINDEX, key.as_ptr());
    ffi::lua_insert(state, 1);
    ffi::lua_call(state, argc, ffi::LUA_MULTRET);
    ffi::lua_gettop(state)
}

/// The Rust-made members of `redis`; the prelude wraps some of them with Redis's
/// argument checks.
fn redis_table(lua: &Lua) -> mlua::Result<Table> {
    let redis = lua.create_table()?;
    redis.raw_set("REDIS_VERSION", crate::version::REDIS_VERSION)?;
    redis.raw_set(
        "REDIS_VERSION_NUM",
        version_num(crate::version::REDIS_VERSION),
    )?;
    redis.raw_set(
        "sha1hex",
        lua.create_function(|_, data: mlua::LuaString| Ok(super::sha1_hex(&data.as_bytes())))?,
    )?;
    redis.raw_set(
        "error_reply",
        lua.create_function(|_, text: mlua::LuaString| {
            let text = text.as_bytes();
            let dashed = if text.first() == Some(&b'-') {
                text.to_vec()
            } else {
                [b"-", &text[..]].concat()
            };
            Ok(error_table_text(&dashed))
        })?,
    )?;
    redis.raw_set(
        "log",
        lua.create_function(|_, (level, text): (u8, mlua::LuaString)| {
            let level = match level {
                0 => Level::Debug,
                1 => Level::Verbose,
                2 => Level::Notice,
                _ => Level::Warning,
            };
            logging::log(level, &String::from_utf8_lossy(&text.as_bytes()));
            Ok(())
        })?,
    )?;
    Ok(redis)
}

/// `7.0.15` -> 0x07000f, as REDIS_VERSION_NUM.
fn version_num(version: &str) -> i64 {
    version
        .split('.')
        .take(3)
        .fold(0, |n, part| (n << 8) | part.parse::<i64>().unwrap_or(0))
}

/// The first byte of a precompiled Lua chunk.
const BINARY_MARK: u8 = 0x1b;

/// `source` as Lua must see it so that it is parsed, never undumped: Lua decides by
/// the first byte alone, so one leading space before a chunk that starts with the
/// binary mark makes the parser read it, and the parser then fails on the mark as
/// Redis's does (a space before the first token changes no line number).
pub fn text_chunk(source: &[u8]) -> Cow<'_, [u8]> {
    if source.first() == Some(&BINARY_MARK) {
        Cow::Owned([b" ", source].concat())
    } else {
        Cow::Borrowed(source)
    }
}

/// What [`text_reader`] hands Lua's loader: `chunk`, once, after a space when it
/// starts with the binary mark (see [`text_chunk`]).
struct TextPieces {
    /// Read a piece from the script's reader function (`load`) rather than `chunk`.
    from_reader: bool,
    /// The next piece is the first one.
    first: bool,
    /// A piece still to hand over: after the space, the piece that made it needed.
    pending: Option<(*const c_char, usize)>,
}

/// A `lua_Reader` for [`text_loadstring`] and [`text_load`].
///
/// # Safety
/// Called by `lua_load` with a `TextPieces` that outlives the load; for `load`, the
/// reader function is at index 1 and index 3 is free to keep the latest piece alive.
unsafe extern "C-unwind" fn text_reader(
    state: *mut lua_State,
    data: *mut c_void,
    size: *mut usize,
) -> *const c_char {
    let pieces = &mut *data.cast::<TextPieces>();
    if let Some((piece, len)) = pieces.pending.take() {
        *size = len;
        return piece;
    }
    let (piece, len) = if pieces.from_reader {
        match next_piece(state) {
            Some(piece) => piece,
            None => {
                *size = 0;
                return std::ptr::null();
            }
        }
    } else if pieces.first {
        // `loadstring`'s whole chunk is its first argument.
        let mut len = 0;
        (ffi::lua_tolstring(state, 1, &mut len), len)
    } else {
        *size = 0;
        return std::ptr::null();
    };
    let first = std::mem::replace(&mut pieces.first, false);
    if first && len > 0 && *piece as u8 == BINARY_MARK {
        pieces.pending = Some((piece, len));
        *size = 1;
        return c" ".as_ptr();
    }
    *size = len;
    piece
}

/// Calls `load`'s reader function (index 1) for the next piece, as Lua 5.1's own
/// `load` does: nil (or an empty string) ends the chunk, and anything but a string is
/// an error. The piece is kept at index 3 while Lua reads it.
///
/// # Safety
/// As [`text_reader`]; the errors raised unwind over no Rust value that needs dropping.
unsafe fn next_piece(state: *mut lua_State) -> Option<(*const c_char, usize)> {
    ffi::luaL_checkstack_(state, 2, c"too many nested functions".as_ptr());
    ffi::lua_pushvalue(state, 1);
    ffi::lua_call(state, 0, 1);
    if ffi::lua_isnil(state, -1) != 0 {
        ffi::lua_pop(state, 1);
        return None;
    }
    if ffi::lua_isstring(state, -1) == 0 {
        ffi::luaL_error(state, c"reader function must return a string".as_ptr());
    }
    ffi::lua_replace(state, 3);
    let mut len = 0;
    let piece = ffi::lua_tolstring(state, 3, &mut len);
    (len > 0).then_some((piece, len))
}

/// The function `lua_load` made, or nil and its error message.
///
/// # Safety
/// Right after `lua_load` on `state`.
unsafe fn loaded(state: *mut lua_State, status: c_int) -> c_int {
    if status == 0 {
        return 1;
    }
    ffi::lua_pushnil(state);
    ffi::lua_insert(state, -2);
    2
}

/// What the prelude sets as the `__metatable` of a read-only table that shows no
/// metatable (a value no script can make or reach: scripts have no light userdata).
fn no_metatable() -> *mut c_void {
    static NO_METATABLE: u8 = 0;
    std::ptr::addr_of!(NO_METATABLE).cast_mut().cast()
}

/// `getmetatable(v)`: Lua 5.1's, arguments and errors alike, except that a read-only
/// table whose `__metatable` is [`no_metatable`] shows none, as Redis's read-only
/// library tables have none (kvik's are proxies, whose own metatable stays hidden).
///
/// # Safety
/// Called by Lua, as a C function.
unsafe extern "C-unwind" fn shown_metatable(state: *mut lua_State) -> c_int {
    ffi::luaL_checkany(state, 1);
    if ffi::lua_getmetatable(state, 1) == 0 {
        ffi::lua_pushnil(state);
        return 1;
    }
    ffi::lua_pushstring(state, c"__metatable".as_ptr());
    ffi::lua_rawget(state, -2);
    match ffi::lua_type(state, -1) {
        // No `__metatable`: the metatable itself.
        ffi::LUA_TNIL => ffi::lua_pop(state, 1),
        ffi::LUA_TLIGHTUSERDATA if ffi::lua_touserdata(state, -1) == no_metatable() => {
            ffi::lua_pushnil(state)
        }
        _ => {}
    }
    1
}

/// `loadstring(s [, chunkname])`: Lua 5.1's, arguments and errors alike, except that
/// `s` is always source text.
///
/// # Safety
/// Called by Lua, as a C function.
unsafe extern "C-unwind" fn text_loadstring(state: *mut lua_State) -> c_int {
    let source = ffi::luaL_checklstring(state, 1, std::ptr::null_mut());
    // Named after the code itself unless told otherwise, as in Lua.
    let name = ffi::luaL_optlstring(state, 2, source, std::ptr::null_mut());
    let mut pieces = TextPieces {
        from_reader: false,
        first: true,
        pending: None,
    };
    let data = std::ptr::from_mut(&mut pieces).cast::<c_void>();
    loaded(state, ffi::lua_load(state, text_reader, data, name))
}

/// `load(reader [, chunkname])`: Lua 5.1's, arguments and errors alike, except that
/// what `reader` returns is always source text.
///
/// # Safety
/// Called by Lua, as a C function.
unsafe extern "C-unwind" fn text_load(state: *mut lua_State) -> c_int {
    let name = ffi::luaL_optlstring(state, 2, c"=(load)".as_ptr(), std::ptr::null_mut());
    ffi::luaL_checktype(state, 1, ffi::LUA_TFUNCTION);
    // The reader, the name, and a slot for the piece being read.
    ffi::lua_settop(state, 3);
    let mut pieces = TextPieces {
        from_reader: true,
        first: true,
        pending: None,
    };
    let data = std::ptr::from_mut(&mut pieces).cast::<c_void>();
    loaded(state, ffi::lua_load(state, text_reader, data, name))
}
