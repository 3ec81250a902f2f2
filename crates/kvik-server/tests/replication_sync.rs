//! How full syncs are shared and taken, as Redis 7.0 configures them: one diskless
//! snapshot for every replica that arrives within `repl-diskless-sync-delay` (or
//! until `repl-diskless-sync-max-replicas` wait), a replica's `repl-diskless-load`
//! (through a file, from the socket when empty, or beside the served dataset), and
//! what a replica does when it cannot apply its master's stream
//! (`propagation-error-behavior`, `replica-ignore-disk-write-errors`).

mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};
use support::proxy::Proxy;
use support::{wait_for, RawConn, RealRedis, TestServer};

const DEBUG: [&str; 2] = ["--enable-debug-command", "yes"];

fn text(reply: Vec<u8>) -> String {
    String::from_utf8_lossy(&reply).into_owned()
}

/// Wait until `replica` is linked and caught up with `master`, then compare their
/// datasets by digest.
fn assert_same_data(master: &mut RawConn, replica: &mut RawConn) {
    wait_for("the link to come up", || {
        replica.info_field("replication", "master_link_status") == "up"
    });
    wait_for("the replica to reach the master's offset", || {
        let m = master.info_field("replication", "master_repl_offset");
        replica.info_field("replication", "slave_repl_offset") == m
    });
    assert_eq!(
        text(replica.cmd(&["DEBUG", "DIGEST"])),
        text(master.cmd(&["DEBUG", "DIGEST"])),
        "datasets differ"
    );
}

/// How many snapshots the master's log says it took for full syncs.
fn sync_snapshots(log: &str) -> usize {
    log.matches("Starting a full sync snapshot").count()
}

/// Replicas of `master`: two kvik ones, and a redis-server when there is one.
fn replicas_of(master: &TestServer, extra: &[&str]) -> (Vec<TestServer>, Option<RealRedis>) {
    let port = master.port().to_string();
    let mut args = vec![DEBUG[0], DEBUG[1], "--replicaof", "127.0.0.1", &port];
    args.extend_from_slice(extra);
    let kviks = (0..2).map(|_| TestServer::start(&args)).collect();
    let redis = support::redis_server_path()
        .map(|_| RealRedis::start(&[DEBUG[0], DEBUG[1], "--replicaof", "127.0.0.1", &port]));
    (kviks, redis)
}

#[test]
fn one_snapshot_serves_every_replica_once_enough_wait() {
    let wanted = 2 + usize::from(support::redis_server_path().is_some());
    let wanted_text = wanted.to_string();
    // A delay no test waits out: only the count of waiting replicas starts it.
    let master = TestServer::start(&[
        DEBUG[0],
        DEBUG[1],
        "--repl-diskless-sync-delay",
        "600",
        "--repl-diskless-sync-max-replicas",
        &wanted_text,
    ]);
    let mut m = master.raw();
    m.cmd(&["DEBUG", "POPULATE", "5000"]);
    m.cmd(&["RPUSH", "list", "a", "b", "c"]);
    let (kviks, redis) = replicas_of(&master, &[]);
    for replica in kviks.iter().chain(redis.as_deref()) {
        assert_same_data(&mut m, &mut replica.raw());
    }
    let log = master.stdout();
    assert_eq!(sync_snapshots(&log), 1, "{log}");
    let one = format!("Starting a full sync snapshot (diskless) for {wanted} replica(s)");
    assert!(log.contains(&one), "{log}");
    assert_eq!(m.info_field("stats", "sync_full"), wanted_text);
    // The stream after the snapshot reaches each of them.
    m.cmd(&["SET", "after", "1"]);
    for replica in kviks.iter().chain(redis.as_deref()) {
        assert_same_data(&mut m, &mut replica.raw());
    }
}

#[test]
fn a_diskless_sync_waits_its_delay_for_more_replicas() {
    let master = TestServer::start(&[DEBUG[0], DEBUG[1], "--repl-diskless-sync-delay", "2"]);
    let mut m = master.raw();
    m.cmd(&["DEBUG", "POPULATE", "1000"]);
    let started = Instant::now();
    let (kviks, redis) = replicas_of(&master, &[]);
    for replica in kviks.iter().chain(redis.as_deref()) {
        assert_same_data(&mut m, &mut replica.raw());
    }
    assert!(started.elapsed() >= Duration::from_secs(2));
    let log = master.stdout();
    assert_eq!(sync_snapshots(&log), 1, "{log}");
    // A replica arriving after the snapshot began gets one of its own.
    let late = TestServer::start(&[
        DEBUG[0],
        DEBUG[1],
        "--replicaof",
        "127.0.0.1",
        &master.port().to_string(),
    ]);
    assert_same_data(&mut m, &mut late.raw());
    assert_eq!(sync_snapshots(&master.stdout()), 2);
}

