//! SORT and SORT_RO over real connections: every combination of options against a
//! real redis-server, the effects SORT appends, keyspace statistics and the change
//! counter, the database lock under concurrent writers, and big inputs. Single
//! replies and error texts are also pinned by the differential scripts
//! (`tests/differential/sort_*.redis`).

mod in_process;
mod support;

use in_process::InProcess;
use kvik_server::effects::Effect;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::RawConn;

fn start() -> InProcess {
    InProcess::start(|c| c.server_threads = 2)
}

/// Sends a command given as words separated by single spaces.
fn q(c: &mut RawConn, line: &str) -> Vec<u8> {
    let words: Vec<&str> = line.split(' ').collect();
    c.cmd(&words)
}

fn text(reply: &[u8]) -> String {
    String::from_utf8_lossy(reply).into_owned()
}

/// Every effect appended so far and not yet seen, as words joined by spaces.
fn drain(rx: &Receiver<Effect>) -> Vec<String> {
    rx.try_iter()
        .map(|e| {
            let words: Vec<String> = e.argv.iter().map(|a| text(a)).collect();
            words.join(" ")
        })
        .collect()
}

/// A flat reply: an error, an integer, or an array of bulk strings and nils.
#[derive(Debug, PartialEq)]
enum Reply {
    Error(String),
    Int(i64),
    Array(Vec<Option<Vec<u8>>>),
}

fn parse(reply: &[u8]) -> Reply {
    let line_end =
        |from: usize| from + reply[from..].windows(2).position(|w| w == b"\r\n").unwrap();
    let first = line_end(0);
    let head = text(&reply[1..first]);
    match reply[0] {
        b'-' => Reply::Error(head),
        b':' => Reply::Int(head.parse().unwrap()),
        b'*' => {
            let mut items = Vec::new();
            let mut at = first + 2;
            for _ in 0..head.parse::<usize>().unwrap() {
                let end = line_end(at);
                let len: i64 = text(&reply[at + 1..end]).parse().unwrap();
                at = end + 2;
                if len < 0 {
                    items.push(None);
                } else {
                    items.push(Some(reply[at..at + len as usize].to_vec()));
                    at += len as usize + 2;
                }
            }
            Reply::Array(items)
        }
        other => panic!("unexpected reply type {}", other as char),
    }
}

fn info_field(c: &mut RawConn, section: &str, name: &str) -> u64 {
    let reply = text(&q(c, &format!("INFO {section}")));
    reply
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("{name} listed"))
        .parse()
        .expect("a number")
}

/// The same data on both servers: lists with duplicates, ties and missing weights;
/// sets and a sorted set whose members all have distinct weights, so that the order
/// they are read in (which Redis leaves to its hash tables) never shows.
const DATA: &[&str] = &[
    "RPUSH ln 5 1 4 2 3 10 -1 2 0",
    "RPUSH la pear apple fig apple kiwi Banana",
    "SADD si 5 3 9 1 12",
    "SADD sh x y z w 7",
    "ZADD z 3 m1 1 m2 2 m3 5 m4 4 m5",
    "MSET w_5 50 w_1 10 w_4 40 w_2 20 w_3 20 w_9 90 w_12 120",
    "MSET w_pear 3 w_apple 1 w_fig 2 w_kiwi 2",
    "MSET w_x 7 w_y 5 w_z 6 w_w 8 w_7 1 w_m1 12 w_m2 11 w_m3 10 w_m4 14 w_m5 13",
    "MSET v_5 five v_1 one v_x ex v_m2 em2 v_apple red v_12 twelve",
    "HSET h_5 f 5 g G5",
    "HSET h_3 f 3",
    "HSET h_9 f 9 g G9",
    "HSET h_1 f 1",
    "HSET h_12 f 12",
    "HSET h_2 f 2 g G2",
    "HSET h_x f b",
    "HSET h_y f a g Gy",
    "HSET h_z f d",
    "HSET h_w f c",
    "HSET h_7 f e",
    "HSET h_m1 f 1",
    "HSET h_m2 f 0",
    "HSET h_m3 f 5",
    "HSET h_m4 f 4",
    "HSET h_m5 f 3 g Gm5",
    "HSET h_pear f z",
    "HSET h_fig f y",
];

