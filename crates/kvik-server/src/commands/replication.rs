//! Replication commands: REPLICAOF (SLAVEOF), ROLE, REPLCONF, PSYNC, SYNC; and the
//! [`ServerHost`] that hands the replication engine what it needs from above (the
//! command door for the master's stream, loading and taking snapshots, waking a
//! worker).

use super::table::{acl, flags, Command};
use super::{args, errors, CmdError, CmdResult, Ctx};
use crate::client::{ClientInfo, ClientSnapshot, ClientState, ClientType};
use crate::effects::{EffectSink, NodeId};
use crate::keyspace::Locked;
use crate::mailbox::Message;
use crate::persistence::rdb::{file, io::WriteSink};
use crate::replication::master::{self, Psync};
use crate::server::Server;
use crate::snapshot::{load_reader, read_into, LoadHow, LoadTarget, OnSeen, Snapshot};
use crate::stats::ThreadStats;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

const REPL: u32 = acl::ADMIN | acl::SLOW | acl::DANGEROUS;

pub const COMMANDS: &[Command] = &[
    Command::new("replicaof", -3, replicaof)
        .flags(flags::ADMIN | flags::NOSCRIPT | flags::STALE | flags::NO_ASYNC_LOADING)
        .acl(REPL)
        .doc(
            "server",
            "5.0.0",
            "O(1)",
            "Configures a server as replica of another, or promotes it to a master.",
        ),
    Command::new("slaveof", -3, replicaof)
        .flags(flags::ADMIN | flags::NOSCRIPT | flags::STALE | flags::NO_ASYNC_LOADING)
        .acl(REPL)
        .doc(
            "server",
            "1.0.0",
            "O(1)",
            "Sets a Redis server as a replica of another, or promotes it to being a master.",
        ),
    Command::new("role", 1, role)
        .flags(flags::NOSCRIPT | flags::LOADING | flags::STALE | flags::FAST)
        .acl(acl::ADMIN | acl::FAST | acl::DANGEROUS)
        .doc("server", "2.8.12", "O(1)", "Returns the replication role."),
    Command::new("replconf", -1, replconf)
        .flags(flags::ADMIN | flags::NOSCRIPT | flags::LOADING | flags::STALE | flags::ALLOW_BUSY)
        .acl(REPL)
        .doc(
            "server",
            "3.0.0",
            "O(1)",
            "An internal command for configuring the replication stream.",
        ),
    Command::new("psync", -3, psync)
        .flags(flags::ADMIN | flags::NOSCRIPT | flags::NO_ASYNC_LOADING | flags::NO_MULTI)
        .acl(REPL)
        .doc(
            "server",
            "2.8.0",
            "O(1)",
            "An internal command used in replication.",
        ),
    Command::new("failover", -1, failover)
        .flags(flags::ADMIN | flags::NOSCRIPT | flags::STALE)
        .acl(REPL)
        .doc("server", "6.2.0", "O(1)", "Starts a coordinated failover from a server to one of its replicas."),
    Command::new("wait", 3, wait)
        .tips(&["request_policy:all_shards", "response_policy:agg_min"])
        .flags(flags::NOSCRIPT)
        .acl(acl::SLOW | acl::CONNECTION)
        .doc("generic", "3.0.0", "O(1)", "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed."),
    Command::new("sync", 1, sync)
        .flags(flags::ADMIN | flags::NOSCRIPT | flags::NO_ASYNC_LOADING | flags::NO_MULTI)
        .acl(REPL)
        .doc(
            "server",
            "1.0.0",
            "O(1)",
            "An internal command used in replication.",
        ),
];

