//! The append-only file, with real processes: every acknowledged write survives
//! kill -9 with `appendfsync always` and `everysec` (several writer connections and
//! threads, during a rewrite too, transactions all or nothing); the files are Redis 7.0's,
//! so redis-server 7.0 loads kvik's AOF and kvik loads redis-server's (DEBUG DIGEST
//! equal), and redis-check-aof accepts kvik's manifest; torn, corrupt and missing
//! files get Redis's messages; a Redis 6 single file is upgraded; CONFIG SET
//! appendonly and BGREWRITEAOF answer as Redis does.

mod support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{RawConn, RealRedis, TestServer};

const DEBUG: [&str; 2] = ["--enable-debug-command", "yes"];

fn text(reply: &[u8]) -> String {
    String::from_utf8_lossy(reply).into_owned()
}

/// A kvik with the AOF on, writing its data in `dir`.
fn kvik_on(dir: &Path, extra: &[&str]) -> TestServer {
    let mut args = vec![
        DEBUG[0],
        DEBUG[1],
        "--dir",
        dir.to_str().unwrap(),
        "--appendonly",
        "yes",
    ];
    args.extend_from_slice(extra);
    TestServer::start(&args)
}

/// The RESP encoding of one command.
fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

/// Poll INFO persistence until `field` reads `value` (10 s at most).
fn wait_info(conn: &mut RawConn, field: &str, value: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = conn.info_field("persistence", field);
        if now == value {
            return;
        }
        assert!(Instant::now() < deadline, "{field} stayed {now}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Commands covering the types, expiry, several databases and a transaction.
fn write_dataset(conn: &mut RawConn) {
    let commands: &[&[&str]] = &[
        &["SET", "s", "hello"],
        &["SET", "n", "10"],
        &["INCRBY", "n", "5"],
        &["SET", "ttl", "v", "EX", "100000"],
        &["RPUSH", "l", "a", "b", "c"],
        &["LPOP", "l"],
        &["HSET", "h", "f", "v", "g", "w"],
        &["SADD", "set", "x", "y", "z"],
        &["ZADD", "z", "1", "a", "2.5", "b"],
        &["XADD", "st", "1-1", "f", "v"],
        &["EXPIRE", "l", "100000"],
        &["SELECT", "3"],
        &["SET", "db3", "three"],
        &["MULTI"],
        &["SET", "tx1", "1"],
        &["SET", "tx2", "2"],
        &["EXEC"],
        &["SELECT", "0"],
    ];
    for c in commands {
        let reply = conn.cmd(c);
        assert_ne!(reply.first(), Some(&b'-'), "{c:?}: {}", text(&reply));
    }
}

/// Copy the files of `from` (one level) into a new directory `to/appendonlydir`.
fn copy_aof_dir(from: &Path, to: &Path) {
    let target = to.join("appendonlydir");
    std::fs::create_dir_all(&target).unwrap();
    for entry in std::fs::read_dir(from.join("appendonlydir")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), target.join(entry.file_name())).unwrap();
    }
}

fn manifest_text(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("appendonlydir/appendonly.aof.manifest")).unwrap()
}

#[test]
fn files_and_manifest_are_named_and_worded_as_redis_7() {
    let dir = support::scratch_dir("aof-layout");
    let kvik = kvik_on(&dir, &["--appendfsync", "always"]);
    let mut conn = kvik.raw();
    assert_eq!(conn.info_field("persistence", "aof_enabled"), "1");
    conn.cmd(&["SET", "a", "1"]);
    conn.cmd(&["SELECT", "2"]);
    conn.cmd(&["SET", "b", "2"]);
    assert_eq!(
        manifest_text(&dir),
        "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
    );
    let incr = std::fs::read(dir.join("appendonlydir/appendonly.aof.1.incr.aof")).unwrap();
    let mut expected = encode(&["SELECT", "0"]);
    expected.extend(encode(&["SET", "a", "1"]));
    expected.extend(encode(&["SELECT", "2"]));
    expected.extend(encode(&["SET", "b", "2"]));
    assert_eq!(text(&incr), text(&expected));
    let base = std::fs::read(dir.join("appendonlydir/appendonly.aof.1.base.rdb")).unwrap();
    assert!(base.starts_with(b"REDIS0010"));

    assert_eq!(
        conn.cmd(&["BGREWRITEAOF"]),
        b"+Background append only file rewriting started\r\n"
    );
    wait_info(&mut conn, "aof_rewrite_in_progress", "0");
    assert_eq!(conn.info_field("persistence", "aof_rewrites"), "1");
    assert_eq!(
        manifest_text(&dir),
        "file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.2.incr.aof seq 2 type i\n"
    );
    let mut names: Vec<String> = std::fs::read_dir(dir.join("appendonlydir"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "appendonly.aof.2.base.rdb",
            "appendonly.aof.2.incr.aof",
            "appendonly.aof.manifest"
        ]
    );
    // The new incremental file SELECTs before its first command.
    conn.cmd(&["SET", "c", "3"]);
    let incr = std::fs::read(dir.join("appendonlydir/appendonly.aof.2.incr.aof")).unwrap();
    assert!(
        incr.starts_with(&encode(&["SELECT", "2"])),
        "{}",
        text(&incr)
    );
    let info = text(&conn.cmd(&["INFO", "persistence"]));
    for field in [
        "aof_current_size:",
        "aof_base_size:",
        "aof_pending_rewrite:0",
        "aof_buffer_length:",
        "aof_pending_bio_fsync:0",
        "aof_delayed_fsync:0",
        "aof_last_write_status:ok",
        "aof_last_bgrewrite_status:ok",
    ] {
        assert!(info.contains(field), "{field} missing in {info}");
    }
}

