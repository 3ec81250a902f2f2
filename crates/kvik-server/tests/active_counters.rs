//! Active replication's counters: every counting command (INCR and its kin,
//! INCRBYFLOAT, HINCRBY, HINCRBYFLOAT, ZINCRBY) merges as a counter. Increments
//! made on both sides of a partition add up on both nodes, whether the heal is a
//! partial resync (the streams are exchanged) or a full sync (the states are
//! merged); float sums end with the same bytes on both; a plain write made after
//! them resets the counter by last writer wins; a removal (HDEL, ZREM, DEL) takes
//! only the increments it saw.

mod support;

use std::time::Duration;
use support::active::Pair;
use support::{wait_for, RawConn};

/// One counting command's case: how to set the counter up, read it, add to it and
/// write it plainly.
struct Case {
    setup: &'static [&'static str],
    read: &'static [&'static str],
    /// What A adds, three times, and B once.
    on_a: &'static [&'static str],
    on_b: &'static [&'static str],
    /// A plain write of the counted key or element, and what it leaves to read.
    reset: &'static [&'static str],
    reset_reads: &'static str,
}

fn text(reply: &[u8]) -> String {
    String::from_utf8_lossy(reply).into_owned()
}

/// The number a reply (integer or bulk) holds.
fn number(reply: &[u8]) -> f64 {
    let reply = text(reply);
    let body = reply.trim_end().rsplit("\r\n").next().unwrap_or("");
    body.trim_start_matches(':').parse().unwrap_or(f64::NAN)
}

/// Write `n` values of 1 KiB on `conn`: more than the backlog holds, so the heal
/// cannot be a partial resync.
fn fill(conn: &mut RawConn, side: &str, n: usize) {
    let filler = "v".repeat(1024);
    for i in 0..n {
        conn.cmd(&["SET", &format!("{side}:{i}"), &filler]);
    }
}

fn full_syncs(conn: &mut RawConn) -> u64 {
    conn.info_field("stats", "sync_full").parse().unwrap()
}

/// Cut the link, run `during` on both sides (A first), heal and wait for the
/// nodes to converge; with `filler` writes per side, the heal must be a full
/// sync.
fn partition(pair: &Pair, filler: usize, during: impl FnOnce(&mut RawConn, &mut RawConn)) {
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    pair.cut();
    during(&mut a, &mut b);
    fill(&mut a, "a", filler);
    fill(&mut b, "b", filler);
    let full_before = full_syncs(&mut a) + full_syncs(&mut b);
    pair.heal();
    pair.converge();
    let full_after = full_syncs(&mut a) + full_syncs(&mut b);
    assert_eq!(
        full_after > full_before,
        filler > 0,
        "a full sync exactly when the writes overflowed the backlog"
    );
}

/// Run `set` on A (its last word the value `read` then gives) and wait until B
/// gives it too; returns the reply `read` gives.
fn set_on_both(a: &mut RawConn, b: &mut RawConn, set: &[&str], read: &[&str]) -> Vec<u8> {
    a.cmd(set);
    let value = set.last().expect("a value");
    let want = format!("${}\r\n{value}\r\n", value.len()).into_bytes();
    wait_for("the value to reach B", || b.cmd(read) == want);
    want
}

/// Both nodes read the same bytes; returns them.
fn same_on_both(pair: &Pair, read: &[&str]) -> Vec<u8> {
    let (x, y) = (pair.a.raw().cmd(read), pair.b.raw().cmd(read));
    assert_eq!(text(&x), text(&y), "{read:?}");
    x
}

