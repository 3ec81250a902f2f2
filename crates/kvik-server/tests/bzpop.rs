//! The blocking sorted-set pops (BZPOPMIN, BZPOPMAX, BZMPOP) across threads: the
//! immediate path, waking by a write from another connection (ZADD, ZINCRBY and the
//! STORE forms), FIFO order, timeouts, BZMPOP's count, and the effects they append.

mod support;

use std::thread;
use std::time::{Duration, Instant};
use support::{RawConn, TestServer};

const THREADS: &[&str] = &["--server-threads", "4"];

fn bulk(s: &str) -> String {
    format!("${}\r\n{s}\r\n", s.len())
}

/// BZPOPMIN's `[key, member, score]` as RESP2 bytes (the score a bulk string).
fn key_member_score(key: &str, member: &str, score: &str) -> String {
    format!("*3\r\n{}{}{}", bulk(key), bulk(member), bulk(score))
}

/// BZMPOP's `[key, [[member, score], ...]]` as RESP2 bytes.
fn key_and_pairs(key: &str, pairs: &[(&str, &str)]) -> String {
    let mut reply = format!("*2\r\n{}*{}\r\n", bulk(key), pairs.len());
    for (member, score) in pairs {
        reply.push_str(&format!("*2\r\n{}{}", bulk(member), bulk(score)));
    }
    reply
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// INFO's `blocked_clients`.
fn blocked_clients(c: &mut RawConn) -> usize {
    let info = text(&c.cmd(&["INFO", "clients"]));
    info.lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .unwrap_or_else(|| panic!("no blocked_clients in {info}"))
        .trim()
        .parse()
        .unwrap()
}

/// Wait until exactly `n` clients are blocked (the commands sent on other connections
/// have reached the server and blocked).
fn wait_blocked(c: &mut RawConn, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = blocked_clients(c);
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

#[test]
fn a_key_with_members_is_served_at_once() {
    let server = TestServer::start(THREADS);
    let mut c = server.raw();
    assert_eq!(
        c.cmd(&["ZADD", "z", "1", "a", "2.5", "b", "3", "c"]),
        b":3\r\n"
    );
    assert_eq!(
        text(&c.cmd(&["BZPOPMIN", "missing", "z", "0"])),
        key_member_score("z", "a", "1")
    );
    assert_eq!(
        text(&c.cmd(&["BZPOPMAX", "z", "1"])),
        key_member_score("z", "c", "3")
    );
    c.cmd(&["ZADD", "m", "1", "x", "2", "y"]);
    assert_eq!(
        text(&c.cmd(&["BZMPOP", "0", "2", "z", "m", "MIN", "COUNT", "5"])),
        key_and_pairs("z", &[("b", "2.5")])
    );
    assert_eq!(c.cmd(&["EXISTS", "z"]), b":0\r\n");
    // RESP3: the score is a double, the reply still the flat triple.
    c.cmd(&["HELLO", "3"]);
    assert_eq!(
        text(&c.cmd(&["BZPOPMAX", "m", "0"])),
        format!("*3\r\n{}{},2\r\n", bulk("m"), bulk("y"))
    );
    assert_eq!(blocked_clients(&mut c), 0);
}

#[test]
fn a_zadd_from_another_connection_wakes_the_blocked_client() {
    let server = TestServer::start(THREADS);
    let mut writer = server.raw();
    // Several clients, so that blocked and writing ones sit on different threads.
    for round in 0..8 {
        let mut waiter = server.raw();
        let (command, end_member) = if round % 2 == 0 {
            ("BZPOPMIN", "low")
        } else {
            ("BZPOPMAX", "high")
        };
        waiter.send_cmd(&[command, "q", "other", "0"]);
        wait_blocked(&mut writer, 1);
        assert_eq!(
            writer.cmd(&["ZADD", "q", "-1", "low", "7", "high"]),
            b":2\r\n"
        );
        let score = if end_member == "low" { "-1" } else { "7" };
        assert_eq!(
            text(&waiter.read_reply()),
            key_member_score("q", end_member, score)
        );
        assert_eq!(writer.cmd(&["ZCARD", "q"]), b":1\r\n");
        writer.cmd(&["DEL", "q"]);
    }
}

#[test]
fn a_resp3_waiter_gets_its_score_as_a_double() {
    let server = TestServer::start(THREADS);
    let mut writer = server.raw();
    let mut waiter = server.raw();
    waiter.cmd(&["HELLO", "3"]);
    waiter.send_cmd(&["BZPOPMIN", "d", "0"]);
    wait_blocked(&mut writer, 1);
    writer.cmd(&["ZADD", "d", "1.5", "m"]);
    assert_eq!(
        text(&waiter.read_reply()),
        format!("*3\r\n{}{},1.5\r\n", bulk("d"), bulk("m"))
    );
}

#[test]
fn waiters_are_served_in_the_order_they_blocked() {
    let server = TestServer::start(THREADS);
    let mut writer = server.raw();
    let mut waiters: Vec<RawConn> = (0..2).map(|_| server.raw()).collect();
    for (i, w) in waiters.iter_mut().enumerate() {
        w.send_cmd(&["BZPOPMIN", "fifo", "0"]);
        wait_blocked(&mut writer, i + 1);
    }
    assert_eq!(
        writer.cmd(&["ZADD", "fifo", "1", "one", "2", "two"]),
        b":2\r\n"
    );
    assert_eq!(
        text(&waiters[0].read_reply()),
        key_member_score("fifo", "one", "1")
    );
    assert_eq!(
        text(&waiters[1].read_reply()),
        key_member_score("fifo", "two", "2")
    );
    assert_eq!(writer.cmd(&["EXISTS", "fifo"]), b":0\r\n");
    assert_eq!(blocked_clients(&mut writer), 0);
}

#[test]
fn timeouts_take_fractional_seconds_and_reply_null() {
    let server = TestServer::start(THREADS);
    let mut c = server.raw();
    let cases: &[&[&str]] = &[
        &["BZPOPMIN", "none", "0.2"],
        &["BZPOPMAX", "none", "other", "0.2"],
        &["BZMPOP", "0.2", "1", "none", "MAX", "COUNT", "2"],
    ];
    for &args in cases {
        let started = Instant::now();
        assert_eq!(c.cmd(args), b"*-1\r\n", "{args:?}");
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(190), "{args:?} took {took:?}");
        assert!(took < Duration::from_millis(1000), "{args:?} took {took:?}");
    }
    c.cmd(&["HELLO", "3"]);
    assert_eq!(c.cmd(&["BZPOPMIN", "none", "0.01"]), b"_\r\n");
    assert_eq!(c.cmd(&["BZMPOP", "0.01", "1", "none", "MIN"]), b"_\r\n");
    assert_eq!(blocked_clients(&mut c), 0);
}

#[test]
fn bzmpop_served_takes_up_to_its_count() {
    let server = TestServer::start(THREADS);
    let mut writer = server.raw();
    let mut waiter = server.raw();
    waiter.send_cmd(&["BZMPOP", "0", "2", "a", "b", "MAX", "COUNT", "2"]);
    wait_blocked(&mut writer, 1);
    writer.cmd(&["ZADD", "b", "1", "x", "2", "y", "3", "z"]);
    assert_eq!(
        text(&waiter.read_reply()),
        key_and_pairs("b", &[("z", "3"), ("y", "2")])
    );
    waiter.send_cmd(&["BZMPOP", "0", "1", "c", "MIN", "COUNT", "10"]);
    wait_blocked(&mut writer, 1);
    writer.cmd(&["ZADD", "c", "5", "only"]);
    assert_eq!(
        text(&waiter.read_reply()),
        key_and_pairs("c", &[("only", "5")])
    );
    assert_eq!(writer.cmd(&["EXISTS", "c"]), b":0\r\n");
}

#[test]
fn every_sorted_set_writer_wakes_the_waiters() {
    let server = TestServer::start(THREADS);
    let mut writer = server.raw();
    writer.cmd(&["ZADD", "src", "1", "a", "2", "b"]);
    writer.cmd(&["ZADD", "other", "2", "b"]);
    let writes: &[&[&str]] = &[
        &["ZINCRBY", "dst", "4", "a"],
        &["ZUNIONSTORE", "dst", "1", "src"],
        &["ZINTERSTORE", "dst", "2", "src", "other"],
        &["ZDIFFSTORE", "dst", "2", "src", "other"],
        &["ZRANGESTORE", "dst", "src", "0", "0"],
    ];
    for &write in writes {
        let mut waiter = server.raw();
        waiter.send_cmd(&["BZPOPMAX", "dst", "0"]);
        wait_blocked(&mut writer, 1);
        writer.cmd(write);
        let reply = text(&waiter.read_reply());
        assert!(
            reply.starts_with(&format!("*3\r\n{}", bulk("dst"))),
            "{write:?}: {reply}"
        );
        writer.cmd(&["DEL", "dst"]);
    }
}

#[test]
fn a_key_of_another_type_keeps_the_client_waiting() {
    let server = TestServer::start(THREADS);
    let mut writer = server.raw();
    let mut zwaiter = server.raw();
    let mut lwaiter = server.raw();
    zwaiter.send_cmd(&["BZPOPMIN", "k", "0"]);
    wait_blocked(&mut writer, 1);
    lwaiter.send_cmd(&["BLPOP", "k", "0"]);
    wait_blocked(&mut writer, 2);
    // The list goes to the list waiter, though the sorted-set one came first.
    writer.cmd(&["RPUSH", "k", "e"]);
    assert_eq!(
        text(&lwaiter.read_reply()),
        format!("*2\r\n{}{}", bulk("k"), bulk("e"))
    );
    assert_eq!(blocked_clients(&mut writer), 1);
    writer.cmd(&["ZADD", "k", "0", "m"]);
    assert_eq!(text(&zwaiter.read_reply()), key_member_score("k", "m", "0"));
}

mod effects {
    use super::support::in_process::{next_effect as next, Kvik};

    #[test]
    fn served_and_immediate_pops_propagate_as_zpopmin_or_zpopmax() {
        let kvik = Kvik::start_with(|c| c.server_threads = 4);
        let rx = kvik.effects();
        let mut waiter = kvik.conn();
        let mut writer = kvik.conn();

        waiter.send_cmd(&["BZPOPMIN", "z", "0"]);
        super::wait_blocked(&mut writer, 1);
        writer.cmd(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
        assert_eq!(next(&rx), ["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
        assert_eq!(next(&rx), ["ZPOPMIN", "z"]);
        waiter.read_reply();

        waiter.cmd(&["BZPOPMAX", "missing", "z", "0"]);
        assert_eq!(next(&rx), ["ZPOPMAX", "z"]);

        // BZMPOP propagates the number taken, not the count asked for.
        waiter.cmd(&["BZMPOP", "0", "1", "z", "MIN", "COUNT", "10"]);
        assert_eq!(next(&rx), ["ZPOPMIN", "z", "1"]);

        waiter.send_cmd(&["BZMPOP", "0", "2", "x", "y", "MAX", "COUNT", "2"]);
        super::wait_blocked(&mut writer, 1);
        writer.cmd(&["ZADD", "y", "1", "p", "2", "q", "3", "r"]);
        assert_eq!(next(&rx), ["ZADD", "y", "1", "p", "2", "q", "3", "r"]);
        assert_eq!(next(&rx), ["ZPOPMAX", "y", "2"]);
        waiter.read_reply();

        waiter.send_cmd(&["BZPOPMAX", "w", "0"]);
        super::wait_blocked(&mut writer, 1);
        writer.cmd(&["ZINCRBY", "w", "5", "m"]);
        assert_eq!(next(&rx), ["ZINCRBY", "w", "5", "m"]);
        assert_eq!(next(&rx), ["ZPOPMAX", "w"]);
        waiter.read_reply();

        // A timed-out wait appends nothing: the next effect is the SET.
        assert_eq!(waiter.cmd(&["BZPOPMIN", "none", "0.01"]), b"*-1\r\n");
        writer.cmd(&["SET", "after", "1"]);
        assert_eq!(next(&rx), ["SET", "after", "1"]);
    }
}