/// What one writer connection got acknowledged before the server died.
#[derive(Default)]
struct Acked {
    keys: Vec<String>,
    /// Transactions attempted (acknowledged or not): both keys or neither.
    transactions: Vec<String>,
}

/// Write on one connection until it breaks: plain SETs, and every fifth round a
/// MULTI/EXEC of two SETs.
fn write_until_killed(addr: String, tag: String, go: Arc<AtomicBool>) -> Acked {
    let mut conn = RawConn::connect(&addr);
    let mut acked = Acked::default();
    go.store(true, Ordering::Relaxed);
    for i in 0.. {
        if i % 5 == 4 {
            let (a, b) = (format!("{tag}:tx{i}:a"), format!("{tag}:tx{i}:b"));
            let mut batch = encode(&["MULTI"]);
            batch.extend(encode(&["SET", &a, "1"]));
            batch.extend(encode(&["SET", &b, "1"]));
            batch.extend(encode(&["EXEC"]));
            acked.transactions.push(format!("{tag}:tx{i}"));
            if conn.try_send(&batch).is_err() {
                return acked;
            }
            let mut replies = Vec::new();
            for _ in 0..4 {
                match conn.read_reply_or_eof() {
                    Ok(Some(r)) => replies.push(r),
                    _ => return acked,
                }
            }
            assert_eq!(replies[3], b"*2\r\n+OK\r\n+OK\r\n");
            acked.keys.extend([a, b]);
        } else {
            let key = format!("{tag}:{i}");
            if conn.try_send(&encode(&["SET", &key, "v"])).is_err() {
                return acked;
            }
            match conn.read_reply_or_eof() {
                Ok(Some(r)) => {
                    assert_eq!(r, b"+OK\r\n");
                    acked.keys.push(key);
                }
                _ => return acked,
            }
        }
    }
    acked
}

#[test]
fn acknowledged_writes_survive_kill_9() {
    let dir = support::scratch_dir("aof-crash");
    let mut everything = Vec::new();
    // A reply leaves only once its effects are written: a killed process loses
    // none of them whatever the policy (an OS crash is what everysec may lose).
    for (round, fsync) in ["always", "always", "everysec"].into_iter().enumerate() {
        let kvik = kvik_on(&dir, &["--appendfsync", fsync, "--server-threads", "4"]);
        let writers: Vec<_> = (0..6)
            .map(|w| {
                let (addr, tag) = (kvik.addr(), format!("r{round}w{w}"));
                let go = Arc::new(AtomicBool::new(false));
                let started = go.clone();
                let handle = std::thread::spawn(move || write_until_killed(addr, tag, go));
                (handle, started)
            })
            .collect();
        while !writers.iter().all(|(_, go)| go.load(Ordering::Relaxed)) {
            std::thread::yield_now();
        }
        // The moment of the kill: after a while of writing, and in the second
        // round while a rewrite runs.
        std::thread::sleep(Duration::from_millis(150 + 100 * round as u64));
        if round == 1 {
            let reply = kvik.raw().cmd(&["BGREWRITEAOF"]);
            assert!(reply.starts_with(b"+Background append only file rewriting"));
        }
        drop(kvik);
        for (handle, _) in writers {
            everything.push(handle.join().unwrap());
        }
        let restarted = kvik_on(&dir, &[]);
        let mut conn = restarted.raw();
        let mut acked_count = 0;
        for acked in &everything {
            for key in &acked.keys {
                assert_eq!(conn.cmd(&["EXISTS", key]), b":1\r\n", "{key} was lost");
                acked_count += 1;
            }
            for tx in &acked.transactions {
                let a = conn.cmd(&["EXISTS", &format!("{tx}:a")]);
                let b = conn.cmd(&["EXISTS", &format!("{tx}:b")]);
                assert_eq!(a, b, "half of {tx} was applied");
            }
        }
        assert!(acked_count > 0, "nothing was acknowledged");
    }
}

