//! The one door every command goes through ([`call`]): admission, locks, the
//! handler, effects, blocked clients, statistics, the slow log. Transactions and
//! scripts run each of their commands through [`run_locked`] under the locks they
//! already hold.

use super::admission::{
    lock_wait_gate, refuse_if_busy, refuse_if_loading, refuse_if_misconf, refuse_if_oom,
    refuse_if_replication, resolve,
};
use super::blocking;
use super::table::{self, Command, Lock, LockRequest, Need};
use super::{acl, args, pubsub, registry, slowlog, transactions, CmdError, CmdResult, Ctx};
use crate::client::{ClientState, ReplyMode};
use crate::keyspace::{KeyEnv, Locked, UnderReset};
use crate::latency::Event;
use crate::server::Server;
use crate::stats::ThreadStats;
use kvik_resp::ReplyWriter;
use smallvec::SmallVec;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Run one command for a client: the whole life of a command.
pub fn call(
    server: &Server,
    stats: &ThreadStats,
    client: &mut ClientState,
    out: &mut ReplyWriter,
    args: &[&[u8]],
    now_ms: u64,
) {
    let reply_start = out.buf.len();
    if client.reply_mode == ReplyMode::SkipNext {
        client.reply_mode = ReplyMode::Skipping;
    }
    let in_multi = client.multi.is_some();
    let tracking = client.tracking.is_some();
    if tracking {
        crate::tracking::before_command(client);
    }
    let checked = resolve(server, client, args).and_then(|id| {
        let cmd = registry().get(id);
        acl::check(server, client, id, args)
            .and_then(|()| refuse_if_oom(server, stats, client, cmd, args, now_ms))
            .and_then(|()| refuse_if_misconf(server, client, cmd))
            .and_then(|()| refuse_if_replication(server, client, cmd))
            .and_then(|()| refuse_if_loading(server, cmd))
            .and_then(|()| pubsub::check_subscribed_mode(client, out.protocol, cmd))
            .and_then(|()| refuse_if_busy(&server.scripting, cmd))
            .map(|()| id)
            .map_err(|e| (e, Some(id)))
    });
    // A CLIENT command leaves a pending CLIENT CACHING for the next one.
    let keeps_caching = tracking
        && checked
            .as_ref()
            .is_ok_and(|&id| registry().get(id).has(table::flags::KEEPS_CACHING));
    match checked {
        Ok(id) if in_multi && !registry().get(id).has(table::flags::NOT_QUEUED) => {
            let cmd = registry().get(id);
            if let Err(e) = transactions::queue(server, client, out, cmd, args, id) {
                stats.add(&stats.per_command[id].rejected_calls, 1);
                write_error(server, stats, out, &e.0);
            }
        }
        Ok(id) => execute(server, stats, client, out, args, id, now_ms),
        Err((e, id)) => {
            let cmd = id.map(|id| registry().get(id));
            if let Some(id) = id {
                stats.add(&stats.per_command[id].rejected_calls, 1);
            }
            let e = transactions::refused(client, cmd, e);
            write_error(server, stats, out, &e.0);
        }
    }
    let silenced = client.replies_silenced();
    if let Some(blocked) = client.blocked.as_mut() {
        // The reply comes when the wait ends; whether it is wanted is decided now.
        blocked.silent = silenced;
    }
    match client.reply_mode {
        ReplyMode::Off => out.buf.truncate(reply_start),
        ReplyMode::Skipping => {
            out.buf.truncate(reply_start);
            client.reply_mode = ReplyMode::On;
        }
        ReplyMode::On | ReplyMode::SkipNext => {}
    }
    out.buf.append(&mut client.pushes);
    // Invalidations are pushed even to a client that turned replies off, as in Redis.
    if tracking || client.tracking.is_some() {
        crate::tracking::after_command(&server.tracking_env(), client, out, keeps_caching);
    }
}

/// Where a command whose reply nobody reads comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unread {
    /// The stream of this replica's master.
    MasterStream,
    /// The AOF, loading.
    Aof,
}

/// [`call`] for a command of a master's stream or of the AOF. An error reply means
/// the data here may now differ from its source's: as Redis 7.0 does, it is logged
/// and counted (`unexpected_error_replies`), and `propagation-error-behavior`
/// decides whether the process stops (`panic`: both sources; `panic-on-replicas`:
/// a read-only replica's master stream only).
pub fn call_unread(
    server: &Server,
    stats: &ThreadStats,
    client: &mut ClientState,
    out: &mut ReplyWriter,
    args: &[&[u8]],
    from: Unread,
) {
    let errors_before = stats.total_error_replies.load(Ordering::Relaxed);
    call(server, stats, client, out, args, crate::hlc::unix_ms());
    if stats.total_error_replies.load(Ordering::Relaxed) != errors_before {
        unread_error(server, &out.buf, args, from);
    }
}

fn unread_error(server: &Server, reply: &[u8], args: &[&[u8]], from: Unread) {
    let (me, peer) = match from {
        Unread::MasterStream => ("replica", "master"),
        Unread::Aof => ("server", "AOF-loading-client"),
    };
    // The first error of the reply (a transaction's replies hold several).
    let start = match reply.first() {
        Some(b'-') => Some(0),
        _ => reply
            .windows(3)
            .position(|w| w == b"\r\n-")
            .map(|at| at + 2),
    };
    let line = start.map_or(&[][..], |at| {
        let rest = &reply[at + 1..];
        &rest[..rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .unwrap_or(rest.len())]
    });
    let command = String::from_utf8_lossy(args.first().copied().unwrap_or_default());
    crate::log_warning!(
        "== CRITICAL == This {me} is sending an error to its {peer}: '{}' after processing the command '{command}'",
        String::from_utf8_lossy(line)
    );
    // Workers never count this figure themselves, so one shared add cannot race
    // with a worker's own.
    if let Some(stats) = server.thread_stats.first() {
        stats
            .unexpected_error_replies
            .fetch_add(1, Ordering::Relaxed);
    }
    let (behavior, read_only) = {
        let config = server.config.read();
        (
            config.propagation_error_behavior.clone(),
            config.replica_read_only,
        )
    };
    let panics = match from {
        Unread::MasterStream => {
            read_only
                && !server.replication.is_active()
                && matches!(behavior.as_str(), "panic" | "panic-on-replicas")
        }
        Unread::Aof => behavior == "panic",
    };
    if panics {
        crate::crash::panic_now(&format!(
            "This {me} panicked sending an error to its {peer} after processing the command '{command}'"
        ));
    }
}

