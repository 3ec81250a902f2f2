//! KeyDB's scheduled scripts (KEYDB.CRON): single and repeating runs, DEL cancels a
//! job, jobs survive DEBUG RELOAD and a restart (single-shot ones stay single-shot),
//! KeyDB's errors, and a replica holds the job without running it itself: the
//! master's runs reach it as writes.

mod support;

use std::time::Duration;
use support::{wait_for, RawConn, TestServer};

const DEBUG: [&str; 2] = ["--enable-debug-command", "yes"];
/// Ticks every 10 ms, as KeyDB's own tests run their cron jobs.
const HZ: [&str; 2] = ["--hz", "100"];

fn text(reply: Vec<u8>) -> String {
    String::from_utf8_lossy(&reply).into_owned()
}

fn counter(c: &mut RawConn, key: &str) -> i64 {
    let reply = text(c.cmd(&["GET", key]));
    reply
        .lines()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

const INCR: &str = "redis.call('incr', KEYS[1])";

#[test]
fn a_single_job_runs_once_and_its_key_goes() {
    let server = TestServer::start(&HZ);
    let mut c = server.raw();
    assert_eq!(
        c.cmd(&["KEYDB.CRON", "job", "single", "300", INCR, "1", "n"]),
        b"+OK\r\n"
    );
    assert_eq!(c.cmd(&["TYPE", "job"]), b"+cron\r\n");
    assert_eq!(c.cmd(&["EXISTS", "n"]), b":0\r\n", "not before its time");
    wait_for("the job to run", || counter(&mut c, "n") == 1);
    wait_for("the job's key to go", || {
        c.cmd(&["EXISTS", "job"]) == b":0\r\n"
    });
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(counter(&mut c, "n"), 1, "a single job runs once");
}

#[test]
fn a_repeating_job_runs_until_deleted() {
    let server = TestServer::start(&HZ);
    let mut c = server.raw();
    // Start in the past: the first run is due at once, the next ones every 100 ms.
    c.cmd(&["KEYDB.CRON", "job", "repeat", "0", "100", INCR, "1", "n"]);
    wait_for("three runs", || counter(&mut c, "n") >= 3);
    assert_eq!(c.cmd(&["DEL", "job"]), b":1\r\n");
    let stopped = counter(&mut c, "n");
    std::thread::sleep(Duration::from_millis(400));
    // A run under way when DEL came may still land, none after it.
    assert!(counter(&mut c, "n") <= stopped + 1);
    let settled = counter(&mut c, "n");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(counter(&mut c, "n"), settled, "DEL cancels the job");
}

#[test]
fn a_job_far_in_the_past_runs_once_then_waits_for_its_next_interval() {
    let server = TestServer::start(&HZ);
    let mut c = server.raw();
    c.cmd(&[
        "KEYDB.CRON",
        "job",
        "repeat",
        "0",
        "1000000",
        INCR,
        "1",
        "n",
    ]);
    wait_for("the run", || counter(&mut c, "n") == 1);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(counter(&mut c, "n"), 1);
    assert_eq!(c.cmd(&["EXISTS", "job"]), b":1\r\n");
}

#[test]
fn arguments_and_keys_reach_the_script() {
    let server = TestServer::start(&HZ);
    let mut c = server.raw();
    let script = "redis.call('set', KEYS[1], ARGV[1] .. ARGV[2])";
    c.cmd(&["SELECT", "3"]);
    c.cmd(&[
        "KEYDB.CRON",
        "job",
        "single",
        "1",
        script,
        "1",
        "k",
        "a",
        "b",
    ]);
    wait_for("the run", || c.cmd(&["GET", "k"]) == b"$2\r\nab\r\n");
    // The job's database is the one it was set in.
    c.cmd(&["SELECT", "0"]);
    assert_eq!(c.cmd(&["EXISTS", "k"]), b":0\r\n");
}

#[test]
fn bad_arguments_get_keydbs_errors() {
    let server = TestServer::start(&[]);
    let mut c = server.raw();
    let cases: [(&[&str], &str); 4] = [
        (&["j", "sometimes", "10", INCR], "-ERR syntax error\r\n"),
        (
            &["j", "single", "soon", INCR],
            "-ERR missing expire time\r\n",
        ),
        (
            &["j", "single", "0", "0", INCR],
            "-ERR interval must be positive\r\n",
        ),
        (
            &["j", "single", "10", INCR, "3", "k"],
            "-ERR Missing arguments or numkeys is too big\r\n",
        ),
    ];
    for (args, want) in cases {
        let mut argv = vec!["KEYDB.CRON"];
        argv.extend_from_slice(args);
        assert_eq!(text(c.cmd(&argv)), want, "{args:?}");
    }
    assert_eq!(c.cmd(&["EXISTS", "j"]), b":0\r\n");
    c.cmd(&["KEYDB.CRON", "j", "single", "100000", INCR]);
    assert_eq!(
        text(c.cmd(&["GET", "j"])),
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    );
}

#[test]
fn jobs_survive_debug_reload_and_a_restart() {
    let dir = support::scratch_dir("keydb-cron-restart");
    let dir_arg = dir.to_str().unwrap();
    let mut first = TestServer::start(&[DEBUG[0], DEBUG[1], HZ[0], HZ[1], "--dir", dir_arg]);
    let mut c = first.raw();
    c.cmd(&["KEYDB.CRON", "again", "repeat", "100", INCR, "1", "r"]);
    c.cmd(&["KEYDB.CRON", "once", "single", "2000", INCR, "1", "s"]);
    assert_eq!(c.cmd(&["DEBUG", "RELOAD"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["TYPE", "again"]), b"+cron\r\n");
    assert_eq!(c.cmd(&["TYPE", "once"]), b"+cron\r\n");
    wait_for("runs after the reload", || counter(&mut c, "r") >= 2);
    c.cmd(&["SAVE"]);
    c.send_cmd(&["SHUTDOWN", "NOSAVE"]);
    first.assert_exits_within(Duration::from_secs(30));

    let second = TestServer::start(&[HZ[0], HZ[1], "--dir", dir_arg]);
    let mut c = second.raw();
    let before = counter(&mut c, "r");
    wait_for("runs after the restart", || {
        counter(&mut c, "r") >= before + 2
    });
    // The single-shot job stayed single-shot: it runs once and goes.
    wait_for("the single job's run", || counter(&mut c, "s") == 1);
    wait_for("the single job to go", || {
        c.cmd(&["EXISTS", "once"]) == b":0\r\n"
    });
}

#[test]
fn a_replica_holds_the_job_and_applies_the_masters_runs() {
    let master = TestServer::start(&HZ);
    let mut m = master.raw();
    let port = master.port().to_string();
    let replica = TestServer::start(&[HZ[0], HZ[1], "--replicaof", "127.0.0.1", &port]);
    let mut r = replica.raw();
    wait_for("the link", || {
        r.info_field("replication", "master_link_status") == "up"
    });
    // The script counts the runs in a key of its own and in a key that tells which
    // node ran it: run_id differs between the two servers.
    let script = "redis.call('incr', KEYS[1]); \
                  redis.call('rpush', KEYS[2], redis.call('info', 'server'):match('run_id:(%w+)'))";
    m.cmd(&[
        "KEYDB.CRON",
        "job",
        "repeat",
        "0",
        "100",
        script,
        "2",
        "n",
        "who",
    ]);
    wait_for("three runs on the master", || counter(&mut m, "n") >= 3);
    m.cmd(&["DEL", "job"]);
    wait_for("the replica to catch up", || {
        let mo = m.info_field("replication", "master_repl_offset");
        r.info_field("replication", "slave_repl_offset") == mo
    });
    assert_eq!(counter(&mut r, "n"), counter(&mut m, "n"));
    let master_id = m.info_field("server", "run_id");
    let runners = text(r.cmd(&["LRANGE", "who", "0", "-1"]));
    let ran: Vec<&str> = runners
        .lines()
        .filter(|l| !l.starts_with(['*', '$']))
        .collect();
    assert!(!ran.is_empty());
    assert!(ran.iter().all(|id| *id == master_id), "{runners}");
}

#[test]
fn a_replica_does_not_run_a_job_itself() {
    let master = TestServer::start(&[DEBUG[0], DEBUG[1], HZ[0], HZ[1]]);
    let mut m = master.raw();
    let port = master.port().to_string();
    let replica = TestServer::start(&[HZ[0], HZ[1], "--replicaof", "127.0.0.1", &port]);
    let mut r = replica.raw();
    wait_for("the link", || {
        r.info_field("replication", "master_link_status") == "up"
    });
    // The master's periodic work is paused: only a replica running the job itself
    // could make the key appear once it is due.
    // A writable replica: it is the role, not READONLY, that keeps it from running.
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "replica-read-only", "no"]),
        b"+OK\r\n"
    );
    assert_eq!(m.cmd(&["DEBUG", "PAUSE-CRON", "1"]), b"+OK\r\n");
    m.cmd(&["KEYDB.CRON", "job", "single", "200", INCR, "1", "n"]);
    wait_for("the job on the replica", || {
        r.cmd(&["TYPE", "job"]) == b"+cron\r\n"
    });
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(
        r.cmd(&["EXISTS", "n"]),
        b":0\r\n",
        "the replica ran the job"
    );
    assert_eq!(r.cmd(&["TYPE", "job"]), b"+cron\r\n");
    // Promoted, the former replica runs it.
    assert_eq!(r.cmd(&["REPLICAOF", "NO", "ONE"]), b"+OK\r\n");
    wait_for("the promoted node's run", || counter(&mut r, "n") == 1);
}

