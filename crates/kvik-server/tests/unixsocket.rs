//! `unixsocket` / `unixsocketperm`: a Unix listening socket served like TCP on every
//! server thread, checked against redis-server where it matters to clients (replies
//! of every command family, CLIENT LIST's addr/laddr/flags), plus permissions,
//! protected mode, redis-cli -s and the socket file's life.

mod support;

use redis::Value;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use support::in_process::Kvik;
use support::{redis_server_or_skip, scratch_dir, RealRedis, TestServer};

fn socket_in(tag: &str) -> PathBuf {
    scratch_dir(tag).join("kvik.sock")
}

fn unix_client(path: &Path) -> redis::Connection {
    let client = redis::Client::open(format!("unix://{}", path.display())).expect("client");
    let con = client
        .get_connection_with_timeout(support::START_TIMEOUT)
        .unwrap_or_else(|e| panic!("connect to {}: {e}", path.display()));
    con.set_read_timeout(Some(support::IO_TIMEOUT)).unwrap();
    con
}

fn run(con: &mut redis::Connection, args: &[&str]) -> Value {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    match cmd.query::<Value>(con) {
        Ok(v) => v,
        Err(e) => Value::SimpleString(format!("error: {e}")),
    }
}

/// Commands of every family, each with a reply that does not depend on the server's
/// internals (no set iteration orders, no timings).
const FAMILIES: &[&[&str]] = &[
    &["FLUSHALL"],
    // strings
    &["SET", "s", "hello"],
    &["APPEND", "s", " world"],
    &["GETRANGE", "s", "0", "4"],
    &["INCRBY", "n", "41"],
    &["INCRBYFLOAT", "n", "0.5"],
    &["MSET", "a", "1", "b", "2"],
    &["MGET", "a", "b", "missing"],
    // keys and expiry
    &["EXPIRE", "a", "100"],
    &["TTL", "a"],
    &["PERSIST", "a"],
    &["TYPE", "s"],
    &["RENAME", "b", "b2"],
    &["EXISTS", "a", "b", "b2"],
    &["DEL", "a", "b2"],
    // lists
    &["RPUSH", "l", "x", "y", "z"],
    &["LPOP", "l"],
    &["LRANGE", "l", "0", "-1"],
    &["BLPOP", "l", "1"],
    // hashes
    &["HSET", "h", "f1", "v1", "f2", "v2"],
    &["HGET", "h", "f2"],
    &["HLEN", "h"],
    // sets
    &["SADD", "set", "m1", "m2", "m3"],
    &["SISMEMBER", "set", "m2"],
    &["SCARD", "set"],
    // sorted sets
    &["ZADD", "z", "1", "one", "2", "two"],
    &["ZRANGE", "z", "0", "-1", "WITHSCORES"],
    &["ZSCORE", "z", "two"],
    // streams
    &["XADD", "x", "1-1", "f", "v"],
    &["XRANGE", "x", "-", "+"],
    &["XLEN", "x"],
    // bitmaps and HyperLogLog
    &["SETBIT", "bits", "7", "1"],
    &["BITCOUNT", "bits"],
    &["PFADD", "hll", "a", "b", "c"],
    &["PFCOUNT", "hll"],
    // geo
    &["GEOADD", "g", "13.361389", "38.115556", "Palermo"],
    &["GEOADD", "g", "15.087269", "37.502669", "Catania"],
    &["GEODIST", "g", "Palermo", "Catania", "km"],
    // scripting and functions
    &["EVAL", "return redis.call('GET', KEYS[1])", "1", "s"],
    &[
        "FUNCTION",
        "LOAD",
        "#!lua name=lib\nredis.register_function('f', function(k) return 7 end)",
    ],
    &["FCALL", "f", "0"],
    // transactions
    &["MULTI"],
    &["INCR", "t"],
    &["INCR", "t"],
    &["EXEC"],
    // pub/sub and server
    &["PUBLISH", "chan", "msg"],
    &["DBSIZE"],
    &["ECHO", "over the socket"],
    &["SELECT", "1"],
    &["DBSIZE"],
];

#[test]
fn every_command_family_answers_over_the_unix_socket_as_redis_does() {
    if redis_server_or_skip().is_none() {
        return;
    }
    let kvik_path = socket_in("unix-families-kvik");
    let redis_path = socket_in("unix-families-redis");
    let _kvik = TestServer::start(&["--unixsocket", kvik_path.to_str().unwrap()]);
    let _redis = RealRedis::start(&["--unixsocket", redis_path.to_str().unwrap()]);
    let mut k = unix_client(&kvik_path);
    let mut r = unix_client(&redis_path);
    for args in FAMILIES {
        assert_eq!(run(&mut k, args), run(&mut r, args), "{args:?}");
    }
}