fn execute(
    server: &Server,
    stats: &ThreadStats,
    client: &mut ClientState,
    out: &mut ReplyWriter,
    args: &[&[u8]],
    id: usize,
    now: u64,
) {
    let cmd: &'static Command = registry().get(id);
    client.last_command = cmd.name;
    let scripts = &server.scripting;
    let env = KeyEnv {
        wait_gate: lock_wait_gate(scripts, cmd),
        // A peer's write replayed under active replication is a write of this node
        // too: it expires what is due and goes on to our replicas.
        from_master: client.is_master && !crate::effects::replaying_now(),
        ..server.key_env(stats)
    };
    let db = client.db;
    let mut keys: smallvec::SmallVec<[&[u8]; 4]> = smallvec::SmallVec::new();
    let mut locked = match cmd.lock {
        Lock::Keys => match cmd.key_positions(args) {
            Some(positions) => {
                keys.extend(positions.iter().map(|&i| args[i]));
                Locked::keys(env, db, now, &keys)
            }
            None => Locked::none(env, db, now),
        },
        Lock::Db => Locked::databases(env, db, now, &[db]),
        Lock::AllDbs => {
            let all: Vec<usize> = (0..server.keyspace.databases()).collect();
            Locked::databases(env, db, now, &all)
        }
        Lock::Args(_) => {
            let mut ids = Vec::new();
            plan_locks(server, cmd, args, db, &mut ids);
            Locked::shard_ids(env, db, now, &ids)
        }
        Lock::Handler => Locked::none(env, db, now),
    };
    if locked.gave_up() {
        return refuse(server, stats, out, id, &scripts.busy_reply());
    }
    locked.touch = !client.no_touch;
    // A command whose writes no key spec names (EXEC, scripts, MOVE ...) says which
    // keys it wrote, in order, for the waiters to be served in that order.
    let names_writes = matches!(cmd.lock, Lock::Keys);
    if !names_writes && !server.blocking.is_idle() {
        locked.keep_written();
    }
    let ran = run_locked(server, stats, client, out, args, id, &mut locked);
    let written_in_order = locked.take_written();
    drop(locked);
    stats.add(&stats.dirty, ran.changes);
    if ran.changes > 0 {
        let written = if names_writes {
            blocking::Written::Keys(db, &keys)
        } else {
            blocking::Written::Anything(written_in_order)
        };
        blocking::after_write(server, stats, written);
    }
    if let Some(blocked) = client.blocked.as_mut() {
        // The call is counted, and logged if slow, when the wait ends.
        blocked.command = id;
        blocked.ran_for = ran.elapsed;
        blocked.slow = slowlog::draft(server, cmd, args, ran.elapsed);
        return;
    }
    finish_call(
        server,
        stats,
        slowlog::Origin::Client(client),
        id,
        args,
        &ran,
    );
    if let Err(e) = ran.result {
        write_error(server, stats, out, &e.0);
    }
}

/// After a read-only command ran, with its shard locks still held: remember the
/// keys it read for the client, if its tracking settings say so.
fn remember_reads(server: &Server, client: &ClientState, cmd: &Command, args: &[&[u8]]) {
    // Read-only scripts are tracked through the commands they run
    // ([`remember_script_reads`]); channel names of shard pub/sub are not keys anyone
    // caches.
    if cmd.runs_read_only_script() || cmd.has(table::flags::PUBSUB) {
        return;
    }
    if let Some(positions) = cmd.key_positions(args) {
        remember(server, client, positions.iter().map(|&at| args[at]));
    }
}

/// A script's command was read-only: as Redis 7.0 does, the client running the
/// script is tracked for every key the script declared, whichever keys the command
/// read (a script that only writes, or declares no key, is tracked for nothing).
/// Called with the declared keys' shards held by the script.
pub fn remember_script_reads(server: &Server, client: &ClientState, declared: &[&[u8]]) {
    remember(server, client, declared.iter().copied());
}

fn remember<'k>(server: &Server, client: &ClientState, keys: impl Iterator<Item = &'k [u8]>) {
    let Some(tracking) = &client.tracking else {
        return;
    };
    if tracking.remembers_reads() {
        server
            .tracking
            .remember(crate::tracking::Endpoint::of(&client.info), keys);
    }
}

/// Add to `ids` the shards ([`crate::keyspace::Keyspace::global_id`]) command `cmd`
/// needs to run with `args` in database `db`, as [`Lock`] says; returns the database
/// the next command of a transaction runs in (SELECT changes it).
pub fn plan_locks(
    server: &Server,
    cmd: &Command,
    args: &[&[u8]],
    db: usize,
    ids: &mut Vec<usize>,
) -> usize {
    let ks = &server.keyspace;
    let whole_db = |db: usize, ids: &mut Vec<usize>| ids.extend(ks.db_shard_ids(db));
    match cmd.lock {
        Lock::Keys => {
            if let Some(positions) = cmd.key_positions(args) {
                ids.extend(positions.iter().map(|&at| ks.shard_id_of(db, args[at])));
            }
        }
        Lock::Db => whole_db(db, ids),
        Lock::AllDbs | Lock::Handler => (0..ks.databases()).for_each(|d| whole_db(d, ids)),
        Lock::Args(needs) => {
            let request = LockRequest {
                args,
                db,
                databases: ks.databases(),
            };
            for need in needs(&request) {
                match need {
                    Need::Key { db, arg } => ids.push(ks.shard_id_of(db, args[arg])),
                    Need::Db(db) => whole_db(db, ids),
                }
            }
        }
    }
    if cmd.has(table::flags::SELECTS_DB) {
        if let Ok(selected) = args::db_index(args[1], ks.databases()) {
            return selected;
        }
    }
    db
}

