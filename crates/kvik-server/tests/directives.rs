//! No directive silently ignored: every directive of Redis 7.0's redis.conf and
//! KeyDB's keydb.conf (set or given as a commented example) is in effect, refused
//! with an error saying kvik does not support the value, or named in a start-up
//! warning; those that belong to the AOF, replication, TLS, ACL and cluster work
//! follow their own issues. The stock files start kvik. Then the directives made to
//! work here are checked one by one on a running server.

mod support;

use kvik_config::table::{LIVE, NO_EFFECT, ONLY_DEFAULT};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use support::{kvik_server_path, scratch_dir, wait_for, RawConn, TestServer};

/// Debian's packaged redis.conf (Redis 7.0's own, with Debian's paths), else the
/// copy kept in docs/.
fn redis_conf() -> PathBuf {
    let debian = PathBuf::from("/etc/redis/redis.conf");
    if debian.is_file() {
        return debian;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/redis.conf")
}

/// KeyDB 6.3.4's keydb.conf, from the shared fixtures beside the project.
fn keydb_conf() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/keydb-6.3.4.conf");
    if p.is_file() {
        Some(p)
    } else if std::env::var_os("CI").is_some() {
        panic!("{} missing", p.display())
    } else {
        println!("SKIPPED: {} not found", p.display());
        None
    }
}

/// Directives whose work belongs to other issues (AOF, replication, TLS, ACL,
/// cluster): they follow those.
fn owned_elsewhere(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "aof",
        "append",
        "auto-aof",
        "no-appendfsync",
        "repl",
        "replica",
        "slave",
        "master",
        "min-replicas",
        "min-slaves",
        "tls",
        "acl",
        "cluster",
        "active-replica",
        "multi-master",
    ];
    const NAMES: &[&str] = &[
        "propagation-error-behavior",
        "rdb-del-sync-files",
        "bind-source-addr",
        "requirepass",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p)) || NAMES.contains(&name)
}

/// A `name value...` line of a config file whose name is a known directive.
struct DirectiveLine {
    name: String,
    line: String,
    /// A commented example (`# name value`): it may also be prose that happens to
    /// start with a directive's name, which a value error gives away.
    commented: bool,
}

/// Every directive line of a config file, set or commented out, whose value is a
/// value and not a `<placeholder>`.
fn directive_lines(text: &str) -> Vec<DirectiveLine> {
    text.lines()
        .filter_map(|raw| {
            let line = raw.trim_start_matches('#').trim();
            let (name, value) = line.split_once(char::is_whitespace)?;
            let (param, _) = kvik_config::lookup(name)?;
            if value.contains('<') || value.trim().is_empty() && name != "save" {
                return None;
            }
            Some(DirectiveLine {
                name: param.name.to_string(),
                line: line.to_string(),
                commented: raw.trim_start().starts_with('#'),
            })
        })
        .collect()
}

/// What one directive line does to kvik: `Ok(warnings)` when loaded, `Err(error)`
/// when refused.
fn load_line(dir: &Path, line: &str) -> Result<Vec<String>, String> {
    let path = dir.join("one.conf");
    std::fs::write(&path, format!("{line}\n")).unwrap();
    kvik_config::load(Some(&path), &[])
        .map(|l| l.warnings)
        .map_err(|e| e.to_string())
}

fn check_every_directive_of(conf: &Path) {
    let text = std::fs::read_to_string(conf).unwrap();
    let dir = scratch_dir("directives");
    let mut silent = Vec::new();
    for DirectiveLine {
        name,
        line,
        commented,
    } in directive_lines(&text)
    {
        if owned_elsewhere(&name) {
            continue;
        }
        let (param, _) = kvik_config::lookup(&name).unwrap();
        let refusal = format!("kvik does not support {name} ");
        match load_line(&dir, &line) {
            Err(e) if commented && !e.contains(&refusal) => {
                // Prose, not a value: "supervised no - no supervision interaction".
            }
            Err(e) => assert!(
                param.has(ONLY_DEFAULT) && e.contains(&refusal),
                "{line}: refused without saying kvik does not support it: {e}"
            ),
            Ok(_) if param.has(LIVE) => {}
            Ok(warnings) if param.has(NO_EFFECT) => assert!(
                warnings.iter().any(|w| w.contains(&format!("'{name}'"))),
                "{line}: no start-up warning names it: {warnings:?}"
            ),
            Ok(_) if param.has(ONLY_DEFAULT) => {
                // Its default value, which kvik honours.
            }
            Ok(_) => silent.push(line),
        }
    }
    assert!(
        silent.is_empty(),
        "silently ignored in {}: {silent:#?}",
        conf.display()
    );
}

