//! kvik beside KeyDB 6.3 nodes. No KeyDB binary runs in the tests, so small fakes
//! play its part, speaking its protocol byte for byte:
//!
//! - kvik as a plain replica of a KeyDB master: the fake answers the replica's
//!   handshake as KeyDB 6.3 does, sends `+FULLRESYNC` and an RDB that keydb-server
//!   6.3.4 saved (../shared/fixtures, see its README) with the aux fields KeyDB adds
//!   to a sync (`repl-*`, `repl-masters`, `mvcc-tstamp`, `lua`), then a plain
//!   command stream. The replica must load it all, member deadlines included, apply
//!   the stream and acknowledge its offset.
//! - kvik as an active replica of an active KeyDB master (a node-by-node migration):
//!   the same sync, then KeyDB's `RREPLAY` envelopes, forwarded ones (an envelope
//!   inside an envelope) and duplicates included.
//! - a KeyDB active replica of an active kvik node: its handshake (REPLPING,
//!   `capa activeExpire`, `REPLCONF uuid`), and the envelopes in KeyDB's layout.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;
use support::{encode_command, wait_for, RawConn, TestServer};

/// The master's replication id and the offset its full sync starts at.
const REPLID: &str = "0123456789abcdef0123456789abcdef01234567";
const START_OFFSET: u64 = 1000;

fn fixture() -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/keydb-6.3.4-all-types.rdb");
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// An RDB string of fewer than 64 bytes.
fn short_string(s: &[u8]) -> Vec<u8> {
    assert!(s.len() < 64);
    let mut out = vec![s.len() as u8];
    out.extend_from_slice(s);
    out
}

fn aux(name: &str, value: &str) -> Vec<u8> {
    let mut out = vec![0xfa];
    out.extend(short_string(name.as_bytes()));
    out.extend(short_string(value.as_bytes()));
    out
}

/// The fixture as a KeyDB master sends it to a replica: its sync aux fields after
/// the header, a key's MVCC timestamp before the first key, and a zero checksum
/// (a master with `rdbchecksum no`; the bytes changed).
fn sync_rdb() -> Vec<u8> {
    let file = fixture();
    let first_db = file
        .windows(3)
        .position(|w| w == b"\xfe\x00\xfb")
        .expect("the fixture's db 0");
    let mut rdb = file[..first_db].to_vec();
    rdb.extend(aux("repl-stream-db", "0"));
    rdb.extend(aux("repl-id", REPLID));
    rdb.extend(aux("repl-offset", &START_OFFSET.to_string()));
    rdb.extend(aux("repl-masters", ""));
    rdb.extend(aux("lua", "return 1"));
    // SELECTDB 0 and RESIZEDB, then KeyDB's timestamp of the key that follows.
    let resize_end = first_db + 2 + 3;
    rdb.extend_from_slice(&file[first_db..resize_end]);
    rdb.extend(aux("mvcc-tstamp", "1784043922565431296"));
    rdb.extend_from_slice(&file[resize_end..file.len() - 8]);
    rdb.extend_from_slice(&[0; 8]);
    rdb
}

/// The capabilities a KeyDB 6.3 active replica announces (`syncWithMaster`).
const KEYDB_CAPA: [&str; 7] = [
    "REPLCONF",
    "capa",
    "eof",
    "capa",
    "psync2",
    "capa",
    "activeExpire",
];

/// Read one command (a RESP array of bulk strings) from the replica.
fn read_command(r: &mut BufReader<TcpStream>) -> Vec<String> {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let n: usize = line.trim_end()[1..].parse().unwrap();
    (0..n)
        .map(|_| {
            line.clear();
            r.read_line(&mut line).unwrap();
            let len: usize = line.trim_end()[1..].parse().unwrap();
            let mut arg = vec![0; len + 2];
            r.read_exact(&mut arg).unwrap();
            arg.truncate(len);
            String::from_utf8(arg).unwrap()
        })
        .collect()
}

/// The fake KeyDB master's node id.
const KEYDB_UUID: &str = "f4d5b2b5-4f07-4ee5-a4f2-5dc98507dfce";

