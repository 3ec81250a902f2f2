//! The sorted-set commands over real connections: reply shapes in both protocols,
//! the effects each write appends (what replicas and the AOF receive), big sets
//! against a model, ZSCAN's guarantee, ZRANDMEMBER's picks, keyspace statistics,
//! and the STORE forms, which lock their own keys.
//!
//! Exact replies and error texts are pinned by the differential scripts
//! (`tests/differential/zsets_*.redis`); these tests cover what a script cannot.

mod support;

use redis::Commands;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;
use support::in_process::{drain, q, Kvik};
use support::RawConn;

#[test]
fn reply_shapes_in_both_protocols() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    q(&mut c, "ZADD z 1 a 2.5 b 3 c 4 d");
    let expect = |c: &mut RawConn, line: &str, reply: &str| {
        assert_eq!(q(c, line), reply, "{line}");
    };
    expect(&mut c, "ZSCORE z b", "$3\r\n2.5\r\n");
    expect(
        &mut c,
        "ZRANGE z 0 1 WITHSCORES",
        "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$3\r\n2.5\r\n",
    );
    expect(&mut c, "ZPOPMIN z", "*2\r\n$1\r\na\r\n$1\r\n1\r\n");
    expect(
        &mut c,
        "ZMPOP 1 z MAX",
        "*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\nd\r\n$1\r\n4\r\n",
    );
    expect(
        &mut c,
        "ZSCAN z 0",
        "*2\r\n$1\r\n0\r\n*4\r\n$1\r\nb\r\n$3\r\n2.5\r\n$1\r\nc\r\n$1\r\n3\r\n",
    );
    expect(&mut c, "ZMPOP 1 nokey MIN", "*-1\r\n");

    let mut c3 = kvik.conn();
    assert!(q(&mut c3, "HELLO 3").starts_with('%'));
    expect(&mut c3, "ZSCORE z b", ",2.5\r\n");
    expect(
        &mut c3,
        "ZRANGE z 0 0 WITHSCORES",
        "*1\r\n*2\r\n$1\r\nb\r\n,2.5\r\n",
    );
    expect(&mut c3, "ZINCRBY z 1 c", ",4\r\n");
    expect(&mut c3, "ZPOPMAX z 1", "*1\r\n*2\r\n$1\r\nc\r\n,4\r\n");
    expect(&mut c3, "ZPOPMAX z", "*2\r\n$1\r\nb\r\n,2.5\r\n");
    expect(&mut c3, "ZMPOP 1 z MIN", "_\r\n");
    expect(&mut c3, "ZSCORE z b", "_\r\n");
}

