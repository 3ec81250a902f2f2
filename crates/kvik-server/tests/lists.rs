//! The list commands over real connections: the effects each write appends (what
//! replicas and the AOF receive), null shapes in RESP2 and RESP3, keyspace hit and
//! change counting, node limits set at run time, and long lists that span many nodes.
//! (Reply-for-reply agreement with Redis is in tests/differential/lists_*.redis.)
//!
//! Each test runs its own server in-process, so it can watch the effect stream.

mod support;

use support::in_process::{drain, q, Kvik};
use support::RawConn;

/// An INFO field's value.
fn info_field(c: &mut RawConn, section: &str, field: &str) -> u64 {
    let info = q(c, &format!("INFO {section}"));
    let prefix = format!("{field}:");
    info.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("{field} in {info}"))
        .trim()
        .parse()
        .expect("a number")
}

#[test]
fn writes_propagate_what_redis_7_propagates() {
    let kvik = Kvik::start();
    let rx = kvik.effects();
    let mut c = kvik.conn();
    let mut expect = |line: &str, effects: &[&str]| {
        q(&mut c, line);
        assert_eq!(drain(&rx), effects, "{line}");
    };
    expect("RPUSH k a b c d e", &["RPUSH k a b c d e"]);
    expect("LPUSH k z", &["LPUSH k z"]);
    expect("LPUSHX missing a", &[]);
    expect("RPUSHX k f", &["RPUSHX k f"]);
    // Pops with a count go verbatim, even past the end; a count of 0 changes nothing.
    expect("LPOP k 2", &["LPOP k 2"]);
    expect("RPOP k 0", &[]);
    expect("RPOP k", &["RPOP k"]);
    expect("LPOP missing", &[]);
    expect("LPOP missing 3", &[]);
    // LMPOP becomes a pop with the number of elements actually taken.
    expect("LMPOP 2 missing k RIGHT COUNT 2", &["RPOP k 2"]);
    expect("LMPOP 1 missing LEFT", &[]);
    expect("RPUSH k x y", &["RPUSH k x y"]);
    expect("LMPOP 1 k LEFT COUNT 100", &["LPOP k 4"]);
    expect("EXISTS k", &[]);
    // Moves go verbatim.
    expect("RPUSH s 1 2 3", &["RPUSH s 1 2 3"]);
    expect("LMOVE s d LEFT RIGHT", &["LMOVE s d LEFT RIGHT"]);
    expect("RPOPLPUSH s d", &["RPOPLPUSH s d"]);
    expect("RPOPLPUSH d d", &["RPOPLPUSH d d"]);
    expect("LMOVE missing d LEFT LEFT", &[]);
    // Edits go verbatim when they change something, and not at all otherwise.
    expect("LSET d 0 v", &["LSET d 0 v"]);
    expect("LTRIM d 0 -1", &[]);
    expect("LTRIM d 0 0", &["LTRIM d 0 0"]);
    expect("LREM d 0 nothing", &[]);
    expect("LINSERT d BEFORE nothing x", &[]);
    expect("LINSERT d BEFORE v w", &["LINSERT d BEFORE v w"]);
    expect("LREM d 0 w", &["LREM d 0 w"]);
    // Emptying a list deletes the key without a DEL of its own.
    expect("LPOP d", &["LPOP d"]);
    expect("EXISTS d", &[]);
    // Reads and failures append nothing.
    expect("SET str v", &["SET str v"]);
    expect("LPUSH str a", &[]);
    expect("LMOVE s str LEFT LEFT", &[]);
    expect("LRANGE s 0 -1", &[]);
    expect("LPOS s 3", &[]);
}

#[test]
fn nulls_take_the_shape_of_each_protocol() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    let nulls = [
        "LPOP missing",
        "LPOP missing 1",
        "LMPOP 1 missing LEFT",
        "LINDEX missing 0",
        "LPOS missing a",
        "LMOVE missing x LEFT LEFT",
    ];
    let resp2 = [
        "$-1\r\n", "*-1\r\n", "*-1\r\n", "$-1\r\n", "$-1\r\n", "$-1\r\n",
    ];
    for (line, expected) in nulls.iter().zip(resp2) {
        assert_eq!(q(&mut c, line), expected, "{line}");
    }
    assert!(q(&mut c, "HELLO 3").starts_with('%'));
    for line in nulls {
        assert_eq!(q(&mut c, line), "_\r\n", "{line}");
    }
    assert_eq!(q(&mut c, "LPOS missing a COUNT 0"), "*0\r\n");
    assert_eq!(q(&mut c, "LRANGE missing 0 -1"), "*0\r\n");
}