fn redis_check_aof() -> Option<PathBuf> {
    let path = PathBuf::from("/usr/bin/redis-check-aof");
    if path.is_file() {
        return Some(path);
    }
    if std::env::var("KVIK_REQUIRE_REDIS").is_ok_and(|v| !v.is_empty() && v != "0") {
        panic!("redis-check-aof not found and KVIK_REQUIRE_REDIS=1");
    }
    println!("SKIPPED: redis-check-aof not found");
    None
}

#[test]
fn redis_loads_kvik_aof_and_redis_check_aof_accepts_it() {
    if support::redis_server_or_skip().is_none() {
        return;
    }
    let dir = support::scratch_dir("aof-kvik-to-redis");
    let kvik = kvik_on(&dir, &["--appendfsync", "always"]);
    let mut conn = kvik.raw();
    write_dataset(&mut conn);
    conn.cmd(&["BGREWRITEAOF"]);
    wait_info(&mut conn, "aof_rewrite_in_progress", "0");
    // After the rewrite: some in the base, some in the new incremental file.
    conn.cmd(&["SET", "after", "rewrite"]);
    conn.cmd(&["DEL", "s"]);
    let digest = conn.cmd(&["DEBUG", "DIGEST"]);
    assert_eq!(conn.cmd(&["DEBUG", "LOADAOF"]), b"+OK\r\n");
    assert_eq!(conn.cmd(&["DEBUG", "DIGEST"]), digest);
    drop(kvik);
    if let Some(checker) = redis_check_aof() {
        let out = std::process::Command::new(checker)
            .arg(dir.join("appendonlydir/appendonly.aof.manifest"))
            .output()
            .unwrap();
        let said = text(&out.stdout);
        assert!(out.status.success(), "{said}");
        assert!(
            said.contains("All AOF files and manifest are valid"),
            "{said}"
        );
    }
    let redis_dir = support::scratch_dir("aof-redis-loads");
    copy_aof_dir(&dir, &redis_dir);
    let redis = RealRedis::start(&[
        DEBUG[0],
        DEBUG[1],
        "--dir",
        redis_dir.to_str().unwrap(),
        "--appendonly",
        "yes",
    ]);
    assert_eq!(redis.raw().cmd(&["DEBUG", "DIGEST"]), digest);
}

#[test]
fn kvik_loads_redis_aof() {
    if support::redis_server_or_skip().is_none() {
        return;
    }
    let dir = support::scratch_dir("aof-redis-to-kvik");
    let redis = RealRedis::start(&[
        DEBUG[0],
        DEBUG[1],
        "--dir",
        dir.to_str().unwrap(),
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
    ]);
    let mut conn = redis.raw();
    write_dataset(&mut conn);
    conn.cmd(&["BGREWRITEAOF"]);
    wait_info(&mut conn, "aof_rewrite_in_progress", "0");
    conn.cmd(&["SET", "after", "rewrite"]);
    conn.cmd(&["SETEX", "ex", "1000", "v"]);
    let digest = conn.cmd(&["DEBUG", "DIGEST"]);
    drop(redis);
    let kvik_dir = support::scratch_dir("aof-kvik-loads");
    copy_aof_dir(&dir, &kvik_dir);
    let kvik = kvik_on(&kvik_dir, &[]);
    assert_eq!(kvik.raw().cmd(&["DEBUG", "DIGEST"]), digest);
}

/// A directory holding a small good AOF (two SETs in the incremental file).
fn good_aof() -> PathBuf {
    let dir = support::scratch_dir("aof-good");
    let kvik = kvik_on(&dir, &["--appendfsync", "always"]);
    let mut conn = kvik.raw();
    conn.cmd(&["SET", "a", "1"]);
    conn.cmd(&["SET", "b", "2"]);
    drop(kvik);
    dir
}

/// Change the incremental file of a copy of `good`; the copy's directory.
fn with_incr(good: &Path, change: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let dir = support::scratch_dir("aof-bad");
    copy_aof_dir(good, &dir);
    let incr = dir.join("appendonlydir/appendonly.aof.1.incr.aof");
    let mut bytes = std::fs::read(&incr).unwrap();
    change(&mut bytes);
    std::fs::write(&incr, bytes).unwrap();
    dir
}

/// Start kvik on `dir` expecting it to refuse; its log.
fn refused(dir: &Path, extra: &[&str]) -> String {
    let mut args = vec!["--dir", dir.to_str().unwrap(), "--appendonly", "yes"];
    args.extend_from_slice(extra);
    match TestServer::try_start(&args) {
        Ok(_) => panic!("a bad AOF was loaded"),
        Err(log) => log,
    }
}