#[test]
fn every_directive_of_redis_conf_is_in_effect_refused_or_warned() {
    check_every_directive_of(&redis_conf());
}

#[test]
fn every_directive_of_keydb_conf_is_in_effect_refused_or_warned() {
    if let Some(conf) = keydb_conf() {
        check_every_directive_of(&conf);
    }
}

/// The stock files, as shipped, start kvik (with the paths and port of a test).
fn starts_with(conf: &Path) {
    let dir = scratch_dir("stock-conf");
    let port = support::free_port().to_string();
    let logfile = dir.join("kvik.log");
    let mut child = Command::new(kvik_server_path())
        .arg(conf)
        .args(["--port", &port, "--bind", "127.0.0.1", "--daemonize", "no"])
        .args(["--dir", dir.to_str().unwrap()])
        .args(["--logfile", logfile.to_str().unwrap()])
        .args(["--pidfile", dir.join("kvik.pid").to_str().unwrap()])
        .args(["--server-threads", "2"])
        .spawn()
        .unwrap();
    let addr = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(&addr).is_err() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "{} did not start kvik ({status}):\n{}",
                conf.display(),
                std::fs::read_to_string(&logfile).unwrap_or_default()
            );
        }
        assert!(Instant::now() < deadline, "kvik did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(RawConn::connect(&addr).cmd(&["PING"]), b"+PONG\r\n");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn stock_redis_conf_starts_kvik() {
    starts_with(&redis_conf());
}

#[test]
fn stock_keydb_conf_starts_kvik() {
    if let Some(conf) = keydb_conf() {
        starts_with(&conf);
    }
}

#[test]
fn a_value_kvik_cannot_honour_is_refused_at_start_up_and_by_config_set() {
    let out = Command::new(kvik_server_path())
        .args(["--port", "0", "--activerehashing", "no"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("kvik does not support activerehashing 'no' (only its default, 'yes')"),
        "{stderr}"
    );
    let server = TestServer::start(&[]);
    let mut c = server.raw();
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "activerehashing", "no"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'activerehashing') - kvik does not support activerehashing 'no' (only its default, 'yes')\r\n"
    );
    // The default itself is accepted.
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "activerehashing", "yes"]),
        b"+OK\r\n"
    );
}

#[test]
fn a_platform_hint_is_named_in_the_start_up_warnings() {
    let server = TestServer::start(&["--io-threads-do-reads", "yes"]);
    let log = server.stdout();
    assert!(
        log.contains("WARNING: 'io-threads-do-reads' has no effect in kvik"),
        "{log}"
    );
}

fn threads_named(pid: u32, name: &str) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim() == name)
        .count()
}

#[test]
fn jemalloc_bg_thread_starts_and_stops_jemallocs_thread() {
    let server = TestServer::start(&["--jemalloc-bg-thread", "yes"]);
    wait_for("jemalloc's background thread", || {
        threads_named(server.pid(), "jemalloc_bg_thd") > 0
    });
    let mut c = server.raw();
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "jemalloc-bg-thread", "no"]),
        b"+OK\r\n"
    );
    wait_for("jemalloc's background thread to end", || {
        threads_named(server.pid(), "jemalloc_bg_thd") == 0
    });
}

fn status_field(pid: u32, field: &str) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| {
            l.strip_prefix(&format!("{field}:"))
                .map(|v| v.trim().to_string())
        })
}

#[test]
fn disable_thp_turns_transparent_huge_pages_off_for_the_process() {
    let off = TestServer::start(&["--disable-thp", "yes"]);
    let Some(thp) = status_field(off.pid(), "THP_enabled") else {
        println!("SKIPPED: the kernel does not report THP_enabled");
        return;
    };
    assert_eq!(thp, "0");
    let on = TestServer::start(&["--disable-thp", "no"]);
    assert_eq!(status_field(on.pid(), "THP_enabled").unwrap(), "1");
}

#[test]
fn crash_log_enabled_no_dies_without_the_report() {
    let mut server =
        TestServer::start(&["--enable-debug-command", "yes", "--crash-log-enabled", "no"]);
    server
        .raw()
        .send(&support::encode_command(&["DEBUG", "SEGFAULT"]));
    server.assert_exits_within(Duration::from_secs(20));
    assert!(
        !server.stdout().contains("crashed by signal"),
        "{}",
        server.stdout()
    );
}

