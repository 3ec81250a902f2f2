//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH, with Redis 7.0's semantics.
//!
//! After MULTI, [`call`](super::call) queues the client's commands ([`queue`]) instead
//! of running them, answering `+QUEUED`; a command refused before it could be queued
//! (unknown, wrong arity, NOAUTH, `no_multi`) marks the transaction, and EXEC then
//! discards it with EXECABORT. EXEC, DISCARD, MULTI, WATCH, QUIT and RESET run at once.
//!
//! EXEC locks, in one go and in ascending order, every shard any queued command needs
//! (the shards of its keys, or whole databases: see [`plan_locks`]) plus the shards of
//! the watched keys; checks the watch; runs each command with
//! [`run_locked`](super::run_locked) under that one `Locked`; appends their effects
//! as one MULTI ... EXEC group while the locks are still held; then releases them and
//! serves the clients blocked on what it wrote. No other thread sees half of a
//! transaction, and none of its commands sees another thread's write.
//!
//! WATCH registers a [`Watching`] observer on each key with the keyspace's "key
//! modified" signal; any write to one of them, from any thread, raises the client's
//! flag, and EXEC, holding the keys' locks, fails if the flag is up or a watched key
//! has expired since. FLUSHDB, FLUSHALL and SWAPDB signal the watched keys they change
//! as Redis 7.0 does (the keys that existed, or that the swap brings in).

use super::table::{acl, flags, Command, Lock};
use super::{plan_locks, run_locked, CmdError, CmdResult, Ctx};
use crate::client::{ClientState, Transaction, Watching};
use crate::keyspace::Locked;
use crate::server::Server;
use kvik_resp::ReplyWriter;

/// Flags of the commands that manage transactions: usable while loading or stale,
/// never from a script.
const CONTROL: u32 = flags::NOSCRIPT | flags::LOADING | flags::STALE;
const QUICK: u32 = CONTROL | flags::FAST | flags::ALLOW_BUSY;

pub const COMMANDS: &[Command] = &[
    Command::new("multi", 1, multi)
        .flags(QUICK | flags::NOT_QUEUED)
        .acl(acl::FAST | acl::TRANSACTION)
        .doc(
            "transactions",
            "1.2.0",
            "O(1)",
            "Mark the start of a transaction block",
        ),
    Command::new("exec", 1, exec)
        .flags(
            CONTROL
                | flags::SKIP_SLOWLOG
                | flags::NOT_QUEUED
                | flags::ENDS_MULTI
                | flags::RUNS_QUEUED,
        )
        .acl(acl::SLOW | acl::TRANSACTION)
        .lock(Lock::Handler)
        .doc(
            "transactions",
            "1.2.0",
            "Depends on commands in the transaction",
            "Execute all commands issued after MULTI",
        ),
    Command::new("discard", 1, discard)
        .flags(QUICK | flags::NOT_QUEUED | flags::ENDS_MULTI)
        .acl(acl::FAST | acl::TRANSACTION)
        .doc(
            "transactions",
            "2.0.0",
            "O(N), when N is the number of queued commands",
            "Discard all commands issued after MULTI",
        ),
    Command::new("watch", -2, watch)
        .flags(QUICK | flags::NOT_QUEUED)
        .acl(acl::FAST | acl::TRANSACTION)
        .keys(1, -1, 1)
        .key_flags(super::table::key_flags::RO)
        .doc(
            "transactions",
            "2.2.0",
            "O(1) for every key.",
            "Watch the given keys to determine execution of the MULTI/EXEC block",
        ),
    Command::new("unwatch", 1, unwatch)
        .flags(QUICK)
        .acl(acl::FAST | acl::TRANSACTION)
        .doc(
            "transactions",
            "2.2.0",
            "O(1)",
            "Forget about all watched keys",
        ),
];

const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

/// Inside MULTI: queue a command that passed the checks of `call`, or refuse it.
pub fn queue(
    server: &Server,
    client: &mut ClientState,
    out: &mut ReplyWriter,
    cmd: &Command,
    args: &[&[u8]],
    id: usize,
) -> CmdResult {
    if cmd.has(flags::NO_MULTI) {
        abort_queuing(client);
        return Err("ERR Command not allowed inside a transaction".into());
    }
    client.last_command = cmd.name;
    let doomed = watch_broken(client.watching.as_ref());
    let grows = super::may_grow_memory(server, client, cmd, args);
    let tx = client.multi.as_mut().expect("queue is called inside MULTI");
    tx.grows_memory |= grows;
    tx.writes |= cmd.has(flags::WRITE);
    tx.may_replicate |= super::may_replicate(server, cmd, args);
    // A transaction that will be discarded keeps nothing (Redis answers QUEUED all
    // the same).
    if !tx.aborted && !doomed {
        tx.push(id, args);
        publish(client);
    }
    out.simple("QUEUED");
    Ok(())
}

/// The reply to a command `call` refused before running or queuing it (`cmd` when
/// it was found). Inside MULTI the transaction is marked, so EXEC will answer
/// EXECABORT; EXEC itself refused (inside MULTI or not) discards the transaction and
/// the watched keys and says why, as Redis's `rejectCommand` does.
pub fn refused(client: &mut ClientState, cmd: Option<&Command>, error: CmdError) -> CmdError {
    if cmd.is_none_or(|c| !c.has(flags::RUNS_QUEUED)) {
        abort_queuing(client);
        return error;
    }
    discard_state(client);
    let why = error.0.strip_prefix("ERR ").unwrap_or(&error.0);
    format!("EXECABORT Transaction discarded because of: {why}").into()
}