#[test]
fn every_option_combination_matches_redis() {
    if support::redis_server_or_skip().is_none() {
        return;
    }
    let redis = support::RealRedis::start(&[]);
    let kvik = start();
    let mut servers = [kvik.raw(), redis.raw()];
    for line in DATA {
        for c in servers.iter_mut() {
            q(c, line);
        }
    }
    let sources = ["ln", "la", "si", "sh", "z", "missing"];
    let bys = ["", "BY w_*", "BY h_*->f", "BY nosort"];
    let limits = [
        "",
        "LIMIT 0 3",
        "LIMIT 2 -1",
        "LIMIT -2 2",
        "LIMIT 4 10",
        "LIMIT 20 1",
    ];
    let gets = ["", "GET #", "GET v_* GET #", "GET h_*->g GET nostar"];
    let mut compared = 0;
    for source in sources {
        for by in bys {
            for limit in limits {
                for get in gets {
                    for flags in 0..8 {
                        let (desc, alpha, store) = (flags & 1 != 0, flags & 2 != 0, flags & 4 != 0);
                        let mut options = vec![by, limit, get];
                        options.push(if desc { "DESC" } else { "ASC" });
                        if alpha {
                            options.push("ALPHA");
                        }
                        // Options in any order: rotate them by the combination.
                        let turn = compared % options.len();
                        options.rotate_left(turn);
                        let options: Vec<&str> =
                            options.into_iter().filter(|o| !o.is_empty()).collect();
                        let mut command = format!("SORT {source} {}", options.join(" "));
                        if store {
                            command.push_str(" STORE dst");
                        }
                        let replies: Vec<Reply> =
                            servers.iter_mut().map(|c| parse(&q(c, &command))).collect();
                        let unordered = source == "sh" && by == "BY nosort" && !store;
                        let unstable = alpha && by.contains('*') && !limit.is_empty();
                        compare(
                            &command,
                            &replies,
                            get_count(get),
                            unordered || unstable,
                            limit.is_empty(),
                        );
                        if store {
                            let stored: Vec<Reply> = servers
                                .iter_mut()
                                .map(|c| parse(&q(c, "LRANGE dst 0 -1")))
                                .collect();
                            compare(
                                &command,
                                &stored,
                                get_count(get),
                                unstable,
                                limit.is_empty(),
                            );
                        } else {
                            let read_only = command.replacen("SORT", "SORT_RO", 1);
                            let again: Vec<Reply> = servers
                                .iter_mut()
                                .map(|c| parse(&q(c, &read_only)))
                                .collect();
                            compare(
                                &read_only,
                                &again,
                                get_count(get),
                                unordered || unstable,
                                limit.is_empty(),
                            );
                        }
                        compared += 1;
                    }
                }
            }
        }
    }
    assert_eq!(compared, 6 * 4 * 6 * 4 * 8);
}

fn get_count(gets: &str) -> usize {
    gets.matches("GET").count().max(1)
}

/// Compare kvik's reply (first) with Redis's. Where Redis leaves the order open (a
/// hash table's order, its partial sort's order among ties) compare the elements,
/// each with its GET values, as a multiset; when a LIMIT picks some of them, only
/// how many.
fn compare(command: &str, replies: &[Reply], per_element: usize, order_open: bool, whole: bool) {
    let (kvik, redis) = (&replies[0], &replies[1]);
    match (kvik, redis) {
        (Reply::Array(k), Reply::Array(r)) if order_open => {
            assert_eq!(k.len(), r.len(), "{command}");
            if whole {
                let groups = |items: &[Option<Vec<u8>>]| {
                    let mut g: Vec<Vec<Option<Vec<u8>>>> =
                        items.chunks(per_element).map(|c| c.to_vec()).collect();
                    g.sort();
                    g
                };
                assert_eq!(groups(k), groups(r), "{command}");
            }
        }
        _ => assert_eq!(kvik, redis, "{command}"),
    }
}

