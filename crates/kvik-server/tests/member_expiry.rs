//! KeyDB's member expiry: EXPIREMEMBER, EXPIREMEMBERAT, PEXPIREMEMBERAT and TTL /
//! PTTL / PERSIST with a member, on set members, hash fields and sorted-set members:
//! KeyDB's replies and errors, lazy and active removal, what travels in the effect
//! stream (absolute deadlines, removals), and KeyDB's keyspace events.

mod support;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use support::in_process::{drain, next_effect, q, Kvik};
use support::{RawConn, TestServer};

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Ask `line` until the reply is `want`, for at most 5 s.
fn poll_until(c: &mut RawConn, line: &str, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let got = q(c, line);
        if got == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{line}: still {got:?}, want {want:?}"
        );
        std::thread::yield_now();
    }
}

fn fill(c: &mut RawConn) {
    c.cmd(&["SADD", "set", "m1", "m2"]);
    c.cmd(&["HSET", "hash", "f1", "v1", "f2", "v2"]);
    c.cmd(&["ZADD", "zset", "1", "a", "2", "b"]);
}

#[test]
fn replies_and_errors_are_keydbs() {
    let server = TestServer::start(&[]);
    let mut c = server.raw();
    fill(&mut c);
    c.cmd(&["SET", "str", "v"]);
    for key in ["set", "hash", "zset"] {
        let member = if key == "hash" {
            "f1"
        } else if key == "set" {
            "m1"
        } else {
            "a"
        };
        assert_eq!(
            q(&mut c, &format!("EXPIREMEMBER {key} {member} 100")),
            ":1\r\n"
        );
        assert_eq!(
            q(&mut c, &format!("EXPIREMEMBER {key} nomember 100")),
            ":0\r\n"
        );
        assert_eq!(q(&mut c, &format!("TTL {key} {member}")), ":100\r\n");
        let pttl = q(&mut c, &format!("PTTL {key} {member}"));
        let ms: u64 = pttl[1..pttl.len() - 2].parse().unwrap();
        assert!((99_000..=100_000).contains(&ms), "{pttl}");
        // The key itself has no deadline; other members have none either.
        assert_eq!(q(&mut c, &format!("TTL {key}")), ":-1\r\n");
        assert_eq!(q(&mut c, &format!("TTL {key} nomember")), ":-1\r\n");
    }
    assert_eq!(q(&mut c, "EXPIREMEMBER set m2 500 ms"), ":1\r\n");
    let pttl = q(&mut c, "PTTL set m2");
    let ms: u64 = pttl[1..pttl.len() - 2].parse().unwrap();
    assert!((1..=500).contains(&ms), "{pttl}");
    assert_eq!(q(&mut c, "EXPIREMEMBER set m2 5 S"), ":1\r\n");
    assert_eq!(q(&mut c, "TTL set m2"), ":5\r\n");

    let at = now_ms() / 1000 + 1000;
    assert_eq!(q(&mut c, &format!("EXPIREMEMBERAT hash f2 {at}")), ":1\r\n");
    let ttl = q(&mut c, "TTL hash f2");
    assert!(ttl == ":999\r\n" || ttl == ":1000\r\n", "{ttl}");
    let at_ms = now_ms() + 2_000_000;
    assert_eq!(
        q(&mut c, &format!("PEXPIREMEMBERAT zset b {at_ms}")),
        ":1\r\n"
    );
    assert_eq!(q(&mut c, "TTL zset b"), ":2000\r\n");

    assert_eq!(q(&mut c, "EXPIREMEMBER nokey m 10"), ":0\r\n");
    assert_eq!(q(&mut c, "TTL nokey m"), ":-2\r\n");
    assert_eq!(q(&mut c, "PTTL nokey m"), ":-2\r\n");
    assert_eq!(
        q(&mut c, "EXPIREMEMBER str m 10"),
        "-ERR object type is unsupported\r\n"
    );
    assert_eq!(q(&mut c, "TTL str m"), ":-1\r\n");
    assert_eq!(
        q(&mut c, "EXPIREMEMBER set m1 soon"),
        "-ERR value is not an integer or out of range\r\n"
    );
    assert_eq!(
        q(&mut c, "EXPIREMEMBER set m1 10 h"),
        "-ERR Invalid unit arg\r\n"
    );
    assert_eq!(
        q(&mut c, "EXPIREMEMBER set m1 10 s extra"),
        "-ERR Invalid number of arguments\r\n"
    );
    assert_eq!(
        q(&mut c, "EXPIREMEMBER set m1"),
        "-ERR wrong number of arguments for 'expiremember' command\r\n"
    );
    assert_eq!(
        q(&mut c, "EXPIREMEMBERAT set m1 1 s"),
        "-ERR wrong number of arguments for 'expirememberat' command\r\n"
    );
    assert_eq!(
        q(&mut c, "PEXPIREMEMBERAT set m1"),
        "-ERR wrong number of arguments for 'pexpirememberat' command\r\n"
    );
    assert_eq!(q(&mut c, "TTL set m1 m2"), "-ERR Invalid arguments\r\n");
    assert_eq!(q(&mut c, "PTTL set m1 m2"), "-ERR Invalid arguments\r\n");
    assert_eq!(
        q(&mut c, "EXPIREMEMBER set m1 9223372036854775807"),
        "-ERR invalid expire time in 'expiremember' command\r\n"
    );

    // PERSIST with a member drops that member's deadline only.
    assert_eq!(q(&mut c, "PERSIST set m1"), ":1\r\n");
    assert_eq!(q(&mut c, "PERSIST set m1"), ":0\r\n");
    assert_eq!(q(&mut c, "TTL set m1"), ":-1\r\n");
    assert_eq!(q(&mut c, "TTL set m2"), ":5\r\n");
    assert_eq!(q(&mut c, "PERSIST set m1 m2"), "-ERR Invalid arguments\r\n");
}

