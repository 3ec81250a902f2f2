//! MONITOR: every command another thread runs reaches the monitoring clients, after
//! it ran, in Redis's line format (quoting, database, address); administrative
//! commands and rejected ones are not shown, passwords are redacted.

mod support;

use support::{RawConn, TestServer};

/// The part of a MONITOR line after the timestamp, e.g. `[0 127.0.0.1:5] "GET" "k"`,
/// after checking the timestamp's shape (`+<secs>.<6 digits> `).
fn without_time(line: &[u8]) -> String {
    let text = String::from_utf8(line.to_vec()).expect("utf8");
    let body = text
        .strip_prefix('+')
        .and_then(|t| t.strip_suffix("\r\n"))
        .unwrap_or_else(|| panic!("not a status line: {text:?}"));
    let (time, rest) = body.split_once(' ').expect("timestamp");
    let (secs, usecs) = time.split_once('.').expect("secs.usecs");
    assert!(secs.parse::<u64>().is_ok() && usecs.len() == 6, "{text:?}");
    assert!(usecs.parse::<u32>().is_ok(), "{text:?}");
    rest.to_string()
}

/// The `addr` CLIENT INFO reports for a connection.
fn addr_of(conn: &mut RawConn) -> String {
    let info = String::from_utf8(conn.cmd(&["CLIENT", "INFO"])).expect("utf8");
    let field = info
        .split(' ')
        .find(|f| f.starts_with("addr="))
        .expect("addr");
    field["addr=".len()..].to_string()
}

#[test]
fn monitors_see_commands_from_every_thread_in_redis_format() {
    let server = TestServer::start(&["--server-threads", "4"]);
    let mut monitors: Vec<RawConn> = (0..3).map(|_| server.raw()).collect();
    for m in &mut monitors {
        assert_eq!(m.cmd(&["MONITOR"]), b"+OK\r\n");
    }
    let mut clients: Vec<RawConn> = (0..4).map(|_| server.raw()).collect();
    let mut expected = Vec::new();
    for (i, c) in clients.iter_mut().enumerate() {
        let addr = addr_of(c);
        let key = format!("key{i}");
        c.cmd(&["SET", &key, "a \"quoted\"\\ value\n\x01\u{e9}"]);
        c.cmd(&["SELECT", "2"]);
        c.cmd(&["get", &key]);
        expected.push(format!("[0 {addr}] \"CLIENT\" \"INFO\""));
        expected.push(format!(
            "[0 {addr}] \"SET\" \"{key}\" \"a \\\"quoted\\\"\\\\ value\\n\\x01\\xc3\\xa9\""
        ));
        // SELECT shows the database it left the client in.
        expected.push(format!("[2 {addr}] \"SELECT\" \"2\""));
        expected.push(format!("[2 {addr}] \"get\" \"{key}\""));
    }
    for m in &mut monitors {
        let seen: Vec<String> = (0..expected.len())
            .map(|_| without_time(&m.read_reply()))
            .collect();
        assert_eq!(seen, expected);
    }
}

#[test]
fn admin_rejected_and_secret_arguments_stay_hidden() {
    let server = TestServer::start(&["--server-threads", "2"]);
    let mut monitor = server.raw();
    assert_eq!(monitor.cmd(&["MONITOR"]), b"+OK\r\n");
    let mut c = server.raw();
    let addr = addr_of(&mut c);
    c.cmd(&["CONFIG", "GET", "port"]);
    c.cmd(&["GET"]);
    c.cmd(&["NOSUCHCOMMAND"]);
    c.cmd(&["AUTH", "secret"]);
    c.cmd(&["HELLO", "2", "AUTH", "default", "secret"]);
    c.cmd(&["PING"]);
    for want in [
        "\"CLIENT\" \"INFO\"",
        // A command that ran and failed is shown, its password redacted.
        "\"AUTH\" \"(redacted)\"",
        "\"HELLO\" \"2\" \"AUTH\" \"(redacted)\" \"(redacted)\"",
        "\"PING\"",
    ] {
        assert_eq!(
            without_time(&monitor.read_reply()),
            format!("[0 {addr}] {want}")
        );
    }
}

#[test]
fn monitor_clients_are_flagged_and_reset_stops_monitoring() {
    let server = TestServer::start(&["--server-threads", "2"]);
    let mut monitor = server.raw();
    assert_eq!(monitor.cmd(&["MONITOR"]), b"+OK\r\n");
    let mut c = server.raw();
    // CLIENT LIST is an administrative command: not shown.
    let list = String::from_utf8(c.cmd(&["CLIENT", "LIST"])).expect("utf8");
    assert!(list.contains(" flags=O "), "{list}");
    c.cmd(&["ECHO", "seen"]);
    // A second MONITOR is ignored without a reply; RESET ends monitoring.
    monitor.send_cmd(&["MONITOR"]);
    monitor.send_cmd(&["RESET"]);
    let line = without_time(&monitor.read_reply());
    assert!(line.ends_with("\"ECHO\" \"seen\""), "{line}");
    assert_eq!(monitor.read_reply(), b"+RESET\r\n");
    c.cmd(&["SET", "unseen", "1"]);
    assert_eq!(monitor.cmd(&["PING"]), b"+PONG\r\n");
    let list = String::from_utf8(c.cmd(&["CLIENT", "LIST"])).expect("utf8");
    assert!(!list.contains(" flags=O "), "{list}");
}

#[test]
fn transactions_and_scripts_show_the_commands_they_run() {
    let server = TestServer::start(&["--server-threads", "2"]);
    let mut monitor = server.raw();
    assert_eq!(monitor.cmd(&["MONITOR"]), b"+OK\r\n");
    let mut c = server.raw();
    let addr = addr_of(&mut c);
    c.cmd(&["MULTI"]);
    c.cmd(&["SET", "a", "1"]);
    c.cmd(&["EXEC"]);
    let script = "redis.call('set','b','2') redis.call('select','4') return 1";
    c.cmd(&["EVAL", script, "0"]);
    let expected = [
        format!("[0 {addr}] \"CLIENT\" \"INFO\""),
        format!("[0 {addr}] \"MULTI\""),
        // Queued commands show when EXEC runs them, then EXEC itself.
        format!("[0 {addr}] \"SET\" \"a\" \"1\""),
        format!("[0 {addr}] \"EXEC\""),
        // EVAL shows before its script's commands, which come from `lua`.
        format!("[0 {addr}] \"EVAL\" \"{script}\" \"0\""),
        "[0 lua] \"set\" \"b\" \"2\"".to_string(),
        "[4 lua] \"select\" \"4\"".to_string(),
    ];
    for want in expected {
        assert_eq!(without_time(&monitor.read_reply()), want);
    }
}
