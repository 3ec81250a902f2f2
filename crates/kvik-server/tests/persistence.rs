//! RDB files: kvik's files load in redis-server 7.0 and pass redis-check-rdb, Redis's
//! files load in kvik, BGSAVE is point-in-time under concurrent transactions, data
//! survives SHUTDOWN and restart, bad files are refused with Redis's log lines, and
//! SAVE/BGSAVE/LASTSAVE/MISCONF answer as Redis does.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::{RawConn, RealRedis, TestServer};

const DEBUG: [&str; 2] = ["--enable-debug-command", "yes"];

/// Commands that build every type in each of its encodings, TTLs, several
/// databases and a function library.
fn dataset() -> Vec<Vec<String>> {
    let words = |prefix: &str, n: usize| (0..n).map(|i| format!("{prefix}{i}")).collect::<Vec<_>>();
    let cmd = |parts: &[&str]| parts.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let with = |head: &[&str], tail: Vec<String>| {
        let mut c = cmd(head);
        c.extend(tail);
        c
    };
    let pairs = |prefix: &str, n: usize| {
        (0..n)
            .flat_map(|i| [format!("{i}"), format!("{prefix}{i}")])
            .collect::<Vec<_>>()
    };
    vec![
        cmd(&["SET", "s:int", "12345"]),
        cmd(&["SET", "s:emb", "hello"]),
        with(&["SET", "s:raw"], vec!["abc".repeat(100)]),
        cmd(&["SET", "s:ttl", "v", "EX", "100000"]),
        cmd(&["RPUSH", "l:small", "a", "b", "3"]),
        with(&["RPUSH", "l:big"], words("element-", 3000)),
        cmd(&["SADD", "set:int", "1", "2", "-3"]),
        with(&["SADD", "set:big"], words("m", 700)),
        cmd(&["SADD", "set:str", "a", "b"]),
        cmd(&["HSET", "h:small", "f", "v", "n", "1"]),
        with(&["HSET", "h:big"], words("field", 1200)),
        cmd(&["ZADD", "z:small", "1", "a", "2.5", "b", "-inf", "c"]),
        with(&["ZADD", "z:big"], pairs("member", 300)),
        cmd(&["XADD", "st", "1-1", "f", "v"]),
        cmd(&["XADD", "st", "2-1", "f", "w", "g", "x"]),
        cmd(&["XGROUP", "CREATE", "st", "grp", "0"]),
        cmd(&[
            "XREADGROUP",
            "GROUP",
            "grp",
            "alice",
            "COUNT",
            "1",
            "STREAMS",
            "st",
            ">",
        ]),
        cmd(&["PFADD", "hll:sparse", "a", "b", "c"]),
        with(&["PFADD", "hll:dense"], words("x", 4000)),
        cmd(&["SELECT", "5"]),
        cmd(&["SET", "db5", "five"]),
        cmd(&["HSET", "db5:h", "a", "b"]),
        cmd(&["SELECT", "0"]),
        cmd(&[
            "FUNCTION",
            "LOAD",
            "#!lua name=lib\nredis.register_function('f', function() return 'from-lib' end)",
        ]),
    ]
}

const KEYS: &[&str] = &[
    "s:int",
    "s:emb",
    "s:raw",
    "s:ttl",
    "l:small",
    "l:big",
    "set:int",
    "set:big",
    "set:str",
    "h:small",
    "h:big",
    "z:small",
    "z:big",
    "st",
    "hll:sparse",
    "hll:dense",
];

fn build(conn: &mut RawConn) {
    for command in dataset() {
        let reply = conn.cmd(&command);
        assert_ne!(
            reply.first(),
            Some(&b'-'),
            "{:?}: {}",
            &command[..1],
            text(&reply)
        );
    }
}

fn text(reply: &[u8]) -> String {
    String::from_utf8_lossy(reply).into_owned()
}

