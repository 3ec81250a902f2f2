//! Client-side caching over TCP with four worker threads: every scenario runs against
//! kvik and, when one is installed, a real redis-server, asserts the frames it expects
//! on both, and requires both to send the same bytes (client ids aside).
//!
//! Covered: invalidations crossing threads in default mode, a client's own write
//! invalidating after its reply, REDIRECT to a RESP2 subscriber of
//! `__redis__:invalidate` and to a RESP3 client, BCAST prefixes, OPTIN/OPTOUT with
//! CLIENT CACHING, NOLOOP, the null invalidation of FLUSHALL/FLUSHDB,
//! `tracking-table-max-keys` eviction, a redirect target that disconnects, and what
//! CLIENT LIST, CLIENT TRACKINGINFO and INFO say.

mod support;

use std::time::Duration;
use support::{escape, RawConn, RealRedis, TestServer};

/// What a scenario saw: the replies and messages it read, in order, client ids
/// replaced by `<id>`.
#[derive(Default)]
struct Transcript(Vec<String>);

impl Transcript {
    /// Record `reply` and return it.
    fn saw(&mut self, reply: Vec<u8>) -> Vec<u8> {
        self.0.push(escape(&reply));
        reply
    }

    /// Record `reply`, which names client `id` as an integer.
    fn saw_id(&mut self, reply: Vec<u8>, id: u64) -> Vec<u8> {
        let text = String::from_utf8_lossy(&reply).replace(&format!(":{id}\r\n"), ":<id>\r\n");
        self.0.push(escape(text.as_bytes()));
        reply
    }
}

/// Run `scenario` against kvik with four threads, and against a real redis-server
/// when there is one: both must send the same bytes.
fn same_as_redis(scenario: fn(&TestServer, &mut Transcript)) {
    let kvik = TestServer::start(&["--server-threads", "4"]);
    let mut ours = Transcript::default();
    scenario(&kvik, &mut ours);
    if support::redis_server_or_skip().is_none() {
        return;
    }
    let redis = RealRedis::start(&[]);
    let mut theirs = Transcript::default();
    scenario(&redis, &mut theirs);
    assert_eq!(
        ours.0, theirs.0,
        "kvik (left) and redis-server (right) differ"
    );
}

/// `>2 invalidate [keys]` (RESP3 push).
fn push(keys: &[&str]) -> Vec<u8> {
    let mut out = b">2\r\n$10\r\ninvalidate\r\n".to_vec();
    out.extend(array(keys));
    out
}

/// The push of a flush: `>2 invalidate _`.
const PUSH_FLUSH: &[u8] = b">2\r\n$10\r\ninvalidate\r\n_\r\n";

/// The RESP2 message on `__redis__:invalidate` (REDIRECT to a subscriber).
fn message(keys: &[&str]) -> Vec<u8> {
    let mut out = b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n".to_vec();
    out.extend(array(keys));
    out
}

fn array(keys: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", keys.len()).into_bytes();
    for key in keys {
        out.extend(format!("${}\r\n{key}\r\n", key.len()).into_bytes());
    }
    out
}

fn resp3(server: &TestServer) -> RawConn {
    let mut conn = server.raw();
    let hello = conn.cmd(&["HELLO", "3"]);
    assert_eq!(hello[0], b'%');
    conn
}

fn client_id(conn: &mut RawConn) -> u64 {
    let reply = conn.cmd(&["CLIENT", "ID"]);
    let text = String::from_utf8(reply).expect("utf8");
    text.trim_start_matches(':')
        .trim_end()
        .parse()
        .expect("an id")
}

/// Nothing is waiting for `conn`: after a pause for messages in flight between
/// threads, a PING answers first.
fn nothing_pending(conn: &mut RawConn) {
    std::thread::sleep(Duration::from_millis(100));
    let pong = conn.cmd(&["PING"]);
    // A RESP2 connection in subscribed mode answers PING in a frame of its own.
    let subscribed_pong = b"*2\r\n$4\r\npong\r\n$0\r\n\r\n";
    assert!(
        pong == b"+PONG\r\n" || pong == subscribed_pong,
        "{}",
        escape(&pong)
    );
}

fn ok(conn: &mut RawConn, args: &[&str]) {
    assert_eq!(conn.cmd(args), b"+OK\r\n", "{args:?}");
}