#[test]
fn writes_propagate_what_redis_propagates() {
    let kvik = Kvik::start();
    let rx = kvik.effects();
    let mut c = kvik.conn();
    let mut expect = |line: &str, effects: &[&str]| {
        q(&mut c, line);
        assert_eq!(drain(&rx), effects, "{line}");
    };
    expect("ZADD z 1 a 2 b 3 c 4 d", &["ZADD z 1 a 2 b 3 c 4 d"]);
    expect("ZADD z 1 a", &[]);
    expect("ZADD z NX 5 a", &[]);
    expect("ZADD z XX 5 nosuch", &[]);
    expect("ZADD z GT 0 a", &[]);
    expect("ZADD z INCR 1 a", &["ZADD z INCR 1 a"]);
    expect("ZADD z INCR 0 a", &[]);
    expect("ZINCRBY z 1 a", &["ZINCRBY z 1 a"]);
    expect("ZADD z INCR nan a", &[]);
    expect("ZREM z nosuch", &[]);
    expect("ZREM z a nosuch", &["ZREM z a nosuch"]);
    expect("ZPOPMIN z", &["ZPOPMIN z"]);
    expect("ZPOPMIN z 0", &[]);
    expect("ZPOPMIN nokey", &[]);
    expect("ZADD z 1 a 5 e", &["ZADD z 1 a 5 e"]);
    expect("ZMPOP 2 nokey z MAX COUNT 2", &["ZPOPMAX z 2"]);
    expect("ZMPOP 1 z MIN COUNT 10", &["ZPOPMIN z 2"]);
    expect("ZMPOP 1 z MIN", &[]);
    expect("ZADD z 1 a 2 b 3 c", &["ZADD z 1 a 2 b 3 c"]);
    expect("ZRANGESTORE d z 0 1", &["ZRANGESTORE d z 0 1"]);
    expect("ZRANGESTORE d z 5 1", &["ZRANGESTORE d z 5 1"]);
    expect("ZRANGESTORE d z 5 1", &[]);
    expect("ZREMRANGEBYRANK z 5 6", &[]);
    expect("ZREMRANGEBYRANK z 0 0", &["ZREMRANGEBYRANK z 0 0"]);
    expect("ZREMRANGEBYSCORE z 10 20", &[]);
    expect("ZREMRANGEBYSCORE z 2 2", &["ZREMRANGEBYSCORE z 2 2"]);
    expect("ZREMRANGEBYLEX z - +", &["ZREMRANGEBYLEX z - +"]);
    expect("ZADD z 1 a 2 b", &["ZADD z 1 a 2 b"]);
    expect("ZUNIONSTORE u 2 z nokey", &["ZUNIONSTORE u 2 z nokey"]);
    expect("ZINTERSTORE u 2 z nokey", &["ZINTERSTORE u 2 z nokey"]);
    expect("ZINTERSTORE u 2 z nokey", &[]);
    expect("ZDIFFSTORE u 1 z", &["ZDIFFSTORE u 1 z"]);
    expect("ZUNIONSTORE u 0 z", &[]);
    expect("ZUNION 2 z u", &[]);
    expect("ZRANGE z 0 -1", &[]);
    expect("ZRANDMEMBER z -5", &[]);
    expect("ZSCAN z 0", &[]);
}

/// A STORE form reads an expired input as missing, deleting it on the way (and
/// propagating the DEL) before its own effect; the two go as one MULTI ... EXEC, as
/// in Redis 7.0.
#[test]
fn store_forms_expire_their_inputs() {
    let kvik = Kvik::start();
    let rx = kvik.effects();
    let mut c = kvik.conn();
    q(&mut c, "ZADD gone 1 a");
    q(&mut c, "PEXPIRE gone 20");
    q(&mut c, "ZADD kept 2 b");
    std::thread::sleep(Duration::from_millis(60));
    drain(&rx);
    assert_eq!(q(&mut c, "ZUNIONSTORE d 2 gone kept"), ":1\r\n");
    assert_eq!(
        drain(&rx),
        ["MULTI", "DEL gone", "ZUNIONSTORE d 2 gone kept", "EXEC"]
    );
    assert_eq!(q(&mut c, "EXISTS gone"), ":0\r\n");
}

/// The STORE forms take their own shard locks: many keys, many clients at once.
#[test]
fn store_forms_are_safe_under_concurrency() {
    let kvik = Kvik::start();
    let keys: Vec<String> = (0..16).map(|i| format!("src{i}")).collect();
    let mut c = kvik.client();
    for (i, key) in keys.iter().enumerate() {
        let _: i64 = c.zadd(key, "shared", i as f64).unwrap();
        let _: i64 = c.zadd(key, format!("own{i}"), 1.0).unwrap();
    }
    std::thread::scope(|s| {
        for t in 0..4 {
            let (kvik, keys) = (&kvik, &keys);
            s.spawn(move || {
                let mut c = kvik.client();
                for round in 0..200 {
                    let dst = format!("dst{}", (t + round) % 3);
                    let n: i64 = redis::cmd("ZUNIONSTORE")
                        .arg(&dst)
                        .arg(keys.len())
                        .arg(keys)
                        .query(&mut c)
                        .unwrap();
                    assert_eq!(n, 17);
                    let n: i64 = redis::cmd("ZINTERSTORE")
                        .arg(&dst)
                        .arg(2)
                        .arg(&keys[t])
                        .arg(&keys[t + 1])
                        .query(&mut c)
                        .unwrap();
                    assert_eq!(n, 1);
                    let _: i64 = c.zincr(&keys[t], "shared", 1).unwrap();
                }
            });
        }
    });
    let shared: f64 = c.zscore("src0", "shared").unwrap();
    assert_eq!(shared, 200.0);
    let sum: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg("dst0")
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(&mut c)
        .unwrap();
    assert!(!sum.is_empty());
}

