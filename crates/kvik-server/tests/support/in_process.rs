//! A kvik server running inside the test process, for tests that watch its effect
//! stream or look at stored entries directly. Shut down when dropped.

use super::{free_port, RawConn, START_TIMEOUT};
use kvik_server::effects::Effect;
use kvik_server::server::Server;
use kvik_server::startup::{launch, Running};
use std::sync::mpsc::Receiver;
use std::sync::Arc;

pub struct Kvik {
    running: Option<Running>,
    addr: String,
}

impl Kvik {
    /// Two worker threads on a free loopback port, defaults otherwise.
    pub fn start() -> Kvik {
        Self::start_with(|_| {})
    }

    /// Like [`Kvik::start`], with `tweak` adjusting the configuration first.
    pub fn start_with(tweak: impl FnOnce(&mut kvik_config::Config)) -> Kvik {
        let port = free_port();
        let mut config = kvik_config::Config {
            port,
            server_threads: 2,
            ..super::in_process_config()
        };
        tweak(&mut config);
        let running = launch(config, None).expect("server starts");
        Kvik {
            running: Some(running),
            addr: format!("127.0.0.1:{port}"),
        }
    }

    pub fn server(&self) -> &Arc<Server> {
        &self.running.as_ref().expect("running until dropped").server
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    pub fn conn(&self) -> RawConn {
        RawConn::connect(&self.addr)
    }

    pub fn client(&self) -> redis::Connection {
        redis::Client::open(format!("redis://{}/", self.addr))
            .and_then(|c| c.get_connection_with_timeout(START_TIMEOUT))
            .expect("connect")
    }

    /// Every effect appended from now on.
    pub fn effects(&self) -> Receiver<Effect> {
        self.server().effects.subscribe()
    }
}

impl Drop for Kvik {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown();
        }
    }
}

/// Sends a command given as words separated by single spaces; the reply's bytes as
/// text.
pub fn q(c: &mut RawConn, line: &str) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    String::from_utf8_lossy(&c.cmd(&words)).into_owned()
}

/// Every effect appended so far and not yet seen, each as its words joined by spaces.
/// Effects are appended before the reply is sent, so after a reply they are all there.
pub fn drain(rx: &Receiver<Effect>) -> Vec<String> {
    rx.try_iter()
        .map(|e| {
            e.argv
                .iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// The next effect appended (waiting up to 5 s), as its words.
pub fn next_effect(rx: &Receiver<Effect>) -> Vec<String> {
    let e = rx
        .recv_timeout(std::time::Duration::from_secs(5))
        .expect("an effect");
    e.argv
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}