#[test]
fn repl_diskless_load_disabled_takes_the_sync_through_a_file() {
    let master = TestServer::start(&[DEBUG[0], DEBUG[1]]);
    let mut m = master.raw();
    m.cmd(&["DEBUG", "POPULATE", "1000"]);
    let port = master.port().to_string();
    let replica = TestServer::start(&[DEBUG[0], DEBUG[1], "--replicaof", "127.0.0.1", &port]);
    let mut r = replica.raw();
    assert_same_data(&mut m, &mut r);
    assert!(replica.stdout().contains("from master to disk"));
    // The file stays as the replica's RDB, as Redis's replicas keep it.
    assert!(replica.dir().join("dump.rdb").exists());
    // ... unless nothing persists here and rdb-del-sync-files says so.
    let deleting = TestServer::start(&[
        DEBUG[0],
        DEBUG[1],
        "--rdb-del-sync-files",
        "yes",
        "--replicaof",
        "127.0.0.1",
        &port,
    ]);
    assert_same_data(&mut m, &mut deleting.raw());
    assert!(!deleting.dir().join("dump.rdb").exists());
}

#[test]
fn repl_diskless_load_on_empty_db_reads_the_socket_only_when_empty() {
    let master = TestServer::start(&[DEBUG[0], DEBUG[1]]);
    let mut m = master.raw();
    m.cmd(&["DEBUG", "POPULATE", "1000"]);
    let port = master.port().to_string();
    let replica = TestServer::start(&[
        DEBUG[0],
        DEBUG[1],
        "--repl-diskless-load",
        "on-empty-db",
        "--replicaof",
        "127.0.0.1",
        &port,
    ]);
    let mut r = replica.raw();
    assert_same_data(&mut m, &mut r);
    assert!(replica.stdout().contains("from master to the keyspace"));
    assert!(!replica.dir().join("dump.rdb").exists());
    // With keys of its own, the next full sync goes through a file.
    r.cmd(&["REPLICAOF", "NO", "ONE"]);
    r.cmd(&["SET", "mine", "1"]);
    r.cmd(&["REPLICAOF", "127.0.0.1", &port]);
    assert_same_data(&mut m, &mut r);
    assert!(replica.stdout().contains("from master to disk"));
    assert_eq!(text(r.cmd(&["EXISTS", "mine"])), ":0\r\n");
}

/// swapdb: while a full sync of the same history loads beside it, the replica
/// serves its old dataset; a sync cut mid-way leaves that dataset whole.
#[test]
fn repl_diskless_load_swapdb_serves_the_old_data_and_keeps_it_when_cut() {
    let master = TestServer::start(&[
        DEBUG[0],
        DEBUG[1],
        "--repl-backlog-size",
        "16384",
        "--rdbcompression",
        "no",
    ]);
    let mut m = master.raw();
    // A payload far larger than what the sockets between hold, so that a cut
    // interrupts the transfer itself.
    m.cmd(&["DEBUG", "POPULATE", "3000", "old", "10000"]);
    let proxy = Proxy::start(&master.addr());
    let replica = TestServer::start(&[
        DEBUG[0],
        DEBUG[1],
        "--repl-diskless-load",
        "swapdb",
        "--replicaof",
        "127.0.0.1",
        &proxy.port().to_string(),
    ]);
    let mut r = replica.raw();
    assert_same_data(&mut m, &mut r);
    let old_value = text(r.cmd(&["GET", "old:1"]));
    assert!(old_value.starts_with("$10000\r\nvalue:1"), "{old_value}");
    // The link breaks, and the master writes more than its backlog keeps: the
    // replica's next sync is full, of the same history.
    proxy.cut();
    wait_for("the master to see its replica gone", || {
        m.info_field("replication", "connected_slaves") == "0"
    });
    let big = "x".repeat(1024);
    for i in 0..64 {
        m.cmd(&["SET", &format!("new:{i}"), &big]);
    }
    // A slow load (1 ms a key), to look at it and cut it mid-way.
    r.cmd(&["CONFIG", "SET", "key-load-delay", "1000"]);
    proxy.heal();
    wait_for("the load beside the dataset to start", || {
        r.info_field("persistence", "async_loading") == "1"
    });
    assert_eq!(r.info_field("persistence", "loading"), "0");
    assert_eq!(text(r.cmd(&["GET", "old:1"])), old_value);
    assert_eq!(text(r.cmd(&["DBSIZE"])), ":3000\r\n");
    proxy.cut();
    wait_for("the load to stop", || {
        r.info_field("persistence", "async_loading") == "0"
    });
    assert_eq!(text(r.cmd(&["GET", "old:1"])), old_value);
    assert_eq!(text(r.cmd(&["DBSIZE"])), ":3000\r\n");
    assert_eq!(text(r.cmd(&["EXISTS", "new:1"])), ":0\r\n");
    // Healed, the next sync completes and swaps the new dataset in.
    r.cmd(&["CONFIG", "SET", "key-load-delay", "0"]);
    proxy.heal();
    assert_same_data(&mut m, &mut r);
    assert_eq!(text(r.cmd(&["EXISTS", "new:1"])), ":1\r\n");
}