/// Random operations on sets big enough for the tree to have several levels,
/// checked against a model: ranks, ranges by rank and score, counts and pops.
#[test]
fn big_sets_agree_with_a_model() {
    let kvik = Kvik::start();
    let mut c = kvik.client();
    let mut model: BTreeMap<String, f64> = BTreeMap::new();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let order = |model: &BTreeMap<String, f64>| {
        let mut v: Vec<(String, f64)> = model.iter().map(|(m, s)| (m.clone(), *s)).collect();
        v.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        v
    };
    for round in 0..40 {
        let mut pipe = redis::pipe();
        for _ in 0..500 {
            let member = format!("m{}", next(20_000));
            let score = next(1000) as f64 / 4.0;
            if next(5) == 0 {
                model.remove(&member);
                pipe.zrem("big", &member).ignore();
            } else {
                model.insert(member.clone(), score);
                pipe.zadd("big", &member, score).ignore();
            }
        }
        let () = pipe.query(&mut c).unwrap();
        let all = order(&model);
        let len: usize = c.zcard("big").unwrap();
        assert_eq!(len, all.len(), "round {round}");
        let probe = &all[next(all.len() as u64) as usize];
        let rank: usize = c.zrank("big", &probe.0).unwrap();
        assert_eq!(all[rank].0, probe.0);
        let rev: usize = c.zrevrank("big", &probe.0).unwrap();
        assert_eq!(rev, len - 1 - rank);
        let start = next(len as u64) as isize;
        let slice: Vec<(String, f64)> = c.zrange_withscores("big", start, start + 30).unwrap();
        let end = (start as usize + 31).min(len);
        assert_eq!(slice, all[start as usize..end]);
        let (lo, hi) = (next(250) as f64, next(250) as f64);
        let in_range: Vec<&(String, f64)> =
            all.iter().filter(|(_, s)| *s >= lo && *s <= hi).collect();
        let count: usize = c.zcount("big", lo, hi).unwrap();
        assert_eq!(count, in_range.len());
        let limited: Vec<String> = c.zrangebyscore_limit("big", lo, hi, 3, 7).unwrap();
        let expected: Vec<String> = in_range
            .iter()
            .skip(3)
            .take(7)
            .map(|e| e.0.clone())
            .collect();
        assert_eq!(limited, expected);
        let top: Vec<String> = c.zrevrangebyscore_limit("big", hi, lo, 0, 5).unwrap();
        let expected: Vec<String> = in_range.iter().rev().take(5).map(|e| e.0.clone()).collect();
        assert_eq!(top, expected);
        if round % 10 == 9 {
            let popped: Vec<(String, f64)> = c.zpopmin("big", 50).unwrap();
            assert_eq!(popped, all[..50]);
            all[..50].iter().for_each(|(m, _)| {
                model.remove(m);
            });
        }
    }
    let encoding: String = redis::cmd("OBJECT")
        .arg("ENCODING")
        .arg("big")
        .query(&mut c)
        .unwrap();
    assert_eq!(encoding, "skiplist");
}

