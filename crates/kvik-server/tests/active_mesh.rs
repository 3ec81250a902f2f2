//! Three masters in a mesh (each an active replica of the two others, multi-master)
//! formed while clients write the same keys on all three: once the writes stop,
//! every node holds the same dataset.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::active::ACTIVE;
use support::{RawConn, TestServer};

#[test]
fn three_masters_written_while_their_mesh_forms_converge() {
    let args = ["--multi-master", "yes"];
    let all: Vec<&str> = ACTIVE.iter().chain(&args).copied().collect();
    let nodes: Vec<TestServer> = (0..3).map(|_| TestServer::start(&all)).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let mut conn = node.raw();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut round = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let key = format!("k{}", round % 10);
                    conn.cmd(&["SET", &key, &format!("{i}-{round}")]);
                    conn.cmd(&["INCR", "hits"]);
                    conn.cmd(&["HSET", "h", &format!("f{}", round % 5), &round.to_string()]);
                    conn.cmd(&["SADD", &format!("s{i}"), &round.to_string()]);
                    round += 1;
                }
                round
            })
        })
        .collect();
    support::active::join_mesh(&nodes);
    let mut conns: Vec<RawConn> = nodes.iter().map(|n| n.raw()).collect();
    // Writes go on a moment after the mesh is up, through the streams.
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let rounds: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    support::active::converge_mesh(&nodes, Duration::from_secs(30));
    // Every increment counted once on every node.
    let hits = format!("${}\r\n{rounds}\r\n", rounds.to_string().len());
    assert_eq!(
        String::from_utf8_lossy(&conns[1].cmd(&["GET", "hits"])),
        hits
    );
}
