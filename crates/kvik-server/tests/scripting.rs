//! Lua scripting over TCP: conversions, error texts, the sandbox, SCRIPT commands,
//! effects, atomicity under many clients on several threads, keys a script did not
//! declare, and BUSY / SCRIPT KILL / SHUTDOWN NOSAVE while a script loops.

mod support;

use kvik_server::effects::{Effect, Targets};
use redis::Value;
use std::sync::mpsc::Receiver;
use std::thread;
use std::time::{Duration, Instant};
use support::in_process::Kvik;
use support::{RawConn, TestServer};

const BUSY: &str =
    "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn sha1(s: &str) -> String {
    use sha1::{Digest, Sha1};
    hex::encode(Sha1::digest(s.as_bytes()))
}

fn eval(
    c: &mut redis::Connection,
    script: &str,
    keys: &[&str],
    args: &[&str],
) -> redis::RedisResult<Value> {
    redis::cmd("EVAL")
        .arg(script)
        .arg(keys.len())
        .arg(keys)
        .arg(args)
        .query(c)
}

#[test]
fn replies_convert_both_ways() {
    let kvik = Kvik::start();
    let mut c = kvik.client();
    redis::cmd("RPUSH")
        .arg("l")
        .arg(&["a", "b"])
        .query::<()>(&mut c)
        .unwrap();
    assert_eq!(
        eval(
            &mut c,
            "return redis.call('LRANGE', KEYS[1], 0, -1)",
            &["l"],
            &[]
        )
        .unwrap(),
        Value::Array(vec![
            Value::BulkString(b"a".to_vec()),
            Value::BulkString(b"b".to_vec())
        ])
    );
    assert_eq!(
        eval(
            &mut c,
            "return redis.call('GET', 'nokey') == false",
            &[],
            &[]
        )
        .unwrap(),
        Value::Int(1)
    );
    assert_eq!(
        eval(&mut c, "return {1, 'x', nil, 3}", &[], &[]).unwrap(),
        Value::Array(vec![Value::Int(1), Value::BulkString(b"x".to_vec())])
    );
    assert_eq!(eval(&mut c, "return 7.9", &[], &[]).unwrap(), Value::Int(7));
    assert_eq!(
        eval(&mut c, "return redis.status_reply('FINE')", &[], &[]).unwrap(),
        Value::SimpleString("FINE".into())
    );
    let mut raw = kvik.conn();
    assert_eq!(
        text(&raw.cmd(&["EVAL", "return {err='MY fault'}", "0"])),
        "-MY fault\r\n"
    );
    assert_eq!(
        text(&raw.cmd(&["EVAL", "return ARGV[2] .. KEYS[1]", "1", "k", "a", "b"])),
        "$2\r\nbk\r\n"
    );
    assert_eq!(text(&raw.cmd(&["HELLO", "3"]))[..1].to_string(), "%");
    assert_eq!(
        text(&raw.cmd(&["EVAL", "return {map={a=1}}", "0"])),
        "%1\r\n$1\r\na\r\n:1\r\n"
    );
    assert_eq!(
        text(&raw.cmd(&["EVAL", "return {double=2.5}", "0"])),
        ",2.5\r\n"
    );
    assert_eq!(
        text(&raw.cmd(&[
            "EVAL",
            "redis.setresp(3); return redis.call('HGETALL', 'nohash')",
            "0"
        ])),
        "%0\r\n"
    );
}

