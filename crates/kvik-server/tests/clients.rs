//! Real Node.js clients against kvik: node-redis and ioredis connect to a replica
//! whose master is unreachable, as applications do during an outage. They must get
//! a ready connection at once, see the truth in INFO (role:slave,
//! master_link_status:down), read the stale data, and get READONLY for writes. The
//! clients are installed by `.ci/run` (`npm ci` in tests/clients); with
//! `KVIK_REQUIRE_CLIENTS=1` (set by CI) a missing one is a failure, otherwise the
//! test is skipped.

mod support;

use std::path::PathBuf;
use std::process::Command;
use support::{wait_for, TestServer};

fn clients_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// The directory with node_modules, or `None` after saying why the test is skipped.
fn installed_clients() -> Option<PathBuf> {
    let dir = clients_dir();
    let node = Command::new("node").arg("--version").output().is_ok();
    if node && dir.join("node_modules/ioredis").is_dir() && dir.join("node_modules/redis").is_dir()
    {
        return Some(dir);
    }
    let required = std::env::var("KVIK_REQUIRE_CLIENTS").is_ok_and(|v| !v.is_empty() && v != "0");
    assert!(
        !required,
        "node or the Node.js clients are missing and KVIK_REQUIRE_CLIENTS=1 (npm ci --prefix {})",
        dir.display()
    );
    println!(
        "SKIPPED: node or node_modules missing (npm ci --prefix {})",
        dir.display()
    );
    None
}

#[test]
fn node_clients_use_a_replica_whose_master_is_gone() {
    clients_use_a_replica_whose_master_is_gone(false);
}

/// Seed 004 case 3: an active replica whose peer is down serves reads and writes,
/// and the clients' ready checks pass at once.
#[test]
fn node_clients_use_an_active_replica_whose_peer_is_gone() {
    clients_use_a_replica_whose_master_is_gone(true);
}

fn clients_use_a_replica_whose_master_is_gone(active: bool) {
    let Some(dir) = installed_clients() else {
        return;
    };
    let extra: &[&str] = if active {
        &["--active-replica", "yes"]
    } else {
        &[]
    };
    let master = TestServer::start(extra);
    let master_port = master.port().to_string();
    let mut args = vec!["--replicaof", "127.0.0.1", &master_port];
    args.extend(extra);
    let replica = TestServer::start(&args);
    let mut m = master.raw();
    assert_eq!(m.cmd(&["SET", "stale", "v"]), b"+OK\r\n");
    let mut r = replica.raw();
    wait_for("the replica to have the key", || {
        r.cmd(&["GET", "stale"]) == b"$1\r\nv\r\n"
    });
    drop(m);
    drop(master);
    wait_for("the replica to see its master gone", || {
        r.info_field("replication", "master_link_status") == "down"
    });
    let run = Command::new("node")
        .arg(dir.join("replica_without_master.mjs"))
        .env("PORT", replica.port().to_string())
        .env("ACTIVE", if active { "1" } else { "0" })
        .current_dir(&dir)
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success() && stdout.trim() == "ok",
        "node clients failed:\n{stdout}\n{stderr}"
    );
}
