//! SLOWLOG, LATENCY and MEMORY over a real socket: what the slow log keeps and how it
//! shows it, the latency monitor and histograms, and MEMORY USAGE / STATS figures.
//! The deterministic replies (errors, HELP, arity) are in the differential scripts.

mod support;

use redis::{Connection, Value};
use std::time::Duration;
use support::TestServer;

fn run(c: &mut Connection, words: &[&str]) -> Value {
    let mut cmd = redis::cmd(words[0]);
    for w in &words[1..] {
        cmd.arg(*w);
    }
    cmd.query(c).unwrap_or_else(|e| panic!("{words:?}: {e}"))
}

fn int(c: &mut Connection, words: &[&str]) -> i64 {
    redis::from_redis_value(&run(c, words)).expect("an integer")
}

fn text(c: &mut Connection, words: &[&str]) -> String {
    redis::from_redis_value(&run(c, words)).expect("a string")
}

/// One SLOWLOG GET entry.
#[derive(Debug)]
struct Entry {
    id: i64,
    time: i64,
    micros: i64,
    args: Vec<Vec<u8>>,
    addr: String,
    name: String,
}

fn slowlog(c: &mut Connection) -> Vec<Entry> {
    let entries: Vec<Value> = redis::from_redis_value(&run(c, &["SLOWLOG", "GET", "-1"])).unwrap();
    entries
        .iter()
        .map(|e| {
            let (id, time, micros, args, addr, name): (
                i64,
                i64,
                i64,
                Vec<Vec<u8>>,
                String,
                String,
            ) = redis::from_redis_value(e).expect("a six-field entry");
            Entry {
                id,
                time,
                micros,
                args,
                addr,
                name,
            }
        })
        .collect()
}