#[test]
fn a_member_removed_by_a_command_loses_its_deadline() {
    let server = TestServer::start(&[]);
    let mut c = server.raw();
    fill(&mut c);
    q(&mut c, "EXPIREMEMBER set m1 100");
    q(&mut c, "EXPIREMEMBER hash f1 100");
    q(&mut c, "EXPIREMEMBER zset a 100");
    q(&mut c, "SREM set m1");
    q(&mut c, "HDEL hash f1");
    q(&mut c, "ZPOPMIN zset");
    q(&mut c, "SADD set m1");
    q(&mut c, "HSET hash f1 v");
    q(&mut c, "ZADD zset 0 a");
    assert_eq!(q(&mut c, "TTL set m1"), ":-1\r\n");
    assert_eq!(q(&mut c, "TTL hash f1"), ":-1\r\n");
    assert_eq!(q(&mut c, "TTL zset a"), ":-1\r\n");
    // HSET giving a field a new value drops its deadline, as Redis 7.4 does;
    // HINCRBY changes the value in place and keeps it.
    q(&mut c, "EXPIREMEMBER hash f1 100");
    q(&mut c, "HSET hash f1 w");
    assert_eq!(q(&mut c, "TTL hash f1"), ":-1\r\n");
    q(&mut c, "HSET hash n 1");
    q(&mut c, "EXPIREMEMBER hash n 100");
    q(&mut c, "HINCRBY hash n 1");
    assert_eq!(q(&mut c, "TTL hash n"), ":100\r\n");
    q(&mut c, "EXPIREMEMBER hash f1 100");
    // A deadline goes with its key: RENAME, COPY; and with the key when it goes.
    q(&mut c, "RENAME hash hash2");
    assert_eq!(q(&mut c, "TTL hash2 f1"), ":100\r\n");
    q(&mut c, "COPY hash2 hash3");
    assert_eq!(q(&mut c, "TTL hash3 f1"), ":100\r\n");
    q(&mut c, "DEL hash2");
    q(&mut c, "HSET hash2 f1 v");
    assert_eq!(q(&mut c, "TTL hash2 f1"), ":-1\r\n");
    // A set computed from another starts without deadlines; SPOP's re-encoding of
    // what it leaves keeps them.
    q(&mut c, "SADD ints 1 2 3");
    q(&mut c, "EXPIREMEMBER ints 1 100");
    q(&mut c, "SDIFFSTORE copy ints nokey");
    assert_eq!(q(&mut c, "TTL copy 1"), ":-1\r\n");
    assert_eq!(q(&mut c, "TTL ints 1"), ":100\r\n");
    let mut sadd = vec!["SADD".to_string(), "big".to_string()];
    sadd.extend((0..200).map(|i| format!("m{i}")));
    c.cmd(&sadd);
    for i in 0..200 {
        c.send_cmd(&["EXPIREMEMBER", "big", &format!("m{i}"), "100"]);
    }
    for _ in 0..200 {
        c.read_reply();
    }
    q(&mut c, "SPOP big 190");
    let left = q(&mut c, "SMEMBERS big");
    let left: Vec<&str> = left.split("\r\n").filter(|l| l.starts_with('m')).collect();
    assert_eq!(left.len(), 10);
    for member in left {
        assert_eq!(q(&mut c, &format!("TTL big {member}")), ":100\r\n");
    }
}