#[test]
fn crash_log_enabled_set_back_on_writes_the_report() {
    let mut server =
        TestServer::start(&["--enable-debug-command", "yes", "--crash-log-enabled", "no"]);
    let mut c = server.raw();
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "crash-log-enabled", "yes"]),
        b"+OK\r\n"
    );
    c.send(&support::encode_command(&["DEBUG", "SEGFAULT"]));
    server.assert_exits_within(Duration::from_secs(20));
    assert!(
        server.stdout().contains("crashed by signal: 11"),
        "{}",
        server.stdout()
    );
}

#[test]
fn socket_mark_id_marks_the_listening_socket() {
    let server = match TestServer::try_start(&["--socket-mark-id", "77"]) {
        Ok(s) => s,
        Err(e) if e.contains("Operation not permitted") => {
            println!("SKIPPED: no CAP_NET_ADMIN to set SO_MARK");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let Ok(out) = Command::new("ss")
        .args(["-lnteH", &format!("sport = :{}", server.port())])
        .output()
    else {
        println!("SKIPPED: ss not found");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("fwmark:0x4d"), "{text}");
}

fn info_hz(c: &mut RawConn) -> String {
    c.info_field("server", "hz")
}

#[test]
fn dynamic_hz_follows_the_number_of_clients() {
    let server = TestServer::start(&["--hz", "1", "--maxclients", "1000"]);
    let mut c = server.raw();
    assert_eq!(info_hz(&mut c), "1");
    // 401 clients at hz 1 are over 200 per tick; at hz 2 they are not.
    let crowd: Vec<RawConn> = (0..400).map(|_| server.raw()).collect();
    wait_for("hz to rise", || info_hz(&mut c) == "2");
    assert_eq!(c.info_field("server", "configured_hz"), "1");
    assert_eq!(c.cmd(&["CONFIG", "SET", "dynamic-hz", "no"]), b"+OK\r\n");
    wait_for("hz to go back", || info_hz(&mut c) == "1");
    drop(crowd);
}

/// The fdatasync calls the server makes while `during` runs, as strace sees them
/// (`None` when strace is missing or may not attach).
fn fdatasyncs_during(pid: u32, dir: &Path, during: impl FnOnce()) -> Option<usize> {
    let trace = dir.join("strace.txt");
    let mut strace = Command::new("strace")
        .args(["-f", "-e", "trace=fdatasync", "-o"])
        .arg(&trace)
        .args(["-p", &pid.to_string()])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    // strace is attached once it has opened its output and the threads are traced.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("TracerPid:") && l.split_whitespace().nth(1) != Some("0"))
    {
        if Instant::now() > deadline || strace.try_wait().ok()?.is_some() {
            let _ = strace.kill();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    during();
    // SAFETY: kill() only sends SIGINT to the strace child, which detaches.
    unsafe { libc::kill(strace.id() as libc::pid_t, libc::SIGINT) };
    let _ = strace.wait();
    let text = std::fs::read_to_string(&trace).ok()?;
    Some(text.lines().filter(|l| l.contains("fdatasync(")).count())
}

#[test]
fn rdb_save_incremental_fsync_syncs_every_4_mb() {
    for (setting, expect_some) in [("yes", true), ("no", false)] {
        let server = TestServer::start(&[
            "--enable-debug-command",
            "yes",
            "--rdbcompression",
            "no",
            "--rdb-save-incremental-fsync",
            setting,
        ]);
        let mut c = server.raw();
        // About 25 MB of RDB.
        assert_eq!(
            c.cmd(&["DEBUG", "POPULATE", "200000", "key", "100"]),
            b"+OK\r\n"
        );
        let Some(syncs) = fdatasyncs_during(server.pid(), server.dir(), || {
            assert_eq!(c.cmd(&["SAVE"]), b"+OK\r\n");
        }) else {
            println!("SKIPPED: strace missing or not allowed to attach");
            return;
        };
        if expect_some {
            assert!(syncs >= 4, "{syncs} fdatasync calls");
        } else {
            assert_eq!(syncs, 0);
        }
    }
}

fn cmdline(pid: u32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    text.trim_end_matches('\0').replace('\0', " ")
}

#[test]
fn the_process_title_follows_proc_title_template() {
    let server = TestServer::start(&[]);
    let binary = kvik_server_path().display().to_string();
    assert_eq!(
        cmdline(server.pid()),
        format!("{binary} 127.0.0.1:{}", server.port())
    );
    let mut c = server.raw();
    assert_eq!(
        c.cmd(&[
            "CONFIG",
            "SET",
            "proc-title-template",
            "kvik {port} {title}"
        ]),
        b"+OK\r\n"
    );
    assert_eq!(
        cmdline(server.pid()),
        format!("kvik {} {binary}", server.port())
    );
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "proc-title-template", "{nope}"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'proc-title-template') - template format is invalid or contains unknown variables\r\n".to_vec()
    );
}

#[test]
fn set_proc_title_no_leaves_the_command_line_alone() {
    let server = TestServer::start(&["--set-proc-title", "no"]);
    let line = cmdline(server.pid());
    assert!(line.ends_with("--set-proc-title no"), "{line}");
}

/// `radix-tree-keys` of XINFO STREAM: the stream's nodes.
fn stream_nodes(c: &mut RawConn) -> String {
    let reply = String::from_utf8_lossy(&c.cmd(&["XINFO", "STREAM", "s"])).into_owned();
    let mut lines = reply.lines();
    lines.find(|l| *l == "radix-tree-keys");
    lines.next().unwrap().to_string()
}

#[test]
fn stream_node_limits_cut_streams_into_nodes_as_redis_does() {
    if support::redis_server_or_skip().is_none() {
        return;
    }
    let kvik = TestServer::start(&[]);
    let redis = support::RealRedis::start(&[]);
    let nodes_of = |c: &mut RawConn| {
        let mut nodes = Vec::new();
        for (entries, bytes) in [("3", "4096"), ("100", "64"), ("0", "0")] {
            c.cmd(&["DEL", "s"]);
            ok(c, &["CONFIG", "SET", "stream-node-max-entries", entries]);
            ok(c, &["CONFIG", "SET", "stream-node-max-bytes", bytes]);
            for i in 1..=10 {
                let id = format!("{i}-1");
                c.cmd(&["XADD", "s", &id, "field", "value"]);
            }
            nodes.push(stream_nodes(c));
        }
        nodes
    };
    let kvik_nodes = nodes_of(&mut kvik.raw());
    // 10 entries in nodes of 3, in nodes of at most 64 bytes, in one unbounded node.
    assert_eq!(kvik_nodes[0], ":4");
    assert_eq!(kvik_nodes[2], ":1");
    assert_eq!(kvik_nodes, nodes_of(&mut redis.raw()));
}

fn ok(c: &mut RawConn, args: &[&str]) {
    assert_eq!(c.cmd(args), b"+OK\r\n", "{args:?}");
}

/// `Cpus_allowed_list` of each thread of `pid` named `name`.
fn cpus_of_threads(pid: u32, name: &str) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|t| {
            let dir = t.ok()?.path();
            let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
            (comm.trim() == name).then(|| {
                let status = std::fs::read_to_string(dir.join("status")).unwrap_or_default();
                status
                    .lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                    .unwrap_or_default()
                    .trim()
                    .to_string()
            })
        })
        .collect()
}