/// What two servers holding the same data must answer alike.
fn observe(conn: &mut RawConn) -> Vec<String> {
    let mut seen = vec![text(&conn.cmd(&["DEBUG", "DIGEST"]))];
    for key in KEYS {
        // A HyperLogLog's string encoding is reported differently by kvik (embstr
        // for a short one) even before any file is involved: compare its bytes only.
        if !key.starts_with("hll") {
            seen.push(format!(
                "{key}: {}",
                text(&conn.cmd(&["OBJECT", "ENCODING", key]))
            ));
        }
        seen.push(text(&conn.cmd(&["DEBUG", "DIGEST-VALUE", key])));
    }
    seen.push(text(&conn.cmd(&["XINFO", "GROUPS", "st"])));
    seen.push(text(&conn.cmd(&["PFCOUNT", "hll:dense"])));
    seen.push(text(&conn.cmd(&["FCALL", "f", "0"])));
    seen.push(text(&conn.cmd(&["SELECT", "5"])));
    seen.push(text(&conn.cmd(&["DEBUG", "DIGEST"])));
    seen.push(text(&conn.cmd(&["SELECT", "0"])));
    seen
}

fn ttl_is_kept(conn: &mut RawConn) {
    let ttl = text(&conn.cmd(&["TTL", "s:ttl"]));
    let secs: i64 = ttl.trim_start_matches(':').trim().parse().unwrap();
    assert!((99_000..=100_000).contains(&secs), "{ttl}");
}

fn copy_dump(from: &Path, to_dir: &Path) -> PathBuf {
    let to = to_dir.join("dump.rdb");
    std::fs::copy(from.join("dump.rdb"), &to).expect("copy dump.rdb");
    to
}

#[test]
fn kvik_files_load_in_redis_with_every_type() {
    if support::redis_server_or_skip().is_none() {
        return;
    }
    let kvik = TestServer::start(&[DEBUG[0], DEBUG[1], "--server-threads", "2"]);
    let mut k = kvik.raw();
    build(&mut k);
    assert_eq!(k.cmd(&["SAVE"]), b"+OK\r\n");
    let expected = observe(&mut k);
    let dir = support::scratch_dir("kvik-to-redis");
    copy_dump(kvik.dir(), &dir);
    let redis = RealRedis::start(&[DEBUG[0], DEBUG[1], "--dir", dir.to_str().unwrap()]);
    let mut r = redis.raw();
    assert_eq!(observe(&mut r), expected);
    ttl_is_kept(&mut r);
}

#[test]
fn redis_files_load_in_kvik_with_every_type() {
    if support::redis_server_or_skip().is_none() {
        return;
    }
    let redis = RealRedis::start(&DEBUG);
    let mut r = redis.raw();
    build(&mut r);
    assert_eq!(r.cmd(&["SAVE"]), b"+OK\r\n");
    let expected = observe(&mut r);
    let dir = support::scratch_dir("redis-to-kvik");
    copy_dump(redis.dir(), &dir);
    let kvik = TestServer::start(&[DEBUG[0], DEBUG[1], "--dir", dir.to_str().unwrap()]);
    let mut k = kvik.raw();
    assert_eq!(observe(&mut k), expected);
    ttl_is_kept(&mut k);
    assert!(
        kvik.stdout().contains("DB loaded from disk: "),
        "{}",
        kvik.stdout()
    );
}

#[test]
fn redis_check_rdb_accepts_kvik_files() {
    let checker = Path::new("/usr/bin/redis-check-rdb");
    if !checker.is_file() {
        println!("SKIPPED: redis-check-rdb not found");
        return;
    }
    for compression in ["yes", "no"] {
        let kvik = TestServer::start(&["--rdbcompression", compression]);
        let mut k = kvik.raw();
        build(&mut k);
        assert_eq!(k.cmd(&["SAVE"]), b"+OK\r\n");
        let out = std::process::Command::new(checker)
            .arg(kvik.dir().join("dump.rdb"))
            .output()
            .expect("run redis-check-rdb");
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(report.contains("RDB looks OK"), "{report}");
        assert!(report.contains("Checksum OK"), "{report}");
    }
}

