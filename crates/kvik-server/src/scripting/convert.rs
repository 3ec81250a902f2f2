//! Conversions between Redis replies and Lua values, both ways, with Redis's rules.
//!
//! Command replies reach the script as RESP bytes (the reply a client would get, in
//! the protocol the script chose with `redis.setresp`) and become Lua values here;
//! the script's return value becomes the client's reply in the client's protocol.

use super::stack::Stack;
use crate::util::numbers::{parse_i64, write_f64};
use kvik_resp::ReplyWriter;
use mlua::{Table, Value};
use std::ffi::c_int;

/// An error reply turned into the text of a Lua error table (`err` field), the way
/// Redis normalises it: a leading `-` is dropped, a message without an error code
/// gets `ERR`, and trailing CR/LF go.
pub fn error_table_text(text: &[u8]) -> String {
    let text = String::from_utf8_lossy(text);
    let (code, msg) = match text.strip_prefix('-') {
        Some(rest) => match rest.split_once(' ') {
            Some((code, msg)) => (code.to_string(), msg.to_string()),
            None => ("ERR".to_string(), rest.to_string()),
        },
        None => ("ERR".to_string(), text.to_string()),
    };
    format!("{code} {}", msg.trim_matches(|c| c == '\r' || c == '\n'))
}

/// The field Redis sets on an error table made from a command's error reply, which
/// INFO errorstats counted when it was made: a script replying with the table does
/// not count it again.
const COUNTED_FIELD: &str = "ignore_error_stats_update";

/// Marks the error table on top of `stack` as counted already ([`COUNTED_FIELD`]).
pub fn mark_counted(stack: Stack) {
    let table = stack.top();
    stack.push_bool(true);
    stack.set_field(table, COUNTED_FIELD.as_bytes());
}

/// Parses one RESP reply from `buf` and pushes it on `stack` as one Lua value. An
/// error reply at the top level is not pushed but comes back as `Err(text)`, so
/// `redis.call` can raise it; nested errors (inside arrays) become error tables.
pub fn push_reply(stack: Stack, buf: &[u8]) -> Result<(), String> {
    if buf.first() == Some(&b'-') {
        let end = line_end(buf, 0);
        return Err(String::from_utf8_lossy(&buf[1..end]).into_owned());
    }
    let mut parser = ReplyParser { stack, buf, at: 0 };
    parser.push_value()
}

struct ReplyParser<'b> {
    stack: Stack,
    buf: &'b [u8],
    at: usize,
}

