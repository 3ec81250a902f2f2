//! Active defragmentation: after a fill of keys of mixed sizes and the deletion of
//! most of them, jemalloc's pages are mostly empty; with `activedefrag yes` the
//! surviving keys are moved out of the sparse pages (`active_defrag_hits` counts the
//! moves) and the allocator's fragmentation drops, the data unchanged.

mod support;

use support::{wait_for, RawConn, TestServer};

fn info(conn: &mut RawConn, section: &str, name: &str) -> f64 {
    conn.info_field(section, name)
        .parse()
        .unwrap_or_else(|_| panic!("{name} is not a number"))
}

/// Send `commands` pipelined, in batches, and check every reply.
fn pipeline(conn: &mut RawConn, commands: &[Vec<Vec<u8>>], reply: &[u8]) {
    for batch in commands.chunks(1000) {
        let mut bytes = Vec::new();
        for args in batch {
            bytes.extend(support::encode_command(args));
        }
        conn.send(&bytes);
        for _ in batch {
            assert_eq!(conn.read_reply(), reply);
        }
    }
}

#[test]
fn active_defrag_moves_keys_out_of_sparse_pages() {
    let server = TestServer::start(&[
        "--activedefrag",
        "no",
        "--active-defrag-ignore-bytes",
        "1mb",
        "--active-defrag-threshold-lower",
        "10",
    ]);
    let mut c = server.raw();
    let sizes = [8usize, 24, 40, 90, 150, 300, 600];
    let keys = 60_000;
    let key = |n: usize| format!("key:{n}:").into_bytes();
    let sets: Vec<Vec<Vec<u8>>> = (0..keys)
        .map(|n| vec![b"SET".to_vec(), key(n), vec![b'v'; sizes[n % sizes.len()]]])
        .collect();
    pipeline(&mut c, &sets, b"+OK\r\n");
    // Delete four keys in five, leaving one in each run of five (every size).
    let dels: Vec<Vec<Vec<u8>>> = (0..keys)
        .filter(|n| n % 5 != 0)
        .map(|n| vec![b"DEL".to_vec(), key(n)])
        .collect();
    pipeline(&mut c, &dels, b":1\r\n");
    let before = info(&mut c, "memory", "allocator_frag_ratio");
    assert!(before > 1.5, "the deletes left fragmentation: {before}");
    assert_eq!(c.cmd(&["CONFIG", "SET", "activedefrag", "yes"]), b"+OK\r\n");
    wait_for("defragmentation to bring the ratio down", || {
        info(&mut c, "stats", "active_defrag_hits") > 0.0
            && info(&mut c, "memory", "allocator_frag_ratio") < 1.2
    });
    assert!(info(&mut c, "stats", "active_defrag_key_hits") > 0.0);
    assert_eq!(
        c.cmd(&["DBSIZE"]),
        format!(":{}\r\n", keys / 5).into_bytes()
    );
    for n in (0..keys).step_by(5) {
        let value = vec![b'v'; sizes[n % sizes.len()]];
        let mut expected = format!("${}\r\n", value.len()).into_bytes();
        expected.extend(&value);
        expected.extend(b"\r\n");
        assert_eq!(c.cmd(&[&b"GET"[..], &key(n)]), expected);
    }
    let log = server.stdout();
    assert!(log.contains("Starting active defrag, frag="), "{log}");
}
