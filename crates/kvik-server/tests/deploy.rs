//! Running kvik behind a service manager the way redis-server runs: systemd's
//! sd_notify protocol (`supervised systemd`), and the shutdown signals with their
//! `shutdown-on-sigterm` / `shutdown-on-sigint` flags.

mod support;

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{free_port, kvik_server_path, scratch_dir, wait_for, RawConn, TestServer};

/// A kvik-server process started here (with an environment of our choosing), killed
/// on drop.
struct Started {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Started {
    fn spawn(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Started {
        let port = free_port();
        let child = Command::new(kvik_server_path())
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--dir", dir.to_str().unwrap()])
            .args(["--logfile", dir.join("kvik.log").to_str().unwrap()])
            .args(args)
            .env_remove("UPSTART_JOB")
            .env_remove("NOTIFY_SOCKET")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run kvik-server");
        Started {
            child,
            port,
            dir: dir.to_path_buf(),
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("kvik.log")).unwrap_or_default()
    }

    fn conn(&self) -> RawConn {
        RawConn::connect(&format!("127.0.0.1:{}", self.port))
    }

    fn answers(&self) -> bool {
        std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
    }

    fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill() with a child's pid only sends a signal.
        unsafe { libc::kill(self.child.id() as libc::pid_t, signal) };
    }

