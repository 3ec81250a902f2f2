//! The hash commands over real connections: the effects each write appends to the
//! effect stream, keyspace statistics, HSCAN's guarantee under concurrent writes,
//! HRANDFIELD's sampling, encodings as configured, and a Redis client's view.
//! Exact replies and error texts are the differential scripts' job
//! (`tests/differential/hashes_*.redis`).
//!
//! Each test runs its own server in-process, so it can watch the effect stream and
//! look at stored entries directly.

mod support;

use kvik_server::keyspace::hash_key;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;
use support::in_process::{drain, q, Kvik};
use support::RawConn;

/// What these tests read from the server beside the replies.
trait Inspect {
    /// The encoding a stored key reports, read from the keyspace directly.
    fn encoding(&self, key: &str) -> &'static str;
}

impl Inspect for Kvik {
    fn encoding(&self, key: &str) -> &'static str {
        let keyspace = &self.server().keyspace;
        let hash = hash_key(key.as_bytes());
        let shard = keyspace.shard(0, keyspace.shard_of(hash)).lock();
        shard
            .find(hash, key.as_bytes())
            .map(|e| e.value.encoding_name())
            .expect("key exists")
    }
}

/// A reply's bulk strings, in order (enough for the flat arrays of these commands).
fn bulks(reply: &str) -> Vec<String> {
    let mut lines = reply.split("\r\n");
    let mut out = Vec::new();
    while let Some(line) = lines.next() {
        if line.starts_with('$') && line != "$-1" {
            out.push(lines.next().expect("bulk payload").to_string());
        }
    }
    out
}

/// One HSCAN call: the next cursor and the field/value pairs returned.
fn hscan(c: &mut RawConn, key: &str, cursor: u64, count: usize) -> (u64, Vec<(String, String)>) {
    let reply = q(c, &format!("HSCAN {key} {cursor} COUNT {count}"));
    let words = bulks(&reply);
    let next = words[0].parse().expect("cursor");
    let pairs = words[1..]
        .chunks(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect();
    (next, pairs)
}

fn info_stat(c: &mut RawConn, name: &str) -> u64 {
    let reply = q(c, "INFO stats");
    reply
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .expect("stat listed")
        .parse()
        .expect("a number")
}

#[test]
fn writes_propagate_what_redis_propagates() {
    let kvik = Kvik::start();
    let rx = kvik.effects();
    let mut c = kvik.conn();
    let mut other = kvik.conn();
    let mut expect = |line: &str, effects: &[&str]| {
        q(&mut c, line);
        assert_eq!(drain(&rx), effects, "{line}");
    };
    expect("HSET h a 1 b 2", &["HSET h a 1 b 2"]);
    // Rewriting a field with its own value still counts as a write, as in Redis.
    expect("HSET h a 1", &["HSET h a 1"]);
    expect("HMSET h c 3", &["HMSET h c 3"]);
    expect("HSETNX h a 9", &[]);
    expect("HSETNX h d 4", &["HSETNX h d 4"]);
    expect("HDEL h nope", &[]);
    expect("HDEL h a nope", &["HDEL h a nope"]);
    expect("HINCRBY h n 5", &["HINCRBY h n 5"]);
    expect("HINCRBY h b x", &[]);
    expect("HINCRBYFLOAT h f 1.5", &["HSET h f 1.5"]);
    expect("HINCRBYFLOAT h f 0.1", &["HSET h f 1.6"]);
    expect("HINCRBYFLOAT h f x", &[]);
    expect("HINCRBYFLOAT h c 1", &["HSET h c 4"]);
    expect("HINCRBYFLOAT nokey f 2.50", &["HSET nokey f 2.5"]);
    for read in [
        "HGET h a",
        "HMGET h a b",
        "HGETALL h",
        "HKEYS h",
        "HVALS h",
        "HLEN h",
        "HSTRLEN h b",
        "HEXISTS h b",
        "HRANDFIELD h 2",
        "HSCAN h 0",
    ] {
        expect(read, &[]);
    }
    // Emptying a hash deletes the key; the effect is still the HDEL.
    expect("HDEL nokey f", &["HDEL nokey f"]);
    assert_eq!(q(&mut other, "EXISTS nokey"), ":0\r\n");
    expect("HDEL nokey f", &[]);
    expect("SET s v", &["SET s v"]);
    expect("HSET s a 1", &[]);
    expect("HDEL s a", &[]);
}

#[test]
fn a_huge_increment_replies_and_propagates_the_same_text() {
    let kvik = Kvik::start();
    let rx = kvik.effects();
    let mut c = kvik.conn();
    let reply = q(&mut c, "HINCRBYFLOAT h f 1e4000");
    let value = bulks(&reply).remove(0);
    // 1e4000 is not exact in a long double: it prints as 4000 digits, 9999...
    assert_eq!(value.len(), 4000);
    assert_eq!(drain(&rx), [format!("HSET h f {value}")]);
    assert_eq!(kvik.encoding("h"), "hashtable");
}

#[test]
fn an_expired_hash_read_propagates_del() {
    let kvik = Kvik::start();
    let rx = kvik.effects();
    let mut c = kvik.conn();
    q(&mut c, "HSET gone f v");
    q(&mut c, "PEXPIRE gone 50");
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(q(&mut c, "HGET gone f"), "$-1\r\n");
    let effects = drain(&rx);
    assert_eq!(effects.len(), 3, "{effects:?}");
    assert_eq!(effects[0], "HSET gone f v");
    assert_eq!(effects[2], "DEL gone");
}

#[test]
fn reads_count_keyspace_hits_and_misses_writes_do_not() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    q(&mut c, "HSET h a 1");
    q(&mut c, "HINCRBY h n 1");
    q(&mut c, "HDEL h zz");
    q(&mut c, "HSETNX h a 1");
    assert_eq!(info_stat(&mut c, "keyspace_hits"), 0);
    assert_eq!(info_stat(&mut c, "keyspace_misses"), 0);
    for hit in [
        "HGET h a",
        "HGET h nope",
        "HMGET h a b",
        "HLEN h",
        "HGETALL h",
        "HSCAN h 0",
        "HRANDFIELD h",
    ] {
        q(&mut c, hit);
    }
    for miss in ["HGET x a", "HEXISTS x a", "HRANDFIELD x 2", "HSCAN x 0"] {
        q(&mut c, miss);
    }
    assert_eq!(info_stat(&mut c, "keyspace_hits"), 7);
    assert_eq!(info_stat(&mut c, "keyspace_misses"), 4);
}

