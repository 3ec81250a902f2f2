//! Pub/Sub over TCP with several worker threads: messages cross threads byte-exact in
//! both protocols, patterns and shard channels keep to their namespaces, each
//! publisher's messages arrive in order, PUBSUB and CLIENT LIST tell the truth,
//! subscribed mode refuses what Redis refuses, and a subscriber that stops reading is
//! cut off at its output buffer limit while everyone else carries on.

mod support;

use std::time::{Duration, Instant};
use support::{wait_for, RawConn, TestServer};

fn server() -> TestServer {
    TestServer::start(&["--server-threads", "4"])
}

/// A frame of bulk strings, `kind` being `*` (RESP2) or `>` (RESP3 push).
fn frame(kind: char, parts: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("{kind}{}\r\n", parts.len()).into_bytes();
    for p in parts {
        out.extend_from_slice(format!("${}\r\n", p.len()).as_bytes());
        out.extend_from_slice(p);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// A (un)subscribe confirmation: `[word, name, count]`.
fn confirmation(kind: char, word: &str, name: &str, count: i64) -> Vec<u8> {
    let mut out = frame(kind, &[word.as_bytes(), name.as_bytes()]);
    out[1] = b'3';
    out.extend_from_slice(format!(":{count}\r\n").as_bytes());
    out
}

fn int(reply: &[u8]) -> i64 {
    let text = std::str::from_utf8(reply).expect("utf8");
    text.strip_prefix(':')
        .and_then(|t| t.strip_suffix("\r\n"))
        .unwrap_or_else(|| panic!("not an integer reply: {text:?}"))
        .parse()
        .expect("integer")
}

fn subscribe(conn: &mut RawConn, kind: char, command: &str, names: &[&str]) {
    let mut args = vec![command];
    args.extend_from_slice(names);
    conn.send_cmd(&args);
    for _ in names {
        let reply = conn.read_reply();
        assert_eq!(
            reply[0] as char,
            kind,
            "{}",
            String::from_utf8_lossy(&reply)
        );
    }
}

#[test]
fn messages_reach_subscribers_on_every_thread_in_their_protocol() {
    let server = server();
    // Enough connections that the kernel spreads them over the four workers.
    let mut resp2: Vec<RawConn> = (0..6).map(|_| server.raw()).collect();
    let mut resp3: Vec<RawConn> = (0..6).map(|_| server.raw()).collect();
    for conn in &mut resp2 {
        assert_eq!(
            conn.cmd(&["SUBSCRIBE", "news"]),
            confirmation('*', "subscribe", "news", 1)
        );
    }
    for conn in &mut resp3 {
        conn.cmd(&["HELLO", "3"]);
        assert_eq!(
            conn.cmd(&["SUBSCRIBE", "news"]),
            confirmation('>', "subscribe", "news", 1)
        );
    }
    let mut publisher = server.raw();
    assert_eq!(
        int(&publisher.cmd(&["PUBLISH", "news", "hello\r\nworld"])),
        12
    );
    assert_eq!(int(&publisher.cmd(&["PUBLISH", "other", "x"])), 0);
    for conn in &mut resp2 {
        assert_eq!(
            conn.read_reply(),
            frame('*', &[b"message", b"news", b"hello\r\nworld"])
        );
    }
    for conn in &mut resp3 {
        assert_eq!(
            conn.read_reply(),
            frame('>', &[b"message", b"news", b"hello\r\nworld"])
        );
        // RESP3 connections run ordinary commands while subscribed.
        assert_eq!(conn.cmd(&["PING"]), b"+PONG\r\n");
    }
}

#[test]
fn patterns_and_shard_channels_keep_to_their_namespaces() {
    let server = server();
    let mut sub = server.raw();
    assert_eq!(
        sub.cmd(&["PSUBSCRIBE", "news.*"]),
        confirmation('*', "psubscribe", "news.*", 1)
    );
    assert_eq!(
        sub.cmd(&["SUBSCRIBE", "news.tech"]),
        confirmation('*', "subscribe", "news.tech", 2)
    );
    assert_eq!(
        sub.cmd(&["SSUBSCRIBE", "news.tech"]),
        confirmation('*', "ssubscribe", "news.tech", 1)
    );
    let mut publisher = server.raw();
    // The channel subscription and the pattern both receive it.
    assert_eq!(int(&publisher.cmd(&["PUBLISH", "news.tech", "a"])), 2);
    assert_eq!(int(&publisher.cmd(&["PUBLISH", "news.art", "b"])), 1);
    // Shard channels are a namespace of their own: patterns do not see them.
    assert_eq!(int(&publisher.cmd(&["SPUBLISH", "news.tech", "c"])), 1);
    assert_eq!(int(&publisher.cmd(&["SPUBLISH", "news.art", "d"])), 0);
    assert_eq!(
        sub.read_reply(),
        frame('*', &[b"message", b"news.tech", b"a"])
    );
    assert_eq!(
        sub.read_reply(),
        frame('*', &[b"pmessage", b"news.*", b"news.tech", b"a"])
    );
    assert_eq!(
        sub.read_reply(),
        frame('*', &[b"pmessage", b"news.*", b"news.art", b"b"])
    );
    assert_eq!(
        sub.read_reply(),
        frame('*', &[b"smessage", b"news.tech", b"c"])
    );
    assert_eq!(
        sub.cmd(&["PUNSUBSCRIBE"]),
        confirmation('*', "punsubscribe", "news.*", 1)
    );
    assert_eq!(
        sub.cmd(&["SUNSUBSCRIBE"]),
        confirmation('*', "sunsubscribe", "news.tech", 0)
    );
    assert_eq!(
        sub.cmd(&["UNSUBSCRIBE"]),
        confirmation('*', "unsubscribe", "news.tech", 0)
    );
    assert_eq!(sub.cmd(&["GET", "k"]), b"$-1\r\n");
}

#[test]
fn each_publishers_messages_arrive_in_order() {
    const MESSAGES: usize = 10_000;
    let server = server();
    let mut sub = server.raw();
    subscribe(&mut sub, '*', "SUBSCRIBE", &["seq"]);
    let publishers: Vec<_> = (0..2)
        .map(|p| {
            let mut conn = server.raw();
            std::thread::spawn(move || {
                let mut batch = Vec::new();
                for n in 0..MESSAGES {
                    let message = format!("{p}:{n}");
                    batch.extend(support::encode_command(&["PUBLISH", "seq", &message]));
                }
                conn.send(&batch);
                for _ in 0..MESSAGES {
                    assert_eq!(conn.read_reply(), b":1\r\n");
                }
            })
        })
        .collect();
    let mut next = [0usize; 2];
    for _ in 0..2 * MESSAGES {
        let reply = sub.read_reply();
        let text = String::from_utf8(reply).expect("utf8");
        let message = text.lines().nth(6).expect("message payload");
        let (p, n) = message.split_once(':').expect("p:n");
        let p: usize = p.parse().expect("publisher");
        assert_eq!(n.parse::<usize>().expect("n"), next[p], "publisher {p}");
        next[p] += 1;
    }
    for p in publishers {
        p.join().expect("publisher thread");
    }
    assert_eq!(next, [MESSAGES, MESSAGES]);
}

#[test]
fn introspection_counts_subscriptions_across_threads() {
    let server = server();
    let mut a = server.raw();
    let mut b = server.raw();
    subscribe(&mut a, '*', "SUBSCRIBE", &["x", "y"]);
    subscribe(&mut b, '*', "SUBSCRIBE", &["x"]);
    subscribe(&mut b, '*', "PSUBSCRIBE", &["p*", "q*"]);
    subscribe(&mut b, '*', "SSUBSCRIBE", &["s1"]);
    let mut admin = server.raw();
    assert_eq!(
        admin.cmd(&["PUBSUB", "NUMSUB", "x", "y", "z"]),
        b"*6\r\n$1\r\nx\r\n:2\r\n$1\r\ny\r\n:1\r\n$1\r\nz\r\n:0\r\n"
    );
    assert_eq!(admin.cmd(&["PUBSUB", "NUMPAT"]), b":2\r\n");
    assert_eq!(
        admin.cmd(&["PUBSUB", "CHANNELS", "y*"]),
        b"*1\r\n$1\r\ny\r\n"
    );
    assert_eq!(
        admin.cmd(&["PUBSUB", "SHARDCHANNELS"]),
        b"*1\r\n$2\r\ns1\r\n"
    );
    assert_eq!(
        admin.cmd(&["PUBSUB", "SHARDNUMSUB", "s1"]),
        b"*2\r\n$2\r\ns1\r\n:1\r\n"
    );
    let info = String::from_utf8(admin.cmd(&["INFO", "stats"])).expect("utf8");
    for field in [
        "pubsub_channels:2",
        "pubsub_patterns:2",
        "pubsubshard_channels:1",
    ] {
        assert!(info.contains(field), "{field} in {info}");
    }
    let list = String::from_utf8(admin.cmd(&["CLIENT", "LIST"])).expect("utf8");
    assert!(list.contains("flags=P db=0 sub=2 psub=0 ssub=0"), "{list}");
    assert!(list.contains("flags=P db=0 sub=1 psub=2 ssub=1"), "{list}");
    assert_eq!(
        admin
            .cmd(&["CLIENT", "LIST", "TYPE", "pubsub"])
            .windows(6)
            .filter(|w| w == b"flags=")
            .count(),
        2
    );

    // CLIENT KILL TYPE pubsub closes the subscribers, and their subscriptions go.
    assert_eq!(admin.cmd(&["CLIENT", "KILL", "TYPE", "pubsub"]), b":2\r\n");
    assert!(a.closed_within(Duration::from_secs(5)));
    assert!(b.closed_within(Duration::from_secs(5)));
    wait_for("subscriptions dropped", || {
        admin.cmd(&["PUBSUB", "NUMSUB", "x"]) == b"*2\r\n$1\r\nx\r\n:0\r\n"
            && admin.cmd(&["PUBSUB", "NUMPAT"]) == b":0\r\n"
    });
    assert_eq!(admin.cmd(&["PUBSUB", "SHARDCHANNELS"]), b"*0\r\n");
}

#[test]
fn subscribed_resp2_connections_run_only_subscription_commands() {
    let server = server();
    let mut sub = server.raw();
    subscribe(&mut sub, '*', "SUBSCRIBE", &["c"]);
    assert_eq!(
        sub.cmd(&["GET", "k"]),
        b"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n"
    );
    assert_eq!(
        sub.cmd(&["CONFIG", "GET", "port"]),
        b"-ERR Can't execute 'config|get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n"
    );
    assert_eq!(sub.cmd(&["PING"]), b"*2\r\n$4\r\npong\r\n$0\r\n\r\n");
    assert_eq!(
        sub.cmd(&["PING", "hi"]),
        b"*2\r\n$4\r\npong\r\n$2\r\nhi\r\n"
    );
    // RESET leaves subscribed mode and drops the subscription.
    assert_eq!(sub.cmd(&["RESET"]), b"+RESET\r\n");
    assert_eq!(sub.cmd(&["GET", "k"]), b"$-1\r\n");
    let mut publisher = server.raw();
    assert_eq!(int(&publisher.cmd(&["PUBLISH", "c", "x"])), 0);
    assert_eq!(sub.cmd(&["QUIT"]), b"+OK\r\n");
}

#[test]
fn a_publisher_subscribed_in_resp3_gets_its_message_before_the_count() {
    let server = server();
    let mut me = server.raw();
    me.cmd(&["HELLO", "3"]);
    subscribe(&mut me, '>', "SUBSCRIBE", &["self"]);
    assert_eq!(
        me.cmd(&["PUBLISH", "self", "echo"]),
        frame('>', &[b"message", b"self", b"echo"])
    );
    assert_eq!(me.read_reply(), b":1\r\n");
}

#[test]
fn switching_protocol_while_subscribed_switches_the_message_frames() {
    let server = server();
    let mut sub = server.raw();
    sub.cmd(&["HELLO", "3"]);
    subscribe(&mut sub, '>', "SUBSCRIBE", &["c"]);
    let mut publisher = server.raw();
    publisher.cmd(&["PUBLISH", "c", "one"]);
    assert_eq!(sub.read_reply(), frame('>', &[b"message", b"c", b"one"]));
    sub.cmd(&["HELLO", "2"]);
    publisher.cmd(&["PUBLISH", "c", "two"]);
    assert_eq!(sub.read_reply(), frame('*', &[b"message", b"c", b"two"]));
}

#[test]
fn disconnecting_drops_every_subscription() {
    let server = server();
    let mut admin = server.raw();
    {
        let mut sub = server.raw();
        subscribe(&mut sub, '*', "SUBSCRIBE", &["gone"]);
        subscribe(&mut sub, '*', "PSUBSCRIBE", &["g*"]);
        assert_eq!(int(&admin.cmd(&["PUBLISH", "gone", "x"])), 2);
    }
    wait_for("subscriber's subscriptions dropped", || {
        int(&admin.cmd(&["PUBLISH", "gone", "x"])) == 0
    });
    assert_eq!(admin.cmd(&["PUBSUB", "NUMPAT"]), b":0\r\n");
}

/// CLIENT LIST's `omem` for the client named `name`.
fn omem_of(admin: &mut RawConn, name: &str) -> Option<u64> {
    let list = String::from_utf8(admin.cmd(&["CLIENT", "LIST"])).expect("utf8");
    let line = list
        .lines()
        .find(|l| l.contains(&format!(" name={name} ")))?;
    line.split(' ')
        .find_map(|f| f.strip_prefix("omem="))
        .map(|v| v.parse().expect("omem"))
}

/// Publish 4 KiB messages to `channel` until the pending output of the subscriber
/// named `name` reaches `bytes` (it does not read).
fn fill_output(publisher: &mut RawConn, channel: &str, name: &str, bytes: u64) {
    let payload = "x".repeat(4096);
    let until = Instant::now() + Duration::from_secs(30);
    while omem_of(publisher, name).expect("listed") < bytes {
        assert!(Instant::now() < until, "output never reached {bytes}");
        for _ in 0..64 {
            publisher.send_cmd(&["PUBLISH", channel, &payload]);
        }
        for _ in 0..64 {
            publisher.read_reply();
        }
    }
}

/// Keep publishing to `channel` until a PUBLISH reaches fewer than `receivers`
/// subscribers (the slow one was cut off). The kernel may take more of the slow
/// subscriber's output as its socket buffers grow, so one message may not be enough.
fn publish_until_dropped(publisher: &mut RawConn, channel: &str, receivers: i64) {
    let payload = "y".repeat(4096);
    let until = Instant::now() + Duration::from_secs(30);
    while int(&publisher.cmd(&["PUBLISH", channel, &payload])) >= receivers {
        assert!(
            Instant::now() < until,
            "the slow subscriber was never cut off"
        );
    }
}

#[test]
fn a_subscriber_that_stops_reading_is_cut_off_at_its_hard_limit() {
    let server = server();
    let mut admin = server.raw();
    // No limit at first: the unread messages pile up and CLIENT LIST shows them.
    assert_eq!(
        admin.cmd(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "pubsub 0 0 0"
        ]),
        b"+OK\r\n"
    );
    let mut slow = server.raw();
    slow.cmd(&["CLIENT", "SETNAME", "slow"]);
    subscribe(&mut slow, '*', "SUBSCRIBE", &["firehose"]);
    let mut other = server.raw();
    subscribe(&mut other, '*', "SUBSCRIBE", &["quiet"]);
    let mut publisher = server.raw();
    fill_output(&mut publisher, "firehose", "slow", 1 << 20);
    let list = String::from_utf8(admin.cmd(&["CLIENT", "LIST"])).expect("utf8");
    let line = list
        .lines()
        .find(|l| l.contains(" name=slow "))
        .expect("listed");
    assert!(line.contains("events=rw"), "{line}");
    assert!(!line.contains(" oll=0 "), "{line}");

    // A hard limit under what is pending: the next messages cut the subscriber off,
    // and the server and the other clients carry on.
    assert_eq!(
        admin.cmd(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "pubsub 512kb 0 0"
        ]),
        b"+OK\r\n"
    );
    publish_until_dropped(&mut publisher, "firehose", 1);
    assert!(slow.closed_within(Duration::from_secs(20)));
    assert_eq!(int(&publisher.cmd(&["PUBLISH", "quiet", "still here"])), 1);
    assert_eq!(
        other.read_reply(),
        frame('*', &[b"message", b"quiet", b"still here"])
    );
    assert_eq!(admin.cmd(&["PING"]), b"+PONG\r\n");
    assert!(
        server
            .stdout()
            .contains("scheduled to be closed ASAP for overcoming of output buffer limits"),
        "{}",
        server.stdout()
    );
}

