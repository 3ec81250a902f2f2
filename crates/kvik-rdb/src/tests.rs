//! The codec as a whole: every type round-trips in every encoding, the forms only
//! older servers write decode, and damaged input is refused without a panic.

use super::io::{write_binary_double, write_len, write_millis, write_string, Bytes};
use super::listpack::Writer;
use super::payload::{self, Checksum, Refused};
use super::ziplist::tests::build as ziplist;
use super::*;
use kvik_types::hash::{self, Hash};
use kvik_types::list::{Element, End, List, NodeLimit};
use kvik_types::set::Set;
use kvik_types::stream::{Group, NodeLimits, Stream, StreamId};
use kvik_types::string::StrValue;
use kvik_types::zset::{self, ZSet};
use kvik_types::Value;
use proptest::prelude::*;

/// Redis 7.0's default thresholds.
pub(super) fn limits() -> Limits {
    Limits {
        hash: hash::Limits::default(),
        zset: zset::Limits {
            max_entries: 128,
            max_value: 64,
        },
        max_intset: 512,
        list_node: NodeLimit::from_config(-2),
    }
}

fn encoded(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode(value, &mut out, true);
    out
}

fn decoded(bytes: &[u8]) -> Result<Value> {
    decode(&mut Bytes::new(bytes), &limits())
}

/// Encode, decode, and check the value and its encoding came back.
fn assert_round_trip(value: &Value) {
    let back = decoded(&encoded(value)).expect("decodes");
    assert_eq!(&back, value);
    assert_eq!(back.encoding_name(), value.encoding_name());
}

fn string(text: &[u8]) -> Value {
    Value::Str(StrValue::from_bytes(text))
}

fn list(n: usize, element: impl Fn(usize) -> Vec<u8>) -> Value {
    let mut list = List::new();
    for i in 0..n {
        list.push(End::Tail, &element(i), limits().list_node);
    }
    Value::List(Box::new(list))
}

fn set(members: impl IntoIterator<Item = Vec<u8>>) -> Value {
    let mut set = Set::default();
    for member in members {
        set.insert(&member, limits().max_intset);
    }
    Value::Set(Box::new(set))
}

fn hash(n: usize, value_len: usize) -> Value {
    let mut hash = Hash::default();
    for i in 0..n {
        let value = vec![b'v'; value_len];
        hash.insert(format!("f{i}").as_bytes(), &value, limits().hash);
    }
    Value::Hash(Box::new(hash))
}

fn zset(n: usize) -> Value {
    let members: Vec<Vec<u8>> = (0..n).map(|i| format!("m{i}").into_bytes()).collect();
    let mut entries: Vec<(&[u8], f64)> = members
        .iter()
        .enumerate()
        .map(|(i, m)| (&m[..], i as f64 * 1.5 - 3.0))
        .collect();
    entries.push((b"inf", f64::INFINITY));
    Value::ZSet(Box::new(ZSet::from_entries(&mut entries, limits().zset)))
}

/// A stream over several nodes, with deleted entries, entries whose fields differ
/// from their node's first, and a group with pending entries and consumers.
fn stream() -> Stream {
    let node_limits = NodeLimits {
        max_entries: 4,
        max_bytes: 4096,
    };
    let mut s = Stream::new();
    for i in 1..=10u64 {
        let value = i.to_string();
        let pairs: [&[u8]; 4] = if i % 3 == 0 {
            [b"other", value.as_bytes(), b"x", b"y"]
        } else {
            [b"field", value.as_bytes(), b"n", b"-7"]
        };
        s.append(StreamId::new(1000 + i, i % 2), &pairs, node_limits);
    }
    s.delete(StreamId::new(1002, 0));
    s.delete(StreamId::new(1005, 1));
    let mut group = Group::new(StreamId::new(1004, 0), Some(4));
    let alice = group.consumer(b"alice", 77).0.seen_at;
    assert_eq!(alice, 77);
    group.consumer(b"bob", 88);
    let alice = group.consumer_name(b"alice").unwrap();
    let bob = group.consumer_name(b"bob").unwrap();
    group.assign(StreamId::new(1001, 1), &alice, 500, 1);
    group.assign(StreamId::new(1003, 1), &bob, 600, 3);
    group.assign(StreamId::new(1004, 0), &alice, 700, 2);
    s.groups.insert(b"g1".to_vec(), group);
    s.groups
        .insert(b"empty".to_vec(), Group::new(StreamId::MIN, None));
    s
}