#[test]
fn a_torn_tail_is_cut_with_redis_warnings_or_refused() {
    let good = good_aof();
    let torn = |bytes: &mut Vec<u8>| bytes.extend_from_slice(b"*3\r\n$3\r\nSET\r\n$1\r\nc");
    let dir = with_incr(&good, torn);
    let log = refused(&dir, &["--aof-load-truncated", "no"]);
    assert!(log.contains("Unexpected end of file reading the append only file appendonly.aof.1.incr.aof. You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>."), "{log}");

    let kvik = kvik_on(&dir, &["--appendfsync", "always"]);
    let log = kvik.stdout();
    assert!(
        log.contains(
            "!!! Warning: short read while loading the AOF file appendonly.aof.1.incr.aof!!!"
        ),
        "{log}"
    );
    assert!(
        log.contains("!!! Truncating the AOF appendonly.aof.1.incr.aof at offset 77 !!!"),
        "{log}"
    );
    assert!(
        log.contains(
            "AOF appendonly.aof.1.incr.aof loaded anyway because aof-load-truncated is enabled"
        ),
        "{log}"
    );
    let mut conn = kvik.raw();
    assert_eq!(conn.cmd(&["GET", "b"]), b"$1\r\n2\r\n");
    // Writes go on after the cut, and load again.
    conn.cmd(&["SET", "d", "4"]);
    drop(kvik);
    let again = kvik_on(&dir, &["--aof-load-truncated", "no"]);
    assert_eq!(
        again.raw().cmd(&["MGET", "a", "b", "c", "d"]),
        b"*4\r\n$1\r\n1\r\n$1\r\n2\r\n$-1\r\n$1\r\n4\r\n"
    );
}

#[test]
fn half_a_transaction_is_never_loaded() {
    let good = good_aof();
    let dir = with_incr(&good, |bytes| {
        bytes.extend(encode(&["MULTI"]));
        bytes.extend(encode(&["SET", "x", "1"]));
    });
    let kvik = kvik_on(&dir, &[]);
    assert!(kvik.stdout().contains(
        "Revert incomplete MULTI/EXEC transaction in AOF file appendonly.aof.1.incr.aof"
    ));
    assert_eq!(kvik.raw().cmd(&["EXISTS", "a", "x"]), b":1\r\n");
}

#[test]
fn corrupt_and_missing_files_are_refused_with_redis_messages() {
    let good = good_aof();
    let garbage = with_incr(&good, |bytes| {
        let tail = bytes.split_off(10);
        bytes.extend_from_slice(b"garbage!\r\n");
        bytes.extend(tail);
    });
    assert!(refused(&garbage, &[]).contains("Bad file format reading the append only file appendonly.aof.1.incr.aof: make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>"));

    let unknown = with_incr(&good, |bytes| bytes.extend(encode(&["NOSUCHCOMMAND", "x"])));
    assert!(refused(&unknown, &[]).contains(
        "Unknown command 'NOSUCHCOMMAND' reading the append only file appendonly.aof.1.incr.aof"
    ));

    let missing = with_incr(&good, |_| {});
    let manifest = missing.join("appendonlydir/appendonly.aof.manifest");
    let mut listed = std::fs::read_to_string(&manifest).unwrap();
    listed.push_str("file appendonly.aof.9.incr.aof seq 9 type i\n");
    std::fs::write(&manifest, listed).unwrap();
    assert!(refused(&missing, &[]).contains(
        "Unable to obtain the AOF file appendonly.aof.9.incr.aof length. stat: No such file or directory"
    ));

    let bad_manifest = with_incr(&good, |_| {});
    std::fs::write(
        bad_manifest.join("appendonlydir/appendonly.aof.manifest"),
        "file appendonly.aof seq 1\n",
    )
    .unwrap();
    let log = refused(&bad_manifest, &[]);
    assert!(log.contains(">>> 'file appendonly.aof seq 1'"), "{log}");
    assert!(log.contains("Invalid AOF manifest file format"), "{log}");
}

#[test]
fn a_redis_6_single_file_is_upgraded() {
    let dir = support::scratch_dir("aof-upgrade");
    let mut old = encode(&["SELECT", "0"]);
    old.extend(encode(&["SET", "k", "v"]));
    std::fs::write(dir.join("appendonly.aof"), old).unwrap();
    let kvik = kvik_on(&dir, &["--appendfsync", "always"]);
    let mut conn = kvik.raw();
    assert_eq!(conn.cmd(&["GET", "k"]), b"$1\r\nv\r\n");
    assert!(!dir.join("appendonly.aof").exists());
    assert_eq!(
        manifest_text(&dir),
        "file appendonly.aof seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
    );
    conn.cmd(&["SET", "k2", "v2"]);
    drop(kvik);
    let again = kvik_on(&dir, &[]);
    assert_eq!(
        again.raw().cmd(&["MGET", "k", "k2"]),
        b"*2\r\n$1\r\nv\r\n$2\r\nv2\r\n"
    );
}