#[test]
fn errors_carry_redis_texts() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    let sha = sha1("return redis.call('nosuch')");
    assert_eq!(
        text(&c.cmd(&["EVAL", "return redis.call('nosuch')", "0"])),
        format!(
            "-ERR Unknown Redis command called from script script: {sha}, on @user_script:1.\r\n"
        )
    );
    let sha = sha1("\nreturn 1 + nil");
    assert_eq!(
        text(&c.cmd(&["EVAL", "\nreturn 1 + nil", "0"])),
        format!("-ERR user_script:2: attempt to perform arithmetic on a nil value script: {sha}, on @user_script:2.\r\n")
    );
    assert_eq!(
        text(&c.cmd(&["EVAL", "return 1 +", "0"])),
        "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'\r\n"
    );
    assert_eq!(
        text(&c.cmd(&["EVAL", "return redis.pcall('incr', 'a', 'b')", "0"])),
        "-ERR Wrong number of args calling Redis command from script\r\n"
    );
    let sha = sha1("return redis.call('set', KEYS[1], 'x')");
    assert_eq!(
        text(&c.cmd(&["EVAL_RO", "return redis.call('set', KEYS[1], 'x')", "1", "k"])),
        format!("-ERR Write commands are not allowed from read-only scripts. script: {sha}, on @user_script:1.\r\n")
    );
    assert_eq!(
        text(&c.cmd(&[
            "EVAL",
            "local ok, e = pcall(redis.call, 'blpop', 'l', 0); return e",
            "0"
        ])),
        "$49\r\nERR This Redis command is not allowed from script\r\n"
    );
    assert_eq!(
        text(&c.cmd(&["EVAL", "return 1", "2", "a"])),
        "-ERR Number of keys can't be greater than number of args\r\n"
    );
}

#[test]
fn nothing_leaks_between_scripts() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    assert!(text(&c.cmd(&["EVAL", "x = 1", "0"])).contains("Attempt to modify a readonly table"));
    assert!(text(&c.cmd(&["EVAL", "rawset(_G, 'x', 1)", "0"]))
        .contains("Attempt to modify a readonly table"));
    assert!(text(&c.cmd(&["EVAL", "loadstring('x = 1')()", "0"]))
        .contains("Attempt to modify a readonly table"));
    assert!(text(&c.cmd(&["EVAL", "string.len = nil", "0"]))
        .contains("Attempt to modify a readonly table"));
    assert!(text(&c.cmd(&["EVAL", "return x", "0"]))
        .contains("Script attempted to access nonexistent global variable 'x'"));
    for lib in [
        "os", "io", "loadfile", "dofile", "require", "debug", "package",
    ] {
        let reply = text(&c.cmd(&["EVAL", &format!("return {lib}"), "0"]));
        assert!(
            reply.contains("nonexistent global variable"),
            "{lib}: {reply}"
        );
    }
    assert_eq!(
        text(&c.cmd(&["EVAL", "return string.len('abc')", "0"])),
        ":3\r\n"
    );
}

#[test]
fn script_cache_commands() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    let body = "return KEYS[1] .. ARGV[1]";
    let sha = sha1(body);
    assert_eq!(
        text(&c.cmd(&["SCRIPT", "LOAD", body])),
        format!("$40\r\n{sha}\r\n")
    );
    // Another connection, likely on another thread, finds it in the shared cache.
    let mut other = kvik.conn();
    assert_eq!(
        text(&other.cmd(&["EVALSHA", &sha, "1", "k", "v"])),
        "$2\r\nkv\r\n"
    );
    assert_eq!(
        text(&other.cmd(&["EVALSHA", &sha.to_uppercase(), "1", "k", "v"])),
        "$2\r\nkv\r\n"
    );
    assert_eq!(
        text(&c.cmd(&[
            "SCRIPT",
            "EXISTS",
            &sha,
            "0000000000000000000000000000000000000000"
        ])),
        "*2\r\n:1\r\n:0\r\n"
    );
    assert_eq!(text(&c.cmd(&["SCRIPT", "FLUSH"])), "+OK\r\n");
    assert_eq!(
        text(&other.cmd(&["EVALSHA", &sha, "1", "k", "v"])),
        "-NOSCRIPT No matching script. Please use EVAL.\r\n"
    );
    assert_eq!(
        text(&c.cmd(&["SCRIPT", "KILL"])),
        "-NOTBUSY No scripts in execution right now.\r\n"
    );
}