#[test]
fn strings_round_trip_in_every_encoding() {
    for text in [
        &b""[..],
        b"0",
        b"-1",
        b"4000000000",
        b"9223372036854775807",
        b"007",
        b"short text",
        &[b'z'; 40],
        &[b'r'; 1000],
        b"the quick brown fox jumps over the lazy dog",
    ] {
        assert_round_trip(&string(text));
    }
}

#[test]
fn collections_round_trip_small_and_big() {
    assert_round_trip(&list(3, |i| format!("e{i}").into_bytes()));
    assert_round_trip(&list(5000, |i| i.to_string().into_bytes()));
    assert_round_trip(&list(20, |i| vec![b'a' + (i % 26) as u8; 10_000]));
    assert_round_trip(&set(
        (0..10).map(|i| (i * 1000 - 4000).to_string().into_bytes())
    ));
    assert_round_trip(&set(
        (0..10).map(|i| (i as i64 * (1 << 40)).to_string().into_bytes())
    ));
    assert_round_trip(&set((0..1000).map(|i| i.to_string().into_bytes())));
    assert_round_trip(&set([b"a".to_vec(), b"1".to_vec()]));
    assert_round_trip(&hash(5, 10));
    assert_round_trip(&hash(1000, 10));
    assert_round_trip(&hash(3, 100));
    assert_round_trip(&zset(5));
    assert_round_trip(&zset(500));
    assert_round_trip(&Value::Stream(Box::new(stream())));
    assert_round_trip(&Value::Stream(Box::new(Stream::new())));
}

#[test]
fn restored_values_take_the_encoding_the_limits_call_for() {
    let mut small = limits();
    small.max_intset = 4;
    small.hash.max_listpack_entries = 2;
    small.zset.max_entries = 2;
    let intset = encoded(&set((0..10).map(|i| i.to_string().into_bytes())));
    let back = decode(&mut Bytes::new(&intset), &small).unwrap();
    assert_eq!(back.encoding_name(), "hashtable");
    let back = decode(&mut Bytes::new(&encoded(&hash(3, 1))), &small).unwrap();
    assert_eq!(back.encoding_name(), "hashtable");
    let back = decode(&mut Bytes::new(&encoded(&zset(3))), &small).unwrap();
    assert_eq!(back.encoding_name(), "skiplist");
    // A big set whose members would fit an intset becomes one again, as in Redis.
    let plain = [&[kind::SET, 2][..], b"\xc0\x01\xc0\x02"].concat();
    assert_eq!(decoded(&plain).unwrap().encoding_name(), "intset");
}

/// A value of `kind` whose body is one string holding `blob`.
fn blob_value(kind: u8, blob: &[u8]) -> Vec<u8> {
    let mut out = vec![kind];
    write_string(&mut out, blob, false);
    out
}

#[test]
fn older_list_forms_decode() {
    let expected = list(3, |i| [&b"x"[..], b"12", b"y"][i].to_vec());
    let elements = [Element::Bytes(b"x"), Element::Int(12), Element::Bytes(b"y")];
    let zl = ziplist(&elements);
    assert_eq!(
        decoded(&blob_value(kind::LIST_ZIPLIST, &zl)).unwrap(),
        expected
    );
    let mut quick = vec![kind::LIST_QUICKLIST, 3];
    write_string(&mut quick, &ziplist(&elements[..1]), false);
    write_string(&mut quick, &ziplist(&[]), false);
    write_string(&mut quick, &ziplist(&elements[1..]), false);
    assert_eq!(decoded(&quick).unwrap(), expected);
    let plain = [&[kind::LIST, 3][..], b"\x01x\x0212\x01y"].concat();
    assert_eq!(decoded(&plain).unwrap(), expected);
    let mut quick2 = vec![kind::LIST_QUICKLIST_2, 2, 1];
    write_string(&mut quick2, b"x", false);
    quick2.push(2);
    let mut lp = Writer::new();
    lp.push(Element::Int(12));
    lp.push_bytes(b"y");
    write_string(&mut quick2, &lp.finish(), false);
    assert_eq!(decoded(&quick2).unwrap(), expected);
}

