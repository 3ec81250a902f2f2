//! CLIENT: the CLIENT LIST line field by field (against a real redis-server's when
//! one is installed), KILL across worker threads, PAUSE, REPLY, names, the
//! maxclients limit, and how connections are dealt to the worker threads.

mod in_process;
mod support;

use in_process::{client_id, InProcess};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use support::{RawConn, RealRedis, TestServer};

/// CLIENT LIST's fields, in Redis 7.0's order.
const FIELDS: &[&str] = &[
    "id",
    "addr",
    "laddr",
    "fd",
    "name",
    "age",
    "idle",
    "flags",
    "db",
    "sub",
    "psub",
    "ssub",
    "multi",
    "qbuf",
    "qbuf-free",
    "argv-mem",
    "multi-mem",
    "rbs",
    "rbp",
    "obl",
    "oll",
    "omem",
    "tot-mem",
    "events",
    "cmd",
    "user",
    "redir",
    "resp",
];

/// The text of a bulk (RESP2) reply.
fn bulk_text(reply: &[u8]) -> String {
    let text = String::from_utf8(reply.to_vec()).expect("utf8 reply");
    assert!(text.starts_with('$'), "not a bulk reply: {text:?}");
    let body = &text[text.find("\r\n").expect("header") + 2..];
    body.strip_suffix("\r\n").expect("trailer").to_string()
}

