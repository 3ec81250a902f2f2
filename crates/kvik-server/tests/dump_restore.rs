//! DUMP and RESTORE against a real redis-server: payloads move both ways for every
//! type in each of its encodings, and RESTORE answers as Redis 7.0 does.

use kvik_server::effects::Effect;
use kvik_server::startup::launch;
use redis::Value as V;
use std::time::Duration;

mod support;
use support::{RawConn, RealRedis, TestServer};

/// Commands that build one key of each type in each of its encodings.
fn fixtures() -> Vec<Vec<String>> {
    let mut cmds: Vec<Vec<String>> = Vec::new();
    let mut add = |args: Vec<String>| cmds.push(args);
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    add(s(&["SET", "str:int", "12345"]));
    add(s(&["SET", "str:wide-int", "9223372036854775807"]));
    add(s(&["SET", "str:short", "hello"]));
    add(s(&["SET", "str:emb", &"e".repeat(40)]));
    add(s(&["SET", "str:lzf", &"abcdefgh".repeat(200)]));
    let noisy: String = (0..300)
        .map(|i| ((i * 7919 % 94) as u8 + 33) as char)
        .collect();
    add(s(&["SET", "str:raw", &noisy]));
    add(s(&["RPUSH", "list:small", "a", "1", "-300", "hello"]));
    let mut big = s(&["RPUSH", "list:big"]);
    big.extend((0..3000).map(|i| {
        if i % 3 == 0 {
            i.to_string()
        } else {
            format!("item-{i}")
        }
    }));
    add(big);
    let mut wide = s(&["RPUSH", "list:wide"]);
    wide.extend((0..12).map(|i| format!("{i}").repeat(9000)));
    add(wide);
    add(s(&[
        "SADD",
        "set:intset",
        "1",
        "2",
        "-5",
        "70000",
        "5000000000",
    ]));
    let mut ints = s(&["SADD", "set:many-ints"]);
    ints.extend((0..700).map(|i| (i * 3).to_string()));
    add(ints);
    add(s(&["SADD", "set:strings", "a", "b", "c", "10"]));
    add(s(&["HSET", "hash:small", "f", "v", "n", "12", "neg", "-7"]));
    let mut fields = s(&["HSET", "hash:big"]);
    fields.extend((0..600).flat_map(|i| [format!("field{i}"), format!("value{i}")]));
    add(fields);
    add(s(&["HSET", "hash:long", "f", &"x".repeat(100)]));
    add(s(&[
        "ZADD",
        "zset:small",
        "1",
        "a",
        "2.5",
        "b",
        "-inf",
        "c",
        "1e300",
        "d",
    ]));
    let mut members = s(&["ZADD", "zset:big"]);
    members.extend((0..300).flat_map(|i| [format!("{}", i as f64 / 7.0), format!("m{i}")]));
    add(members);
    add(s(&["ZADD", "zset:long", "3", &"m".repeat(100)]));
    for i in 1..=250 {
        let id = format!("{}-{}", 1000 + i, i % 3);
        let fields: Vec<String> = if i % 4 == 0 {
            s(&["temp", &i.to_string(), "unit", "c"])
        } else {
            s(&["temp", &i.to_string()])
        };
        let mut xadd = s(&["XADD", "stream", &id]);
        xadd.extend(fields);
        add(xadd);
    }
    add(s(&["XDEL", "stream", "1003-0", "1010-1", "1250-1"]));
    add(s(&["XGROUP", "CREATE", "stream", "g1", "0"]));
    add(s(&[
        "XREADGROUP",
        "GROUP",
        "g1",
        "alice",
        "COUNT",
        "5",
        "STREAMS",
        "stream",
        ">",
    ]));
    add(s(&[
        "XREADGROUP",
        "GROUP",
        "g1",
        "bob",
        "COUNT",
        "3",
        "STREAMS",
        "stream",
        ">",
    ]));
    add(s(&["XACK", "stream", "g1", "1002-2"]));
    add(s(&["XGROUP", "CREATE", "stream", "g2", "$"]));
    add(s(&["XGROUP", "CREATECONSUMER", "stream", "g2", "carol"]));
    add(s(&["XADD", "stream:empty", "1-1", "f", "v"]));
    add(s(&["XDEL", "stream:empty", "1-1"]));
    add(s(&["PFADD", "hll:sparse", "a", "b", "c"]));
    let mut dense = s(&["PFADD", "hll:dense"]);
    dense.extend((0..5000).map(|i| format!("el{i}")));
    add(dense);
    cmds
}