#[test]
fn a_subscriber_over_its_soft_limit_for_too_long_is_cut_off() {
    let server = server();
    let mut admin = server.raw();
    assert_eq!(
        admin.cmd(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "pubsub 0 256kb 1"
        ]),
        b"+OK\r\n"
    );
    let mut slow = server.raw();
    slow.cmd(&["CLIENT", "SETNAME", "slow"]);
    subscribe(&mut slow, '*', "SUBSCRIBE", &["drip"]);
    let mut publisher = server.raw();
    let started = Instant::now();
    fill_output(&mut publisher, "drip", "slow", 256 << 10);
    publish_until_dropped(&mut publisher, "drip", 1);
    // Not before the soft limit's second has passed.
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert!(slow.closed_within(Duration::from_secs(20)));
    assert_eq!(admin.cmd(&["PING"]), b"+PONG\r\n");
}

#[test]
fn a_normal_client_past_its_limit_is_cut_off_too() {
    let server = server();
    let mut admin = server.raw();
    assert_eq!(
        admin.cmd(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 1mb 0 0"
        ]),
        b"+OK\r\n"
    );
    let big = "v".repeat(256 << 10);
    assert_eq!(admin.cmd(&["SET", "big", &big]), b"+OK\r\n");
    // Asks for the value many times over and reads nothing.
    let mut greedy = server.raw();
    let mut pipeline = Vec::new();
    for _ in 0..200 {
        pipeline.extend(support::encode_command(&["GET", "big"]));
    }
    greedy.send(&pipeline);
    assert!(greedy.closed_within(Duration::from_secs(20)));
    // The server and its other clients carry on.
    assert_eq!(admin.cmd(&["STRLEN", "big"]), b":262144\r\n");
}