/// REPLICAOF host port | NO ONE | REMOVE host port. With `multi-master` a new
/// master is added to those followed (KeyDB); REMOVE drops one of them.
fn replicaof(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let server = ctx.server;
    if args.len() == 4 && args::is(args[1], "REMOVE") {
        return remove_master(ctx, args[2], args[3]);
    }
    if args.len() != 3 {
        let name = String::from_utf8_lossy(args[0]).to_lowercase();
        return Err(format!("ERR wrong number of arguments for '{name}' command").into());
    }
    if args::is(args[1], "NO") && args::is(args[2], "ONE") {
        if server.replication.promote() {
            server.config.write().replicaof.clear();
            crate::log_notice!(
                "MASTER MODE enabled (user request from '{}')",
                describe(ctx.client)
            );
        }
        ctx.out.ok();
        return Ok(());
    }
    if ctx.client.is_replica {
        return Err("ERR Command is not valid when client is a replica.".into());
    }
    let port = master_port(args[2])?;
    let host = String::from_utf8_lossy(args[1]).into_owned();
    let repl = server.replication.clone();
    if !repl.follow(host.clone(), port) {
        crate::log_notice!("REPLICAOF would result into synchronization with the master we are already connected with. No operation performed.");
        ctx.out.simple("OK Already connected to specified master");
        return Ok(());
    }
    {
        let mut config = server.config.write();
        if !config.multi_master {
            config.replicaof.clear();
        }
        config.replicaof.push((host.clone(), port));
    }
    crate::log_notice!(
        "REPLICAOF {host}:{port} enabled (user request from '{}')",
        describe(ctx.client)
    );
    ctx.out.ok();
    Ok(())
}

fn master_port(arg: &[u8]) -> Result<u16, CmdError> {
    std::str::from_utf8(arg)
        .ok()
        .and_then(|p| p.parse::<u16>().ok())
        .ok_or_else(|| CmdError::from("ERR Invalid master port"))
}

/// REPLICAOF REMOVE host port: stop following one master of several.
fn remove_master(ctx: &mut Ctx, host: &[u8], port: &[u8]) -> CmdResult {
    let port = master_port(port)?;
    let host = String::from_utf8_lossy(host).into_owned();
    if !ctx.server.replication.unfollow(&host, port) {
        return Err("ERR Master not found".into());
    }
    ctx.server
        .config
        .write()
        .replicaof
        .retain(|(h, p)| !(h.eq_ignore_ascii_case(&host) && *p == port));
    crate::log_notice!(
        "REPLICAOF REMOVE {host}:{port} (user request from '{}')",
        describe(ctx.client)
    );
    ctx.out.ok();
    Ok(())
}

fn describe(client: &ClientState) -> String {
    format!("id={} addr={}", client.id(), client.info.addr)
}

/// ROLE: a master lists its replicas and their acknowledged offsets; a replica
/// names its master and where its link stands.
fn role(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let repl = &ctx.server.replication;
    match repl.link() {
        Some(link) => {
            ctx.out.array(5);
            ctx.out.bulk(b"slave");
            ctx.out.bulk(link.host.as_bytes());
            ctx.out.int(link.port as i64);
            ctx.out.bulk(link.state().role_name().as_bytes());
            let offset = if link.is_up() {
                repl.offset() as i64
            } else {
                -1
            };
            ctx.out.int(offset);
        }
        None => {
            let replicas = repl.replicas.all();
            ctx.out.array(3);
            ctx.out.bulk(b"master");
            ctx.out.int(repl.offset() as i64);
            let online: Vec<_> = replicas.iter().filter(|f| f.is_online()).collect();
            ctx.out.array(online.len());
            for feed in online {
                ctx.out.array(3);
                ctx.out.bulk(feed.ip.as_bytes());
                ctx.out
                    .bulk(feed.hello.listening_port.to_string().as_bytes());
                let acked = feed.ack_offset.load(Ordering::Acquire);
                ctx.out.bulk(acked.to_string().as_bytes());
            }
        }
    }
    Ok(())
}