#[test]
fn a_write_on_another_thread_invalidates_what_a_client_read() {
    same_as_redis(|server, t| {
        let mut reader = resp3(server);
        ok(&mut reader, &["CLIENT", "TRACKING", "ON"]);
        let keys = ["k1", "k2", "k3", "k4"];
        t.saw(reader.cmd(&["MGET", "k1", "k2", "k3", "k4"]));
        // Several writers: the kernel spreads them over the worker threads.
        let mut writers: Vec<RawConn> = (0..4).map(|_| server.raw()).collect();
        for (writer, key) in writers.iter_mut().zip(keys) {
            ok(writer, &["SET", key, "v"]);
            assert_eq!(t.saw(reader.read_reply()), push(&[key]));
        }
        // Told once: the key left the table until it is read again.
        ok(&mut writers[0], &["SET", "k1", "again"]);
        nothing_pending(&mut reader);
        t.saw(reader.cmd(&["GET", "k1"]));
        t.saw(writers[1].cmd(&["DEL", "k1", "k2"]));
        assert_eq!(t.saw(reader.read_reply()), push(&["k1"]));
        // Keys are tracked by name: a write in another database invalidates too.
        t.saw(reader.cmd(&["GET", "k3"]));
        ok(&mut writers[2], &["SELECT", "5"]);
        ok(&mut writers[2], &["SET", "k3", "elsewhere"]);
        assert_eq!(t.saw(reader.read_reply()), push(&["k3"]));
        // Expiring is a write too: the active expiry cycle tells.
        t.saw(reader.cmd(&["GET", "k4"]));
        ok(&mut writers[3], &["SET", "k4", "v", "PX", "1500"]);
        assert_eq!(t.saw(reader.read_reply()), push(&["k4"]));
        t.saw(reader.cmd(&["GET", "k4"]));
        assert_eq!(t.saw(reader.read_reply()), push(&["k4"]));
    });
}

#[test]
fn a_clients_own_write_invalidates_after_its_reply() {
    same_as_redis(|server, t| {
        let mut c = resp3(server);
        ok(&mut c, &["CLIENT", "TRACKING", "ON"]);
        t.saw(c.cmd(&["GET", "k"]));
        assert_eq!(t.saw(c.cmd(&["SET", "k", "1"])), b"+OK\r\n");
        assert_eq!(t.saw(c.read_reply()), push(&["k"]));
        // Pipelined: the push follows the SET's reply, before the next command's.
        t.saw(c.cmd(&["GET", "k"]));
        let mut batch = Vec::new();
        for args in [&["GET", "k"][..], &["SET", "k", "2"], &["PING"]] {
            batch.extend(support::encode_command(args));
        }
        c.send(&batch);
        assert_eq!(t.saw(c.read_reply()), b"$1\r\n1\r\n");
        assert_eq!(t.saw(c.read_reply()), b"+OK\r\n");
        assert_eq!(t.saw(c.read_reply()), push(&["k"]));
        assert_eq!(t.saw(c.read_reply()), b"+PONG\r\n");
        // A transaction's invalidations follow EXEC's reply.
        ok(&mut c, &["MULTI"]);
        for args in [&["GET", "m"][..], &["SET", "m", "1"], &["GET", "m"]] {
            t.saw(c.cmd(args));
        }
        t.saw(c.cmd(&["EXEC"]));
        assert_eq!(t.saw(c.read_reply()), push(&["m"]));
        // Pushes reach a client that turned replies off.
        t.saw(c.cmd(&["GET", "m"]));
        c.send_cmd(&["CLIENT", "REPLY", "OFF"]);
        c.send_cmd(&["SET", "m", "2"]);
        assert_eq!(t.saw(c.read_reply()), push(&["m"]));
        ok(&mut c, &["CLIENT", "REPLY", "ON"]);
    });
}

