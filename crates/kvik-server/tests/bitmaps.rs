//! The bitmap commands over real connections: the offset limit that follows
//! proto-max-bulk-len, the encoding of the strings they write, and the effects each
//! write appends to the effect stream. Replies and errors are covered against real
//! Redis by the differential scripts `tests/differential/bitmaps_*.redis`.

mod support;

use kvik_server::effects::Effect;
use kvik_server::keyspace::hash_key;
use kvik_server::startup::{launch, Running};
use std::sync::mpsc::Receiver;
use support::RawConn;

/// A server running inside the test process; shut down when dropped.
struct Kvik {
    running: Option<Running>,
    addr: String,
}

impl Kvik {
    fn start_with(tweak: impl FnOnce(&mut kvik_config::Config)) -> Kvik {
        let port = support::free_port();
        let mut config = kvik_config::Config {
            port,
            server_threads: 2,
            ..support::in_process_config()
        };
        tweak(&mut config);
        let running = launch(config, None).expect("server starts");
        Kvik {
            running: Some(running),
            addr: format!("127.0.0.1:{port}"),
        }
    }

    fn start() -> Kvik {
        Self::start_with(|_| {})
    }

    fn running(&self) -> &Running {
        self.running.as_ref().expect("running until dropped")
    }

    fn conn(&self) -> RawConn {
        RawConn::connect(&self.addr)
    }

    fn effects(&self) -> Receiver<Effect> {
        self.running().server.effects.subscribe()
    }

    fn encoding(&self, key: &str) -> &'static str {
        let keyspace = &self.running().server.keyspace;
        let hash = hash_key(key.as_bytes());
        let shard = keyspace.shard(0, keyspace.shard_of(hash)).lock();
        shard
            .find(hash, key.as_bytes())
            .map(|e| e.value.encoding_name())
            .expect("key exists")
    }
}

impl Drop for Kvik {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown();
        }
    }
}

/// Sends a command given as words; the reply's bytes as text.
fn q(c: &mut RawConn, line: &str) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    String::from_utf8_lossy(&c.cmd(&words)).into_owned()
}

/// Every effect appended so far and not yet seen, as words joined by spaces. Effects
/// are appended before the reply is sent, so they are all there once it has arrived.
fn drain(rx: &Receiver<Effect>) -> Vec<String> {
    rx.try_iter()
        .map(|e| {
            e.argv
                .iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn int(n: i64) -> String {
    format!(":{n}\r\n")
}

const BAD_OFFSET: &str = "-ERR bit offset is not an integer or out of range\r\n";

#[test]
fn offsets_stop_at_proto_max_bulk_len() {
    const MAX: u64 = 1024 * 1024;
    let kvik = Kvik::start_with(|c| c.proto_max_bulk_len = MAX);
    let mut c = kvik.conn();
    let last = MAX * 8 - 1;
    assert_eq!(q(&mut c, &format!("SETBIT k {last} 1")), int(0));
    assert_eq!(q(&mut c, "STRLEN k"), int(MAX as i64));
    assert_eq!(q(&mut c, &format!("GETBIT k {last}")), int(1));
    assert_eq!(q(&mut c, &format!("SETBIT k {} 1", last + 1)), BAD_OFFSET);
    assert_eq!(q(&mut c, &format!("GETBIT k {}", last + 1)), BAD_OFFSET);
    assert_eq!(q(&mut c, "BITCOUNT k"), int(1));
    assert_eq!(q(&mut c, "BITPOS k 1"), int(last as i64));
}

#[test]
fn written_strings_are_raw() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    assert_eq!(q(&mut c, "SETBIT fresh 3 1"), int(0));
    assert_eq!(kvik.encoding("fresh"), "raw");
    q(&mut c, "SET n 7");
    assert_eq!(q(&mut c, "SETBIT n 0 0"), int(0));
    assert_eq!(kvik.encoding("n"), "raw");
    assert_eq!(q(&mut c, "GET n"), "$1\r\n7\r\n");
}

#[test]
fn writes_propagate_what_redis_propagates() {
    let kvik = Kvik::start();
    let rx = kvik.effects();
    let mut c = kvik.conn();
    let mut expect = |line: &str, effects: &[&str]| {
        q(&mut c, line);
        assert_eq!(drain(&rx), effects, "{line}");
    };
    expect("SETBIT k 3 1", &["SETBIT k 3 1"]);
    expect("SETBIT k 3 1", &[]);
    expect("SETBIT k 3 0", &["SETBIT k 3 0"]);
    expect("SETBIT k 20 0", &["SETBIT k 20 0"]);
    expect("SETBIT k x 0", &[]);
    expect("GETBIT k 3", &[]);
    expect("BITCOUNT k", &[]);
    expect("BITPOS k 1", &[]);
    expect("BITOP OR d k missing", &["BITOP OR d k missing"]);
    expect("BITOP AND d missing", &["BITOP AND d missing"]);
    expect("BITOP AND d missing", &[]);
    expect("BITOP NOT d k k", &[]);
    expect("BITFIELD k GET u8 0 GET i4 3", &[]);
    expect("BITFIELD_RO k GET u8 0", &[]);
    expect("BITFIELD k SET u8 0 1", &["BITFIELD k SET u8 0 1"]);
    expect("BITFIELD k SET u8 0 1", &[]);
    expect(
        "BITFIELD k INCRBY u8 0 1 GET u8 0",
        &["BITFIELD k INCRBY u8 0 1 GET u8 0"],
    );
    expect("BITFIELD k OVERFLOW FAIL INCRBY u8 0 255", &[]);
    expect("BITFIELD k SET u8 x 1", &[]);
    expect("BITFIELD_RO k SET u8 0 1", &[]);
}

#[test]
fn bitfield_grows_the_string_to_its_farthest_write() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    assert_eq!(
        q(&mut c, "BITFIELD f GET u8 100 SET u8 #3 7 INCRBY i16 4 1"),
        "*3\r\n:0\r\n:0\r\n:1\r\n"
    );
    assert_eq!(q(&mut c, "STRLEN f"), int(4));
    assert_eq!(kvik.encoding("f"), "raw");
}
