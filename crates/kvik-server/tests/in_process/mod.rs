//! A kvik server started inside the test process, for tests that need to look at
//! its shared state (which worker thread owns a client) or start it with settings
//! the binary's flags do not reach yet (maxclients). Shut down when dropped.

#![allow(dead_code)]

use kvik_server::server::Server;
use kvik_server::startup::{launch, Running};
use std::sync::Arc;

use crate::support::{free_port, RawConn};

pub struct InProcess {
    running: Option<Running>,
    port: u16,
}

impl InProcess {
    /// Start on a free loopback port; `configure` adjusts the defaults.
    pub fn start(configure: impl FnOnce(&mut kvik_config::Config)) -> InProcess {
        let port = free_port();
        let mut config = kvik_config::Config {
            port,
            ..crate::support::in_process_config()
        };
        configure(&mut config);
        let running = launch(config, None).expect("start kvik in-process");
        InProcess {
            running: Some(running),
            port,
        }
    }

    pub fn server(&self) -> &Arc<Server> {
        &self.running.as_ref().expect("running").server
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn raw(&self) -> RawConn {
        RawConn::connect(&self.addr())
    }

    /// The worker thread that owns the client with this id.
    pub fn worker_of(&self, id: u64) -> usize {
        self.server()
            .clients
            .get(id)
            .expect("client registered")
            .worker
    }

    /// A connection with its client id.
    pub fn client(&self) -> (RawConn, u64) {
        let mut conn = self.raw();
        let id = client_id(&mut conn);
        (conn, id)
    }

    /// A connection owned by a worker thread other than `worker`. Connections are
    /// dealt to the threads in turn, so the next one or two find one; the misses stay
    /// open meanwhile.
    pub fn client_off_worker(&self, worker: usize) -> (RawConn, u64) {
        let mut misses = Vec::new();
        for _ in 0..16 {
            let (conn, id) = self.client();
            if self.worker_of(id) != worker {
                return (conn, id);
            }
            misses.push(conn);
        }
        panic!("every connection landed on worker {worker}");
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown();
        }
    }
}

/// CLIENT ID of a raw connection.
pub fn client_id(conn: &mut RawConn) -> u64 {
    let reply = conn.cmd(&["CLIENT", "ID"]);
    let text = String::from_utf8(reply).expect("utf8");
    text.trim_start_matches(':')
        .trim_end()
        .parse()
        .unwrap_or_else(|_| panic!("CLIENT ID replied {text:?}"))
}