fn keys() -> Vec<&'static str> {
    vec![
        "str:int",
        "str:wide-int",
        "str:short",
        "str:emb",
        "str:lzf",
        "str:raw",
        "list:small",
        "list:big",
        "list:wide",
        "set:intset",
        "set:many-ints",
        "set:strings",
        "hash:small",
        "hash:big",
        "hash:long",
        "zset:small",
        "zset:big",
        "zset:long",
        "stream",
        "stream:empty",
        "hll:sparse",
        "hll:dense",
    ]
}

fn run(con: &mut redis::Connection, args: &[impl redis::ToRedisArgs]) -> V {
    let mut cmd = redis::Cmd::new();
    cmd.arg(args);
    cmd.query(con).unwrap_or_else(|e| panic!("{e}"))
}

fn populate(con: &mut redis::Connection) {
    for args in fixtures() {
        run(con, &args);
    }
}

fn bulk(value: V) -> Vec<u8> {
    match value {
        V::BulkString(bytes) => bytes,
        other => panic!("not a bulk string: {other:?}"),
    }
}

fn sorted(value: V) -> V {
    match value {
        V::Array(mut items) => {
            items.sort_by_key(|v| format!("{v:?}"));
            V::Array(items)
        }
        other => other,
    }
}

/// Pairs of a flat array (HGETALL, XINFO), sorted.
fn sorted_pairs(value: V) -> V {
    match value {
        V::Array(items) => {
            let mut pairs: Vec<V> = items
                .chunks(2)
                .map(|pair| V::Array(pair.to_vec()))
                .collect();
            pairs.sort_by_key(|v| format!("{v:?}"));
            V::Array(pairs)
        }
        other => other,
    }
}

/// The fields of an XINFO reply (a flat array of names and values) that do not
/// depend on when it was asked or how the radix tree is laid out.
fn stable_fields(value: V, keep: &[&str]) -> V {
    let V::Array(items) = value else {
        return value;
    };
    let kept = items
        .chunks(2)
        .filter(|pair| matches!(&pair[0], V::BulkString(name) if keep.contains(&std::str::from_utf8(name).unwrap_or(""))))
        .flat_map(|pair| pair.to_vec())
        .collect();
    V::Array(kept)
}

/// What every read command says about `key`, and last its encoding (PFCOUNT may
/// rewrite a HyperLogLog's cached count, and with it the encoding).
fn snapshot(con: &mut redis::Connection, key: &str) -> Vec<V> {
    let kind = run(con, &["TYPE", key]);
    let mut seen = vec![kind.clone()];
    let V::SimpleString(kind) = kind else {
        panic!("TYPE answers a status")
    };
    let reads: Vec<V> = match kind.as_str() {
        "string" if key.starts_with("hll") => {
            vec![run(con, &["PFCOUNT", key]), run(con, &["GET", key])]
        }
        "string" => vec![run(con, &["GET", key]), run(con, &["STRLEN", key])],
        "list" => vec![
            run(con, &["LRANGE", key, "0", "-1"]),
            run(con, &["LLEN", key]),
            run(con, &["LINDEX", key, "-2"]),
        ],
        "set" => vec![
            sorted(run(con, &["SMEMBERS", key])),
            run(con, &["SCARD", key]),
            run(con, &["SISMEMBER", key, "2"]),
        ],
        "hash" => vec![
            sorted_pairs(run(con, &["HGETALL", key])),
            run(con, &["HLEN", key]),
            run(con, &["HGET", key, "f"]),
        ],
        "zset" => vec![
            run(con, &["ZRANGE", key, "0", "-1", "WITHSCORES"]),
            run(con, &["ZCARD", key]),
            run(con, &["ZSCORE", key, "b"]),
        ],
        "stream" => stream_reads(con, key),
        other => panic!("unexpected type {other}"),
    };
    seen.extend(reads);
    seen.push(run(con, &["OBJECT", "ENCODING", key]));
    seen
}

fn stream_reads(con: &mut redis::Connection, key: &str) -> Vec<V> {
    let info = [
        "length",
        "last-generated-id",
        "max-deleted-entry-id",
        "entries-added",
        "recorded-first-entry-id",
        "groups",
    ];
    let group_info = [
        "name",
        "consumers",
        "pending",
        "last-delivered-id",
        "entries-read",
        "lag",
    ];
    let mut reads = vec![
        run(con, &["XRANGE", key, "-", "+"]),
        run(con, &["XREVRANGE", key, "+", "-", "COUNT", "7"]),
        stable_fields(run(con, &["XINFO", "STREAM", key]), &info),
    ];
    let V::Array(groups) = run(con, &["XINFO", "GROUPS", key]) else {
        panic!("XINFO GROUPS answers an array")
    };
    for group in groups {
        let name = match &group {
            V::Array(fields) => fields[1].clone(),
            _ => panic!("a group is an array"),
        };
        let name = String::from_utf8(bulk(name)).unwrap();
        reads.push(stable_fields(group, &group_info));
        reads.push(run(con, &["XPENDING", key, &name]));
        let V::Array(pending) = run(con, &["XPENDING", key, &name, "-", "+", "100"]) else {
            panic!("XPENDING answers an array")
        };
        // Each entry: ID, consumer, idle time (which moves), delivery count.
        for entry in pending {
            let V::Array(mut fields) = entry else {
                panic!("a pending entry is an array")
            };
            fields.remove(2);
            reads.push(V::Array(fields));
        }
    }
    reads
}

