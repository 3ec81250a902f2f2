//! `cjson`: JSON for Lua values, as lua-cjson 2.1.0 (the version bundled with Redis)
//! encodes and decodes it, errors and number formatting included.
//!
//! Encoding: a table whose keys are all positive integers is an array (holes become
//! `null`), unless it is "excessively sparse" (by default: largest key above 10 and
//! above twice the number of keys), which is an error; any other table, the empty
//! one too, is an object in `next` order, with number keys written as strings.
//! Numbers are printed with `%.14g`; `/` is escaped as `\/`. Decoding accepts what
//! `strtod` accepts for numbers (hex, `inf`, `nan` included) unless told otherwise,
//! and gives `null` as the `cjson.null` sentinel (a NULL light userdata).
//!
//! Every table made by `cjson.new()` has its own settings, kept in a userdata that
//! each of its functions holds as an upvalue.

use std::ffi::{c_char, c_int, CStr};

use mlua::ffi::{self, lua_State};

use super::{
    bytes_arg, c_double_to_i32, format_g, integer_arg, lua_functions, push_bytes, stack_has_room,
    string_at, Failure, Outcome,
};

/// What to do with NaN and infinities when encoding.
const INVALID_NUMBER_OPTIONS: [&[u8]; 3] = [b"off", b"on", b"null"];
const BOOLEAN_OPTIONS: [&[u8]; 2] = [b"off", b"on"];
const REFUSE_INVALID: c_int = 0;
const ALLOW_INVALID: c_int = 1;

/// The settings of one `cjson` table; plain data, living in a Lua userdata.
#[derive(Clone, Copy)]
struct Config {
    sparse_convert: c_int,
    sparse_ratio: c_int,
    sparse_safe: c_int,
    encode_max_depth: c_int,
    decode_max_depth: c_int,
    number_precision: c_int,
    keep_buffer: c_int,
    encode_invalid_numbers: c_int,
    decode_invalid_numbers: c_int,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            sparse_convert: 0,
            sparse_ratio: 2,
            sparse_safe: 10,
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            number_precision: 14,
            keep_buffer: 1,
            encode_invalid_numbers: REFUSE_INVALID,
            decode_invalid_numbers: 1,
        }
    }
}

/// The settings of the `cjson` table the running function belongs to.
unsafe fn config<'a>(l: *mut lua_State) -> &'a mut Config {
    &mut *(ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *mut Config)
}

// ---------------------------------------------------------------- settings

/// Checks a setting function's argument count, then pads the missing ones with nil.
unsafe fn setting_args<'a>(l: *mut lua_State, count: c_int) -> Result<&'a mut Config, Failure> {
    if ffi::lua_gettop(l) > count {
        return Err(Failure::argument(count + 1, "found too many arguments"));
    }
    ffi::lua_settop(l, count);
    Ok(config(l))
}

/// Sets `setting` from argument `arg` unless it is nil, then pushes the value in force.
unsafe fn integer_setting(
    l: *mut lua_State,
    arg: c_int,
    setting: &mut c_int,
    min: c_int,
    max: c_int,
) -> Result<(), Failure> {
    if ffi::lua_isnil(l, arg) == 0 {
        let value = integer_arg(l, arg, None)? as c_int;
        if !(min..=max).contains(&value) {
            // The original always blames the first argument here.
            return Err(Failure::argument(
                1,
                format!("expected integer between {min} and {max}"),
            ));
        }
        *setting = value;
    }
    ffi::lua_pushinteger(l, i64::from(*setting));
    Ok(())
}

/// Sets `setting` from argument `arg` (a boolean, or the name of one of `options`)
/// unless it is nil, then pushes the value in force: a boolean for off and on, the
/// option's name otherwise.
unsafe fn option_setting(
    l: *mut lua_State,
    arg: c_int,
    setting: &mut c_int,
    options: &[&[u8]],
) -> Result<(), Failure> {
    if ffi::lua_isnil(l, arg) == 0 {
        *setting = if ffi::lua_isboolean(l, arg) != 0 {
            ffi::lua_toboolean(l, arg)
        } else {
            let given = bytes_arg(l, arg)?;
            let name = given.split(|&b| b == 0).next().unwrap_or_default();
            match options.iter().position(|option| *option == name) {
                Some(index) => index as c_int,
                None => {
                    return Err(Failure::argument(
                        arg,
                        [b"invalid option '", name, b"'"].concat(),
                    ))
                }
            }
        };
    }
    match *setting {
        0 | 1 => ffi::lua_pushboolean(l, *setting),
        other => push_bytes(l, options[other as usize]),
    }
    Ok(())
}

