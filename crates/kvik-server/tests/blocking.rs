//! Blocking list commands across threads: the immediate path, waking by a push from
//! another connection (usually on another thread), FIFO order, timeouts, effects,
//! several keys, disconnects, pipelining behind a blocked command, CLIENT UNBLOCK and
//! what INFO and CLIENT LIST say about blocked clients.

mod support;

use std::io;
use std::thread;
use std::time::{Duration, Instant};
use support::{RawConn, TestServer};

const THREADS: &[&str] = &["--server-threads", "4"];

fn bulk(s: &str) -> String {
    format!("${}\r\n{s}\r\n", s.len())
}

/// `[key, element]` as RESP2 bytes.
fn key_and_element(key: &str, element: &str) -> Vec<u8> {
    format!("*2\r\n{}{}", bulk(key), bulk(element)).into_bytes()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A figure from INFO clients.
fn info_clients_field(c: &mut RawConn, field: &str) -> usize {
    let info = text(&c.cmd(&["INFO", "clients"]));
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in {info}"))
        .trim()
        .parse()
        .unwrap()
}

/// Wait until exactly `n` clients are blocked (the commands sent on other connections
/// have reached the server and blocked).
fn wait_blocked(c: &mut RawConn, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = info_clients_field(c, "blocked_clients");
        if now == n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "blocked_clients stayed {now}, not {n}"
        );
        thread::sleep(Duration::from_millis(5));
    }
}

/// Nothing arrives on `c` within `wait`.
fn assert_silent(c: &mut RawConn, wait: Duration) {
    c.set_read_timeout(wait);
    match c.read_reply_or_eof() {
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) => {}
        other => panic!("expected no reply, got {other:?}"),
    }
    c.set_read_timeout(support::IO_TIMEOUT);
}

#[test]
fn a_key_with_data_is_served_at_once() {
    let server = TestServer::start(THREADS);
    let mut c = server.raw();
    assert_eq!(c.cmd(&["RPUSH", "k", "a", "b", "c", "d"]), b":4\r\n");
    assert_eq!(
        c.cmd(&["BLPOP", "missing", "k", "0"]),
        key_and_element("k", "a")
    );
    assert_eq!(c.cmd(&["BRPOP", "k", "1"]), key_and_element("k", "d"));
    assert_eq!(
        c.cmd(&["BLMOVE", "k", "d", "LEFT", "RIGHT", "0"]),
        bulk("b").as_bytes()
    );
    assert_eq!(c.cmd(&["BRPOPLPUSH", "k", "d", "0"]), bulk("c").as_bytes());
    assert_eq!(c.cmd(&["EXISTS", "k"]), b":0\r\n");
    let reply = c.cmd(&["BLMPOP", "0", "2", "k", "d", "LEFT", "COUNT", "5"]);
    let expected = format!("*2\r\n{}*2\r\n{}{}", bulk("d"), bulk("c"), bulk("b"));
    assert_eq!(text(&reply), expected);
    assert_eq!(info_clients_field(&mut c, "blocked_clients"), 0);
}

#[test]
fn a_push_from_another_connection_wakes_the_blocked_client() {
    let server = TestServer::start(THREADS);
    let mut pusher = server.raw();
    // Several clients, so that blocked and pushing ones sit on different threads.
    for round in 0..8 {
        let mut waiter = server.raw();
        waiter.send_cmd(&["BLPOP", "q", "0"]);
        wait_blocked(&mut pusher, 1);
        let element = format!("e{round}");
        assert_eq!(pusher.cmd(&["RPUSH", "q", &element]), b":1\r\n");
        assert_eq!(waiter.read_reply(), key_and_element("q", &element));
        assert_eq!(pusher.cmd(&["EXISTS", "q"]), b":0\r\n");
    }
}