#[test]
fn redirect_to_a_resp2_subscriber_and_to_a_resp3_client() {
    same_as_redis(|server, t| {
        let mut subscriber = server.raw();
        let sub_id = client_id(&mut subscriber);
        t.saw(subscriber.cmd(&["SUBSCRIBE", "__redis__:invalidate"]));
        let mut tracker = server.raw();
        let redirect = sub_id.to_string();
        ok(
            &mut tracker,
            &["CLIENT", "TRACKING", "ON", "REDIRECT", redirect.as_str()],
        );
        t.saw_id(tracker.cmd(&["CLIENT", "GETREDIR"]), sub_id);
        t.saw_id(tracker.cmd(&["CLIENT", "TRACKINGINFO"]), sub_id);
        t.saw(tracker.cmd(&["MGET", "a", "b"]));
        let mut writer = server.raw();
        ok(&mut writer, &["MSET", "a", "1", "b", "2"]);
        assert_eq!(t.saw(subscriber.read_reply()), message(&["a"]));
        assert_eq!(t.saw(subscriber.read_reply()), message(&["b"]));
        // A flush reaches the subscriber as a null message.
        ok(&mut writer, &["FLUSHALL"]);
        assert_eq!(
            t.saw(subscriber.read_reply()),
            b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n$-1\r\n"
        );
        // Nothing goes to the tracking RESP2 connection itself.
        nothing_pending(&mut tracker);

        // A RESP3 target that subscribed to nothing gets pushes.
        let mut target = resp3(server);
        let target_id = client_id(&mut target);
        let redirect = target_id.to_string();
        ok(
            &mut tracker,
            &["CLIENT", "TRACKING", "ON", "REDIRECT", redirect.as_str()],
        );
        t.saw(tracker.cmd(&["GET", "c"]));
        ok(&mut writer, &["SET", "c", "3"]);
        assert_eq!(t.saw(target.read_reply()), push(&["c"]));
        nothing_pending(&mut subscriber);
    });
}

#[test]
fn bcast_tells_writes_under_each_prefix_in_one_message() {
    same_as_redis(|server, t| {
        let mut c = resp3(server);
        ok(
            &mut c,
            &[
                "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:", "PREFIX", "cart:",
            ],
        );
        t.saw(c.cmd(&["CLIENT", "TRACKINGINFO"]));
        let mut writer = server.raw();
        ok(
            &mut writer,
            &[
                "MSET", "user:2", "x", "user:1", "y", "cart:9", "z", "other", "w",
            ],
        );
        // One message per prefix, keys sorted, prefixes in order.
        assert_eq!(t.saw(c.read_reply()), push(&["cart:9"]));
        assert_eq!(t.saw(c.read_reply()), push(&["user:1", "user:2"]));
        // Reads are not tracked in BCAST mode; writes are, read or not.
        t.saw(c.cmd(&["GET", "other"]));
        ok(&mut writer, &["SET", "other", "v"]);
        nothing_pending(&mut c);
        // The client's own pipelined writes come after all their replies.
        let mut batch = support::encode_command(&["SET", "user:3", "1"]);
        batch.extend(support::encode_command(&["SET", "user:0", "1"]));
        batch.extend(support::encode_command(&["PING"]));
        c.send(&batch);
        for _ in 0..3 {
            t.saw(c.read_reply());
        }
        assert_eq!(t.saw(c.read_reply()), push(&["user:0", "user:3"]));
        // Without prefixes, every key.
        let mut all = resp3(server);
        ok(&mut all, &["CLIENT", "TRACKING", "ON", "BCAST"]);
        t.saw(all.cmd(&["CLIENT", "TRACKINGINFO"]));
        ok(&mut writer, &["SET", "anything", "1"]);
        assert_eq!(t.saw(all.read_reply()), push(&["anything"]));
        let mut info = server.raw();
        let stats = String::from_utf8(info.cmd(&["INFO", "stats"])).expect("utf8");
        assert!(stats.contains("tracking_total_prefixes:3\r\n"), "{stats}");
    });
}

