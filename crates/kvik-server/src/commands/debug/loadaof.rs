//! Replaying the AOF into the dataset: at start-up and for DEBUG LOADAOF. The AOF
//! engine reads the files ([`crate::aof::load`]); this is where what it reads meets
//! the command table, since only this layer may run commands: each command runs
//! through [`call`] as a client of its own would send it, transactions included.

use crate::aof::load::{self, Failed, Loaded, Replay, Unknown};
use crate::client::{ClientInfo, ClientState};
use crate::commands::{call_unread, registry, Unread};
use crate::keyspace::Locked;
use crate::server::Server;
use crate::stats::ThreadStats;
use kvik_resp::ReplyWriter;
use std::io::Read;
use std::sync::Arc;

/// Runs what the AOF holds against the server, as the AOF's own client.
struct Replayer<'s> {
    server: &'s Server,
    /// Loading is not counted in the server's statistics.
    stats: ThreadStats,
    client: ClientState,
    out: ReplyWriter,
}

impl<'s> Replayer<'s> {
    fn new(server: &'s Server) -> Self {
        let info = Arc::new(ClientInfo::without_socket(
            u64::MAX,
            String::new(),
            Default::default(),
        ));
        Replayer {
            server,
            stats: ThreadStats::new(registry().len()),
            client: ClientState::new(info, true),
            out: ReplyWriter::default(),
        }
    }
}

impl Replay for Replayer<'_> {
    fn rdb(&mut self, reader: &mut dyn Read) -> Result<(), String> {
        let server = self.server;
        let env = server.key_env(&self.stats);
        let all: Vec<usize> = (0..server.keyspace.databases()).collect();
        let mut locked = Locked::databases(env, 0, crate::hlc::unix_ms(), &all);
        let limits = crate::persistence::rdb::Limits::from(&server.hot.encoding());
        let (checksum, pace) = {
            let config = server.config.read();
            let pace = crate::server::saving::loading_pace(&config);
            (config.rdbchecksum, pace)
        };
        let how = crate::snapshot::LoadHow {
            verify_checksum: checksum,
            loading: Some(&server.loading),
            key_delay_us: pace.key_delay_us,
            ..Default::default()
        };
        let counted = server.loading.counted(reader);
        let loaded =
            crate::snapshot::load_reader(counted, &mut locked, &server.scripting, &limits, how)
                .map_err(|e| e.to_string())?;
        crate::log_notice!(
            "Done loading RDB, keys loaded: {}, keys expired: {}.",
            loaded.keys,
            loaded.expired
        );
        Ok(())
    }

    fn command(&mut self, argv: &[Vec<u8>]) -> Result<(), Unknown> {
        if registry().lookup(&argv[0]).is_none() {
            return Err(Unknown);
        }
        let args: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
        call_unread(
            self.server,
            &self.stats,
            &mut self.client,
            &mut self.out,
            &args,
            Unread::Aof,
        );
        self.out.buf.clear();
        Ok(())
    }

    fn measured(&mut self, total_bytes: u64) {
        self.server.loading.set_total_bytes(total_bytes);
    }

    fn advanced(&mut self, bytes: u64) {
        self.server.loading.add_loaded(bytes);
    }
}

/// Clients get -LOADING while the AOF loads.
fn loading(server: &Server) -> crate::loading::Underway<'_> {
    let interval = server.config.read().loading_process_events_interval_bytes;
    server.loading.begin(0, u64::from(interval))
}

/// Load the AOF at start-up (upgrading a Redis 6 file), and make its manifest the
/// one the server writes on.
pub fn load_at_startup(server: &Server) -> Result<Loaded, Failed> {
    let truncated_ok = server.config.read().aof_load_truncated;
    let _underway = loading(server);
    let mut replayer = Replayer::new(server);
    let (loaded, manifest) = load::load(&server.aof, truncated_ok, &mut replayer)?;
    server.aof.adopt_manifest(manifest);
    Ok(loaded)
}

/// DEBUG LOADAOF: write out what the AOF buffers, empty the dataset and load the
/// AOF back (the effects of the load itself are not appended to it).
pub fn reload(server: &Server) -> Result<(), Failed> {
    server.aof.wait_written();
    let manifest = server.aof.read_manifest().map_err(|e| {
        crate::log_warning!("{e}");
        Failed
    })?;
    let truncated_ok = server.config.read().aof_load_truncated;
    let _paused = server.aof.pause_sink();
    let _underway = loading(server);
    flush_everything(server);
    let mut replayer = Replayer::new(server);
    load::load_files(
        &server.aof,
        &manifest.unwrap_or_default(),
        truncated_ok,
        &mut replayer,
    )?;
    Ok(())
}

/// Empty every database and the function libraries.
fn flush_everything(server: &Server) {
    let stats = ThreadStats::new(registry().len());
    let all: Vec<usize> = (0..server.keyspace.databases()).collect();
    let mut locked = Locked::databases(server.key_env(&stats), 0, crate::hlc::unix_ms(), &all);
    for &db in &all {
        crate::commands::server::flush_db(&mut locked, db, false);
    }
    drop(locked);
    server.scripting.libraries.flush();
    server.tracking.flushed();
}