#[test]
fn waiters_are_served_in_the_order_they_blocked() {
    let server = TestServer::start(THREADS);
    let mut pusher = server.raw();
    let mut waiters: Vec<RawConn> = (0..3).map(|_| server.raw()).collect();
    for (i, w) in waiters.iter_mut().enumerate() {
        w.send_cmd(&["BLPOP", "fifo", "0"]);
        wait_blocked(&mut pusher, i + 1);
    }
    assert_eq!(pusher.cmd(&["RPUSH", "fifo", "1", "2", "3"]), b":3\r\n");
    for (i, w) in waiters.iter_mut().enumerate() {
        assert_eq!(
            w.read_reply(),
            key_and_element("fifo", &(i + 1).to_string())
        );
    }
    assert_eq!(pusher.cmd(&["EXISTS", "fifo"]), b":0\r\n");
}

#[test]
fn a_push_serves_as_many_waiters_as_it_has_elements() {
    let server = TestServer::start(THREADS);
    let mut pusher = server.raw();
    let mut waiters: Vec<RawConn> = (0..3).map(|_| server.raw()).collect();
    for (i, w) in waiters.iter_mut().enumerate() {
        w.send_cmd(&["BRPOP", "few", "0"]);
        wait_blocked(&mut pusher, i + 1);
    }
    assert_eq!(pusher.cmd(&["RPUSH", "few", "x", "y"]), b":2\r\n");
    assert_eq!(waiters[0].read_reply(), key_and_element("few", "y"));
    assert_eq!(waiters[1].read_reply(), key_and_element("few", "x"));
    assert_silent(&mut waiters[2], Duration::from_millis(100));
    assert_eq!(info_clients_field(&mut pusher, "blocked_clients"), 1);
    assert_eq!(pusher.cmd(&["LPUSH", "few", "z"]), b":1\r\n");
    assert_eq!(waiters[2].read_reply(), key_and_element("few", "z"));
}

#[test]
fn timeouts_take_fractional_seconds_and_reply_null() {
    let server = TestServer::start(THREADS);
    let mut c = server.raw();
    let cases: &[&[&str]] = &[
        &["BLPOP", "none", "0.2"],
        &["BRPOP", "none", "other", "0.2"],
        &["BLMOVE", "none", "dst", "LEFT", "LEFT", "0.2"],
        &["BRPOPLPUSH", "none", "dst", "0.2"],
        &["BLMPOP", "0.2", "1", "none", "RIGHT"],
    ];
    for &args in cases {
        let started = Instant::now();
        // Every blocking command times out with the null array, as Redis 7.0 does.
        assert_eq!(c.cmd(args), b"*-1\r\n", "{args:?}");
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(190), "{args:?} took {took:?}");
        assert!(took < Duration::from_millis(1000), "{args:?} took {took:?}");
    }
    assert_eq!(c.cmd(&["EXISTS", "dst"]), b":0\r\n");
    c.cmd(&["HELLO", "3"]);
    assert_eq!(c.cmd(&["BLPOP", "none", "0.01"]), b"_\r\n");
    assert_eq!(
        c.cmd(&["BLMOVE", "none", "d", "LEFT", "LEFT", "0.01"]),
        b"_\r\n"
    );
    assert_eq!(info_clients_field(&mut c, "blocked_clients"), 0);
}

#[test]
fn bad_timeouts_are_errors() {
    let server = TestServer::start(THREADS);
    let mut c = server.raw();
    assert_eq!(
        text(&c.cmd(&["BLPOP", "k", "-1"])),
        "-ERR timeout is negative\r\n"
    );
    assert_eq!(
        text(&c.cmd(&["BLPOP", "k", "soon"])),
        "-ERR timeout is not a float or out of range\r\n"
    );
}