/// Answer the handshake until PSYNC, as KeyDB 6.3 answers a replica (an active
/// master says so in its answer to `capa`, and every KeyDB master answers
/// `REPLCONF uuid` with its own); the commands the replica sent.
fn handshake(r: &mut BufReader<TcpStream>, w: &mut TcpStream, active: bool) -> Vec<Vec<String>> {
    let mut said = Vec::new();
    loop {
        let cmd = read_command(r);
        let verb = cmd[0].to_ascii_uppercase();
        match verb.as_str() {
            "PING" => w.write_all(b"+PONG\r\n").unwrap(),
            "REPLCONF" if cmd[1].eq_ignore_ascii_case("uuid") => w
                .write_all(format!("+{KEYDB_UUID}\r\n").as_bytes())
                .unwrap(),
            "REPLCONF" if cmd[1].eq_ignore_ascii_case("capa") && active => {
                w.write_all(b"+OK active-replica\r\n").unwrap()
            }
            "REPLCONF" => w.write_all(b"+OK\r\n").unwrap(),
            "PSYNC" => {
                assert_eq!(cmd[1..], ["?", "-1"], "a first sync");
                let reply = format!("+FULLRESYNC {REPLID} {START_OFFSET}\r\n");
                w.write_all(reply.as_bytes()).unwrap();
                return said;
            }
            other => panic!("unexpected {other} in the handshake"),
        }
        said.push(cmd);
    }
}

/// A replica of a fake KeyDB master: the master's ends of the link, once the
/// replica asked for a sync and got the RDB.
fn follow_fake_master(
    args: &[&str],
    active: bool,
) -> (
    TestServer,
    Vec<Vec<String>>,
    BufReader<TcpStream>,
    TcpStream,
) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let mut args = args.to_vec();
    args.extend(["--replicaof", "127.0.0.1", &port]);
    let replica = TestServer::start(&args);
    let (socket, _) = listener.accept().unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut reader = BufReader::new(socket.try_clone().unwrap());
    let mut writer = socket;
    let said = handshake(&mut reader, &mut writer, active);
    let rdb = sync_rdb();
    writer
        .write_all(format!("${}\r\n", rdb.len()).as_bytes())
        .unwrap();
    writer.write_all(&rdb).unwrap();
    (replica, said, reader, writer)
}

/// Read the replica's ACKs until one says `offset`.
fn wait_ack(reader: &mut BufReader<TcpStream>, offset: u64) {
    let want = offset.to_string();
    loop {
        let cmd = read_command(reader);
        if cmd[..2] == ["REPLCONF", "ACK"] && cmd[2] == want {
            return;
        }
    }
}

#[test]
fn kvik_replicates_from_a_keydb_master() {
    let (replica, said, mut reader, mut writer) = follow_fake_master(&[], false);
    assert!(
        said.iter()
            .all(|cmd| cmd[0] != "REPLCONF" || cmd[1] != "uuid"),
        "a plain replica does not name itself: {said:?}"
    );

    let stream: Vec<Vec<&str>> = vec![
        vec!["SELECT", "0"],
        vec!["SET", "after-sync", "1"],
        vec!["SADD", "set", "m5"],
        vec!["PEXPIREMEMBERAT", "set", "m5", "4102444800000"],
        vec!["PING"],
        vec!["SELECT", "3"],
        vec!["SET", "db3-after", "v"],
    ];
    let mut sent = 0u64;
    for cmd in &stream {
        let bytes = encode_command(cmd);
        sent += bytes.len() as u64;
        writer.write_all(&bytes).unwrap();
    }
    let getack = encode_command(&["REPLCONF", "GETACK", "*"]);
    writer.write_all(&getack).unwrap();
    sent += getack.len() as u64;
    // The replica acknowledges every byte of the stream (GETACK included).
    let want = (START_OFFSET + sent).to_string();
    wait_ack(&mut reader, START_OFFSET + sent);

    let mut c: RawConn = replica.raw();
    wait_for("the link", || {
        c.info_field("replication", "master_link_status") == "up"
    });
    let text = |reply: Vec<u8>| String::from_utf8_lossy(&reply).into_owned();
    assert_eq!(text(c.cmd(&["DBSIZE"])), ":16\r\n");
    assert_eq!(text(c.cmd(&["GET", "after-sync"])), "$1\r\n1\r\n");
    assert_eq!(text(c.cmd(&["GET", "str"])), "$5\r\nhello\r\n");
    assert_eq!(text(c.cmd(&["SCARD", "set"])), ":5\r\n");
    // KeyDB's member deadlines came with the sync, and the stream added one.
    for member in ["m1", "m5"] {
        let ttl = text(c.cmd(&["TTL", "set", member]));
        let secs: i64 = ttl.trim_start_matches(':').trim_end().parse().unwrap();
        assert!(secs > 1_000_000, "{member}: {ttl}");
    }
    assert_eq!(text(c.cmd(&["TTL", "set", "m2"])), ":-1\r\n");
    c.cmd(&["SELECT", "3"]);
    assert_eq!(text(c.cmd(&["GET", "db3key"])), "$2\r\nv3\r\n");
    assert_eq!(text(c.cmd(&["GET", "db3-after"])), "$1\r\nv\r\n");
    let info = text(c.cmd(&["INFO", "replication"]));
    assert!(info.contains(&format!("master_replid:{REPLID}")), "{info}");
    assert!(
        info.contains(&format!("slave_repl_offset:{want}")),
        "{info}"
    );
}

