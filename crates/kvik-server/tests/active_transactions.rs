//! Active replication of a transaction that a broken link cuts in the middle: the
//! peer received its MULTI and some of its commands, not its EXEC. The peer never
//! shows part of it, and after the heal (a partial resync, or a full sync) it holds
//! the whole transaction, applied once. (A full sync merges the snapshot key by
//! key, so while it runs the transaction's keys appear one by one, as any keys of
//! the snapshot do: that heal is watched before and after, not during.)
//!
//! A node passes on every write of a peer's, even one that applies nothing on
//! it: a transaction goes whole, and a dropped write leaves no gap in its
//! origin's numbers for the nodes behind.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use support::active::Pair;
use support::{wait_for, RawConn};

const KEYS: usize = 100;
const VALUE_BYTES: usize = 4096;

fn exists_all(conn: &mut RawConn) -> usize {
    let mut args = vec!["EXISTS".to_string()];
    args.extend((0..KEYS).map(|i| format!("t:{i}")));
    let reply = String::from_utf8_lossy(&conn.cmd(&args)).into_owned();
    reply.trim_start_matches(':').trim_end().parse().unwrap()
}

/// Run one big transaction on A while B's link to A lets only `passing` bytes of it
/// through, then cut that link, check B shows none of it, write `filler` values of 1 KiB on
/// A (more than the backlog holds: the heal is a full sync), heal, and check B
/// holds all of it once (an INCR inside it counted once). Returns the full syncs
/// the heal made.
fn cut_inside_a_transaction(pair: &Pair, passing: u64, filler: usize) -> u64 {
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    a.cmd(&["SET", "runs", "0"]);
    wait_for("the first write to reach B", || {
        b.cmd(&["GET", "runs"]) == b"$1\r\n0\r\n"
    });
    // B watches, every moment it can, that it holds all of the transaction or none.
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (done, mut conn) = (done.clone(), pair.b.raw());
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            while !done.load(Ordering::SeqCst) {
                let n = exists_all(&mut conn);
                if n != 0 && n != KEYS {
                    seen.push(n);
                }
            }
            seen
        })
    };
    pair.to_a.stall_after(passing);
    let value = "x".repeat(VALUE_BYTES);
    assert_eq!(a.cmd(&["MULTI"]), b"+OK\r\n");
    a.cmd(&["INCR", "runs"]);
    for i in 0..KEYS {
        assert_eq!(a.cmd(&["SET", &format!("t:{i}"), &value]), b"+QUEUED\r\n");
    }
    let replies = a.cmd(&["EXEC"]);
    assert!(replies.starts_with(b"*101\r\n"), "{:?}", &replies[..10]);
    wait_for("the link to stall inside the transaction", || {
        pair.to_a.is_stalled()
    });
    assert_eq!(exists_all(&mut b), 0, "B shows none of a cut transaction");
    let full_syncs = |a: &mut RawConn, b: &mut RawConn| -> u64 {
        let served = |c: &mut RawConn| c.info_field("stats", "sync_full").parse::<u64>().unwrap();
        served(a) + served(b)
    };
    let full_before = full_syncs(&mut a, &mut b);
    pair.cut();
    pair.to_a.resume();
    assert_eq!(exists_all(&mut b), 0);
    let small = "v".repeat(1024);
    for i in 0..filler {
        a.cmd(&["SET", &format!("a:{i}"), &small]);
    }
    if filler > 0 {
        // The heal is watched before and after, not during (see the top).
        done.store(true, Ordering::SeqCst);
        // B forgets its place in A's stream: its link to A starts anew, with a full
        // sync (the backlog keeps what a replica that fell behind still needs, so
        // the writes alone would not force one).
        assert_eq!(b.cmd(&["REPLICAOF", "NO", "ONE"]), b"+OK\r\n");
    }
    if filler > 0 {
        pair.to_a.heal();
        pair.to_b.heal();
        let port = pair.to_a.port().to_string();
        assert_eq!(b.cmd(&["REPLICAOF", "127.0.0.1", &port]), b"+OK\r\n");
        pair.wait_linked();
    } else {
        pair.heal();
    }
    pair.converge();
    done.store(true, Ordering::SeqCst);
    assert_eq!(
        watcher.join().unwrap(),
        Vec::<usize>::new(),
        "partial views"
    );
    assert_eq!(exists_all(&mut b), KEYS);
    assert_eq!(b.cmd(&["GET", "runs"]), b"$1\r\n1\r\n", "applied once");
    full_syncs(&mut a, &mut b) - full_before
}

