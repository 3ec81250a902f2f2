//! INFO, COMMAND and CONFIG over real connections: the report's layout and fields
//! (compared with a real Redis 7.0 where one is installed), the counters behind it,
//! the command table as COMMAND describes it, and CONFIG round trips.

mod support;

use redis::{Connection, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use support::{RawConn, RealRedis, TestServer};

fn start() -> TestServer {
    TestServer::start(&["--server-threads", "2"])
}

/// Run a command given as words; the reply as the redis crate parses it.
fn query(c: &mut Connection, words: &[&str]) -> redis::RedisResult<Value> {
    let mut cmd = redis::cmd(words[0]);
    for w in &words[1..] {
        cmd.arg(*w);
    }
    cmd.query(c)
}

fn ok(c: &mut Connection, words: &[&str]) -> Value {
    query(c, words).unwrap_or_else(|e| panic!("{words:?}: {e}"))
}

fn err(c: &mut Connection, words: &[&str]) -> String {
    match query(c, words) {
        Ok(v) => panic!("{words:?} succeeded: {v:?}"),
        Err(e) => {
            let code = e.code().unwrap_or("").to_string();
            let detail = e.detail().unwrap_or("").to_string();
            format!("{code} {detail}").trim().to_string()
        }
    }
}

fn text(c: &mut Connection, words: &[&str]) -> String {
    redis::from_redis_value(&ok(c, words)).expect("a string reply")
}

fn int(c: &mut Connection, words: &[&str]) -> i64 {
    redis::from_redis_value(&ok(c, words)).expect("an integer reply")
}

fn strings(c: &mut Connection, words: &[&str]) -> Vec<String> {
    redis::from_redis_value(&ok(c, words)).expect("an array of strings")
}

/// An INFO report as (section title, [(field, value)]) in order.
type Report = Vec<(String, Vec<(String, String)>)>;

/// Parse INFO's text, checking its framing: CRLF only, `# Title` headers, one blank
/// line between sections, `name:value` lines.
fn parse_info(raw: &str) -> Report {
    assert!(
        !raw.replace("\r\n", "").contains('\n'),
        "bare LF in {raw:?}"
    );
    let mut report: Report = Vec::new();
    if raw.is_empty() {
        return report;
    }
    assert!(raw.ends_with("\r\n"), "no final CRLF: {raw:?}");
    for (i, block) in raw.trim_end_matches("\r\n").split("\r\n\r\n").enumerate() {
        let mut lines = block.split("\r\n");
        let header = lines.next().unwrap();
        let title = header
            .strip_prefix("# ")
            .unwrap_or_else(|| panic!("section {i} starts with {header:?}"));
        let fields = lines
            .map(|l| {
                let (k, v) = l
                    .split_once(':')
                    .unwrap_or_else(|| panic!("not name:value: {l:?}"));
                (k.to_string(), v.to_string())
            })
            .collect();
        report.push((title.to_string(), fields));
    }
    report
}

fn info(c: &mut Connection, sections: &[&str]) -> Report {
    let mut words = vec!["INFO"];
    words.extend_from_slice(sections);
    parse_info(&text(c, &words))
}

fn titles(r: &Report) -> Vec<&str> {
    r.iter().map(|(t, _)| t.as_str()).collect()
}

/// Every field of the report by name.
fn fields(r: &Report) -> BTreeMap<String, String> {
    r.iter().flat_map(|(_, f)| f.iter().cloned()).collect()
}

fn field(c: &mut Connection, section: &str, name: &str) -> String {
    fields(&info(c, &[section]))
        .remove(name)
        .unwrap_or_else(|| panic!("no {name} in INFO {section}"))
}

const DEFAULT_SECTIONS: [&str; 11] = [
    "Server",
    "Clients",
    "Memory",
    "Persistence",
    "Stats",
    "Replication",
    "CPU",
    "Modules",
    "Errorstats",
    "Cluster",
    "Keyspace",
];

const ALL_SECTIONS: [&str; 13] = [
    "Server",
    "Clients",
    "Memory",
    "Persistence",
    "Stats",
    "Replication",
    "CPU",
    "Modules",
    "Commandstats",
    "Errorstats",
    "Latencystats",
    "Cluster",
    "Keyspace",
];

#[test]
fn info_sections_and_their_selection() {
    let server = start();
    let mut c = server.client();
    assert_eq!(titles(&info(&mut c, &[])), DEFAULT_SECTIONS);
    assert_eq!(titles(&info(&mut c, &["default"])), DEFAULT_SECTIONS);
    assert_eq!(titles(&info(&mut c, &["all"])), ALL_SECTIONS);
    assert_eq!(titles(&info(&mut c, &["everything"])), ALL_SECTIONS);
    assert_eq!(
        titles(&info(&mut c, &["keyspace", "SERVER", "cpu"])),
        ["Server", "CPU", "Keyspace"]
    );
    assert_eq!(titles(&info(&mut c, &["server", "server"])), ["Server"]);
    let with_stats = info(&mut c, &["default", "commandstats"]);
    assert_eq!(titles(&with_stats).len(), 12);
    assert!(titles(&with_stats).contains(&"Commandstats"));
    assert!(info(&mut c, &["nosuchsection"]).is_empty());
    assert_eq!(text(&mut c, &["INFO", "nosuchsection"]), "");
}

#[test]
fn info_is_verbatim_text_in_resp3() {
    let server = start();
    let mut raw = server.raw();
    raw.cmd(&["HELLO", "3"]);
    let reply = raw.cmd(&["INFO", "cluster"]);
    assert_eq!(reply, b"=34\r\ntxt:# Cluster\r\ncluster_enabled:0\r\n\r\n");
    let mut raw2 = server.raw();
    let reply = raw2.cmd(&["INFO", "cluster"]);
    assert_eq!(reply, b"$30\r\n# Cluster\r\ncluster_enabled:0\r\n\r\n");
}

/// The fields of each section, in order, are those Redis 7.0 prints (kvik's extras
/// aside). Compared with the installed redis-server when there is one.
#[test]
fn info_fields_are_redis_fields_in_redis_order() {
    let Some(_) = support::redis_server_or_skip() else {
        return;
    };
    let real = RealRedis::start(&[]);
    let server = start();
    let mut theirs = real.client();
    let mut ours = server.client();
    // Fields that list things (one line per db, command or error) vary by content.
    let fixed = |r: Report| -> Vec<(String, Vec<String>)> {
        r.into_iter()
            .filter(|(t, _)| {
                !["Keyspace", "Commandstats", "Errorstats", "Latencystats"].contains(&t.as_str())
            })
            .map(|(t, f)| {
                let names = f
                    .into_iter()
                    .map(|(k, _)| k)
                    .filter(|k| k != "kvik_version" && k != "server_threads")
                    .collect();
                (t, names)
            })
            .collect()
    };
    assert_eq!(
        fixed(info(&mut ours, &["everything"])),
        fixed(info(&mut theirs, &["everything"]))
    );
}

#[test]
fn info_reports_this_server() {
    let server = start();
    let mut c = server.client();
    let mut second = server.client();
    // Once it answered, the second connection is surely registered.
    ok(&mut second, &["PING"]);
    // The start-up probe's connection may not be reaped yet: wait until it is.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let all = loop {
        let all = fields(&info(&mut c, &["everything"]));
        if all.get("connected_clients").map(String::as_str) == Some("2")
            || std::time::Instant::now() > deadline
        {
            break all;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let get = |name: &str| all.get(name).unwrap_or_else(|| panic!("no {name}")).clone();
    assert_eq!(get("redis_version"), "7.0.15");
    assert_eq!(get("kvik_version"), env!("CARGO_PKG_VERSION"));
    assert_eq!(get("redis_mode"), "standalone");
    assert_eq!(get("tcp_port"), server.port().to_string());
    assert_eq!(get("process_id"), server.pid().to_string());
    assert_eq!(get("server_threads"), "2");
    assert_eq!(get("run_id").len(), 40);
    assert_eq!(get("master_replid"), get("run_id"));
    assert_eq!(get("master_replid2"), "0".repeat(40));
    assert_eq!(get("connected_clients"), "2");
    assert_eq!(get("maxclients"), "10000");
    assert_eq!(get("loading"), "0");
    assert_eq!(get("async_loading"), "0");
    assert_eq!(get("role"), "master");
    assert_eq!(get("cluster_enabled"), "0");
    assert_eq!(get("maxmemory_policy"), "noeviction");
    assert!(get("mem_allocator").starts_with("jemalloc-5."));
    assert!(get("executable").ends_with("kvik-server"));
    let used: u64 = get("used_memory").parse().unwrap();
    assert!(used > 0);
    assert!(get("used_memory_peak").parse::<u64>().unwrap() >= used);
    assert!(get("used_memory_rss").parse::<u64>().unwrap() > 0);
    for human in [
        "used_memory_human",
        "used_memory_rss_human",
        "maxmemory_human",
    ] {
        assert!(is_human_size(&get(human)), "{human}: {}", get(human));
    }
    for cpu in ["used_cpu_sys", "used_cpu_user", "used_cpu_user_main_thread"] {
        let v = get(cpu);
        let decimals = v.split_once('.').map(|(_, d)| d.len());
        assert_eq!(decimals, Some(6), "{cpu}: {v}");
    }
    assert!(get("used_memory_peak_perc").ends_with('%'));
    let uptime: u64 = get("uptime_in_seconds").parse().unwrap();
    assert!(uptime < 60);
}

/// `123B`, `1.50K`, `2.00M`, ...
fn is_human_size(s: &str) -> bool {
    if let Some(n) = s.strip_suffix('B') {
        return n.parse::<u64>().is_ok();
    }
    let (n, unit) = s.split_at(s.len() - 1);
    "KMGTP".contains(unit) && n.split_once('.').is_some_and(|(_, d)| d.len() == 2)
}

#[test]
fn info_counts_commands_keys_and_changes() {
    let server = start();
    let mut c = server.client();
    ok(&mut c, &["SET", "a", "1"]);
    ok(&mut c, &["SET", "b", "2", "EX", "1000"]);
    ok(&mut c, &["GET", "a"]);
    ok(&mut c, &["GET", "nosuchkey"]);
    ok(&mut c, &["SELECT", "3"]);
    ok(&mut c, &["SET", "c", "3"]);
    let all = fields(&info(&mut c, &["everything"]));
    assert_eq!(all["db0"], "keys=2,expires=1,avg_ttl=0");
    assert_eq!(all["db3"], "keys=1,expires=0,avg_ttl=0");
    assert!(!all.contains_key("db1"));
    assert_eq!(all["keyspace_hits"], "1");
    assert_eq!(all["keyspace_misses"], "1");
    assert_eq!(all["rdb_changes_since_last_save"], "3");
    let processed: u64 = all["total_commands_processed"].parse().unwrap();
    assert!(processed >= 6, "{processed}");
    assert!(all["total_net_input_bytes"].parse::<u64>().unwrap() > 0);
    assert!(all["total_connections_received"].parse::<u64>().unwrap() >= 1);
}

#[test]
fn commandstats_and_errorstats_count() {
    let server = start();
    let mut c = server.client();
    // The client library's own handshake may have drawn errors already.
    let errors_before = error_count(&mut c);
    for _ in 0..3 {
        ok(&mut c, &["SET", "k", "v"]);
    }
    ok(&mut c, &["GET", "k"]);
    assert!(err(&mut c, &["INCR", "k"]).starts_with("ERR value is not an integer"));
    assert!(err(&mut c, &["GET"]).starts_with("ERR wrong number of arguments"));
    assert!(err(&mut c, &["NOSUCHCOMMAND"]).starts_with("ERR unknown command"));
    ok(&mut c, &["CONFIG", "GET", "maxmemory"]);
    let stats = fields(&info(&mut c, &["commandstats"]));
    let line = |name: &str| {
        stats
            .get(&format!("cmdstat_{name}"))
            .unwrap_or_else(|| panic!("no cmdstat_{name} in {stats:?}"))
            .clone()
    };
    let counts = |name: &str| -> BTreeMap<String, String> {
        line(name)
            .split(',')
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect()
    };
    let set = counts("set");
    assert_eq!(
        set.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "calls",
            "failed_calls",
            "rejected_calls",
            "usec",
            "usec_per_call"
        ]
    );
    assert!(line("set").starts_with("calls=3,usec="));
    assert_eq!(set["rejected_calls"], "0");
    assert_eq!(set["failed_calls"], "0");
    assert_eq!(set["usec_per_call"].split_once('.').unwrap().1.len(), 2);
    let get = counts("get");
    assert_eq!(
        (get["calls"].as_str(), get["rejected_calls"].as_str()),
        ("1", "1")
    );
    let incr = counts("incr");
    assert_eq!(
        (incr["calls"].as_str(), incr["failed_calls"].as_str()),
        ("1", "1")
    );
    assert_eq!(counts("config|get")["calls"], "1");
    assert!(!stats.contains_key("cmdstat_config"));
    assert!(!stats.contains_key("cmdstat_del"));

    assert_eq!(error_count(&mut c), errors_before + 3);
    let total: u64 = field(&mut c, "stats", "total_error_replies")
        .parse()
        .unwrap();
    assert_eq!(total, errors_before + 3);
}

/// INFO errorstats's count of `ERR` replies.
fn error_count(c: &mut Connection) -> u64 {
    let errors = fields(&info(c, &["errorstats"]));
    errors
        .get("errorstat_ERR")
        .map_or(0, |v| v.strip_prefix("count=").unwrap().parse().unwrap())
}

#[test]
fn latencystats_report_percentiles() {
    let server = start();
    let mut c = server.client();
    for _ in 0..20 {
        ok(&mut c, &["SET", "k", "v"]);
    }
    let line = field(&mut c, "latencystats", "latency_percentiles_usec_set");
    let names: Vec<&str> = line
        .split(',')
        .map(|p| p.split('=').next().unwrap())
        .collect();
    assert_eq!(names, ["p50", "p99", "p99.9"]);
    for p in line.split(',') {
        let value = p.split('=').nth(1).unwrap();
        assert!(value.parse::<f64>().unwrap() > 0.0, "{line}");
        assert_eq!(
            value.split_once('.').map(|(_, d)| d.len()),
            Some(3),
            "{line}"
        );
    }
    ok(
        &mut c,
        &[
            "CONFIG",
            "SET",
            "latency-tracking-info-percentiles",
            "50 90",
        ],
    );
    let line = field(&mut c, "latencystats", "latency_percentiles_usec_set");
    assert!(line.starts_with("p50=") && line.contains(",p90="), "{line}");

    ok(&mut c, &["CONFIG", "SET", "latency-tracking", "no"]);
    ok(&mut c, &["GET", "k"]);
    let tracked = fields(&info(&mut c, &["latencystats"]));
    assert!(!tracked.contains_key("latency_percentiles_usec_get"));
}

#[test]
fn instantaneous_ops_follow_the_load() {
    let server = start();
    let mut c = server.client();
    field(&mut c, "stats", "instantaneous_ops_per_sec");
    std::thread::sleep(Duration::from_millis(150));
    let mut pipe = redis::pipe();
    for _ in 0..500 {
        pipe.cmd("PING");
    }
    let _: Vec<String> = pipe.query(&mut c).unwrap();
    std::thread::sleep(Duration::from_millis(150));
    let ops: u64 = field(&mut c, "stats", "instantaneous_ops_per_sec")
        .parse()
        .unwrap();
    assert!(ops > 100, "{ops}");
    let kbps: f64 = field(&mut c, "stats", "instantaneous_input_kbps")
        .parse()
        .unwrap();
    assert!(kbps > 0.0);
}

#[test]
fn config_resetstat_zeroes_the_counters() {
    let server = start();
    let mut c = server.client();
    ok(&mut c, &["SET", "k", "v"]);
    err(&mut c, &["NOSUCHCOMMAND"]);
    assert_eq!(text(&mut c, &["CONFIG", "RESETSTAT"]), "OK");
    let all = info(&mut c, &["everything"]);
    let by_title = |t: &str| all.iter().find(|(title, _)| title == t).unwrap().1.clone();
    assert!(by_title("Errorstats").is_empty());
    // A command is counted once it has run: RESETSTAT itself, not yet this INFO.
    let counted = |t: &str| -> Vec<String> { by_title(t).into_iter().map(|(k, _)| k).collect() };
    assert_eq!(counted("Commandstats"), ["cmdstat_config|resetstat"]);
    assert_eq!(
        counted("Latencystats"),
        ["latency_percentiles_usec_config|resetstat"]
    );
    let all = fields(&all);
    assert_eq!(all["total_error_replies"], "0");
    assert_eq!(all["total_commands_processed"], "1");
    assert_eq!(all["keyspace_hits"], "0");
    // Unsaved changes are not statistics.
    assert_eq!(all["rdb_changes_since_last_save"], "1");
    assert_eq!(
        err(&mut c, &["CONFIG", "RESETSTAT", "x"]),
        "ERR wrong number of arguments for 'config|resetstat' command"
    );
}

#[test]
fn command_count_is_the_table_size() {
    let server = start();
    let mut c = server.client();
    let registry = kvik_server::commands::registry();
    let top_level = registry.top_level().count() as i64;
    assert_eq!(int(&mut c, &["COMMAND", "COUNT"]), top_level);
    let Value::Array(all) = ok(&mut c, &["COMMAND"]) else {
        panic!("COMMAND is not an array")
    };
    assert_eq!(all.len() as i64, top_level);
    let listed = strings(&mut c, &["COMMAND", "LIST"]);
    assert_eq!(listed.len(), registry.len());
    let names: BTreeSet<&str> = registry.iter().map(|(_, cmd)| cmd.name).collect();
    assert_eq!(
        listed.iter().map(String::as_str).collect::<BTreeSet<_>>(),
        names
    );
    assert_eq!(
        err(&mut c, &["COMMAND", "COUNT", "x"]),
        "ERR wrong number of arguments for 'command|count' command"
    );
    assert_eq!(
        err(&mut c, &["COMMAND", "NOSUCH"]),
        "ERR unknown subcommand 'NOSUCH'. Try COMMAND HELP."
    );
}

/// `COMMAND INFO get` exactly as Redis 7.0 sends it, in both protocols.
#[test]
fn command_info_get_bytes() {
    let server = start();
    let mut raw = server.raw();
    let resp2 = raw.cmd(&["COMMAND", "INFO", "get"]);
    let expected2 =
        "*1\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n\
        *3\r\n+@read\r\n+@string\r\n+@fast\r\n*0\r\n*1\r\n*6\r\n$5\r\nflags\r\n*2\r\n+RO\r\n\
        +access\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n\
        $5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n\
        *6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n";
    assert_eq!(String::from_utf8_lossy(&resp2), expected2);
    raw.cmd(&["HELLO", "3"]);
    let resp3 = raw.cmd(&["COMMAND", "INFO", "get"]);
    let expected3 =
        "*1\r\n*10\r\n$3\r\nget\r\n:2\r\n~2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n\
        ~3\r\n+@read\r\n+@string\r\n+@fast\r\n~0\r\n~1\r\n%3\r\n$5\r\nflags\r\n~2\r\n+RO\r\n\
        +access\r\n$12\r\nbegin_search\r\n%2\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n%1\r\n\
        $5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n%2\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n\
        %3\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n~0\r\n";
    assert_eq!(String::from_utf8_lossy(&resp3), expected3);
    assert_eq!(raw.cmd(&["COMMAND", "INFO", "nosuch"]), b"*1\r\n_\r\n");
}

/// One COMMAND INFO entry, parsed.
struct Info {
    name: String,
    arity: i64,
    flags: Vec<String>,
    keys: (i64, i64, i64),
    categories: Vec<String>,
    key_specs: Vec<Value>,
    subcommands: Vec<Value>,
}

fn command_info(c: &mut Connection, name: &str) -> Info {
    let Value::Array(mut entries) = ok(c, &["COMMAND", "INFO", name]) else {
        panic!("not an array")
    };
    parse_command_info(entries.remove(0))
}

fn parse_command_info(v: Value) -> Info {
    let Value::Array(f) = v else {
        panic!("entry is {v:?}")
    };
    assert_eq!(f.len(), 10);
    let s = |v: &Value| -> Vec<String> { redis::from_redis_value(v).unwrap() };
    let i = |v: &Value| -> i64 { redis::from_redis_value(v).unwrap() };
    let list = |v: &Value| -> Vec<Value> { redis::from_redis_value(v).unwrap() };
    Info {
        name: redis::from_redis_value(&f[0]).unwrap(),
        arity: i(&f[1]),
        flags: s(&f[2]),
        keys: (i(&f[3]), i(&f[4]), i(&f[5])),
        categories: s(&f[6]),
        key_specs: list(&f[8]),
        subcommands: list(&f[9]),
    }
}

/// A key spec's begin_search and find_keys, flattened to (name, value) text pairs.
fn key_spec_fields(spec: &Value) -> Vec<(String, String)> {
    fn walk(v: &Value, prefix: &str, out: &mut Vec<(String, String)>) {
        match v {
            Value::Array(items)
                if items.len() % 2 == 0 && matches!(items[0], Value::BulkString(_)) =>
            {
                for pair in items.chunks(2) {
                    let key: String = redis::from_redis_value(&pair[0]).unwrap();
                    walk(&pair[1], &format!("{prefix}{key}."), out);
                }
            }
            other => {
                let text = match other {
                    Value::Int(n) => n.to_string(),
                    Value::Array(items) => items
                        .iter()
                        .map(|i| redis::from_redis_value::<String>(i).unwrap())
                        .collect::<Vec<_>>()
                        .join(" "),
                    v => redis::from_redis_value::<String>(v).unwrap(),
                };
                out.push((prefix.trim_end_matches('.').to_string(), text));
            }
        }
    }
    let mut out = Vec::new();
    walk(spec, "", &mut out);
    out
}

#[test]
fn command_info_shapes() {
    let server = start();
    let mut c = server.client();
    let set = command_info(&mut c, "SET");
    assert_eq!(set.name, "set");
    assert_eq!(set.arity, -3);
    assert_eq!(set.flags, ["write", "denyoom"]);
    assert_eq!(set.keys, (1, 1, 1));
    assert_eq!(set.categories, ["@write", "@string", "@slow"]);
    assert_eq!(set.key_specs.len(), 1);

    let mset = command_info(&mut c, "mset");
    assert_eq!(mset.keys, (1, -1, 2));
    let spec: BTreeMap<String, String> = key_spec_fields(&mset.key_specs[0]).into_iter().collect();
    assert_eq!(spec["begin_search.type"], "index");
    assert_eq!(spec["begin_search.spec.index"], "1");
    assert_eq!(spec["find_keys.type"], "range");
    assert_eq!(spec["find_keys.spec.lastkey"], "-1");
    assert_eq!(spec["find_keys.spec.keystep"], "2");
    assert_eq!(spec["find_keys.spec.limit"], "0");
    assert_eq!(spec["flags"], "OW update");

    let get = command_info(&mut c, "config|get");
    assert_eq!(get.name, "config|get");
    assert_eq!(get.arity, -3);
    assert_eq!(get.flags, ["admin", "noscript", "loading", "stale"]);
    assert_eq!(get.keys, (0, 0, 0));
    assert_eq!(get.categories, ["@admin", "@slow", "@dangerous"]);
    assert!(get.key_specs.is_empty());

    let config = command_info(&mut c, "config");
    assert_eq!(config.arity, -2);
    assert!(config.flags.is_empty());
    let subs: BTreeSet<String> = config
        .subcommands
        .into_iter()
        .map(|v| parse_command_info(v).name)
        .collect();
    let expected = [
        "config|get",
        "config|set",
        "config|resetstat",
        "config|rewrite",
        "config|help",
    ];
    assert_eq!(subs, expected.iter().map(|s| s.to_string()).collect());

    let Value::Array(entries) = ok(&mut c, &["COMMAND", "INFO", "get", "nosuch"]) else {
        panic!()
    };
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1], Value::Nil);
}