#[test]
fn older_hash_and_zset_forms_decode() {
    let expected = {
        let mut h = Hash::default();
        h.insert(b"a", b"1", limits().hash);
        h.insert(b"bb", b"xy", limits().hash);
        Value::Hash(Box::new(h))
    };
    let zipmap = b"\x02\x01a\x01\x001\x02bb\x02\x02xy..\xff";
    assert_eq!(
        decoded(&blob_value(kind::HASH_ZIPMAP, zipmap)).unwrap(),
        expected
    );
    let zl = ziplist(&[
        Element::Bytes(b"a"),
        Element::Int(1),
        Element::Bytes(b"bb"),
        Element::Bytes(b"xy"),
    ]);
    assert_eq!(
        decoded(&blob_value(kind::HASH_ZIPLIST, &zl)).unwrap(),
        expected
    );

    let mut entries: Vec<(&[u8], f64)> = vec![(b"a", 1.5), (b"b", -2.0), (b"c", f64::INFINITY)];
    let expected = Value::ZSet(Box::new(ZSet::from_entries(&mut entries, limits().zset)));
    let zl = ziplist(&[
        Element::Bytes(b"a"),
        Element::Bytes(b"1.5"),
        Element::Bytes(b"b"),
        Element::Int(-2),
        Element::Bytes(b"c"),
        Element::Bytes(b"inf"),
    ]);
    assert_eq!(
        decoded(&blob_value(kind::ZSET_ZIPLIST, &zl)).unwrap(),
        expected
    );
    let text = [&[kind::ZSET, 3][..], b"\x01a\x031.5\x01b\x02-2\x01c\xfe"].concat();
    assert_eq!(decoded(&text).unwrap(), expected);
    let mut binary = vec![kind::ZSET_2, 3];
    for (member, score) in [(&b"c"[..], f64::INFINITY), (b"a", 1.5), (b"b", -2.0)] {
        write_string(&mut binary, member, false);
        write_binary_double(&mut binary, score);
    }
    assert_eq!(decoded(&binary).unwrap(), expected);
}

#[test]
fn sets_as_listpacks_decode() {
    let mut lp = Writer::new();
    for member in [&b"5"[..], b"-3", b"7"] {
        lp.push_bytes(member);
    }
    let back = decoded(&blob_value(kind::SET_LISTPACK, &lp.finish())).unwrap();
    assert_eq!(back, set([b"5".to_vec(), b"-3".to_vec(), b"7".to_vec()]));
    assert_eq!(back.encoding_name(), "intset");
}