fn words(entry: &Entry) -> Vec<String> {
    entry
        .args
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

fn client_addr(c: &mut Connection) -> String {
    let info = text(c, &["CLIENT", "INFO"]);
    let field = info.split(' ').find(|f| f.starts_with("addr=")).unwrap();
    field["addr=".len()..].to_owned()
}

/// A RESP2 map (a flat array of keys and values) as pairs.
fn pairs(map: &Value) -> Vec<(Value, Value)> {
    let Value::Array(items) = map else {
        panic!("not a map: {map:?}");
    };
    items
        .chunks(2)
        .map(|kv| (kv[0].clone(), kv[1].clone()))
        .collect()
}

fn as_text(v: &Value) -> String {
    redis::from_redis_value(v).expect("a string")
}

fn log_everything(c: &mut Connection) {
    run(c, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    run(c, &["SLOWLOG", "RESET"]);
}

#[test]
fn slowlog_entries_show_cut_arguments_client_and_name() {
    let server = TestServer::start(&[]);
    let mut c = server.client();
    log_everything(&mut c);
    run(&mut c, &["CLIENT", "SETNAME", "reporter"]);
    let addr = client_addr(&mut c);
    let many: Vec<String> = (0..40).map(|i| format!("e{i}")).collect();
    let mut rpush = vec!["RPUSH", "list"];
    rpush.extend(many.iter().map(String::as_str));
    run(&mut c, &rpush);
    let long = "x".repeat(200);
    run(&mut c, &["SET", "k", &long]);

    let entries = slowlog(&mut c);
    let set = &entries[0];
    assert_eq!(set.args.len(), 3);
    assert_eq!(
        set.args[2],
        format!("{}... (72 more bytes)", "x".repeat(128)).into_bytes()
    );
    assert_eq!(
        (set.addr.as_str(), set.name.as_str()),
        (addr.as_str(), "reporter")
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!((set.time - now).abs() <= 2, "{} vs {now}", set.time);
    assert!(set.micros >= 0);

    let rpush = words(&entries[1]);
    assert_eq!(rpush.len(), 32);
    assert_eq!(rpush[..3], ["RPUSH", "list", "e0"]);
    assert_eq!(rpush[30], "e28");
    assert_eq!(rpush[31], "... (11 more arguments)");
    // Newest first, ids growing by one; the RESET is the oldest.
    let ids: Vec<i64> = entries.iter().map(|e| e.id).collect();
    assert!(ids.windows(2).all(|w| w[0] == w[1] + 1), "{ids:?}");
    assert_eq!(words(entries.last().unwrap()), ["SLOWLOG", "RESET"]);
}

#[test]
fn slowlog_shows_transactions_without_exec_and_scripts_commands_as_no_client() {
    let server = TestServer::start(&[]);
    let mut c = server.client();
    log_everything(&mut c);
    let mut pipe = redis::pipe();
    pipe.atomic()
        .cmd("SET")
        .arg("a")
        .arg("1")
        .cmd("INCR")
        .arg("a");
    let _: Vec<Value> = pipe.query(&mut c).unwrap();
    run(
        &mut c,
        &["EVAL", "return redis.call('get', KEYS[1])", "1", "a"],
    );

    let entries = slowlog(&mut c);
    let seen: Vec<(Vec<String>, &str)> = entries
        .iter()
        .rev()
        .map(|e| (words(e), e.addr.as_str()))
        .collect();
    let addr = client_addr(&mut c);
    let mine = addr.as_str();
    let expected: Vec<(Vec<String>, &str)> = vec![
        (vec!["SLOWLOG".into(), "RESET".into()], mine),
        (vec!["MULTI".into()], mine),
        (vec!["SET".into(), "a".into(), "1".into()], mine),
        (vec!["INCR".into(), "a".into()], mine),
        (vec!["get".into(), "a".into()], "?:0"),
        (
            vec![
                "EVAL".into(),
                "return redis.call('get', KEYS[1])".into(),
                "1".into(),
                "a".into(),
            ],
            mine,
        ),
    ];
    assert_eq!(seen, expected);
}

#[test]
fn slowlog_hides_secrets() {
    let server = TestServer::start(&[]);
    let mut c = server.client();
    log_everything(&mut c);
    run(
        &mut c,
        &[
            "CONFIG",
            "SET",
            "masterauth",
            "hunter2",
            "maxmemory-samples",
            "6",
        ],
    );
    let entries = slowlog(&mut c);
    assert_eq!(
        words(&entries[0]),
        [
            "CONFIG",
            "SET",
            "masterauth",
            "(redacted)",
            "maxmemory-samples",
            "6"
        ]
    );
}

#[test]
fn slowlog_logs_a_served_blocking_command_without_its_wait() {
    let server = TestServer::start(&["--server-threads", "2"]);
    let mut c = server.client();
    log_everything(&mut c);
    let mut waiter = server.raw();
    waiter.send_cmd(&["BLPOP", "queue", "0"]);
    let mut timed_out = server.raw();
    assert_eq!(timed_out.cmd(&["BLPOP", "other", "0.05"]), b"*-1\r\n");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        slowlog(&mut c).iter().all(|e| e.args[0] != b"BLPOP"),
        "logged before served"
    );
    run(&mut c, &["LPUSH", "queue", "job"]);
    assert_eq!(waiter.read_reply(), b"*2\r\n$5\r\nqueue\r\n$3\r\njob\r\n");
    let entries = slowlog(&mut c);
    let blpops: Vec<&Entry> = entries.iter().filter(|e| e.args[0] == b"BLPOP").collect();
    assert_eq!(blpops.len(), 1, "only the served one: {entries:?}");
    assert_eq!(words(blpops[0]), ["BLPOP", "queue", "0"]);
    assert!(
        blpops[0].micros < 200_000,
        "the wait was counted: {}",
        blpops[0].micros
    );
}

#[test]
fn slowlog_settings_apply_at_once_and_threads_share_the_log() {
    let server = TestServer::start(&["--server-threads", "4", "--enable-debug-command", "yes"]);
    let mut c = server.client();
    run(
        &mut c,
        &["CONFIG", "SET", "slowlog-log-slower-than", "100000"],
    );
    run(&mut c, &["SLOWLOG", "RESET"]);
    run(&mut c, &["SET", "fast", "1"]);
    run(&mut c, &["DEBUG", "SLEEP", "0.15"]);
    let entries = slowlog(&mut c);
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(words(&entries[0]), ["DEBUG", "SLEEP", "0.15"]);
    assert!(entries[0].micros >= 150_000);

    log_everything(&mut c);
    run(&mut c, &["CONFIG", "SET", "slowlog-max-len", "10000"]);
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let mut conn = server.client();
            std::thread::spawn(move || {
                for i in 0..250 {
                    run(&mut conn, &["SET", &format!("k{t}-{i}"), "v"]);
                }
            })
        })
        .collect();
    writers.into_iter().for_each(|w| w.join().unwrap());
    let entries = slowlog(&mut c);
    let sets = entries.iter().filter(|e| e.args[0] == b"SET").count();
    assert_eq!(sets, 1000);
    let mut ids: Vec<i64> = entries.iter().map(|e| e.id).collect();
    ids.dedup();
    assert_eq!(ids.len(), entries.len(), "every entry has its own id");
    run(&mut c, &["CONFIG", "SET", "slowlog-max-len", "5"]);
    assert_eq!(int(&mut c, &["SLOWLOG", "LEN"]), 5);
}

