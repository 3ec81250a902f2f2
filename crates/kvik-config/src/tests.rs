//! Tests of loading, CONFIG GET/SET/REWRITE and the docs. Expected texts were
//! taken from redis-server 7.0.15 answering the same input.

use super::*;
use crate::load::{command_line_directives, load_with_stdin};
use std::path::PathBuf;

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kvik-config-test-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

use std::path::Path;

fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn load_text(text: &str, cli: &[&str]) -> Result<Loaded, ConfigError> {
    load_with_stdin(None, &args(cli), Some(text))
}

fn err_of(text: &str, cli: &[&str]) -> (usize, String, String) {
    match load_text(text, cli) {
        Err(ConfigError::Directive { line, text, reason }) => (line, text, reason),
        other => panic!("expected a directive error, got {other:?}"),
    }
}

fn set(c: &mut Config, pairs: &[(&str, &str)]) -> Result<Vec<&'static str>, String> {
    let p: Vec<(&[u8], &[u8])> = pairs
        .iter()
        .map(|(a, b)| (a.as_bytes(), b.as_bytes()))
        .collect();
    c.set(&p)
}

// ------------------------------------------------------------------ table

#[test]
fn table_names_are_unique_and_sorted() {
    let mut seen = std::collections::HashSet::new();
    for p in PARAMS {
        assert!(seen.insert(p.name), "duplicate {}", p.name);
        if let Some(a) = p.alias {
            assert!(seen.insert(a), "duplicate alias {a}");
        }
        assert_eq!(p.name, p.name.to_ascii_lowercase());
    }
    let names: Vec<String> = PARAMS.iter().map(|p| p.name.replace('_', "-")).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "keep the table in alphabetical order");
}

#[test]
fn defaults_print_as_declared() {
    let c = Config::default();
    for p in PARAMS {
        if p.has(table::DYNAMIC_DEFAULT) {
            continue;
        }
        assert_eq!(p.value(&c), p.default, "{}", p.name);
    }
}

#[test]
fn existing_fields_keep_their_defaults() {
    let c = Config::default();
    assert_eq!(c.port, 6379);
    assert_eq!(c.bind, vec!["*".to_string(), "-::*".to_string()]);
    assert!(c.server_threads >= 1 && c.server_threads <= 16);
    assert!(!c.server_thread_affinity);
    assert_eq!(c.maxclients, 10000);
    assert_eq!(c.databases, 16);
    assert_eq!(c.requirepass, None);
    assert!(c.protected_mode);
    assert_eq!(c.proto_max_bulk_len, 512 * 1024 * 1024);
    assert_eq!(c.client_query_buffer_limit, 1024 * 1024 * 1024);
    assert_eq!(c.hz, 10);
    assert_eq!(c.enable_debug_command, "no");
    assert_eq!(c.timeout, 0);
    assert_eq!(c.tcp_keepalive, 300);
    assert_eq!(c.save, vec![(3600, 1), (300, 100), (60, 10000)]);
    assert!(Path::new(&c.dir).is_absolute());
}