/// Applications that build scripts on the fly cache thousands of them: every one stays
/// callable and the Lua state keeps room to work (each cached script once held a
/// reference slot, and past Lua's 8000 the state could no longer convert a reply).
#[test]
fn ten_thousand_cached_scripts_leave_the_state_working() {
    let kvik = Kvik::start_with(|c| c.server_threads = 1);
    let mut c = kvik.conn();
    const SCRIPTS: usize = 10_000;
    let pipeline: Vec<u8> = (0..SCRIPTS)
        .flat_map(|i| support::encode_command(&["EVAL", &format!("return {i}"), "0"]))
        .collect();
    c.send(&pipeline);
    for i in 0..SCRIPTS {
        assert_eq!(text(&c.read_reply()), format!(":{i}\r\n"));
    }
    assert_eq!(
        text(&c.cmd(&["EVAL", "return {big_number='123'}", "0"])),
        "$3\r\n123\r\n"
    );
    assert_eq!(text(&c.cmd(&["EVALSHA", &sha1("return 0"), "0"])), ":0\r\n");
}

/// INFO memory's scripting fields follow the script cache, the libraries and the
/// threads' Lua states.
#[test]
fn info_memory_counts_scripts_functions_and_lua_memory() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    let field = |c: &mut RawConn, name: &str| -> u64 {
        let info = text(&c.cmd(&["INFO", "memory"]));
        let line = info
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .unwrap_or_else(|| panic!("no {name} in {info}"))
            .to_string();
        line.parse().unwrap()
    };
    assert_eq!(field(&mut c, "number_of_cached_scripts"), 0);
    c.cmd(&["SCRIPT", "LOAD", "return 1"]);
    c.cmd(&["EVAL", "return 2", "0"]);
    let library = "#!lua name=lib\nredis.register_function('f', function() return 1 end)";
    c.cmd(&["FUNCTION", "LOAD", library]);
    assert_eq!(field(&mut c, "number_of_cached_scripts"), 2);
    assert_eq!(field(&mut c, "number_of_functions"), 1);
    assert_eq!(field(&mut c, "number_of_libraries"), 1);
    assert!(field(&mut c, "used_memory_lua") > 0);
    let scripts = field(&mut c, "used_memory_scripts");
    assert_eq!(
        scripts,
        field(&mut c, "used_memory_scripts_eval") + field(&mut c, "used_memory_functions")
    );
    assert!(scripts > 0);
    c.cmd(&["SCRIPT", "FLUSH"]);
    c.cmd(&["FUNCTION", "FLUSH"]);
    assert_eq!(field(&mut c, "number_of_cached_scripts"), 0);
    assert_eq!(field(&mut c, "number_of_functions"), 0);
    assert_eq!(field(&mut c, "used_memory_scripts"), 0);
}

#[test]
fn a_script_replicates_as_its_effects() {
    let kvik = Kvik::start();
    let effects = kvik.effects();
    let mut c = kvik.conn();
    c.cmd(&["EVAL", "redis.call('SET', KEYS[1], 'a'); redis.call('GET', KEYS[1]); return redis.call('INCR', 'undeclared')", "1", "k"]);
    let mut seen = Vec::new();
    while let Ok(e) = effects.recv_timeout(Duration::from_millis(500)) {
        seen.push(e.argv.iter().map(|a| text(a)).collect::<Vec<_>>().join(" "));
    }
    // As Redis 7.0: the writes, wrapped in one MULTI ... EXEC.
    assert_eq!(seen, ["MULTI", "SET k a", "INCR undeclared", "EXEC"]);
}

/// Every effect appended so far and not yet seen: its words, and where it goes.
fn targeted(effects: &Receiver<Effect>) -> Vec<(String, Targets)> {
    effects
        .try_iter()
        .map(|e| {
            let words: Vec<String> = e.argv.iter().map(|a| text(a)).collect();
            (words.join(" "), e.targets)
        })
        .collect()
}

/// Expected effects, as (words, targets).
fn expect(effects: &[(&str, Targets)]) -> Vec<(String, Targets)> {
    effects.iter().map(|&(w, t)| (w.to_string(), t)).collect()
}