/// The fields of a CLIENT INFO line, the socket path written as `PATH`.
fn endpoint_fields(line: &str, path: &Path) -> Vec<String> {
    line.split_whitespace()
        .filter(|f| f.starts_with("addr=") || f.starts_with("laddr=") || f.starts_with("flags="))
        .map(|f| f.replace(path.to_str().unwrap(), "PATH"))
        .collect()
}

fn client_info(con: &mut redis::Connection) -> String {
    redis::cmd("CLIENT").arg("INFO").query(con).unwrap()
}

#[test]
fn client_list_shows_unix_clients_as_redis_does() {
    if redis_server_or_skip().is_none() {
        return;
    }
    let kvik_path = socket_in("unix-list-kvik");
    let redis_path = socket_in("unix-list-redis");
    let _kvik = TestServer::start(&["--unixsocket", kvik_path.to_str().unwrap()]);
    let _redis = RealRedis::start(&["--unixsocket", redis_path.to_str().unwrap()]);
    let kvik_line = client_info(&mut unix_client(&kvik_path));
    let redis_line = client_info(&mut unix_client(&redis_path));
    let kvik_fields = endpoint_fields(&kvik_line, &kvik_path);
    assert_eq!(kvik_fields, endpoint_fields(&redis_line, &redis_path));
    assert_eq!(kvik_fields, ["addr=PATH:0", "laddr=PATH:0", "flags=U"]);
    // A unix client can be killed by the address CLIENT LIST shows.
    let mut victim = unix_client(&kvik_path);
    let victim_addr = format!("{}:0", kvik_path.display());
    let mut killer = unix_client(&kvik_path);
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ADDR")
        .arg(&victim_addr)
        .arg("SKIPME")
        .arg("yes")
        .query(&mut killer)
        .unwrap();
    assert_eq!(killed, 1);
    assert!(redis::cmd("PING").query::<String>(&mut victim).is_err());
}

fn mode_of(path: &Path) -> u32 {
    let meta = std::fs::metadata(path).expect("the socket file");
    assert!(meta.file_type().is_socket());
    meta.permissions().mode() & 0o777
}

#[test]
fn unixsocketperm_sets_the_socket_files_mode() {
    for perm in ["700", "755", "777"] {
        let path = socket_in("unix-perm");
        let _kvik = TestServer::start(&[
            "--unixsocket",
            path.to_str().unwrap(),
            "--unixsocketperm",
            perm,
        ]);
        assert_eq!(mode_of(&path), u32::from_str_radix(perm, 8).unwrap());
        assert_eq!(
            run(
                &mut unix_client(&path),
                &["CONFIG", "GET", "unixsocketperm"]
            ),
            Value::Array(vec![
                Value::BulkString(b"unixsocketperm".to_vec()),
                Value::BulkString(perm.as_bytes().to_vec()),
            ])
        );
    }
}

#[test]
fn a_stale_socket_file_is_replaced_and_the_file_removed_at_shutdown() {
    let path = socket_in("unix-stale");
    // Left behind by a server that died: a socket nobody listens on.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    let mut kvik = TestServer::start(&["--unixsocket", path.to_str().unwrap()]);
    let mut con = unix_client(&path);
    assert_eq!(run(&mut con, &["PING"]), Value::SimpleString("PONG".into()));
    let _ = redis::cmd("SHUTDOWN")
        .arg("NOSAVE")
        .query::<Value>(&mut con);
    kvik.assert_exits_within(std::time::Duration::from_secs(10));
    assert!(!path.exists(), "the socket file is removed on the way out");
    assert!(kvik.stdout().contains("Removing the unix socket file."));
}

#[test]
fn a_socket_path_that_cannot_be_bound_stops_the_start() {
    let path = scratch_dir("unix-bad")
        .join("missing-dir")
        .join("kvik.sock");
    let err = TestServer::try_start(&["--unixsocket", path.to_str().unwrap()])
        .err()
        .expect("kvik refuses to start");
    assert!(err.contains("Failed opening Unix socket: bind:"), "{err}");
}