impl ReplyParser<'_> {
    /// The rest of the current line (after the type byte), moving past its CRLF.
    fn line(&mut self) -> &[u8] {
        let start = self.at + 1;
        let end = line_end(self.buf, start);
        self.at = end + 2;
        &self.buf[start..end]
    }

    fn number(&mut self) -> i64 {
        parse_i64(self.line()).unwrap_or(0)
    }

    fn bytes(&mut self, len: usize) -> &[u8] {
        let data = &self.buf[self.at..self.at + len];
        self.at += len + 2;
        data
    }

    /// Pushes the next value. Each level of nesting holds a table and a key or
    /// value on the stack; a reply too deep for it is an error.
    fn push_value(&mut self) -> Result<(), String> {
        if !self.stack.ensure(4) {
            return Err("ERR reached lua stack limit".into());
        }
        let stack = self.stack;
        match self.buf[self.at] {
            b':' => {
                let n = self.number();
                stack.push_number(n as f64);
            }
            b'$' => match self.number() {
                n if n < 0 => stack.push_bool(false),
                n => stack.push_bytes(self.bytes(n as usize)),
            },
            b'+' => {
                let text = self.line();
                stack.push_tagged(b"ok", text);
            }
            b'-' => {
                let text = error_table_text(&[b"-", self.line()].concat());
                stack.push_tagged(b"err", text.as_bytes());
                mark_counted(stack);
            }
            b'*' | b'~' | b'>' => self.push_collection()?,
            b'%' => {
                let n = self.number();
                // Grown as Redis grows it (from empty), so that `pairs` walks the
                // fields in Redis's order.
                stack.push_table(0, 0);
                let map = stack.top();
                for _ in 0..n {
                    self.push_value()?;
                    self.push_value()?;
                    set_pair_unless_nil_key(stack, map);
                }
                self.tag(b"map");
            }
            b'_' => {
                self.line();
                stack.push_nil();
            }
            b'#' => {
                let b = self.line() == b"t";
                stack.push_bool(b);
            }
            b',' => {
                let text = String::from_utf8_lossy(self.line()).into_owned();
                let d: f64 = match text.as_str() {
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    t => t.parse().unwrap_or(f64::NAN),
                };
                stack.push_number(d);
                self.tag(b"double");
            }
            b'(' => {
                let text = self.line();
                stack.push_tagged(b"big_number", text);
            }
            b'=' => {
                let n = self.number() as usize;
                let data = self.bytes(n);
                let (format, text) = data.split_at(3.min(data.len()));
                stack.push_table(0, 2);
                let verbatim = stack.top();
                stack.push_bytes(format);
                stack.set_field(verbatim, b"format");
                stack.push_bytes(text.get(1..).unwrap_or(b""));
                stack.set_field(verbatim, b"string");
                self.tag(b"verbatim_string");
            }
            b'|' => {
                // Attributes carry nothing a script sees: skip them, keep the value.
                let n = self.number();
                let top = stack.top();
                for _ in 0..2 * n {
                    self.push_value()?;
                    stack.set_top(top);
                }
                self.push_value()?;
            }
            _ => stack.push_nil(),
        }
        Ok(())
    }

    /// An array (a table of its items), a RESP3 set (`{set = {[member] = true}}`) or
    /// a push; a null array is `false`.
    fn push_collection(&mut self) -> Result<(), String> {
        let stack = self.stack;
        let set = self.buf[self.at] == b'~';
        let n = self.number();
        if n < 0 {
            stack.push_bool(false);
            return Ok(());
        }
        // A set's table grows from empty as Redis's does, for Redis's `pairs` order;
        // an array's items keep their order whatever the table's size.
        stack.push_table(if set { 0 } else { n as usize }, 0);
        let items = stack.top();
        for i in 0..n as usize {
            self.push_value()?;
            if set {
                stack.push_bool(true);
                set_pair_unless_nil_key(stack, items);
            } else {
                stack.set_index(items, i + 1);
            }
        }
        if set {
            self.tag(b"set");
        }
        Ok(())
    }

    /// Wraps the value on top of the stack as `{ [name] = value }`.
    fn tag(&self, name: &[u8]) {
        let stack = self.stack;
        stack.push_table(0, 1);
        stack.insert(-2);
        stack.set_field(stack.top() - 1, name);
    }
}

/// Pops a key and a value and stores them in the table at `table`, unless the key is
/// nil or NaN, which no Lua table can hold: a map or set member that converts to
/// nil is left out, as Lua would refuse it.
fn set_pair_unless_nil_key(stack: Stack, table: c_int) {
    let key = stack.top() - 1;
    let nil = stack.type_at(key) == mlua::ffi::LUA_TNIL;
    let nan = stack.type_at(key) == mlua::ffi::LUA_TNUMBER && stack.number(key).is_nan();
    if nil || nan {
        stack.set_top(key - 1);
    } else {
        stack.set_pair(table);
    }
}

fn line_end(buf: &[u8], from: usize) -> usize {
    buf[from..]
        .windows(2)
        .position(|w| w == b"\r\n")
        .map_or(buf.len(), |p| from + p)
}

/// How deep a returned table may nest. Redis stops where its Lua stack ends (a table
/// holding itself is the usual way there); kvik stops earlier, at a depth no real
/// reply reaches, with the same error in place of the rest.
const MAX_REPLY_DEPTH: usize = 1000;

/// Error replies a script's return value made: Redis counts each in INFO errorstats
/// (but those made from a command's error, counted already), and the call as failed.
#[derive(Default)]
pub struct RepliedErrors {
    /// The texts to count.
    pub uncounted: Vec<String>,
    /// Any error at all, counted already or not.
    pub any: bool,
}

/// Writes a script's return value as the client's reply. `script_resp` is the
/// protocol the script chose (`redis.setresp`): with 3, booleans are booleans.
pub fn lua_to_reply(value: &Value, out: &mut ReplyWriter, script_resp: u8) -> RepliedErrors {
    let mut reply = ScriptReply {
        out,
        script_resp,
        errors: RepliedErrors::default(),
    };
    reply.value(value, 0);
    reply.errors
}