#[test]
fn a_command_never_sees_an_expired_member() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    // The active cycle is off: only lazy expiry can remove them.
    q(&mut c, "DEBUG SET-ACTIVE-EXPIRE 0");
    fill(&mut c);
    let at = now_ms() + 50;
    for (key, member) in [("set", "m1"), ("hash", "f1"), ("zset", "a")] {
        q(&mut c, &format!("PEXPIREMEMBERAT {key} {member} {at}"));
    }
    let effects = kvik.effects();
    poll_until(&mut c, "SISMEMBER set m1", ":0\r\n");
    assert_eq!(q(&mut c, "SMEMBERS set"), "*1\r\n$2\r\nm2\r\n");
    poll_until(&mut c, "HGETALL hash", "*2\r\n$2\r\nf2\r\n$2\r\nv2\r\n");
    poll_until(&mut c, "ZCARD zset", ":1\r\n");
    assert_eq!(q(&mut c, "TTL hash f1"), ":-1\r\n");
    assert_eq!(
        drain(&effects),
        ["SREM set m1", "HDEL hash f1", "ZREM zset a"]
    );
    // A key whose last member expires goes as an expired key does.
    let at = now_ms() + 20;
    q(&mut c, &format!("PEXPIREMEMBERAT set m2 {at}"));
    drain(&effects);
    poll_until(&mut c, "EXISTS set", ":0\r\n");
    // One command's effects travel together.
    assert_eq!(drain(&effects), ["MULTI", "SREM set m2", "DEL set", "EXEC"]);
    assert_eq!(c.info_field("stats", "expired_keys"), "1");
}

#[test]
fn deadlines_travel_as_absolute_times_and_a_past_one_removes_at_once() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    fill(&mut c);
    let effects = kvik.effects();
    let before = now_ms();
    q(&mut c, "EXPIREMEMBER set m1 100");
    let after = now_ms();
    let effect = next_effect(&effects);
    assert_eq!(effect[..3], ["PEXPIREMEMBERAT", "set", "m1"]);
    let at: u64 = effect[3].parse().unwrap();
    assert!((before + 100_000..=after + 100_000).contains(&at), "{at}");
    q(&mut c, "EXPIREMEMBER hash f1 250 ms");
    let at: u64 = next_effect(&effects)[3].parse().unwrap();
    assert!(at >= before + 250 && at <= now_ms() + 250);
    q(&mut c, "EXPIREMEMBERAT zset a 4102444800");
    assert_eq!(
        next_effect(&effects),
        ["PEXPIREMEMBERAT", "zset", "a", "4102444800000"]
    );
    q(&mut c, "PEXPIREMEMBERAT zset b 4102444800123");
    assert_eq!(
        next_effect(&effects),
        ["PEXPIREMEMBERAT", "zset", "b", "4102444800123"]
    );
    q(&mut c, "PERSIST zset b");
    assert_eq!(next_effect(&effects), ["PERSIST", "zset", "b"]);

    // A deadline in the past: the member goes now, 1 as KeyDB answers.
    assert_eq!(q(&mut c, "EXPIREMEMBER set m2 -1"), ":1\r\n");
    assert_eq!(q(&mut c, "SMEMBERS set"), "*1\r\n$2\r\nm1\r\n");
    let seen = drain(&effects);
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert!(seen[1].starts_with("PEXPIREMEMBERAT set m2 "), "{seen:?}");
    assert_eq!(
        [&seen[0], &seen[2], &seen[3]],
        ["MULTI", "SREM set m2", "EXEC"]
    );
    // Nothing is sent for a member that is not there.
    assert_eq!(q(&mut c, "EXPIREMEMBER set nomember 10"), ":0\r\n");
    assert!(drain(&effects).is_empty());
}