/// REPLCONF option value ...: what a replica tells its master about itself, its
/// acknowledgements, and the master's request for one (GETACK).
fn replconf(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len().is_multiple_of(2) {
        return Err(errors::SYNTAX.into());
    }
    let repl = &ctx.server.replication;
    // KeyDB's replies: our uuid for the replica's, and our capabilities (an active
    // node says so) for its `capa`.
    let mut reply = None;
    for pair in args[1..].chunks(2) {
        let (option, value) = (pair[0], pair[1]);
        if args::is(option, "ACK") {
            // An acknowledgement gets no reply.
            if ctx.client.is_replica {
                if let Ok(offset) = args::int(value) {
                    repl.replicas
                        .ack(ctx.client.id(), offset.max(0) as u64, repl);
                    end_satisfied_waits(ctx.server);
                }
            }
            return Ok(());
        } else if args::is(option, "GETACK") {
            if ctx.client.is_master {
                if let Some(link) = repl.link_of_client(ctx.client.id()) {
                    link.ask_ack();
                }
            }
            return Ok(());
        } else if args::is(option, "uuid") {
            // An active replica names itself (KeyDB's handshake); its own writes
            // coming back to it are recognised by that name in their envelopes.
            let Some(id) = crate::replication::active::parse_uuid(value) else {
                return Err("ERR Invalid UUID".into());
            };
            ctx.client.replica_hello.uuid = Some(id);
            repl.settle_shared_tag(&id);
            reply = Some(crate::replication::active::uuid_text(&repl.node_id()));
        } else if args::is(option, "listening-port") {
            let port = args::int(value)?;
            ctx.client.replica_hello.listening_port = u16::try_from(port).unwrap_or(0);
        } else if args::is(option, "ip-address") {
            ctx.client.replica_hello.ip = Some(String::from_utf8_lossy(value).into_owned());
        } else if args::is(option, "capa") {
            if args::is(value, "eof") {
                ctx.client.replica_hello.eof = true;
            } else if args::is(value, crate::replication::active::KVIK_CAPA) {
                ctx.client.replica_hello.kvik = true;
            }
            if repl.is_active() {
                reply.get_or_insert_with(|| "OK active-replica".to_string());
            }
        } else if args::is(option, "rdb-only") {
            ctx.client.replica_hello.rdb_only = args::int(value)? == 1;
        } else if args::is(option, "rdb-filter-only") {
            // Only `functions` (or nothing) is a filter kvik's RDB satisfies whole.
        } else {
            return Err(format!(
                "ERR Unrecognized REPLCONF option: {}",
                String::from_utf8_lossy(option)
            )
            .into());
        }
    }
    match reply {
        Some(line) => ctx.out.simple(&line),
        None => ctx.out.ok(),
    }
    Ok(())
}

/// WAIT numreplicas timeout: block until that many replicas acknowledged
/// everything written so far, or the timeout; the answer is how many did.
fn wait(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let wanted = args::int(args[1])?;
    let deadline = super::server::timeout_deadline_ms(args[2])?;
    let repl = &ctx.server.replication;
    if repl.is_replica() {
        return Err("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.".into());
    }
    let offset = repl.backlog.offsets();
    let acked = repl.replicas.acked(offset);
    if acked as i64 >= wanted || !super::blocking::may_block(ctx.client) {
        ctx.out.int(acked as i64);
        return Ok(());
    }
    // It never waits on keys; its timeout answers the count.
    let counted = repl.clone();
    let action = crate::blocking::Keyless(move |out: &mut kvik_resp::ReplyWriter| {
        out.int(counted.replicas.acked(offset) as i64)
    });
    super::blocking::block(ctx, &[], (deadline != 0).then_some(deadline), action);
    if let Some(blocked) = &ctx.client.blocked {
        repl.add_wait(blocked.waiter.clone(), offset, wanted.max(0) as usize);
    }
    Ok(())
}

/// An acknowledgement arrived: answer the WAITs it completes.
fn end_satisfied_waits(server: &Server) {
    for (waiter, acked) in server.replication.satisfied_waits() {
        if server.blocking.end_wait(&waiter) {
            let mut out = kvik_resp::ReplyWriter::with_buf(Vec::new(), waiter.protocol);
            out.int(acked as i64);
            let end = crate::mailbox::WaitEnd {
                served: true,
                failed: false,
            };
            server.unblock(&waiter, out.buf, end);
        }
    }
}

/// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms]: hand the master's role to a
/// replica once it has everything (see `replication::failover`).
fn failover(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let repl = &ctx.server.replication;
    let (mut target, mut force, mut abort, mut timeout_ms) = (None, false, false, 0i64);
    let mut at = 1;
    while at < args.len() {
        let word = args[at];
        if args::is(word, "TO") && at + 2 < args.len() && target.is_none() {
            let port = args::int(args[at + 2])?;
            let port = u16::try_from(port).map_err(|_| CmdError::from(errors::SYNTAX))?;
            target = Some((String::from_utf8_lossy(args[at + 1]).into_owned(), port));
            at += 3;
        } else if args::is(word, "FORCE") && !force {
            force = true;
            at += 1;
        } else if args::is(word, "ABORT") && !abort {
            abort = true;
            at += 1;
        } else if args::is(word, "TIMEOUT") && at + 1 < args.len() && timeout_ms == 0 {
            timeout_ms = args::int(args[at + 1])?;
            if timeout_ms <= 0 {
                return Err("ERR FAILOVER timeout must be greater than 0".into());
            }
            at += 2;
        } else {
            return Err(errors::SYNTAX.into());
        }
    }
    if abort {
        if target.is_some() || force || timeout_ms != 0 {
            return Err(errors::SYNTAX.into());
        }
        if !repl.abort_failover() {
            return Err("ERR No failover in progress.".into());
        }
        ctx.out.ok();
        return Ok(());
    }
    if repl.is_replica() {
        return Err("ERR FAILOVER is not valid when server is a replica.".into());
    }
    if repl.replicas.count() == 0 {
        return Err("ERR FAILOVER requires connected replicas.".into());
    }
    if repl.failover().is_some() {
        return Err("ERR FAILOVER already in progress.".into());
    }
    if force && (timeout_ms == 0 || target.is_none()) {
        return Err("ERR FORCE option requires both a timeout and target HOST and IP.".into());
    }
    if let Some((host, port)) = &target {
        match repl.replica_at(host, *port) {
            None => return Err("ERR FAILOVER target HOST and PORT is not a replica.".into()),
            Some(false) => return Err("ERR FAILOVER target replica is not online.".into()),
            Some(true) => {}
        }
    }
    let deadline_ms = match timeout_ms {
        0 => 0,
        ms => crate::hlc::unix_ms() + ms as u64,
    };
    repl.start_failover(crate::replication::failover::Failover {
        target,
        deadline_ms,
        force,
        stage: crate::replication::failover::Stage::WaitingForSync,
    });
    ctx.out.ok();
    Ok(())
}

/// PSYNC replid offset: continue the stream from `offset` when our history holds
/// it, else a full sync.
/// With a fourth argument FAILOVER (our master handing its role to us, its id
/// naming our history) we become the master first.
fn psync(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let offset = args::int(args[2])?;
    let replid = String::from_utf8_lossy(args[1]).into_owned();
    if args.len() > 3 && args::is(args[3], "FAILOVER") {
        if !ctx.server.replication.promote_for_failover(&replid) {
            return Err("ERR PSYNC FAILOVER replid must match my replid.".into());
        }
        ctx.server.config.write().replicaof.clear();
        crate::log_notice!(
            "MASTER MODE enabled (failover request from '{}')",
            describe(ctx.client)
        );
    }
    start_sync(ctx, Some((replid, offset)))
}

/// SYNC: the old protocol, always a full sync, without `+FULLRESYNC`.
fn sync(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.client.replica_hello.plain_sync = true;
    start_sync(ctx, None)
}