#[test]
fn optin_and_optout_follow_client_caching() {
    same_as_redis(|server, t| {
        let mut c = resp3(server);
        let mut writer = server.raw();
        ok(&mut c, &["CLIENT", "TRACKING", "ON", "OPTIN"]);
        t.saw(c.cmd(&["GET", "not-cached"]));
        ok(&mut c, &["CLIENT", "CACHING", "YES"]);
        t.saw(c.cmd(&["GET", "cached"]));
        // CACHING covers the next command only...
        t.saw(c.cmd(&["GET", "after"]));
        // ...or the whole of the next transaction.
        ok(&mut c, &["CLIENT", "CACHING", "YES"]);
        ok(&mut c, &["MULTI"]);
        t.saw(c.cmd(&["GET", "in-multi"]));
        t.saw(c.cmd(&["EXEC"]));
        ok(
            &mut writer,
            &[
                "MSET",
                "not-cached",
                "1",
                "cached",
                "1",
                "after",
                "1",
                "in-multi",
                "1",
            ],
        );
        assert_eq!(t.saw(c.read_reply()), push(&["cached"]));
        assert_eq!(t.saw(c.read_reply()), push(&["in-multi"]));
        nothing_pending(&mut c);

        ok(&mut c, &["CLIENT", "TRACKING", "OFF"]);
        ok(&mut c, &["CLIENT", "TRACKING", "ON", "OPTOUT"]);
        ok(&mut c, &["CLIENT", "CACHING", "NO"]);
        t.saw(c.cmd(&["GET", "skipped"]));
        t.saw(c.cmd(&["GET", "tracked"]));
        ok(&mut writer, &["MSET", "skipped", "2", "tracked", "2"]);
        assert_eq!(t.saw(c.read_reply()), push(&["tracked"]));
        nothing_pending(&mut c);
    });
}