/// A command was refused while queuing: EXEC will answer EXECABORT.
fn abort_queuing(client: &mut ClientState) {
    if let Some(tx) = client.multi.as_mut() {
        tx.aborted = true;
    }
}

/// Leave MULTI and forget the watched keys (DISCARD, RESET, a finished EXEC).
pub fn discard_state(client: &mut ClientState) {
    client.multi = None;
    client.watching = None;
    publish(client);
}

/// Show the transaction state in CLIENT LIST at once.
fn publish(client: &ClientState) {
    client.info.snapshot.lock().multi = client.multi.as_ref().map(Transaction::usage);
}

fn multi(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    if ctx.client.multi.is_some() {
        return Err("ERR MULTI calls can not be nested".into());
    }
    ctx.client.multi = Some(Transaction::default());
    publish(ctx.client);
    ctx.out.ok();
    Ok(())
}

fn discard(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    if ctx.client.multi.is_none() {
        return Err("ERR DISCARD without MULTI".into());
    }
    discard_state(ctx.client);
    ctx.out.ok();
    Ok(())
}

fn exec(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let Some(tx) = ctx.client.multi.take() else {
        return Err("ERR EXEC without MULTI".into());
    };
    let watching = ctx.client.watching.take();
    publish(ctx.client);
    if tx.aborted {
        return Err(EXECABORT.into());
    }
    let mut locked = lock_everything(ctx, &tx, watching.as_ref());
    if watching.is_some_and(|w| w.broken(&mut locked)) {
        ctx.out.null_array();
        return Ok(());
    }
    locked.begin_effect_group();
    ctx.client.deny_blocking = true;
    let changes = run_queued(ctx, &tx, &mut locked);
    ctx.client.deny_blocking = false;
    locked.finish_effect_group();
    ctx.keys.absorb_written(&mut locked);
    drop(locked);
    // `call` counts the changes and serves the clients blocked on what was written,
    // now that the locks are gone; the effects are appended already.
    ctx.extra_dirty += changes;
    ctx.propagated = true;
    Ok(())
}

/// Lock, in one go, every shard the queued commands need and the watched keys'.
fn lock_everything<'a>(
    ctx: &Ctx<'_, 'a>,
    tx: &Transaction,
    watching: Option<&Watching>,
) -> Locked<'a> {
    let server = ctx.server;
    let ks = &server.keyspace;
    let mut ids = Vec::new();
    let mut db = ctx.client.db;
    for queued in &tx.queued {
        let args: Vec<&[u8]> = queued.args.iter().map(Vec::as_slice).collect();
        db = plan_locks(
            server,
            super::registry().get(queued.id),
            &args,
            db,
            &mut ids,
        );
    }
    if let Some(w) = watching {
        ids.extend(w.keys().iter().map(|(db, key)| ks.shard_id_of(*db, key)));
    }
    let mut locked = Locked::shard_ids(ctx.key_env(), ctx.client.db, ctx.keys.now_ms, &ids);
    locked.touch = !ctx.client.no_touch;
    locked.keep_written_like(ctx.keys);
    locked
}

/// Run the queued commands under `locked`, each reply (or error) an element of the
/// EXEC array. Returns the changes they made.
fn run_queued<'a>(ctx: &mut Ctx<'_, 'a>, tx: &Transaction, locked: &mut Locked<'a>) -> u64 {
    let (server, stats) = (ctx.server, ctx.stats);
    let now = ctx.keys.now_ms;
    ctx.out.array(tx.queued.len());
    let mut changes = 0;
    for queued in &tx.queued {
        let args: Vec<&[u8]> = queued.args.iter().map(Vec::as_slice).collect();
        // SELECT inside the transaction moves the commands after it.
        locked.db = ctx.client.db;
        // Permissions may have changed since the command was queued, as Redis
        // checks again here.
        if !ctx.client.acl.is_unrestricted(&server.acl) {
            let context = crate::acl::Context::Multi;
            if let Err(denied) =
                super::acl::check_restricted(server, ctx.client, queued.id, &args, context)
            {
                let text = super::acl::exec_refusal_text(denied);
                super::write_error(server, stats, ctx.out, &text);
                continue;
            }
        }
        locked.begin_command(now);
        let ran = crate::keyspace::replaying_removal(&queued.removal_seen, || {
            run_locked(server, stats, ctx.client, ctx.out, &args, queued.id, locked)
        });
        changes += ran.changes;
        let origin = super::slowlog::Origin::Client(ctx.client);
        super::finish_call(server, stats, origin, queued.id, &args, &ran);
        if let Err(e) = ran.result {
            super::write_error(server, stats, ctx.out, &e.0);
        }
    }
    changes
}

/// WATCH key [key ...]: `call` holds the keys' shards, so no write can slip between
/// looking at them and registering.
fn watch(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if ctx.client.multi.is_some() {
        return Err("ERR WATCH inside MULTI is not allowed".into());
    }
    let db = ctx.client.db;
    let observers = &ctx.server.keyspace.observers;
    let watching = ctx
        .client
        .watching
        .get_or_insert_with(|| Watching::new(observers.clone()));
    for key in &args[1..] {
        if watching.keys().iter().any(|(d, k)| *d == db && k == key) {
            continue;
        }
        // A key whose time is up goes now: its expiry is not a change to watch for.
        ctx.keys.exists(key);
        watching.add(db, key);
    }
    ctx.out.ok();
    Ok(())
}

fn unwatch(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.client.watching = None;
    ctx.out.ok();
    Ok(())
}

/// Has a watched key changed already (no use queuing more)?
fn watch_broken(watching: Option<&Watching>) -> bool {
    watching.is_some_and(Watching::written)
}
