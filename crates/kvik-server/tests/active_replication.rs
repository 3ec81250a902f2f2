//! Active replication: two kvik nodes, each an active replica of the other, both
//! taking writes. Their links run through TCP proxies that cut and heal them, and
//! after every partition both nodes must hold the same dataset (DEBUG DIGEST) with
//! the rules of the issue: the last writer wins, a delete stays deleted, increments
//! made on both sides add up.

mod support;

use std::time::Duration;
use support::active::{converge_mesh, join_mesh, overflow_backlogs, Lcg, Pair, ACTIVE};
use support::proxy::Proxy;
use support::{wait_for, RawConn, RealRedis, TestServer};

fn get(conn: &mut RawConn, key: &str) -> Vec<u8> {
    conn.cmd(&["GET", key])
}

#[test]
fn writes_on_either_node_reach_the_other_and_come_back_no_more() {
    let pair = Pair::start(&[]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    assert_eq!(a.info_field("replication", "role"), "active-replica");
    for i in 0..100 {
        a.cmd(&["SET", &format!("a{i}"), "from-a"]);
        b.cmd(&["SET", &format!("b{i}"), "from-b"]);
    }
    a.cmd(&["HSET", "h", "f", "v"]);
    b.cmd(&["RPUSH", "l", "x", "y"]);
    wait_for("B to have A's writes", || {
        get(&mut b, "a99") == b"$6\r\nfrom-a\r\n"
    });
    wait_for("A to have B's writes", || {
        get(&mut a, "b99") == b"$6\r\nfrom-b\r\n"
    });
    pair.converge();
    // Nothing loops: once quiet (the hash's element timestamps collected, and
    // with them the watermark markers stopped), the offsets stand still.
    let offset = a.info_field("replication", "master_repl_offset");
    wait_quiet(&mut a);
    let settled = a.info_field("replication", "master_repl_offset");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(a.info_field("replication", "master_repl_offset"), settled);
    assert!(offset.parse::<u64>().unwrap() > 0);
    assert_eq!(a.cmd(&["DBSIZE"]), b":202\r\n");
}

#[test]
fn increments_made_on_both_sides_of_a_partition_add_up() {
    // An active replica serves while its peer is away, whatever this setting says.
    let pair = Pair::start(&["--replica-serve-stale-data", "no"]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    a.cmd(&["SET", "k", "1"]);
    wait_for("k to reach B", || get(&mut b, "k") == b"$1\r\n1\r\n");
    pair.cut();
    for n in 2..5 {
        assert_eq!(a.cmd(&["INCR", "k"]), format!(":{n}\r\n").into_bytes());
    }
    assert_eq!(b.cmd(&["INCR", "k"]), b":2\r\n");
    pair.heal();
    pair.converge();
    assert_eq!(get(&mut a, "k"), b"$1\r\n5\r\n");
    assert_eq!(get(&mut b, "k"), b"$1\r\n5\r\n");
}

#[test]
fn a_delete_made_during_a_partition_wins_over_an_older_write() {
    let pair = Pair::start(&[]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    a.cmd(&["SET", "x", "1"]);
    wait_for("x to reach B", || get(&mut b, "x") == b"$1\r\n1\r\n");
    pair.cut();
    // B writes x first, A deletes it later: the delete is the last write.
    b.cmd(&["SET", "x", "older"]);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(a.cmd(&["DEL", "x"]), b":1\r\n");
    pair.heal();
    pair.converge();
    assert_eq!(get(&mut a, "x"), b"$-1\r\n");
    assert_eq!(get(&mut b, "x"), b"$-1\r\n");
}

#[test]
fn the_last_writer_wins_on_both_nodes() {
    let pair = Pair::start(&[]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    pair.cut();
    a.cmd(&["SET", "y", "first"]);
    std::thread::sleep(Duration::from_millis(5));
    b.cmd(&["SET", "y", "second"]);
    pair.heal();
    pair.converge();
    assert_eq!(get(&mut a, "y"), b"$6\r\nsecond\r\n");
    assert_eq!(get(&mut b, "y"), b"$6\r\nsecond\r\n");
}

#[test]
fn concurrent_writers_on_both_nodes_leave_identical_datasets() {
    let pair = Pair::start(&[]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut writers = Vec::new();
    for (n, addr) in [pair.a.addr(), pair.b.addr()]
        .into_iter()
        .cycle()
        .take(8)
        .enumerate()
    {
        let stop = stop.clone();
        writers.push(std::thread::spawn(move || {
            let mut conn = RawConn::connect(&addr);
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let key = format!("key:{}", (i * 7 + n as u64) % 100);
                conn.cmd(&["SET", &key, &format!("{n}-{i}")]);
                i += 1;
            }
        }));
    }
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for writer in writers {
        writer.join().unwrap();
    }
    pair.converge();
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    for i in 0..100 {
        let key = format!("key:{i}");
        assert_eq!(get(&mut a, &key), get(&mut b, &key), "{key}");
    }
}

#[test]
fn after_a_long_partition_the_full_syncs_merge_and_a_delete_stays_deleted() {
    // A backlog far smaller than what is written during the cut: the heal cannot
    // be a partial resync.
    let pair = Pair::start(&["--repl-backlog-size", "16kb"]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    a.cmd(&["SET", "kept", "1"]);
    a.cmd(&["SET", "k", "1"]);
    a.cmd(&["SET", "x", "1"]);
    wait_for("x to reach B", || get(&mut b, "x") == b"$1\r\n1\r\n");
    pair.cut();
    for _ in 0..3 {
        a.cmd(&["INCR", "k"]);
    }
    b.cmd(&["INCR", "k"]);
    b.cmd(&["SET", "x", "older"]);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(a.cmd(&["DEL", "x"]), b":1\r\n");
    assert!(
        a.info_field("replication", "active_replica_tombstones")
            .parse::<u64>()
            .unwrap()
            >= 1
    );
    let filler = "v".repeat(1024);
    for i in 0..200 {
        a.cmd(&["SET", &format!("a:{i}"), &filler]);
        b.cmd(&["SET", &format!("b:{i}"), &filler]);
    }
    b.cmd(&["SET", "late", "from-b"]);
    let full_before = a.info_field("stats", "sync_full");
    pair.heal();
    pair.converge();
    assert_ne!(
        a.info_field("stats", "sync_full"),
        full_before,
        "a full sync"
    );
    for conn in [&mut a, &mut b] {
        assert_eq!(get(conn, "x"), b"$-1\r\n");
        assert_eq!(get(conn, "kept"), b"$1\r\n1\r\n");
        assert_eq!(get(conn, "late"), b"$6\r\nfrom-b\r\n");
        assert_eq!(
            get(conn, "k"),
            b"$1\r\n5\r\n",
            "the increments of both sides"
        );
        assert_eq!(conn.cmd(&["DBSIZE"]), b":403\r\n");
    }
}

#[test]
fn three_masters_in_a_mesh_converge() {
    let args = ["--multi-master", "yes"];
    let all: Vec<&str> = ACTIVE.iter().chain(&args).copied().collect();
    let nodes: Vec<TestServer> = (0..3).map(|_| TestServer::start(&all)).collect();
    // The mesh forms before the nodes write (tests/active_mesh.rs writes while it
    // forms).
    join_mesh(&nodes);
    let mut conns: Vec<RawConn> = nodes.iter().map(|n| n.raw()).collect();
    for round in 0..50 {
        for (i, conn) in conns.iter_mut().enumerate() {
            conn.cmd(&["SET", &format!("k{}", round % 10), &format!("{i}-{round}")]);
            conn.cmd(&["INCR", "hits"]);
            conn.cmd(&["SADD", &format!("s{i}"), &round.to_string()]);
        }
    }
    let digest = |conn: &mut RawConn| conn.cmd(&["DEBUG", "DIGEST"]);
    wait_for("the mesh to converge", || {
        let first = digest(&mut conns[0]);
        conns.iter_mut().all(|c| digest(c) == first)
    });
    // Each write counted once, though it reached every node by two paths.
    assert_eq!(conns[1].cmd(&["GET", "hits"]), b"$3\r\n150\r\n");
    let port = nodes[2].port().to_string();
    assert_eq!(
        conns[0].cmd(&["REPLICAOF", "REMOVE", "127.0.0.1", &port]),
        b"+OK\r\n"
    );
    assert_eq!(
        conns[0].cmd(&["REPLICAOF", "REMOVE", "127.0.0.1", &port]),
        b"-ERR Master not found\r\n"
    );
    let info = String::from_utf8_lossy(&conns[0].cmd(&["INFO", "replication"])).into_owned();
    assert!(!info.contains("master_1_host"), "{info}");
    assert_eq!(
        conns[0].info_field("replication", "master_link_status"),
        "up"
    );
}

/// The 16 bytes of a node id in its text form (`DEBUG NODE-ID`).
fn id_bytes(uuid: &[u8]) -> Vec<u8> {
    let hex: Vec<u8> = uuid.iter().copied().filter(|&c| c != b'-').collect();
    hex.chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

/// The timestamp tag of the node whose id is `bytes` (as `hlc::tag_for` draws it).
fn tag_of(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0u64, |acc, &b| acc.rotate_left(8) ^ u64::from(b))
        & 1023
}

fn node_id(conn: &mut RawConn) -> Vec<u8> {
    let reply = conn.cmd(&["DEBUG", "NODE-ID"]);
    let text = String::from_utf8_lossy(&reply).into_owned();
    text.lines().nth(1).unwrap_or_default().as_bytes().to_vec()
}

#[test]
fn nodes_that_drew_one_timestamp_tag_end_with_three() {
    // Node ids are drawn at random and their writes' timestamps carry a 10-bit
    // tag of them: two nodes of a mesh may share one, and could then issue the
    // very same timestamp. Here all three share node 0's: once linked, the
    // nodes draw anew until every tag differs, and they converge as any mesh.
    let args = ["--multi-master", "yes"];
    let all: Vec<&str> = ACTIVE.iter().chain(&args).copied().collect();
    let nodes: Vec<TestServer> = (0..3).map(|_| TestServer::start(&all)).collect();
    let mut conns: Vec<RawConn> = nodes.iter().map(|n| n.raw()).collect();
    let first = id_bytes(&node_id(&mut conns[0]));
    for (i, conn) in conns.iter_mut().enumerate().skip(1) {
        // Flipping one bit in bytes 7 and 15 keeps the tag (their bits meet in it).
        let mut twin = first.clone();
        twin[7] ^= i as u8;
        twin[15] ^= i as u8;
        assert_eq!(tag_of(&twin), tag_of(&first));
        let hex: String = twin.iter().map(|b| format!("{b:02x}")).collect();
        let text = format!(
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..]
        );
        assert_eq!(conn.cmd(&["DEBUG", "NODE-ID", &text]), b"+OK\r\n");
    }
    join_mesh(&nodes);
    wait_for("every node to stamp with a tag of its own", || {
        let mut tags: Vec<u64> = conns
            .iter_mut()
            .map(|c| tag_of(&id_bytes(&node_id(c))))
            .collect();
        tags.sort_unstable();
        tags.dedup();
        tags.len() == 3
    });
    for round in 0..50 {
        for (i, conn) in conns.iter_mut().enumerate() {
            conn.cmd(&["SET", &format!("k{}", round % 10), &format!("{i}-{round}")]);
            conn.cmd(&["INCR", "hits"]);
        }
    }
    converge_mesh(&nodes, Duration::from_secs(20));
    assert_eq!(conns[2].cmd(&["GET", "hits"]), b"$3\r\n150\r\n");
}

#[test]
fn tombstones_are_dropped_once_every_peer_has_seen_them() {
    let pair = Pair::start(&[]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    a.cmd(&["SET", "x", "1"]);
    wait_for("x to reach B", || get(&mut b, "x") == b"$1\r\n1\r\n");
    a.cmd(&["DEL", "x"]);
    wait_for("x to go from B", || get(&mut b, "x") == b"$-1\r\n");
    assert_eq!(
        a.info_field("replication", "active_replica_tombstones"),
        "1"
    );
    // Each node says, about every 100 ms, how old a write it may still send: the
    // tombstone goes within a few seconds (it waited 10 s of quiet before).
    support::wait_for_within(Duration::from_secs(8), "the tombstone to go", || {
        a.info_field("replication", "active_replica_tombstones") == "0"
    });
    assert_eq!(
        a.info_field("replication", "active_replica_tombstones_bytes"),
        "0"
    );
}

#[test]
fn random_mixes_with_random_partitions_converge() {
    // KVIK_ACTIVE_SEED=<n> replays another mix.
    let (mut rng, seed) = Lcg::seeded(0x6b76_696b);
    let pair = Pair::start(&["--repl-backlog-size", "16kb"]);
    let mut conns = [pair.a.raw(), pair.b.raw()];
    let mut increments = 0i64;
    for round in 0..4 {
        let partitioned = rng.below(2) == 0;
        if partitioned {
            pair.cut();
        }
        for _ in 0..300 {
            let side = rng.below(2) as usize;
            let key = format!("k{}", rng.below(20));
            let value = rng.below(1000).to_string();
            let conn = &mut conns[side];
            match rng.below(7) {
                0 | 1 => conn.cmd(&["SET", &key, &value]),
                2 => conn.cmd(&["DEL", &key]),
                3 => {
                    let by = rng.below(5) as i64 + 1;
                    increments += by;
                    conn.cmd(&["INCRBY", "total", &by.to_string()])
                }
                4 => conn.cmd(&["RPUSH", &format!("l{}", rng.below(5)), &value]),
                5 => conn.cmd(&["SADD", &format!("s{}", rng.below(5)), &value]),
                _ => conn.cmd(&["HSET", &format!("h{}", rng.below(5)), &key, &value]),
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
    let expected = format!("${}\r\n{increments}\r\n", increments.to_string().len());
    for conn in conns.iter_mut() {
        assert_eq!(
            conn.cmd(&["GET", "total"]),
            expected.as_bytes(),
            "seed {seed:#x}: every increment counted once"
        );
    }
}

#[test]
fn a_mesh_node_killed_and_restarted_from_its_save_catches_up() {
    let base = ["--multi-master", "yes"];
    let args: Vec<&str> = ACTIVE.iter().chain(&base).copied().collect();
    let mut nodes: Vec<TestServer> = (0..3).map(|_| TestServer::start(&args)).collect();
    let ports: Vec<String> = nodes.iter().map(|n| n.port().to_string()).collect();
    let follow_others = |conn: &mut RawConn, me: usize| {
        for (j, port) in ports.iter().enumerate() {
            if j != me {
                assert_eq!(conn.cmd(&["REPLICAOF", "127.0.0.1", port]), b"+OK\r\n");
            }
        }
    };
    for (i, node) in nodes.iter().enumerate() {
        follow_others(&mut node.raw(), i);
    }
    let mut total = 0;
    let write = |conn: &mut RawConn, tag: &str, total: &mut i64| {
        for i in 0..100 {
            conn.cmd(&["SET", &format!("{tag}:{i}"), tag]);
            conn.cmd(&["INCR", "total"]);
            *total += 1;
        }
        conn.cmd(&["DEL", &format!("{tag}:0")]);
    };
    // Written while the mesh forms: the first full syncs are merged while every
    // node counts, and each increment must still count once.
    for (i, node) in nodes.iter().enumerate() {
        write(&mut node.raw(), &format!("before{i}"), &mut total);
    }
    for node in &nodes {
        let mut conn = node.raw();
        wait_for("every link to come up", || {
            conn.info_field("replication", "master_global_link_status") == "up"
        });
    }
    let mesh_digest = |nodes: &[TestServer]| converge_mesh(nodes, Duration::from_secs(20));
    mesh_digest(&nodes);
    let mut c = nodes[2].raw();
    assert_eq!(c.cmd(&["SAVE"]), b"+OK\r\n");
    drop(c);
    // Its save moves to a directory of its own: the old one goes with the old
    // process's handle, and the restarted node writes its full syncs' files there.
    let saved = support::scratch_dir("mesh-restart");
    std::fs::copy(nodes[2].dir().join("dump.rdb"), saved.join("dump.rdb")).unwrap();
    let dir = saved.to_str().unwrap().to_string();
    unsafe { libc::kill(nodes[2].pid() as libc::pid_t, libc::SIGKILL) };
    for (i, node) in nodes.iter().take(2).enumerate() {
        write(&mut node.raw(), &format!("during{i}"), &mut total);
        node.raw().cmd(&["DEL", "before2:1"]);
    }
    // It comes back (at a new port) with what it saved, and follows the others.
    let mut restart: Vec<&str> = args.clone();
    restart.extend(["--dir", &dir]);
    restart.extend(["--replicaof", "127.0.0.1", &ports[0]]);
    restart.extend(["--replicaof", "127.0.0.1", &ports[1]]);
    nodes[2] = TestServer::start(&restart);
    let new_port = nodes[2].port().to_string();
    for node in nodes.iter().take(2) {
        let mut conn = node.raw();
        assert_eq!(
            conn.cmd(&["REPLICAOF", "REMOVE", "127.0.0.1", &ports[2]]),
            b"+OK\r\n"
        );
        assert_eq!(conn.cmd(&["REPLICAOF", "127.0.0.1", &new_port]), b"+OK\r\n");
    }
    mesh_digest(&nodes);
    let mut c = nodes[2].raw();
    assert_eq!(
        get(&mut c, "before2:1"),
        b"$-1\r\n",
        "a delete made while it was down"
    );
    assert_eq!(get(&mut c, "during1:5"), b"$7\r\nduring1\r\n");
    assert_eq!(
        get(&mut c, "total"),
        format!("${}\r\n{total}\r\n", total.to_string().len()).into_bytes()
    );
    let _ = std::fs::remove_dir_all(&saved);
}

/// Writes on both nodes of the pair, of several types and in two databases, from
/// two threads while `during` runs.
fn write_on_both_while(pair: &Pair, tag: &str, during: impl FnOnce()) {
    let writer = |node: &TestServer, side: &'static str| {
        let mut c = node.raw();
        let tag = tag.to_string();
        move || {
            for i in 0..200 {
                c.cmd(&["SET", &format!("{tag}:{side}:{i}"), "v"]);
                c.cmd(&["SADD", &format!("{tag}:set:{side}"), &i.to_string()]);
                c.cmd(&["INCR", &format!("{tag}:count")]);
                if i % 50 == 0 {
                    c.cmd(&["SELECT", "4"]);
                    c.cmd(&["HSET", &format!("{tag}:h"), side, &i.to_string()]);
                    c.cmd(&["SELECT", "0"]);
                }
            }
        }
    };
    let a = std::thread::spawn(writer(&pair.a, "a"));
    let b = std::thread::spawn(writer(&pair.b, "b"));
    during();
    a.join().unwrap();
    b.join().unwrap();
}

/// A redis-server replica of one node of an active pair: it reads no envelope, so
/// that node sends it plain commands (with SELECTs) in a stream of its own, with
/// its own offsets: a full sync first, then every write made on either node, and
/// after a break a partial resync.
#[test]
fn a_redis_replica_of_an_active_node_follows_the_writes_of_both_nodes() {
    if support::redis_server_or_skip().is_none() {
        return;
    }
    let pair = Pair::start(&[]);
    let to_a = Proxy::start(&pair.a.addr());
    let port = to_a.port().to_string();
    let mut redis = None;
    write_on_both_while(&pair, "sync", || {
        redis = Some(RealRedis::start(&[
            "--enable-debug-command",
            "yes",
            "--replicaof",
            "127.0.0.1",
            &port,
        ]));
    });
    let redis = redis.unwrap();
    let (mut a, mut r) = (pair.a.raw(), redis.raw());
    let in_sync = |r: &mut RawConn, a: &mut RawConn| {
        wait_for("the redis replica to hold the pair's dataset", || {
            r.info_field("replication", "master_link_status") == "up"
                && r.cmd(&["DEBUG", "DIGEST"]) == a.cmd(&["DEBUG", "DIGEST"])
        });
    };
    let digest = pair.converge();
    in_sync(&mut r, &mut a);
    assert_eq!(r.cmd(&["DEBUG", "DIGEST"]), digest);
    assert_eq!(r.cmd(&["GET", "sync:count"]), b"$3\r\n400\r\n");
    write_on_both_while(&pair, "live", || {});
    pair.converge();
    in_sync(&mut r, &mut a);
    assert_eq!(r.cmd(&["SCARD", "live:set:b"]), b":200\r\n");
    // Cut, written on both meanwhile, healed: the replica continues where it was.
    let full = a.info_field("stats", "sync_full");
    let partial: u64 = a.info_field("stats", "sync_partial_ok").parse().unwrap();
    to_a.cut();
    wait_for("the replica to see its link down", || {
        r.info_field("replication", "master_link_status") == "down"
    });
    write_on_both_while(&pair, "cut", || {});
    to_a.heal();
    pair.converge();
    in_sync(&mut r, &mut a);
    assert_eq!(r.cmd(&["GET", "cut:count"]), b"$3\r\n400\r\n");
    assert_eq!(a.info_field("stats", "sync_full"), full, "no full sync");
    let resumed: u64 = a.info_field("stats", "sync_partial_ok").parse().unwrap();
    assert_eq!(resumed, partial + 1);
    // Redis logs every error its master's stream makes it answer.
    let log = redis.stdout();
    assert!(!log.contains("sending an error to its master"), "{log}");
}

/// Wait until `node`'s offset stands still for a second (its watermark markers
/// stop once it and its peers hold no tombstone).
fn wait_quiet(node: &mut RawConn) {
    let mut last = node.info_field("replication", "master_repl_offset");
    support::wait_for_within(
        Duration::from_secs(15),
        "the offsets to stand still",
        || {
            std::thread::sleep(Duration::from_secs(1));
            let now = node.info_field("replication", "master_repl_offset");
            std::mem::replace(&mut last, now) == last
        },
    );
}

/// Check for `how_long` that every node in `nodes` keeps its `count` tombstones.
fn tombstones_stay(nodes: &mut [RawConn], count: &str, how_long: Duration) {
    let until = std::time::Instant::now() + how_long;
    while std::time::Instant::now() < until {
        for node in nodes.iter_mut() {
            assert_eq!(
                node.info_field("replication", "active_replica_tombstones"),
                count
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn tombstones_go(nodes: &mut [RawConn]) {
    for node in nodes {
        support::wait_for_within(Duration::from_secs(10), "the tombstones to go", || {
            node.info_field("replication", "active_replica_tombstones") == "0"
        });
    }
}

#[test]
fn a_tombstone_stays_while_a_peer_is_cut_off_and_goes_once_it_heals() {
    let pair = Pair::start(&[]);
    let (mut a, mut b) = (pair.a.raw(), pair.b.raw());
    a.cmd(&["SET", "x", "1"]);
    wait_for("x to reach B", || get(&mut b, "x") == b"$1\r\n1\r\n");
    pair.cut();
    a.cmd(&["DEL", "x"]);
    // B may still hold an older write to x, or serve a sync with it: A keeps the
    // tombstone for as long as B is away (many heartbeats' worth).
    tombstones_stay(
        std::slice::from_mut(&mut a),
        "1",
        Duration::from_millis(2500),
    );
    pair.heal();
    wait_for("x to go from B", || get(&mut b, "x") == b"$-1\r\n");
    tombstones_go(&mut [a, b]);
    pair.converge();
}

#[test]
fn in_a_mesh_a_tombstone_stays_on_every_node_until_the_cut_off_one_has_it() {
    let args = ["--multi-master", "yes"];
    let all: Vec<&str> = ACTIVE.iter().chain(&args).copied().collect();
    let nodes: Vec<TestServer> = (0..3).map(|_| TestServer::start(&all)).collect();
    // Node i follows node j through proxies[i][j], so that node 2 can be cut off
    // from both others, both ways.
    let proxies: Vec<Vec<Option<Proxy>>> = (0..3)
        .map(|i| {
            (0..3)
                .map(|j| (i != j).then(|| Proxy::start(&nodes[j].addr())))
                .collect()
        })
        .collect();
    for (i, node) in nodes.iter().enumerate() {
        let mut conn = node.raw();
        for proxy in proxies[i].iter().flatten() {
            let port = proxy.port().to_string();
            assert_eq!(conn.cmd(&["REPLICAOF", "127.0.0.1", &port]), b"+OK\r\n");
        }
    }
    let mut conns: Vec<RawConn> = nodes.iter().map(|n| n.raw()).collect();
    for conn in conns.iter_mut() {
        wait_for("every link to come up", || {
            conn.info_field("replication", "master_global_link_status") == "up"
        });
    }
    conns[0].cmd(&["SET", "x", "1"]);
    converge_mesh(&nodes, Duration::from_secs(20));
    let cut_off = |cut: bool| {
        for (i, row) in proxies.iter().enumerate() {
            for (j, proxy) in row.iter().enumerate() {
                match proxy {
                    Some(p) if i == 2 || j == 2 => {
                        if cut {
                            p.cut()
                        } else {
                            p.heal()
                        }
                    }
                    _ => {}
                }
            }
        }
    };
    cut_off(true);
    wait_for("node 2's links to go down", || {
        conns[2].info_field("replication", "master_global_link_status") == "down"
    });
    conns[0].cmd(&["DEL", "x"]);
    wait_for("x to go from node 1", || {
        get(&mut conns[1], "x") == b"$-1\r\n"
    });
    tombstones_stay(&mut conns[..2], "1", Duration::from_millis(2500));
    assert_eq!(get(&mut conns[2], "x"), b"$1\r\n1\r\n");
    cut_off(false);
    for conn in conns.iter_mut() {
        wait_for("every link to come back", || {
            conn.info_field("replication", "master_global_link_status") == "up"
        });
    }
    wait_for("x to go from node 2", || {
        get(&mut conns[2], "x") == b"$-1\r\n"
    });
    tombstones_go(&mut conns);
    converge_mesh(&nodes, Duration::from_secs(20));
}

#[test]
fn a_master_that_sends_no_watermark_keeps_the_tombstones_and_a_plain_replica_holds_none() {
    if support::redis_server_or_skip().is_none() {
        return;
    }
    // redis-server as the master of an active node says nothing of how old a
    // write it may still send: the node keeps its tombstones (only the memory
    // bound would forget them), well past the time a pair takes to collect.
    let master = RealRedis::start(&[]);
    let node = TestServer::start(ACTIVE);
    let mut active = node.raw();
    let port = master.port().to_string();
    active.cmd(&["REPLICAOF", "127.0.0.1", &port]);
    wait_for("the link to come up", || {
        active.info_field("replication", "master_link_status") == "up"
    });
    active.cmd(&["SET", "x", "1"]);
    active.cmd(&["DEL", "x"]);
    tombstones_stay(
        std::slice::from_mut(&mut active),
        "1",
        Duration::from_secs(5),
    );
    // A redis-server replica of an active node takes full syncs that replace its
    // dataset: it holds nothing back.
    let pair = Pair::start(&[]);
    let a_port = pair.a.port().to_string();
    let replica = RealRedis::start(&["--replicaof", "127.0.0.1", &a_port]);
    let (mut a, mut b, mut r) = (pair.a.raw(), pair.b.raw(), replica.raw());
    wait_for("the redis replica to come up", || {
        r.info_field("replication", "master_link_status") == "up"
    });
    a.cmd(&["SET", "y", "1"]);
    // B deletes y once it holds it: a DEL that finds nothing writes nothing.
    wait_for("y to reach B and the redis replica", || {
        get(&mut b, "y") == b"$1\r\n1\r\n" && get(&mut r, "y") == b"$1\r\n1\r\n"
    });
    assert_eq!(b.cmd(&["DEL", "y"]), b":1\r\n");
    wait_for("y to go from the redis replica", || {
        get(&mut r, "y") == b"$-1\r\n"
    });
    tombstones_go(&mut [a, b]);
}