/// Answer a command with an error without running it (BUSY).
fn refuse(server: &Server, stats: &ThreadStats, out: &mut ReplyWriter, id: usize, e: &CmdError) {
    stats.add(&stats.per_command[id].rejected_calls, 1);
    write_error(server, stats, out, &e.0);
}

/// What running one command against held shards produced.
pub struct Ran {
    pub result: CmdResult,
    /// The handler replied an error of its own ([`Ctx::replied_error`]).
    pub replied_error: bool,
    /// Changes it made (Redis's `dirty`), its own locks included.
    pub changes: u64,
    pub elapsed: Duration,
}

impl Ran {
    /// A peer's write dropped unapplied (active replication): nothing ran.
    fn dropped() -> Ran {
        Ran {
            result: Ok(()),
            replied_error: false,
            changes: 0,
            elapsed: Duration::ZERO,
        }
    }

    /// Did the call fail (INFO commandstats' `failed_calls`)?
    pub fn failed(&self) -> bool {
        self.result.is_err() || self.replied_error
    }
}

/// Run command `id` against shards the caller already holds: the handler (a panic
/// becomes an error reply) and the command's effects. Plain commands come here from
/// [`call`]; transactions and scripts run each of their commands here under the one
/// `Locked` that covers them all. Error replies, counting the call and serving blocked
/// clients are left to the caller.
pub fn run_locked<'a>(
    server: &'a Server,
    stats: &'a ThreadStats,
    client: &mut ClientState,
    out: &mut ReplyWriter,
    args: &[&[u8]],
    id: usize,
    locked: &mut Locked<'a>,
) -> Ran {
    let mut cmd: &'static Command = registry().get(id);
    // Declared first, dropped last: the arguments below may borrow from it.
    let removal: Vec<Vec<u8>>;
    let elements_kept: SmallVec<[&[u8]; 8]>;
    let removal_args: SmallVec<[&[u8]; 8]>;
    let as_born = args;
    let mut args: &[&[u8]] = args;
    let mut peer_seen = SmallVec::<[(&[u8], u64); 4]>::new();
    // Counted keys a peer's late reset goes under (see [`resets_under_increments`]).
    let mut counted_under = CountedUnder::new();
    // Only the client applying a master's stream replays peers' writes: others
    // never look at the clock's thread-local here.
    let replayed_at = client.is_master.then(crate::hlc::imposed_now).flatten();
    if let Some(ts) = replayed_at {
        let elements = elements_that_apply(cmd, args, ts, locked);
        if let Some(kept) = &elements {
            repair_counted_elements(args[1], &kept.counted_apart, locked);
        }
        if elements.as_ref().is_some_and(|kept| kept.args.is_empty()) {
            return dropped_replay(as_born, locked);
        }
        // An element increment is judged as a counter too: a plain write of its
        // element newer than it (the counter's reset) drops it.
        let judged_whole = elements.is_none() || cmd.has(table::flags::MERGES_AS_COUNTER);
        let stale = |locked: &mut Locked| match elements {
            Some(_) => counted_element_was_reset(cmd, args, ts, locked),
            None => replay_is_stale(cmd, args, ts, locked),
        };
        if judged_whole && stale(locked) {
            if elements.is_some() {
                // Only that element was reset here since: the write that reset it
                // goes to the peer too (where the peer drops it, it sends us its
                // element), and the collection's other elements merge on (a
                // repair of the whole key would undo their merges).
                return dropped_replay(as_born, locked);
            }
            match older_elements_removal(cmd, args, ts, locked) {
                Some(older) => {
                    // It saw every add no newer than itself, as on the nodes
                    // where it removed the key whole: the elements it removes
                    // here, those removed here already and the unmarked ones
                    // count it as seen, or an older add still on its way would
                    // stay here and be dropped there.
                    let db = locked.db;
                    locked.join_whole_removal(db, args[1], ts);
                    // To the TTL register it is a value write.
                    locked.restart_ttl_at_removal(db, args[1], ts);
                    if older.len() <= 2 {
                        // Every element here is newer than it: nothing to remove.
                        return dropped_replay(as_born, locked);
                    }
                    let removing = registry().lookup(&older[0]);
                    cmd = registry().get(removing.expect("a command of the table"));
                    removal = older;
                    removal_args = removal.iter().map(Vec::as_slice).collect();
                    peer_seen = removal[2..].iter().map(|e| (&e[..], ts)).collect();
                    args = &removal_args;
                }
                None => match resets_under_increments(cmd, args, ts, locked) {
                    Some(split) => counted_under = split,
                    None => {
                        repair_newer_keys(cmd, args, ts, locked);
                        return dropped_replay(as_born, locked);
                    }
                },
            }
        }
        if let Some(kept) = elements {
            elements_kept = kept.args;
            peer_seen = kept.seen;
            args = &elements_kept;
        }
        if replay_was_counted(cmd, args, ts, locked) {
            return dropped_replay(as_born, locked);
        }
    }
    let dirty_before = locked.dirty();
    // A command whose write takes several effects (XREADGROUP's claims, a lazily
    // expired key's DEL before a SET) reaches replicas as one MULTI ... EXEC, as in
    // Redis 7.0; inside a transaction or script, the group already open holds them.
    let own_group = !locked.in_effect_group();
    if own_group {
        locked.begin_effect_group();
    }
    // Active replication marks the elements its writes name, for peers to merge by.
    let marking = (server.keyspace.keeps_graves() && cmd.has(table::flags::WRITE))
        .then(|| keys_before(cmd, args, locked));
    let countable_in_place = match (&marking, replayed_at) {
        (Some(_), None) => countable_key_written_in_place(cmd, args, locked),
        _ => None,
    };
    let started = Instant::now();
    let mut ctx = Ctx {
        server,
        client,
        out,
        keys: locked,
        stats,
        propagated: false,
        extra_dirty: 0,
        replied_error: false,
        started,
    };
    // A bug in one handler must not take the worker thread and its clients down with
    // it: the panic becomes an error reply (the shard locks unlock as the stack unwinds).
    let result = crate::crash::recover(|| (cmd.handler)(&mut ctx, args)).unwrap_or_else(|| {
        crate::log_warning!("Internal error while running '{}'", cmd.name);
        Err(format!("ERR internal error while running '{}'", cmd.name).into())
    });
    // Remembered while the keys' shards are still locked: no write slips between. A
    // script's commands remember the script's keys instead (its caller does that).
    if ctx.client.tracking.is_some()
        && cmd.has(table::flags::READONLY)
        && !ctx.client.running_script
    {
        remember_reads(server, ctx.client, cmd, args);
    }
    let changes = ctx.keys.dirty() - dirty_before + ctx.extra_dirty;
    // Under active replication an element write that changed nothing (SADD of a
    // member already there) still travels: it is an add the peers must mark, or a
    // concurrent removal there would win.
    let element_write = marking.is_some()
        && result.is_ok()
        && element_span(cmd, args).is_some()
        && !cmd.has(table::flags::MERGES_AS_COUNTER)
        && args.get(1).is_some_and(|&key| {
            let db = ctx.keys.db;
            ctx.keys.get_in(db, key).is_some()
        });
    if (changes > 0 || element_write) && !ctx.propagated {
        let db = ctx.keys.db;
        match countable_in_place {
            Some(key) => propagate_written_in_place(ctx.keys, args, key),
            None => ctx.keys.propagate(db, args),
        }
    }
    // Applied here without a write of its own (a DEL of a key gone here): it
    // still travels on, as one dropped does.
    if replayed_at.is_some()
        && marking
            .as_ref()
            .is_some_and(|m| m.0 == ctx.keys.group_len())
    {
        // A removal of keys gone here: a collection element writes emptied
        // keeps, under its grave, that it saw every add older than itself.
        if let Some(ts) = replayed_at.filter(|_| removes_whole_keys(cmd)) {
            let db = ctx.keys.db;
            for &key in args.iter().skip(1) {
                ctx.keys.join_whole_removal(db, key, ts);
                // One a DEL removed keeps the newer removal, for its TTL.
                ctx.keys.bury_again(db, key, ts);
            }
        }
        ctx.keys.forward_dropped(as_born);
    }
    // A peer's reset that went under later increments: they count on it now
    // (after the reset's own effect, which the AOF and plain replicas then
    // follow with the value this makes).
    if let Some(ts) = replayed_at.filter(|_| result.is_ok()) {
        let db = ctx.keys.db;
        for (key, counted) in &counted_under {
            ctx.keys.recount_after_reset(db, key, ts, counted);
        }
    }
    if let Some((since, before)) = &marking {
        let seen_by_peer =
            |element: &[u8]| peer_seen.iter().find(|(e, _)| *e == element).map(|p| p.1);
        ctx.keys
            .mark_elements_since(*since, before, effect_on_marks, seen_by_peer);
        // A peer's write applied cut down (or as the removals it made here) goes
        // on whole to the active peers, who judge it themselves.
        if !std::ptr::eq(args, as_born) {
            let born = crate::effects::AsBorn {
                argv: as_born.iter().map(|a| a.to_vec()).collect(),
                observed: crate::keyspace::removal_seen_now(),
            };
            ctx.keys.forward_whole(*since, born);
        }
    }
    if own_group {
        ctx.keys.finish_effect_group();
    }
    // Commands inside EXEC and scripts are shown too, each after it ran.
    if server.pubsub.has_monitors() {
        pubsub::feed_monitors(server, ctx.client, cmd, args);
    }
    Ran {
        result,
        replied_error: ctx.replied_error,
        changes,
        elapsed: started.elapsed(),
    }
}

