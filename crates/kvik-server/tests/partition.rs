//! Partitions: a replica reaches its master through a TCP proxy that cuts and heals
//! the link. Writes made on the master while the link is down reach the replica
//! after it heals by a partial resync from the backlog (one full sync in all), and
//! both ends end with the same dataset, whoever the replica is: kvik or Debian's
//! redis-server.

mod support;

use std::path::Path;
use support::{kvik_server_path, redis_server_or_skip, wait_for, ProxiedPair, RawConn};

fn stat(conn: &mut RawConn, section: &str, name: &str) -> String {
    conn.info_field(section, name)
}

fn write_batch(master: &mut RawConn, tag: &str) {
    for i in 0..500 {
        let key = format!("{tag}:{i}");
        assert_eq!(master.cmd(&["SET", &key, "v"]), b"+OK\r\n");
        master.cmd(&["RPUSH", &format!("{tag}:list"), &key]);
    }
    master.cmd(&["INCRBY", "counter", "7"]);
    master.cmd(&["EXPIRE", &format!("{tag}:0"), "1000"]);
}

/// Cut the link, write on the master, heal: the replica catches up partially.
fn partition_heals_partially(replica_binary: &Path) {
    let ProxiedPair {
        master,
        replica,
        proxy,
    } = ProxiedPair::start(replica_binary, &[]);
    let mut m = master.raw();
    let mut r = replica.raw();
    write_batch(&mut m, "before");
    let synced = |m: &mut RawConn, r: &mut RawConn| {
        stat(m, "replication", "master_repl_offset") == stat(r, "replication", "slave_repl_offset")
    };
    wait_for("the replica to catch up", || synced(&mut m, &mut r));

    proxy.cut();
    wait_for("the replica to see the link down", || {
        stat(&mut r, "replication", "master_link_status") == "down"
    });
    write_batch(&mut m, "during");
    // The replica still serves what it had (replica-serve-stale-data yes).
    assert_eq!(r.cmd(&["GET", "before:1"]), b"$1\r\nv\r\n");
    assert_eq!(r.cmd(&["GET", "during:1"]), b"$-1\r\n");
    proxy.heal();

    wait_for("the link to come back", || {
        stat(&mut r, "replication", "master_link_status") == "up"
    });
    wait_for("the replica to catch up again", || synced(&mut m, &mut r));
    assert_eq!(
        stat(&mut m, "stats", "sync_full"),
        "1",
        "one full sync in all"
    );
    assert_eq!(stat(&mut m, "stats", "sync_partial_ok"), "1");
    assert_eq!(m.cmd(&["DEBUG", "DIGEST"]), r.cmd(&["DEBUG", "DIGEST"]));
    assert_eq!(r.cmd(&["GET", "counter"]), b"$2\r\n14\r\n");
}

#[test]
fn a_kvik_replica_resumes_partially_after_a_partition() {
    partition_heals_partially(&kvik_server_path());
}

#[test]
fn a_redis_replica_of_kvik_resumes_partially_after_a_partition() {
    let Some(redis) = redis_server_or_skip() else {
        return;
    };
    partition_heals_partially(&redis);
}