fn start_sync(ctx: &mut Ctx, asked: Option<(String, i64)>) -> CmdResult {
    if ctx.client.is_replica {
        return Ok(());
    }
    let repl = &ctx.server.replication;
    // An active replica's stream is its own history: it serves it at any time.
    if !repl.is_active() && repl.link().is_some_and(|l| !l.is_up()) {
        return Err("NOMASTERLINK Can't SYNC while not connected with my master".into());
    }
    ctx.client.is_replica = true;
    let info = &ctx.client.info;
    info.snapshot.lock().replication = Some(ClientType::Replica);
    let ip = ctx
        .client
        .replica_hello
        .ip
        .clone()
        .unwrap_or_else(|| host_of(&info.addr));
    let who = (info.id, info.worker, ip);
    let asked = asked
        .as_ref()
        .map(|(id, off)| (id.as_str(), (*off).max(0) as u64));
    match master::psync(repl, who, ctx.client.replica_hello.clone(), asked) {
        Psync::Continue(replid) => ctx.out.simple(&format!("CONTINUE {replid}")),
        Psync::Full => {}
    }
    Ok(())
}

/// The address part of `ip:port` (IPv6 addresses keep their colons).
fn host_of(addr: &str) -> String {
    addr.rsplit_once(':')
        .map_or(addr, |(host, _)| host)
        .to_string()
}

/// What replication reaches the rest of the server through.
pub struct ServerHost {
    server: Weak<Server>,
    /// The master client's counters (the link thread is no worker).
    stats: ThreadStats,
}

impl ServerHost {
    pub fn new(server: &Arc<Server>) -> ServerHost {
        ServerHost {
            server: Arc::downgrade(server),
            stats: ThreadStats::new(super::registry().len()),
        }
    }

    /// Read a master's RDB into the keyspace: replacing the dataset (a replica's
    /// full sync), or merged into it (`merge`: an active replica's, with what to tell
    /// the file's `kvik-seen` field).
    fn read_rdb(
        &self,
        src: &mut dyn std::io::Read,
        merge: Option<OnSeen<'_>>,
    ) -> Result<u64, String> {
        let server = self.server();
        let (checksum, limits, pace) = self.load_settings();
        if let Some(on_seen) = merge {
            // A key the peer holds older than ours, or apart from ours at the same
            // write: the peer is sent ours (whole, or the elements we counted on
            // over its writes of them).
            let repair = |db: usize, key: &[u8], theirs: u64, elements: &[Vec<u8>]| {
                let env = server.key_env(&self.stats);
                let mut locked = Locked::keys(env, db, crate::hlc::unix_ms(), &[key]);
                if elements.is_empty() {
                    return super::door::repair_newer_key(&mut locked, db, key, theirs);
                }
                let elements: Vec<&[u8]> = elements.iter().map(Vec::as_slice).collect();
                super::door::repair_counted_elements(key, &elements, &mut locked);
            };
            // Key by key: clients (and our own snapshots) go on meanwhile.
            let how = LoadHow {
                verify_checksum: checksum,
                merge: true,
                keep_expired: true,
                on_seen: Some(on_seen),
                on_kept: Some(&repair),
                ..LoadHow::default()
            };
            let target = LoadTarget::KeyByKey(&server.keyspace);
            return read_into(src, target, &server.scripting, &limits, how)
                .map(|loaded| loaded.keys)
                .map_err(|e| e.to_string());
        }
        // Clients get -LOADING while the master's data replaces the dataset.
        let _underway = server.loading.begin(0, pace.interval_bytes);
        server.scripting.libraries.flush();
        let env = server.key_env(&self.stats);
        let all: Vec<usize> = (0..server.keyspace.databases()).collect();
        let mut locked = Locked::databases(env, 0, crate::hlc::unix_ms(), &all);
        // `replica-lazy-flush`: the old dataset is freed in the background.
        let lazy = server.config.read().replica_lazy_flush;
        for db in all {
            super::server::flush_db(&mut locked, db, lazy);
        }
        server.tracking.flushed();
        let how = LoadHow {
            verify_checksum: checksum,
            keep_expired: true,
            loading: Some(&server.loading),
            key_delay_us: pace.key_delay_us,
            ..LoadHow::default()
        };
        let counted = server.loading.counted(src);
        load_reader(counted, &mut locked, &server.scripting, &limits, how)
            .map(|loaded| loaded.keys)
            .map_err(|e| e.to_string())
    }

