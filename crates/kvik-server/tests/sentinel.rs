//! Sentinel: three of Debian's redis-sentinel processes watch a kvik master with two
//! kvik replicas. The master is killed with SIGKILL; Sentinel promotes a replica, the
//! other follows it, a client that asks Sentinel for the master keeps writing, and
//! the old master, restarted, rejoins as a replica of the new one. Every node runs
//! from a config file, as in production, because Sentinel rewrites them (CONFIG
//! REWRITE inside its failover transactions).

mod support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use support::{free_port, kvik_server_path, scratch_dir, RawConn};

/// Failover can take a few seconds: down-after (2 s), the election, the promotion.
const FAILOVER_LIMIT: Duration = Duration::from_secs(60);

/// A server process started from a config file in its own directory; killed when
/// dropped.
struct Node {
    binary: PathBuf,
    config: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl Node {
    fn start(binary: &Path, dir: &Path, port: u16, config: &str) -> Node {
        let path = dir.join("node.conf");
        fs::write(&path, config).expect("write the config file");
        let mut node = Node {
            binary: binary.to_path_buf(),
            config: path,
            port,
            child: None,
        };
        node.spawn();
        node
    }

    fn spawn(&mut self) {
        let dir = self.config.parent().expect("a directory");
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("log"))
            .expect("open the log");
        let child = Command::new(&self.binary)
            .arg(&self.config)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log)
            .spawn()
            .expect("start the process");
        self.child = Some(child);
        wait_for(&format!("port {} to answer PING", self.port), || {
            RawConn::try_connect(&self.addr()).is_some_and(|mut c| c.cmd(&["PING"]) == b"+PONG\r\n")
        });
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn conn(&self) -> RawConn {
        RawConn::connect(&self.addr())
    }

    fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill9();
    }
}

fn wait_for(what: &str, check: impl FnMut() -> bool) {
    support::wait_for_within(FAILOVER_LIMIT, what, check);
}

fn text(reply: &[u8]) -> String {
    String::from_utf8_lossy(reply).into_owned()
}

