//! Keyspace notifications: which classes `notify-keyspace-events` enables, the two
//! channel forms, and the events (names and order, as Redis 7.0 raises them) of each
//! command family, including expiry (lazy and active), new keys and key misses. The
//! expectations were checked against Redis 7.0.15.

mod support;

use std::time::{Duration, Instant};
use support::{RawConn, TestServer};

/// A server with `flags` enabled, a subscriber to every keyspace and keyevent channel,
/// and a connection to run commands on.
struct Watch {
    server: TestServer,
    sub: RawConn,
    conn: RawConn,
}

const END: &str = "__keyevent@0__:end-of-test";

impl Watch {
    fn new(flags: &str) -> Watch {
        let server = TestServer::start(&["--server-threads", "4"]);
        let mut conn = server.raw();
        assert_eq!(
            conn.cmd(&["CONFIG", "SET", "notify-keyspace-events", flags]),
            b"+OK\r\n"
        );
        let mut sub = server.raw();
        sub.cmd(&["PSUBSCRIBE", "__key*__:*"]);
        Watch { server, sub, conn }
    }

    /// Run `commands` (each split on spaces) and return the events they raised, as
    /// `channel message` lines, in order.
    fn events(&mut self, commands: &[&str]) -> Vec<String> {
        for command in commands {
            let args: Vec<&str> = command.split(' ').collect();
            self.conn.cmd(&args);
        }
        // Raised by the same thread after the commands: it arrives after their events.
        self.conn.cmd(&["PUBLISH", END, "-"]);
        let mut seen = Vec::new();
        loop {
            let (channel, message) = self.next_event();
            if channel == END {
                return seen;
            }
            seen.push(format!("{channel} {message}"));
        }
    }

    fn next_event(&mut self) -> (String, String) {
        let reply = String::from_utf8(self.sub.read_reply()).expect("utf8");
        let lines: Vec<&str> = reply.split("\r\n").collect();
        assert_eq!(lines[2], "pmessage", "{reply:?}");
        (lines[6].to_string(), lines[8].to_string())
    }
}

/// Keyevent lines for db 0: `event key` becomes `__keyevent@0__:event key`.
fn keyevents(pairs: &[&str]) -> Vec<String> {
    pairs
        .iter()
        .map(|p| format!("__keyevent@0__:{p}"))
        .collect()
}

#[test]
fn nothing_is_sent_while_notifications_are_off() {
    let mut w = Watch::new("");
    assert!(w.events(&["SET a 1", "DEL a", "LPUSH l x"]).is_empty());
}

#[test]
fn keyspace_and_keyevent_channels_carry_the_event_and_the_key() {
    let mut w = Watch::new("KE$");
    assert_eq!(
        w.events(&["SET greeting hi"]),
        ["__keyspace@0__:greeting set", "__keyevent@0__:set greeting"]
    );
    let mut w = Watch::new("K$");
    assert_eq!(w.events(&["SELECT 5", "SET k v"]), ["__keyspace@5__:k set"]);
}

#[test]
fn classes_filter_events() {
    // Generic events only: SET's string event is not sent, its expire is.
    let mut w = Watch::new("Eg");
    assert_eq!(
        w.events(&["SET a 1 EX 100", "LPUSH l x", "DEL a l"]),
        keyevents(&["expire a", "del a", "del l"])
    );
    // `A` is every class but `n` and `m`.
    let mut w = Watch::new("EA");
    assert_eq!(w.events(&["GET missing", "SET n 1"]), keyevents(&["set n"]));
}

#[test]
fn string_events() {
    let mut w = Watch::new("E$g");
    assert_eq!(
        w.events(&[
            "SET s 1",
            "SETEX t 100 v",
            "SETNX s 2",
            "GETSET s 3",
            "MSET m1 a m2 b",
            "INCR s",
            "DECRBY s 2",
            "INCRBYFLOAT s 1.5",
            "APPEND s x",
            "SETRANGE s 0 y",
            "GETEX t PERSIST",
            "GETEX t EX 100",
            "GETDEL t",
        ]),
        keyevents(&[
            "set s",
            "set t",
            "expire t",
            "set s",
            "set m1",
            "set m2",
            "incrby s",
            "incrby s",
            "incrbyfloat s",
            "append s",
            "setrange s",
            "persist t",
            "expire t",
            "del t",
        ])
    );
}

