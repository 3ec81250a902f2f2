//! DEBUG: the enable-debug-command gate, POPULATE, DIGEST and DIGEST-VALUE equal to a
//! real redis-server's for the same data, and SLEEP blocking only its own thread.

mod in_process;
mod support;

use in_process::InProcess;
use std::time::{Duration, Instant};
use support::{RawConn, RealRedis, TestServer};

const NOT_ALLOWED: &[u8] = b"-ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.\r\n";

#[test]
fn debug_is_refused_unless_enabled() {
    let server = TestServer::start(&[]);
    let mut conn = server.raw();
    assert_eq!(conn.cmd(&["DEBUG", "DIGEST"]), NOT_ALLOWED);
    assert_eq!(
        conn.cmd(&["DEBUG"]),
        b"-ERR wrong number of arguments for 'debug' command\r\n"
    );
    for setting in ["yes", "local"] {
        let server = TestServer::start(&["--enable-debug-command", setting]);
        let mut conn = server.raw();
        assert_eq!(
            conn.cmd(&["DEBUG", "DIGEST"]),
            b"+0000000000000000000000000000000000000000\r\n",
            "enable-debug-command {setting} from loopback"
        );
    }
}

/// A status reply's text.
fn status(reply: &[u8]) -> String {
    let text = String::from_utf8(reply.to_vec()).expect("utf8");
    assert!(text.starts_with('+'), "not a status reply: {text:?}");
    text[1..].trim_end().to_string()
}

#[test]
fn populate_creates_missing_keys_only() {
    let server = TestServer::start(&["--enable-debug-command", "yes", "--server-threads", "2"]);
    let mut conn = server.raw();
    assert_eq!(conn.cmd(&["SET", "key:7", "mine"]), b"+OK\r\n");
    assert_eq!(conn.cmd(&["DEBUG", "POPULATE", "10000"]), b"+OK\r\n");
    assert_eq!(conn.cmd(&["DBSIZE"]), b":10000\r\n");
    assert_eq!(conn.cmd(&["GET", "key:7"]), b"$4\r\nmine\r\n");
    assert_eq!(conn.cmd(&["GET", "key:9999"]), b"$10\r\nvalue:9999\r\n");
    assert_eq!(
        conn.cmd(&["DEBUG", "POPULATE", "2", "pad", "10"]),
        b"+OK\r\n"
    );
    assert_eq!(conn.cmd(&["GET", "pad:1"]), b"$10\r\nvalue:1\0\0\0\r\n");
    let object = status(&conn.cmd(&["DEBUG", "OBJECT", "key:1"]));
    assert!(
        object.starts_with("Value at:0x")
            && object.contains(" refcount:1 encoding:embstr serializedlength:8 lru:")
            && object.ends_with(" lru_seconds_idle:0"),
        "{object}"
    );
}

/// Datasets built by the same commands on both servers.
const DATASETS: &[&[&[&str]]] = &[
    &[],
    &[&["SET", "a", "1"]],
    &[
        &["SET", "int", "12345"],
        &["SET", "neg", "-7"],
        &["SET", "big", "123456789012345678"],
        &["SET", "emb", "hello world"],
        &[
            "SET",
            "raw",
            "a string longer than forty-four bytes, so it is raw",
        ],
        &["SET", "empty", ""],
        &["SET", "bin", "\0\x01\u{7f}"],
        &["SET", "ttl", "v", "EX", "1000"],
    ],
    &[
        &["SET", "same", "x"],
        &["SELECT", "1"],
        &["SET", "same", "x"],
        &["SELECT", "15"],
        &["SET", "other", "y", "PX", "500000"],
        &["SELECT", "0"],
    ],
    &[
        &["DEBUG", "POPULATE", "2000"],
        &["DEBUG", "POPULATE", "300", "padded", "100"],
        &["DEL", "key:5", "key:77"],
        &["SELECT", "2"],
        &["DEBUG", "POPULATE", "50", "two"],
        &["SELECT", "0"],
    ],
];

fn run(conn: &mut RawConn, commands: &[&[&str]]) {
    for command in commands {
        let reply = conn.cmd(command);
        assert_ne!(reply.first(), Some(&b'-'), "{command:?}: {reply:?}");
    }
}

