//! Replication against real redis-server 7.0 processes, both ways: kvik as the
//! replica of a Redis master and Redis as the replica of a kvik master. Full syncs
//! (diskless and disk), the live stream of every type, scripts, transactions and
//! expiries, partial resync after the link is cut, READONLY, ROLE and INFO. Datasets
//! are compared with DEBUG DIGEST once both ends report the same offset.

mod support;

use std::time::{Duration, Instant};
use support::{wait_for, RawConn, RealRedis, TestServer};

const DEBUG: [&str; 2] = ["--enable-debug-command", "yes"];

fn text(reply: Vec<u8>) -> String {
    String::from_utf8_lossy(&reply).into_owned()
}

/// Wait until the replica's link is up and it has applied everything the master
/// wrote, then compare the datasets.
fn assert_in_sync(master: &mut RawConn, replica: &mut RawConn) {
    wait_for("the link to come up", || {
        replica.info_field("replication", "master_link_status") == "up"
    });
    wait_for("the replica to reach the master's offset", || {
        let m = master.info_field("replication", "master_repl_offset");
        replica.info_field("replication", "slave_repl_offset") == m
    });
    let digest = text(master.cmd(&["DEBUG", "DIGEST"]));
    assert_eq!(
        text(replica.cmd(&["DEBUG", "DIGEST"])),
        digest,
        "datasets differ"
    );
    assert_eq!(
        text(replica.cmd(&["DBSIZE"])),
        text(master.cmd(&["DBSIZE"]))
    );
}

/// Keys of every type, in two databases.
fn fill(c: &mut RawConn, tag: &str) {
    let k = |name: &str| format!("{tag}:{name}");
    c.cmd(&["SET", &k("str"), "value"]);
    c.cmd(&["SET", &k("int"), "12345"]);
    c.cmd(&["RPUSH", &k("list"), "a", "b", "c"]);
    c.cmd(&["HSET", &k("hash"), "f1", "v1", "f2", "v2"]);
    c.cmd(&["SADD", &k("set"), "x", "y", "z"]);
    c.cmd(&["SADD", &k("intset"), "1", "2", "3"]);
    c.cmd(&["ZADD", &k("zset"), "1", "a", "2.5", "b"]);
    c.cmd(&["XADD", &k("stream"), "1-1", "f", "v"]);
    c.cmd(&["PFADD", &k("hll"), "a", "b", "c"]);
    c.cmd(&["SET", &k("ttl"), "v", "EX", "1000"]);
    c.cmd(&["SELECT", "5"]);
    c.cmd(&["SET", &k("db5"), "five"]);
    c.cmd(&["SELECT", "0"]);
}

/// Writes of every kind a replica must follow: commands that propagate as others
/// (INCRBYFLOAT, EXPIRE, SPOP), a transaction, a script, a key that expires.
fn live_writes(c: &mut RawConn) {
    fill(c, "live");
    c.cmd(&["INCRBYFLOAT", "live:float", "1.5"]);
    c.cmd(&["EXPIRE", "live:str", "500"]);
    c.cmd(&["SPOP", "live:set"]);
    c.cmd(&["LPOP", "live:list"]);
    c.cmd(&["MULTI"]);
    c.cmd(&["INCR", "tx:a"]);
    c.cmd(&["HSET", "tx:h", "f", "v"]);
    c.cmd(&["EXEC"]);
    c.cmd(&[
        "EVAL",
        "redis.call('set', KEYS[1], 'x'); return redis.call('incr', KEYS[2])",
        "2",
        "script:a",
        "script:b",
    ]);
    c.cmd(&["SET", "short", "v", "PX", "50"]);
    wait_for("the short-lived key to expire", || {
        text(c.cmd(&["EXISTS", "short"])) == ":0\r\n"
    });
    c.cmd(&["SELECT", "3"]);
    c.cmd(&["SET", "db3:k", "v"]);
    c.cmd(&["DEL", "live:hash"]);
    c.cmd(&["SELECT", "0"]);
}