#[test]
fn generic_events() {
    let mut w = Watch::new("Eg");
    assert_eq!(
        w.events(&[
            "SET a 1",
            "EXPIRE a 100",
            "PERSIST a",
            "RENAME a b",
            "COPY b c",
            "MOVE c 3",
            "PEXPIREAT b 1",
            "UNLINK c nothing",
        ]),
        vec![
            "__keyevent@0__:expire a",
            "__keyevent@0__:persist a",
            "__keyevent@0__:rename_from a",
            "__keyevent@0__:rename_to b",
            "__keyevent@0__:copy_to c",
            "__keyevent@0__:move_from c",
            "__keyevent@3__:move_to c",
            "__keyevent@0__:del b",
        ]
    );
}

#[test]
fn list_events() {
    let mut w = Watch::new("Elg");
    assert_eq!(
        w.events(&[
            "RPUSH l a b c",
            "LPUSHX l z",
            "LPUSHX nothing z",
            "LINSERT l BEFORE a y",
            "LSET l 0 w",
            "LREM l 1 w",
            "LTRIM l 0 -1",
            "RPOPLPUSH l m",
            "LMOVE m l LEFT RIGHT",
            "RPOP l 2",
            "LPOP l 9",
        ]),
        keyevents(&[
            "rpush l",
            "lpush l",
            "linsert l",
            "lset l",
            "lrem l",
            "ltrim l",
            "lpush m",
            "rpop l",
            "rpush l",
            "lpop m",
            "del m",
            "rpop l",
            "lpop l",
            "del l",
        ])
    );
}

#[test]
fn hash_events() {
    let mut w = Watch::new("Ehg");
    assert_eq!(
        w.events(&[
            "HSET h a 1 b 2",
            "HSETNX h a 9",
            "HSETNX h c 3",
            "HINCRBY h a 1",
            "HINCRBYFLOAT h a 0.5",
            "HDEL h a b nothing",
            "HDEL h c",
        ]),
        keyevents(&[
            "hset h",
            "hset h",
            "hincrby h",
            "hincrbyfloat h",
            "hdel h",
            "hdel h",
            "del h",
        ])
    );
}

#[test]
fn set_events() {
    let mut w = Watch::new("Esg");
    assert_eq!(
        w.events(&[
            "SADD s a b c",
            "SADD s a",
            "SREM s a",
            "SMOVE s t b",
            "SINTERSTORE u s t",
            "SUNIONSTORE u s t",
            "SDIFFSTORE u s s",
            "SPOP t",
            "SPOP s 5",
        ]),
        keyevents(&[
            "sadd s",
            "srem s",
            "srem s",
            "sadd t",
            "sunionstore u",
            "del u",
            "spop t",
            "del t",
            "spop s",
            "del s",
        ])
    );
}

#[test]
fn sorted_set_events() {
    let mut w = Watch::new("Ezg");
    assert_eq!(
        w.events(&[
            "ZADD z 1 a 2 b 3 c 4 d",
            "ZADD z INCR 5 a",
            "ZINCRBY z 1 b",
            "ZREM z nothing",
            "ZREM z c",
            "ZRANGESTORE y z 0 0",
            "ZUNIONSTORE x 2 y z",
            "ZPOPMIN z",
            "ZPOPMAX z",
            "ZREMRANGEBYSCORE x 100 200",
            "ZREMRANGEBYRANK x 0 0",
            "ZREMRANGEBYLEX x - +",
        ]),
        keyevents(&[
            "zadd z",
            "zincr z",
            "zincr z",
            "zrem z",
            "zrangestore y",
            "zunionstore x",
            "zpopmin z",
            "zpopmax z",
            "zremrangebyrank x",
            "zremrangebylex x",
            "del x",
        ])
    );
}