/// A replica following a different history under swapdb answers -LOADING while
/// it loads (its old data is no earlier point of the new one), and keeps its old
/// data when that sync fails.
#[test]
fn repl_diskless_load_swapdb_of_another_history_answers_loading() {
    let master = TestServer::start(&[DEBUG[0], DEBUG[1], "--rdbcompression", "no"]);
    let mut m = master.raw();
    m.cmd(&["DEBUG", "POPULATE", "3000", "theirs", "10000"]);
    let proxy = Proxy::start(&master.addr());
    let replica = TestServer::start(&[
        DEBUG[0],
        DEBUG[1],
        "--repl-diskless-load",
        "swapdb",
        "--key-load-delay",
        "1000",
    ]);
    let mut r = replica.raw();
    r.cmd(&["SET", "mine", "1"]);
    r.cmd(&["REPLICAOF", "127.0.0.1", &proxy.port().to_string()]);
    wait_for("the load to start", || {
        r.info_field("persistence", "loading") == "1"
    });
    assert!(text(r.cmd(&["GET", "mine"])).starts_with("-LOADING"));
    proxy.cut();
    wait_for("the load to stop", || {
        r.info_field("persistence", "loading") == "0"
    });
    assert_eq!(text(r.cmd(&["GET", "mine"])), "$1\r\n1\r\n");
}

/// A fake master: answers the handshake, sends `rdb` as the full sync, then
/// `stream`, and keeps the connection open until the test ends.
fn fake_master(rdb: Vec<u8>, stream: Vec<u8>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let (mut socket, _) = listener.accept().unwrap();
        let mut read = Vec::new();
        let mut buf = [0u8; 4096];
        // Read until PSYNC, answering each command of the handshake.
        loop {
            let n = socket.read(&mut buf).unwrap_or(0);
            if n == 0 {
                return;
            }
            read.extend_from_slice(&buf[..n]);
            let seen = String::from_utf8_lossy(&read).to_string();
            if seen.contains("PSYNC") {
                break;
            }
            while let Some(end) = support::reply_len(&read).ok().flatten() {
                let command = String::from_utf8_lossy(&read[..end]).to_uppercase();
                read.drain(..end);
                let answer: &[u8] = if command.contains("PING") {
                    b"+PONG\r\n"
                } else {
                    b"+OK\r\n"
                };
                socket.write_all(answer).unwrap();
            }
        }
        let id = "a".repeat(40);
        let mut sync = format!("+FULLRESYNC {id} 0\r\n${}\r\n", rdb.len()).into_bytes();
        sync.extend_from_slice(&rdb);
        socket.write_all(&sync).unwrap();
        socket.write_all(&stream).unwrap();
        // Swallow the replica's ACKs until it goes.
        while socket.read(&mut buf).unwrap_or(0) > 0 {}
    });
    port
}

/// An empty dataset's RDB, as kvik writes it.
fn empty_rdb() -> Vec<u8> {
    let server = TestServer::start(&[]);
    assert_eq!(text(server.raw().cmd(&["SAVE"])), "+OK\r\n");
    std::fs::read(server.dir().join("dump.rdb")).unwrap()
}

/// `SET x abc` then `INCR x`: the second fails on any replica.
fn failing_stream() -> Vec<u8> {
    let mut stream = support::encode_command(&["SET", "x", "abc"]);
    stream.extend(support::encode_command(&["INCR", "x"]));
    stream.extend(support::encode_command(&["SET", "y", "1"]));
    stream
}

