//! Transactions over TCP against a multithreaded server: MULTI/EXEC/DISCARD error
//! cases, WATCH broken by other threads' writes, by expiry and by whole-database
//! commands, isolation and atomicity under concurrent clients, and the effects an
//! EXEC appends.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;
use support::in_process::{drain, q, Kvik};

/// Four worker threads: consecutive connections land on different ones.
fn start() -> Kvik {
    Kvik::start_with(|c| c.server_threads = 4)
}

#[test]
fn control_errors_use_redis_texts() {
    let kvik = start();
    let mut c = kvik.conn();
    assert_eq!(q(&mut c, "EXEC"), "-ERR EXEC without MULTI\r\n");
    assert_eq!(q(&mut c, "DISCARD"), "-ERR DISCARD without MULTI\r\n");
    assert_eq!(q(&mut c, "MULTI"), "+OK\r\n");
    assert_eq!(q(&mut c, "MULTI"), "-ERR MULTI calls can not be nested\r\n");
    assert_eq!(
        q(&mut c, "WATCH k"),
        "-ERR WATCH inside MULTI is not allowed\r\n"
    );
    assert_eq!(q(&mut c, "SET k v"), "+QUEUED\r\n");
    assert_eq!(q(&mut c, "EXEC"), "*1\r\n+OK\r\n");

    for refused in ["NOSUCH a", "GET", "SHUTDOWN"] {
        assert_eq!(q(&mut c, "MULTI"), "+OK\r\n");
        assert!(q(&mut c, refused).starts_with("-ERR"), "{refused}");
        assert_eq!(q(&mut c, "SET k other"), "+QUEUED\r\n");
        assert_eq!(
            q(&mut c, "EXEC"),
            "-EXECABORT Transaction discarded because of previous errors.\r\n"
        );
    }
    assert_eq!(
        q(&mut c, "GET k"),
        "$1\r\nv\r\n",
        "nothing of the aborted ones ran"
    );
    assert_eq!(q(&mut c, "MULTI"), "+OK\r\n");
    assert_eq!(
        q(&mut c, "SHUTDOWN"),
        "-ERR Command not allowed inside a transaction\r\n"
    );
    assert_eq!(q(&mut c, "DISCARD"), "+OK\r\n");
}

#[test]
fn noauth_before_auth_and_after_reset() {
    let kvik = Kvik::start_with(|c| c.requirepass = Some("secret".into()));
    let mut c = kvik.conn();
    assert_eq!(q(&mut c, "MULTI"), "-NOAUTH Authentication required.\r\n");
    assert_eq!(q(&mut c, "AUTH secret"), "+OK\r\n");
    assert_eq!(q(&mut c, "MULTI"), "+OK\r\n");
    assert_eq!(q(&mut c, "SET k v"), "+QUEUED\r\n");
    assert_eq!(q(&mut c, "RESET"), "+RESET\r\n");
    assert_eq!(q(&mut c, "MULTI"), "-NOAUTH Authentication required.\r\n");
    // EXEC refused says so as the end of a transaction, as Redis's does.
    assert_eq!(
        q(&mut c, "EXEC"),
        "-EXECABORT Transaction discarded because of: NOAUTH Authentication required.\r\n"
    );
}

#[test]
fn runtime_errors_are_replies_inside_the_exec_array() {
    let kvik = start();
    let mut c = kvik.conn();
    q(&mut c, "SET s text");
    q(&mut c, "MULTI");
    q(&mut c, "INCR s");
    q(&mut c, "APPEND s !");
    assert_eq!(
        q(&mut c, "EXEC"),
        "*2\r\n-ERR value is not an integer or out of range\r\n:5\r\n"
    );
}

#[test]
fn blocking_commands_answer_at_once_and_waiters_are_served_after_exec() {
    let kvik = start();
    let mut c = kvik.conn();
    q(&mut c, "MULTI");
    q(&mut c, "BLPOP nothing 0");
    assert_eq!(q(&mut c, "EXEC"), "*1\r\n*-1\r\n");

    let mut waiter = kvik.conn();
    waiter.send_cmd(&["BLPOP", "queue", "0"]);
    thread::sleep(Duration::from_millis(100));
    q(&mut c, "MULTI");
    q(&mut c, "RPUSH queue a b");
    q(&mut c, "LLEN queue");
    assert_eq!(q(&mut c, "EXEC"), "*2\r\n:2\r\n:2\r\n", "served after EXEC");
    assert_eq!(
        String::from_utf8_lossy(&waiter.read_reply()),
        "*2\r\n$5\r\nqueue\r\n$1\r\na\r\n"
    );
}