/// An envelope exactly as KeyDB 6.3 writes one into its stream
/// (`replicationFeedSlavesCore`): `RREPLAY <uuid> <command> <db> <mvcc>`.
fn keydb_envelope(uuid: &str, command: &[u8], db: u32, mvcc: u64) -> Vec<u8> {
    let (db, mvcc) = (db.to_string(), mvcc.to_string());
    let mut out = format!(
        "*5\r\n$7\r\nRREPLAY\r\n$36\r\n{uuid}\r\n${}\r\n",
        command.len()
    )
    .into_bytes();
    out.extend_from_slice(command);
    out.extend_from_slice(
        format!("\r\n${}\r\n{db}\r\n${}\r\n{mvcc}\r\n", db.len(), mvcc.len()).as_bytes(),
    );
    out
}

/// KeyDB's MVCC timestamp of a write at `ms`, the `counter`th of its millisecond.
fn mvcc(ms: u64, counter: u64) -> u64 {
    ms << 20 | counter
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[test]
fn kvik_is_an_active_replica_of_an_active_keydb_master() {
    let (replica, said, mut reader, mut writer) =
        follow_fake_master(&["--active-replica", "yes"], true);
    // What KeyDB's replicas say, and the uuid kvik names itself by.
    let replconf = |what: &str| {
        said.iter()
            .find(|c| c[0] == "REPLCONF" && c[1] == what)
            .unwrap_or_else(|| panic!("no REPLCONF {what}: {said:?}"))
    };
    let capa = replconf("capa");
    assert_eq!(capa[..7], KEYDB_CAPA);
    let uuid = &replconf("uuid")[2];
    assert_eq!(uuid.len(), 36);

    let mut c = replica.raw();
    wait_for("the link", || {
        c.info_field("replication", "master_link_status") == "up"
    });
    // Written here first: a KeyDB write stamped a minute earlier loses to it.
    assert_eq!(c.cmd(&["SET", "lww", "local"]), b"+OK\r\n");
    let now = now_ms();
    let other = "3e4efc2d-a9f9-4a1e-90b7-ebd4171606de";
    let third = "307ea48c-fc10-47a1-91bb-263276269153";
    let set = |k: &str, v: &str| encode_command(&["SET", k, v]);
    let stream: Vec<Vec<u8>> = vec![
        keydb_envelope(KEYDB_UUID, &set("after-sync", "1"), 0, mvcc(now, 0)),
        keydb_envelope(KEYDB_UUID, &encode_command(&["INCR", "n"]), 0, mvcc(now, 1)),
        // The same write again (a second path): KeyDB's timestamp says it was met.
        keydb_envelope(KEYDB_UUID, &encode_command(&["INCR", "n"]), 0, mvcc(now, 1)),
        // Forwarded by the master from another node: an envelope inside its own.
        keydb_envelope(
            KEYDB_UUID,
            &keydb_envelope(other, &set("forwarded", "v"), 0, mvcc(now, 0)),
            0,
            mvcc(now, 2),
        ),
        // Our own write coming back around.
        keydb_envelope(
            KEYDB_UUID,
            &keydb_envelope(uuid, &set("echo", "v"), 0, mvcc(now, 0)),
            0,
            mvcc(now, 3),
        ),
        // Older than what this node wrote: last writer wins.
        keydb_envelope(
            KEYDB_UUID,
            &keydb_envelope(third, &set("lww", "remote"), 0, mvcc(now - 60_000, 0)),
            0,
            mvcc(now, 4),
        ),
        keydb_envelope(KEYDB_UUID, &set("db3-after", "v"), 3, mvcc(now, 5)),
        encode_command(&["PING"]),
        encode_command(&["REPLCONF", "GETACK", "*"]),
    ];
    let sent: u64 = stream.iter().map(|b| b.len() as u64).sum();
    writer.write_all(&stream.concat()).unwrap();
    // An active replica acknowledges its place in the master's stream.
    wait_ack(&mut reader, START_OFFSET + sent);

    let text = |reply: Vec<u8>| String::from_utf8_lossy(&reply).into_owned();
    assert_eq!(text(c.cmd(&["GET", "after-sync"])), "$1\r\n1\r\n");
    assert_eq!(text(c.cmd(&["GET", "n"])), "$1\r\n1\r\n", "applied once");
    assert_eq!(text(c.cmd(&["GET", "forwarded"])), "$1\r\nv\r\n");
    assert_eq!(text(c.cmd(&["GET", "echo"])), "$-1\r\n", "ours: dropped");
    assert_eq!(text(c.cmd(&["GET", "lww"])), "$5\r\nlocal\r\n");
    assert_eq!(text(c.cmd(&["GET", "str"])), "$5\r\nhello\r\n", "the sync");
    c.cmd(&["SELECT", "3"]);
    assert_eq!(text(c.cmd(&["GET", "db3-after"])), "$1\r\nv\r\n");
}

/// Read a status line, skipping the newlines a master sends while a sync waits.
fn status_line(r: &mut BufReader<TcpStream>) -> String {
    loop {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        if !line.trim().is_empty() {
            return line.trim_end().to_string();
        }
    }
}

#[test]
fn a_keydb_active_replica_of_kvik_gets_keydbs_envelopes() {
    let kvik = TestServer::start(&["--active-replica", "yes", "--repl-diskless-sync-delay", "0"]);
    let socket = TcpStream::connect(kvik.addr()).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut r = BufReader::new(socket.try_clone().unwrap());
    let mut w = socket;
    // KeyDB's handshake (syncWithMaster): REPLPING, PING when it is unknown, then
    // the REPLCONFs in one write, their replies after.
    w.write_all(&encode_command(&["REPLPING"])).unwrap();
    assert!(status_line(&mut r).starts_with("-ERR unknown command"));
    w.write_all(&encode_command(&["PING"])).unwrap();
    assert_eq!(status_line(&mut r), "+PONG");
    let replica_uuid = "9a1e1c56-08b2-4b39-8f3e-5f0f6a0a9c11";
    let hello = [
        encode_command(&["REPLCONF", "listening-port", "6380"]),
        encode_command(&KEYDB_CAPA),
        encode_command(&["REPLCONF", "uuid", replica_uuid]),
    ];
    w.write_all(&hello.concat()).unwrap();
    assert_eq!(status_line(&mut r), "+OK");
    assert_eq!(status_line(&mut r), "+OK active-replica");
    let uuid = status_line(&mut r)[1..].to_string();
    assert_eq!(uuid.len(), 36, "kvik's uuid");
    w.write_all(&encode_command(&["PSYNC", "?", "-1"])).unwrap();
    let full = status_line(&mut r);
    assert!(full.starts_with("+FULLRESYNC "), "{full}");
    let mark = status_line(&mut r);
    let mark = mark
        .strip_prefix("$EOF:")
        .expect("a diskless payload")
        .as_bytes()
        .to_vec();
    let mut tail: Vec<u8> = Vec::new();
    let mut byte = [0u8; 1];
    while !tail.ends_with(&mark) {
        r.read_exact(&mut byte).unwrap();
        tail.push(byte[0]);
    }
    w.write_all(&encode_command(&["REPLCONF", "ACK", "0"]))
        .unwrap();

    let mut c = kvik.raw();
    assert_eq!(c.cmd(&["SELECT", "2"]), b"+OK\r\n");
    let before = now_ms();
    assert_eq!(c.cmd(&["SET", "k", "v"]), b"+OK\r\n");
    let envelope = loop {
        let cmd = read_command(&mut r);
        if cmd[0] != "PING" && cmd[0] != "REPLCONF" {
            break cmd;
        }
    };
    // `RREPLAY <kvik's uuid> <command> <db> <mvcc>`, no more.
    assert_eq!(envelope.len(), 5, "{envelope:?}");
    assert_eq!(
        envelope[..4],
        [
            "RREPLAY",
            uuid.as_str(),
            "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n",
            "2"
        ]
    );
    let stamp: u64 = envelope[4].parse().unwrap();
    assert!(
        (before..before + 10_000).contains(&(stamp >> 20)),
        "{stamp}"
    );
    // Byte for byte what KeyDB writes.
    let args: Vec<&str> = envelope.iter().map(String::as_str).collect();
    assert_eq!(
        keydb_envelope(&uuid, args[2].as_bytes(), 2, stamp),
        encode_command(&args)
    );
    assert!(tail.len() > mark.len(), "an RDB came first");
}
