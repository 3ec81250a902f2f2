//! HyperLogLog over TCP: every command and error, the effects the commands append,
//! and the format itself checked against a real redis-server: the same additions
//! must leave byte-identical strings (sparse, dense, across the promotion), and a
//! value written by either server must count the same in the other.

mod support;

use support::in_process::{drain, q, Kvik};
use support::{escape, RawConn, RealRedis};

/// Elements `prefix0 .. prefix{n-1}`.
fn elements(prefix: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("{prefix}{i}")).collect()
}

/// `command key elements...` as one argument list.
fn with_elements(command: &str, key: &str, elements: &[String]) -> Vec<Vec<u8>> {
    let mut args = vec![command.as_bytes().to_vec(), key.as_bytes().to_vec()];
    args.extend(elements.iter().map(|e| e.as_bytes().to_vec()));
    args
}

/// The bytes of a bulk reply.
fn bulk_body(reply: &[u8]) -> Vec<u8> {
    let header_end = reply
        .windows(2)
        .position(|w| w == b"\r\n")
        .expect("a header line");
    assert_eq!(reply[0], b'$', "not a bulk reply: {}", escape(reply));
    reply[header_end + 2..reply.len() - 2].to_vec()
}

/// The integer of an integer reply.
fn int_of(reply: &[u8]) -> i64 {
    let text = std::str::from_utf8(reply).expect("text reply");
    assert!(text.starts_with(':'), "not an integer reply: {text:?}");
    text[1..].trim_end().parse().expect("an integer")
}

#[test]
fn commands_reply_as_redis_does() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    assert_eq!(q(&mut c, "PFADD h a b c"), ":1\r\n");
    assert_eq!(q(&mut c, "PFADD h a b"), ":0\r\n");
    assert_eq!(q(&mut c, "PFADD h"), ":0\r\n");
    assert_eq!(q(&mut c, "PFADD empty"), ":1\r\n");
    assert_eq!(q(&mut c, "PFCOUNT h"), ":3\r\n");
    assert_eq!(q(&mut c, "PFCOUNT empty"), ":0\r\n");
    assert_eq!(q(&mut c, "PFCOUNT missing"), ":0\r\n");
    assert_eq!(q(&mut c, "PFADD h2 c d e"), ":1\r\n");
    assert_eq!(q(&mut c, "PFCOUNT h h2 missing"), ":5\r\n");
    assert_eq!(q(&mut c, "PFMERGE dest h h2"), "+OK\r\n");
    assert_eq!(q(&mut c, "PFCOUNT dest"), ":5\r\n");
    assert_eq!(q(&mut c, "PFMERGE fresh"), "+OK\r\n");
    assert_eq!(q(&mut c, "PFCOUNT fresh"), ":0\r\n");
    assert_eq!(q(&mut c, "OBJECT ENCODING h"), "$3\r\nraw\r\n");

    assert_eq!(q(&mut c, "PFDEBUG ENCODING h"), "+sparse\r\n");
    assert_eq!(q(&mut c, "PFDEBUG DECODE empty"), "$7\r\nZ:16384\r\n");
    assert_eq!(q(&mut c, "PFDEBUG todense h"), ":1\r\n");
    assert_eq!(q(&mut c, "PFDEBUG TODENSE h"), ":0\r\n");
    assert_eq!(q(&mut c, "PFDEBUG ENCODING h"), "+dense\r\n");
    assert_eq!(q(&mut c, "PFCOUNT h"), ":3\r\n");
    let registers = c.cmd(&["PFDEBUG", "GETREG", "h"]);
    assert!(registers.starts_with(b"*16384\r\n"));
    let nonzero = registers
        .split(|&b| b == b'\n')
        .filter(|line| line.starts_with(b":") && *line != b":0\r")
        .count();
    assert_eq!(nonzero, 3);
    assert_eq!(q(&mut c, "PFSELFTEST"), "+OK\r\n");
}