#[test]
fn watch_is_broken_by_another_threads_write() {
    let kvik = start();
    let (mut a, mut b) = (kvik.conn(), kvik.conn());
    q(&mut a, "SET k 1");
    assert_eq!(q(&mut a, "WATCH k"), "+OK\r\n");
    q(&mut b, "INCR k");
    q(&mut a, "MULTI");
    assert_eq!(q(&mut a, "SET k mine"), "+QUEUED\r\n");
    assert_eq!(q(&mut a, "EXEC"), "*-1\r\n");
    assert_eq!(q(&mut a, "GET k"), "$1\r\n2\r\n");

    // Unwatched after EXEC: the next transaction runs.
    q(&mut b, "INCR k");
    q(&mut a, "MULTI");
    q(&mut a, "SET k mine");
    assert_eq!(q(&mut a, "EXEC"), "*1\r\n+OK\r\n");

    // A key absent when watched, created and deleted meanwhile.
    q(&mut a, "WATCH ghost");
    q(&mut b, "SET ghost 1");
    q(&mut b, "DEL ghost");
    q(&mut a, "MULTI");
    q(&mut a, "PING");
    assert_eq!(q(&mut a, "EXEC"), "*-1\r\n");

    // In RESP3 the aborted EXEC is a null.
    q(&mut a, "HELLO 3");
    q(&mut a, "WATCH k");
    q(&mut b, "DEL k");
    q(&mut a, "MULTI");
    q(&mut a, "PING");
    assert_eq!(q(&mut a, "EXEC"), "_\r\n");
}

#[test]
fn watch_is_broken_by_expiry() {
    let kvik = start();
    let mut c = kvik.conn();
    // Expired but untouched at EXEC.
    q(&mut c, "SET e 1 PX 50");
    q(&mut c, "WATCH e");
    thread::sleep(Duration::from_millis(120));
    q(&mut c, "MULTI");
    q(&mut c, "PING");
    assert_eq!(q(&mut c, "EXEC"), "*-1\r\n");

    // Deleted by the active expiry cycle before EXEC.
    q(&mut c, "SET e 1 PX 50");
    q(&mut c, "WATCH e");
    let server = kvik.server();
    let gone = (0..100).any(|_| {
        thread::sleep(Duration::from_millis(50));
        server.keyspace.db_len(0) == 0
    });
    assert!(gone, "the expiry cycle removed the key");
    q(&mut c, "MULTI");
    q(&mut c, "PING");
    assert_eq!(q(&mut c, "EXEC"), "*-1\r\n");

    // Already expired when watched: its deletion is no change.
    q(&mut c, "SET e 1 PX 20");
    thread::sleep(Duration::from_millis(60));
    q(&mut c, "WATCH e");
    q(&mut c, "MULTI");
    q(&mut c, "PING");
    assert_eq!(q(&mut c, "EXEC"), "*1\r\n+PONG\r\n");
}

#[test]
fn watch_and_whole_database_commands() {
    let kvik = start();
    let (mut a, mut b) = (kvik.conn(), kvik.conn());
    let exec_after =
        |a: &mut support::RawConn, b: &mut support::RawConn, watch: &str, cmd: &str| {
            q(a, &format!("WATCH {watch}"));
            q(b, cmd);
            q(a, "MULTI");
            q(a, "PING");
            q(a, "EXEC")
        };
    q(&mut a, "SET here 1");
    assert_eq!(exec_after(&mut a, &mut b, "here", "FLUSHALL"), "*-1\r\n");
    assert_eq!(
        exec_after(&mut a, &mut b, "absent", "FLUSHDB"),
        "*1\r\n+PONG\r\n"
    );
    q(&mut a, "SET here 1");
    assert_eq!(exec_after(&mut a, &mut b, "here", "SWAPDB 0 1"), "*-1\r\n");
    // `here` is in db 1 now: a watch in db 0 sees it come back with the next swap.
    assert_eq!(exec_after(&mut a, &mut b, "here", "SWAPDB 0 1"), "*-1\r\n");
    assert_eq!(
        exec_after(&mut a, &mut b, "nowhere", "SWAPDB 0 1"),
        "*1\r\n+PONG\r\n"
    );
}

#[test]
fn reset_and_disconnect_forget_the_transaction_and_the_watches() {
    let kvik = start();
    let server = kvik.server();
    let mut c = kvik.conn();
    q(&mut c, "WATCH a b");
    assert!(!server.keyspace.observers.is_idle());
    q(&mut c, "MULTI");
    q(&mut c, "SET a 1");
    assert_eq!(q(&mut c, "RESET"), "+RESET\r\n");
    assert!(server.keyspace.observers.is_idle());
    assert_eq!(q(&mut c, "EXEC"), "-ERR EXEC without MULTI\r\n");
    q(&mut c, "WATCH a");
    drop(c);
    let forgotten = (0..100).any(|_| {
        thread::sleep(Duration::from_millis(20));
        server.keyspace.observers.is_idle()
    });
    assert!(forgotten, "a closed connection's watches are dropped");
}