#[test]
fn the_key_that_gets_data_wakes_the_client() {
    let server = TestServer::start(THREADS);
    let mut pusher = server.raw();
    let mut waiter = server.raw();
    waiter.send_cmd(&["BLPOP", "k1", "k2", "k3", "0"]);
    wait_blocked(&mut pusher, 1);
    pusher.cmd(&["RPUSH", "k3", "x"]);
    assert_eq!(waiter.read_reply(), key_and_element("k3", "x"));
    // Once woken, the client no longer waits on its other keys.
    pusher.cmd(&["RPUSH", "k1", "y"]);
    assert_eq!(pusher.cmd(&["LLEN", "k1"]), b":1\r\n");
    assert_eq!(info_clients_field(&mut pusher, "blocked_clients"), 0);
}

#[test]
fn a_key_of_another_type_keeps_the_client_waiting() {
    let server = TestServer::start(THREADS);
    let mut other = server.raw();
    let mut waiter = server.raw();
    waiter.send_cmd(&["BLPOP", "k", "0"]);
    wait_blocked(&mut other, 1);
    assert_eq!(other.cmd(&["SET", "k", "string"]), b"+OK\r\n");
    assert_silent(&mut waiter, Duration::from_millis(100));
    other.cmd(&["DEL", "k"]);
    other.cmd(&["RPUSH", "k", "a"]);
    assert_eq!(waiter.read_reply(), key_and_element("k", "a"));
}

#[test]
fn a_destination_of_another_type_ends_the_wait_with_wrongtype() {
    let server = TestServer::start(THREADS);
    let mut other = server.raw();
    let mut waiter = server.raw();
    other.cmd(&["SET", "dst", "string"]);
    waiter.send_cmd(&["BLMOVE", "src", "dst", "LEFT", "LEFT", "0"]);
    wait_blocked(&mut other, 1);
    other.cmd(&["RPUSH", "src", "a"]);
    assert_eq!(
        text(&waiter.read_reply()),
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    );
    assert_eq!(other.cmd(&["LLEN", "src"]), b":1\r\n");
}

#[test]
fn a_served_move_feeds_the_clients_waiting_on_its_destination() {
    let server = TestServer::start(THREADS);
    let mut pusher = server.raw();
    let mut mover = server.raw();
    let mut popper = server.raw();
    mover.send_cmd(&["BLMOVE", "x", "y", "RIGHT", "LEFT", "0"]);
    wait_blocked(&mut pusher, 1);
    popper.send_cmd(&["BLPOP", "y", "0"]);
    wait_blocked(&mut pusher, 2);
    pusher.cmd(&["RPUSH", "x", "e"]);
    assert_eq!(mover.read_reply(), bulk("e").as_bytes());
    assert_eq!(popper.read_reply(), key_and_element("y", "e"));
    assert_eq!(pusher.cmd(&["EXISTS", "x", "y"]), b":0\r\n");
}

#[test]
fn blmpop_served_takes_up_to_its_count() {
    let server = TestServer::start(THREADS);
    let mut pusher = server.raw();
    let mut waiter = server.raw();
    waiter.send_cmd(&["BLMPOP", "0", "2", "m1", "m2", "LEFT", "COUNT", "2"]);
    wait_blocked(&mut pusher, 1);
    pusher.cmd(&["RPUSH", "m2", "a", "b", "c"]);
    let expected = format!("*2\r\n{}*2\r\n{}{}", bulk("m2"), bulk("a"), bulk("b"));
    assert_eq!(text(&waiter.read_reply()), expected);
    assert_eq!(pusher.cmd(&["LLEN", "m2"]), b":1\r\n");
}

#[test]
fn keys_arriving_by_move_or_swapdb_wake_their_waiters() {
    let server = TestServer::start(THREADS);
    let mut other = server.raw();
    let mut waiter = server.raw();
    waiter.send_cmd(&["BLPOP", "moved", "0"]);
    wait_blocked(&mut other, 1);
    other.cmd(&["SELECT", "1"]);
    other.cmd(&["RPUSH", "moved", "m"]);
    assert_eq!(other.cmd(&["MOVE", "moved", "0"]), b":1\r\n");
    assert_eq!(waiter.read_reply(), key_and_element("moved", "m"));

    waiter.send_cmd(&["BLPOP", "swapped", "0"]);
    wait_blocked(&mut other, 1);
    other.cmd(&["RPUSH", "swapped", "s"]);
    assert_eq!(other.cmd(&["SWAPDB", "0", "1"]), b"+OK\r\n");
    assert_eq!(waiter.read_reply(), key_and_element("swapped", "s"));
}