/// `stream()` written as an older or newer format: `STREAM_LISTPACKS` (no
/// first/max-deleted/added, no entries-read) or `_3` (consumers' active time).
fn stream_in_format(version: u8) -> Vec<u8> {
    let s = stream();
    let mut out = vec![match version {
        1 => kind::STREAM_LISTPACKS,
        _ => kind::STREAM_LISTPACKS_3,
    }];
    let mut v2 = Vec::new();
    super::stream::encode(&mut v2, &s, false);
    // The nodes, the length and the last ID are written alike in every format.
    let nodes_end = {
        let mut src = Bytes::new(&v2);
        use super::io::Source;
        src.count().unwrap();
        for _ in 0..2 * s.node_count() {
            src.string().unwrap();
        }
        v2.len() - src.left().unwrap()
    };
    out.extend_from_slice(&v2[..nodes_end]);
    write_len(&mut out, s.len());
    write_len(&mut out, s.last_id.ms);
    write_len(&mut out, s.last_id.seq);
    if version == 3 {
        for id in [s.first_id, s.max_deleted_id] {
            write_len(&mut out, id.ms);
            write_len(&mut out, id.seq);
        }
        write_len(&mut out, s.entries_added);
    }
    write_len(&mut out, s.groups.len() as u64);
    for (name, group) in &s.groups {
        write_string(&mut out, name, false);
        write_len(&mut out, group.last_id.ms);
        write_len(&mut out, group.last_id.seq);
        if version == 3 {
            write_len(&mut out, group.entries_read.unwrap_or(u64::MAX));
        }
        write_len(&mut out, group.pel.len() as u64);
        for (id, pending) in &group.pel {
            out.extend_from_slice(&id.ms.to_be_bytes());
            out.extend_from_slice(&id.seq.to_be_bytes());
            write_millis(&mut out, pending.delivered_at);
            write_len(&mut out, pending.deliveries);
        }
        write_len(&mut out, group.consumers.len() as u64);
        for (name, consumer) in &group.consumers {
            write_string(&mut out, name, false);
            write_millis(&mut out, consumer.seen_at);
            if version == 3 {
                write_millis(&mut out, consumer.seen_at + 1);
            }
            write_len(&mut out, consumer.pending.len() as u64);
            for id in &consumer.pending {
                out.extend_from_slice(&id.ms.to_be_bytes());
                out.extend_from_slice(&id.seq.to_be_bytes());
            }
        }
    }
    out
}

#[test]
fn streams_decode_from_7_0_and_7_2_formats() {
    let original = stream();
    let Value::Stream(v3) = decoded(&stream_in_format(3)).unwrap() else {
        panic!("a stream");
    };
    assert_eq!(*v3, original);
    let Value::Stream(v1) = decoded(&stream_in_format(1)).unwrap() else {
        panic!("a stream");
    };
    // The first format knows no deletions and no added count: they are derived.
    assert_eq!(v1.entries_added, original.len());
    assert_eq!(v1.max_deleted_id, StreamId::MIN);
    assert_eq!(v1.first_id, original.first_id);
    assert_eq!(
        v1.range(StreamId::MIN, StreamId::MAX, false).count(),
        original.len() as usize
    );
    assert_eq!(v1.groups[&b"g1"[..]].pel, original.groups[&b"g1"[..]].pel);
}

/// Samples of every type, encoded.
fn samples() -> Vec<Vec<u8>> {
    let mut samples: Vec<Vec<u8>> = [
        string(b"12"),
        string(&[b'q'; 300]),
        list(5, |i| i.to_string().into_bytes()),
        set((0..5).map(|i| i.to_string().into_bytes())),
        set([b"x".to_vec(), b"y".to_vec()]),
        hash(3, 5),
        hash(600, 3),
        zset(4),
        zset(200),
        Value::Stream(Box::new(stream())),
    ]
    .iter()
    .map(encoded)
    .collect();
    samples.push(stream_in_format(1));
    samples.push(stream_in_format(3));
    samples
}

#[test]
fn every_truncation_is_refused() {
    for sample in samples() {
        for cut in 0..sample.len() {
            assert!(
                decoded(&sample[..cut]).is_err(),
                "cut at {cut} of {sample:?}"
            );
        }
    }
}

#[test]
fn bit_flips_never_panic_and_what_decodes_re_encodes() {
    for sample in samples() {
        for at in 0..sample.len() {
            for bit in [0x01, 0x10, 0x80] {
                let mut damaged = sample.clone();
                damaged[at] ^= bit;
                if let Ok(value) = decoded(&damaged) {
                    assert_round_trip(&value);
                }
            }
        }
    }
}