/// Waits until INFO says no background save runs, and returns INFO persistence.
fn wait_for_bgsave(conn: &mut RawConn) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let info = text(&conn.cmd(&["INFO", "persistence"]));
        if info.contains("rdb_bgsave_in_progress:0") {
            return info;
        }
        assert!(Instant::now() < deadline, "BGSAVE never ended: {info}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

const WRITERS: usize = 4;
const KEYS_PER_WRITER: usize = 40;

/// Each writer's transactions increment all its keys together, so in any
/// point-in-time copy a writer's keys hold one same value.
fn writer_keys(w: usize) -> Vec<String> {
    (0..KEYS_PER_WRITER).map(|i| format!("w{w}:k{i}")).collect()
}

#[test]
fn bgsave_is_point_in_time_while_transactions_write() {
    // Slowing the writer keeps the save running while the transactions go on.
    let kvik = TestServer::start(&["--server-threads", "4", "--rdb-key-save-delay", "2000"]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (addr, stop) = (kvik.addr(), stop.clone());
            std::thread::spawn(move || {
                let mut conn = RawConn::connect(&addr);
                let mut done = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) || done < 20 {
                    conn.cmd(&["MULTI"]);
                    for key in writer_keys(w) {
                        conn.cmd(&["INCR", key.as_str()]);
                    }
                    let reply = conn.cmd(&["EXEC"]);
                    assert_eq!(reply.first(), Some(&b'*'), "{}", text(&reply));
                    done += 1;
                }
                done
            })
        })
        .collect();
    let mut conn = kvik.raw();
    // Let every writer commit something first.
    while (0..WRITERS).any(|w| conn.cmd(&["EXISTS", &format!("w{w}:k0")]) == b":0\r\n") {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(conn.cmd(&["BGSAVE"]), b"+Background saving started\r\n");
    let info = wait_for_bgsave(&mut conn);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in writers {
        w.join().expect("writer");
    }
    assert!(info.contains("rdb_last_bgsave_status:ok"), "{info}");
    let dir = support::scratch_dir("point-in-time");
    copy_dump(kvik.dir(), &dir);
    let loaded = TestServer::start(&["--dir", dir.to_str().unwrap()]);
    let mut l = loaded.raw();
    for w in 0..WRITERS {
        let keys = writer_keys(w);
        let mut mget = vec!["MGET"];
        mget.extend(keys.iter().map(String::as_str));
        let values = text(&l.cmd(&mget));
        let mut lines = values.split("\r\n").skip(1).filter(|l| !l.starts_with('$'));
        let first = lines.next().unwrap().to_string();
        assert!(
            lines.take(KEYS_PER_WRITER - 1).all(|v| v == first),
            "writer {w}: {values}"
        );
    }
}

#[test]
fn data_survives_shutdown_and_restart() {
    let dir = support::scratch_dir("restart");
    let dir_arg = dir.to_str().unwrap();
    let mut first = TestServer::start(&["--dir", dir_arg, "--save", "3600 1"]);
    let mut conn = first.raw();
    build(&mut conn);
    conn.send_cmd(&["SHUTDOWN"]);
    first.assert_exits_within(Duration::from_secs(30));
    assert!(
        first.stdout().contains("DB saved on disk"),
        "{}",
        first.stdout()
    );
    let second = TestServer::start(&[DEBUG[0], DEBUG[1], "--dir", dir_arg]);
    let mut conn = second.raw();
    assert_eq!(conn.cmd(&["GET", "s:emb"]), b"$5\r\nhello\r\n");
    assert_eq!(conn.cmd(&["LLEN", "l:big"]), b":3000\r\n");
    assert_eq!(conn.cmd(&["FCALL", "f", "0"]), b"$8\r\nfrom-lib\r\n");
    let info = text(&conn.cmd(&["INFO", "persistence"]));
    assert!(info.contains("rdb_last_load_keys_loaded:18"), "{info}");
    // SHUTDOWN NOSAVE keeps the file as it was.
    assert_eq!(conn.cmd(&["SET", "s:emb", "changed"]), b"+OK\r\n");
    conn.send_cmd(&["SHUTDOWN", "NOSAVE"]);
    drop(second);
    let third = TestServer::start(&["--dir", dir_arg]);
    assert_eq!(third.raw().cmd(&["GET", "s:emb"]), b"$5\r\nhello\r\n");
}

