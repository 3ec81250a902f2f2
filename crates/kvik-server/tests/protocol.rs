//! The wire: inline and multibulk requests, pipelining, protocol errors, limits, and
//! bad input that must cost only the offending connection.

mod support;

use std::time::Duration;
use support::{encode_command, TestServer};

#[test]
fn inline_and_multibulk_requests_mix() {
    let server = TestServer::start(&["--server-threads", "2"]);
    let mut c = server.raw();
    c.send(b"SET a \"hello world\"\r\n");
    assert_eq!(c.read_reply(), b"+OK\r\n");
    c.send(b"*2\r\n$3\r\nGET\r\n$1\r\na\r\n");
    assert_eq!(c.read_reply(), b"$11\r\nhello world\r\n");
    c.send(b"\r\n\nPING\n");
    assert_eq!(c.read_reply(), b"+PONG\r\n");
}

/// A client that sends its commands and closes its side at once (`nc -q0`, a script
/// writing to a socket) still gets every reply before the connection closes.
#[test]
fn replies_reach_a_client_that_closed_its_sending_side() {
    let server = TestServer::start(&["--server-threads", "2"]);
    for _ in 0..100 {
        let mut c = server.raw();
        c.send(b"PING\r\nSET a b\r\n*2\r\n$3\r\nGET\r\n$1\r\na\r\n");
        c.shutdown_write();
        assert_eq!(c.read_reply(), b"+PONG\r\n");
        assert_eq!(c.read_reply(), b"+OK\r\n");
        assert_eq!(c.read_reply(), b"$1\r\nb\r\n");
        assert!(c.closed_within(Duration::from_secs(5)));
    }
}

#[test]
fn a_pipeline_is_answered_in_order() {
    let server = TestServer::start(&[]);
    let mut pipeline = Vec::new();
    for i in 0..100 {
        pipeline.extend(encode_command(&["SET", &format!("k{i}"), &i.to_string()]));
        pipeline.extend(encode_command(&["GET", &format!("k{i}")]));
    }
    let mut c = server.raw();
    c.send(&pipeline);
    for i in 0..100 {
        assert_eq!(c.read_reply(), b"+OK\r\n");
        let value = i.to_string();
        assert_eq!(
            c.read_reply(),
            format!("${}\r\n{value}\r\n", value.len()).as_bytes()
        );
    }
}