#[test]
fn bitmap_and_sort_events() {
    let mut w = Watch::new("E$lg");
    assert_eq!(
        w.events(&[
            "SETBIT b 7 1",
            "SETBIT b 7 1",
            "BITFIELD b SET u8 0 255",
            "BITOP NOT c b",
            "RPUSH l 3 1 2",
            "SORT l STORE sorted",
            "SORT nothing STORE sorted",
        ]),
        keyevents(&[
            "setbit b",
            "setbit b",
            "set c",
            "rpush l",
            "sortstore sorted",
            "del sorted",
        ])
    );
}

#[test]
fn stream_events() {
    let mut w = Watch::new("Etg");
    assert_eq!(
        w.events(&[
            "XADD s 1-1 a 1",
            "XADD s MAXLEN 1 2-1 a 2",
            "XADD s MAXLEN 5 3-1 a 3",
            "XTRIM s MAXLEN 10",
            "XTRIM s MAXLEN 1",
            "XDEL s 1-1",
            "XDEL s 3-1",
            "XSETID s 10-1",
            "XADD nothing NOMKSTREAM * a 1",
            "XGROUP CREATE s g 0",
            "XGROUP CREATE t g $ MKSTREAM",
            "XGROUP SETID s g 0",
            "XGROUP CREATECONSUMER s g c1",
            "XGROUP CREATECONSUMER s g c1",
            "XGROUP DELCONSUMER s g c1",
            "XGROUP DELCONSUMER s g c1",
            "XGROUP DESTROY s g",
            "XGROUP DESTROY s g",
            "XLEN s",
            "XRANGE s - +",
        ]),
        keyevents(&[
            "xadd s",
            "xadd s",
            "xtrim s",
            "xadd s",
            "xtrim s",
            "xdel s",
            "xsetid s",
            "xgroup-create s",
            "xgroup-create t",
            "xgroup-setid s",
            "xgroup-createconsumer s",
            "xgroup-delconsumer s",
            "xgroup-destroy s",
        ])
    );
}

#[test]
fn reads_and_claims_that_make_a_consumer_raise_createconsumer() {
    let mut w = Watch::new("Et");
    assert_eq!(
        w.events(&[
            "XADD s 1-1 a 1",
            "XADD s 2-1 a 2",
            "XGROUP CREATE s g 0",
            "XREADGROUP GROUP g c1 COUNT 1 STREAMS s >",
            "XREADGROUP GROUP g c1 COUNT 1 STREAMS s >",
            // Nothing new to serve: the consumer is not made.
            "XREADGROUP GROUP g c2 STREAMS s >",
            "XREADGROUP GROUP g c3 STREAMS s 0",
            "XGROUP SETID s g 0",
            "XREADGROUP GROUP g c4 NOACK COUNT 1 STREAMS s >",
            // A claim makes its consumer with the first entry it takes.
            "XCLAIM s g c5 0 99-1",
            "XCLAIM s g c5 0 1-1",
            "XAUTOCLAIM s g c6 100000000 0",
            "XAUTOCLAIM s g c6 0 0",
            "XAUTOCLAIM s g c6 0 0",
        ]),
        keyevents(&[
            "xadd s",
            "xadd s",
            "xgroup-create s",
            "xgroup-createconsumer s",
            "xgroup-createconsumer s",
            "xgroup-setid s",
            "xgroup-createconsumer s",
            "xgroup-createconsumer s",
            "xgroup-createconsumer s",
        ])
    );
}

#[test]
fn a_waiting_xreadgroup_makes_its_consumer_when_served() {
    let mut w = Watch::new("Et");
    w.conn.cmd(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    w.events(&[]);
    let mut reader = w.server.raw();
    reader.send_cmd(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "BLOCK",
        "0",
        "STREAMS",
        "s",
        ">",
    ]);
    wait_blocked(&mut w.conn, 1);
    assert_eq!(
        w.events(&["XADD s 1-1 a 1"]),
        keyevents(&["xadd s", "xgroup-createconsumer s"])
    );
    assert!(reader.read_reply().starts_with(b"*1\r\n"));
}