#[test]
fn effects_are_redis_effects() {
    let kvik = start();
    let mut c = kvik.raw();
    let rx = kvik.server().effects.subscribe();
    q(&mut c, "RPUSH l 3 1 2");
    q(&mut c, "SET w_1 9 PX 1000000");
    drain(&rx);

    // Reads append nothing.
    assert_eq!(
        text(&q(&mut c, "SORT l")),
        "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n"
    );
    q(&mut c, "SORT l BY w_* GET w_* DESC LIMIT 0 2");
    q(&mut c, "SORT_RO l ALPHA");
    assert_eq!(drain(&rx), Vec::<String>::new());

    // STORE is propagated as sent, with the options as they came.
    assert_eq!(text(&q(&mut c, "sort l by w_* get # STORE dst")), ":3\r\n");
    assert_eq!(drain(&rx), ["sort l by w_* get # STORE dst"]);

    // An empty result deletes the destination: propagated when there was one.
    assert_eq!(text(&q(&mut c, "SORT l LIMIT 9 9 STORE dst")), ":0\r\n");
    assert_eq!(drain(&rx), ["SORT l LIMIT 9 9 STORE dst"]);
    assert_eq!(text(&q(&mut c, "SORT l LIMIT 9 9 STORE dst")), ":0\r\n");
    assert_eq!(text(&q(&mut c, "SORT missing STORE dst")), ":0\r\n");
    assert_eq!(drain(&rx), Vec::<String>::new());

    // Errors store and append nothing.
    q(&mut c, "RPUSH bad x");
    drain(&rx);
    assert!(text(&q(&mut c, "SORT bad STORE dst")).starts_with("-ERR One or more scores"));
    assert!(text(&q(&mut c, "SORT l STORE")).starts_with("-ERR syntax"));
    assert_eq!(drain(&rx), Vec::<String>::new());

    // A weight key found expired while sorting is deleted, and the deletion is all
    // a read appends.
    q(&mut c, "SET w_2 5 PX 1");
    drain(&rx);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(
        text(&q(&mut c, "SORT l BY w_*")),
        "*3\r\n$1\r\n2\r\n$1\r\n3\r\n$1\r\n1\r\n"
    );
    assert_eq!(drain(&rx), ["DEL w_2"]);

    // The stored list replaces any type and any TTL.
    q(&mut c, "SET dst x EX 100");
    drain(&rx);
    assert_eq!(text(&q(&mut c, "SORT l DESC STORE dst")), ":3\r\n");
    assert_eq!(drain(&rx), ["SORT l DESC STORE dst"]);
    assert_eq!(text(&q(&mut c, "TTL dst")), ":-1\r\n");
    assert_eq!(
        text(&q(&mut c, "LRANGE dst 0 -1")),
        "*3\r\n$1\r\n3\r\n$1\r\n2\r\n$1\r\n1\r\n"
    );
}

#[test]
fn statistics_count_what_redis_counts() {
    let kvik = start();
    let mut c = kvik.raw();
    for line in ["RPUSH l a b c", "SET w_a 1", "SET v_b x", "HSET h_a f 1"] {
        q(&mut c, line);
    }
    let counted = |c: &mut RawConn, line: &str| {
        q(c, "CONFIG RESETSTAT");
        q(c, line);
        (
            info_field(c, "stats", "keyspace_hits"),
            info_field(c, "stats", "keyspace_misses"),
        )
    };
    // (hits, misses) as redis-server 7.0.15 counts them: the sorted key, then every
    // key a BY or GET pattern names.
    assert_eq!(counted(&mut c, "SORT l BY w_* GET v_* GET #"), (3, 4));
    assert_eq!(
        counted(&mut c, "SORT l BY nosort GET h_*->f GET nostar STORE d"),
        (2, 2)
    );
    assert_eq!(counted(&mut c, "SORT missing BY w_*"), (0, 1));
    assert_eq!(counted(&mut c, "SORT w_a"), (1, 0));
    assert_eq!(counted(&mut c, "SORT_RO l ALPHA GET w_*"), (2, 2));

    // One change per stored element; one for deleting the destination.
    let changes = |c: &mut RawConn| info_field(c, "persistence", "rdb_changes_since_last_save");
    let before = changes(&mut c);
    q(&mut c, "SORT l ALPHA STORE d2");
    assert_eq!(changes(&mut c) - before, 3);
    q(&mut c, "SORT l ALPHA GET # GET # STORE d2");
    assert_eq!(changes(&mut c) - before, 9);
    q(&mut c, "SORT missing STORE d2");
    assert_eq!(changes(&mut c) - before, 10);
    q(&mut c, "SORT missing STORE d2");
    assert_eq!(changes(&mut c) - before, 10);
}

