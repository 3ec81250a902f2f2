//! A long script and the clients of its own thread: with `server-threads 1` every
//! client shares the script's thread, and still, once the script has run past
//! `busy-reply-threshold`, new and existing connections are served: BUSY for most
//! commands, SCRIPT KILL, FUNCTION KILL and SHUTDOWN NOSAVE for real, as in Redis.

mod support;

use std::thread;
use std::time::{Duration, Instant};
use support::{RawConn, TestServer};

const BUSY: &str =
    "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn one_thread() -> TestServer {
    TestServer::start(&["--server-threads", "1", "--busy-reply-threshold", "100"])
}

/// Send `args` on `conn` and give the reply, failing the test after five seconds.
fn reply(conn: &mut RawConn, args: &[&str]) -> String {
    conn.set_read_timeout(Duration::from_secs(5));
    text(&conn.cmd(args))
}

/// A fresh connection's reply to `args`, once the script is busy.
fn fresh_reply(addr: &str, args: &[&str]) -> String {
    reply(&mut RawConn::connect(addr), args)
}

/// Start `script` on a connection of its own and wait until others get BUSY.
fn start_busy(server: &TestServer, args: &[&str]) -> RawConn {
    let mut looping = server.raw();
    looping.send_cmd(args);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !fresh_reply(&server.addr(), &["GET", "x"]).starts_with("-BUSY ") {
        assert!(Instant::now() < deadline, "never got BUSY");
        thread::sleep(Duration::from_millis(20));
    }
    looping
}

#[test]
fn script_kill_reaches_the_only_thread() {
    let server = one_thread();
    let mut connected_before = server.raw();
    assert_eq!(reply(&mut connected_before, &["PING"]), "+PONG\r\n");
    let mut looping = start_busy(&server, &["EVAL", "while true do end", "0"]);
    // A connection made before the script and one made during it both get answers.
    assert_eq!(reply(&mut connected_before, &["SET", "x", "1"]), BUSY);
    // The busy script is not a function: FUNCTION KILL gets Redis's BUSY text.
    assert_eq!(reply(&mut connected_before, &["FUNCTION", "KILL"]), BUSY);
    assert_eq!(fresh_reply(&server.addr(), &["SCRIPT", "KILL"]), "+OK\r\n");
    let killed = reply(&mut looping, &["PING"]);
    assert!(
        killed.starts_with("-ERR Script killed by user with SCRIPT KILL..."),
        "{killed}"
    );
    assert_eq!(text(&looping.read_reply()), "+PONG\r\n");
    assert_eq!(reply(&mut connected_before, &["GET", "x"]), "$-1\r\n");
}

#[test]
fn pipelined_commands_each_get_busy_and_allow_busy_ones_run() {
    let server = one_thread();
    let _looping = start_busy(&server, &["EVAL", "while true do end", "0"]);
    let mut c = server.raw();
    c.set_read_timeout(Duration::from_secs(5));
    // Refused before it is queued, as in Redis: BUSY, and EXEC would abort.
    c.send(
        b"*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*1\r\n$7\r\nDISCARD\r\n",
    );
    assert_eq!(text(&c.read_reply()), "+OK\r\n");
    assert_eq!(text(&c.read_reply()), BUSY);
    assert_eq!(text(&c.read_reply()), "+OK\r\n");
    c.send(b"*1\r\n$5\r\nMULTI\r\n*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n");
    assert_eq!(text(&c.read_reply()), "+OK\r\n");
    assert_eq!(text(&c.read_reply()), BUSY);
    // EXEC itself refused discards the transaction, saying why (outside MULTI too).
    let refused = format!(
        "-EXECABORT Transaction discarded because of: {}",
        &BUSY[1..]
    );
    assert_eq!(reply(&mut c, &["EXEC"]), refused);
    assert_eq!(reply(&mut c, &["EXEC"]), refused);
    c.send(b"*1\r\n$5\r\nMULTI\r\n*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n");
    assert_eq!(text(&c.read_reply()), "+OK\r\n");
    assert_eq!(text(&c.read_reply()), BUSY);
    assert_eq!(fresh_reply(&server.addr(), &["SCRIPT", "KILL"]), "+OK\r\n");
    assert_eq!(
        reply(&mut c, &["EXEC"]),
        "-EXECABORT Transaction discarded because of previous errors.\r\n"
    );
}

/// WATCH may run while a script is busy, but not wait for a shard the script holds:
/// the script could never release it while its own thread waits.
#[test]
fn watch_of_a_key_the_busy_script_holds_answers_busy_instead_of_waiting() {
    let server = one_thread();
    let _looping = start_busy(&server, &["EVAL", "while true do end", "1", "held"]);
    assert_eq!(fresh_reply(&server.addr(), &["WATCH", "held"]), BUSY);
    assert_eq!(fresh_reply(&server.addr(), &["SCRIPT", "KILL"]), "+OK\r\n");
    assert_eq!(fresh_reply(&server.addr(), &["WATCH", "held"]), "+OK\r\n");
}

#[test]
fn function_kill_and_shutdown_nosave_reach_the_only_thread() {
    let mut server = one_thread();
    let mut c = server.raw();
    let library =
        "#!lua name=spin\nredis.register_function('spin', function() while true do end end)";
    assert_eq!(
        reply(&mut c, &["FUNCTION", "LOAD", library]),
        "$4\r\nspin\r\n"
    );
    let mut looping = start_busy(&server, &["FCALL", "spin", "0"]);
    assert_eq!(
        fresh_reply(&server.addr(), &["FUNCTION", "KILL"]),
        "+OK\r\n"
    );
    let killed = reply(&mut looping, &["PING"]);
    assert!(killed.starts_with("-ERR Script killed by user"), "{killed}");
    assert_eq!(text(&looping.read_reply()), "+PONG\r\n");

    // Calling a write command is enough, even one that changes nothing (Redis's rule).
    let _writer = start_busy(
        &server,
        &[
            "EVAL",
            "redis.call('DEL', 'missing') while true do end",
            "0",
        ],
    );
    let unkillable = fresh_reply(&server.addr(), &["SCRIPT", "KILL"]);
    assert!(unkillable.starts_with("-UNKILLABLE"), "{unkillable}");
    let mut stopper = server.raw();
    stopper.send_cmd(&["SHUTDOWN", "NOSAVE"]);
    server.assert_exits_within(Duration::from_secs(10));
}

/// What the script's own client pipelined behind it, and a client that disconnects
/// meanwhile, are both dealt with once the script ends.
#[test]
fn the_scripts_own_client_is_not_served_while_it_runs() {
    let server = one_thread();
    let mut looping = server.raw();
    looping.set_read_timeout(Duration::from_secs(10));
    looping.send_cmd(&[
        "EVAL",
        "local t = redis.call('TIME')[1] + 1 while redis.call('TIME')[1] + 0 < t do end return 7",
        "0",
    ]);
    thread::sleep(Duration::from_millis(300));
    looping.send_cmd(&["PING"]);
    let mut gone = server.raw();
    gone.send_cmd(&["PING"]);
    drop(gone);
    assert_eq!(text(&looping.read_reply()), ":7\r\n");
    assert_eq!(text(&looping.read_reply()), "+PONG\r\n");
    assert_eq!(fresh_reply(&server.addr(), &["PING"]), "+PONG\r\n");
}
