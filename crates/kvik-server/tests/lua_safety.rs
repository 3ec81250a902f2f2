//! The Lua sandbox's hard limits, over real sockets: code is only ever loaded as
//! source text (a precompiled chunk is refused wherever code is loaded). The error
//! texts are Redis 7.0's, as redis-server 7.0.15 gives them
//! (`tests/differential/scripting_safety.redis` compares the two).

mod support;

use std::time::Duration;
use support::{RawConn, TestServer};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Send `args` on `conn` and give the reply, failing the test after five seconds.
fn reply<A: AsRef<[u8]>>(conn: &mut RawConn, args: &[A]) -> String {
    conn.set_read_timeout(Duration::from_secs(5));
    text(&conn.cmd(args))
}

fn bulk(s: &str) -> String {
    format!("${}\r\n{s}\r\n", s.len())
}

/// What Lua 5.1's parser says of a chunk whose first byte is `ESC`.
const NEAR_ESC: &str = "1: unexpected symbol near 'char(27)'";

#[test]
fn precompiled_chunks_are_parsed_as_text_and_refused() {
    let server = TestServer::start(&[]);
    let mut c = server.raw();

    // The case: loadstring gives nil, so calling its result fails.
    let called = reply(
        &mut c,
        &[
            "EVAL",
            "return loadstring(string.dump(function() return 1 end))()",
            "0",
        ],
    );
    assert!(
        called.starts_with("-ERR user_script:1: attempt to call a nil value script: ")
            && called.ends_with(", on @user_script:1.\r\n"),
        "{called}"
    );
    // loadstring and load say why, naming the chunk as Lua does.
    let nil_and = |e: &str| format!("*2\r\n$3\r\nnil\r\n{}", bulk(e));
    let cases = [
        (
            "local f, e = loadstring(string.dump(function() return 1 end)) return {tostring(f), e}",
            format!("[string \"\x1bLuaQ\"]:{NEAR_ESC}"),
        ),
        (
            "local f, e = loadstring(string.dump(function() end), 'named') return {tostring(f), e}",
            format!("[string \"named\"]:{NEAR_ESC}"),
        ),
        (
            "local s = string.dump(function() end) \
             local f, e = load(function() local r = s s = nil return r end) return {tostring(f), e}",
            format!("(load):{NEAR_ESC}"),
        ),
        (
            "local s = string.dump(function() end) \
             local f, e = load(function() local r = s s = nil return r end, 'named') \
             return {tostring(f), e}",
            format!("[string \"named\"]:{NEAR_ESC}"),
        ),
        // The mark alone in a first piece of its own.
        (
            "local t, i = {'\\27', 'Lua'}, 0 \
             local f, e = load(function() i = i + 1 return t[i] end) return {tostring(f), e}",
            format!("(load):{NEAR_ESC}"),
        ),
    ];
    for (script, error) in cases {
        assert_eq!(
            reply(&mut c, &["EVAL", script, "0"]),
            nil_and(&error),
            "{script}"
        );
    }

    // EVAL, SCRIPT LOAD and FUNCTION LOAD given the bytes string.dump writes.
    let dump = c.cmd(&["EVAL", "return string.dump(function() return 1 end)", "0"]);
    let dumped = dump[dump.iter().position(|&b| b == b'\n').unwrap() + 1..dump.len() - 2].to_vec();
    assert_eq!(dumped[0], 0x1b, "{}", text(&dump));
    let script_error =
        format!("-ERR Error compiling script (new function): user_script:{NEAR_ESC}\r\n");
    assert_eq!(
        reply(&mut c, &[b"EVAL".as_slice(), &dumped, b"0"]),
        script_error
    );
    assert_eq!(
        reply(&mut c, &[b"SCRIPT".as_slice(), b"LOAD", &dumped]),
        script_error
    );
    let with_shebang = [&b"#!lua\n"[..], &dumped].concat();
    assert_eq!(
        reply(&mut c, &[b"EVAL".as_slice(), &with_shebang, b"0"]),
        "-ERR Error compiling script (new function): user_script:2: unexpected symbol near 'char(27)'\r\n"
    );
    let library = [&b"#!lua name=lib\n"[..], &dumped].concat();
    assert_eq!(
        reply(&mut c, &[b"FUNCTION".as_slice(), b"LOAD", &library]),
        "-ERR Error compiling function: user_function:2: unexpected symbol near 'char(27)'\r\n"
    );

    // A function's body gets the same loadstring.
    let library = "#!lua name=lib\nredis.register_function('f', function() \
                   return select(2, loadstring(string.dump(function() end))) end)";
    assert_eq!(
        reply(&mut c, &["FUNCTION", "LOAD", library]),
        "$3\r\nlib\r\n"
    );
    assert_eq!(
        reply(&mut c, &["FCALL", "f", "0"]),
        bulk(&format!("[string \"\x1bLuaQ\"]:{NEAR_ESC}"))
    );

    // Source text loads as before, with Lua's own argument errors.
    let loads = [
        ("return loadstring('return ...')(5)", ":5\r\n".to_string()),
        (
            "local t, i = {'return ', '6'}, 0 return load(function() i = i + 1 return t[i] end)()",
            ":6\r\n".to_string(),
        ),
        (
            "return {pcall(loadstring, nil)}",
            format!(
                "*2\r\n$-1\r\n{}",
                bulk("bad argument #1 to '?' (string expected, got nil)")
            ),
        ),
        (
            "return {pcall(load, nil)}",
            format!(
                "*2\r\n$-1\r\n{}",
                bulk("bad argument #1 to '?' (function expected, got nil)")
            ),
        ),
        (
            "return select(2, load(function() return {} end))",
            // Lua raises it, and Redis makes it an error table.
            "-ERR user_script:1: reader function must return a string\r\n".to_string(),
        ),
    ];
    for (script, expected) in loads {
        assert_eq!(reply(&mut c, &["EVAL", script, "0"]), expected, "{script}");
    }
    let refused = reply(
        &mut c,
        &["EVAL", "return loadstring('return 1', false)", "0"],
    );
    assert!(
        refused.starts_with(
            "-ERR user_script:1: bad argument #2 to 'loadstring' (string expected, got boolean) script: "
        ),
        "{refused}"
    );
}