#[test]
fn the_active_cycle_removes_members_of_untouched_keys() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    fill(&mut c);
    let mut sub = kvik.conn();
    q(&mut c, "CONFIG SET notify-keyspace-events KEA");
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    let effects = kvik.effects();
    let at = now_ms() + 50;
    for (key, member) in [("set", "m1"), ("hash", "f1"), ("zset", "a"), ("zset", "b")] {
        q(&mut c, &format!("PEXPIREMEMBERAT {key} {member} {at}"));
    }
    drain(&effects);
    // No command touches the keys: every removal comes from the cycle.
    let mut seen = Vec::new();
    while seen.len() < 5 {
        seen.push(next_effect(&effects).join(" "));
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            "DEL zset",
            "HDEL hash f1",
            "SREM set m1",
            "ZREM zset a",
            "ZREM zset b"
        ]
    );
    // KeyDB's events (`srem` for a set, none for a sorted set, `expired` for an
    // emptied key) and Redis 7.4's `hexpired` for a hash.
    let mut events = Vec::new();
    while events.len() < 3 {
        let reply = sub.read_reply();
        let text = String::from_utf8_lossy(&reply).into_owned();
        if text.contains("__keyevent@0__:") {
            events.push(text.split("\r\n").nth(6).unwrap_or_default().to_string());
        }
    }
    events.sort();
    assert_eq!(
        events,
        [
            "__keyevent@0__:expired",
            "__keyevent@0__:hexpired",
            "__keyevent@0__:srem"
        ]
    );
    assert_eq!(q(&mut c, "DBSIZE"), ":2\r\n");
}

#[test]
fn many_members_across_many_keys_go_while_the_server_idles() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    // Far enough ahead that a loaded machine sets every deadline before the first
    // one passes.
    let at = now_ms() + 2000;
    let keys = 200;
    let members = 50;
    for k in 0..keys {
        let key = format!("s{k}");
        let mut sadd = vec!["SADD".to_string(), key.clone()];
        sadd.extend((0..members).map(|m| format!("m{m}")));
        c.cmd(&sadd);
        for m in 0..members {
            c.send_cmd(&["PEXPIREMEMBERAT", &key, &format!("m{m}"), &at.to_string()]);
        }
        for _ in 0..members {
            c.read_reply();
        }
    }
    assert_eq!(q(&mut c, "DBSIZE"), format!(":{keys}\r\n"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while q(&mut c, "DBSIZE") != ":0\r\n" {
        assert!(Instant::now() < deadline, "members still there");
        std::thread::yield_now();
    }
}

/// The seconds left until `at_s`, as TTL rounds them.
fn seconds_until(at_s: u64) -> i64 {
    ((at_s * 1000 - now_ms()) as i64 + 500) / 1000
}

fn assert_ttl_near(c: &mut RawConn, line: &str, want: i64) {
    let got = q(c, line);
    let got: i64 = got[1..got.len() - 2]
        .parse()
        .unwrap_or_else(|_| panic!("{line}: {got}"));
    assert!(
        (want - 2..=want + 2).contains(&got),
        "{line}: {got}, want about {want}"
    );
}

#[test]
fn rdb_files_keep_member_deadlines_and_redis_still_loads_them() {
    let kvik = TestServer::start(&["--enable-debug-command", "yes"]);
    let mut k = kvik.raw();
    fill(&mut k);
    q(&mut k, "EXPIREMEMBERAT set m1 4102444800");
    q(&mut k, "EXPIREMEMBERAT hash f2 4102444800");
    q(&mut k, "EXPIREMEMBERAT zset b 4102444800");
    assert_eq!(q(&mut k, "DEBUG RELOAD"), "+OK\r\n");
    let left = seconds_until(4_102_444_800);
    for line in ["TTL set m1", "TTL hash f2", "TTL zset b"] {
        assert_ttl_near(&mut k, line, left);
    }
    assert_eq!(q(&mut k, "TTL set m2"), ":-1\r\n");
    // Reloaded deadlines still fire: the active cycle knows of them (DBSIZE
    // touches no key, so only the cycle can remove this one).
    q(&mut k, "SADD gone x");
    q(&mut k, &format!("PEXPIREMEMBERAT gone x {}", now_ms() + 30));
    assert_eq!(q(&mut k, "DEBUG RELOAD"), "+OK\r\n");
    poll_until(&mut k, "DBSIZE", ":3\r\n");

    if support::redis_server_or_skip().is_none() {
        return;
    }
    assert_eq!(q(&mut k, "SAVE"), "+OK\r\n");
    let dir = support::scratch_dir("member-expiry-to-redis");
    std::fs::copy(kvik.dir().join("dump.rdb"), dir.join("dump.rdb")).unwrap();
    let redis = support::RealRedis::start(&["--dir", dir.to_str().unwrap()]);
    let mut r = redis.raw();
    assert_eq!(q(&mut r, "SISMEMBER set m1"), ":1\r\n");
    assert_eq!(q(&mut r, "SCARD set"), ":2\r\n");
    assert_eq!(q(&mut r, "HGET hash f2"), "$2\r\nv2\r\n");
    assert_eq!(q(&mut r, "ZSCORE zset b"), "$1\r\n2\r\n");
    assert_eq!(q(&mut r, "DBSIZE"), ":3\r\n");
}

#[test]
fn a_keydb_file_loads_with_its_member_deadlines() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/keydb-6.3.4-all-types.rdb");
    let dir = support::scratch_dir("keydb-rdb");
    std::fs::copy(&fixture, dir.join("dump.rdb"))
        .unwrap_or_else(|e| panic!("{}: {e}", fixture.display()));
    let kvik = TestServer::start(&["--dir", dir.to_str().unwrap()]);
    let mut k = kvik.raw();
    let left = seconds_until(4_102_444_800);
    for line in ["TTL set m1", "TTL hash f2", "TTL zset b", "TTL ttl"] {
        assert_ttl_near(&mut k, line, left);
    }
    for line in ["TTL set m2", "TTL hash f1", "TTL zset a", "TTL str"] {
        assert_eq!(q(&mut k, line), ":-1\r\n", "{line}");
    }
    assert_eq!(q(&mut k, "SCARD set"), ":4\r\n");
}