/// On a pair that can overflow its backlog: `set` runs (its last word the value
/// `read` then gives) and reaches both nodes, then `during` runs under a cut;
/// healed by a partial resync, then again by a full sync, both nodes give
/// `want` to `read`. Returns the pair.
fn crossing_ends_on_both(
    (set, read): (&[&str], &[&str]),
    during: impl Fn(&mut RawConn, &mut RawConn),
    want: &str,
) -> Pair {
    let pair = Pair::start(&["--repl-backlog-size", "16kb"]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    for filler in [0, 200] {
        set_on_both(&mut a, &mut b, set, read);
        partition(&pair, filler, &during);
        let got = text(&same_on_both(&pair, read));
        assert_eq!(got, want, "{filler} filler writes");
    }
    pair
}

/// The increments of both sides add up after a partial resync and after a full
/// sync, and a plain write made after an increment resets the counter.
fn counts_through_partitions(case: &Case, expected_gain: f64) {
    let pair = Pair::start(&["--repl-backlog-size", "16kb"]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    a.cmd(case.setup);
    wait_for("the setup to reach B", || {
        b.cmd(case.read) == a.cmd(case.read)
    });
    for filler in [0, 200] {
        let before = number(&a.cmd(case.read));
        partition(&pair, filler, |a, b| {
            for _ in 0..3 {
                a.cmd(case.on_a);
            }
            b.cmd(case.on_b);
        });
        let after = number(&same_on_both(&pair, case.read));
        assert!(
            (after - before - expected_gain).abs() < 1e-9,
            "{:?} after {filler} filler writes: {before} -> {after}",
            case.on_a
        );
    }
    for filler in [0, 200] {
        a.cmd(case.setup);
        partition(&pair, filler, |a, b| {
            b.cmd(case.on_b);
            std::thread::sleep(Duration::from_millis(5));
            a.cmd(case.reset);
        });
        let reads = text(&same_on_both(&pair, case.read));
        assert_eq!(reads, case.reset_reads, "{filler} filler writes");
    }
}

#[test]
fn seed_004_case_1_increments_on_both_sides_give_five_on_both() {
    let pair = Pair::start(&[]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    for filler in [0, 4000] {
        assert_eq!(a.cmd(&["SET", "k", "1"]), b"+OK\r\n");
        wait_for("k to reach B", || b.cmd(&["GET", "k"]) == b"$1\r\n1\r\n");
        partition(&pair, filler, |a, b| {
            for n in 2..=4 {
                assert_eq!(a.cmd(&["INCR", "k"]), format!(":{n}\r\n").into_bytes());
            }
            assert_eq!(b.cmd(&["INCR", "k"]), b":2\r\n");
        });
        for conn in [&mut a, &mut b] {
            assert_eq!(
                conn.cmd(&["GET", "k"]),
                b"$1\r\n5\r\n",
                "{filler} filler writes"
            );
        }
    }
}

#[test]
fn incrby_and_decrby_merge_as_counters() {
    counts_through_partitions(
        &Case {
            setup: &["SET", "n", "10"],
            read: &["GET", "n"],
            on_a: &["INCRBY", "n", "7"],
            on_b: &["DECRBY", "n", "2"],
            reset: &["SET", "n", "100"],
            reset_reads: "$3\r\n100\r\n",
        },
        19.0,
    );
}

#[test]
fn incrbyfloat_merges_as_a_counter_with_the_same_bytes_on_both() {
    counts_through_partitions(
        &Case {
            setup: &["SET", "f", "1.5"],
            read: &["GET", "f"],
            on_a: &["INCRBYFLOAT", "f", "0.1"],
            on_b: &["INCRBYFLOAT", "f", "0.7"],
            reset: &["SET", "f", "2.5"],
            reset_reads: "$3\r\n2.5\r\n",
        },
        1.0,
    );
}

#[test]
fn hincrby_merges_each_field_as_a_counter() {
    counts_through_partitions(
        &Case {
            setup: &["HSET", "h", "f", "1", "other", "x"],
            read: &["HGET", "h", "f"],
            on_a: &["HINCRBY", "h", "f", "3"],
            on_b: &["HINCRBY", "h", "f", "-1"],
            reset: &["HSET", "h", "f", "42"],
            reset_reads: "$2\r\n42\r\n",
        },
        8.0,
    );
}

#[test]
fn hincrbyfloat_merges_each_field_as_a_counter_with_the_same_bytes_on_both() {
    counts_through_partitions(
        &Case {
            setup: &["HSET", "h", "f", "0.3", "other", "x"],
            read: &["HGET", "h", "f"],
            on_a: &["HINCRBYFLOAT", "h", "f", "0.1"],
            on_b: &["HINCRBYFLOAT", "h", "f", "1.3"],
            reset: &["HSET", "h", "f", "7.25"],
            reset_reads: "$4\r\n7.25\r\n",
        },
        1.6,
    );
}

#[test]
fn zincrby_merges_each_member_as_a_counter_with_the_same_score_on_both() {
    counts_through_partitions(
        &Case {
            setup: &["ZADD", "z", "0.3", "m", "5", "other"],
            read: &["ZSCORE", "z", "m"],
            on_a: &["ZINCRBY", "z", "0.1", "m"],
            on_b: &["ZINCRBY", "z", "1.3", "m"],
            reset: &["ZADD", "z", "9", "m"],
            reset_reads: "$1\r\n9\r\n",
        },
        1.6,
    );
}

#[test]
fn a_reset_that_arrives_after_later_increments_keeps_only_those() {
    // A adds 5, B's reset comes next, then A adds 3 more; A meets the reset
    // only when the partition heals (a partial resync, then a full sync). The
    // reset wins over the first increment and the later one counts on it, on
    // both nodes, as on a node that met the reset first.
    let pair = Pair::start(&["--repl-backlog-size", "16kb"]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    let resets: [(&[&str], &str); 3] = [
        (&["SET", "c", "100"], "$3\r\n103\r\n"),
        (&["SETEX", "c", "500", "100"], "$3\r\n103\r\n"),
        (&["DEL", "c"], "$1\r\n3\r\n"),
    ];
    for filler in [0, 200] {
        for (reset, reads) in resets {
            set_on_both(&mut a, &mut b, &["SET", "c", "0"], &["GET", "c"]);
            partition(&pair, filler, |a, b| {
                a.cmd(&["INCRBY", "c", "5"]);
                std::thread::sleep(Duration::from_millis(3));
                b.cmd(reset);
                std::thread::sleep(Duration::from_millis(3));
                a.cmd(&["INCRBY", "c", "3"]);
            });
            let got = text(&same_on_both(&pair, &["GET", "c"]));
            assert_eq!(got, reads, "{reset:?}, {filler} filler writes");
            let ttl = text(&same_on_both(&pair, &["PEXPIRETIME", "c"]));
            assert_eq!(ttl == ":-1\r\n", reset[0] != "SETEX", "{reset:?}: {ttl}");
        }
    }
}

#[test]
fn an_increment_a_reset_would_refuse_counts_on_the_later_reset_it_crossed() {
    // B writes "628.5" (a value INCRBY refuses) and then SETEX 748 while A,
    // cut off, increments later on its own integer. A meets B's first write
    // under its increment, then the SETEX (newer than that write, older than
    // the increment): the increment counts on the SETEX's value on both nodes,
    // as on B, which met the SETEX first. A once refused it on "628.5" and
    // forgot it, ending with 748 while B held 750.
    let pair = Pair::start(&["--repl-backlog-size", "16kb"]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    for filler in [0, 200] {
        set_on_both(&mut a, &mut b, &["SET", "c", "10"], &["GET", "c"]);
        partition(&pair, filler, |a, b| {
            b.cmd(&["SET", "c", "628.5"]);
            std::thread::sleep(Duration::from_millis(3));
            b.cmd(&["SETEX", "c", "500", "748"]);
            std::thread::sleep(Duration::from_millis(3));
            assert_eq!(a.cmd(&["INCRBY", "c", "2"]), b":12\r\n");
        });
        let got = text(&same_on_both(&pair, &["GET", "c"]));
        assert_eq!(got, "$3\r\n750\r\n", "{filler} filler writes");
        let ttl = text(&same_on_both(&pair, &["PEXPIRETIME", "c"]));
        assert_ne!(ttl, ":-1\r\n", "the SETEX's deadline");
    }
}

#[test]
fn an_increment_that_crossed_a_value_holding_no_number_counts_on_the_later_reset() {
    // B writes "abc" and then 748 while A, cut off, increments later on its
    // own integer. A meets "abc" under its increment, which waits there, then
    // the 748 (newer than "abc", older than the increment): the increment
    // counts on it on both nodes, as on B, which met the 748 first. A once
    // refused it on "abc" and forgot it, ending with 748 while B held 750.
    let pair = crossing_ends_on_both(
        (&["SET", "c", "10"], &["GET", "c"]),
        |a, b| {
            b.cmd(&["SET", "c", "abc"]);
            std::thread::sleep(Duration::from_millis(3));
            b.cmd(&["SET", "c", "748"]);
            std::thread::sleep(Duration::from_millis(3));
            assert_eq!(a.cmd(&["INCRBY", "c", "2"]), b":12\r\n");
        },
        "$3\r\n750\r\n",
    );
    let mut a = pair.a.raw();
    // On the node that runs it, INCR still refuses a value that holds no
    // number, as in Redis, and writes nothing.
    a.cmd(&["SET", "c", "abc"]);
    assert_eq!(
        a.cmd(&["INCR", "c"]),
        b"-ERR value is not an integer or out of range\r\n"
    );
    assert_eq!(a.cmd(&["GET", "c"]), b"$3\r\nabc\r\n");
}

#[test]
fn a_field_increment_that_crossed_a_field_holding_no_number_ends_alike() {
    // The same with a hash field: a field's plain write older than an increment
    // does not go under it, whether it holds a number or not. A drops B's
    // "abc" and 748, older than its HINCRBY, and writes the field again as it
    // holds it, a fresh HSET that B takes over the 750 it counted: both end
    // with A's 12.
    crossing_ends_on_both(
        (&["HSET", "h", "f", "10"], &["HGET", "h", "f"]),
        |a, b| {
            b.cmd(&["HSET", "h", "f", "abc"]);
            std::thread::sleep(Duration::from_millis(3));
            b.cmd(&["HSET", "h", "f", "748"]);
            std::thread::sleep(Duration::from_millis(3));
            assert_eq!(a.cmd(&["HINCRBY", "h", "f", "2"]), b":12\r\n");
        },
        "$2\r\n12\r\n",
    );
}

#[test]
fn an_integer_increment_counts_on_a_float_reset_whatever_came_first() {
    // B writes "1.5" and adds 0.5 to it while A, cut off, later adds 2 to its
    // own integer. B counts A's INCRBY on its float sum; A meets B's write under
    // its increment, then B's INCRBYFLOAT: the INCRBY counts on "1.5" there too
    // (as a long double, though INCRBY refuses itself on "1.5"), and both end
    // with 4. A once refused it on "1.5", forgot it, and ended with 2.
    let pair = crossing_ends_on_both(
        (&["SET", "c", "10"], &["GET", "c"]),
        |a, b| {
            b.cmd(&["SET", "c", "1.5"]);
            assert_eq!(b.cmd(&["INCRBYFLOAT", "c", "0.5"]), b"$1\r\n2\r\n");
            std::thread::sleep(Duration::from_millis(3));
            assert_eq!(a.cmd(&["INCRBY", "c", "2"]), b":12\r\n");
        },
        "$1\r\n4\r\n",
    );
    let mut a = pair.a.raw();
    // On the node that runs it, INCRBY still refuses a float, as in Redis.
    assert_eq!(
        a.cmd(&["INCRBY", "c", "1"]),
        b":5\r\n",
        "4 reads as an integer"
    );
    a.cmd(&["SET", "c", "1.5"]);
    assert_eq!(
        a.cmd(&["INCRBY", "c", "1"]),
        b"-ERR value is not an integer or out of range\r\n"
    );
}

#[test]
fn a_field_increment_counts_on_a_field_a_concurrent_float_increment_made_a_float() {
    // A adds 2 to field f while B, cut off, adds 0.5: each node counts the
    // other's increment on the field as it holds it, and both end with 12.5.
    // B once refused A's HINCRBY on its "10.5" (as HINCRBY refuses itself on
    // a float) and kept 10.5 while A held 12.5.
    let pair = crossing_ends_on_both(
        (&["HSET", "h", "f", "10"], &["HGET", "h", "f"]),
        |a, b| {
            assert_eq!(b.cmd(&["HINCRBYFLOAT", "h", "f", "0.5"]), b"$4\r\n10.5\r\n");
            std::thread::sleep(Duration::from_millis(3));
            assert_eq!(a.cmd(&["HINCRBY", "h", "f", "2"]), b":12\r\n");
        },
        "$4\r\n12.5\r\n",
    );
    let mut a = pair.a.raw();
    // On the node that runs it, HINCRBY still refuses a float, as in Redis.
    assert_eq!(
        a.cmd(&["HINCRBY", "h", "f", "1"]),
        b"-ERR hash value is not an integer\r\n"
    );
}

/// A pair with the AOF on and a redis-server replica (which reads plain
/// commands) of node `of`: `set` runs (its last word the value `read` then
/// gives) and reaches everyone, then `during` runs under a cut. Once healed,
/// both nodes, the replica and a reload of that node's AOF give `want` to `read`.
fn aof_and_redis_replica_hold(
    of: usize,
    (set, read): (&[&str], &[&str]),
    during: impl FnOnce(&mut RawConn, &mut RawConn),
    want: &[u8],
) {
    let Some(_) = support::redis_server_or_skip() else {
        return;
    };
    let pair = Pair::start(&["--appendonly", "yes"]);
    let node = [&pair.a, &pair.b][of];
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    let replica = support::RealRedis::start(&[]);
    let mut r = replica.raw();
    let port = node.port().to_string();
    assert_eq!(r.cmd(&["REPLICAOF", "127.0.0.1", &port]), b"+OK\r\n");
    let started = set_on_both(&mut a, &mut b, set, read);
    wait_for("the value to reach the replica", || r.cmd(read) == started);
    partition(&pair, 0, during);
    assert_eq!(same_on_both(&pair, read), want);
    wait_for("the replica to hold the node's value", || {
        r.cmd(read) == want
    });
    let mut conn = node.raw();
    assert_eq!(conn.cmd(&["DEBUG", "LOADAOF"]), b"+OK\r\n");
    assert_eq!(conn.cmd(read), want);
}

#[test]
fn a_late_reset_reaches_the_aof_and_a_redis_replica_with_the_increments_it_went_under() {
    // B's SET comes before A's increment, made on the older value, and reaches
    // A after it, through a partial resync: the increment counts on the SET on
    // both nodes, and neither drops a write of the other (no repair follows).
    // A's AOF and A's replica take B's SET as itself, then the value A counts
    // on it: a reload of the AOF, and the replica, hold 103 as the peers do.
    aof_and_redis_replica_hold(
        0,
        (&["SET", "c", "0"], &["GET", "c"]),
        |a, b| {
            b.cmd(&["SET", "c", "100"]);
            std::thread::sleep(Duration::from_millis(3));
            a.cmd(&["INCRBY", "c", "3"]);
        },
        b"$3\r\n103\r\n",
    );
}

#[test]
fn a_peers_increment_counted_on_a_float_reaches_the_aof_and_a_redis_replica_as_its_value() {
    // B writes "1.5" before A's INCRBY, made on A's integer; B counts the
    // increment on "1.5" (as a long double). B's AOF and B's replica, which
    // would refuse INCRBY on "1.5", take the value it made: a reload of the AOF,
    // and the replica, hold 3.5 as the peers do.
    aof_and_redis_replica_hold(
        1,
        (&["SET", "c", "10"], &["GET", "c"]),
        |a, b| {
            b.cmd(&["SET", "c", "1.5"]);
            std::thread::sleep(Duration::from_millis(3));
            assert_eq!(a.cmd(&["INCRBY", "c", "2"]), b":12\r\n");
        },
        b"$3\r\n3.5\r\n",
    );
}

#[test]
fn an_increment_waiting_on_a_value_holding_no_number_reaches_the_aof_and_a_redis_replica_once_it_counts(
) {
    // A's increment meets B's "abc" under it and waits there, then B's 748
    // under it too, and counts on it: A's AOF and A's replica take B's writes
    // as themselves, each followed by the value A holds then, and hold 750 as
    // the peers do.
    aof_and_redis_replica_hold(
        0,
        (&["SET", "c", "10"], &["GET", "c"]),
        |a, b| {
            b.cmd(&["SET", "c", "abc"]);
            std::thread::sleep(Duration::from_millis(3));
            b.cmd(&["SET", "c", "748"]);
            std::thread::sleep(Duration::from_millis(3));
            assert_eq!(a.cmd(&["INCRBY", "c", "2"]), b":12\r\n");
        },
        b"$3\r\n750\r\n",
    );
}

#[test]
fn a_peers_field_increment_counted_on_a_float_reaches_the_aof_and_a_redis_replica_as_its_value() {
    // The same with a hash field a concurrent HINCRBYFLOAT made a float on B:
    // B's AOF and B's replica take the field's value as HSET.
    aof_and_redis_replica_hold(
        1,
        (&["HSET", "h", "f", "10"], &["HGET", "h", "f"]),
        |a, b| {
            b.cmd(&["HINCRBYFLOAT", "h", "f", "0.5"]);
            std::thread::sleep(Duration::from_millis(3));
            assert_eq!(a.cmd(&["HINCRBY", "h", "f", "2"]), b":12\r\n");
        },
        b"$4\r\n12.5\r\n",
    );
}

#[test]
fn a_zincrby_that_leaves_the_score_counts_for_nobody() {
    // ZINCRBY by 0 writes nothing and reaches no peer, as in Redis (and counts
    // for nobody: `active_random::a_mix_where_a_zrem_and_zincrbys_cross_converges`
    // shows what counting it did). B removes m and counts 3 on nothing while A,
    // which never saw the removal, counts 1 on 5, then 0: A's unseen increment
    // keeps m, and the removal takes only the 5 it saw: both end with 4.
    let pair = Pair::start(&[]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    a.cmd(&["ZADD", "z", "5", "m", "1", "n"]);
    wait_for("z to reach B", || {
        b.cmd(&["ZSCORE", "z", "m"]) == b"$1\r\n5\r\n"
    });
    partition(&pair, 0, |a, b| {
        b.cmd(&["ZREM", "z", "m"]);
        std::thread::sleep(Duration::from_millis(3));
        b.cmd(&["ZINCRBY", "z", "3", "m"]);
        std::thread::sleep(Duration::from_millis(3));
        a.cmd(&["ZINCRBY", "z", "1", "m"]);
        std::thread::sleep(Duration::from_millis(3));
        let offset = a.info_field("replication", "master_repl_offset");
        assert_eq!(a.cmd(&["ZINCRBY", "z", "0", "m"]), b"$1\r\n6\r\n");
        assert_eq!(a.info_field("replication", "master_repl_offset"), offset);
    });
    assert_eq!(same_on_both(&pair, &["ZSCORE", "z", "m"]), b"$1\r\n4\r\n");
}

#[test]
fn a_removal_crossing_increments_it_did_not_see_takes_only_those_it_saw() {
    // f holds 10 on both. Apart, A adds 1 to it, then B adds 2; A removes it
    // (having seen its own add, not B's), then adds 4; B adds 8. The removal
    // takes the 10 and A's 1, not B's 2 (older than the removal, never seen by
    // it): both nodes end with 2 + 4 + 8, however they heal. g: B's add of 3
    // crosses A's removal, and nothing counts after it: g stays, holding 3. The
    // same for a sorted set's members.
    let pair = Pair::start(&["--repl-backlog-size", "16kb"]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    for filler in [0, 200] {
        a.cmd(&["HSET", "h", "f", "10", "g", "10"]);
        a.cmd(&["ZADD", "z", "10", "m", "10", "n"]);
        wait_for("h and z to reach B", || {
            b.cmd(&["HGET", "h", "g"]) == b"$2\r\n10\r\n"
                && b.cmd(&["ZSCORE", "z", "n"]) == b"$2\r\n10\r\n"
        });
        let step = || std::thread::sleep(Duration::from_millis(3));
        partition(&pair, filler, |a, b| {
            assert_eq!(a.cmd(&["HINCRBY", "h", "f", "1"]), b":11\r\n");
            a.cmd(&["ZINCRBY", "z", "1", "m"]);
            step();
            b.cmd(&["HINCRBY", "h", "f", "2"]);
            b.cmd(&["HINCRBY", "h", "g", "3"]);
            b.cmd(&["ZINCRBY", "z", "2", "m"]);
            b.cmd(&["ZINCRBY", "z", "3", "n"]);
            step();
            assert_eq!(a.cmd(&["HDEL", "h", "f", "g"]), b":2\r\n");
            assert_eq!(a.cmd(&["ZREM", "z", "m", "n"]), b":2\r\n");
            assert_eq!(a.cmd(&["HINCRBY", "h", "f", "4"]), b":4\r\n");
            a.cmd(&["ZINCRBY", "z", "4", "m"]);
            step();
            assert_eq!(b.cmd(&["HINCRBY", "h", "f", "8"]), b":20\r\n");
            b.cmd(&["ZINCRBY", "z", "8", "m"]);
        });
        let heal = if filler == 0 {
            "partial resync"
        } else {
            "full sync"
        };
        let reads: [(&[&str], &str); 4] = [
            (&["HGET", "h", "f"], "$2\r\n14\r\n"),
            (&["HGET", "h", "g"], "$1\r\n3\r\n"),
            (&["ZSCORE", "z", "m"], "$2\r\n14\r\n"),
            (&["ZSCORE", "z", "n"], "$1\r\n3\r\n"),
        ];
        for (read, expected) in reads {
            assert_eq!(
                text(&same_on_both(&pair, read)),
                expected,
                "{read:?} ({heal})"
            );
        }
    }
}

#[test]
fn a_delete_crossing_increments_takes_only_those_older_than_it() {
    // h holds f = 10 on both. Apart, A adds 1 to f; B deletes h (a removal of
    // the whole hash sees every write older than itself); A adds 4 to f and 2
    // to g, a field it had set before the delete. Only the increments newer
    // than the delete stay, counted on nothing: f = 4 and g = 2 on both, however
    // they heal.
    let pair = Pair::start(&["--repl-backlog-size", "16kb"]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    for filler in [0, 200] {
        a.cmd(&["HSET", "h", "f", "10", "g", "5"]);
        wait_for("h to reach B", || {
            b.cmd(&["HGET", "h", "g"]) == b"$1\r\n5\r\n"
        });
        let step = || std::thread::sleep(Duration::from_millis(3));
        partition(&pair, filler, |a, b| {
            assert_eq!(a.cmd(&["HINCRBY", "h", "f", "1"]), b":11\r\n");
            step();
            assert_eq!(b.cmd(&["DEL", "h"]), b":1\r\n");
            step();
            assert_eq!(a.cmd(&["HINCRBY", "h", "f", "4"]), b":15\r\n");
            assert_eq!(a.cmd(&["HINCRBY", "h", "g", "2"]), b":7\r\n");
        });
        let heal = if filler == 0 {
            "partial resync"
        } else {
            "full sync"
        };
        let reads: [(&[&str], &str); 3] = [
            (&["HGET", "h", "f"], "$1\r\n4\r\n"),
            (&["HGET", "h", "g"], "$1\r\n2\r\n"),
            (&["HLEN", "h"], ":2\r\n"),
        ];
        for (read, expected) in reads {
            assert_eq!(
                text(&same_on_both(&pair, read)),
                expected,
                "{read:?} ({heal})"
            );
        }
    }
}

/// How a counter starts, before the cut.
#[derive(Clone, Copy)]
enum Setup {
    /// `SET c 1`.
    Plain,
    /// `SET c 1`, then a TTL of 1000 s.
    WithTtl,
}

/// `setup` reaches both nodes, then `during` runs under a cut; healed by a
/// partial resync, then again by a full sync, both nodes hold `want` under c
/// and give it the same deadline, which is a deadline exactly when
/// `with_deadline`.
fn counted_across_ttl_changes(
    setup: Setup,
    during: impl Fn(&mut RawConn, &mut RawConn),
    want: &str,
    with_deadline: bool,
) {
    let pair = Pair::start(&["--repl-backlog-size", "16kb"]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    for filler in [0, 200] {
        set_on_both(&mut a, &mut b, &["SET", "c", "1"], &["GET", "c"]);
        if let Setup::WithTtl = setup {
            a.cmd(&["EXPIRE", "c", "1000"]);
            wait_for("the TTL to reach B", || {
                b.cmd(&["PEXPIRETIME", "c"]) == a.cmd(&["PEXPIRETIME", "c"])
            });
        }
        partition(&pair, filler, &during);
        let got = text(&same_on_both(&pair, &["GET", "c"]));
        assert_eq!(got, want, "{filler} filler writes");
        let deadline = number(&same_on_both(&pair, &["PEXPIRETIME", "c"]));
        assert_eq!(deadline > 0.0, with_deadline, "{filler} filler writes");
    }
}

fn step() {
    std::thread::sleep(Duration::from_millis(3));
}

#[test]
fn an_increment_older_than_a_ttl_change_on_the_other_node_counts() {
    // B adds 1 while A, cut off, later gives c a TTL and adds 1: a TTL change
    // is no write of the value, so neither increment resets the other's count.
    // Both once ended at 2, B's increment lost.
    counted_across_ttl_changes(
        Setup::Plain,
        |a, b| {
            assert_eq!(b.cmd(&["INCR", "c"]), b":2\r\n");
            step();
            assert_eq!(a.cmd(&["EXPIRE", "c", "1000"]), b":1\r\n");
            assert_eq!(a.cmd(&["INCR", "c"]), b":2\r\n");
        },
        "$1\r\n3\r\n",
        true,
    );
}

#[test]
fn an_increment_older_than_a_ttl_change_counts_where_the_change_is_the_last_write() {
    counted_across_ttl_changes(
        Setup::Plain,
        |a, b| {
            assert_eq!(b.cmd(&["INCR", "c"]), b":2\r\n");
            step();
            assert_eq!(a.cmd(&["EXPIRE", "c", "1000"]), b":1\r\n");
        },
        "$1\r\n2\r\n",
        true,
    );
}

#[test]
fn an_increment_newer_than_a_ttl_change_counts_on_both_and_keeps_the_ttl() {
    // To the TTL register an increment is no write of the value either: B's,
    // made after A's TTL change without it, leaves the TTL on both.
    counted_across_ttl_changes(
        Setup::Plain,
        |a, b| {
            assert_eq!(a.cmd(&["EXPIRE", "c", "1000"]), b":1\r\n");
            step();
            assert_eq!(b.cmd(&["INCR", "c"]), b":2\r\n");
            step();
            assert_eq!(a.cmd(&["INCR", "c"]), b":2\r\n");
        },
        "$1\r\n3\r\n",
        true,
    );
}

#[test]
fn persist_on_one_node_leaves_the_increments_of_both() {
    counted_across_ttl_changes(
        Setup::WithTtl,
        |a, b| {
            assert_eq!(b.cmd(&["INCRBY", "c", "5"]), b":6\r\n");
            step();
            assert_eq!(a.cmd(&["PERSIST", "c"]), b":1\r\n");
            assert_eq!(a.cmd(&["INCR", "c"]), b":2\r\n");
            step();
            assert_eq!(b.cmd(&["INCR", "c"]), b":7\r\n");
        },
        "$1\r\n8\r\n",
        false,
    );
}

#[test]
fn a_late_reset_under_increments_keeps_the_ttl_change_made_after_it() {
    // B resets c to 10; A, cut off, adds 1 later and then gives c a TTL (and,
    // the second time round, the other way about). The reset reaches A after
    // both: the increment counts on it, and the TTL change, newer than the
    // reset, stays, as on B, which met the reset first.
    for ttl_first in [false, true] {
        counted_across_ttl_changes(
            Setup::Plain,
            |a, b| {
                assert_eq!(b.cmd(&["SET", "c", "10"]), b"+OK\r\n");
                step();
                if ttl_first {
                    assert_eq!(a.cmd(&["EXPIRE", "c", "1000"]), b":1\r\n");
                }
                assert_eq!(a.cmd(&["INCR", "c"]), b":2\r\n");
                if !ttl_first {
                    assert_eq!(a.cmd(&["EXPIRE", "c", "1000"]), b":1\r\n");
                }
            },
            "$2\r\n11\r\n",
            true,
        );
    }
}

#[test]
fn a_ttl_change_made_on_another_value_than_the_later_increments_count_on_ends_alike() {
    // B writes 5 and gives it a TTL; A, cut off, wrote 10 between the two and
    // adds 1 after them: B's TTL change is newer than A's 10, but was made on
    // another value than A's increment counts on. The nodes end alike, value
    // and deadline, whether they heal by their streams or by full syncs.
    let pair = Pair::start(&["--repl-backlog-size", "16kb"]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    for filler in [0, 200] {
        set_on_both(&mut a, &mut b, &["SET", "c", "1"], &["GET", "c"]);
        partition(&pair, filler, |a, b| {
            assert_eq!(b.cmd(&["SET", "c", "5"]), b"+OK\r\n");
            step();
            assert_eq!(a.cmd(&["SET", "c", "10"]), b"+OK\r\n");
            step();
            assert_eq!(b.cmd(&["EXPIRE", "c", "1000"]), b":1\r\n");
            step();
            assert_eq!(a.cmd(&["INCR", "c"]), b":11\r\n");
        });
        // Which copy wins is settled by the repairs the two exchange (a full
        // sync can leave B's key, newer than A's 10, with A's later increment
        // on it: 6 with the TTL; the streams A's 11 without): both nodes hold
        // the same.
        same_on_both(&pair, &["GET", "c"]);
        same_on_both(&pair, &["PEXPIRETIME", "c"]);
    }
}

#[test]
fn an_increment_between_a_reset_and_a_ttl_change_counts_on_the_reset() {
    // B resets c to 5 and, after A's increment (made on A's 1, without the
    // reset), gives c a TTL. The increment is newer than the reset: it counts
    // on 5 (a full sync once kept B's 5 whole, the TTL change being newer than
    // the increment, and lost it).
    counted_across_ttl_changes(
        Setup::Plain,
        |a, b| {
            assert_eq!(b.cmd(&["SET", "c", "5"]), b"+OK\r\n");
            step();
            assert_eq!(a.cmd(&["INCR", "c"]), b":2\r\n");
            step();
            assert_eq!(b.cmd(&["EXPIRE", "c", "1000"]), b":1\r\n");
        },
        "$1\r\n6\r\n",
        true,
    );
}

#[test]
fn a_write_in_place_of_a_counted_string_resets_it_for_the_increments_around_it() {
    // B adds 5 to its 1 and appends "0" to its count: "60". A, cut off, later
    // adds 1 to its own 1. A's copy of the count holds an increment B's does
    // not, so the APPEND applied there would make another value under the same
    // timestamp ("20"), and nothing would mend it: it reaches the peers as the
    // value it made, a reset, which A's later increment counts on and B's
    // earlier one is in.
    let cases: [(&[&str], &str); 2] = [
        (&["APPEND", "c", "0"], "$2\r\n61\r\n"),
        (&["SETRANGE", "c", "0", "9"], "$2\r\n10\r\n"),
    ];
    for (in_place, want) in cases {
        counted_across_ttl_changes(
            Setup::WithTtl,
            |a, b| {
                assert_eq!(b.cmd(&["INCRBY", "c", "5"]), b":6\r\n");
                b.cmd(in_place);
                step();
                assert_eq!(a.cmd(&["INCR", "c"]), b":2\r\n");
            },
            want,
            true,
        );
    }
}

#[test]
fn a_write_in_place_reaches_the_aof_and_a_redis_replica_as_itself() {
    // B's APPEND reaches its peer as the value it made, and B's AOF and B's
    // replica as the APPEND: a reload of the AOF, and the replica, hold what
    // the peers hold once A's later increment counted on it.
    aof_and_redis_replica_hold(
        1,
        (&["SET", "c", "1"], &["GET", "c"]),
        |a, b| {
            assert_eq!(b.cmd(&["INCRBY", "c", "5"]), b":6\r\n");
            assert_eq!(b.cmd(&["APPEND", "c", "0"]), b":2\r\n");
            step();
            assert_eq!(a.cmd(&["INCR", "c"]), b":2\r\n");
        },
        b"$2\r\n61\r\n",
    );
}

#[test]
fn an_increment_older_than_a_write_in_place_goes_under_it() {
    // A adds 1 first; B then adds 5 and appends "0": the APPEND, newer than
    // A's increment, is the value both keep ("60"), with the TTL it kept.
    counted_across_ttl_changes(
        Setup::WithTtl,
        |a, b| {
            assert_eq!(a.cmd(&["INCR", "c"]), b":2\r\n");
            step();
            assert_eq!(b.cmd(&["INCRBY", "c", "5"]), b":6\r\n");
            assert_eq!(b.cmd(&["APPEND", "c", "0"]), b":2\r\n");
        },
        "$2\r\n60\r\n",
        true,
    );
}

/// Wait until neither node keeps a counted state for `key` (DEBUG COUNTED nil):
/// every increment reached every node, and the states settled.
fn settled(pair: &Pair, key: &str) {
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    let nil = b"$-1\r\n";
    wait_for("the counted states to settle on both", || {
        a.cmd(&["DEBUG", "COUNTED", key]) == nil && b.cmd(&["DEBUG", "COUNTED", key]) == nil
    });
}

#[test]
fn a_settled_count_is_kept_no_more_and_counting_goes_on_from_its_value() {
    // Once every node holds every increment of a key, its per-node totals say
    // nothing its value does not: they go (a quiet counter costs what a plain
    // string does), and counting goes on from the value, as from a reset every
    // node holds. Increments on both sides of a cut still add up, healed by a
    // partial resync or by a full sync, and so does a TTL change on one side.
    let pair = Pair::start(&["--repl-backlog-size", "16kb"]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    set_on_both(&mut a, &mut b, &["SET", "c", "10"], &["GET", "c"]);
    for _ in 0..3 {
        a.cmd(&["INCR", "c"]);
    }
    b.cmd(&["INCRBY", "c", "5"]);
    wait_for("both to count every increment", || {
        a.cmd(&["GET", "c"]) == b"$2\r\n18\r\n" && b.cmd(&["GET", "c"]) == b"$2\r\n18\r\n"
    });
    for filler in [0, 200] {
        settled(&pair, "c");
        let before = number(&a.cmd(&["GET", "c"]));
        partition(&pair, filler, |a, b| {
            for _ in 0..3 {
                a.cmd(&["INCR", "c"]);
            }
            b.cmd(&["INCRBY", "c", "2"]);
            // Apart, nothing settles: no peer has acknowledged these.
            assert_ne!(a.cmd(&["DEBUG", "COUNTED", "c"]), b"$-1\r\n");
        });
        let after = number(&same_on_both(&pair, &["GET", "c"]));
        assert_eq!(after - before, 5.0, "{filler} filler writes");
    }
    settled(&pair, "c");
    let before = number(&a.cmd(&["GET", "c"]));
    partition(&pair, 200, |a, b| {
        b.cmd(&["INCR", "c"]);
        step();
        a.cmd(&["EXPIRE", "c", "1000"]);
    });
    let after = number(&same_on_both(&pair, &["GET", "c"]));
    assert_eq!(after - before, 1.0);
    let deadline = number(&same_on_both(&pair, &["PEXPIRETIME", "c"]));
    assert!(deadline > 0.0);
}

#[test]
fn an_in_place_write_that_creates_a_key_reaches_the_peers_as_the_value_it_made() {
    // Seed 223 of the mesh: during a cut B counts 5 on a key A does not hold;
    // A APPENDs 798 to it, which creates "798", and both add 0.5 after. Sent as
    // the command, the APPEND met B's 5 and made "5798", a value A never had,
    // under the same timestamp; as the value it made (a reset, as any write of
    // a whole value) it leaves 799 everywhere.
    let pair = Pair::start(&["--repl-backlog-size", "16kb"]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    for filler in [0, 200] {
        a.cmd(&["DEL", "s"]);
        wait_for("the key to go on B", || {
            b.cmd(&["EXISTS", "s"]) == b":0\r\n"
        });
        partition(&pair, filler, |a, b| {
            assert_eq!(b.cmd(&["INCRBY", "s", "5"]), b":5\r\n");
            step();
            assert_eq!(a.cmd(&["APPEND", "s", "798"]), b":3\r\n");
            step();
            a.cmd(&["INCRBYFLOAT", "s", "0.5"]);
            step();
            b.cmd(&["INCRBYFLOAT", "s", "0.5"]);
        });
        let got = text(&same_on_both(&pair, &["GET", "s"]));
        assert_eq!(got, "$3\r\n799\r\n", "{filler} filler writes");
    }
}
