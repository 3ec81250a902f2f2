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

/// Seeded random mutations of JSON, MessagePack and struct formats: decoded (or the
/// error) and encoded again, so both directions and every error path are compared.
#[test]
fn random_inputs_match_redis() {
    check(&[
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\102\125\34\32\44\114\0\125\92\54\123\58\108\97\34\56\58\195\108\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\34\107\34\58\34\118\34\44\34\110\34\58\110\117\108\108\44\34\116\34\58\116\114\117\101\44\34\102\34\58\102\97\108\115\101\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:{"f":false,"t":true,"k":"v","n":null}"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\125\55\123\195\49\43\97\50\32\48\169\46\195\52\44\0\169\53\114\44\195\34\169\125\54\73\32\108\101\110\0\110\114\46\56\52") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found T_OBJ_END at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\91\93\93\44\123\44\123\34\97\34\58") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected the end but found T_COMMA at character 5"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\50\73\97\123\34\195\169\101\69\116") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected the end but found invalid token at character 2"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\34\92\117\48\48\101\57\92\117\100\56\51\100\92\117\100\101\48\48\92\110\34") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK x:22c3a9f09f98805c6e22"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\120\34\125\46\169") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\34\92\117\48\48\101\57\92\117\100\56\51\100\92\100\101\48\48\92\34") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid unicode escape code at character 8"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\34\107\34\58\34\118\34\44\34\110\34\58\110\117\108\44\34\116\34\58\116\114\117\101\44\34\102\34\58\102\108\115\101\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 14"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\34\92\117\48") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid unicode escape code at character 2"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\117\55\50\58\52\50\55\55\91\73\0\52\57\43\91\50\97\32\114\169\101\49\92\125\110\195") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\34\92\117\48\48\101\57\92\117\100\56\51\100\92\117\100\101\48\48\92\110\34") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK x:22c3a9f09f98805c6e22"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\125\53\34\54\115\51\48\69\125\44\91\169\50\32\44\114\93\34\54\117\50\57\116\114\120\48\48\73\110\120") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found T_OBJ_END at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\34\107\34\58\34\118\34\44\34\110\34\58\110\117\108\108\44\34\116\34\58\116\114\117\101\44\34\102\34\58\102\97\108\115\101\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:{"f":false,"t":true,"k":"v","n":null}"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\120\51\117\93\54\117\114\50\32\93\117\46\58\57\117\114\51\116\55\32\32") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\34\107\34\58\34\118\34\44\34\110\34\58\110\117\108\108\44\34\116\34\58\116\114\117") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 23"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\45\34\92\117\48\48\116\101\57\92\117\100\56\51\100\92\117\100\101\48\48\92\110\34") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid number at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\116\114\58\55\44\55\120\53\69\54\120\91\120\116\58\48\117\53\120\52\108\69\58\102\110\102\58\51") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\93\50\0\110\50\120\116\50\195\195") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found T_ARR_END at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\34\49\34\58\49\44\34\50\34\58\91\110\117\108\108\44\110\117\108\108\93\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:{"1":1,"2":[null,null]}"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\49\108\53\54\93\57\54\43\92\56\0\101\57\32\97\49\125\116\110\0\117\97\92\49\32\50\117\92\93\115\52\91\50") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected the end but found invalid token at character 2"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\49\101\53\44\45\48\46\53\44\49\69\45\51\44\48\120\49\70\44\73\110\102\105\110\105\116\121\44\78\97\78\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"ERR user_script:17: Cannot serialise number: must not be NaN or Inf"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\34\49\34\58\44\34\50\34\58\91\110\117\108\108\44\110\117\108\108\93\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found T_COMMA at character 6"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\49\44\50\44\123\34\97\34\58\91\51\44\52\46\53\44\34\120\34\93\125\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:[1,2,{"a":[3,4.5,"x"]}]"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\49\101\53\44\45\48\46\53\44\49\69\45\51\44\48\120\49\70\44\73\110\102\105\110\105\116\121\92\44\78\97\78\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected comma or array end but found invalid token at character 29"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\92\56\117\57\195\53\115\49\97\48\102\115\101\34\56\108\34\54\46\48\50\114\50\57\49\110\55\44\102\73\51\55\51\108") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\34\92\48\48\101\57\92\117\100\56\51\100\92\117\100\101\48\48\92\110\34") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid escape code at character 2"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\117\49\101\48\53\44\45\48\46\53\44\49\69\45\51\44\48\120\70\44\73\110\102\105\110\105\116\121\44\78\97\78\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 2"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\44\58\57\45\123\52\45\49\108\57\102\50\32\92") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found T_COMMA at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\91\91\93\93\44\123\125\44\123\34\97\34\58\123\125\125\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:[[{}],{},{"a":{}}]"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\34\45\49\34\58\49\44\34\50\34\58\91\110\117\108\108\44\110\117\108\108\93\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:{"-1":1,"2":[null,null]}"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\57") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:9"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\55\34\57\48\110") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected the end but found unexpected end of string at character 6"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\117\49\51\101\53\44\45\48\46\53\44\49\69\45\51\44\48\120") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 2"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\34\107\34\58\34\118\34\44\34\110\34\58\110\117\108\108\44\34\116\34\58\116\114\117\101\44\34\102\34\58\102\54\108\115\101\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 32"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\49\44\50\44\123\34\97\34\58\91\51\44\52\46\53\44\34\53\120\34\93\125\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected the end but found T_COMMA at character 2"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\34\92\117\48\48\101\57\92\117\100\56\51\100\92\117\100\101\48\48\92\110\34") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK x:22c3a9f09f98805c6e22"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\32\102\92\46\54\55\69\53\49\102\116\125\49\91\34\57\108\51\125\58\117\92\43\56\43\123\110") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 2"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\34\92\117\48\48\101\57\92\117\100\56\51\100\92\117\100\101\48\48\92\110\34") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK x:22c3a9f09f98805c6e22"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\91\91\93\93\123\125\44\34\97\34\58\123\125\125\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected comma or array end but found T_OBJ_BEGIN at character 6"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\49\57\44\50\44\123\34\97\34\58\91\51\44\52\46\53\34\120\34\125\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected comma or array end but found T_STRING at character 18"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\49\101\53\44\45\48\46\53\44\49\69\45\51\44\48\120\49\70\44\73\110\102\105\110\105\116\121\44\78\97\78\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"ERR user_script:17: Cannot serialise number: must not be NaN or Inf"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\91\91\93\93\44\123\125\44\123\34\97\34\58\123\125\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected comma or object end but found T_ARR_END at character 17"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\117\101\73\50\43\50\123\92\108") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\49\101\53\44\45\48\46\53\44\49\69\45\51\44\48\120\49\70\44\73\110\102\105\110\105\116\121\44\78\97\78\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"ERR user_script:17: Cannot serialise number: must not be NaN or Inf"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\55\58\93\123\49\114\44\117\115\195\125\93\32\56\73\57\91\110\34\92\32\58\117\34\120\57\34\57\56\54\55\110\73\117\34\120\43") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected the end but found T_COLON at character 2"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\53\34") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected the end but found unexpected end of string at character 3"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\91\91\93\91\93\44\123\125\44\123\34\97\34\58\45\123\125\125\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected comma or array end but found T_ARR_BEGIN at character 5"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\73\43\117\43\110\110") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\195\53\46\58\120\93\43\110\34\92\115\45\117\54\54\34\0\58\50\117\57\114\49\92\45\48\114\55\73") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\34\107\34\58\34\118\34\44\34\110\34\58\110\117\108\108\44\34\116\34\58\116\114\117\101\44\34\102\34\58\102\97\108\115\101\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:{"f":false,"t":true,"k":"v","n":null}"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\102\46\50\97\116\117\101\48\69\91\101\69\102\48\53\91\43\57\114\34\102\117\0\34\114\108\45\125\45\44\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\50\56\45\108\92\101\53\114\108\93\102\195\195\54\58\125\97\115") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected the end but found invalid number at character 3"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\43\73\125\195\49\51\120\97\69\43\46\57\57\102\56\46\120\195\102\48\51\51\34\54\92\73\195\55\115\69\115\108\49\195\53\56\58\52\69") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid number at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\107\34\58\34\118\34\44\34\110\34\58\110\117\108\108\44\34\116\34\58\116\114\117\101\44\34\102\34\58\102\97\108\115\101") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected object key string but found invalid token at character 2"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\34\49\34\58\49\44\34\50\34\91\110\117\108\108\44\110\117\108\108\93\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected colon but found T_ARR_BEGIN at character 11"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\49\101\53\44\45\48\46\53\44\49\69\45\58\51\44\48\120\49\70\44\73\110\102\105\110\105\116\121\44\78\97\78") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected comma or array end but found invalid token at character 12"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\117\102\115\108\46\93\49\123\108\120\0\73\91\34\102\117\110") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\49\44\50\44\123\34\97\34\58\91\51\44\52\46\53\34\120\34\93\125\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected comma or array end but found T_STRING at character 17"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\110\58\195\123\91\49") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\46\49\57\117\108\48\44\34\46\117\0\53\117") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected object key string but found invalid token at character 2"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\49\101\53\44\45\48\46\53\44\49\69\45\51\44\48\120\49\70\44\73\110\102\105\110\105\116\121\44\78\97\78\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"ERR user_script:17: Cannot serialise number: must not be NaN or Inf"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found T_END at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\91\91\93\93\44\123\195\125\44\123\34\97\34\58\123\125\125\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected object key string but found invalid token at character 8"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\34\92\117\48\48\101\92\117\100\56\51\100\92\117\100\101\48\48\92\110\34\97") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid unicode escape code at character 2"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\34\49\34\58\97\44") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 6"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\91\91\93\93\44\123\125\44\123\34\97\34\58\123\125\125\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:[[{}],{},{"a":{}}]"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\34\107\34\58\34\118\34\44\34\110\34\55\58\110\117\43\108\108\44\34\116\34\58\116\114\117\101\44\34\102\34\58\102\97\108\115\101\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected colon but found T_NUMBER at character 13"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\73\52\55\73\97\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\34\92\117\48\48\101\57\92\117\100\56\51\100\92\117\100\101\48\48\92\110\34") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK x:22c3a9f09f98805c6e22"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\49\101\52\53\44\45\48\46\53\44\49\69\45\51\44\48\120\49\70\44\73\110\102\105\110\105\116\121\44\78\97\78\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"ERR user_script:17: Cannot serialise number: must not be NaN or Inf"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\34\51\49\34\49\44\34\50\34\58\91\110\117\108\108\44\110\117\108\108\93\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected colon but found T_NUMBER at character 6"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\46\117\114\69\115\51\44\91\58\45\58\116\97\48\195\54\117\116\46\108\58\125\120\53\114\32\115\53\101\114\120\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected object key string but found invalid token at character 2"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\57\34\58\49\44\34\50\34\58\91\110\117\108\108\44\110\117\108\108\93\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected object key string but found T_NUMBER at character 2"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found T_END at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\34\49\34\58\49\44\34\50\34\58\91\110\117\108\108\44\110\117\108\108\93\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:{"1":1,"2":[null,null]}"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\44") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found T_COMMA at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\110\117\57\108\73\49\73\52\91\46\50\56\101\101\110\114\58\92\53\102\51\56\97\34\123\120\195\32\101\51") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\34\57\58\54\44\97\73\115\52\55\49\97\110\56\32\48\43\43\45\169\45\114\57\57\53\115\56") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found unexpected end of string at character 28"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\34\107\34\34\118\34\44\34\110\34\58\110\117\108\108\44\34\116\34\58\116\114\117\101\44\34\102\34\58\102\97\108\115\101\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected colon but found T_STRING at character 5"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\34\107\34\58\34\110\118\34\44\34\110\34\58\110\117\108\108\44\34\116\34\58\116\114\117\101\44\34\102\34\58\102\97\108\115\101\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:{"f":false,"t":true,"k":"nv","n":null}"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\34\92\117\48\48\101\57\92\117\100\56") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid unicode escape code at character 8"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\55\48") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:70"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\49\101\53\44\45\48\46\53\44\49\69\45\51\44\48\120\49\70\44\73\110\102") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected comma or array end but found T_END at character 24"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\115\57\91\44\116\54\123\114\69\50\123\54\57\123\54\91\101\97\114\52\46\34\54\123\73\195\120\34\97\44\102\195") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\58\51\102\45\97\43\46\97\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found T_COLON at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\116\97\97\93\114\53\102\102\54\91\108\51\108\48\58\102\169\114\110") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\49\44\50\44\123\34\97\34\58\91\51\58\44\52\46\53\44\34\120\34\93\125\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected comma or array end but found T_COLON at character 13"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\114\92\51\50\116\43\51\117\51\34\44\117\73\53\46\49\123\120\101\125\117\58\51\55\102\53\120\52\169\54\123\102\117\51\117\116") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\34\49\34\58\49\44\34\50\34\58\91\110\117\108\108\44\117\108\108\93\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 18"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\101\48") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\195\46\97\46\0\56\108\117\114\115\92\115\52\93\91\73\110\56\115\110\52\120\102\44") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\34\92\117\48\48\101\57\92\117\100\56\51\100\92\100\101\48\48\92\110\34\123") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid unicode escape code at character 8"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\58\101") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found T_COLON at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\49\101\53\44\45") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid number at character 6"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\51\55\34\116\57\51\101\45\110\50\57\92\120\54\0\57\92\56") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected the end but found invalid escape code at character 12"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\34\107\34\58\34\118\34\44\34\110\34\58\110\117\108\108\101\44\34\116\34\58\116\114\117\101\44\34\102\34\58\102\97\108\115\101\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected comma or object end but found invalid token at character 18"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\91\91\93\93\44\123\125\44\123\34\97\34\58\123\125\125\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:[[{}],{},{"a":{}}]"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\91\91\93\93\44\123\125\44\123\34\97\114\34\58\123\125\125\44") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found T_END at character 20"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\91\93\93\44\123\125\44\123\34\97\34\58\123\125\125\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected the end but found T_COMMA at character 5"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\49\101\53\44\45\48\46\53\44\49\69\45\51\44\48\120\49\70\44\73\110\102\105\110\105\116\121\44\78\97\78\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"ERR user_script:17: Cannot serialise number: must not be NaN or Inf"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\57\46\0\101\91\123\55\50\43\108\97\92\114\125\49\73\55\123") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:9"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\49\101\53\44\45\48\46\53\44\49\69\45\51\48\120\49\70\44\73\110\102\105\110\105\116\121\44\78\97\78") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected comma or array end but found invalid token at character 16"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\0\49\54\114\120\51\49\91\56\50\115\44\34\50\45\102\57\91\125\195\116\0\115\117\73\56") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:JSON parser does not support UTF-16 or UTF-32"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\125\32\93\102\52\56\51\125\44") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected the end but found T_ARR_END at character 4"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found T_END at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\46\34\107\34\58\34\118\34\44\34\120\110") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected object key string but found invalid token at character 2"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\34\92\117\48\48\101\57\44\92\117\100\56\51\100\92\117\100\101\48\48\34") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK x:22c3a92cf09f988022"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\34\49\34\58\49\44\34\195\50\34\58\91\110\117\108\108\44\110\117\108\117\108\93\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 19"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\123\34\107\34\58\34\118\34\44\34\110\34\58\110\117\108\108\44\34\116\34\58\116\114\117\101\44\34\102\34\58\102\97\108\115\101\125") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:{"f":false,"t":true,"k":"v","n":null}"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\91\91\93\93\44") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found T_END at character 7"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\101\53\117\69\56\117\32\120\120\117") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found T_END at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\55\169\46\54\102\0\34\169\51\50\123\93\48\44\51\116\50\93\93\123\49\123\34\123\34\0\114") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected the end but found invalid token at character 2"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\32\34\117\44\56\54\54\48\123\123\58\43") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found unexpected end of string at character 13"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\49\44\50\44\123\34\97\34\58\51\44\52\46\53\44\34\120\34\93\125\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected object key string but found T_NUMBER at character 13"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\101") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 2"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\43\93\97\93\108\117\44\116\120\125\32\169\54\58\169\43\51\108\91\117\53\43\125\91\116\73\44\73\52\73\0\116\92\57\169\51\43\54") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid number at character 1"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\91\49\44\50\44\123\34\97\34\58\91\51\44\52\46\53\44\34\120\34\93\125\93") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:[1,2,{"a":[3,4.5,"x"]}]"#,
        ),
        (
            r#"(function() local ok, v = pcall(cjson.decode, "\195\44\101\116\44\102\102\58\108\93\114\54\46\57\108\32\92\51\117\55\110\49\32\123\116\0\101\117\50\115\195") if not ok then return v end return cjson.encode(v) end)()"#,
            r#"OK s:Expected value but found invalid token at character 1"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\220\202\146\195\203\196\147\167\208\206\132\52\144\147\154\218\144\144\210\0\218\223\151")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\202\211\195\220\63\217\117\145\206\144\124\160\218\1")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\93\167\210\54\255\163\144\233\221\209\217\220\161\145\196\128\210\0\217")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Bad data format in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\208\144\211\112\200\160\129\98\65\147\217\204\146\221\194\210\218\221\203\205")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\218\130\209\205\29\97\71\208\0\192")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\202\63")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\95\208\192\85")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK x:5fd0c055"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\46\65\205\192\219\145\202\146\65\220\251\160\0\206\97\204\191\129\209")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\1\207\48\222\147\217\207\209\224\192\207\65\204\222\223\176\252\207\205\130")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\65")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:A"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\128\144\163\243\128\255\196\193\42\220\161\161")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Bad data format in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\144")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK x:90"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\146\65\205\127\218\63\27\224\145\217\211\0\193\147\217\130\192\7\0\145")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\145\1")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK x:9101"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\195\161\187\147\130\65\220\202")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\0")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK x:00"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\196")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Bad data format in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\205\160")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\206\97\221\147\59\160\217\219\170\128\193\193\0\158\195")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\210\194\145\206\218\127\147\75\65\222\130\222")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\194\128\220\202\0\220\255\32\63\202\164\63")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\163\204\97\224\126\222")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\190\130\193\203\1\192\248\192\203\219\193")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\127\161\1\65")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK x:7fa10141"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\234\129\203\46\97\130\201\160\195\113\202")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\65\24\223\221\147\0\152\219\144\209\145")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\160\147\6\163\160\112\196\71\144\197\38")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Bad data format in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\165\244\209\194\161\65\224\136\195\203\204\160\144\221")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\223\192\204")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\163\221\122")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\204\160\204\1\223\146\224")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\218\217\97\161\194\163\130\253\161")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\163\163\224\128\208\222")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK x:a3a3e080d0de"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\221\203")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\209\209\0\219\36\195\164")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\210\128\144\253\1\255\195\114\160\202\1\163\193\220\219\144\127\220\223\145\211\116\75\220")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\1\199\193\18\128\207\207\97\164\27\147\180\218\0\224\206\223\194\211\220\127\196\196")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Bad data format in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\127\202\0\127\205\160\193\137")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Bad data format in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\255\225")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK x:ffe1"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\204\147\130")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\220\97\210\209\65\221\205\207\223\63\208\195\206\204\110\1\129\208\128\219\144\147\208")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\196\203\48\221")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Bad data format in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\146\144\65\222\97\203\56\219")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\208\211\193\206\222\205\205\223\63\207\193\166\218\5\202\222\255\255\218\224\218\208")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Bad data format in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\208")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\34\144\223\65\78\215\219\63\224\130\206\129\89\204")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\223\215\224\223\163\128\193\97\21\0\205\65\205\144\1\222\97\255\147\217\147\223")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Bad data format in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\129\224\220")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\128\63\195\160\144\32\219\1\211\127\196\194\63\161\220\193\222\34\210")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\194\211\248\195\160\161\204\209\255\171\129\216\179\210\204\218\1\147\146\203\146")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Bad data format in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\195\208\211\63\221\194\67\133\219\209\211\192\145\130\203\210\97")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\210\161\194\144")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\209\152")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\205\204\211\211\237\146")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\209\208\12\220\211\144\145\193")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Bad data format in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\127\193\163\147\127\161\194\224\218\97\0\204\24\56\206\208\130\211\113\130\218\207\219")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Bad data format in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\192\223\65\163\65\255\195\195\86\217\205\222\195\0\219\208")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\147\195\145\160\147\220\207\58\0\192\203\145\219\82\220\204\129\220\248\207\135\222")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\255\208\146\202\130\1\211\151\224\86\205\206\208")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK x:ffd092ca8201d397e056cdced0"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\146\209\129\127\211\110\222\205\130\194")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\211\127\245\209\196")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\204\128\217\32\161\84\0\97\97\130\224\255\79\41\30\207")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\97\209\146\207\1\113\219\147\209\217\195\211\194\163\145\202\163\202\194")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\255\145\63\217\219\223\145\223\211\163\130\196\195\127\193\235\146")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\44\163\208\207\5\62\223\208\127\180\65\193\195")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Bad data format in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\219\63\1\129\94\204\194\128")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\137\7\147\221\18\196\200\81\219\196\209\192\146\127\209\207\210")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\207\207\195\193\147\147\203\202\97\146\17")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\48\218\144\204\195\72\205\174\223\125\65\207\207\221\195\178\192")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"ERR user_script:17: bad argument #0 to 'pack' (MessagePack pack needs input.)"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\219\205\33\205\97\207\163\130\205\220\218\129\163\141\11\203\1\211\193\223\163")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\146\130\97\146\203\0\1")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\1\211\207\217\130\207")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\193\220\13\160\196\207\1\147\130\209\255\65\193\194\202\244\205\65\232\209\203\0\144\209")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Bad data format in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\116\130\68\255")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\161\193\147\82\208\195\222\208\199\206\1\0\211\208\97\210")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\194\1\218\208\218\205\255\97\221\136\69\144\0\195\196\219\128\107\184\219\146")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\145\0\205\208\160\211\207\211\16")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\0\223\97\144\128\162\145\222\219\194\147\255\145\222\39\192\114\203")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\202\127\128\65\136\127\255\207\203\206\210\198\217\2\223\130\210\101\130\17\25\65")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK x:cb7ff80831000000007fffd3cbced2c6d902e000ce6582111941"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\219\206\97\221\63\210\210\129\224\206")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\255\196")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Bad data format in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\221\178\221\147\224\192\209\161\220\127\209\219\147\210\208\224\219\203\219\219\161\147\146\224")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\209\210\65\97\63\255\206\202\46\222\103\204\209\226\127\204\220\202\210\66\98")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\129\207\40\210\217\1\97\220\218\221\129\222\0\163\127\150\210\145\129\0\130\110")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\163\221\213\71\25\74\163\0\255\202\210\205\223\26\195\223\131\146")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\209")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\63\207\65\206\129\97\18\219\192\232\219\192\218\63")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\129")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\0\84\204\81\192\220\130\212\202\219\147\68\219\194\163\147\202\192\194")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\167\204\255\163\161\211\208\192\37\208\222\47")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK x:a7ccffa3a1d3d0c025d0de2f"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\205\255\163\203\194\205")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\144")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK x:90"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"ERR user_script:17: bad argument #0 to 'pack' (MessagePack pack needs input.)"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\147\128\208\195\209\205\232\65\160\220\127")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\217\146\208\160\130\221\202\195\222\255\220\97\223\163\65\146")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\255\144\128\97\194\160\202")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"ERR user_script:17: bad argument #0 to 'pack' (MessagePack pack needs input.)"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\224\97\43\192\193\223\128\37\144\196\161\175\220")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Bad data format in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\5\217\127\195\223\147\146\194\129\245\224\129\129\128\210\208\222\222")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\205\238\84\223")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\63\145\202\194\63\195\25\211\207")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\130\207\218\0\193\145\243\193\147\192\211\16")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\203\219\255\61\127\161\207\185\208")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK x:cbdbff3d7fa1cfb9d0"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\201\206\96\83\0\161\195\202\144\192\202\129\207\204\210\30\255\1\145")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Bad data format in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\205\147\220\206\0\138\63\23\88\203\195\255\65\43\194\209\203")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\97\128\208\102\128\224\205\152\184\95")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK x:61906690e0cd98b85f"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\221\206\206\202\206\221\192\230")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\81\206\203\221\217\203\211\204\62\0\97\193\135\35\49\217")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\205\161\60\211\174\222\179\73\224\204\207\217\0\120\211\203\146\195\204\195\67\210")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\34\193\139\194\209\130\224\206\220\146\223\219\193\20\220\194\207\117\192")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Bad data format in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\15\161\223\209\203\63\210\63\128")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\168\202\221\218\196\207\145\204\129\224\163")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\202\204\1\8\192\255\208\97\208\127\208\1\232\207\147\221\130\163\146\128\192\1")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK x:d2fdfbdd00ff617f01e8d393dd82a39280c000"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\224\210\218\0\63\1")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK x:e0d2da003f01"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"ERR user_script:17: bad argument #0 to 'pack' (MessagePack pack needs input.)"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\127\97")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK x:7f61"#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\165\65\248\192\192\195\50\146\225\63\225\97\128\86\195\221\221")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\222\129\194\97\194\127\163\19\211\194\127\211\147\221\144\144\224\223\223")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Missing bytes in input."#,
        ),
        (
            r#"(function() local r = {pcall(cmsgpack.unpack, "\1\1\130\196\255\128\196\211\65\1\223\234")} if not r[1] then return r[2] end return cmsgpack.pack(select(2, unpack(r))) end)()"#,
            r#"OK s:Bad data format in input."#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\72\52", "\0\56\44\180\44\0\0\0\188\158\0\171\0\38\109\233\0\0\107\0")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '4')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\72\52") return tostring(v) end)()"#,
            r#"OK s:2"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\72\52") return v end)()"#,
            r#"OK s:bad argument #2 to '?' (number expected, got nil)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\66", "\0\69\0\28\150\68\153\0\195\226\242\0\0\0\0\127\10\182\0\122\0\0")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:0|2"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\66") return tostring(v) end)()"#,
            r#"OK s:1"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\66", 300, -1, 1, "ab") return v end)()"#,
            r#"OK s:,"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\50\100\115\104", "\234\27\125\0\45\111\6\0\60\0\224\85\145\0\131\0\107")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '2')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\50\100\115\104") return tostring(v) end)()"#,
            r#"OK s:bad argument #1 to '?' (option 's' has no fixed size)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\50\100\115\104", 300, -1) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '2')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\104\52\120\102\104", "\0\37")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '4')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\104\52\120\102\104") return tostring(v) end)()"#,
            r#"OK s:9"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\104\52\120\102\104", -1, 300) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '4')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\72\56\62\50\33", "\0\0\51\202\88\48\0\165\0\115\106\0\142\97\45\159\92\246\29\45\114\151")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '8')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\72\56\62\50\33") return tostring(v) end)()"#,
            r#"OK s:2"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\72\56\62\50\33") return v end)()"#,
            r#"OK s:bad argument #2 to '?' (number expected, got nil)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\108\115\115", "\0\128\85\57\0\0\194\0\99\0\0\0\241\3\193\0\15")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:5.4606146443772e+16|c||12"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\108\115\115") return tostring(v) end)()"#,
            r#"OK s:bad argument #1 to '?' (option 's' has no fixed size)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\108\115\115", -2^63, -2^63, -1) return v end)()"#,
            r#"OK x:00000000000000802d392e32323333373230333638353438652b3138002d3100"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\60", "\0\60\88\0\31\34\227\173\36\247\0\192\221\122\161\42\239")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:1"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\60") return tostring(v) end)()"#,
            r#"OK s:0"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\60", 300, -1, -2^63) return v end)()"#,
            r#"OK s:"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\100\72\84\73\51\115", "\243\92")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #2 to '?' (data string too short)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\100\72\84\73\51\115") return tostring(v) end)()"#,
            r#"OK s:bad argument #1 to '?' (option 's' has no fixed size)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\100\72\84\73\51\115", 1, 0/0, 1, -2^63) return v end)()"#,
            r#"OK s:bad argument #6 to '?' (string expected, got nil)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\56\66\32\50\105\57", "\71\74\164\0\0\93\8\41\18\71\0\160\33\84\247")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '8')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\56\66\32\50\105\57") return tostring(v) end)()"#,
            r#"OK s:10"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\56\66\32\50\105\57", -1) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '8')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\115\33\56\62", "\0\110\240\233\164\90\11\82\0\132\243\197\123\140\0\70\0\164\0\119\41")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:|2"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\115\33\56\62") return tostring(v) end)()"#,
            r#"OK s:bad argument #1 to '?' (option 's' has no fixed size)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\115\33\56\62", -2^63, "xyz", 1.5, 2^40) return v end)()"#,
            r#"OK x:2d392e32323333373230333638353438652b313800"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\56\73", "\26\53\0\0\89\0\192\0\0\59\255\189\0\0\38\129\92\0\0\210\131\37")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '8')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\56\73") return tostring(v) end)()"#,
            r#"OK s:4"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\56\73") return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '8')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\51\62\84\51\100", "")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '3')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\51\62\84\51\100") return tostring(v) end)()"#,
            r#"OK s:16"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\51\62\84\51\100", -2^63, "ab", 300) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '3')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\100\105\99\104", "\205\0\0\184\253\0")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #2 to '?' (data string too short)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\100\105\99\104") return tostring(v) end)()"#,
            r#"OK s:15"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\100\105\99\104", 2^40) return v end)()"#,
            r#"OK s:bad argument #3 to '?' (number expected, got nil)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\84\73\72\66\33\108", "\39\232\0\182\223\246\82\59\0\0\0\127")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #2 to '?' (data string too short)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\84\73\72\66\33\108") return tostring(v) end)()"#,
            r#"OK s:24"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\84\73\72\66\33\108", 2^40, "ab", 1.5, 1.5) return v end)()"#,
            r#"OK s:bad argument #3 to '?' (number expected, got string)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\104\49", "\0\0\101\0\211\0\35\0\0\127\117\121\58\45")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '1')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\104\49") return tostring(v) end)()"#,
            r#"OK s:2"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\104\49", 300) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '1')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\100\104\33\115", "\245\0\42\135\26\134\168\251\26\0")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:unfinished string in data"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\100\104\33\115") return tostring(v) end)()"#,
            r#"OK s:bad argument #1 to '?' (option 's' has no fixed size)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\100\104\33\115", "xyz", 1.5, 1) return v end)()"#,
            r#"OK s:bad argument #2 to '?' (number expected, got string)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\102\104", "\77\231\0\0\47\0\222\98\0\234\132\169\0\12\148")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:8.2975085968065e-41|47|7"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\102\104") return tostring(v) end)()"#,
            r#"OK s:6"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\102\104", -2^63) return v end)()"#,
            r#"OK s:bad argument #3 to '?' (number expected, got nil)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\84\76\84\102\51", "\31\173\0\0\0\0\161\156")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #2 to '?' (data string too short)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\84\76\84\102\51") return tostring(v) end)()"#,
            r#"OK s:28"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\84\76\84\102\51") return v end)()"#,
            r#"OK s:bad argument #2 to '?' (number expected, got nil)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\100\104\102\66\100", "\89\0\0\101\185\243\38\35\223\129\0\230\244\0\190\161")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #2 to '?' (data string too short)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\100\104\102\66\100") return tostring(v) end)()"#,
            r#"OK s:23"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\100\104\102\66\100", 1, -1, -2^63, -1) return v end)()"#,
            r#"OK s:bad argument #6 to '?' (number expected, got nil)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\73\108\66\32\108\104", "\17\35\0\174\43\48\0\0\69\36\208\88\218\0")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #2 to '?' (data string too short)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\73\108\66\32\108\104") return tostring(v) end)()"#,
            r#"OK s:23"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\73\108\66\32\108\104", -1, 2^40) return v end)()"#,
            r#"OK s:bad argument #4 to '?' (number expected, got nil)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\32\72\104\73", "\0\0\115\0\147\0\103\0\99\0\173\0\240\0\164\174\214\0\0\5\0\20\0")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:0|115|6750355|9"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\32\72\104\73") return tostring(v) end)()"#,
            r#"OK s:8"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\32\72\104\73", 2^40, "ab") return v end)()"#,
            r#"OK s:bad argument #3 to '?' (number expected, got string)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\115\102\115", "\193\116\210\0\0\125\0\26\0\0\0\0\166\157\172\28\88\0\0")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK x:c174d27c322e36353730373533373937353635652d32337c7c3130"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\115\102\115") return tostring(v) end)()"#,
            r#"OK s:bad argument #1 to '?' (option 's' has no fixed size)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\115\102\115", 0/0) return v end)()"#,
            r#"OK s:bad argument #3 to '?' (number expected, got nil)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\66\32\60\100\62\60", "\0\174\32\167\0\0\189\34\26\236\159\0\0\240\176\0\180\54\35\213\116\185\63")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:0|8.8198742804757e-183|10"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\66\32\60\100\62\60") return tostring(v) end)()"#,
            r#"OK s:9"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\66\32\60\100\62\60", 1, -2^63, "xyz", 1) return v end)()"#,
            r#"OK x:01000000000000e0c3"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\108\99\104\76\33\102", "\0\113\0\29\221\39\0\154\0\95\5\73\193\0\84\57")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #2 to '?' (data string too short)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\108\99\104\76\33\102") return tostring(v) end)()"#,
            r#"OK s:24"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\108\99\104\76\33\102", "ab", 1, 1, 2^40) return v end)()"#,
            r#"OK s:bad argument #2 to '?' (number expected, got string)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\98\33\52\52\84", "\79\73\224\0\132\119\239\2\0\0\121\118\89\89\0\56")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:alignment 44 is not a power of 2"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\98\33\52\52\84") return tostring(v) end)()"#,
            r#"OK s:alignment 44 is not a power of 2"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\98\33\52\52\84", 2^40, 1.5, "xyz") return v end)()"#,
            r#"OK s:alignment 44 is not a power of 2"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\66\62\98\60\104", "\0\212")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #2 to '?' (data string too short)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\66\62\98\60\104") return tostring(v) end)()"#,
            r#"OK s:4"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\66\62\98\60\104", "ab") return v end)()"#,
            r#"OK s:bad argument #2 to '?' (number expected, got string)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\76\50\84\32", "\125\0\209\223\82\228\98\63\94\225")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '2')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\76\50\84\32") return tostring(v) end)()"#,
            r#"OK s:16"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\76\50\84\32", -2^63, -2^63, 1.5, -2^63) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '2')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\84\62\48\33\108", "\37\196\0\181\0\200\238\0\3\244\205\0\80\2\0\187")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '0')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\84\62\48\33\108") return tostring(v) end)()"#,
            r#"OK s:16"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\84\62\48\33\108", "ab", 2^40, "ab") return v end)()"#,
            r#"OK s:bad argument #2 to '?' (number expected, got string)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\32\32", "\146\13\245\140\10\166\244\130\133\198\6\170")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:1"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\32\32") return tostring(v) end)()"#,
            r#"OK s:0"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\32\32", -2^63, 300) return v end)()"#,
            r#"OK s:"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\120\98\104\84\84\66", "\0\116\223\54\0\45\0\98\254\0\47\91\154\28\19\86\82\101\101\222\209\119\12")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:116|14047|6.5704714739227e+18|1.6025326253374e+19|209|22"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\120\98\104\84\84\66") return tostring(v) end)()"#,
            r#"OK s:21"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\120\98\104\84\84\66", 300) return v end)()"#,
            r#"OK s:bad argument #3 to '?' (number expected, got nil)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\108\115", "\0\17\0\7\11\172\75\0\0\72\196\2\2\0\96\209\245\0\0\161")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:2.1299786615362e+16||10"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\108\115") return tostring(v) end)()"#,
            r#"OK s:bad argument #1 to '?' (option 's' has no fixed size)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\108\115", 2^40, 1.5, 2^40) return v end)()"#,
            r#"OK x:0000000000010000312e3500"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\49\98\48\52\100\100", "\0\172\250\0\0\0\23\42\150\218\0\68\141\0\222\131\229\49\153\132")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '1')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\49\98\48\52\100\100") return tostring(v) end)()"#,
            r#"OK s:17"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\49\98\48\52\100\100", "ab", 2^40) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '1')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\33\33\99\57\48", "\0\0\162\242\0\74\0\67\192\0\17\13\17\240\0\148\94\0\61\133\83\0")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #2 to '?' (data string too short)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\33\33\99\57\48") return tostring(v) end)()"#,
            r#"OK s:90"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\33\33\99\57\48", -2^63) return v end)()"#,
            r#"OK s:bad argument #3 to '?' (string too short)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\73\73", "\154")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #2 to '?' (data string too short)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\73\73") return tostring(v) end)()"#,
            r#"OK s:8"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\73\73") return v end)()"#,
            r#"OK s:bad argument #2 to '?' (number expected, got nil)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\120\32\49\60\84\72", "\0\0\196\237\100\0\61\207\0\0\0\137\50")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '1')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\120\32\49\60\84\72") return tostring(v) end)()"#,
            r#"OK s:11"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\120\32\49\60\84\72", -2^63, "ab", 300, "ab") return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '1')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\115", "\0\0\144\0\91\14\234\145\189\185\101\89")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:|2"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\115") return tostring(v) end)()"#,
            r#"OK s:bad argument #1 to '?' (option 's' has no fixed size)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\115", 2^40, 2^40) return v end)()"#,
            r#"OK x:3130393935313136323737373600"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\102\52\105", "\0\5\36\60\0\56\51\0\0\218\143\4\179\0\92\103\0\0\107\0\165\196")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '4')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\102\52\105") return tostring(v) end)()"#,
            r#"OK s:8"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\102\52\105", 1, -1, "xyz") return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '4')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\56", "\219\11\0\0\0\197\187\183")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '8')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\56") return tostring(v) end)()"#,
            r#"OK s:0"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\56", 1.5, 0/0) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '8')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\76\76", "\63\49\211\7")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #2 to '?' (data string too short)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\76\76") return tostring(v) end)()"#,
            r#"OK s:16"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\76\76") return v end)()"#,
            r#"OK s:bad argument #2 to '?' (number expected, got nil)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\99\108", "\0\182\47\0\219\21\25")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #2 to '?' (data string too short)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\99\108") return tostring(v) end)()"#,
            r#"OK s:9"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\99\108", 0/0, 2^40, 1) return v end)()"#,
            r#"OK x:2d0000000000010000"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\76\84\104\73\104", "\45\40\157\228\79\221\54\0\84\254\80\0\0\20\52\97\86\107\232\239\114\51\44\147")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:1.5442983950035e+16|7.0042453107058e+18|27478|863170536|-27860|25"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\76\84\104\73\104") return tostring(v) end)()"#,
            r#"OK s:24"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\76\84\104\73\104", "ab", 2^40) return v end)()"#,
            r#"OK s:bad argument #2 to '?' (number expected, got string)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\51\51\100", "\213\220\43\98\0\0\250")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '3')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\51\51\100") return tostring(v) end)()"#,
            r#"OK s:8"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\51\51\100", 2^40, -1) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '3')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\62\48\60\102\104\48", "\34\65\12\23\0\0\164\113\137\187\141\224\1\220\0")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '0')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\62\48\60\102\104\48") return tostring(v) end)()"#,
            r#"OK s:6"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\62\48\60\102\104\48", 1.5) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '0')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\72\72\120\104\51\105", "")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #2 to '?' (data string too short)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\72\72\120\104\51\105") return tostring(v) end)()"#,
            r#"OK s:11"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\72\72\120\104\51\105", 1) return v end)()"#,
            r#"OK s:bad argument #3 to '?' (number expected, got nil)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\104\102\48", "\0\0\226\0\100\104\172\181\113\65")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '0')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\104\102\48") return tostring(v) end)()"#,
            r#"OK s:6"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\104\102\48", 1, "xyz", "xyz", 300) return v end)()"#,
            r#"OK s:bad argument #3 to '?' (number expected, got string)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\32", "\228\0\127\0\0\148\16\0\109")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:1"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\32") return tostring(v) end)()"#,
            r#"OK s:0"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\32", "ab", 1.5, -2^63) return v end)()"#,
            r#"OK s:"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\104\57\115", "\119\0\130\8\31\209\156\0\172\95\189\249\67\0\0\0\215\78\0\80\31\0\0")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '9')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\104\57\115") return tostring(v) end)()"#,
            r#"OK s:bad argument #1 to '?' (option 's' has no fixed size)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\104\57\115", 1, 300) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '9')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\99", "\191\57\0\203\0\0\0\95\5\0\164\17\96")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK x:bf7c32"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\99") return tostring(v) end)()"#,
            r#"OK s:1"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\99", 1) return v end)()"#,
            r#"OK s:1"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\51\48\49\105\102", "\123\164\166")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '3')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\51\48\49\105\102") return tostring(v) end)()"#,
            r#"OK s:8"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\51\48\49\105\102", -1, 0/0, -2^63, -1) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '3')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\84\60", "\0\0\116\204\216\123\19\155\245")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:1.117441127151e+19|9"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\84\60") return tostring(v) end)()"#,
            r#"OK s:8"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\84\60", 1, 1, "xyz") return v end)()"#,
            r#"OK x:0100000000000000"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\105\49\49\76", "\240\198\53\0\0\0\0\0\108\34\46\2\233\178\86\252\148\0\198\171\140\43\189\0")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:3524336|1.4267567431017e+19|20"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\105\49\49\76") return tostring(v) end)()"#,
            r#"OK s:19"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\105\49\49\76", 0/0, "ab") return v end)()"#,
            r#"OK s:bad argument #3 to '?' (number expected, got string)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\100\51", "\213\184\1")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #2 to '?' (data string too short)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\100\51") return tostring(v) end)()"#,
            r#"OK s:8"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\100\51", 2^40) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '3')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\32\60\115\120\73\105", "\0\191\0\192\164")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #2 to '?' (data string too short)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\32\60\115\120\73\105") return tostring(v) end)()"#,
            r#"OK s:bad argument #1 to '?' (option 's' has no fixed size)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\32\60\115\120\73\105", 1, -2^63, 0/0) return v end)()"#,
            r#"OK x:3100000000000000000000"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\84\32\76\104", "\95\69\0\0\160\68\0\0\140\102\113\163\186\84\0\54\16\75\35\11")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:75453985473887|3.8912032386309e+18|19216|19"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\84\32\76\104") return tostring(v) end)()"#,
            r#"OK s:18"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\84\32\76\104") return v end)()"#,
            r#"OK s:bad argument #2 to '?' (number expected, got nil)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\105\60\104\52\60", "\93\173\67\33\0\61\149\153\0\0\0\0\143\2\0\0\46")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '4')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\105\60\104\52\60") return tostring(v) end)()"#,
            r#"OK s:6"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\105\60\104\52\60", -2^63, 300, "xyz", 0/0) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '4')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\120\60\84\105", "\126\156\114\225\0\178\13\182")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #2 to '?' (data string too short)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\120\60\84\105") return tostring(v) end)()"#,
            r#"OK s:13"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\120\60\84\105", 2^40, 300, "ab") return v end)()"#,
            r#"OK x:0000000000000100002c010000"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\56\51\120\76", "\0\94\107\0\127\48\178\246\111\0\0\70\64\0\48\0")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '8')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\56\51\120\76") return tostring(v) end)()"#,
            r#"OK s:9"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\56\51\120\76", -2^63, "xyz", "xyz") return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '8')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\72\108", "\76\222\76\97\98\248\0\102\52\111\0\0\116")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:56908|8.0131417913522e+18|11"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\72\108") return tostring(v) end)()"#,
            r#"OK s:10"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\72\108", 300, "ab", "ab", -1) return v end)()"#,
            r#"OK s:bad argument #3 to '?' (number expected, got string)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\104\50\76\52", "\51\25\105\129\0\93\153\0\124")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '2')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\104\50\76\52") return tostring(v) end)()"#,
            r#"OK s:10"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\104\50\76\52", -1, 2^40, 1) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '2')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\100", "\251\0\0\18\198\200\213\225\243\208\0\0\25\236\0\0\0\60\188\0\4\249\98")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:-1.9601112642715e+163|9"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\100") return tostring(v) end)()"#,
            r#"OK s:8"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\100", 300, 1.5, "xyz") return v end)()"#,
            r#"OK x:0000000000c07240"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\50\56\84\108\50\120", "\151\226\0\118\65\40\151\83\34\0\188\0\212\0\237\227\222\0\102\193\142")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '2')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\50\56\84\108\50\120") return tostring(v) end)()"#,
            r#"OK s:17"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\50\56\84\108\50\120") return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '2')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\66\50\60\73\84", "\141\87\139\0")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '2')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\66\50\60\73\84") return tostring(v) end)()"#,
            r#"OK s:13"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\66\50\60\73\84", -1) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '2')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\98\99\104\66\49", "\155\0\32\55\9\0\242\13\113\46\36\213\123\24")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '1')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\98\99\104\66\49") return tostring(v) end)()"#,
            r#"OK s:5"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\98\99\104\66\49", -1, 0/0, "xyz", 1.5) return v end)()"#,
            r#"OK s:bad argument #4 to '?' (number expected, got string)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\66\72\72\99\104", "\142\148\223\233\153\43\253\188\149\0\211\0\123\0\0\104\65\0")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:142|57236|39401|+|-17155|9"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\66\72\72\99\104") return tostring(v) end)()"#,
            r#"OK s:8"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\66\72\72\99\104", 1, -1, 1.5, 300) return v end)()"#,
            r#"OK s:bad argument #6 to '?' (number expected, got nil)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\73\52\49", "\89\0\53\214\97\0")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:integral size 41 is larger than limit of 32"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\73\52\49") return tostring(v) end)()"#,
            r#"OK s:integral size 41 is larger than limit of 32"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\73\52\49", "xyz", "xyz", 2^40) return v end)()"#,
            r#"OK s:integral size 41 is larger than limit of 32"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\51\52\32", "\0\204\96\72\0\0\0\41\38\0\0\0\0\235\159\94\0\87\108\52\73\0\168")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '3')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\51\52\32") return tostring(v) end)()"#,
            r#"OK s:0"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\51\52\32", 1.5, -1) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '3')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\84\120\98", "\238\192\0\116\123\50\214\46\146\29\16\0\10")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:3.3749404765693e+18|29|11"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\84\120\98") return tostring(v) end)()"#,
            r#"OK s:10"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\84\120\98", -2^63, 0/0, 300, "xyz") return v end)()"#,
            r#"OK x:00000000000000800000"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\32\60", "\82\171\99\0\166\190\19\133")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:1"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\32\60") return tostring(v) end)()"#,
            r#"OK s:0"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\32\60", "xyz", 0/0) return v end)()"#,
            r#"OK s:"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\60\60\60\57", "\56\89\0\65\107\171\170\0\23\88\0\228\231\246\0\44\70\0")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '9')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\60\60\60\57") return tostring(v) end)()"#,
            r#"OK s:0"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\60\60\60\57", "xyz", 2^40, "ab", 1.5) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '9')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\62\99\120\66\50\33", "")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #2 to '?' (data string too short)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\62\99\120\66\50\33") return tostring(v) end)()"#,
            r#"OK s:3"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\62\99\120\66\50\33", 1, "xyz") return v end)()"#,
            r#"OK s:bad argument #3 to '?' (number expected, got string)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\105\100", "")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #2 to '?' (data string too short)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\105\100") return tostring(v) end)()"#,
            r#"OK s:12"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\105\100") return v end)()"#,
            r#"OK s:bad argument #2 to '?' (number expected, got nil)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\66", "\0\252\0\0\161\196\209\33\192\50\52\221\0")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:0|2"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\66") return tostring(v) end)()"#,
            r#"OK s:1"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\66", 1, -1, -2^63, 1.5) return v end)()"#,
            r#"OK x:01"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\49", "\141\1\0\0\239\151\26\120\0\14\74\244\23")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '1')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\49") return tostring(v) end)()"#,
            r#"OK s:0"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\49", 1, 300) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '1')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\52\52\66", "\0\84\0\195\0\0\0\0\0\72\0\0\0\197\0\229\147\0\138\0\62\0\32\36")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '4')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\52\52\66") return tostring(v) end)()"#,
            r#"OK s:1"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\52\52\66", "xyz") return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '4')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\102\32", "\62\0\73\61\78\0\0\132\93\0\167\0\94\201\229\128\93\190\0\10\62\156")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:0.049072496592999|5"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\102\32") return tostring(v) end)()"#,
            r#"OK s:4"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\102\32") return v end)()"#,
            r#"OK s:bad argument #2 to '?' (number expected, got nil)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\100\72\56", "\0\81\47\92\37\0\205\126\26")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #2 to '?' (data string too short)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\100\72\56") return tostring(v) end)()"#,
            r#"OK s:10"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\100\72\56", -2^63, -1, 1) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '8')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\100\84\105\48", "\0\0\65\0\214\60\166\96\0\246\45\0\227")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #2 to '?' (data string too short)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\100\84\105\48") return tostring(v) end)()"#,
            r#"OK s:16"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\100\84\105\48", 1.5, -2^63, 1.5) return v end)()"#,
            r#"OK x:000000000000f83f0000000000000080"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\72\105\33\52", "\221\3\195\0\0\63\43\0\157\65\228\0\244\71\130\8\12\254\109\10\210\0\47\113")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:989|1056964803|7"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\72\105\33\52") return tostring(v) end)()"#,
            r#"OK s:6"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\72\105\33\52", "xyz", 2^40) return v end)()"#,
            r#"OK s:bad argument #2 to '?' (number expected, got string)"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\115\48\51\51", "\187\115\58\228\0\0\214\122\0\218\197\252\0\255")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '0')"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\115\48\51\51") return tostring(v) end)()"#,
            r#"OK s:bad argument #1 to '?' (option 's' has no fixed size)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\115\48\51\51", 0/0, 2^40, 1, 300) return v end)()"#,
            r#"OK s:bad argument #1 to '?' (invalid format option '0')"#,
        ),
        (
            r#"(function() local r = {pcall(struct.unpack, "\115", "\0\0\152\209\21\0\106\194\154")} if not r[1] then return r[2] end local t = {} for i = 2, #r do t[#t + 1] = tostring(r[i]) end return table.concat(t, "|") end)()"#,
            r#"OK s:|2"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.size, "\115") return tostring(v) end)()"#,
            r#"OK s:bad argument #1 to '?' (option 's' has no fixed size)"#,
        ),
        (
            r#"(function() local ok, v = pcall(struct.pack, "\115", -1, 300) return v end)()"#,
            r#"OK x:2d3100"#,
        ),
    ]);
}