#[test]
fn set_repl_chooses_where_a_scripts_writes_go() {
    use Targets as T;
    let kvik = Kvik::start();
    let effects = kvik.effects();
    let mut c = kvik.conn();
    let mut run = |script: &str| {
        assert_eq!(text(&c.cmd(&["EVAL", script, "0"])), "$-1\r\n", "{script}");
        targeted(&effects)
    };
    // Everywhere by default; several writes are one MULTI ... EXEC.
    assert_eq!(
        run("redis.call('SET', 'a', 1) redis.call('SET', 'b', 2)"),
        expect(&[
            ("MULTI", T::ALL),
            ("SET a 1", T::ALL),
            ("SET b 2", T::ALL),
            ("EXEC", T::ALL)
        ])
    );
    // REPL_NONE: the writes are recorded nowhere, and no empty MULTI ... EXEC either.
    assert_eq!(
        run("redis.set_repl(redis.REPL_NONE) redis.call('SET', 'a', 1) redis.call('SET', 'b', 2)"),
        expect(&[])
    );
    // Only what is propagated counts for the wrapping: one write is left, alone.
    assert_eq!(
        run("redis.set_repl(redis.REPL_NONE) redis.call('SET', 'a', 1) \
             redis.set_repl(redis.REPL_ALL) redis.call('SET', 'b', 2)"),
        expect(&[("SET b 2", T::ALL)])
    );
    // REPL_AOF and REPL_REPLICA (REPL_SLAVE is the same) narrow each write; MULTI and
    // EXEC go everywhere, as in Redis 7.0.
    assert_eq!(
        run("redis.call('SET', 'a', 1) \
             redis.set_repl(redis.REPL_AOF) redis.call('SET', 'b', 2) \
             redis.set_repl(redis.REPL_REPLICA) redis.call('SET', 'c', 3) \
             redis.set_repl(redis.REPL_SLAVE) redis.call('SET', 'd', 4) \
             redis.set_repl(redis.REPL_NONE) redis.call('SET', 'e', 5)"),
        expect(&[
            ("MULTI", T::ALL),
            ("SET a 1", T::ALL),
            ("SET b 2", T::AOF),
            ("SET c 3", T::REPLICAS),
            ("SET d 4", T::REPLICAS),
            ("EXEC", T::ALL),
        ])
    );
    assert_eq!(
        run("redis.set_repl(redis.REPL_AOF) redis.call('SET', 'a', 1)"),
        expect(&[("SET a 1", T::AOF)])
    );
    // Each script starts with REPL_ALL; Redis reads the flags as a number cut to an
    // integer (what is not a number is 0: REPL_NONE).
    assert_eq!(
        run("redis.call('SET', 'a', 1)"),
        expect(&[("SET a 1", T::ALL)])
    );
    assert_eq!(
        run("redis.set_repl('1') redis.call('SET', 'a', 1) redis.set_repl({}) redis.call('SET', 'b', 2)"),
        expect(&[("SET a 1", T::AOF)])
    );
    // Functions choose the same way.
    let library = "#!lua name=repl\nredis.register_function('f', function() \
                   redis.set_repl(redis.REPL_REPLICA) return redis.call('SET', 'a', 1) end)";
    assert_eq!(
        text(&c.cmd(&["FUNCTION", "LOAD", library])),
        "$4\r\nrepl\r\n"
    );
    assert_eq!(text(&c.cmd(&["FCALL", "f", "0"])), "+OK\r\n");
    assert_eq!(targeted(&effects), expect(&[("SET a 1", T::REPLICAS)]));
}