/// `cjson.encode_sparse_array([convert [, ratio [, safe]]])`.
unsafe fn encode_sparse_array(l: *mut lua_State) -> Outcome {
    let config = setting_args(l, 3)?;
    option_setting(l, 1, &mut config.sparse_convert, &BOOLEAN_OPTIONS)?;
    integer_setting(l, 2, &mut config.sparse_ratio, 0, c_int::MAX)?;
    integer_setting(l, 3, &mut config.sparse_safe, 0, c_int::MAX)?;
    Ok(3)
}

unsafe fn encode_max_depth(l: *mut lua_State) -> Outcome {
    let config = setting_args(l, 1)?;
    integer_setting(l, 1, &mut config.encode_max_depth, 1, c_int::MAX)?;
    Ok(1)
}

unsafe fn decode_max_depth(l: *mut lua_State) -> Outcome {
    let config = setting_args(l, 1)?;
    integer_setting(l, 1, &mut config.decode_max_depth, 1, c_int::MAX)?;
    Ok(1)
}

unsafe fn encode_number_precision(l: *mut lua_State) -> Outcome {
    let config = setting_args(l, 1)?;
    integer_setting(l, 1, &mut config.number_precision, 1, 14)?;
    Ok(1)
}

unsafe fn encode_keep_buffer(l: *mut lua_State) -> Outcome {
    let config = setting_args(l, 1)?;
    option_setting(l, 1, &mut config.keep_buffer, &BOOLEAN_OPTIONS)?;
    Ok(1)
}

unsafe fn encode_invalid_numbers(l: *mut lua_State) -> Outcome {
    let config = setting_args(l, 1)?;
    option_setting(
        l,
        1,
        &mut config.encode_invalid_numbers,
        &INVALID_NUMBER_OPTIONS,
    )?;
    Ok(1)
}

unsafe fn decode_invalid_numbers(l: *mut lua_State) -> Outcome {
    let config = setting_args(l, 1)?;
    option_setting(l, 1, &mut config.decode_invalid_numbers, &BOOLEAN_OPTIONS)?;
    Ok(1)
}

// ---------------------------------------------------------------- encoding

/// `cjson.encode(value)`.
unsafe fn encode(l: *mut lua_State) -> Outcome {
    if ffi::lua_gettop(l) != 1 {
        return Err(Failure::argument(1, "expected 1 argument"));
    }
    let config = *config(l);
    let mut out = Vec::new();
    encode_top(l, &config, &mut out)?;
    push_bytes(l, &out);
    Ok(1)
}

/// "Cannot serialise <type of the value at index>: <reason>".
unsafe fn cannot_serialise(l: *mut lua_State, index: c_int, reason: &str) -> Failure {
    let type_name = CStr::from_ptr(ffi::lua_typename(l, ffi::lua_type(l, index))).to_string_lossy();
    Failure::positioned(format!("Cannot serialise {type_name}: {reason}"))
}

/// A table being written: how far the encoder got in it.
enum OpenTable {
    /// Written as an array of `len` elements; `next` is the next index to write.
    Array { len: c_int, next: c_int },
    /// Written as an object; the key `next` returned last is on the stack.
    Object { first: bool },
}

