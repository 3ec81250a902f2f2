//! The graceful shutdown with replicas, as Redis 7.0 runs it: SHUTDOWN and SIGTERM
//! wait up to `shutdown-timeout` for lagging replicas (writes paused, reads still
//! served), SHUTDOWN ABORT cancels the wait, SHUTDOWN NOW skips it, and a replica
//! whose link comes back within the timeout has every write before the master exits.
//! The replica reaches the master through a proxy that can hold the link's bytes, so
//! that it lags for as long as the test wants; it is kvik or Debian's redis-server.
//! Also: the temp files of a save cut short are removed.

mod support;

use std::path::Path;
use std::time::Duration;
use support::{kvik_server_path, redis_server_or_skip, wait_for, ProxiedPair, RawConn, TestServer};

fn field(conn: &mut RawConn, section: &str, name: &str) -> String {
    conn.info_field(section, name)
}

/// A master (kvik) with one replica (`replica_binary`) behind a proxy, in sync.
fn pair(replica_binary: &Path, master_args: &[&str]) -> ProxiedPair {
    let pair = ProxiedPair::start(replica_binary, master_args);
    let mut m = pair.master.raw();
    m.cmd(&["SET", "before", "1"]);
    wait_for("the replica to acknowledge", || {
        m.cmd(&["WAIT", "1", "100"]) == b":1\r\n"
    });
    pair
}

/// Writes the replica will not have while the link is held.
fn write_batch(m: &mut RawConn) {
    for i in 0..200 {
        assert_eq!(m.cmd(&["SET", &format!("k:{i}"), "v"]), b"+OK\r\n");
    }
    m.cmd(&["RPUSH", "list", "a", "b", "c"]);
    m.cmd(&["INCRBY", "counter", "7"]);
}

/// INFO's `shutdown_in_milliseconds` is there only while a shutdown waits.
fn shutdown_waits(m: &mut RawConn) -> bool {
    let info = m.cmd(&["INFO", "server"]);
    String::from_utf8_lossy(&info).contains("shutdown_in_milliseconds:")
}

/// Until the server says a shutdown waits for replicas.
fn wait_for_the_wait(m: &mut RawConn) {
    wait_for("the shutdown to wait for replicas", || shutdown_waits(m));
}

/// SHUTDOWN waits for the stalled replica; meanwhile reads are answered, writes are
/// held and the waiting SHUTDOWN is a blocked client; SHUTDOWN ABORT cancels it: the
/// SHUTDOWN gets Redis's error, the held write runs, the server goes on.
fn abort_cancels_the_wait(replica_binary: &Path) {
    let ProxiedPair {
        master,
        replica: _replica,
        proxy,
    } = pair(replica_binary, &["--shutdown-timeout", "60"]);
    let mut m = master.raw();
    proxy.stall();
    write_batch(&mut m);
    let mut shutting = master.raw();
    shutting.send_cmd(&["SHUTDOWN"]);
    wait_for_the_wait(&mut m);
    assert_eq!(m.cmd(&["GET", "k:1"]), b"$1\r\nv\r\n");
    let mut writer = master.raw();
    writer.send_cmd(&["SET", "during", "1"]);
    wait_for(
        "the paused write and the SHUTDOWN to count as blocked",
        || field(&mut m, "clients", "blocked_clients") == "2",
    );
    assert_eq!(
        m.cmd(&["SHUTDOWN", "ABORT", "NOW"]),
        b"-ERR syntax error\r\n"
    );
    assert_eq!(m.cmd(&["SHUTDOWN", "ABORT"]), b"+OK\r\n");
    assert_eq!(
        shutting.read_reply(),
        b"-ERR Errors trying to SHUTDOWN. Check logs.\r\n"
    );
    assert_eq!(writer.read_reply(), b"+OK\r\n");
    assert!(!shutdown_waits(&mut m));
    assert_eq!(
        m.cmd(&["SHUTDOWN", "ABORT"]),
        b"-ERR No shutdown in progress.\r\n"
    );
    let log = master.stdout();
    assert!(
        log.contains("Waiting for replicas before shutting down."),
        "{log}"
    );
    assert!(log.contains("Shutdown manually aborted."), "{log}");
    proxy.resume();
}

#[test]
fn shutdown_abort_cancels_the_wait_for_a_kvik_replica() {
    abort_cancels_the_wait(&kvik_server_path());
}

#[test]
fn shutdown_abort_cancels_the_wait_for_a_redis_replica() {
    if let Some(redis) = redis_server_or_skip() {
        abort_cancels_the_wait(&redis);
    }
}

