//! Streams over real connections: every command's happy path and errors, RESP3
//! shapes, blocking XREAD / XREADGROUP woken from other threads, a consumer group
//! shared by consumers on different threads, and the effects replicas would get.

mod support;

use std::thread;
use std::time::{Duration, Instant};
use support::in_process::{drain, q, Kvik};
use support::{RawConn, TestServer};

const THREADS: &[&str] = &["--server-threads", "4"];

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn cmd(c: &mut RawConn, args: &[&str]) -> String {
    text(&c.cmd(args))
}

fn bulk(s: &str) -> String {
    format!("${}\r\n{s}\r\n", s.len())
}

/// `[id, [field, value, ...]]` in RESP2.
fn entry(id: &str, pairs: &[&str]) -> String {
    let mut out = format!("*2\r\n{}*{}\r\n", bulk(id), pairs.len());
    for p in pairs {
        out.push_str(&bulk(p));
    }
    out
}

/// Wait until `n` clients are blocked.
fn wait_blocked(c: &mut RawConn, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = cmd(c, &["INFO", "clients"]);
        let now: usize = info
            .lines()
            .find_map(|l| l.strip_prefix("blocked_clients:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        if now == n {
            return;
        }
        assert!(Instant::now() < deadline, "blocked_clients stayed {now}");
        thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn add_range_and_length() {
    let server = TestServer::start(THREADS);
    let mut c = server.raw();
    assert_eq!(cmd(&mut c, &["XADD", "s", "1-1", "a", "1"]), bulk("1-1"));
    assert_eq!(
        cmd(&mut c, &["XADD", "s", "1-*", "a", "2", "b", "3"]),
        bulk("1-2")
    );
    assert_eq!(cmd(&mut c, &["XADD", "s", "2", "c", "4"]), bulk("2-0"));
    assert_eq!(cmd(&mut c, &["XLEN", "s"]), ":3\r\n");
    assert_eq!(
        cmd(&mut c, &["XRANGE", "s", "(1-1", "+"]),
        format!(
            "*2\r\n{}{}",
            entry("1-2", &["a", "2", "b", "3"]),
            entry("2-0", &["c", "4"])
        )
    );
    assert_eq!(
        cmd(&mut c, &["XREVRANGE", "s", "+", "-", "COUNT", "1"]),
        format!("*1\r\n{}", entry("2-0", &["c", "4"]))
    );
    // An automatic ID is above the last one and comes from the clock.
    let auto = cmd(&mut c, &["XADD", "s", "*", "d", "5"]);
    let id = auto.lines().nth(1).unwrap();
    let ms: u64 = id.split('-').next().unwrap().parse().unwrap();
    assert!(ms > 1_600_000_000_000, "{id}");
    assert_eq!(
        cmd(&mut c, &["XADD", "s", "1-9", "x", "y"]),
        "-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n"
    );
    assert_eq!(cmd(&mut c, &["TYPE", "s"]), "+stream\r\n");
    assert_eq!(
        cmd(&mut c, &["OBJECT", "ENCODING", "s"]),
        "$6\r\nstream\r\n"
    );
    assert_eq!(cmd(&mut c, &["XDEL", "s", "1-1", "1-1"]), ":1\r\n");
    assert_eq!(cmd(&mut c, &["XTRIM", "s", "MAXLEN", "1"]), ":2\r\n");
    assert_eq!(cmd(&mut c, &["XLEN", "s"]), ":1\r\n");
}

#[test]
fn copy_rename_and_digest_keep_the_entries() {
    let server = TestServer::start(&["--enable-debug-command", "yes"]);
    let mut c = server.raw();
    cmd(&mut c, &["XADD", "s", "1-1", "a", "1"]);
    cmd(&mut c, &["XGROUP", "CREATE", "s", "g", "0"]);
    assert_eq!(cmd(&mut c, &["COPY", "s", "t"]), ":1\r\n");
    let digest = cmd(&mut c, &["DEBUG", "DIGEST-VALUE", "s"]);
    assert_eq!(cmd(&mut c, &["DEBUG", "DIGEST-VALUE", "t"]), digest);
    assert_eq!(cmd(&mut c, &["RENAME", "t", "u"]), "+OK\r\n");
    assert_eq!(
        cmd(&mut c, &["XINFO", "GROUPS", "u"])
            .matches("name")
            .count(),
        1
    );
    cmd(&mut c, &["XADD", "u", "2-0", "b", "2"]);
    assert_eq!(cmd(&mut c, &["XLEN", "s"]), ":1\r\n");
    assert_eq!(cmd(&mut c, &["DEL", "s", "u"]), ":2\r\n");
}

#[test]
fn resp3_shapes() {
    let server = TestServer::start(THREADS);
    let mut c = server.raw();
    cmd(&mut c, &["HELLO", "3"]);
    cmd(&mut c, &["XADD", "s", "1-0", "f", "v"]);
    assert_eq!(
        cmd(&mut c, &["XREAD", "STREAMS", "s", "0"]),
        format!("%1\r\n{}*1\r\n{}", bulk("s"), entry("1-0", &["f", "v"]))
    );
    assert_eq!(cmd(&mut c, &["XREAD", "STREAMS", "s", "1-0"]), "_\r\n");
    assert_eq!(
        cmd(&mut c, &["XRANGE", "s", "-", "+", "COUNT", "0"]),
        "_\r\n"
    );
    assert_eq!(
        cmd(&mut c, &["XADD", "none", "NOMKSTREAM", "*", "f", "v"]),
        "_\r\n"
    );
    cmd(&mut c, &["XGROUP", "CREATE", "s", "g", "$"]);
    let groups = cmd(&mut c, &["XINFO", "GROUPS", "s"]);
    assert!(groups.starts_with("*1\r\n%6\r\n"), "{groups}");
    // Created at `$` without ENTRIESREAD: the count is unknown, the lag is not.
    assert!(
        groups.ends_with(&format!(
            "{}_\r\n{}:0\r\n",
            bulk("entries-read"),
            bulk("lag")
        )),
        "{groups}"
    );
    assert_eq!(
        cmd(&mut c, &["XPENDING", "s", "g"]),
        "*4\r\n:0\r\n_\r\n_\r\n_\r\n"
    );
    // A timed-out blocking read is the RESP3 null.
    assert_eq!(
        cmd(&mut c, &["XREAD", "BLOCK", "20", "STREAMS", "s", "$"]),
        "_\r\n"
    );
}

#[test]
fn blocked_xread_is_woken_by_xadd_from_another_thread() {
    let server = TestServer::start(THREADS);
    let mut admin = server.raw();
    let mut readers: Vec<RawConn> = (0..3).map(|_| server.raw()).collect();
    for r in &mut readers {
        r.send_cmd(&["XREAD", "BLOCK", "0", "STREAMS", "other", "s", "$", "$"]);
    }
    wait_blocked(&mut admin, 3);
    let mut writer = server.raw();
    assert_eq!(
        cmd(&mut writer, &["XADD", "s", "5-0", "f", "v"]),
        bulk("5-0")
    );
    let expected = format!(
        "*1\r\n*2\r\n{}*1\r\n{}",
        bulk("s"),
        entry("5-0", &["f", "v"])
    );
    for r in &mut readers {
        assert_eq!(text(&r.read_reply()), expected);
    }
    wait_blocked(&mut admin, 0);
    // A timeout replies with the null array.
    let mut reader = server.raw();
    assert_eq!(
        cmd(&mut reader, &["XREAD", "BLOCK", "30", "STREAMS", "s", "$"]),
        "*-1\r\n"
    );
    // An ID below the last one is served at once even with BLOCK.
    assert_eq!(
        cmd(&mut reader, &["XREAD", "BLOCK", "0", "STREAMS", "s", "0"]),
        expected
    );
}

#[test]
fn blocked_xreadgroup_gets_new_entries_errors_when_group_or_key_goes() {
    let server = TestServer::start(THREADS);
    let mut admin = server.raw();
    cmd(&mut admin, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    let mut reader = server.raw();
    reader.send_cmd(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "BLOCK",
        "0",
        "STREAMS",
        "s",
        ">",
    ]);
    wait_blocked(&mut admin, 1);
    cmd(&mut admin, &["XADD", "s", "1-0", "f", "v"]);
    assert_eq!(
        text(&reader.read_reply()),
        format!(
            "*1\r\n*2\r\n{}*1\r\n{}",
            bulk("s"),
            entry("1-0", &["f", "v"])
        )
    );
    assert_eq!(
        cmd(&mut admin, &["XPENDING", "s", "g"]).lines().next(),
        Some("*4")
    );
    assert!(cmd(&mut admin, &["XPENDING", "s", "g"]).starts_with("*4\r\n:1\r\n"));

    reader.send_cmd(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "BLOCK",
        "0",
        "STREAMS",
        "s",
        ">",
    ]);
    wait_blocked(&mut admin, 1);
    assert_eq!(cmd(&mut admin, &["XGROUP", "DESTROY", "s", "g"]), ":1\r\n");
    assert_eq!(
        text(&reader.read_reply()),
        "-NOGROUP the consumer group this client was blocked on no longer exists\r\n"
    );

    cmd(&mut admin, &["XGROUP", "CREATE", "s", "g", "$"]);
    reader.send_cmd(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "BLOCK",
        "0",
        "STREAMS",
        "s",
        ">",
    ]);
    wait_blocked(&mut admin, 1);
    cmd(&mut admin, &["DEL", "s"]);
    assert_eq!(
        text(&reader.read_reply()),
        "-UNBLOCKED the stream key no longer exists\r\n"
    );
    // A plain XREAD keeps waiting when its key is deleted or gets another type.
    reader.send_cmd(&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    wait_blocked(&mut admin, 1);
    cmd(&mut admin, &["SET", "s", "x"]);
    cmd(&mut admin, &["DEL", "s"]);
    thread::sleep(Duration::from_millis(50));
    wait_blocked(&mut admin, 1);
    cmd(&mut admin, &["XADD", "s", "1-0", "a", "b"]);
    assert_eq!(
        text(&reader.read_reply()),
        format!(
            "*1\r\n*2\r\n{}*1\r\n{}",
            bulk("s"),
            entry("1-0", &["a", "b"])
        )
    );
}

/// Several consumers on different threads share a group: every entry is delivered
/// exactly once, the pending counts add up, claims move entries and acks clear them.
#[test]
fn consumer_group_across_threads() {
    const ENTRIES: usize = 400;
    const CONSUMERS: usize = 4;
    let server = TestServer::start(THREADS);
    let mut admin = server.raw();
    for i in 1..=ENTRIES {
        let id = format!("{i}-0");
        cmd(&mut admin, &["XADD", "s", &id, "n", &i.to_string()]);
    }
    cmd(&mut admin, &["XGROUP", "CREATE", "s", "g", "0"]);
    let addr = server.addr();
    let handles: Vec<_> = (0..CONSUMERS)
        .map(|n| {
            let addr = addr.clone();
            thread::spawn(move || {
                let client = redis::Client::open(format!("redis://{addr}/")).unwrap();
                let mut conn = client.get_connection().unwrap();
                let name = format!("c{n}");
                let mut got = Vec::new();
                loop {
                    let reply: redis::Value = redis::cmd("XREADGROUP")
                        .arg("GROUP")
                        .arg("g")
                        .arg(&name)
                        .arg("COUNT")
                        .arg(7)
                        .arg("STREAMS")
                        .arg("s")
                        .arg(">")
                        .query(&mut conn)
                        .unwrap();
                    let ids = ids_in(&reply);
                    if ids.is_empty() {
                        return (name, got);
                    }
                    got.extend(ids);
                }
            })
        })
        .collect();
    let mut all = Vec::new();
    let mut counts = Vec::new();
    for h in handles {
        let (name, ids) = h.join().unwrap();
        counts.push((name, ids.len()));
        all.extend(ids);
    }
    all.sort_by_key(|id| id.split('-').next().unwrap().parse::<u64>().unwrap());
    let expected: Vec<String> = (1..=ENTRIES).map(|i| format!("{i}-0")).collect();
    assert_eq!(all, expected, "every entry delivered exactly once");
    let summary = cmd(&mut admin, &["XPENDING", "s", "g"]);
    assert!(
        summary.starts_with(&format!("*4\r\n:{ENTRIES}\r\n")),
        "{summary}"
    );
    for (name, n) in &counts {
        if *n > 0 {
            assert!(
                summary.contains(&format!("{}{}", bulk(name), bulk(&n.to_string()))),
                "{summary}"
            );
        }
    }
    // c0 claims every pending entry, then half of them are acknowledged.
    let claimed = cmd(
        &mut admin,
        &[
            "XAUTOCLAIM",
            "s",
            "g",
            "c0",
            "0",
            "0",
            "COUNT",
            "1000",
            "JUSTID",
        ],
    );
    assert!(claimed.starts_with("*3\r\n$3\r\n0-0\r\n"), "{claimed}");
    let pending_c0 = cmd(&mut admin, &["XPENDING", "s", "g", "-", "+", "1000", "c0"]);
    assert_eq!(pending_c0.matches("c0").count(), ENTRIES);
    let mut ack = vec!["XACK", "s", "g"];
    let half: Vec<String> = (1..=ENTRIES / 2).map(|i| format!("{i}-0")).collect();
    ack.extend(half.iter().map(String::as_str));
    assert_eq!(cmd(&mut admin, &ack), format!(":{}\r\n", ENTRIES / 2));
    assert!(cmd(&mut admin, &["XPENDING", "s", "g"])
        .starts_with(&format!("*4\r\n:{}\r\n", ENTRIES / 2)));
    let groups = cmd(&mut admin, &["XINFO", "GROUPS", "s"]);
    assert!(
        groups.contains(&format!("{}:{}\r\n", bulk("entries-read"), ENTRIES)),
        "{groups}"
    );
    assert!(
        groups.contains(&format!("{}:0\r\n", bulk("lag"))),
        "{groups}"
    );
}

/// The IDs of an XREADGROUP reply for one stream.
fn ids_in(reply: &redis::Value) -> Vec<String> {
    use redis::Value;
    let Value::Array(streams) = reply else {
        return Vec::new();
    };
    let mut ids = Vec::new();
    for stream in streams {
        let Value::Array(parts) = stream else {
            continue;
        };
        let Some(Value::Array(entries)) = parts.get(1) else {
            continue;
        };
        for entry in entries {
            if let Value::Array(e) = entry {
                if let Some(Value::BulkString(id)) = e.first() {
                    ids.push(String::from_utf8_lossy(id).into_owned());
                }
            }
        }
    }
    ids
}

#[test]
fn effects_are_deterministic() {
    let kvik = Kvik::start();
    let rx = kvik.effects();
    let mut c = kvik.conn();
    q(&mut c, "XADD s 5-* f v");
    assert_eq!(drain(&rx), vec!["XADD s 5-0 f v".to_string()]);
    let auto = q(&mut c, "XADD s * f v");
    let id = auto.lines().nth(1).unwrap().to_string();
    assert_eq!(drain(&rx), vec![format!("XADD s {id} f v")]);
    // A `~` trim that could not remove a whole node says what it kept.
    q(&mut c, "XADD s MAXLEN ~ 1 * f v");
    let effects = drain(&rx);
    assert!(effects[0].starts_with("XADD s MAXLEN = 3 "), "{effects:?}");
    q(&mut c, "XTRIM s MINID ~ 0");
    assert_eq!(drain(&rx), Vec::<String>::new());
    q(&mut c, "XGROUP CREATE s g 0");
    drain(&rx);
    q(&mut c, "XREADGROUP GROUP g alice COUNT 1 STREAMS s >");
    let effects = drain(&rx);
    assert_eq!(effects.len(), 1, "{effects:?}");
    let words: Vec<&str> = effects[0].split(' ').collect();
    assert_eq!(&words[..6], &["XCLAIM", "s", "g", "alice", "0", "5-0"]);
    assert_eq!(&words[6], &"TIME");
    assert_eq!(
        &words[8..],
        &["RETRYCOUNT", "1", "FORCE", "JUSTID", "LASTID", "5-0"]
    );
    // Several effects of one command go as one MULTI ... EXEC, as in Redis 7.0.
    q(&mut c, "XREADGROUP GROUP g bob NOACK COUNT 1 STREAMS s >");
    assert_eq!(
        drain(&rx),
        vec![
            "MULTI".to_string(),
            "XGROUP CREATECONSUMER s g bob".to_string(),
            format!("XGROUP SETID s g {id} ENTRIESREAD 2"),
            "EXEC".to_string()
        ]
    );
    // Only a consumer a NOACK read creates is propagated, and only when served.
    q(&mut c, "XREADGROUP GROUP g bob NOACK STREAMS s 0");
    q(&mut c, "XREADGROUP GROUP g erin STREAMS s 0");
    assert_eq!(drain(&rx), Vec::<String>::new());
    q(&mut c, "XREADGROUP GROUP g frank NOACK STREAMS s 0");
    assert_eq!(
        drain(&rx),
        vec!["XGROUP CREATECONSUMER s g frank".to_string()]
    );
    // A history read changes delivery counts but propagates nothing.
    q(&mut c, "XREADGROUP GROUP g alice STREAMS s 0");
    assert_eq!(drain(&rx), Vec::<String>::new());
    q(
        &mut c,
        "XCLAIM s g carol 0 5-0 FORCE TIME 1000 RETRYCOUNT 4 JUSTID",
    );
    assert_eq!(
        drain(&rx),
        vec![format!(
            "XCLAIM s g carol 0 5-0 TIME 1000 RETRYCOUNT 4 FORCE JUSTID LASTID {id}"
        )]
    );
    q(&mut c, "XDEL s 5-0");
    drain(&rx);
    let reply = q(&mut c, "XAUTOCLAIM s g dave 0 0 JUSTID");
    assert!(reply.ends_with("*1\r\n$3\r\n5-0\r\n"), "{reply}");
    assert_eq!(
        drain(&rx),
        vec![format!(
            "XCLAIM s g carol 0 5-0 TIME 1000 RETRYCOUNT 4 FORCE JUSTID LASTID {id}"
        )]
    );
}

#[test]
fn a_served_xreadgroup_propagates_its_claims() {
    let kvik = Kvik::start();
    let mut admin = kvik.conn();
    q(&mut admin, "XGROUP CREATE s g $ MKSTREAM");
    let rx = kvik.effects();
    let mut reader = kvik.conn();
    reader.send_cmd(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "BLOCK",
        "0",
        "STREAMS",
        "s",
        ">",
    ]);
    wait_blocked(&mut admin, 1);
    q(&mut admin, "XADD s 1-0 f v");
    let reply = text(&reader.read_reply());
    assert!(reply.contains("1-0"), "{reply}");
    let effects = drain(&rx);
    assert_eq!(effects.len(), 2, "{effects:?}");
    assert_eq!(effects[0], "XADD s 1-0 f v");
    assert!(
        effects[1].starts_with("XCLAIM s g c 0 1-0 TIME "),
        "{effects:?}"
    );
    assert!(
        effects[1].ends_with(" RETRYCOUNT 1 FORCE JUSTID LASTID 1-0"),
        "{effects:?}"
    );
}
