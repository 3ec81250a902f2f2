//! ACL over real sockets: what the differential script cannot show side by side
//! (connections closed by DELUSER and CLIENT KILL USER, EXEC checking again,
//! `requirepass` as the default user's password, the ACL file and `user` lines,
//! ACL LOG's entries, blocking commands), with Redis 7.0's exact texts.

mod support;

use std::time::Duration;
use support::{RawConn, TestServer};

fn s(reply: Vec<u8>) -> String {
    String::from_utf8_lossy(&reply).into_owned()
}

fn ok(c: &mut RawConn, args: &[&str]) {
    assert_eq!(s(c.cmd(args)), "+OK\r\n", "{args:?}");
}

fn sha256_hex(text: &str) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sha256sum");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout)[..64].to_string()
}

#[test]
fn deleting_a_user_closes_its_connections() {
    let server = TestServer::start(&[]);
    let mut admin = server.raw();
    ok(
        &mut admin,
        &["ACL", "SETUSER", "u", "on", ">pw", "+@all", "~*"],
    );
    let mut user = server.raw();
    ok(&mut user, &["AUTH", "u", "pw"]);
    assert_eq!(s(user.cmd(&["ACL", "WHOAMI"])), "$1\r\nu\r\n");
    let list = s(admin.cmd(&["CLIENT", "LIST"]));
    assert!(list.contains(" user=u "), "{list}");
    assert_eq!(s(admin.cmd(&["ACL", "DELUSER", "u", "nosuch"])), ":1\r\n");
    assert!(user.closed_within(Duration::from_secs(10)));
    assert_eq!(
        s(admin.cmd(&["AUTH", "u", "pw"])),
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
}

#[test]
fn client_kill_user_closes_that_users_connections() {
    let server = TestServer::start(&[]);
    let mut admin = server.raw();
    ok(
        &mut admin,
        &["ACL", "SETUSER", "u", "on", "nopass", "+@all", "~*"],
    );
    let mut a = server.raw();
    let mut b = server.raw();
    ok(&mut a, &["AUTH", "u", "x"]);
    ok(&mut b, &["AUTH", "u", "y"]);
    assert_eq!(
        s(admin.cmd(&["CLIENT", "KILL", "USER", "nosuch"])),
        "-ERR No such user 'nosuch'\r\n"
    );
    assert_eq!(s(admin.cmd(&["CLIENT", "KILL", "USER", "u"])), ":2\r\n");
    assert!(a.closed_within(Duration::from_secs(10)));
    assert!(b.closed_within(Duration::from_secs(10)));
    assert_eq!(s(admin.cmd(&["PING"])), "+PONG\r\n");
}

#[test]
fn a_changed_user_applies_at_once_and_exec_checks_again() {
    let server = TestServer::start(&[]);
    let mut admin = server.raw();
    ok(
        &mut admin,
        &["ACL", "SETUSER", "u", "on", "nopass", "+@all", "~*"],
    );
    let mut user = server.raw();
    ok(&mut user, &["AUTH", "u", "x"]);
    ok(&mut user, &["MULTI"]);
    assert_eq!(s(user.cmd(&["SET", "k", "v"])), "+QUEUED\r\n");
    assert_eq!(s(user.cmd(&["GET", "k"])), "+QUEUED\r\n");
    ok(&mut admin, &["ACL", "SETUSER", "u", "-set"]);
    assert_eq!(
        s(user.cmd(&["EXEC"])),
        "*2\r\n-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to execute the command or subcommand\r\n$-1\r\n"
    );
    assert_eq!(
        s(user.cmd(&["SET", "k", "v"])),
        "-NOPERM this user has no permissions to run the 'set' command\r\n"
    );
    let log = s(admin.cmd(&["ACL", "LOG", "2"]));
    assert!(log.contains("$7\r\ncontext\r\n$8\r\ntoplevel\r\n"), "{log}");
    assert!(log.contains("$7\r\ncontext\r\n$5\r\nmulti\r\n"), "{log}");
    ok(
        &mut admin,
        &["ACL", "SETUSER", "u", "resetkeys", "~k*", "+set"],
    );
    ok(&mut user, &["SET", "k1", "v"]);
    assert_eq!(
        s(user.cmd(&["SET", "x", "v"])),
        "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"
    );
}

#[test]
fn requirepass_is_the_default_users_password() {
    let server = TestServer::start(&[]);
    let mut admin = server.raw();
    assert_eq!(
        s(admin.cmd(&["AUTH", "x"])),
        "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n"
    );
    ok(&mut admin, &["CONFIG", "SET", "requirepass", "s3cret"]);
    let hash = sha256_hex("s3cret");
    let list = s(admin.cmd(&["ACL", "LIST"]));
    assert!(
        list.contains(&format!("user default on #{hash} ~* &* +@all")),
        "{list}"
    );
    let mut other = server.raw();
    assert_eq!(
        s(other.cmd(&["GET", "k"])),
        "-NOAUTH Authentication required.\r\n"
    );
    assert_eq!(
        s(other.cmd(&["AUTH", "bad"])),
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    ok(&mut other, &["AUTH", "s3cret"]);
    ok(&mut other, &["AUTH", "default", "s3cret"]);
    // The default user without a password again: a connection that never
    // authenticated may run commands.
    let mut waiting = server.raw();
    assert_eq!(
        s(waiting.cmd(&["PING"])),
        "-NOAUTH Authentication required.\r\n"
    );
    ok(&mut admin, &["CONFIG", "SET", "requirepass", ""]);
    assert_eq!(s(waiting.cmd(&["PING"])), "+PONG\r\n");
    assert!(s(admin.cmd(&["ACL", "LIST"])).contains("user default on nopass ~* &* +@all"));
    // ACL SETUSER on the default user is what `requirepass` reads back as well.
    ok(&mut admin, &["ACL", "SETUSER", "default", ">other"]);
    let mut fresh = server.raw();
    assert_eq!(
        s(fresh.cmd(&["PING"])),
        "-NOAUTH Authentication required.\r\n"
    );
    ok(&mut fresh, &["AUTH", "other"]);
}

#[test]
fn hello_auth_and_reset_switch_users() {
    let server = TestServer::start(&[]);
    let mut c = server.raw();
    ok(
        &mut c,
        &[
            "ACL",
            "SETUSER",
            "u",
            "on",
            ">pw",
            "+@all",
            "-acl|list",
            "~*",
            "&*",
        ],
    );
    assert_eq!(
        s(c.cmd(&["HELLO", "2", "AUTH", "u", "bad"])),
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    assert!(s(c.cmd(&["HELLO", "2", "AUTH", "u", "pw"])).starts_with("*14\r\n"));
    assert_eq!(s(c.cmd(&["ACL", "WHOAMI"])), "$1\r\nu\r\n");
    assert_eq!(
        s(c.cmd(&["ACL", "LIST"])),
        "-NOPERM this user has no permissions to run the 'acl|list' command\r\n"
    );
    assert_eq!(s(c.cmd(&["RESET"])), "+RESET\r\n");
    assert_eq!(s(c.cmd(&["ACL", "WHOAMI"])), "$7\r\ndefault\r\n");
    let log = s(c.cmd(&["ACL", "LOG"]));
    for field in [
        "count",
        "reason",
        "context",
        "object",
        "username",
        "age-seconds",
        "client-info",
    ] {
        assert!(
            log.contains(&format!("\r\n{field}\r\n")),
            "{field} in {log}"
        );
    }
    assert!(
        log.contains(
            "$4\r\nauth\r\n$7\r\ncontext\r\n$8\r\ntoplevel\r\n$6\r\nobject\r\n$5\r\nHELLO\r\n"
        ),
        "{log}"
    );
    assert!(
        log.contains("$6\r\nobject\r\n$8\r\nacl|list\r\n$8\r\nusername\r\n$1\r\nu\r\n"),
        "{log}"
    );
}

#[test]
fn acl_log_groups_repeats_and_keeps_acllog_max_len() {
    let server = TestServer::start(&[]);
    let mut admin = server.raw();
    ok(
        &mut admin,
        &["ACL", "SETUSER", "u", "on", "nopass", "+get", "~k*"],
    );
    let mut user = server.raw();
    ok(&mut user, &["AUTH", "u", "x"]);
    for _ in 0..3 {
        user.cmd(&["SET", "a", "b"]);
    }
    user.cmd(&["GET", "x"]);
    user.cmd(&["GET", "y"]);
    let log = s(admin.cmd(&["ACL", "LOG"]));
    assert!(log.starts_with("*3\r\n"), "{log}");
    assert!(
        log.contains("$5\r\ncount\r\n:3\r\n$6\r\nreason\r\n$7\r\ncommand\r\n"),
        "{log}"
    );
    assert!(log.contains("$6\r\nreason\r\n$3\r\nkey\r\n$7\r\ncontext\r\n$8\r\ntoplevel\r\n$6\r\nobject\r\n$1\r\ny\r\n"), "{log}");
    assert!(log.contains("cmd=get user=u"), "{log}");
    assert!(s(admin.cmd(&["ACL", "LOG", "1"])).starts_with("*1\r\n"));
    ok(&mut admin, &["CONFIG", "SET", "acllog-max-len", "2"]);
    assert!(s(admin.cmd(&["ACL", "LOG"])).starts_with("*2\r\n"));
    ok(&mut admin, &["ACL", "LOG", "RESET"]);
    assert_eq!(s(admin.cmd(&["ACL", "LOG"])), "*0\r\n");
}

#[test]
fn blocking_and_pubsub_commands_are_checked() {
    let server = TestServer::start(&[]);
    let mut admin = server.raw();
    ok(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "u",
            "on",
            "nopass",
            "+blpop",
            "+subscribe",
            "+psubscribe",
            "~a*",
            "&news.*",
        ],
    );
    let mut user = server.raw();
    ok(&mut user, &["AUTH", "u", "x"]);
    assert_eq!(
        s(user.cmd(&["BLPOP", "a1", "b1", "0"])),
        "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"
    );
    assert_eq!(s(user.cmd(&["BLPOP", "a1", "0.01"])), "*-1\r\n");
    assert_eq!(
        s(user.cmd(&["SUBSCRIBE", "news.1", "sport"])),
        "-NOPERM this user has no permissions to access one of the channels used as arguments\r\n"
    );
    assert_eq!(
        s(user.cmd(&["PSUBSCRIBE", "news.1*"])),
        "-NOPERM this user has no permissions to access one of the channels used as arguments\r\n"
    );
    assert!(s(user.cmd(&["PSUBSCRIBE", "news.*"])).starts_with("*3\r\n$10\r\npsubscribe\r\n"));
    // `acl-pubsub-default` decides what a new user starts with.
    ok(
        &mut admin,
        &["CONFIG", "SET", "acl-pubsub-default", "allchannels"],
    );
    ok(&mut admin, &["ACL", "SETUSER", "fresh"]);
    let fresh = s(admin.cmd(&["ACL", "GETUSER", "fresh"]));
    assert!(fresh.contains("$8\r\nchannels\r\n$2\r\n&*\r\n"), "{fresh}");
}

#[test]
fn selectors_allow_a_line_when_any_selector_does() {
    let server = TestServer::start(&[]);
    let mut admin = server.raw();
    ok(
        &mut admin,
        &[
            "ACL", "SETUSER", "u", "on", "nopass", "+get", "~a*", "(+set", "~b*)", "(+get",
            "%R~r*)",
        ],
    );
    let mut user = server.raw();
    ok(&mut user, &["AUTH", "u", "x"]);
    assert_eq!(s(user.cmd(&["GET", "a1"])), "$-1\r\n");
    assert_eq!(s(user.cmd(&["GET", "r1"])), "$-1\r\n");
    ok(&mut user, &["SET", "b1", "v"]);
    assert_eq!(
        s(user.cmd(&["SET", "a1", "v"])),
        "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"
    );
    assert_eq!(
        s(user.cmd(&["DEL", "a1"])),
        "-NOPERM this user has no permissions to run the 'del' command\r\n"
    );
}

#[test]
fn key_permissions_follow_what_the_line_does_with_the_key() {
    let server = TestServer::start(&[]);
    let mut admin = server.raw();
    ok(
        &mut admin,
        &[
            "ACL", "SETUSER", "w", "on", "nopass", "+@all", "%W~w*", "%R~r*",
        ],
    );
    let mut user = server.raw();
    ok(&mut user, &["AUTH", "w", "x"]);
    let refused =
        "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n";
    // SET without GET only writes; with GET it reads too.
    ok(&mut user, &["SET", "w1", "v"]);
    assert_eq!(s(user.cmd(&["SET", "w1", "v", "GET"])), refused);
    assert_eq!(s(user.cmd(&["SET", "r1", "v"])), refused);
    // BITFIELD with only GET reads; with SET it writes.
    assert_eq!(
        s(user.cmd(&["BITFIELD", "r1", "GET", "u8", "0"])),
        "*1\r\n:0\r\n"
    );
    assert_eq!(
        s(user.cmd(&["BITFIELD", "r1", "SET", "u8", "0", "1"])),
        refused
    );
    assert_eq!(s(user.cmd(&["GET", "w1"])), refused);
}

#[test]
fn acl_file_saves_and_loads_users() {
    let file = support::scratch_dir("aclfile").join("users.acl");
    std::fs::write(
        &file,
        "# users\nuser default on nopass ~* &* +@all\n\nuser bob on >pw ~b* +get\n",
    )
    .unwrap();
    let server = TestServer::start(&["--aclfile", file.to_str().unwrap()]);
    let mut c = server.raw();
    let hash = sha256_hex("pw");
    let bob_line = format!("user bob on #{hash} ~b* resetchannels -@all +get");
    assert_eq!(
        s(c.cmd(&["ACL", "LIST"])),
        format!(
            "*2\r\n${}\r\n{bob_line}\r\n$34\r\nuser default on nopass ~* &* +@all\r\n",
            bob_line.len()
        )
    );
    ok(
        &mut c,
        &["ACL", "SETUSER", "carol", "on", "nopass", "+@read"],
    );
    ok(&mut c, &["ACL", "SAVE"]);
    let saved = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        saved,
        format!("user bob on #{hash} ~b* resetchannels -@all +get\nuser carol on nopass resetchannels -@all +@read\nuser default on nopass ~* &* +@all\n")
    );
    let mut bob = server.raw();
    ok(&mut bob, &["AUTH", "bob", "pw"]);
    std::fs::write(
        &file,
        "user default on nopass ~* &* +@all\nuser dan on nopass +ping\n",
    )
    .unwrap();
    ok(&mut c, &["ACL", "LOAD"]);
    assert_eq!(
        s(c.cmd(&["ACL", "USERS"])),
        "*2\r\n$3\r\ndan\r\n$7\r\ndefault\r\n"
    );
    // As Redis, every connection of a user the file replaced is closed.
    assert!(bob.closed_within(Duration::from_secs(10)));
    let path = file.to_str().unwrap();
    std::fs::write(
        &file,
        "user dan on +nosuch\nfoo bar\nuser dan on\nuser dan off\n",
    )
    .unwrap();
    assert_eq!(
        s(c.cmd(&["ACL", "LOAD"])),
        format!("-ERR {path}:1: Unknown command or category name in ACL. {path}:2: should start with user keyword. {path}:4: Duplicate user 'dan' found. WARNING: ACL errors detected, no change to the previously active ACL rules was performed\r\n")
    );
    assert_eq!(
        s(c.cmd(&["ACL", "USERS"])),
        "*2\r\n$3\r\ndan\r\n$7\r\ndefault\r\n"
    );
}

#[test]
fn user_lines_and_an_acl_file_together_refuse_to_start() {
    let dir = support::scratch_dir("acl-both");
    let file = dir.join("users.acl");
    std::fs::write(&file, "user default on nopass ~* &* +@all\n").unwrap();
    let err = TestServer::try_start(&["--aclfile", file.to_str().unwrap(), "--user", "bob", "on"])
        .err()
        .expect("must not start");
    assert!(err.contains("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both."), "{err}");
    let err = TestServer::try_start(&["--user", "bob", "on", "+nosuch"])
        .err()
        .expect("must not start");
    assert!(
        err.contains(
            "Error in user declaration '+nosuch': Unknown command or category name in ACL"
        ),
        "{err}"
    );
}

#[test]
fn user_lines_define_users_and_config_rewrite_keeps_them() {
    let dir = support::scratch_dir("acl-conf");
    let conf = dir.join("kvik.conf");
    std::fs::write(
        &conf,
        "user bob on >pw ~b* +get\nrename-command FLUSHALL \"\"\n",
    )
    .unwrap();
    let port = support::free_port();
    let args = ["--port".to_string(), port.to_string()];
    let loaded = kvik_config::load(Some(&conf), &args).expect("config loads");
    let config = kvik_config::Config {
        server_threads: 1,
        ..loaded.config
    };
    let running = kvik_server::startup::launch(config, Some(conf.clone())).expect("server starts");
    let addr = format!("127.0.0.1:{port}");
    let mut c = RawConn::connect(&addr);
    let mut bob = RawConn::connect(&addr);
    ok(&mut bob, &["AUTH", "bob", "pw"]);
    ok(
        &mut c,
        &["ACL", "SETUSER", "carol", "on", "nopass", "+@read"],
    );
    ok(&mut c, &["CONFIG", "REWRITE"]);
    let text = std::fs::read_to_string(&conf).unwrap();
    let hash = sha256_hex("pw");
    assert!(
        text.contains(&format!(
            "user bob on #{hash} ~b* resetchannels -@all +get\n"
        )),
        "{text}"
    );
    assert!(
        text.contains("user carol on nopass resetchannels -@all +@read\n"),
        "{text}"
    );
    assert!(
        text.contains("user default on nopass ~* &* +@all\n"),
        "{text}"
    );
    assert!(text.contains("rename-command FLUSHALL \"\""), "{text}");
    running.shutdown();
}

#[test]
fn a_replica_authenticates_to_its_master_as_masteruser() {
    let master = TestServer::start(&[]);
    let mut m = master.raw();
    ok(
        &mut m,
        &[
            "ACL",
            "SETUSER",
            "repl",
            "on",
            ">rp",
            "+psync",
            "+replconf",
            "+ping",
        ],
    );
    ok(&mut m, &["CONFIG", "SET", "requirepass", "adminpw"]);
    ok(&mut m, &["AUTH", "adminpw"]);
    let port = master.port().to_string();
    let replica = TestServer::start(&[
        "--replicaof",
        "127.0.0.1",
        &port,
        "--masteruser",
        "repl",
        "--masterauth",
        "rp",
    ]);
    let mut r = replica.raw();
    support::wait_for("the link to the master", || {
        r.info_field("replication", "master_link_status") == "up"
    });
    ok(&mut m, &["SET", "k", "v"]);
    support::wait_for("the write to reach the replica", || {
        s(r.cmd(&["GET", "k"])) == "$1\r\nv\r\n"
    });
    let clients = s(m.cmd(&["CLIENT", "LIST"]));
    assert!(clients.contains("user=repl"), "{clients}");
}

#[test]
fn revoking_a_channel_closes_the_connections_subscribed_to_it() {
    let server = TestServer::start(&[]);
    let mut admin = server.raw();
    ok(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "u",
            "on",
            "nopass",
            "+subscribe",
            "+psubscribe",
            "+ping",
            "&news.*",
            "&sport",
        ],
    );
    let mut news = server.raw();
    ok(&mut news, &["AUTH", "u", "x"]);
    assert!(s(news.cmd(&["SUBSCRIBE", "news.1"])).starts_with("*3\r\n"));
    let mut sport = server.raw();
    ok(&mut sport, &["AUTH", "u", "x"]);
    assert!(s(sport.cmd(&["SUBSCRIBE", "sport"])).starts_with("*3\r\n"));
    let mut pattern = server.raw();
    ok(&mut pattern, &["AUTH", "u", "x"]);
    assert!(s(pattern.cmd(&["PSUBSCRIBE", "news.*"])).starts_with("*3\r\n"));
    support::wait_for("the subscriptions to show in CLIENT LIST", || {
        s(admin.cmd(&["CLIENT", "LIST"])).matches(" sub=1 ").count() == 2
    });
    ok(
        &mut admin,
        &["ACL", "SETUSER", "u", "resetchannels", "&sport", "&news.1"],
    );
    // `news.1` is still allowed, but the pattern `news.*` is not one of the user's.
    assert!(pattern.closed_within(Duration::from_secs(10)));
    assert_eq!(s(sport.cmd(&["PING"])), "*2\r\n$4\r\npong\r\n$0\r\n\r\n");
    assert_eq!(s(news.cmd(&["PING"])), "*2\r\n$4\r\npong\r\n$0\r\n\r\n");
    ok(&mut admin, &["ACL", "SETUSER", "u", "resetchannels"]);
    assert!(news.closed_within(Duration::from_secs(10)));
    assert!(sport.closed_within(Duration::from_secs(10)));
}
