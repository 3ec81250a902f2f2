//! FUNCTION and FCALL over TCP: libraries seen by every thread, FUNCTION LIST, DUMP /
//! RESTORE round trips, and FUNCTION STATS / KILL while a function loops.

mod support;

use std::thread;
use std::time::{Duration, Instant};
use support::in_process::Kvik;
use support::{RawConn, TestServer};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const LIB: &str = "#!lua name=counters\n\
    redis.register_function('bump', function(keys, args) return redis.call('INCRBY', keys[1], args[1]) end)\n\
    redis.register_function{function_name='peek', callback=function(keys) return redis.call('GET', keys[1]) end, flags={'no-writes'}, description='reads'}";

#[test]
fn libraries_are_seen_by_every_connection() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    assert_eq!(
        text(&c.cmd(&["FUNCTION", "LOAD", LIB])),
        "$8\r\ncounters\r\n"
    );
    // Fresh connections spread over the server's threads; each compiles the library.
    for i in 1..=6 {
        let mut other = kvik.conn();
        assert_eq!(
            text(&other.cmd(&["FCALL", "bump", "1", "n", "2"])),
            format!(":{}\r\n", 2 * i)
        );
        assert_eq!(
            text(&other.cmd(&["FCALL_RO", "peek", "1", "n"])),
            format!("${}\r\n{}\r\n", (2 * i).to_string().len(), 2 * i)
        );
    }
    assert_eq!(
        text(&c.cmd(&["FCALL_RO", "bump", "1", "n", "1"])),
        "-ERR Can not execute a script with write flag using *_ro command.\r\n"
    );
    assert_eq!(text(&c.cmd(&["FUNCTION", "DELETE", "counters"])), "+OK\r\n");
    for _ in 0..4 {
        assert_eq!(
            text(&kvik.conn().cmd(&["FCALL", "bump", "1", "n", "2"])),
            "-ERR Function not found\r\n"
        );
    }
}

#[test]
fn list_describes_libraries() {
    let kvik = Kvik::start();
    let mut c = kvik.client();
    redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(LIB)
        .query::<String>(&mut c)
        .unwrap();
    let list: redis::Value = redis::cmd("FUNCTION")
        .arg("LIST")
        .arg("WITHCODE")
        .query(&mut c)
        .unwrap();
    let shown = format!("{list:?}");
    for part in [
        "counters",
        "LUA",
        "bump",
        "peek",
        "reads",
        "no-writes",
        "register_function",
    ] {
        assert!(shown.contains(part), "{part} missing from {shown}");
    }
    let none: redis::Value = redis::cmd("FUNCTION")
        .arg("LIST")
        .arg("LIBRARYNAME")
        .arg("x*")
        .query(&mut c)
        .unwrap();
    assert_eq!(none, redis::Value::Array(vec![]));
}

#[test]
fn dump_and_restore_round_trip() {
    let kvik = Kvik::start();
    let mut c = kvik.client();
    redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(LIB)
        .query::<String>(&mut c)
        .unwrap();
    let payload: Vec<u8> = redis::cmd("FUNCTION").arg("DUMP").query(&mut c).unwrap();
    let restore = |c: &mut redis::Connection, policy: &[&str]| {
        redis::cmd("FUNCTION")
            .arg("RESTORE")
            .arg(&payload)
            .arg(policy)
            .query::<String>(c)
    };
    let err = restore(&mut c, &[]).unwrap_err();
    assert!(
        err.to_string().contains("Library counters already exists"),
        "{err}"
    );
    assert_eq!(restore(&mut c, &["REPLACE"]).unwrap(), "OK");
    redis::cmd("FUNCTION")
        .arg("FLUSH")
        .query::<String>(&mut c)
        .unwrap();
    assert_eq!(restore(&mut c, &["FLUSH"]).unwrap(), "OK");
    let n: i64 = redis::cmd("FCALL")
        .arg("bump")
        .arg(1)
        .arg("k")
        .arg(5)
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 5);
    let mut broken = payload.clone();
    *broken.last_mut().unwrap() ^= 0xff;
    let err = redis::cmd("FUNCTION")
        .arg("RESTORE")
        .arg(broken)
        .query::<String>(&mut c)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("payload version or checksum are wrong"),
        "{err}"
    );
}