/// Every parameter of redis-server 7.0.15's `CONFIG GET *` (and its hidden
/// ones) is in the table, under the same name.
#[test]
fn covers_redis_7_0_parameters() {
    const REDIS: &str = "acl-pubsub-default aclfile acllog-max-len active-defrag-cycle-max \
        active-defrag-cycle-min active-defrag-ignore-bytes active-defrag-max-scan-fields \
        active-defrag-threshold-lower active-defrag-threshold-upper active-expire-effort activedefrag \
        activerehashing always-show-logo aof-disable-auto-gc aof-load-truncated \
        aof-rewrite-incremental-fsync aof-timestamp-enabled aof-use-rdb-preamble aof_rewrite_cpulist \
        appenddirname appendfilename appendfsync appendonly auto-aof-rewrite-min-size \
        auto-aof-rewrite-percentage bgsave_cpulist bind bind-source-addr bio_cpulist busy-reply-threshold \
        client-output-buffer-limit client-query-buffer-limit cluster-allow-pubsubshard-when-down \
        cluster-allow-reads-when-down cluster-allow-replica-migration cluster-announce-bus-port \
        cluster-announce-hostname cluster-announce-ip cluster-announce-port cluster-announce-tls-port \
        cluster-config-file cluster-enabled cluster-link-sendbuf-limit cluster-migration-barrier \
        cluster-node-timeout cluster-port cluster-preferred-endpoint-type cluster-replica-no-failover \
        cluster-replica-validity-factor cluster-require-full-coverage cluster-slave-no-failover \
        cluster-slave-validity-factor crash-log-enabled crash-memcheck-enabled daemonize databases \
        dbfilename dir disable-thp dynamic-hz enable-debug-command enable-module-command \
        enable-protected-configs hash-max-listpack-entries hash-max-listpack-value \
        hash-max-ziplist-entries hash-max-ziplist-value hll-sparse-max-bytes hz ignore-warnings \
        io-threads io-threads-do-reads jemalloc-bg-thread latency-monitor-threshold latency-tracking \
        latency-tracking-info-percentiles lazyfree-lazy-eviction lazyfree-lazy-expire \
        lazyfree-lazy-server-del lazyfree-lazy-user-del lazyfree-lazy-user-flush lfu-decay-time \
        lfu-log-factor list-compress-depth list-max-listpack-size list-max-ziplist-size logfile loglevel \
        lua-time-limit masterauth masteruser maxclients maxmemory maxmemory-clients \
        maxmemory-eviction-tenacity maxmemory-policy maxmemory-samples min-replicas-max-lag \
        min-replicas-to-write min-slaves-max-lag min-slaves-to-write no-appendfsync-on-rewrite \
        notify-keyspace-events oom-score-adj oom-score-adj-values pidfile port proc-title-template \
        propagation-error-behavior protected-mode proto-max-bulk-len rdb-del-sync-files \
        rdb-save-incremental-fsync rdbchecksum rdbcompression repl-backlog-size repl-backlog-ttl \
        repl-disable-tcp-nodelay repl-diskless-load repl-diskless-sync repl-diskless-sync-delay \
        repl-diskless-sync-max-replicas repl-ping-replica-period repl-ping-slave-period repl-timeout \
        replica-announce-ip replica-announce-port replica-announced replica-ignore-disk-write-errors \
        replica-ignore-maxmemory replica-lazy-flush replica-priority replica-read-only \
        replica-serve-stale-data replicaof requirepass sanitize-dump-payload save server_cpulist \
        set-max-intset-entries set-proc-title shutdown-on-sigint shutdown-on-sigterm shutdown-timeout \
        slave-announce-ip slave-announce-port slave-ignore-maxmemory slave-lazy-flush slave-priority \
        slave-read-only slave-serve-stale-data slaveof slowlog-log-slower-than slowlog-max-len \
        socket-mark-id stop-writes-on-bgsave-error stream-node-max-bytes stream-node-max-entries \
        supervised syslog-enabled syslog-facility syslog-ident tcp-backlog tcp-keepalive timeout \
        tls-auth-clients tls-ca-cert-dir tls-ca-cert-file tls-cert-file tls-ciphers tls-ciphersuites \
        tls-client-cert-file tls-client-key-file tls-client-key-file-pass tls-cluster tls-dh-params-file \
        tls-key-file tls-key-file-pass tls-port tls-prefer-server-ciphers tls-protocols tls-replication \
        tls-session-cache-size tls-session-cache-timeout tls-session-caching tracking-table-max-keys \
        unixsocket unixsocketperm zset-max-listpack-entries zset-max-listpack-value \
        zset-max-ziplist-entries zset-max-ziplist-value";
    let c = Config::default();
    let listed: Vec<String> = c.get(|_| true).into_iter().map(|(k, _)| k).collect();
    for name in REDIS.split_whitespace() {
        assert!(listed.iter().any(|k| k == name), "missing {name}");
    }
    for hidden in [
        "key-load-delay",
        "loading-process-events-interval-bytes",
        "rdb-key-save-delay",
        "use-exit-on-panic",
        "watchdog-period",
    ] {
        assert!(
            !listed.iter().any(|k| k == hidden),
            "{hidden} must be hidden"
        );
        assert!(c.get_one(hidden).is_some(), "{hidden} must exist");
    }
    for keydb in [
        "server-threads",
        "server-thread-affinity",
        "active-replica",
        "multi-master",
        "multi-master-no-forward",
    ] {
        assert!(listed.iter().any(|k| k == keydb), "missing {keydb}");
    }
}

// ------------------------------------------------------------------ loading

#[test]
fn loads_values_units_and_quotes() {
    let text = "# comment\n\n  port 7000  \nmaxmemory 100MB\nclient-query-buffer-limit 2gb\n\
        requirepass \"p\\x41ss word\"\nmasterauth 'it\\'s'\nappendonly YES\nmaxmemory-policy ALLKEYS-LRU\n\
        save 900 1\nsave 300 10\nbind 127.0.0.1 ::1\nserver-threads 4\nserver-thread-affinity true\n\
        slave-read-only no\nhash-max-ziplist-entries 100\nrename-command FLUSHALL \"\"\n\
        user alice on >pw ~* +@all\nlist-max-ziplist-entries 5\nnotify-keyspace-events KEA\n";
    let l = load_text(text, &[]).unwrap();
    let c = &l.config;
    assert_eq!(c.port, 7000);
    assert_eq!(c.maxmemory, 100 << 20);
    assert_eq!(c.client_query_buffer_limit, 2 << 30);
    assert_eq!(c.requirepass.as_deref(), Some("pAss word"));
    assert_eq!(c.masterauth.as_deref(), Some("it's"));
    assert!(c.appendonly);
    assert_eq!(c.maxmemory_policy, "allkeys-lru");
    assert_eq!(c.save, vec![(900, 1), (300, 10)]);
    assert_eq!(c.bind, vec!["127.0.0.1", "::1"]);
    assert_eq!(c.server_threads, 4);
    assert!(c.server_thread_affinity);
    assert!(!c.replica_read_only);
    assert_eq!(c.hash_max_listpack_entries, 100);
    assert_eq!(
        c.rename_commands,
        vec![("FLUSHALL".to_string(), String::new())]
    );
    assert_eq!(c.users, vec![args(&["alice", "on", ">pw", "~*", "+@all"])]);
    assert_eq!(c.get_one("notify-keyspace-events").unwrap(), "AKE");
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
}

