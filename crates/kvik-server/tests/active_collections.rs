//! Active replication of sets, hashes and sorted sets: two kvik nodes, each an
//! active replica of the other through a TCP proxy that cuts and heals the link.
//! Writes made on both sides of a partition to different elements of one
//! collection all stay; a removal on one side and an add of the same element on
//! the other that the removal never saw (earlier or later) leave the element
//! (add-wins), while a removal takes away every add it saw; a field's value and a member's score are the
//! last writer's; a delete newer than an add removes the key; a type conflict goes
//! to the last writer of the key. The heal is a partial resync after a short
//! partition and a full sync, merged element by element, after a long one: both
//! must end with equal DEBUG DIGESTs and the same elements.

mod support;

use std::time::Duration;
use support::active::{overflow_backlogs, Lcg, Pair};
use support::{wait_for, RawConn};

/// Every key but the fillers with its type and contents, one line each, for a
/// failure's message.
fn dump(conn: &mut RawConn) -> String {
    let mut out = String::new();
    for key in words(&conn.cmd(&["KEYS", "*"])) {
        if key.starts_with("fill:") || key.starts_with('+') {
            continue;
        }
        let kind = String::from_utf8_lossy(&conn.cmd(&["TYPE", &key])).into_owned();
        let contents = match kind.trim() {
            "+set" => conn.cmd(&["SMEMBERS", &key]),
            "+hash" => conn.cmd(&["HGETALL", &key]),
            "+zset" => conn.cmd(&["ZRANGE", &key, "0", "-1", "WITHSCORES"]),
            _ => conn.cmd(&["GET", &key]),
        };
        let contents = match kind.trim() {
            "+zset" => String::from_utf8_lossy(&contents).replace("\r\n", " "),
            _ => format!("{:?}", words(&contents)),
        };
        out.push_str(&format!("\n  {key} {} {contents}", kind.trim()));
    }
    out
}

/// A reply's bulk strings, sorted.
fn words(reply: &[u8]) -> Vec<String> {
    let mut words: Vec<String> = String::from_utf8_lossy(reply)
        .split("\r\n")
        .filter(|l| !l.is_empty() && !l.starts_with('*') && !l.starts_with('$'))
        .map(str::to_string)
        .collect();
    words.sort();
    words
}

/// Written while linked, so that both nodes start from the same collections.
fn write_before_the_cut(pair: &Pair) {
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    a.cmd(&["SADD", "s", "m", "x"]);
    a.cmd(&["HSET", "h", "f", "1", "g", "1", "keep", "1"]);
    a.cmd(&["ZADD", "z", "1", "m", "2", "x"]);
    a.cmd(&["SADD", "gone", "e1"]);
    a.cmd(&["SADD", "aw", "m", "seen"]);
    a.cmd(&["HSET", "awh", "f", "1", "seen", "1"]);
    a.cmd(&["ZADD", "awz", "1", "m", "1", "seen"]);
    a.cmd(&["SET", "synced", "1"]);
    wait_for("the collections to reach B", || {
        b.cmd(&["GET", "synced"]) == b"$1\r\n1\r\n"
    });
}