/// Appends the value on top of the stack (left there). Nested tables are walked
/// with an explicit list rather than recursion, so the depth Lua's stack allows
/// (thousands) cannot exhaust the thread's stack.
unsafe fn encode_top(l: *mut lua_State, config: &Config, out: &mut Vec<u8>) -> Result<(), Failure> {
    let mut open: Vec<OpenTable> = Vec::new();
    loop {
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            open.push(open_table(l, config, open.len() as c_int + 1, out)?);
        } else {
            encode_scalar(l, config, out)?;
            if open.is_empty() {
                return Ok(());
            }
            ffi::lua_pop(l, 1);
        }
        // Push the next value to write, closing the tables that are done.
        while let Some(table) = open.last_mut() {
            if next_in_table(l, config, table, out)? {
                break;
            }
            open.pop();
            if open.is_empty() {
                return Ok(());
            }
            ffi::lua_pop(l, 1);
        }
    }
}

/// Appends a value that is not a table.
unsafe fn encode_scalar(
    l: *mut lua_State,
    config: &Config,
    out: &mut Vec<u8>,
) -> Result<(), Failure> {
    match ffi::lua_type(l, -1) {
        ffi::LUA_TSTRING => encode_string(out, string_at(l, -1, false).unwrap_or_default()),
        ffi::LUA_TNUMBER => encode_number(l, config, -1, out)?,
        ffi::LUA_TBOOLEAN => out.extend_from_slice(if ffi::lua_toboolean(l, -1) != 0 {
            b"true"
        } else {
            b"false"
        }),
        ffi::LUA_TNIL => out.extend_from_slice(b"null"),
        ffi::LUA_TLIGHTUSERDATA if ffi::lua_touserdata(l, -1).is_null() => {
            out.extend_from_slice(b"null")
        }
        _ => return Err(cannot_serialise(l, -1, "type not supported")),
    }
    Ok(())
}

/// Starts writing the table on top of the stack, nested `depth` deep.
unsafe fn open_table(
    l: *mut lua_State,
    config: &Config,
    depth: c_int,
    out: &mut Vec<u8>,
) -> Result<OpenTable, Failure> {
    if depth > config.encode_max_depth || !stack_has_room(l, 3) {
        return Err(Failure::positioned(format!(
            "Cannot serialise, excessive nesting ({depth})"
        )));
    }
    Ok(match array_length(l, config)? {
        Some(len) => {
            out.push(b'[');
            OpenTable::Array { len, next: 1 }
        }
        None => {
            out.push(b'{');
            ffi::lua_pushnil(l);
            OpenTable::Object { first: true }
        }
    })
}

/// Pushes the next value of `table` (writing the separator and, in objects, the key
/// before it), or writes the table's end and returns false when there is none.
unsafe fn next_in_table(
    l: *mut lua_State,
    config: &Config,
    table: &mut OpenTable,
    out: &mut Vec<u8>,
) -> Result<bool, Failure> {
    match table {
        OpenTable::Array { len, next } => {
            if *next > *len {
                out.push(b']');
                return Ok(false);
            }
            if *next > 1 {
                out.push(b',');
            }
            ffi::lua_rawgeti_(l, -1, *next);
            *next += 1;
        }
        OpenTable::Object { first } => {
            if ffi::lua_next(l, -2) == 0 {
                out.push(b'}');
                return Ok(false);
            }
            if !*first {
                out.push(b',');
            }
            *first = false;
            encode_key(l, config, out)?;
        }
    }
    Ok(true)
}

/// Appends the key under the value on top of the stack, with its colon.
unsafe fn encode_key(l: *mut lua_State, config: &Config, out: &mut Vec<u8>) -> Result<(), Failure> {
    match ffi::lua_type(l, -2) {
        ffi::LUA_TNUMBER => {
            out.push(b'"');
            encode_number(l, config, -2, out)?;
            out.extend_from_slice(b"\":");
        }
        ffi::LUA_TSTRING => {
            encode_string(out, string_at(l, -2, false).unwrap_or_default());
            out.push(b':');
        }
        _ => {
            return Err(cannot_serialise(
                l,
                -2,
                "table key must be a number or string",
            ))
        }
    }
    Ok(())
}