#[test]
fn a_transaction_cut_in_the_middle_is_applied_whole_after_a_partial_resync() {
    let pair = Pair::start(&["--repl-backlog-size", "4mb"]);
    // About half of the transaction's envelopes reach B.
    let half = (KEYS * VALUE_BYTES / 2) as u64;
    assert_eq!(
        cut_inside_a_transaction(&pair, half, 0),
        0,
        "a partial resync"
    );
}

#[test]
fn a_transaction_cut_in_the_middle_is_applied_whole_after_a_full_sync() {
    let pair = Pair::start(&["--repl-backlog-size", "16kb"]);
    let half = (KEYS * VALUE_BYTES / 2) as u64;
    assert!(
        cut_inside_a_transaction(&pair, half, 200) > 0,
        "a full sync"
    );
}

/// A <-> B active, and C an active replica of B alone (linked): A's writes reach
/// C only as B passes them on.
fn pair_with_a_node_behind_b() -> (Pair, support::TestServer) {
    let pair = Pair::start(&[]);
    let c = support::TestServer::start(support::active::ACTIVE);
    let mut to_c = c.raw();
    let b_port = pair.b.port().to_string();
    assert_eq!(to_c.cmd(&["REPLICAOF", "127.0.0.1", &b_port]), b"+OK\r\n");
    wait_for("C's link to B", || {
        to_c.info_field("replication", "master_link_status") == "up"
    });
    (pair, c)
}

/// A <-> B active, and C an active replica of B alone: A's writes reach C only as
/// B passes them on. A's transaction deletes a set; on B every member is newer
/// than that DEL, so it applies nothing there, yet it must reach C with the rest
/// of the transaction: C holds an older member of its own that the DEL removes.
/// (In a mesh the node that meets such a copy first keeps it and drops the
/// origin's own copy as a duplicate.)
#[test]
fn a_transaction_goes_on_whole_where_one_of_its_commands_applies_nothing() {
    let (pair, c) = pair_with_a_node_behind_b();
    let (mut a, mut b, mut to_c) = (pair.a.raw(), pair.b.raw(), c.raw());
    b.cmd(&["SADD", "s", "w"]);
    for node in [&mut a, &mut to_c] {
        wait_for("B's add", || {
            node.cmd(&["SISMEMBER", "s", "w"]) == b":1\r\n"
        });
    }
    // C's own member goes nowhere: C replicates to no one.
    to_c.cmd(&["SADD", "s", "z"]);
    pair.cut();
    a.cmd(&["MULTI"]);
    a.cmd(&["DEL", "s"]);
    a.cmd(&["SET", "done", "1"]);
    assert_eq!(a.cmd(&["EXEC"]), b"*2\r\n:1\r\n+OK\r\n");
    std::thread::sleep(std::time::Duration::from_millis(5));
    // Newer than the DEL on B: both members stay there.
    b.cmd(&["SADD", "s", "w", "y"]);
    wait_for("B's second add to reach C", || {
        to_c.cmd(&["SISMEMBER", "s", "y"]) == b":1\r\n"
    });
    pair.heal();
    wait_for("the transaction to reach C", || {
        to_c.cmd(&["GET", "done"]) == b"$1\r\n1\r\n"
    });
    pair.converge();
    let members = |conn: &mut RawConn| {
        let reply = conn.cmd(&["SORT", "s", "ALPHA"]);
        String::from_utf8_lossy(&reply).into_owned()
    };
    let both = "*2\r\n$1\r\nw\r\n$1\r\ny\r\n";
    assert_eq!(members(&mut a), both);
    assert_eq!(members(&mut to_c), both, "the DEL removed C's older member");
}

/// A <-> B active, and C an active replica of B alone. A write of A's that B
/// drops (older than B's own write of the key) still goes on to C: C counts A's
/// writes in order and would otherwise wait for the missing one, dropping A's
/// later writes, on a path that never brings it.
#[test]
fn a_write_dropped_on_the_way_still_reaches_the_node_behind() {
    let (pair, c) = pair_with_a_node_behind_b();
    let (mut a, mut b, mut to_c) = (pair.a.raw(), pair.b.raw(), c.raw());
    pair.cut();
    assert_eq!(a.cmd(&["SET", "k", "older"]), b"+OK\r\n");
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert_eq!(b.cmd(&["SET", "k", "newer"]), b"+OK\r\n");
    assert_eq!(a.cmd(&["SET", "after", "1"]), b"+OK\r\n");
    pair.heal();
    support::wait_for_within(
        std::time::Duration::from_secs(5),
        "A's later write to reach C",
        || to_c.cmd(&["GET", "after"]) == b"$1\r\n1\r\n",
    );
    assert_eq!(to_c.cmd(&["GET", "k"]), b"$5\r\nnewer\r\n");
    pair.converge();
}
