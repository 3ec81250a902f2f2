//! Random command mixes on active-replicated nodes (a pair, and a mesh of three)
//! with random cuts and heals. After every heal each node must hold the same
//! dataset (DEBUG DIGEST, and every key's deadline to the millisecond), and the
//! rules that hold whatever the interleaving must hold: every increment of a
//! counter nobody resets is counted once, and an element of a set, hash or sorted
//! set that a round only added is there, one it only removed is gone.
//!
//! `KVIK_ACTIVE_SEED=<n>` replays another seed; `KVIK_MIX=strings,sets,...` keeps
//! only some families of commands (to narrow a failing seed down). A failure shows
//! the keys that differ, each node's value, deadline and element marks (DEBUG
//! ELEMENTS) of them, and the commands of the mix that named them.

mod support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use support::active::{log, overflow_backlogs, Lcg, ACTIVE};
use support::proxy::Proxy;
use support::{RawConn, TestServer};

/// Nodes that each follow every other through a proxy of its own (node `from`
/// reaches node `to` through `links[i].proxy`), so that any link can be cut.
struct Mesh {
    nodes: Vec<TestServer>,
    links: Vec<Link>,
}

struct Link {
    from: usize,
    to: usize,
    proxy: Proxy,
}

impl Mesh {
    fn start(n: usize) -> Mesh {
        Mesh::start_with(n, &[])
    }

    /// [`Mesh::start`], each node started with `extra` arguments too.
    fn start_with(n: usize, extra: &[&str]) -> Mesh {
        let mut args: Vec<&str> = ACTIVE.to_vec();
        args.extend(["--repl-backlog-size", "16kb"]);
        args.extend(extra);
        if n > 2 {
            args.extend(["--multi-master", "yes"]);
        }
        let nodes: Vec<TestServer> = (0..n).map(|_| TestServer::start(&args)).collect();
        let mut links = Vec::new();
        for from in 0..n {
            for to in (0..n).filter(|&to| to != from) {
                let proxy = Proxy::start(&nodes[to].addr());
                let port = proxy.port().to_string();
                let mut conn = nodes[from].raw();
                assert_eq!(conn.cmd(&["REPLICAOF", "127.0.0.1", &port]), b"+OK\r\n");
                links.push(Link { from, to, proxy });
            }
        }
        let mesh = Mesh { nodes, links };
        mesh.wait_linked();
        mesh
    }

