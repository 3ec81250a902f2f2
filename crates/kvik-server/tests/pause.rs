//! CLIENT PAUSE as Redis 7.0 keeps it: held clients count in INFO's
//! `blocked_clients`, EXEC waits when its queue writes, a pause begun inside a
//! transaction starts after EXEC, commands that will fail are answered at once, and
//! the dataset stays static (no key expires, actively or on access) until the pause
//! ends. Each case was checked against redis-server 7.0.15.

mod support;

use std::time::{Duration, Instant};
use support::{RawConn, TestServer};

/// Whether a reply arrives within `wait`.
fn replies_within(conn: &mut RawConn, wait: Duration) -> Option<Vec<u8>> {
    conn.set_read_timeout(wait);
    let reply = conn.read_reply_or_eof().ok().flatten();
    conn.set_read_timeout(support::IO_TIMEOUT);
    reply
}

/// Wait until INFO's `blocked_clients` reads `count`.
fn wait_for_blocked(conn: &mut RawConn, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let now = conn.info_field("clients", "blocked_clients");
        if now == count.to_string() {
            return;
        }
        assert!(Instant::now() < deadline, "blocked_clients stays {now}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn held_clients_count_as_blocked_and_exec_of_writes_waits() {
    let server = TestServer::start(&["--server-threads", "2"]);
    let mut admin = server.raw();
    let mut writer = server.raw();
    let mut tx = server.raw();
    assert_eq!(tx.cmd(&["MULTI"]), b"+OK\r\n");
    assert_eq!(tx.cmd(&["SET", "t", "1"]), b"+QUEUED\r\n");
    assert_eq!(
        admin.cmd(&["CLIENT", "PAUSE", "20000", "WRITE"]),
        b"+OK\r\n"
    );
    writer.send_cmd(&["SET", "k", "v"]);
    tx.send_cmd(&["EXEC"]);
    wait_for_blocked(&mut admin, 2);
    assert_eq!(replies_within(&mut tx, Duration::from_millis(200)), None);

    // Commands that fail their checks are answered at once.
    let mut sloppy = server.raw();
    assert_eq!(
        sloppy.cmd(&["SET", "k"]),
        b"-ERR wrong number of arguments for 'set' command\r\n"
    );
    assert!(sloppy
        .cmd(&["NOSUCHCOMMAND"])
        .starts_with(b"-ERR unknown command"));
    // A read-only transaction is not held.
    assert_eq!(sloppy.cmd(&["MULTI"]), b"+OK\r\n");
    assert_eq!(sloppy.cmd(&["GET", "k"]), b"+QUEUED\r\n");
    assert_eq!(sloppy.cmd(&["EXEC"]), b"*1\r\n$-1\r\n");

    assert_eq!(admin.cmd(&["CLIENT", "UNPAUSE"]), b"+OK\r\n");
    assert_eq!(writer.read_reply(), b"+OK\r\n");
    assert_eq!(tx.read_reply(), b"*1\r\n+OK\r\n");
    wait_for_blocked(&mut admin, 0);
}

#[test]
fn a_pause_begun_in_a_transaction_starts_after_exec() {
    let server = TestServer::start(&["--server-threads", "2"]);
    let mut conn = server.raw();
    assert_eq!(conn.cmd(&["MULTI"]), b"+OK\r\n");
    assert_eq!(conn.cmd(&["SET", "foo1", "bar"]), b"+QUEUED\r\n");
    assert_eq!(
        conn.cmd(&["CLIENT", "PAUSE", "60000", "WRITE"]),
        b"+QUEUED\r\n"
    );
    assert_eq!(conn.cmd(&["SET", "foo2", "bar"]), b"+QUEUED\r\n");
    assert_eq!(conn.cmd(&["EXEC"]), b"*3\r\n+OK\r\n+OK\r\n+OK\r\n");
    let mut late = server.raw();
    late.send_cmd(&["SET", "foo3", "bar"]);
    wait_for_blocked(&mut conn, 1);
    assert_eq!(conn.cmd(&["GET", "foo1"]), b"$3\r\nbar\r\n");
    assert_eq!(conn.cmd(&["GET", "foo2"]), b"$3\r\nbar\r\n");
    assert_eq!(conn.cmd(&["GET", "foo3"]), b"$-1\r\n");
    assert_eq!(conn.cmd(&["CLIENT", "UNPAUSE"]), b"+OK\r\n");
    assert_eq!(late.read_reply(), b"+OK\r\n");
}

#[test]
fn no_key_expires_while_clients_are_paused() {
    let server = TestServer::start(&["--server-threads", "2", "--hz", "100"]);
    let mut conn = server.raw();
    let expired_before: u64 = conn.info_field("stats", "expired_keys").parse().unwrap();
    assert_eq!(conn.cmd(&["MULTI"]), b"+OK\r\n");
    conn.cmd(&["SET", "foo", "bar", "PX", "10"]);
    conn.cmd(&["SET", "bar", "foo", "PX", "10"]);
    conn.cmd(&["CLIENT", "PAUSE", "50000", "WRITE"]);
    assert_eq!(conn.cmd(&["EXEC"]), b"*3\r\n+OK\r\n+OK\r\n+OK\r\n");
    // Long enough for the active cycle (at hz 100) and any access to expire them.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(conn.cmd(&["GET", "foo"]), b"$-1\r\n");
    assert_eq!(conn.cmd(&["EXISTS", "bar"]), b":0\r\n");
    assert_eq!(conn.cmd(&["TTL", "bar"]), b":-2\r\n");
    assert_eq!(conn.cmd(&["KEYS", "*"]), b"*0\r\n");
    assert_eq!(conn.cmd(&["SCAN", "0"]), b"*2\r\n$1\r\n0\r\n*0\r\n");
    // Logically gone, still there: Redis counts them until they are deleted.
    assert_eq!(conn.cmd(&["DBSIZE"]), b":2\r\n");
    // With every key due, RANDOMKEY still answers (Redis 7.0 would loop for ever).
    let random = conn.cmd(&["RANDOMKEY"]);
    assert!(random == b"$3\r\nfoo\r\n" || random == b"$3\r\nbar\r\n");
    let expired_now: u64 = conn.info_field("stats", "expired_keys").parse().unwrap();
    assert_eq!(expired_now, expired_before);

    assert_eq!(conn.cmd(&["CLIENT", "UNPAUSE"]), b"+OK\r\n");
    assert_eq!(conn.cmd(&["GET", "foo"]), b"$-1\r\n");
    assert_eq!(conn.cmd(&["GET", "bar"]), b"$-1\r\n");
    let expired_after: u64 = conn.info_field("stats", "expired_keys").parse().unwrap();
    assert_eq!(expired_after, expired_before + 2);
    assert_eq!(conn.cmd(&["DBSIZE"]), b":0\r\n");
}

#[test]
fn pause_write_holds_what_may_replicate_and_writing_scripts() {
    let server = TestServer::start(&["--server-threads", "2"]);
    let mut admin = server.raw();
    assert_eq!(
        admin.cmd(&["CLIENT", "PAUSE", "20000", "WRITE"]),
        b"+OK\r\n"
    );
    let no_writes = "#!lua flags=no-writes\nreturn 1";
    let cases: [(&[&str], bool); 7] = [
        (&["EVAL", "return 1", "0"], true),
        (&["EVAL", "#!lua\nreturn 1", "0"], true),
        (&["EVAL", no_writes, "0"], false),
        (&["EVAL_RO", "return 1", "0"], false),
        (&["PUBLISH", "c", "m"], true),
        (&["PFCOUNT", "h"], true),
        (&["FCALL", "nosuch", "0"], true),
    ];
    let mut held = Vec::new();
    for (command, holds) in cases {
        let mut conn = server.raw();
        conn.send_cmd(command);
        let reply = replies_within(&mut conn, Duration::from_millis(200));
        assert_eq!(reply.is_none(), holds, "{command:?}: {reply:?}");
        if holds {
            held.push(conn);
        }
    }
    wait_for_blocked(&mut admin, held.len());
    assert_eq!(admin.cmd(&["CLIENT", "UNPAUSE"]), b"+OK\r\n");
    for mut conn in held {
        conn.read_reply();
    }
}