#[test]
fn digests_equal_real_redis_for_the_same_data() {
    let Some(_) = support::redis_server_or_skip() else {
        return;
    };
    for dataset in DATASETS {
        let redis = RealRedis::start(&["--enable-debug-command", "yes"]);
        let kvik = TestServer::start(&["--enable-debug-command", "yes", "--server-threads", "2"]);
        let (mut r, mut k) = (redis.raw(), kvik.raw());
        run(&mut r, dataset);
        run(&mut k, dataset);
        let expected = status(&r.cmd(&["DEBUG", "DIGEST"]));
        assert_eq!(
            status(&k.cmd(&["DEBUG", "DIGEST"])),
            expected,
            "{dataset:?}"
        );
        assert_eq!(expected.len(), 40);
        let keys = [
            "a", "int", "big", "raw", "ttl", "same", "key:1", "padded:3", "none",
        ];
        let digest_values = |conn: &mut RawConn| {
            let mut command = vec!["DEBUG", "DIGEST-VALUE"];
            command.extend(keys);
            conn.cmd(&command)
        };
        assert_eq!(digest_values(&mut k), digest_values(&mut r), "{dataset:?}");
    }
}

#[test]
fn digest_ignores_order_and_sees_every_change() {
    let server = TestServer::start(&["--enable-debug-command", "yes"]);
    let mut conn = server.raw();
    let digest = |conn: &mut RawConn| status(&conn.cmd(&["DEBUG", "DIGEST"]));
    run(&mut conn, &[&["SET", "a", "1"], &["SET", "b", "2"]]);
    let forward = digest(&mut conn);
    run(
        &mut conn,
        &[&["FLUSHALL"], &["SET", "b", "2"], &["SET", "a", "1"]],
    );
    assert_eq!(digest(&mut conn), forward, "insertion order does not count");
    run(&mut conn, &[&["SET", "a", "2"]]);
    assert_ne!(digest(&mut conn), forward, "a changed value changes it");
    run(&mut conn, &[&["SET", "a", "1", "EX", "100"]]);
    assert_ne!(digest(&mut conn), forward, "an expiry changes it");
    run(&mut conn, &[&["SET", "a", "1"], &["SWAPDB", "0", "1"]]);
    assert_ne!(digest(&mut conn), forward, "the database counts");
}

#[test]
fn sleep_blocks_only_its_own_thread() {
    let server = InProcess::start(|c| {
        c.server_threads = 2;
        c.enable_debug_command = "yes".into();
    });
    let (mut sleeper, sleeper_id) = server.client();
    let (mut other, _) = server.client_off_worker(server.worker_of(sleeper_id));

    let started = Instant::now();
    sleeper.send_cmd(&["DEBUG", "SLEEP", "1.5"]);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(other.cmd(&["PING"]), b"+PONG\r\n");
    assert!(
        started.elapsed() < Duration::from_millis(1000),
        "the other thread was blocked too"
    );
    assert_eq!(sleeper.read_reply(), b"+OK\r\n");
    assert!(started.elapsed() >= Duration::from_millis(1500));
}