    fn wait_linked(&self) {
        // One master's link says master_link_status; several say whether all are up.
        let field = match self.nodes.len() {
            2 => "master_link_status",
            _ => "master_global_link_status",
        };
        for node in &self.nodes {
            let mut conn = node.raw();
            let deadline = Instant::now() + Duration::from_secs(20);
            while conn.info_field("replication", field) != "up" {
                if Instant::now() > deadline {
                    panic!("the links did not come up:\n{}", self.logs());
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// Cut the links for which `cut(from, to)` holds; returns what was cut, as text.
    fn cut(&self, cut: impl Fn(usize, usize) -> bool) -> String {
        let mut what = Vec::new();
        for link in self.links.iter().filter(|l| cut(l.from, l.to)) {
            link.proxy.cut();
            what.push(format!("{}->{}", link.from, link.to));
        }
        what.join(" ")
    }

    /// Heal the one link through which node `from` follows node `to`.
    fn heal_link(&self, from: usize, to: usize) {
        let link = self.links.iter().find(|l| l.from == from && l.to == to);
        link.expect("a link of the mesh").proxy.heal();
    }

    fn heal(&self) {
        for link in &self.links {
            link.proxy.heal();
        }
        self.wait_linked();
    }

    fn logs(&self) -> String {
        let logs: Vec<String> = self.nodes.iter().map(log).collect();
        logs.join("\n-----\n")
    }

    /// Has every node applied each stream it follows as far as its master had
    /// written it when asked? Equal digests alone can come while a write is on
    /// its way: a repair that writes an element again as both nodes already hold
    /// it, stamped before their last writes of the key, changes no digest, yet a
    /// removal made before it arrives did not see it, and add-wins keeps it.
    fn caught_up(&self, conns: &mut [RawConn]) -> bool {
        let written: Vec<u64> = conns
            .iter_mut()
            .map(|c| c.info_field("replication", "master_repl_offset"))
            .map(|offset| offset.parse().expect("an offset"))
            .collect();
        self.links.iter().all(|link| {
            let applied = applied_offset(&mut conns[link.from], link.proxy.port());
            applied.is_some_and(|applied| applied >= written[link.to])
        })
    }

    /// Wait until every node holds the same dataset, with nothing on its way
    /// ([`Mesh::caught_up`], asked twice: what applying the first answer's
    /// writes wrote is in the second's): equal DEBUG DIGEST and every key's
    /// deadline equal. On a timeout, fail showing the keys apart and the
    /// commands of `history` that named them.
    fn converge(&self, seed: u64, history: &[String]) {
        let mut conns: Vec<RawConn> = self.nodes.iter().map(|n| n.raw()).collect();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let quiet = self.caught_up(&mut conns) && self.caught_up(&mut conns);
            let states: Vec<NodeState> = conns
                .iter_mut()
                .map(|c| (c.cmd(&["DEBUG", "DIGEST"]), deadlines(c)))
                .collect();
            if quiet && states.iter().all(|s| *s == states[0]) {
                return;
            }
            if Instant::now() > deadline {
                let apart = keys_apart(&mut conns);
                let mut report = format!("seed {seed:#x}: the nodes did not converge");
                for key in &apart {
                    report.push_str(&format!("\n{key}:"));
                    for (i, conn) in conns.iter_mut().enumerate() {
                        let (value, marks) = (show(conn, key), marks(conn, key));
                        report.push_str(&format!("\n  node {i}: {value}\n    marks: {marks}"));
                    }
                }
                report.push_str("\ncommands that named them (or keys renamed to them):");
                let named = with_rename_sources(&apart, history);
                for line in history {
                    if named.iter().any(|k| names(line, k)) || !line.contains(": ") {
                        report.push_str(&format!("\n  {line}"));
                    }
                }
                panic!("{report}\n{}", self.logs());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// How far the node on `conn` applied the stream of the master it reaches
/// through port `port` (a proxy's): the `slave..._repl_offset` of the link whose
/// `master..._port` it is. `None` while it has no such link.
fn applied_offset(conn: &mut RawConn, port: u16) -> Option<u64> {
    let info = String::from_utf8_lossy(&conn.cmd(&["INFO", "replication"])).into_owned();
    let field = |name: &str| {
        info.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .map(str::to_string)
    };
    let port = port.to_string();
    let prefix = (0..8)
        .map(|n| match n {
            0 => String::new(),
            n => format!("_{n}"),
        })
        .find(|prefix| field(&format!("master{prefix}_port")).as_deref() == Some(&port))?;
    field(&format!("slave{prefix}_repl_offset"))?.parse().ok()
}

/// What a node holds, as far as convergence goes: its DEBUG DIGEST and every key
/// with its deadline.
type NodeState = (Vec<u8>, Vec<(String, Vec<u8>)>);

/// Does a history line (`round node: COMMAND args...`) name `key`?
fn names(line: &str, key: &str) -> bool {
    line.split(' ').any(|word| word == key)
}

fn keys(conn: &mut RawConn) -> Vec<String> {
    let reply = String::from_utf8_lossy(&conn.cmd(&["KEYS", "*"])).into_owned();
    let mut keys: Vec<String> = reply
        .split("\r\n")
        .filter(|l| !l.is_empty() && !l.starts_with('*') && !l.starts_with('$'))
        .map(str::to_string)
        .collect();
    keys.sort();
    keys
}

/// Every key with its absolute deadline (PEXPIRETIME).
fn deadlines(conn: &mut RawConn) -> Vec<(String, Vec<u8>)> {
    keys(conn)
        .into_iter()
        .map(|k| {
            let at = conn.cmd(&["PEXPIRETIME", &k]);
            (k, at)
        })
        .collect()
}

/// The keys whose value or deadline is not the same on every node.
fn keys_apart(conns: &mut [RawConn]) -> Vec<String> {
    let all: BTreeSet<String> = conns.iter_mut().flat_map(keys).collect();
    all.into_iter()
        .filter(|key| {
            let seen: Vec<String> = conns.iter_mut().map(|c| show(c, key)).collect();
            seen.iter().any(|s| *s != seen[0])
        })
        .collect()
}

/// A hash's fields and values in field order (the order HGETALL lists them in
/// depends on the order they were written in).
fn sorted_pairs(reply: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(reply);
    let words: Vec<&str> = text.split("\r\n").skip(1).collect();
    let mut pairs: Vec<String> = words
        .chunks_exact(4)
        .map(|p| format!("{}={}", p[1], p[3]))
        .collect();
    pairs.sort();
    pairs.join(" ").into_bytes()
}

/// A key's type, value (in an order that does not depend on the order of its
/// writes) and deadline on one node, as text.
fn show(conn: &mut RawConn, key: &str) -> String {
    let kind = String::from_utf8_lossy(&conn.cmd(&["TYPE", key])).into_owned();
    let value = match kind.trim() {
        "+string" => conn.cmd(&["GET", key]),
        "+list" => conn.cmd(&["LRANGE", key, "0", "-1"]),
        "+set" => conn.cmd(&["SORT", key, "ALPHA"]),
        "+hash" => sorted_pairs(&conn.cmd(&["HGETALL", key])),
        "+zset" => conn.cmd(&["ZRANGE", key, "0", "-1", "WITHSCORES"]),
        _ => Vec::new(),
    };
    let at = conn.cmd(&["PEXPIRETIME", key]);
    let text = |b: &[u8]| String::from_utf8_lossy(b).replace("\r\n", " ");
    format!(
        "{} {} deadline {}",
        kind.trim(),
        text(&value),
        text(&at).trim()
    )
}

/// The element marks a node keeps for `key` (DEBUG ELEMENTS) and its counted
/// state (DEBUG COUNTED), as text.
fn marks(conn: &mut RawConn, key: &str) -> String {
    let elements = conn.cmd(&["DEBUG", "ELEMENTS", key]);
    let counted = conn.cmd(&["DEBUG", "COUNTED", key]);
    let text = |b: &[u8]| String::from_utf8_lossy(b).replace("\r\n", " ");
    format!("{} counted: {}", text(&elements), text(&counted))
}

/// `keys`, and every key a RENAME in `history` moved into one of them (what
/// they hold may come from there).
fn with_rename_sources(keys: &[String], history: &[String]) -> Vec<String> {
    let mut named = keys.to_vec();
    loop {
        let before = named.len();
        for line in history {
            let Some((_, command)) = line.split_once(": RENAME ") else {
                continue;
            };
            let mut words = command.split(' ');
            if let (Some(from), Some(to)) = (words.next(), words.next()) {
                if named.iter().any(|k| k == to) && !named.iter().any(|k| k == from) {
                    named.push(from.to_string());
                }
            }
        }
        if named.len() == before {
            return named;
        }
    }
}

/// The families of commands a mix draws from.
#[derive(Clone, Copy, PartialEq)]
enum Family {
    /// SET, SETEX, DEL, UNLINK, APPEND, GETDEL, RENAME.
    Strings,
    /// INCRBY and INCRBYFLOAT of the keys the strings family sets and deletes.
    Resets,
    /// SADD, SREM, SPOP, SMOVE.
    Sets,
    /// HSET, HDEL, HINCRBY.
    Hashes,
    /// ZADD, ZREM, ZINCRBY.
    Zsets,
    /// RPUSH.
    Lists,
    /// EXPIRE (100 to 1000 seconds: nothing expires during the test) and PERSIST
    /// of any key.
    Ttls,
    /// DEL and UNLINK of sets, hashes, sorted sets and lists.
    Drops,
    /// INCRBY, INCRBYFLOAT, HINCRBY and ZINCRBY of counters nobody else writes.
    Counters,
}

const FAMILIES: [(&str, Family); 9] = [
    ("strings", Family::Strings),
    ("resets", Family::Resets),
    ("sets", Family::Sets),
    ("hashes", Family::Hashes),
    ("zsets", Family::Zsets),
    ("lists", Family::Lists),
    ("ttls", Family::Ttls),
    ("drops", Family::Drops),
    ("counters", Family::Counters),
];

/// The families `KVIK_MIX` names (`all`: every one), else `default`'s.
fn families(default: &str) -> Vec<Family> {
    let names = std::env::var("KVIK_MIX").unwrap_or_else(|_| default.to_string());
    if names == "all" {
        return FAMILIES.iter().map(|(_, f)| *f).collect();
    }
    names
        .split(',')
        .map(|name| {
            FAMILIES
                .iter()
                .find(|(n, _)| *n == name)
                .unwrap_or_else(|| panic!("KVIK_MIX: no family {name}"))
                .1
        })
        .collect()
}

/// What the counters must hold once every node has every write.
#[derive(Default)]
struct Counted {
    total: i64,
    /// In quarters, so that every sum is exact in binary floating point.
    float_quarters: i64,
    field: i64,
    member: i64,
}

impl Counted {
    fn check(&self, seed: u64, conn: &mut RawConn) {
        let bulk = |n: String| format!("${}\r\n{n}\r\n", n.len()).into_bytes();
        let float = |quarters: i64| {
            let text = format!("{}", quarters as f64 / 4.0);
            bulk(text)
        };
        let counted = [
            (
                conn.cmd(&["GET", "total"]),
                self.total,
                bulk(self.total.to_string()),
            ),
            (
                conn.cmd(&["GET", "ftotal"]),
                self.float_quarters,
                float(self.float_quarters),
            ),
            (
                conn.cmd(&["HGET", "hc", "n"]),
                self.field,
                bulk(self.field.to_string()),
            ),
            (
                conn.cmd(&["ZSCORE", "zc", "m"]),
                self.member,
                bulk(self.member.to_string()),
            ),
        ];
        for (i, (got, sum, want)) in counted.iter().enumerate() {
            let absent = *sum == 0 && got == b"$-1\r\n";
            assert!(
                absent || got == want,
                "seed {seed:#x}: counter {i} holds {:?}, every increment counted once is {:?}",
                String::from_utf8_lossy(got),
                String::from_utf8_lossy(want)
            );
        }
    }
}

/// The elements of sets, hashes and sorted sets one round added and removed
/// (on any node), for add-wins' plain cases: an element only added in the round
/// is there once the nodes converge, and one only removed is gone (a round starts
/// from converged nodes).
#[derive(Default)]
struct Membership {
    added: BTreeSet<(String, String)>,
    removed: BTreeSet<(String, String)>,
}

/// Is `key` one of the mixes' sets, hashes or sorted sets (see [`collection`])?
fn is_collection_of_elements(key: &str) -> bool {
    key.starts_with("set") || key.starts_with('h') || key.starts_with('z')
}

/// Every element a collection of the mixes can hold: what a DEL removes.
const ELEMENTS: [&str; 6] = ["m0", "m1", "m2", "m3", "m4", "m5"];
const FIELDS: [&str; 5] = ["f0", "f1", "f2", "f3", "f4"];

impl Membership {
    /// Note what one command, which replied `reply`, did to elements.
    fn note(&mut self, words: &[String], reply: &[u8]) {
        let w: Vec<&str> = words.iter().map(String::as_str).collect();
        let mut add = |key: &str, element: &str| {
            self.added.insert((key.to_string(), element.to_string()));
        };
        match w[..] {
            ["SADD", key, ref members @ ..] => members.iter().for_each(|m| add(key, m)),
            ["HSET", key, field, _] | ["HINCRBY", key, field, _] => add(key, field),
            ["ZADD", key, _, member] | ["ZINCRBY", key, _, member] => add(key, member),
            ["SMOVE", from, to, member] if reply == b":1\r\n" && from != to => {
                add(to, member);
                self.remove(from, member);
            }
            ["SREM", key, member] | ["HDEL", key, member] | ["ZREM", key, member] => {
                self.remove(key, member)
            }
            ["SPOP", key] => {
                let text = String::from_utf8_lossy(reply);
                if let Some(member) = text.split("\r\n").nth(1) {
                    self.remove(key, member);
                }
            }
            ["DEL", key] | ["UNLINK", key] if is_collection_of_elements(key) => {
                for element in ELEMENTS.iter().chain(&FIELDS) {
                    self.remove(key, element);
                }
            }
            _ => {}
        }
    }

    fn remove(&mut self, key: &str, element: &str) {
        self.removed.insert((key.to_string(), element.to_string()));
    }

    /// The round's plain cases that fail on a converged node, as text (empty:
    /// none).
    fn broken(&self, seed: u64, round: usize, conn: &mut RawConn) -> Vec<(String, String)> {
        let holds = |conn: &mut RawConn, key: &str, element: &str| {
            let reply = match key.as_bytes()[0] {
                b'h' => conn.cmd(&["HEXISTS", key, element]),
                b'z' => conn.cmd(&["ZSCORE", key, element]),
                _ => conn.cmd(&["SISMEMBER", key, element]),
            };
            !matches!(&reply[..], b":0\r\n" | b"$-1\r\n")
        };
        let mut broken = Vec::new();
        for (key, element) in self.added.difference(&self.removed) {
            if !holds(conn, key, element) {
                let why = format!(
                    "seed {seed:#x} round {round}: {key} lost {element}, which was only added"
                );
                broken.push((key.clone(), why));
            }
        }
        for (key, element) in self.removed.difference(&self.added) {
            if holds(conn, key, element) {
                let why = format!(
                    "seed {seed:#x} round {round}: {key} holds {element}, which was only removed"
                );
                broken.push((key.clone(), why));
            }
        }
        broken
    }
}

/// One of the collections the mixes write.
fn collection(rng: &mut Lcg) -> String {
    match rng.below(4) {
        0 => format!("set{}", rng.below(4)),
        1 => format!("h{}", rng.below(4)),
        2 => format!("z{}", rng.below(4)),
        _ => format!("l{}", rng.below(3)),
    }
}

/// One command of a mix, drawn from `families`.
fn draw(rng: &mut Lcg, families: &[Family], counted: &mut Counted) -> Vec<String> {
    let family = families[rng.below(families.len() as u64) as usize];
    let n = |rng: &mut Lcg, below: u64| rng.below(below).to_string();
    let ttl = |rng: &mut Lcg| (100 + rng.below(900)).to_string();
    let words: Vec<String> = match family {
        Family::Strings => {
            let key = format!("s{}", rng.below(6));
            let value = n(rng, 1000);
            match rng.below(8) {
                0 | 1 => vec!["SET".into(), key, value],
                2 => vec!["SETEX".into(), key, ttl(rng), value],
                3 => vec!["DEL".into(), key],
                4 => vec!["UNLINK".into(), key],
                5 => vec!["APPEND".into(), key, value],
                6 => vec!["GETDEL".into(), key],
                _ => vec!["RENAME".into(), key, format!("s{}", rng.below(6))],
            }
        }
        Family::Resets => {
            let key = format!("s{}", rng.below(6));
            match rng.below(2) {
                0 => vec!["INCRBY".into(), key, n(rng, 10)],
                _ => vec!["INCRBYFLOAT".into(), key, "0.5".into()],
            }
        }
        Family::Sets => {
            let key = format!("set{}", rng.below(4));
            let member = format!("m{}", rng.below(6));
            match rng.below(6) {
                0 | 1 => vec!["SADD".into(), key, member, format!("m{}", rng.below(6))],
                2 => vec!["SREM".into(), key, member],
                3 => vec!["SPOP".into(), key],
                _ => vec!["SMOVE".into(), key, format!("set{}", rng.below(4)), member],
            }
        }
        Family::Hashes => {
            let key = format!("h{}", rng.below(4));
            let field = format!("f{}", rng.below(5));
            match rng.below(4) {
                0 | 1 => vec!["HSET".into(), key, field, n(rng, 1000)],
                2 => vec!["HDEL".into(), key, field],
                _ => vec!["HINCRBY".into(), key, field, n(rng, 10)],
            }
        }
        Family::Zsets => {
            let key = format!("z{}", rng.below(4));
            let member = format!("m{}", rng.below(5));
            match rng.below(4) {
                0 | 1 => vec!["ZADD".into(), key, n(rng, 100), member],
                2 => vec!["ZREM".into(), key, member],
                _ => vec!["ZINCRBY".into(), key, n(rng, 10), member],
            }
        }
        Family::Lists => vec!["RPUSH".into(), format!("l{}", rng.below(3)), n(rng, 1000)],
        Family::Ttls => {
            let key = match rng.below(5) {
                0 => format!("s{}", rng.below(6)),
                _ => collection(rng),
            };
            match rng.below(3) {
                0 | 1 => vec!["EXPIRE".into(), key, ttl(rng)],
                _ => vec!["PERSIST".into(), key],
            }
        }
        Family::Drops => {
            let key = collection(rng);
            match rng.below(2) {
                0 => vec!["DEL".into(), key],
                _ => vec!["UNLINK".into(), key],
            }
        }
        Family::Counters => {
            let by = rng.below(5) as i64 + 1;
            match rng.below(4) {
                0 => {
                    counted.total += by;
                    vec!["INCRBY".into(), "total".into(), by.to_string()]
                }
                1 => {
                    counted.float_quarters += by;
                    let text = format!("{}", by as f64 / 4.0);
                    vec!["INCRBYFLOAT".into(), "ftotal".into(), text]
                }
                2 => {
                    counted.field += by;
                    vec!["HINCRBY".into(), "hc".into(), "n".into(), by.to_string()]
                }
                _ => {
                    counted.member += by;
                    vec!["ZINCRBY".into(), "zc".into(), by.to_string(), "m".into()]
                }
            }
        }
    };
    words
}

/// What a random test runs: its families of commands (`KVIK_MIX` overrides them),
/// and how many rounds of how many commands, each round under a cut (or none).
struct Mix {
    families: &'static str,
    rounds: usize,
    per_round: usize,
}

/// Run `mix` on `mesh`'s nodes (from `default_seed`, unless `KVIK_ACTIVE_SEED`
/// says), each round under a cut drawn by `draw_cut` (none sometimes), healing and
/// checking convergence after each.
fn run_mix(
    mesh: &Mesh,
    default_seed: u64,
    mix: Mix,
    draw_cut: impl Fn(&mut Lcg) -> Option<Box<dyn Fn(usize, usize) -> bool>>,
) {
    let Mix {
        families: family_names,
        rounds,
        per_round,
    } = mix;
    let (mut rng, seed) = Lcg::seeded(default_seed);
    let families = families(family_names);
    let mut conns: Vec<RawConn> = mesh.nodes.iter().map(|n| n.raw()).collect();
    let mut counted = Counted::default();
    let mut history = Vec::new();
    for round in 0..rounds {
        let mut membership = Membership::default();
        let cut = draw_cut(&mut rng);
        if let Some(cut) = &cut {
            let what = mesh.cut(cut);
            history.push(format!("{round} cut {what}"));
        }
        for _ in 0..per_round {
            let node = rng.below(conns.len() as u64) as usize;
            let words = draw(&mut rng, &families, &mut counted);
            let reply = conns[node].cmd(&words);
            membership.note(&words, &reply);
            history.push(format!(
                "{round} {node}: {} -> {}",
                words.join(" "),
                String::from_utf8_lossy(&reply).replace("\r\n", " ").trim()
            ));
        }
        // A long partition sometimes: more than the 16 KB backlog holds.
        if cut.is_some() && rng.below(2) == 0 {
            overflow_backlogs(&mut conns, round);
            history.push(format!("{round} filled the backlogs"));
        }
        if cut.is_some() {
            mesh.heal();
            history.push(format!("{round} healed"));
        }
        mesh.converge(seed, &history);
        let broken = membership.broken(seed, round, &mut conns[0]);
        if !broken.is_empty() {
            let mut report: Vec<String> = broken.iter().map(|(_, why)| why.clone()).collect();
            report.push("commands that named them:".to_string());
            for line in &history {
                if broken.iter().any(|(key, _)| names(line, key)) || !line.contains(": ") {
                    report.push(format!("  {line}"));
                }
            }
            panic!("{}\n{}", report.join("\n"), mesh.logs());
        }
    }
    for conn in conns.iter_mut() {
        counted.check(seed, conn);
    }
}

/// The families that converge on a pair: every one (a seed of some narrower
/// mixes can still end apart: docs/compatibility.md says which).
const CONVERGING: &str = "all";

/// The families that converge in a mesh of three: every one too (a TTL change
/// kept under a tombstone, and a reset forwarded after going under an
/// increment, once left a deadline or a counter apart now and then; a seed
/// beyond the first 16 can still end apart now and then: docs/compatibility.md
/// says which).
const CONVERGING_IN_A_MESH: &str = "all";

/// Run `families` on a pair from `seed`, as [`random_mixes_on_a_pair_converge`].
fn mix_on_a_pair(families: &'static str, seed: u64) {
    let mesh = Mesh::start(2);
    let mix = Mix {
        families,
        rounds: 4,
        per_round: 250,
    };
    run_mix(&mesh, seed, mix, |rng| {
        (rng.below(3) != 0).then(|| Box::new(|_, _| true) as Box<dyn Fn(usize, usize) -> bool>)
    });
}

#[test]
fn random_mixes_on_a_pair_converge() {
    mix_on_a_pair(CONVERGING, 0x6b76_696b);
}

/// Sets, hashes and sorted sets beside their TTL changes and whole deletes: a
/// delete starts the TTL register over where it arrives after later element
/// writes, as where it came first.
const COLLECTIONS_WITH_TTLS_AND_DELETES: &str = "sets,hashes,zsets,ttls,drops";

#[test]
fn random_mixes_of_collections_with_ttls_and_deletes_converge_on_a_pair() {
    mix_on_a_pair(COLLECTIONS_WITH_TTLS_AND_DELETES, 0x7474_6c73);
}

#[test]
fn a_mix_where_a_zrem_and_zincrbys_cross_converges() {
    // Seed 14 of hashes and sorted sets: while linked, a node that removed a
    // member counts on it again, then adds 0 to it (ZINCRBY by 0, which writes
    // nothing); the other's removal crossing them makes it write the member
    // again. The increment by 0 must count for nobody, or that node keeps
    // counting from before its own write and counts the other's older
    // increment on top.
    mix_on_a_pair("hashes,zsets", 14);
}

#[test]
fn random_mixes_on_a_mesh_of_three_converge() {
    let mesh = Mesh::start(3);
    let mix = Mix {
        families: CONVERGING_IN_A_MESH,
        rounds: 3,
        per_round: 200,
    };
    run_mix(&mesh, 0x6d65_7368, mix, |rng| {
        let (x, y) = (rng.below(3) as usize, rng.below(3) as usize);
        let cut: Box<dyn Fn(usize, usize) -> bool> = match rng.below(4) {
            // Nothing cut this round.
            0 => return None,
            // One node alone.
            1 => Box::new(move |from, to| from == x || to == x),
            // Two nodes apart, each still linked to the third.
            2 if x != y => {
                Box::new(move |from, to| (from == x && to == y) || (from == y && to == x))
            }
            // Every link.
            _ => Box::new(|_, _| true),
        };
        Some(cut)
    });
}

/// Run `steps` (node, command) on a pair cut apart, in that order of time, heal,
/// and wait until both hold the same dataset.
fn cut_write_heal(steps: &[(usize, &[&str])]) -> Mesh {
    let mesh = Mesh::start(2);
    let mut conns: Vec<RawConn> = mesh.nodes.iter().map(|n| n.raw()).collect();
    mesh.cut(|_, _| true);
    let mut history = vec!["cut".to_string()];
    for (node, words) in steps {
        // Timestamps order writes by the millisecond first: each step's is later
        // than the one before on whichever node.
        std::thread::sleep(Duration::from_millis(2));
        let reply = conns[*node].cmd(words);
        history.push(format!(
            "{node}: {} -> {}",
            words.join(" "),
            String::from_utf8_lossy(&reply).replace("\r\n", " ").trim()
        ));
    }
    mesh.heal();
    mesh.converge(0, &history);
    mesh
}

#[test]
fn a_full_sync_that_keeps_our_newer_list_sends_it_whole() {
    // Node 1 pushes, then node 0 (the later write); node 1 writes past its
    // backlog, so node 0 takes a full sync from it while node 1 continues
    // partially from node 0 and applies node 0's push on top of its own list.
    // Node 0 keeps its list, the newer, and must send it whole: node 1's holds
    // both pushes, a value node 0 never had.
    let filler = "f".repeat(512);
    let fill: Vec<[String; 3]> = (0..40)
        .map(|i| ["SET".to_string(), format!("fill:{i}"), filler.clone()])
        .collect();
    let mut steps: Vec<(usize, Vec<&str>)> = vec![
        (1, vec!["RPUSH", "l", "from-1"]),
        (0, vec!["RPUSH", "l", "from-0"]),
    ];
    steps.extend(
        fill.iter()
            .map(|f| (1, f.iter().map(String::as_str).collect())),
    );
    let steps: Vec<(usize, &[&str])> = steps.iter().map(|(n, w)| (*n, &w[..])).collect();
    let mesh = cut_write_heal(&steps);
    let mut a = mesh.nodes[0].raw();
    assert_eq!(
        a.cmd(&["LRANGE", "l", "0", "-1"]),
        b"*1\r\n$6\r\nfrom-0\r\n"
    );
    // The first sync of each link, and node 0's after the cut.
    let mut b = mesh.nodes[1].raw();
    assert_eq!(b.info_field("stats", "sync_full"), "2");
    assert_eq!(a.info_field("stats", "sync_full"), "1");
}

#[test]
fn a_repair_made_while_applying_a_peers_rename_reaches_that_peer() {
    // Node 1 renames onto s1 (a write of several effects, which travels as one
    // transaction); node 0, cut off, appends to its own s1 later. Node 0 drops
    // the rename's write of s1 (its append is newer) and sends its s1 whole; node
    // 1 applies the append on the renamed value, a value node 0 never had. The
    // repair, made inside node 1's transaction, once travelled as part of it,
    // under node 1's name, and node 1 dropped it as its own write come back.
    let mesh = Mesh::start(2);
    let mut a = mesh.nodes[0].raw();
    a.cmd(&["SET", "s1", "base"]);
    mesh.converge(0, &[]);
    mesh.cut(|_, _| true);
    let mut b = mesh.nodes[1].raw();
    b.cmd(&["SET", "s0", "from-1"]);
    assert_eq!(b.cmd(&["RENAME", "s0", "s1"]), b"+OK\r\n");
    std::thread::sleep(Duration::from_millis(2));
    assert_eq!(a.cmd(&["APPEND", "s1", "-0"]), b":6\r\n");
    mesh.heal();
    mesh.converge(0, &[]);
    for node in &mesh.nodes {
        assert_eq!(node.raw().cmd(&["GET", "s1"]), b"$6\r\nbase-0\r\n");
    }
}

#[test]
fn a_reset_forwarded_after_going_under_an_increment_keeps_its_own_time() {
    // Seed 1 of every family in a mesh: node 1 sets a counter and adds to it;
    // node 2, which has not heard of either, adds to nothing later. Node 2
    // takes node 1's SET under its own increment and forwards it to node 0,
    // which holds node 2's increment. The SET must reach node 0 stamped as
    // node 1 made it: it travelled stamped as node 2's increment, tied with
    // it there and was dropped (and node 1's own copy with it, as the same
    // write come twice), leaving node 0 without the 981.
    let mesh = Mesh::start(3);
    let mut conns: Vec<RawConn> = mesh.nodes.iter().map(|n| n.raw()).collect();
    mesh.cut(|_, _| true);
    assert_eq!(conns[1].cmd(&["SET", "s", "981"]), b"+OK\r\n");
    assert_eq!(
        conns[1].cmd(&["INCRBYFLOAT", "s", "0.5"]),
        b"$5\r\n981.5\r\n"
    );
    std::thread::sleep(Duration::from_millis(2));
    assert_eq!(conns[2].cmd(&["INCRBYFLOAT", "s", "0.5"]), b"$3\r\n0.5\r\n");
    // Node 0 hears node 2's increment, then node 2 node 1's writes, which it
    // forwards to node 0.
    mesh.heal_link(0, 2);
    support::wait_for("node 0 to hold node 2's increment", || {
        conns[0].cmd(&["GET", "s"]) == b"$3\r\n0.5\r\n"
    });
    mesh.heal_link(2, 1);
    support::wait_for("node 0 to count node 1's writes", || {
        conns[0].cmd(&["GET", "s"]) != b"$3\r\n0.5\r\n"
    });
    mesh.heal();
    mesh.converge(0, &[]);
    for conn in conns.iter_mut() {
        assert_eq!(conn.cmd(&["GET", "s"]), b"$3\r\n982\r\n");
    }
}

#[test]
fn an_increment_that_crossed_a_value_holding_no_number_ends_alike_in_either_order() {
    // Node 1 writes "abc", node 2 then 748, node 0 then adds 2 to its own 10,
    // all cut apart. Nodes 0 and 1 meet first: node 1 meets the INCRBY after
    // "abc", node 0 "abc" under its INCRBY; both hold "abc" and keep the
    // increment waiting. Node 2's 748, newer than "abc" and older than the
    // increment, then reaches them: it counts there, as on node 2, which met
    // the 748 first. Both once forgot the increment (one refused it, the other
    // dropped it under "abc") and held 748 while node 2 held 750. Node 1's
    // AOF and its redis-server replica, which never took the increment, take
    // the value it makes with the 748.
    let Some(_) = support::redis_server_or_skip() else {
        return;
    };
    let mesh = Mesh::start_with(3, &["--appendonly", "yes"]);
    let mut conns: Vec<RawConn> = mesh.nodes.iter().map(|n| n.raw()).collect();
    let replica = support::RealRedis::start(&[]);
    let mut r = replica.raw();
    let port = mesh.nodes[1].port().to_string();
    assert_eq!(r.cmd(&["REPLICAOF", "127.0.0.1", &port]), b"+OK\r\n");
    conns[0].cmd(&["SET", "c", "10"]);
    mesh.converge(0, &[]);
    mesh.cut(|_, _| true);
    conns[1].cmd(&["SET", "c", "abc"]);
    std::thread::sleep(Duration::from_millis(2));
    conns[2].cmd(&["SET", "c", "748"]);
    std::thread::sleep(Duration::from_millis(2));
    assert_eq!(conns[0].cmd(&["INCRBY", "c", "2"]), b":12\r\n");
    mesh.heal_link(0, 1);
    mesh.heal_link(1, 0);
    // Node 0's streams reach node 1 in order: the INCRBY before this.
    conns[0].cmd(&["SET", "after", "1"]);
    support::wait_for("node 1 to meet node 0's writes", || {
        conns[1].cmd(&["GET", "after"]) == b"$1\r\n1\r\n"
    });
    support::wait_for("node 0 to meet node 1's \"abc\"", || {
        conns[0].cmd(&["GET", "c"]) == b"$3\r\nabc\r\n"
    });
    assert_eq!(conns[1].cmd(&["GET", "c"]), b"$3\r\nabc\r\n");
    // Its own INCR of "abc" is still refused, as in Redis.
    assert_eq!(
        conns[1].cmd(&["INCR", "c"]),
        b"-ERR value is not an integer or out of range\r\n"
    );
    mesh.heal();
    mesh.converge(0, &[]);
    for conn in conns.iter_mut() {
        assert_eq!(conn.cmd(&["GET", "c"]), b"$3\r\n750\r\n");
    }
    support::wait_for("the replica to hold node 1's value", || {
        r.cmd(&["GET", "c"]) == b"$3\r\n750\r\n"
    });
    assert_eq!(conns[1].cmd(&["DEBUG", "LOADAOF"]), b"+OK\r\n");
    assert_eq!(conns[1].cmd(&["GET", "c"]), b"$3\r\n750\r\n");
}

#[test]
fn a_write_older_than_a_counters_base_leaves_the_counter_to_split_at_later_resets() {
    // Seed 19 of every family in a mesh: node 2 resets a counter (its base),
    // between node 1's two SETs; node 0, which has heard of none of them,
    // adds to it last. Node 2 counts node 0's increment on its base, then
    // meets node 1's older SET, which it drops. It once also sent its key
    // whole and forgot the counter, so node 1's later SET, older than the
    // increment, could no longer go under it there: node 2 kept 8.
    let mesh = Mesh::start(3);
    let mut conns: Vec<RawConn> = mesh.nodes.iter().map(|n| n.raw()).collect();
    mesh.cut(|_, _| true);
    assert_eq!(conns[1].cmd(&["SET", "s", "5"]), b"+OK\r\n");
    std::thread::sleep(Duration::from_millis(2));
    assert_eq!(conns[2].cmd(&["SET", "s", "7"]), b"+OK\r\n");
    std::thread::sleep(Duration::from_millis(2));
    assert_eq!(conns[1].cmd(&["SET", "s", "135"]), b"+OK\r\n");
    std::thread::sleep(Duration::from_millis(2));
    assert_eq!(conns[0].cmd(&["INCRBY", "s", "1"]), b":1\r\n");
    mesh.heal_link(2, 0);
    support::wait_for("node 2 to count node 0's increment", || {
        conns[2].cmd(&["GET", "s"]) == b"$1\r\n8\r\n"
    });
    mesh.heal_link(2, 1);
    support::wait_for("node 2 to count it on node 1's last SET", || {
        conns[2].cmd(&["GET", "s"]) == b"$3\r\n136\r\n"
    });
    mesh.heal();
    mesh.converge(0, &[]);
    for conn in conns.iter_mut() {
        assert_eq!(conn.cmd(&["GET", "s"]), b"$3\r\n136\r\n");
    }
}

#[test]
fn a_counter_counting_on_an_append_sends_its_base_where_the_append_met_another_value() {
    // Node 1's SET is older than node 0's APPEND, which node 0 counts on; node
    // 1 applies the APPEND on its own value. Node 0 drops the SET and sends the
    // base it counts on, stamped as the APPEND: node 1 counts node 0's
    // increment on it instead.
    let mesh = cut_write_heal(&[
        (0, &["SET", "s", "5"]),
        (1, &["SET", "s", "100"]),
        (0, &["APPEND", "s", "41"]),
        (0, &["INCRBY", "s", "1"]),
    ]);
    for node in &mesh.nodes {
        assert_eq!(node.raw().cmd(&["GET", "s"]), b"$3\r\n542\r\n");
    }
}

#[test]
fn a_rename_moves_the_renamers_value_on_every_node() {
    // During the cut each node holds its own value of the source; node 0's
    // rename is the last write: its value is the destination's everywhere, not
    // whatever node 1's source held.
    let mesh = cut_write_heal(&[
        (0, &["SET", "src", "from-0"]),
        (1, &["SET", "src", "from-1"]),
        (0, &["RENAME", "src", "dst"]),
    ]);
    for node in &mesh.nodes {
        let mut conn = node.raw();
        assert_eq!(conn.cmd(&["GET", "dst"]), b"$6\r\nfrom-0\r\n");
        assert_eq!(conn.cmd(&["EXISTS", "src"]), b":0\r\n");
    }
}

#[test]
fn a_counter_reset_by_setex_keeps_its_deadline_through_a_full_sync() {
    // Node 1's SETEX resets the counter node 0 counts on; node 0's INCRBY comes
    // after it. Node 1 counts it on its SETEX (deadline included) before node 0
    // merges node 1's full sync: node 0 takes the newer base, with its deadline.
    let mesh = Mesh::start(2);
    let (mut a, mut b) = (mesh.nodes[0].raw(), mesh.nodes[1].raw());
    mesh.cut(|_, _| true);
    a.cmd(&["SET", "c", "100"]);
    std::thread::sleep(Duration::from_millis(2));
    b.cmd(&["SETEX", "c", "500", "13"]);
    std::thread::sleep(Duration::from_millis(2));
    assert_eq!(a.cmd(&["INCRBY", "c", "7"]), b":107\r\n");
    // Past node 1's backlog: node 0 takes a full sync from it.
    let filler = "f".repeat(512);
    for i in 0..40 {
        b.cmd(&["SET", &format!("fill:{i}"), &filler]);
    }
    mesh.heal_link(1, 0);
    support::wait_for("node 1 to count node 0's increment", || {
        b.cmd(&["GET", "c"]) == b"$2\r\n20\r\n"
    });
    mesh.heal();
    mesh.converge(0, &[]);
    assert_eq!(a.cmd(&["GET", "c"]), b"$2\r\n20\r\n");
    assert_ne!(a.cmd(&["PEXPIRETIME", "c"]), b":-1\r\n");
    // Each link's first sync, and node 0's after the cut.
    assert_eq!(b.info_field("stats", "sync_full"), "2");
}

#[test]
fn an_integer_increment_counts_on_a_counter_a_float_increment_made_a_float() {
    // Concurrent INCRBYFLOAT on node 1 and INCRBY on node 0: each node counts the
    // other's increment, whichever kind its own running value is.
    let mesh = Mesh::start(2);
    let (mut a, mut b) = (mesh.nodes[0].raw(), mesh.nodes[1].raw());
    a.cmd(&["SET", "c", "10"]);
    mesh.converge(0, &[]);
    mesh.cut(|_, _| true);
    assert_eq!(b.cmd(&["INCRBYFLOAT", "c", "0.5"]), b"$4\r\n10.5\r\n");
    assert_eq!(a.cmd(&["INCRBY", "c", "7"]), b":17\r\n");
    mesh.heal();
    mesh.converge(0, &[]);
    for conn in [&mut a, &mut b] {
        assert_eq!(conn.cmd(&["GET", "c"]), b"$4\r\n17.5\r\n");
    }
}

#[test]
fn a_delete_of_a_set_removes_the_members_older_than_it_where_a_later_add_keeps_the_set() {
    // Node 1 deletes the set while node 0, cut off, adds another member: the
    // delete removes the member both held, the later add stays, on both nodes
    // (node 0 once sent its set whole, bringing the deleted member back there).
    let mesh = Mesh::start(2);
    let (mut a, mut b) = (mesh.nodes[0].raw(), mesh.nodes[1].raw());
    a.cmd(&["SADD", "s", "old"]);
    mesh.converge(0, &[]);
    mesh.cut(|_, _| true);
    b.cmd(&["DEL", "s"]);
    std::thread::sleep(Duration::from_millis(2));
    a.cmd(&["SADD", "s", "new"]);
    mesh.heal();
    mesh.converge(0, &[]);
    for conn in [&mut a, &mut b] {
        assert_eq!(conn.cmd(&["SMEMBERS", "s"]), b"*1\r\n$3\r\nnew\r\n");
    }
}

#[test]
fn an_older_delete_takes_nothing_from_a_set_emptied_by_removals_that_never_saw_its_adds() {
    // During the cut node 0 deletes its set and adds `new`; node 1 then adds and
    // removes x, emptying its own set. Node 1's removal saw only its x: `new`
    // stays on both. Node 1 once answered node 0's older DEL with a DEL at its
    // own removal, which took `new` away on node 0 while node 1 kept it.
    let mesh = cut_write_heal(&[
        (0, &["SADD", "s", "x"]),
        (0, &["DEL", "s"]),
        (0, &["SADD", "s", "new"]),
        (1, &["SADD", "s", "x"]),
        (1, &["SREM", "s", "x"]),
    ]);
    for node in &mesh.nodes {
        let mut conn = node.raw();
        assert_eq!(conn.cmd(&["SMEMBERS", "s"]), b"*1\r\n$3\r\nnew\r\n");
    }
}

#[test]
fn a_delete_older_than_a_set_here_takes_the_older_adds_that_reach_it_later() {
    // During the cut node 0 adds m, node 2 deletes the set and writes it again,
    // and node 1 writes it later still. Node 1 meets node 2's DEL first: its set
    // is newer, so the DEL removes only its older members, yet it saw every add
    // older than itself, as on nodes 0 and 2 where it removed the set whole.
    // Node 0's m, older than the DEL, reaches node 1 after it: it must go there
    // too (node 1 once kept it).
    let mesh = Mesh::start(3);
    let mut conns: Vec<RawConn> = mesh.nodes.iter().map(|n| n.raw()).collect();
    mesh.cut(|_, _| true);
    let steps: [(usize, &[&str]); 5] = [
        (0, &["SADD", "s", "m"]),
        (2, &["SADD", "s", "y"]),
        (2, &["DEL", "s"]),
        (2, &["SADD", "s", "w"]),
        (1, &["SADD", "s", "z"]),
    ];
    for (node, words) in steps {
        std::thread::sleep(Duration::from_millis(2));
        conns[node].cmd(words);
    }
    mesh.heal_link(1, 2);
    support::wait_for("node 1 to apply node 2's writes", || {
        conns[1].cmd(&["SISMEMBER", "s", "w"]) == b":1\r\n"
    });
    mesh.heal();
    mesh.converge(0, &[]);
    for conn in conns.iter_mut() {
        assert_eq!(
            conn.cmd(&["SORT", "s", "ALPHA"]),
            b"*2\r\n$1\r\nw\r\n$1\r\nz\r\n"
        );
    }
}

#[test]
fn a_full_sync_applies_a_delete_to_a_set_written_on_both_sides_of_it_as_live() {
    // During the cut node 0 adds members before node 1's DEL of the set and one
    // after it; both write past their backlogs, so each merges the other's
    // snapshot. The DEL takes the members older than it, on both nodes, as it
    // does live (node 0 once kept its set whole and sent it back, members
    // older than the DEL included).
    let filler = "f".repeat(512);
    let fill: Vec<[String; 3]> = (0..40)
        .map(|i| ["SET".to_string(), format!("fill:{i}"), filler.clone()])
        .collect();
    let mut steps: Vec<(usize, Vec<&str>)> = vec![
        (0, vec!["SADD", "s", "old"]),
        (1, vec!["SADD", "s", "x"]),
        (0, vec!["SADD", "s", "m"]),
        (1, vec!["DEL", "s"]),
        (0, vec!["SADD", "s", "new"]),
    ];
    for node in 0..2 {
        steps.extend(
            fill.iter()
                .map(|f| (node, f.iter().map(String::as_str).collect())),
        );
    }
    let steps: Vec<(usize, &[&str])> = steps.iter().map(|(n, w)| (*n, &w[..])).collect();
    let mesh = cut_write_heal(&steps);
    for node in &mesh.nodes {
        let mut conn = node.raw();
        assert_eq!(conn.cmd(&["SMEMBERS", "s"]), b"*1\r\n$3\r\nnew\r\n");
        assert_eq!(conn.info_field("stats", "sync_full"), "2");
    }
}

#[test]
fn in_a_mesh_only_the_last_writers_copy_of_a_list_settles_it() {
    // Each node pushes during a cut, node 2 last. Nodes 0 and 1 each apply node
    // 2's push on their own list and send the peers copies stamped as that push;
    // only node 2's own copy is the list as its write made it, on every node.
    let mesh = Mesh::start(3);
    let mut conns: Vec<RawConn> = mesh.nodes.iter().map(|n| n.raw()).collect();
    mesh.cut(|_, _| true);
    for (node, conn) in conns.iter_mut().enumerate() {
        std::thread::sleep(Duration::from_millis(2));
        conn.cmd(&["RPUSH", "l", &format!("from-{node}")]);
    }
    mesh.heal();
    mesh.converge(0, &[]);
    for conn in conns.iter_mut() {
        assert_eq!(
            conn.cmd(&["LRANGE", "l", "0", "-1"]),
            b"*1\r\n$6\r\nfrom-2\r\n"
        );
    }
}

#[test]
fn a_full_sync_of_a_push_applied_on_another_list_takes_the_pushers_list_and_merged_ttl() {
    // Node 1 pushes after node 0 and then changes the TTL. Node 0 meets both
    // through a partial resync and applies the push on its own list; node 1
    // then takes a full sync from node 0 (node 0 wrote past its backlog), whose
    // copy holds the same push and TTL change on another list. Only node 1's
    // list is the push as it was made: both end with it, and its TTL.
    let mesh = Mesh::start(2);
    let (mut a, mut b) = (mesh.nodes[0].raw(), mesh.nodes[1].raw());
    mesh.cut(|_, _| true);
    a.cmd(&["RPUSH", "l", "from-0"]);
    std::thread::sleep(Duration::from_millis(2));
    b.cmd(&["RPUSH", "l", "from-1"]);
    assert_eq!(b.cmd(&["EXPIRE", "l", "500"]), b":1\r\n");
    let filler = "f".repeat(512);
    for i in 0..40 {
        a.cmd(&["SET", &format!("fill:{i}"), &filler]);
    }
    mesh.heal_link(0, 1);
    support::wait_for("node 0 to apply node 1's TTL change", || {
        a.cmd(&["PEXPIRETIME", "l"]) != b":-1\r\n"
    });
    mesh.heal();
    mesh.converge(0, &[]);
    for conn in [&mut a, &mut b] {
        assert_eq!(
            conn.cmd(&["LRANGE", "l", "0", "-1"]),
            b"*1\r\n$6\r\nfrom-1\r\n"
        );
        assert_ne!(conn.cmd(&["PEXPIRETIME", "l"]), b":-1\r\n");
    }
    // The first sync of each link, and node 1's after the cut (served by node 0).
    assert_eq!(a.info_field("stats", "sync_full"), "2");
}

#[test]
fn an_element_counted_on_one_side_and_set_or_removed_on_the_other_ends_alike() {
    // Node 1 sets or removes each element while node 0, cut off, counts on it
    // later. Node 0 drops node 1's older set (its increment is newer), while
    // node 1 counts node 0's increment on the value it set: node 0 writes its
    // value of the element again, a fresh HSET / ZADD, and both end with it.
    // Node 1's removal takes only what it saw, the 1 (g, x): node 0's later
    // increment, which it did not see, counts on nothing on both nodes. Field
    // c: node 1 counts on it, then sets it to the value it holds, resetting the
    // counter; node 0's earlier increment is older than that reset and counts
    // nowhere.
    let mesh = Mesh::start(2);
    let (mut a, mut b) = (mesh.nodes[0].raw(), mesh.nodes[1].raw());
    a.cmd(&["HSET", "h", "f", "10", "g", "1", "keep", "1", "c", "10"]);
    a.cmd(&["ZADD", "z", "10", "m", "1", "x", "1", "keep"]);
    mesh.converge(0, &[]);
    mesh.cut(|_, _| true);
    assert_eq!(a.cmd(&["HINCRBY", "h", "c", "3"]), b":13\r\n");
    std::thread::sleep(Duration::from_millis(2));
    assert_eq!(b.cmd(&["HINCRBY", "h", "c", "5"]), b":15\r\n");
    b.cmd(&["HSET", "h", "c", "15"]);
    b.cmd(&["HSET", "h", "f", "20"]);
    b.cmd(&["HDEL", "h", "g"]);
    b.cmd(&["ZADD", "z", "20", "m"]);
    b.cmd(&["ZREM", "z", "x"]);
    std::thread::sleep(Duration::from_millis(2));
    assert_eq!(a.cmd(&["HINCRBY", "h", "f", "5"]), b":15\r\n");
    assert_eq!(a.cmd(&["HINCRBY", "h", "g", "5"]), b":6\r\n");
    assert_eq!(a.cmd(&["ZINCRBY", "z", "5", "m"]), b"$2\r\n15\r\n");
    assert_eq!(a.cmd(&["ZINCRBY", "z", "5", "x"]), b"$1\r\n6\r\n");
    mesh.heal();
    mesh.converge(0, &[]);
    for conn in [&mut a, &mut b] {
        assert_eq!(
            sorted_pairs(&conn.cmd(&["HGETALL", "h"])),
            b"c=15 f=15 g=5 keep=1"
        );
        assert_eq!(
            conn.cmd(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
            b"*6\r\n$4\r\nkeep\r\n$1\r\n1\r\n$1\r\nx\r\n$1\r\n5\r\n$1\r\nm\r\n$2\r\n15\r\n"
        );
    }
}

#[test]
fn a_full_sync_that_keeps_our_counted_element_over_the_peers_older_hset_sends_it() {
    // Node 0 sets the field, node 1 counts on it later from nothing; node 0
    // writes past its backlog, so node 1 merges node 0's snapshot (its own
    // increment is newer: it keeps its 6) while node 0 counts node 1's increment
    // on its 35. Node 1 writes the field again, and both end with its 6 (or, when
    // node 0 counted before it took its snapshot, both merge to its 41).
    let filler = "f".repeat(512);
    let fill: Vec<[String; 3]> = (0..40)
        .map(|i| ["SET".to_string(), format!("fill:{i}"), filler.clone()])
        .collect();
    let mut steps: Vec<(usize, Vec<&str>)> = vec![
        (0, vec!["HSET", "h", "f", "35", "keep", "1"]),
        (1, vec!["HINCRBY", "h", "f", "6"]),
    ];
    steps.extend(
        fill.iter()
            .map(|f| (0, f.iter().map(String::as_str).collect())),
    );
    let steps: Vec<(usize, &[&str])> = steps.iter().map(|(n, w)| (*n, &w[..])).collect();
    let mesh = cut_write_heal(&steps);
    let mut conn = mesh.nodes[1].raw();
    let merged = sorted_pairs(&conn.cmd(&["HGETALL", "h"]));
    assert!(
        [&b"f=6 keep=1"[..], b"f=41 keep=1"].contains(&&merged[..]),
        "{}",
        String::from_utf8_lossy(&merged)
    );
    // The first sync of each link, and node 1's after the cut.
    let mut a = mesh.nodes[0].raw();
    assert_eq!(a.info_field("stats", "sync_full"), "2");
}

#[test]
fn an_increment_counts_on_a_collection_that_element_writes_emptied_since() {
    // Node 1 empties the hash by removing its only field after node 0, cut off,
    // counted on another field: the removal saw nothing of that field, which
    // stays on both nodes.
    let mesh = cut_write_heal(&[
        (1, &["HSET", "h", "g", "1"]),
        (0, &["HINCRBY", "h", "f", "5"]),
        (1, &["HDEL", "h", "g"]),
    ]);
    for node in &mesh.nodes {
        let mut conn = node.raw();
        assert_eq!(sorted_pairs(&conn.cmd(&["HGETALL", "h"])), b"f=5");
    }
}

#[test]
fn a_full_sync_of_a_third_nodes_push_applied_on_another_list_keeps_our_copy() {
    // Node 2 pushes, then node 1 (the last write). Node 0, which held no list,
    // meets node 1's push first: its list is node 1's. Node 2 applies the push on
    // its own list, a value nobody else holds, and writes past its backlog, so
    // node 0 takes a full sync from it. Neither copy says which is the writer's:
    // node 0 keeps its own, and every node ends with node 1's list.
    let mesh = Mesh::start(3);
    let mut conns: Vec<RawConn> = mesh.nodes.iter().map(|n| n.raw()).collect();
    mesh.cut(|_, _| true);
    conns[2].cmd(&["RPUSH", "l", "from-2"]);
    std::thread::sleep(Duration::from_millis(2));
    conns[1].cmd(&["RPUSH", "l", "from-1"]);
    let only_node_1s = b"*1\r\n$6\r\nfrom-1\r\n";
    mesh.heal_link(0, 1);
    support::wait_for("node 0 to apply node 1's push", || {
        conns[0].cmd(&["LRANGE", "l", "0", "-1"]) == only_node_1s
    });
    mesh.heal_link(2, 1);
    support::wait_for("node 2 to apply node 1's push on its list", || {
        conns[2].cmd(&["LLEN", "l"]) == b":2\r\n"
    });
    let filler = "f".repeat(512);
    for i in 0..40 {
        conns[2].cmd(&["SET", &format!("fill:{i}"), &filler]);
    }
    // Node 0 follows node 2 through its second link.
    mesh.heal_link(0, 2);
    support::wait_for("node 0's full sync from node 2", || {
        conns[0].cmd(&["EXISTS", "fill:39"]) == b":1\r\n"
            && conns[0].info_field("replication", "master_1_link_status") == "up"
    });
    assert_eq!(conns[0].cmd(&["LRANGE", "l", "0", "-1"]), only_node_1s);
    mesh.heal();
    mesh.converge(0, &[]);
    for conn in conns.iter_mut() {
        assert_eq!(conn.cmd(&["LRANGE", "l", "0", "-1"]), only_node_1s);
    }
}

#[test]
fn a_delete_that_reaches_a_collection_emptied_here_starts_its_ttl_register_over() {
    // Cut apart, node 1 empties h (its TTL register waits under the grave),
    // node 0 gives h a TTL, node 2 deletes h, and node 0 writes a field again:
    // the delete is newer than the TTL change, which goes with it, so h lives
    // on node 0's field with no deadline. Node 1 takes node 2's delete in a
    // full sync before node 0's copy: the delete onto its emptied collection
    // must start the register over there too, or node 0's copy brings the TTL
    // change back on node 1 alone (mesh seed 104).
    let mesh = Mesh::start(3);
    let mut conns: Vec<RawConn> = mesh.nodes.iter().map(|n| n.raw()).collect();
    assert_eq!(conns[0].cmd(&["HSET", "h", "f", "1"]), b":1\r\n");
    mesh.converge(0, &[]);
    mesh.cut(|_, _| true);
    let later = || std::thread::sleep(Duration::from_millis(2));
    assert_eq!(conns[1].cmd(&["HDEL", "h", "f"]), b":1\r\n");
    later();
    assert_eq!(conns[0].cmd(&["EXPIRE", "h", "415"]), b":1\r\n");
    later();
    assert_eq!(conns[2].cmd(&["DEL", "h"]), b":1\r\n");
    later();
    assert_eq!(conns[0].cmd(&["HSET", "h", "g", "81"]), b":1\r\n");
    // Past every backlog: each heal is a full sync.
    for round in 0..3 {
        overflow_backlogs(&mut conns, round);
    }
    mesh.heal_link(1, 2);
    support::wait_for("node 1's full sync from node 2", || {
        conns[1].cmd(&["EXISTS", "fill:2:59"]) == b":1\r\n"
    });
    mesh.heal();
    mesh.converge(0, &[]);
    for conn in conns.iter_mut() {
        assert_eq!(
            conn.cmd(&["HGETALL", "h"]),
            b"*2\r\n$1\r\ng\r\n$2\r\n81\r\n"
        );
        assert_eq!(conn.cmd(&["TTL", "h"]), b":-1\r\n");
    }
}

#[test]
fn a_delete_newer_than_a_collection_keeps_the_newer_ttl_change_it_holds() {
    // Cut apart, node 1 deletes z; node 2 adds to z, deletes it and adds to
    // it again; between the two, node 0 gives z a TTL. The TTL change is newer
    // than node 2's delete, so the z written again keeps it. Node 1 meets the
    // TTL change first, under its older grave (which leaves the grave's
    // timestamp), then node 2's add, which brings z back older than the TTL
    // change, then the delete, newer than z there: the delete must keep the
    // newer TTL change under its grave, or node 1 alone ends without a
    // deadline (mesh seed 120).
    let mesh = Mesh::start(3);
    let mut conns: Vec<RawConn> = mesh.nodes.iter().map(|n| n.raw()).collect();
    assert_eq!(conns[0].cmd(&["ZADD", "z", "1", "a"]), b":1\r\n");
    mesh.converge(0, &[]);
    mesh.cut(|_, _| true);
    let later = || std::thread::sleep(Duration::from_millis(2));
    assert_eq!(conns[1].cmd(&["UNLINK", "z"]), b":1\r\n");
    later();
    assert_eq!(conns[2].cmd(&["ZADD", "z", "2", "b"]), b":1\r\n");
    later();
    assert_eq!(conns[2].cmd(&["DEL", "z"]), b":1\r\n");
    later();
    assert_eq!(conns[0].cmd(&["EXPIRE", "z", "869"]), b":1\r\n");
    assert_eq!(conns[0].cmd(&["SET", "after-expire", "1"]), b"+OK\r\n");
    later();
    assert_eq!(conns[2].cmd(&["ZADD", "z", "7", "m0"]), b":1\r\n");
    mesh.heal_link(1, 0);
    support::wait_for("node 1 to apply node 0's TTL change", || {
        conns[1].cmd(&["EXISTS", "after-expire"]) == b":1\r\n"
    });
    mesh.heal_link(1, 2);
    support::wait_for("node 1 to apply node 2's writes", || {
        conns[1].cmd(&["ZSCORE", "z", "m0"]) == b"$1\r\n7\r\n"
    });
    mesh.heal();
    mesh.converge(0, &[]);
    for conn in conns.iter_mut() {
        assert_eq!(conn.cmd(&["ZRANGE", "z", "0", "-1"]), b"*1\r\n$2\r\nm0\r\n");
        let ttl: i64 = String::from_utf8_lossy(&conn.cmd(&["TTL", "z"]))
            .trim()
            .trim_start_matches(':')
            .parse()
            .expect("a TTL");
        assert!((800..=869).contains(&ttl), "TTL {ttl}, not node 0's 869 s");
    }
}

#[test]
fn a_peers_zincrby_by_zero_that_created_a_member_counts_where_the_member_was_added_again() {
    // Node 1 counted 4 on m, then set it to 9 and removed it: its counting of m
    // is stale. Cut off, node 1 adds m, removes it and adds it again at 4 (what
    // that stale counting holds), while node 0 later creates m with a ZINCRBY by
    // 0 (a write there). Node 1's link heals first and counts node 0's increment
    // on its 4; then node 0 merges node 1's snapshot (node 1 wrote past its
    // backlog). Node 1 used to let that increment count for nobody while marking
    // m counted, so its stale counting passed for current (m held its 4) and went
    // into the snapshot, where node 0 merged it with its own: node 0 held 0, node
    // 1 held 4.
    let mesh = Mesh::start(2);
    let (mut a, mut b) = (mesh.nodes[0].raw(), mesh.nodes[1].raw());
    a.cmd(&["ZADD", "z", "1", "keep"]);
    mesh.converge(0, &[]);
    b.cmd(&["ZINCRBY", "z", "4", "m"]);
    b.cmd(&["ZADD", "z", "9", "m"]);
    b.cmd(&["ZREM", "z", "m"]);
    mesh.converge(0, &[]);
    mesh.cut(|_, _| true);
    let mut history = vec!["cut".to_string()];
    let steps: [(usize, &[&str]); 4] = [
        (1, &["ZADD", "z", "54", "m"]),
        (1, &["ZREM", "z", "m"]),
        (1, &["ZADD", "z", "4", "m"]),
        (0, &["ZINCRBY", "z", "0", "m"]),
    ];
    for (node, words) in steps {
        // Each step's timestamp is later than the one before on whichever node.
        std::thread::sleep(Duration::from_millis(2));
        let conn = if node == 0 { &mut a } else { &mut b };
        let reply = String::from_utf8_lossy(&conn.cmd(words)).replace("\r\n", " ");
        history.push(format!("{node}: {} -> {}", words.join(" "), reply.trim()));
    }
    let filler = "f".repeat(512);
    for i in 0..40 {
        b.cmd(&["SET", &format!("fill:{i}"), &filler]);
    }
    mesh.heal_link(1, 0);
    support::wait_for("node 1 to apply node 0's increment", || {
        String::from_utf8_lossy(&b.cmd(&["DEBUG", "ELEMENTS", "z"])).contains("m counted")
    });
    mesh.heal();
    mesh.converge(0, &history);
    for conn in [&mut a, &mut b] {
        assert_eq!(conn.cmd(&["ZSCORE", "z", "m"]), b"$1\r\n4\r\n");
    }
    // The first sync of each link, and node 0's after the cut.
    assert_eq!(b.info_field("stats", "sync_full"), "2");
}