#[test]
fn duplicates_nan_and_empty_collections_are_refused() {
    let refused = |bytes: &[u8]| assert!(decoded(bytes).is_err(), "{bytes:?}");
    refused(&[&[kind::SET, 2][..], b"\x01a\x01a"].concat());
    refused(&[&[kind::SET, 2][..], b"\x011\xc0\x01"].concat());
    refused(&[&[kind::HASH, 2][..], b"\x01f\x01x\x01f\x01y"].concat());
    refused(&[&[kind::ZSET, 2][..], b"\x01a\x011\x01a\x012"].concat());
    refused(&[&[kind::ZSET, 1][..], b"\x01a\xfd"].concat());
    let mut nan = vec![kind::ZSET_2, 1, 1, b'a'];
    write_binary_double(&mut nan, f64::NAN);
    refused(&nan);
    let mut lp = Writer::new();
    lp.push_bytes(b"a");
    lp.push_bytes(b"nan");
    refused(&blob_value(kind::ZSET_LISTPACK, &lp.finish()));
    let mut lp = Writer::new();
    lp.push_bytes(b"a");
    refused(&blob_value(kind::HASH_LISTPACK, &lp.finish()));
    for kind in [kind::LIST, kind::SET, kind::HASH, kind::ZSET, kind::ZSET_2] {
        refused(&[kind, 0]);
    }
    refused(&blob_value(kind::HASH_LISTPACK, &Writer::new().finish()));
    refused(&blob_value(kind::LIST_ZIPLIST, &ziplist(&[])));
    refused(&blob_value(
        kind::SET_INTSET,
        b"\x02\x00\x00\x00\x00\x00\x00\x00",
    ));
    refused(&[kind::LIST_QUICKLIST_2, 1, 3, 1, b'x']);
    refused(&[kind::MODULE_2, 0]);
    refused(&[99]);
}

#[test]
fn absurd_lengths_are_refused_without_allocating() {
    let huge = b"\x81\x00\x00\x10\x00\x00\x00\x00\x00";
    for kind in [
        kind::STRING,
        kind::LIST,
        kind::SET,
        kind::HASH,
        kind::ZSET_2,
    ] {
        assert!(decoded(&[&[kind][..], huge, b"abc"].concat()).is_err());
    }
    // A listpack header claiming 4 GB.
    assert!(decoded(&blob_value(
        kind::HASH_LISTPACK,
        b"\xff\xff\xff\xff\x02\x00\xff"
    ))
    .is_err());
    // A stream claiming a billion nodes, groups or PEL entries.
    assert!(decoded(&[&[kind::STREAM_LISTPACKS_2][..], huge].concat()).is_err());
}

/// The listpack of one stream node, for the damage tests below.
fn node_blob(entries: &[(i64, i64, i64)], live: i64, deleted: i64) -> Vec<u8> {
    let mut lp = Writer::new();
    for n in [live, deleted, 1] {
        lp.push(Element::Int(n));
    }
    lp.push_bytes(b"f");
    lp.push(Element::Int(0));
    for &(flags, ms, seq) in entries {
        for n in [flags | 2, ms, seq] {
            lp.push(Element::Int(n));
        }
        lp.push_bytes(b"v");
        lp.push(Element::Int(4));
    }
    lp.finish()
}

fn one_node_stream(blob: &[u8], length: u8) -> Vec<u8> {
    let mut out = vec![kind::STREAM_LISTPACKS_2, 1];
    write_string(
        &mut out,
        &[0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0],
        false,
    );
    write_string(&mut out, blob, false);
    // length, last ID 9-0, first ID 5-0, max deleted 0-0, added 9, no groups.
    out.extend_from_slice(&[length, 9, 0, 5, 0, 0, 0, 9, 0]);
    out
}

#[test]
fn inconsistent_stream_nodes_are_refused() {
    let good = node_blob(&[(0, 0, 0), (0, 1, 0)], 2, 0);
    assert!(decoded(&one_node_stream(&good, 2)).is_ok());
    // Wrong length, counts that disagree, entries out of order or above the last ID.
    assert!(decoded(&one_node_stream(&good, 3)).is_err());
    assert!(decoded(&one_node_stream(
        &node_blob(&[(0, 0, 0), (0, 1, 0)], 1, 1),
        1
    ))
    .is_err());
    assert!(decoded(&one_node_stream(
        &node_blob(&[(0, 1, 0), (0, 0, 0)], 2, 0),
        2
    ))
    .is_err());
    assert!(decoded(&one_node_stream(&node_blob(&[(0, -1, 0)], 1, 0), 1)).is_err());
    assert!(decoded(&one_node_stream(&node_blob(&[(0, 4, 0)], 1, 0), 1)).is_ok());
    assert!(decoded(&one_node_stream(&node_blob(&[(0, 5, 0)], 1, 0), 1)).is_err());
    assert!(decoded(&one_node_stream(&node_blob(&[], 0, 0), 0)).is_err());
    assert!(decoded(&one_node_stream(&node_blob(&[(8, 0, 0)], 1, 0), 1)).is_err());
    // Only deleted entries: nothing to keep, and nothing wrong either.
    assert!(decoded(&one_node_stream(&node_blob(&[(1, 0, 0)], 0, 1), 0)).is_ok());
}