#[test]
fn command_docs_shape() {
    let server = start();
    let mut raw = server.raw();
    raw.cmd(&["HELLO", "3"]);
    let docs = String::from_utf8(raw.cmd(&["COMMAND", "DOCS", "get", "nosuch"])).unwrap();
    assert!(
        docs.starts_with("%1\r\n$3\r\nget\r\n%4\r\n$7\r\nsummary\r\n"),
        "{docs}"
    );
    for field in ["since", "group", "complexity"] {
        assert!(
            docs.contains(&format!("${}\r\n{field}\r\n", field.len())),
            "{docs}"
        );
    }
    assert!(docs.contains("$6\r\nstring\r\n"));
    let config = String::from_utf8(raw.cmd(&["COMMAND", "DOCS", "config"])).unwrap();
    assert!(
        config.starts_with("%1\r\n$6\r\nconfig\r\n%5\r\n"),
        "{config}"
    );
    assert!(config.contains("$11\r\nsubcommands\r\n%5\r\n$10\r\nconfig|get\r\n%4\r\n"));
    assert_eq!(raw.cmd(&["COMMAND", "DOCS", "nosuch"]), b"%0\r\n");
}

#[test]
fn command_list_filters() {
    let server = start();
    let mut c = server.client();
    let strings_cat = strings(&mut c, &["COMMAND", "LIST", "FILTERBY", "ACLCAT", "STRING"]);
    assert!(strings_cat.contains(&"get".to_string()));
    assert!(!strings_cat.contains(&"ping".to_string()));
    let admin = strings(&mut c, &["COMMAND", "LIST", "FILTERBY", "aclcat", "admin"]);
    assert!(admin.contains(&"config|set".to_string()));
    for empty in [
        ["FILTERBY", "ACLCAT", "nosuchcategory"],
        ["FILTERBY", "ACLCAT", "@string"],
        ["FILTERBY", "MODULE", "anything"],
    ] {
        let words = [&["COMMAND", "LIST"][..], &empty[..]].concat();
        assert!(strings(&mut c, &words).is_empty(), "{words:?}");
    }
    assert_eq!(
        strings(
            &mut c,
            &["COMMAND", "LIST", "FILTERBY", "PATTERN", "config|get"]
        ),
        ["config|get"]
    );
    for bad in [
        &["FILTERBY"][..],
        &["x"],
        &["FILTERBY", "foo", "bar"],
        &["FILTERBY", "PATTERN", "a", "b"],
    ] {
        let words = [&["COMMAND", "LIST"][..], bad].concat();
        assert_eq!(err(&mut c, &words), "ERR syntax error", "{words:?}");
    }
}