/// ZSCAN returns every member present from the start to the end of an iteration,
/// even while other members come and go.
#[test]
fn zscan_returns_every_member_present_throughout() {
    let kvik = Kvik::start();
    let mut c = kvik.client();
    let stable: Vec<String> = (0..3000).map(|i| format!("stable{i}")).collect();
    for chunk in stable.chunks(500) {
        let pairs: Vec<(f64, &String)> = chunk.iter().map(|m| (1.0, m)).collect();
        let _: i64 = c.zadd_multiple("s", &pairs).unwrap();
    }
    let mut seen = HashSet::new();
    let mut cursor = 0u64;
    let mut step = 0;
    loop {
        let (next, items): (u64, Vec<String>) = redis::cmd("ZSCAN")
            .arg("s")
            .arg(cursor)
            .arg("COUNT")
            .arg(20)
            .query(&mut c)
            .unwrap();
        // Members and scores alternate.
        for pair in items.chunks(2) {
            let score = if pair[0].starts_with("stable") {
                "1"
            } else {
                "2"
            };
            assert_eq!(pair[1], score);
            seen.insert(pair[0].clone());
        }
        // Churn: members added and removed between the calls.
        let _: i64 = c.zadd("s", format!("temp{step}"), 2.0).unwrap();
        let _: i64 = c.zrem("s", format!("temp{}", step / 2)).unwrap();
        step += 1;
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    assert!(stable.iter().all(|m| seen.contains(m)));
    let matched: (u64, Vec<String>) = redis::cmd("ZSCAN")
        .arg("s")
        .arg(0)
        .arg("MATCH")
        .arg("stable1?")
        .arg("COUNT")
        .arg(100_000)
        .query(&mut c)
        .unwrap();
    assert_eq!(matched.0, 0);
    assert_eq!(matched.1.len(), 20);
}

#[test]
fn zrandmember_picks() {
    let kvik = Kvik::start();
    let mut c = kvik.client();
    for (key, size) in [("small", 20), ("big", 1000)] {
        let pairs: Vec<(f64, String)> = (0..size).map(|i| (i as f64, format!("m{i}"))).collect();
        let _: i64 = c.zadd_multiple(key, &pairs).unwrap();
        let score_of: HashMap<String, f64> = pairs.iter().map(|(s, m)| (m.clone(), *s)).collect();

        let distinct: Vec<String> = c.zrandmember(key, Some(size as isize / 2)).unwrap();
        assert_eq!(distinct.len(), size / 2);
        assert_eq!(distinct.iter().collect::<HashSet<_>>().len(), size / 2);
        assert!(distinct.iter().all(|m| score_of.contains_key(m)));

        let repeated: Vec<(String, f64)> =
            c.zrandmember_withscores(key, -3 * size as isize).unwrap();
        assert_eq!(repeated.len(), 3 * size);
        assert!(repeated.iter().all(|(m, s)| score_of[m] == *s));
        let picked: HashSet<&String> = repeated.iter().map(|(m, _)| m).collect();
        assert!(picked.len() > size / 2, "{key}: {} distinct", picked.len());
        assert!(picked.len() < repeated.len(), "{key}: repeats expected");

        let one: String = c.zrandmember(key, None).unwrap();
        assert!(score_of.contains_key(&one));
    }
}

#[test]
fn reads_count_keyspace_hits_and_misses() {
    let kvik = Kvik::start();
    let mut c = kvik.client();
    let _: i64 = c.zadd("z", "a", 1).unwrap();
    let stats = |c: &mut redis::Connection| -> (u64, u64) {
        let info: String = redis::cmd("INFO").arg("stats").query(c).unwrap();
        let field = |name: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.parse().ok())
                .unwrap()
        };
        (field("keyspace_hits"), field("keyspace_misses"))
    };
    let before = stats(&mut c);
    for line in [
        "ZSCORE z a",
        "ZSCORE nokey a",
        "ZADD z 2 b",
        "ZPOPMIN nokey",
        "ZUNION 2 z nokey",
        "ZUNIONSTORE d 2 z nokey",
        "ZRANGESTORE d z 0 -1",
        "ZRANDMEMBER z",
    ] {
        let args: Vec<&str> = line.split(' ').collect();
        let _: redis::Value = redis::cmd(args[0]).arg(&args[1..]).query(&mut c).unwrap();
    }
    let after = stats(&mut c);
    // Redis 7.0 counts the reads: ZSCORE 1+1, ZUNION 1+1, ZUNIONSTORE 1+1,
    // ZRANGESTORE 1, ZRANDMEMBER 1; not the writes' lookups.
    assert_eq!((after.0 - before.0, after.1 - before.1), (5, 3));
}
