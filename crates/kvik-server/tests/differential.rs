//! Differential test: every script in `tests/differential/*.redis` (at the repository
//! root) runs against kvik-server and against a real redis-server, and every reply
//! must be the same bytes. The script format is described in
//! `tests/differential/README.md`. The list scripts run again with
//! `--list-compress-depth 1` and `2` on both sides (compressed interior nodes must
//! change no reply).
//!
//! Environment:
//! - `KVIK_REQUIRE_REDIS=1`: fail (instead of skip) when redis-server is missing.
//! - `KVIK_DIFF_FILTER=text`: only scripts whose file name contains `text`.
//! - `KVIK_DIFF_SHOW=1`: print every step with both replies.
//! - `KVIK_DIFF_JOBS=n`: scripts run in parallel (default 4).
//! - `KVIK_DIFF_AGAINST=redis`: compare two real redis-servers (validates the corpus).

mod support;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use support::{escape, reply_len, RawConn, TestServer};

/// How long one reply may take before the step counts as failed.
const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

/// Replies longer than this are shown cut.
const SHOW_LIMIT: usize = 400;

#[test]
fn differential_against_redis() {
    run_corpus(|_| true, &[]);
}

#[test]
fn list_scripts_agree_with_compressed_nodes() {
    for depth in ["1", "2"] {
        run_corpus(
            |name| name.contains("lists"),
            &["--list-compress-depth", depth],
        );
    }
}