    /// What a load of a master's RDB goes by: `rdbchecksum`, the encoding limits
    /// and the loading pace.
    fn load_settings(
        &self,
    ) -> (
        bool,
        crate::persistence::rdb::Limits,
        crate::server::saving::LoadingPace,
    ) {
        let server = self.server();
        let config = server.config.read();
        (
            config.rdbchecksum,
            crate::persistence::rdb::Limits::from(&server.hot.encoding()),
            crate::server::saving::loading_pace(&config),
        )
    }

    /// `repl-diskless-load swapdb`: read a master's RDB into a keyspace beside the
    /// one clients use, then exchange them; on failure the served dataset stays as
    /// it was. Meanwhile clients are served (`serve`: the master's history is ours,
    /// so the old dataset is an earlier point of the same data) or get -LOADING.
    fn read_rdb_beside(&self, src: &mut dyn std::io::Read, serve: bool) -> Result<u64, String> {
        let server = self.server();
        let (checksum, limits, pace) = self.load_settings();
        // Whichever state is on lasts until the new dataset is in place.
        let _served = serve.then(|| server.loading.begin_async(pace.interval_bytes));
        let _refused = (!serve).then(|| server.loading.begin(0, pace.interval_bytes));
        let side = server.keyspace.beside();
        let how = LoadHow {
            verify_checksum: checksum,
            keep_expired: true,
            loading: Some(&server.loading),
            key_delay_us: pace.key_delay_us,
            replace_libraries: true,
            ..LoadHow::default()
        };
        let counted = server.loading.counted(src);
        let target = LoadTarget::KeyByKey(&side);
        let loaded = read_into(counted, target, &server.scripting, &limits, how)
            .map_err(|e| e.to_string())?;
        let env = server.key_env(&self.stats);
        let all: Vec<usize> = (0..server.keyspace.databases()).collect();
        let mut locked = Locked::databases(env, 0, crate::hlc::unix_ms(), &all);
        locked.swap_all_with(&side);
        drop(locked);
        server.tracking.flushed();
        // The old dataset, now beside: freed in the background with
        // `replica-lazy-flush`.
        if server.config.read().replica_lazy_flush {
            crate::lazyfree::drop_later(side, loaded.keys, 0);
        }
        Ok(loaded.keys)
    }

    fn server(&self) -> Arc<Server> {
        self.server
            .upgrade()
            .expect("the server outlives its replication")
    }
}

impl crate::replication::Host for ServerHost {
    fn config(&self) -> kvik_config::Config {
        self.server().config.read().clone()
    }

    fn port(&self) -> u16 {
        self.server().port.load(Ordering::Relaxed) as u16
    }

    fn master_client(&self, addr: &str) -> ClientState {
        let server = self.server();
        let snapshot = ClientSnapshot {
            replication: Some(ClientType::Master),
            last_interaction_ms: crate::hlc::unix_ms(),
            ..ClientSnapshot::default()
        };
        let id = server.clients.next_id();
        let info = Arc::new(ClientInfo::without_socket(id, addr.to_string(), snapshot));
        // Listed by CLIENT LIST (flag `M`) and killed by CLIENT KILL TYPE master: the
        // link sees the kill flag and drops the connection, as Redis does.
        if server.clients.try_reserve(usize::MAX) {
            server.clients.add(info.clone());
        }
        let mut client = ClientState::new(info, true);
        client.is_master = true;
        client
    }

    fn master_client_gone(&self, client: &ClientState) {
        self.server().clients.remove(client.id());
    }

    fn apply(&self, master: &mut ClientState, args: &[&[u8]]) {
        let server = self.server();
        let mut out = kvik_resp::ReplyWriter::with_buf(Vec::new(), Default::default());
        super::call_unread(
            &server,
            &self.stats,
            master,
            &mut out,
            args,
            super::Unread::MasterStream,
        );
    }