/// Starts kvik on a directory holding `file` as dump.rdb; returns its log once it
/// has exited, failing if it started.
fn refused_log(file: &[u8]) -> String {
    let dir = support::scratch_dir("bad-file");
    std::fs::write(dir.join("dump.rdb"), file).unwrap();
    match TestServer::try_start(&["--dir", dir.to_str().unwrap()]) {
        Ok(_) => panic!("a bad file was loaded"),
        Err(log) => log,
    }
}

#[test]
fn bad_files_are_refused_with_redis_log_lines() {
    let kvik = TestServer::start(&[]);
    let mut conn = kvik.raw();
    build(&mut conn);
    assert_eq!(conn.cmd(&["SAVE"]), b"+OK\r\n");
    let good = std::fs::read(kvik.dir().join("dump.rdb")).unwrap();
    let truncated = &good[..good.len() / 2];
    assert!(refused_log(truncated)
        .contains("Short read or OOM loading DB. Unrecoverable error, aborting now."));
    let mut flipped = good.clone();
    let at = good.len() - 20;
    flipped[at] ^= 0x40;
    let log = refused_log(&flipped);
    assert!(
        log.contains("Wrong RDB checksum") || log.contains("Corrupt RDB file"),
        "{log}"
    );
    // A value's byte changed in place reads fine: only the checksum tells, in the
    // lines operators grep for.
    let mut changed = good.clone();
    let at = good
        .windows(5)
        .position(|w| w == b"hello")
        .expect("a value spelled out in the file");
    changed[at] = b'j';
    let log = refused_log(&changed);
    assert!(log.contains("Wrong RDB checksum expected: ("), "{log}");
    assert!(log.contains(") but got ("), "{log}");
    assert!(
        log.contains(
            "Internal error in RDB reading offset 0, function at kvik-rdb -> RDB CRC error"
        ),
        "{log}"
    );
    // Then redis-check-rdb's report, as redis-server prints it before exiting.
    for line in [
        "[offset 0] Checking RDB file dump.rdb\n",
        "AUX FIELD redis-ver = '7.0.15'\n",
        "--- RDB ERROR DETECTED ---\n",
        &format!("[offset {}] RDB CRC error\n", changed.len()),
        "[additional info] While doing: check-sum\n",
        "keys read\n",
        "[info] 1 expires\n",
        "[info] 0 already expired\n",
    ] {
        assert!(log.contains(line), "no {line:?} in {log}");
    }
    let mut newer = good.clone();
    newer[5..9].copy_from_slice(b"0011");
    assert!(refused_log(&newer).contains("Can't handle RDB format version 11"));
    assert!(refused_log(b"NOTREDIS0").contains("Wrong signature trying to load DB from file"));
}

