//! kvik as a plain replica of a KeyDB 6.3 master. No KeyDB binary runs in the tests,
//! so a small fake master plays its part: it answers the replica's handshake as
//! KeyDB 6.3 does, sends `+FULLRESYNC` and an RDB that keydb-server 6.3.4 saved
//! (../shared/fixtures, see its README) with the aux fields KeyDB adds to a sync
//! (`repl-*`, `repl-masters`, `mvcc-tstamp`, `lua`), then a plain command stream
//! (no RREPLAY envelopes: the replica is not active). The replica must load it all,
//! member deadlines included, apply the stream and acknowledge its offset.

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

/// Answer the handshake until PSYNC, as KeyDB 6.3 answers a plain replica.
fn handshake(r: &mut BufReader<TcpStream>, w: &mut TcpStream) {
    loop {
        let cmd = read_command(r);
        let verb = cmd[0].to_ascii_uppercase();
        match verb.as_str() {
            "PING" => w.write_all(b"+PONG\r\n").unwrap(),
            "REPLCONF" => w.write_all(b"+OK\r\n").unwrap(),
            "PSYNC" => {
                assert_eq!(cmd[1..], ["?", "-1"], "a first sync");
                let reply = format!("+FULLRESYNC {REPLID} {START_OFFSET}\r\n");
                w.write_all(reply.as_bytes()).unwrap();
                return;
            }
            other => panic!("unexpected {other} in the handshake"),
        }
    }
}

#[test]
fn kvik_replicates_from_a_keydb_master() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let replica = TestServer::start(&["--replicaof", "127.0.0.1", &port]);
    let (socket, _) = listener.accept().unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut reader = BufReader::new(socket.try_clone().unwrap());
    let mut writer = socket;
    handshake(&mut reader, &mut writer);
    let rdb = sync_rdb();
    writer
        .write_all(format!("${}\r\n", rdb.len()).as_bytes())
        .unwrap();
    writer.write_all(&rdb).unwrap();

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
    loop {
        let cmd = read_command(&mut reader);
        if cmd[..2] == ["REPLCONF", "ACK"] && cmd[2] == want {
            break;
        }
    }

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