#[test]
fn save_lines_accumulate_and_empty_resets() {
    let l = load_text(
        "save 100 1\nsave 200 2\nsave 300 3 400 4\nsaVE \"\"\nsave 5 5\n",
        &[],
    )
    .unwrap();
    assert_eq!(l.config.save, vec![(5, 5)]);
    let l = load_text("save 100 1\nsave 200 2\n", &["--save", "1", "2"]).unwrap();
    assert_eq!(l.config.save, vec![(100, 1), (200, 2), (1, 2)]);
    let l = load_text("", &["--save"]).unwrap();
    assert!(l.config.save.is_empty());
    let l = load_text("", &["--save", "--port", "7001"]).unwrap();
    assert!(l.config.save.is_empty());
    assert_eq!(l.config.port, 7001);
    let l = load_text("", &["--save", "900 1 300 10"]).unwrap();
    assert_eq!(l.config.save, vec![(900, 1), (300, 10)]);
}

#[test]
fn command_line_overrides_file_and_builds_redis_lines() {
    assert_eq!(
        command_line_directives(&args(&["--port", "6380"])),
        "port \"6380\" "
    );
    assert_eq!(
        command_line_directives(&args(&[
            "--port", "7301", "--bind", "1.2.3.4", "5.6.7.8", "--hz", "x"
        ])),
        "port \"7301\" \nbind \"1.2.3.4\" \"5.6.7.8\" \nhz \"x\" "
    );
    assert_eq!(
        command_line_directives(&args(&["--requirepass", "--foo"])),
        "requirepass \"--foo\" "
    );
    assert_eq!(
        command_line_directives(&args(&["--port 6380", "--hz", "5"])),
        "port 6380 \nhz \"5\" "
    );
    let l = load_text(
        "port 7000\nhz 20\n",
        &[
            "--port",
            "7001",
            "--replicaof",
            "10.0.0.1",
            "6379",
            "--requirepass",
            "a b",
        ],
    )
    .unwrap();
    assert_eq!(l.config.port, 7001);
    assert_eq!(l.config.hz, 20);
    assert_eq!(l.config.replicaof, vec![("10.0.0.1".to_string(), 6379)]);
    assert_eq!(l.config.requirepass.as_deref(), Some("a b"));
}

#[test]
fn fatal_errors_match_redis() {
    assert_eq!(
        err_of("port 7200\nport \"abc\"\n", &[]),
        (
            2,
            "port \"abc\"".into(),
            "argument couldn't be parsed into an integer".into()
        )
    );
    assert_eq!(
        err_of("\n  # c\nport 7200 7201\n", &[]),
        (
            3,
            "port 7200 7201".into(),
            "wrong number of arguments".into()
        )
    );
    assert_eq!(
        err_of("daemonize maybe\n", &[]).2,
        "argument must be 'yes' or 'no'"
    );
    assert_eq!(
        err_of("maxmemory-policy foo\n", &[]).2,
        "argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, \
         allkeys-lru, allkeys-lfu, allkeys-random, noeviction"
    );
    assert_eq!(
        err_of("maxmemory 1t\n", &[]).2,
        "argument must be a memory value"
    );
    assert_eq!(
        err_of("hz 1000000000000\n", &[]).2,
        "argument must be between 0 and 2147483647 inclusive"
    );
    assert_eq!(
        err_of("port \"abc\n", &[]),
        (
            1,
            "port \"abc".into(),
            "Unbalanced quotes in configuration line".into()
        )
    );
    assert_eq!(
        err_of("port 'abc\n", &[]).2,
        "Unbalanced quotes in configuration line"
    );
    assert_eq!(
        err_of("port \"ab\"c\n", &[]).2,
        "Unbalanced quotes in configuration line"
    );
    assert_eq!(err_of("save 1\n", &[]).2, "Invalid save parameters");
    assert_eq!(
        err_of("client-output-buffer-limit normal 1 2\n", &[]).2,
        "Wrong number of arguments in buffer limit configuration."
    );
    assert_eq!(err_of("   port    abc   \t\n", &[]).1, "port    abc");
    assert_eq!(err_of("PORT abc\n", &[]).1, "PORT abc");
    assert_eq!(err_of("port\n", &[]).2, "wrong number of arguments");
    assert_eq!(
        err_of("replicaof localhost\n", &[]).2,
        "wrong number of arguments"
    );
    assert_eq!(
        err_of("notify-keyspace-events Z\n", &[]).2,
        "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
    );
    assert_eq!(err_of("list-max-ziplist-entries 5\nport x\n", &[]).0, 2);
    assert_eq!(
        err_of("rename-command FOO\n", &[]).2,
        "Bad directive or wrong number of arguments"
    );
    assert_eq!(
        err_of("user\n", &[]).2,
        "Bad directive or wrong number of arguments"
    );
    assert_eq!(
        err_of("sentinel foo\n", &[]).2,
        "sentinel directive while not in sentinel mode"
    );
    assert_eq!(
        err_of("appendfilename a/b\n", &[]).2,
        "appendfilename can't be a path, just a filename"
    );
    assert_eq!(
        err_of("appenddirname a/b\n", &[]).2,
        "appenddirname can't be a path, just a dirname"
    );
    assert_eq!(
        err_of("dbfilename a/b\n", &[]).2,
        "dbfilename can't be a path, just a filename"
    );
    assert_eq!(
        err_of("dir /nonexistent-kvik\n", &[]).2,
        "No such file or directory"
    );
    assert_eq!(
        err_of("unixsocketperm 800\n", &[]).2,
        "argument couldn't be parsed as an octal number"
    );
    assert_eq!(
        err_of("replicaof 1.2.3.4 70000\n", &[]).2,
        "Invalid master port"
    );
    assert_eq!(
        err_of("proc-title-template {title}{port\n", &[]).2,
        "template format is invalid or contains unknown variables"
    );
    assert_eq!(
        err_of("maxmemory-clients 101%\n", &[]).2,
        "percentage argument must be less or equal to 100"
    );
    assert_eq!(
        err_of("maxmemory-clients -5%\n", &[]).2,
        "argument must be a memory or percent value"
    );
    assert_eq!(
        err_of("client-output-buffer-limit normal 1 2 -3\n", &[]).2,
        "Error in hard, soft or soft_seconds setting in buffer limit configuration."
    );
    let many: Vec<String> = (1..=17).map(|i| i.to_string()).collect();
    assert_eq!(
        err_of(&format!("bind {}\n", many.join(" ")), &[]).2,
        "Too many bind addresses specified."
    );
}