/// The master's port as Sentinel reports it.
fn master_port(sentinel: &Node) -> u16 {
    let reply = text(
        &sentinel
            .conn()
            .cmd(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"]),
    );
    reply
        .lines()
        .nth(4)
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no master address in {reply:?}"))
}

fn info_field(node: &Node, name: &str) -> String {
    node.conn().info_field("replication", name)
}

/// One command on a fresh connection, or `None` when the connection is refused or
/// cut: while Sentinel reconfigures a node it kills its clients (CLIENT KILL TYPE
/// normal), which may be the one asking.
fn try_cmd(node: &Node, args: &[&str]) -> Option<Vec<u8>> {
    let mut conn = RawConn::try_connect(&node.addr())?;
    conn.try_send(&support::encode_command(args)).ok()?;
    conn.read_reply_or_eof().ok()?
}

/// [`info_field`] through [`try_cmd`]: empty when the node could not answer.
fn try_info_field(node: &Node, name: &str) -> String {
    let info = try_cmd(node, &["INFO", "replication"]).unwrap_or_default();
    let prefix = format!("{name}:");
    String::from_utf8_lossy(&info)
        .lines()
        .find_map(|line| line.strip_prefix(&prefix).map(str::to_string))
        .unwrap_or_default()
}

fn sentinel_path() -> Option<PathBuf> {
    let path = PathBuf::from("/usr/bin/redis-sentinel");
    if path.is_file() {
        return Some(path);
    }
    let required = std::env::var("KVIK_REQUIRE_REDIS").is_ok_and(|v| !v.is_empty() && v != "0");
    assert!(
        !required,
        "redis-sentinel not found and KVIK_REQUIRE_REDIS=1 (apt install redis-sentinel)"
    );
    println!("SKIPPED: redis-sentinel not found (apt install redis-sentinel)");
    None
}

#[test]
fn sentinel_fails_over_a_killed_kvik_master_and_the_old_master_rejoins() {
    let Some(sentinel_binary) = sentinel_path() else {
        return;
    };
    let kvik = kvik_server_path();
    let node_config = |port: u16, dir: &Path, master: Option<u16>| {
        let mut config = format!(
            "port {port}\nbind 127.0.0.1\ndir {}\nsave \"\"\nrepl-ping-replica-period 1\n",
            dir.display()
        );
        if let Some(m) = master {
            config.push_str(&format!("replicaof 127.0.0.1 {m}\n"));
        }
        config
    };
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let dirs: Vec<PathBuf> = (0..3).map(|_| scratch_dir("sentinel-node")).collect();
    let mut master = Node::start(
        &kvik,
        &dirs[0],
        ports[0],
        &node_config(ports[0], &dirs[0], None),
    );
    let replicas: Vec<Node> = (1..3)
        .map(|i| {
            let config = node_config(ports[i], &dirs[i], Some(ports[0]));
            Node::start(&kvik, &dirs[i], ports[i], &config)
        })
        .collect();
    wait_for("both replicas online", || {
        info_field(&master, "connected_slaves") == "2"
    });

    let sentinels: Vec<Node> = (0..3)
        .map(|_| {
            let (port, dir) = (free_port(), scratch_dir("sentinel"));
            let config = format!(
                "port {port}\nbind 127.0.0.1\ndir {}\n\
                 sentinel monitor mymaster 127.0.0.1 {} 2\n\
                 sentinel down-after-milliseconds mymaster 2000\n\
                 sentinel failover-timeout mymaster 10000\n\
                 sentinel parallel-syncs mymaster 1\n",
                dir.display(),
                ports[0]
            );
            Node::start(&sentinel_binary, &dir, port, &config)
        })
        .collect();
    wait_for("the sentinels to know each other and the replicas", || {
        let reply = text(&sentinels[0].conn().cmd(&["SENTINEL", "MASTER", "mymaster"]));
        let field = |name: &str| {
            let mut lines = reply.lines();
            while let Some(line) = lines.next() {
                if line == name {
                    lines.next();
                    return lines.next().map(str::to_string);
                }
            }
            None
        };
        field("num-other-sentinels").as_deref() == Some("2")
            && field("num-slaves").as_deref() == Some("2")
    });

    let mut writer = master.conn();
    for i in 0..100 {
        writer.cmd(&["SET", &format!("before:{i}"), "v"]);
    }
    wait_for("the replicas to catch up", || {
        replicas
            .iter()
            .all(|r| r.conn().cmd(&["DBSIZE"]) == b":100\r\n")
    });

    master.kill9();
    wait_for("Sentinel to promote a replica", || {
        master_port(&sentinels[0]) != ports[0]
    });
    // Where Sentinel says the master is, now. On a loaded machine it may fail over
    // again (a node slow to answer its PING looks down too): every step follows it.
    let current = || master_port(&sentinels[0]);
    let node = |port: u16| {
        replicas
            .iter()
            .find(|r| r.port == port)
            .unwrap_or_else(|| panic!("Sentinel names {port}, not one of the replicas"))
    };
    wait_for("a promoted replica and the other following it", || {
        let promoted = current();
        let other = replicas
            .iter()
            .find(|r| r.port != promoted)
            .expect("two replicas");
        info_field(node(promoted), "role") == "master"
            && info_field(other, "master_port") == promoted.to_string()
            && info_field(other, "master_link_status") == "up"
            // The client below asks another Sentinel, which learns of the
            // failover from the first one's hello messages, a moment later.
            && sentinels.iter().all(|s| master_port(s) == promoted)
    });

    // A client that asks Sentinel where the master is keeps writing there.
    let mut client = RawConn::connect(&format!("127.0.0.1:{}", master_port(&sentinels[1])));
    for i in 0..100 {
        assert_eq!(client.cmd(&["SET", &format!("after:{i}"), "v"]), b"+OK\r\n");
    }
    assert_eq!(client.cmd(&["DBSIZE"]), b":200\r\n");
    wait_for("both replicas to have every write", || {
        replicas
            .iter()
            .all(|r| r.conn().cmd(&["DBSIZE"]) == b":200\r\n")
    });

    // The old master comes back believing it is a master; Sentinel turns it into a
    // replica of the new one, and it gets the writes it missed.
    master.spawn();
    wait_for("the old master to rejoin as a replica", || {
        try_info_field(&master, "role") == "slave"
            && try_info_field(&master, "master_port") == current().to_string()
            && try_info_field(&master, "master_link_status") == "up"
    });
    wait_for("the old master to have every write", || {
        try_cmd(&master, &["DBSIZE"]).as_deref() == Some(b":200\r\n")
    });
    assert_eq!(
        master.conn().cmd(&["SET", "x", "y"]),
        b"-READONLY You can't write against a read only replica.\r\n"
    );
}

/// Sentinel's `auth-user`: a kvik master whose default user may only PING is
/// monitored through an ACL user with the permissions Redis's documentation gives
/// Sentinel's user.
#[test]
fn sentinel_monitors_a_kvik_master_as_its_auth_user() {
    let Some(sentinel_binary) = sentinel_path() else {
        return;
    };
    let (port, dir) = (free_port(), scratch_dir("sentinel-acl-node"));
    let master = Node::start(
        &kvik_server_path(),
        &dir,
        port,
        &format!(
            "port {port}\nbind 127.0.0.1\ndir {}\nsave \"\"\n\
             user default on nopass -@all +ping\n\
             user sentinel-user on >s3cret allchannels +multi +slaveof +ping +exec \
             +subscribe +config|rewrite +role +publish +info +client|setname \
             +client|kill +script|kill\n\
             user admin on >adm +@all ~* &*\n",
            dir.display()
        ),
    );
    assert_eq!(
        text(&master.conn().cmd(&["INFO"])),
        "-NOPERM this user has no permissions to run the 'info' command\r\n"
    );
    let (sentinel_port, sentinel_dir) = (free_port(), scratch_dir("sentinel-acl"));
    let sentinel = Node::start(
        &sentinel_binary,
        &sentinel_dir,
        sentinel_port,
        &format!(
            "port {sentinel_port}\nbind 127.0.0.1\ndir {}\n\
             sentinel monitor mymaster 127.0.0.1 {port} 1\n\
             sentinel auth-user mymaster sentinel-user\n\
             sentinel auth-pass mymaster s3cret\n\
             sentinel down-after-milliseconds mymaster 2000\n",
            sentinel_dir.display()
        ),
    );
    let mut admin = master.conn();
    assert_eq!(admin.cmd(&["AUTH", "admin", "adm"]), b"+OK\r\n");
    let run_id = admin.info_field("server", "run_id");
    // Sentinel learns the run id from INFO, which only its user may run.
    wait_for("Sentinel to read the master's INFO as its user", || {
        let reply = text(&sentinel.conn().cmd(&["SENTINEL", "MASTER", "mymaster"]));
        reply.contains(&format!("\r\nrunid\r\n$40\r\n{run_id}\r\n"))
            && reply.contains("\r\nflags\r\n$6\r\nmaster\r\n")
    });
    // Sentinel opens its pub/sub link apart from its command link, and may
    // read INFO on the one before the other is up: wait for both.
    wait_for(
        "Sentinel's command and pub/sub links, both as its user",
        || {
            let clients = text(&admin.cmd(&["CLIENT", "LIST"]));
            clients.matches("user=sentinel-user").count() >= 2
        },
    );
}
