//! `lazyfree-lazy-user-del`, `-user-flush`, `-server-del`, `-expire`, `-eviction`:
//! which removals of a big value free it on the background thread, checked against
//! redis-server by INFO's `lazyfreed_objects` (UNLINK and FLUSHALL ASYNC always do,
//! FLUSHALL SYNC never does).

mod support;

use std::time::{Duration, Instant};
use support::{redis_server_or_skip, RawConn, RealRedis, TestServer};

/// Members enough for both servers to free the set in the background when allowed
/// (Redis: more than 64 elements; kvik: more than 64 KiB of heap).
const MEMBERS: usize = 20_000;

fn fill_big_set(c: &mut RawConn, key: &str) {
    let members: Vec<String> = (0..MEMBERS).map(|i| format!("member:{i}")).collect();
    let mut args = vec!["SADD".to_string(), key.to_string()];
    args.extend(members);
    assert_eq!(c.cmd(&args), format!(":{MEMBERS}\r\n").into_bytes());
}

fn info(c: &mut RawConn, field: &str) -> u64 {
    c.info_field("memory", field).parse().unwrap()
}

/// Whether anything went to the background thread since the last CONFIG RESETSTAT,
/// once the thread is done.
fn lazily_freed(c: &mut RawConn) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while info(c, "lazyfree_pending_objects") != 0 {
        assert!(
            Instant::now() < deadline,
            "the background frees never finished"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    info(c, "lazyfreed_objects") > 0
}

fn ok(c: &mut RawConn, args: &[&str]) {
    assert_eq!(c.cmd(args), b"+OK\r\n", "{args:?}");
}

/// One removal of a big value under a setting: set it up, run `remove`, and say
/// whether the value went to the background thread.
fn scenario(c: &mut RawConn, setting: &str, value: &str, remove: &dyn Fn(&mut RawConn)) -> bool {
    ok(c, &["FLUSHALL", "SYNC"]);
    ok(c, &["CONFIG", "SET", "maxmemory", "0"]);
    ok(c, &["CONFIG", "SET", setting, value]);
    fill_big_set(c, "big");
    ok(c, &["CONFIG", "RESETSTAT"]);
    remove(c);
    let lazy = lazily_freed(c);
    ok(c, &["CONFIG", "SET", setting, "no"]);
    lazy
}

fn wait_gone(c: &mut RawConn, key: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.cmd(&["EXISTS", key]) != b":0\r\n" {
        assert!(Instant::now() < deadline, "{key} never expired");
        std::thread::sleep(Duration::from_millis(10));
    }
}

type Removal = (&'static str, &'static str, fn(&mut RawConn));

const REMOVALS: &[Removal] = &[
    ("DEL", "lazyfree-lazy-user-del", |c| {
        assert_eq!(c.cmd(&["DEL", "big"]), b":1\r\n");
    }),
    ("UNLINK", "lazyfree-lazy-user-del", |c| {
        assert_eq!(c.cmd(&["UNLINK", "big"]), b":1\r\n");
    }),
    ("FLUSHALL", "lazyfree-lazy-user-flush", |c| {
        ok(c, &["FLUSHALL"])
    }),
    ("FLUSHALL ASYNC", "lazyfree-lazy-user-flush", |c| {
        ok(c, &["FLUSHALL", "ASYNC"])
    }),
    ("FLUSHDB SYNC", "lazyfree-lazy-user-flush", |c| {
        ok(c, &["FLUSHDB", "SYNC"])
    }),
    ("SET over it", "lazyfree-lazy-server-del", |c| {
        ok(c, &["SET", "big", "small"])
    }),
    ("RENAME over it", "lazyfree-lazy-server-del", |c| {
        ok(c, &["SET", "other", "small"]);
        ok(c, &["RENAME", "other", "big"]);
    }),
    ("expiry", "lazyfree-lazy-expire", |c| {
        assert_eq!(c.cmd(&["PEXPIRE", "big", "1"]), b":1\r\n");
        wait_gone(c, "big");
    }),
    ("eviction", "lazyfree-lazy-eviction", |c| {
        ok(c, &["CONFIG", "SET", "maxmemory-policy", "allkeys-random"]);
        ok(c, &["CONFIG", "SET", "maxmemory", "1"]);
        // The write makes room first: the big set goes (the write may then still
        // be refused, as nothing fits in 1 byte).
        let _ = c.cmd(&["SET", "x", "y"]);
        ok(c, &["CONFIG", "SET", "maxmemory", "0"]);
        ok(c, &["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
        assert_eq!(c.cmd(&["EXISTS", "big"]), b":0\r\n");
    }),
];

#[test]
fn each_removal_frees_in_the_background_as_redis_does() {
    if redis_server_or_skip().is_none() {
        return;
    }
    let kvik = TestServer::start(&[]);
    let redis = RealRedis::start(&[]);
    let (mut k, mut r) = (kvik.raw(), redis.raw());
    for (what, setting, remove) in REMOVALS {
        for value in ["no", "yes"] {
            let kvik_lazy = scenario(&mut k, setting, value, remove);
            let redis_lazy = scenario(&mut r, setting, value, remove);
            assert_eq!(
                kvik_lazy, redis_lazy,
                "{what} with {setting} {value}: background free on kvik {kvik_lazy}, on redis {redis_lazy}"
            );
        }
    }
}

#[test]
fn defaults_free_inline_as_redis_7_0_does() {
    let kvik = TestServer::start(&[]);
    let mut c = kvik.raw();
    for setting in [
        "lazyfree-lazy-user-del",
        "lazyfree-lazy-user-flush",
        "lazyfree-lazy-server-del",
        "lazyfree-lazy-expire",
        "lazyfree-lazy-eviction",
    ] {
        assert_eq!(
            c.cmd(&["CONFIG", "GET", setting]),
            format!("*2\r\n${}\r\n{setting}\r\n$2\r\nno\r\n", setting.len()).into_bytes()
        );
    }
    fill_big_set(&mut c, "big");
    ok(&mut c, &["CONFIG", "RESETSTAT"]);
    assert_eq!(c.cmd(&["DEL", "big"]), b":1\r\n");
    assert!(!lazily_freed(&mut c));
}