#[test]
fn config_set_appendonly_turns_the_aof_on_after_a_rewrite_and_off() {
    let dir = support::scratch_dir("aof-config-set");
    let kvik = TestServer::start(&["--dir", dir.to_str().unwrap(), "--appendfsync", "always"]);
    let mut conn = kvik.raw();
    conn.cmd(&["SET", "before", "1"]);
    assert_eq!(conn.info_field("persistence", "aof_enabled"), "0");
    assert_eq!(
        conn.cmd(&["CONFIG", "SET", "appendonly", "yes"]),
        b"+OK\r\n"
    );
    // On at once, as Redis counts it; its base is in place once the rewrite ends.
    assert_eq!(conn.info_field("persistence", "aof_enabled"), "1");
    wait_info(&mut conn, "aof_rewrites", "1");
    conn.cmd(&["SET", "after", "2"]);
    assert_eq!(
        manifest_text(&dir),
        "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
    );
    assert_eq!(conn.cmd(&["CONFIG", "SET", "appendonly", "no"]), b"+OK\r\n");
    assert_eq!(conn.info_field("persistence", "aof_enabled"), "0");
    conn.cmd(&["SET", "not-in-aof", "3"]);
    drop(kvik);
    let again = kvik_on(&dir, &[]);
    assert_eq!(
        again.raw().cmd(&["MGET", "before", "after", "not-in-aof"]),
        b"*3\r\n$1\r\n1\r\n$1\r\n2\r\n$-1\r\n"
    );
}

#[test]
fn no_exit_while_the_first_aof_is_written_unless_forced() {
    let dir = support::scratch_dir("aof-initial-exit");
    let mut kvik = TestServer::start(&[DEBUG[0], DEBUG[1], "--dir", dir.to_str().unwrap()]);
    let mut conn = kvik.raw();
    conn.cmd(&["DEBUG", "POPULATE", "2000"]);
    // 10 ms per key: the first rewrite lasts 20 s, far longer than this test.
    conn.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "10000"]);
    assert_eq!(
        conn.cmd(&["CONFIG", "SET", "appendonly", "yes"]),
        b"+OK\r\n"
    );
    wait_info(&mut conn, "aof_rewrite_in_progress", "1");
    let refusals = |kvik: &TestServer| {
        kvik.stdout()
            .matches("Writing initial AOF, can't exit.")
            .count()
    };
    // NOSAVE and NOW change nothing: the dataset is in no AOF yet.
    for flags in [&[][..], &["NOSAVE"], &["NOW"], &["SAVE"]] {
        let mut shutdown = vec!["SHUTDOWN"];
        shutdown.extend_from_slice(flags);
        assert_eq!(
            text(&conn.cmd(&shutdown)),
            "-ERR Errors trying to SHUTDOWN. Check logs.\r\n"
        );
    }
    assert_eq!(refusals(&kvik), 4);
    assert!(kvik
        .stdout()
        .contains("Errors trying to shut down the server. Check the logs for more information."));
    // SIGTERM is refused the same way, and the server goes on.
    unsafe {
        libc::kill(kvik.pid() as libc::pid_t, libc::SIGTERM);
    }
    support::wait_for("the SIGTERM refused", || refusals(&kvik) == 5);
    assert_eq!(conn.cmd(&["PING"]), b"+PONG\r\n");
    assert_eq!(
        conn.info_field("persistence", "aof_rewrite_in_progress"),
        "1"
    );
    // FORCE exits anyway.
    conn.send_cmd(&["SHUTDOWN", "FORCE"]);
    kvik.assert_exits_within(Duration::from_secs(10));
    let log = kvik.stdout();
    assert!(log.contains("Writing initial AOF. Exit anyway."), "{log}");
    assert!(
        log.contains("There is a child rewriting the AOF. Killing it!"),
        "{log}"
    );
}

#[test]
fn bgrewriteaof_replies_as_redis() {
    let dir = support::scratch_dir("aof-replies");
    let kvik = kvik_on(
        &dir,
        &["--rdb-key-save-delay", "2000", "--appendfsync", "always"],
    );
    let mut conn = kvik.raw();
    for i in 0..200 {
        conn.cmd(&["SET", &format!("k{i}"), "v"]);
    }
    assert_eq!(
        conn.cmd(&["BGREWRITEAOF"]),
        b"+Background append only file rewriting started\r\n"
    );
    assert_eq!(
        conn.cmd(&["BGREWRITEAOF"]),
        b"-ERR Background append only file rewriting already in progress\r\n"
    );
    assert_eq!(
        conn.info_field("persistence", "aof_rewrite_in_progress"),
        "1"
    );
    // Writes go on while the base is written, and land in the new incr file.
    conn.cmd(&["SET", "during", "rewrite"]);
    wait_info(&mut conn, "aof_rewrite_in_progress", "0");
    conn.cmd(&["MULTI"]);
    conn.cmd(&["BGREWRITEAOF"]);
    assert_eq!(
        conn.cmd(&["EXEC"]),
        b"*1\r\n+Background append only file rewriting scheduled\r\n"
    );
    wait_info(&mut conn, "aof_rewrites", "2");
    let digest = conn.cmd(&["DEBUG", "DIGEST"]);
    drop(kvik);
    assert_eq!(kvik_on(&dir, &[]).raw().cmd(&["DEBUG", "DIGEST"]), digest);
}