fn kvik_follows_redis(diskless: &str) {
    if support::redis_server_or_skip().is_none() {
        return;
    }
    let redis = RealRedis::start(&[
        DEBUG[0],
        DEBUG[1],
        "--repl-diskless-sync",
        diskless,
        "--repl-diskless-sync-delay",
        "0",
    ]);
    let mut m = redis.raw();
    fill(&mut m, "before");
    let port = redis.port().to_string();
    let kvik = TestServer::start(&[DEBUG[0], DEBUG[1], "--replicaof", "127.0.0.1", &port]);
    let mut r = kvik.raw();
    assert_in_sync(&mut m, &mut r);
    live_writes(&mut m);
    assert_in_sync(&mut m, &mut r);
    // A replica refuses writes from clients, and says what it is.
    assert_eq!(
        text(r.cmd(&["SET", "k", "v"])),
        "-READONLY You can't write against a read only replica.\r\n"
    );
    let role = text(r.cmd(&["ROLE"]));
    assert!(
        role.starts_with("*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n"),
        "{role}"
    );
    assert!(role.contains("$9\r\nconnected\r\n"), "{role}");
    assert_eq!(r.info_field("replication", "role"), "slave");
    assert!(kvik.stdout().contains(":S "), "a replica's log lines say S");
    assert_eq!(
        r.info_field("replication", "master_replid"),
        m.info_field("replication", "master_replid")
    );
    // The master's link is a client of its own: listed, and killed like one.
    let list = text(r.cmd(&["CLIENT", "LIST", "TYPE", "master"]));
    assert!(list.contains("flags=M"), "{list}");
    assert_eq!(text(r.cmd(&["CLIENT", "KILL", "TYPE", "master"])), ":1\r\n");
    m.cmd(&["SET", "after-kill", "1"]);
    assert_in_sync(&mut m, &mut r);
    // Promoted, it writes, and keeps the master's history as its second id.
    assert_eq!(text(r.cmd(&["REPLICAOF", "NO", "ONE"])), "+OK\r\n");
    assert_eq!(r.info_field("replication", "role"), "master");
    assert_eq!(
        r.info_field("replication", "master_replid2"),
        m.info_field("replication", "master_replid")
    );
    assert_eq!(text(r.cmd(&["SET", "k", "v"])), "+OK\r\n");
}

#[test]
fn kvik_replica_of_redis_diskless() {
    kvik_follows_redis("yes");
}

#[test]
fn kvik_replica_of_redis_from_disk() {
    kvik_follows_redis("no");
}

/// A replica hides a key whose deadline passed but keeps it until the master's
/// DEL: the master's clock decides.
#[test]
fn a_replica_does_not_expire_keys_itself() {
    if support::redis_server_or_skip().is_none() {
        return;
    }
    let redis = RealRedis::start(&[DEBUG[0], DEBUG[1], "--repl-diskless-sync-delay", "0"]);
    let mut m = redis.raw();
    let port = redis.port().to_string();
    let kvik = TestServer::start(&[DEBUG[0], DEBUG[1], "--replicaof", "127.0.0.1", &port]);
    let mut r = kvik.raw();
    assert_in_sync(&mut m, &mut r);
    // The master stops expiring on its own (DEBUG SET-ACTIVE-EXPIRE 0) and nobody
    // reads the key there: no DEL reaches the replica.
    m.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    m.cmd(&["SET", "k", "v", "PX", "100"]);
    assert_in_sync(&mut m, &mut r);
    wait_for("the key to read as gone on the replica", || {
        text(r.cmd(&["GET", "k"])) == "$-1\r\n"
    });
    assert_eq!(text(r.cmd(&["DBSIZE"])), ":1\r\n", "the key is kept");
    // The master's lookup expires it and sends DEL.
    assert_eq!(text(m.cmd(&["GET", "k"])), "$-1\r\n");
    wait_for("the master's DEL", || text(r.cmd(&["DBSIZE"])) == ":0\r\n");
}

fn redis_follows_kvik(diskless: &str) {
    if support::redis_server_or_skip().is_none() {
        return;
    }
    let kvik = TestServer::start(&[
        DEBUG[0],
        DEBUG[1],
        "--server-threads",
        "2",
        "--repl-diskless-sync",
        diskless,
    ]);
    let mut m = kvik.raw();
    fill(&mut m, "before");
    let port = kvik.port().to_string();
    let redis = RealRedis::start(&[DEBUG[0], DEBUG[1], "--replicaof", "127.0.0.1", &port]);
    let mut r = redis.raw();
    assert_in_sync(&mut m, &mut r);
    live_writes(&mut m);
    assert_in_sync(&mut m, &mut r);
    let role = text(m.cmd(&["ROLE"]));
    assert!(role.starts_with("*3\r\n$6\r\nmaster\r\n"), "{role}");
    wait_for("the replica in INFO", || {
        m.info_field("replication", "slave0")
            .contains("state=online")
    });
    assert_eq!(m.info_field("replication", "connected_slaves"), "1");
    // Cut the link: the replica continues where it was.
    assert_eq!(
        text(m.cmd(&["CLIENT", "KILL", "TYPE", "replica"])),
        ":1\r\n"
    );
    m.cmd(&["SET", "after-cut", "1"]);
    assert_in_sync(&mut m, &mut r);
    wait_for("the partial resync in the replica's log", || {
        redis
            .stdout()
            .contains("Successful partial resynchronization with master")
    });
    assert_eq!(
        redis.stdout().matches("Full resync from master").count(),
        1,
        "one full sync only"
    );
}

