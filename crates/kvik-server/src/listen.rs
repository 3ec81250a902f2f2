//! Listening sockets, bound from the `bind`, `port` and `tls-port` settings at
//! start-up and by CONFIG SET. Each address is bound once, and every worker thread registers its own
//! handle to the same socket in its poller: whichever thread wakes first accepts,
//! and deals the connection to the thread whose turn it is (`net`'s business).
//! (SO_REUSEPORT would let a second server start on a port already taken, so it is
//! not used.) The `unixsocket` is bound the same way, once, at start-up.
//! A leaf: it knows sockets and settings, nothing of the event loops.

use kvik_config::Config;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;

/// Bind the configured addresses on `port`. Fails like Redis when a required
/// address cannot be bound.
pub fn bind_all(config: &Config) -> io::Result<Vec<std::net::TcpListener>> {
    bind_port(config, config.port)
}

/// Bind the configured addresses on `tls-port`, as [`bind_all`] does on `port`.
pub fn bind_tls(config: &Config) -> io::Result<Vec<std::net::TcpListener>> {
    bind_port(config, config.tls_port)
}

fn bind_port(config: &Config, port: u16) -> io::Result<Vec<std::net::TcpListener>> {
    if port == 0 {
        return Ok(Vec::new());
    }
    let mut bound = Vec::new();
    for addr in parse_bind(&config.bind)? {
        match bind(addr.ip, port, backlog(config), config.socket_mark_id) {
            Ok(l) => bound.push(l),
            Err(e) if addr.optional => {
                crate::log_verbose!("Skipping optional bind address {}: {e}", addr.ip);
            }
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!(
                        "Could not create server TCP listening socket {}:{port}: bind: {e}",
                        addr.ip
                    ),
                ))
            }
        }
    }
    if bound.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::AddrNotAvailable,
            "Failed listening on all bind addresses",
        ));
    }
    Ok(bound)
}

/// The listen() backlog of every listening socket (`tcp-backlog`, which Redis uses
/// for its Unix socket too).
fn backlog(config: &Config) -> i32 {
    i32::try_from(config.tcp_backlog).unwrap_or(i32::MAX)
}

/// Redis's start-up warning when the kernel caps `tcp-backlog` lower
/// (`net.core.somaxconn`), or `None`.
pub fn backlog_warning(config: &Config) -> Option<String> {
    let somaxconn: u32 = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (somaxconn < config.tcp_backlog).then(|| {
        format!(
            "WARNING: The TCP backlog setting of {} cannot be enforced because /proc/sys/net/core/somaxconn is set to the lower value of {somaxconn}.",
            config.tcp_backlog
        )
    })
}

/// Bind the `unixsocket`, when one is configured, with `unixsocketperm` (0: the
/// umask's). A file already at the path (a socket left by an earlier run) is
/// removed first, as redis-server does.
pub fn bind_unix(config: &Config) -> io::Result<Option<UnixListener>> {
    let path = &config.unixsocket;
    if path.is_empty() {
        return Ok(None);
    }
    let failed = |e: io::Error, call: &str| {
        io::Error::new(e.kind(), format!("Failed opening Unix socket: {call}: {e}"))
    };
    let _ = std::fs::remove_file(path);
    let socket = Socket::new(Domain::UNIX, Type::STREAM, None).map_err(|e| failed(e, "socket"))?;
    let addr = SockAddr::unix(path).map_err(|e| failed(e, "bind"))?;
    socket.bind(&addr).map_err(|e| failed(e, "bind"))?;
    if config.unixsocketperm != 0 {
        let mode = std::fs::Permissions::from_mode(config.unixsocketperm);
        std::fs::set_permissions(path, mode).map_err(|e| failed(e, "chmod"))?;
    }
    socket
        .listen(backlog(config))
        .map_err(|e| failed(e, "listen"))?;
    socket.set_nonblocking(true)?;
    Ok(Some(socket.into()))
}

/// Remove the `unixsocket` file on the way out, as redis-server does.
pub fn remove_unix(path: &str) {
    if path.is_empty() {
        return;
    }
    crate::log_notice!("Removing the unix socket file.");
    if let Err(e) = std::fs::remove_file(path) {
        crate::log_warning!("Error removing the unix socket file: {e}");
    }
}

/// One `bind` address: the host and whether failing to bind it is fatal (a `-` prefix
/// makes it optional, as in Redis's default `bind * -::*`).
#[derive(Debug, Clone)]
pub struct BindAddr {
    pub ip: IpAddr,
    pub optional: bool,
}

/// Turn `bind` words into addresses.
pub fn parse_bind(words: &[String]) -> io::Result<Vec<BindAddr>> {
    words
        .iter()
        .map(|word| {
            let (optional, host) = match word.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, word.as_str()),
            };
            let ip = match host {
                "*" => IpAddr::from([0u8, 0, 0, 0]),
                "::*" => IpAddr::from([0u16; 8]),
                "localhost" => IpAddr::from([127u8, 0, 0, 1]),
                other => other.parse().map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("Invalid bind address '{other}'"),
                    )
                })?,
            };
            Ok(BindAddr { ip, optional })
        })
        .collect()
}

/// A non-blocking listening socket on `ip:port`, marked `mark` (SO_MARK, for the
/// firewall's and routing's rules; 0: unmarked) when `socket-mark-id` says so.
pub fn bind(ip: IpAddr, port: u16, backlog: i32, mark: u32) -> io::Result<std::net::TcpListener> {
    let addr = SocketAddr::new(ip, port);
    let domain = if ip.is_ipv6() {
        Domain::IPV6
    } else {
        Domain::IPV4
    };
    let socket = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?;
    if ip.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.set_reuse_address(true)?;
    if mark != 0 {
        socket.set_mark(mark)?;
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(backlog)?;
    Ok(socket.into())
}