#[test]
fn encodings_follow_the_configured_limits() {
    let kvik = Kvik::start_with(|c| {
        c.hash_max_listpack_entries = 3;
        c.hash_max_listpack_value = 5;
    });
    let mut c = kvik.conn();
    q(&mut c, "HSET h a 1 b 2 c 3");
    assert_eq!(kvik.encoding("h"), "listpack");
    q(&mut c, "HSET h d 4");
    assert_eq!(kvik.encoding("h"), "hashtable");
    q(&mut c, "HSET v f 12345");
    assert_eq!(kvik.encoding("v"), "listpack");
    q(&mut c, "HSET v f 123456");
    assert_eq!(kvik.encoding("v"), "hashtable");
    q(&mut c, "CONFIG SET hash-max-listpack-entries 1");
    q(&mut c, "HSET w a 1");
    assert_eq!(kvik.encoding("w"), "listpack");
    q(&mut c, "HSET w b 1");
    assert_eq!(kvik.encoding("w"), "hashtable");
}

/// A hashtable-encoded hash of `n` fields `f0..`, each holding `v<i>`.
fn big_hash(c: &mut RawConn, key: &str, n: usize) {
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        let mut words = vec!["HSET".to_string(), key.to_string()];
        for i in chunk {
            words.push(format!("f{i}"));
            words.push(format!("v{i}"));
        }
        c.cmd(&words);
    }
}

#[test]
fn hscan_of_a_hashtable_misses_nothing_under_writes() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    big_hash(&mut c, "h", 1000);
    let mut present_throughout: BTreeSet<String> = (0..1000).map(|i| format!("f{i}")).collect();
    let mut returned = BTreeMap::new();
    let (mut cursor, mut calls, mut round) = (0, 0, 0);
    loop {
        let (next, pairs) = hscan(&mut c, "h", cursor, 25);
        returned.extend(pairs);
        calls += 1;
        // Between calls: delete two old fields and add three new ones.
        for victim in [round * 7 % 1000, (round * 13 + 500) % 1000] {
            let field = format!("f{victim}");
            q(&mut c, &format!("HDEL h {field}"));
            present_throughout.remove(&field);
        }
        for j in 0..3 {
            q(&mut c, &format!("HSET h new{round}_{j} x"));
        }
        round += 1;
        if next == 0 {
            break;
        }
        cursor = next;
    }
    assert!(calls < 100, "{calls} calls");
    for field in &present_throughout {
        let i = &field[1..];
        assert_eq!(returned.get(field), Some(&format!("v{i}")), "{field}");
    }
}