#[test]
fn redis_replica_of_kvik_diskless() {
    redis_follows_kvik("yes");
}

#[test]
fn redis_replica_of_kvik_from_disk() {
    redis_follows_kvik("no");
}

/// A chain: Redis -> kvik -> Redis. The last one receives the first one's stream
/// through kvik, at the same offsets.
#[test]
fn a_kvik_replica_passes_the_stream_on() {
    if support::redis_server_or_skip().is_none() {
        return;
    }
    let top = RealRedis::start(&[DEBUG[0], DEBUG[1], "--repl-diskless-sync-delay", "0"]);
    let mut a = top.raw();
    fill(&mut a, "top");
    let top_port = top.port().to_string();
    let middle = TestServer::start(&[DEBUG[0], DEBUG[1], "--replicaof", "127.0.0.1", &top_port]);
    let mut b = middle.raw();
    assert_in_sync(&mut a, &mut b);
    let middle_port = middle.port().to_string();
    let bottom = RealRedis::start(&[DEBUG[0], DEBUG[1], "--replicaof", "127.0.0.1", &middle_port]);
    let mut c = bottom.raw();
    live_writes(&mut a);
    assert_in_sync(&mut a, &mut b);
    assert_in_sync(&mut a, &mut c);
}

/// WAIT counts the replicas that acknowledged the writes before it: at once when
/// they have, after its timeout with those that did otherwise. A kvik replica
/// answers a Redis master's GETACK the same way.
#[test]
fn wait_counts_real_acknowledgements() {
    if support::redis_server_or_skip().is_none() {
        return;
    }
    let kvik = TestServer::start(&[DEBUG[0], DEBUG[1], "--min-replicas-to-write", "1"]);
    let mut m = kvik.raw();
    assert_eq!(
        text(m.cmd(&["SET", "k", "v"])),
        "-NOREPLICAS Not enough good replicas to write.\r\n"
    );
    let port = kvik.port().to_string();
    let redis = RealRedis::start(&[DEBUG[0], DEBUG[1], "--replicaof", "127.0.0.1", &port]);
    let mut r = redis.raw();
    wait_for("a good replica", || {
        m.info_field("replication", "min_slaves_good_slaves") == "1"
    });
    assert_eq!(text(m.cmd(&["SET", "k", "v"])), "+OK\r\n");
    assert_eq!(text(m.cmd(&["WAIT", "1", "5000"])), ":1\r\n");
    let started = Instant::now();
    assert_eq!(text(m.cmd(&["WAIT", "2", "300"])), ":1\r\n");
    // The timeout counts in whole milliseconds of the clock, as Redis's does.
    assert!(started.elapsed() >= Duration::from_millis(290));
    assert_eq!(
        text(r.cmd(&["WAIT", "1", "10"]))[..42],
        "-ERR WAIT cannot be used with replica inst"[..]
    );

    // kvik as the replica: Redis's WAIT is answered by its acknowledgement.
    let redis = RealRedis::start(&[DEBUG[0], DEBUG[1], "--repl-diskless-sync-delay", "0"]);
    let mut m = redis.raw();
    let port = redis.port().to_string();
    let kvik = TestServer::start(&[DEBUG[0], DEBUG[1], "--replicaof", "127.0.0.1", &port]);
    let mut r = kvik.raw();
    assert_in_sync(&mut m, &mut r);
    m.cmd(&["SET", "k", "v"]);
    assert_eq!(text(m.cmd(&["WAIT", "1", "5000"])), ":1\r\n");
    assert_eq!(
        text(r.cmd(&["WAIT", "1", "10"]))[..42],
        "-ERR WAIT cannot be used with replica inst"[..]
    );
}

