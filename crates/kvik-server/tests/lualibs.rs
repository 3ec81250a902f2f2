//! The scripting libraries (`cjson`, `cmsgpack`, `bit`, `struct`) against Redis 7.0.15.
//!
//! Each case is a Lua expression and what the real redis-server's scripting engine
//! gave for it, evaluated through the same wrapper in a chunk named like Redis names
//! scripts (so error positions read `user_script:N:`): `OK` and the results, each as
//! type and value (strings with bytes outside printable ASCII as hex), or `ERR` and
//! the error message. Every case runs in a fresh Lua state, as the recorded values
//! were taken after a `SCRIPT FLUSH`.

use kvik_server::scripting::libs::open_all;
use mlua::Lua;
use proptest::prelude::*;

/// Renders the results of `EXPR` (or its error) as one line.
const WRAPPER: &str = r#"local function render_one(v)
  if type(v) == 'string' then
    if v:find('^[%w%p ]*$') then return 's:' .. v end
    return 'x:' .. (v:gsub('.', function(c) return string.format('%02x', c:byte()) end))
  end
  return type(v):sub(1, 2) .. ':' .. tostring(v)
end
local function render(...)
  local out = {}
  for i = 1, select('#', ...) do out[#out + 1] = render_one((select(i, ...))) end
  return table.concat(out, ' ')
end
local function finish(ok, ...)
  if ok then return 'OK ' .. render(...) end
  return 'ERR ' .. tostring((...))
end
return finish(pcall(function() return EXPR end))
"#;

fn lua_with_libs() -> Lua {
    let lua = Lua::new();
    open_all(&lua).expect("libraries open");
    lua
}

fn evaluate(lua: &Lua, expression: &str) -> String {
    let chunk = WRAPPER.replace("EXPR", expression);
    lua.load(chunk)
        .set_name("@user_script")
        .eval::<String>()
        .unwrap_or_else(|e| format!("LUA FAILURE {e}"))
}

fn check(cases: &[(&str, &str)]) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(expression, expected)| {
            let got = evaluate(&lua_with_libs(), expression);
            (got != *expected).then(|| format!("{expression}\n  redis: {expected}\n  kvik:  {got}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn cjson_matches_redis() {
    check(&[
        (r#"cjson.encode({1, 2, {a = 1}})"#, r#"OK s:[1,2,{"a":1}]"#),
        (r#"cjson.encode({})"#, r#"OK s:{}"#),
        (r#"cjson.encode({{}, {{}}})"#, r#"OK s:[{},[{}]]"#),
        (r#"cjson.encode({a = {}})"#, r#"OK s:{"a":{}}"#),
        (r#"cjson.encode({[1] = 1, [3] = 3})"#, r#"OK s:[1,null,3]"#),
        (
            r#"cjson.encode({[1] = 1, [2] = 2, [4] = 4})"#,
            r#"OK s:[1,2,null,4]"#,
        ),
        (r#"cjson.encode({1, 2, nil, 4})"#, r#"OK s:[1,2,null,4]"#),
        (
            r#"cjson.encode({[10] = 1})"#,
            r#"OK s:[null,null,null,null,null,null,null,null,null,1]"#,
        ),
        (
            r#"cjson.encode({[11] = 1})"#,
            r#"ERR user_script:17: Cannot serialise table: excessively sparse array"#,
        ),
        (
            r#"cjson.encode({[1] = 1, [11] = 3})"#,
            r#"ERR user_script:17: Cannot serialise table: excessively sparse array"#,
        ),
        (
            r#"cjson.encode({[1] = 1, [12] = 3})"#,
            r#"ERR user_script:17: Cannot serialise table: excessively sparse array"#,
        ),
        (
            r#"cjson.encode({[20] = 3})"#,
            r#"ERR user_script:17: Cannot serialise table: excessively sparse array"#,
        ),
        (
            r#"cjson.encode({[1] = 1, [2] = 2, [3] = 3, [4] = 4, [5] = 5, [6] = 6, [20] = 7})"#,
            r#"ERR user_script:17: Cannot serialise table: excessively sparse array"#,
        ),
        (r#"cjson.encode({[0] = 3})"#, r#"OK s:{"0":3}"#),
        (r#"cjson.encode({[-1] = 3})"#, r#"OK s:{"-1":3}"#),
        (r#"cjson.encode({[1.5] = 3})"#, r#"OK s:{"1.5":3}"#),
        (r#"cjson.encode({[1] = 1, a = 2})"#, r#"OK s:{"1":1,"a":2}"#),
        (r#"cjson.encode({[1] = 1, [2.0] = 2})"#, r#"OK s:[1,2]"#),
        (r#"cjson.encode({[2^31] = 1})"#, r#"OK s:{"2147483648":1}"#),
        (
            r#"cjson.encode({[2^40] = 1})"#,
            r#"OK s:{"1099511627776":1}"#,
        ),
        (
            r#"cjson.encode({[true] = 1})"#,
            r#"ERR user_script:17: Cannot serialise boolean: table key must be a number or string"#,
        ),
        (
            r#"cjson.encode({[{}] = 1})"#,
            r#"ERR user_script:17: Cannot serialise table: table key must be a number or string"#,
        ),
        (
            r#"cjson.encode({[1/0] = 1})"#,
            r#"ERR user_script:17: Cannot serialise number: must not be NaN or Inf"#,
        ),
        (r#"cjson.encode({[0.1] = "x"})"#, r#"OK s:{"0.1":"x"}"#),
        (
            r#"cjson.encode({a = type})"#,
            r#"ERR user_script:17: Cannot serialise function: type not supported"#,
        ),
        (
            r#"cjson.encode(type)"#,
            r#"ERR user_script:17: Cannot serialise function: type not supported"#,
        ),
        (
            r#"cjson.encode(coroutine.create(type))"#,
            r#"ERR user_script:17: bad argument #1 to 'create' (Lua function expected)"#,
        ),
        (r#"cjson.encode(nil)"#, r#"OK s:null"#),
        (r#"cjson.encode(cjson.null)"#, r#"OK s:null"#),
        (r#"cjson.encode({cjson.null, 1})"#, r#"OK s:[null,1]"#),
        (r#"cjson.encode(true)"#, r#"OK s:true"#),
        (r#"cjson.encode(false)"#, r#"OK s:false"#),
        (r#"cjson.encode({true, false})"#, r#"OK s:[true,false]"#),
        (
            r#"cjson.encode()"#,
            r#"ERR user_script:17: bad argument #1 to 'encode' (expected 1 argument)"#,
        ),
        (
            r#"cjson.encode(1, 2)"#,
            r#"ERR user_script:17: bad argument #1 to 'encode' (expected 1 argument)"#,
        ),
        (r#"cjson.encode(0)"#, r#"OK s:0"#),
        (r#"cjson.encode(-0)"#, r#"OK s:-0"#),
        (r#"cjson.encode(1)"#, r#"OK s:1"#),
        (r#"cjson.encode(-17)"#, r#"OK s:-17"#),
        (r#"cjson.encode(0.1)"#, r#"OK s:0.1"#),
        (r#"cjson.encode(1/3)"#, r#"OK s:0.33333333333333"#),
        (r#"cjson.encode(-2/3)"#, r#"OK s:-0.66666666666667"#),
        (r#"cjson.encode(100)"#, r#"OK s:100"#),
        (r#"cjson.encode(1e15)"#, r#"OK s:1e+15"#),
        (r#"cjson.encode(1e16)"#, r#"OK s:1e+16"#),
        (
            r#"cjson.encode(123456789012345678)"#,
            r#"OK s:1.2345678901235e+17"#,
        ),
        (r#"cjson.encode(2^53)"#, r#"OK s:9.007199254741e+15"#),
        (r#"cjson.encode(1e100)"#, r#"OK s:1e+100"#),
        (r#"cjson.encode(1e-7)"#, r#"OK s:1e-07"#),
        (r#"cjson.encode(0.0001)"#, r#"OK s:0.0001"#),
        (
            r#"cjson.encode(3.14159265358979)"#,
            r#"OK s:3.1415926535898"#,
        ),
        (
            r#"cjson.encode(0/0)"#,
            r#"ERR user_script:17: Cannot serialise number: must not be NaN or Inf"#,
        ),
        (
            r#"cjson.encode(1/0)"#,
            r#"ERR user_script:17: Cannot serialise number: must not be NaN or Inf"#,
        ),
        (
            r#"cjson.encode(-1/0)"#,
            r#"ERR user_script:17: Cannot serialise number: must not be NaN or Inf"#,
        ),
        (
            r#"cjson.encode({1, 0/0})"#,
            r#"ERR user_script:17: Cannot serialise number: must not be NaN or Inf"#,
        ),
        (r#"cjson.encode("")"#, r#"OK s:"""#),
        (r#"cjson.encode("hello")"#, r#"OK s:"hello""#),
        (r#"cjson.encode("a/b")"#, r#"OK s:"a\/b""#),
        (r#"cjson.encode("q\"b\\s")"#, r#"OK s:"q\"b\\s""#),
        (
            r#"cjson.encode("\1\2\31\127\128\255")"#,
            r#"OK x:225c75303030315c75303030325c75303031665c753030376680ff22"#,
        ),
        (
            r#"cjson.encode("\n\r\t\b\f\v\0")"#,
            r#"OK s:"\n\r\t\b\f\u000b\u0000""#,
        ),
        (r#"cjson.encode("héllo")"#, r#"OK x:2268c3a96c6c6f22"#),
        (
            r#"cjson.encode({["a/b"] = "c\"d"})"#,
            r#"OK s:{"a\/b":"c\"d"}"#,
        ),
        (r#"cjson.decode("[1,2,3]")[3]"#, r#"OK nu:3"#),
        (
            r#"cjson.decode("{\"a\":{\"b\":[true,false,null]}}").a.b[1]"#,
            r#"OK bo:true"#,
        ),
        (
            r#"cjson.decode("{\"a\":{\"b\":[true,false,null]}}").a.b[2]"#,
            r#"OK bo:false"#,
        ),
        (
            r#"cjson.decode("{\"a\":{\"b\":[true,false,null]}}").a.b[3]"#,
            r#"OK us:userdata: (nil)"#,
        ),
        (r#"cjson.decode("null")"#, r#"OK us:userdata: (nil)"#),
        (r#"cjson.decode("null") == cjson.null"#, r#"OK bo:true"#),
        (
            r#"cjson.decode("[null]")[1] == cjson.null"#,
            r#"OK bo:true"#,
        ),
        (r#"cjson.decode("true")"#, r#"OK bo:true"#),
        (r#"cjson.decode("false")"#, r#"OK bo:false"#),
        (r#"cjson.decode("\"abc\"")"#, r#"OK s:abc"#),
        (r#"cjson.decode("123")"#, r#"OK nu:123"#),
        (r#"cjson.decode("-1.5e3")"#, r#"OK nu:-1500"#),
        (r#"cjson.decode("1E2")"#, r#"OK nu:100"#),
        (r#"cjson.decode("1.5e+3")"#, r#"OK nu:1500"#),
        (r#"cjson.decode("-0")"#, r#"OK nu:-0"#),
        (
            r#"cjson.decode("12345678901234567890")"#,
            r#"OK nu:1.2345678901235e+19"#,
        ),
        (r#"cjson.decode("1e400")"#, r#"OK nu:inf"#),
        (r#"cjson.decode("0.1")"#, r#"OK nu:0.1"#),
        (
            r#"cjson.decode(" [ 1 , {\"b\" : [ ] } ] ")[2].b[1]"#,
            r#"OK ni:nil"#,
        ),
        (r#"cjson.decode("{\"a\":1,\"a\":2}").a"#, r#"OK nu:2"#),
        (r#"cjson.decode("[]")[1]"#, r#"OK ni:nil"#),
        (r#"cjson.decode("{}").x"#, r#"OK ni:nil"#),
        (r#"cjson.decode(5)"#, r#"OK nu:5"#),
        (r#"cjson.decode("\"\\/\"")"#, r#"OK s:/"#),
        (
            r#"cjson.decode("\"\\\"\\\\\\b\\f\\n\\r\\t\"")"#,
            r#"OK x:225c080c0a0d09"#,
        ),
        (
            r#"cjson.decode("\"\\u0041\\u00e9\\u20ac\"")"#,
            r#"OK x:41c3a9e282ac"#,
        ),
        (r#"cjson.decode("\"\\ud83d\\ude00\"")"#, r#"OK x:f09f9880"#),
        (r#"cjson.decode("\"\\u0000\"")"#, r#"OK x:00"#),
        (r#"cjson.decode("\"a\1b\"")"#, r#"OK x:610162"#),
        (r#"cjson.decode("\"\t\"")"#, r#"OK x:09"#),
        (r#"cjson.decode("\"\127\"")"#, r#"OK x:7f"#),
        (r#"cjson.decode("NaN")"#, r#"OK nu:nan"#),
        (r#"cjson.decode("nan")"#, r#"OK nu:nan"#),
        (r#"cjson.decode("-nan")"#, r#"OK nu:-nan"#),
        (r#"cjson.decode("Infinity")"#, r#"OK nu:inf"#),
        (r#"cjson.decode("-Infinity")"#, r#"OK nu:-inf"#),
        (r#"cjson.decode("inf")"#, r#"OK nu:inf"#),
        (r#"cjson.decode("-inf")"#, r#"OK nu:-inf"#),
        (r#"cjson.decode("INF")"#, r#"OK nu:inf"#),
        (r#"cjson.decode("0x10")"#, r#"OK nu:16"#),
        (r#"cjson.decode("-0x10")"#, r#"OK nu:-16"#),
        (r#"cjson.decode("0x1p4")"#, r#"OK nu:16"#),
        (r#"cjson.decode("01")"#, r#"OK nu:1"#),
        (r#"cjson.decode("+1")"#, r#"OK nu:1"#),
        (r#"cjson.decode("1.")"#, r#"OK nu:1"#),
        (r#"cjson.decode("[1,2]\0garbage")[2]"#, r#"OK nu:2"#),
        (
            r#"cjson.decode("")"#,
            r#"ERR user_script:17: Expected value but found T_END at character 1"#,
        ),
        (
            r#"cjson.decode("   ")"#,
            r#"ERR user_script:17: Expected value but found T_END at character 4"#,
        ),
        (
            r#"cjson.decode("x")"#,
            r#"ERR user_script:17: Expected value but found invalid token at character 1"#,
        ),
        (
            r#"cjson.decode("[1,2")"#,
            r#"ERR user_script:17: Expected comma or array end but found T_END at character 5"#,
        ),
        (
            r#"cjson.decode("[1,2,]")"#,
            r#"ERR user_script:17: Expected value but found T_ARR_END at character 6"#,
        ),
        (
            r#"cjson.decode("[1 2]")"#,
            r#"ERR user_script:17: Expected comma or array end but found T_NUMBER at character 4"#,
        ),
        (
            r#"cjson.decode("{\"a\":1,}")"#,
            r#"ERR user_script:17: Expected object key string but found T_OBJ_END at character 8"#,
        ),
        (
            r#"cjson.decode("{1:2}")"#,
            r#"ERR user_script:17: Expected object key string but found T_NUMBER at character 2"#,
        ),
        (
            r#"cjson.decode("{\"a\" 1}")"#,
            r#"ERR user_script:17: Expected colon but found T_NUMBER at character 6"#,
        ),
        (
            r#"cjson.decode("{\"a\"")"#,
            r#"ERR user_script:17: Expected colon but found T_END at character 5"#,
        ),
        (
            r#"cjson.decode("{\"a\":")"#,
            r#"ERR user_script:17: Expected value but found T_END at character 6"#,
        ),
        (
            r#"cjson.decode("{\"a\":1")"#,
            r#"ERR user_script:17: Expected comma or object end but found T_END at character 7"#,
        ),
        (
            r#"cjson.decode("{\"a\":1 \"b\"")"#,
            r#"ERR user_script:17: Expected comma or object end but found T_STRING at character 8"#,
        ),
        (
            r#"cjson.decode("[1] x")"#,
            r#"ERR user_script:17: Expected the end but found invalid token at character 5"#,
        ),
        (
            r#"cjson.decode("[1] [2]")"#,
            r#"ERR user_script:17: Expected the end but found T_ARR_BEGIN at character 5"#,
        ),
        (
            r#"cjson.decode("[")"#,
            r#"ERR user_script:17: Expected value but found T_END at character 2"#,
        ),
        (
            r#"cjson.decode("{")"#,
            r#"ERR user_script:17: Expected object key string but found T_END at character 2"#,
        ),
        (
            r#"cjson.decode("]")"#,
            r#"ERR user_script:17: Expected value but found T_ARR_END at character 1"#,
        ),
        (
            r#"cjson.decode("}")"#,
            r#"ERR user_script:17: Expected value but found T_OBJ_END at character 1"#,
        ),
        (
            r#"cjson.decode(":")"#,
            r#"ERR user_script:17: Expected value but found T_COLON at character 1"#,
        ),
        (
            r#"cjson.decode(",")"#,
            r#"ERR user_script:17: Expected value but found T_COMMA at character 1"#,
        ),
        (
            r#"cjson.decode("\"abc")"#,
            r#"ERR user_script:17: Expected value but found unexpected end of string at character 5"#,
        ),
        (
            r#"cjson.decode("\"a\\qb\"")"#,
            r#"ERR user_script:17: Expected value but found invalid escape code at character 3"#,
        ),
        (
            r#"cjson.decode("\"a\\")"#,
            r#"ERR user_script:17: Expected value but found invalid escape code at character 3"#,
        ),
        (
            r#"cjson.decode("\"\\ud83d\"")"#,
            r#"ERR user_script:17: Expected value but found invalid unicode escape code at character 2"#,
        ),
        (
            r#"cjson.decode("\"\\ud83d\\u0041\"")"#,
            r#"ERR user_script:17: Expected value but found invalid unicode escape code at character 2"#,
        ),
        (
            r#"cjson.decode("\"\\ude00\"")"#,
            r#"ERR user_script:17: Expected value but found invalid unicode escape code at character 2"#,
        ),
        (
            r#"cjson.decode("\"\\u12\"")"#,
            r#"ERR user_script:17: Expected value but found invalid unicode escape code at character 2"#,
        ),
        (
            r#"cjson.decode("\"\\u12g4\"")"#,
            r#"ERR user_script:17: Expected value but found invalid unicode escape code at character 2"#,
        ),
        (
            r#"cjson.decode("[\"a\0b\"]")"#,
            r#"ERR user_script:17: Expected value but found unexpected end of string at character 4"#,
        ),
        (
            r#"cjson.decode("-")"#,
            r#"ERR user_script:17: Expected value but found invalid number at character 1"#,
        ),
        (
            r#"cjson.decode("- 1")"#,
            r#"ERR user_script:17: Expected value but found invalid number at character 1"#,
        ),
        (
            r#"cjson.decode("+")"#,
            r#"ERR user_script:17: Expected value but found invalid number at character 1"#,
        ),
        (
            r#"cjson.decode(".5")"#,
            r#"ERR user_script:17: Expected value but found invalid token at character 1"#,
        ),
        (
            r#"cjson.decode("1e")"#,
            r#"ERR user_script:17: Expected the end but found invalid token at character 2"#,
        ),
        (
            r#"cjson.decode("0x")"#,
            r#"ERR user_script:17: Expected the end but found invalid token at character 2"#,
        ),
        (
            r#"cjson.decode("tru")"#,
            r#"ERR user_script:17: Expected value but found invalid token at character 1"#,
        ),
        (
            r#"cjson.decode("truex")"#,
            r#"ERR user_script:17: Expected the end but found invalid token at character 5"#,
        ),
        (
            r#"cjson.decode("nul")"#,
            r#"ERR user_script:17: Expected value but found invalid token at character 1"#,
        ),
        (
            r#"cjson.decode("True")"#,
            r#"ERR user_script:17: Expected value but found invalid token at character 1"#,
        ),
        (
            r#"cjson.decode("\239\187\191[1]")"#,
            r#"ERR user_script:17: Expected value but found invalid token at character 1"#,
        ),
        (
            r#"cjson.decode("\0[1]")"#,
            r#"ERR user_script:17: JSON parser does not support UTF-16 or UTF-32"#,
        ),
        (
            r#"cjson.decode("a\0")"#,
            r#"ERR user_script:17: JSON parser does not support UTF-16 or UTF-32"#,
        ),
        (
            r#"cjson.decode("\254\255")"#,
            r#"ERR user_script:17: Expected value but found invalid token at character 1"#,
        ),
        (
            r#"cjson.decode(nil)"#,
            r#"ERR user_script:17: bad argument #1 to 'decode' (string expected, got nil)"#,
        ),
        (
            r#"cjson.decode({})"#,
            r#"ERR user_script:17: bad argument #1 to 'decode' (string expected, got table)"#,
        ),
        (
            r#"cjson.decode()"#,
            r#"ERR user_script:17: bad argument #1 to 'decode' (expected 1 argument)"#,
        ),
        (
            r#"cjson.decode("1", "2")"#,
            r#"ERR user_script:17: bad argument #1 to 'decode' (expected 1 argument)"#,
        ),
        (
            r#"cjson.decode(string.rep("[", 1000) .. string.rep("]", 1000)) ~= nil"#,
            r#"OK bo:true"#,
        ),
        (
            r#"cjson.decode(string.rep("[", 1001))"#,
            r#"ERR user_script:17: Found too many nested data structures (1001) at character 1001"#,
        ),
        (
            r#"cjson.decode(string.rep("{\"a\":", 1001))"#,
            r#"ERR user_script:17: Found too many nested data structures (1001) at character 5001"#,
        ),
        (
            r#"cjson.decode(string.rep("[", 1000))"#,
            r#"ERR user_script:17: Expected value but found T_END at character 1001"#,
        ),
        (
            r#"(function() local t = {} local c = t for i = 1, 999 do c[1] = {} c = c[1] end return #cjson.encode(t) end)()"#,
            r#"OK nu:2000"#,
        ),
        (
            r#"(function() local t = {} local c = t for i = 1, 1000 do c[1] = {} c = c[1] end return cjson.encode(t) end)()"#,
            r#"ERR user_script:17: Cannot serialise, excessive nesting (1001)"#,
        ),
        (
            r#"(function() local t = {} local c = t for i = 1, 1000 do c.a = {} c = c.a end return cjson.encode(t) end)()"#,
            r#"ERR user_script:17: Cannot serialise, excessive nesting (1001)"#,
        ),
        (
            r#"(function() local t = {} t[1] = t return cjson.encode(t) end)()"#,
            r#"ERR user_script:17: Cannot serialise, excessive nesting (1001)"#,
        ),
        (
            r#"cjson.encode(cjson.decode("[1,2,{\"a\":[3,4.5,\"x\"]}]"))"#,
            r#"OK s:[1,2,{"a":[3,4.5,"x"]}]"#,
        ),
        (
            r#"cjson.encode(cjson.decode("{\"k\":\"\\u00e9\\/\"}"))"#,
            r#"OK x:7b226b223a22c3a95c2f227d"#,
        ),
        (
            r#"cjson.encode_sparse_array()"#,
            r#"OK bo:false nu:2 nu:10"#,
        ),
        (
            r#"select(2, cjson.encode_sparse_array())"#,
            r#"OK nu:2 nu:10"#,
        ),
        (r#"select(3, cjson.encode_sparse_array())"#, r#"OK nu:10"#),
        (r#"cjson.encode_max_depth()"#, r#"OK nu:1000"#),
        (r#"cjson.decode_max_depth()"#, r#"OK nu:1000"#),
        (r#"cjson.encode_number_precision()"#, r#"OK nu:14"#),
        (r#"cjson.encode_keep_buffer()"#, r#"OK bo:true"#),
        (r#"cjson.encode_invalid_numbers()"#, r#"OK bo:false"#),
        (r#"cjson.decode_invalid_numbers()"#, r#"OK bo:true"#),
        (r#"cjson.new().encode_max_depth(3)"#, r#"OK nu:3"#),
        (r#"cjson.new().encode_max_depth("3")"#, r#"OK nu:3"#),
        (r#"cjson.new().encode_max_depth(2.7)"#, r#"OK nu:2"#),
        (
            r#"cjson.new().encode_max_depth(0)"#,
            r#"ERR user_script:17: bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)"#,
        ),
        (
            r#"cjson.new().encode_max_depth(-1)"#,
            r#"ERR user_script:17: bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)"#,
        ),
        (
            r#"cjson.new().encode_max_depth("x")"#,
            r#"ERR user_script:17: bad argument #1 to 'encode_max_depth' (number expected, got string)"#,
        ),
        (
            r#"cjson.new().encode_max_depth({})"#,
            r#"ERR user_script:17: bad argument #1 to 'encode_max_depth' (number expected, got table)"#,
        ),
        (
            r#"cjson.new().encode_max_depth(2, 3)"#,
            r#"ERR user_script:17: bad argument #2 to 'encode_max_depth' (found too many arguments)"#,
        ),
        (r#"cjson.new().encode_max_depth(nil)"#, r#"OK nu:1000"#),
        (r#"cjson.new().decode_max_depth(5)"#, r#"OK nu:5"#),
        (
            r#"cjson.new().decode_max_depth(0)"#,
            r#"ERR user_script:17: bad argument #1 to 'decode_max_depth' (expected integer between 1 and 2147483647)"#,
        ),
        (r#"cjson.new().encode_number_precision(1)"#, r#"OK nu:1"#),
        (r#"cjson.new().encode_number_precision(14)"#, r#"OK nu:14"#),
        (
            r#"cjson.new().encode_number_precision(15)"#,
            r#"ERR user_script:17: bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)"#,
        ),
        (
            r#"cjson.new().encode_number_precision(0)"#,
            r#"ERR user_script:17: bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)"#,
        ),
        (r#"cjson.new().encode_keep_buffer(false)"#, r#"OK bo:false"#),
        (r#"cjson.new().encode_keep_buffer("off")"#, r#"OK bo:false"#),
        (r#"cjson.new().encode_keep_buffer("on")"#, r#"OK bo:true"#),
        (
            r#"cjson.new().encode_keep_buffer("x")"#,
            r#"ERR user_script:17: bad argument #1 to 'encode_keep_buffer' (invalid option 'x')"#,
        ),
        (
            r#"cjson.new().encode_keep_buffer(1)"#,
            r#"ERR user_script:17: bad argument #1 to 'encode_keep_buffer' (invalid option '1')"#,
        ),
        (
            r#"cjson.new().encode_keep_buffer({})"#,
            r#"ERR user_script:17: bad argument #1 to 'encode_keep_buffer' (string expected, got table)"#,
        ),
        (
            r#"cjson.new().encode_keep_buffer("on\0x")"#,
            r#"OK bo:true"#,
        ),
        (
            r#"cjson.new().encode_invalid_numbers(true)"#,
            r#"OK bo:true"#,
        ),
        (
            r#"cjson.new().encode_invalid_numbers("null")"#,
            r#"OK s:null"#,
        ),
        (
            r#"cjson.new().encode_invalid_numbers("off")"#,
            r#"OK bo:false"#,
        ),
        (
            r#"cjson.new().encode_invalid_numbers(1)"#,
            r#"ERR user_script:17: bad argument #1 to 'encode_invalid_numbers' (invalid option '1')"#,
        ),
        (
            r#"cjson.new().encode_invalid_numbers(nil)"#,
            r#"OK bo:false"#,
        ),
        (
            r#"cjson.new().decode_invalid_numbers(false)"#,
            r#"OK bo:false"#,
        ),
        (
            r#"cjson.new().decode_invalid_numbers("on")"#,
            r#"OK bo:true"#,
        ),
        (
            r#"cjson.new().encode_sparse_array(true)"#,
            r#"OK bo:true nu:2 nu:10"#,
        ),
        (
            r#"cjson.new().encode_sparse_array(true, 3, 4)"#,
            r#"OK bo:true nu:3 nu:4"#,
        ),
        (
            r#"select(2, cjson.new().encode_sparse_array(nil, 3, 4))"#,
            r#"OK nu:3 nu:4"#,
        ),
        (
            r#"select(3, cjson.new().encode_sparse_array(nil, 3, 4))"#,
            r#"OK nu:4"#,
        ),
        (
            r#"cjson.new().encode_sparse_array(true, "x")"#,
            r#"ERR user_script:17: bad argument #2 to 'encode_sparse_array' (number expected, got string)"#,
        ),
        (
            r#"cjson.new().encode_sparse_array(nil, -1)"#,
            r#"ERR user_script:17: bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)"#,
        ),
        (
            r#"cjson.new().encode_sparse_array(nil, nil, -1)"#,
            r#"ERR user_script:17: bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)"#,
        ),
        (
            r#"cjson.new().encode_sparse_array(1, 2, 3, 4)"#,
            r#"ERR user_script:17: bad argument #4 to 'encode_sparse_array' (found too many arguments)"#,
        ),
        (
            r#"cjson.new().encode_sparse_array("x")"#,
            r#"ERR user_script:17: bad argument #1 to 'encode_sparse_array' (invalid option 'x')"#,
        ),
        (
            r#"(function() local c = cjson.new() c.encode_invalid_numbers(true) return c.encode({1/0, -1/0, 0/0, -(0/0)}) end)()"#,
            r#"OK s:[inf,-inf,nan,nan]"#,
        ),
        (
            r#"(function() local c = cjson.new() c.encode_invalid_numbers(true) return c.encode({[1/0] = 1}) end)()"#,
            r#"OK s:{"inf":1}"#,
        ),
        (
            r#"(function() local c = cjson.new() c.encode_invalid_numbers("null") return c.encode({1/0, 0/0, 2}) end)()"#,
            r#"OK s:[null,null,2]"#,
        ),
        (
            r#"(function() local c = cjson.new() c.encode_invalid_numbers("null") return c.encode({[0/0 ~= 0/0 and 1/0 or 0] = 1}) end)()"#,
            r#"OK s:{"null":1}"#,
        ),
        (
            r#"(function() local c = cjson.new() c.encode_number_precision(3) return c.encode({3.14159, 1234567, 0.000012345, 100}) end)()"#,
            r#"OK s:[3.14,1.23e+06,1.23e-05,100]"#,
        ),
        (
            r#"(function() local c = cjson.new() c.encode_number_precision(1) return c.encode(0.15) end)()"#,
            r#"OK s:0.1"#,
        ),
        (
            r#"(function() local c = cjson.new() c.encode_sparse_array(true) return c.encode({[1] = 1, [20] = 2}) end)()"#,
            r#"OK s:{"1":1,"20":2}"#,
        ),
        (
            r#"(function() local c = cjson.new() c.encode_sparse_array(false, 0) return #c.encode({[1] = 1, [2000] = 2}) end)()"#,
            r#"OK nu:9995"#,
        ),
        (
            r#"(function() local c = cjson.new() c.encode_sparse_array(false, 2, 100) return #c.encode({[1] = 1, [100] = 2}) end)()"#,
            r#"OK nu:495"#,
        ),
        (
            r#"(function() local c = cjson.new() c.encode_sparse_array(false, 1, 0) return c.encode({[1] = 1, [3] = 2}) end)()"#,
            r#"ERR user_script:17: Cannot serialise table: excessively sparse array"#,
        ),
        (
            r#"(function() local c = cjson.new() c.encode_max_depth(2) return c.encode({{1}}) end)()"#,
            r#"OK s:[[1]]"#,
        ),
        (
            r#"(function() local c = cjson.new() c.encode_max_depth(2) return c.encode({{{1}}}) end)()"#,
            r#"ERR user_script:17: Cannot serialise, excessive nesting (3)"#,
        ),
        (
            r#"(function() local c = cjson.new() c.encode_max_depth(2) return c.encode({a = {b = {}}}) end)()"#,
            r#"ERR user_script:17: Cannot serialise, excessive nesting (3)"#,
        ),
        (
            r#"(function() local c = cjson.new() c.decode_max_depth(2) return c.decode("[[1]]")[1][1] end)()"#,
            r#"OK nu:1"#,
        ),
        (
            r#"(function() local c = cjson.new() c.decode_max_depth(2) return c.decode("[[[1]]]") end)()"#,
            r#"ERR user_script:17: Found too many nested data structures (3) at character 3"#,
        ),
        (
            r#"(function() local c = cjson.new() c.decode_max_depth(2) return c.decode("{\"a\":{\"b\":{}}}") end)()"#,
            r#"ERR user_script:17: Found too many nested data structures (3) at character 11"#,
        ),
        (
            r#"(function() local c = cjson.new() c.decode_invalid_numbers(false) return c.decode("0x10") end)()"#,
            r#"ERR user_script:17: Expected value but found invalid number at character 1"#,
        ),
        (
            r#"(function() local c = cjson.new() c.decode_invalid_numbers(false) return c.decode("NaN") end)()"#,
            r#"ERR user_script:17: Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local c = cjson.new() c.decode_invalid_numbers(false) return c.decode("+1") end)()"#,
            r#"ERR user_script:17: Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local c = cjson.new() c.decode_invalid_numbers(false) return c.decode("-Inf") end)()"#,
            r#"ERR user_script:17: Expected value but found invalid number at character 1"#,
        ),
        (
            r#"(function() local c = cjson.new() c.decode_invalid_numbers(false) return c.decode("01") end)()"#,
            r#"ERR user_script:17: Expected value but found invalid number at character 1"#,
        ),
        (
            r#"(function() local c = cjson.new() c.decode_invalid_numbers(false) return c.decode("-0.5e2") end)()"#,
            r#"OK nu:-50"#,
        ),
        (
            r#"(function() local c = cjson.new() c.decode_invalid_numbers(false) return c.decode("0") end)()"#,
            r#"OK nu:0"#,
        ),
        (
            r#"(function() local c = cjson.new() c.decode_invalid_numbers(false) return c.decode("[1, nan]") end)()"#,
            r#"ERR user_script:17: Expected value but found invalid token at character 5"#,
        ),
        (
            r#"(function() local c = cjson.new() c.encode_max_depth(5) return cjson.encode_max_depth() end)()"#,
            r#"OK nu:1000"#,
        ),
        (
            r#"(function() local c = cjson.new() return c.new().encode({1}) end)()"#,
            r#"OK s:[1]"#,
        ),
        (r#"cjson.new() == cjson"#, r#"OK bo:false"#),
        (r#"cjson.new().null == cjson.null"#, r#"OK bo:true"#),
        (r#"cjson._NAME"#, r#"OK s:cjson"#),
        (r#"cjson._VERSION"#, r#"OK s:2.1.0"#),
        (r#"type(cjson.null)"#, r#"OK s:userdata"#),
        (r#"tostring(cjson.null)"#, r#"OK s:userdata: (nil)"#),
        (r#"type(cjson)"#, r#"OK s:table"#),
        (r#"type(cmsgpack)"#, r#"OK s:table"#),
        (r#"type(bit)"#, r#"OK s:table"#),
        (r#"type(struct)"#, r#"OK s:table"#),
        (
            r#"(function() local t = {} for k in pairs(cjson) do t[#t + 1] = k end return table.concat(t, ",") end)()"#,
            r#"OK s:_NAME,encode,decode_max_depth,_VERSION,decode_invalid_numbers,encode_keep_buffer,null,encode_number_precision,new,encode_max_depth,encode_invalid_numbers,decode,encode_sparse_array"#,
        ),
        (
            r#"(function() local t = {} for k in pairs(cjson.new()) do t[#t + 1] = k end return table.concat(t, ",") end)()"#,
            r#"OK s:_NAME,encode,decode_max_depth,_VERSION,decode_invalid_numbers,encode_keep_buffer,null,encode_number_precision,new,encode_max_depth,encode_invalid_numbers,decode,encode_sparse_array"#,
        ),
        (
            r#"(function() local t = {} for k in pairs(cmsgpack) do t[#t + 1] = k end return table.concat(t, ",") end)()"#,
            r#"OK s:_DESCRIPTION,pack,_NAME,unpack,_COPYRIGHT,_VERSION,unpack_one,unpack_limit"#,
        ),
        (
            r#"(function() local t = {} for k in pairs(bit) do t[#t + 1] = k end return table.concat(t, ",") end)()"#,
            r#"OK s:band,rshift,bor,bnot,bswap,bxor,tobit,ror,lshift,tohex,rol,arshift"#,
        ),
        (
            r#"(function() local t = {} for k in pairs(struct) do t[#t + 1] = k end return table.concat(t, ",") end)()"#,
            r#"OK s:pack,size,unpack"#,
        ),
        (
            r#"pcall(cjson.encode)"#,
            r#"OK bo:false s:bad argument #1 to '?' (expected 1 argument)"#,
        ),
        (
            r#"pcall(cjson.decode, "x")"#,
            r#"OK bo:false s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"pcall(bit.tobit, "x")"#,
            r#"OK bo:false s:bad argument #1 to '?' (number expected, got string)"#,
        ),
        (
            r#"pcall(struct.unpack, "s", "abc")"#,
            r#"OK bo:false s:unfinished string in data"#,
        ),
        (
            r#"pcall(cmsgpack.unpack, "\193")"#,
            r#"OK bo:false s:Bad data format in input."#,
        ),
        (
            r#"pcall(cmsgpack.unpack, "\129\192\1")"#,
            r#"OK bo:false s:table index is nil"#,
        ),
        (
            r#"(function() local c = cjson.new() c.decode_max_depth(100000) return c.decode(string.rep("[", 10000)) end)()"#,
            r#"ERR user_script:17: Found too many nested data structures (7999) at character 7999"#,
        ),
        (
            r#"(function() local c = cjson.new() c.decode_max_depth(100000) return c.decode(string.rep("{\"a\":", 10000)) end)()"#,
            r#"ERR user_script:17: Found too many nested data structures (4000) at character 19996"#,
        ),
        (
            r#"(function() local c = cjson.new() c.decode_max_depth(100000) return c.decode(string.rep("[{\"a\":", 10000)) end)()"#,
            r#"ERR user_script:17: Found too many nested data structures (5333) at character 15997"#,
        ),
        (
            r#"(function() local c = cjson.new() c.decode_max_depth(100000) return #c.encode(c.decode(string.rep("[", 7998) .. string.rep("]", 7998))) end)()"#,
            r#"ERR user_script:17: Cannot serialise, excessive nesting (1001)"#,
        ),
        (
            r#"(function() local c = cjson.new() c.encode_max_depth(100000) local t = {} local x = t for i = 1, 10000 do x[1] = {} x = x[1] end return c.encode(t) end)()"#,
            r#"ERR user_script:17: Cannot serialise, excessive nesting (7998)"#,
        ),
        (
            r#"(function() local c = cjson.new() c.encode_max_depth(100000) local t = {} local x = t for i = 1, 10000 do x.k = {} x = x.k end return c.encode(t) end)()"#,
            r#"ERR user_script:17: Cannot serialise, excessive nesting (4000)"#,
        ),
        (
            r#"(function() local c = cjson.new() c.encode_max_depth(100000) local t = {} local x = t for i = 1, 7990 do x[1] = {} x = x[1] end return #c.encode(t) end)()"#,
            r#"OK nu:15982"#,
        ),
    ]);
}

#[test]
fn cmsgpack_matches_redis() {
    check(&[
        (r#"cmsgpack.pack(0)"#, r#"OK x:00"#),
        (r#"cmsgpack.pack(1)"#, r#"OK x:01"#),
        (r#"cmsgpack.pack(127)"#, r#"OK x:7f"#),
        (r#"cmsgpack.pack(128)"#, r#"OK x:cc80"#),
        (r#"cmsgpack.pack(255)"#, r#"OK x:ccff"#),
        (r#"cmsgpack.pack(256)"#, r#"OK x:cd0100"#),
        (r#"cmsgpack.pack(65535)"#, r#"OK x:cdffff"#),
        (r#"cmsgpack.pack(65536)"#, r#"OK x:ce00010000"#),
        (r#"cmsgpack.pack(4294967295)"#, r#"OK x:ceffffffff"#),
        (r#"cmsgpack.pack(4294967296)"#, r#"OK x:cf0000000100000000"#),
        (r#"cmsgpack.pack(2^53)"#, r#"OK x:cf0020000000000000"#),
        (r#"cmsgpack.pack(2^62)"#, r#"OK x:cf4000000000000000"#),
        (r#"cmsgpack.pack(2^63)"#, r#"OK x:ca5f000000"#),
        (r#"cmsgpack.pack(2^64)"#, r#"OK x:ca5f800000"#),
        (r#"cmsgpack.pack(-1)"#, r#"OK x:ff"#),
        (r#"cmsgpack.pack(-32)"#, r#"OK x:e0"#),
        (r#"cmsgpack.pack(-33)"#, r#"OK x:d0df"#),
        (r#"cmsgpack.pack(-128)"#, r#"OK x:d080"#),
        (r#"cmsgpack.pack(-129)"#, r#"OK x:d1ff7f"#),
        (r#"cmsgpack.pack(-32768)"#, r#"OK x:d18000"#),
        (r#"cmsgpack.pack(-32769)"#, r#"OK x:d2ffff7fff"#),
        (r#"cmsgpack.pack(-2147483648)"#, r#"OK x:d280000000"#),
        (
            r#"cmsgpack.pack(-2147483649)"#,
            r#"OK x:d3ffffffff7fffffff"#,
        ),
        (r#"cmsgpack.pack(-2^63)"#, r#"OK x:d38000000000000000"#),
        (r#"cmsgpack.pack(-2^64)"#, r#"OK x:cadf800000"#),
        (r#"cmsgpack.pack(-0)"#, r#"OK x:00"#),
        (r#"cmsgpack.pack(0.5)"#, r#"OK x:ca3f000000"#),
        (r#"cmsgpack.pack(1.5)"#, r#"OK x:ca3fc00000"#),
        (r#"cmsgpack.pack(-1.5)"#, r#"OK x:cabfc00000"#),
        (r#"cmsgpack.pack(0.1)"#, r#"OK x:cb3fb999999999999a"#),
        (r#"cmsgpack.pack(3.4e38)"#, r#"OK x:cb47eff933c78cdfad"#),
        (r#"cmsgpack.pack(1e39)"#, r#"OK x:cb48078287f49c4a1d"#),
        (r#"cmsgpack.pack(1e-45)"#, r#"OK x:cb3696d601ad376ab9"#),
        (r#"cmsgpack.pack(1/0)"#, r#"OK x:ca7f800000"#),
        (r#"cmsgpack.pack(-1/0)"#, r#"OK x:caff800000"#),
        (r#"cmsgpack.pack(0/0)"#, r#"OK x:cbfff8000000000000"#),
        (r#"cmsgpack.pack(true)"#, r#"OK x:c3"#),
        (r#"cmsgpack.pack(false)"#, r#"OK x:c2"#),
        (r#"cmsgpack.pack(nil)"#, r#"OK x:c0"#),
        (r#"cmsgpack.pack(cjson.null)"#, r#"OK x:c0"#),
        (r#"cmsgpack.pack(type)"#, r#"OK x:c0"#),
        (r#"cmsgpack.pack(coroutine.running())"#, r#"OK x:c0"#),
        (r#"cmsgpack.pack("")"#, r#"OK x:a0"#),
        (r#"cmsgpack.pack("a")"#, r#"OK x:a161"#),
        (r#"cmsgpack.pack("\0\255")"#, r#"OK x:a200ff"#),
        (
            r#"cmsgpack.pack(string.rep("a", 31))"#,
            r#"OK x:bf61616161616161616161616161616161616161616161616161616161616161"#,
        ),
        (
            r#"cmsgpack.pack(string.rep("a", 32)):sub(1, 3)"#,
            r#"OK x:d92061"#,
        ),
        (
            r#"cmsgpack.pack(string.rep("a", 255)):sub(1, 3)"#,
            r#"OK x:d9ff61"#,
        ),
        (
            r#"cmsgpack.pack(string.rep("a", 256)):sub(1, 4)"#,
            r#"OK x:da010061"#,
        ),
        (
            r#"cmsgpack.pack(string.rep("a", 65535)):sub(1, 4)"#,
            r#"OK x:daffff61"#,
        ),
        (
            r#"cmsgpack.pack(string.rep("a", 65536)):sub(1, 6)"#,
            r#"OK x:db0001000061"#,
        ),
        (r#"cmsgpack.pack({})"#, r#"OK x:90"#),
        (r#"cmsgpack.pack({1, 2, 3})"#, r#"OK x:93010203"#),
        (r#"cmsgpack.pack({1, nil, 3})"#, r#"OK x:8201010303"#),
        (r#"cmsgpack.pack({[1] = 1, [3] = 3})"#, r#"OK x:8201010303"#),
        (r#"cmsgpack.pack({[2] = 2})"#, r#"OK x:810202"#),
        (r#"cmsgpack.pack({[0] = 1})"#, r#"OK x:810001"#),
        (r#"cmsgpack.pack({[-1] = 1})"#, r#"OK x:81ff01"#),
        (r#"cmsgpack.pack({[1.5] = 1})"#, r#"OK x:81ca3fc0000001"#),
        (
            r#"cmsgpack.pack({[2^40] = 1})"#,
            r#"OK x:81cf000001000000000001"#,
        ),
        (r#"cmsgpack.pack({a = 1})"#, r#"OK x:81a16101"#),
        (
            r#"cmsgpack.pack({a = {b = {c = "d"}}})"#,
            r#"OK x:81a16181a16281a163a164"#,
        ),
        (
            r#"cmsgpack.pack({1, 2, a = 3})"#,
            r#"OK x:8301010202a16103"#,
        ),
        (r#"cmsgpack.pack({[true] = false})"#, r#"OK x:81c3c2"#),
        (r#"cmsgpack.pack({{}, {{}}})"#, r#"OK x:92909190"#),
        (
            r#"cmsgpack.pack({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})"#,
            r#"OK x:9f0102030405060708090a0b0c0d0e0f"#,
        ),
        (
            r#"cmsgpack.pack({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})"#,
            r#"OK x:dc00100102030405060708090a0b0c0d0e0f10"#,
        ),
        (
            r#"cmsgpack.pack({a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9,j=10,k=11,l=12,m=13,n=14,o=15,p=16}):sub(1, 3)"#,
            r#"OK x:de0010"#,
        ),
        (
            r#"(function() local t = {} for i = 1, 70000 do t[i] = 1 end return cmsgpack.pack(t):sub(1, 6) end)()"#,
            r#"OK x:dd0001117001"#,
        ),
        (
            r#"(function() local t = {} local c = t for i = 1, 20 do c[1] = {} c = c[1] end return cmsgpack.pack(t) end)()"#,
            r#"OK x:91919191919191919191919191919191c0"#,
        ),
        (
            r#"(function() local t = {} t[1] = t return cmsgpack.pack(t) end)()"#,
            r#"OK x:91919191919191919191919191919191c0"#,
        ),
        (
            r#"(function() local t = {} t.a = t return cmsgpack.pack(t) end)()"#,
            r#"OK x:81a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a161c0"#,
        ),
        (
            r#"(function() local t = {} local c = t for i = 1, 20 do c[c] = {} c = c[c] end return #cmsgpack.pack(t) end)()"#,
            r#"OK nu:131071"#,
        ),
        (
            r#"cmsgpack.pack(1, "a", {1, 2}, {a = 1}, true, false, nil)"#,
            r#"OK x:01a16192010281a16101c3c2c0"#,
        ),
        (r#"cmsgpack.pack(nil, nil)"#, r#"OK x:c0c0"#),
        (
            r#"cmsgpack.pack()"#,
            r#"ERR user_script:17: bad argument #0 to 'pack' (MessagePack pack needs input.)"#,
        ),
        (
            r#"cmsgpack.unpack(cmsgpack.pack(1, -1, 300, -300, 70000, -70000, 2^40, -2^40))"#,
            r#"OK nu:1 nu:-1 nu:300 nu:-300 nu:70000 nu:-70000 nu:1099511627776 nu:-1099511627776"#,
        ),
        (
            r#"cmsgpack.unpack(cmsgpack.pack(1.5, 0.1, 1/0, -1/0))"#,
            r#"OK nu:1.5 nu:0.1 nu:inf nu:-inf"#,
        ),
        (
            r#"cmsgpack.unpack(cmsgpack.pack("hello", "", string.rep("z", 40)))"#,
            r#"OK s:hello s: s:zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"#,
        ),
        (
            r#"cmsgpack.unpack(cmsgpack.pack(true, false, nil))"#,
            r#"OK bo:true bo:false ni:nil"#,
        ),
        (
            r#"cmsgpack.unpack(cmsgpack.pack({1, 2, 3}))[3]"#,
            r#"OK nu:3"#,
        ),
        (
            r#"cmsgpack.unpack(cmsgpack.pack({a = {b = "c"}})).a.b"#,
            r#"OK s:c"#,
        ),
        (
            r#"cmsgpack.unpack("\203\255\248\0\0\0\0\0\0")"#,
            r#"OK nu:-nan"#,
        ),
        (
            r#"cmsgpack.unpack("\207\255\255\255\255\255\255\255\255")"#,
            r#"OK nu:-1"#,
        ),
        (
            r#"cmsgpack.unpack("\211\128\0\0\0\0\0\0\0")"#,
            r#"OK nu:-9.2233720368548e+18"#,
        ),
        (
            r#"cmsgpack.unpack("\211\255\255\255\255\255\255\255\255")"#,
            r#"OK nu:-1"#,
        ),
        (
            r#"cmsgpack.unpack("\206\255\255\255\255")"#,
            r#"OK nu:4294967295"#,
        ),
        (
            r#"cmsgpack.unpack("\210\128\0\0\0")"#,
            r#"OK nu:-2147483648"#,
        ),
        (r#"cmsgpack.unpack("\205\1\0")"#, r#"OK nu:256"#),
        (r#"cmsgpack.unpack("\209\255\0")"#, r#"OK nu:-256"#),
        (r#"cmsgpack.unpack("\204\200")"#, r#"OK nu:200"#),
        (r#"cmsgpack.unpack("\208\200")"#, r#"OK nu:-56"#),
        (
            r#"cmsgpack.unpack("\224\255\127\0")"#,
            r#"OK nu:-32 nu:-1 nu:127 nu:0"#,
        ),
        (r#"cmsgpack.unpack("\202\63\192\0\0")"#, r#"OK nu:1.5"#),
        (r#"cmsgpack.unpack("\217\3abc")"#, r#"OK s:abc"#),
        (r#"cmsgpack.unpack("\218\0\3abc")"#, r#"OK s:abc"#),
        (r#"cmsgpack.unpack("\219\0\0\0\3abc")"#, r#"OK s:abc"#),
        (
            r#"cmsgpack.unpack("\219\255\255\255\255abc")"#,
            r#"ERR user_script:17: Missing bytes in input."#,
        ),
        (r#"cmsgpack.unpack("\220\0\2\1\2")[2]"#, r#"OK nu:2"#),
        (r#"cmsgpack.unpack("\221\0\0\0\2\1\2")[2]"#, r#"OK nu:2"#),
        (r#"cmsgpack.unpack("\222\0\1\161a\5").a"#, r#"OK nu:5"#),
        (r#"cmsgpack.unpack("\223\0\0\0\1\161a\6").a"#, r#"OK nu:6"#),
        (r#"cmsgpack.unpack("\129\1\192")[1]"#, r#"OK ni:nil"#),
        (r#"cmsgpack.unpack("\146\192\1")[2]"#, r#"OK nu:1"#),
        (
            r#"cmsgpack.unpack("\129\192\1")"#,
            r#"ERR table index is nil"#,
        ),
        (
            r#"cmsgpack.unpack("\129\202\127\192\0\0\1")"#,
            r#"ERR table index is NaN"#,
        ),
        (
            r#"cmsgpack.unpack("\129\203\255\248\0\0\0\0\0\0\1")"#,
            r#"ERR table index is NaN"#,
        ),
        (
            r#"cmsgpack.unpack("\129\1")"#,
            r#"ERR user_script:17: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack("\146\1")"#,
            r#"ERR user_script:17: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack("\145")"#,
            r#"ERR user_script:17: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack("\161")"#,
            r#"ERR user_script:17: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack("\162a")"#,
            r#"ERR user_script:17: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack("\204")"#,
            r#"ERR user_script:17: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack("\205\1")"#,
            r#"ERR user_script:17: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack("\207\1\2\3")"#,
            r#"ERR user_script:17: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack("\203\1")"#,
            r#"ERR user_script:17: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack("\217")"#,
            r#"ERR user_script:17: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack("\217\5ab")"#,
            r#"ERR user_script:17: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack("\220\0")"#,
            r#"ERR user_script:17: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack("\221\0\0\0\9")"#,
            r#"ERR user_script:17: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack("\193")"#,
            r#"ERR user_script:17: Bad data format in input."#,
        ),
        (
            r#"cmsgpack.unpack("\196\1a")"#,
            r#"ERR user_script:17: Bad data format in input."#,
        ),
        (
            r#"cmsgpack.unpack("\197\0\1a")"#,
            r#"ERR user_script:17: Bad data format in input."#,
        ),
        (
            r#"cmsgpack.unpack("\199\1\1a")"#,
            r#"ERR user_script:17: Bad data format in input."#,
        ),
        (
            r#"cmsgpack.unpack("\212\1\1")"#,
            r#"ERR user_script:17: Bad data format in input."#,
        ),
        (
            r#"cmsgpack.unpack("\1\193")"#,
            r#"ERR user_script:17: Bad data format in input."#,
        ),
        (r#"cmsgpack.unpack("\1\2\3")"#, r#"OK nu:1 nu:2 nu:3"#),
        (r#"cmsgpack.unpack("")"#, r#"OK "#),
        (
            r#"cmsgpack.unpack()"#,
            r#"ERR user_script:17: bad argument #1 to 'unpack' (string expected, got no value)"#,
        ),
        (r#"cmsgpack.unpack(12)"#, r#"OK nu:49 nu:50"#),
        (
            r#"cmsgpack.unpack({})"#,
            r#"ERR user_script:17: bad argument #1 to 'unpack' (string expected, got table)"#,
        ),
        (r#"cmsgpack.unpack("\1", "ignored")"#, r#"OK nu:1"#),
        (
            r#"select('#', cmsgpack.unpack(string.rep("\1", 7999)))"#,
            r#"OK nu:7999"#,
        ),
        (
            r#"cmsgpack.unpack(string.rep("\1", 8000))"#,
            r#"ERR user_script:17: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"#,
        ),
        (
            r#"type(cmsgpack.unpack(string.rep("\145", 3999) .. "\1"))"#,
            r#"OK s:table"#,
        ),
        (
            r#"cmsgpack.unpack(string.rep("\145", 4000) .. "\1")"#,
            r#"ERR user_script:17: stack overflow (in function mp_decode_to_lua_array)"#,
        ),
        (
            r#"type(cmsgpack.unpack(string.rep("\129\1", 3999) .. "\1"))"#,
            r#"OK s:table"#,
        ),
        (
            r#"cmsgpack.unpack(string.rep("\129\1", 4000) .. "\1")"#,
            r#"ERR user_script:17: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"#,
        ),
        (
            r#"cmsgpack.unpack("\1" .. string.rep("\145", 3999) .. "\1")"#,
            r#"ERR user_script:17: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"#,
        ),
        (r#"cmsgpack.unpack_one("\1\2")"#, r#"OK nu:1 nu:1"#),
        (r#"cmsgpack.unpack_one("\1\2", 0)"#, r#"OK nu:1 nu:1"#),
        (r#"cmsgpack.unpack_one("\1\2", 1)"#, r#"OK nu:-1 nu:2"#),
        (r#"cmsgpack.unpack_one("\1\2", 2)"#, r#"OK nu:-1"#),
        (
            r#"cmsgpack.unpack_one("\1\2", 3)"#,
            r#"ERR user_script:17: Start offset 3 greater than input length 2."#,
        ),
        (
            r#"cmsgpack.unpack_one("\1\2", -1)"#,
            r#"ERR user_script:17: Invalid request to unpack with offset of -1 and limit of 2."#,
        ),
        (r#"cmsgpack.unpack_one("\1\2", "1")"#, r#"OK nu:-1 nu:2"#),
        (
            r#"cmsgpack.unpack_one("\1\2", "x")"#,
            r#"ERR user_script:17: bad argument #2 to 'unpack_one' (number expected, got string)"#,
        ),
        (r#"cmsgpack.unpack_one("\1\2", 1.9)"#, r#"OK nu:-1 nu:2"#),
        (r#"cmsgpack.unpack_one("")"#, r#"OK nu:-1"#),
        (
            r#"cmsgpack.unpack_one("\146\1")"#,
            r#"ERR user_script:17: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack_one()"#,
            r#"ERR user_script:17: bad argument #1 to 'unpack_one' (string expected, got no value)"#,
        ),
        (
            r#"cmsgpack.unpack_limit("\1\2\3", 2)"#,
            r#"OK nu:2 nu:1 nu:2"#,
        ),
        (
            r#"cmsgpack.unpack_limit("\1\2\3", 3)"#,
            r#"OK nu:-1 nu:1 nu:2 nu:3"#,
        ),
        (
            r#"cmsgpack.unpack_limit("\1\2\3", 5)"#,
            r#"OK nu:-1 nu:1 nu:2 nu:3"#,
        ),
        (
            r#"cmsgpack.unpack_limit("\1\2\3", 0)"#,
            r#"OK nu:1 nu:2 nu:3"#,
        ),
        (r#"cmsgpack.unpack_limit("\1\2\3", 0, 1)"#, r#"OK nu:1"#),
        (
            r#"cmsgpack.unpack_limit("\1\2\3", 1, 1)"#,
            r#"OK nu:2 nu:2"#,
        ),
        (
            r#"cmsgpack.unpack_limit("\1\2\3", 2, 2)"#,
            r#"OK nu:-1 nu:3"#,
        ),
        (
            r#"cmsgpack.unpack_limit("\1\2\3", -1)"#,
            r#"ERR user_script:17: Invalid request to unpack with offset of 0 and limit of 3."#,
        ),
        (
            r#"cmsgpack.unpack_limit("\1\2\3", 1, -1)"#,
            r#"ERR user_script:17: Invalid request to unpack with offset of -1 and limit of 3."#,
        ),
        (
            r#"cmsgpack.unpack_limit("\1\2\3", 1, 9)"#,
            r#"ERR user_script:17: Start offset 9 greater than input length 3."#,
        ),
        (
            r#"cmsgpack.unpack_limit("\1\2\3")"#,
            r#"ERR user_script:17: bad argument #2 to 'unpack_limit' (number expected, got no value)"#,
        ),
        (
            r#"cmsgpack.unpack_limit("\1\2\3", "x")"#,
            r#"ERR user_script:17: bad argument #2 to 'unpack_limit' (number expected, got string)"#,
        ),
        (
            r#"cmsgpack.unpack_limit("\1\2\3", 1, "x")"#,
            r#"ERR user_script:17: bad argument #3 to 'unpack_limit' (number expected, got string)"#,
        ),
        (
            r#"cmsgpack.unpack_limit("\1\2\3", 1, nil)"#,
            r#"OK nu:1 nu:1"#,
        ),
        (r#"cmsgpack._NAME"#, r#"OK s:cmsgpack"#),
        (r#"cmsgpack._VERSION"#, r#"OK s:lua-cmsgpack 0.4.0"#),
        (
            r#"cmsgpack._COPYRIGHT"#,
            r#"OK s:Copyright (C) 2012, Salvatore Sanfilippo"#,
        ),
        (
            r#"cmsgpack._DESCRIPTION"#,
            r#"OK s:MessagePack C implementation for Lua"#,
        ),
    ]);
}

#[test]
fn bit_matches_redis() {
    check(&[
        (r#"bit.tobit(0)"#, r#"OK nu:0"#),
        (r#"bit.tobit(1)"#, r#"OK nu:1"#),
        (r#"bit.tobit(-1)"#, r#"OK nu:-1"#),
        (r#"bit.tobit(2^31)"#, r#"OK nu:-2147483648"#),
        (r#"bit.tobit(2^31 - 1)"#, r#"OK nu:2147483647"#),
        (r#"bit.tobit(-2^31)"#, r#"OK nu:-2147483648"#),
        (r#"bit.tobit(-2^31 - 1)"#, r#"OK nu:2147483647"#),
        (r#"bit.tobit(2^32)"#, r#"OK nu:0"#),
        (r#"bit.tobit(2^32 + 5)"#, r#"OK nu:5"#),
        (r#"bit.tobit(-2^32 - 5)"#, r#"OK nu:-5"#),
        (r#"bit.tobit(2^40 + 7)"#, r#"OK nu:7"#),
        (r#"bit.tobit(2^52 + 1)"#, r#"OK nu:0"#),
        (r#"bit.tobit(2^53 + 3)"#, r#"OK nu:2"#),
        (r#"bit.tobit(1e300)"#, r#"OK nu:-2013235812"#),
        (r#"bit.tobit(-1e300)"#, r#"OK nu:-2013235812"#),
        (r#"bit.tobit(1/0)"#, r#"OK nu:0"#),
        (r#"bit.tobit(-1/0)"#, r#"OK nu:0"#),
        (r#"bit.tobit(0/0)"#, r#"OK nu:0"#),
        (r#"bit.tobit(0.5)"#, r#"OK nu:0"#),
        (r#"bit.tobit(1.5)"#, r#"OK nu:2"#),
        (r#"bit.tobit(2.5)"#, r#"OK nu:2"#),
        (r#"bit.tobit(-0.5)"#, r#"OK nu:0"#),
        (r#"bit.tobit(-1.5)"#, r#"OK nu:-2"#),
        (r#"bit.tobit(-2.5)"#, r#"OK nu:-2"#),
        (r#"bit.tobit(1.4999)"#, r#"OK nu:1"#),
        (r#"bit.tobit("12")"#, r#"OK nu:12"#),
        (r#"bit.tobit("0x10")"#, r#"OK nu:16"#),
        (r#"bit.tobit(" 7 ")"#, r#"OK nu:7"#),
        (r#"bit.tobit("0")"#, r#"OK nu:0"#),
        (
            r#"bit.tobit("x")"#,
            r#"ERR user_script:17: bad argument #1 to 'tobit' (number expected, got string)"#,
        ),
        (
            r#"bit.tobit("")"#,
            r#"ERR user_script:17: bad argument #1 to 'tobit' (number expected, got string)"#,
        ),
        (
            r#"bit.tobit()"#,
            r#"ERR user_script:17: bad argument #1 to 'tobit' (number expected, got no value)"#,
        ),
        (
            r#"bit.tobit(nil)"#,
            r#"ERR user_script:17: bad argument #1 to 'tobit' (number expected, got nil)"#,
        ),
        (
            r#"bit.tobit(true)"#,
            r#"ERR user_script:17: bad argument #1 to 'tobit' (number expected, got boolean)"#,
        ),
        (
            r#"bit.tobit({})"#,
            r#"ERR user_script:17: bad argument #1 to 'tobit' (number expected, got table)"#,
        ),
        (r#"bit.tohex(0)"#, r#"OK s:00000000"#),
        (r#"bit.tohex(-1)"#, r#"OK s:ffffffff"#),
        (r#"bit.tohex(255)"#, r#"OK s:000000ff"#),
        (r#"bit.tohex(255, 2)"#, r#"OK s:ff"#),
        (r#"bit.tohex(255, -2)"#, r#"OK s:FF"#),
        (r#"bit.tohex(255, -4)"#, r#"OK s:00FF"#),
        (r#"bit.tohex(0x1234abcd, 4)"#, r#"OK s:abcd"#),
        (r#"bit.tohex(255, 0)"#, r#"OK s:"#),
        (r#"bit.tohex(255, 20)"#, r#"OK s:000000ff"#),
        (r#"bit.tohex(255, -20)"#, r#"OK s:000000FF"#),
        (r#"bit.tohex(2^32 + 10)"#, r#"OK s:0000000a"#),
        (r#"bit.tohex(1.5, 3)"#, r#"OK s:002"#),
        (r#"bit.tohex("255", "2")"#, r#"OK s:ff"#),
        (
            r#"bit.tohex(1, "x")"#,
            r#"ERR user_script:17: bad argument #2 to 'tohex' (number expected, got string)"#,
        ),
        (
            r#"bit.tohex()"#,
            r#"ERR user_script:17: bad argument #1 to 'tohex' (number expected, got no value)"#,
        ),
        (r#"bit.bnot(0)"#, r#"OK nu:-1"#),
        (r#"bit.bnot(-1)"#, r#"OK nu:0"#),
        (r#"bit.bnot(5)"#, r#"OK nu:-6"#),
        (r#"bit.bnot(2^32)"#, r#"OK nu:-1"#),
        (
            r#"bit.bnot("x")"#,
            r#"ERR user_script:17: bad argument #1 to 'bnot' (number expected, got string)"#,
        ),
        (r#"bit.band(0xff, 0x0f, 0x3)"#, r#"OK nu:3"#),
        (r#"bit.band(-1, 2^31)"#, r#"OK nu:-2147483648"#),
        (r#"bit.band(1)"#, r#"OK nu:1"#),
        (
            r#"bit.band()"#,
            r#"ERR user_script:17: bad argument #1 to 'band' (number expected, got no value)"#,
        ),
        (
            r#"bit.band(1, "x")"#,
            r#"ERR user_script:17: bad argument #2 to 'band' (number expected, got string)"#,
        ),
        (
            r#"bit.band("x", 1)"#,
            r#"ERR user_script:17: bad argument #1 to 'band' (number expected, got string)"#,
        ),
        (
            r#"bit.band(1, 2, nil)"#,
            r#"ERR user_script:17: bad argument #3 to 'band' (number expected, got nil)"#,
        ),
        (
            r#"bit.band(true)"#,
            r#"ERR user_script:17: bad argument #1 to 'band' (number expected, got boolean)"#,
        ),
        (r#"bit.bor(1, 2, 4, 8)"#, r#"OK nu:15"#),
        (r#"bit.bor(0x80000000, 1)"#, r#"OK nu:-2147483647"#),
        (
            r#"bit.bor()"#,
            r#"ERR user_script:17: bad argument #1 to 'bor' (number expected, got no value)"#,
        ),
        (
            r#"bit.bor(1, "x")"#,
            r#"ERR user_script:17: bad argument #2 to 'bor' (number expected, got string)"#,
        ),
        (
            r#"bit.bor("x", 1)"#,
            r#"ERR user_script:17: bad argument #1 to 'bor' (number expected, got string)"#,
        ),
        (r#"bit.bxor(1, 2, 3, 4)"#, r#"OK nu:4"#),
        (r#"bit.bxor(-1, 1)"#, r#"OK nu:-2"#),
        (r#"bit.bxor(5, 5)"#, r#"OK nu:0"#),
        (r#"bit.lshift(1, 0)"#, r#"OK nu:1"#),
        (r#"bit.lshift(1, 31)"#, r#"OK nu:-2147483648"#),
        (r#"bit.lshift(1, 32)"#, r#"OK nu:1"#),
        (r#"bit.lshift(1, 33)"#, r#"OK nu:2"#),
        (r#"bit.lshift(1, -1)"#, r#"OK nu:-2147483648"#),
        (r#"bit.lshift(3, 30)"#, r#"OK nu:-1073741824"#),
        (
            r#"bit.lshift(1)"#,
            r#"ERR user_script:17: bad argument #2 to 'lshift' (number expected, got no value)"#,
        ),
        (
            r#"bit.lshift(1, "x")"#,
            r#"ERR user_script:17: bad argument #2 to 'lshift' (number expected, got string)"#,
        ),
        (r#"bit.rshift(-1, 28)"#, r#"OK nu:15"#),
        (r#"bit.rshift(-1, 0)"#, r#"OK nu:-1"#),
        (r#"bit.rshift(-1, 32)"#, r#"OK nu:-1"#),
        (r#"bit.rshift(256, 4)"#, r#"OK nu:16"#),
        (r#"bit.rshift(1, -1)"#, r#"OK nu:0"#),
        (r#"bit.arshift(-256, 4)"#, r#"OK nu:-16"#),
        (r#"bit.arshift(-1, 31)"#, r#"OK nu:-1"#),
        (r#"bit.arshift(2^31, 1)"#, r#"OK nu:-1073741824"#),
        (r#"bit.arshift(256, 4)"#, r#"OK nu:16"#),
        (r#"bit.rol(0x80000001, 1)"#, r#"OK nu:3"#),
        (r#"bit.rol(0x12345678, 8)"#, r#"OK nu:878082066"#),
        (r#"bit.rol(1, 32)"#, r#"OK nu:1"#),
        (r#"bit.rol(1, -1)"#, r#"OK nu:-2147483648"#),
        (r#"bit.ror(1, 1)"#, r#"OK nu:-2147483648"#),
        (r#"bit.ror(0x12345678, 8)"#, r#"OK nu:2014458966"#),
        (r#"bit.ror(1, 33)"#, r#"OK nu:-2147483648"#),
        (r#"bit.bswap(0x12345678)"#, r#"OK nu:2018915346"#),
        (r#"bit.bswap(-1)"#, r#"OK nu:-1"#),
        (r#"bit.bswap(1)"#, r#"OK nu:16777216"#),
        (r#"bit.bswap(0x80)"#, r#"OK nu:-2147483648"#),
        (
            r#"bit.bswap()"#,
            r#"ERR user_script:17: bad argument #1 to 'bswap' (number expected, got no value)"#,
        ),
        (r#"bit.tobit(2^31 + 0.5)"#, r#"OK nu:-2147483648"#),
        (r#"bit.band(2^33 + 3, 7.4)"#, r#"OK nu:3"#),
    ]);
}

#[test]
fn structlib_matches_redis() {
    check(&[
        (r#"struct.pack("b", 1)"#, r#"OK x:01"#),
        (r#"struct.pack("b", -1)"#, r#"OK x:ff"#),
        (r#"struct.pack("b", 300)"#, r#"OK s:,"#),
        (r#"struct.pack("B", 255)"#, r#"OK x:ff"#),
        (r#"struct.pack("B", -1)"#, r#"OK x:ff"#),
        (r#"struct.pack("h", -2)"#, r#"OK x:feff"#),
        (r#"struct.pack(">h", 258)"#, r#"OK x:0102"#),
        (r#"struct.pack("<h", 258)"#, r#"OK x:0201"#),
        (r#"struct.pack("H", 65535)"#, r#"OK x:ffff"#),
        (r#"struct.pack("H", "12")"#, r#"OK x:0c00"#),
        (r#"struct.pack("l", 1)"#, r#"OK x:0100000000000000"#),
        (r#"struct.pack(">l", -2)"#, r#"OK x:fffffffffffffffe"#),
        (r#"struct.pack("L", 2^63)"#, r#"OK x:0000000000000080"#),
        (r#"struct.pack("L", 2^64)"#, r#"OK x:0000000000000000"#),
        (r#"struct.pack("L", 2^70)"#, r#"OK x:0000000000000000"#),
        (r#"struct.pack("L", 0/0)"#, r#"OK x:0000000000000080"#),
        (r#"struct.pack("l", -2^64)"#, r#"OK x:0000000000000080"#),
        (r#"struct.pack("l", -2^63)"#, r#"OK x:0000000000000080"#),
        (r#"struct.pack("l", 1.9)"#, r#"OK x:0100000000000000"#),
        (r#"struct.pack("l", -1.9)"#, r#"OK x:ffffffffffffffff"#),
        (r#"struct.pack("T", 5)"#, r#"OK x:0500000000000000"#),
        (r#"struct.pack("i", 1)"#, r#"OK x:01000000"#),
        (r#"struct.pack("i", -1)"#, r#"OK x:ffffffff"#),
        (r#"struct.pack(">i", 0x01020304)"#, r#"OK x:01020304"#),
        (r#"struct.pack("I", 2^32 - 1)"#, r#"OK x:ffffffff"#),
        (r#"struct.pack("i1", 200)"#, r#"OK x:c8"#),
        (r#"struct.pack("i2", 1)"#, r#"OK x:0100"#),
        (r#"struct.pack("i3", 2^30)"#, r#"OK x:000000"#),
        (r#"struct.pack("I3", 0x010203)"#, r#"OK x:030201"#),
        (r#"struct.pack(">I3", 0x010203)"#, r#"OK x:010203"#),
        (r#"struct.pack("i0", 5)"#, r#"OK s:"#),
        (r#"struct.pack("i8", -3)"#, r#"OK x:fdffffffffffffff"#),
        (r#"struct.pack("i9", -2)"#, r#"OK x:feffffffffffffff00"#),
        (r#"struct.pack(">i9", -2)"#, r#"OK x:00fffffffffffffffe"#),
        (
            r#"struct.pack("i16", -2)"#,
            r#"OK x:feffffffffffffff0000000000000000"#,
        ),
        (
            r#"struct.pack(">i16", -2)"#,
            r#"OK x:0000000000000000fffffffffffffffe"#,
        ),
        (
            r#"struct.pack("I32", 7)"#,
            r#"OK x:0700000000000000000000000000000000000000000000000000000000000000"#,
        ),
        (
            r#"struct.pack("i33", 1)"#,
            r#"ERR user_script:17: integral size 33 is larger than limit of 32"#,
        ),
        (
            r#"struct.pack("i99999999999", 1)"#,
            r#"ERR user_script:17: integral size overflow"#,
        ),
        (r#"struct.pack("f", 1.5)"#, r#"OK x:0000c03f"#),
        (r#"struct.pack(">f", 0.1)"#, r#"OK x:3dcccccd"#),
        (r#"struct.pack("f", 1/0)"#, r#"OK x:0000807f"#),
        (r#"struct.pack("d", 3.14)"#, r#"OK x:1f85eb51b81e0940"#),
        (r#"struct.pack(">d", -0.0)"#, r#"OK x:8000000000000000"#),
        (r#"struct.pack("d", "2.5")"#, r#"OK x:0000000000000440"#),
        (r#"struct.pack("s", "ab")"#, r#"OK x:616200"#),
        (r#"struct.pack("s", "")"#, r#"OK x:00"#),
        (r#"struct.pack("s", 12)"#, r#"OK x:313200"#),
        (r#"struct.pack("c", "xyz")"#, r#"OK s:x"#),
        (r#"struct.pack("c3", "abcdef")"#, r#"OK s:abc"#),
        (
            r#"struct.pack("c3", "ab")"#,
            r#"ERR user_script:17: bad argument #3 to 'pack' (string too short)"#,
        ),
        (r#"struct.pack("c0", "abc")"#, r#"OK s:abc"#),
        (r#"struct.pack("c0", "")"#, r#"OK s:"#),
        (
            r#"struct.pack("bc3", 1, "ab")"#,
            r#"ERR user_script:17: bad argument #4 to 'pack' (string too short)"#,
        ),
        (r#"struct.pack("x")"#, r#"OK x:00"#),
        (r#"struct.pack("xxbx", 1)"#, r#"OK x:00000100"#),
        (r#"struct.pack(">i2<i2", 1, 2)"#, r#"OK x:00010200"#),
        (
            r#"struct.pack("!bd", 1, 2)"#,
            r#"OK x:01000000000000000000000000000040"#,
        ),
        (
            r#"struct.pack("!4bd", 1, 2)"#,
            r#"OK x:010000000000000000000040"#,
        ),
        (r#"struct.pack("!2bi", 1, 2)"#, r#"OK x:010002000000"#),
        (r#"struct.pack("!bh", 1, 2)"#, r#"OK x:01000200"#),
        (
            r#"struct.pack("!8bc5i", 1, "hello", 3)"#,
            r#"OK x:0168656c6c6f000003000000"#,
        ),
        (
            r#"struct.pack("bxhxi", 1, 2, 3)"#,
            r#"OK x:010002000003000000"#,
        ),
        (
            r#"struct.pack("!bxhxi", 1, 2, 3)"#,
            r#"OK x:010002000000000003000000"#,
        ),
        (r#"struct.pack("!bs", 1, "x")"#, r#"OK x:017800"#),
        (r#"struct.pack("! b i", 5, 6)"#, r#"OK x:0500000006000000"#),
        (
            r#"struct.pack("!0 b i", 5, 6)"#,
            r#"ERR user_script:17: alignment 0 is not a power of 2"#,
        ),
        (
            r#"struct.pack("!3i", 1)"#,
            r#"ERR user_script:17: alignment 3 is not a power of 2"#,
        ),
        (
            r#"struct.pack("!16bd", 1, 2)"#,
            r#"OK x:01000000000000000000000000000040"#,
        ),
        (
            r#"struct.pack("=i", 5)"#,
            r#"ERR user_script:17: bad argument #1 to 'pack' (invalid format option '=')"#,
        ),
        (
            r#"struct.pack("z", 1)"#,
            r#"ERR user_script:17: bad argument #1 to 'pack' (invalid format option 'z')"#,
        ),
        (
            r#"struct.pack("5", 1)"#,
            r#"ERR user_script:17: bad argument #1 to 'pack' (invalid format option '5')"#,
        ),
        (
            r#"struct.pack("i")"#,
            r#"ERR user_script:17: bad argument #2 to 'pack' (number expected, got nil)"#,
        ),
        (
            r#"struct.pack("i", "x")"#,
            r#"ERR user_script:17: bad argument #2 to 'pack' (number expected, got string)"#,
        ),
        (
            r#"struct.pack("i", nil)"#,
            r#"ERR user_script:17: bad argument #2 to 'pack' (number expected, got nil)"#,
        ),
        (
            r#"struct.pack("bi", 1)"#,
            r#"ERR user_script:17: bad argument #3 to 'pack' (number expected, got nil)"#,
        ),
        (
            r#"struct.pack("s")"#,
            r#"ERR user_script:17: bad argument #2 to 'pack' (string expected, got nil)"#,
        ),
        (
            r#"struct.pack("s", {})"#,
            r#"ERR user_script:17: bad argument #2 to 'pack' (string expected, got table)"#,
        ),
        (
            r#"struct.pack()"#,
            r#"ERR user_script:17: bad argument #1 to 'pack' (string expected, got no value)"#,
        ),
        (
            r#"struct.pack({})"#,
            r#"ERR user_script:17: bad argument #1 to 'pack' (string expected, got table)"#,
        ),
        (r#"struct.pack("")"#, r#"OK s:"#),
        (r#"struct.pack("b\0b", 1, 2)"#, r#"OK x:01"#),
        (
            r#"struct.pack(12, 1)"#,
            r#"ERR user_script:17: bad argument #1 to 'pack' (invalid format option '1')"#,
        ),
        (r#"struct.pack("bbb", 1, 2, 3, 4)"#, r#"OK x:010203"#),
        (r#"struct.unpack("b", "\255")"#, r#"OK nu:-1 nu:2"#),
        (r#"struct.unpack("B", "\255")"#, r#"OK nu:255 nu:2"#),
        (r#"struct.unpack("h", "\1\2")"#, r#"OK nu:513 nu:3"#),
        (r#"struct.unpack(">h", "\1\2")"#, r#"OK nu:258 nu:3"#),
        (r#"struct.unpack(">H", "\255\254")"#, r#"OK nu:65534 nu:3"#),
        (r#"struct.unpack("i", "\1\0\0\0")"#, r#"OK nu:1 nu:5"#),
        (
            r#"struct.unpack("i", "ab")"#,
            r#"ERR user_script:17: bad argument #2 to 'unpack' (data string too short)"#,
        ),
        (r#"struct.unpack("i3", "\255\255\255")"#, r#"OK nu:-1 nu:4"#),
        (
            r#"struct.unpack("I3", "\255\255\255")"#,
            r#"OK nu:16777215 nu:4"#,
        ),
        (
            r#"struct.unpack("i9", string.rep("\255", 9))"#,
            r#"OK nu:-1 nu:10"#,
        ),
        (
            r#"struct.unpack(">I9", "\1\0\0\0\0\0\0\0\2")"#,
            r#"OK nu:2 nu:10"#,
        ),
        (
            r#"struct.unpack("<I9", "\2\0\0\0\0\0\0\0\1")"#,
            r#"OK nu:2 nu:10"#,
        ),
        (
            r#"struct.unpack("i16", string.rep("\255", 16))"#,
            r#"OK nu:-1 nu:17"#,
        ),
        (
            r#"struct.unpack("i12", "\1\0\0\0\0\0\0\128\0\0\0\0")"#,
            r#"OK nu:-2147483647 nu:13"#,
        ),
        (
            r#"struct.unpack("L", string.rep("\255", 8))"#,
            r#"OK nu:1.844674407371e+19 nu:9"#,
        ),
        (
            r#"struct.unpack("l", string.rep("\255", 8))"#,
            r#"OK nu:-1 nu:9"#,
        ),
        (
            r#"struct.unpack("l", "\0\0\0\0\0\0\0\128")"#,
            r#"OK nu:-9.2233720368548e+18 nu:9"#,
        ),
        (
            r#"struct.unpack("T", "\5\0\0\0\0\0\0\0")"#,
            r#"OK nu:5 nu:9"#,
        ),
        (r#"struct.unpack("i0", "")"#, r#"OK nu:0 nu:1"#),
        (
            r#"struct.unpack(">d", "\64\9\33\251\84\68\45\24")"#,
            r#"OK nu:3.1415926535898 nu:9"#,
        ),
        (
            r#"struct.unpack("d", "\24\45\68\84\251\33\9\64")"#,
            r#"OK nu:3.1415926535898 nu:9"#,
        ),
        (r#"struct.unpack("f", "\0\0\192\127")"#, r#"OK nu:nan nu:5"#),
        (r#"struct.unpack(">f", "\63\192\0\0")"#, r#"OK nu:1.5 nu:5"#),
        (
            r#"struct.unpack("f", "\0\0\128\255")"#,
            r#"OK nu:-inf nu:5"#,
        ),
        (
            r#"struct.unpack("s", "abc")"#,
            r#"ERR user_script:17: unfinished string in data"#,
        ),
        (r#"struct.unpack("s", "abc\0d")"#, r#"OK s:abc nu:5"#),
        (r#"struct.unpack("ss", "a\0bc\0")"#, r#"OK s:a s:bc nu:6"#),
        (r#"struct.unpack("c3", "abcdef")"#, r#"OK s:abc nu:4"#),
        (r#"struct.unpack("c", "abc")"#, r#"OK s:a nu:2"#),
        (
            r#"struct.unpack("c0", "abc")"#,
            r#"ERR user_script:17: format 'c0' needs a previous size"#,
        ),
        (r#"struct.unpack("bc0", "\2abc")"#, r#"OK s:ab nu:4"#),
        (
            r#"struct.unpack("bc0", "\9abc")"#,
            r#"ERR user_script:17: bad argument #2 to 'unpack' (data string too short)"#,
        ),
        (r#"struct.unpack("bc0", "\0abc")"#, r#"OK s: nu:2"#),
        (r#"struct.unpack("sc0", "3\0abcd")"#, r#"OK s:abc nu:6"#),
        (
            r#"struct.unpack("sc0", "x\0abcd")"#,
            r#"ERR user_script:17: format 'c0' needs a previous size"#,
        ),
        (r#"struct.unpack("xb", "\1\2")"#, r#"OK nu:2 nu:3"#),
        (
            r#"struct.unpack("x", "")"#,
            r#"ERR user_script:17: bad argument #2 to 'unpack' (data string too short)"#,
        ),
        (
            r#"struct.unpack("!bi", "\1\0\0\0\2\0\0\0")"#,
            r#"OK nu:1 nu:2 nu:9"#,
        ),
        (
            r#"struct.unpack("!bi", "\1\0\0\0\2\0\0")"#,
            r#"ERR user_script:17: bad argument #2 to 'unpack' (data string too short)"#,
        ),
        (
            r#"struct.unpack("!2bh", "\1\0\2\0")"#,
            r#"OK nu:1 nu:2 nu:5"#,
        ),
        (
            r#"struct.unpack("b", "a", 0)"#,
            r#"ERR user_script:17: bad argument #3 to 'unpack' (offset must be 1 or greater)"#,
        ),
        (
            r#"struct.unpack("b", "a", -5)"#,
            r#"ERR user_script:17: bad argument #2 to 'unpack' (data string too short)"#,
        ),
        (r#"struct.unpack("b", "ab", 2)"#, r#"OK nu:98 nu:3"#),
        (
            r#"struct.unpack("b", "a", 2)"#,
            r#"ERR user_script:17: bad argument #2 to 'unpack' (data string too short)"#,
        ),
        (
            r#"struct.unpack("b", "a", 3)"#,
            r#"ERR user_script:17: bad argument #2 to 'unpack' (data string too short)"#,
        ),
        (r#"struct.unpack("", "a", 2)"#, r#"OK nu:2"#),
        (r#"struct.unpack("", "a", 5)"#, r#"OK nu:5"#),
        (r#"struct.unpack("b", "ab", "2")"#, r#"OK nu:98 nu:3"#),
        (
            r#"struct.unpack("b", "ab", "x")"#,
            r#"ERR user_script:17: bad argument #3 to 'unpack' (number expected, got string)"#,
        ),
        (r#"struct.unpack("b", "ab", nil)"#, r#"OK nu:97 nu:2"#),
        (
            r#"struct.unpack("z", "")"#,
            r#"ERR user_script:17: bad argument #1 to 'unpack' (invalid format option 'z')"#,
        ),
        (
            r#"struct.unpack("!3b", "a")"#,
            r#"ERR user_script:17: alignment 3 is not a power of 2"#,
        ),
        (
            r#"struct.unpack("i33", "a")"#,
            r#"ERR user_script:17: integral size 33 is larger than limit of 32"#,
        ),
        (
            r#"struct.unpack("b")"#,
            r#"ERR user_script:17: bad argument #2 to 'unpack' (string expected, got no value)"#,
        ),
        (
            r#"struct.unpack()"#,
            r#"ERR user_script:17: bad argument #1 to 'unpack' (string expected, got no value)"#,
        ),
        (
            r#"struct.unpack("b", {})"#,
            r#"ERR user_script:17: bad argument #2 to 'unpack' (string expected, got table)"#,
        ),
        (r#"struct.unpack("b", 5)"#, r#"OK nu:53 nu:2"#),
        (
            r#"struct.unpack(">i2<i2", "\0\1\2\0")"#,
            r#"OK nu:1 nu:2 nu:5"#,
        ),
        (r#"struct.size("")"#, r#"OK nu:0"#),
        (r#"struct.size("b")"#, r#"OK nu:1"#),
        (r#"struct.size("bhilTfd")"#, r#"OK nu:35"#),
        (r#"struct.size("!bhilTfd")"#, r#"OK nu:40"#),
        (r#"struct.size("i")"#, r#"OK nu:4"#),
        (r#"struct.size("i7")"#, r#"OK nu:7"#),
        (r#"struct.size("!i")"#, r#"OK nu:4"#),
        (r#"struct.size("bi")"#, r#"OK nu:5"#),
        (r#"struct.size("!bi")"#, r#"OK nu:8"#),
        (r#"struct.size("!bd")"#, r#"OK nu:16"#),
        (r#"struct.size("!2bd")"#, r#"OK nu:10"#),
        (r#"struct.size("!4bc3i")"#, r#"OK nu:8"#),
        (r#"struct.size("xxx")"#, r#"OK nu:3"#),
        (r#"struct.size("c10")"#, r#"OK nu:10"#),
        (
            r#"struct.size("s")"#,
            r#"ERR user_script:17: bad argument #1 to 'size' (option 's' has no fixed size)"#,
        ),
        (
            r#"struct.size("c0")"#,
            r#"ERR user_script:17: bad argument #1 to 'size' (option 'c0' has no fixed size)"#,
        ),
        (r#"struct.size("c")"#, r#"OK nu:1"#),
        (r#"struct.size("z")"#, r#"OK nu:0"#),
        (r#"struct.size("zq5")"#, r#"OK nu:0"#),
        (
            r#"struct.size("?")"#,
            r#"ERR user_script:17: bad argument #1 to 'size' (invalid format option '?')"#,
        ),
        (
            r#"struct.size("!3")"#,
            r#"ERR user_script:17: alignment 3 is not a power of 2"#,
        ),
        (
            r#"struct.size("i33")"#,
            r#"ERR user_script:17: integral size 33 is larger than limit of 32"#,
        ),
        (
            r#"struct.size("i99999999999")"#,
            r#"ERR user_script:17: integral size overflow"#,
        ),
        (r#"struct.size("b\0i")"#, r#"OK nu:1"#),
        (
            r#"struct.size()"#,
            r#"ERR user_script:17: bad argument #1 to 'size' (string expected, got no value)"#,
        ),
        (
            r#"struct.size({})"#,
            r#"ERR user_script:17: bad argument #1 to 'size' (string expected, got table)"#,
        ),
        (r#"struct.unpack("", "a", -5)"#, r#"OK nu:-5"#),
        (
            r#"struct.pack("bii", 1)"#,
            r#"ERR user_script:17: bad argument #3 to 'pack' (number expected, got nil)"#,
        ),
    ]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Arbitrary input never panics or aborts: it decodes or gives a Lua error.
    #[test]
    fn decoders_survive_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let lua = lua_with_libs();
        let input = lua.create_string(&bytes).unwrap();
        for decoder in ["cjson.decode", "cmsgpack.unpack", "cmsgpack.unpack_one", "struct.size"] {
            let function: mlua::Function = lua.load(decoder).eval().unwrap();
            let _ = function.call::<mlua::MultiValue>(input.clone());
        }
        let unpack: mlua::Function = lua.load("struct.unpack").eval().unwrap();
        let _ = unpack.call::<mlua::MultiValue>((input.clone(), input.clone()));
        let limit: mlua::Function = lua.load("cmsgpack.unpack_limit").eval().unwrap();
        let _ = limit.call::<mlua::MultiValue>((input, bytes.len() as i64 % 5, bytes.first().copied().unwrap_or(0) as i64 % 9));
    }

    /// Bytes that look like JSON or MessagePack (few distinct bytes, deep nesting).
    #[test]
    fn decoders_survive_structured_noise(bytes in proptest::collection::vec(
        prop::sample::select(b"[]{}\":,0123456789-+.eEtrufalsn\\u \x91\x81\xdc\xde\xa1\xc0\xcb\xd9\x00".to_vec()), 0..200)) {
        let lua = lua_with_libs();
        let input = lua.create_string(&bytes).unwrap();
        for decoder in ["cjson.decode", "cmsgpack.unpack"] {
            let function: mlua::Function = lua.load(decoder).eval().unwrap();
            let _ = function.call::<mlua::MultiValue>(input.clone());
        }
    }

    /// Whatever cmsgpack packs, it unpacks to a value that packs the same way.
    #[test]
    fn msgpack_round_trips(numbers in proptest::collection::vec(any::<f64>(), 0..8), text in ".{0,40}") {
        let lua = lua_with_libs();
        let pack: mlua::Function = lua.load("function(...) local p = cmsgpack.pack(...) return p == cmsgpack.pack(cmsgpack.unpack(p)) end").eval().unwrap();
        let numbers = lua.create_sequence_from(numbers.into_iter().filter(|n| !n.is_nan())).unwrap();
        prop_assert!(pack.call::<bool>((numbers, text)).unwrap());
    }
}
