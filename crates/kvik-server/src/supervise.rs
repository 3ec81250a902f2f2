//! Supervision (`supervised systemd|upstart|auto|no`): telling the service manager
//! how start-up and shutdown are going, as redis-server does, so that a unit with
//! `Type=notify` sees the server ready only once it has loaded its data and accepts
//! connections.
//!
//! systemd gets sd_notify datagrams (`STATUS=...`, `READY=1`, `STOPPING=1`) on the
//! Unix socket named by `NOTIFY_SOCKET` (a path, or `@name` in the abstract
//! namespace); upstart is told the server is ready by the process stopping itself
//! with SIGSTOP, which upstart's `expect stop` waits for.
//!
//! A leaf: it knows the environment and the log, nothing of the server. Which
//! supervisor was found is process-wide (there is one service manager per process),
//! so the shutdown paths below it in the layers can report without being handed
//! anything; a server started in-process by tests has none and every call is a no-op.

use crate::{log_notice, log_verbose, log_warning};
use std::io;
use std::os::unix::net::UnixDatagram;
use std::sync::OnceLock;

/// Where systemd listens, once supervision by systemd is established.
static SYSTEMD: OnceLock<NotifySocket> = OnceLock::new();

/// The supervisor established (`systemd` or `upstart`), for INFO.
static ESTABLISHED: OnceLock<&'static str> = OnceLock::new();

/// The address named by `NOTIFY_SOCKET`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum NotifySocket {
    Path(String),
    /// `@name`: a socket in Linux's abstract namespace (no file).
    Abstract(Vec<u8>),
}

impl NotifySocket {
    fn parse(value: &str) -> Option<NotifySocket> {
        match value.strip_prefix('@') {
            Some(name) => Some(NotifySocket::Abstract(name.as_bytes().to_vec())),
            None if value.starts_with('/') => Some(NotifySocket::Path(value.to_string())),
            None => None,
        }
    }

    /// Send one sd_notify datagram (newline-separated `KEY=value` assignments).
    fn send(&self, message: &str) -> io::Result<()> {
        let socket = UnixDatagram::unbound()?;
        let sent = match self {
            NotifySocket::Path(path) => socket.send_to(message.as_bytes(), path)?,
            NotifySocket::Abstract(name) => {
                use std::os::linux::net::SocketAddrExt;
                let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
                socket.send_to_addr(message.as_bytes(), &addr)?
            }
        };
        if sent != message.len() {
            return Err(io::Error::other("short write to NOTIFY_SOCKET"));
        }
        Ok(())
    }
}

/// Establish supervision as `supervised` (the directive's value) asks, reading the
/// environment as redis-server does; returns whether the server is supervised (a
/// supervised server does not daemonize). For systemd this sends the first status
/// line; for upstart the process stops itself until upstart continues it.
pub fn establish(supervised: &str) -> bool {
    let mode = match supervised {
        "auto" => match detect(|name| std::env::var_os(name).is_some()) {
            Some(found) => found,
            None => return false,
        },
        other => other,
    };
    let established = match mode {
        "systemd" => establish_systemd(std::env::var("NOTIFY_SOCKET").ok()),
        "upstart" => establish_upstart(),
        _ => false,
    };
    if established {
        let _ = ESTABLISHED.set(if mode == "systemd" {
            "systemd"
        } else {
            "upstart"
        });
    }
    established
}

/// INFO's `process_supervised`, as redis-server words it: the supervisor found,
/// else the one `supervised` names even if it could not be reached (`auto` finding
/// none is `no`).
pub fn reported(supervised: &str) -> &'static str {
    match (ESTABLISHED.get(), supervised) {
        (Some(found), _) => found,
        (None, "systemd") => "systemd",
        (None, "upstart") => "upstart",
        _ => "no",
    }
}

/// `supervised auto`: upstart when UPSTART_JOB is set, else systemd when
/// NOTIFY_SOCKET is, in redis-server's order.
fn detect(is_set: impl Fn(&str) -> bool) -> Option<&'static str> {
    if is_set("UPSTART_JOB") {
        log_verbose!("Upstart supervision detected.");
        Some("upstart")
    } else if is_set("NOTIFY_SOCKET") {
        log_verbose!("Systemd supervision detected.");
        Some("systemd")
    } else {
        None
    }
}

fn establish_systemd(notify_socket: Option<String>) -> bool {
    let Some(value) = notify_socket else {
        log_warning!("systemd supervision error: NOTIFY_SOCKET not found!");
        return false;
    };
    let Some(socket) = NotifySocket::parse(&value) else {
        log_warning!("systemd supervision error: NOTIFY_SOCKET '{value}' is not a socket address");
        return false;
    };
    if let Err(e) = socket.send("STATUS=Redis is loading...\n") {
        log_warning!("systemd supervision error: sd_notify: {e}");
        return false;
    }
    log_notice!("Supervised by systemd. Please make sure you set appropriate values for TimeoutStartSec and TimeoutStopSec in your service unit.");
    // Established once per process; a second call finds the first socket.
    let _ = SYSTEMD.set(socket);
    true
}

fn establish_upstart() -> bool {
    if std::env::var_os("UPSTART_JOB").is_none() {
        log_warning!("upstart supervision requested, but UPSTART_JOB not found!");
        return false;
    }
    log_notice!("supervised by upstart, will stop to signal readiness.");
    // SAFETY: raising a signal at the calling process has no memory effects; upstart
    // sends SIGCONT once it has seen the stop.
    unsafe {
        libc::raise(libc::SIGSTOP);
    }
    // At start-up, before any other thread exists to read the environment.
    std::env::remove_var("UPSTART_JOB");
    true
}

/// Send `message` to systemd when supervised by it; a failure is logged, as
/// redis-server logs sd_notify's.
fn notify(message: &str) {
    if let Some(socket) = SYSTEMD.get() {
        if let Err(e) = socket.send(message) {
            log_warning!("systemd supervision error: sd_notify: {e}");
        }
    }
}

/// Loading has finished and the listening sockets accept connections.
pub fn ready() {
    notify("STATUS=Ready to accept connections\n");
    notify("READY=1\n");
}

/// A shutdown has begun (SHUTDOWN, or a signal).
pub fn stopping() {
    notify("STOPPING=1\n");
}

/// What the shutdown is doing now, for `systemctl status`.
pub fn status(text: &str) {
    notify(&format!("STATUS={text}\n"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notify_socket_addresses() {
        assert_eq!(
            NotifySocket::parse("/run/systemd/notify"),
            Some(NotifySocket::Path("/run/systemd/notify".into()))
        );
        assert_eq!(
            NotifySocket::parse("@/org/freedesktop/systemd1/notify/1"),
            Some(NotifySocket::Abstract(
                b"/org/freedesktop/systemd1/notify/1".to_vec()
            ))
        );
        assert_eq!(NotifySocket::parse("relative"), None);
    }

    #[test]
    fn auto_prefers_upstart_then_systemd() {
        assert_eq!(detect(|n| n == "UPSTART_JOB"), Some("upstart"));
        assert_eq!(detect(|_| true), Some("upstart"));
        assert_eq!(detect(|n| n == "NOTIFY_SOCKET"), Some("systemd"));
        assert_eq!(detect(|_| false), None);
    }

    #[test]
    fn sends_to_abstract_sockets() {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("kvik-supervise-test-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(&name).unwrap();
        let rx = UnixDatagram::bind_addr(&addr).unwrap();
        NotifySocket::parse(&format!("@{name}"))
            .unwrap()
            .send("READY=1\n")
            .unwrap();
        let mut buf = [0u8; 64];
        let n = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1\n");
    }
}