/// PSYNC2 across a restart: a kvik replica saves its master's id and offset in its
/// RDB and, restarted from it, continues without a full sync.
#[test]
fn a_restarted_replica_continues_from_its_rdb() {
    if support::redis_server_or_skip().is_none() {
        return;
    }
    let redis = RealRedis::start(&[DEBUG[0], DEBUG[1], "--repl-diskless-sync-delay", "0"]);
    let mut m = redis.raw();
    fill(&mut m, "a");
    let port = redis.port().to_string();
    let kvik = TestServer::start(&[DEBUG[0], DEBUG[1], "--replicaof", "127.0.0.1", &port]);
    let mut r = kvik.raw();
    assert_in_sync(&mut m, &mut r);
    assert_eq!(text(r.cmd(&["SAVE"])), "+OK\r\n");
    let dir = support::scratch_dir("restarted-replica");
    std::fs::copy(kvik.dir().join("dump.rdb"), dir.join("dump.rdb")).unwrap();
    drop(r);
    drop(kvik);
    fill(&mut m, "while-down");
    let dir = dir.to_string_lossy().into_owned();
    let args = [
        DEBUG[0],
        DEBUG[1],
        "--dir",
        &dir,
        "--replicaof",
        "127.0.0.1",
        &port,
    ];
    let kvik = TestServer::start(&args);
    let mut r = kvik.raw();
    assert_in_sync(&mut m, &mut r);
    let log = redis.stdout();
    assert!(
        log.contains("Partial resynchronization request from"),
        "{log}"
    );
    assert_eq!(
        log.matches("Starting BGSAVE for SYNC").count() + log.matches("Starting diskless").count(),
        1,
        "{log}"
    );
}

/// redis-cli, next to the redis-server the tests use.
fn redis_cli() -> Option<std::path::PathBuf> {
    let cli = support::redis_server_path()?.with_file_name("redis-cli");
    cli.is_file().then_some(cli)
}

