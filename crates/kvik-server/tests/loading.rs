//! While the dataset loads (an RDB or an AOF at start-up, DEBUG RELOAD), kvik
//! accepts connections as redis-server does: commands not flagged `loading` get
//! `-LOADING`, INFO persistence shows `loading:1` and the loading_* fields moving,
//! and the data is all there once `loading:0`. `key-load-delay` and
//! `loading-process-events-interval-bytes` make the load slow enough to watch.

mod support;

use std::path::Path;
use support::{wait_for, RawConn, TestServer};

const LOADING: &[u8] = b"-LOADING Redis is loading the dataset in memory\r\n";
const KEYS: usize = 20_000;

fn text(reply: &[u8]) -> String {
    String::from_utf8_lossy(reply).into_owned()
}

/// The value of `name` in an INFO reply.
fn field(info: &str, name: &str) -> Option<String> {
    let prefix = format!("{name}:");
    info.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(str::to_string)
}

/// A directory holding a dump.rdb of `KEYS` keys written by kvik.
fn directory_with_dataset(extra: &[&str]) -> (tempdir::Dir, u64) {
    let mut args = vec!["--enable-debug-command", "yes"];
    args.extend_from_slice(extra);
    let writer = TestServer::start(&args);
    let mut conn = writer.raw();
    let count = KEYS.to_string();
    assert_eq!(
        conn.cmd(&["DEBUG", "POPULATE", &count, "key", "20"]),
        b"+OK\r\n"
    );
    let dir = tempdir::Dir::new();
    if extra.is_empty() {
        assert_eq!(conn.cmd(&["SAVE"]), b"+OK\r\n");
        std::fs::copy(writer.dir().join("dump.rdb"), dir.path().join("dump.rdb")).unwrap();
    } else {
        assert_eq!(conn.cmd(&["BGREWRITEAOF"]).first(), Some(&b'+'));
        wait_for("the rewrite", || {
            conn.info_field("persistence", "aof_rewrite_in_progress") == "0"
        });
        copy_dir(
            &writer.dir().join("appendonlydir"),
            &dir.path().join("appendonlydir"),
        );
    }
    let size = du(dir.path());
    (dir, size)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// Bytes of the files under `dir` (its data files, as the loader measures them).
fn du(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            if p.is_dir() {
                du(&p)
            } else if p.extension().is_some_and(|e| e == "manifest") {
                0
            } else {
                std::fs::metadata(&p).unwrap().len()
            }
        })
        .sum()
}

/// Watch a load from a client: -LOADING for data commands, INFO's loading fields
/// moving forward, then every key there.
fn watch_the_load(server: &TestServer, total_bytes: u64) {
    let mut conn = RawConn::connect(&server.addr());
    assert_eq!(conn.cmd(&["GET", "key:1"]), LOADING);
    assert_eq!(conn.cmd(&["DBSIZE"]), LOADING);
    assert_eq!(
        conn.cmd(&["PING"]),
        LOADING,
        "PING is refused too, as in Redis"
    );
    assert_eq!(conn.cmd(&["SELECT", "0"]), b"+OK\r\n");
    // The size is known once the file is opened, a moment after the server began
    // answering.
    let mut info = String::new();
    wait_for("the load to measure its files", || {
        info = text(&conn.cmd(&["INFO", "persistence"]));
        field(&info, "loading_total_bytes") == Some(total_bytes.to_string())
    });
    assert_eq!(field(&info, "loading").as_deref(), Some("1"), "{info}");
    assert_eq!(field(&info, "async_loading").as_deref(), Some("0"));
    for name in [
        "loading_start_time",
        "loading_rdb_used_mem",
        "loading_loaded_perc",
        "loading_eta_seconds",
    ] {
        assert!(field(&info, name).is_some(), "no {name}: {info}");
    }
    let loaded = |info: &str| -> u64 {
        field(info, "loading_loaded_bytes")
            .unwrap()
            .parse()
            .unwrap()
    };
    let first = loaded(&info);
    let mut last_info = info;
    wait_for("the load to move on", || {
        last_info = text(&conn.cmd(&["INFO", "persistence"]));
        field(&last_info, "loading").as_deref() == Some("0") || loaded(&last_info) > first
    });
    if field(&last_info, "loading").as_deref() == Some("1") {
        let perc: f64 = field(&last_info, "loading_loaded_perc")
            .unwrap()
            .parse()
            .unwrap();
        assert!(perc > 0.0 && perc <= 100.0, "{last_info}");
    }
    wait_for("the load to end", || {
        conn.info_field("persistence", "loading") == "0"
    });
    let info = text(&conn.cmd(&["INFO", "persistence"]));
    assert!(field(&info, "loading_total_bytes").is_none(), "{info}");
    assert_eq!(conn.cmd(&["DBSIZE"]), format!(":{KEYS}\r\n").into_bytes());
    assert_eq!(conn.cmd(&["PING"]), b"+PONG\r\n");
}