/// Writes made apart, each pair of racing writes ordered in time (the later one
/// a few milliseconds after), so that every node knows which came last.
fn write_during_the_cut(pair: &Pair) {
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    let later = || std::thread::sleep(Duration::from_millis(5));
    // A removal on one side, a later add of the same element on the other.
    assert_eq!(a.cmd(&["SREM", "s", "m"]), b":1\r\n");
    assert_eq!(a.cmd(&["HDEL", "h", "f"]), b":1\r\n");
    assert_eq!(a.cmd(&["ZREM", "z", "m"]), b":1\r\n");
    later();
    assert_eq!(b.cmd(&["SADD", "s", "m"]), b":0\r\n");
    assert_eq!(b.cmd(&["HSET", "h", "f", "2"]), b":0\r\n");
    assert_eq!(b.cmd(&["ZADD", "z", "5", "m"]), b":0\r\n");
    // An add on one side, then a removal on the other that never saw it: the
    // add wins, though the removal came later. The removal of what both sides
    // saw, with no add since, stands.
    assert_eq!(b.cmd(&["SADD", "aw", "m"]), b":0\r\n");
    assert_eq!(b.cmd(&["HSET", "awh", "f", "2"]), b":0\r\n");
    assert_eq!(b.cmd(&["ZADD", "awz", "2", "m"]), b":0\r\n");
    later();
    assert_eq!(a.cmd(&["SREM", "aw", "m", "seen"]), b":2\r\n");
    assert_eq!(a.cmd(&["HDEL", "awh", "f", "seen"]), b":2\r\n");
    assert_eq!(a.cmd(&["ZREM", "awz", "m", "seen"]), b":2\r\n");
    // Different elements added on each side: all stay.
    a.cmd(&["SADD", "s", "from-a"]);
    b.cmd(&["SADD", "s", "from-b"]);
    a.cmd(&["HSET", "h", "fa", "1"]);
    b.cmd(&["HSET", "h", "fb", "1"]);
    a.cmd(&["ZADD", "z", "3", "za"]);
    b.cmd(&["ZADD", "z", "4", "zb"]);
    // A removal later than a concurrent add of another element's value.
    a.cmd(&["SREM", "s", "x"]);
    // Values: the last writer's.
    a.cmd(&["HSET", "h", "g", "older"]);
    b.cmd(&["ZADD", "z", "7", "x"]);
    later();
    b.cmd(&["HSET", "h", "g", "newer"]);
    a.cmd(&["ZADD", "z", "9", "x"]);
    // A delete newer than an add drops the key; a type conflict goes to the key's
    // last writer.
    b.cmd(&["SADD", "gone", "e2"]);
    a.cmd(&["SET", "conflict", "string"]);
    later();
    assert_eq!(a.cmd(&["DEL", "gone"]), b":1\r\n");
    b.cmd(&["SADD", "conflict", "member"]);
}

