//! Generic key commands, for what the differential scripts cannot show: the effects
//! each write propagates, expiry nobody asks for, SCAN under concurrent writes, and
//! reads that must not count as accesses.
//!
//! Each test runs a server in-process, so it can watch the effect stream and switch
//! the active expiry cycle off.

use kvik_server::effects::Effect;
use kvik_server::startup::{launch, Running};
use redis::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod support;

fn start() -> (Running, u16) {
    let port = support::free_port();
    let config = kvik_config::Config {
        port,
        server_threads: 2,
        ..support::in_process_config()
    };
    (launch(config, None).expect("server starts"), port)
}

fn connect(port: u16) -> redis::Connection {
    let c = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
    let conn = c.get_connection().unwrap();
    conn.set_read_timeout(Some(support::IO_TIMEOUT)).unwrap();
    conn
}

/// Send a command given as one string of space-separated words.
fn run<T: redis::FromRedisValue>(c: &mut redis::Connection, line: &str) -> T {
    let mut words = line.split(' ');
    let mut cmd = redis::cmd(words.next().unwrap());
    for w in words {
        cmd.arg(w);
    }
    cmd.query(c).unwrap_or_else(|e| panic!("{line}: {e}"))
}

fn argv(e: &Effect) -> Vec<String> {
    e.argv
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

fn next(rx: &Receiver<Effect>) -> Effect {
    rx.recv_timeout(Duration::from_secs(5)).expect("an effect")
}

/// The next effect's argv, which must be in database `db`.
fn next_in(rx: &Receiver<Effect>, db: usize) -> Vec<String> {
    let e = next(rx);
    assert_eq!(e.db, db, "database of {:?}", argv(&e));
    argv(&e)
}

/// Nothing was propagated since the last effect read: a write made now is the next.
fn assert_nothing_propagated(c: &mut redis::Connection, rx: &Receiver<Effect>) {
    run::<()>(c, "SET marker x");
    assert_eq!(next_in(rx, 0), ["SET", "marker", "x"]);
}

/// A deadline propagated by PEXPIREAT: `expected` ms from now, give or take a little.
fn assert_deadline_near(at: &str, expected_ms: u64) {
    let at: u64 = at.parse().expect("an absolute time in ms");
    let now = kvik_server::hlc::unix_ms();
    assert!(
        at <= now + expected_ms && at + 5_000 >= now + expected_ms,
        "deadline {at} is not about {expected_ms} ms after {now}"
    );
}

#[test]
fn expire_family_propagates_absolute_deadlines() {
    let (running, port) = start();
    let rx = running.server.effects.subscribe();
    let mut c = connect(port);
    run::<()>(&mut c, "SET k v");
    assert_eq!(next_in(&rx, 0), ["SET", "k", "v"]);

    assert_eq!(run::<i64>(&mut c, "EXPIRE k 100"), 1);
    let e = next_in(&rx, 0);
    assert_eq!(e[..2], ["PEXPIREAT", "k"]);
    assert_deadline_near(&e[2], 100_000);
    assert_eq!(e.len(), 3);

    // Conditions travel with the rewritten command.
    assert_eq!(run::<i64>(&mut c, "PEXPIRE k 200000 GT"), 1);
    let e = next_in(&rx, 0);
    assert_eq!(e[..2], ["PEXPIREAT", "k"]);
    assert_deadline_near(&e[2], 200_000);
    assert_eq!(e[3], "GT");

    assert_eq!(run::<i64>(&mut c, "EXPIREAT k 32503680000"), 1);
    assert_eq!(next_in(&rx, 0), ["PEXPIREAT", "k", "32503680000000"]);

    // PEXPIREAT already says what it did.
    assert_eq!(run::<i64>(&mut c, "pexpireat k 32503680000123 xx"), 1);
    assert_eq!(next_in(&rx, 0), ["pexpireat", "k", "32503680000123", "xx"]);

    // Nothing changes, nothing propagates: a missing key, a failed condition, reads.
    assert_eq!(run::<i64>(&mut c, "EXPIRE missing 100"), 0);
    assert_eq!(run::<i64>(&mut c, "EXPIRE k 100 NX"), 0);
    assert_eq!(run::<i64>(&mut c, "EXPIRE k 100 GT"), 0);
    assert_eq!(run::<i64>(&mut c, "PERSIST missing"), 0);
    run::<i64>(&mut c, "TTL k");
    run::<i64>(&mut c, "PEXPIRETIME k");
    run::<Value>(&mut c, "OBJECT ENCODING k");
    assert_nothing_propagated(&mut c, &rx);

    assert_eq!(run::<i64>(&mut c, "PERSIST k"), 1);
    assert_eq!(next_in(&rx, 0), ["PERSIST", "k"]);
    assert_eq!(run::<i64>(&mut c, "PERSIST k"), 0);
    assert_nothing_propagated(&mut c, &rx);
    running.shutdown();
}

#[test]
fn a_deadline_in_the_past_deletes_the_key_and_propagates_del() {
    let (running, port) = start();
    let rx = running.server.effects.subscribe();
    let mut c = connect(port);
    for (i, cmd) in ["EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"]
        .iter()
        .enumerate()
    {
        let key = format!("gone{i}");
        run::<()>(&mut c, &format!("SET {key} v"));
        next(&rx);
        assert_eq!(run::<i64>(&mut c, &format!("{cmd} {key} -5")), 1);
        assert_eq!(next_in(&rx, 0), ["DEL", key.as_str()]);
        assert_eq!(run::<i64>(&mut c, &format!("EXISTS {key}")), 0);
    }
    // LT lets a key with a deadline go; the key must be live for anything to happen.
    run::<()>(&mut c, "SET t v EX 100");
    next(&rx);
    assert_eq!(run::<i64>(&mut c, "EXPIRE t 0 LT"), 1);
    assert_eq!(next_in(&rx, 0), ["DEL", "t"]);
    assert_eq!(run::<i64>(&mut c, "EXPIRE t 0"), 0);
    assert_nothing_propagated(&mut c, &rx);
    running.shutdown();
}

#[test]
fn renames_moves_copies_and_swaps_propagate_verbatim() {
    let (running, port) = start();
    let rx = running.server.effects.subscribe();
    let mut c = connect(port);
    run::<()>(&mut c, "SET a 1");
    next(&rx);

    run::<()>(&mut c, "RENAME a b");
    assert_eq!(next_in(&rx, 0), ["RENAME", "a", "b"]);
    run::<()>(&mut c, "RENAME b b");
    assert_eq!(run::<i64>(&mut c, "RENAMENX b b"), 0);
    let missing: redis::RedisResult<()> =
        redis::cmd("RENAME").arg("nothing").arg("x").query(&mut c);
    assert!(missing.is_err());
    assert_nothing_propagated(&mut c, &rx);

    assert_eq!(run::<i64>(&mut c, "RENAMENX b c"), 1);
    assert_eq!(next_in(&rx, 0), ["RENAMENX", "b", "c"]);

    assert_eq!(run::<i64>(&mut c, "COPY c d DB 2"), 1);
    assert_eq!(next_in(&rx, 0), ["COPY", "c", "d", "DB", "2"]);
    assert_eq!(run::<i64>(&mut c, "COPY c d DB 2"), 0);
    assert_eq!(run::<i64>(&mut c, "COPY nothing d"), 0);
    assert_nothing_propagated(&mut c, &rx);

    // MOVE is propagated in the database it was sent in.
    run::<()>(&mut c, "SELECT 3");
    run::<()>(&mut c, "SET m v");
    assert_eq!(next_in(&rx, 3), ["SET", "m", "v"]);
    assert_eq!(run::<i64>(&mut c, "MOVE m 4"), 1);
    assert_eq!(next_in(&rx, 3), ["MOVE", "m", "4"]);
    assert_eq!(run::<i64>(&mut c, "MOVE m 4"), 0);
    run::<()>(&mut c, "SELECT 0");
    assert_nothing_propagated(&mut c, &rx);

    run::<()>(&mut c, "SWAPDB 0 4");
    assert_eq!(next_in(&rx, 0), ["SWAPDB", "0", "4"]);
    assert_eq!(run::<Option<String>>(&mut c, "GET m").as_deref(), Some("v"));
    running.shutdown();
}

#[test]
fn reading_a_deadline_or_an_encoding_is_not_an_access() {
    let (running, port) = start();
    let mut c = connect(port);
    run::<()>(&mut c, "SET k v EX 100");
    std::thread::sleep(Duration::from_millis(2100));
    run::<i64>(&mut c, "TTL k");
    run::<i64>(&mut c, "PTTL k");
    run::<i64>(&mut c, "EXPIRETIME k");
    run::<Value>(&mut c, "OBJECT ENCODING k");
    run::<Value>(&mut c, "SCAN 0 TYPE string");
    assert!(run::<i64>(&mut c, "OBJECT IDLETIME k") >= 2);
    run::<i64>(&mut c, "TOUCH k");
    assert_eq!(run::<i64>(&mut c, "OBJECT IDLETIME k"), 0);
    running.shutdown();
}

#[test]
fn no_touch_clients_leave_lfu_counters_alone_but_touch_counts() {
    let (running, port) = start();
    let mut c = connect(port);
    run::<()>(&mut c, "CONFIG SET maxmemory-policy allkeys-lfu");
    run::<()>(&mut c, "SET k v");
    run::<()>(&mut c, "CLIENT NO-TOUCH on");
    run::<Value>(&mut c, "GET k");
    run::<()>(&mut c, "SET k again");
    assert_eq!(run::<i64>(&mut c, "OBJECT FREQ k"), 5);
    // TOUCH is how such a client touches a key on purpose (the first access of a new
    // key raises its counter for certain).
    run::<i64>(&mut c, "TOUCH k");
    assert_eq!(run::<i64>(&mut c, "OBJECT FREQ k"), 6);
    running.shutdown();
}

#[test]
fn randomkey_ends_when_every_key_has_expired() {
    let (running, port) = start();
    running
        .server
        .hot
        .active_expire
        .store(false, Ordering::Relaxed);
    let rx = running.server.effects.subscribe();
    let mut c = connect(port);
    let mut pipe = redis::pipe();
    for i in 0..2000 {
        pipe.cmd("SET")
            .arg(format!("k{i}"))
            .arg("v")
            .arg("PX")
            .arg(1)
            .ignore();
    }
    pipe.query::<()>(&mut c).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(run::<Option<String>>(&mut c, "RANDOMKEY"), None);
    // Every key went, each with its DEL.
    assert_eq!(run::<i64>(&mut c, "DBSIZE"), 0);
    let dels = rx.try_iter().filter(|e| argv(e)[0] == "DEL").count();
    assert_eq!(dels, 2000);

    // Among expired keys, the live one is found.
    run::<()>(&mut c, "SET a v PX 1");
    run::<()>(&mut c, "SET b v PX 1");
    run::<()>(&mut c, "SET live v");
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(run::<String>(&mut c, "RANDOMKEY"), "live");
    running.shutdown();
}

#[test]
fn scan_deletes_the_expired_keys_it_meets() {
    let (running, port) = start();
    running
        .server
        .hot
        .active_expire
        .store(false, Ordering::Relaxed);
    let rx = running.server.effects.subscribe();
    let mut c = connect(port);
    run::<()>(&mut c, "SET short v PX 1");
    next(&rx);
    std::thread::sleep(Duration::from_millis(20));
    let (cursor, keys): (String, Vec<String>) = run(&mut c, "SCAN 0 COUNT 1000");
    assert_eq!((cursor.as_str(), keys.len()), ("0", 0));
    assert_eq!(next_in(&rx, 0), ["DEL", "short"]);
    running.shutdown();
}

/// The requirement: keys nobody reads again still go once their time is up.
#[test]
fn a_hundred_thousand_keys_expire_without_being_touched() {
    const KEYS: usize = 100_000;
    // Long enough that none expires while a loaded machine is still writing them.
    const TTL: u64 = 4;
    let (running, port) = start();
    let mut c = connect(port);
    let started = Instant::now();
    for batch in 0..KEYS / 10_000 {
        let mut pipe = redis::pipe();
        for i in batch * 10_000..(batch + 1) * 10_000 {
            pipe.cmd("SET")
                .arg(format!("key:{i}"))
                .arg("v")
                .arg("EX")
                .arg(TTL)
                .ignore();
        }
        pipe.query::<()>(&mut c).unwrap();
    }
    let last_deadline = Instant::now() + Duration::from_secs(TTL);
    if started.elapsed() < Duration::from_secs(TTL) {
        assert_eq!(run::<usize>(&mut c, "DBSIZE"), KEYS);
    }
    loop {
        let left: usize = run(&mut c, "DBSIZE");
        if left == 0 {
            break;
        }
        assert!(
            Instant::now() < last_deadline + Duration::from_secs(3),
            "{left} keys still there 3 s after the last deadline"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    running.shutdown();
}

/// SCAN's promise: a key present for the whole scan is returned (exactly once, with
/// kvik's shard cursor), however many keys come and go meanwhile.
#[test]
fn scan_returns_every_key_present_for_the_whole_scan_despite_writes() {
    const STABLE: usize = 5_000;
    let (running, port) = start();
    let mut c = connect(port);
    let mut pipe = redis::pipe();
    for i in 0..STABLE {
        pipe.cmd("SET").arg(format!("stable:{i}")).arg("v").ignore();
    }
    pipe.query::<()>(&mut c).unwrap();

    // Another client grows and shrinks the keyspace the whole time, so shards' tables
    // resize between SCAN calls.
    let stop = Arc::new(AtomicBool::new(false));
    let churn = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut c = connect(port);
            let mut round = 0;
            while !stop.load(Ordering::Relaxed) {
                let mut add = redis::pipe();
                let mut del = redis::cmd("DEL");
                for i in 0..20_000 {
                    let key = format!("churn:{round}:{i}");
                    add.cmd("SET").arg(&key).arg("v").ignore();
                    del.arg(key);
                }
                add.query::<()>(&mut c).unwrap();
                del.query::<i64>(&mut c).unwrap();
                round += 1;
            }
            round
        })
    };

    for _ in 0..3 {
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut cursor = "0".to_string();
        let mut calls = 0;
        loop {
            let (next, keys): (String, Vec<String>) = redis::cmd("SCAN")
                .arg(&cursor)
                .arg("COUNT")
                .arg(100)
                .query(&mut c)
                .unwrap();
            for k in keys.into_iter().filter(|k| k.starts_with("stable:")) {
                *seen.entry(k).or_default() += 1;
            }
            calls += 1;
            if next == "0" {
                break;
            }
            cursor = next;
        }
        assert!(calls > 1, "the scan took several calls");
        assert_eq!(seen.len(), STABLE, "every stable key was returned");
        assert!(seen.values().all(|&n| n == 1), "and only once");
    }
    stop.store(true, Ordering::Relaxed);
    assert!(
        churn.join().unwrap() > 0,
        "the other client wrote meanwhile"
    );
    running.shutdown();
}
