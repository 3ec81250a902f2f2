//! KeyDB's scheduled scripts: `KEYDB.CRON name single|repeat [start-ms] delay-ms
//! script [numkeys key... arg...]` stores the job as the value of `name` (TYPE
//! `cron`), so it persists, replicates and goes away with DEL; [`run_due`] runs the
//! jobs whose time has come.
//!
//! A job runs where its writes are born (and not while CLIENT PAUSE holds writes):
//! on a master (a server that is nobody's
//! replica), never on a plain replica, which applies the master's effects of each run
//! as it applies any write; on an active replica only the jobs whose last write was
//! its own (the node that set the job, or ran it last), so a mesh runs each job once.
//! A job its node let lapse (that node is down, or restarted under a new tag) is
//! taken over: past [`TAKEOVER_GRACE_MS`] overdue plus a wait of each node's own
//! ([`TAKEOVER_STAGGER_MS`] times its tag), the first node whose wait ends runs it,
//! and that run, a write of its own, makes the job its own.
//! A run is one transaction from the server's own client: the script (as EVAL), then
//! the job set again one interval on (a repeating job) or deleted (a single-shot
//! one), so replicas, the AOF and the next run all see the same schedule. The job's
//! key is watched: a job deleted or replaced while its run was being prepared does
//! not run.
//!
//! The job propagates as `KEYDB.CRON name mode start interval script numkeys ...`
//! with its start spelled out, so every copy keeps the same schedule.

use super::super::{args, call, errors, CmdError, CmdResult, Ctx};
use crate::client::{ClientInfo, ClientState};
use crate::keyspace::Locked;
use crate::server::Server;
use crate::stats::ThreadStats;
use crate::types::cron::CronJob;
use crate::types::Value;
use kvik_resp::ReplyWriter;
use std::sync::Arc;

/// `KEYDB.CRON`: store the job, replacing whatever `name` held (its TTL included).
pub(super) fn keydb_cron(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let job = parse(args, ctx.keys.now_ms)?;
    let name = args[1];
    let argv = job.command(name);
    ctx.keys.set(name, Value::Cron(Box::new(job)), 0);
    let argv: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
    ctx.propagate(&argv);
    ctx.out.ok();
    Ok(())
}

/// KeyDB's reading of the arguments: one number is the delay (counted from now),
/// two are the start and the delay; `numkeys` and what follows may be left out.
fn parse(args: &[&[u8]], now_ms: u64) -> Result<CronJob, CmdError> {
    let single = if args::is(args[2], "single") {
        true
    } else if args::is(args[2], "repeat") {
        false
    } else {
        return Err(errors::SYNTAX.into());
    };
    let first = args::int(args[3]).map_err(|_| CmdError::from("ERR missing expire time"))?;
    let (start, interval, script_at) = match args.get(4).map(|a| args::int(a)) {
        Some(Ok(interval)) => (first, interval, 5),
        _ => (now_ms as i64, first, 4),
    };
    if interval <= 0 {
        return Err("ERR interval must be positive".into());
    }
    if start < 0 {
        return Err("ERR value is out of range, must be positive".into());
    }
    let script = args.get(script_at).ok_or(CmdError::from(errors::SYNTAX))?;
    let keys_at = script_at + 2;
    let numkeys = match args.get(script_at + 1) {
        None => 0,
        Some(n) => args::int(n)?,
    };
    let too_many = || CmdError::from("ERR Missing arguments or numkeys is too big");
    let numkeys = usize::try_from(numkeys).map_err(|_| too_many())?;
    if numkeys > args.len().saturating_sub(keys_at) {
        return Err(too_many());
    }
    let owned = |s: &[&[u8]]| s.iter().map(|a| a.to_vec()).collect();
    Ok(CronJob {
        script: script.to_vec(),
        start_ms: start as u64,
        interval_ms: interval as u64,
        keys: owned(args.get(keys_at..keys_at + numkeys).unwrap_or_default()),
        args: owned(args.get(keys_at + numkeys..).unwrap_or_default()),
        single,
    })
}

/// What a job's key holds now.
enum Due {
    /// No job any more (deleted, flushed, overwritten).
    Gone,
    /// A job, not due yet or not this node's to run.
    NotYet,
    Now(CronJob),
}

/// How long past its time a job of another active node waits before any node
/// takes it over: long enough that a live owner has run it (and its rewrite has
/// arrived) many times over.
const TAKEOVER_GRACE_MS: u64 = 2_000;

/// Each node waits this long times its tag (0..1024) on top of the grace, so the
/// nodes left do not take a lapsed job over at once: the one with the lowest tag
/// runs it, and its rewrite reaches the others before their turn.
const TAKEOVER_STAGGER_MS: u64 = 2;