#[test]
fn errors_are_redis_errors() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    const WRONGTYPE: &str =
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
    const NOT_HLL: &str = "-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n";
    const CORRUPT: &str = "-INVALIDOBJ Corrupted HLL object detected\r\n";
    q(&mut c, "RPUSH list x");
    q(&mut c, "SET str hello-this-is-not-an-hll");
    q(&mut c, "SET int 1234567890123456");
    q(&mut c, "PFADD good x");
    for command in [
        "PFADD list a",
        "PFCOUNT list",
        "PFCOUNT good list",
        "PFMERGE good list",
    ] {
        assert_eq!(q(&mut c, command), WRONGTYPE, "{command}");
    }
    for command in [
        "PFADD str a",
        "PFCOUNT str",
        "PFCOUNT good str",
        "PFMERGE dest str",
        "PFDEBUG ENCODING str",
        "PFADD int a",
    ] {
        assert_eq!(q(&mut c, command), NOT_HLL, "{command}");
    }
    // A sparse value whose opcodes cover 16383 registers instead of 16384.
    let mut short = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80".to_vec();
    short.extend_from_slice(&[0x7f, 0xfe]);
    c.cmd(&[&b"SET"[..], b"bad", &short]);
    for command in [
        "PFCOUNT bad",
        "PFCOUNT bad good",
        "PFMERGE dest bad",
        "PFDEBUG GETREG bad",
        "PFDEBUG TODENSE bad",
    ] {
        assert_eq!(q(&mut c, command), CORRUPT, "{command}");
    }
    assert_eq!(q(&mut c, "PFDEBUG DECODE bad"), "$7\r\nZ:16383\r\n");
    assert_eq!(
        q(&mut c, "PFDEBUG GETREG missing"),
        "-ERR The specified key does not exist\r\n"
    );
    assert_eq!(
        q(&mut c, "PFDEBUG nope good"),
        "-ERR Unknown PFDEBUG subcommand 'nope'\r\n"
    );
    q(&mut c, "PFDEBUG TODENSE good");
    assert_eq!(
        q(&mut c, "PFDEBUG DECODE good"),
        "-ERR HLL encoding is not sparse\r\n"
    );
    assert_eq!(
        q(&mut c, "PFDEBUG GETREG"),
        "-ERR wrong number of arguments for 'pfdebug' command\r\n"
    );
    assert_eq!(
        q(&mut c, "PFADD"),
        "-ERR wrong number of arguments for 'pfadd' command\r\n"
    );
}

#[test]
fn cache_and_effects_follow_redis() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    let effects = kvik.effects();
    q(&mut c, "PFADD h a b c");
    assert_eq!(drain(&effects), ["PFADD h a b c"]);
    let stale = bulk_body(&c.cmd(&["GET", "h"]));
    assert_eq!(stale[15] & 0x80, 0x80, "PFADD leaves the cache stale");
    // The first count fills the cache: a change of the string, propagated as is.
    assert_eq!(q(&mut c, "PFCOUNT h"), ":3\r\n");
    assert_eq!(drain(&effects), ["PFCOUNT h"]);
    let cached = bulk_body(&c.cmd(&["GET", "h"]));
    assert_eq!(&cached[8..16], &[3, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(q(&mut c, "PFCOUNT h"), ":3\r\n");
    assert!(drain(&effects).is_empty(), "a cached count changes nothing");
    // A trusted cache is what PFCOUNT answers, whatever the registers say.
    let mut forged = cached.clone();
    forged[8] = 42;
    c.cmd(&[&b"SET"[..], b"forged", &forged]);
    assert_eq!(q(&mut c, "PFCOUNT forged"), ":42\r\n");
    drain(&effects);

    assert_eq!(q(&mut c, "PFADD h a"), ":0\r\n");
    assert_eq!(q(&mut c, "PFCOUNT h h"), ":3\r\n");
    assert_eq!(q(&mut c, "PFDEBUG ENCODING h"), "+sparse\r\n");
    assert!(drain(&effects).is_empty(), "no change, no effect");
    q(&mut c, "PFDEBUG GETREG h");
    assert_eq!(drain(&effects), ["PFDEBUG GETREG h"]);
    q(&mut c, "PFDEBUG TODENSE h");
    assert!(drain(&effects).is_empty(), "already dense");
    q(&mut c, "PFMERGE m h");
    assert_eq!(drain(&effects), ["PFMERGE m h"]);
    assert_eq!(q(&mut c, "PFDEBUG ENCODING m"), "+dense\r\n");
}

#[test]
fn sparse_limit_is_read_from_config() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    q(&mut c, "CONFIG SET hll-sparse-max-bytes 0");
    q(&mut c, "PFADD h a");
    assert_eq!(q(&mut c, "PFDEBUG ENCODING h"), "+dense\r\n");
    q(&mut c, "CONFIG SET hll-sparse-max-bytes 3000");
    q(&mut c, "PFADD s a");
    assert_eq!(q(&mut c, "PFDEBUG ENCODING s"), "+sparse\r\n");
    assert_eq!(q(&mut c, "PFCOUNT h s"), ":1\r\n");
}