    fn load(&self, src: &mut dyn std::io::Read) -> Result<u64, String> {
        self.read_rdb(src, None)
    }

    fn load_beside(&self, src: &mut dyn std::io::Read, serve: bool) -> Result<u64, String> {
        self.read_rdb_beside(src, serve)
    }

    fn dataset_is_empty(&self) -> bool {
        let keyspace = &self.server().keyspace;
        (0..keyspace.databases()).all(|db| keyspace.db_len(db) == 0)
    }

    fn collect_graves(&self, before: u64) -> usize {
        self.server().keyspace.collect_graves(before)
    }

    fn bound_graves(&self, max_bytes: usize) -> usize {
        self.server().keyspace.bound_graves(max_bytes)
    }

    fn merge(&self, src: &mut dyn std::io::Read, on_seen: &dyn Fn(&[u8])) -> Result<u64, String> {
        self.read_rdb(src, Some(on_seen))
    }

    fn snapshot(
        &self,
        at_point: &mut dyn FnMut() -> crate::replication::SyncPoint,
        out: &mut dyn std::io::Write,
    ) -> Result<(), Option<String>> {
        let server = self.server();
        let (settings, checksum) = {
            let config = server.config.read();
            let settings = crate::snapshot::settings(&config, server.keyspace.clock.get());
            (settings, config.rdbchecksum)
        };
        let codes = server
            .scripting
            .libraries
            .all()
            .iter()
            .map(|l| l.code.clone())
            .collect();
        let mut repl = None;
        let begun = Snapshot::begin(&server.keyspace, settings, codes, || {
            repl = Some(at_point());
            0
        });
        let (snapshot, mut point) = begun.ok_or(None)?;
        if let Some(at) = repl {
            point.repl = Some((at.replid, at.offset));
            point.seen = at.seen;
        }
        let never = AtomicBool::new(false);
        let mut sink = WriteSink::new(out);
        let written = snapshot.write(&server.keyspace, &point, &mut sink, &never);
        server.keyspace.end_capture();
        written.map_err(|_| Some("cancelled".to_string()))?;
        file::finish(sink, checksum)
            .map(|_| ())
            .map_err(|e| Some(e.to_string()))
    }

    fn listen_effects(&self, sink: Arc<dyn EffectSink>) {
        self.server().effects.add_sink(sink, |_| {});
    }

    fn stopping(&self) -> bool {
        self.server
            .upgrade()
            .is_none_or(|s| s.shutdown_requested.load(Ordering::Acquire))
    }

    fn take_new_node_id(&self, new: NodeId, then: &dyn Fn()) {
        let server = self.server();
        // Every shard held: no command is between stamping its writes (with the
        // old tag) and appending them (as the old origin's).
        let env = server.key_env(&self.stats);
        let all: Vec<usize> = (0..server.keyspace.databases()).collect();
        let locked = Locked::databases(env, 0, crate::hlc::unix_ms(), &all);
        server.effects.take_new_origin(new, then);
        drop(locked);
    }

    fn pause_writes(&self, pause: bool) {
        let server = self.server();
        if pause {
            server.pause_clients(u64::MAX, true);
        } else {
            server.unpause_clients();
        }
    }

    fn role_changed(&self, replica: bool) {
        let server = self.server();
        // An active replica expires its keys itself: its DELs reach its peers.
        let active = server.replication.is_active();
        server.keyspace.set_replica_expiry(replica && !active);
        crate::logging::set_role(match (replica, active) {
            (true, true) => 'A',
            (true, false) => 'S',
            (false, _) => 'M',
        });
    }

    fn wake_worker(&self, index: usize) {
        if let Some(server) = self.server.upgrade() {
            if let Some(worker) = server.workers.get().and_then(|w| w.get(index)) {
                worker.send(Message::ReplicaFeed);
            }
        }
    }
}
