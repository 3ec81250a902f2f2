//! Random differential test: seeded random command sequences, one family of commands
//! at a time (or any of them run by a script), sent to kvik-server and to a real
//! redis-server; every reply must be the same bytes. The hand-written corpus (`differential.rs`) checks the cases we thought
//! of; this one finds the ones we did not — every mismatch it ever found became a line
//! of that corpus.
//!
//! A generator keeps to a handful of key and member names, so commands keep meeting
//! the values earlier ones made (the interesting states: a key of the wrong type, an
//! encoding conversion half way, an empty collection just deleted). It leaves out what
//! two servers cannot agree on: random picks (SPOP, SRANDMEMBER), the iteration order
//! of big hash tables (whole-hash reads compare as multisets), and remaining-time
//! reads (TTL), which depend on when each server ran the command; expiry is checked
//! through absolute times (EXPIRETIME).
//!
//! Environment:
//! - `KVIK_REQUIRE_REDIS=1`: fail (instead of skip) when redis-server is missing.
//! - `KVIK_FUZZ_STEPS=n`: commands per seed (default 1200).
//! - `KVIK_FUZZ_SEEDS=n`: seeds per family, 0..n (default 1).
//! - `KVIK_FUZZ_CONTEXT=n`: commands shown before a mismatch (default 12).

mod support;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;
use support::{escape, reply_len, RawConn, RealRedis, TestServer};

/// A command: its words.
type Cmd = Vec<String>;

/// A family's generator: the next random command.
type Family = fn(&mut Gen) -> Cmd;

macro_rules! cmd {
    ($($word:expr),* $(,)?) => { vec![$(String::from($word)),*] };
}

/// Replies longer than this are shown cut.
const SHOW_LIMIT: usize = 400;

#[test]
fn strings_match_redis() {
    check_family("strings", strings, false);
}

#[test]
fn lists_match_redis() {
    check_family("lists", lists, false);
}

#[test]
fn hashes_match_redis() {
    check_family("hashes", hashes, false);
}

#[test]
fn sets_match_redis() {
    check_family("sets", sets, false);
}

#[test]
fn sorted_sets_match_redis() {
    check_family("sorted sets", sorted_sets, false);
}

#[test]
fn sorted_sets_resp3_match_redis() {
    check_family("sorted sets (RESP3)", sorted_sets, true);
}

#[test]
fn streams_match_redis() {
    check_family("streams", streams, false);
}

#[test]
fn bitmaps_match_redis() {
    check_family("bitmaps", bitmaps, false);
}

#[test]
fn hyperloglog_match_redis() {
    check_family("hyperloglog", hyperloglog, false);
}

#[test]
fn geo_match_redis() {
    check_family("geo", geo, false);
}

#[test]
fn keys_match_redis() {
    check_family("keys", keys, false);
}

#[test]
fn transactions_match_redis() {
    check_family("transactions", transactions, false);
}

#[test]
fn lua_values_match_redis() {
    check_family("lua values", lua_values, false);
}

#[test]
fn lua_values_resp3_match_redis() {
    check_family("lua values (RESP3)", lua_values, true);
}

#[test]
fn commands_via_scripts_match_redis() {
    check_family("commands via scripts", via_script, false);
}

#[test]
fn commands_via_scripts_resp3_match_redis() {
    check_family("commands via scripts (RESP3)", via_script, true);
}

#[test]
fn any_data_command_resp3_match_redis() {
    check_family("any data command (RESP3)", any_data_command, true);
}

#[test]
fn commands_in_transactions_match_redis() {
    check_family("commands in transactions", in_transactions, false);
}

/// Random bytes at the protocol level: commands in RESP and inline form, bent by a few
/// random edits, each sent on a fresh connection that is then half-closed; all that
/// comes back until the server closes must be the same (replies to what was complete,
/// the protocol error, nothing for a command cut short).
#[test]
fn protocol_bytes_match_redis() {
    if support::redis_server_or_skip().is_none() {
        return;
    }
    let kvik = TestServer::start(&[]);
    let redis = RealRedis::start(&[]);
    for seed in 0..env_count("KVIK_FUZZ_SEEDS", 1) {
        let mut gen = Gen::new(seed);
        for case in 0..env_count("KVIK_FUZZ_STEPS", 1200) / 2 {
            let request = protocol_request(&mut gen);
            let [from_kvik, from_redis] = [&kvik, &*redis].map(|server| {
                let mut conn = server.raw();
                // A server may close mid-request (a protocol error): what it sent
                // before is what counts.
                let _ = conn.try_send(&request);
                conn.shutdown_write();
                conn.read_until_closed()
            });
            assert!(
                same_until_closed(&from_kvik, &from_redis),
                "protocol, seed {seed}, case {case}: {}\n  kvik:  {}\n  redis: {}",
                escape(&request),
                shown(&from_kvik),
                shown(&from_redis)
            );
        }
    }
}

/// Run the family's sequences against both servers, panicking at the first reply
/// that differs with the seed, the step and the commands that led there.
fn check_family(name: &str, family: Family, resp3: bool) {
    if support::redis_server_or_skip().is_none() {
        return;
    }
    let kvik = TestServer::start(&[]);
    let redis = RealRedis::start(&[]);
    for seed in 0..env_count("KVIK_FUZZ_SEEDS", 1) {
        let mut pair = [kvik.raw(), redis.raw()];
        for conn in &mut pair {
            conn.cmd(&["FLUSHALL"]);
            if resp3 {
                conn.cmd(&["HELLO", "3"]);
            }
        }
        if let Err(report) = run_sequence(&mut pair, family, seed) {
            panic!("{name}, seed {seed}: {report}");
        }
    }
}

fn run_sequence(pair: &mut [RawConn; 2], family: Family, seed: u64) -> Result<(), String> {
    let mut gen = Gen::new(seed);
    let context = env_count("KVIK_FUZZ_CONTEXT", 12) as usize;
    let mut recent: VecDeque<Cmd> = VecDeque::with_capacity(context);
    for step in 0..env_count("KVIK_FUZZ_STEPS", 1200) {
        let command = family(&mut gen);
        let [kvik, redis] = pair.each_mut().map(|conn| conn.cmd(&command));
        if !same_reply(&command, &kvik, &redis) {
            let mut report = format!("step {step}, after:\n");
            for earlier in &recent {
                report += &format!("  {}\n", earlier.join(" "));
            }
            report += &format!(
                "{}\n  kvik:  {}\n  redis: {}",
                command.join(" "),
                shown(&kvik),
                shown(&redis)
            );
            return Err(report);
        }
        if recent.len() == context {
            recent.pop_front();
        }
        recent.push_back(command);
    }
    Ok(())
}