#[test]
fn a_command_split_across_many_writes_is_assembled() {
    let server = TestServer::start(&[]);
    let value = "v".repeat(100_000);
    let bytes = encode_command(&["SET", "big", value.as_str()]);
    let mut c = server.raw();
    for chunk in bytes.chunks(7_777) {
        c.send(chunk);
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(c.read_reply(), b"+OK\r\n");
    let reply = c.cmd(&["GET", "big"]);
    assert_eq!(reply.len(), "$100000\r\n".len() + 100_000 + 2);
}

/// Each malformed request gets Redis's error text and the connection is closed.
#[test]
fn protocol_errors_close_only_the_offending_connection() {
    let server = TestServer::start(&["--server-threads", "2"]);
    let cases: &[(&[u8], &str)] = &[
        (
            b"*abc\r\n",
            "-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"*1\r\n$abc\r\n",
            "-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*1\r\n+PING\r\n",
            "-ERR Protocol error: expected '$', got '+'\r\n",
        ),
        (
            b"SET \"a b\r\n",
            "-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
        (
            b"*3000000000\r\n",
            "-ERR Protocol error: invalid multibulk length\r\n",
        ),
    ];
    let mut bystander = server.raw();
    for (input, expected) in cases {
        let mut c = server.raw();
        c.send(input);
        assert_eq!(c.read_reply(), expected.as_bytes(), "reply to {input:?}");
        assert!(
            c.closed_within(Duration::from_secs(2)),
            "closed after {input:?}"
        );
        assert_eq!(bystander.cmd(&["PING"]), b"+PONG\r\n");
    }
}

#[test]
fn oversized_bulk_and_inline_requests_are_refused() {
    let server = TestServer::start(&["--proto-max-bulk-len", "1mb"]);
    let mut c = server.raw();
    c.send(b"*2\r\n$3\r\nGET\r\n$2000000\r\n");
    assert_eq!(
        c.read_reply(),
        b"-ERR Protocol error: invalid bulk length\r\n"
    );
    assert!(c.closed_within(Duration::from_secs(2)));

    let mut c = server.raw();
    let mut line = vec![b'a'; 70 * 1024];
    line.extend_from_slice(b"\r\n");
    c.send(&line);
    assert_eq!(
        c.read_reply(),
        b"-ERR Protocol error: too big inline request\r\n"
    );
}

#[test]
fn unauthenticated_clients_get_tight_limits_and_noauth() {
    let port = support::free_port();
    let config = kvik_config::Config {
        port,
        requirepass: Some("secret".into()),
        ..support::in_process_config()
    };
    let running = kvik_server::startup::launch(config, None).unwrap();
    let addr = format!("127.0.0.1:{port}");
    let mut c = support::RawConn::connect(&addr);
    assert_eq!(
        c.cmd(&["GET", "k"]),
        b"-NOAUTH Authentication required.\r\n"
    );
    assert_eq!(
        c.cmd(&["AUTH", "wrong"]),
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    assert_eq!(c.cmd(&["AUTH", "secret"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["GET", "k"]), b"$-1\r\n");

    let mut c = support::RawConn::connect(&addr);
    c.send(b"*20\r\n");
    assert_eq!(
        c.read_reply(),
        b"-ERR Protocol error: unauthenticated multibulk length\r\n"
    );
    let mut c = support::RawConn::connect(&addr);
    c.send(b"*1\r\n$16385\r\n");
    assert_eq!(
        c.read_reply(),
        b"-ERR Protocol error: unauthenticated bulk length\r\n"
    );
    running.shutdown();
}

#[test]
fn the_query_buffer_limit_disconnects_the_client() {
    let server = TestServer::start(&["--client-query-buffer-limit", "1mb"]);
    let mut c = server.raw();
    // A bulk announced as 4 MB and sent in part: the buffered bytes pass the limit.
    c.send(b"*2\r\n$3\r\nGET\r\n$4000000\r\n");
    let _ = c.try_send(&vec![b'x'; 2 * 1024 * 1024]);
    assert!(c.closed_within(Duration::from_secs(5)));
    assert_eq!(server.raw().cmd(&["PING"]), b"+PONG\r\n");
}

#[test]
fn garbage_from_many_clients_never_takes_the_server_down() {
    let server = TestServer::start(&["--server-threads", "2"]);
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let alphabet = b"*$+-:\r\n0123456789abcSETGET \"'\\x";
    for _ in 0..200 {
        let len = (next() % 200) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect();
        let mut c = server.raw();
        let _ = c.try_send(&bytes);
    }
    assert_eq!(server.raw().cmd(&["PING"]), b"+PONG\r\n");
}

#[test]
fn config_set_port_moves_the_listener_and_keeps_clients() {
    let server = TestServer::start(&["--server-threads", "2"]);
    let mut c = server.raw();
    let new_port = support::free_port().to_string();
    assert_eq!(c.cmd(&["CONFIG", "SET", "port", &new_port]), b"+OK\r\n");
    let mut moved = support::RawConn::connect(&format!("127.0.0.1:{new_port}"));
    assert_eq!(moved.cmd(&["PING"]), b"+PONG\r\n");
    // Every worker closes its handle of the old socket when it reads its mailbox.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while std::net::TcpStream::connect(server.addr()).is_ok() {
        assert!(std::time::Instant::now() < deadline, "old port still open");
        std::thread::sleep(Duration::from_millis(20));
    }
    let reply = c.cmd(&["CONFIG", "GET", "port"]);
    assert!(reply.ends_with(format!("{new_port}\r\n").as_bytes()));
    assert_eq!(c.cmd(&["CONFIG", "SET", "loglevel", "warning"]), b"+OK\r\n");
}

#[test]
fn config_set_that_cannot_listen_fails_as_redis_and_keeps_the_listeners() {
    let server = TestServer::start(&[]);
    let mut c = server.raw();
    // An address of no interface here.
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "bind", "192.0.2.1"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind to specified addresses.\r\n"
    );
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "port", &port]),
        b"-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs.\r\n"
    );
    // Unchanged: the test server's own.
    let bind = c.cmd(&["CONFIG", "GET", "bind"]);
    assert!(
        bind.ends_with(b"$9\r\n127.0.0.1\r\n"),
        "{}",
        support::escape(&bind)
    );
    assert_eq!(server.raw().cmd(&["PING"]), b"+PONG\r\n");
}