/// Run the scripts `wanted` picks (and `KVIK_DIFF_FILTER` lets through), each with
/// `extra_args` after its own server arguments; panics listing any mismatch.
fn run_corpus(wanted: impl Fn(&str) -> bool, extra_args: &[&str]) {
    let Some(redis_path) = support::redis_server_or_skip() else {
        return;
    };
    let against_redis = std::env::var("KVIK_DIFF_AGAINST").is_ok_and(|v| v == "redis");
    let subject = if against_redis {
        redis_path.clone()
    } else {
        support::kvik_server_path()
    };
    let subject_name = if against_redis { "redis#2" } else { "kvik" };

    let filter = std::env::var("KVIK_DIFF_FILTER").unwrap_or_default();
    let show = std::env::var("KVIK_DIFF_SHOW").is_ok_and(|v| !v.is_empty() && v != "0");
    let jobs = std::env::var("KVIK_DIFF_JOBS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(4);

    let dir = corpus_dir();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "redis"))
        .filter(|p| file_name(p).contains(&filter) && wanted(&file_name(p)))
        .collect();
    paths.sort();
    if paths.is_empty() && !filter.is_empty() {
        return;
    }
    assert!(!paths.is_empty(), "no scripts matched in {}", dir.display());

    // Parse everything first: a broken script is reported before any server starts.
    let scripts: Vec<Script> = paths
        .iter()
        .map(|p| Script::load(p).unwrap_or_else(|e| panic!("{e}")))
        .collect();

    println!(
        "differential: {} scripts, {} vs redis ({}), extra arguments {extra_args:?}",
        scripts.len(),
        subject.display(),
        redis_path.display()
    );
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Vec<Mismatch>)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.min(scripts.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(script) = scripts.get(i) else { break };
                let sides = [(subject_name, &*subject), ("redis", &*redis_path)];
                let (mismatches, log) = run_script(script, sides, extra_args, show);
                let verdict = if mismatches.is_empty() {
                    "ok".to_string()
                } else {
                    format!("FAILED ({} mismatches)", mismatches.len())
                };
                print!("{log}");
                println!(
                    "{:<40} {:>4} steps  {verdict}",
                    script.name,
                    script.steps.len()
                );
                results.lock().unwrap().push((i, mismatches));
            });
        }
    });

    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    let all: Vec<Mismatch> = results.into_iter().flat_map(|(_, m)| m).collect();
    if !all.is_empty() {
        let mut report = String::new();
        for m in &all {
            let _ = writeln!(report, "{m}");
        }
        println!("\n{report}");
        let failed_scripts: std::collections::BTreeSet<&str> =
            all.iter().map(|m| m.script.as_str()).collect();
        panic!(
            "{} mismatches in {} scripts: {}",
            all.len(),
            failed_scripts.len(),
            failed_scripts.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/differential")
}

fn file_name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

// ---------------------------------------------------------------------------
// Scripts

struct Script {
    name: String,
    /// Extra arguments for both servers (`~server-args`).
    server_args: Vec<String>,
    steps: Vec<Step>,
}

struct Step {
    line: usize,
    text: String,
    action: Action,
}

enum Action {
    /// Send a command (or raw bytes, or nothing) and compare the next reply.
    Exchange {
        send: Send,
        cmp: Compare,
    },
    /// Write raw bytes without reading a reply (`~send`).
    SendOnly(Vec<u8>),
    Sleep(Duration),
    /// Switch to the named connection pair, opening it on first use.
    Conn(String),
}

enum Send {
    Command(Vec<Vec<u8>>),
    Raw(Vec<u8>),
    Nothing,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Compare {
    Exact,
    Type,
    Sorted,
    Range(i64, i64),
    Ignore,
}

impl Script {
    fn load(path: &Path) -> Result<Script, String> {
        let name = file_name(path);
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("read {}: {e}", path.display()))?;
        let mut script = Script {
            name: name.clone(),
            server_args: Vec::new(),
            steps: Vec::new(),
        };
        for (i, line) in text.lines().enumerate() {
            let line_no = i + 1;
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let err = |e: String| format!("{name}:{line_no}: {e}: {trimmed}");
            let words = split_args(trimmed).map_err(err)?;
            if words.first().is_some_and(|w| w == b"~server-args") {
                if !script.steps.is_empty() {
                    return Err(err("~server-args must come before the first step".into()));
                }
                for w in &words[1..] {
                    let w = String::from_utf8(w.clone()).map_err(|_| err("not UTF-8".into()))?;
                    script.server_args.push(w);
                }
                continue;
            }
            let action = parse_step(words).map_err(err)?;
            script.steps.push(Step {
                line: line_no,
                text: trimmed.to_string(),
                action,
            });
        }
        Ok(script)
    }
}

fn parse_step(mut words: Vec<Vec<u8>>) -> Result<Action, String> {
    let mut cmp = Compare::Exact;
    let mut modifiers = 0;
    loop {
        let Some(first) = words.first() else {
            return Err("empty step".into());
        };
        let directive = match first.strip_prefix(b"~") {
            Some(d) => String::from_utf8_lossy(d).into_owned(),
            None => break,
        };
        let take_int = |words: &mut Vec<Vec<u8>>| -> Result<i64, String> {
            if words.is_empty() {
                return Err(format!("~{directive} needs a number"));
            }
            let w = words.remove(0);
            std::str::from_utf8(&w)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| format!("~{directive}: not a number"))
        };
        words.remove(0);
        let modifier = match directive.as_str() {
            "type" => Some(Compare::Type),
            "sorted" => Some(Compare::Sorted),
            "ignore" => Some(Compare::Ignore),
            "range" => {
                let lo = take_int(&mut words)?;
                let hi = take_int(&mut words)?;
                Some(Compare::Range(lo, hi))
            }
            _ => None,
        };
        if let Some(m) = modifier {
            modifiers += 1;
            if modifiers > 1 {
                return Err("at most one of ~type ~sorted ~range ~ignore per step".into());
            }
            cmp = m;
            continue;
        }
        let only = |words: &Vec<Vec<u8>>, n: usize| -> Result<(), String> {
            if words.len() != n {
                return Err(format!("~{directive} takes {n} argument(s)"));
            }
            Ok(())
        };
        let no_modifier = || -> Result<(), String> {
            if modifiers > 0 {
                return Err(format!("~{directive} takes no comparison modifier"));
            }
            Ok(())
        };
        return match directive.as_str() {
            "raw" => {
                only(&words, 1)?;
                Ok(Action::Exchange {
                    send: Send::Raw(words.remove(0)),
                    cmp,
                })
            }
            "send" => {
                no_modifier()?;
                only(&words, 1)?;
                Ok(Action::SendOnly(words.remove(0)))
            }
            "read" => {
                only(&words, 0)?;
                Ok(Action::Exchange {
                    send: Send::Nothing,
                    cmp,
                })
            }
            "sleep" => {
                no_modifier()?;
                let ms = take_int(&mut words)?;
                only(&words, 0)?;
                Ok(Action::Sleep(Duration::from_millis(ms.max(0) as u64)))
            }
            "conn" => {
                no_modifier()?;
                only(&words, 1)?;
                Ok(Action::Conn(
                    String::from_utf8_lossy(&words[0]).into_owned(),
                ))
            }
            "resp2" | "resp3" => {
                no_modifier()?;
                only(&words, 0)?;
                let proto = if directive == "resp2" { "2" } else { "3" };
                // HELLO's map holds the server's name, version and client id:
                // only its type is compared.
                Ok(Action::Exchange {
                    send: Send::Command(vec![b"HELLO".to_vec(), proto.as_bytes().to_vec()]),
                    cmp: Compare::Type,
                })
            }
            _ => Err(format!("unknown directive ~{directive}")),
        };
    }
    Ok(Action::Exchange {
        send: Send::Command(words),
        cmp,
    })
}