#[test]
fn latency_monitor_keeps_slow_events_until_reset() {
    let server = TestServer::start(&["--enable-debug-command", "yes"]);
    let mut c = server.client();
    run(&mut c, &["DEBUG", "SLEEP", "0.06"]);
    assert_eq!(
        run(&mut c, &["LATENCY", "LATEST"]),
        Value::Array(vec![]),
        "off by default"
    );
    run(
        &mut c,
        &["CONFIG", "SET", "latency-monitor-threshold", "50"],
    );
    run(&mut c, &["GET", "fast"]);
    run(&mut c, &["DEBUG", "SLEEP", "0.06"]);

    let latest: Vec<(String, i64, i64, i64)> =
        redis::from_redis_value(&run(&mut c, &["LATENCY", "LATEST"])).unwrap();
    assert_eq!(latest.len(), 1, "{latest:?}");
    let (event, _, newest, worst) = &latest[0];
    assert_eq!(event, "command");
    assert!(*newest >= 60 && worst >= newest, "{latest:?}");
    let history: Vec<(i64, i64)> =
        redis::from_redis_value(&run(&mut c, &["LATENCY", "HISTORY", "command"])).unwrap();
    assert_eq!(history.len(), 1);
    let graph = text(&mut c, &["LATENCY", "GRAPH", "command"]);
    assert!(graph.starts_with("command - high "), "{graph}");
    let doctor = text(&mut c, &["LATENCY", "DOCTOR"]);
    assert!(doctor.contains("- command: 1 spike(s)"), "{doctor}");
    assert_eq!(int(&mut c, &["LATENCY", "RESET"]), 1);
    assert_eq!(run(&mut c, &["LATENCY", "LATEST"]), Value::Array(vec![]));
}

#[test]
fn latency_histogram_counts_every_call_by_powers_of_two() {
    let server = TestServer::start(&["--server-threads", "2"]);
    let mut a = server.client();
    let mut b = server.client();
    for i in 0..10 {
        run(if i % 2 == 0 { &mut a } else { &mut b }, &["SET", "k", "v"]);
    }
    run(&mut a, &["CONFIG", "SET", "maxmemory-samples", "5"]);
    let reply = run(&mut a, &["LATENCY", "HISTOGRAM", "set", "config", "nosuch"]);
    let commands = pairs(&reply);
    let names: Vec<String> = commands.iter().map(|(n, _)| as_text(n)).collect();
    assert_eq!(names, ["set", "config|set"]);
    let fields = pairs(&commands[0].1);
    assert_eq!(as_text(&fields[0].0), "calls");
    assert_eq!(fields[0].1, Value::Int(10));
    assert_eq!(as_text(&fields[1].0), "histogram_usec");
    let buckets: Vec<(i64, i64)> = pairs(&fields[1].1)
        .iter()
        .map(|(k, v)| {
            (
                redis::from_redis_value(k).unwrap(),
                redis::from_redis_value(v).unwrap(),
            )
        })
        .collect();
    assert!(
        buckets
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1),
        "{buckets:?}"
    );
    assert_eq!(buckets.last().unwrap().1, 10);
    let all = pairs(&run(&mut a, &["LATENCY", "HISTOGRAM"]));
    assert!(all.iter().any(|(n, _)| as_text(n) == "set"));
}

#[test]
fn memory_usage_follows_the_value_and_stats_count_the_keys() {
    let server = TestServer::start(&[]);
    let mut c = server.client();
    run(&mut c, &["SET", "small", "v"]);
    run(&mut c, &["SET", "big", &"x".repeat(10_000)]);
    let small = int(&mut c, &["MEMORY", "USAGE", "small"]);
    let big = int(&mut c, &["MEMORY", "USAGE", "big", "SAMPLES", "0"]);
    assert!((40..=128).contains(&small), "{small}");
    assert!((10_000..10_000 + 2048).contains(&big), "{big}");
    run(&mut c, &["EXPIRE", "small", "100"]);
    assert!(
        int(&mut c, &["MEMORY", "USAGE", "small"]) > small,
        "a deadline costs"
    );
    for i in 0..500 {
        run(
            &mut c,
            &["HSET", "h", &format!("field{i}"), &format!("value{i}")],
        );
    }
    let hash = int(&mut c, &["MEMORY", "USAGE", "h"]);
    assert!(hash > 500 * 14, "{hash}");
    assert_eq!(run(&mut c, &["MEMORY", "USAGE", "nosuch"]), Value::Nil);

    let stats: Vec<(String, Value)> = pairs(&run(&mut c, &["MEMORY", "STATS"]))
        .into_iter()
        .map(|(k, v)| (as_text(&k), v))
        .collect();
    let field = |name: &str| {
        stats
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(field("keys.count"), Some(Value::Int(3)));
    assert!(field("db.0").is_some());
    assert!(field("db.1").is_none());
    let names: Vec<&str> = stats.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"peak.allocated"));
    assert_eq!(names.last(), Some(&"fragmentation.bytes"));
    assert_eq!(run(&mut c, &["MEMORY", "PURGE"]), Value::Okay);
    let report = text(&mut c, &["MEMORY", "MALLOC-STATS"]);
    assert!(report.contains("jemalloc"), "{report}");
}
