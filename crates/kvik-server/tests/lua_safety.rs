//! The Lua sandbox's hard limits, over real sockets: code is only ever loaded as
//! source text (a precompiled chunk is refused wherever code is loaded), a killed
//! script dies even when it catches the kill, and a library whose top-level code never
//! ends is stopped after 500 ms, wherever it is loaded. The error texts are Redis
//! 7.0's, as redis-server 7.0.15 gives them (`tests/differential/scripting_safety.redis`
//! compares the two).

mod support;

use kvik_server::persistence::rdb::payload::Crc64;
use std::thread;
use std::time::{Duration, Instant};
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

/// A server whose one thread every client shares, so that the script's own thread
/// must serve the kill.
fn one_thread() -> TestServer {
    TestServer::start(&["--server-threads", "1", "--busy-reply-threshold", "100"])
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

/// Start `args` on a connection of its own and wait until others get BUSY.
fn start_busy(server: &TestServer, args: &[&str]) -> RawConn {
    let mut looping = server.raw();
    looping.send_cmd(args);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !reply(&mut server.raw(), &["GET", "x"]).starts_with("-BUSY ") {
        assert!(Instant::now() < deadline, "never got BUSY");
        thread::sleep(Duration::from_millis(20));
    }
    looping
}

#[test]
fn a_script_that_catches_the_kill_still_dies() {
    let server = one_thread();
    let mut before = server.raw();
    assert_eq!(reply(&mut before, &["SET", "x", "1"]), "+OK\r\n");
    let scripts = [
        // Redis's own case: the kill is caught by pcall around a loop of redis.call.
        "local f = function() while 1 do redis.call('ping') end end while 1 do pcall(f) end",
        "while 1 do pcall(function() while 1 do end end) end",
        "while 1 do xpcall(function() while 1 do end end, function(e) return e end) end",
        // Coroutines have hooks of their own, and resume catches errors too.
        "while 1 do coroutine.resume(coroutine.create(function() while 1 do end end)) end",
        "coroutine.wrap(function() while 1 do pcall(function() while 1 do end end) end end)()",
    ];
    for script in scripts {
        let mut looping = start_busy(&server, &["EVAL", script, "0"]);
        assert_eq!(reply(&mut server.raw(), &["SCRIPT", "KILL"]), "+OK\r\n");
        let killed = reply(&mut looping, &["PING"]);
        assert!(
            killed.starts_with("-ERR Script killed by user with SCRIPT KILL... script: ")
                && killed.ends_with(", on @user_script:1.\r\n"),
            "{script}: {killed}"
        );
        // The script's own connection, what it pipelined, and the others carry on.
        assert_eq!(text(&looping.read_reply()), "+PONG\r\n");
        assert_eq!(reply(&mut looping, &["EVAL", "return 7", "0"]), ":7\r\n");
        assert_eq!(reply(&mut before, &["GET", "x"]), "$1\r\n1\r\n");
    }

    // Where the script caught the kill, it sees the kill's text, as in Redis.
    let mut looping = start_busy(
        &server,
        &[
            "EVAL",
            "local ok, e = pcall(function() while 1 do end end) return e",
            "0",
        ],
    );
    assert_eq!(reply(&mut server.raw(), &["SCRIPT", "KILL"]), "+OK\r\n");
    looping.set_read_timeout(Duration::from_secs(5));
    assert_eq!(
        text(&looping.read_reply()),
        bulk("ERR Script killed by user with SCRIPT KILL...")
    );

    // Once the kill is over, the next long script runs until it is done.
    let counted = reply(
        &mut looping,
        &[
            "EVAL",
            "local n = 0 for i = 1, 1000000 do n = n + 1 end return n",
            "0",
        ],
    );
    assert_eq!(counted, ":1000000\r\n");
}

#[test]
fn a_function_that_catches_the_kill_still_dies() {
    let server = one_thread();
    let mut c = server.raw();
    let library = "#!lua name=spin\nredis.register_function{function_name='spin', \
                   callback=function() while 1 do pcall(function() while 1 do end end) end end, \
                   flags={'no-writes'}}";
    assert_eq!(
        reply(&mut c, &["FUNCTION", "LOAD", library]),
        "$4\r\nspin\r\n"
    );
    let mut looping = start_busy(&server, &["FCALL", "spin", "0"]);
    assert_eq!(reply(&mut server.raw(), &["FUNCTION", "KILL"]), "+OK\r\n");
    assert_eq!(
        reply(&mut looping, &["PING"]),
        "-ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:2.\r\n"
    );
    assert_eq!(text(&looping.read_reply()), "+PONG\r\n");
    assert_eq!(reply(&mut c, &["PING"]), "+PONG\r\n");
}

const LOAD_TIMEOUT: &str = "-ERR Error registering functions: ERR FUNCTION LOAD timeout\r\n";

#[test]
fn library_code_that_never_ends_is_stopped_after_500_ms() {
    let server = one_thread();
    let mut c = server.raw();
    for library in [
        "#!lua name=test\nwhile 1 do end",
        "#!lua name=test\nredis.register_function('f', function() return 1 end) while 1 do end",
    ] {
        let started = Instant::now();
        assert_eq!(reply(&mut c, &["FUNCTION", "LOAD", library]), LOAD_TIMEOUT);
        assert!(started.elapsed() >= Duration::from_millis(500));
    }
    assert_eq!(reply(&mut c, &["FUNCTION", "LIST"]), "*0\r\n");
    assert_eq!(
        reply(&mut c, &["FCALL", "f", "0"]),
        "-ERR Function not found\r\n"
    );

    // The thread, its Lua state and other clients carry on.
    let good = "#!lua name=good\nredis.register_function('g', function() \
                local n = 0 for i = 1, 1000000 do n = n + 1 end return n end)";
    assert_eq!(reply(&mut c, &["FUNCTION", "LOAD", good]), "$4\r\ngood\r\n");
    assert_eq!(
        reply(&mut server.raw(), &["FCALL", "g", "0"]),
        ":1000000\r\n"
    );

    // FUNCTION RESTORE runs library code too: all or nothing, as ever.
    let looping: &[u8] =
        b"#!lua name=test\nredis.register_function('f', function() end) while 1 do end";
    let fine: &[u8] = b"#!lua name=other\nredis.register_function('o', function() return 2 end)";
    let payload = kvik_server::scripting::payload::encode([fine, looping]);
    assert_eq!(
        reply(&mut c, &[b"FUNCTION".as_slice(), b"RESTORE", &payload]),
        LOAD_TIMEOUT
    );
    assert_eq!(
        reply(&mut c, &["FCALL", "o", "0"]),
        "-ERR Function not found\r\n"
    );
    assert_eq!(reply(&mut c, &["FCALL", "g", "0"]), ":1000000\r\n");
}

/// An RDB file holding `code` as its one library.
fn rdb_with_library(code: &[u8]) -> Vec<u8> {
    let mut file = b"REDIS0010".to_vec();
    file.push(245);
    // An RDB string length: 14 bits, big-endian, under the 0b01 tag.
    assert!(code.len() < 1 << 14);
    file.push(0x40 | (code.len() >> 8) as u8);
    file.push(code.len() as u8);
    file.extend_from_slice(code);
    file.push(0xff);
    let crc = Crc64::of(&file);
    file.extend_from_slice(&crc.to_le_bytes());
    file
}

#[test]
fn an_rdb_file_whose_library_never_ends_is_refused() {
    let dir = support::scratch_dir("lua-safety-rdb");
    // The same file with a library that returns loads: the file itself is sound.
    let fine =
        rdb_with_library(b"#!lua name=ok\nredis.register_function('ok', function() return 3 end)");
    std::fs::write(dir.join("fine.rdb"), fine).unwrap();
    let dir_arg = dir.to_str().unwrap();
    let server = TestServer::start(&["--dir", dir_arg, "--dbfilename", "fine.rdb"]);
    assert_eq!(reply(&mut server.raw(), &["FCALL", "ok", "0"]), ":3\r\n");
    drop(server);

    let looping = rdb_with_library(b"#!lua name=spin\nwhile 1 do end");
    std::fs::write(dir.join("spin.rdb"), looping).unwrap();
    let started = Instant::now();
    let refused = TestServer::try_start(&["--dir", dir_arg, "--dbfilename", "spin.rdb"])
        .err()
        .expect("the server must not start");
    assert!(refused.contains("FUNCTION LOAD timeout"), "{refused}");
    assert!(started.elapsed() < Duration::from_secs(10));
}