/// The integers of an array reply, as text.
fn codes(reply: &str) -> Vec<String> {
    reply
        .split("\r\n")
        .skip(1)
        .filter(|l| l.starts_with(':'))
        .map(|l| l[1..].to_string())
        .collect()
}

#[test]
fn hexpire_family_answers_with_redis_74s_codes() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    q(&mut c, "HSET h f1 v1 f2 v2 f3 v3");
    let effects = kvik.effects();
    assert_eq!(
        q(&mut c, "HEXPIRE h 100 FIELDS 3 f1 nofield f2"),
        "*3\r\n:1\r\n:-2\r\n:1\r\n"
    );
    let effect = next_effect(&effects);
    assert_eq!(effect[0], "HPEXPIREAT");
    assert_eq!(effect[3..], ["FIELDS", "2", "f1", "f2"]);
    assert_eq!(
        q(&mut c, "HTTL h FIELDS 3 f1 f3 nofield"),
        "*3\r\n:100\r\n:-1\r\n:-2\r\n"
    );
    let pttl = codes(&q(&mut c, "HPTTL h FIELDS 1 f1"));
    let ms: u64 = pttl[0].parse().unwrap();
    assert!((99_000..=100_000).contains(&ms), "{ms}");
    // The same deadline is KeyDB's member deadline.
    assert_eq!(q(&mut c, "TTL h f1"), ":100\r\n");

    // Conditions: NX only without a deadline, XX only with one, GT later, LT earlier
    // (no deadline counts as infinite).
    assert_eq!(
        q(&mut c, "HEXPIRE h 50 NX FIELDS 2 f1 f3"),
        "*2\r\n:0\r\n:1\r\n"
    );
    assert_eq!(q(&mut c, "HPERSIST h FIELDS 1 f3"), "*1\r\n:1\r\n");
    assert_eq!(
        q(&mut c, "HEXPIRE h 50 XX FIELDS 2 f1 f3"),
        "*2\r\n:1\r\n:0\r\n"
    );
    assert_eq!(
        q(&mut c, "HEXPIRE h 40 GT FIELDS 2 f1 f3"),
        "*2\r\n:0\r\n:0\r\n"
    );
    assert_eq!(q(&mut c, "HEXPIRE h 60 gt FIELDS 1 f1"), "*1\r\n:1\r\n");
    assert_eq!(
        q(&mut c, "HEXPIRE h 70 LT FIELDS 2 f1 f3"),
        "*2\r\n:0\r\n:1\r\n"
    );
    assert_eq!(
        q(&mut c, "HPERSIST h FIELDS 3 f3 f2 nofield"),
        "*3\r\n:1\r\n:1\r\n:-2\r\n"
    );
    assert_eq!(q(&mut c, "HPERSIST h FIELDS 1 f2"), "*1\r\n:-1\r\n");
    assert_eq!(q(&mut c, "HTTL h FIELDS 1 f3"), "*1\r\n:-1\r\n");

    let at = now_ms() / 1000 + 1000;
    assert_eq!(
        q(&mut c, &format!("HEXPIREAT h {at} FIELDS 1 f2")),
        "*1\r\n:1\r\n"
    );
    assert_eq!(
        q(&mut c, "HEXPIRETIME h FIELDS 2 f2 f3"),
        format!("*2\r\n:{at}\r\n:-1\r\n")
    );
    assert_eq!(
        q(
            &mut c,
            &format!("HPEXPIREAT h {} FIELDS 1 f2", at * 1000 + 5)
        ),
        "*1\r\n:1\r\n"
    );
    assert_eq!(
        q(&mut c, "HPEXPIRETIME h FIELDS 1 f2"),
        format!("*1\r\n:{}\r\n", at * 1000 + 5)
    );
    q(&mut c, "HPEXPIRE h 100000 FIELDS 1 f3");
    let ttl = codes(&q(&mut c, "HTTL h FIELDS 1 f3"));
    assert_eq!(ttl, ["100"]);

    // 0 seconds or a past time deletes the field: 2, propagated as HDEL.
    drain(&effects);
    assert_eq!(q(&mut c, "HEXPIRE h 0 FIELDS 1 f3"), "*1\r\n:2\r\n");
    assert_eq!(drain(&effects), ["HDEL h f3"]);
    assert_eq!(
        q(&mut c, "HEXPIREAT h 1 FIELDS 2 f1 f2"),
        "*2\r\n:2\r\n:2\r\n"
    );
    assert_eq!(q(&mut c, "EXISTS h"), ":0\r\n");
    // A missing key: -2 for every field.
    assert_eq!(
        q(&mut c, "HEXPIRE h 10 FIELDS 2 a b"),
        "*2\r\n:-2\r\n:-2\r\n"
    );
    assert_eq!(q(&mut c, "HTTL h FIELDS 1 a"), "*1\r\n:-2\r\n");
    assert_eq!(q(&mut c, "HPERSIST h FIELDS 1 a"), "*1\r\n:-2\r\n");
}