/// The length to encode the table on top of the stack with as an array, or `None`
/// for an object.
unsafe fn array_length(l: *mut lua_State, config: &Config) -> Result<Option<c_int>, Failure> {
    let mut max: c_int = 0;
    let mut items: c_int = 0;
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        let key = ffi::lua_tonumber(l, -2);
        let positive_integer =
            ffi::lua_type(l, -2) == ffi::LUA_TNUMBER && key.floor() == key && key >= 1.0;
        if !positive_integer {
            ffi::lua_pop(l, 2);
            return Ok(None);
        }
        if key > f64::from(max) {
            max = c_double_to_i32(key);
        }
        items += 1;
        ffi::lua_pop(l, 1);
    }
    let sparse = config.sparse_ratio > 0
        && max > items.wrapping_mul(config.sparse_ratio)
        && max > config.sparse_safe;
    if sparse {
        if config.sparse_convert == 0 {
            return Err(cannot_serialise(l, -1, "excessively sparse array"));
        }
        return Ok(None);
    }
    // Keys beyond the C int range leave a negative length: such tables are objects.
    Ok(Some(max).filter(|&len| len > 0))
}

unsafe fn encode_number(
    l: *mut lua_State,
    config: &Config,
    index: c_int,
    out: &mut Vec<u8>,
) -> Result<(), Failure> {
    let number = ffi::lua_tonumber(l, index);
    let invalid = !number.is_finite();
    match config.encode_invalid_numbers {
        REFUSE_INVALID if invalid => {
            return Err(cannot_serialise(l, index, "must not be NaN or Inf"))
        }
        // Written by hand: printf may give "-nan".
        ALLOW_INVALID if number.is_nan() => out.extend_from_slice(b"nan"),
        REFUSE_INVALID | ALLOW_INVALID => out.extend(format_g(number, config.number_precision)),
        _ if invalid => out.extend_from_slice(b"null"),
        _ => out.extend(format_g(number, config.number_precision)),
    }
    Ok(())
}

fn encode_string(out: &mut Vec<u8>, text: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for &byte in text {
        match byte {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\x08' => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\x0c' => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0..=0x1f | 0x7f => {
                out.extend_from_slice(b"\\u00");
                out.extend([HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 15)]]);
            }
            _ => out.push(byte),
        }
    }
    out.push(b'"');
}

// ---------------------------------------------------------------- decoding

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    ObjectBegin,
    ObjectEnd,
    ArrayBegin,
    ArrayEnd,
    /// The decoded text is in the parser's `text` buffer.
    String,
    Number(f64),
    Boolean(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

impl Kind {
    /// How errors name what was found.
    fn describe(self) -> &'static str {
        match self {
            Kind::ObjectBegin => "T_OBJ_BEGIN",
            Kind::ObjectEnd => "T_OBJ_END",
            Kind::ArrayBegin => "T_ARR_BEGIN",
            Kind::ArrayEnd => "T_ARR_END",
            Kind::String => "T_STRING",
            Kind::Number(_) => "T_NUMBER",
            Kind::Boolean(_) => "T_BOOLEAN",
            Kind::Null => "T_NULL",
            Kind::Colon => "T_COLON",
            Kind::Comma => "T_COMMA",
            Kind::End => "T_END",
            Kind::Error(message) => message,
        }
    }
}

#[derive(Clone, Copy)]
struct Token {
    kind: Kind,
    /// Offset of the token (or of the fault, for errors) in the input.
    at: usize,
}

struct Parser<'a> {
    /// The input with Lua's terminating NUL, where parsing stops as it does in C.
    input: &'a [u8],
    at: usize,
    depth: c_int,
    config: Config,
    /// The text of the last string token.
    text: Vec<u8>,
}

/// `cjson.decode(text)`.
unsafe fn decode(l: *mut lua_State) -> Outcome {
    if ffi::lua_gettop(l) != 1 {
        return Err(Failure::argument(1, "expected 1 argument"));
    }
    let json = bytes_arg(l, 1)?;
    // A NUL among the first two bytes means UTF-16 or UTF-32 (RFC 4627, 3).
    if json.len() >= 2 && (json[0] == 0 || json[1] == 0) {
        return Err(Failure::positioned(
            "JSON parser does not support UTF-16 or UTF-32",
        ));
    }
    let mut parser = Parser {
        input: string_at(l, 1, true).unwrap_or(b"\0"),
        at: 0,
        depth: 0,
        config: *config(l),
        text: Vec::new(),
    };
    let first = parser.next_token();
    parser.value(l, first)?;
    let last = parser.next_token();
    if last.kind != Kind::End {
        return Err(parse_error("the end", last));
    }
    Ok(1)
}