fn start_pair() -> Option<(RealRedis, TestServer)> {
    support::redis_server_or_skip()?;
    Some((RealRedis::start(&[]), TestServer::start(&[])))
}

fn dump(con: &mut redis::Connection, key: &str) -> Vec<u8> {
    bulk(run(con, &["DUMP", key]))
}

fn restore(con: &mut redis::Connection, key: &str, payload: &[u8]) {
    let mut restore = redis::cmd("RESTORE");
    restore.arg(key).arg(0).arg(payload);
    let reply: V = restore
        .query(con)
        .unwrap_or_else(|e| panic!("RESTORE {key}: {e}"));
    assert_eq!(reply, V::Okay, "RESTORE {key}");
}

#[test]
fn redis_payloads_restore_into_kvik_with_every_read_equal() {
    let Some((redis, kvik)) = start_pair() else {
        return;
    };
    let (mut r, mut k) = (redis.client(), kvik.client());
    populate(&mut r);
    for key in keys() {
        // Redis's own copy is the reference: a restored value's encoding can differ
        // from the original's (PFADD's strings are raw, restored ones embstr).
        let copy = format!("{key}:copy");
        let payload = dump(&mut r, key);
        restore(&mut r, &copy, &payload);
        restore(&mut k, key, &payload);
        assert_eq!(snapshot(&mut k, key), snapshot(&mut r, &copy), "{key}");
    }
}

#[test]
fn kvik_payloads_restore_into_redis_and_come_back() {
    let Some((redis, kvik)) = start_pair() else {
        return;
    };
    let (mut r, mut k) = (redis.client(), kvik.client());
    populate(&mut k);
    for key in keys() {
        let original = snapshot(&mut k, key);
        restore(&mut r, key, &dump(&mut k, key));
        assert_eq!(snapshot(&mut r, key), original, "{key} in redis");
        let back = format!("{key}:back");
        restore(&mut k, &back, &dump(&mut r, key));
        assert_eq!(snapshot(&mut k, &back), original, "{key} back in kvik");
    }
}

/// The same command on both servers, compared reply byte for byte.
fn same_reply(redis: &mut RawConn, kvik: &mut RawConn, args: &[&[u8]]) -> Vec<u8> {
    let expected = redis.cmd(args);
    assert_eq!(
        support::escape(&kvik.cmd(args)),
        support::escape(&expected),
        "{:?}",
        args.iter()
            .map(|a| String::from_utf8_lossy(a))
            .collect::<Vec<_>>()
    );
    expected
}