/// Wait until `n` clients are blocked.
fn wait_blocked(conn: &mut RawConn, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let line = format!("blocked_clients:{n}\r\n");
    while !String::from_utf8_lossy(&conn.cmd(&["INFO", "clients"])).contains(&line) {
        assert!(Instant::now() < deadline, "never {n} blocked clients");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn stream_lookups_raise_new_and_keymiss() {
    let mut w = Watch::new("Enm");
    assert_eq!(
        w.events(&[
            "XADD s 1-1 a 1",
            // XREAD looks each key up twice: to read its ID, and to serve it.
            "XREAD STREAMS s nothing 0 0",
            "XREADGROUP GROUP g c STREAMS nothing >",
            "XLEN nothing",
            "XADD nothing NOMKSTREAM * a 1",
            "XGROUP CREATE t g $ MKSTREAM",
        ]),
        keyevents(&[
            "new s",
            "keymiss nothing",
            "keymiss nothing",
            "keymiss nothing",
            "keymiss nothing",
            "new t",
        ])
    );
}

#[test]
fn hyperloglog_events() {
    let mut w = Watch::new("E$nm");
    assert_eq!(
        w.events(&[
            "PFADD h a b c",
            "PFADD h a",
            "PFADD h d",
            "PFADD e",
            "PFADD e",
            "PFCOUNT h",
            "PFCOUNT h nothing other",
            // The destination is read as the first source.
            "PFMERGE d h nothing",
            "PFMERGE d h",
            "PFDEBUG TODENSE h",
            "PFDEBUG GETREG nothing",
        ]),
        keyevents(&[
            "new h",
            "pfadd h",
            "pfadd h",
            "new e",
            "pfadd e",
            "keymiss nothing",
            "keymiss other",
            "keymiss d",
            "keymiss nothing",
            "new d",
            "pfadd d",
            "pfadd d",
        ])
    );
}

#[test]
fn geo_events() {
    let mut w = Watch::new("Ezg");
    assert_eq!(
        w.events(&[
            "GEOADD g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
            "GEOADD g 13.361389 38.115556 Palermo",
            "GEOADD g XX 13 38 Palermo",
            "GEOADD g NX 13 38 Palermo",
            "GEOADD nothing XX 13 38 Palermo",
            "GEORADIUS g 15 37 200 km STORE r",
            "GEORADIUSBYMEMBER g Palermo 10 km STOREDIST r",
            "GEOSEARCHSTORE s g FROMLONLAT 15 37 BYRADIUS 200 km",
            "GEOSEARCHSTORE s g FROMLONLAT 0 0 BYRADIUS 1 km",
            "GEOSEARCHSTORE s g FROMLONLAT 0 0 BYRADIUS 1 km",
            "GEORADIUS nothing 0 0 1 km STORE r",
            "GEOSEARCH g FROMLONLAT 15 37 BYRADIUS 200 km",
        ]),
        keyevents(&[
            "zadd g",
            "zadd g",
            "georadiusstore r",
            "georadiusstore r",
            "geosearchstore s",
            "del s",
            "del r",
        ])
    );
}

#[test]
fn new_keys_and_key_misses_have_their_own_classes() {
    let mut w = Watch::new("Enm");
    assert_eq!(
        w.events(&[
            "SET a 1",
            "SET a 2",
            "GET nothing",
            "LPUSH l x",
            "RENAME a b"
        ]),
        keyevents(&["new a", "keymiss nothing", "new l", "new b"])
    );
}

#[test]
fn keys_expired_on_access_raise_expired() {
    let mut w = Watch::new("Exg");
    w.conn.cmd(&["SET", "k", "v", "PX", "1"]);
    std::thread::sleep(Duration::from_millis(20));
    let events = w.events(&["EXISTS k"]);
    // The active cycle may have got there first: either way, one `expired`.
    assert!(
        events == keyevents(&["expire k", "expired k"]),
        "{events:?}"
    );
}

#[test]
fn keys_expired_by_the_active_cycle_raise_expired() {
    let mut w = Watch::new("Ex");
    w.conn.cmd(&["SET", "soon", "v", "PX", "50"]);
    // Nobody touches the key: only the background cycle can find it.
    let (channel, key) = w.next_event();
    assert_eq!(
        (channel.as_str(), key.as_str()),
        ("__keyevent@0__:expired", "soon")
    );
}