/// Active replication: the key a write of this node's own changes in place (its
/// one key, written without being reset, removed or counted: APPEND, SETRANGE,
/// SETBIT, BITFIELD), when a node may count on it, or when the write creates it
/// (see [`propagate_written_in_place`]).
fn countable_key_written_in_place<'a>(
    cmd: &Command,
    args: &[&'a [u8]],
    locked: &mut Locked,
) -> Option<&'a [u8]> {
    if cmd.has(table::flags::MERGES_AS_COUNTER) || cmd.has(table::flags::MERGES_AS_TTL) {
        return None;
    }
    let mut found = table::FoundKeys(SmallVec::new());
    if !cmd.keys_and_flags(args, &mut found) {
        return None;
    }
    let [(at, flags)] = found.0[..] else {
        return None;
    };
    let resets = table::key_flags::OW | table::key_flags::RM | table::key_flags::DELETE;
    let in_place = flags & table::key_flags::RW != 0 && flags & resets == 0;
    let key = args[at];
    let db = locked.db;
    // Only a string made by a write in place can be counted on (a hash or a
    // list that one creates merges element by element, or as a command).
    let writes_a_string = cmd.acl & (table::acl::STRING | table::acl::BITMAP) != 0;
    let sent_whole = in_place
        && match locked.get_in(db, key) {
            None => writes_a_string,
            Some(_) => locked.may_be_counted(db, key),
        };
    sent_whole.then_some(key)
}

/// A write of this node's own changed string `key` in place, which held a
/// number or was counted, or created it (see
/// [`countable_key_written_in_place`]). The AOF and
/// the plain replicas take the command; the peers take the value it made,
/// whole (RESTORE ... REPLACE ABSTTL, with the key's deadline), as a reset of
/// their counts. The command itself would apply there on the peer's own count,
/// which may hold increments this node has not met and lack some it has:
/// another value under the same timestamp, which no repair would mend; and a
/// peer whose count holds an increment newer than the command would have to
/// drop it, the command being no reset it could put under that increment. As a
/// reset, an increment newer than it counts on it everywhere and an older one
/// goes under it, as here (the write restamped the key: this node's count
/// starts over from it). A write that creates the key writes its whole value
/// too: a peer holding the key (its own count, made apart) would apply the
/// command on a value this node never had. Strings that hold no number (a log
/// appended to, a bitmap) go as the command: nobody counts on them.
fn propagate_written_in_place(locked: &mut Locked, args: &[&[u8]], key: &[u8]) {
    let db = locked.db;
    let Some(entry) = locked.get_in(db, key) else {
        return locked.propagate(db, args);
    };
    let payload = crate::persistence::rdb::payload::dump(&entry.value, false);
    let deadline = entry.expire_at.to_string();
    let whole = restore_whole(key, deadline.as_bytes(), &payload);
    locked.propagate_apart(db, args, &whole);
}