    fn wait_exit(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "the server did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The next sd_notify datagram, as text.
fn next_notification(socket: &UnixDatagram) -> String {
    let mut buf = [0u8; 4096];
    let n = socket
        .recv(&mut buf)
        .expect("a notification within the timeout");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// A dump.rdb in `dir` holding `keys` keys, made by a kvik that is then stopped.
fn write_rdb(dir: &Path, keys: u64) {
    let maker = TestServer::start(&["--enable-debug-command", "yes"]);
    let mut c = maker.raw();
    assert_eq!(c.cmd(&["DEBUG", "POPULATE", &keys.to_string()]), b"+OK\r\n");
    assert_eq!(c.cmd(&["SAVE"]), b"+OK\r\n");
    std::fs::copy(maker.dir().join("dump.rdb"), dir.join("dump.rdb")).expect("copy dump.rdb");
}

fn dbsize(server: &Started) -> String {
    String::from_utf8(server.conn().cmd(&["DBSIZE"])).unwrap()
}

#[test]
fn systemd_hears_ready_only_after_loading_and_stopping_on_sigterm() {
    let dir = scratch_dir("notify");
    write_rdb(&dir, 300_000);
    let socket_path = dir.join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut server = Started::spawn(
        &dir,
        &[("NOTIFY_SOCKET", socket_path.to_str().unwrap())],
        &["--supervised", "systemd", "--save", "3600 1"],
    );
    assert_eq!(next_notification(&socket), "STATUS=Redis is loading...\n");
    assert_eq!(
        next_notification(&socket),
        "STATUS=Ready to accept connections\n"
    );
    assert_eq!(next_notification(&socket), "READY=1\n");
    // By READY=1 the data is loaded and the port accepts: no waiting needed.
    let log = server.log();
    assert!(log.contains("DB loaded from disk"), "{log}");
    assert!(log.contains("Supervised by systemd."), "{log}");
    assert_eq!(dbsize(&server), ":300000\r\n");
    server.signal(libc::SIGTERM);
    assert_eq!(next_notification(&socket), "STOPPING=1\n");
    assert_eq!(
        next_notification(&socket),
        "STATUS=Saving the final RDB snapshot\n"
    );
    assert!(server.wait_exit().success());
}

#[test]
fn systemd_in_the_abstract_namespace_and_auto_detection() {
    use std::os::linux::net::SocketAddrExt;
    let dir = scratch_dir("notify-abstract");
    let name = format!("kvik-deploy-test-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(&name).unwrap();
    let socket = UnixDatagram::bind_addr(&addr).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let notify = format!("@{name}");
    let mut server = Started::spawn(
        &dir,
        &[("NOTIFY_SOCKET", &notify)],
        &["--supervised", "auto", "--save", ""],
    );
    assert_eq!(next_notification(&socket), "STATUS=Redis is loading...\n");
    assert_eq!(
        next_notification(&socket),
        "STATUS=Ready to accept connections\n"
    );
    assert_eq!(next_notification(&socket), "READY=1\n");
    let mut c = server.conn();
    assert!(String::from_utf8(c.cmd(&["INFO", "server"]))
        .unwrap()
        .contains("process_supervised:systemd"));
    c.send(&support::encode_command(&["SHUTDOWN", "NOSAVE"]));
    assert_eq!(next_notification(&socket), "STOPPING=1\n");
    assert!(server.wait_exit().success());
}

#[test]
fn supervised_systemd_stays_in_the_foreground_even_with_daemonize() {
    let dir = scratch_dir("notify-daemonize");
    let socket_path = dir.join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut server = Started::spawn(
        &dir,
        &[("NOTIFY_SOCKET", socket_path.to_str().unwrap())],
        &[
            "--supervised",
            "systemd",
            "--daemonize",
            "yes",
            "--save",
            "",
        ],
    );
    while next_notification(&socket) != "READY=1\n" {}
    // Not forked: the process systemd started is the server.
    assert!(server.child.try_wait().unwrap().is_none());
    server.signal(libc::SIGTERM);
    assert!(server.wait_exit().success());
}

#[test]
fn supervised_systemd_without_notify_socket_warns_and_runs() {
    let dir = scratch_dir("notify-missing");
    let server = Started::spawn(&dir, &[], &["--supervised", "systemd", "--save", ""]);
    wait_for("the server", || server.answers());
    wait_for("the warning", || {
        server
            .log()
            .contains("systemd supervision error: NOTIFY_SOCKET not found!")
    });
}

fn rdb_exists(dir: &Path) -> bool {
    dir.join("dump.rdb").exists()
}

/// Start a server with `args`, write a key, send `signal`, wait for it to exit.
fn write_then_signal(tag: &str, signal: libc::c_int, args: &[&str]) -> (PathBuf, String) {
    let dir = scratch_dir(tag);
    let mut server = Started::spawn(&dir, &[], args);
    wait_for("the server", || server.answers());
    assert_eq!(server.conn().cmd(&["SET", "k", "v"]), b"+OK\r\n");
    server.signal(signal);
    assert!(server.wait_exit().success());
    let log = server.log();
    (dir, log)
}

#[test]
fn sigterm_with_save_points_saves() {
    let (dir, log) = write_then_signal("sigterm-save", libc::SIGTERM, &["--save", "3600 1"]);
    assert!(rdb_exists(&dir), "{log}");
    assert!(
        log.contains("Received SIGTERM scheduling shutdown..."),
        "{log}"
    );
    assert!(
        log.contains("Saving the final RDB snapshot before exiting."),
        "{log}"
    );
}

#[test]
fn shutdown_on_sigterm_nosave_does_not_save() {
    let (dir, log) = write_then_signal(
        "sigterm-nosave",
        libc::SIGTERM,
        &["--save", "3600 1", "--shutdown-on-sigterm", "nosave"],
    );
    assert!(!rdb_exists(&dir), "{log}");
}

#[test]
fn shutdown_on_sigint_save_saves_without_save_points() {
    let (dir, log) = write_then_signal(
        "sigint-save",
        libc::SIGINT,
        &["--save", "", "--shutdown-on-sigint", "save"],
    );
    assert!(rdb_exists(&dir), "{log}");
    assert!(
        log.contains("Received SIGINT scheduling shutdown..."),
        "{log}"
    );
}

#[test]
fn sigterm_without_save_points_does_not_save() {
    let (dir, log) = write_then_signal("sigterm-default", libc::SIGTERM, &["--save", ""]);
    assert!(!rdb_exists(&dir), "{log}");
}

/// A final save that cannot be written keeps the server running (it says why), unless the
/// flags say `force`.
#[test]
fn a_failed_final_save_keeps_serving_unless_forced() {
    let dir = scratch_dir("sigterm-failing");
    let data = dir.join("data");
    std::fs::create_dir(&data).unwrap();
    let mut server = Started::spawn(
        &dir,
        &[],
        &["--save", "3600 1", "--dir", data.to_str().unwrap()],
    );
    wait_for("the server", || server.answers());
    // Its working directory gone, the save cannot be written.
    std::fs::remove_dir(&data).unwrap();
    server.signal(libc::SIGTERM);
    wait_for("the refusal", || {
        server
            .log()
            .contains("Errors trying to shut down the server")
    });
    assert_eq!(server.conn().cmd(&["PING"]), b"+PONG\r\n");
    assert_eq!(
        server
            .conn()
            .cmd(&["CONFIG", "SET", "shutdown-on-sigterm", "force"]),
        b"+OK\r\n"
    );
    server.signal(libc::SIGTERM);
    assert!(server.wait_exit().success());
    assert!(server.log().contains("Exit anyway."));
}

/// packaging/kvik-server.service runs kvik as Debian's redis-server.service runs
/// redis-server: the settings a notify-type service depends on are the same, and
/// systemd accepts the unit where systemd-analyze is installed.
#[test]
fn the_systemd_unit_matches_debians_redis_server_unit() {
    let unit_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packaging/kvik-server.service");
    let unit = std::fs::read_to_string(&unit_path).expect("packaging/kvik-server.service");
    for line in [
        "Type=notify",
        "ExecStart=/usr/bin/kvik-server /etc/redis/redis.conf --supervised systemd --daemonize no",
        "PIDFile=/run/redis/redis-server.pid",
        "TimeoutStopSec=0",
        "User=redis",
        "RuntimeDirectory=redis",
        "ReadWritePaths=-/var/lib/redis",
    ] {
        assert!(unit.lines().any(|l| l == line), "missing {line}");
    }
    let Ok(analyze) = which("systemd-analyze") else {
        println!("SKIPPED: systemd-analyze not found");
        return;
    };
    let dir = scratch_dir("unit");
    let local = dir.join("kvik-server.service");
    let binary = kvik_server_path();
    std::fs::write(
        &local,
        unit.replace("/usr/bin/kvik-server", binary.to_str().unwrap()),
    )
    .unwrap();
    let out = Command::new(analyze)
        .arg("verify")
        .arg(&local)
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn which(name: &str) -> Result<PathBuf, ()> {
    std::env::split_paths(&std::env::var_os("PATH").ok_or(())?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .ok_or(())
}

/// A second SIGINT during the final save exits at once, without the save, as
/// redis-server does for an impatient Ctrl+C.
#[test]
fn a_second_sigint_during_the_final_save_exits_now() {
    let dir = scratch_dir("sigint-twice");
    // A save of 10 s: 1,000 keys, 10 ms each.
    let mut server = Started::spawn(
        &dir,
        &[],
        &[
            "--save",
            "3600 1",
            "--rdb-key-save-delay",
            "10000",
            "--enable-debug-command",
            "yes",
        ],
    );
    wait_for("the server", || server.answers());
    assert_eq!(
        server.conn().cmd(&["DEBUG", "POPULATE", "1000"]),
        b"+OK\r\n"
    );
    server.signal(libc::SIGINT);
    wait_for("the final save", || {
        server
            .log()
            .contains("Saving the final RDB snapshot before exiting.")
    });
    server.signal(libc::SIGINT);
    let status = server.wait_exit();
    assert_eq!(status.code(), Some(1));
    assert!(server.log().contains("You insist... exiting now."));
    assert!(!rdb_exists(&dir));
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("temp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// The process state letter of /proc/PID/stat (`T`: stopped).
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

/// `supervised upstart` (or `auto` with UPSTART_JOB set): the process stops itself
/// with SIGSTOP once started, which upstart's `expect stop` waits for, and goes on
/// when continued.
#[test]
fn upstart_sees_the_process_stop_itself() {
    for mode in ["upstart", "auto"] {
        let dir = scratch_dir("upstart");
        let server = Started::spawn(
            &dir,
            &[("UPSTART_JOB", "kvik")],
            &["--supervised", mode, "--save", ""],
        );
        wait_for("the stop", || process_state(server.child.id()) == Some('T'));
        server.signal(libc::SIGCONT);
        wait_for("the server", || server.answers());
        let mut c = server.conn();
        assert!(String::from_utf8(c.cmd(&["INFO", "server"]))
            .unwrap()
            .contains("process_supervised:upstart"));
        assert!(server
            .log()
            .contains("supervised by upstart, will stop to signal readiness."));
    }
}