#[test]
fn restore_answers_and_errs_as_redis() {
    let Some((redis, kvik)) = start_pair() else {
        return;
    };
    let (mut r, mut k) = (
        RawConn::connect(&redis.addr()),
        RawConn::connect(&kvik.addr()),
    );
    let mut both = |args: &[&[u8]]| same_reply(&mut r, &mut k, args);
    both(&[b"SET", b"src", b"value"]);
    let dump = both(&[b"DUMP", b"src"]);
    // The bulk string's payload, after its `$<len>\r\n` header.
    let start = dump.iter().position(|&b| b == b'\n').unwrap() + 1;
    let payload = dump[start..dump.len() - 2].to_vec();
    let p = &payload[..];
    both(&[b"DUMP", b"missing"]);
    both(&[b"RESTORE", b"src", b"0", p]);
    both(&[b"RESTORE", b"new", b"-1", p]);
    both(&[b"RESTORE", b"new", b"abc", p]);
    both(&[b"RESTORE", b"new", b"0", b"garbage"]);
    let mut flipped = payload.clone();
    flipped[1] ^= 1;
    both(&[b"RESTORE", b"new", b"0", &flipped]);
    // A right checksum over a body that is not a value.
    let mut garbage = b"\x10\x05hello\x0a\x00".to_vec();
    let crc = crc::Crc::<u64>::new(&crc::CRC_64_REDIS).checksum(&garbage);
    garbage.extend_from_slice(&crc.to_le_bytes());
    both(&[b"RESTORE", b"new", b"0", &garbage]);
    both(&[b"RESTORE", b"new", b"0", p, b"IDLETIME", b"-1"]);
    both(&[b"RESTORE", b"new", b"0", p, b"IDLETIME", b"x"]);
    both(&[b"RESTORE", b"new", b"0", p, b"FREQ", b"256"]);
    both(&[
        b"RESTORE",
        b"new",
        b"0",
        p,
        b"IDLETIME",
        b"1",
        b"FREQ",
        b"1",
    ]);
    both(&[
        b"RESTORE",
        b"new",
        b"0",
        p,
        b"FREQ",
        b"1",
        b"IDLETIME",
        b"1",
    ]);
    both(&[b"RESTORE", b"new", b"0", p, b"IDLETIME"]);
    both(&[b"RESTORE", b"new", b"0", p, b"BOGUS"]);
    both(&[b"EXISTS", b"new"]);
    // An expired TTL deletes what REPLACE would have replaced.
    both(&[b"RESTORE", b"src", b"1", p, b"REPLACE", b"ABSTTL"]);
    both(&[b"EXISTS", b"src"]);
    both(&[b"RESTORE", b"new", b"1000000", p, b"IDLETIME", b"1000"]);
    both(&[b"GET", b"new"]);
    both(&[b"OBJECT", b"IDLETIME", b"new"]);
    both(&[b"RESTORE", b"new", b"0", p, b"REPLACE"]);
    both(&[b"TTL", b"new"]);
    both(&[b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-lfu"]);
    both(&[b"RESTORE", b"new", b"0", p, b"REPLACE", b"FREQ", b"100"]);
    both(&[b"OBJECT", b"FREQ", b"new"]);
    both(&[b"RESTORE", b"lfu", b"0", p, b"IDLETIME", b"100"]);
    both(&[b"OBJECT", b"FREQ", b"lfu"]);
}

#[test]
fn restore_sets_relative_ttls() {
    let kvik = TestServer::start(&[]);
    let mut k = kvik.client();
    run(&mut k, &["SET", "src", "v"]);
    let payload = bulk(run(&mut k, &["DUMP", "src"]));
    let mut restore = redis::cmd("RESTORE");
    restore.arg("ttl").arg(50_000).arg(&payload);
    restore.query::<()>(&mut k).unwrap();
    let V::Int(pttl) = run(&mut k, &["PTTL", "ttl"]) else {
        panic!("PTTL answers an integer")
    };
    assert!((49_000..=50_000).contains(&pttl), "{pttl}");
}

#[test]
fn restore_propagates_an_absolute_ttl_and_notifies() {
    let port = support::free_port();
    let config = kvik_config::Config {
        port,
        ..support::in_process_config()
    };
    let running = launch(config, None).expect("server starts");
    let effects = running.server.effects.subscribe();
    let url = format!("redis://127.0.0.1:{port}/");
    let mut con = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    run(
        &mut con,
        &["CONFIG", "SET", "notify-keyspace-events", "KEg$"],
    );
    let mut events = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let mut pubsub = events.as_pubsub();
    pubsub.psubscribe("__keyevent@0__:*").unwrap();
    pubsub
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();

    run(&mut con, &["SET", "src", "v"]);
    let payload = bulk(run(&mut con, &["DUMP", "src"]));
    let mut restore = redis::cmd("RESTORE");
    restore.arg("k").arg(100_000).arg(&payload);
    restore.query::<()>(&mut con).unwrap();
    let mut restore = redis::cmd("RESTORE");
    restore
        .arg("k")
        .arg(1)
        .arg(&payload)
        .arg("REPLACE")
        .arg("ABSTTL");
    restore.query::<()>(&mut con).unwrap();

    let argv = |e: Effect| -> Vec<Vec<u8>> { e.argv };
    let next = || argv(effects.recv_timeout(Duration::from_secs(5)).unwrap());
    assert_eq!(next()[0], b"SET");
    let restored = next();
    assert_eq!(restored[..2], [b"RESTORE".to_vec(), b"k".to_vec()]);
    let at: u64 = String::from_utf8_lossy(&restored[2]).parse().unwrap();
    assert!(at > kvik_server::hlc::unix_ms() + 90_000);
    assert_eq!(restored[4], b"ABSTTL");
    assert_eq!(next(), [b"DEL".to_vec(), b"k".to_vec()]);

    let mut event = || {
        let message = pubsub.get_message().unwrap();
        message
            .get_channel_name()
            .rsplit(':')
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(event(), "set");
    assert_eq!(event(), "restore");
    assert_eq!(event(), "del");
}