#[test]
fn propagation_error_behavior_decides_whether_a_replica_goes_on() {
    let rdb = empty_rdb();
    let port = fake_master(rdb.clone(), failing_stream()).to_string();
    let going_on = TestServer::start(&["--replicaof", "127.0.0.1", &port]);
    let mut r = going_on.raw();
    wait_for("the stream after the error to apply", || {
        text(r.cmd(&["GET", "y"])) == "$1\r\n1\r\n"
    });
    assert_eq!(r.info_field("stats", "unexpected_error_replies"), "1");
    let log = going_on.stdout();
    assert!(
        log.contains("== CRITICAL == This replica is sending an error to its master: 'ERR value is not an integer or out of range' after processing the command 'INCR'"),
        "{log}"
    );
    for behavior in ["panic-on-replicas", "panic"] {
        let port = fake_master(rdb.clone(), failing_stream()).to_string();
        let mut stopping = TestServer::start(&[
            "--propagation-error-behavior",
            behavior,
            "--replicaof",
            "127.0.0.1",
            &port,
        ]);
        stopping.assert_exits_within(Duration::from_secs(20));
        let log = stopping.stdout();
        assert!(
            log.contains(
                "This replica panicked sending an error to its master after processing the command 'INCR'"
            ),
            "{log}"
        );
    }
}

#[test]
fn propagation_error_behavior_panic_stops_an_aof_load_that_fails() {
    let dir = support::scratch_dir("aof-error");
    let dir_arg = dir.to_string_lossy().into_owned();
    let args = |behavior: &'static str| {
        vec![
            "--dir".to_string(),
            dir_arg.clone(),
            "--appendonly".into(),
            "yes".into(),
            "--propagation-error-behavior".into(),
            behavior.into(),
        ]
    };
    let incr_file = || {
        std::fs::read_dir(dir.join("appendonlydir"))
            .ok()?
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().ends_with(".incr.aof"))
    };
    {
        let writer = TestServer::start(&as_strs(&args("ignore")));
        writer.raw().cmd(&["SET", "x", "abc"]);
        wait_for("the write to reach the AOF", || {
            incr_file()
                .and_then(|p| std::fs::read(p).ok())
                .is_some_and(|bytes| bytes.windows(3).any(|w| w == b"abc"))
        });
    }
    let incr = incr_file().unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&incr)
        .unwrap();
    file.write_all(&support::encode_command(&["INCR", "x"]))
        .unwrap();
    drop(file);
    let ignoring = TestServer::start(&as_strs(&args("panic-on-replicas")));
    assert_eq!(text(ignoring.raw().cmd(&["GET", "x"])), "$3\r\nabc\r\n");
    assert!(ignoring
        .stdout()
        .contains("== CRITICAL == This server is sending an error to its AOF-loading-client"));
    drop(ignoring);
    let panicking = TestServer::try_start(&as_strs(&args("panic")));
    let why = panicking.err().expect("the load stops the server");
    assert!(
        why.contains("This server panicked sending an error to its AOF-loading-client after processing the command 'INCR'"),
        "{why}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn as_strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// A replica whose saves fail: its master's writes stop it, unless
/// `replica-ignore-disk-write-errors yes` has it apply them with a warning.
#[test]
fn replica_ignore_disk_write_errors_decides_whether_a_replica_goes_on() {
    let master = TestServer::start(&[DEBUG[0], DEBUG[1]]);
    let mut m = master.raw();
    let port = master.port().to_string();
    for ignore in ["yes", "no"] {
        let dir = support::scratch_dir("replica-disk-error");
        let mut replica = TestServer::start(&[
            DEBUG[0],
            DEBUG[1],
            "--dir",
            dir.to_str().unwrap(),
            "--save",
            "3600 1",
            "--replica-ignore-disk-write-errors",
            ignore,
            "--replicaof",
            "127.0.0.1",
            &port,
        ]);
        let mut r = replica.raw();
        assert_same_data(&mut m, &mut r);
        std::fs::remove_dir_all(&dir).unwrap();
        r.cmd(&["BGSAVE"]);
        wait_for("the save to fail", || {
            r.info_field("persistence", "rdb_last_bgsave_status") == "err"
        });
        m.cmd(&["SET", "while-failing", ignore]);
        if ignore == "yes" {
            wait_for("the write to apply", || {
                text(r.cmd(&["GET", "while-failing"])) == "$3\r\nyes\r\n"
            });
            assert!(replica.stdout().contains(
                "Replica is applying a command even though it is unable to write to disk."
            ));
        } else {
            replica.assert_exits_within(Duration::from_secs(20));
            assert!(replica
                .stdout()
                .contains("Replica was unable to write command to disk."));
        }
    }
}
