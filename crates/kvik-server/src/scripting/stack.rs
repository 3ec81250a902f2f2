//! A typed view of a Lua stack, for the engine's hot path: running a script and the
//! `redis.*` members written as C functions. mlua's handles would cost a reference
//! slot per value; these are single Lua C API calls.
//!
//! None of them can raise a Lua error (which would unwind over Rust frames): the only
//! error they could meet is running out of memory, and the state's allocator (mlua's,
//! with no memory limit) aborts instead of failing. Table keys are never nil or NaN
//! here (callers check), which is the other way `lua_rawset` raises.

use mlua::ffi::{self, lua_State};
use std::ffi::c_int;

/// One Lua state's stack, as seen by the code running on it now.
#[derive(Clone, Copy)]
pub struct Stack(*mut lua_State);

impl Stack {
    /// # Safety
    /// `state` is a live Lua state that only this thread uses while the `Stack` is in
    /// use, and no Lua error is pending on it.
    pub unsafe fn new(state: *mut lua_State) -> Self {
        Stack(state)
    }

    pub fn state(self) -> *mut lua_State {
        self.0
    }

    /// The index of the top value (the number of values, in a C function).
    pub fn top(self) -> c_int {
        unsafe { ffi::lua_gettop(self.0) }
    }

    pub fn set_top(self, top: c_int) {
        unsafe { ffi::lua_settop(self.0, top) }
    }

    /// Makes room for `slots` more values; false when the stack cannot grow.
    pub fn ensure(self, slots: c_int) -> bool {
        unsafe { ffi::lua_checkstack(self.0, slots) != 0 }
    }

    pub fn type_at(self, at: c_int) -> c_int {
        unsafe { ffi::lua_type(self.0, at) }
    }

    /// The bytes of the string at `at` (None for other types). They belong to the
    /// Lua string, so they stay valid while that value stays on the stack.
    pub fn bytes<'s>(self, at: c_int) -> Option<&'s [u8]> {
        if self.type_at(at) != ffi::LUA_TSTRING {
            return None;
        }
        let mut len = 0;
        unsafe {
            let data = ffi::lua_tolstring(self.0, at, &mut len);
            Some(std::slice::from_raw_parts(data.cast(), len))
        }
    }

    /// The value at `at` as a number, as Lua converts it (0 when it is not one).
    pub fn number(self, at: c_int) -> f64 {
        unsafe { ffi::lua_tonumber(self.0, at) }
    }

    pub fn push_bytes(self, bytes: &[u8]) {
        // An empty slice may dangle; Lua copies from the pointer whatever the length.
        let data = if bytes.is_empty() {
            b"".as_ptr()
        } else {
            bytes.as_ptr()
        };
        unsafe { ffi::lua_pushlstring_(self.0, data.cast(), bytes.len()) }
    }

    pub fn push_number(self, n: f64) {
        unsafe { ffi::lua_pushnumber(self.0, n) }
    }

    pub fn push_bool(self, b: bool) {
        unsafe { ffi::lua_pushboolean(self.0, b as c_int) }
    }

    pub fn push_nil(self) {
        unsafe { ffi::lua_pushnil(self.0) }
    }

    /// Pushes the value `key` holds in the registry (the key must belong to this
    /// state).
    pub fn push_registered(self, key: &mlua::RegistryKey) {
        unsafe { ffi::lua_rawgeti_(self.0, ffi::LUA_REGISTRYINDEX, key.id()) }
    }

    /// Pushes a new table with room for `array` items and `fields` named fields.
    pub fn push_table(self, array: usize, fields: usize) {
        let size = |n: usize| c_int::try_from(n).unwrap_or(c_int::MAX);
        unsafe { ffi::lua_createtable(self.0, size(array), size(fields)) }
    }

    /// Moves the top value to `at`, shifting the values from there up.
    pub fn insert(self, at: c_int) {
        unsafe { ffi::lua_insert(self.0, at) }
    }

    /// Pops a value into the stack slot `at`.
    pub fn replace(self, at: c_int) {
        unsafe { ffi::lua_replace(self.0, at) }
    }

    /// Pops a value and stores it at `table[index]` (`table` an absolute index).
    pub fn set_index(self, table: c_int, index: usize) {
        let index = c_int::try_from(index).expect("reply arrays are shorter than 2^31");
        unsafe { ffi::lua_rawseti_(self.0, table, index) }
    }

    /// Pops a key and then a value pushed after it and stores `table[key] = value`
    /// (`table` an absolute index; the key is neither nil nor NaN).
    pub fn set_pair(self, table: c_int) {
        unsafe { ffi::lua_rawset(self.0, table) }
    }

    /// Pops a value and stores it at `table[name]` (`table` an absolute index).
    pub fn set_field(self, table: c_int, name: &[u8]) {
        self.push_bytes(name);
        self.insert(-2);
        self.set_pair(table);
    }

    /// Pushes a new table `{ [name] = text }`: the way Redis's conversions tag a
    /// status, an error or a RESP3 type.
    pub fn push_tagged(self, name: &[u8], text: &[u8]) {
        self.push_table(0, 1);
        let table = self.top();
        self.push_bytes(text);
        self.set_field(table, name);
    }
}