/// A peer's command that applies nothing here: it still travels on to the active
/// peers ([`Locked::forward_dropped`]).
fn dropped_replay(as_born: &[&[u8]], locked: &mut Locked) -> Ran {
    locked.forward_dropped(as_born);
    Ran::dropped()
}

/// Active replication: is a peer's write stamped `ts` too old to apply here? Last
/// writer wins: a key written or removed here at `ts` or later keeps what it holds
/// (the whole command is dropped when any of its keys is newer). A counter's
/// increment merges with concurrent ones instead, unless the key was removed after
/// it; a TTL change merges with ours made since the same value write. Commands
/// without keys (a flush decides for itself) always apply.
fn replay_is_stale(cmd: &Command, args: &[&[u8]], ts: u64, locked: &mut Locked) -> bool {
    if !cmd.has(table::flags::WRITE) {
        return false;
    }
    let Some(positions) = cmd.key_positions(args) else {
        return false;
    };
    let db = locked.db;
    if cmd.has(table::flags::MERGES_AS_COUNTER) {
        // A counter restarts from a newer write of another kind (a SET, an HSET).
        let member = cmd.counted_member.and_then(|at| args.get(at).copied());
        return positions.iter().any(|&i| {
            locked.buried_since(db, args[i], ts) || locked.reset_after(db, args[i], member, ts)
        });
    }
    if cmd.has(table::flags::MERGES_AS_TTL) {
        return positions
            .iter()
            .any(|&i| locked.ttl_change_is_stale(db, args[i], ts));
    }
    positions.iter().any(|&i| {
        locked.is_stale(db, args[i], ts) || ties_with_a_copy_of_another(db, args[i], ts, locked)
    })
}

/// Counted keys a reset goes under, each with its state before the reset.
type CountedUnder<'a> = SmallVec<[(&'a [u8], UnderReset); 1]>;

/// Active replication: a peer's write stamped `ts` that is older than some of
/// its keys here, where each such key is a counter whose newer writes are
/// increments made on an older base, and the write resets it (it writes the
/// key's whole value, or removes it, without reading it). Last writer wins
/// between the reset and the base; the increments newer than the reset count on
/// it, the older ones are gone, as on the nodes that met the reset first. The
/// states of those keys, for [`Locked::recount_after_reset`] once the write ran;
/// `None` when some newer key is not such a counter (the write is dropped).
fn resets_under_increments<'a>(
    cmd: &Command,
    args: &[&'a [u8]],
    ts: u64,
    locked: &mut Locked,
) -> Option<CountedUnder<'a>> {
    if cmd.has(table::flags::MERGES_AS_COUNTER) || cmd.has(table::flags::MERGES_AS_TTL) {
        return None;
    }
    let mut found = table::FoundKeys(SmallVec::new());
    if !cmd.keys_and_flags(args, &mut found) {
        return None;
    }
    let db = locked.db;
    let mut split = SmallVec::new();
    for (at, flags) in found.0 {
        let key = args[at];
        if !locked.is_stale(db, key, ts) {
            if ties_with_a_copy_of_another(db, key, ts, locked) {
                return None;
            }
            continue;
        }
        let resets =
            flags & (table::key_flags::OW | table::key_flags::RM | table::key_flags::DELETE);
        if resets == 0 {
            return None;
        }
        split.push((key, locked.counter_split_at(db, key, ts)?));
    }
    (!split.is_empty()).then_some(split)
}

/// Active replication: is a peer's increment stamped `ts` of an element (HINCRBY,
/// ZINCRBY) of a collection merging element by element older than that element's
/// own last plain write here (its counter's reset)? Only the element's writes
/// decide: element writes that emptied the collection (under its grave) reset
/// none of the others.
fn counted_element_was_reset(cmd: &Command, args: &[&[u8]], ts: u64, locked: &mut Locked) -> bool {
    let db = locked.db;
    let member = cmd.counted_member.and_then(|at| args.get(at).copied());
    let positions = cmd.key_positions(args);
    positions
        .iter()
        .flatten()
        .any(|&i| locked.reset_after(db, args[i], member, ts))
}

/// Is a peer's write stamped `ts` a copy of a write another node made, tying with
/// the key here? A repair (see [`repair_key`]) carries the timestamp of the key's
/// last write, which may be a third node's: each node that applied that write on
/// its own value holds another copy of it, under the same timestamp. Only the
/// node that made the write holds it as it was made, so only its copy settles the
/// tie; the others' would each win where they land last, and the nodes would stay
/// apart (a mesh where each node pushed to one list).
fn ties_with_a_copy_of_another(db: usize, key: &[u8], ts: u64, locked: &mut Locked) -> bool {
    let Some(birth) = crate::effects::birth_now() else {
        return false;
    };
    crate::hlc::tag_for(&birth.origin) != crate::hlc::tag_of(ts) && locked.newest_ts(db, key) == ts
}