#[test]
fn command_line_error_line_numbers_match_redis() {
    // redis-server --port abc            -> line 2
    assert_eq!(
        err_of("", &["--port", "abc"]),
        (2, "port \"abc\"".into(), ERR_INT.into())
    );
    // redis-server --port 7300 --hz x    -> line 3
    assert_eq!(
        err_of("", &["--port", "7300", "--hz", "x"]),
        (3, "hz \"x\"".into(), ERR_INT.into())
    );
    // file "port 7200\n" + --port abc    -> line 3
    assert_eq!(err_of("port 7200\n", &["--port", "abc"]).0, 3);
    // file without final newline        -> line 2
    assert_eq!(err_of("port 7200", &["--hz", "x"]).0, 2);
    // file "hz 5\n" --port 7301 --save --hz xx -> line 5
    assert_eq!(
        err_of("hz 5\n", &["--port", "7301", "--save", "--hz", "xx"]),
        (5, "hz \"xx\"".into(), ERR_INT.into())
    );
    assert_eq!(
        err_of(
            "",
            &["--port", "7301", "--requirepass", "--foo", "--hz", "xx"]
        )
        .0,
        4
    );
    assert_eq!(
        err_of("", &["--port", "7301", "--hz", "5 6"]).1,
        "hz \"5 6\""
    );
}

use crate::parse::ERR_INT;

#[test]
fn fatal_message_format() {
    let e = err_of("port 7200\nport \"abc\"\n", &[]);
    let err = ConfigError::Directive {
        line: e.0,
        text: e.1,
        reason: e.2,
    };
    let s = err.to_string();
    assert!(s.starts_with("\n*** FATAL CONFIG FILE ERROR (kvik "), "{s}");
    assert!(s.ends_with(
        "Redis 7.0.15 compatible) ***\nReading the configuration file, at line 2\n>>> 'port \"abc\"'\n\
         argument couldn't be parsed into an integer"
    ));
    let open = ConfigError::Open {
        path: "/nonexistent.conf".into(),
        reason: "No such file or directory".into(),
    };
    assert_eq!(
        open.to_string(),
        "Fatal error, can't open config file '/nonexistent.conf': No such file or directory"
    );
}

#[test]
fn unknown_directives_warn_and_continue() {
    let l = load_text("foo bar\nport 7000\nmymodule.opt 1\n", &["--bogus", "1"]).unwrap();
    assert_eq!(l.config.port, 7000);
    assert_eq!(l.warnings.len(), 3, "{:?}", l.warnings);
    assert!(l.warnings[0].contains("'foo'") && l.warnings[0].contains("line 1"));
    assert!(l.warnings[2].contains("'bogus'"));
}