#[test]
fn command_getkeys() {
    let server = start();
    let mut c = server.client();
    assert_eq!(strings(&mut c, &["COMMAND", "GETKEYS", "get", "k"]), ["k"]);
    assert_eq!(
        strings(&mut c, &["COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"]),
        ["a", "b"]
    );
    assert_eq!(
        strings(&mut c, &["COMMAND", "GETKEYS", "del", "x", "y", "z"]),
        ["x", "y", "z"]
    );
    assert_eq!(
        err(&mut c, &["COMMAND", "GETKEYS", "nosuch", "a"]),
        "ERR Invalid command specified"
    );
    assert_eq!(
        err(&mut c, &["COMMAND", "GETKEYS", "config|get", "a"]),
        "ERR Invalid command specified"
    );
    assert_eq!(
        err(&mut c, &["COMMAND", "GETKEYS", "get", "a", "b"]),
        "ERR Invalid number of arguments specified for command"
    );
    assert_eq!(
        err(&mut c, &["COMMAND", "GETKEYS", "config", "get", "x"]),
        "ERR The command has no key arguments"
    );
    assert_eq!(
        err(&mut c, &["COMMAND", "GETKEYS", "ping", "x"]),
        "ERR The command has no key arguments"
    );
    assert_eq!(
        err(&mut c, &["COMMAND", "GETKEYS", "get"]),
        "ERR wrong number of arguments for 'command|getkeys' command"
    );
    let mut raw = server.raw();
    assert_eq!(
        raw.cmd(&["COMMAND", "GETKEYSANDFLAGS", "get", "a"]),
        b"*1\r\n*2\r\n$1\r\na\r\n*2\r\n+RO\r\n+access\r\n"
    );
    let flags = raw.cmd(&["COMMAND", "GETKEYSANDFLAGS", "set", "a", "b"]);
    assert_eq!(flags, b"*1\r\n*2\r\n$1\r\na\r\n*2\r\n+OW\r\n+update\r\n");
}