/// Splits a line into arguments the way redis-cli does: whitespace separates
/// arguments; "double quotes" take \n \r \t \b \a \\ \" and \xHH escapes; 'single
/// quotes' take only \'; a quote may also open inside a word (`a"b c"` is the one
/// argument `ab c`); a closing quote must be followed by whitespace or the end.
fn split_args(line: &str) -> Result<Vec<Vec<u8>>, String> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() {
            return Ok(out);
        }
        let mut arg = Vec::new();
        while i < b.len() && !b[i].is_ascii_whitespace() {
            let c = b[i];
            i += 1;
            match c {
                b'"' => {
                    i = double_quoted(b, i, &mut arg)?;
                    closing_quote_ok(b, i)?;
                }
                b'\'' => {
                    i = single_quoted(b, i, &mut arg)?;
                    closing_quote_ok(b, i)?;
                }
                other => arg.push(other),
            }
        }
        out.push(arg);
    }
}

/// Reads a double-quoted part starting after its opening quote; returns the
/// position after the closing quote.
fn double_quoted(b: &[u8], mut i: usize, arg: &mut Vec<u8>) -> Result<usize, String> {
    loop {
        let c = *b.get(i).ok_or("unbalanced double quote")?;
        i += 1;
        match c {
            b'"' => return Ok(i),
            b'\\' => {
                let e = *b.get(i).ok_or("unbalanced double quote")?;
                i += 1;
                arg.push(match e {
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'b' => 8,
                    b'a' => 7,
                    b'x' => {
                        let hex = b
                            .get(i..i + 2)
                            .and_then(|h| std::str::from_utf8(h).ok())
                            .and_then(|h| u8::from_str_radix(h, 16).ok())
                            .ok_or("\\x needs two hex digits")?;
                        i += 2;
                        hex
                    }
                    other => other,
                });
            }
            other => arg.push(other),
        }
    }
}

/// Like [`double_quoted`] for a single-quoted part.
fn single_quoted(b: &[u8], mut i: usize, arg: &mut Vec<u8>) -> Result<usize, String> {
    loop {
        let c = *b.get(i).ok_or("unbalanced single quote")?;
        i += 1;
        match c {
            b'\'' => return Ok(i),
            b'\\' if b.get(i) == Some(&b'\'') => {
                arg.push(b'\'');
                i += 1;
            }
            other => arg.push(other),
        }
    }
}

fn closing_quote_ok(b: &[u8], i: usize) -> Result<(), String> {
    match b.get(i) {
        None => Ok(()),
        Some(c) if c.is_ascii_whitespace() => Ok(()),
        Some(_) => Err("closing quote must be followed by whitespace".into()),
    }
}

// ---------------------------------------------------------------------------
// Running

/// What a server answered to one step.
#[derive(PartialEq)]
enum Outcome {
    Reply(Vec<u8>),
    Closed,
    Failed(String),
}

impl Outcome {
    fn show(&self) -> String {
        self.show_from(0)
    }

    /// Like `show`, but a long reply is shown from a little before byte `at` (where
    /// two replies start to differ).
    fn show_from(&self, at: usize) -> String {
        match self {
            Outcome::Reply(r) if r.len() > SHOW_LIMIT => {
                let start = at.saturating_sub(SHOW_LIMIT / 4).min(r.len());
                let end = (start + SHOW_LIMIT).min(r.len());
                format!(
                    "{}{}{} ({} bytes)",
                    if start > 0 { "..." } else { "" },
                    escape(&r[start..end]),
                    if end < r.len() { "..." } else { "" },
                    r.len()
                )
            }
            Outcome::Reply(r) => escape(r),
            Outcome::Closed => "(connection closed)".into(),
            Outcome::Failed(e) => format!("(no reply: {e})"),
        }
    }
}

struct Mismatch {
    script: String,
    line: usize,
    text: String,
    detail: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "MISMATCH {}:{}: {}\n{}",
            self.script, self.line, self.text, self.detail
        )
    }
}

/// One server of the pair, with its open connections.
struct Running {
    name: String,
    server: TestServer,
    conns: HashMap<String, RawConn>,
}

impl Running {
    /// The named connection, opened on first use.
    fn conn(&mut self, name: &str) -> &mut RawConn {
        let addr = self.server.addr();
        self.conns.entry(name.to_string()).or_insert_with(|| {
            let mut c = RawConn::connect(&addr);
            c.set_read_timeout(REPLY_TIMEOUT);
            c
        })
    }