fn parse_error(expected: &str, found: Token) -> Failure {
    Failure::positioned(format!(
        "Expected {expected} but found {} at character {}",
        found.kind.describe(),
        found.at + 1
    ))
}

impl Parser<'_> {
    fn byte(&self, at: usize) -> u8 {
        self.input.get(at).copied().unwrap_or(0)
    }

    fn error_here(&self, message: &'static str) -> Token {
        Token {
            kind: Kind::Error(message),
            at: self.at,
        }
    }

    fn next_token(&mut self) -> Token {
        while matches!(self.byte(self.at), b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
        let start = self.at;
        let single = |kind| Token { kind, at: start };
        let kind = match self.byte(start) {
            0 => return single(Kind::End),
            b'{' => Kind::ObjectBegin,
            b'}' => Kind::ObjectEnd,
            b'[' => Kind::ArrayBegin,
            b']' => Kind::ArrayEnd,
            b':' => Kind::Colon,
            b',' => Kind::Comma,
            b'"' => return self.string_token(),
            b'-' | b'0'..=b'9' => {
                if self.config.decode_invalid_numbers == 0 && self.is_invalid_number() {
                    return self.error_here("invalid number");
                }
                return self.number_token();
            }
            b't' | b'f' | b'n' | b'i' | b'I' | b'N' | b'+' => return self.word_token(),
            _ => return self.error_here("invalid token"),
        };
        self.at += 1;
        single(kind)
    }

    /// `true`, `false`, `null`, or (when allowed) a number JSON does not allow.
    fn word_token(&mut self) -> Token {
        let start = self.at;
        let rest = &self.input[start..];
        let literal = [
            (&b"true"[..], Kind::Boolean(true)),
            (b"false", Kind::Boolean(false)),
            (b"null", Kind::Null),
        ]
        .into_iter()
        .find(|(word, _)| rest.starts_with(word));
        if let Some((word, kind)) = literal {
            self.at += word.len();
            return Token { kind, at: start };
        }
        if self.config.decode_invalid_numbers != 0 && self.is_invalid_number() {
            return self.number_token();
        }
        self.error_here("invalid token")
    }

    /// Whether the number starting here is one JSON forbids but `strtod` reads:
    /// a leading `+` or zero, hex, infinity or NaN.
    fn is_invalid_number(&self) -> bool {
        let mut at = self.at;
        match self.byte(at) {
            b'+' => return true,
            b'-' => at += 1,
            _ => {}
        }
        let first = self.byte(at);
        if first == b'0' {
            let second = self.byte(at + 1);
            return second | 0x20 == b'x' || second.is_ascii_digit();
        }
        if first <= b'9' {
            return false;
        }
        let word = &self.input[at.min(self.input.len())..];
        let starts_with = |prefix: &[u8]| word.len() >= 3 && word[..3].eq_ignore_ascii_case(prefix);
        starts_with(b"inf") || starts_with(b"nan")
    }

    /// A number, read by `strtod` like the original does.
    fn number_token(&mut self) -> Token {
        let start = self.at;
        let begin = self.input[start..].as_ptr() as *const c_char;
        let mut end: *mut c_char = std::ptr::null_mut();
        // SAFETY: the input ends with a NUL, so strtod stops inside it.
        let value = unsafe { libc::strtod(begin, &mut end) };
        let consumed = end as usize - begin as usize;
        if consumed == 0 {
            return self.error_here("invalid number");
        }
        self.at += consumed;
        Token {
            kind: Kind::Number(value),
            at: start,
        }
    }

    /// A string; its decoded text goes to `self.text`.
    fn string_token(&mut self) -> Token {
        let start = self.at;
        self.at += 1;
        self.text.clear();
        loop {
            match self.byte(self.at) {
                b'"' => break,
                0 => return self.error_here("unexpected end of string"),
                b'\\' => {
                    let unescaped = match self.byte(self.at + 1) {
                        b'u' => {
                            if self.unicode_escape().is_none() {
                                return self.error_here("invalid unicode escape code");
                            }
                            continue;
                        }
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => b'\x08',
                        b'f' => b'\x0c',
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        _ => return self.error_here("invalid escape code"),
                    };
                    self.text.push(unescaped);
                    self.at += 2;
                }
                other => {
                    self.text.push(other);
                    self.at += 1;
                }
            }
        }
        self.at += 1;
        Token {
            kind: Kind::String,
            at: start,
        }
    }

    /// Four hex digits at `at`.
    fn hex4(&self, at: usize) -> Option<u32> {
        (0..4).try_fold(0, |value, i| {
            Some(value << 4 | char::from(self.byte(at + i)).to_digit(16)?)
        })
    }

    /// Decodes `\uXXXX` (or a surrogate pair of them) at `self.at` as UTF-8.
    fn unicode_escape(&mut self) -> Option<()> {
        let mut code = self.hex4(self.at + 2)?;
        let mut len = 6;
        if code & 0xf800 == 0xd800 {
            let is_high_surrogate = code & 0x400 == 0;
            let escape_follows = self.byte(self.at + 6) == b'\\' && self.byte(self.at + 7) == b'u';
            if !is_high_surrogate || !escape_follows {
                return None;
            }
            let low = self.hex4(self.at + 8)?;
            if low & 0xfc00 != 0xdc00 {
                return None;
            }
            code = (((code & 0x3ff) << 10) | (low & 0x3ff)) + 0x10000;
            len = 12;
        }
        let character = char::from_u32(code)?;
        self.text
            .extend_from_slice(character.encode_utf8(&mut [0; 4]).as_bytes());
        self.at += len;
        Some(())
    }

    /// Pushes the value that starts with `token`. Nested arrays and objects are
    /// tracked in a list rather than by recursion, so the depth Lua's stack allows
    /// (thousands) cannot exhaust the thread's stack.
    unsafe fn value(&mut self, l: *mut lua_State, first: Token) -> Result<(), Failure> {
        let mut open: Vec<OpenValue> = Vec::new();
        let mut token = first;
        loop {
            if let Some((container, member)) = self.begin_value(l, token)? {
                open.push(container);
                token = member;
                continue;
            }
            // A value is complete on top of the stack: store it in its container.
            loop {
                let Some(container) = open.last_mut() else {
                    return Ok(());
                };
                let end = match container {
                    OpenValue::Array { next_index } => {
                        ffi::lua_rawseti_(l, -2, *next_index);
                        *next_index += 1;
                        let after = self.next_token();
                        match after.kind {
                            Kind::ArrayEnd => true,
                            Kind::Comma => false,
                            _ => return Err(parse_error("comma or array end", after)),
                        }
                    }
                    OpenValue::Object => {
                        ffi::lua_rawset(l, -3);
                        let after = self.next_token();
                        match after.kind {
                            Kind::ObjectEnd => true,
                            Kind::Comma => {
                                let key = self.next_token();
                                self.member_key(l, key)?;
                                false
                            }
                            _ => return Err(parse_error("comma or object end", after)),
                        }
                    }
                };
                if !end {
                    break;
                }
                // The container itself is now a complete value.
                open.pop();
                self.depth -= 1;
            }
            token = self.next_token();
        }
    }

    /// Pushes the value `token` starts: a complete one (`None`), or an array or
    /// object with members to come, with the first token of its first member's value.
    unsafe fn begin_value(
        &mut self,
        l: *mut lua_State,
        token: Token,
    ) -> Result<Option<(OpenValue, Token)>, Failure> {
        match token.kind {
            Kind::String => push_bytes(l, &self.text),
            Kind::Number(number) => ffi::lua_pushnumber(l, number),
            Kind::Boolean(value) => ffi::lua_pushboolean(l, c_int::from(value)),
            Kind::Null => ffi::lua_pushlightuserdata(l, std::ptr::null_mut()),
            Kind::ArrayBegin => {
                self.descend(l, 2)?;
                ffi::lua_newtable(l);
                let first = self.next_token();
                if first.kind != Kind::ArrayEnd {
                    return Ok(Some((OpenValue::Array { next_index: 1 }, first)));
                }
                self.depth -= 1;
            }
            Kind::ObjectBegin => {
                self.descend(l, 3)?;
                ffi::lua_newtable(l);
                let first = self.next_token();
                if first.kind != Kind::ObjectEnd {
                    self.member_key(l, first)?;
                    return Ok(Some((OpenValue::Object, self.next_token())));
                }
                self.depth -= 1;
            }
            _ => return Err(parse_error("value", token)),
        }
        Ok(None)
    }

    /// Pushes an object member's key (`token`) and reads the colon after it.
    unsafe fn member_key(&mut self, l: *mut lua_State, token: Token) -> Result<(), Failure> {
        if token.kind != Kind::String {
            return Err(parse_error("object key string", token));
        }
        push_bytes(l, &self.text);
        let colon = self.next_token();
        if colon.kind != Kind::Colon {
            return Err(parse_error("colon", colon));
        }
        Ok(())
    }

    /// Enters a nested object or array, which needs `slots` more stack slots.
    unsafe fn descend(&mut self, l: *mut lua_State, slots: c_int) -> Result<(), Failure> {
        self.depth += 1;
        if self.depth > self.config.decode_max_depth || !stack_has_room(l, slots) {
            return Err(Failure::positioned(format!(
                "Found too many nested data structures ({}) at character {}",
                self.depth, self.at
            )));
        }
        Ok(())
    }
}