#[test]
fn save_bgsave_and_lastsave_answer_as_redis() {
    let kvik = TestServer::start(&["--rdb-key-save-delay", "100000"]);
    let mut conn = kvik.raw();
    for i in 0..20 {
        conn.cmd(&["SET", &format!("k{i}"), "v"]);
    }
    let info = text(&conn.cmd(&["INFO", "persistence"]));
    assert!(info.contains("rdb_changes_since_last_save:20"), "{info}");
    assert_eq!(conn.cmd(&["BGSAVE", "NOW"]), b"-ERR syntax error\r\n");
    assert_eq!(conn.cmd(&["BGSAVE"]), b"+Background saving started\r\n");
    let in_progress = b"-ERR Background save already in progress\r\n";
    assert_eq!(conn.cmd(&["BGSAVE"]), in_progress);
    assert_eq!(conn.cmd(&["SAVE"]), in_progress);
    assert!(text(&conn.cmd(&["INFO", "persistence"])).contains("rdb_bgsave_in_progress:1"));
    let info = wait_for_bgsave(&mut conn);
    assert!(info.contains("rdb_changes_since_last_save:0"), "{info}");
    assert!(info.contains("rdb_saves:1"), "{info}");
    assert!(info.contains("rdb_last_bgsave_status:ok"), "{info}");
    assert_eq!(conn.cmd(&["MULTI"]), b"+OK\r\n");
    assert_eq!(
        conn.cmd(&["SAVE"]),
        b"-ERR Command not allowed inside a transaction\r\n"
    );
    conn.cmd(&["DISCARD"]);
    conn.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    assert_eq!(conn.cmd(&["MULTI"]), b"+OK\r\n");
    conn.cmd(&["BGSAVE"]);
    assert_eq!(
        conn.cmd(&["EXEC"]),
        b"*1\r\n+Background saving scheduled\r\n"
    );
    let lastsave = text(&conn.cmd(&["LASTSAVE"]));
    assert!(lastsave.starts_with(':'), "{lastsave}");
}

#[test]
fn failed_bgsave_stops_writes_with_misconf() {
    let dir = support::scratch_dir("misconf");
    let kvik = TestServer::start(&["--dir", dir.to_str().unwrap(), "--save", "3600 1"]);
    let mut conn = kvik.raw();
    conn.cmd(&["SET", "k", "v"]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(conn.cmd(&["BGSAVE"]), b"+Background saving started\r\n");
    let info = wait_for_bgsave(&mut conn);
    assert!(info.contains("rdb_last_bgsave_status:err"), "{info}");
    let misconf = conn.cmd(&["SET", "k", "w"]);
    assert!(misconf.starts_with(b"-MISCONF Redis is configured to save RDB snapshots"));
    assert_eq!(conn.cmd(&["PING"]), misconf);
    assert_eq!(conn.cmd(&["GET", "k"]), b"$1\r\nv\r\n");
    conn.cmd(&["CONFIG", "SET", "stop-writes-on-bgsave-error", "no"]);
    assert_eq!(conn.cmd(&["SET", "k", "w"]), b"+OK\r\n");
}

#[test]
fn debug_reload_and_flushall_save() {
    let kvik = TestServer::start(&[DEBUG[0], DEBUG[1], "--save", "3600 1"]);
    let mut conn = kvik.raw();
    build(&mut conn);
    // PFCOUNT caches the count inside the HyperLogLog: look once so it is in place.
    observe(&mut conn);
    let before = observe(&mut conn);
    assert_eq!(conn.cmd(&["DEBUG", "RELOAD"]), b"+OK\r\n");
    assert_eq!(observe(&mut conn), before);
    conn.cmd(&["SET", "later", "x"]);
    assert_eq!(conn.cmd(&["DEBUG", "RELOAD", "NOSAVE"]), b"+OK\r\n");
    assert_eq!(conn.cmd(&["EXISTS", "later"]), b":0\r\n");
    assert_eq!(conn.cmd(&["FLUSHALL"]), b"+OK\r\n");
    // Its save clears the change counter, the FLUSHALL included, as in Redis 7.0.
    let info = text(&conn.cmd(&["INFO", "persistence"]));
    assert!(info.contains("rdb_changes_since_last_save:0"), "{info}");
    assert_eq!(conn.cmd(&["DEBUG", "RELOAD", "NOSAVE"]), b"+OK\r\n");
    assert_eq!(conn.cmd(&["DBSIZE"]), b":0\r\n");
    // Inside a transaction, what follows the FLUSHALL counts.
    for step in [
        &["MULTI"][..],
        &["SET", "x", "1"],
        &["FLUSHALL"],
        &["SET", "y", "1"],
    ] {
        conn.cmd(step);
    }
    conn.cmd(&["EXEC"]);
    let info = text(&conn.cmd(&["INFO", "persistence"]));
    assert!(info.contains("rdb_changes_since_last_save:1"), "{info}");
}