#[test]
fn set_repl_leaves_expiry_and_the_rest_of_a_transaction_alone() {
    use Targets as T;
    let kvik = Kvik::start();
    let effects = kvik.effects();
    let mut c = kvik.conn();
    // A transaction around a REPL_NONE script propagates its other command alone, as
    // Redis 7.0 does, and that command goes everywhere.
    for line in [
        &["MULTI"][..],
        &[
            "EVAL",
            "redis.set_repl(redis.REPL_NONE) redis.call('SET', 't', 1)",
            "0",
        ],
        &["SET", "z", "1"],
    ] {
        c.cmd(line);
    }
    assert_eq!(text(&c.cmd(&["EXEC"])), "*2\r\n$-1\r\n+OK\r\n");
    assert_eq!(targeted(&effects), expect(&[("SET z 1", T::ALL)]));
    // A key found expired while a REPL_NONE script runs is deleted everywhere: expiry
    // is not the script's write.
    c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    c.cmd(&["SET", "e", "1", "PX", "1"]);
    thread::sleep(Duration::from_millis(20));
    targeted(&effects);
    let script = "redis.set_repl(redis.REPL_NONE) return redis.call('GET', KEYS[1])";
    assert_eq!(text(&c.cmd(&["EVAL", script, "1", "e"])), "$-1\r\n");
    assert_eq!(targeted(&effects), expect(&[("DEL e", T::ALL)]));
}

#[test]
fn undeclared_keys_are_reachable() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    let script = "for i = 1, 50 do redis.call('SET', 'u:' .. i, i) end return redis.call('MGET', 'u:1', 'u:50')";
    assert_eq!(
        text(&c.cmd(&["EVAL", script, "1", "declared"])),
        "*2\r\n$1\r\n1\r\n$2\r\n50\r\n"
    );
    assert_eq!(
        text(&c.cmd(&["EVAL", "return #redis.call('KEYS', 'u:*')", "0"])),
        ":50\r\n"
    );
    assert_eq!(
        text(&c.cmd(&[
            "EVAL",
            "redis.call('SELECT', 3); return redis.call('SET', 'in3', 'x')",
            "0"
        ])),
        "+OK\r\n"
    );
    assert_eq!(
        text(&c.cmd(&["GET", "in3"])),
        "$-1\r\n",
        "the script's SELECT ends with it"
    );
    assert_eq!(text(&c.cmd(&["SELECT", "3"])), "+OK\r\n");
    assert_eq!(text(&c.cmd(&["GET", "in3"])), "$1\r\nx\r\n");
}

/// Many clients on several server threads: every INCR of a script counted, and two
/// keys updated together are never seen apart.
#[test]
fn scripts_are_atomic_under_concurrency() {
    let server = TestServer::start(&["--server-threads", "4"]);
    let mut setup = server.raw();
    let incr = "return redis.call('INCR', KEYS[1])";
    let pair = "local a = redis.call('INCR', KEYS[1]); local b = redis.call('INCR', KEYS[2]); \
                local u = redis.call('INCR', 'undeclared'); return a - b";
    let incr_sha = text(&setup.cmd(&["SCRIPT", "LOAD", incr]))[5..45].to_string();
    const CLIENTS: usize = 12;
    const ROUNDS: usize = 300;
    let addr = server.addr();
    let workers: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (addr, sha) = (addr.clone(), incr_sha.clone());
            thread::spawn(move || {
                let mut c = RawConn::connect(&addr);
                let mut undeclared_ok = 0;
                for _ in 0..ROUNDS {
                    assert!(text(&c.cmd(&["EVALSHA", &sha, "1", "counter"])).starts_with(':'));
                    // Half the clients name the pair in the other order.
                    let (k1, k2) = if i % 2 == 0 {
                        ("p:a", "p:b")
                    } else {
                        ("p:b", "p:a")
                    };
                    let reply = text(&c.cmd(&["EVAL", pair, "2", k1, k2]));
                    if reply.starts_with(':') {
                        assert!(
                            reply == ":0\r\n" || reply == ":1\r\n" || reply == ":-1\r\n",
                            "{reply}"
                        );
                        undeclared_ok += 1;
                    } else {
                        panic!("{reply}");
                    }
                }
                undeclared_ok
            })
        })
        .collect();
    let pairs: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
    let total = CLIENTS * ROUNDS;
    assert_eq!(
        text(&setup.cmd(&["GET", "counter"])),
        format!("${}\r\n{total}\r\n", total.to_string().len())
    );
    assert_eq!(pairs, total);
    for key in ["p:a", "p:b", "undeclared"] {
        assert_eq!(
            text(&setup.cmd(&["GET", key])),
            format!("${}\r\n{total}\r\n", total.to_string().len()),
            "{key}"
        );
    }
}