fn check_after_the_heal(pair: &Pair) {
    pair.converge();
    for node in [&pair.a, &pair.b] {
        let mut conn = node.raw();
        assert_eq!(
            words(&conn.cmd(&["SMEMBERS", "s"])),
            ["from-a", "from-b", "m"],
            "{}",
            dump(&mut conn)
        );
        assert_eq!(
            words(&conn.cmd(&["HGETALL", "h"])),
            ["1", "1", "1", "2", "f", "fa", "fb", "g", "keep", "newer"],
            "{}",
            dump(&mut conn)
        );
        assert_eq!(conn.cmd(&["HGET", "h", "f"]), b"$1\r\n2\r\n");
        assert_eq!(conn.cmd(&["HGET", "h", "g"]), b"$5\r\nnewer\r\n");
        assert_eq!(
            conn.cmd(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
            b"*8\r\n$2\r\nza\r\n$1\r\n3\r\n$2\r\nzb\r\n$1\r\n4\r\n$1\r\nm\r\n$1\r\n5\r\n$1\r\nx\r\n$1\r\n9\r\n",
            "{}",
            dump(&mut conn)
        );
        assert_eq!(conn.cmd(&["SMEMBERS", "aw"]), b"*1\r\n$1\r\nm\r\n");
        assert_eq!(
            conn.cmd(&["HGETALL", "awh"]),
            b"*2\r\n$1\r\nf\r\n$1\r\n2\r\n"
        );
        assert_eq!(
            conn.cmd(&["ZRANGE", "awz", "0", "-1", "WITHSCORES"]),
            b"*2\r\n$1\r\nm\r\n$1\r\n2\r\n"
        );
        assert_eq!(conn.cmd(&["EXISTS", "gone"]), b":0\r\n");
        assert_eq!(conn.cmd(&["TYPE", "conflict"]), b"+set\r\n");
        assert_eq!(
            conn.cmd(&["SMEMBERS", "conflict"]),
            b"*1\r\n$6\r\nmember\r\n"
        );
    }
}

#[test]
fn collections_written_apart_merge_element_by_element_after_a_partial_resync() {
    let pair = Pair::start(&[]);
    write_before_the_cut(&pair);
    pair.cut();
    write_during_the_cut(&pair);
    let mut a = pair.a.raw();
    let (full_before, partial_before) = (
        a.info_field("stats", "sync_full"),
        a.info_field("stats", "sync_partial_ok"),
    );
    pair.heal();
    check_after_the_heal(&pair);
    assert_eq!(a.info_field("stats", "sync_full"), full_before);
    assert_ne!(a.info_field("stats", "sync_partial_ok"), partial_before);
}

#[test]
fn collections_written_apart_merge_element_by_element_through_a_full_sync() {
    // A backlog far smaller than what is written during the cut: the heal cannot
    // be a partial resync.
    let pair = Pair::start(&["--repl-backlog-size", "16kb"]);
    write_before_the_cut(&pair);
    pair.cut();
    write_during_the_cut(&pair);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    let filler = "v".repeat(1024);
    for i in 0..100 {
        a.cmd(&["SET", &format!("a:{i}"), &filler]);
        b.cmd(&["SET", &format!("b:{i}"), &filler]);
    }
    let (full_a, full_b) = (
        a.info_field("stats", "sync_full"),
        b.info_field("stats", "sync_full"),
    );
    pair.heal();
    check_after_the_heal(&pair);
    assert_ne!(a.info_field("stats", "sync_full"), full_a, "a full sync");
    assert_ne!(b.info_field("stats", "sync_full"), full_b, "a full sync");
}

#[test]
fn element_timestamps_go_once_no_peer_can_send_anything_older() {
    let pair = Pair::start(&[]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    let members: Vec<String> = (0..100).map(|i| format!("m{i}")).collect();
    let mut sadd = vec!["SADD", "s"];
    sadd.extend(members.iter().map(String::as_str));
    assert_eq!(a.cmd(&sadd), b":100\r\n");
    a.cmd(&["HSET", "h", "f", "1"]);
    a.cmd(&["HDEL", "h", "f"]);
    let held = |conn: &mut RawConn| {
        (
            conn.info_field("replication", "active_replica_element_collections"),
            conn.info_field("replication", "active_replica_element_marks"),
        )
    };
    // The hash emptied by HDEL keeps its field's tombstone.
    let marked = ("2".to_string(), "101".to_string());
    assert_eq!(held(&mut a), marked);
    wait_for("B to mark the same", || held(&mut b) == marked);
    support::wait_for_within(Duration::from_secs(30), "the timestamps to go", || {
        held(&mut a) == ("0".to_string(), "0".to_string())
            && held(&mut b) == ("0".to_string(), "0".to_string())
    });
    pair.converge();
}

/// Element writes of every kind (SPOP's and SMOVE's removals travel inside a
/// transaction, with what they saw) on both nodes, with random cuts and heals.
#[test]
fn random_collection_writes_with_random_partitions_converge() {
    // KVIK_ACTIVE_SEED=<n> replays another mix.
    let (mut rng, seed) = Lcg::seeded(0x656c_656d);
    let pair = Pair::start(&["--repl-backlog-size", "16kb"]);
    let mut conns = [pair.a.raw(), pair.b.raw()];
    // Members that stay: added (on one side only) and never removed anywhere.
    let mut kept = Vec::new();
    for round in 0..5 {
        let partitioned = rng.below(3) != 0;
        if partitioned {
            pair.cut();
        }
        for op in 0..250 {
            let side = rng.below(2) as usize;
            let n = rng.below(3);
            let (set, hash, zset) = (format!("s{n}"), format!("h{n}"), format!("z{n}"));
            let element = format!("e{}", rng.below(6));
            let value = rng.below(100).to_string();
            let conn = &mut conns[side];
            match rng.below(16) {
                0..=2 => conn.cmd(&["SADD", &set, &element]),
                3 | 4 => conn.cmd(&["SREM", &set, &element]),
                5 | 6 => conn.cmd(&["HSET", &hash, &element, &value]),
                7 => conn.cmd(&["HDEL", &hash, &element]),
                8 | 9 => conn.cmd(&["ZADD", &zset, &value, &element]),
                10 => conn.cmd(&["ZREM", &zset, &element]),
                11 => conn.cmd(&["ZADD", &zset, "GT", &value, &element]),
                12 => conn.cmd(&["SPOP", &set]),
                13 => conn.cmd(&["SMOVE", &set, &format!("s{}", (n + 1) % 3), &element]),
                14 => conn.cmd(&["SPOP", &set, "2"]),
                _ => {
                    // A member only this write adds: it must stay.
                    let unique = format!("u{round}:{op}");
                    kept.push(unique.clone());
                    conn.cmd(&["SADD", "kept", &unique])
                }
            };
        }
        // A long partition sometimes: more than the 16 KB backlog holds.
        if partitioned && rng.below(2) == 0 {
            overflow_backlogs(&mut conns, round);
        }
        if partitioned {
            pair.heal();
        }
        pair.converge();
    }
    kept.sort();
    for conn in conns.iter_mut() {
        assert_eq!(
            words(&conn.cmd(&["SMEMBERS", "kept"])),
            kept,
            "seed {seed:#x}: every member added on either side stays"
        );
    }
}

/// A STORE command reads its sources: their element timestamps stay. A removal
/// made after one still saw only the adds it saw, and an add on the other side
/// that it never saw stays.
#[test]
fn a_store_reading_a_set_leaves_its_element_timestamps() {
    let pair = Pair::start(&[]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    a.cmd(&["SADD", "s", "m", "x"]);
    wait_for("the set to reach B", || {
        b.cmd(&["SISMEMBER", "s", "x"]) == b":1\r\n"
    });
    pair.cut();
    // A re-adds m; then B writes the set, reads it into another key, and removes
    // m: its removal saw only the first add of m.
    assert_eq!(a.cmd(&["SADD", "s", "m"]), b":0\r\n");
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(b.cmd(&["SADD", "s", "y"]), b":1\r\n");
    assert_eq!(b.cmd(&["SINTERSTORE", "copy", "s", "s"]), b":3\r\n");
    assert_eq!(b.cmd(&["SREM", "s", "m"]), b":1\r\n");
    pair.heal();
    pair.converge();
    assert_eq!(
        words(&a.cmd(&["SMEMBERS", "s"])),
        ["m", "x", "y"],
        "{}",
        dump(&mut a)
    );
    // DEBUG ELEMENTS shows the marks: the key's timestamp first, then one line
    // per element.
    let marks = String::from_utf8_lossy(&a.cmd(&["DEBUG", "ELEMENTS", "s"])).into_owned();
    assert!(marks.starts_with("*4\r\n"), "{marks}");
    assert!(marks.contains("\r\nm added "), "{marks}");
    assert_eq!(a.cmd(&["DEBUG", "ELEMENTS", "nothing"]), b"$-1\r\n");
}

/// A peer's write of two keys (SMOVE's removal and add) met here where one key is
/// newer than it: that key keeps its newer timestamp, and the other takes the
/// write's own, as on the node that made it; never the first key's.
#[test]
fn a_peers_move_stamps_each_key_as_its_origin_did() {
    let pair = Pair::start(&[]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    a.cmd(&["SADD", "from", "m", "n"]);
    wait_for("the set to reach B", || {
        b.cmd(&["SISMEMBER", "from", "n"]) == b":1\r\n"
    });
    pair.cut();
    assert_eq!(a.cmd(&["SMOVE", "from", "to", "m"]), b":1\r\n");
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(b.cmd(&["SADD", "from", "later"]), b":1\r\n");
    pair.heal();
    pair.converge();
    let key_ts = |conn: &mut RawConn, key: &str| {
        let marks = String::from_utf8_lossy(&conn.cmd(&["DEBUG", "ELEMENTS", key])).into_owned();
        marks.split("\r\n").nth(2).unwrap_or_default().to_string()
    };
    for key in ["from", "to"] {
        assert_eq!(key_ts(&mut a, key), key_ts(&mut b, key), "{key}");
    }
}

/// A TTL change leaves a collection's value: its element marks stay current and
/// follow the key's new timestamp, so the set goes on merging element by element.
#[test]
fn a_ttl_change_keeps_a_sets_element_marks() {
    let pair = Pair::start(&[]);
    let mut a = pair.a.raw();
    a.cmd(&["SADD", "s", "m", "x"]);
    assert_eq!(a.cmd(&["EXPIRE", "s", "1000"]), b":1\r\n");
    let marks = String::from_utf8_lossy(&a.cmd(&["DEBUG", "ELEMENTS", "s"])).into_owned();
    let lines: Vec<&str> = marks.split("\r\n").collect();
    assert_eq!(lines[0], "*3", "{marks}");
    let (key_ts, newest) = lines[2]
        .split_once(" base:")
        .and_then(|(key_ts, rest)| Some((key_ts, rest.split_once(" newest:")?.1)))
        .expect("the header line");
    assert_eq!(key_ts.trim_start_matches("key-ts:"), newest, "{marks}");
}

/// The deadline of `key` (PEXPIRETIME) once both nodes agree on it.
fn deadline_agreed(pair: &Pair, key: &str) -> i64 {
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    let deadline = |conn: &mut RawConn| {
        let reply = String::from_utf8_lossy(&conn.cmd(&["PEXPIRETIME", key])).into_owned();
        reply
            .trim_start_matches(':')
            .trim_end()
            .parse::<i64>()
            .unwrap()
    };
    let mut agreed = 0;
    support::wait_for_within(Duration::from_secs(20), "the deadlines to agree", || {
        agreed = deadline(&mut a);
        agreed == deadline(&mut b)
    });
    agreed
}

/// A pair whose backlog a partition overflows (`full_sync`: it heals by a full
/// sync), or one with the default backlog (a partial resync).
fn start_pair(full_sync: bool) -> Pair {
    let backlog: &[&str] = if full_sync {
        &["--repl-backlog-size", "16kb"]
    } else {
        &[]
    };
    Pair::start(backlog)
}

/// A collection's TTL is a register of its own beside its elements: an element
/// write on one side of a partition, later than a TTL change on the other, must
/// not make that change lose to it (PERSIST still beats every TTL, the longest
/// TTL still wins), whether the heal is a partial resync or a full sync.
fn element_writes_leave_the_ttl_register(full_sync: bool) {
    let pair = start_pair(full_sync);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    let later = || std::thread::sleep(Duration::from_millis(5));
    a.cmd(&["SADD", "persisted", "m"]);
    assert_eq!(a.cmd(&["EXPIRE", "persisted", "500"]), b":1\r\n");
    a.cmd(&["SADD", "longest", "m"]);
    a.cmd(&["HSET", "h", "f", "1"]);
    pair.converge();
    pair.cut();
    assert_eq!(a.cmd(&["PERSIST", "persisted"]), b":1\r\n");
    assert_eq!(a.cmd(&["EXPIRE", "longest", "1000"]), b":1\r\n");
    assert_eq!(a.cmd(&["EXPIRE", "h", "1000"]), b":1\r\n");
    later();
    assert_eq!(b.cmd(&["SADD", "persisted", "n"]), b":1\r\n");
    assert_eq!(b.cmd(&["EXPIRE", "longest", "100"]), b":1\r\n");
    assert_eq!(b.cmd(&["SADD", "longest", "n"]), b":1\r\n");
    assert_eq!(b.cmd(&["HSET", "h", "g", "2"]), b":1\r\n");
    let full_before = a.info_field("stats", "sync_full");
    if full_sync {
        overflow_backlogs(&mut [pair.a.raw(), pair.b.raw()], 0);
    }
    pair.heal();
    pair.converge();
    assert_eq!(
        a.info_field("stats", "sync_full") != full_before,
        full_sync,
        "the heal's kind"
    );
    assert_eq!(
        deadline_agreed(&pair, "persisted"),
        -1,
        "PERSIST beats a TTL"
    );
    for key in ["longest", "h"] {
        let left = deadline_agreed(&pair, key) - now_ms();
        assert!(left > 900_000, "{key}: {left} ms left, not the 1000 s");
    }
    for conn in [&mut a, &mut b] {
        assert_eq!(conn.cmd(&["SCARD", "persisted"]), b":2\r\n");
        assert_eq!(conn.cmd(&["SCARD", "longest"]), b":2\r\n");
        assert_eq!(conn.cmd(&["HLEN", "h"]), b":2\r\n");
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn element_writes_leave_the_ttl_register_after_a_partial_resync() {
    element_writes_leave_the_ttl_register(false);
}

#[test]
fn element_writes_leave_the_ttl_register_through_a_full_sync() {
    element_writes_leave_the_ttl_register(true);
}

/// A collection emptied by element writes on one side and written again the same
/// way is the same collection (its elements merge add-wins with the other
/// side's): its TTL register stays under its grave, merges the other side's TTL
/// changes there, and the collection gets its deadline back.
fn an_emptied_collection_keeps_its_ttl_register(full_sync: bool) {
    let pair = start_pair(full_sync);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    let later = || std::thread::sleep(Duration::from_millis(5));
    for key in ["longest", "persisted", "emptied"] {
        a.cmd(&["SADD", key, "m"]);
        assert_eq!(a.cmd(&["EXPIRE", key, "500"]), b":1\r\n");
    }
    pair.converge();
    pair.cut();
    assert_eq!(a.cmd(&["EXPIRE", "longest", "1000"]), b":1\r\n");
    assert_eq!(a.cmd(&["PERSIST", "persisted"]), b":1\r\n");
    assert_eq!(a.cmd(&["SADD", "emptied", "n"]), b":1\r\n");
    later();
    for key in ["longest", "persisted"] {
        assert_eq!(b.cmd(&["SREM", key, "m"]), b":1\r\n");
        assert_eq!(b.cmd(&["EXISTS", key]), b":0\r\n");
        assert_eq!(b.cmd(&["SADD", key, "n"]), b":1\r\n");
    }
    // Persisted, then emptied: the PERSIST waits under the grave.
    assert_eq!(b.cmd(&["PERSIST", "emptied"]), b":1\r\n");
    assert_eq!(b.cmd(&["SREM", "emptied", "m"]), b":1\r\n");
    if full_sync {
        overflow_backlogs(&mut [pair.a.raw(), pair.b.raw()], 0);
    }
    pair.heal();
    pair.converge();
    let left = deadline_agreed(&pair, "longest") - now_ms();
    assert!(left > 900_000, "{left} ms left, not the 1000 s");
    for key in ["persisted", "emptied"] {
        assert_eq!(
            deadline_agreed(&pair, key),
            -1,
            "{key}: PERSIST beats a TTL"
        );
    }
    for conn in [&mut a, &mut b] {
        for key in ["longest", "persisted", "emptied"] {
            assert_eq!(words(&conn.cmd(&["SMEMBERS", key])), ["n"], "{key}");
        }
    }
}

#[test]
fn an_emptied_collection_keeps_its_ttl_register_after_a_partial_resync() {
    an_emptied_collection_keeps_its_ttl_register(false);
}

#[test]
fn an_emptied_collection_keeps_its_ttl_register_through_a_full_sync() {
    an_emptied_collection_keeps_its_ttl_register(true);
}

/// A key a full sync brings to a node that did not have it comes with its TTL
/// register: a TTL change made there afterwards merges as on the node that sent
/// it (here a shorter EXPIRE answers 0 on both, and both keep the longer TTL).
#[test]
fn a_key_a_full_sync_brings_comes_with_its_ttl_register() {
    let pair = Pair::start(&["--repl-backlog-size", "16kb"]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    pair.cut();
    a.cmd(&["SADD", "s", "m"]);
    a.cmd(&["SET", "k", "v"]);
    for key in ["s", "k"] {
        assert_eq!(a.cmd(&["EXPIRE", key, "1000"]), b":1\r\n");
    }
    overflow_backlogs(&mut [pair.a.raw(), pair.b.raw()], 0);
    let full_before = b.info_field("stats", "sync_full");
    pair.heal();
    pair.converge();
    assert_ne!(
        b.info_field("stats", "sync_full"),
        full_before,
        "a full sync"
    );
    for key in ["s", "k"] {
        assert_eq!(b.cmd(&["EXPIRE", key, "100"]), b":0\r\n", "{key}");
        let left = deadline_agreed(&pair, key) - now_ms();
        assert!(left > 900_000, "{key}: {left} ms left, not the 1000 s");
    }
}
