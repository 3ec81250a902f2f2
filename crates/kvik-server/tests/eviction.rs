//! `maxmemory` and eviction, over real sockets: used memory stays near the limit;
//! each policy evicts only what it may (volatile policies never a key without a
//! deadline, volatile-ttl the nearest deadlines first, allkeys-lru not the keys in
//! use, allkeys-lfu not the keys read often); noeviction refuses writes but serves
//! reads and deletions; big values go through the lazyfree thread without more keys
//! being evicted than needed. A server in this process shows each eviction's DEL
//! effect, `evicted` event and WATCH signal. The deterministic parts (error texts,
//! MULTI/EXEC, scripts, CONFIG) are in tests/differential/maxmemory_*.redis.

mod support;

use kvik_server::startup::launch;
use std::time::{Duration, Instant};
use support::TestServer;

// The in-process server measures memory through jemalloc, as the binary does.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const MB: u64 = 1 << 20;
/// Values of this size make a key take a little over a kilobyte.
const VALUE: usize = 1000;

fn cmd<T: redis::FromRedisValue>(c: &mut redis::Connection, args: &[&str]) -> T {
    let mut command = redis::cmd(args[0]);
    for a in &args[1..] {
        command.arg(*a);
    }
    command.query(c).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// A field of an INFO section.
fn info(c: &mut redis::Connection, section: &str, name: &str) -> String {
    let text: String = cmd(c, &["INFO", section]);
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in INFO {section}"))
        .to_string()
}

fn info_u64(c: &mut redis::Connection, section: &str, name: &str) -> u64 {
    info(c, section, name).parse().expect("a number")
}

fn used_memory(c: &mut redis::Connection) -> u64 {
    info_u64(c, "memory", "used_memory")
}

fn set_maxmemory(c: &mut redis::Connection, bytes: u64) {
    let _: () = cmd(c, &["CONFIG", "SET", "maxmemory", &bytes.to_string()]);
}

/// `prefix:i` for each i, with [`VALUE`]-byte values and, if given, a TTL in seconds
/// growing with i; pipelined. Returns the most used memory seen between batches.
fn fill(
    c: &mut redis::Connection,
    prefix: &str,
    keys: std::ops::Range<usize>,
    ttl: Option<u64>,
) -> u64 {
    let value = "v".repeat(VALUE);
    let mut peak = 0;
    for batch in keys.collect::<Vec<_>>().chunks(250) {
        let mut pipe = redis::pipe();
        for &i in batch {
            let set = pipe.cmd("SET").arg(format!("{prefix}:{i}")).arg(&value);
            if let Some(ttl) = ttl {
                set.arg("EX").arg(ttl + i as u64);
            }
            set.ignore();
        }
        let _: () = pipe.query(c).expect("fill");
        peak = peak.max(used_memory(c));
    }
    peak
}

/// How many of `prefix:i` exist.
fn surviving(c: &mut redis::Connection, prefix: &str, keys: std::ops::Range<usize>) -> usize {
    let mut pipe = redis::pipe();
    for i in keys {
        pipe.cmd("EXISTS").arg(format!("{prefix}:{i}"));
    }
    let found: Vec<u64> = pipe.query(c).expect("exists");
    found.iter().filter(|&&n| n == 1).count()
}

/// `prefix:i` read `times` times each.
fn read(c: &mut redis::Connection, prefix: &str, keys: std::ops::Range<usize>, times: usize) {
    let mut pipe = redis::pipe();
    for _ in 0..times {
        for i in keys.clone() {
            pipe.cmd("GET").arg(format!("{prefix}:{i}")).ignore();
        }
    }
    let _: () = pipe.query(c).expect("read");
}

/// (keys, keys with a deadline) of db 0 from INFO keyspace.
fn keyspace(c: &mut redis::Connection) -> (u64, u64) {
    let line = info(c, "keyspace", "db0");
    let field = |name: &str| {
        line.split(',')
            .find_map(|f| f.strip_prefix(&format!("{name}=")))
            .and_then(|n| n.parse().ok())
            .expect("db0 field")
    };
    (field("keys"), field("expires"))
}

fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Used memory may exceed the limit by what a command adds after it was let in and
/// what other threads add within a millisecond; one client adds a kilobyte a SET.
const OVERSHOOT: u64 = MB;

#[test]
fn allkeys_lru_stays_near_the_limit_and_keeps_the_keys_in_use() {
    let server = TestServer::start(&["--maxmemory-policy", "allkeys-lru"]);
    let mut c = server.client();
    let limit = used_memory(&mut c) + 16 * MB;
    set_maxmemory(&mut c, limit);
    fill(&mut c, "cold", 0..12_000, None);
    assert_eq!(info_u64(&mut c, "stats", "evicted_keys"), 0);
    // The LRU clock counts seconds: the cold keys need to be a second older.
    std::thread::sleep(Duration::from_millis(1100));
    fill(&mut c, "hot", 0..200, None);
    let mut peak = 0;
    for part in 0..6 {
        read(&mut c, "hot", 0..200, 1);
        peak = peak.max(fill(&mut c, "new", part * 1000..(part + 1) * 1000, None));
    }
    let evicted = info_u64(&mut c, "stats", "evicted_keys");
    assert!(evicted > 1000, "{evicted} evicted");
    assert!(peak <= limit + OVERSHOOT, "peak {peak}, limit {limit}");
    assert!(used_memory(&mut c) <= limit + OVERSHOOT);
    assert_eq!(surviving(&mut c, "hot", 0..200), 200);
    let new = surviving(&mut c, "new", 0..6000);
    assert!(new >= 5900, "{new} of the new keys left");
    let cold = surviving(&mut c, "cold", 0..12_000);
    assert_eq!((cold + new + 200) as u64, 18_200 - evicted);
    assert!(info_u64(&mut c, "stats", "total_eviction_exceeded_time") < 10_000);
}

#[test]
fn allkeys_lfu_keeps_the_keys_read_often() {
    let server = TestServer::start(&["--maxmemory-policy", "allkeys-lfu"]);
    let mut c = server.client();
    let limit = used_memory(&mut c) + 16 * MB;
    set_maxmemory(&mut c, limit);
    fill(&mut c, "cold", 0..12_000, None);
    fill(&mut c, "hot", 0..200, None);
    read(&mut c, "hot", 0..200, 30);
    let freq: u64 = cmd(&mut c, &["OBJECT", "FREQ", "hot:0"]);
    assert!(freq > 5, "{freq}");
    let peak = fill(&mut c, "new", 0..6000, None);
    assert!(info_u64(&mut c, "stats", "evicted_keys") > 1000);
    assert!(peak <= limit + OVERSHOOT, "peak {peak}, limit {limit}");
    assert_eq!(surviving(&mut c, "hot", 0..200), 200);
}

/// Eviction rounds without a time limit: CONFIG SET maxmemory has evicted all it
/// will when it answers.
const UNHURRIED: [&str; 2] = ["--maxmemory-eviction-tenacity", "100"];

#[test]
fn volatile_policies_evict_only_keys_with_a_deadline() {
    let server = TestServer::start(&UNHURRIED);
    let mut c = server.client();
    fill(&mut c, "kept", 0..3000, None);
    for policy in [
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
    ] {
        let _: () = cmd(&mut c, &["CONFIG", "SET", "maxmemory-policy", policy]);
        fill(&mut c, "volatile", 0..3000, Some(10_000));
        let used = used_memory(&mut c);
        let limit = used - 3 * MB / 2;
        set_maxmemory(&mut c, limit);
        let (keys, volatile) = keyspace(&mut c);
        assert_eq!(
            keys - volatile,
            3000,
            "{policy} evicted a key without a deadline"
        );
        assert!((500..2700).contains(&volatile), "{policy}: {volatile} left");
        assert!(used_memory(&mut c) <= limit + OVERSHOOT, "{policy}");
        // Nothing left that the policy may evict: writes are refused.
        set_maxmemory(&mut c, 1);
        assert_eq!(keyspace(&mut c), (3000, 0), "{policy}");
        let refused = redis::cmd("SET").arg("x").arg("y").query::<()>(&mut c);
        let refused = refused.expect_err("over the limit").to_string();
        assert!(
            refused.contains("command not allowed when used memory"),
            "{refused}"
        );
        set_maxmemory(&mut c, 0);
    }
    assert_eq!(surviving(&mut c, "kept", 0..3000), 3000);
}

#[test]
fn volatile_ttl_evicts_the_nearest_deadlines_first() {
    let server =
        TestServer::start(&[&UNHURRIED[..], &["--maxmemory-policy", "volatile-ttl"]].concat());
    let mut c = server.client();
    // Deadlines in the order of the keys' numbers.
    fill(&mut c, "ttl", 0..4000, Some(10_000));
    let used = used_memory(&mut c);
    set_maxmemory(&mut c, used - MB);
    let evicted = info_u64(&mut c, "stats", "evicted_keys") as usize;
    assert!((300..1500).contains(&evicted), "{evicted}");
    // Sampling is approximate: nearly all of the first half of the evicted number go,
    // and hardly any of the keys past twice that number.
    let first = surviving(&mut c, "ttl", 0..evicted / 2);
    assert!(
        first <= evicted / 20,
        "{first} of the first {} left",
        evicted / 2
    );
    let late = 4000 - 2 * evicted;
    let late_lost = late - surviving(&mut c, "ttl", 2 * evicted..4000);
    assert!(
        late_lost <= evicted / 50,
        "{late_lost} of the last {late} evicted"
    );
}

#[test]
fn eviction_out_of_time_goes_on_between_commands() {
    // Rounds of 16 keys at most: CONFIG SET leaves most of the work to the workers.
    let args = [
        "--maxmemory-eviction-tenacity",
        "0",
        "--maxmemory-policy",
        "allkeys-lru",
    ];
    let server = TestServer::start(&args);
    let mut c = server.client();
    fill(&mut c, "k", 0..4000, None);
    let limit = used_memory(&mut c) - 2 * MB;
    set_maxmemory(&mut c, limit);
    eventually("eviction to finish without commands", || {
        used_memory(&mut c) <= limit
    });
    assert!(info_u64(&mut c, "stats", "evicted_keys") > 1000);
}

#[test]
fn noeviction_refuses_writes_but_serves_reads_and_deletes() {
    let server = TestServer::start(&[]);
    let mut c = server.client();
    fill(&mut c, "k", 0..3000, None);
    let used = used_memory(&mut c);
    set_maxmemory(&mut c, used - MB / 2);
    let refused = redis::cmd("SET").arg("x").arg("y").query::<()>(&mut c);
    let refused = refused.expect_err("over the limit");
    assert_eq!(refused.code(), Some("OOM"));
    let value: String = cmd(&mut c, &["GET", "k:1"]);
    assert_eq!(value.len(), VALUE);
    assert_eq!(info_u64(&mut c, "stats", "evicted_keys"), 0);
    assert_eq!(info(&mut c, "memory", "maxmemory_policy"), "noeviction");
    assert_eq!(info_u64(&mut c, "memory", "mem_not_counted_for_evict"), 0);
    assert_eq!(
        info_u64(&mut c, "memory", "maxmemory"),
        used - MB / 2,
        "{}",
        info(&mut c, "memory", "maxmemory_human")
    );
    std::thread::sleep(Duration::from_millis(20));
    assert!(info_u64(&mut c, "stats", "current_eviction_exceeded_time") >= 10);
    let mut pipe = redis::pipe();
    for i in 0..1500 {
        pipe.cmd("DEL").arg(format!("k:{i}")).ignore();
    }
    let _: () = pipe.query(&mut c).expect("del");
    // Another thread's gauge sees the frees within a millisecond or so.
    eventually("writes to be let in again", || {
        redis::cmd("SET")
            .arg("x")
            .arg("y")
            .query::<()>(&mut c)
            .is_ok()
    });
    assert_eq!(
        info_u64(&mut c, "stats", "current_eviction_exceeded_time"),
        0
    );
    assert!(info_u64(&mut c, "stats", "total_eviction_exceeded_time") >= 10);
}

#[test]
fn big_values_leave_through_the_lazyfree_thread() {
    let server = TestServer::start(&[
        "--maxmemory-policy",
        "allkeys-random",
        "--lazyfree-lazy-eviction",
        "yes",
    ]);
    let mut c = server.client();
    let big = "b".repeat(4 * MB as usize);
    for i in 0..5 {
        let _: () = cmd(&mut c, &["SET", &format!("big:{i}"), &big]);
    }
    let used = used_memory(&mut c);
    // One value's worth over: its bytes count as freed once handed over, so one goes.
    set_maxmemory(&mut c, used - 2 * MB);
    assert_eq!(info_u64(&mut c, "stats", "evicted_keys"), 1);
    let dbsize: u64 = cmd(&mut c, &["DBSIZE"]);
    assert_eq!(dbsize, 4);
    eventually("the background free", || {
        info_u64(&mut c, "memory", "lazyfreed_objects") >= 1
            && info_u64(&mut c, "memory", "lazyfree_pending_objects") == 0
    });
    assert!(used_memory(&mut c) <= used - 2 * MB);
}

#[test]
fn evictions_propagate_del_raise_evicted_and_break_watches() {
    let config = kvik_config::Config {
        port: support::free_port(),
        server_threads: 2,
        ..support::in_process_config()
    };
    let addr = format!("redis://127.0.0.1:{}/", config.port);
    let running = launch(config, None).expect("server starts");
    let connect = || {
        redis::Client::open(addr.as_str())
            .unwrap()
            .get_connection()
            .unwrap()
    };
    let (mut c, mut watcher) = (connect(), connect());
    let _: () = cmd(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Ee"]);
    let _: () = cmd(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
    );
    let mut sub = support::RawConn::connect(&addr["redis://".len()..addr.len() - 1]);
    sub.cmd(&["SUBSCRIBE", "__keyevent@0__:evicted"]);
    let keys: Vec<String> = (0..50).map(|i| format!("key:{i}")).collect();
    for key in &keys {
        let _: () = cmd(&mut c, &["SET", key, "value"]);
    }
    let _: () = cmd(&mut watcher, &["WATCH", "key:7"]);
    let effects = running.server.effects.subscribe();
    // Nothing brings memory under one byte: every key goes, then writes are refused.
    set_maxmemory(&mut c, 1);
    let mut deleted: Vec<String> = (0..50)
        .map(|_| {
            effects
                .recv_timeout(Duration::from_secs(5))
                .expect("effect")
        })
        .map(|e| {
            assert_eq!(e.argv[0], b"DEL");
            String::from_utf8(e.argv[1].clone()).unwrap()
        })
        .collect();
    let mut announced: Vec<String> = (0..50)
        .map(|_| {
            let message = String::from_utf8(sub.read_reply()).unwrap();
            message.split("\r\n").nth(6).expect("the key").to_string()
        })
        .collect();
    let mut expected = keys.clone();
    expected.sort();
    deleted.sort();
    announced.sort();
    assert_eq!(deleted, expected);
    assert_eq!(announced, expected);
    assert_eq!(info_u64(&mut c, "stats", "evicted_keys"), 50);
    let refused = redis::cmd("SET").arg("x").arg("y").query::<()>(&mut c);
    assert!(refused.is_err());
    set_maxmemory(&mut c, 0);
    let _: () = cmd(&mut watcher, &["MULTI"]);
    let _: () = cmd(&mut watcher, &["SET", "key:7", "mine"]);
    let exec: Option<Vec<String>> = cmd(&mut watcher, &["EXEC"]);
    assert_eq!(exec, None, "the watched key was evicted");
    running.shutdown();
}