#[test]
fn a_skipped_reply_stays_skipped_when_the_wait_ends() {
    let server = TestServer::start(THREADS);
    let mut other = server.raw();
    let mut waiter = server.raw();
    let mut batch = support::encode_command(&["CLIENT", "REPLY", "SKIP"]);
    batch.extend(support::encode_command(&["BLPOP", "quiet", "0"]));
    batch.extend(support::encode_command(&["PING"]));
    waiter.send(&batch);
    wait_blocked(&mut other, 1);
    other.cmd(&["RPUSH", "quiet", "a"]);
    assert_eq!(waiter.read_reply(), b"+PONG\r\n");
    assert_eq!(other.cmd(&["EXISTS", "quiet"]), b":0\r\n");
}

#[test]
fn a_client_that_disconnects_while_blocked_leaves_no_waiter_behind() {
    let server = TestServer::start(THREADS);
    let mut other = server.raw();
    {
        let mut waiter = server.raw();
        waiter.send_cmd(&["BLPOP", "ghost", "0"]);
        wait_blocked(&mut other, 1);
    }
    wait_blocked(&mut other, 0);
    assert_eq!(other.cmd(&["RPUSH", "ghost", "kept"]), b":1\r\n");
    assert_eq!(
        other.cmd(&["LRANGE", "ghost", "0", "-1"]),
        format!("*1\r\n{}", bulk("kept")).as_bytes()
    );
}

#[test]
fn a_killed_blocked_client_leaves_no_waiter_behind() {
    let server = TestServer::start(THREADS);
    let mut other = server.raw();
    let mut waiter = server.raw();
    let id = text(&waiter.cmd(&["CLIENT", "ID"]))[1..].trim().to_string();
    waiter.send_cmd(&["BLPOP", "killed", "0"]);
    wait_blocked(&mut other, 1);
    assert_eq!(other.cmd(&["CLIENT", "KILL", "ID", &id]), b":1\r\n");
    assert!(waiter.closed_within(Duration::from_secs(5)));
    wait_blocked(&mut other, 0);
    other.cmd(&["RPUSH", "killed", "kept"]);
    assert_eq!(other.cmd(&["LLEN", "killed"]), b":1\r\n");
}

#[test]
fn pipelined_commands_wait_behind_a_blocked_one() {
    let server = TestServer::start(THREADS);
    let mut other = server.raw();
    let mut waiter = server.raw();
    let mut batch = support::encode_command(&["BLPOP", "p", "0"]);
    batch.extend(support::encode_command(&["PING"]));
    batch.extend(support::encode_command(&["LLEN", "p"]));
    waiter.send(&batch);
    wait_blocked(&mut other, 1);
    assert_silent(&mut waiter, Duration::from_millis(100));
    other.cmd(&["RPUSH", "p", "a", "b"]);
    assert_eq!(waiter.read_reply(), key_and_element("p", "a"));
    assert_eq!(waiter.read_reply(), b"+PONG\r\n");
    assert_eq!(waiter.read_reply(), b":1\r\n");
    // A command sent while blocked waits too, and runs after the wake-up.
    waiter.send_cmd(&["BLPOP", "p2", "0"]);
    wait_blocked(&mut other, 1);
    waiter.send_cmd(&["ECHO", "later"]);
    assert_silent(&mut waiter, Duration::from_millis(100));
    other.cmd(&["RPUSH", "p2", "c"]);
    assert_eq!(waiter.read_reply(), key_and_element("p2", "c"));
    assert_eq!(waiter.read_reply(), bulk("later").as_bytes());
}

