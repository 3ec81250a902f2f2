//! Protected mode, `bind` and `rename-command` over real sockets, side by side with
//! redis-server where the bytes matter (the DENIED text, unknown-command errors).

mod support;

use std::net::{IpAddr, UdpSocket};
use std::time::Duration;
use support::{redis_server_or_skip, RawConn, RealRedis, TestServer};

/// A non-loopback address of this machine, if it has one (the route a datagram
/// would take; nothing is sent).
fn outside_address() -> Option<IpAddr> {
    let socket = UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.123:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// What a connection from `ip` reads before the server closes it.
fn greeting_from(ip: IpAddr, port: u16) -> Vec<u8> {
    let mut conn = RawConn::connect(&std::net::SocketAddr::new(ip, port).to_string());
    conn.set_read_timeout(Duration::from_secs(10));
    conn.send_cmd(&["PING"]);
    match conn.read_reply_or_eof() {
        Ok(Some(reply)) => reply,
        _ => Vec::new(),
    }
}

#[test]
fn protected_mode_admits_only_local_clients_while_default_has_no_password() {
    let Some(ip) = outside_address() else {
        println!("SKIPPED: no non-loopback address to connect from");
        return;
    };
    let bind = format!("127.0.0.1 {ip}");
    let kvik = TestServer::start(&["--bind", &bind]);
    let denied = greeting_from(ip, kvik.port());
    assert!(
        denied.starts_with(b"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user."),
        "{}",
        String::from_utf8_lossy(&denied)
    );
    if redis_server_or_skip().is_some() {
        let redis = RealRedis::start(&["--bind", &bind]);
        assert_eq!(
            String::from_utf8_lossy(&greeting_from(ip, redis.port())),
            String::from_utf8_lossy(&denied)
        );
    }
    // A password on the default user (ACL or requirepass) lets remote clients in.
    let mut local = kvik.raw();
    assert_eq!(local.cmd(&["ACL", "SETUSER", "default", ">pw"]), b"+OK\r\n");
    assert_eq!(
        greeting_from(ip, kvik.port()),
        b"-NOAUTH Authentication required.\r\n"
    );
    assert_eq!(local.cmd(&["AUTH", "pw"]), b"+OK\r\n");
    assert_eq!(
        local.cmd(&["ACL", "SETUSER", "default", "nopass"]),
        b"+OK\r\n"
    );
    assert!(greeting_from(ip, kvik.port()).starts_with(b"-DENIED"));
    assert_eq!(
        local.cmd(&["CONFIG", "SET", "protected-mode", "no"]),
        b"+OK\r\n"
    );
    assert_eq!(greeting_from(ip, kvik.port()), b"+PONG\r\n");
}

#[test]
fn bind_skips_optional_addresses_and_fails_on_required_ones() {
    // 192.0.2.254 (TEST-NET-1) is no address of this machine.
    let kvik = TestServer::start(&["--bind", "127.0.0.1 -192.0.2.254"]);
    assert_eq!(kvik.raw().cmd(&["PING"]), b"+PONG\r\n");
    let err = TestServer::try_start(&["--bind", "127.0.0.1 192.0.2.254"])
        .err()
        .expect("a required address that cannot be bound stops start-up");
    assert!(
        err.contains("Could not create server TCP listening socket 192.0.2.254:"),
        "{err}"
    );
}

#[test]
fn rename_command_renames_and_removes_commands() {
    let args = [
        "--rename-command",
        "CONFIG",
        "cfg",
        "--rename-command",
        "flushall",
        "",
        "--rename-command",
        "ECHO",
        "say",
    ];
    let kvik = TestServer::start(&args);
    let mut k = kvik.raw();
    let lines: [&[&str]; 6] = [
        &["CONFIG", "GET", "maxmemory"],
        &["cfg", "GET", "maxmemory"],
        &["FLUSHALL"],
        &["EVAL", "return redis.call('echo','hi')", "0"],
        &["EVAL", "return redis.call('say','hi')", "0"],
        &["FLUSHDB"],
    ];
    let expected: [&[u8]; 6] = [
        b"-ERR unknown command 'CONFIG', with args beginning with: 'GET' 'maxmemory' \r\n",
        b"*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n",
        b"-ERR unknown command 'FLUSHALL', with args beginning with: \r\n",
        b"",
        b"$2\r\nhi\r\n",
        b"+OK\r\n",
    ];
    let replies: Vec<Vec<u8>> = lines.iter().map(|l| k.cmd(l)).collect();
    for (reply, want) in replies.iter().zip(expected) {
        if !want.is_empty() {
            assert_eq!(
                String::from_utf8_lossy(reply),
                String::from_utf8_lossy(want)
            );
        }
    }
    assert!(replies[3].starts_with(b"-ERR Unknown Redis command called from script"));
    if redis_server_or_skip().is_some() {
        let redis = RealRedis::start(&args);
        let mut r = redis.raw();
        for (line, kvik_reply) in lines.iter().zip(&replies) {
            assert_eq!(
                String::from_utf8_lossy(&r.cmd(line)),
                String::from_utf8_lossy(kvik_reply),
                "{line:?}"
            );
        }
    }
    let err = TestServer::try_start(&["--rename-command", "nosuch", "x"])
        .err()
        .expect("an unknown command stops start-up");
    assert!(err.contains("No such command in rename-command"), "{err}");
    let err = TestServer::try_start(&["--rename-command", "get", "set"])
        .err()
        .expect("a taken name stops start-up");
    assert!(err.contains("Target command name already exists"), "{err}");
}
