//! Conversions between Redis replies and Lua values, both ways, with Redis's rules.
//!
//! Command replies reach the script as RESP bytes (the reply a client would get, in
//! the protocol the script chose with `redis.setresp`) and become Lua values here;
//! the script's return value becomes the client's reply in the client's protocol.

use crate::util::numbers::write_f64;
use kvik_resp::ReplyWriter;
use mlua::{Lua, Table, Value};

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

/// Parses one RESP reply from `buf` into a Lua value; returns it and the bytes used.
/// An error reply at the top level comes back as `Err(text)` so `redis.call` can
/// raise it; nested errors (inside arrays) become error tables.
pub fn reply_to_lua(lua: &Lua, buf: &[u8]) -> mlua::Result<Result<Value, String>> {
    if buf.first() == Some(&b'-') {
        let end = line_end(buf, 0);
        return Ok(Err(String::from_utf8_lossy(&buf[1..end]).into_owned()));
    }
    let mut parser = ReplyParser { lua, buf, at: 0 };
    parser.value().map(Ok)
}

struct ReplyParser<'l, 'b> {
    lua: &'l Lua,
    buf: &'b [u8],
    at: usize,
}

impl ReplyParser<'_, '_> {
    /// The rest of the current line (after the type byte), moving past its CRLF.
    fn line(&mut self) -> &[u8] {
        let start = self.at + 1;
        let end = line_end(self.buf, start);
        self.at = end + 2;
        &self.buf[start..end]
    }

    fn number(&mut self) -> i64 {
        std::str::from_utf8(self.line())
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }

    fn bytes(&mut self, len: usize) -> &[u8] {
        let data = &self.buf[self.at..self.at + len];
        self.at += len + 2;
        data
    }

    fn tagged(&self, tag: &str, value: impl mlua::IntoLua) -> mlua::Result<Value> {
        let t = self.lua.create_table()?;
        t.raw_set(tag, value)?;
        Ok(Value::Table(t))
    }