#[test]
fn help_replies() {
    let server = start();
    let mut c = server.client();
    for container in ["COMMAND", "CONFIG"] {
        let lines = strings(&mut c, &[container, "HELP"]);
        assert_eq!(
            lines[0],
            format!("{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
        );
        assert_eq!(&lines[lines.len() - 2..], ["HELP", "    Prints this help."]);
    }
}

#[test]
fn config_get_and_set_round_trip() {
    let server = start();
    let mut c = server.client();
    let get = |c: &mut Connection, words: &[&str]| -> BTreeMap<String, String> {
        let mut all = vec!["CONFIG", "GET"];
        all.extend_from_slice(words);
        redis::from_redis_value(&ok(c, &all)).unwrap()
    };
    let pairs = get(&mut c, &["maxmemory", "TIMEOUT", "nosuchparameter"]);
    assert_eq!(pairs.len(), 2);
    assert_eq!(pairs["maxmemory"], "0");
    assert_eq!(pairs["TIMEOUT"], "0");
    let many = get(&mut c, &["*"]);
    assert!(many.len() > 100, "{}", many.len());
    assert_eq!(many["maxclients"], "10000");

    assert_eq!(
        text(
            &mut c,
            &["CONFIG", "SET", "maxmemory", "100mb", "timeout", "300"]
        ),
        "OK"
    );
    let pairs = get(&mut c, &["maxmemory", "timeout"]);
    assert_eq!(pairs["maxmemory"], "104857600");
    assert_eq!(pairs["timeout"], "300");
    assert_eq!(field(&mut c, "memory", "maxmemory"), "104857600");
    assert_eq!(field(&mut c, "memory", "maxmemory_human"), "100.00M");

    // All or nothing: a bad value anywhere changes nothing.
    assert_eq!(
        err(&mut c, &["CONFIG", "SET", "timeout", "10", "maxmemory", "abc"]),
        "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value"
    );
    assert_eq!(get(&mut c, &["timeout"])["timeout"], "300");
    assert_eq!(
        err(&mut c, &["CONFIG", "SET", "maxmemory", "1", "timeout"]),
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["CONFIG", "SET", "nosuchparameter", "1"]),
        "ERR Unknown option or number of arguments for CONFIG SET - 'nosuchparameter'"
    );
    assert_eq!(
        err(&mut c, &["CONFIG", "SET", "maxmemory"]),
        "ERR wrong number of arguments for 'config|set' command"
    );
    assert_eq!(
        err(&mut c, &["CONFIG"]),
        "ERR wrong number of arguments for 'config' command"
    );
    assert_eq!(
        err(&mut c, &["CONFIG", "REWRITE"]),
        "ERR The server is running without a config file"
    );

    // hz takes effect at once (kept within 1..500 like Redis).
    ok(&mut c, &["CONFIG", "SET", "hz", "1000"]);
    assert_eq!(get(&mut c, &["hz"])["hz"], "500");
    assert_eq!(field(&mut c, "server", "hz"), "500");
}

