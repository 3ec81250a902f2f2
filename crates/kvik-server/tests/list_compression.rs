//! `list-compress-depth` over real servers: compressed interior nodes save memory,
//! CONFIG SET applies to the nodes written next, and an RDB file of compressed lists
//! loads in redis-server with the same contents. (Replies are compared with Redis's
//! in the differential test, which runs the list scripts at depths 1 and 2.)

mod support;

use support::{RealRedis, TestServer};

const LISTS: usize = 20;
const ELEMENTS: usize = 10_000;

/// A compressible element: a counter, then text that repeats.
fn element(i: usize) -> String {
    format!("{i:06}:{}", "lorem ipsum dolor ".repeat(3))
}

/// Fill `LISTS` lists named `{prefix}{n}` with `ELEMENTS` elements each.
fn fill(client: &mut redis::Connection, prefix: &str) {
    let elements: Vec<String> = (0..ELEMENTS).map(element).collect();
    for n in 0..LISTS {
        let mut pipe = redis::pipe();
        for chunk in elements.chunks(1000) {
            pipe.cmd("RPUSH")
                .arg(format!("{prefix}{n}"))
                .arg(chunk)
                .ignore();
        }
        pipe.query::<()>(client).unwrap();
    }
}

fn used_memory(client: &mut redis::Connection) -> i64 {
    let info: String = redis::cmd("INFO").arg("memory").query(client).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .expect("used_memory in INFO")
        .trim()
        .parse()
        .unwrap()
}

fn config_set(client: &mut redis::Connection, name: &str, value: &str) {
    redis::cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query::<()>(client)
        .unwrap();
}

fn range(client: &mut redis::Connection, key: &str, start: i64, stop: i64) -> Vec<String> {
    redis::cmd("LRANGE")
        .arg(key)
        .arg(start)
        .arg(stop)
        .query(client)
        .unwrap()
}

/// The memory the lists take at `depth`, filled after a CONFIG SET on a server
/// started without compression.
fn memory_of_lists_at_depth(depth: &str) -> i64 {
    let kvik = TestServer::start(&[]);
    let mut client = kvik.client();
    config_set(&mut client, "list-compress-depth", depth);
    let before = used_memory(&mut client);
    fill(&mut client, "l");
    used_memory(&mut client) - before
}

#[test]
fn compressed_interior_nodes_take_clearly_less_memory() {
    let raw = memory_of_lists_at_depth("0");
    let compressed = memory_of_lists_at_depth("1");
    assert!(
        compressed * 2 < raw,
        "depth 1 takes {compressed} bytes, depth 0 {raw}"
    );
}

#[test]
fn a_depth_applies_to_the_nodes_written_next_and_keeps_every_reply() {
    let kvik = TestServer::start(&["--list-compress-depth", "2"]);
    let mut client = kvik.client();
    fill(&mut client, "a");
    config_set(&mut client, "list-compress-depth", "0");
    fill(&mut client, "b");
    config_set(&mut client, "list-compress-depth", "1");
    let expected: Vec<String> = (0..ELEMENTS).map(element).collect();
    for key in ["a0", "b0"] {
        assert_eq!(range(&mut client, key, 0, -1), expected);
        assert_eq!(range(&mut client, key, 4000, 4002), expected[4000..4003]);
        let encoding: String = redis::cmd("OBJECT")
            .arg("ENCODING")
            .arg(key)
            .query(&mut client)
            .unwrap();
        assert_eq!(encoding, "quicklist");
    }
    let () = redis::cmd("LSET")
        .arg("a1")
        .arg(5000)
        .arg("changed")
        .query(&mut client)
        .unwrap();
    let got: String = redis::cmd("LINDEX")
        .arg("a1")
        .arg(5000)
        .query(&mut client)
        .unwrap();
    assert_eq!(got, "changed");
}

#[test]
fn an_rdb_of_compressed_lists_loads_in_redis() {
    if support::redis_server_or_skip().is_none() {
        return;
    }
    let kvik = TestServer::start(&["--list-compress-depth", "1"]);
    let mut client = kvik.client();
    fill(&mut client, "l");
    let () = redis::cmd("SAVE").query(&mut client).unwrap();
    let dir = kvik.dir().to_str().unwrap().to_string();
    let redis = RealRedis::start(&["--dir", &dir, "--list-compress-depth", "1"]);
    let mut theirs = redis.client();
    for n in [0, LISTS - 1] {
        let key = format!("l{n}");
        assert_eq!(
            range(&mut theirs, &key, 0, -1),
            range(&mut client, &key, 0, -1)
        );
    }
    let keys: i64 = redis::cmd("DBSIZE").query(&mut theirs).unwrap();
    assert_eq!(keys, LISTS as i64);
}