/// The run ids in a list the job's script fills, one per run.
fn runners(c: &mut RawConn) -> Vec<String> {
    text(c.cmd(&["LRANGE", "who", "0", "-1"]))
        .lines()
        .filter(|l| !l.starts_with(['*', '$']))
        .map(str::to_owned)
        .collect()
}

#[test]
fn an_active_pair_runs_a_job_once_and_takes_over_one_its_owner_let_lapse() {
    let active = [HZ[0], HZ[1], "--active-replica", "yes"];
    let a = TestServer::start(&active);
    let b = TestServer::start(&active);
    let (mut ca, mut cb) = (a.raw(), b.raw());
    let (pa, pb) = (a.port().to_string(), b.port().to_string());
    assert_eq!(ca.cmd(&["REPLICAOF", "127.0.0.1", &pb]), b"+OK\r\n");
    assert_eq!(cb.cmd(&["REPLICAOF", "127.0.0.1", &pa]), b"+OK\r\n");
    for c in [&mut ca, &mut cb] {
        wait_for("the link", || {
            c.info_field("replication", "master_link_status") == "up"
        });
    }
    let script = "redis.call('rpush', KEYS[1], redis.call('info', 'server'):match('run_id:(%w+)'))";
    ca.cmd(&[
        "KEYDB.CRON",
        "job",
        "repeat",
        "0",
        "100",
        script,
        "1",
        "who",
    ]);
    wait_for("five runs, seen on B", || runners(&mut cb).len() >= 5);
    let (id_a, id_b) = (
        ca.info_field("server", "run_id"),
        cb.info_field("server", "run_id"),
    );
    assert!(
        runners(&mut cb).iter().all(|id| *id == id_a),
        "only the node that set the job runs it"
    );
    // A goes down for good: B takes the job over once A has let it lapse.
    drop(ca);
    drop(a);
    wait_for("B's runs", || runners(&mut cb).contains(&id_b));
    let taken = runners(&mut cb).len();
    wait_for("B to go on running it", || {
        runners(&mut cb).len() >= taken + 3
    });
}