#[test]
fn client_unblock_ends_a_wait_as_a_timeout_or_an_error() {
    let server = TestServer::start(THREADS);
    let mut other = server.raw();
    let mut waiter = server.raw();
    let id = text(&waiter.cmd(&["CLIENT", "ID"]))[1..].trim().to_string();
    assert_eq!(other.cmd(&["CLIENT", "UNBLOCK", &id]), b":0\r\n");

    waiter.send_cmd(&["BLPOP", "u", "0"]);
    wait_blocked(&mut other, 1);
    assert_eq!(other.cmd(&["CLIENT", "UNBLOCK", &id]), b":1\r\n");
    assert_eq!(waiter.read_reply(), b"*-1\r\n");

    waiter.send_cmd(&["BLMOVE", "u", "v", "LEFT", "LEFT", "0"]);
    wait_blocked(&mut other, 1);
    assert_eq!(other.cmd(&["CLIENT", "UNBLOCK", &id, "ERROR"]), b":1\r\n");
    assert_eq!(
        text(&waiter.read_reply()),
        "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
    );

    waiter.send_cmd(&["BRPOPLPUSH", "u", "v", "0"]);
    wait_blocked(&mut other, 1);
    assert_eq!(other.cmd(&["CLIENT", "UNBLOCK", &id, "timeout"]), b":1\r\n");
    assert_eq!(waiter.read_reply(), b"*-1\r\n");
    wait_blocked(&mut other, 0);
    // Nothing waits any more: a push stays in the list.
    other.cmd(&["RPUSH", "u", "kept"]);
    assert_eq!(other.cmd(&["LLEN", "u"]), b":1\r\n");
    assert_eq!(waiter.cmd(&["PING"]), b"+PONG\r\n");
}

#[test]
fn info_and_client_list_show_blocked_clients() {
    let server = TestServer::start(THREADS);
    let mut other = server.raw();
    let mut forever = server.raw();
    let mut timed = server.raw();
    forever.send_cmd(&["BLPOP", "i1", "0"]);
    timed.send_cmd(&["BRPOP", "i2", "100"]);
    wait_blocked(&mut other, 2);
    assert_eq!(
        info_clients_field(&mut other, "clients_in_timeout_table"),
        1
    );
    let list = text(&other.cmd(&["CLIENT", "LIST"]));
    let blocked: Vec<&str> = list.lines().filter(|l| l.contains(" flags=b ")).collect();
    assert_eq!(blocked.len(), 2, "{list}");
    assert!(blocked.iter().any(|l| l.contains(" cmd=blpop ")), "{list}");
    assert!(blocked.iter().any(|l| l.contains(" cmd=brpop ")), "{list}");
    other.cmd(&["RPUSH", "i1", "a"]);
    forever.read_reply();
    wait_blocked(&mut other, 1);
    other.cmd(&["RPUSH", "i2", "a"]);
    timed.read_reply();
    wait_blocked(&mut other, 0);
    assert_eq!(
        info_clients_field(&mut other, "clients_in_timeout_table"),
        0
    );
    // The served calls are counted once each.
    let stats = text(&other.cmd(&["INFO", "commandstats"]));
    assert!(stats.contains("cmdstat_blpop:calls=1,"), "{stats}");
    assert!(stats.contains("cmdstat_brpop:calls=1,"), "{stats}");
}

#[test]
fn every_pushed_element_reaches_exactly_one_consumer() {
    consume_everything_once("0");
}

/// Timeouts racing with wake-ups: a wait ends once, by one of them, and an element is
/// taken only for a client that gets it.
#[test]
fn short_timeouts_racing_with_pushes_lose_no_element() {
    consume_everything_once("0.002");
}

