//! Starting the binary the way operators and supervisors do: config files, directives,
//! daemonizing with a pid file, the log lines harnesses wait for, fatal config errors.

mod support;

use std::path::Path;
use std::process::Command;
use support::{free_port, kvik_server_path, scratch_dir, wait_for, RawConn, TestServer};

#[test]
fn daemonizes_writes_pidfile_and_logs_like_redis() {
    let dir = scratch_dir("daemon");
    let port = free_port().to_string();
    let pidfile = dir.join("kvik.pid");
    let logfile = dir.join("kvik.log");
    let status = Command::new(kvik_server_path())
        .args(["--port", &port, "--bind", "127.0.0.1", "--daemonize", "yes"])
        .args(["--pidfile", pidfile.to_str().unwrap()])
        .args(["--logfile", logfile.to_str().unwrap()])
        .args(["--dir", dir.to_str().unwrap()])
        .status()
        .expect("run kvik-server");
    assert!(status.success(), "the parent exits at once with success");
    wait_for("the pid file", || pidfile.exists());
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The pid file is written before the sockets are bound, as redis-server does.
    let addr = format!("127.0.0.1:{port}");
    wait_for("the server", || std::net::TcpStream::connect(&addr).is_ok());
    let mut c = RawConn::connect(&addr);
    assert_eq!(c.cmd(&["PING"]), b"+PONG\r\n");
    // The sockets accept a moment before the ready line is logged.
    let ready_line = || {
        std::fs::read_to_string(&logfile)
            .unwrap_or_default()
            .lines()
            .find(|l| l.ends_with("Ready to accept connections"))
            .map(str::to_owned)
    };
    wait_for("the ready line", || ready_line().is_some());
    let ready = ready_line().unwrap();
    // pid:role dd Mon yyyy hh:mm:ss.mmm * message
    assert!(ready.starts_with(&format!("{pid}:M ")), "{ready}");
    assert!(ready.contains(" * "), "{ready}");
    c.send(&support::encode_command(&["SHUTDOWN", "NOSAVE"]));
    wait_for("the pid file to go", || !pidfile.exists());
}

#[test]
fn debian_redis_conf_starts_it_with_overrides() {
    let conf = Path::new("/etc/redis/redis.conf");
    if !conf.exists() {
        println!("SKIPPED: /etc/redis/redis.conf not found (apt install redis-server)");
        return;
    }
    let dir = scratch_dir("debian-conf");
    let port = free_port().to_string();
    let logfile = dir.join("kvik.log");
    let mut child = Command::new(kvik_server_path())
        .arg(conf)
        .args(["--port", &port, "--daemonize", "no", "--pidfile", ""])
        .args(["--logfile", logfile.to_str().unwrap()])
        .args(["--dir", dir.to_str().unwrap()])
        .spawn()
        .expect("run kvik-server");
    wait_for("the server", || {
        std::net::TcpStream::connect(format!("127.0.0.1:{port}")).is_ok()
    });
    let mut c = RawConn::connect(&format!("127.0.0.1:{port}"));
    assert_eq!(c.cmd(&["PING"]), b"+PONG\r\n");
    let file = c.cmd(&["CONFIG", "GET", "bind"]);
    assert!(
        String::from_utf8_lossy(&file).contains("127.0.0.1"),
        "bind from the file"
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_bad_value_is_fatal_with_redis_message() {
    let output = Command::new(kvik_server_path())
        .args(["--port", "not-a-number"])
        .output()
        .expect("run kvik-server");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("*** FATAL CONFIG FILE ERROR"), "{stderr}");
    assert!(stderr.contains(">>> 'port \"not-a-number\"'"), "{stderr}");
    assert!(
        stderr.contains("argument couldn't be parsed into an integer"),
        "{stderr}"
    );
}

/// The process's `oom_score_adj`.
fn oom_score_of(pid: u32) -> i32 {
    std::fs::read_to_string(format!("/proc/{pid}/oom_score_adj"))
        .expect("oom_score_adj readable")
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn oom_score_adj_is_applied_to_the_process() {
    // The server starts with this process's score, which `yes` adds to.
    let base = oom_score_of(std::process::id());
    let kvik = TestServer::start(&[
        "--oom-score-adj",
        "yes",
        "--oom-score-adj-values",
        "100 200 800",
    ]);
    assert_eq!(oom_score_of(kvik.pid()), (base + 100).clamp(-1000, 1000));
    let mut conn = kvik.raw();
    let set = |conn: &mut RawConn, args: &[&str]| {
        let mut command = vec!["CONFIG", "SET"];
        command.extend_from_slice(args);
        conn.cmd(&command)
    };
    assert_eq!(
        set(&mut conn, &["oom-score-adj-values", "300 200 800"]),
        b"+OK\r\n"
    );
    assert_eq!(oom_score_of(kvik.pid()), (base + 300).clamp(-1000, 1000));
    assert_eq!(set(&mut conn, &["oom-score-adj", "absolute"]), b"+OK\r\n");
    assert_eq!(oom_score_of(kvik.pid()), 300);
    assert_eq!(
        set(&mut conn, &["oom-score-adj-values", "2000 0 0"]),
        b"+OK\r\n"
    );
    assert_eq!(oom_score_of(kvik.pid()), 1000);
    // `no` puts back the score it started with.
    assert_eq!(set(&mut conn, &["oom-score-adj", "no"]), b"+OK\r\n");
    assert_eq!(oom_score_of(kvik.pid()), base);
}