#[test]
fn function_kill_stops_a_busy_function() {
    let server = TestServer::start(&["--server-threads", "4", "--busy-reply-threshold", "100"]);
    let addr = server.addr();
    let mut setup = server.raw();
    let lib = "#!lua name=spin\nredis.register_function('spin', function() while true do end end)";
    assert_eq!(
        text(&setup.cmd(&["FUNCTION", "LOAD", lib])),
        "$4\r\nspin\r\n"
    );
    let mut looping = server.raw();
    looping.send_cmd(&["FCALL", "spin", "0"]);
    let ask = |args: &[&str]| {
        let mut c = RawConn::connect(&addr);
        c.set_read_timeout(Duration::from_millis(500));
        c.send_cmd(args);
        c.read_reply_or_eof().ok().flatten().map(|r| text(&r))
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let reply = ask(&["GET", "x"]);
        if reply.as_deref()
            == Some("-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n")
        {
            break;
        }
        assert!(Instant::now() < deadline, "never busy: {reply:?}");
        thread::sleep(Duration::from_millis(20));
    }
    let stats = loop {
        if let Some(s) = ask(&["FUNCTION", "STATS"]) {
            break s;
        }
    };
    assert!(
        stats.contains("running_script") && stats.contains("spin") && stats.contains("duration_ms"),
        "{stats}"
    );
    let killed = loop {
        if let Some(s) = ask(&["FUNCTION", "KILL"]) {
            break s;
        }
    };
    assert_eq!(killed, "+OK\r\n");
    looping.set_read_timeout(Duration::from_secs(10));
    assert_eq!(
        text(&looping.read_reply()),
        "-ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:2.\r\n"
    );
}

/// Issue 16: FCALL finds functions whatever the case (a clash across libraries too),
/// and its argument errors and FUNCTION's are Redis's texts.
#[test]
fn function_names_ignore_case_and_argument_errors_are_redis_texts() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    let lib = "#!lua name=lib\nredis.register_function('MixCase', function() return 2 end)";
    assert_eq!(text(&c.cmd(&["FUNCTION", "LOAD", lib])), "$3\r\nlib\r\n");
    for name in ["MixCase", "mixcase", "MIXCASE"] {
        assert_eq!(text(&c.cmd(&["FCALL", name, "0"])), ":2\r\n");
    }
    let clash = "#!lua name=other\nredis.register_function('mixCASE', function() end)";
    assert_eq!(
        text(&c.cmd(&["FUNCTION", "LOAD", clash])),
        "-ERR Function mixCASE already exists\r\n"
    );
    assert_eq!(
        text(&c.cmd(&["FCALL", "MixCase", "notanumber"])),
        "-ERR Bad number of keys provided\r\n"
    );
    assert_eq!(
        text(&c.cmd(&["EVAL", "return 1", "notanumber"])),
        "-ERR value is not an integer or out of range\r\n"
    );
    assert_eq!(
        text(&c.cmd(&["FUNCTION", "RESTORE", "a", "b", "c"])),
        "-ERR unknown subcommand or wrong number of arguments for 'RESTORE'. Try FUNCTION HELP.\r\n"
    );
    assert_eq!(
        text(&c.cmd(&["FUNCTION", "flush", "a", "b"])),
        "-ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP.\r\n"
    );
    assert_eq!(
        text(&c.cmd(&["FUNCTION", "FLUSH", "badarg"])),
        "-ERR FUNCTION FLUSH only supports SYNC|ASYNC option\r\n"
    );
}