#[test]
fn includes_files_and_globs() {
    let d = tmpdir("include");
    write(&d, "a.conf", "hz 5\nport 7001\n");
    write(&d, "b.conf", "hz 6\n");
    let inner = write(&d, "inner.conf", "include NOPE\n");
    let _ = inner;
    let main = write(
        &d,
        "main.conf",
        &format!(
            "port 7000\ninclude {}/*.conf.d\ninclude {}\n",
            d.display(),
            d.join("a.conf").display()
        ),
    );
    let l = load(Some(&main), &[]).unwrap();
    assert_eq!(l.config.port, 7001);
    assert_eq!(l.config.hz, 5);
    assert_eq!(l.config_file.as_deref(), Some(main.as_path()));

    std::fs::create_dir_all(d.join("conf.d")).unwrap();
    write(&d.join("conf.d"), "10.conf", "hz 11\n");
    write(&d.join("conf.d"), "20.conf", "hz 12\nmaxclients 5\n");
    let main = write(
        &d,
        "main2.conf",
        &format!("include {}/conf.d/*.conf\n", d.display()),
    );
    let l = load(Some(&main), &[]).unwrap();
    assert_eq!(l.config.hz, 12);
    assert_eq!(l.config.maxclients, 5);

    // an error inside an included file reports that file's line
    write(&d, "bad.conf", "\nhz x\n");
    let main = write(
        &d,
        "main3.conf",
        &format!("port 1\ninclude {}\n", d.join("bad.conf").display()),
    );
    match load(Some(&main), &[]) {
        Err(ConfigError::Directive { line, text, .. }) => {
            assert_eq!((line, text.as_str()), (2, "hz x"))
        }
        other => panic!("{other:?}"),
    }
    // a missing include is fatal
    let main = write(&d, "main4.conf", "include /nonexistent-kvik.conf\n");
    assert_eq!(
        load(Some(&main), &[]).unwrap_err().to_string(),
        "Fatal error, can't open config file '/nonexistent-kvik.conf': No such file or directory"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn missing_config_file() {
    let e = load(Some(Path::new("/nonexistent-kvik/x.conf")), &[]).unwrap_err();
    assert!(matches!(e, ConfigError::Open { .. }));
}

#[test]
fn replicaof_and_multi_master() {
    let l = load_text("replicaof a 1\nslaveof b 2\n", &[]).unwrap();
    assert_eq!(l.config.replicaof, vec![("b".to_string(), 2)]);
    let l = load_text(
        "multi-master yes\nactive-replica yes\nreplicaof a 1\nreplicaof b 2\n",
        &[],
    )
    .unwrap();
    assert_eq!(
        l.config.replicaof,
        vec![("a".to_string(), 1), ("b".to_string(), 2)]
    );
    assert_eq!(l.config.get_one("replicaof").unwrap(), "a 1 b 2");
    let l = load_text("replicaof a 1\nreplicaof no one\n", &[]).unwrap();
    assert!(l.config.replicaof.is_empty());
}

/// Debian's packaged /etc/redis/redis.conf loads cleanly.
#[test]
fn debian_redis_conf_loads() {
    let p = Path::new("/etc/redis/redis.conf");
    if !p.exists() {
        eprintln!("skipped: {} not present", p.display());
        return;
    }
    // It refers to /var/lib/redis as dir; that may be missing or unreadable.
    let text = std::fs::read_to_string(p).unwrap();
    let text: String = text
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("dir ") {
                "dir /\n".to_string()
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let l = load_text(&text, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert_eq!(l.config.bind, vec!["127.0.0.1", "-::1"]);
    assert_eq!(l.config.logfile, "/var/log/redis/redis-server.log");
    // Rewriting it keeps it loadable and equal, also after a change.
    let mut c = l.config.clone();
    assert_eq!(
        set(
            &mut c,
            &[
                ("maxmemory", "2gb"),
                ("appendonly", "yes"),
                ("save", "60 5")
            ]
        )
        .unwrap()
        .len(),
        3
    );
    let rewritten = c.rewrite_content(&text);
    let back = load_text(&rewritten, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back.config, c);
    assert!(rewritten.contains("\nmaxmemory 2gb\n") && rewritten.contains("\nappendonly yes\n"));
}

// ------------------------------------------------------------------ CONFIG GET

#[test]
fn get_formats_like_redis() {
    let c = Config::default();
    assert_eq!(c.get_one("save").unwrap(), "3600 1 300 100 60 10000");
    assert_eq!(
        c.get_one("client-output-buffer-limit").unwrap(),
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
    );
    assert_eq!(c.get_one("bind").unwrap(), "* -::*");
    assert_eq!(c.get_one("oom-score-adj-values").unwrap(), "0 200 800");
    assert_eq!(
        c.get_one("latency-tracking-info-percentiles").unwrap(),
        "50 99 99.9"
    );
    assert_eq!(c.get_one("maxmemory").unwrap(), "0");
    assert_eq!(c.get_one("unixsocketperm").unwrap(), "0");
    assert_eq!(c.get_one("requirepass").unwrap(), "");
}

#[test]
fn get_patterns_semantics() {
    let c = Config::default();
    let pats = |v: &[&str]| -> Vec<(String, String)> {
        let b: Vec<&[u8]> = v.iter().map(|s| s.as_bytes()).collect();
        c.get_patterns(&b)
    };
    // exact names echo the caller's spelling, aliases included
    assert_eq!(
        pats(&["MaxMemory"]),
        vec![("MaxMemory".to_string(), "0".to_string())]
    );
    assert_eq!(
        pats(&["SLAVEOF"]),
        vec![("SLAVEOF".to_string(), String::new())]
    );
    // duplicates collapse
    assert_eq!(pats(&["port", "port", "po*"]).len(), 1);
    // globs list aliases too
    let slave: Vec<String> = pats(&["slave*"]).into_iter().map(|(k, _)| k).collect();
    assert!(
        slave.contains(&"slave-read-only".to_string()) && slave.contains(&"slaveof".to_string())
    );
    assert_eq!(slave.len(), 8);
    let zip: Vec<String> = pats(&["hash-max-zip*"])
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        zip,
        vec!["hash-max-ziplist-entries", "hash-max-ziplist-value"]
    );
    // hidden ones only by exact name
    assert!(pats(&["key-load-*"]).is_empty());
    assert_eq!(pats(&["key-load-delay"]).len(), 1);
    assert!(pats(&["nonexistent"]).is_empty());
    assert_eq!(pats(&["replicaof", "slaveof"]).len(), 2);
}

// ------------------------------------------------------------------ CONFIG SET

#[test]
fn set_errors_match_redis() {
    let mut c = Config::default();
    assert_eq!(
        set(&mut c, &[("foo", "bar")]).unwrap_err(),
        "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"
    );
    assert_eq!(
        set(&mut c, &[("Foo", "x")]).unwrap_err(),
        "ERR Unknown option or number of arguments for CONFIG SET - 'Foo'"
    );
    assert_eq!(
        set(&mut c, &[("port", "1"), ("port", "2")]).unwrap_err(),
        "ERR CONFIG SET failed (possibly related to argument 'port') - duplicate parameter"
    );
    assert_eq!(
        set(&mut c, &[("port", "7105"), ("PORT", "7105")]).unwrap_err(),
        "ERR CONFIG SET failed (possibly related to argument 'PORT') - duplicate parameter"
    );
    assert_eq!(
        set(&mut c, &[("maxmemory", "1"), ("foo", "2")]).unwrap_err(),
        "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"
    );
    assert_eq!(
        set(&mut c, &[("maxmemory", "x")]).unwrap_err(),
        "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value"
    );
    assert_eq!(
        set(&mut c, &[("MAXMEMORY", "x")]).unwrap_err(),
        "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value"
    );
    assert_eq!(
        set(&mut c, &[("SLAVE-PRIORITY", "x")]).unwrap_err(),
        "ERR CONFIG SET failed (possibly related to argument 'slave-priority') - argument couldn't be parsed into an integer"
    );
    assert_eq!(
        set(&mut c, &[("DATABASES", "3")]).unwrap_err(),
        "ERR CONFIG SET failed (possibly related to argument 'DATABASES') - can't set immutable config"
    );
    assert_eq!(
        set(&mut c, &[("dir", "/tmp")]).unwrap_err(),
        "ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected config"
    );
    assert_eq!(
        set(&mut c, &[("port", "-1")]).unwrap_err(),
        "ERR CONFIG SET failed (possibly related to argument 'port') - argument must be between 0 and 65535 inclusive"
    );
    assert_eq!(
        set(&mut c, &[("client-query-buffer-limit", "0")]).unwrap_err(),
        "ERR CONFIG SET failed (possibly related to argument 'client-query-buffer-limit') - argument must be between 1048576 and 9223372036854775807 inclusive"
    );
    assert_eq!(
        set(&mut c, &[("save", "100  1")]).unwrap_err(),
        "ERR CONFIG SET failed (possibly related to argument 'save') - Invalid save parameters"
    );
    assert_eq!(
        set(&mut c, &[("oom-score-adj-values", "1 2")]).unwrap_err(),
        "ERR CONFIG SET failed (possibly related to argument 'oom-score-adj-values') - wrong number of arguments"
    );
    assert_eq!(
        set(&mut c, &[("shutdown-on-sigint", "save nosave")]).unwrap_err(),
        "ERR CONFIG SET failed (possibly related to argument 'shutdown-on-sigint') - shutdown options SAVE and NOSAVE can't be used simultaneously"
    );
    // aliases of one parameter are not duplicates of each other (as in Redis 7.0)
    assert_eq!(
        set(
            &mut c,
            &[("slave-priority", "5"), ("replica-priority", "6")]
        )
        .unwrap(),
        vec!["replica-priority"]
    );
    assert_eq!(c.replica_priority, 6);
    assert_eq!(
        c,
        Config {
            replica_priority: 6,
            dir: c.dir.clone(),
            ..Config::default()
        }
    );
}

#[test]
fn set_is_atomic() {
    let mut c = Config::default();
    let before = c.clone();
    let r = set(
        &mut c,
        &[
            ("maxmemory", "10mb"),
            ("hz", "20"),
            ("maxmemory-policy", "bogus"),
        ],
    );
    assert!(r.is_err());
    assert_eq!(c, before);
    let changed = set(
        &mut c,
        &[("maxmemory", "10mb"), ("hz", "10"), ("timeout", "30")],
    )
    .unwrap();
    assert_eq!(changed, vec!["maxmemory", "timeout"]);
    assert_eq!(c.maxmemory, 10 << 20);
    assert_eq!(c.timeout, 30);
}

#[test]
fn set_special_values() {
    let mut c = Config::default();
    let get = |c: &Config, n: &str| c.get_one(n).unwrap();
    for (v, want) in [
        ("KEA", "AKE"),
        ("Kx", "xK"),
        ("Eg$", "g$E"),
        ("Kn", "nK"),
        ("KEAm", "AKEm"),
        ("Ag$lshzxeKEtmdn", "AKEm"),
        ("", ""),
        ("g$lshzxetd", "A"),
        ("An", "A"),
        ("tmKEn", "tnKEm"),
        ("lsn", "lsn"),
    ] {
        set(&mut c, &[("notify-keyspace-events", v)]).unwrap();
        assert_eq!(get(&c, "notify-keyspace-events"), want, "{v}");
    }
    set(
        &mut c,
        &[(
            "client-output-buffer-limit",
            "normal 1mb 2mb 60 replica 1 2 3",
        )],
    )
    .unwrap();
    assert_eq!(
        get(&c, "client-output-buffer-limit"),
        "normal 1048576 2097152 60 slave 1 2 3 pubsub 33554432 8388608 60"
    );
    assert_eq!(
        set(&mut c, &[("client-output-buffer-limit", "master 1 2 3")]).unwrap_err(),
        "ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - Invalid client class specified in buffer limit configuration."
    );
    set(&mut c, &[("save", "")]).unwrap();
    assert_eq!(get(&c, "save"), "");
    set(&mut c, &[("save", "10 1 10 2")]).unwrap();
    assert_eq!(get(&c, "save"), "10 1 10 2");
    set(&mut c, &[("oom-score-adj", "relative")]).unwrap();
    assert_eq!(get(&c, "oom-score-adj"), "yes");
    set(
        &mut c,
        &[(
            "latency-tracking-info-percentiles",
            "99.99999 0.0000001 12.5 100 0",
        )],
    )
    .unwrap();
    assert_eq!(
        get(&c, "latency-tracking-info-percentiles"),
        "99.99999 0 12.5 100 0"
    );
    set(
        &mut c,
        &[("latency-tracking-info-percentiles", "50.123456789")],
    )
    .unwrap();
    assert_eq!(get(&c, "latency-tracking-info-percentiles"), "50.123457");
    set(&mut c, &[("maxmemory-clients", "10%")]).unwrap();
    assert_eq!(get(&c, "maxmemory-clients"), "10%");
    set(&mut c, &[("shutdown-on-sigint", "default save")]).unwrap();
    assert_eq!(get(&c, "shutdown-on-sigint"), "save");
    set(&mut c, &[("shutdown-on-sigterm", "nosave now")]).unwrap();
    assert_eq!(get(&c, "shutdown-on-sigterm"), "nosave now");
    set(&mut c, &[("hz", "1000")]).unwrap();
    assert_eq!(c.hz, 500);
    set(&mut c, &[("repl-backlog-size", "3000")]).unwrap();
    assert_eq!(c.repl_backlog_size, 16384);
    set(&mut c, &[("maxmemory", "")]).unwrap();
    assert_eq!(c.maxmemory, 0);
    set(&mut c, &[("bind", "127.0.0.1 -::1")]).unwrap();
    assert_eq!(c.bind, vec!["127.0.0.1", "-::1"]);
    set(&mut c, &[("requirepass", "")]).unwrap();
    assert_eq!(c.requirepass, None);
    set(&mut c, &[("enable-protected-configs", "x")]).unwrap_err();
    let mut p = Config {
        enable_protected_configs: "yes".into(),
        ..Config::default()
    };
    set(&mut p, &[("dir", "/")]).unwrap();
    assert_eq!(p.dir, "/");
    assert_eq!(
        set(&mut p, &[("dir", "/nonexistent-kvik")]).unwrap_err(),
        "ERR CONFIG SET failed (possibly related to argument 'dir') - No such file or directory"
    );
}

// ------------------------------------------------------------------ CONFIG REWRITE

#[test]
fn rewrite_keeps_layout_like_redis() {
    let old = "# top comment\nport 7102\n\n# save section\nsave 900 1\nsave 300 10\nsave 60 10000\n\
        slave-read-only yes\nhz 10\nmaxmemory 100mb\nrename-command FLUSHDB \"\"\nlist-max-ziplist-entries 5\n\
        # Generated by CONFIG REWRITE\ntimeout 0\ntimeout 5\n    bind 127.0.0.1\n\n\nloglevel notice\n\
        client-output-buffer-limit normal 0 0 0\nclient-output-buffer-limit pubsub 32mb 8mb 60\n\
        notify-keyspace-events KEA\n";
    let mut c = load_text(old, &[]).unwrap().config;
    c.dir = "/tmp/rw".into();
    c.enable_protected_configs = "yes".into();
    set(
        &mut c,
        &[
            ("hz", "20"),
            ("maxmemory", "1gb"),
            ("save", "100 1"),
            ("replica-read-only", "no"),
            ("maxmemory-policy", "allkeys-lru"),
            ("client-output-buffer-limit", "replica 1mb 2mb 3"),
            ("repl-backlog-size", "3000"),
            ("timeout", "7"),
            ("requirepass", "a b\"c"),
        ],
    )
    .unwrap();
    c.enable_protected_configs = "no".into();
    let got = c.rewrite_content(old);
    let want = "# top comment\nport 7102\n\n# save section\nsave 100 1\n\nreplica-read-only no\nhz 20\n\
        maxmemory 1gb\nrename-command FLUSHDB \"\"\n# ??? list-max-ziplist-entries 5\n# Generated by CONFIG REWRITE\n\
        timeout 7\n\nbind 127.0.0.1\n\nloglevel notice\nclient-output-buffer-limit normal 0 0 0\n\
        client-output-buffer-limit replica 1mb 2mb 3\nnotify-keyspace-events \"AKE\"\n\n\
        dir \"/tmp/rw\"\nlatency-tracking-info-percentiles 50 99 99.9\nmaxmemory-policy allkeys-lru\n\
        repl-backlog-size 16kb\nrequirepass \"a b\\\"c\"\n";
    assert_eq!(got, want);
    // Rewriting the result again adds one blank line at the end (the old
    // file's final newline counts as an empty line, as in Redis), then is stable.
    let again = c.rewrite_content(&got);
    assert_eq!(again, format!("{got}\n"));
    assert_eq!(c.rewrite_content(&again), again);
}

#[test]
fn rewrite_appends_after_signature_and_roundtrips() {
    let d = tmpdir("rewrite");
    let mut c = Config {
        dir: d.to_string_lossy().into_owned(),
        ..Config::default()
    };
    set(
        &mut c,
        &[
            ("save", ""),
            ("hz", "8"),
            ("bind", "127.0.0.1 -::1"),
            ("oom-score-adj-values", "1 2 3"),
            ("maxmemory", "1000"),
            ("appendfsync", "always"),
            ("client-output-buffer-limit", "normal 1000 1025 0"),
            ("maxmemory-clients", "5%"),
            ("stream-node-max-bytes", "2048"),
        ],
    )
    .unwrap();
    let got = c.rewrite_content("# hello\nport 6379\n# end");
    assert!(
        got.starts_with("# hello\nport 6379\n# end\n# Generated by CONFIG REWRITE\n"),
        "{got}"
    );
    for line in [
        "stream-node-max-bytes 2kb",
        "appendfsync always",
        "bind 127.0.0.1 -::1",
        "client-output-buffer-limit normal 1000 1025 0",
        &*format!("dir \"{}\"", d.display()),
        "hz 8",
        "maxmemory 1000",
        "maxmemory-clients 5%",
        "oom-score-adj-values 1 2 3",
        "save \"\"",
    ] {
        assert!(got.lines().any(|l| l == line), "missing {line:?} in\n{got}");
    }
    // trailing newline of the old file leaves one blank line before the marker
    let got2 = c.rewrite_content("port 6379\nsave 60 1\n");
    assert!(
        got2.starts_with("port 6379\nsave \"\"\n\n# Generated by CONFIG REWRITE\n"),
        "{got2}"
    );

    // what is written loads back to the same configuration
    let path = write(&d, "kvik.conf", "# mine\nport 6379\n");
    c.rewrite(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let back = load(Some(&path), &[]).unwrap().config;
    assert_eq!(back, c, "{text}");
    // later rewrites are stable (after the one blank line at the end)
    back.rewrite(&path).unwrap();
    back.rewrite(&path).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{text}\n"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn rewrite_creates_missing_file_and_writes_users() {
    let d = tmpdir("rewrite-new");
    let path = d.join("new.conf");
    let mut c = Config::default();
    c.users
        .push(args(&["default", "on", "nopass", "~*", "&*", "+@all"]));
    c.replicaof = vec![("10.0.0.1".into(), 6380)];
    c.rewrite(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("# Generated by CONFIG REWRITE\n"),
        "{text}"
    );
    assert!(text.contains("\nreplicaof 10.0.0.1 6380\n"));
    assert!(text.contains("\nuser default on nopass ~* &* +@all\n"));
    assert!(text.contains("\nsave 3600 1\nsave 300 100\nsave 60 10000\n"));
    let back = load(Some(&path), &[]).unwrap().config;
    assert_eq!(back.users, c.users);
    assert_eq!(back.replicaof, c.replicaof);
    let _ = std::fs::remove_dir_all(&d);
}

// ------------------------------------------------------------------ docs

#[test]
fn docs_configuration_md_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
    let generated = reference_markdown();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let begin = text.find(docs::BEGIN);
    let end = text.find(docs::END).map(|e| e + docs::END.len());
    let current = match (begin, end) {
        (Some(b), Some(e)) if b < e => &text[b..e],
        _ => "",
    };
    if current != generated {
        if std::env::var_os("KVIK_UPDATE_DOCS").is_some() {
            let new = match (begin, end) {
                (Some(b), Some(e)) if b < e => format!("{}{}{}", &text[..b], generated, &text[e..]),
                _ => format!("{text}\n{generated}\n"),
            };
            std::fs::write(&path, new).unwrap();
        } else {
            panic!("docs/configuration.md is out of date: run KVIK_UPDATE_DOCS=1 cargo test -p kvik-config docs");
        }
    }
    for p in PARAMS {
        assert!(
            text.contains(&format!("| `{}` |", p.name))
                || std::env::var_os("KVIK_UPDATE_DOCS").is_some()
        );
    }
}