/// What a peer's write of elements keeps here: its arguments without the elements
/// it does not change, what its removal saw of each element kept, and the
/// elements it does not change whose last write here was an increment (see
/// [`repair_counted_elements`]).
struct KeptElements<'a> {
    args: SmallVec<[&'a [u8]; 8]>,
    seen: SmallVec<[(&'a [u8], u64); 4]>,
    counted_apart: SmallVec<[&'a [u8]; 2]>,
}

/// Active replication: a peer's write of `elements` of collection `key` does not
/// apply here, and the last write here of some of them was an increment (HINCRBY,
/// ZINCRBY) the peer's write did not see. The peer counts our increments on its
/// own value of such an element (one its write set or left, or one it counted on
/// from another base), so no later increment of ours mends it: write each such
/// element again as this node holds it (HSET / ZADD), stamped just after its
/// last increment here ([`Locked::rewrite_element`]), which resets its counter
/// on both nodes (increments older than it, still on their way, are dropped on
/// both). Where the peer
/// counted a newer increment of its own meanwhile, it drops ours and does the
/// same; the element ends with the last of these writes on both. Elements absent
/// here need nothing: the removal that took them goes to the peer too.
pub fn repair_counted_elements(key: &[u8], elements: &[&[u8]], locked: &mut Locked) {
    if elements.is_empty() {
        return;
    }
    let db = locked.db;
    let Some(here) = locked.elements_here(db, key, elements.iter().copied()) else {
        return;
    };
    for (&element, here) in elements.iter().zip(here) {
        if !(here.marked && here.mark.is_counted()) {
            continue;
        }
        let write = locked
            .get_in(db, key)
            .and_then(|entry| crate::keyspace::setting_write(&entry.value, key, element));
        if let Some(write) = write {
            let argv: SmallVec<[&[u8]; 4]> = write.iter().map(Vec::as_slice).collect();
            locked.rewrite_element(db, key, element, here.mark.ts, &argv);
        }
    }
}

/// Active replication: a peer's write stamped `ts` of elements of a collection
/// that merges element by element (its key's element timestamps are current here):
/// the elements it changes here ([`crate::keyspace::Mark::admits`]: an add this
/// node's removals did not see, a removal of adds it saw, a counter's increment
/// unless a removal that saw it took it; none that the collection's base, a write
/// or removal of the whole key, is newer than); empty when nothing is left to
/// apply. A removal of a counted element whose later increments here it did not
/// see takes from the count what it saw ([`Locked::take_seen_increments`]).
/// `None` when the write does not merge by element here (it is judged per
/// key).
fn elements_that_apply<'a>(
    cmd: &Command,
    args: &[&'a [u8]],
    ts: u64,
    locked: &mut Locked,
) -> Option<KeptElements<'a>> {
    let span = element_span(cmd, args)?;
    let key = *args.get(1)?;
    let items: SmallVec<[&[&[u8]]; 8]> = args.get(span.first..)?.chunks_exact(span.step).collect();
    let here = locked.elements_here(locked.db, key, items.iter().map(|item| item[span.at]))?;
    let mut kept = KeptElements {
        args: args.iter().take(span.first).copied().collect(),
        seen: SmallVec::new(),
        counted_apart: SmallVec::new(),
    };
    for (i, (item, here)) in items.iter().zip(here).enumerate() {
        let element = item[span.at];
        if !here.marked && here.mark.ts > ts {
            // Written or removed whole since (the collection's base): this older
            // write of it changes nothing. Judging it by the key instead would
            // send the peer our collection whole, undoing the element merges
            // the peer made since.
            continue;
        }
        // A removal whose sender said nothing of what it saw saw everything older.
        let seen = crate::keyspace::removal_seen(i).unwrap_or(ts);
        if here.mark.admits(&span.mark(ts, !span.removes, seen)) {
            kept.args.extend_from_slice(item);
            if span.removes {
                kept.seen.push((element, seen));
            }
        } else if here.marked && here.mark.is_counted() {
            // A removal that did not see our later increments takes from the
            // count only what it saw, as on the node that removed it. On any
            // other write of it the peer counts our increments on its own
            // value: we write the element again as we hold it.
            let db = locked.db;
            if !(span.removes && locked.take_seen_increments(db, key, element, seen)) {
                kept.counted_apart.push(element);
            }
        }
    }
    if kept.args.len() == span.first {
        kept.args.clear();
    }
    Some(kept)
}

/// Active replication: a peer's removal of a whole key stamped `ts` (DEL, UNLINK)
/// that is older than the key's last write here, where the key is a collection
/// merging element by element: the removal of the elements written before it, as
/// the command that removes them from that type (SREM, HDEL, ZREM) with the
/// key, or with the key alone when there are none. The elements written since stay
/// (the peer gets them from our stream as element writes it applies); sending our
/// collection whole instead would replace the element merges the peer made, and
/// those older elements, gone there, would stay here. Empty when element writes
/// emptied the collection here after it (nothing to remove, nothing to send).
/// `None` when the removal is not of that kind: it is judged per key.
fn older_elements_removal(
    cmd: &Command,
    args: &[&[u8]],
    ts: u64,
    locked: &mut Locked,
) -> Option<Vec<Vec<u8>>> {
    let [_, key] = args else {
        return None;
    };
    if !removes_whole_keys(cmd) {
        return None;
    }
    let db = locked.db;
    let Some(entry) = locked.get_in(db, key) else {
        // Emptied here by element writes, after the removal (its element
        // timestamps current under its grave): those went to the peers as the
        // element removals they were, and nothing is left here for this one to
        // take. Sending the peer our grave as a DEL instead would remove there
        // the elements it added that our removals never saw.
        return locked.current_elements(db, key).map(|_| Vec::new());
    };
    let names = element_names(&entry.value)?;
    let state = locked.current_elements(db, key)?;
    let removal = match names.first() {
        Some(name) => name.clone(),
        None => return None,
    };
    let mut argv = vec![removal, key.to_vec()];
    argv.extend(
        names
            .into_iter()
            .skip(1)
            .filter(|element| state.ts_of(element) < ts),
    );
    Some(argv)
}

/// Does `cmd` remove its keys whole (DEL, UNLINK), naming no elements?
fn removes_whole_keys(cmd: &Command) -> bool {
    cmd.elements.is_none()
        && !cmd.specs().is_empty()
        && cmd
            .specs()
            .iter()
            .all(|spec| cmd.spec_flags(spec) & table::key_flags::RM != 0)
}

/// The command that removes elements of collection `value`, then its elements
/// (`None` for other types).
fn element_names(value: &crate::types::Value) -> Option<Vec<Vec<u8>>> {
    use crate::types::Value;
    let mut digits = itoa::Buffer::new();
    let names = match value {
        Value::Set(set) => std::iter::once(b"SREM".to_vec())
            .chain(set.iter().map(|m| m.bytes(&mut digits).to_vec()))
            .collect(),
        Value::Hash(hash) => std::iter::once(b"HDEL".to_vec())
            .chain(hash.iter().map(|(field, _)| field.to_vec()))
            .collect(),
        Value::ZSet(zset) => {
            let mut names = vec![b"ZREM".to_vec()];
            zset.for_each(|member, _| names.push(member.to_vec()));
            names
        }
        _ => return None,
    };
    Some(names)
}

/// Each key a write may write, with its database and newest timestamp before it ran.
type KeysBefore<'a> = SmallVec<[(usize, &'a [u8], u64); 2]>;