#[test]
fn consumer_groups_must_cross_reference() {
    let base = one_node_stream(&node_blob(&[(0, 0, 0)], 1, 0), 1);
    let with_group = |pel: &[u8], consumers: &[u8]| {
        let mut out = base[..base.len() - 1].to_vec();
        out.push(1);
        write_string(&mut out, b"g", false);
        out.extend_from_slice(&[5, 0, 1]);
        out.extend_from_slice(pel);
        out.extend_from_slice(consumers);
        out
    };
    let id = [0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0];
    let pel = [&[1][..], &id, &[0; 8], &[1]].concat();
    let owner = |name: &[u8], ids: &[&[u8]]| {
        let mut out = Vec::new();
        write_string(&mut out, name, false);
        out.extend_from_slice(&[0; 8]);
        out.push(ids.len() as u8);
        ids.iter().for_each(|id| out.extend_from_slice(id));
        out
    };
    let one = [&[1][..], &owner(b"c", &[&id])].concat();
    assert!(decoded(&with_group(&pel, &one)).is_ok());
    // A PEL entry nobody owns, one owned twice, one owned but not in the PEL.
    assert!(decoded(&with_group(&pel, &[0])).is_err());
    let twice = [&[2][..], &owner(b"c", &[&id]), &owner(b"d", &[&id])].concat();
    assert!(decoded(&with_group(&pel, &twice)).is_err());
    assert!(decoded(&with_group(&[0], &one)).is_err());
    // The same consumer twice, the same PEL entry twice.
    let same = [&[2][..], &owner(b"c", &[&id]), &owner(b"c", &[])].concat();
    assert!(decoded(&with_group(&pel, &same)).is_err());
    let double_pel = [&[2][..], &id, &[0; 8], &[1], &id, &[0; 8], &[1]].concat();
    assert!(decoded(&with_group(&double_pel, &one)).is_err());
}

#[test]
fn payloads_refuse_damage_with_the_right_word() {
    let good = payload::dump(&hash(2, 2), true);
    assert!(payload::restore(&good, &limits(), Checksum::Verify).is_ok());
    let mut flipped = good.clone();
    flipped[2] ^= 4;
    assert_eq!(
        payload::restore(&flipped, &limits(), Checksum::Verify),
        Err(Refused::VersionOrChecksum)
    );
    // A valid checksum over garbage.
    let mut garbage = vec![kind::HASH_LISTPACK, 3, 1, 2, 3];
    garbage.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = payload::Crc64::of(&garbage);
    garbage.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(
        payload::restore(&garbage, &limits(), Checksum::Verify),
        Err(Refused::BadData)
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Arbitrary bytes after any type byte: an error or a value that re-encodes.
    #[test]
    fn random_bodies_never_panic(kind in 0u8..24, body in proptest::collection::vec(any::<u8>(), 0..200)) {
        let bytes = [&[kind][..], &body].concat();
        if let Ok(value) = decoded(&bytes) {
            assert_round_trip(&value);
        }
    }

    /// Valid payloads with a few bytes overwritten.
    #[test]
    fn mutated_samples_never_panic(
        which in 0usize..12,
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let mut bytes = samples()[which].clone();
        for (at, byte) in edits {
            let at = at.index(bytes.len());
            bytes[at] = byte;
        }
        if let Ok(value) = decoded(&bytes) {
            assert_round_trip(&value);
        }
    }
}