/// One CLIENT LIST line as (field, value) pairs in order.
fn fields(line: &str) -> Vec<(String, String)> {
    line.split(' ')
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or_else(|| panic!("field {kv:?}"));
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// CLIENT LIST as one map per client, by id.
fn client_list(conn: &mut RawConn) -> HashMap<String, HashMap<String, String>> {
    let text = bulk_text(&conn.cmd(&["CLIENT", "LIST"]));
    assert!(text.ends_with('\n'), "every line ends with a newline");
    text.lines()
        .map(|line| {
            let map: HashMap<_, _> = fields(line).into_iter().collect();
            (map["id"].clone(), map)
        })
        .collect()
}

fn assert_field_names(line: &str) {
    let names: Vec<String> = fields(line).into_iter().map(|(k, _)| k).collect();
    assert_eq!(names, FIELDS, "fields of {line:?}");
}

#[test]
fn client_list_line_has_redis_fields_and_values() {
    let server = TestServer::start(&["--server-threads", "2"]);
    let mut me = server.raw();
    let mut other = server.raw();
    let other_id = client_id(&mut other);
    assert_eq!(other.cmd(&["CLIENT", "SETNAME", "worker-7"]), b"+OK\r\n");
    assert_eq!(other.cmd(&["SELECT", "3"]), b"+OK\r\n");
    assert_eq!(other.cmd(&["CLIENT", "NO-EVICT", "on"]), b"+OK\r\n");
    other.cmd(&["HELLO", "3"]);
    other.cmd(&["GET", "nokey"]);

    let own_line = bulk_text(&me.cmd(&["CLIENT", "INFO"]));
    assert_field_names(own_line.trim_end());
    // The start-up probe's connection may still be listed: look at ours only.
    let list = client_list(&mut me);
    for client in list.values() {
        assert_eq!(client["laddr"], server.addr());
        assert!(client["addr"].starts_with("127.0.0.1:"));
        assert_eq!(client["user"], "default");
        assert_eq!(client["redir"], "-1");
        assert_eq!(client["multi"], "-1");
        for seconds in ["age", "idle"] {
            let n: u64 = client[seconds].parse().expect("a number of seconds");
            assert!(n < 10, "{seconds}={n}");
        }
    }
    let seen = &list[&other_id.to_string()];
    assert_eq!(seen["name"], "worker-7");
    assert_eq!(seen["db"], "3");
    assert_eq!(seen["flags"], "e");
    assert_eq!(seen["resp"], "3");
    assert_eq!(seen["cmd"], "get");
    assert_eq!(seen["argv-mem"], "0");
    assert_eq!(seen["qbuf"], "0");

    let me_listed = &list[&client_id(&mut me).to_string()];
    assert_eq!(me_listed["cmd"], "client|list");
    assert_eq!(me_listed["flags"], "N");
    assert_eq!(me_listed["name"], "");
    // The command being run: its bytes in the query buffer, its arguments in memory.
    assert_eq!(me_listed["qbuf"], "26");
    assert_eq!(me_listed["argv-mem"], "10");
    assert_eq!(me_listed["events"], "r");
}

#[test]
fn client_list_fields_match_real_redis() {
    let Some(_) = support::redis_server_or_skip() else {
        return;
    };
    let redis = RealRedis::start(&[]);
    let kvik = TestServer::start(&[]);
    for server in [&*redis, &kvik] {
        let mut conn = server.raw();
        let line = bulk_text(&conn.cmd(&["CLIENT", "INFO"]));
        assert_field_names(line.trim_end());
        let values: HashMap<_, _> = fields(line.trim_end()).into_iter().collect();
        assert_eq!(values["qbuf"], "26", "{line}");
        assert_eq!(values["argv-mem"], "10", "{line}");
        assert_eq!(values["cmd"], "client|info", "{line}");
        assert_eq!(values["flags"], "N", "{line}");
    }
}

#[test]
fn connections_are_dealt_to_every_thread_in_turn() {
    let server = InProcess::start(|c| c.server_threads = 4);
    let mut per_worker = [0; 4];
    let conns: Vec<_> = (0..12).map(|_| server.client()).collect();
    for (_, id) in &conns {
        per_worker[server.worker_of(*id)] += 1;
    }
    assert_eq!(per_worker, [3; 4], "an idle server spreads a burst evenly");
    for (mut conn, _) in conns {
        assert_eq!(
            conn.cmd(&["PING"]),
            b"+PONG\r\n",
            "a dealt client is served"
        );
    }
}

#[test]
fn kill_closes_a_client_owned_by_another_thread() {
    let server = InProcess::start(|c| c.server_threads = 4);
    let (mut killer, killer_id) = server.client();
    let (mut victim, victim_id) = server.client_off_worker(server.worker_of(killer_id));

    let reply = killer.cmd(&["CLIENT", "KILL", "ID", &victim_id.to_string()]);
    assert_eq!(reply, b":1\r\n");
    assert!(victim.closed_within(Duration::from_secs(5)));
    let list = bulk_text(&killer.cmd(&["CLIENT", "LIST"]));
    assert!(!list.contains(&format!("id={victim_id} ")), "{list}");
    // Killing it again finds nobody.
    let reply = killer.cmd(&["CLIENT", "KILL", "ID", &victim_id.to_string()]);
    assert_eq!(reply, b":0\r\n");
}

#[test]
fn kill_by_address_and_type_and_self() {
    let server = InProcess::start(|c| c.server_threads = 4);
    let (mut killer, _) = server.client();
    let (_victim, victim_id) = server.client();
    let victim_addr = server.server().clients.get(victim_id).unwrap().addr.clone();
    let reply = killer.cmd(&["CLIENT", "KILL", &victim_addr]);
    assert_eq!(reply, b"+OK\r\n");
    assert_eq!(
        killer.cmd(&["CLIENT", "KILL", &victim_addr]),
        b"-ERR No such client\r\n"
    );

    let mut victims: Vec<RawConn> = (0..6).map(|_| server.client().0).collect();
    let reply = killer.cmd(&["CLIENT", "KILL", "TYPE", "normal"]);
    assert_eq!(reply, b":6\r\n", "everyone but the caller");
    for victim in &mut victims {
        assert!(victim.closed_within(Duration::from_secs(5)));
    }
    assert_eq!(killer.cmd(&["PING"]), b"+PONG\r\n");

    // Killing yourself: the reply still arrives, then the connection closes.
    let reply = killer.cmd(&["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "no"]);
    assert_eq!(reply, b":1\r\n");
    assert!(killer.closed_within(Duration::from_secs(5)));
}

#[test]
fn kill_maxage_spares_young_clients() {
    let server = InProcess::start(|c| c.server_threads = 2);
    let (mut old, _) = server.client();
    std::thread::sleep(Duration::from_millis(2100));
    let (mut young, _) = server.client();
    let (mut killer, _) = server.client();
    assert_eq!(
        killer.cmd(&["CLIENT", "KILL", "MAXAGE", "1"]),
        b":1\r\n",
        "only the client connected for 2 s"
    );
    assert!(old.closed_within(Duration::from_secs(5)));
    assert_eq!(young.cmd(&["PING"]), b"+PONG\r\n");
    assert_eq!(
        killer.cmd(&["CLIENT", "KILL", "MAXAGE", "0"]),
        b"-ERR maxage should be greater than 0\r\n"
    );
}

/// Whether a reply arrives within `wait`.
fn replies_within(conn: &mut RawConn, wait: Duration) -> Option<Vec<u8>> {
    conn.set_read_timeout(wait);
    let reply = conn.read_reply_or_eof().ok().flatten();
    conn.set_read_timeout(support::IO_TIMEOUT);
    reply
}

#[test]
fn pause_write_holds_writes_until_unpause_while_reads_pass() {
    let server = TestServer::start(&["--server-threads", "2"]);
    let mut admin = server.raw();
    let mut writer = server.raw();
    let mut reader = server.raw();
    assert_eq!(writer.cmd(&["SET", "k", "before"]), b"+OK\r\n");
    assert_eq!(
        admin.cmd(&["CLIENT", "PAUSE", "20000", "WRITE"]),
        b"+OK\r\n"
    );

    writer.send_cmd(&["SET", "k", "after"]);
    assert_eq!(
        replies_within(&mut writer, Duration::from_millis(300)),
        None
    );
    assert_eq!(reader.cmd(&["GET", "k"]), b"$6\r\nbefore\r\n");

    assert_eq!(admin.cmd(&["CLIENT", "UNPAUSE"]), b"+OK\r\n");
    assert_eq!(
        replies_within(&mut writer, Duration::from_secs(5)).as_deref(),
        Some(&b"+OK\r\n"[..])
    );
    assert_eq!(reader.cmd(&["GET", "k"]), b"$5\r\nafter\r\n");
}

#[test]
fn pause_ends_by_itself_and_all_holds_reads() {
    let server = TestServer::start(&["--server-threads", "2"]);
    let mut admin = server.raw();
    let mut reader = server.raw();
    let started = Instant::now();
    assert_eq!(admin.cmd(&["CLIENT", "PAUSE", "400"]), b"+OK\r\n");
    assert_eq!(reader.cmd(&["GET", "k"]), b"$-1\r\n");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(350), "read held {waited:?}");
    assert!(
        waited < Duration::from_secs(3),
        "pause ended late: {waited:?}"
    );
}

#[test]
fn reply_off_and_skip_silence_replies() {
    let server = TestServer::start(&[]);
    let mut conn = server.raw();
    conn.send_cmd(&["CLIENT", "REPLY", "OFF"]);
    conn.send_cmd(&["SET", "k", "v"]);
    conn.send_cmd(&["NOSUCHCOMMAND"]);
    assert_eq!(conn.cmd(&["CLIENT", "REPLY", "ON"]), b"+OK\r\n");
    assert_eq!(conn.cmd(&["GET", "k"]), b"$1\r\nv\r\n");

    conn.send_cmd(&["CLIENT", "REPLY", "SKIP"]);
    conn.send_cmd(&["PING"]);
    assert_eq!(conn.cmd(&["ECHO", "x"]), b"$1\r\nx\r\n");
}

#[test]
fn names_show_in_client_list() {
    let server = TestServer::start(&[]);
    let mut conn = server.raw();
    assert_eq!(conn.cmd(&["CLIENT", "GETNAME"]), b"$-1\r\n");
    assert_eq!(conn.cmd(&["CLIENT", "SETNAME", "app-1"]), b"+OK\r\n");
    assert_eq!(conn.cmd(&["CLIENT", "GETNAME"]), b"$5\r\napp-1\r\n");
    assert!(bulk_text(&conn.cmd(&["CLIENT", "INFO"])).contains(" name=app-1 "));
    assert_eq!(conn.cmd(&["CLIENT", "SETNAME", ""]), b"+OK\r\n");
    assert_eq!(conn.cmd(&["CLIENT", "GETNAME"]), b"$-1\r\n");
    assert_eq!(
        conn.cmd(&["CLIENT", "SETINFO", "LIB-NAME", "redis-py"]),
        b"+OK\r\n"
    );
    assert_eq!(
        conn.cmd(&["CLIENT", "SETINFO", "lib-ver", "5.0.1"]),
        b"+OK\r\n"
    );
    assert_eq!(
        conn.cmd(&["CLIENT", "SETINFO", "lib-name", "bad name"]),
        b"-ERR lib-name cannot contain spaces, newlines or special characters.\r\n"
    );
    assert_eq!(
        conn.cmd(&["CLIENT", "SETINFO", "color", "red"]),
        b"-ERR Unrecognized option 'color'\r\n"
    );
    assert_eq!(conn.cmd(&["CLIENT", "NO-TOUCH", "on"]), b"+OK\r\n");
    assert!(bulk_text(&conn.cmd(&["CLIENT", "INFO"])).contains(" flags=T "));
}

#[test]
fn maxclients_rejects_the_extra_connection() {
    let server = InProcess::start(|c| {
        c.maxclients = 2;
        c.server_threads = 2;
    });
    let mut first = server.raw();
    let mut second = server.raw();
    assert_eq!(first.cmd(&["PING"]), b"+PONG\r\n");
    assert_eq!(second.cmd(&["PING"]), b"+PONG\r\n");

    let mut third = server.raw();
    assert_eq!(
        third.read_reply(),
        b"-ERR max number of clients reached\r\n"
    );
    assert!(third.closed_within(Duration::from_secs(5)));

    // A slot frees up once a client leaves.
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut next = server.raw();
        let answered = next.try_send(&support::encode_command(&["PING"])).is_ok()
            && next.read_reply_or_eof().ok().flatten().as_deref() == Some(b"+PONG\r\n");
        if answered {
            break;
        }
        assert!(Instant::now() < deadline, "the freed slot was never reused");
        std::thread::sleep(Duration::from_millis(20));
    }
}