/// Before a write runs on an active-replication node: where the effects of the
/// open group end, and the newest timestamp of each key the command may write (the
/// element timestamps of those keys are marked after it, see
/// [`Locked::mark_elements_since`]; its read-only keys, a STORE's sources, keep
/// theirs).
fn keys_before<'a>(
    cmd: &Command,
    args: &[&'a [u8]],
    locked: &mut Locked,
) -> (usize, KeysBefore<'a>) {
    let db = locked.db;
    let before = cmd
        .written_key_positions(args)
        .iter()
        .flatten()
        .map(|&at| (db, args[at], locked.newest_ts(db, args[at])))
        .collect();
    (locked.group_len(), before)
}

/// What an effect does to the element marks of its keys: where it names the
/// elements of its collection (the command table's `elements` of the effect's
/// command), or whether it changes only their TTL (`MERGES_AS_TTL`), else writes
/// them whole. One table lookup per effect: this runs for every write of an
/// active node.
fn effect_on_marks(argv: &[&[u8]]) -> crate::keyspace::EffectOnMarks {
    use crate::keyspace::EffectOnMarks;
    let Some(id) = argv.first().and_then(|name| registry().lookup(name)) else {
        return EffectOnMarks::Whole;
    };
    let cmd = registry().get(id);
    match element_span(cmd, argv) {
        Some(span) => EffectOnMarks::Elements(span),
        None if cmd.has(table::flags::MERGES_AS_TTL) => EffectOnMarks::TtlOnly,
        None => EffectOnMarks::Whole,
    }
}

/// Where `args` of `cmd` name the elements of its collection, and whether it
/// counts on them.
fn element_span(cmd: &Command, args: &[&[u8]]) -> Option<crate::keyspace::ElementSpan> {
    let span = cmd.elements.and_then(|of| of(args))?;
    Some(crate::keyspace::ElementSpan {
        counts: cmd.has(table::flags::MERGES_AS_COUNTER),
        ..span
    })
}

/// Active replication: is a peer's increment stamped `ts` one this node counted
/// already? It met it by another path (a mesh), or inside a merged full sync whose
/// counter totals held it; counting it again would count it twice.
fn replay_was_counted(cmd: &Command, args: &[&[u8]], ts: u64, locked: &mut Locked) -> bool {
    if !cmd.has(table::flags::MERGES_AS_COUNTER) {
        return false;
    }
    let db = locked.db;
    let member = cmd.counted_member.and_then(|at| args.get(at).copied());
    cmd.key_positions(args).is_some_and(|positions| {
        positions
            .iter()
            .any(|&i| locked.has_counted(db, args[i], member, ts))
    })
}

/// A peer's write stamped `ts` was dropped because these keys are newer here. The
/// peer applied its own write, and maybe ours on top of it (a list push, a hash
/// field), so its value may be neither: send it ours whole (see [`repair_key`]),
/// so that both end with the last writer's value. A key whose last write is ours
/// and that the peer sent back as its own copy of that write (a tie, see
/// [`ties_with_a_copy_of_another`]) goes too: that copy may be our write applied
/// on another value, and only ours settles the tie everywhere. Only for a key
/// that merges whole: the copies of a counter or of a collection merging element
/// by element hold merges ours may not have yet. A counted string may be sent
/// as its count's base instead (see [`repair_newer_key`]).
fn repair_newer_keys(cmd: &Command, args: &[&[u8]], ts: u64, locked: &mut Locked) {
    let db = locked.db;
    for &i in cmd.key_positions(args).iter().flatten() {
        let key = args[i];
        if cmd.has(table::flags::MERGES_AS_TTL) && locked.merges_by_element(db, key) {
            // A TTL change older than the value write (a removal) that started
            // the register over here: that write reaches the peer in our stream
            // and starts its register over too. Sent whole, a collection merging
            // element by element would take away there the elements the peer
            // added that we have not met yet.
            continue;
        }
        let newest = locked.newest_ts(db, key);
        let our_write_copied =
            newest == ts && crate::hlc::issued_here(ts) && locked.merges_whole(db, key);
        if newest > ts {
            repair_newer_key(locked, db, key, ts);
        } else if our_write_copied {
            repair_key(locked, db, key);
        }
    }
}

/// A peer's copy of `key` of `db` stamped `theirs` lost to ours, which is newer:
/// [`repair_key`], unless our count of the key starts from a write (its base)
/// no older than their copy. That base met again (its maker's repair of it)
/// needs nothing: the increments on it are on their way to the peer. A newer
/// one is sent alone ([`repair_count_base`]).
pub fn repair_newer_key(locked: &mut Locked, db: usize, key: &[u8], theirs: u64) {
    match locked.count_base(db, key).filter(|base| base.0 >= theirs) {
        Some((base_ts, _)) if base_ts == theirs => {}
        Some((base_ts, base)) => repair_count_base(locked, (db, key), base_ts, &base),
        None => repair_key(locked, db, key),
    }
}

/// The repair of whole counted `key` of `db` whose count starts from a write
/// (its base) stamped `base_ts` that held `base`, newer than the peer's copy
/// that lost to ours (see [`repair_newer_key`]). The increments reach
/// the peer by the streams and count there on its copy of the base, which may
/// be another value than ours (an APPEND applied on their copy):
/// send the base as we hold it, stamped as it was, which the peer's count then
/// starts from ([`crate::keyspace::Counter::rebases_at`]), or goes under where the peer counts
/// from an older write. Not our sum stamped as our last increment: a node that
/// had not met that increment would take it as a reset then, and drop a reset
/// older than it still on its way, which goes under our increments here and
/// elsewhere. So our count stays too, for such resets to go under it. Only
/// the base's maker sends it: a copy of a third node's write settles no tie
/// (see [`ties_with_a_copy_of_another`]), and that node sends its own.
fn repair_count_base(
    locked: &mut Locked,
    (db, key): (usize, &[u8]),
    base_ts: u64,
    base: &crate::keyspace::Num,
) {
    if !crate::hlc::issued_here(base_ts) {
        return;
    }
    let Some(deadline) = locked.get_in(db, key).map(|entry| entry.expire_at) else {
        return;
    };
    let value = crate::types::Value::Str(crate::types::string::StrValue::from_bytes(&base.text()));
    let payload = crate::persistence::rdb::payload::dump(&value, false);
    send_whole(locked, (db, key), base_ts, &payload, deadline);
}