#[test]
fn a_failed_write_refuses_writes_with_misconf() {
    if !Path::new("/dev/full").exists() {
        println!("SKIPPED: no /dev/full");
        return;
    }
    let dir = support::scratch_dir("aof-full");
    drop(kvik_on(&dir, &[]));
    // The incremental file becomes a disk that is always full.
    let incr = dir.join("appendonlydir/appendonly.aof.1.incr.aof");
    std::fs::remove_file(&incr).unwrap();
    std::os::unix::fs::symlink("/dev/full", &incr).unwrap();
    let kvik = kvik_on(&dir, &[]);
    // The write that fails is not acknowledged: its reply waits for the disk.
    let mut first = kvik.raw();
    first.send_cmd(&["SET", "k", "v"]);
    let mut conn = kvik.raw();
    wait_info(&mut conn, "aof_last_write_status", "err");
    assert_eq!(
        text(&conn.cmd(&["SET", "k", "w"])),
        "-MISCONF Errors writing to the AOF file: No space left on device\r\n"
    );
    assert_eq!(conn.cmd(&["GET", "k"]), b"$1\r\nv\r\n");
    // Without the AOF there is nothing to refuse, nor to wait for.
    assert_eq!(conn.cmd(&["CONFIG", "SET", "appendonly", "no"]), b"+OK\r\n");
    assert_eq!(first.read_reply(), b"+OK\r\n");
    assert_eq!(conn.cmd(&["SET", "k", "w"]), b"+OK\r\n");
}

/// A server with `appendfsync everysec` whose every fsync now takes `micros`, and
/// the background fsync of a first write under way.
fn everysec_with_fsyncs_taking(tag: &str, micros: &str) -> (PathBuf, TestServer, RawConn) {
    let dir = support::scratch_dir(tag);
    let kvik = kvik_on(&dir, &["--appendfsync", "everysec"]);
    let mut conn = kvik.raw();
    assert_eq!(conn.cmd(&["DEBUG", "AOF-FSYNC-SLEEP", micros]), b"+OK\r\n");
    assert_eq!(conn.cmd(&["SET", "first", "1"]), b"+OK\r\n");
    wait_info(&mut conn, "aof_pending_bio_fsync", "1");
    (dir, kvik, conn)
}

#[test]
fn everysec_writes_wait_for_a_stuck_fsync_two_seconds_at_most() {
    // The disk takes 30 s per fsync from now on: the background fsync of the
    // first write gets stuck.
    let (dir, kvik, mut conn) = everysec_with_fsyncs_taking("aof-stuck-fsync", "30000000");
    assert_eq!(conn.info_field("persistence", "aof_delayed_fsync"), "0");

    // A write now waits for the fsync, and goes through after two seconds.
    let mut writer = kvik.raw();
    let sent = Instant::now();
    writer.send_cmd(&["SET", "second", "2"]);
    // Meanwhile its effect waits in the buffer, and reads are served.
    support::wait_for("the postponed write in the buffer", || {
        conn.info_field("persistence", "aof_buffer_length") != "0"
    });
    assert_eq!(conn.cmd(&["GET", "first"]), b"$1\r\n1\r\n");
    assert_eq!(writer.read_reply(), b"+OK\r\n");
    let waited = sent.elapsed();
    assert!(
        waited >= Duration::from_secs(2) && waited < Duration::from_secs(20),
        "the write waited {waited:?}"
    );
    assert_eq!(conn.info_field("persistence", "aof_delayed_fsync"), "1");
    assert_eq!(conn.info_field("persistence", "aof_pending_bio_fsync"), "1");
    assert!(kvik.stdout().contains(
        "Asynchronous AOF fsync is taking too long (disk is busy?). Writing the AOF buffer without waiting for fsync to complete, this may slow down Redis."
    ));
    // The write is in the file, fsynced or not.
    let incr = std::fs::read(dir.join("appendonlydir/appendonly.aof.1.incr.aof")).unwrap();
    assert!(incr.ends_with(&encode(&["SET", "second", "2"])));
    assert_eq!(conn.cmd(&["DEBUG", "AOF-FSYNC-SLEEP", "0"]), b"+OK\r\n");
}