#[test]
fn config_set_maxclients_takes_effect() {
    let server = start();
    let mut c = server.client();
    ok(&mut c, &["CONFIG", "SET", "maxclients", "2"]);
    assert_eq!(field(&mut c, "clients", "maxclients"), "2");
    // The start-up probe's connection may not be gone yet: the limit counts it.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while field(&mut c, "clients", "connected_clients") != "1" {
        assert!(std::time::Instant::now() < deadline, "the probe never left");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut second = server.client();
    ok(&mut second, &["PING"]);
    let mut third = RawConn::connect(&server.addr());
    third.set_read_timeout(Duration::from_secs(5));
    assert_eq!(
        third.read_reply(),
        b"-ERR max number of clients reached\r\n"
    );
    ok(&mut c, &["CONFIG", "SET", "maxclients", "10"]);
    let mut fourth = server.client();
    assert_eq!(text(&mut fourth, &["PING"]), "PONG");
}

#[test]
fn config_rewrite_writes_the_file() {
    let dir = support::scratch_dir("rewrite");
    let path = dir.join("kvik.conf");
    std::fs::write(&path, "# mine\nmaxmemory 1mb\n").unwrap();
    let port = support::free_port();
    let config = kvik_config::Config {
        port,
        server_threads: 1,
        maxmemory: 1 << 20,
        ..support::in_process_config()
    };
    let running = kvik_server::startup::launch(config, Some(path.clone())).expect("server starts");
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    ok(
        &mut c,
        &["CONFIG", "SET", "maxmemory", "2mb", "timeout", "7"],
    );
    assert_eq!(text(&mut c, &["CONFIG", "REWRITE"]), "OK");
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.contains("# mine"), "{written}");
    assert!(written.contains("maxmemory 2mb"), "{written}");
    assert!(written.contains("timeout 7"), "{written}");
    running.shutdown();
    let _ = std::fs::remove_dir_all(dir);
}