/// CLIENT REPLY OFF and SKIP silence replies, not pushes: (un)subscribe
/// confirmations and messages still arrive, in RESP2 as in RESP3 (Redis 7.0 sends
/// them with its `CLIENT_PUSHING` flag), inside EXEC too, while ordinary replies
/// stay silent.
#[test]
fn confirmations_and_messages_survive_client_reply_off_and_skip() {
    let server = server();
    for (kind, hello) in [('*', "2"), ('>', "3")] {
        for mode in ["OFF", "SKIP"] {
            let mut me = server.raw();
            me.cmd(&["HELLO", hello]);
            me.send_cmd(&["CLIENT", "REPLY", mode]);
            me.send_cmd(&["SUBSCRIBE", "a", "b"]);
            assert_eq!(me.read_reply(), confirmation(kind, "subscribe", "a", 1));
            assert_eq!(me.read_reply(), confirmation(kind, "subscribe", "b", 2));
            if mode == "OFF" {
                me.send_cmd(&["PSUBSCRIBE", "p*"]);
                assert_eq!(me.read_reply(), confirmation(kind, "psubscribe", "p*", 3));
                me.send_cmd(&["SSUBSCRIBE", "s"]);
                assert_eq!(me.read_reply(), confirmation(kind, "ssubscribe", "s", 1));
                // A reply that is not a push stays silent.
                me.send_cmd(&["PING"]);
            }
            let mut publisher = server.raw();
            assert_eq!(int(&publisher.cmd(&["PUBLISH", "a", "m"])), 1);
            assert_eq!(me.read_reply(), frame(kind, &[b"message", b"a", b"m"]));
            if mode == "OFF" {
                assert_eq!(int(&publisher.cmd(&["PUBLISH", "pq", "n"])), 1);
                assert_eq!(
                    me.read_reply(),
                    frame(kind, &[b"pmessage", b"p*", b"pq", b"n"])
                );
                assert_eq!(int(&publisher.cmd(&["SPUBLISH", "s", "o"])), 1);
                assert_eq!(me.read_reply(), frame(kind, &[b"smessage", b"s", b"o"]));
                me.send_cmd(&["SUNSUBSCRIBE"]);
                assert_eq!(me.read_reply(), confirmation(kind, "sunsubscribe", "s", 0));
                me.send_cmd(&["PUNSUBSCRIBE", "p*"]);
                assert_eq!(me.read_reply(), confirmation(kind, "punsubscribe", "p*", 2));
            }
            me.send_cmd(&["UNSUBSCRIBE", "a", "b"]);
            assert_eq!(me.read_reply(), confirmation(kind, "unsubscribe", "a", 1));
            assert_eq!(me.read_reply(), confirmation(kind, "unsubscribe", "b", 0));
            if mode == "OFF" {
                // Inside a transaction: EXEC's own reply is silent, its pushes are not.
                me.send_cmd(&["MULTI"]);
                me.send_cmd(&["SUBSCRIBE", "t"]);
                me.send_cmd(&["SET", "k", "v"]);
                me.send_cmd(&["EXEC"]);
                assert_eq!(me.read_reply(), confirmation(kind, "subscribe", "t", 1));
                me.send_cmd(&["UNSUBSCRIBE"]);
                assert_eq!(me.read_reply(), confirmation(kind, "unsubscribe", "t", 0));
                me.send_cmd(&["CLIENT", "REPLY", "ON"]);
                assert_eq!(me.read_reply(), b"+OK\r\n");
            }
            assert_eq!(me.cmd(&["ECHO", "after"]), b"$5\r\nafter\r\n");
        }
    }
}

/// A message published on a master reaches the subscribers of its replicas, as in
/// Redis 7.0, which propagates PUBLISH to replicas (not to the AOF).
#[test]
fn messages_published_on_a_master_reach_subscribers_of_its_replicas() {
    let master = server();
    let port = master.port().to_string();
    let replica = TestServer::start(&["--replicaof", "127.0.0.1", &port]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while replica
        .raw()
        .info_field("replication", "master_link_status")
        != "up"
    {
        assert!(Instant::now() < deadline, "the replica never synced");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut subscriber = replica.raw();
    assert_eq!(
        subscriber.cmd(&["SUBSCRIBE", "news"]),
        confirmation('*', "subscribe", "news", 1)
    );
    assert_eq!(master.raw().cmd(&["PUBLISH", "news", "hello"]), b":0\r\n");
    assert_eq!(
        subscriber.read_reply(),
        frame('*', &[b"message", b"news", b"hello"])
    );
}