#[test]
fn standard_error_holds_on_100k_elements() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    let total = 100_000;
    for start in (0..total).step_by(5_000) {
        c.cmd(&with_elements(
            "PFADD",
            "big",
            &elements("item:", start..start + 5_000),
        ));
    }
    let estimate = int_of(&c.cmd(&["PFCOUNT", "big"]));
    let allowed = (total as f64 * 0.0081 * 3.0) as i64;
    assert!(
        (estimate - total as i64).abs() <= allowed,
        "estimate {estimate} for {total} elements"
    );
    assert_eq!(q(&mut c, "PFDEBUG ENCODING big"), "+dense\r\n");
}

/// kvik and a real redis-server side by side; `None` when there is no redis-server.
struct Pair {
    kvik: RawConn,
    redis: RawConn,
    _servers: (Kvik, RealRedis),
}

impl Pair {
    fn start() -> Option<Pair> {
        support::redis_server_or_skip()?;
        let kvik = Kvik::start();
        let redis = RealRedis::start(&[]);
        Some(Pair {
            kvik: kvik.conn(),
            redis: redis.raw(),
            _servers: (kvik, redis),
        })
    }

    /// Run a command on both; the replies must be the same bytes.
    fn both<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Vec<u8> {
        let from_redis = self.redis.cmd(args);
        let from_kvik = self.kvik.cmd(args);
        assert_eq!(
            escape(&from_kvik),
            escape(&from_redis),
            "replies to {:?}",
            args.iter()
                .take(3)
                .map(|a| String::from_utf8_lossy(a.as_ref()).into_owned())
                .collect::<Vec<_>>()
        );
        from_redis
    }

    /// The value of `key` must be the same bytes in both.
    fn same_value(&mut self, key: &str) {
        self.both(&["GET", key]);
    }
}

#[test]
fn values_are_byte_identical_to_redis() {
    let Some(mut pair) = Pair::start() else {
        return;
    };
    // Sparse, element by element, counting as we go (the cache bytes included).
    for (i, element) in elements("e", 0..300).iter().enumerate() {
        pair.both(&["PFADD", "one", element]);
        pair.same_value("one");
        if i % 7 == 0 {
            pair.both(&["PFCOUNT", "one"]);
            pair.same_value("one");
        }
    }
    // Batches across the promotion to dense at the default 3000 bytes, then dense.
    for start in (0..20_000).step_by(250) {
        pair.both(&with_elements(
            "PFADD",
            "batch",
            &elements("b", start..start + 250),
        ));
        pair.both(&["PFDEBUG", "ENCODING", "batch"]);
        pair.same_value("batch");
        pair.both(&["PFCOUNT", "batch"]);
    }
    // A small limit promotes early.
    pair.both(&["CONFIG", "SET", "hll-sparse-max-bytes", "40"]);
    for start in (0..40).step_by(4) {
        pair.both(&with_elements(
            "PFADD",
            "small",
            &elements("s", start..start + 4),
        ));
        pair.same_value("small");
    }
    pair.both(&["CONFIG", "SET", "hll-sparse-max-bytes", "3000"]);
    // Binary elements of every length up to 40 bytes.
    for len in 0..40u8 {
        let element: Vec<u8> = (0..len).map(|i| i.wrapping_mul(37) ^ len).collect();
        pair.both(&[&b"PFADD"[..], b"binary", &element]);
    }
    pair.same_value("binary");
    // Merges: sparse into a new key, sparse with dense, and into an existing key.
    pair.both(&["PFMERGE", "m1", "one", "binary"]);
    pair.same_value("m1");
    pair.both(&["PFMERGE", "m2", "one", "batch"]);
    pair.same_value("m2");
    pair.both(&["PFMERGE", "one", "binary", "small", "missing"]);
    pair.same_value("one");
    pair.both(&["PFCOUNT", "one", "batch", "m1"]);
    pair.both(&["PFDEBUG", "TODENSE", "binary"]);
    pair.same_value("binary");
    pair.both(&["PFDEBUG", "DECODE", "m1"]);
}