/// A script's return value on its way to the client.
struct ScriptReply<'o> {
    out: &'o mut ReplyWriter,
    script_resp: u8,
    errors: RepliedErrors,
}

impl ScriptReply<'_> {
    fn value(&mut self, value: &Value, depth: usize) {
        if depth > MAX_REPLY_DEPTH {
            self.error("ERR reached lua stack limit".into(), false);
            return;
        }
        let out = &mut *self.out;
        match value {
            Value::String(s) => out.bulk(&s.as_bytes()),
            Value::Boolean(b) if self.script_resp == 3 => out.boolean(*b),
            Value::Boolean(true) => out.int(1),
            Value::Boolean(false) => out.null(),
            Value::Integer(n) => out.int(*n),
            Value::Number(n) => out.int(truncate_like_c(*n)),
            Value::Table(t) => self.table(t, depth),
            _ => out.null(),
        }
    }

    fn error(&mut self, text: String, counted: bool) {
        self.out.error(&text);
        self.errors.any = true;
        if !counted {
            self.errors.uncounted.push(text);
        }
    }

    fn table(&mut self, t: &Table, depth: usize) {
        if let Some(err) = string_field(t, "err") {
            self.error(one_line(&err), is_counted(t));
        } else if let Some(ok) = string_field(t, "ok") {
            self.out.simple(&one_line(&ok));
        } else if let Some(d) = number_field(t, "double") {
            let mut text = Vec::new();
            write_f64(&mut text, d);
            self.out.double_text(&text);
        } else if let Some(big) = string_field(t, "big_number") {
            if self.out.is_resp3() {
                self.out.raw(b"(");
                self.out.raw(&big);
                self.out.raw(b"\r\n");
            } else {
                self.out.bulk(&big);
            }
        } else if let Ok(Value::Table(map)) = t.raw_get::<Value>("map") {
            let pairs: Vec<(Value, Value)> = map.pairs().filter_map(Result::ok).collect();
            self.out.map(pairs.len());
            for (k, v) in &pairs {
                self.value(k, depth + 1);
                self.value(v, depth + 1);
            }
        } else if let Ok(Value::Table(set)) = t.raw_get::<Value>("set") {
            let members: Vec<Value> = set
                .pairs::<Value, Value>()
                .filter_map(Result::ok)
                .map(|(k, _)| k)
                .collect();
            self.out.set(members.len());
            for m in &members {
                self.value(m, depth + 1);
            }
        } else if let Ok(Value::Table(v)) = t.raw_get::<Value>("verbatim_string") {
            let format = string_field(&v, "format").unwrap_or_default();
            let text = string_field(&v, "string").unwrap_or_default();
            let format: [u8; 3] = format
                .get(..3)
                .and_then(|f| f.try_into().ok())
                .unwrap_or(*b"txt");
            self.out.verbatim(&format, &text);
        } else {
            // An array ends at the first nil, as Lua's length operator would have it.
            let mut items = Vec::new();
            while let Ok(v) = t.raw_get::<Value>(items.len() + 1) {
                if v.is_nil() {
                    break;
                }
                items.push(v);
            }
            self.out.array(items.len());
            for v in &items {
                self.value(v, depth + 1);
            }
        }
    }
}

/// Was the error `value` (a table) made from a command's error reply, which INFO
/// errorstats counted already?
pub fn counted_already(value: &Value) -> bool {
    matches!(value, Value::Table(t) if is_counted(t))
}

fn is_counted(t: &Table) -> bool {
    matches!(t.raw_get::<Value>(COUNTED_FIELD), Ok(Value::Boolean(true)))
}

fn string_field(t: &Table, name: &str) -> Option<Vec<u8>> {
    match t.raw_get::<Value>(name).ok()? {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        _ => None,
    }
}

/// A double cut to an integer as C's cast does on x86-64 (Redis's conversion): NaN and
/// values outside the range become `i64::MIN`.
pub fn truncate_like_c(d: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if !(-LIMIT..LIMIT).contains(&d) {
        i64::MIN
    } else {
        d as i64
    }
}

fn number_field(t: &Table, name: &str) -> Option<f64> {
    match t.raw_get::<Value>(name).ok()? {
        Value::Number(d) => Some(d),
        Value::Integer(n) => Some(n as f64),
        _ => None,
    }
}

/// CR and LF cannot appear inside a status or error line: they become spaces.
fn one_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).replace(['\r', '\n'], " ")
}