/// The link comes back within the timeout: the master exits once the replica has
/// acknowledged everything, and the replica holds the master's dataset.
fn replica_gets_every_write(replica_binary: &Path) {
    let ProxiedPair {
        mut master,
        replica,
        proxy,
    } = pair(replica_binary, &["--shutdown-timeout", "60"]);
    let mut m = master.raw();
    proxy.stall();
    write_batch(&mut m);
    let digest = m.cmd(&["DEBUG", "DIGEST"]);
    let mut shutting = master.raw();
    shutting.send_cmd(&["SHUTDOWN", "NOSAVE"]);
    wait_for_the_wait(&mut m);
    assert!(master.is_running());
    proxy.resume();
    master.assert_exits_within(Duration::from_secs(10));
    assert!(shutting.closed_within(Duration::from_secs(5)));
    let mut r = replica.raw();
    assert_eq!(r.cmd(&["DEBUG", "DIGEST"]), digest);
    assert_eq!(r.cmd(&["GET", "counter"]), b"$1\r\n7\r\n");
    let log = master.stdout();
    assert!(
        log.contains("1 of 1 replicas are in sync when shutting down."),
        "{log}"
    );
}

#[test]
fn a_kvik_replica_gets_every_write_before_the_master_exits() {
    replica_gets_every_write(&kvik_server_path());
}

#[test]
fn a_redis_replica_gets_every_write_before_the_master_exits() {
    if let Some(redis) = redis_server_or_skip() {
        replica_gets_every_write(&redis);
    }
}

#[test]
fn the_timeout_ends_the_wait_and_names_the_lagging_replica() {
    let ProxiedPair {
        mut master,
        replica,
        proxy,
    } = pair(&kvik_server_path(), &["--shutdown-timeout", "1"]);
    let mut m = master.raw();
    proxy.stall();
    write_batch(&mut m);
    let mut shutting = master.raw();
    shutting.send_cmd(&["SHUTDOWN", "NOSAVE"]);
    master.assert_exits_within(Duration::from_secs(10));
    let log = master.stdout();
    let lagging = format!(
        "Lagging replica 127.0.0.1:{} reported offset ",
        replica.port()
    );
    assert!(log.contains(&lagging), "{log}");
    assert!(
        log.contains("0 of 1 replicas are in sync when shutting down."),
        "{log}"
    );
    proxy.resume();
}

#[test]
fn shutdown_now_does_not_wait() {
    let ProxiedPair {
        mut master,
        replica: _replica,
        proxy,
    } = pair(&kvik_server_path(), &["--shutdown-timeout", "60"]);
    let mut m = master.raw();
    proxy.stall();
    write_batch(&mut m);
    m.send_cmd(&["SHUTDOWN", "NOW", "NOSAVE"]);
    master.assert_exits_within(Duration::from_secs(10));
    assert!(!master.stdout().contains("Waiting for replicas"));
    proxy.resume();
}

#[test]
fn sigterm_waits_for_replicas_and_shutdown_abort_cancels_it() {
    let ProxiedPair {
        mut master,
        replica: _replica,
        proxy,
    } = pair(&kvik_server_path(), &["--shutdown-timeout", "60"]);
    let mut m = master.raw();
    proxy.stall();
    write_batch(&mut m);
    // SAFETY: kill() only sends a signal to the child process.
    unsafe {
        libc::kill(master.pid() as libc::pid_t, libc::SIGTERM);
    }
    wait_for_the_wait(&mut m);
    assert_eq!(m.cmd(&["SHUTDOWN", "ABORT"]), b"+OK\r\n");
    assert_eq!(m.cmd(&["SET", "after", "1"]), b"+OK\r\n");
    assert!(master.is_running());
    proxy.resume();
    // The abort forgot the signal: the next one shuts down again.
    // SAFETY: as above.
    unsafe {
        libc::kill(master.pid() as libc::pid_t, libc::SIGTERM);
    }
    master.assert_exits_within(Duration::from_secs(20));
}

/// A background save cut short by SHUTDOWN NOSAVE leaves no temp file behind; nor
/// does a final save cut short by a second SIGINT.
#[test]
fn saves_cut_short_leave_no_temp_files() {
    let temps = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("temp-"))
            .collect()
    };
    let mut server = TestServer::start(&["--enable-debug-command", "yes"]);
    let mut c = server.raw();
    c.cmd(&["DEBUG", "POPULATE", "2000"]);
    c.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "10000"]);
    assert_eq!(c.cmd(&["BGSAVE"]), b"+Background saving started\r\n");
    wait_for("the background save's temp file", || {
        !temps(server.dir()).is_empty()
    });
    c.send_cmd(&["SHUTDOWN", "NOSAVE"]);
    server.assert_exits_within(Duration::from_secs(20));
    assert_eq!(temps(server.dir()), Vec::<String>::new());

    let mut server = TestServer::start(&["--enable-debug-command", "yes", "--save", "3600 1"]);
    let mut c = server.raw();
    c.cmd(&["DEBUG", "POPULATE", "2000"]);
    c.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "10000"]);
    let interrupt = || {
        // SAFETY: kill() only sends a signal to the child process.
        unsafe {
            libc::kill(server.pid() as libc::pid_t, libc::SIGINT);
        }
    };
    interrupt();
    wait_for("the final save's temp file", || {
        !temps(server.dir()).is_empty()
    });
    interrupt();
    server.assert_exits_within(Duration::from_secs(20));
    assert_eq!(temps(server.dir()), Vec::<String>::new());
    assert!(server.stdout().contains("You insist... exiting now."));
}