/// Send the peers `payload` (a dumped value) as the whole value of `key` of
/// `db` with deadline `deadline`, stamped `ts`: RESTORE ... REPLACE ABSTTL,
/// under our own origin.
fn send_whole(
    locked: &mut Locked,
    (db, key): (usize, &[u8]),
    ts: u64,
    payload: &[u8],
    deadline: u64,
) {
    let deadline = deadline.to_string();
    let argv = restore_whole(key, deadline.as_bytes(), payload);
    locked.propagate_own(db, ts, &argv);
}

/// `RESTORE key <deadline> <payload> REPLACE ABSTTL`: a key's value whole as the
/// peers take it (a repair, a write in place of a number), `payload` a dumped
/// value.
fn restore_whole<'a>(key: &'a [u8], deadline: &'a [u8], payload: &'a [u8]) -> [&'a [u8]; 6] {
    [b"RESTORE", key, deadline, payload, b"REPLACE", b"ABSTTL"]
}

/// Send the peers `key` of `db` as this node holds it, with its timestamp: its
/// value whole (RESTORE ... REPLACE ABSTTL), or, when it is removed here, a DEL at
/// its removal (the DEL we sent then may be one the peer never gets: its grave
/// forgotten here, see keyspace/graves.rs). A peer whose copy lost to ours may hold
/// a value nobody else has (its own write with one of ours applied on top), which
/// no later write of ours would mend; this does. Called with `key`'s shard held.
pub fn repair_key(locked: &mut Locked, db: usize, key: &[u8]) {
    // The peers take the value whole, as a reset: so does our counting.
    locked.forget_counter(db, key);
    let Some(entry) = locked.get_in(db, key) else {
        // Element writes that emptied a collection went to the peers as the
        // element removals they were: a DEL would be a removal of the whole key
        // there (of elements the peer added that ours never saw, and of the TTL
        // changes older than it).
        let removed = locked.removed_at(db, key);
        if removed > 0 && locked.current_elements(db, key).is_none() {
            locked.propagate_own(db, removed, &[b"DEL", key]);
        }
        return;
    };
    let payload = crate::persistence::rdb::payload::dump(&entry.value, false);
    let (key_ts, deadline) = (entry.ts, entry.expire_at);
    send_whole(locked, (db, key), key_ts, &payload, deadline);
    // And as a value write, whose TTL register starts over: so does ours. Not
    // where the key's last write is a third node's: the peers that hold that
    // write drop our copy of it (see [`ties_with_a_copy_of_another`]), and our
    // register forgotten would make that write (a TTL change, maybe) the value
    // write a peer's later increment is judged by, here alone.
    if crate::hlc::issued_here(key_ts) {
        locked.restart_ttl_register(db, key);
    }
}

/// A call of command `id` with `args`, made by `origin`, ran to its end: count it
/// and, when it took long enough to concern them, show it to the latency monitor
/// and the slow log. When nothing is slow that costs one relaxed load and one
/// comparison: neither takes a lock unless it keeps something.
pub fn finish_call(
    server: &Server,
    stats: &ThreadStats,
    origin: slowlog::Origin,
    id: usize,
    args: &[&[u8]],
    ran: &Ran,
) {
    count_call(server, stats, id, ran.elapsed, ran.failed());
    if ran.elapsed.as_micros() as u64 >= server.hot.slow_call_us.load(Ordering::Relaxed) {
        slow_call(server, origin, registry().get(id), args, ran.elapsed);
    }
}

#[cold]
fn slow_call(
    server: &Server,
    origin: slowlog::Origin,
    cmd: &Command,
    args: &[&[u8]],
    elapsed: Duration,
) {
    let event = if cmd.has(table::flags::FAST) {
        Event::FastCommand
    } else {
        Event::Command
    };
    server.latency.note(event, elapsed);
    if let Some(call) = slowlog::draft(server, cmd, args, elapsed) {
        slowlog::push(server, origin, call);
    }
}

/// Count a finished call of command `id` (INFO commandstats, latency, totals).
pub fn count_call(
    server: &Server,
    stats: &ThreadStats,
    id: usize,
    elapsed: Duration,
    failed: bool,
) {
    let per = &stats.per_command[id];
    stats.add(&per.calls, 1);
    stats.add(&per.usec, elapsed.as_micros() as u64);
    if server.hot.latency_tracking.load(Ordering::Relaxed) {
        per.record_latency(elapsed);
    }
    stats.add(&stats.commands, 1);
    if failed {
        stats.add(&per.failed_calls, 1);
    }
}

/// Write an error reply and count it in INFO errorstats (by its first word).
pub fn write_error(server: &Server, stats: &ThreadStats, out: &mut ReplyWriter, text: &str) {
    out.error(text);
    count_error_reply(server, stats, text);
}

/// Count an error reply in INFO errorstats (by its first word) and stats.
pub fn count_error_reply(server: &Server, stats: &ThreadStats, text: &str) {
    stats.add(&stats.total_error_replies, 1);
    let prefix = text.split(' ').next().unwrap_or("ERR");
    server.count_error(prefix);
}

/// What a hidden argument reads as.
pub const REDACTED: &[u8] = b"(redacted)";

/// The arguments as MONITOR and SLOWLOG show them: with the secrets the command's
/// entry names hidden (see [`table::Redact`]).
pub fn redacted<'a>(cmd: &Command, args: &[&'a [u8]]) -> Vec<&'a [u8]> {
    let mut shown = args.to_vec();
    if let Some(redact) = cmd.redact {
        redact(&mut shown);
    }
    shown
}