#[test]
fn redis_cli_connects_with_dash_s() {
    let path = socket_in("unix-cli");
    let _kvik = TestServer::start(&["--unixsocket", path.to_str().unwrap()]);
    let cli = |args: &[&str]| {
        let out = Command::new("redis-cli")
            .arg("-s")
            .arg(&path)
            .args(args)
            .output();
        match out {
            Ok(o) => Some(String::from_utf8_lossy(&o.stdout).trim().to_string()),
            Err(_) => None,
        }
    };
    let Some(pong) = cli(&["PING"]) else {
        println!("SKIPPED: redis-cli not found");
        return;
    };
    assert_eq!(pong, "PONG");
    assert_eq!(cli(&["SET", "k", "v"]).unwrap(), "OK");
    assert_eq!(cli(&["GET", "k"]).unwrap(), "v");
}

/// Protected mode admits Unix-socket clients (they are local), and
/// `enable-protected-configs local` lets them change protected settings.
#[test]
fn unix_clients_are_local_to_protected_mode() {
    let path = socket_in("unix-protected");
    let dir = path.parent().unwrap().to_str().unwrap().to_string();
    let _kvik = TestServer::start(&[
        "--unixsocket",
        path.to_str().unwrap(),
        "--protected-mode",
        "yes",
        "--enable-protected-configs",
        "local",
    ]);
    let mut con = unix_client(&path);
    assert_eq!(run(&mut con, &["PING"]), Value::SimpleString("PONG".into()));
    assert_eq!(run(&mut con, &["CONFIG", "SET", "dir", &dir]), Value::Okay);
}

/// Connections through the socket are dealt to every server thread in turn, like
/// TCP ones, and threads serve each other's clients (a blocked pop woken by a push
/// from a client of the other thread, a message to a subscriber there).
#[test]
fn unix_clients_are_served_on_every_thread() {
    let path = socket_in("unix-threads");
    let kvik = Kvik::start_with(|c| c.unixsocket = path.to_str().unwrap().to_string());
    let mut waiter = unix_client(&path);
    let mut pusher = unix_client(&path);
    let mut subscriber_con = unix_client(&path);
    let mut subscriber = subscriber_con.as_pubsub();
    subscriber.subscribe("news").unwrap();
    let mut publisher = unix_client(&path);
    let threads: std::collections::BTreeSet<usize> = kvik
        .server()
        .clients
        .all()
        .iter()
        .filter(|c| c.unix_socket)
        .map(|c| c.worker)
        .collect();
    assert_eq!(threads, [0, 1].into());
    let blocked = std::thread::spawn(move || {
        redis::cmd("BLPOP")
            .arg("q")
            .arg(10)
            .query::<(String, String)>(&mut waiter)
            .unwrap()
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let blocked_clients = |con: &mut redis::Connection| {
        let info: String = redis::cmd("INFO").arg("clients").query(con).unwrap();
        info.contains("blocked_clients:1")
    };
    while !blocked_clients(&mut pusher) {
        assert!(
            std::time::Instant::now() < deadline,
            "the pop never blocked"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(run(&mut pusher, &["RPUSH", "q", "job"]), Value::Int(1));
    assert_eq!(blocked.join().unwrap(), ("q".into(), "job".into()));
    assert_eq!(
        run(&mut publisher, &["PUBLISH", "news", "hi"]),
        Value::Int(1)
    );
    let message = subscriber.get_message().unwrap();
    assert_eq!(message.get_payload::<String>().unwrap(), "hi");
}

/// The Send-Q `ss` shows for a listening socket (its backlog): the second number
/// after the state. `None` when ss is missing; panics when it finds no socket.
fn listen_backlog(filter: &[&str]) -> Option<u32> {
    let out = Command::new("ss")
        .args(["-lnH"])
        .args(filter)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let fields: Vec<&str> = text.split_whitespace().collect();
    let state = fields
        .iter()
        .position(|f| *f == "LISTEN")
        .unwrap_or_else(|| panic!("no listening socket for {filter:?}: {text}"));
    Some(fields[state + 2].parse().expect("a Send-Q number"))
}

#[test]
fn tcp_backlog_sizes_both_listening_sockets() {
    let path = socket_in("unix-backlog");
    let kvik = TestServer::start(&[
        "--unixsocket",
        path.to_str().unwrap(),
        "--tcp-backlog",
        "37",
    ]);
    let port = format!("sport = :{}", kvik.port());
    let Some(tcp) = listen_backlog(&["-t", &port]) else {
        println!("SKIPPED: ss not found");
        return;
    };
    assert_eq!(tcp, 37);
    let unix = listen_backlog(&["-x", "src", path.to_str().unwrap()]);
    assert_eq!(unix, Some(37));
}