#[test]
fn client_list_shows_the_transaction() {
    let kvik = start();
    let mut c = kvik.conn();
    let line = |c: &mut support::RawConn| q(c, "CLIENT INFO");
    assert!(line(&mut c).contains(" flags=N ") && line(&mut c).contains(" multi=-1 "));
    q(&mut c, "MULTI");
    q(&mut c, "SET a 1");
    q(&mut c, "GET a");
    let mut other = kvik.conn();
    let listed = q(&mut other, "CLIENT LIST");
    assert!(
        listed.contains(" flags=x ") && listed.contains(" multi=2 "),
        "{listed}"
    );
    q(&mut c, "DISCARD");
    let listed = q(&mut other, "CLIENT LIST");
    assert!(!listed.contains(" flags=x "), "{listed}");
}

#[test]
fn readers_never_see_half_a_transaction() {
    let kvik = start();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|_| {
            let mut c = kvik.client();
            let stop = stop.clone();
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let (a, b): (i64, i64) = redis::pipe()
                        .atomic()
                        .incr("a", 1)
                        .incr("b", 1)
                        .query(&mut c)
                        .unwrap();
                    assert_eq!(a, b);
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let mut c = kvik.client();
            thread::spawn(move || {
                for _ in 0..2000 {
                    let (a, b): (Option<i64>, Option<i64>) =
                        redis::cmd("MGET").arg("a").arg("b").query(&mut c).unwrap();
                    assert_eq!(a, b, "a reader saw half a transaction");
                }
            })
        })
        .collect();
    for r in readers {
        r.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
}

#[test]
fn increments_inside_transactions_add_up_exactly() {
    const CLIENTS: i64 = 8;
    const ROUNDS: i64 = 300;
    let kvik = start();
    let workers: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let mut c = kvik.client();
            thread::spawn(move || {
                for _ in 0..ROUNDS {
                    let _: (i64, i64, i64) = redis::pipe()
                        .atomic()
                        .incr("counter", 1)
                        .incr("counter", 2)
                        .incr("other", 1)
                        .query(&mut c)
                        .unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let mut c = kvik.client();
    let (counter, other): (i64, i64) = redis::cmd("MGET")
        .arg("counter")
        .arg("other")
        .query(&mut c)
        .unwrap();
    assert_eq!(counter, CLIENTS * ROUNDS * 3);
    assert_eq!(other, CLIENTS * ROUNDS);
}

#[test]
fn exec_appends_its_effects_as_one_multi_exec_group() {
    let kvik = start();
    let rx = kvik.effects();
    let mut c = kvik.conn();
    let lines = [
        "MULTI", "SET a 1", "INCR b", "GET a", "SELECT 2", "DEL a", "SET x 1", "EXEC",
    ];
    for line in lines {
        q(&mut c, line);
    }
    let effects: Vec<(usize, String)> = rx
        .try_iter()
        .map(|e| {
            (
                e.db,
                String::from_utf8_lossy(&e.argv.join(&b' ')).into_owned(),
            )
        })
        .collect();
    let expected = [
        (0, "MULTI"),
        (0, "SET a 1"),
        (0, "INCR b"),
        (2, "SET x 1"),
        (2, "EXEC"),
    ];
    let expected: Vec<(usize, String)> = expected.iter().map(|&(d, s)| (d, s.into())).collect();
    assert_eq!(effects, expected, "DEL of a missing key changes nothing");

    // A transaction with one write appends it alone; a read-only one, nothing.
    q(&mut c, "SELECT 0");
    for line in [
        "MULTI", "GET a", "SET c 3", "EXEC", "MULTI", "GET a", "EXEC",
    ] {
        q(&mut c, line);
    }
    assert_eq!(drain(&rx), ["SET c 3"]);
}

#[test]
fn commands_that_need_other_databases_run_inside_exec() {
    // DEBUG is refused before it is queued unless enable-debug-command allows it.
    let kvik = Kvik::start_with(|c| {
        c.server_threads = 4;
        c.enable_debug_command = "yes".into();
    });
    let mut c = kvik.conn();
    q(&mut c, "SET k v");
    for line in [
        "MULTI",
        "MOVE k 3",
        "COPY k k DB 4",
        "SWAPDB 5 6",
        "DBSIZE",
        "INFO keyspace",
        "SCAN 0",
        "DEBUG DIGEST-VALUE k",
    ] {
        assert!(q(&mut c, line).starts_with('+'), "{line}");
    }
    let reply = q(&mut c, "EXEC");
    assert!(
        reply.starts_with("*7\r\n:1\r\n:0\r\n+OK\r\n:0\r\n"),
        "{reply}"
    );
    q(&mut c, "SELECT 3");
    assert_eq!(q(&mut c, "GET k"), "$1\r\nv\r\n");
}
