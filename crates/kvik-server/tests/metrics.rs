//! The Prometheus endpoint: scraped with a real HTTP client, parsed with a
//! Prometheus text-format parser, its numbers checked against what the server did
//! and against INFO.

mod support;

use prometheus_parse::{Sample, Scrape, Value};
use std::time::Duration;
use support::{free_port, TestServer};

/// A server with the endpoint on, and the endpoint's address.
fn start(extra: &[&str]) -> (TestServer, String) {
    let mut last = String::new();
    // The probed port can be taken before the server binds it: try a few.
    for _ in 0..3 {
        let port = free_port().to_string();
        let mut args = vec!["--metrics-port", port.as_str(), "--server-threads", "2"];
        args.extend_from_slice(extra);
        match TestServer::try_start(&args) {
            Ok(server) => return (server, format!("http://127.0.0.1:{port}")),
            Err(e) => last = e,
        }
    }
    panic!("no server with a metrics endpoint: {last}");
}

/// The status and the response of a request, whatever the status.
fn request(method: &str, url: &str) -> (u16, ureq::Response) {
    match ureq::request(method, url)
        .timeout(Duration::from_secs(10))
        .call()
    {
        Ok(response) => (response.status(), response),
        Err(ureq::Error::Status(code, response)) => (code, response),
        Err(e) => panic!("{method} {url}: {e}"),
    }
}

fn scrape(base: &str) -> Scrape {
    let (status, response) = request("GET", &format!("{base}/metrics"));
    assert_eq!(status, 200);
    assert!(response
        .header("Content-Type")
        .unwrap_or_default()
        .starts_with("text/plain; version=0.0.4"));
    let body = response.into_string().expect("a text body");
    let lines = body.lines().map(|l| Ok(l.to_string()));
    Scrape::parse(lines).expect("the Prometheus text format")
}

/// The value of the one sample of `metric` whose labels include `labels`.
fn value(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    let matching: Vec<&Sample> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric)
        .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(v)))
        .collect();
    assert_eq!(matching.len(), 1, "one {metric}{labels:?} sample");
    match &matching[0].value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
        other => panic!("{metric} is {other:?}"),
    }
}

#[test]
fn a_scrape_reports_what_the_server_did_under_redis_exporter_names() {
    let (server, base) = start(&[]);
    let mut conn = server.raw();
    for i in 0..25 {
        conn.cmd(&["SET", &format!("key:{i}"), "v"]);
    }
    conn.cmd(&["SET", "volatile", "v", "EX", "1000"]);
    conn.cmd(&["SELECT", "3"]);
    conn.cmd(&["SET", "other", "v"]);
    conn.cmd(&["NOSUCHCOMMAND"]);

    let scrape = scrape(&base);
    assert_eq!(value(&scrape, "redis_up", &[]), 1.0);
    assert_eq!(
        value(&scrape, "redis_commands_total", &[("cmd", "set")]),
        27.0
    );
    assert_eq!(value(&scrape, "redis_db_keys", &[("db", "db0")]), 26.0);
    assert_eq!(
        value(&scrape, "redis_db_keys_expiring", &[("db", "db0")]),
        1.0
    );
    assert_eq!(value(&scrape, "redis_db_keys", &[("db", "db3")]), 1.0);
    assert_eq!(value(&scrape, "redis_db_keys", &[("db", "db15")]), 0.0);
    assert_eq!(value(&scrape, "redis_errors_total", &[("err", "ERR")]), 1.0);
    assert!(value(&scrape, "redis_connected_clients", &[]) >= 1.0);
    assert!(value(&scrape, "redis_memory_used_bytes", &[]) > 0.0);
    assert_eq!(value(&scrape, "redis_rdb_last_bgsave_status", &[]), 1.0);
    let info = value(
        &scrape,
        "redis_instance_info",
        &[("role", "master"), ("redis_version", "7.0.15")],
    );
    assert_eq!(info, 1.0);

    // Per thread: both threads are listed, and they ran every command between them.
    let per_thread: f64 = (0..2)
        .map(|t| {
            let thread = t.to_string();
            value(
                &scrape,
                "kvik_thread_commands_total",
                &[("thread", &thread)],
            )
        })
        .sum();
    let processed = value(&scrape, "redis_commands_processed_total", &[]);
    assert_eq!(per_thread, processed);
    let connections: f64 = (0..2)
        .map(|t| {
            let thread = t.to_string();
            value(&scrape, "kvik_thread_connections", &[("thread", &thread)])
        })
        .sum();
    assert_eq!(connections, value(&scrape, "redis_connected_clients", &[]));
}

#[test]
fn command_latency_is_a_histogram_whose_count_is_the_calls() {
    let (server, base) = start(&[]);
    let mut conn = server.raw();
    for _ in 0..40 {
        conn.cmd(&["INCR", "counter"]);
    }
    let scrape = scrape(&base);
    let histogram = scrape
        .samples
        .iter()
        .find(|s| s.metric == "kvik_command_latency_seconds" && s.labels.get("cmd") == Some("incr"))
        .expect("a latency histogram of INCR");
    let Value::Histogram(buckets) = &histogram.value else {
        panic!("not a histogram: {:?}", histogram.value);
    };
    assert!(
        buckets.windows(2).all(|w| w[0].count <= w[1].count),
        "cumulative"
    );
    assert!(buckets.windows(2).all(|w| w[0].less_than < w[1].less_than));
    assert_eq!(buckets.last().unwrap().count, 40.0);
    assert!(buckets.last().unwrap().less_than.is_infinite());
}

#[test]
fn other_paths_and_methods_are_refused() {
    let (_server, base) = start(&[]);
    assert_eq!(request("GET", &format!("{base}/")).0, 404);
    assert_eq!(request("POST", &format!("{base}/metrics")).0, 405);
}

#[test]
fn the_endpoint_is_off_unless_asked_for_and_listed_in_config() {
    let server = TestServer::start(&[]);
    let mut conn = server.raw();
    assert_eq!(
        conn.cmd(&["CONFIG", "GET", "metrics-port"]),
        b"*2\r\n$12\r\nmetrics-port\r\n$1\r\n0\r\n"
    );
    assert_eq!(
        conn.cmd(&["CONFIG", "SET", "metrics-port", "9121"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'metrics-port') - can't set immutable config\r\n"
    );
}