/// Sends `args` on a fresh connection and returns its reply within `wait`, or None
/// when the connection is served by the thread running the script.
fn reply_within(addr: &str, args: &[&str], wait: Duration) -> Option<String> {
    let mut c = RawConn::connect(addr);
    c.set_read_timeout(wait);
    c.send_cmd(args);
    c.read_reply_or_eof().ok().flatten().map(|r| text(&r))
}

fn wait_for_busy(addr: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if reply_within(addr, &["GET", "x"], Duration::from_millis(500)).as_deref() == Some(BUSY) {
            return;
        }
        thread::sleep(Duration::from_millis(20));
    }
    panic!("never got BUSY");
}

#[test]
fn script_kill_stops_a_busy_read_only_script() {
    let server = TestServer::start(&["--server-threads", "4", "--busy-reply-threshold", "100"]);
    let addr = server.addr();
    let mut looping = server.raw();
    let body = "local n = 0 while true do n = n + 1 end";
    looping.send_cmd(&["EVAL", body, "0"]);
    wait_for_busy(&addr);
    // Commands flagged allow-busy still run.
    assert_eq!(
        reply_within(&addr, &["SCRIPT", "KILL"], Duration::from_secs(5)).as_deref(),
        Some("+OK\r\n")
    );
    looping.set_read_timeout(Duration::from_secs(10));
    assert_eq!(
        text(&looping.read_reply()),
        format!(
            "-ERR Script killed by user with SCRIPT KILL... script: {}, on @user_script:1.\r\n",
            sha1(body)
        )
    );
    assert_eq!(text(&looping.cmd(&["PING"])), "+PONG\r\n");
    assert_eq!(
        reply_within(&addr, &["SCRIPT", "KILL"], Duration::from_secs(5)).as_deref(),
        Some("-NOTBUSY No scripts in execution right now.\r\n")
    );
}

#[test]
fn a_script_that_wrote_is_unkillable_but_shutdown_nosave_works() {
    let mut server = TestServer::start(&["--server-threads", "4", "--busy-reply-threshold", "100"]);
    let addr = server.addr();
    let mut looping = server.raw();
    looping.send_cmd(&["EVAL", "redis.call('SET', 'x', 1) while true do end", "0"]);
    wait_for_busy(&addr);
    // Redis 7.0's text, checked against redis-server 7.0.15 (FUNCTION KILL answers
    // the same for an EVAL that wrote).
    let unkillable = "-UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.\r\n";
    for kill in ["SCRIPT", "FUNCTION"] {
        let reply = reply_within(&addr, &[kill, "KILL"], Duration::from_secs(5));
        assert_eq!(reply.as_deref(), Some(unkillable));
    }
    let _ = reply_within(&addr, &["SHUTDOWN", "NOSAVE"], Duration::from_secs(5));
    server.assert_exits_within(Duration::from_secs(10));
}

#[test]
fn a_push_from_a_script_wakes_a_blocked_client() {
    let kvik = Kvik::start();
    let mut waiter = kvik.conn();
    waiter.send_cmd(&["BLPOP", "queue", "10"]);
    thread::sleep(Duration::from_millis(200));
    let mut c = kvik.conn();
    // `queue` is not declared: the script reaches it on demand.
    assert_eq!(
        text(&c.cmd(&["EVAL", "return redis.call('RPUSH', 'queue', 'job')", "0"])),
        ":1\r\n"
    );
    assert_eq!(
        text(&waiter.read_reply()),
        "*2\r\n$5\r\nqueue\r\n$3\r\njob\r\n"
    );
    // Inside a script a blocking command is refused rather than waiting.
    let reply = text(&c.cmd(&["EVAL", "return redis.pcall('BLPOP', 'queue', 0)", "0"]));
    assert_eq!(
        reply,
        "-ERR This Redis command is not allowed from script\r\n"
    );
}

