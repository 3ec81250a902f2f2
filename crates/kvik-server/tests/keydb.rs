//! KeyDB's own commands: KEYDB.MEXISTS, KEYDB.HRENAME and OBJECT LASTMODIFIED, with
//! KeyDB's replies, HRENAME's effects in a form any replica understands, and the
//! `keydb` name of the scripting table.

mod support;

use std::time::Duration;
use support::in_process::Kvik;
use support::TestServer;

#[test]
fn mexists_tells_each_key_apart_in_both_protocols() {
    let server = TestServer::start(&[]);
    let mut c = server.raw();
    c.cmd(&["SET", "a", "1"]);
    c.cmd(&["RPUSH", "c", "x"]);
    assert_eq!(
        c.cmd(&["KEYDB.MEXISTS", "a", "b", "c"]),
        b"*3\r\n:1\r\n:0\r\n:1\r\n"
    );
    assert_eq!(
        c.cmd(&["keydb.mexists"]),
        b"-ERR wrong number of arguments for 'keydb.mexists' command\r\n"
    );
    c.cmd(&["HELLO", "3"]);
    assert_eq!(c.cmd(&["KEYDB.MEXISTS", "b", "a"]), b"*2\r\n#f\r\n#t\r\n");
}

#[test]
fn hrename_moves_a_value_to_another_field() {
    let server = TestServer::start(&[]);
    let mut c = server.raw();
    c.cmd(&["HSET", "h", "old", "v1", "other", "v2"]);
    assert_eq!(c.cmd(&["KEYDB.HRENAME", "h", "old", "new"]), b":1\r\n");
    assert_eq!(
        c.cmd(&["HGETALL", "h"]),
        b"*4\r\n$5\r\nother\r\n$2\r\nv2\r\n$3\r\nnew\r\n$2\r\nv1\r\n"
    );
    // Onto an existing field: its value is replaced.
    assert_eq!(c.cmd(&["KEYDB.HRENAME", "h", "new", "other"]), b":1\r\n");
    assert_eq!(
        c.cmd(&["HGETALL", "h"]),
        b"*2\r\n$5\r\nother\r\n$2\r\nv1\r\n"
    );
    // Onto itself: nothing changes.
    assert_eq!(c.cmd(&["KEYDB.HRENAME", "h", "other", "other"]), b":1\r\n");
    assert_eq!(c.cmd(&["HGET", "h", "other"]), b"$2\r\nv1\r\n");

    assert_eq!(c.cmd(&["KEYDB.HRENAME", "nokey", "a", "b"]), b"$-1\r\n");
    assert_eq!(
        c.cmd(&["KEYDB.HRENAME", "h", "nofield", "b"]),
        b"-ERR hash key doesn't exist\r\n"
    );
    c.cmd(&["SET", "s", "v"]);
    assert_eq!(
        c.cmd(&["KEYDB.HRENAME", "s", "a", "b"]),
        b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    );
}

#[test]
fn hrename_propagates_as_hdel_and_hset_in_one_transaction() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    c.cmd(&["HSET", "h", "a", "v"]);
    let effects = kvik.effects();
    assert_eq!(c.cmd(&["KEYDB.HRENAME", "h", "a", "b"]), b":1\r\n");
    let seen: Vec<Vec<String>> = (0..4)
        .map(|_| {
            let effect = effects
                .recv_timeout(Duration::from_secs(5))
                .expect("an effect");
            effect
                .argv
                .iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .collect();
    assert_eq!(
        seen,
        [
            vec!["MULTI"],
            vec!["HDEL", "h", "a"],
            vec!["HSET", "h", "b", "v"],
            vec!["EXEC"]
        ]
    );
}

#[test]
fn object_lastmodified_counts_seconds_since_the_last_write_not_the_last_read() {
    let server = TestServer::start(&["--enable-debug-command", "yes"]);
    let mut c = server.raw();
    c.cmd(&["SET", "k", "v"]);
    assert_eq!(c.cmd(&["OBJECT", "LASTMODIFIED", "k"]), b":0\r\n");
    assert_eq!(c.cmd(&["OBJECT", "LASTMODIFIED", "missing"]), b"$-1\r\n");
    std::thread::sleep(Duration::from_millis(1100));
    c.cmd(&["GET", "k"]);
    let since = c.cmd(&["OBJECT", "LASTMODIFIED", "k"]);
    let seconds: u64 = std::str::from_utf8(&since[1..since.len() - 2])
        .unwrap()
        .parse()
        .unwrap();
    assert!(seconds >= 1, "a read is not a write: {seconds}");
    c.cmd(&["APPEND", "k", "w"]);
    assert_eq!(c.cmd(&["OBJECT", "LASTMODIFIED", "k"]), b":0\r\n");
}

#[test]
fn scripts_reach_the_server_as_keydb_too() {
    let server = TestServer::start(&[]);
    let mut c = server.raw();
    assert_eq!(
        c.cmd(&[
            "EVAL",
            "keydb.call('SET', KEYS[1], 'v') return keydb.pcall('GET', KEYS[1])",
            "1",
            "k"
        ]),
        b"$1\r\nv\r\n"
    );
    assert_eq!(c.cmd(&["EVAL", "return keydb == redis", "0"]), b":1\r\n");
    // As read-only as `redis`.
    let reply = c.cmd(&["EVAL", "keydb.call = nil", "0"]);
    assert!(
        reply.starts_with(b"-ERR"),
        "{}",
        String::from_utf8_lossy(&reply)
    );
}

#[test]
fn is_flash_enabled_answers_no_and_starts_no_server() {
    let mut child = std::process::Command::new(support::kvik_server_path())
        .arg("--is-flash-enabled")
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("run kvik-server");
    // A server that started would never exit: poll with a deadline, then fail.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("kvik-server --is-flash-enabled did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(1), "no flash tier: a non-zero exit");
}