#[test]
fn everysec_writes_wait_for_a_slow_fsync_to_end() {
    // Each fsync takes a second: shorter than the two seconds a write waits.
    let (_dir, kvik, mut conn) = everysec_with_fsyncs_taking("aof-slow-fsync", "1000000");
    // The write waits for the fsync, and goes out once it is over, not counted
    // as delayed.
    let mut writer = kvik.raw();
    let sent = Instant::now();
    writer.send_cmd(&["SET", "second", "2"]);
    support::wait_for("the postponed write in the buffer", || {
        conn.info_field("persistence", "aof_buffer_length") != "0"
    });
    assert_eq!(writer.read_reply(), b"+OK\r\n");
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(conn.info_field("persistence", "aof_delayed_fsync"), "0");
    assert_eq!(conn.cmd(&["DEBUG", "AOF-FSYNC-SLEEP", "0"]), b"+OK\r\n");
}

#[test]
fn the_aof_is_rewritten_when_it_has_grown_enough() {
    let dir = support::scratch_dir("aof-auto");
    let kvik = kvik_on(
        &dir,
        &[
            "--auto-aof-rewrite-min-size",
            "4kb",
            "--auto-aof-rewrite-percentage",
            "100",
        ],
    );
    let mut conn = kvik.raw();
    let value = "x".repeat(100);
    for i in 0..100 {
        conn.cmd(&["SET", &format!("k{}", i % 10), &value]);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while conn.info_field("persistence", "aof_rewrites") == "0" {
        assert!(Instant::now() < deadline, "no automatic rewrite");
        std::thread::sleep(Duration::from_millis(10));
    }
    wait_info(&mut conn, "aof_rewrite_in_progress", "0");
    assert!(kvik
        .stdout()
        .contains("Starting automatic rewriting of AOF on"));
    assert!(!manifest_text(&dir).contains("appendonly.aof.1.base.rdb"));
}

#[test]
fn timestamp_annotations_are_written_and_skipped_when_loading() {
    let dir = support::scratch_dir("aof-timestamps");
    let kvik = kvik_on(
        &dir,
        &["--aof-timestamp-enabled", "yes", "--appendfsync", "always"],
    );
    kvik.raw().cmd(&["SET", "k", "v"]);
    drop(kvik);
    let incr = std::fs::read(dir.join("appendonlydir/appendonly.aof.1.incr.aof")).unwrap();
    let incr = text(&incr);
    assert!(incr.starts_with("#TS:"), "{incr}");
    assert!(incr.contains("\r\n*2\r\n$6\r\nSELECT\r\n"), "{incr}");
    if let Some(checker) = redis_check_aof() {
        let out = std::process::Command::new(checker)
            .arg(dir.join("appendonlydir/appendonly.aof.manifest"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stdout));
    }
    assert_eq!(kvik_on(&dir, &[]).raw().cmd(&["GET", "k"]), b"$1\r\nv\r\n");
}

#[test]
fn bgsave_during_a_rewrite_answers_as_redis() {
    let dir = support::scratch_dir("aof-bgsave");
    let kvik = kvik_on(&dir, &["--rdb-key-save-delay", "5000"]);
    let mut conn = kvik.raw();
    for i in 0..200 {
        conn.cmd(&["SET", &format!("k{i}"), "v"]);
    }
    conn.cmd(&["BGREWRITEAOF"]);
    assert_eq!(
        text(&conn.cmd(&["BGSAVE"])),
        "-ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.\r\n"
    );
    assert_eq!(
        conn.cmd(&["BGSAVE", "SCHEDULE"]),
        b"+Background saving scheduled\r\n"
    );
    wait_info(&mut conn, "aof_rewrite_in_progress", "0");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !dir.join("dump.rdb").exists() {
        assert!(Instant::now() < deadline, "the scheduled BGSAVE never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `aof-use-rdb-preamble no`: the rewrite writes its base as the commands that
/// rebuild every type (streams with their groups, consumers and pending entries,
/// deadlines, functions, several databases); kvik and redis-server load it to the
/// same dataset and redis-check-aof accepts it.
#[test]
fn a_base_without_rdb_preamble_holds_commands_that_rebuild_the_dataset() {
    let dir = support::scratch_dir("aof-no-preamble");
    let kvik = kvik_on(&dir, &["--aof-use-rdb-preamble", "no"]);
    let mut conn = kvik.raw();
    write_dataset(&mut conn);
    let many: Vec<String> = (0..150).map(|i| format!("m{i}")).collect();
    let mut sadd = vec!["SADD", "big-set"];
    sadd.extend(many.iter().map(String::as_str));
    let mut rpush = vec!["RPUSH", "big-list"];
    rpush.extend(many.iter().map(String::as_str));
    let mut hset = vec!["HSET", "big-hash"];
    hset.extend(many.iter().flat_map(|m| [m.as_str(), "value"]));
    let commands: Vec<Vec<&str>> = vec![
        sadd,
        rpush,
        hset,
        vec!["ZADD", "zinf", "-inf", "low", "0.1", "mid", "inf", "high"],
        vec!["XADD", "st", "2-1", "g", "w"],
        vec!["XADD", "st", "3-1", "h", "x"],
        vec!["XDEL", "st", "2-1"],
        vec!["XGROUP", "CREATE", "st", "readers", "0"],
        vec![
            "XREADGROUP",
            "GROUP",
            "readers",
            "alice",
            "COUNT",
            "1",
            "STREAMS",
            "st",
            ">",
        ],
        vec!["XGROUP", "CREATECONSUMER", "st", "readers", "bob"],
        vec!["XADD", "empty", "MAXLEN", "0", "5-5", "a", "b"],
        vec![
            "FUNCTION",
            "LOAD",
            "#!lua name=lib\nredis.register_function('one', function() return 1 end)",
        ],
        vec!["SET", "ms-ttl", "v", "PX", "90000000"],
    ];
    for c in &commands {
        let reply = conn.cmd(c);
        assert_ne!(reply.first(), Some(&b'-'), "{c:?}: {}", text(&reply));
    }
    assert_eq!(
        text(&conn.cmd(&["BGREWRITEAOF"])),
        "+Background append only file rewriting started\r\n"
    );
    wait_info(&mut conn, "aof_rewrite_in_progress", "0");
    let manifest = manifest_text(&dir);
    assert!(
        manifest.contains("file appendonly.aof.2.base.aof seq 2 type b"),
        "{manifest}"
    );
    let base = std::fs::read(dir.join("appendonlydir/appendonly.aof.2.base.aof")).unwrap();
    assert!(base.starts_with(b"*"), "commands, not an RDB");
    let base_text = String::from_utf8_lossy(&base);
    for word in [
        "SADD",
        "RPUSH",
        "HMSET",
        "ZADD",
        "XSETID",
        "XCLAIM",
        "CREATECONSUMER",
        "PEXPIREAT",
        "FUNCTION",
    ] {
        assert!(base_text.contains(word), "no {word} in the base");
    }
    let state = |conn: &mut RawConn| {
        [
            conn.cmd(&["DEBUG", "DIGEST"]),
            conn.cmd(&["XINFO", "STREAM", "st", "FULL"]),
            conn.cmd(&["XINFO", "STREAM", "empty"]),
            conn.cmd(&["FCALL", "one", "0"]),
            conn.cmd(&["SELECT", "3"]),
            conn.cmd(&["DBSIZE"]),
            conn.cmd(&["SELECT", "0"]),
        ]
    };
    let before = state(&mut conn);
    // XINFO FULL shows delivery times and seen times: compare what survives a
    // reload (entries, groups, PEL IDs, counts), not the clocks.
    let pending = conn.cmd(&["XPENDING", "st", "readers", "-", "+", "10"]);
    let consumers = conn.cmd(&["XINFO", "CONSUMERS", "st", "readers"]);
    assert_eq!(conn.cmd(&["DEBUG", "LOADAOF"]), b"+OK\r\n");
    let after = state(&mut conn);
    assert_eq!(before[0], after[0], "digest");
    assert_eq!(before[2], after[2], "the empty stream");
    assert_eq!(&before[3..], &after[3..]);
    let pending_after = conn.cmd(&["XPENDING", "st", "readers", "-", "+", "10"]);
    assert_eq!(
        text(&pending).split("\r\n").take(4).collect::<Vec<_>>(),
        text(&pending_after)
            .split("\r\n")
            .take(4)
            .collect::<Vec<_>>()
    );
    let names = |reply: &[u8]| {
        text(reply)
            .split("\r\n")
            .filter(|l| *l == "alice" || *l == "bob")
            .count()
    };
    assert_eq!(names(&consumers), 2);
    assert_eq!(
        names(&conn.cmd(&["XINFO", "CONSUMERS", "st", "readers"])),
        2
    );
    let digest = before[0].clone();
    drop(conn);
    drop(kvik);
    if let Some(checker) = redis_check_aof() {
        let out = std::process::Command::new(checker)
            .arg(dir.join("appendonlydir/appendonly.aof.manifest"))
            .output()
            .unwrap();
        let said = text(&out.stdout);
        assert!(
            said.contains("All AOF files and manifest are valid"),
            "{said}"
        );
    }
    let restarted = kvik_on(&dir, &[]);
    assert_eq!(restarted.raw().cmd(&["DEBUG", "DIGEST"]), digest);
    drop(restarted);
    if support::redis_server_or_skip().is_none() {
        return;
    }
    let redis_dir = support::scratch_dir("aof-no-preamble-redis");
    copy_aof_dir(&dir, &redis_dir);
    let redis = RealRedis::start(&[
        DEBUG[0],
        DEBUG[1],
        "--dir",
        redis_dir.to_str().unwrap(),
        "--appendonly",
        "yes",
    ]);
    assert_eq!(redis.raw().cmd(&["DEBUG", "DIGEST"]), digest);
}