/// A command that was already waiting for a shard the script holds when the script
/// crossed the threshold answers BUSY instead of waiting for the script to end.
#[test]
fn a_command_waiting_on_a_busy_scripts_key_answers_busy() {
    let server = TestServer::start(&["--server-threads", "4", "--busy-reply-threshold", "500"]);
    let addr = server.addr();
    let mut looping = server.raw();
    looping.send_cmd(&["EVAL", "while true do end", "1", "held"]);
    thread::sleep(Duration::from_millis(100));
    // Before the threshold: this waits for the script's shard.
    let started = Instant::now();
    let reply = loop {
        if let Some(r) = reply_within(&addr, &["GET", "held"], Duration::from_secs(5)) {
            break r;
        }
    };
    assert_eq!(reply, BUSY);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        reply_within(&addr, &["SCRIPT", "KILL"], Duration::from_secs(5)).as_deref(),
        Some("+OK\r\n")
    );
}

#[test]
fn a_table_holding_itself_ends_in_an_error_not_a_crash() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    let reply = c.cmd(&["EVAL", "local t = {} t[1] = t return t", "0"]);
    assert!(text(&reply).ends_with("*1\r\n-ERR reached lua stack limit\r\n"));
    assert_eq!(text(&c.cmd(&["PING"])), "+PONG\r\n");
}

#[test]
fn scripts_run_inside_transactions() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    assert_eq!(text(&c.cmd(&["MULTI"])), "+OK\r\n");
    c.cmd(&["EVAL", "return redis.call('INCR', KEYS[1])", "1", "k"]);
    c.cmd(&["EVAL", "return redis.call('INCRBY', 'undeclared', 5)", "0"]);
    c.cmd(&["EVAL", "return redis.call('DBSIZE')", "0"]);
    assert_eq!(text(&c.cmd(&["EXEC"])), "*3\r\n:1\r\n:5\r\n:2\r\n");
    // A script may run commands that walk the database (they lock every shard).
    assert_eq!(
        text(&c.cmd(&[
            "EVAL",
            "return #redis.call('SCAN', 0, 'COUNT', 1000)[2]",
            "0"
        ])),
        ":2\r\n"
    );
}

/// Issue 16: after SCRIPT FLUSH and 10,000 pipelined runs of one cached script,
/// `used_memory_lua` stays under 100 KB, as in Redis: the collector takes a step every
/// 50 runs, and the states other threads held before the flush are freed.
#[test]
fn used_memory_lua_does_not_grow_with_each_call() {
    let server = TestServer::start(&["--server-threads", "2"]);
    // Both threads get a state, which SCRIPT FLUSH then makes stale.
    let mut others = server.raw();
    let mut c = server.raw();
    let big = "local a = {} for i = 1, 100000 do a[i] = i end return 1";
    assert_eq!(text(&others.cmd(&["EVAL", big, "0"])), ":1\r\n");
    assert_eq!(text(&c.cmd(&["EVAL", big, "0"])), ":1\r\n");
    assert_eq!(text(&c.cmd(&["SCRIPT", "FLUSH"])), "+OK\r\n");
    let script = "return redis.call('incr',KEYS[1])";
    let one = format!(
        "*4\r\n$4\r\nEVAL\r\n${}\r\n{script}\r\n$1\r\n1\r\n$1\r\nx\r\n",
        script.len()
    );
    c.send(one.repeat(10_000).as_bytes());
    for _ in 0..10_000 {
        c.read_reply();
    }
    assert_eq!(text(&c.cmd(&["GET", "x"])), "$5\r\n10000\r\n");
    thread::sleep(Duration::from_millis(300));
    let info = text(&c.cmd(&["INFO", "memory"]));
    let used: usize = info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory_lua:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory_lua in INFO memory");
    assert!(used < 100 * 1024, "used_memory_lua: {used}");
}