#[test]
fn set_active_expire_stops_the_background_cycle() {
    let server = InProcess::start(|c| {
        c.server_threads = 2;
        c.enable_debug_command = "yes".into();
    });
    let (mut conn, _) = server.client();
    assert_eq!(conn.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), b"+OK\r\n");
    assert_eq!(conn.cmd(&["SET", "k", "v", "PX", "50"]), b"+OK\r\n");
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        conn.cmd(&["DBSIZE"]),
        b":1\r\n",
        "nobody touched it: still there"
    );
    assert_eq!(conn.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]), b"+OK\r\n");
    let deadline = Instant::now() + Duration::from_secs(5);
    while conn.cmd(&["DBSIZE"]) != b":0\r\n" {
        assert!(Instant::now() < deadline, "the cycle never removed the key");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The value of a bulk reply.
fn bulk_value(reply: &[u8]) -> &[u8] {
    let start = reply.iter().position(|&b| b == b'\n').expect("a header") + 1;
    &reply[start..reply.len() - 2]
}

#[test]
fn error_log_pause_cron_and_skipped_checksums_act_as_in_redis() {
    let server = TestServer::start(&["--enable-debug-command", "yes"]);
    let mut conn = server.raw();
    // ERROR replies with the text as it is and counts nowhere.
    assert_eq!(
        conn.cmd(&["DEBUG", "ERROR", "custom err"]),
        b"-custom err\r\n"
    );
    assert_eq!(conn.cmd(&["DEBUG", "ERROR", "-FOO bar"]), b"--FOO bar\r\n");
    assert_eq!(
        conn.cmd(&["INFO", "errorstats"]),
        b"$14\r\n# Errorstats\r\n\r\n"
    );
    assert_eq!(conn.cmd(&["DEBUG", "LOG", "marker-7d1"]), b"+OK\r\n");
    assert_eq!(conn.cmd(&["DEBUG", "PAUSE-CRON", "1"]), b"+OK\r\n");
    assert_eq!(conn.cmd(&["DEBUG", "PAUSE-CRON", "0"]), b"+OK\r\n");

    // A payload with a wrong CRC restores only while checksums are skipped; a
    // corrupt body is still refused, never loaded.
    assert_eq!(conn.cmd(&["RPUSH", "l", "a", "b", "c"]), b":3\r\n");
    let dump = conn.cmd(&["DUMP", "l"]);
    let payload = bulk_value(&dump).to_vec();
    let mut bad_crc = payload.clone();
    *bad_crc.last_mut().unwrap() ^= 1;
    let restore = |conn: &mut RawConn, key: &str, payload: &[u8]| {
        conn.cmd(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", payload])
    };
    assert_eq!(
        restore(&mut conn, "a", &bad_crc),
        b"-ERR DUMP payload version or checksum are wrong\r\n"
    );
    assert_eq!(
        conn.cmd(&["DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "1"]),
        b"+OK\r\n"
    );
    assert_eq!(restore(&mut conn, "b", &bad_crc), b"+OK\r\n");
    assert_eq!(
        conn.cmd(&["LRANGE", "b", "0", "-1"]),
        b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"
    );
    let mut bad_body = payload.clone();
    bad_body[1] = 0xff;
    assert_eq!(
        restore(&mut conn, "c", &bad_body),
        b"-ERR Bad data format\r\n"
    );
    assert_eq!(conn.cmd(&["EXISTS", "c"]), b":0\r\n");
    assert_eq!(
        conn.cmd(&["DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "0"]),
        b"+OK\r\n"
    );
    assert_eq!(
        restore(&mut conn, "d", &bad_crc),
        b"-ERR DUMP payload version or checksum are wrong\r\n"
    );
    assert!(
        server.stdout().contains("DEBUG LOG: marker-7d1")
            || server.stderr().contains("DEBUG LOG: marker-7d1")
    );
}

#[test]
fn segfault_writes_the_crash_report_and_dies_of_the_signal() {
    let mut server = TestServer::start(&["--enable-debug-command", "yes"]);
    let mut conn = server.raw();
    assert_eq!(conn.cmd(&["SET", "k", "v"]), b"+OK\r\n");
    conn.send_cmd(&["DEBUG", "SEGFAULT"]);
    server.assert_exits_within(Duration::from_secs(20));
    let log = server.stdout() + &server.stderr();
    for line in [
        "=== REDIS BUG REPORT START: Cut & paste starting from here ===",
        "crashed by signal: 11",
        "------ STACK TRACE ------",
        "------ INFO OUTPUT ------",
        "redis_version:7.0.15",
        "------ CLIENT LIST OUTPUT ------",
        "=== REDIS BUG REPORT END. Make sure to include from START to END. ===",
    ] {
        assert!(log.contains(line), "no {line:?} in:\n{log}");
    }
}

#[test]
fn panic_writes_the_software_failure_report_and_aborts() {
    let mut server = TestServer::start(&["--enable-debug-command", "yes"]);
    let mut conn = server.raw();
    conn.send_cmd(&["DEBUG", "PANIC"]);
    server.assert_exits_within(Duration::from_secs(20));
    let log = server.stdout() + &server.stderr();
    for line in [
        "!!! Software Failure. Press left mouse button to continue",
        "Guru Meditation: DEBUG PANIC called at Unix time ",
        "=== REDIS BUG REPORT START: Cut & paste starting from here ===",
        "------ STACK TRACE ------",
        "------ INFO OUTPUT ------",
        "=== REDIS BUG REPORT END. Make sure to include from START to END. ===",
    ] {
        assert!(log.contains(line), "no {line:?} in:\n{log}");
    }
    assert_eq!(
        log.matches("REDIS BUG REPORT START").count(),
        1,
        "one report, not a second one for the abort:\n{log}"
    );
}

#[test]
fn stringmatch_test_fuzzes_the_matcher_and_passes() {
    let server = TestServer::start(&["--enable-debug-command", "yes"]);
    let mut conn = server.raw();
    assert_eq!(
        conn.cmd(&["DEBUG", "STRINGMATCH-TEST"]),
        b"+Apparently Redis did not crash: test passed\r\n"
    );
}

#[test]
fn assert_and_oom_write_redis_crash_lines() {
    for (action, lines) in [
        (
            "ASSERT",
            &[
                "=== ASSERTION FAILED ===",
                "' is not true",
                "------ STACK TRACE ------",
            ][..],
        ),
        (
            "OOM",
            &[
                "Out Of Memory allocating ",
                "Guru Meditation: Redis aborting for OUT OF MEMORY. Allocating ",
                "=== REDIS BUG REPORT END. Make sure to include from START to END. ===",
            ][..],
        ),
    ] {
        let mut server = TestServer::start(&["--enable-debug-command", "yes"]);
        server.raw().send_cmd(&["DEBUG", action]);
        server.assert_exits_within(Duration::from_secs(20));
        let log = server.stdout() + &server.stderr();
        for line in lines {
            assert!(log.contains(line), "DEBUG {action}: no {line:?} in:\n{log}");
        }
    }
}

/// `rbs=` of the CLIENT LIST line of the client named `name`.
fn reply_buffer_size(conn: &mut RawConn, name: &str) -> usize {
    let list = String::from_utf8(conn.cmd(&["CLIENT", "LIST"])).unwrap();
    let line = list
        .lines()
        .find(|l| l.contains(&format!(" name={name} ")))
        .unwrap_or_else(|| panic!("no client {name} in {list}"));
    let field = line
        .split(' ')
        .find_map(|f| f.strip_prefix("rbs="))
        .expect("rbs field");
    field.parse().unwrap()
}

#[test]
fn replybuffer_shrinks_idle_buffers_as_the_settings_say() {
    let server = TestServer::start(&["--enable-debug-command", "yes"]);
    let mut admin = server.raw();
    let mut reader = server.raw();
    assert_eq!(reader.cmd(&["CLIENT", "SETNAME", "reader"]), b"+OK\r\n");
    let big = "x".repeat(20_000);
    admin.cmd(&["SET", "big", &big]);
    // Never forgetting the peak, the buffer that held a big reply keeps its size.
    assert_eq!(
        admin.cmd(&["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "NEVER"]),
        b"+OK\r\n"
    );
    reader.cmd(&["GET", "big"]);
    let grown = reply_buffer_size(&mut admin, "reader");
    assert!(grown > 20_000, "rbs={grown}");
    admin.cmd(&["DEBUG", "SLEEP", "0.3"]);
    assert_eq!(reply_buffer_size(&mut admin, "reader"), grown);
    // Resizing off: a forgotten peak changes nothing either.
    assert_eq!(
        admin.cmd(&["DEBUG", "REPLYBUFFER", "RESIZING", "0"]),
        b"+OK\r\n"
    );
    admin.cmd(&["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "50"]);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(reply_buffer_size(&mut admin, "reader"), grown);
    // Back on: the idle client's buffer shrinks to Redis's minimum.
    admin.cmd(&["DEBUG", "REPLYBUFFER", "RESIZING", "1"]);
    support::wait_for("the idle buffer to shrink", || {
        reply_buffer_size(&mut admin, "reader") == 1024
    });
    let shrinks = admin.info_field("stats", "reply_buffer_shrinks");
    assert!(shrinks.parse::<u64>().unwrap() >= 1, "{shrinks}");
    assert_eq!(
        admin.cmd(&["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "RESET"]),
        b"+OK\r\n"
    );
    assert_eq!(
        admin.cmd(&["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "soon"]),
        b"-ERR value is not an integer or out of range\r\n"
    );
    assert_eq!(
        admin.cmd(&["DEBUG", "REPLYBUFFER", "SIZE", "1"]),
        b"-ERR unknown subcommand or wrong number of arguments for 'REPLYBUFFER'. Try DEBUG HELP.\r\n"
    );
}

/// DEBUG QUICKLIST-PACKED-THRESHOLD: Redis's replies, and lists whose big elements
/// each get a node of their own read, edit and pop as any list (the model is a Vec).
#[test]
fn quicklist_packed_threshold_gives_big_elements_nodes_of_their_own() {
    let server = TestServer::start(&["--enable-debug-command", "yes"]);
    let mut c = server.raw();
    let bad = b"-ERR argument must be a memory value bigger than 1 and smaller than 4gb\r\n";
    assert_eq!(c.cmd(&["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "5gb"]), bad);
    assert_eq!(c.cmd(&["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "abc"]), bad);
    assert_eq!(
        c.cmd(&["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "100"]),
        b"+OK\r\n"
    );
    let mut model: Vec<String> = Vec::new();
    for i in 0..40 {
        let item = if i % 3 == 0 {
            "B".repeat(150 + i)
        } else {
            format!("s{i}")
        };
        c.cmd(&["RPUSH", "l", &item]);
        model.push(item);
    }
    c.cmd(&["LSET", "l", "4", &"x".repeat(300)]);
    model[4] = "x".repeat(300);
    c.cmd(&["LINSERT", "l", "BEFORE", "s1", &"y".repeat(120)]);
    model.insert(1, "y".repeat(120));
    c.cmd(&["LREM", "l", "0", "s2"]);
    model.retain(|m| m != "s2");
    c.cmd(&["LPOP", "l"]);
    model.remove(0);
    let mut expected = format!("*{}\r\n", model.len());
    for m in &model {
        expected.push_str(&format!("${}\r\n{m}\r\n", m.len()));
    }
    assert_eq!(c.cmd(&["LRANGE", "l", "0", "-1"]), expected.into_bytes());
    assert_eq!(
        c.cmd(&["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "0"]),
        b"+OK\r\n"
    );
}

#[test]
fn config_rewrite_force_all_writes_every_directive() {
    let dir = support::scratch_dir("force-all");
    let path = dir.join("kvik.conf");
    std::fs::write(&path, "# mine\nhz 12\n").unwrap();
    let port = support::free_port();
    let config = kvik_config::Config {
        port,
        server_threads: 1,
        hz: 12,
        enable_debug_command: "yes".into(),
        ..support::in_process_config()
    };
    let running = kvik_server::startup::launch(config, Some(path.clone())).expect("server starts");
    let mut conn = RawConn::connect(&format!("127.0.0.1:{port}"));
    assert_eq!(conn.cmd(&["DEBUG", "CONFIG-REWRITE-FORCE-ALL"]), b"+OK\r\n");
    let written = std::fs::read_to_string(&path).unwrap();
    for line in [
        "# mine",
        "hz 12",
        "key-load-delay 0",
        "maxmemory 0",
        "appendonly no",
    ] {
        assert!(
            written.lines().any(|l| l == line),
            "no {line:?} in:\n{written}"
        );
    }
    let args = vec![path.to_string_lossy().into_owned()];
    let reread = kvik_config::load_from_argv(&args).expect("the written file loads");
    assert_eq!(reread.config.hz, 12);
    running.shutdown();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn replicate_sends_a_command_to_replicas_only() {
    let debug = ["--enable-debug-command", "yes"];
    let master = TestServer::start(&debug);
    let port = master.port().to_string();
    let replica = TestServer::start(&[debug[0], debug[1], "--replicaof", "127.0.0.1", &port]);
    let mut m = master.raw();
    let mut r = replica.raw();
    support::wait_for("the link to come up", || {
        r.info_field("replication", "master_link_status") == "up"
    });
    assert_eq!(
        m.cmd(&["DEBUG", "REPLICATE", "SET", "diverged", "yes"]),
        b"+OK\r\n"
    );
    support::wait_for("the replica to get it", || {
        r.cmd(&["GET", "diverged"]) == b"$3\r\nyes\r\n"
    });
    assert_eq!(m.cmd(&["GET", "diverged"]), b"$-1\r\n");
}