    fn value(&mut self) -> mlua::Result<Value> {
        let lua = self.lua;
        match self.buf[self.at] {
            b':' => Ok(Value::Integer(self.number())),
            b'$' => match self.number() {
                n if n < 0 => Ok(Value::Boolean(false)),
                n => Ok(Value::String(lua.create_string(self.bytes(n as usize))?)),
            },
            b'+' => {
                let text = lua.create_string(self.line())?;
                self.tagged("ok", text)
            }
            b'-' => {
                let text = error_table_text(&[b"-", self.line()].concat());
                self.tagged("err", text)
            }
            b'*' | b'~' | b'>' => {
                let set = self.buf[self.at] == b'~';
                let n = self.number();
                if n < 0 {
                    return Ok(Value::Boolean(false));
                }
                let items = lua.create_table_with_capacity(n as usize, 0)?;
                for i in 0..n {
                    let v = self.value()?;
                    if set {
                        items.raw_set(v, true)?;
                    } else {
                        items.raw_set(i + 1, v)?;
                    }
                }
                if set {
                    self.tagged("set", items)
                } else {
                    Ok(Value::Table(items))
                }
            }
            b'%' => {
                let n = self.number();
                let map = lua.create_table()?;
                for _ in 0..n {
                    let k = self.value()?;
                    let v = self.value()?;
                    map.raw_set(k, v)?;
                }
                self.tagged("map", map)
            }
            b'_' => {
                self.line();
                Ok(Value::Nil)
            }
            b'#' => Ok(Value::Boolean(self.line() == b"t")),
            b',' => {
                let text = String::from_utf8_lossy(self.line()).into_owned();
                let d: f64 = match text.as_str() {
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    t => t.parse().unwrap_or(f64::NAN),
                };
                self.tagged("double", d)
            }
            b'(' => {
                let text = lua.create_string(self.line())?;
                self.tagged("big_number", text)
            }
            b'=' => {
                let n = self.number() as usize;
                let data = self.bytes(n);
                let (format, text) = data.split_at(3.min(data.len()));
                let t = lua.create_table()?;
                t.raw_set("format", lua.create_string(format)?)?;
                t.raw_set("string", lua.create_string(text.get(1..).unwrap_or(b""))?)?;
                self.tagged("verbatim_string", t)
            }
            b'|' => {
                // Attributes carry nothing a script sees: skip them, keep the value.
                let n = self.number();
                for _ in 0..2 * n {
                    self.value()?;
                }
                self.value()
            }
            _ => Ok(Value::Nil),
        }
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

/// Writes a script's return value as the client's reply. `script_resp` is the
/// protocol the script chose (`redis.setresp`): with 3, booleans are booleans.
pub fn lua_to_reply(value: &Value, out: &mut ReplyWriter, script_resp: u8) {
    write_value(value, out, script_resp, 0);
}

fn write_value(value: &Value, out: &mut ReplyWriter, script_resp: u8, depth: usize) {
    if depth > MAX_REPLY_DEPTH {
        out.error("ERR reached lua stack limit");
        return;
    }
    match value {
        Value::String(s) => out.bulk(&s.as_bytes()),
        Value::Boolean(b) if script_resp == 3 => out.boolean(*b),
        Value::Boolean(true) => out.int(1),
        Value::Boolean(false) => out.null(),
        Value::Integer(n) => out.int(*n),
        Value::Number(n) => out.int(truncate_like_c(*n)),
        Value::Table(t) => table_to_reply(t, out, script_resp, depth),
        _ => out.null(),
    }
}

fn string_field(t: &Table, name: &str) -> Option<Vec<u8>> {
    match t.raw_get::<Value>(name).ok()? {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        _ => None,
    }
}

/// A double cut to an integer as C's cast does on x86-64 (Redis's conversion): NaN and
/// values outside the range become `i64::MIN`.
fn truncate_like_c(d: f64) -> i64 {
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

fn table_to_reply(t: &Table, out: &mut ReplyWriter, script_resp: u8, depth: usize) {
    if let Some(err) = string_field(t, "err") {
        out.error(&one_line(&err));
    } else if let Some(ok) = string_field(t, "ok") {
        out.simple(&one_line(&ok));
    } else if let Some(d) = number_field(t, "double") {
        let mut text = Vec::new();
        write_f64(&mut text, d);
        out.double_text(&text);
    } else if let Some(big) = string_field(t, "big_number") {
        if out.is_resp3() {
            out.raw(b"(");
            out.raw(&big);
            out.raw(b"\r\n");
        } else {
            out.bulk(&big);
        }
    } else if let Ok(Value::Table(map)) = t.raw_get::<Value>("map") {
        let pairs: Vec<(Value, Value)> = map.pairs().filter_map(Result::ok).collect();
        out.map(pairs.len());
        for (k, v) in &pairs {
            write_value(k, out, script_resp, depth + 1);
            write_value(v, out, script_resp, depth + 1);
        }
    } else if let Ok(Value::Table(set)) = t.raw_get::<Value>("set") {
        let members: Vec<Value> = set
            .pairs::<Value, Value>()
            .filter_map(Result::ok)
            .map(|(k, _)| k)
            .collect();
        out.set(members.len());
        for m in &members {
            write_value(m, out, script_resp, depth + 1);
        }
    } else if let Ok(Value::Table(v)) = t.raw_get::<Value>("verbatim_string") {
        let format = string_field(&v, "format").unwrap_or_default();
        let text = string_field(&v, "string").unwrap_or_default();
        let format: [u8; 3] = format
            .get(..3)
            .and_then(|f| f.try_into().ok())
            .unwrap_or(*b"txt");
        out.verbatim(&format, &text);
    } else {
        // An array ends at the first nil, as Lua's length operator would have it.
        let mut items = Vec::new();
        while let Ok(v) = t.raw_get::<Value>(items.len() + 1) {
            if v.is_nil() {
                break;
            }
            items.push(v);
        }
        out.array(items.len());
        for v in &items {
            write_value(v, out, script_resp, depth + 1);
        }
    }
}