#[test]
fn cpu_lists_place_the_server_saver_and_background_threads() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let last = (cpus - 1).to_string();
    let server = TestServer::start(&[
        "--server-threads",
        "2",
        "--server_cpulist",
        &last,
        "--bgsave_cpulist",
        "0",
        "--bio_cpulist",
        &format!("0-{last}:1"),
    ]);
    let pid = server.pid();
    for worker in ["kvik-worker-0", "kvik-worker-1"] {
        assert_eq!(cpus_of_threads(pid, worker), std::slice::from_ref(&last));
    }
    assert_eq!(cpus_of_threads(pid, "kvik-saver"), ["0"]);
    // The lazyfree thread starts with the first background free.
    let mut c = server.raw();
    let mut sadd = vec!["SADD".to_string(), "big".to_string()];
    sadd.extend((0..20_000).map(|i| format!("m{i}")));
    c.cmd(&sadd);
    assert_eq!(c.cmd(&["UNLINK", "big"]), b":1\r\n");
    let all = if cpus == 1 {
        "0".to_string()
    } else {
        format!("0-{last}")
    };
    // The thread moves to its CPUs just after it starts (on its spawner's).
    wait_for("the lazyfree thread on bio_cpulist", || {
        cpus_of_threads(pid, "kvik-lazyfree") == [all.clone()]
    });
}
