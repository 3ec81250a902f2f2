//! The effect stream: what each write appends, and that conflicting writes from
//! different threads appear in the order they were executed.

use kvik_server::effects::Effect;
use kvik_server::startup::{launch, Running};
use std::sync::mpsc::Receiver;
use std::time::Duration;

mod support;

fn start(threads: usize) -> (Running, u16) {
    let port = support::free_port();
    let config = kvik_config::Config {
        port,
        server_threads: threads,
        ..support::in_process_config()
    };
    (launch(config, None).expect("server starts"), port)
}

fn connect(port: u16) -> redis::Connection {
    redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection()
        .unwrap()
}

fn argv(e: &Effect) -> Vec<String> {
    e.argv
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

fn next(rx: &Receiver<Effect>) -> Vec<String> {
    argv(&rx.recv_timeout(Duration::from_secs(5)).expect("an effect"))
}

#[test]
fn writes_append_their_deterministic_effects() {
    let (running, port) = start(2);
    let rx = running.server.effects.subscribe();
    let mut c = connect(port);
    let cmd = |c: &mut redis::Connection, args: &[&str]| {
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        cmd.query::<redis::Value>(c).unwrap();
    };

    cmd(&mut c, &["SET", "k", "v"]);
    assert_eq!(next(&rx), ["SET", "k", "v"]);

    cmd(&mut c, &["SET", "k", "v", "EX", "100"]);
    let e = next(&rx);
    assert_eq!(&e[..4], ["SET", "k", "v", "PXAT"]);
    let at: u64 = e[4].parse().unwrap();
    let now = kvik_server::hlc::unix_ms();
    assert!(
        at > now + 90_000 && at <= now + 100_000,
        "absolute deadline"
    );

    cmd(&mut c, &["INCR", "n"]);
    assert_eq!(next(&rx), ["INCR", "n"]);

    // Reads and failed writes append nothing: the next effect is the DEL.
    cmd(&mut c, &["GET", "k"]);
    let _ = redis::cmd("INCR").arg("k").query::<redis::Value>(&mut c);
    cmd(&mut c, &["SET", "k", "v2", "NX"]);
    cmd(&mut c, &["DEL", "k", "missing"]);
    assert_eq!(next(&rx), ["DEL", "k", "missing"]);
    running.shutdown();
}

#[test]
fn an_expired_key_is_deleted_by_a_del_effect() {
    let (running, port) = start(1);
    let rx = running.server.effects.subscribe();
    let mut c = connect(port);
    redis::cmd("SET")
        .arg("gone")
        .arg("v")
        .arg("PX")
        .arg(50)
        .query::<()>(&mut c)
        .unwrap();
    assert_eq!(next(&rx)[0], "SET");
    std::thread::sleep(Duration::from_millis(80));
    let v: Option<String> = redis::cmd("GET").arg("gone").query(&mut c).unwrap();
    assert_eq!(v, None);
    assert_eq!(next(&rx), ["DEL", "gone"]);
    running.shutdown();
}

#[test]
fn conflicting_writes_from_two_threads_appear_in_execution_order() {
    let (running, port) = start(4);
    let rx = running.server.effects.subscribe();
    const PER_CLIENT: i64 = 2000;
    let writers: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = connect(port);
                (0..PER_CLIENT)
                    .map(|_| {
                        redis::cmd("INCR")
                            .arg("counter")
                            .query::<i64>(&mut c)
                            .unwrap()
                    })
                    .collect::<Vec<i64>>()
            })
        })
        .collect();
    let mut replies: Vec<i64> = writers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    replies.sort_unstable();
    assert_eq!(replies, (1..=4 * PER_CLIENT).collect::<Vec<_>>());

    // Replaying the effects in stream order reproduces every intermediate value, and
    // their timestamps and offsets only grow.
    let effects: Vec<Effect> = (0..4 * PER_CLIENT)
        .map(|_| rx.recv_timeout(Duration::from_secs(5)).unwrap())
        .collect();
    assert!(effects.iter().all(|e| argv(e) == ["INCR", "counter"]));
    assert!(effects.windows(2).all(|w| w[0].ts < w[1].ts));
    assert!(effects.windows(2).all(|w| w[0].offset < w[1].offset));
    running.shutdown();
}