#[test]
fn reads_count_hits_and_misses_and_writes_count_changes() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    q(&mut c, "RPUSH l a b c");
    for line in [
        "LPOP missing",
        "LPUSHX missing a",
        "LMOVE missing l LEFT LEFT",
    ] {
        q(&mut c, line);
    }
    assert_eq!(info_field(&mut c, "stats", "keyspace_hits"), 0);
    assert_eq!(info_field(&mut c, "stats", "keyspace_misses"), 0);
    for line in [
        "LLEN l",
        "LINDEX l 0",
        "LRANGE l 0 -1",
        "LPOS l a",
        "LLEN missing",
    ] {
        q(&mut c, line);
    }
    assert_eq!(info_field(&mut c, "stats", "keyspace_hits"), 4);
    assert_eq!(info_field(&mut c, "stats", "keyspace_misses"), 1);

    // One change per element, as Redis counts them.
    let before = info_field(&mut c, "persistence", "rdb_changes_since_last_save");
    q(&mut c, "RPUSH l d e f");
    q(&mut c, "LPOP l 2");
    q(&mut c, "LTRIM l 1 -2");
    let after = info_field(&mut c, "persistence", "rdb_changes_since_last_save");
    assert_eq!(after - before, 3 + 2 + 2);
}

#[test]
fn node_limits_change_at_run_time() {
    let kvik = Kvik::start();
    let mut client = kvik.client();
    let values: Vec<String> = (0..1000).map(|i| format!("v{i}")).collect();
    for fill in ["3", "1", "-1", "-5", "0", "-2"] {
        let key = format!("l{fill}");
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("list-max-listpack-size")
            .arg(fill)
            .query::<()>(&mut client)
            .unwrap();
        for v in &values {
            redis::cmd("RPUSH")
                .arg(&key)
                .arg(v)
                .query::<()>(&mut client)
                .unwrap();
        }
        redis::cmd("LINSERT")
            .arg(&key)
            .arg("AFTER")
            .arg("v499")
            .arg("x".repeat(20_000))
            .query::<()>(&mut client)
            .unwrap();
        redis::cmd("LREM")
            .arg(&key)
            .arg(0)
            .arg("x".repeat(20_000))
            .query::<()>(&mut client)
            .unwrap();
        let got: Vec<String> = redis::cmd("LRANGE")
            .arg(&key)
            .arg(0)
            .arg(-1)
            .query(&mut client)
            .unwrap();
        assert_eq!(got, values, "list-max-listpack-size {fill}");
        let encoding: String = redis::cmd("OBJECT")
            .arg("ENCODING")
            .arg(&key)
            .query(&mut client)
            .unwrap();
        assert_eq!(encoding, "quicklist");
    }
}

#[test]
fn long_lists_answer_from_both_ends_and_the_middle() {
    let kvik = Kvik::start();
    let mut client = kvik.client();
    let n = 50_000i64;
    let mut pipe = redis::pipe();
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        pipe.cmd("RPUSH").arg("big").arg(chunk).ignore();
    }
    pipe.query::<()>(&mut client).unwrap();
    let cmd = |args: &[&str]| {
        let mut c = redis::cmd(args[0]);
        for a in &args[1..] {
            c.arg(*a);
        }
        c
    };
    let int =
        |client: &mut redis::Connection, args: &[&str]| -> i64 { cmd(args).query(client).unwrap() };
    let strings = |client: &mut redis::Connection, args: &[&str]| -> Vec<String> {
        cmd(args).query(client).unwrap()
    };

    assert_eq!(int(&mut client, &["LLEN", "big"]), n);
    assert_eq!(int(&mut client, &["LINDEX", "big", "25000"]), 25_000);
    assert_eq!(int(&mut client, &["LINDEX", "big", "-1"]), n - 1);
    assert_eq!(
        strings(&mut client, &["LRANGE", "big", "-3", "-1"]),
        ["49997", "49998", "49999"]
    );
    assert_eq!(
        strings(&mut client, &["LRANGE", "big", "30000", "30001"]),
        ["30000", "30001"]
    );
    assert_eq!(int(&mut client, &["LPOS", "big", "40000"]), 40_000);
    assert_eq!(int(&mut client, &["LPOS", "big", "10", "RANK", "-1"]), 10);
    assert_eq!(int(&mut client, &["LREM", "big", "0", "20000"]), 1);
    assert_eq!(
        int(&mut client, &["LINSERT", "big", "BEFORE", "20001", "20000"]),
        n
    );
    assert_eq!(int(&mut client, &["LINDEX", "big", "20000"]), 20_000);
    assert_eq!(strings(&mut client, &["LPOP", "big", "2"]), ["0", "1"]);
    assert_eq!(
        strings(&mut client, &["RPOP", "big", "2"]),
        ["49999", "49998"]
    );
    let () = cmd(&["LTRIM", "big", "1000", "-1001"])
        .query(&mut client)
        .unwrap();
    assert_eq!(int(&mut client, &["LLEN", "big"]), n - 4 - 2000);
    assert_eq!(int(&mut client, &["LINDEX", "big", "0"]), 1002);
    let () = cmd(&["LSET", "big", "-1", "last"])
        .query(&mut client)
        .unwrap();
    assert_eq!(
        strings(&mut client, &["LRANGE", "big", "-1", "-1"]),
        ["last"]
    );
    let copy: i64 = cmd(&["COPY", "big", "copy"]).query(&mut client).unwrap();
    assert_eq!(copy, 1);
    assert_eq!(
        strings(&mut client, &["LRANGE", "copy", "0", "-1"]),
        strings(&mut client, &["LRANGE", "big", "0", "-1"])
    );
    assert_eq!(int(&mut client, &["DEL", "big", "copy"]), 2);
}