/// `redis-cli --rdb` takes a backup over the replication protocol (rdb-only), and
/// Redis loads it to the same dataset; `redis-cli --replica` watches the stream.
#[test]
fn redis_cli_backup_and_replica_work_against_kvik() {
    let Some(cli) = support::redis_server_or_skip().and(redis_cli()) else {
        return;
    };
    let kvik = TestServer::start(&[DEBUG[0], DEBUG[1]]);
    let mut k = kvik.raw();
    fill(&mut k, "backup");
    let dir = support::scratch_dir("cli-rdb");
    let file = dir.join("dump.rdb");
    let port = kvik.port().to_string();
    let status = std::process::Command::new(&cli)
        .args(["-p", &port, "--rdb"])
        .arg(&file)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run redis-cli --rdb");
    assert!(status.success());
    let dir = dir.to_string_lossy().into_owned();
    let redis = RealRedis::start(&[DEBUG[0], DEBUG[1], "--dir", &dir]);
    let mut r = redis.raw();
    assert_eq!(
        text(r.cmd(&["DEBUG", "DIGEST"])),
        text(k.cmd(&["DEBUG", "DIGEST"]))
    );

    let mut watcher = std::process::Command::new(&cli)
        .args(["-p", &port, "--replica"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run redis-cli --replica");
    let mut out = watcher.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = std::io::Read::read(&mut out, &mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            if String::from_utf8_lossy(&seen).contains("\"SET\",\"watched\",\"1\"") {
                break;
            }
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    wait_for("the watcher to sync", || {
        text(k.cmd(&["INFO", "replication"])).contains("state=online")
    });
    k.cmd(&["SET", "watched", "1"]);
    let deadline = Instant::now() + support::WAIT_LIMIT;
    while !reader.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = watcher.kill();
    let _ = watcher.wait();
    let seen = reader.join().unwrap();
    assert!(seen.contains("\"SET\",\"watched\",\"1\""), "{seen}");
}

fn role_of(c: &mut RawConn) -> String {
    c.info_field("replication", "role")
}

/// FAILOVER both ways: the master pauses writes, waits for its replica, follows it
/// with PSYNC ... FAILOVER, and the replica takes over with a new id, the old one
/// kept as its second (both sides continue without a full sync).
#[test]
fn failover_hands_the_master_role_over() {
    if support::redis_server_or_skip().is_none() {
        return;
    }
    // kvik hands over to Redis.
    let kvik = TestServer::start(&[DEBUG[0], DEBUG[1]]);
    let mut k = kvik.raw();
    fill(&mut k, "f");
    let port = kvik.port().to_string();
    let redis = RealRedis::start(&[DEBUG[0], DEBUG[1], "--replicaof", "127.0.0.1", &port]);
    let mut r = redis.raw();
    assert_in_sync(&mut k, &mut r);
    assert_eq!(
        text(k.cmd(&["FAILOVER", "TO", "127.0.0.1", "1", "FORCE"])),
        "-ERR FORCE option requires both a timeout and target HOST and IP.\r\n"
    );
    assert_eq!(
        text(k.cmd(&["FAILOVER", "ABORT"])),
        "-ERR No failover in progress.\r\n"
    );
    let old_id = k.info_field("replication", "master_replid");
    assert_eq!(text(k.cmd(&["FAILOVER"])), "+OK\r\n");
    wait_for("kvik to follow Redis", || role_of(&mut k) == "slave");
    wait_for("Redis to lead", || role_of(&mut r) == "master");
    assert_eq!(r.info_field("replication", "master_replid2"), old_id);
    r.cmd(&["SET", "after-failover", "1"]);
    assert_in_sync(&mut r, &mut k);
    assert!(
        redis.stdout().contains("failover request"),
        "{}",
        redis.stdout()
    );
    assert_eq!(
        k.info_field("replication", "master_failover_state"),
        "no-failover"
    );

    // Redis hands back to kvik.
    assert_eq!(text(r.cmd(&["FAILOVER"])), "+OK\r\n");
    wait_for("kvik to lead", || role_of(&mut k) == "master");
    wait_for("Redis to follow kvik", || role_of(&mut r) == "slave");
    k.cmd(&["SET", "after-failback", "1"]);
    assert_in_sync(&mut k, &mut r);
    assert_eq!(
        redis.stdout().matches("Full resync from master").count(),
        1,
        "only the first sync was full"
    );
}

/// A replica whose master is unreachable: with replica-serve-stale-data yes (the
/// default) it serves reads and says its link is down; with no, commands not
/// flagged stale get MASTERDOWN. With replica-read-only no, writes are local.
#[test]
fn a_replica_without_its_master() {
    let nobody = support::free_port().to_string();
    let kvik = TestServer::start(&["--replicaof", "127.0.0.1", &nobody]);
    let mut r = kvik.raw();
    assert_eq!(r.info_field("replication", "role"), "slave");
    assert_eq!(r.info_field("replication", "master_link_status"), "down");
    assert_eq!(text(r.cmd(&["GET", "k"])), "$-1\r\n");
    let role = text(r.cmd(&["ROLE"]));
    assert!(role.ends_with(":-1\r\n"), "{role}");
    assert_eq!(
        text(r.cmd(&["SET", "k", "v"])),
        "-READONLY You can't write against a read only replica.\r\n"
    );
    assert_eq!(
        text(r.cmd(&["CONFIG", "SET", "replica-serve-stale-data", "no"])),
        "+OK\r\n"
    );
    assert_eq!(
        text(r.cmd(&["GET", "k"])),
        "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n"
    );
    assert_eq!(
        text(r.cmd(&["PING"])),
        "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n"
    );
    assert!(text(r.cmd(&["INFO", "replication"])).contains("role:slave"));
    assert_eq!(
        text(r.cmd(&["CONFIG", "SET", "replica-serve-stale-data", "yes"])),
        "+OK\r\n"
    );
    assert_eq!(
        text(r.cmd(&["CONFIG", "SET", "replica-read-only", "no"])),
        "+OK\r\n"
    );
    assert_eq!(text(r.cmd(&["SET", "k", "v"])), "+OK\r\n");
    assert_eq!(text(r.cmd(&["REPLICAOF", "NO", "ONE"])), "+OK\r\n");
    assert_eq!(text(r.cmd(&["GET", "k"])), "$1\r\nv\r\n");
}

/// A kvik master writing on all its threads at once (clients on several threads,
/// conflicting writes to shared keys, several databases, transactions): the stream
/// carries them in execution order, so a Redis replica ends with the same dataset.
#[test]
fn writes_from_every_thread_replicate_in_order() {
    if support::redis_server_or_skip().is_none() {
        return;
    }
    let kvik = TestServer::start(&[DEBUG[0], DEBUG[1], "--server-threads", "4"]);
    let port = kvik.port().to_string();
    let redis = RealRedis::start(&[DEBUG[0], DEBUG[1], "--replicaof", "127.0.0.1", &port]);
    let addr = kvik.addr();
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut c = RawConn::connect(&addr);
                for i in 0..300 {
                    let db = ((w + i) % 3).to_string();
                    let n = (i % 17).to_string();
                    c.cmd(&["SELECT", &db]);
                    c.cmd(&["INCRBY", "counter", &n]);
                    c.cmd(&["RPUSH", "list", &format!("{w}:{i}")]);
                    c.cmd(&["HSET", "hash", &n, &format!("{w}:{i}")]);
                    c.cmd(&["SET", &format!("k{}", i % 50), &format!("{w}:{i}")]);
                    if i % 10 == 0 {
                        c.cmd(&["MULTI"]);
                        c.cmd(&["LPOP", "list"]);
                        c.cmd(&["ZINCRBY", "z", "1", &n]);
                        c.cmd(&["EXEC"]);
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let mut m = kvik.raw();
    let mut r = redis.raw();
    assert_in_sync(&mut m, &mut r);
}

/// `repl-backlog-ttl`: a master left without replicas that long frees its backlog
/// and takes a new replication id, as Redis does; its offset stands still until the
/// next replica's full sync begins the stream again.
#[test]
fn a_master_without_replicas_frees_its_backlog_after_the_ttl() {
    let master = TestServer::start(&["--repl-backlog-ttl", "1"]);
    let port = master.port().to_string();
    let mut m = master.raw();
    {
        let replica = TestServer::start(&["--replicaof", "127.0.0.1", &port]);
        let mut r = replica.raw();
        m.cmd(&["SET", "k", "v"]);
        wait_for("the replica to have the key", || {
            r.cmd(&["GET", "k"]) == b"$1\r\nv\r\n"
        });
    }
    let replid = m.info_field("replication", "master_replid");
    wait_for("the backlog to be freed", || {
        m.info_field("replication", "repl_backlog_active") == "0"
    });
    assert_ne!(m.info_field("replication", "master_replid"), replid);
    let offset = m.info_field("replication", "master_repl_offset");
    m.cmd(&["SET", "k2", "v"]);
    assert_eq!(m.info_field("replication", "master_repl_offset"), offset);

    let replica = TestServer::start(&["--replicaof", "127.0.0.1", &port]);
    let mut r = replica.raw();
    wait_for("a new replica to sync", || {
        r.cmd(&["GET", "k2"]) == b"$1\r\nv\r\n"
    });
    assert_eq!(m.info_field("replication", "repl_backlog_active"), "1");
}

/// `bind-source-addr`: the replica connects to its master from that address.
#[test]
fn a_replica_connects_from_bind_source_addr() {
    let master = TestServer::start(&[]);
    let port = master.port().to_string();
    let replica = TestServer::start(&[
        "--bind-source-addr",
        "127.0.0.2",
        "--replicaof",
        "127.0.0.1",
        &port,
    ]);
    let mut m = master.raw();
    wait_for("the replica to attach", || {
        m.info_field("replication", "connected_slaves") == "1"
    });
    let line = m.info_field("replication", "slave0");
    assert!(line.starts_with("ip=127.0.0.2,"), "{line}");
    drop(replica);
}

/// DEBUG CHANGE-REPL-ID starts a new history: a replica that reconnects cannot
/// continue and syncs in full.
#[test]
fn debug_change_repl_id_forces_the_next_sync_to_be_full() {
    let master = TestServer::start(&["--enable-debug-command", "yes"]);
    let port = master.port().to_string();
    let replica = TestServer::start(&["--replicaof", "127.0.0.1", &port]);
    let mut m = master.raw();
    let mut r = replica.raw();
    wait_for("the first sync", || {
        r.info_field("replication", "master_link_status") == "up"
    });
    let replid = m.info_field("replication", "master_replid");
    assert_eq!(m.cmd(&["DEBUG", "CHANGE-REPL-ID"]), b"+OK\r\n");
    assert_ne!(m.info_field("replication", "master_replid"), replid);
    assert_eq!(
        m.info_field("replication", "master_replid2"),
        "0".repeat(40)
    );
    m.cmd(&["CLIENT", "KILL", "TYPE", "replica"]);
    wait_for("a second full sync", || {
        m.info_field("stats", "sync_full") == "2"
            && r.info_field("replication", "master_link_status") == "up"
    });
    assert_eq!(m.info_field("stats", "sync_partial_err"), "1");
}
