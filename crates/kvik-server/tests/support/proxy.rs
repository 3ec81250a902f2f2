//! A TCP proxy that cuts and heals links, for partition tests: a replica connects to
//! the proxy instead of its master; `cut` drops every connection through it and
//! refuses new ones (as a partition does, the peers see their sockets close or stay
//! silent), `heal` lets connections through again. `stall` keeps the connections
//! open but holds every byte (a link that stopped moving, as a congested network or
//! a stopped peer looks), `resume` lets the held bytes go. `stall_after` lets a
//! given number of bytes more through first (a cut that lands inside a write).

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

pub struct Proxy {
    port: u16,
    state: Arc<State>,
}

struct State {
    cut: AtomicBool,
    stalled: AtomicBool,
    stopped: AtomicBool,
    /// Bytes that may still pass before the proxy stalls (`u64::MAX`: no limit).
    budget: AtomicU64,
    /// Both ends of every open link, to shut them down on `cut`.
    links: Mutex<Vec<TcpStream>>,
}

impl Proxy {
    /// Forward a free local port to `target` (`host:port`).
    pub fn start(target: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().expect("local_addr").port();
        listener.set_nonblocking(true).expect("nonblocking accept");
        let state = Arc::new(State {
            cut: AtomicBool::new(false),
            stalled: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            budget: AtomicU64::new(u64::MAX),
            links: Mutex::new(Vec::new()),
        });
        let target = target.to_string();
        let shared = state.clone();
        thread::spawn(move || accept_loop(&listener, &target, &shared));
        Proxy { port, state }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Drop every link and refuse new ones until [`Proxy::heal`].
    pub fn cut(&self) {
        self.state.cut.store(true, Ordering::SeqCst);
        for stream in self.state.links.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    pub fn heal(&self) {
        self.state.cut.store(false, Ordering::SeqCst);
    }

    /// Hold every byte in both directions until [`Proxy::resume`]; the connections
    /// stay open.
    pub fn stall(&self) {
        self.state.stalled.store(true, Ordering::SeqCst);
    }

    pub fn resume(&self) {
        self.state.budget.store(u64::MAX, Ordering::SeqCst);
        self.state.stalled.store(false, Ordering::SeqCst);
    }

    /// Let `bytes` more bytes through (both directions together), then stall.
    pub fn stall_after(&self, bytes: u64) {
        self.state.budget.store(bytes, Ordering::SeqCst);
    }

    /// Is the proxy holding bytes back ([`Proxy::stall`], or a spent
    /// [`Proxy::stall_after`])?
    pub fn is_stalled(&self) -> bool {
        self.state.stalled.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.state.stopped.store(true, Ordering::SeqCst);
        self.cut();
    }
}

impl State {
    /// Of `n` bytes read, how many go through before the budget is spent (the
    /// proxy stalls when it is).
    fn spend(&self, n: usize) -> usize {
        let mut passing = n;
        let _ = self
            .budget
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                if left == u64::MAX {
                    return None;
                }
                passing = n.min(left as usize);
                Some(left - passing as u64)
            });
        if passing < n {
            self.stalled.store(true, Ordering::SeqCst);
        }
        passing
    }
}

fn accept_loop(listener: &TcpListener, target: &str, state: &Arc<State>) {
    while !state.stopped.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((client, _)) if state.cut.load(Ordering::SeqCst) => drop(client),
            Ok((client, _)) => {
                if let Err(e) = link(client, target, state) {
                    eprintln!("proxy: no link to {target}: {e}");
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                thread::sleep(Duration::from_millis(5));
            }
            Err(_) => return,
        }
    }
}

/// Connect `client` to the target and pump bytes both ways.
fn link(client: TcpStream, target: &str, state: &Arc<State>) -> io::Result<()> {
    client.set_nonblocking(false)?;
    let server = TcpStream::connect(target)?;
    {
        let mut links = state.links.lock().unwrap();
        links.push(client.try_clone()?);
        links.push(server.try_clone()?);
    }
    pump(client.try_clone()?, server.try_clone()?, state.clone());
    pump(server, client, state.clone());
    Ok(())
}

fn pump(mut from: TcpStream, mut to: TcpStream, state: Arc<State>) {
    thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let passing = state.spend(n);
                    if to.write_all(&buf[..passing]).is_err() {
                        break;
                    }
                    while state.stalled.load(Ordering::SeqCst)
                        && !state.stopped.load(Ordering::SeqCst)
                    {
                        thread::sleep(Duration::from_millis(5));
                    }
                    if to.write_all(&buf[passing..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
    });
}