#[test]
fn hexpire_family_errors_are_redis_74s() {
    let server = TestServer::start(&[]);
    let mut c = server.raw();
    q(&mut c, "HSET h f v");
    q(&mut c, "SET s v");
    let missing = "-ERR Mandatory argument FIELDS is missing or not at the right position\r\n";
    assert_eq!(q(&mut c, "HEXPIRE h 10 FIELD 1 f"), missing);
    assert_eq!(q(&mut c, "HEXPIRE h 10 NX XX FIELDS 1 f"), missing);
    assert_eq!(q(&mut c, "HEXPIRE h 10 BOGUS FIELDS 1 f"), missing);
    assert_eq!(q(&mut c, "HTTL h FIELD 1 f"), missing);
    let positive = "-ERR Number of fields must be a positive integer\r\n";
    assert_eq!(q(&mut c, "HEXPIRE h 10 FIELDS 0 f"), positive);
    assert_eq!(q(&mut c, "HEXPIRE h 10 FIELDS x f"), positive);
    assert_eq!(q(&mut c, "HPERSIST h FIELDS -1 f"), positive);
    assert_eq!(
        q(&mut c, "HEXPIRE h 10 FIELDS 2 f"),
        "-ERR The `numfields` parameter must match the number of arguments\r\n"
    );
    assert_eq!(
        q(&mut c, "HEXPIRE h -1 FIELDS 1 f"),
        "-ERR invalid expire time, must be >= 0\r\n"
    );
    assert_eq!(
        q(&mut c, "HEXPIRE h 281474976710655 FIELDS 1 f"),
        "-ERR invalid expire time in 'hexpire' command\r\n"
    );
    assert_eq!(
        q(&mut c, "HPEXPIREAT h 281474976710656 FIELDS 1 f"),
        "-ERR invalid expire time in 'hpexpireat' command\r\n"
    );
    assert_eq!(
        q(&mut c, "HEXPIRE h ten FIELDS 1 f"),
        "-ERR value is not an integer or out of range\r\n"
    );
    let wrongtype = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
    assert_eq!(q(&mut c, "HEXPIRE s 10 FIELDS 1 f"), wrongtype);
    assert_eq!(q(&mut c, "HTTL s FIELDS 1 f"), wrongtype);
    assert_eq!(q(&mut c, "HPERSIST s FIELDS 1 f"), wrongtype);
    assert_eq!(
        q(&mut c, "HEXPIRE h 10 FIELDS 1"),
        "-ERR wrong number of arguments for 'hexpire' command\r\n"
    );
    assert_eq!(
        q(&mut c, "HTTL h FIELDS 1"),
        "-ERR wrong number of arguments for 'httl' command\r\n"
    );
}