#[test]
fn noloop_skips_the_clients_own_writes() {
    same_as_redis(|server, t| {
        let mut c = resp3(server);
        let mut writer = server.raw();
        ok(&mut c, &["CLIENT", "TRACKING", "ON", "NOLOOP"]);
        t.saw(c.cmd(&["GET", "k"]));
        ok(&mut c, &["SET", "k", "mine"]);
        nothing_pending(&mut c);
        t.saw(c.cmd(&["GET", "k"]));
        ok(&mut writer, &["SET", "k", "theirs"]);
        assert_eq!(t.saw(c.read_reply()), push(&["k"]));
        // BCAST with NOLOOP leaves out the keys the client wrote itself.
        ok(&mut c, &["CLIENT", "TRACKING", "OFF"]);
        ok(
            &mut c,
            &["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "b", "NOLOOP"],
        );
        ok(&mut c, &["MSET", "b1", "1", "b2", "2"]);
        nothing_pending(&mut c);
        ok(&mut writer, &["MSET", "b2", "1", "b3", "2"]);
        assert_eq!(t.saw(c.read_reply()), push(&["b2", "b3"]));
    });
}

#[test]
fn flushes_send_the_null_invalidation() {
    same_as_redis(|server, t| {
        let mut c = resp3(server);
        let mut bcast = resp3(server);
        let mut writer = server.raw();
        ok(&mut c, &["CLIENT", "TRACKING", "ON"]);
        ok(
            &mut bcast,
            &["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "x"],
        );
        t.saw(c.cmd(&["GET", "k"]));
        ok(&mut writer, &["FLUSHALL"]);
        assert_eq!(t.saw(c.read_reply()), PUSH_FLUSH);
        assert_eq!(t.saw(bcast.read_reply()), PUSH_FLUSH);
        // The table emptied: writing the key tells nothing more.
        ok(&mut writer, &["SET", "k", "1"]);
        nothing_pending(&mut c);
        // FLUSHDB too, even of an empty database; the flusher's own comes after +OK.
        ok(&mut writer, &["SELECT", "3"]);
        ok(&mut writer, &["FLUSHDB"]);
        assert_eq!(t.saw(c.read_reply()), PUSH_FLUSH);
        assert_eq!(t.saw(c.cmd(&["FLUSHDB"])), b"+OK\r\n");
        assert_eq!(t.saw(c.read_reply()), PUSH_FLUSH);
        assert_eq!(t.saw(bcast.read_reply()), PUSH_FLUSH);
        assert_eq!(t.saw(bcast.read_reply()), PUSH_FLUSH);
    });
}

#[test]
fn the_table_stays_within_tracking_table_max_keys() {
    same_as_redis(|server, _t| {
        let mut c = resp3(server);
        let mut admin = server.raw();
        ok(
            &mut admin,
            &["CONFIG", "SET", "tracking-table-max-keys", "2"],
        );
        ok(&mut c, &["CLIENT", "TRACKING", "ON"]);
        c.cmd(&["GET", "k1"]);
        c.cmd(&["GET", "k2"]);
        c.cmd(&["GET", "k3"]);
        // A random key of the three is evicted and invalidated, after the reply.
        let evicted = c.read_reply();
        assert!(
            ["k1", "k2", "k3"].iter().any(|k| evicted == push(&[k])),
            "{}",
            escape(&evicted)
        );
        c.cmd(&["MGET", "k4", "k5", "k6", "k7"]);
        for _ in 0..4 {
            assert_eq!(c.read_reply()[..3], *b">2\r");
        }
        nothing_pending(&mut c);
        let stats = String::from_utf8(admin.cmd(&["INFO", "stats"])).expect("utf8");
        assert!(stats.contains("tracking_total_keys:2\r\n"), "{stats}");
        assert!(stats.contains("tracking_total_items:2\r\n"), "{stats}");
    });
}

#[test]
fn a_redirect_target_that_leaves_breaks_the_redirect() {
    same_as_redis(|server, t| {
        let mut target = server.raw();
        let target_id = client_id(&mut target);
        let mut c = resp3(server);
        let redirect = target_id.to_string();
        ok(
            &mut c,
            &["CLIENT", "TRACKING", "ON", "REDIRECT", redirect.as_str()],
        );
        t.saw(c.cmd(&["GET", "k"]));
        target.shutdown_write();
        assert!(target.closed_within(Duration::from_secs(5)));
        // The server notices the disconnect before the next write.
        std::thread::sleep(Duration::from_millis(100));
        let mut writer = server.raw();
        ok(&mut writer, &["MSET", "k", "1"]);
        let broken = t.saw_id(c.read_reply(), target_id);
        let expected = format!(">2\r\n$21\r\ntracking-redir-broken\r\n:{target_id}\r\n");
        assert_eq!(broken, expected.as_bytes());
        t.saw_id(c.cmd(&["CLIENT", "TRACKINGINFO"]), target_id);
        let me = client_id(&mut c);
        let line = c.cmd(&["CLIENT", "LIST", "ID", &me.to_string()]);
        let line = String::from_utf8(line).expect("utf8");
        assert!(line.contains(" flags=tR "), "{line}");
        assert!(line.contains(&format!(" redir={target_id} ")), "{line}");
        // Reported again for each invalidation that cannot be sent.
        t.saw(c.cmd(&["GET", "k"]));
        ok(&mut writer, &["FLUSHALL"]);
        t.saw_id(c.read_reply(), target_id);
    });
}

#[test]
fn client_list_info_and_trackinginfo_describe_tracking() {
    same_as_redis(|server, t| {
        let mut c = server.raw();
        let me = client_id(&mut c).to_string();
        let list = |c: &mut RawConn| {
            String::from_utf8(c.cmd(&["CLIENT", "LIST", "ID", &me])).expect("utf8")
        };
        assert!(list(&mut c).contains(" flags=N "));
        assert!(list(&mut c).contains(" redir=-1 "));
        t.saw(c.cmd(&["CLIENT", "GETREDIR"]));
        ok(&mut c, &["CLIENT", "TRACKING", "ON", "OPTIN", "NOLOOP"]);
        ok(&mut c, &["CLIENT", "CACHING", "YES"]);
        t.saw(c.cmd(&["CLIENT", "TRACKINGINFO"]));
        let line = list(&mut c);
        assert!(
            line.contains(" flags=t ") && line.contains(" redir=0 "),
            "{line}"
        );
        ok(&mut c, &["CLIENT", "TRACKING", "OFF"]);
        ok(
            &mut c,
            &["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a"],
        );
        assert!(list(&mut c).contains(" flags=tB "));
        let mut other = server.raw();
        let clients = String::from_utf8(other.cmd(&["INFO", "clients"])).expect("utf8");
        assert!(clients.contains("tracking_clients:1\r\n"), "{clients}");
        ok(&mut c, &["CLIENT", "TRACKING", "OFF"]);
        let clients = String::from_utf8(other.cmd(&["INFO", "clients"])).expect("utf8");
        assert!(clients.contains("tracking_clients:0\r\n"), "{clients}");
        // RESET turns tracking off.
        ok(&mut c, &["CLIENT", "TRACKING", "ON"]);
        assert_eq!(c.cmd(&["RESET"]), b"+RESET\r\n");
        t.saw(c.cmd(&["CLIENT", "TRACKINGINFO"]));
    });
}

/// A script's read-only command tracks every key the script declared, not the keys
/// the command read; a script that only writes, or declares no key, tracks nothing
/// (Redis 7.0's rule, for EVAL, EVAL_RO, EVALSHA, FCALL and FCALL_RO alike), and
/// OPTIN/OPTOUT apply to the script as to any command.
#[test]
fn a_script_that_reads_tracks_the_keys_it_declared() {
    same_as_redis(|server, t| {
        let mut c = resp3(server);
        let mut writer = server.raw();
        let library = "#!lua name=tracked\n\
            redis.register_function{function_name='rd', callback=function(k, a) \
            return redis.call('get', k[1]) end, flags={'no-writes'}}\n\
            redis.register_function('wr', function(k, a) return redis.call('set', k[1], 'f') end)";
        t.saw(writer.cmd(&["FUNCTION", "LOAD", "REPLACE", library]));
        let read = "return redis.call('get', 'undeclared')";
        let sha = t.saw(writer.cmd(&["SCRIPT", "LOAD", read]));
        let sha = String::from_utf8(sha[5..45].to_vec()).expect("sha");
        ok(&mut c, &["CLIENT", "TRACKING", "ON"]);
        // Declared keys are tracked, whatever the read-only command read.
        t.saw(c.cmd(&["EVAL", read, "2", "a", "b"]));
        ok(
            &mut writer,
            &["MSET", "undeclared", "1", "a", "1", "b", "1"],
        );
        assert_eq!(t.saw(c.read_reply()), push(&["a"]));
        assert_eq!(t.saw(c.read_reply()), push(&["b"]));
        for args in [
            &["EVAL_RO", read, "1", "ro"][..],
            &["EVALSHA", &sha, "1", "sha"],
            &["EVALSHA_RO", &sha, "1", "sha-ro"],
            &["FCALL", "rd", "1", "fcall"],
            &["FCALL_RO", "rd", "1", "fcall-ro"],
        ] {
            t.saw(c.cmd(args));
            ok(&mut writer, &["SET", args[3], "1"]);
            assert_eq!(t.saw(c.read_reply()), push(&[args[3]]));
        }
        // Writing only, reading without declared keys, or no command at all: nothing.
        t.saw(c.cmd(&["EVAL", "return redis.call('set', KEYS[1], 1)", "1", "w"]));
        t.saw(c.cmd(&["FCALL", "wr", "1", "f"]));
        t.saw(c.cmd(&["EVAL", "return redis.call('get', 'z')", "0"]));
        t.saw(c.cmd(&["EVAL", "return 1", "1", "none"]));
        ok(
            &mut writer,
            &["MSET", "w", "2", "f", "2", "z", "2", "none", "2"],
        );
        nothing_pending(&mut c);
        // Remembered at the read: the script's own later write tells at once.
        let read_then_write = "redis.call('get', KEYS[1]) return redis.call('set', KEYS[1], 3)";
        t.saw(c.cmd(&["EVAL", read_then_write, "1", "rw"]));
        assert_eq!(t.saw(c.read_reply()), push(&["rw"]));
        nothing_pending(&mut c);
        // A failing read counts as a read.
        t.saw(c.cmd(&["EVAL", "return redis.pcall('llen', KEYS[1])", "1", "rw"]));
        ok(&mut writer, &["SET", "rw", "4"]);
        assert_eq!(t.saw(c.read_reply()), push(&["rw"]));
        // OPTIN: only after CLIENT CACHING YES.
        ok(&mut c, &["CLIENT", "TRACKING", "OFF"]);
        ok(&mut c, &["CLIENT", "TRACKING", "ON", "OPTIN"]);
        t.saw(c.cmd(&["EVAL", read, "1", "no"]));
        ok(&mut c, &["CLIENT", "CACHING", "YES"]);
        t.saw(c.cmd(&["EVAL", read, "1", "yes"]));
        ok(&mut writer, &["MSET", "no", "1", "yes", "1"]);
        assert_eq!(t.saw(c.read_reply()), push(&["yes"]));
        nothing_pending(&mut c);
    });
}
