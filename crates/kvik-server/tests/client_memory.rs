//! What clients' memory costs and how it is bounded: an idle client gives its read
//! buffer back; with `maxmemory-clients`, past the limit the clients using the most
//! memory are closed until the rest fit, CLIENT NO-EVICT clients are spared and INFO
//! counts `evicted_clients`. Checked against redis-server 7.0.15 with the same steps.

mod support;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use support::{RawConn, TestServer};

/// A connection that ran `setup` (one command, answered `+OK`), then sent the start
/// of one huge argument and `body` bytes of it: its query buffer holds them until
/// the rest comes.
fn with_partial_query(server: &TestServer, setup: Option<&[&str]>, body: usize) -> TcpStream {
    let mut stream = TcpStream::connect(server.addr()).expect("connect");
    stream.set_read_timeout(Some(support::IO_TIMEOUT)).unwrap();
    if let Some(command) = setup {
        stream
            .write_all(&support::encode_command(command))
            .expect("send");
        let mut ok = [0u8; 5];
        stream.read_exact(&mut ok).expect("setup reply");
        assert_eq!(&ok, b"+OK\r\n");
    }
    let mut request = format!("*1\r\n${}\r\n", body * 2).into_bytes();
    request.resize(request.len() + body, b'v');
    stream.write_all(&request).expect("send");
    stream
}

/// Whether the server closes `stream` within `wait`.
fn closed_within(stream: &mut TcpStream, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    stream
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let mut byte = [0u8; 1];
    while Instant::now() < deadline {
        match stream.read(&mut byte) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return true,
        }
    }
    false
}

#[test]
fn the_largest_client_goes_and_no_evict_ones_stay() {
    let server = TestServer::start(&["--server-threads", "2"]);
    let mut admin = server.raw();
    assert_eq!(
        admin.cmd(&["CONFIG", "SET", "maxmemory-clients", "4mb"]),
        b"+OK\r\n"
    );
    let mut spared = with_partial_query(&server, Some(&["CLIENT", "NO-EVICT", "on"]), 1_000_000);
    let mut big = with_partial_query(&server, None, 3_000_000);
    assert!(closed_within(&mut big, Duration::from_secs(5)));
    // The rest fit now: nobody else goes.
    assert!(!closed_within(&mut spared, Duration::from_millis(300)));
    assert_eq!(admin.cmd(&["PING"]), b"+PONG\r\n");
    assert_eq!(admin.info_field("stats", "evicted_clients"), "1");
}

#[test]
fn no_limit_evicts_nobody() {
    let server = TestServer::start(&[]);
    let mut admin = server.raw();
    let mut big = with_partial_query(&server, None, 1_500_000);
    assert!(!closed_within(&mut big, Duration::from_millis(500)));
    assert_eq!(admin.info_field("stats", "evicted_clients"), "0");
}

/// A client's `qbuf` and `qbuf-free` in CLIENT LIST.
fn query_buffer(conn: &mut RawConn, name: &str) -> (u64, u64) {
    let list = String::from_utf8_lossy(&conn.cmd(&["CLIENT", "LIST"])).into_owned();
    let line = list
        .lines()
        .find(|l| l.contains(&format!(" name={name} ")))
        .expect("the client is listed");
    let field = |key: &str| -> u64 {
        let start = line.find(&format!(" {key}=")).expect("field") + key.len() + 2;
        line[start..].split(' ').next().unwrap().parse().unwrap()
    };
    (field("qbuf"), field("qbuf-free"))
}

#[test]
fn an_idle_client_gives_its_read_buffer_back() {
    let server = TestServer::start(&["--hz", "100"]);
    let mut admin = server.raw();
    let mut client = server.raw();
    assert_eq!(client.cmd(&["CLIENT", "SETNAME", "idle"]), b"+OK\r\n");
    let value = "A".repeat(400_000);
    assert_eq!(client.cmd(&["SET", "x", &value]), b"+OK\r\n");
    assert!(query_buffer(&mut admin, "idle").1 > 0);
    // Redis frees it after two idle seconds.
    let deadline = Instant::now() + Duration::from_secs(10);
    while query_buffer(&mut admin, "idle") != (0, 0) {
        assert!(Instant::now() < deadline, "the buffer stayed");
        std::thread::sleep(Duration::from_millis(100));
    }
    // And takes one again when the client speaks.
    assert_eq!(
        client.cmd(&["GET", "x"]).len(),
        "$400000\r\n".len() + 400_000 + 2
    );
}

#[test]
fn a_reply_past_the_output_limit_is_not_built_and_its_client_goes() {
    let server = TestServer::start(&[]);
    let mut admin = server.raw();
    assert_eq!(
        admin.cmd(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 1mb 0 0"
        ]),
        b"+OK\r\n"
    );
    admin.cmd(&["SADD", "s", "a", "b", "c"]);
    admin.cmd(&["HSET", "h", "f", "v", "g", "w"]);
    admin.cmd(&["ZADD", "z", "1", "a", "2", "b"]);
    let huge: [&[&str]; 3] = [
        &["SRANDMEMBER", "s", "-20000000"],
        &["HRANDFIELD", "h", "-20000000", "WITHVALUES"],
        &["ZRANDMEMBER", "z", "-20000000", "WITHSCORES"],
    ];
    for command in huge {
        let mut client = server.raw();
        client.send_cmd(command);
        assert!(
            client.closed_within(Duration::from_secs(10)),
            "{command:?} kept its client"
        );
    }
    // The replies were never built: memory stayed far below their size (hundreds of MB).
    let peak: u64 = admin
        .info_field("memory", "used_memory_peak")
        .parse()
        .unwrap();
    assert!(peak < 64 << 20, "used_memory_peak {peak}");
    // Under the limit, replies are whole.
    let reply = admin.cmd(&["SRANDMEMBER", "s", "-1000"]);
    assert!(reply.starts_with(b"*1000\r\n"));
}