#[test]
fn clients_get_loading_while_an_rdb_loads_at_start_up() {
    let (dir, size) = directory_with_dataset(&[]);
    let server = TestServer::start_loading(&[
        "--dir",
        dir.path().to_str().unwrap(),
        "--key-load-delay",
        "50",
        "--loading-process-events-interval-bytes",
        "1024",
    ]);
    watch_the_load(&server, size);
    let log = server.stdout();
    let loaded_at = log.find("DB loaded from disk").expect(&log);
    let ready_at = log.find("Ready to accept connections").expect(&log);
    assert!(loaded_at < ready_at, "ready only after loading: {log}");
}

#[test]
fn clients_get_loading_while_an_aof_loads_at_start_up() {
    let (dir, size) = directory_with_dataset(&["--appendonly", "yes"]);
    let server = TestServer::start_loading(&[
        "--dir",
        dir.path().to_str().unwrap(),
        "--appendonly",
        "yes",
        "--key-load-delay",
        "50",
        "--loading-process-events-interval-bytes",
        "1024",
    ]);
    watch_the_load(&server, size);
}

#[test]
fn debug_reload_answers_loading_to_other_clients() {
    let server = TestServer::start(&["--enable-debug-command", "yes", "--server-threads", "2"]);
    // Consecutive connections go to different threads: `other` is served while
    // `conn`'s thread reloads.
    let mut conn = server.raw();
    let mut other = server.raw();
    let count = KEYS.to_string();
    conn.cmd(&["DEBUG", "POPULATE", &count, "key", "20"]);
    conn.cmd(&["CONFIG", "SET", "key-load-delay", "50"]);
    conn.cmd(&[
        "CONFIG",
        "SET",
        "loading-process-events-interval-bytes",
        "1024",
    ]);
    conn.send_cmd(&["DEBUG", "RELOAD"]);
    wait_for("the reload to begin", || {
        other.info_field("persistence", "loading") == "1"
    });
    assert_eq!(other.cmd(&["GET", "key:1"]), LOADING);
    assert_eq!(conn.read_reply(), b"+OK\r\n");
    assert_eq!(other.info_field("persistence", "loading"), "0");
    assert_eq!(other.cmd(&["DBSIZE"]), format!(":{KEYS}\r\n").into_bytes());
}

#[test]
fn shutdown_or_sigterm_while_loading_exits_without_saving_over_the_file() {
    let (dir, _) = directory_with_dataset(&[]);
    let before = std::fs::read(dir.path().join("dump.rdb")).unwrap();
    for by_signal in [false, true] {
        let mut server = TestServer::start_loading(&[
            "--dir",
            dir.path().to_str().unwrap(),
            "--save",
            "3600 1",
            "--key-load-delay",
            "100",
            "--loading-process-events-interval-bytes",
            "1024",
        ]);
        if by_signal {
            // SAFETY: kill() with a child's pid only sends a signal.
            unsafe { libc::kill(server.pid() as libc::pid_t, libc::SIGTERM) };
        } else {
            server.raw().send_cmd(&["SHUTDOWN"]);
        }
        server.assert_exits_within(std::time::Duration::from_secs(10));
        let log = server.stdout();
        assert!(log.contains("ready to exit, bye bye"), "{log}");
        assert!(
            !log.contains("DB loaded from disk"),
            "the load went on: {log}"
        );
        let after = std::fs::read(dir.path().join("dump.rdb")).unwrap();
        assert!(after == before, "the half-loaded dataset was saved");
    }
}

#[test]
fn a_replica_answers_loading_while_it_loads_its_masters_data() {
    let debug = ["--enable-debug-command", "yes"];
    let master = TestServer::start(&debug);
    let count = KEYS.to_string();
    master
        .raw()
        .cmd(&["DEBUG", "POPULATE", &count, "key", "20"]);
    let port = master.port().to_string();
    // Ready as soon as it answers: the sync may begin before its first PONG.
    let replica = TestServer::start_loading(&[
        "--replicaof",
        "127.0.0.1",
        &port,
        "--key-load-delay",
        "50",
        "--loading-process-events-interval-bytes",
        "1024",
    ]);
    let mut conn = replica.raw();
    // Loading as a replica: not the moment of its own (empty) start-up load.
    wait_for("the full sync to load", || {
        let info = text(&conn.cmd(&["INFO", "replication", "persistence"]));
        field(&info, "role").as_deref() == Some("slave")
            && field(&info, "loading").as_deref() == Some("1")
    });
    assert_eq!(conn.cmd(&["GET", "key:1"]), LOADING);
    wait_for("the link to come up", || {
        conn.info_field("replication", "master_link_status") == "up"
    });
    assert_eq!(conn.info_field("persistence", "loading"), "0");
    assert_eq!(conn.cmd(&["DBSIZE"]), format!(":{KEYS}\r\n").into_bytes());
}

/// A scratch directory removed on drop.
mod tempdir {
    use std::path::{Path, PathBuf};

    pub struct Dir(PathBuf);

    impl Dir {
        pub fn new() -> Dir {
            Dir(super::support::scratch_dir("loading"))
        }

        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
