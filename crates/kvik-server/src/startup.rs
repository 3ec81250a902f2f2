//! Start-up: builds the command table and the shared state, binds, starts the
//! worker threads (whose commands wait until the server has started, or get
//! -LOADING while the dataset loads) and the metrics endpoint, loads, then starts
//! the saver thread, the AOF's threads, the shutdown watcher and the link to a
//! master. The top of the crate: it may use every layer, and nothing below
//! imports it (the binary and in-process tests do).

use crate::server::Server;
use kvik_config::Config;
use std::path::PathBuf;
use std::sync::Arc;

/// A started server: its shared state and its worker threads.
pub struct Running {
    pub server: Arc<Server>,
    threads: Vec<std::thread::JoinHandle<()>>,
    aof_writer: std::thread::JoinHandle<()>,
}

impl Running {
    /// Wait for the worker threads to finish (after SHUTDOWN), then for the AOF
    /// writer to write and fsync what they appended.
    pub fn join(self) {
        for t in self.threads {
            let _ = t.join();
        }
        self.server.aof.stop_writer();
        let _ = self.aof_writer.join();
    }

    /// Stop the workers and wait for them.
    pub fn shutdown(self) {
        self.server.request_shutdown();
        self.join();
    }
}

/// Bind the configured addresses and start the worker threads. Used by the binary and
/// by tests that run a server in-process (to watch its effect stream, for instance).
pub fn launch(config: Config, config_file: Option<PathBuf>) -> std::io::Result<Running> {
    let server = new_server(config, config_file);
    load_users(&server).map_err(std::io::Error::other)?;
    start(server, |_| {})
}

/// The shared state of a server with every command family in its table.
pub fn new_server(config: Config, config_file: Option<PathBuf>) -> Server {
    Server::new(config, config_file, crate::commands::acl::catalog())
}

/// Load the users the config's `user` lines or its `aclfile` define; the error is
/// Redis's start-up error (the server must not start).
pub fn load_users(server: &Server) -> Result<(), String> {
    check_renames(&server.config.read())?;
    crate::commands::acl::load_configured_users(server)
}

/// Each `rename-command` names a command, and renames it to a name no other
/// command has, taken in order as Redis applies them (its start-up errors).
fn check_renames(config: &Config) -> Result<(), String> {
    let mut names: std::collections::HashSet<String> = crate::commands::registry()
        .top_level()
        .map(|c| c.name.to_string())
        .collect();
    for (original, new) in &config.rename_commands {
        let line = format!("rename-command {original} {new}");
        if !names.remove(&original.to_ascii_lowercase()) {
            return Err(format!("{line}: No such command in rename-command"));
        }
        if !new.is_empty() && !names.insert(new.to_ascii_lowercase()) {
            return Err(format!("{line}: Target command name already exists"));
        }
    }
    Ok(())
}

/// Load the AOF into a server made with `appendonly yes` (instead of the RDB
/// file, as Redis does); false when it cannot be loaded (logged: the server must
/// not start).
pub fn load_aof(server: &Server) -> bool {
    crate::commands::debug::loadaof::load_at_startup(server).is_ok()
}

/// Bind, start the worker threads, `load` the dataset while they answer -LOADING
/// (as redis-server serves clients while it loads; before and after the load they
/// wait), then start the saver thread and
/// the AOF's threads, which write from the loaded dataset. `load` exits the process
/// when the dataset cannot be loaded.
pub fn start(server: Server, load: impl FnOnce(&Arc<Server>)) -> std::io::Result<Running> {
    let affinity = server.config.read().server_thread_affinity;
    // A failure is logged; the server runs on with the score it has, as Redis does.
    let _ = crate::oom_score::apply(&server.config.read());
    let server = Arc::new(server);
    let host = crate::commands::replication::ServerHost::new(&server);
    server.replication.set_host(Arc::new(host));
    server
        .tls
        .configure(&server.config.read())
        .map_err(|why| std::io::Error::other(format!("Failed to configure TLS: {why}")))?;
    let listeners = crate::net::TcpListeners {
        plain: crate::listen::bind_all(&server.config.read())?,
        tls: crate::listen::bind_tls(&server.config.read())?,
    };
    let unix = crate::listen::bind_unix(&server.config.read())?;
    let unix_path: Arc<str> = server.config.read().unixsocket.as_str().into();
    let unix = unix.map(|l| (l, unix_path));
    let starting = server.loading.hold_startup();
    let metrics = crate::metrics::start(&server).inspect_err(|_| server.request_shutdown())?;
    let mut threads = crate::net::start_workers(&server, &listeners, unix.as_ref(), affinity)
        .inspect_err(|_| server.request_shutdown())?;
    load(&server);
    crate::server::saving::start_aof(&server).inspect_err(|_| server.request_shutdown())?;
    let aof_writer =
        crate::aof::start_writer(server.aof.clone()).inspect_err(|_| server.request_shutdown())?;
    let weak = Arc::downgrade(&server);
    server.aof.set_notify(Box::new(move |worker| {
        if let Some(server) = weak.upgrade() {
            if let Some(handle) = server.workers.get().and_then(|w| w.get(worker)) {
                handle.send(crate::mailbox::Message::AofReleased);
            }
        }
    }));
    let saver = crate::server::saving::start_saver(server.clone())
        .inspect_err(|_| server.request_shutdown())?;
    let rewriter = crate::server::saving::start_aof_rewriter(server.clone())
        .inspect_err(|_| server.request_shutdown())?;
    let shutdown_watcher = crate::server::shutdown::start_watcher(server.clone())
        .inspect_err(|_| server.request_shutdown())?;
    // Commands run once BGSAVE and BGREWRITEAOF find their threads in place; the
    // link to a master starts after (its stream must not wait for this thread).
    drop(starting);
    server.replication.begin();
    threads.push(saver);
    threads.push(rewriter);
    threads.push(shutdown_watcher);
    threads.extend(metrics);
    Ok(Running {
        server,
        threads,
        aof_writer,
    })
}