    fn exchange(&mut self, conn: &str, send: &Send) -> Outcome {
        let c = self.conn(conn);
        let written = match send {
            Send::Command(args) => c.try_send(&support::encode_command(args)),
            Send::Raw(bytes) => c.try_send(bytes),
            Send::Nothing => Ok(()),
        };
        // A write can fail when the server already closed the connection: then
        // the connection counts as closed, as a read would have found.
        let outcome = match written.map(|()| c.read_reply_or_eof()) {
            Ok(Ok(Some(r))) => Outcome::Reply(r),
            Ok(Ok(None)) => Outcome::Closed,
            Err(e) if is_closed_error(&e) => Outcome::Closed,
            Ok(Err(e)) if is_closed_error(&e) => Outcome::Closed,
            Ok(Err(e)) | Err(e) => Outcome::Failed(e.to_string()),
        };
        if !matches!(outcome, Outcome::Reply(_)) {
            // The next step on this connection name opens a new one.
            self.conns.remove(conn);
        }
        outcome
    }
}

fn is_closed_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(e.kind(), BrokenPipe | ConnectionReset | ConnectionAborted)
}

/// Runs one script on a fresh pair of servers, given as (name, binary).
fn run_script(
    script: &Script,
    sides: [(&str, &Path); 2],
    extra_args: &[&str],
    show: bool,
) -> (Vec<Mismatch>, String) {
    let mut log = String::new();
    let mut mismatches = Vec::new();
    let args: Vec<&str> = script
        .server_args
        .iter()
        .map(String::as_str)
        .chain(extra_args.iter().copied())
        .collect();
    let mut servers = Vec::new();
    for (name, binary) in sides {
        match TestServer::try_start_binary(binary, &args) {
            Ok(server) => servers.push(Running {
                name: name.to_string(),
                server,
                conns: HashMap::new(),
            }),
            Err(e) => {
                mismatches.push(Mismatch {
                    script: script.name.clone(),
                    line: 0,
                    text: "(server start)".into(),
                    detail: format!("  {name} did not start: {e}"),
                });
                return (mismatches, log);
            }
        }
    }
    if show {
        let _ = writeln!(log, "=== {}", script.name);
    }
    let mut conn = "1".to_string();
    for step in &script.steps {
        let (send, cmp) = match &step.action {
            Action::Sleep(d) => {
                std::thread::sleep(*d);
                continue;
            }
            Action::Conn(name) => {
                conn.clone_from(name);
                continue;
            }
            Action::SendOnly(bytes) => {
                for s in servers.iter_mut() {
                    // A failed write shows up at the next read on this connection.
                    let _ = s.conn(&conn).try_send(bytes);
                }
                continue;
            }
            Action::Exchange { send, cmp } => (send, *cmp),
        };
        let a = servers[0].exchange(&conn, send);
        let b = servers[1].exchange(&conn, send);
        let verdict = compare(cmp, &a, &b);
        if show {
            let _ = writeln!(log, "{:>4}  {}", step.line, step.text);
            let _ = writeln!(log, "      {:<8} {}", servers[0].name, a.show());
            if a != b {
                let _ = writeln!(log, "      {:<8} {}", servers[1].name, b.show());
            }
        }
        if let Err(why) = verdict {
            let at = match (&a, &b) {
                (Outcome::Reply(ra), Outcome::Reply(rb)) => {
                    ra.iter().zip(rb.iter()).take_while(|(x, y)| x == y).count()
                }
                _ => 0,
            };
            let mut detail = format!(
                "  {}: {}\n  {}: {}",
                servers[0].name,
                a.show_from(at),
                servers[1].name,
                b.show_from(at)
            );
            if !why.is_empty() {
                let _ = write!(detail, "\n  ({why})");
            }
            mismatches.push(Mismatch {
                script: script.name.clone(),
                line: step.line,
                text: step.text.clone(),
                detail,
            });
        }
        // A server that died or stopped answering makes every later step noise
        // (and slow): stop the script here.
        for (s, outcome) in servers.iter_mut().zip([&a, &b]) {
            let why = if !s.server.is_running() {
                "exited"
            } else if matches!(outcome, Outcome::Failed(_)) {
                "gave no reply"
            } else {
                continue;
            };
            mismatches.push(Mismatch {
                script: script.name.clone(),
                line: step.line,
                text: step.text.clone(),
                detail: format!(
                    "  {} {why}; rest of the script skipped\n--- stdout ---\n{}\n--- stderr ---\n{}",
                    s.name,
                    tail(&s.server.stdout(), 2000),
                    tail(&s.server.stderr(), 4000)
                ),
            });
            return (mismatches, log);
        }
    }
    (mismatches, log)
}