/// Calls the global function `name`: it must return, or fail with a plain Lua error
/// (never a panic turned into an error, never an abort).
fn call_cleanly(lua: &Lua, name: &str, args: impl mlua::IntoLuaMulti) -> Result<(), String> {
    let function: mlua::Function = lua.load(name).eval().expect("library function");
    match function.call::<mlua::MultiValue>(args) {
        Err(mlua::Error::RuntimeError(message)) if message.contains("internal error") => {
            Err(message)
        }
        Ok(_) | Err(mlua::Error::RuntimeError(_)) => Ok(()),
        Err(other) => Err(other.to_string()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Arbitrary bytes decode or give a Lua error.
    #[test]
    fn decoders_survive_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let lua = lua_with_libs();
        let input = lua.create_string(&bytes).unwrap();
        for decoder in ["cjson.decode", "cmsgpack.unpack", "cmsgpack.unpack_one", "struct.size"] {
            prop_assert_eq!(call_cleanly(&lua, decoder, input.clone()), Ok(()));
        }
        prop_assert_eq!(call_cleanly(&lua, "struct.unpack", (input.clone(), input.clone())), Ok(()));
        let limit = bytes.len() as i64 % 5;
        let offset = i64::from(bytes.first().copied().unwrap_or(0)) % 9;
        prop_assert_eq!(call_cleanly(&lua, "cmsgpack.unpack_limit", (input, limit, offset)), Ok(()));
    }

    /// Bytes that look like JSON or MessagePack (few distinct bytes, deep nesting).
    #[test]
    fn decoders_survive_structured_noise(bytes in proptest::collection::vec(
        prop::sample::select(b"[]{}\":,0123456789-+.eEtrufalsn\\u \x91\x81\xdc\xde\xa1\xc0\xcb\xd9\x00".to_vec()), 0..200)) {
        let lua = lua_with_libs();
        let input = lua.create_string(&bytes).unwrap();
        for decoder in ["cjson.decode", "cmsgpack.unpack"] {
            prop_assert_eq!(call_cleanly(&lua, decoder, input.clone()), Ok(()));
        }
    }

    /// Whatever cmsgpack packs, it unpacks to a value that packs the same way.
    #[test]
    fn msgpack_round_trips(numbers in proptest::collection::vec(any::<f64>(), 0..8), text in ".{0,40}") {
        let lua = lua_with_libs();
        let same: mlua::Function = lua
            .load("function(...) local p = cmsgpack.pack(...) return p == cmsgpack.pack(cmsgpack.unpack(p)) end")
            .eval()
            .unwrap();
        let numbers = lua.create_sequence_from(numbers.into_iter().filter(|n| !n.is_nan())).unwrap();
        prop_assert!(same.call::<bool>((numbers, text)).unwrap());
    }
}
