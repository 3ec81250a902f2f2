//! A client's socket, TCP or Unix: one type the event loop registers, reads and
//! writes, so that a connection through `unixsocket` is served exactly like a TCP
//! one. What differs (TCP options, the addresses CLIENT LIST shows, whether the peer
//! counts as local for protected mode) is settled here when the connection is
//! adopted, and nowhere else.

use crate::mailbox::Accepted;
use mio::event::Source;
use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Registry, Token};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

/// Where a connection comes from, as the client registry and protected mode see it.
pub struct Endpoint {
    /// CLIENT LIST's `addr=` (`ip:port`, or `path:0` for a Unix socket, as Redis).
    pub addr: String,
    /// CLIENT LIST's `laddr=`.
    pub laddr: String,
    /// Loopback or a Unix socket: protected mode lets it in.
    pub local: bool,
    pub unix: bool,
}

impl Stream {
    /// Turn a connection just accepted (here or by another thread) into this thread's
    /// socket, with its endpoint.
    pub fn adopt(accepted: Accepted) -> (Stream, Endpoint) {
        match accepted {
            Accepted::Tcp(stream, peer) => {
                let stream = TcpStream::from_std(stream);
                let laddr = stream
                    .local_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_default();
                let endpoint = Endpoint {
                    addr: peer.to_string(),
                    laddr,
                    local: peer.ip().is_loopback(),
                    unix: false,
                };
                (Stream::Tcp(stream), endpoint)
            }
            Accepted::Unix(stream, path) => {
                // Redis names both ends by the socket's path, with port 0.
                let name = format!("{path}:0");
                let endpoint = Endpoint {
                    addr: name.clone(),
                    laddr: name,
                    local: true,
                    unix: true,
                };
                (Stream::Unix(UnixStream::from_std(stream)), endpoint)
            }
        }
    }

    /// TCP's per-connection options (no Nagle delay, keepalive every `keepalive`
    /// seconds when not 0); a Unix socket has none.
    pub fn set_tcp_options(&self, keepalive: u64) {
        let Stream::Tcp(stream) = self else {
            return;
        };
        let _ = stream.set_nodelay(true);
        if keepalive > 0 {
            let ka = socket2::TcpKeepalive::new().with_time(Duration::from_secs(keepalive));
            let _ = socket2::SockRef::from(stream).set_tcp_keepalive(&ka);
        }
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
        }
    }
}

impl Source for Stream {
    fn register(
        &mut self,
        registry: &Registry,
        token: Token,
        interest: Interest,
    ) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.register(registry, token, interest),
            Stream::Unix(s) => s.register(registry, token, interest),
        }
    }

    fn reregister(
        &mut self,
        registry: &Registry,
        token: Token,
        interest: Interest,
    ) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.reregister(registry, token, interest),
            Stream::Unix(s) => s.reregister(registry, token, interest),
        }
    }

    fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.deregister(registry),
            Stream::Unix(s) => s.deregister(registry),
        }
    }
}