fn tail(s: &str, n: usize) -> &str {
    let mut start = s.len().saturating_sub(n);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// `Ok` if the outcomes agree under `cmp`; `Err` carries an explanation (may be empty).
fn compare(cmp: Compare, a: &Outcome, b: &Outcome) -> Result<(), String> {
    let (ra, rb) = match (a, b) {
        (Outcome::Failed(_), _) | (_, Outcome::Failed(_)) => return Err(String::new()),
        (Outcome::Reply(ra), Outcome::Reply(rb)) => (ra, rb),
        _ if cmp == Compare::Ignore => return Ok(()),
        _ => return if a == b { Ok(()) } else { Err(String::new()) },
    };
    match cmp {
        Compare::Exact if ra == rb => Ok(()),
        Compare::Exact => Err(String::new()),
        Compare::Ignore => Ok(()),
        Compare::Type if ra[0] == rb[0] => Ok(()),
        Compare::Type => Err("compared: reply type only".into()),
        Compare::Sorted if sorted_form(ra) == sorted_form(rb) => Ok(()),
        Compare::Sorted => Err("compared: with aggregate elements sorted".into()),
        Compare::Range(lo, hi) => {
            let ok = |r: &[u8]| integer_reply(r).is_some_and(|n| lo <= n && n <= hi);
            if ok(ra) && ok(rb) {
                Ok(())
            } else {
                Err(format!("compared: both must be integers in [{lo}, {hi}]"))
            }
        }
    }
}

fn integer_reply(r: &[u8]) -> Option<i64> {
    let body = r.strip_prefix(b":")?.strip_suffix(b"\r\n")?;
    std::str::from_utf8(body).ok()?.parse().ok()
}

/// The reply with the elements of every array, set and push (at any depth) sorted,
/// and the entries of every map sorted by key, so order-free replies compare equal.
fn sorted_form(r: &[u8]) -> Vec<u8> {
    let kind = r[0];
    if !matches!(kind, b'*' | b'~' | b'>' | b'%') {
        return r.to_vec();
    }
    let eol = r.windows(2).position(|w| w == b"\r\n").unwrap();
    let n: i64 = std::str::from_utf8(&r[1..eol]).unwrap().parse().unwrap();
    if n < 0 {
        return r.to_vec();
    }
    let per_entry = if kind == b'%' { 2 } else { 1 };
    let mut pos = eol + 2;
    let mut entries = Vec::new();
    for _ in 0..n {
        let mut entry = Vec::new();
        for _ in 0..per_entry {
            let len = reply_len(&r[pos..]).unwrap().unwrap();
            entry.extend(sorted_form(&r[pos..pos + len]));
            pos += len;
        }
        entries.push(entry);
    }
    entries.sort();
    let mut out = r[..eol + 2].to_vec();
    for e in entries {
        out.extend(e);
    }
    out
}

#[test]
fn split_args_follows_redis_cli_quoting() {
    let args = split_args(r#"SET "a b\x41\n\"" 'it\'s \n' plain"#).unwrap();
    assert_eq!(
        args,
        vec![
            b"SET".to_vec(),
            b"a bA\n\"".to_vec(),
            b"it's \\n".to_vec(),
            b"plain".to_vec()
        ]
    );
    assert_eq!(split_args(r#""""#).unwrap(), vec![Vec::<u8>::new()]);
    assert!(split_args(r#""abc"def"#).is_err());
    assert_eq!(
        split_args(r#"a"b c" d"#).unwrap(),
        vec![b"ab c".to_vec(), b"d".to_vec()]
    );
    assert!(split_args(r#""abc"#).is_err());
    assert!(split_args(r#""\x4""#).is_err());
}

#[test]
fn sorted_form_orders_nested_elements() {
    let a = b"*2\r\n$1\r\n0\r\n*2\r\n$1\r\nb\r\n$1\r\na\r\n";
    let b = b"*2\r\n$1\r\n0\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n";
    assert_eq!(sorted_form(a), sorted_form(b));
    let m1 = b"%2\r\n+x\r\n:1\r\n+a\r\n:2\r\n";
    let m2 = b"%2\r\n+a\r\n:2\r\n+x\r\n:1\r\n";
    assert_eq!(sorted_form(m1), sorted_form(m2));
    assert_ne!(sorted_form(b"*1\r\n:1\r\n"), sorted_form(b"*1\r\n:2\r\n"));
}