/// An array or object being decoded, whose table is on the stack.
enum OpenValue {
    /// The next element goes to `next_index`.
    Array { next_index: c_int },
    /// The key of the member being read is on the stack above the table.
    Object,
}

// ---------------------------------------------------------------- the module

lua_functions! {
    encode_entry => encode,
    decode_entry => decode,
    encode_sparse_array_entry => encode_sparse_array,
    encode_max_depth_entry => encode_max_depth,
    decode_max_depth_entry => decode_max_depth,
    encode_number_precision_entry => encode_number_precision,
    encode_keep_buffer_entry => encode_keep_buffer,
    encode_invalid_numbers_entry => encode_invalid_numbers,
    decode_invalid_numbers_entry => decode_invalid_numbers,
    new_entry => new_module,
    open => open_library,
}

/// `cjson.new()`: a fresh `cjson` table with default settings of its own.
unsafe fn new_module(l: *mut lua_State) -> Outcome {
    let functions: [(&CStr, ffi::lua_CFunction); 10] = [
        (c"encode", encode_entry),
        (c"decode", decode_entry),
        (c"encode_sparse_array", encode_sparse_array_entry),
        (c"encode_max_depth", encode_max_depth_entry),
        (c"decode_max_depth", decode_max_depth_entry),
        (c"encode_number_precision", encode_number_precision_entry),
        (c"encode_keep_buffer", encode_keep_buffer_entry),
        (c"encode_invalid_numbers", encode_invalid_numbers_entry),
        (c"decode_invalid_numbers", decode_invalid_numbers_entry),
        (c"new", new_entry),
    ];
    ffi::lua_newtable(l);
    let settings = ffi::lua_newuserdata(l, std::mem::size_of::<Config>()) as *mut Config;
    settings.write(Config::default());
    for (name, function) in functions {
        ffi::lua_pushvalue(l, -1);
        ffi::lua_pushcclosure(l, function, 1);
        ffi::lua_setfield(l, -3, name.as_ptr());
    }
    ffi::lua_pop(l, 1);
    ffi::lua_pushlightuserdata(l, std::ptr::null_mut());
    ffi::lua_setfield(l, -2, c"null".as_ptr());
    super::set_string_field(l, c"_NAME", "cjson");
    super::set_string_field(l, c"_VERSION", "2.1.0");
    Ok(1)
}

/// Sets the global `cjson`.
unsafe fn open_library(l: *mut lua_State) -> Outcome {
    new_module(l)?;
    ffi::lua_pushvalue(l, -1);
    ffi::lua_setfield(l, ffi::LUA_GLOBALSINDEX, c"cjson".as_ptr());
    Ok(1)
}