#[test]
fn values_written_by_either_server_count_the_same() {
    let Some(mut pair) = Pair::start() else {
        return;
    };
    for (key, count) in [("sparse", 200), ("dense", 30_000)] {
        pair.redis
            .cmd(&with_elements("PFADD", key, &elements("r", 0..count)));
        let value = bulk_body(&pair.redis.cmd(&["GET", key]));
        pair.kvik.cmd(&[&b"SET"[..], key.as_bytes(), &value]);
        pair.both(&["PFCOUNT", key]);
        pair.both(&with_elements("PFADD", key, &elements("more", 0..500)));
        pair.same_value(key);
        pair.both(&["PFCOUNT", key]);
    }
    pair.kvik.cmd(&with_elements(
        "PFADD",
        "from-kvik",
        &elements("k", 0..5_000),
    ));
    let value = bulk_body(&pair.kvik.cmd(&["GET", "from-kvik"]));
    pair.redis.cmd(&[&b"SET"[..], b"from-kvik", &value]);
    pair.both(&["PFCOUNT", "from-kvik"]);
    pair.both(&["PFCOUNT", "from-kvik", "sparse", "dense"]);
}

/// A numeric field of INFO `section`.
fn info_field(conn: &mut RawConn, section: &str, name: &str) -> i64 {
    let info = bulk_body(&conn.cmd(&["INFO", section]));
    let text = String::from_utf8(info).expect("INFO is text");
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("INFO {section} has no {name}"))
        .parse()
        .expect("a number")
}

#[test]
fn changes_and_keyspace_hits_count_as_in_redis() {
    let Some(mut pair) = Pair::start() else {
        return;
    };
    pair.both(&["PFADD", "h", "a", "b"]);
    pair.both(&["SET", "list-not", "x"]);
    for command in [
        "PFADD h a b c d e f g",
        "PFADD h a",
        "PFADD new",
        "PFCOUNT h",
        "PFCOUNT h",
        "PFCOUNT missing",
        "PFCOUNT h new missing",
        "PFMERGE m h missing",
        "PFMERGE m",
        "PFDEBUG GETREG new",
        "PFDEBUG TODENSE new",
        "PFDEBUG ENCODING h",
        "PFADD list-not a",
    ] {
        let args: Vec<&str> = command.split(' ').collect();
        let mut before = Vec::new();
        for conn in [&mut pair.redis, &mut pair.kvik] {
            before.push(info_field(
                conn,
                "persistence",
                "rdb_changes_since_last_save",
            ));
            conn.cmd(&["CONFIG", "RESETSTAT"]);
        }
        pair.both(&args);
        let mut seen = Vec::new();
        for (conn, before) in [&mut pair.redis, &mut pair.kvik].into_iter().zip(before) {
            let changes = info_field(conn, "persistence", "rdb_changes_since_last_save");
            seen.push((
                changes - before,
                info_field(conn, "stats", "keyspace_hits"),
                info_field(conn, "stats", "keyspace_misses"),
            ));
        }
        assert_eq!(seen[1], seen[0], "changes, hits, misses after {command}");
    }
}
