//! A client's socket, TCP, TLS over TCP, or Unix: one type the event loop
//! registers, reads and writes, so that a connection through `unixsocket` or the
//! `tls-port` is served exactly like a TCP one. What differs (TCP options, the
//! addresses CLIENT LIST shows, whether the peer counts as local for protected mode,
//! the TLS records) is settled here, and nowhere else.
//!
//! TLS runs inside the event loop, without a thread of its own: the handshake and
//! the records advance as the socket is readable or writable, never waiting on it
//! (see [`TlsStream`]). A plain connection pays one match on the variant per read
//! or write, nothing more.

use crate::mailbox::Accepted;
use mio::event::Source;
use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Registry, Token};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    /// Boxed: a TLS session is large, and plain sockets should not carry its size.
    Tls(Box<TlsStream>),
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
            Accepted::Tls(stream, peer, config) => {
                let (stream, endpoint) = Stream::adopt(Accepted::Tcp(stream, peer));
                let Stream::Tcp(tcp) = stream else {
                    unreachable!("a TCP connection adopts as TCP")
                };
                (TlsStream::start(tcp, config), endpoint)
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
        let stream = match self {
            Stream::Tcp(stream) => stream,
            Stream::Tls(tls) => &tls.tcp,
            Stream::Unix(_) => return,
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
            Stream::Tls(s) => s.tcp.as_raw_fd(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    /// Push out what the stream itself still holds (a TLS session's encrypted
    /// records the socket did not take): `WouldBlock` while some remain. Plain
    /// sockets hold nothing.
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
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
            Stream::Tls(s) => s.tcp.register(registry, token, interest),
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
            Stream::Tls(s) => s.tcp.reregister(registry, token, interest),
        }
    }

    fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.deregister(registry),
            Stream::Unix(s) => s.deregister(registry),
            Stream::Tls(s) => s.tcp.deregister(registry),
        }
    }
}

/// A TLS session over a non-blocking TCP socket, driven by the event loop.
///
/// Reading feeds what the socket has to rustls and hands out the plaintext; it
/// returns short only once the socket is drained (`WouldBlock`), so that the loop,
/// which stops after a short read and waits for the next edge of the poller, never
/// leaves records in the socket unseen. Handshake messages rustls wants to send go
/// out as they arise; whatever the socket does not take waits for [`Write::flush`],
/// which the connection calls after its replies and again when the socket turns
/// writable. A handshake that fails (a plain-text client, an unknown CA) sends its
/// alert and ends the connection through an error.
pub struct TlsStream {
    tcp: TcpStream,
    session: rustls::ServerConnection,
}

impl TlsStream {
    /// The stream of a connection just accepted, its handshake still to come.
    fn start(tcp: TcpStream, config: Arc<rustls::ServerConfig>) -> Stream {
        match rustls::ServerConnection::new(config) {
            Ok(session) => Stream::Tls(Box::new(TlsStream { tcp, session })),
            Err(e) => {
                // Never served in plain text: shut, the first read ends it.
                crate::log_warning!("Error creating a TLS session: {e}");
                let _ = tcp.shutdown(std::net::Shutdown::Both);
                Stream::Tcp(tcp)
            }
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut filled = 0;
        loop {
            if filled == buf.len() {
                return Ok(filled);
            }
            match self.session.reader().read(&mut buf[filled..]) {
                // The peer's close_notify: an end after what was read.
                Ok(0) => return Ok(filled),
                Ok(n) => {
                    filled += n;
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // The socket ended without close_notify (most clients close so):
                // an end all the same, after which the replies still go out.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(filled),
                Err(e) => return if filled > 0 { Ok(filled) } else { Err(e) },
            }
            match self.session.read_tls(&mut self.tcp) {
                // The socket's end: the reader now says whether it was clean.
                Ok(0) => {}
                Ok(_) => self.process()?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && filled > 0 => return Ok(filled),
                Err(e) => return Err(e),
            }
        }
    }

    /// Decrypt the records read, and send what the handshake answers with.
    fn process(&mut self) -> io::Result<()> {
        if let Err(e) = self.session.process_new_packets() {
            // The alert that tells the peer why, as far as the socket takes it.
            let _ = self.session.write_tls(&mut self.tcp);
            return Err(io::Error::new(io::ErrorKind::InvalidData, e));
        }
        match self.send_records() {
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => Err(e),
            _ => Ok(()),
        }
    }

    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.send_records()?;
        let n = self.session.writer().write(buf)?;
        if n == 0 && !buf.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        match self.send_records() {
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => Err(e),
            _ => Ok(n),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send_records()
    }

    /// Write the session's pending records; `WouldBlock` if some remain.
    fn send_records(&mut self) -> io::Result<()> {
        while self.session.wants_write() {
            match self.session.write_tls(&mut self.tcp) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