/// Whether two replies to `command` agree: the same bytes, or for a read of a whole
/// hash the same fields in another order (a hash table's order is each server's own;
/// the order of a small, listpack-encoded hash is checked by the written corpus).
fn same_reply(command: &Cmd, kvik: &[u8], redis: &[u8]) -> bool {
    if kvik == redis {
        return true;
    }
    // A command a script ran (see `via_script`) is named after the script.
    let name = if command[0] == "EVAL" && command.len() > 3 {
        &command[3]
    } else {
        &command[0]
    };
    let Some(group) = unordered_read(name) else {
        return false;
    };
    match (top_level_items(kvik, group), top_level_items(redis, group)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// For a read of a whole hash, whose order is each server's own: how many elements
/// of its reply make one item.
fn unordered_read(command: &str) -> Option<usize> {
    match command {
        "HKEYS" | "HVALS" => Some(1),
        "HGETALL" => Some(2),
        _ => None,
    }
}

/// The items of an array or map reply, `group` elements an item, sorted.
fn top_level_items(reply: &[u8], group: usize) -> Option<Vec<Vec<u8>>> {
    let header_end = reply.windows(2).position(|w| w == b"\r\n")? + 2;
    if !matches!(reply[0], b'*' | b'%') {
        return None;
    }
    let mut elements = Vec::new();
    let mut at = header_end;
    while at < reply.len() {
        let len = reply_len(&reply[at..]).ok()??;
        elements.push(&reply[at..at + len]);
        at += len;
    }
    let mut items: Vec<Vec<u8>> = elements.chunks(group).map(|c| c.concat()).collect();
    items.sort();
    Some(items)
}

fn shown(reply: &[u8]) -> String {
    let text = escape(reply);
    match text.char_indices().nth(SHOW_LIMIT) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

fn env_count(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The random source of one sequence, with the helpers generators speak in.
struct Gen {
    rng: StdRng,
    /// The millisecond part of stream IDs drifts upward the way real time does, so
    /// XADD's explicit IDs are mostly new and sometimes too small.
    stream_ms: i64,
}

impl Gen {
    fn new(seed: u64) -> Gen {
        Gen {
            rng: StdRng::seed_from_u64(seed),
            stream_ms: 0,
        }
    }

    fn chance(&mut self, p: f64) -> bool {
        self.rng.gen_bool(p)
    }

    /// Which of `n` branches to take.
    fn branch(&mut self, n: u32) -> u32 {
        self.rng.gen_range(0..n)
    }

    fn int(&mut self, lo: i64, hi: i64) -> String {
        self.rng.gen_range(lo..=hi).to_string()
    }

    fn float(&mut self, lo: f64, hi: f64, decimals: usize) -> String {
        format!("{:.*}", decimals, self.rng.gen_range(lo..hi))
    }

    fn pick(&mut self, options: &[&str]) -> String {
        options.choose(&mut self.rng).expect("options").to_string()
    }

    /// `lo..=hi` distinct options, in random order.
    fn some_of(&mut self, options: &[&str], lo: usize, hi: usize) -> Vec<String> {
        let n = self.rng.gen_range(lo..=hi);
        let chosen = options.choose_multiple(&mut self.rng, n);
        chosen.map(|s| s.to_string()).collect()
    }

    /// `lo..=hi` values made by `make`.
    fn repeat(&mut self, lo: usize, hi: usize, make: impl Fn(&mut Gen) -> Vec<String>) -> Cmd {
        let n = self.rng.gen_range(lo..=hi);
        (0..n).flat_map(|_| make(self)).collect()
    }

    /// A member name out of `count`: `prefix0` ... `prefix{count-1}`.
    fn name(&mut self, prefix: &str, count: u32) -> String {
        format!("{prefix}{}", self.rng.gen_range(0..count))
    }

    /// A string value: numbers in their edge forms, empty, long enough to change an
    /// encoding.
    fn value(&mut self) -> String {
        match self.branch(10) {
            0 => "a".into(),
            1 => "bb".into(),
            2 => String::new(),
            3 => self.int(-9, 99),
            4 => self.pick(&["3.5", "1e2", "-0", " 5"]),
            5 => "x".repeat(self.rng.gen_range(40..=70)),
            6 => (1u64 << 63).to_string(),
            _ => self.int(0, 20),
        }
    }
}

fn strings(g: &mut Gen) -> Cmd {
    let k = g.pick(&["k1", "k2", "k3"]);
    match g.branch(12) {
        0 | 1 => {
            let mut c = cmd!["SET", k, g.value()];
            let options: [&[&str]; 5] = [
                &["NX"],
                &["XX"],
                &["GET"],
                &["KEEPTTL"],
                &["PXAT", "32503680000000"],
            ];
            for option in options {
                if g.chance(0.12) {
                    c.extend(option.iter().map(|w| w.to_string()));
                }
            }
            if g.chance(0.12) {
                c.extend(cmd!["EX", g.pick(&["-1", "0", "100"])]);
            }
            c
        }
        2 => cmd![g.pick(&["INCR", "DECR"]), k],
        3 => {
            let by = [
                &g.int(-10, 10),
                "9223372036854775807",
                "-9223372036854775808",
                "x",
                "1.5",
            ];
            cmd![g.pick(&["INCRBY", "DECRBY"]), k, g.pick(&by)]
        }
        4 => {
            let by = [
                "0.1",
                "-3.5",
                "1e10",
                "5",
                "1.7976931348623157e308",
                "x",
                "inf",
            ];
            cmd!["INCRBYFLOAT", k, g.pick(&by)]
        }
        5 => cmd!["APPEND", k, g.value()],
        6 => cmd!["GETRANGE", k, g.int(-10, 10), g.int(-10, 10)],
        7 => cmd!["SETRANGE", k, g.int(-1, 20), g.value()],
        8 => {
            let options: [&[&str]; 4] = [
                &[],
                &["LEN"],
                &["IDX"],
                &["IDX", "MINMATCHLEN", "2", "WITHMATCHLEN"],
            ];
            let mut c = cmd!["LCS", "k1", "k2"];
            c.extend(
                options
                    .choose(&mut g.rng)
                    .expect("options")
                    .iter()
                    .map(|w| w.to_string()),
            );
            c
        }
        9 => cmd![g.pick(&["GET", "STRLEN", "GETDEL", "TYPE"]), k],
        10 => cmd!["OBJECT", "ENCODING", k],
        _ => match g.branch(5) {
            0 => cmd!["MSET", "k1", g.value(), "k2", g.value()],
            1 => cmd!["MSETNX", "k3", g.value(), "k4", "x"],
            2 => cmd!["MGET", "k1", "k2", "k3", "k4"],
            3 => cmd!["GETEX", k, "PERSIST"],
            _ => cmd!["GETSET", k, g.value()],
        },
    }
}

fn lists(g: &mut Gen) -> Cmd {
    let k = g.pick(&["l1", "l2"]);
    let item = |g: &mut Gen| {
        vec![if g.chance(0.4) {
            g.int(0, 5)
        } else {
            g.pick(&["a", "b", "c"])
        }]
    };
    match g.branch(13) {
        12 => sort(g, k),
        // Now and then a run of long values, past a listpack's 8 KB: quicklist nodes
        // split, merge and convert back.
        10 => {
            let mut c = cmd![g.pick(&["LPUSH", "RPUSH"]), k];
            c.extend(g.repeat(20, 150, |g| vec![g.value()]));
            c
        }
        11 => cmd!["OBJECT", "ENCODING", k],
        0..=2 => {
            let mut c = cmd![g.pick(&["LPUSH", "RPUSH", "LPUSHX", "RPUSHX"]), k];
            c.extend(g.repeat(1, 4, item));
            c
        }
        3 => cmd!["LRANGE", k, g.int(-8, 8), g.int(-8, 8)],
        4 => {
            let mut c = cmd![g.pick(&["LPOP", "RPOP"]), k];
            if g.chance(0.5) {
                c.push(g.int(0, 3));
            }
            c
        }
        5 => {
            let mut c = cmd!["LPOS", k];
            c.extend(item(g));
            for (option, lo, hi, p) in [
                ("RANK", -2, 2, 0.4),
                ("COUNT", 0, 3, 0.4),
                ("MAXLEN", 0, 5, 0.3),
            ] {
                if g.chance(p) {
                    c.extend(cmd![option, g.int(lo, hi)]);
                }
            }
            c
        }
        6 => {
            let mut c = cmd!["LINSERT", k, g.pick(&["BEFORE", "AFTER"])];
            c.extend(item(g));
            c.extend(item(g));
            c
        }
        7 => match g.branch(4) {
            0 => cmd!["LREM", k, g.int(-2, 2), item(g).remove(0)],
            1 => cmd!["LSET", k, g.int(-4, 4), item(g).remove(0)],
            2 => cmd!["LTRIM", k, g.int(-5, 5), g.int(-5, 5)],
            _ => cmd!["LINDEX", k, g.int(-5, 5)],
        },
        8 => {
            let sides = ["LEFT", "RIGHT"];
            cmd![
                "LMOVE",
                k,
                g.pick(&["l1", "l2"]),
                g.pick(&sides),
                g.pick(&sides)
            ]
        }
        _ => cmd![
            "LMPOP",
            "2",
            "l1",
            "l2",
            g.pick(&["LEFT", "RIGHT"]),
            "COUNT",
            g.int(1, 3)
        ],
    }
}

/// SORT / SORT_RO of a list: BY (a missing pattern, whose equal weights leave the
/// order to Redis's tie-break on the elements, or `nosort`), GET, ALPHA, DESC, LIMIT
/// and STORE now and then. Never ALPHA with a BY pattern: Redis compares equal
/// weights as equal there, and the order is then its quicksort's own.
fn sort(g: &mut Gen, key: String) -> Cmd {
    let mut c = cmd![g.pick(&["SORT", "SORT_RO"]), key];
    let by = g.chance(0.3).then(|| g.pick(&["w_*", "nosort", "l1"]));
    if g.chance(0.2) {
        c.extend(cmd!["GET", g.pick(&["#", "w_*"])]);
    }
    if by.as_deref() != Some("w_*") && g.chance(0.5) {
        c.push("ALPHA".into());
    }
    if let Some(pattern) = by {
        c.extend(cmd!["BY", pattern]);
    }
    if g.chance(0.3) {
        c.push("DESC".into());
    }
    if g.chance(0.3) {
        c.extend(cmd!["LIMIT", g.int(-1, 3), g.int(-1, 4)]);
    }
    if c[0] == "SORT" && g.chance(0.3) {
        c.extend(cmd!["STORE", g.pick(&["l1", "l2", "dst"])]);
    }
    c
}

fn hashes(g: &mut Gen) -> Cmd {
    let k = g.pick(&["h1", "h2"]);
    let field = |g: &mut Gen| g.name("f", 10);
    match g.branch(10) {
        // Now and then past 128 fields: the listpack turns into a table.
        9 => {
            let mut c = cmd!["HSET", k];
            c.extend(g.repeat(20, 200, |g| vec![g.name("many", 300), g.int(0, 9)]));
            c
        }
        0 | 1 => {
            let mut c = cmd!["HSET", k];
            c.extend(g.repeat(1, 3, |g| vec![field(g), g.value()]));
            c
        }
        2 => cmd![g.pick(&["HGET", "HEXISTS", "HSTRLEN", "HDEL"]), k, field(g)],
        3 => cmd!["HMGET", k, field(g), field(g)],
        4 => {
            let by = [&g.int(-5, 5), "9223372036854775807", "x"];
            cmd!["HINCRBY", k, field(g), g.pick(&by)]
        }
        5 => {
            let by = [&g.int(-5, 5), "0.1", "1e308", "inf", "x"];
            cmd!["HINCRBYFLOAT", k, field(g), g.pick(&by)]
        }
        6 => cmd!["HSETNX", k, field(g), g.value()],
        // Whole-hash reads only now and then: a value over 64 bytes turns the hash into
        // a table, whose order is the server's own; OBJECT ENCODING says which it is.
        7 if g.chance(0.15) => cmd![g.pick(&["HKEYS", "HVALS", "HGETALL"]), k],
        7 => cmd!["HLEN", k],
        _ => cmd!["OBJECT", "ENCODING", k],
    }
}

fn sets(g: &mut Gen) -> Cmd {
    let k = g.pick(&["s1", "s2", "s3"]);
    let member = |g: &mut Gen| match g.branch(3) {
        0 => g.pick(&["a", "b", "c", "9223372036854775808"]),
        _ => g.int(-3, 20),
    };
    let some_keys = |g: &mut Gen| g.some_of(&["s1", "s2", "s3", "missing"], 1, 3);
    match g.branch(11) {
        // Now and then many integers: an intset grows past 512 and turns into a table.
        10 => {
            let mut c = cmd!["SADD", k];
            c.extend(g.repeat(50, 400, |g| vec![g.int(-1000, 1000)]));
            c
        }
        0..=2 => {
            let mut c = cmd!["SADD", k];
            c.extend(g.repeat(1, 4, |g| vec![member(g)]));
            c
        }
        3 => cmd![g.pick(&["SREM", "SISMEMBER"]), k, member(g)],
        4 => cmd!["SMISMEMBER", k, member(g), member(g)],
        5 => {
            let mut c = cmd![
                g.pick(&["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"]),
                g.pick(&["s1", "s2", "s3", "dst"])
            ];
            c.extend(some_keys(g));
            c
        }
        6 => {
            let mut c = cmd!["SINTERCARD", "2", "s1", "s2"];
            if g.chance(0.5) {
                c.extend(cmd!["LIMIT", g.int(0, 3)]);
            }
            c
        }
        7 => cmd!["SMOVE", k, g.pick(&["s1", "s2", "s3"]), member(g)],
        8 => cmd!["SCARD", k],
        _ => cmd!["OBJECT", "ENCODING", g.pick(&["s1", "s2", "s3", "dst"])],
    }
}

fn score(g: &mut Gen) -> String {
    match g.branch(8) {
        0 => g.int(-5, 5),
        1 => g.float(-5.0, 5.0, 3),
        2 => format!("({}", g.int(-5, 5)),
        _ => g.pick(&["-inf", "+inf", "1e3", "nan", "x"]),
    }
}

fn lex_bound(g: &mut Gen) -> String {
    match g.branch(4) {
        0 => format!("[m{}", g.int(0, 9)),
        1 => format!("(m{}", g.int(0, 9)),
        _ => g.pick(&["-", "+", "[a", "(b", "x"]),
    }
}

fn sorted_sets(g: &mut Gen) -> Cmd {
    let k = g.pick(&["z1", "z2", "z3"]);
    let member = |g: &mut Gen| g.name("m", 13);
    match g.branch(12) {
        0..=2 => {
            let mut c = cmd!["ZADD", k];
            for flag in ["NX", "XX", "GT", "LT", "CH", "INCR"] {
                if g.chance(0.1) {
                    c.push(flag.into());
                }
            }
            c.extend(g.repeat(1, 4, |g| {
                let s = if g.chance(0.5) {
                    g.int(-5, 5)
                } else {
                    g.float(-5.0, 5.0, 2)
                };
                vec![s, member(g)]
            }));
            c
        }
        3 => {
            let mut c = cmd!["ZRANGE", k];
            match g.branch(3) {
                0 => c.extend(cmd![score(g), score(g), "BYSCORE"]),
                1 => c.extend(cmd![lex_bound(g), lex_bound(g), "BYLEX"]),
                _ => c.extend(cmd![g.int(-6, 6), g.int(-6, 6)]),
            }
            if g.chance(0.3) {
                c.push("REV".into());
            }
            if g.chance(0.3) {
                c.extend(cmd!["LIMIT", g.int(-1, 3), g.int(-1, 4)]);
            }
            if g.chance(0.4) {
                c.push("WITHSCORES".into());
            }
            c
        }
        4 => {
            let name = g.pick(&["ZRANGEBYSCORE", "ZREVRANGEBYSCORE", "ZCOUNT"]);
            let mut c = cmd![name, k, score(g), score(g)];
            if g.chance(0.3) {
                c.push("WITHSCORES".into());
            }
            if g.chance(0.3) {
                c.extend(cmd!["LIMIT", g.int(0, 3), g.int(-1, 3)]);
            }
            c
        }
        5 => {
            let name = g.pick(&[
                "ZRANGEBYLEX",
                "ZREVRANGEBYLEX",
                "ZLEXCOUNT",
                "ZREMRANGEBYLEX",
            ]);
            cmd![name, k, lex_bound(g), lex_bound(g)]
        }
        6 => set_operation(g),
        7 => {
            let mut c = cmd![g.pick(&["ZPOPMIN", "ZPOPMAX"]), k];
            if g.chance(0.5) {
                c.push(g.int(-1, 3));
            }
            c
        }
        8 => cmd![
            "ZMPOP",
            "2",
            k,
            "z2",
            g.pick(&["MIN", "MAX"]),
            "COUNT",
            g.int(1, 3)
        ],
        9 => {
            let name = g.pick(&["ZREMRANGEBYRANK", "ZREMRANGEBYSCORE"]);
            if g.chance(0.5) {
                cmd![name, k, g.int(-5, 5), g.int(-5, 5)]
            } else {
                cmd![name, k, score(g), score(g)]
            }
        }
        10 => match g.branch(8) {
            0 => cmd!["ZSCORE", k, member(g)],
            1 => cmd!["ZMSCORE", k, member(g), member(g)],
            2 => cmd!["ZRANK", k, member(g)],
            3 => cmd!["ZREVRANK", k, member(g)],
            4 => cmd!["ZINCRBY", k, score(g), member(g)],
            5 => cmd!["ZREM", k, member(g), member(g)],
            6 => cmd!["ZCARD", k],
            _ => cmd!["ZINTERCARD", "2", "z1", "z2", "LIMIT", g.int(0, 3)],
        },
        _ => {
            let mut c = cmd!["ZRANGESTORE", "dst", k, g.int(-5, 5), g.int(-5, 5)];
            if g.chance(0.3) {
                c.push("REV".into());
            }
            c
        }
    }
}

/// ZUNION / ZINTER / ZDIFF and their STORE forms, with weights and aggregates.
fn set_operation(g: &mut Gen) -> Cmd {
    let name = g.pick(&[
        "ZUNIONSTORE",
        "ZINTERSTORE",
        "ZDIFFSTORE",
        "ZUNION",
        "ZINTER",
        "ZDIFF",
    ]);
    let stores = name.ends_with("STORE");
    let keys = g.some_of(&["z1", "z2", "z3", "missing"], 1, 3);
    let mut c = cmd![name.clone()];
    if stores {
        c.push("dst".into());
    }
    c.push(keys.len().to_string());
    c.extend(keys.iter().cloned());
    if !name.contains("DIFF") {
        if g.chance(0.3) {
            c.push("WEIGHTS".into());
            c.extend(g.repeat(keys.len(), keys.len(), |g| {
                vec![g.pick(&["1", "2", "-1", "0.5", "inf"])]
            }));
        }
        if g.chance(0.3) {
            c.extend(cmd!["AGGREGATE", g.pick(&["SUM", "MIN", "MAX"])]);
        }
    }
    if !stores && g.chance(0.4) {
        c.push("WITHSCORES".into());
    }
    c
}

/// A stream ID for reads, deletes and group positions: mostly near the IDs added,
/// sometimes malformed or special.
fn stream_id(g: &mut Gen) -> String {
    if g.chance(0.05) {
        let odd = [
            "-",
            "+",
            "$",
            "0",
            "0-0",
            "abc",
            "1-x",
            "18446744073709551615-18446744073709551615",
        ];
        return g.pick(&odd);
    }
    let ms = g.int(0, g.stream_ms.max(0) + 3);
    match g.branch(10) {
        0 => ms,
        1 => format!("({ms}-{}", g.int(0, 3)),
        _ => format!("{ms}-{}", g.int(0, 3)),
    }
}

fn streams(g: &mut Gen) -> Cmd {
    let k = g.pick(&["s1", "s2", "str"]);
    let group = g.pick(&["g1", "g2"]);
    let consumer = g.pick(&["alice", "bob", "carol"]);
    match g.branch(18) {
        0..=3 => stream_add(g, k),
        4 => cmd!["XLEN", k],
        5 => {
            let mut c = cmd![
                g.pick(&["XRANGE", "XREVRANGE"]),
                k,
                stream_id(g),
                stream_id(g)
            ];
            if g.chance(0.5) {
                c.extend(cmd!["COUNT", g.int(-1, 5)]);
            }
            c
        }
        6 => {
            let mut c = cmd!["XDEL", k];
            c.extend(g.repeat(1, 3, |g| vec![stream_id(g)]));
            c
        }
        7 => {
            let mut c = cmd!["XTRIM", k];
            c.extend(trim_strategy(g, 10, 3));
            c
        }
        8 | 9 => {
            let action = if g.branch(2) == 0 { "CREATE" } else { "SETID" };
            let mut c = cmd!["XGROUP", action, k, group];
            c.push(match g.branch(3) {
                0 => "$".into(),
                1 => "0".into(),
                _ => stream_id(g),
            });
            if action == "CREATE" && g.chance(0.3) {
                c.push("MKSTREAM".into());
            }
            if g.chance(0.3) {
                c.extend(cmd!["ENTRIESREAD", g.int(-1, 10)]);
            }
            c
        }
        10 => cmd![
            "XGROUP",
            g.pick(&["CREATECONSUMER", "DELCONSUMER"]),
            k,
            group,
            consumer
        ],
        11 if g.chance(0.2) => cmd!["XGROUP", "DESTROY", k, group],
        11 | 12 => {
            let mut c = cmd!["XREADGROUP", "GROUP", group, consumer];
            if g.chance(0.5) {
                c.extend(cmd!["COUNT", g.int(0, 4)]);
            }
            if g.chance(0.2) {
                c.push("NOACK".into());
            }
            let keys = g.some_of(&["s1", "s2"], 1, 2);
            c.push("STREAMS".into());
            c.extend(keys.iter().cloned());
            for _ in &keys {
                let position = if g.chance(0.5) {
                    ">".into()
                } else {
                    g.pick(&["0", ">"])
                };
                c.push(if g.chance(0.25) {
                    stream_id(g)
                } else {
                    position
                });
            }
            c
        }
        13 => {
            let mut c = cmd!["XACK", k, group];
            c.extend(g.repeat(1, 3, |g| vec![stream_id(g)]));
            c
        }
        14 => cmd!["XPENDING", k, group],
        15 => {
            let mut c = cmd!["XCLAIM", k, group, consumer, "0"];
            c.extend(g.repeat(1, 3, |g| vec![stream_id(g)]));
            for flag in ["JUSTID", "FORCE"] {
                if g.chance(0.3) {
                    c.push(flag.into());
                }
            }
            if g.chance(0.2) {
                c.extend(cmd!["RETRYCOUNT", g.int(0, 5)]);
            }
            if g.chance(0.2) {
                c.extend(cmd!["LASTID", stream_id(g)]);
            }
            c
        }
        16 => {
            let mut c = cmd!["XAUTOCLAIM", k, group, consumer, "0", stream_id(g)];
            if g.chance(0.5) {
                c.extend(cmd!["COUNT", g.int(0, 5)]);
            }
            if g.chance(0.3) {
                c.push("JUSTID".into());
            }
            c
        }
        _ => match g.branch(7) {
            0 => cmd!["XINFO", "STREAM", k],
            1 => cmd!["XINFO", "GROUPS", k],
            2 => cmd!["XSETID", k, stream_id(g)],
            3 => cmd!["XREAD", "COUNT", g.int(1, 3), "STREAMS", k, stream_id(g)],
            4 => cmd!["TYPE", k],
            5 => cmd!["SET", "str", "x"],
            _ => cmd!["DEL", k],
        },
    }
}

/// XTRIM's strategy, or XADD's trimming: MAXLEN up to `max_len` or MINID, with
/// `=` or `~` now and then, and a LIMIT up to `max_limit` sometimes.
fn trim_strategy(g: &mut Gen, max_len: i64, max_limit: i64) -> Cmd {
    let by = g.pick(&["MAXLEN", "MINID"]);
    let mut c = cmd![by.clone()];
    if g.chance(0.5) {
        c.push(g.pick(&["=", "~"]));
    }
    c.push(if by == "MAXLEN" {
        g.int(0, max_len)
    } else {
        stream_id(g)
    });
    if g.chance(0.2) {
        c.extend(cmd!["LIMIT", g.int(0, max_limit)]);
    }
    c
}

/// XADD with an explicit ID (never `*`: the servers' clocks differ), options now and
/// then, and sometimes an odd number of field words.
fn stream_add(g: &mut Gen, key: String) -> Cmd {
    let mut c = cmd!["XADD", key];
    if g.chance(0.1) {
        c.push("NOMKSTREAM".into());
    }
    if g.chance(0.25) {
        c.extend(trim_strategy(g, 12, 5));
    }
    g.stream_ms += g.rng.gen_range(-1..=2);
    let ms = g.stream_ms.max(0);
    c.push(match g.branch(5) {
        0 => format!("{ms}-*"),
        1 => ms.to_string(),
        2 => g.pick(&["0-0", "*-1"]),
        _ => format!("{ms}-{}", g.int(0, 5)),
    });
    c.extend(g.repeat(1, 3, |g| vec![g.pick(&["f", "g", "h"]), g.int(0, 99)]));
    if g.chance(0.05) {
        c.pop();
    }
    c
}

fn bitmaps(g: &mut Gen) -> Cmd {
    let k = g.pick(&["b1", "b2", "b3", "str"]);
    match g.branch(9) {
        0 | 1 => {
            let offset = if g.chance(0.95) {
                g.int(0, 200)
            } else {
                g.pick(&["-1", "x", "4294967296"])
            };
            cmd!["SETBIT", k, offset, g.pick(&["0", "1", "1", "2"])]
        }
        2 => cmd!["GETBIT", k, g.int(0, 250)],
        3 => {
            let mut c = cmd!["BITCOUNT", k];
            if g.chance(0.7) {
                c.extend(cmd![g.int(-30, 30), g.int(-30, 30)]);
                if g.chance(0.5) {
                    c.push(g.pick(&["BIT", "BYTE", "bit", "xx"]));
                }
            }
            c
        }
        4 => {
            let mut c = cmd!["BITPOS", k, g.pick(&["0", "1"])];
            c.extend(g.repeat(0, 2, |g| vec![g.int(-40, 40)]));
            if c.len() == 5 && g.chance(0.5) {
                c.push(g.pick(&["BIT", "BYTE"]));
            }
            c
        }
        5 => {
            let op = g.pick(&["AND", "OR", "XOR", "NOT"]);
            let sources = if op == "NOT" { 1 } else { 3 };
            let mut c = cmd!["BITOP", op, g.pick(&["b1", "b2", "b3", "dst"])];
            c.extend(g.some_of(&["b1", "b2", "b3", "missing"], 1, sources));
            c
        }
        6 => bitfield(g, k, "BITFIELD"),
        7 => bitfield(g, k, "BITFIELD_RO"),
        _ => match g.branch(4) {
            0 => cmd!["GET", k],
            1 => cmd!["STRLEN", k],
            2 => cmd!["SET", "str", "foobar"],
            _ => cmd!["APPEND", k, "\u{0}\u{7f}"],
        },
    }
}

fn bitfield(g: &mut Gen, key: String, name: &str) -> Cmd {
    let read_only = name == "BITFIELD_RO";
    let mut c = cmd![name, key];
    for _ in 0..g.rng.gen_range(1..=4) {
        let ty = format!("{}{}", g.pick(&["i", "u"]), g.int(1, 64));
        let offset = if g.chance(0.7) {
            g.int(0, 100)
        } else {
            format!("#{}", g.int(0, 10))
        };
        let op = if read_only {
            "GET".into()
        } else {
            g.pick(&["GET", "SET", "INCRBY", "OVERFLOW"])
        };
        match op.as_str() {
            "GET" => c.extend(cmd!["GET", ty, offset]),
            "SET" => c.extend(cmd!["SET", ty, offset, g.int(-(1 << 40), 1 << 40)]),
            "INCRBY" => c.extend(cmd!["INCRBY", ty, offset, g.int(-300, 300)]),
            _ => c.extend(cmd!["OVERFLOW", g.pick(&["WRAP", "SAT", "FAIL"])]),
        }
    }
    c
}

fn hyperloglog(g: &mut Gen) -> Cmd {
    let keys = ["h1", "h2", "h3"];
    match g.branch(6) {
        0..=2 => {
            let mut c = cmd!["PFADD", g.pick(&keys)];
            c.extend(g.repeat(0, 40, |g| vec![g.name("e", 3000)]));
            c
        }
        3 => {
            let mut c = cmd!["PFCOUNT"];
            c.extend(g.some_of(&keys, 1, 3));
            c
        }
        4 => {
            let mut c = cmd!["PFMERGE", g.pick(&["h1", "h2", "h3", "hm"])];
            c.extend(g.some_of(&keys, 1, 2));
            c
        }
        _ => cmd!["GET", g.pick(&["h1", "h2", "h3", "hm"])],
    }
}

fn geo(g: &mut Gen) -> Cmd {
    let k = g.pick(&["g1", "g2"]);
    let member = |g: &mut Gen| g.name("m", 41);
    match g.branch(8) {
        0..=2 => {
            let mut c = cmd!["GEOADD", k];
            for flag in ["NX", "XX", "CH"] {
                if g.chance(0.1) {
                    c.push(flag.into());
                }
            }
            c.extend(g.repeat(1, 4, |g| {
                vec![
                    g.float(-180.0, 180.0, 6),
                    g.float(-85.0, 85.0, 6),
                    member(g),
                ]
            }));
            c
        }
        3 => {
            let mut c = cmd!["GEODIST", k, member(g), member(g)];
            if g.chance(0.5) {
                c.push(g.pick(&["m", "km", "mi", "ft"]));
            }
            c
        }
        4 => {
            let mut c = cmd![g.pick(&["GEOHASH", "GEOPOS"]), k];
            c.extend(g.repeat(1, 3, |g| vec![member(g)]));
            c
        }
        5 => geo_search(g, k, false),
        6 => geo_search(g, k, true),
        _ => match g.branch(3) {
            0 => cmd![
                "ZRANGE",
                g.pick(&["dst", "g1", "g2"]),
                "0",
                "-1",
                "WITHSCORES"
            ],
            1 => cmd![
                "GEORADIUSBYMEMBER",
                k,
                member(g),
                "5000",
                "km",
                "WITHDIST",
                "ASC"
            ],
            _ => cmd![
                "GEORADIUS",
                k,
                "10",
                "20",
                "3000",
                "km",
                "COUNT",
                "3",
                "DESC"
            ],
        },
    }
}

fn geo_search(g: &mut Gen, key: String, store: bool) -> Cmd {
    let mut c = if store {
        cmd!["GEOSEARCHSTORE", g.pick(&["dst", "g2"]), key]
    } else {
        cmd!["GEOSEARCH", key]
    };
    if g.chance(0.5) {
        c.extend(cmd!["FROMMEMBER", g.name("m", 41)]);
    } else {
        c.extend(cmd![
            "FROMLONLAT",
            g.float(-180.0, 180.0, 4),
            g.float(-85.0, 85.0, 4)
        ]);
    }
    if g.chance(0.5) {
        c.extend(cmd!["BYRADIUS", g.int(1, 20000), "km"]);
    } else {
        c.extend(cmd!["BYBOX", g.int(1, 20000), g.int(1, 20000), "km"]);
    }
    if g.chance(0.5) {
        c.push(g.pick(&["ASC", "DESC"]));
    }
    if g.chance(0.5) {
        c.extend(cmd!["COUNT", g.int(1, 5)]);
        if g.chance(0.3) {
            c.push("ANY".into());
        }
    }
    if store {
        if g.chance(0.5) {
            c.push("STOREDIST".into());
        }
    } else {
        for flag in ["WITHCOORD", "WITHDIST", "WITHHASH"] {
            if g.chance(0.3) {
                c.push(flag.into());
            }
        }
    }
    c
}

fn keys(g: &mut Gen) -> Cmd {
    let names = ["a", "b", "c", "l", "h", "z", "s"];
    let key = |g: &mut Gen| g.pick(&names);
    match g.branch(14) {
        0 => match g.branch(5) {
            0 => cmd!["SET", key(g), g.int(0, 9)],
            1 => cmd!["RPUSH", "l", g.int(0, 9)],
            2 => cmd!["HSET", "h", "f", g.int(0, 9)],
            3 => cmd!["ZADD", "z", g.int(0, 9), "m"],
            _ => cmd!["SADD", "s", g.int(0, 9)],
        },
        1 => cmd![g.pick(&["RENAME", "RENAMENX"]), key(g), key(g)],
        2 => {
            let mut c = cmd!["COPY", key(g), key(g)];
            if g.chance(0.5) {
                c.push("REPLACE".into());
            }
            if g.chance(0.3) {
                c.extend(cmd!["DB", g.int(0, 2)]);
            }
            c
        }
        3 => cmd!["MOVE", key(g), g.int(0, 2)],
        4 => cmd!["SELECT", g.int(0, 2)],
        5 => cmd!["SWAPDB", g.int(0, 2), g.int(0, 2)],
        6 => {
            let mut c = cmd![g.pick(&["DEL", "UNLINK", "EXISTS", "TOUCH"])];
            c.extend(g.repeat(1, 3, |g| vec![key(g)]));
            c
        }
        7 => cmd![
            g.pick(&["TYPE", "PERSIST", "EXPIRETIME", "PEXPIRETIME"]),
            key(g)
        ],
        8 => {
            let mut c = cmd!["EXPIRE", key(g), g.pick(&["-1", "0"])];
            if g.chance(0.3) {
                c.push(g.pick(&["NX", "XX", "GT", "LT"]));
            }
            c
        }
        9 => {
            // Absolute times, so that both servers agree on what is left.
            let at = g.pick(&["32503680000", "32503680001", "32503690000"]);
            let mut c = cmd![g.pick(&["EXPIREAT", "PEXPIREAT"]), key(g), at];
            if g.chance(0.3) {
                c.push(g.pick(&["NX", "XX", "GT", "LT"]));
            }
            c
        }
        10 => cmd!["OBJECT", "ENCODING", key(g)],
        11 if g.chance(0.2) => cmd!["FLUSHDB"],
        11 => cmd!["DBSIZE"],
        12 => cmd!["EXISTS", key(g), key(g)],
        _ => cmd!["GET", key(g)],
    }
}

fn transactions(g: &mut Gen) -> Cmd {
    let key = |g: &mut Gen| g.pick(&["a", "b", "c"]);
    match g.branch(11) {
        0 => cmd!["MULTI"],
        1 => cmd!["EXEC"],
        2 => cmd!["DISCARD"],
        3 => cmd!["WATCH", key(g)],
        4 => cmd!["UNWATCH"],
        5 => cmd!["INCR", key(g)],
        6 => cmd!["SET", key(g), g.pick(&["x", "1"])],
        7 => match g.branch(6) {
            0 => cmd!["GET"],
            1 => cmd!["NOSUCH"],
            2 => cmd!["INCRBY", key(g), "x"],
            3 => cmd!["LPUSH", key(g), "v"],
            4 => cmd!["SELECT", g.pick(&["0", "1"])],
            _ => cmd!["PING"],
        },
        8 => cmd!["GET", key(g)],
        9 => cmd!["EVAL", "return redis.call('INCR', KEYS[1])", "1", key(g)],
        _ => cmd!["DEL", key(g)],
    }
}

/// The data-type families, for the generators that mix them.
const DATA_FAMILIES: [Family; 8] = [
    strings,
    lists,
    hashes,
    sets,
    sorted_sets,
    streams,
    bitmaps,
    geo,
];

fn any_data_command(g: &mut Gen) -> Cmd {
    DATA_FAMILIES[g.branch(DATA_FAMILIES.len() as u32) as usize](g)
}

/// Commands of every data-type family, queued between MULTI and EXEC now and then:
/// queue-time refusals (EXECABORT), errors at EXEC, WATCHed keys changed.
fn in_transactions(g: &mut Gen) -> Cmd {
    match g.branch(40) {
        0..=3 => cmd!["MULTI"],
        4..=7 => cmd!["EXEC"],
        8 => cmd!["DISCARD"],
        9..=11 => {
            let keys = [
                "k1", "k2", "l1", "l2", "h1", "h2", "s1", "s2", "z1", "z2", "b1", "g1", "str",
            ];
            cmd!["WATCH", g.pick(&keys)]
        }
        // An EXEC reply is compared whole: no whole-hash reads in it.
        _ => ordered_data_command(g),
    }
}

/// A data-type command whose reply has one right order.
fn ordered_data_command(g: &mut Gen) -> Cmd {
    loop {
        let command = any_data_command(g);
        if unordered_read(&command[0]).is_none() {
            return command;
        }
    }
}

/// A command of any data-type family run by a script through `redis.call`: its reply
/// converted to Lua and back (in RESP3 half the time), its errors raised as script
/// errors. Now and then a key is copied onto another by DUMP and RESTORE.
fn via_script(g: &mut Gen) -> Cmd {
    if g.chance(0.08) {
        return dump_and_restore(g);
    }
    let command = any_data_command(g);
    let script = if g.chance(0.5) {
        "redis.setresp(3) return redis.call(unpack(ARGV))"
    } else {
        "return redis.call(unpack(ARGV))"
    };
    let mut c = cmd!["EVAL", script, "0"];
    c.extend(command);
    c
}

/// A script that copies one family key onto another (often of another type) through
/// DUMP and RESTORE REPLACE: later commands then read and change restored values.
fn dump_and_restore(g: &mut Gen) -> Cmd {
    const KEYS: [&str; 20] = [
        "k1", "k2", "k3", "l1", "l2", "h1", "h2", "s1", "s2", "s3", "z1", "z2", "z3", "b1", "b2",
        "b3", "g1", "g2", "str", "dst",
    ];
    let script = "local payload = redis.call('DUMP', KEYS[1]) \
        if not payload then return false end \
        return redis.call('RESTORE', KEYS[2], 0, payload, 'REPLACE')";
    cmd!["EVAL", script, "2", g.pick(&KEYS), g.pick(&KEYS)]
}

/// What two servers sent before closing a half-closed connection agrees: the same
/// bytes, or for a reply too big for the socket (a bitmap grown to hundreds of MB),
/// the same start: each server stops writing when it sees the close, wherever its
/// writes got to.
fn same_until_closed(kvik: &[u8], redis: &[u8]) -> bool {
    const SOCKET_SIZED: usize = 64 * 1024;
    let common = kvik.len().min(redis.len());
    kvik == redis || (common > SOCKET_SIZED && kvik[..common] == redis[..common])
}

/// A request for the protocol test: one or two commands, RESP or inline, maybe bent.
fn protocol_request(g: &mut Gen) -> Vec<u8> {
    let mut request = match g.branch(4) {
        0 => inline(&ordered_data_command(g)),
        1 => odd_header(g),
        _ => support::encode_command(&ordered_data_command(g)),
    };
    for _ in 0..g.rng.gen_range(0..=3) {
        bend(g, &mut request);
    }
    if g.chance(0.3) {
        request.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
    }
    request
}

/// A command as an inline request: its words quoted now and then (sometimes with a
/// quote left open).
fn inline(command: &Cmd) -> Vec<u8> {
    let mut line = String::new();
    for (i, word) in command.iter().enumerate() {
        if i > 0 {
            line.push(' ');
        }
        match i % 4 {
            1 => line += &format!("\"{word}\""),
            3 => line += &format!("'{word}'"),
            _ => line += word,
        }
    }
    line += "\r\n";
    line.into_bytes()
}

/// Multibulk and bulk headers at and past their limits.
fn odd_header(g: &mut Gen) -> Vec<u8> {
    let count = g.pick(&[
        "-1",
        "0",
        "1",
        "abc",
        "",
        " 1",
        "1048577",
        "99999999999999999999",
    ]);
    let length = g.pick(&["-1", "0", "3", "x", "", "536870913", "99999999999999999999"]);
    format!("*{count}\r\n${length}\r\nGET\r\n").into_bytes()
}

/// One random edit: a byte replaced, dropped or added (protocol-meaningful ones
/// mostly), or the request cut short.
fn bend(g: &mut Gen, request: &mut Vec<u8>) {
    const BYTES: &[u8] = b"*$\r\n0123456789- \"'\\a";
    if request.is_empty() {
        return;
    }
    let at = g.rng.gen_range(0..request.len());
    let byte = BYTES[g.rng.gen_range(0..BYTES.len())];
    match g.branch(4) {
        0 => request[at] = byte,
        1 => {
            request.remove(at);
        }
        2 => request.insert(at, byte),
        _ => request.truncate(at),
    }
}

/// EVAL of `return <value>`: Lua values of every kind, nested, converted to replies
/// (RESP3 ones when the script asks for it).
fn lua_values(g: &mut Gen) -> Cmd {
    let resp = if g.chance(0.33) {
        "redis.setresp(3) "
    } else {
        ""
    };
    let body = if g.chance(0.1) {
        format!("{resp}local t = {} return type(t)", lua_value(g, 0))
    } else {
        format!("{resp}return {}", lua_value(g, 0))
    };
    cmd!["EVAL", body, "0"]
}

fn lua_value(g: &mut Gen, depth: u32) -> String {
    let kinds = if depth < 2 { 13 } else { 9 };
    match g.branch(kinds) {
        0 => g.int(-5, 5),
        1 => g.pick(&[
            "3.7", "-2.5", "1e20", "0.5", "-0.0", "1/0", "-1/0", "0/0", "2^53", "2^63",
        ]),
        2 => g.pick(&["'str'", "''", "'1.5'", "'10'"]),
        3 => g.pick(&["true", "false", "nil"]),
        4 => g.pick(&[
            "{err='boom'}",
            "{ok='fine'}",
            "redis.error_reply('E1 x')",
            "redis.status_reply('S')",
            "{err=''}",
            "{ok=5}",
        ]),
        5 => g.pick(&[
            "redis.call('GET','k')",
            "redis.call('INCR','n')",
            "redis.call('HGETALL','h')",
            "redis.call('SMEMBERS','s')",
            "redis.pcall('LPUSH','k','x')",
            "redis.call('ZRANGE','z',0,-1,'WITHSCORES')",
            "redis.call('PING')",
            "redis.call('HSET','h','a',1)",
        ]),
        6 => g.pick(&[
            "{double=1.5}",
            "{big_number='123'}",
            "{map={a=1}}",
            "{set={x=true}}",
            "{verbatim_string={format='txt',string='hi'}}",
        ]),
        _ => {
            let items: Vec<String> = (0..g.rng.gen_range(0..=4))
                .map(|_| lua_value(g, depth + 1))
                .collect();
            format!("{{{}}}", items.join(","))
        }
    }
}