/// BY and GET read keys the command cannot name in advance; locking the database
/// makes the whole sort see one moment of it. Writers keep every weight equal to
/// every value (each MSET is atomic); a sort that read some keys before a write and
/// some after would see two different numbers.
#[test]
fn a_sort_sees_one_moment_of_the_database() {
    let kvik = start();
    let mut c = kvik.raw();
    let members: Vec<String> = (0..200).map(|i| format!("m{i}")).collect();
    q(&mut c, &format!("SADD s {}", members.join(" ")));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let stop = stop.clone();
            let mut c = kvik.raw();
            let members = members.clone();
            std::thread::spawn(move || {
                let mut round = w;
                while !stop.load(Ordering::Relaxed) {
                    round += 2;
                    let mut args = vec!["MSET".to_string()];
                    for m in &members {
                        args.extend([format!("w_{m}"), round.to_string()]);
                        args.extend([format!("v_{m}"), round.to_string()]);
                    }
                    c.cmd(&args);
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_millis(1500);
    let mut sorts = 0;
    while Instant::now() < deadline {
        let reply = parse(&q(&mut c, "SORT s BY w_* GET w_* GET v_*"));
        let Reply::Array(items) = reply else {
            panic!("{reply:?}")
        };
        let values: std::collections::BTreeSet<_> = items.into_iter().collect();
        assert!(values.len() <= 1, "a torn read: {values:?}");
        sorts += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    assert!(sorts > 10);
}

#[test]
fn big_inputs() {
    let kvik = start();
    let mut c = kvik.raw();
    let n: i64 = 200_000;
    // A list in a scrambled order: i * 7919 mod n visits every number once.
    let scrambled: Vec<String> = (0..n).map(|i| (i * 7919 % n).to_string()).collect();
    for chunk in scrambled.chunks(10_000) {
        let mut args = vec!["RPUSH", "big"];
        args.extend(chunk.iter().map(String::as_str));
        c.cmd(&args);
    }
    let started = Instant::now();
    let Reply::Array(sorted) = parse(&q(&mut c, "SORT big")) else {
        panic!("not an array")
    };
    assert_eq!(sorted.len(), n as usize);
    for (i, item) in sorted.iter().enumerate() {
        assert_eq!(item.as_deref(), Some(i.to_string().as_bytes()));
    }
    assert_eq!(
        text(&q(&mut c, "SORT big DESC LIMIT 0 2")),
        "*2\r\n$6\r\n199999\r\n$6\r\n199998\r\n"
    );
    assert_eq!(
        text(&q(&mut c, "SORT big ALPHA LIMIT 0 3")),
        "*3\r\n$1\r\n0\r\n$1\r\n1\r\n$2\r\n10\r\n"
    );
    assert_eq!(
        text(&q(&mut c, "SORT big ALPHA STORE big2")),
        format!(":{n}\r\n")
    );
    assert_eq!(text(&q(&mut c, "LINDEX big2 -1")), "$5\r\n99999\r\n");
    assert_eq!(
        text(&q(&mut c, "SORT big BY nosort LIMIT 199999 5")),
        "*1\r\n$6\r\n192081\r\n"
    );
    // Weights from other keys: the reverse of the element.
    for chunk in (0..20_000).collect::<Vec<i64>>().chunks(5_000) {
        let mut args = vec!["MSET".to_string()];
        for i in chunk {
            args.extend([format!("w_{i}"), (-i).to_string()]);
        }
        c.cmd(&args);
    }
    assert_eq!(
        text(&q(&mut c, "SORT big BY w_* LIMIT 0 3")),
        "*3\r\n$5\r\n19999\r\n$5\r\n19998\r\n$5\r\n19997\r\n"
    );
    // A sorted set walked without sorting, from its far end.
    for chunk in (0..n).collect::<Vec<i64>>().chunks(10_000) {
        let mut args = vec!["ZADD".to_string(), "z".to_string()];
        for i in chunk {
            args.extend([i.to_string(), format!("m{i}")]);
        }
        c.cmd(&args);
    }
    assert_eq!(
        text(&q(&mut c, "SORT z BY nosort DESC LIMIT 1 2")),
        "*2\r\n$7\r\nm199998\r\n$7\r\nm199997\r\n"
    );
    // Generous: a debug-profile build on a busy machine; the point is O(n log n).
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_redis_client_reads_sort_replies() {
    let kvik = start();
    let mut c = redis::Client::open(format!("redis://{}/", kvik.addr()))
        .and_then(|client| client.get_connection())
        .expect("connect");
    let _: () = redis::cmd("RPUSH")
        .arg("l")
        .arg(&[3, 1, 2])
        .query(&mut c)
        .unwrap();
    let sorted: Vec<i64> = redis::cmd("SORT").arg("l").query(&mut c).unwrap();
    assert_eq!(sorted, [1, 2, 3]);
    let got: Vec<Option<String>> = redis::cmd("SORT_RO")
        .arg("l")
        .arg("GET")
        .arg("nothing_*")
        .arg("DESC")
        .query(&mut c)
        .unwrap();
    assert_eq!(got, [None, None, None]);
    let stored: i64 = redis::cmd("SORT")
        .arg("l")
        .arg("STORE")
        .arg("d")
        .query(&mut c)
        .unwrap();
    assert_eq!(stored, 3);
}