#[test]
fn expired_hash_fields_go_with_redis_74s_events() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    q(&mut c, "DEBUG SET-ACTIVE-EXPIRE 0");
    q(&mut c, "HSET h f1 v1 f2 v2");
    q(&mut c, "HPEXPIRE h 30 FIELDS 1 f1");
    let effects = kvik.effects();
    poll_until(&mut c, "HLEN h", ":1\r\n");
    assert_eq!(drain(&effects), ["HDEL h f1"]);
    assert_eq!(q(&mut c, "HTTL h FIELDS 1 f1"), "*1\r\n:-2\r\n");
}

#[test]
fn replaying_the_effect_stream_reproduces_member_deadlines_and_expiries() {
    // What a replica or an AOF does: apply the effects, in order, elsewhere.
    let source = Kvik::start();
    let copy = Kvik::start();
    let mut s = source.conn();
    let mut r = copy.conn();
    let effects = source.effects();
    fill(&mut s);
    q(&mut s, "EXPIREMEMBER set m1 1000");
    q(&mut s, "HEXPIRE hash 1000 FIELDS 1 f1");
    q(&mut s, &format!("PEXPIREMEMBERAT zset a {}", now_ms() + 30));
    q(&mut s, &format!("PEXPIREMEMBERAT set m2 {}", now_ms() + 30));
    q(&mut s, "EXPIREMEMBER hash f2 0");
    // Replay until zset's a has expired on both (by the source's ZREM, or by the
    // copy's own clock from the deadline it was sent: the same either way).
    let mut applied = 0;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let seen: Vec<String> = drain(&effects);
        for effect in &seen {
            let words: Vec<&str> = effect.split(' ').collect();
            r.cmd(&words);
        }
        applied += seen.len();
        if q(&mut s, "ZCARD zset") == ":1\r\n" && q(&mut r, "ZCARD zset") == ":1\r\n" {
            break;
        }
        assert!(Instant::now() < deadline, "zset a not expired on both");
        std::thread::yield_now();
    }
    assert!(applied > 0);
    for line in [
        "SMEMBERS set",
        "HGETALL hash",
        "ZRANGE zset 0 -1 WITHSCORES",
        "TTL set m1",
        "HTTL hash FIELDS 2 f1 f2",
    ] {
        assert_eq!(q(&mut r, line), q(&mut s, line), "{line}");
    }
}

/// The bulk string a raw reply holds.
fn bulk(reply: &[u8]) -> Vec<u8> {
    let header_end = reply.windows(2).position(|w| w == b"\r\n").unwrap();
    assert_eq!(reply[0], b'$', "{}", String::from_utf8_lossy(reply));
    reply[header_end + 2..reply.len() - 2].to_vec()
}