#[test]
fn hscan_of_a_listpack_is_one_call() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    big_hash(&mut c, "h", 100);
    assert_eq!(kvik.encoding("h"), "listpack");
    let (next, pairs) = hscan(&mut c, "h", 0, 1);
    assert_eq!(next, 0);
    assert_eq!(pairs.len(), 100);
    assert_eq!(pairs[0], ("f0".into(), "v0".into()));
}

#[test]
fn hrandfield_samples_as_asked() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    big_hash(&mut c, "small", 10);
    big_hash(&mut c, "big", 600);
    assert_eq!(kvik.encoding("big"), "hashtable");
    for (key, size) in [("small", 10), ("big", 600)] {
        // A positive count: distinct fields, each with its own value.
        for count in [1, 3, size / 2, size - 1] {
            let words = bulks(&q(&mut c, &format!("HRANDFIELD {key} {count} WITHVALUES")));
            assert_eq!(words.len(), count * 2, "{key} {count}");
            let fields: BTreeSet<&String> = words.iter().step_by(2).collect();
            assert_eq!(fields.len(), count, "{key} {count}: repeats");
            for pair in words.chunks(2) {
                assert_eq!(pair[1], format!("v{}", &pair[0][1..]));
            }
        }
        let all = bulks(&q(&mut c, &format!("HRANDFIELD {key} {}", size + 5)));
        assert_eq!(all.iter().collect::<BTreeSet<_>>().len(), size);
        // A negative count: exactly that many, repeats allowed.
        let many = bulks(&q(&mut c, &format!("HRANDFIELD {key} -{}", size * 3)));
        assert_eq!(many.len(), size * 3);
        assert!(many.iter().collect::<BTreeSet<_>>().len() < size * 3);
    }
}

#[test]
fn hrandfield_picks_uniformly() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    for key in ["listpack", "table"] {
        q(&mut c, &format!("HSET {key} a 1 b 2 c 3 d 4"));
    }
    q(&mut c, "CONFIG SET hash-max-listpack-value 0");
    q(&mut c, "HSET table e 5");
    q(&mut c, "HDEL table e");
    assert_eq!(kvik.encoding("table"), "hashtable");
    for key in ["listpack", "table"] {
        let picks = bulks(&q(&mut c, &format!("HRANDFIELD {key} -40000")));
        let mut counts: HashMap<String, usize> = HashMap::new();
        for p in picks {
            *counts.entry(p).or_default() += 1;
        }
        assert_eq!(counts.len(), 4, "{key}");
        for (field, n) in counts {
            // 10000 expected; six standard deviations is about 520.
            assert!(
                (9400..10600).contains(&n),
                "{key}: {field} picked {n} times"
            );
        }
    }
}

#[test]
fn a_redis_client_sees_the_usual_types() {
    let kvik = Kvik::start();
    let mut con = kvik.client();
    let added: i64 = redis::cmd("HSET")
        .arg("h")
        .arg(&[("a", "1"), ("b", "2")])
        .query(&mut con)
        .unwrap();
    assert_eq!(added, 2);
    let all: HashMap<String, i64> = redis::cmd("HGETALL").arg("h").query(&mut con).unwrap();
    assert_eq!(all, HashMap::from([("a".into(), 1), ("b".into(), 2)]));
    let n: i64 = redis::cmd("HINCRBY")
        .arg("h")
        .arg("a")
        .arg(41)
        .query(&mut con)
        .unwrap();
    assert_eq!(n, 42);
    let f: f64 = redis::cmd("HINCRBYFLOAT")
        .arg("h")
        .arg("b")
        .arg(0.5)
        .query(&mut con)
        .unwrap();
    assert_eq!(f, 2.5);
    let values: Vec<Option<String>> = redis::cmd("HMGET")
        .arg("h")
        .arg("a")
        .arg("zz")
        .query(&mut con)
        .unwrap();
    assert_eq!(values, [Some("42".to_string()), None]);
    let scanned: Vec<(String, String)> = redis::cmd("HSCAN")
        .arg("h")
        .cursor_arg(0)
        .clone()
        .iter(&mut con)
        .unwrap()
        .collect();
    assert_eq!(scanned.len(), 2);
    let err = redis::cmd("HINCRBY")
        .arg("h")
        .arg("b")
        .arg(1)
        .query::<i64>(&mut con)
        .unwrap_err();
    assert_eq!(err.detail(), Some("hash value is not an integer"));
}