/// Producers on several connections push numbered elements while consumers wait on
/// them with `timeout` (retrying on a null reply); every element must reach exactly one
/// consumer.
fn consume_everything_once(timeout: &'static str) {
    let server = TestServer::start(THREADS);
    const CONSUMERS: usize = 8;
    const PER_PRODUCER: usize = 200;
    const PRODUCERS: usize = 4;
    let total = PRODUCERS * PER_PRODUCER;
    let addr = server.addr();
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|_| {
            let addr = addr.clone();
            thread::spawn(move || {
                let mut c = RawConn::connect(&addr);
                let mut got = Vec::new();
                loop {
                    let reply = text(&c.cmd(&["BLPOP", "work", "stop", timeout]));
                    if reply == "*-1\r\n" {
                        continue;
                    }
                    // *2\r\n$4\r\nwork\r\n$N\r\nELEMENT\r\n
                    let parts: Vec<&str> = reply.split("\r\n").collect();
                    if parts[2] == "stop" {
                        return got;
                    }
                    got.push(parts[4].to_string());
                }
            })
        })
        .collect();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let addr = addr.clone();
            thread::spawn(move || {
                let mut c = RawConn::connect(&addr);
                for i in 0..PER_PRODUCER {
                    let reply = c.cmd(&["RPUSH", "work", &format!("{p}-{i}")]);
                    assert_eq!(reply[0], b':');
                }
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    let mut control = server.raw();
    // Wait for the queue to drain, then stop every consumer.
    let deadline = Instant::now() + Duration::from_secs(20);
    while control.cmd(&["EXISTS", "work"]) != b":0\r\n" {
        assert!(Instant::now() < deadline, "work was not drained");
        thread::sleep(Duration::from_millis(5));
    }
    let stops: Vec<String> = (0..CONSUMERS).map(|i| i.to_string()).collect();
    let mut push_stops = vec!["RPUSH", "stop"];
    push_stops.extend(stops.iter().map(String::as_str));
    control.cmd(&push_stops);
    let mut all: Vec<String> = consumers
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    all.sort();
    let mut expected: Vec<String> = (0..PRODUCERS)
        .flat_map(|p| (0..PER_PRODUCER).map(move |i| format!("{p}-{i}")))
        .collect();
    expected.sort();
    assert_eq!(all.len(), total);
    assert_eq!(all, expected);
    assert_eq!(control.cmd(&["EXISTS", "work", "stop"]), b":0\r\n");
}

mod effects {
    use super::support::in_process::{next_effect as next, Kvik};

    #[test]
    fn served_and_immediate_commands_propagate_as_their_plain_forms() {
        let kvik = Kvik::start_with(|c| c.server_threads = 4);
        let rx = kvik.effects();
        let mut waiter = kvik.conn();
        let mut pusher = kvik.conn();

        waiter.send_cmd(&["BLMOVE", "s", "d", "RIGHT", "LEFT", "0"]);
        super::wait_blocked(&mut pusher, 1);
        pusher.cmd(&["RPUSH", "s", "a", "b"]);
        assert_eq!(next(&rx), ["RPUSH", "s", "a", "b"]);
        assert_eq!(next(&rx), ["LMOVE", "s", "d", "right", "left"]);
        waiter.read_reply();

        waiter.cmd(&["BLMOVE", "s", "d", "LEFT", "Right", "0"]);
        assert_eq!(next(&rx), ["LMOVE", "s", "d", "LEFT", "Right"]);

        waiter.send_cmd(&["BRPOPLPUSH", "s2", "d", "0"]);
        super::wait_blocked(&mut pusher, 1);
        pusher.cmd(&["RPUSH", "s2", "x"]);
        assert_eq!(next(&rx), ["RPUSH", "s2", "x"]);
        assert_eq!(next(&rx), ["RPOPLPUSH", "s2", "d"]);
        waiter.read_reply();

        waiter.send_cmd(&["BRPOP", "p", "0"]);
        super::wait_blocked(&mut pusher, 1);
        pusher.cmd(&["RPUSH", "p", "1", "2", "3"]);
        assert_eq!(next(&rx), ["RPUSH", "p", "1", "2", "3"]);
        assert_eq!(next(&rx), ["RPOP", "p"]);
        waiter.read_reply();
        waiter.cmd(&["BLPOP", "p", "0"]);
        assert_eq!(next(&rx), ["LPOP", "p"]);

        waiter.send_cmd(&["BLMPOP", "0", "1", "m", "LEFT", "COUNT", "5"]);
        super::wait_blocked(&mut pusher, 1);
        pusher.cmd(&["RPUSH", "m", "1", "2"]);
        assert_eq!(next(&rx), ["RPUSH", "m", "1", "2"]);
        assert_eq!(next(&rx), ["LPOP", "m", "2"]);
        waiter.read_reply();

        // A timed-out wait appends nothing: the next effect is the SET.
        assert_eq!(waiter.cmd(&["BLPOP", "none", "0.01"]), b"*-1\r\n");
        pusher.cmd(&["SET", "after", "1"]);
        assert_eq!(next(&rx), ["SET", "after", "1"]);
    }
}

/// `[key, [elements]]`, BLMPOP's reply, as RESP2 bytes.
fn key_and_elements(key: &str, elements: &[&str]) -> Vec<u8> {
    let mut out = format!("*2\r\n{}*{}\r\n", bulk(key), elements.len());
    for e in elements {
        out.push_str(&bulk(e));
    }
    out.into_bytes()
}

/// One transaction or script readies two keys: the waiters are served key by key in
/// the order the keys became ready, each key's waiters in the order they blocked, as
/// Redis serves its ready keys; never as the threads happen to run. Repeated, with
/// the waiters spread over four threads.
#[test]
fn a_transaction_or_script_serves_keys_in_the_order_they_became_ready() {
    let server = TestServer::start(THREADS);
    let mut writer = server.raw();
    let shapes = [
        ("LEFT", "1"),
        ("RIGHT", "10"),
        ("LEFT", "10"),
        ("RIGHT", "1"),
    ];
    let script = "for i, key in ipairs(KEYS) do redis.call('lpush', key, unpack(ARGV, 5 * i - 4, 5 * i)) end";
    for round in 0..40 {
        let mut waiters: Vec<RawConn> = Vec::new();
        for (i, (side, count)) in shapes.iter().enumerate() {
            let mut w = server.raw();
            w.send_cmd(&["BLMPOP", "0", "2", "blist", "blist2", side, "COUNT", count]);
            wait_blocked(&mut writer, i + 1);
            waiters.push(w);
        }
        // Odd rounds ready blist2 first: then it is served first.
        let (first, second) = match round % 2 {
            0 => ("blist", "blist2"),
            _ => ("blist2", "blist"),
        };
        let letters = ["a", "b", "c", "d", "e"];
        let digits = ["1", "2", "3", "4", "5"];
        if round % 4 < 2 {
            assert_eq!(writer.cmd(&["MULTI"]), b"+OK\r\n");
            for (key, values) in [(first, letters), (second, digits)] {
                let mut args = vec!["LPUSH", key];
                args.extend(values);
                assert_eq!(writer.cmd(&args), b"+QUEUED\r\n");
            }
            assert_eq!(writer.cmd(&["EXEC"]), b"*2\r\n:5\r\n:5\r\n");
        } else {
            let mut args = vec!["EVAL", script, "2", first, second];
            args.extend(letters);
            args.extend(digits);
            writer.cmd(&args);
        }
        assert_eq!(waiters[0].read_reply(), key_and_elements(first, &["e"]));
        assert_eq!(
            waiters[1].read_reply(),
            key_and_elements(first, &["a", "b", "c", "d"])
        );
        assert_eq!(
            waiters[2].read_reply(),
            key_and_elements(second, &["5", "4", "3", "2", "1"])
        );
        // The fourth finds both keys empty and waits on.
        wait_blocked(&mut writer, 1);
        drop(waiters);
        wait_blocked(&mut writer, 0);
    }
}
