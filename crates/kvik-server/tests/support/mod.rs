//! Shared helpers for kvik-server's integration tests.
//!
//! Every test file that needs them says `mod support;`. Not every file uses every
//! helper, hence the `dead_code` allowance below.
//!
//! - [`TestServer`] starts the freshly built `kvik-server` binary on a free port in
//!   its own scratch directory and kills it when dropped.
//! - [`RealRedis`] does the same with a real `redis-server` (for differential tests).
//! - [`RawConn`] is a bare TCP connection that writes bytes and reads exactly one RESP
//!   reply back as the bytes the server sent (RESP2 and RESP3), for exact comparisons.

#![allow(dead_code)]

pub mod active;
pub mod in_process;
pub mod proxy;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

/// How long a started server gets to answer PING.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Read timeout of the connections handed to tests: a hung server fails the test
/// instead of hanging it.
pub const IO_TIMEOUT: Duration = Duration::from_secs(30);

/// Path of the kvik-server binary cargo built for this test run.
pub fn kvik_server_path() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_kvik-server"))
}

/// The real redis-server to compare against: `$KVIK_REDIS_SERVER` if set, else
/// `/usr/bin/redis-server`, else the first `redis-server` on `$PATH`.
pub fn redis_server_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KVIK_REDIS_SERVER") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let usr = PathBuf::from("/usr/bin/redis-server");
    if usr.is_file() {
        return Some(usr);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("redis-server"))
        .find(|p| p.is_file())
}

/// For tests that need a real redis-server: its path, or `None` after printing a
/// SKIPPED line. With `KVIK_REQUIRE_REDIS=1` (set by CI) a missing server is a failure.
pub fn redis_server_or_skip() -> Option<PathBuf> {
    match redis_server_path() {
        Some(p) => Some(p),
        None if require_redis() => {
            panic!("redis-server not found and KVIK_REQUIRE_REDIS=1 (apt install redis-server)")
        }
        None => {
            println!("SKIPPED: redis-server not found (apt install redis-server)");
            None
        }
    }
}

fn require_redis() -> bool {
    std::env::var("KVIK_REQUIRE_REDIS").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// How long [`wait_for`] polls before failing the test: far more than anything
/// waited for takes, so that only a real hang fails.
pub const WAIT_LIMIT: Duration = Duration::from_secs(30);

/// Poll `check` until it holds (what another thread or process does lands a moment
/// later), failing the test after [`WAIT_LIMIT`].
pub fn wait_for(what: &str, check: impl FnMut() -> bool) {
    wait_for_within(WAIT_LIMIT, what, check);
}

/// [`wait_for`] with a limit of its own.
pub fn wait_for_within(limit: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(20));
    }
}

/// Ports [`free_port`] has handed out in this test process.
static PORTS_GIVEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// A port nobody listened on a moment ago, and never handed out before in this
/// process: the kernel may offer the same ephemeral port to two probes a moment
/// apart once the first probe closed it, and two servers started side by side
/// would then race for it. Another process (an outgoing connection's local port)
/// may still take it before the server binds it; [`TestServer::try_start_binary`]
/// retries when the server dies early, and checks that the server answering is its
/// own.
pub fn free_port() -> u16 {
    loop {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = l.local_addr().expect("local_addr").port();
        if PORTS_GIVEN.lock().unwrap().insert(port) {
            return port;
        }
    }
}

static SCRATCH_SEQ: AtomicUsize = AtomicUsize::new(0);