#[test]
fn dump_and_restore_carry_member_deadlines_and_redis_still_takes_the_payload() {
    let source = TestServer::start(&[]);
    let mut k = source.raw();
    fill(&mut k);
    q(&mut k, "EXPIREMEMBERAT set m1 4102444800");
    q(&mut k, "HEXPIREAT hash 4102444800 FIELDS 1 f2");
    q(&mut k, "EXPIREMEMBERAT zset b 4102444800");
    q(
        &mut k,
        &format!("PEXPIREMEMBERAT zset a {}", now_ms() + 300),
    );
    let payloads: Vec<(&str, Vec<u8>)> = ["set", "hash", "zset"]
        .into_iter()
        .map(|key| (key, bulk(&k.cmd(&["DUMP", key]))))
        .collect();
    // Restored on another server, as a key moved between servers is.
    let target = TestServer::start(&[]);
    let mut t = target.raw();
    for (key, payload) in &payloads {
        let restored = t.cmd(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", payload]);
        assert_eq!(restored, b"+OK\r\n", "{key}");
    }
    let left = seconds_until(4_102_444_800);
    for line in ["TTL set m1", "TTL hash f2", "TTL zset b"] {
        assert_ttl_near(&mut t, line, left);
    }
    assert_eq!(q(&mut t, "TTL set m2"), ":-1\r\n");
    assert_eq!(q(&mut t, "HTTL hash FIELDS 1 f1"), "*1\r\n:-1\r\n");
    // A deadline that passes after the DUMP still removes its member there.
    poll_until(&mut t, "ZRANGE zset 0 -1", "*1\r\n$1\r\nb\r\n");

    let Some(_) = support::redis_server_or_skip() else {
        return;
    };
    // Redis 7.0 reads the value and ignores what follows it: the payload restores
    // there, without the deadlines.
    let redis = support::RealRedis::start(&[]);
    let mut r = redis.raw();
    for (key, payload) in &payloads {
        let restored = r.cmd(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", payload]);
        assert_eq!(restored, b"+OK\r\n", "{key}");
    }
    assert_eq!(q(&mut r, "SCARD set"), ":2\r\n");
    assert_eq!(q(&mut r, "HGET hash f2"), "$2\r\nv2\r\n");
    assert_eq!(q(&mut r, "ZCARD zset"), ":2\r\n");
}

#[test]
fn a_replica_hides_due_members_until_the_masters_removal_arrives() {
    let master = TestServer::start(&["--enable-debug-command", "yes"]);
    let mut m = master.raw();
    let port = master.port().to_string();
    let replica = TestServer::start(&[
        "--enable-debug-command",
        "yes",
        "--replicaof",
        "127.0.0.1",
        &port,
    ]);
    let mut r = replica.raw();
    support::wait_for("the link", || {
        r.info_field("replication", "master_link_status") == "up"
    });
    // The master's active cycle rests, and nothing reads these keys there: its
    // removals only go out once the cycle runs again.
    assert_eq!(q(&mut m, "DEBUG PAUSE-CRON 1"), "+OK\r\n");
    fill(&mut m);
    q(&mut m, "SADD lone x");
    let soon = now_ms() + 300;
    for line in [
        format!("PEXPIREMEMBERAT set m1 {soon}"),
        format!("PEXPIREMEMBERAT hash f2 {soon}"),
        format!("PEXPIREMEMBERAT zset a {soon}"),
        format!("PEXPIREMEMBERAT lone x {soon}"),
    ] {
        assert_eq!(q(&mut m, &line), ":1\r\n");
    }
    support::wait_for("the replica to have the deadlines", || {
        q(&mut r, "TTL lone x") != ":-2\r\n" && q(&mut r, "TTL lone x") != ":-1\r\n"
    });
    poll_until(&mut r, "SMEMBERS set", "*1\r\n$2\r\nm2\r\n");
    assert_eq!(q(&mut r, "SCARD set"), ":1\r\n");
    assert_eq!(q(&mut r, "HGETALL hash"), "*2\r\n$2\r\nf1\r\n$2\r\nv1\r\n");
    assert_eq!(q(&mut r, "HEXISTS hash f2"), ":0\r\n");
    assert_eq!(q(&mut r, "ZRANGE zset 0 -1"), "*1\r\n$1\r\nb\r\n");
    assert_eq!(
        q(&mut r, "EXISTS lone"),
        ":0\r\n",
        "every member due: no key"
    );
    // Hidden, not removed: the replica keeps them until the master says so.
    assert_eq!(q(&mut r, "DBSIZE"), ":4\r\n");
    assert_eq!(q(&mut m, "DEBUG PAUSE-CRON 0"), "+OK\r\n");
    poll_until(&mut r, "DBSIZE", ":3\r\n");
    // The master's cycle spreads its work over the tick: the other removals may
    // still be on their way. Once they are in, both hold the same data.
    support::wait_for("the replica to hold what the master holds", || {
        q(&mut m, "DEBUG DIGEST") == q(&mut r, "DEBUG DIGEST")
    });
    assert_eq!(q(&mut r, "SMEMBERS set"), "*1\r\n$2\r\nm2\r\n");
}