#[test]
fn rename_takes_the_job_along() {
    let server = TestServer::start(&HZ);
    let mut c = server.raw();
    c.cmd(&["KEYDB.CRON", "old", "repeat", "0", "100", INCR, "1", "n"]);
    assert_eq!(c.cmd(&["RENAME", "old", "new"]), b"+OK\r\n");
    let before = counter(&mut c, "n");
    wait_for("runs under the new name", || {
        counter(&mut c, "n") >= before + 2
    });
    c.cmd(&["DEL", "new"]);
}

#[test]
fn an_aof_rewritten_as_commands_keeps_the_job() {
    let dir = support::scratch_dir("keydb-cron-aof");
    let dir_arg = dir.to_str().unwrap();
    let aof = [
        "--appendonly",
        "yes",
        "--aof-use-rdb-preamble",
        "no",
        "--dir",
        dir_arg,
    ];
    let mut first = TestServer::start(&[&HZ[..], &aof[..]].concat());
    let mut c = first.raw();
    c.cmd(&["KEYDB.CRON", "once", "single", "3000", INCR, "1", "s"]);
    c.cmd(&["BGREWRITEAOF"]);
    wait_for("the rewrite", || {
        c.info_field("persistence", "aof_rewrite_in_progress") == "0"
            && c.info_field("persistence", "aof_rewrites") == "1"
    });
    c.send_cmd(&["SHUTDOWN", "NOSAVE"]);
    first.assert_exits_within(Duration::from_secs(30));
    let second = TestServer::start(&[&HZ[..], &aof[..]].concat());
    let mut c = second.raw();
    assert_eq!(c.cmd(&["TYPE", "once"]), b"+cron\r\n");
    wait_for("the single run", || counter(&mut c, "s") == 1);
    wait_for("the job to go", || c.cmd(&["EXISTS", "once"]) == b":0\r\n");
}

#[test]
fn no_run_while_clients_are_paused() {
    let server = TestServer::start(&HZ);
    let mut c = server.raw();
    c.cmd(&["KEYDB.CRON", "job", "single", "100", INCR, "1", "n"]);
    assert_eq!(c.cmd(&["CLIENT", "PAUSE", "1000", "WRITE"]), b"+OK\r\n");
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(c.cmd(&["EXISTS", "n"]), b":0\r\n", "a run during the pause");
    wait_for("the run after the pause", || counter(&mut c, "n") == 1);
}