/// Run the jobs whose time has come (a worker's periodic tick calls this).
pub fn run_due(server: &Server, stats: &ThreadStats) {
    let repl = &server.replication;
    // A run is a write: none while a replica, while loading, or while CLIENT PAUSE
    // keeps the dataset still (the job runs once the pause ends).
    let paused = server.pause.is_active();
    if (repl.is_replica() && !repl.is_active()) || server.loading.is_active() || paused {
        return;
    }
    let candidates = server.keyspace.crons.candidates();
    for (db, name) in candidates {
        let now = crate::hlc::unix_ms();
        match due(server, stats, db, &name, now) {
            Due::Gone => server.keyspace.crons.forget(db, &name),
            Due::NotYet => {}
            Due::Now(_) => run(server, stats, db, &name),
        }
    }
}

fn due(server: &Server, stats: &ThreadStats, db: usize, name: &[u8], now: u64) -> Due {
    let locked = Locked::keys(server.key_env(stats), db, now, &[name]);
    let Some(entry) = locked.get_shared(name) else {
        return Due::Gone;
    };
    let Value::Cron(job) = &entry.value else {
        return Due::Gone;
    };
    let ours = !server.replication.is_active() || crate::hlc::issued_here(entry.ts);
    if (ours && job.next_run_ms() <= now) || lapsed(job, entry.ts, now) {
        Due::Now((**job).clone())
    } else {
        Due::NotYet
    }
}

/// Has the node that owns `job` (last written at `written`) let it lapse long
/// enough for this one to take it over? Counted from its run's time, or from its
/// last write when that came later (a job set with a start long past is due at
/// once, and its owner is about to run it).
fn lapsed(job: &CronJob, written: u64, now: u64) -> bool {
    let wait = TAKEOVER_GRACE_MS + crate::hlc::own_tag() * TAKEOVER_STAGGER_MS;
    let due = job.next_run_ms().max(crate::hlc::physical_ms(written));
    due.saturating_add(wait) <= now
}

/// One run, as a transaction of the server's own client in the job's database.
fn run(server: &Server, stats: &ThreadStats, db: usize, name: &[u8]) {
    let info = Arc::new(ClientInfo::without_socket(
        u64::MAX,
        String::new(),
        Default::default(),
    ));
    let mut client = ClientState::new(info, true);
    client.db = db;
    let mut out = ReplyWriter::default();
    let mut send = |client: &mut ClientState, argv: &[&[u8]]| {
        call(server, stats, client, &mut out, argv, crate::hlc::unix_ms());
    };
    send(&mut client, &[b"WATCH", name]);
    // Read again under the watch: what runs is what the key holds now.
    let now = crate::hlc::unix_ms();
    let Due::Now(job) = due(server, stats, db, name, now) else {
        return;
    };
    let numkeys = job.keys.len().to_string();
    let mut eval: Vec<&[u8]> = vec![b"EVAL", &job.script, numkeys.as_bytes()];
    eval.extend(job.keys.iter().map(Vec::as_slice));
    eval.extend(job.args.iter().map(Vec::as_slice));
    let after = if job.single {
        vec![b"DEL".to_vec(), name.to_vec()]
    } else {
        let next = CronJob {
            start_ms: job.start_after_run(now),
            ..job.clone()
        };
        next.command(name)
    };
    let after: Vec<&[u8]> = after.iter().map(Vec::as_slice).collect();
    send(&mut client, &[b"MULTI"]);
    send(&mut client, &eval);
    send(&mut client, &after);
    send(&mut client, &[b"EXEC"]);
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn args(line: &str) -> Vec<&[u8]> {
        line.split(' ').map(str::as_bytes).collect()
    }

    #[test]
    fn one_number_is_the_delay_two_are_start_and_delay() {
        let job = parse(&args("KEYDB.CRON j single 500 s 1 k a"), 1000).unwrap();
        assert_eq!(
            (job.start_ms, job.interval_ms, job.single),
            (1000, 500, true)
        );
        assert_eq!((job.keys.len(), job.args.len()), (1, 1));
        let job = parse(&args("KEYDB.CRON j repeat 0 600 s"), 1000).unwrap();
        assert_eq!((job.start_ms, job.interval_ms, job.single), (0, 600, false));
        assert!(job.keys.is_empty() && job.args.is_empty());
    }

    #[test]
    fn bad_arguments_get_keydbs_errors() {
        let err = |line| parse(&args(line), 0).unwrap_err().0.into_owned();
        assert_eq!(err("KEYDB.CRON j often 1 s"), "ERR syntax error");
        assert_eq!(err("KEYDB.CRON j single x s"), "ERR missing expire time");
        assert_eq!(
            err("KEYDB.CRON j single 0 0 s"),
            "ERR interval must be positive"
        );
        assert_eq!(
            err("KEYDB.CRON j single 10 s 2 k"),
            "ERR Missing arguments or numkeys is too big"
        );
        assert_eq!(err("KEYDB.CRON j single 1 2"), "ERR syntax error");
    }
}
