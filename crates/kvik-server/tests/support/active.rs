//! Two kvik nodes, each an active replica of the other through a TCP proxy that
//! cuts and heals the link (see [`Pair`]), for the active-replication tests.

use super::proxy::Proxy;
use super::{wait_for, RawConn, TestServer};
use std::time::Duration;

/// Two active nodes A and B, each following the other through a proxy.
pub struct Pair {
    pub a: TestServer,
    pub b: TestServer,
    /// The proxy in front of A (B's link to A) and the one in front of B.
    pub to_a: Proxy,
    pub to_b: Proxy,
}

pub const ACTIVE: &[&str] = &[
    "--logfile",
    "kvik.log",
    "--active-replica",
    "yes",
    "--enable-debug-command",
    "yes",
];

impl Pair {
    pub fn start(extra: &[&str]) -> Pair {
        let args: Vec<&str> = ACTIVE.iter().chain(extra).copied().collect();
        let a = TestServer::start(&args);
        let b = TestServer::start(&args);
        let to_a = Proxy::start(&a.addr());
        let to_b = Proxy::start(&b.addr());
        let pair = Pair { a, b, to_a, to_b };
        let (pa, pb) = (pair.to_a.port().to_string(), pair.to_b.port().to_string());
        assert_eq!(
            pair.a.raw().cmd(&["REPLICAOF", "127.0.0.1", &pb]),
            b"+OK\r\n"
        );
        assert_eq!(
            pair.b.raw().cmd(&["REPLICAOF", "127.0.0.1", &pa]),
            b"+OK\r\n"
        );
        pair.wait_linked();
        pair
    }

    pub fn wait_linked(&self) {
        for node in [&self.a, &self.b] {
            let mut conn = node.raw();
            let up = std::time::Instant::now() + Duration::from_secs(10);
            while conn.info_field("replication", "master_link_status") != "up" {
                if std::time::Instant::now() > up {
                    panic!(
                        "the link did not come up:\n{}\n{}",
                        log(&self.a),
                        log(&self.b)
                    );
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    pub fn cut(&self) {
        self.to_a.cut();
        self.to_b.cut();
        for node in [&self.a, &self.b] {
            let mut conn = node.raw();
            wait_for("the link to go down", || {
                conn.info_field("replication", "master_link_status") == "down"
            });
        }
    }

    pub fn heal(&self) {
        self.to_a.heal();
        self.to_b.heal();
        self.wait_linked();
    }

    /// Wait until both nodes hold the same dataset; on a timeout, say which keys
    /// differ.
    pub fn converge(&self) -> Vec<u8> {
        let (mut a, mut b) = (self.a.raw(), self.b.raw());
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while a.cmd(&["DEBUG", "DIGEST"]) != b.cmd(&["DEBUG", "DIGEST"]) {
            if std::time::Instant::now() > deadline {
                panic!(
                    "the nodes did not converge: {}",
                    differences(&mut a, &mut b)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        a.cmd(&["DEBUG", "DIGEST"])
    }
}

/// The keys whose values differ between two nodes, with both values.
pub fn differences(a: &mut RawConn, b: &mut RawConn) -> String {
    let keys = |c: &mut RawConn| -> Vec<String> {
        let reply = String::from_utf8_lossy(&c.cmd(&["KEYS", "*"])).into_owned();
        reply
            .split("\r\n")
            .filter(|l| !l.is_empty() && !l.starts_with('*') && !l.starts_with('$'))
            .map(str::to_string)
            .collect()
    };
    let mut all = keys(a);
    all.extend(keys(b));
    all.sort();
    all.dedup();
    let mut out = String::new();
    for key in all {
        let (x, y) = (a.cmd(&["DUMP", &key]), b.cmd(&["DUMP", &key]));
        if x != y {
            let show = |c: &mut RawConn| {
                let kind = String::from_utf8_lossy(&c.cmd(&["TYPE", &key])).into_owned();
                let value = match kind.trim() {
                    "+string" => c.cmd(&["GET", &key]),
                    "+list" => c.cmd(&["LRANGE", &key, "0", "-1"]),
                    "+set" => c.cmd(&["SMEMBERS", &key]),
                    "+hash" => c.cmd(&["HGETALL", &key]),
                    _ => Vec::new(),
                };
                format!(
                    "{} {}",
                    kind.trim(),
                    String::from_utf8_lossy(&value).replace("\r\n", " ")
                )
            };
            out.push_str(&format!("\n{key}: A {} | B {}", show(a), show(b)));
        }
    }
    out
}

pub fn log(node: &TestServer) -> String {
    std::fs::read_to_string(node.dir().join("kvik.log")).unwrap_or_default()
}

/// Write more than a 16 KB backlog holds, on the nodes in turn (keys
/// `fill:<round>:<i>`): a link cut meanwhile heals by a full sync.
pub fn overflow_backlogs(conns: &mut [RawConn], round: usize) {
    let filler = "f".repeat(512);
    for i in 0..60 {
        let conn = &mut conns[i % conns.len()];
        conn.cmd(&["SET", &format!("fill:{round}:{i}"), &filler]);
    }
}

/// A small deterministic generator, so a failing mix can be replayed by its seed.
pub struct Lcg(pub u64);

impl Lcg {
    /// A generator seeded from `KVIK_ACTIVE_SEED` (to replay a failing mix), else
    /// from `default`; returns the seed too, for failure messages.
    pub fn seeded(default: u64) -> (Lcg, u64) {
        let seed = std::env::var("KVIK_ACTIVE_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default);
        (Lcg(seed), seed)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// Wait until every node of a mesh holds the same dataset (DEBUG DIGEST, within
/// `limit`); on a timeout, say which keys differ from the first node and show
/// every node's log.
pub fn converge_mesh(nodes: &[TestServer], limit: Duration) {
    let mut conns: Vec<RawConn> = nodes.iter().map(|n| n.raw()).collect();
    let deadline = std::time::Instant::now() + limit;
    loop {
        let first = conns[0].cmd(&["DEBUG", "DIGEST"]);
        if conns
            .iter_mut()
            .all(|c| c.cmd(&["DEBUG", "DIGEST"]) == first)
        {
            return;
        }
        if std::time::Instant::now() > deadline {
            let (head, tail) = conns.split_at_mut(1);
            let diff: Vec<String> = tail
                .iter_mut()
                .map(|c| differences(&mut head[0], c))
                .collect();
            let logs: Vec<String> = nodes.iter().map(log).collect();
            panic!(
                "the mesh did not converge: {diff:?}\n{}",
                logs.join("\n-----\n")
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Make each node a replica of every other (a multi-master mesh) and wait until
/// every node has all its links up.
pub fn join_mesh(nodes: &[TestServer]) {
    for (i, node) in nodes.iter().enumerate() {
        let mut conn = node.raw();
        for (j, peer) in nodes.iter().enumerate() {
            if i != j {
                let port = peer.port().to_string();
                assert_eq!(conn.cmd(&["REPLICAOF", "127.0.0.1", &port]), b"+OK\r\n");
            }
        }
    }
    for node in nodes {
        let mut conn = node.raw();
        wait_for("every link to come up", || {
            conn.info_field("replication", "master_global_link_status") == "up"
        });
    }
}