/// Issue 16: `unpack` of a 7,999-element table into redis.call works (the call's
/// arguments no longer take the room its reply needs); 8,000 is Lua's own limit.
#[test]
fn redis_call_takes_nearly_8000_unpacked_arguments() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    let push = |n: usize| {
        format!(
            "local a = {{}} for i = 1, {n} do a[i] = i end return redis.call('lpush', 'l', unpack(a))"
        )
    };
    assert_eq!(text(&c.cmd(&["EVAL", &push(7999), "0"])), ":7999\r\n");
    let past = text(&c.cmd(&["EVAL", &push(8000), "0"]));
    assert!(
        past.starts_with("-ERR user_script:1: too many results to unpack script: "),
        "{past}"
    );
    assert_eq!(text(&c.cmd(&["LLEN", "l"])), ":7999\r\n");
}

/// Issue 16: commands that may replicate count as writes in read-only scripts.
#[test]
fn read_only_scripts_may_not_publish() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    let refused = "-ERR Write commands are not allowed from read-only scripts.";
    for cmd in ["publish", "spublish"] {
        let script = format!("return redis.call('{cmd}', 'c', 'm')");
        let reply = text(&c.cmd(&["EVAL_RO", &script, "0"]));
        assert!(reply.starts_with(refused), "{reply}");
        assert_eq!(text(&c.cmd(&["EVAL", &script, "0"])), ":0\r\n");
    }
    let reply = text(&c.cmd(&["EVAL_RO", "return redis.call('pfcount', 'h')", "0"]));
    assert!(reply.starts_with(refused), "{reply}");
}

/// Issue 16: what getmetatable shows of the globals is Redis's read-only table.
#[test]
fn the_globals_metatable_is_readonly_and_holds_only_index() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    let keys = "local t = {} for k in pairs(getmetatable(_G)) do t[#t + 1] = k end return t";
    assert_eq!(
        text(&c.cmd(&["EVAL", keys, "0"])),
        "*1\r\n$7\r\n__index\r\n"
    );
    let write = text(&c.cmd(&["EVAL", "getmetatable(_G).x = 1", "0"]));
    assert!(
        write.starts_with("-ERR user_script:1: Attempt to modify a readonly table script:"),
        "{write}"
    );
    let alias = text(&c.cmd(&["EVAL", "local g = _G g.x = 1", "0"]));
    assert!(
        alias.starts_with("-ERR user_script:1: Attempt to modify a readonly table script:"),
        "{alias}"
    );
}

/// Issue 16 (Redis's "CLUSTER RESET can not be invoke from within a script"): a
/// noscript command is refused with Redis's text; CLUSTER's other subcommands answer
/// that cluster support is disabled.
#[test]
fn scripts_may_not_call_cluster_reset() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    let script = "return redis.pcall('cluster', 'reset', 'hard')";
    assert_eq!(
        text(&c.cmd(&["EVAL", script, "0"])),
        "-ERR This Redis command is not allowed from script\r\n"
    );
    let script = "return redis.pcall('cluster', 'info')";
    assert_eq!(
        text(&c.cmd(&["EVAL", script, "0"])),
        "-ERR This instance has cluster support disabled\r\n"
    );
}

/// Issue 16: library tables show no metatable, as Redis's read-only tables have none;
/// a table's own `__metatable` is shown as Lua shows it.
#[test]
fn library_tables_show_no_metatable() {
    let kvik = Kvik::start();
    let mut c = kvik.conn();
    for table in ["redis", "string", "cjson", "math"] {
        let script = format!("return type(getmetatable({table}))");
        assert_eq!(text(&c.cmd(&["EVAL", &script, "0"])), "$3\r\nnil\r\n");
    }
    let own = "return getmetatable(setmetatable({}, {__metatable = 'mine'}))";
    assert_eq!(text(&c.cmd(&["EVAL", own, "0"])), "$4\r\nmine\r\n");
    let string_index = "return getmetatable('').__index == string";
    assert_eq!(text(&c.cmd(&["EVAL", string_index, "0"])), ":1\r\n");
}
