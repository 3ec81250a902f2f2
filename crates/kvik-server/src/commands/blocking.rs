//! The command side of blocking: a blocking command that finds nothing waits
//! ([`block`]), and a command that wrote serves the waiters of what it wrote
//! ([`after_write`]). The waiters themselves, and the rules of claiming one, are the
//! blocking engine's ([`crate::blocking`]); this is where a waiter's command is
//! finished under the written key's lock and its reply sent to its thread.

use super::{write_error, CmdError, CmdResult, Ctx};
use crate::blocking::{parse_timeout, Action, Blocked, Waiter};
use crate::client::ClientState;
use crate::keyspace::Locked;
use crate::mailbox::WaitEnd;
use crate::server::Server;
use crate::stats::ThreadStats;
use kvik_resp::ReplyWriter;
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

/// The shape every blocking pop shares: serve at once from the first of `keys`
/// that `first_ready` finds (it reports a key of the wrong type as an error), else
/// wait on them all, or, where the client may not wait, reply with the null array.
pub fn serve_now_or_block<'k, A: Action + 'static>(
    ctx: &mut Ctx,
    keys: &[&'k [u8]],
    deadline: Option<u64>,
    action: A,
    first_ready: impl FnOnce(&mut Locked, &[&'k [u8]]) -> Result<Option<&'k [u8]>, CmdError>,
) -> CmdResult {
    match first_ready(ctx.keys, keys)? {
        Some(key) => {
            let limits = ctx.server.hot.encoding();
            action.serve(&limits, ctx.keys, ctx.out, key)?;
            ctx.propagated = true;
        }
        None if may_block(ctx.client) => block(ctx, keys, deadline, action),
        None => ctx.out.null_array(),
    }
    Ok(())
}

/// `B*POP key [key ...] timeout`: the keys, and the deadline the timeout sets (checked
/// before any key, as Redis does).
pub fn keys_then_timeout<'a>(
    args: &'a [&'a [u8]],
    now_ms: u64,
) -> Result<(&'a [&'a [u8]], Option<u64>), CmdError> {
    let (timeout, keys) = args[1..].split_last().expect("arity checked");
    Ok((keys, parse_timeout(timeout, now_ms)?))
}

/// Block the client running this command on `keys` until one of them is ready for
/// `action`, the deadline passes, or something else ends the wait. Call it from the
/// handler, while the keys are locked, after finding none of them ready.
pub fn block(ctx: &mut Ctx, keys: &[&[u8]], deadline: Option<u64>, action: impl Action + 'static) {
    let waiter = Arc::new(Waiter::new(
        ctx.client.id(),
        (ctx.client.info.worker, ctx.client.info.token),
        ctx.keys.db,
        keys,
        ctx.out.protocol,
        deadline.is_some(),
        Box::new(action),
    ));
    ctx.server.blocking.add(&waiter);
    ctx.client.blocked = Some(Blocked {
        waiter,
        deadline,
        command: 0,
        ran_for: Duration::ZERO,
        slow: None,
        silent: false,
        timer_armed: false,
    });
}

/// May a blocking command wait? Not inside a transaction or a script: there it answers
/// at once as if its timeout had passed.
pub fn may_block(client: &ClientState) -> bool {
    !client.deny_blocking
}

/// Where a command that changed the keyspace may have made keys ready.
pub enum Written<'k> {
    /// At these keys of this database (the keys its key spec names).
    Keys(usize, &'k [&'k [u8]]),
    /// Anywhere: commands whose writes their key spec does not name (EXEC, scripts,
    /// MOVE, COPY, SWAPDB, FLUSHALL). The keys they set or changed, in order, when
    /// someone waited as they started: those are served first, in that order, as
    /// Redis serves the keys in the order they became ready; every other waited key
    /// after them (a key readied by a swapped database, or waited on since).
    Anything(Vec<(usize, Vec<u8>)>),
}

/// After a command that changed the keyspace, once its locks are released: serve the
/// clients waiting on what it wrote. Costs one relaxed load when nobody waits.
pub fn after_write(server: &Server, stats: &ThreadStats, written: Written<'_>) {
    if server.blocking.is_idle() {
        return;
    }
    let work = match written {
        Written::Keys(db, keys) => keys.iter().map(|k| (db, k.to_vec())).collect(),
        Written::Anything(in_order) => {
            let mut seen = HashSet::new();
            in_order
                .into_iter()
                .chain(server.blocking.waited_keys())
                .filter(|key| seen.insert(key.clone()))
                .collect()
        }
    };
    serve(server, stats, work);
}

/// Serve the waiters of each (db, key) in `work`, first come first served, while the
/// key is ready. A served command that writes another key (BLMOVE's destination) adds
/// it to the work, so a chain of waiters is served to its end.
fn serve(server: &Server, stats: &ThreadStats, mut work: VecDeque<(usize, Vec<u8>)>) {
    while let Some((db, key)) = work.pop_front() {
        for waiter in server.blocking.queue(db, &key) {
            match serve_one(server, stats, db, &key, &waiter) {
                Turn::Served(Some(also)) => work.push_back((db, also)),
                Turn::Served(None) | Turn::Skipped => {}
                Turn::Empty => break,
            }
        }
    }
}

/// What came of offering a key to one waiter.
enum Turn {
    /// The waiter got its reply; the other key it wrote, if any.
    Served(Option<Vec<u8>>),
    /// Not this one: it was claimed meanwhile, or wants another type of value.
    Skipped,
    /// The key holds nothing: nobody after this waiter can be served from it either.
    Empty,
}

fn serve_one(
    server: &Server,
    stats: &ThreadStats,
    db: usize,
    key: &[u8],
    waiter: &Arc<Waiter>,
) -> Turn {
    if waiter.is_claimed() {
        return Turn::Skipped;
    }
    let env = server.key_env(stats);
    let also = waiter.action.also_writes();
    let lock_keys: smallvec::SmallVec<[&[u8]; 2]> = std::iter::once(key).chain(also).collect();
    let mut keys = Locked::keys(env, db, crate::hlc::unix_ms(), &lock_keys);
    let value = keys.peek(key).map(|entry| &entry.value);
    if !waiter.action.ready_at(key, value) {
        return if value.is_none() {
            Turn::Empty
        } else {
            Turn::Skipped
        };
    }
    // Under the key's lock: a claim that succeeds here serves data that is there.
    if !waiter.claim() {
        return Turn::Skipped;
    }
    let mut out = ReplyWriter::with_buf(Vec::new(), waiter.protocol);
    let limits = server.hot.encoding();
    let result = waiter.action.serve(&limits, &mut keys, &mut out, key);
    drop(keys);
    server.blocking.retire(waiter);
    let failed = result.is_err();
    if let Err(e) = result {
        out.buf.clear();
        write_error(server, stats, &mut out, &e.0);
    }
    let end = WaitEnd {
        served: true,
        failed,
    };
    server.unblock(waiter, out.buf, end);
    Turn::Served(also.filter(|_| !failed).map(<[u8]>::to_vec))
}