/// A fresh empty directory under the system temp dir, unique within this machine.
pub fn scratch_dir(tag: &str) -> PathBuf {
    let n = SCRATCH_SEQ.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("kvik-test-{tag}-{}-{n}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// Defaults for a server launched inside the test process: loopback only, no save
/// points and a scratch directory of its own, so that it neither loads nor leaves a
/// `dump.rdb` in the source tree.
pub fn in_process_config() -> kvik_config::Config {
    kvik_config::Config {
        bind: vec!["127.0.0.1".into()],
        save: Vec::new(),
        dir: scratch_dir("in-process").to_string_lossy().into_owned(),
        repl_diskless_sync_delay: 0,
        ..Default::default()
    }
}

/// A server process started for one test. Killed, and its scratch directory removed,
/// on drop.
pub struct TestServer {
    child: Child,
    port: u16,
    dir: PathBuf,
    binary: PathBuf,
    args: Vec<String>,
}

impl TestServer {
    /// Starts kvik-server with `--port N --save "" --appendonly no
    /// --repl-diskless-sync-delay 0` followed by `args`.
    /// Panics, with the server's output, if it does not answer PING within 10s.
    pub fn start(args: &[&str]) -> TestServer {
        Self::try_start(args).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`TestServer::start`] returning the failure as text instead of panicking.
    pub fn try_start(args: &[&str]) -> Result<TestServer, String> {
        Self::try_start_binary(&kvik_server_path(), args)
    }

    /// Starts any redis-compatible server binary the same way.
    pub fn start_binary(binary: &Path, args: &[&str]) -> TestServer {
        Self::try_start_binary(binary, args).unwrap_or_else(|e| panic!("{e}"))
    }

    pub fn try_start_binary(binary: &Path, args: &[&str]) -> Result<TestServer, String> {
        Self::start_until(binary, args, Self::answers_ping)
    }

    /// Starts kvik-server as [`TestServer::start`] does, but returns as soon as it
    /// answers at all (-LOADING included): for tests of what clients see while the
    /// dataset loads.
    pub fn start_loading(args: &[&str]) -> TestServer {
        Self::start_until(&kvik_server_path(), args, Self::answers)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn start_until(
        binary: &Path,
        args: &[&str],
        ready: fn(&TestServer) -> bool,
    ) -> Result<TestServer, String> {
        let mut last_err = String::new();
        // A few attempts: the free port can be taken between probing and binding.
        for _ in 0..3 {
            match Self::start_once(binary, args, ready) {
                Ok(server) => return Ok(server),
                Err((died_early, e)) => {
                    last_err = e;
                    if !died_early {
                        break;
                    }
                }
            }
        }
        Err(last_err)
    }

    /// On failure: whether the process exited by itself (worth a retry), and why.
    fn start_once(
        binary: &Path,
        extra: &[&str],
        ready: fn(&TestServer) -> bool,
    ) -> Result<TestServer, (bool, String)> {
        let port = free_port();
        let dir = scratch_dir("server");
        let mut args: Vec<String> = vec![
            "--port".into(),
            port.to_string(),
            "--bind".into(),
            "127.0.0.1".into(),
            "--save".into(),
            String::new(),
            "--appendonly".into(),
            "no".into(),
            // A full sync starts at once (Redis's default waits 5 seconds for more
            // replicas); tests of that wait set their own delay.
            "--repl-diskless-sync-delay".into(),
            "0".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let out = File::create(dir.join("stdout.log")).expect("create stdout.log");
        let err = File::create(dir.join("stderr.log")).expect("create stderr.log");
        let child = Command::new(binary)
            .args(&args)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| (false, format!("cannot run {}: {e}", binary.display())))?;
        let mut server = TestServer {
            child,
            port,
            dir,
            binary: binary.to_path_buf(),
            args,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                let why = format!("exited during startup ({status})");
                return Err((true, server.failure(&why)));
            }
            if ready(&server) {
                return Ok(server);
            }
            if Instant::now() >= deadline {
                let why = format!("did not answer PING within {START_TIMEOUT:?}");
                return Err((false, server.failure(&why)));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Does the server answer PING, and is the process answering this one (not
    /// another that holds the port while this one fails to bind it)?
    fn answers_ping(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
        if s.write_all(b"*1\r\n$4\r\nPING\r\n").is_err() {
            return false;
        }
        let mut buf = [0u8; 7];
        if s.read_exact(&mut buf).is_err() || &buf != b"+PONG\r\n" {
            return false;
        }
        self.answering_pid(&mut s) == Some(self.child.id())
    }

    /// The `process_id` INFO reports on `s`.
    fn answering_pid(&self, s: &mut TcpStream) -> Option<u32> {
        s.write_all(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n").ok()?;
        let mut reply = Vec::new();
        let mut chunk = [0u8; 4096];
        while reply_len(&reply).ok()?.is_none() {
            let n = s.read(&mut chunk).ok().filter(|&n| n > 0)?;
            reply.extend_from_slice(&chunk[..n]);
        }
        let info = String::from_utf8(reply).ok()?;
        info.lines()
            .find_map(|l| l.strip_prefix("process_id:"))
            .and_then(|pid| pid.trim().parse().ok())
    }

    /// Does the server answer PING with anything (PONG, or -LOADING while it loads)?
    fn answers(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
        let mut first = [0u8; 1];
        s.write_all(b"*1\r\n$4\r\nPING\r\n").is_ok() && s.read_exact(&mut first).is_ok()
    }

    fn failure(&self, why: &str) -> String {
        format!(
            "{} {} {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.binary.display(),
            shell_words(&self.args),
            why,
            self.stdout(),
            self.stderr()
        )
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:PORT`
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The server's working directory (where it writes dump.rdb, appendonlydir, ...).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the server printed on stdout so far.
    pub fn stdout(&self) -> String {
        fs::read_to_string(self.dir.join("stdout.log")).unwrap_or_default()
    }

    /// Everything the server printed on stderr so far.
    pub fn stderr(&self) -> String {
        fs::read_to_string(self.dir.join("stderr.log")).unwrap_or_default()
    }

    /// The `--logfile` the server was started with, if any (relative to its
    /// directory).
    fn logfile_name(&self) -> Option<String> {
        let at = self.args.iter().position(|a| a == "--logfile")?;
        self.args.get(at + 1).filter(|f| !f.is_empty()).cloned()
    }

    /// What the server wrote to its `--logfile` so far.
    fn logfile(&self) -> Option<String> {
        fs::read_to_string(self.dir.join(self.logfile_name()?)).ok()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Wait up to `limit` for the process to exit; panics if it does not.
    pub fn assert_exits_within(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while self.is_running() {
            assert!(Instant::now() < deadline, "the server did not exit");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A client from the `redis` crate (sync API), connected to db 0.
    pub fn client(&self) -> redis::Connection {
        let url = format!("redis://127.0.0.1:{}/", self.port);
        let con = redis::Client::open(url)
            .and_then(|c| c.get_connection_with_timeout(START_TIMEOUT))
            .unwrap_or_else(|e| panic!("connect to {}: {e}", self.addr()));
        con.set_read_timeout(Some(IO_TIMEOUT))
            .expect("set_read_timeout");
        con.set_write_timeout(Some(IO_TIMEOUT))
            .expect("set_write_timeout");
        con
    }

    /// A raw TCP connection, for exact reply bytes and RESP3.
    pub fn raw(&self) -> RawConn {
        RawConn::connect(&self.addr())
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // A failing test shows each server's side: a CI log then says what the
        // server was doing when the client gave up.
        if thread::panicking() {
            eprintln!("{}", self.failure("(the test failed)"));
            if let Some(log) = self.logfile() {
                eprintln!("--- {} ---\n{log}", self.logfile_name().unwrap_or_default());
            }
        }
        if std::env::var_os("KVIK_KEEP_TEST_DIRS").is_none() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// A real redis-server started like [`TestServer`]; derefs to it.
pub struct RealRedis(TestServer);

impl RealRedis {
    /// Panics when there is no redis-server; check [`redis_server_or_skip`] first.
    pub fn start(args: &[&str]) -> RealRedis {
        Self::try_start(args).unwrap_or_else(|e| panic!("{e}"))
    }

    pub fn try_start(args: &[&str]) -> Result<RealRedis, String> {
        let path = redis_server_path().ok_or("redis-server not found")?;
        TestServer::try_start_binary(&path, args).map(RealRedis)
    }
}

impl Deref for RealRedis {
    type Target = TestServer;
    fn deref(&self) -> &TestServer {
        &self.0
    }
}

impl DerefMut for RealRedis {
    fn deref_mut(&mut self) -> &mut TestServer {
        &mut self.0
    }
}

/// A bare connection: sends bytes, reads one complete RESP reply at a time.
pub struct RawConn {
    stream: TcpStream,
    /// Bytes received but not yet handed out (the start of later replies).
    buf: Vec<u8>,
}

impl RawConn {
    pub fn connect(addr: &str) -> RawConn {
        Self::try_connect(addr).unwrap_or_else(|| panic!("cannot connect to {addr}"))
    }

    /// [`RawConn::connect`], or `None` when nothing listens there (yet).
    pub fn try_connect(addr: &str) -> Option<RawConn> {
        let stream = TcpStream::connect(addr).ok()?;
        stream.set_nodelay(true).expect("set_nodelay");
        stream
            .set_read_timeout(Some(IO_TIMEOUT))
            .expect("set_read_timeout");
        Some(RawConn {
            stream,
            buf: Vec::new(),
        })
    }

    pub fn set_read_timeout(&mut self, t: Duration) {
        self.stream
            .set_read_timeout(Some(t))
            .expect("set_read_timeout");
    }

    /// Writes raw bytes (a command, part of one, several, or garbage).
    pub fn send(&mut self, bytes: &[u8]) {
        self.try_send(bytes).expect("write to server");
    }

    /// [`RawConn::send`] that reports a failed write (e.g. the server closed the
    /// connection) instead of panicking.
    pub fn try_send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Sends one command as a RESP multibulk.
    pub fn send_cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) {
        self.send(&encode_command(args));
    }

    /// Sends one command and returns its reply's bytes.
    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Vec<u8> {
        self.send_cmd(args);
        self.read_reply()
    }

    /// The value of field `name` in INFO `section`; panics if it is missing.
    pub fn info_field(&mut self, section: &str, name: &str) -> String {
        let info = String::from_utf8_lossy(&self.cmd(&["INFO", section])).into_owned();
        let prefix = format!("{name}:");
        info.lines()
            .find_map(|line| line.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no {name} in INFO {section}"))
            .to_string()
    }

    /// Reads exactly one reply (an attribute counts as part of the reply it precedes).
    /// Panics if the server closes the connection first.
    pub fn read_reply(&mut self) -> Vec<u8> {
        match self.read_reply_or_eof() {
            Ok(Some(r)) => r,
            Ok(None) => panic!(
                "server closed the connection (unparsed: {})",
                escape(&self.buf)
            ),
            Err(e) => panic!("reading reply: {e} (unparsed: {})", escape(&self.buf)),
        }
    }

    /// Reads exactly one reply, or `None` if the server closed the connection before
    /// sending a complete one.
    pub fn read_reply_or_eof(&mut self) -> io::Result<Option<Vec<u8>>> {
        loop {
            match reply_len(&self.buf) {
                Ok(Some(n)) => return Ok(Some(self.buf.drain(..n).collect())),
                Ok(None) => {}
                Err(e) => {
                    let msg = format!("malformed reply ({e}): {}", escape(&self.buf));
                    return Err(io::Error::new(io::ErrorKind::InvalidData, msg));
                }
            }
            let mut chunk = [0u8; 16 * 1024];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Ok(None),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// True if the server closes the connection within `wait` (replies still pending
    /// are read and discarded).
    pub fn closed_within(&mut self, wait: Duration) -> bool {
        self.set_read_timeout(wait);
        let closed = loop {
            match self.read_reply_or_eof() {
                Ok(Some(_)) => continue,
                Ok(None) => break true,
                Err(e) => {
                    break e.kind() != io::ErrorKind::WouldBlock
                        && e.kind() != io::ErrorKind::TimedOut
                }
            }
        };
        self.set_read_timeout(IO_TIMEOUT);
        closed
    }

    /// Closes the writing half (the server sees EOF).
    pub fn shutdown_write(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }

    /// Everything the server sends until it closes the connection (a reset counts as
    /// a close); panics if it is still open after the read timeout.
    pub fn read_until_closed(&mut self) -> Vec<u8> {
        let mut all = std::mem::take(&mut self.buf);
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return all,
                Ok(n) => all.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return all,
                Err(e) => panic!("still open ({e}) after: {}", escape(&all)),
            }
        }
    }
}

/// Encodes one command as a RESP multibulk request.
pub fn encode_command<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        let a = a.as_ref();
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Length of the complete RESP2/RESP3 reply at the start of `buf`: `Ok(None)` if more
/// bytes are needed, `Err` if the bytes cannot be a reply.
pub fn reply_len(buf: &[u8]) -> Result<Option<usize>, String> {
    let Some(&kind) = buf.first() else {
        return Ok(None);
    };
    let Some(eol) = find_crlf(buf) else {
        return Ok(None);
    };
    let header = &buf[1..eol];
    let after = eol + 2;
    match kind {
        // Simple string, error, integer, null, double, boolean, big number.
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Ok(Some(after)),
        // Bulk string, bulk error, verbatim string.
        b'$' | b'!' | b'=' => {
            let n = parse_len(header)?;
            if n < 0 {
                return Ok(Some(after));
            }
            let end = after + n as usize + 2;
            if buf.len() < end {
                return Ok(None);
            }
            if &buf[end - 2..end] != b"\r\n" {
                return Err("bulk payload not followed by CRLF".into());
            }
            Ok(Some(end))
        }
        // Array, set, push, map, attribute.
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = parse_len(header)?;
            if n < 0 {
                return Ok(Some(after));
            }
            let items = if matches!(kind, b'%' | b'|') {
                2 * n
            } else {
                n
            };
            let mut pos = after;
            for _ in 0..items {
                match reply_len(&buf[pos..])? {
                    Some(len) => pos += len,
                    None => return Ok(None),
                }
            }
            if kind == b'|' {
                // An attribute is followed by the reply it annotates.
                return Ok(reply_len(&buf[pos..])?.map(|len| pos + len));
            }
            Ok(Some(pos))
        }
        other => Err(format!("unknown RESP type byte {:?}", other as char)),
    }
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

fn parse_len(header: &[u8]) -> Result<i64, String> {
    std::str::from_utf8(header)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .filter(|&n| n >= -1)
        .ok_or_else(|| format!("bad length {:?}", String::from_utf8_lossy(header)))
}

/// Printable form of arbitrary bytes: `\r`, `\n`, `\t`, `\\`, `\"` and `\xHH` escapes,
/// inside double quotes (the way redis-cli quotes).
pub fn escape(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() + 2);
    s.push('"');
    for &b in bytes {
        match b {
            b'\r' => s.push_str("\\r"),
            b'\n' => s.push_str("\\n"),
            b'\t' => s.push_str("\\t"),
            b'\\' => s.push_str("\\\\"),
            b'"' => s.push_str("\\\""),
            0x20..=0x7e => s.push(b as char),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s.push('"');
    s
}

/// Arguments joined for display, quoted where needed.
fn shell_words(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || c == '"') {
                format!("'{a}'")
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A kvik master and its replica (`replica_binary`: kvik or redis-server), the
/// replica connected through a [`proxy::Proxy`] that can cut, heal or stall the
/// link; started with the first sync done.
pub struct ProxiedPair {
    pub master: TestServer,
    pub replica: TestServer,
    pub proxy: proxy::Proxy,
}

impl ProxiedPair {
    /// Both servers with DEBUG enabled; the master also gets `master_args`.
    pub fn start(replica_binary: &Path, master_args: &[&str]) -> ProxiedPair {
        let mut args = vec!["--enable-debug-command", "yes"];
        args.extend_from_slice(master_args);
        let master = TestServer::start(&args);
        let proxy = proxy::Proxy::start(&master.addr());
        let proxy_port = proxy.port().to_string();
        let replica = TestServer::start_binary(
            replica_binary,
            &[
                "--enable-debug-command",
                "yes",
                "--replicaof",
                "127.0.0.1",
                &proxy_port,
            ],
        );
        let mut r = replica.raw();
        wait_for("the first sync", || {
            r.info_field("replication", "master_link_status") == "up"
        });
        ProxiedPair {
            master,
            replica,
            proxy,
        }
    }
}
