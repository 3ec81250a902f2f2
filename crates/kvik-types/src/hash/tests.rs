//! The hash type against a model: a vector of pairs in insertion order, which is
//! exactly what a listpack must look like, and what a hashtable must hold.

use super::*;
use proptest::prelude::*;
use std::collections::BTreeSet;

const SMALL: Limits = Limits {
    max_listpack_entries: 8,
    max_listpack_value: 16,
};

fn bytes(s: &str) -> &[u8] {
    s.as_bytes()
}

#[test]
fn hash_is_small() {
    assert!(std::mem::size_of::<Hash>() <= 32);
}

#[test]
fn listpack_keeps_insertion_order_and_updates_in_place() {
    let mut h = Hash::default();
    assert!(h.insert(b"b", b"1", SMALL));
    assert!(h.insert(b"a", b"2", SMALL));
    assert!(h.insert(b"", b"", SMALL));
    assert!(!h.insert(b"b", b"three", SMALL));
    assert_eq!(h.encoding_name(), "listpack");
    let pairs: Vec<_> = h.iter().collect();
    assert_eq!(
        pairs,
        [
            (bytes("b"), bytes("three")),
            (bytes("a"), bytes("2")),
            (bytes(""), bytes(""))
        ]
    );
    assert!(h.remove(b"a"));
    assert!(!h.remove(b"a"));
    assert_eq!(h.get(b"b"), Some(&b"three"[..]));
    assert_eq!(h.get(b""), Some(&b""[..]));
    assert_eq!(h.len(), 2);
}

#[test]
fn converts_past_either_limit_and_never_back() {
    let mut h = Hash::default();
    for i in 0..8 {
        h.insert(format!("f{i}").as_bytes(), b"v", SMALL);
    }
    assert_eq!(h.encoding_name(), "listpack");
    h.insert(b"f8", b"v", SMALL);
    assert_eq!(h.encoding_name(), "hashtable");
    for i in 0..9 {
        h.remove(format!("f{i}").as_bytes());
    }
    h.insert(b"x", b"y", SMALL);
    assert_eq!(h.encoding_name(), "hashtable");

    let long = [b'x'; 17];
    let mut by_value = Hash::default();
    by_value.insert(b"f", &long[..16], SMALL);
    assert_eq!(by_value.encoding_name(), "listpack");
    by_value.insert(b"f", &long, SMALL);
    assert_eq!(by_value.encoding_name(), "hashtable");
    let mut by_field = Hash::default();
    by_field.insert(&long, b"v", SMALL);
    assert_eq!(by_field.encoding_name(), "hashtable");
}

#[test]
fn conversion_keeps_order_and_contents() {
    let mut h = Hash::default();
    for i in 0..9 {
        h.insert(
            format!("f{i}").as_bytes(),
            format!("v{i}").as_bytes(),
            SMALL,
        );
    }
    assert_eq!(h.encoding_name(), "hashtable");
    let fields: Vec<String> = h
        .iter()
        .map(|(f, _)| String::from_utf8(f.to_vec()).unwrap())
        .collect();
    assert_eq!(fields, (0..9).map(|i| format!("f{i}")).collect::<Vec<_>>());
    assert_eq!(h.get(b"f4"), Some(&b"v4"[..]));
}

#[test]
fn equality_ignores_encoding() {
    let mut a = Hash::default();
    let mut b = Hash::default();
    for i in 0..9 {
        a.insert(format!("f{i}").as_bytes(), b"v", SMALL);
        b.insert(format!("f{}", 8 - i).as_bytes(), b"v", Limits::default());
    }
    assert_ne!(a.encoding_name(), b.encoding_name());
    assert_eq!(a, b);
    b.insert(b"f0", b"w", SMALL);
    assert_ne!(a, b);
    assert_eq!(a.clone(), a);
}

#[test]
fn listpack_scan_is_one_step() {
    let mut h = Hash::default();
    h.insert(b"a", b"1", SMALL);
    h.insert(b"b", b"2", SMALL);
    let mut seen = Vec::new();
    assert_eq!(h.scan(0, 1, |f, _| seen.push(f.to_vec())), 0);
    assert_eq!(seen, [b"a".to_vec(), b"b".to_vec()]);
}

#[test]
fn table_scan_walks_count_at_a_time() {
    let mut h = Hash::default();
    for i in 0..100 {
        h.insert(format!("f{i}").as_bytes(), b"v", SMALL);
    }
    let (mut cursor, mut seen, mut steps) = (0, BTreeSet::new(), 0);
    loop {
        let mut batch = 0;
        cursor = h.scan(cursor, 10, |f, _| {
            batch += 1;
            seen.insert(f.to_vec());
        });
        steps += 1;
        assert!(batch <= 10);
        if cursor == 0 {
            break;
        }
    }
    assert_eq!(steps, 10);
    assert_eq!(seen.len(), 100);
}

#[test]
fn heap_size_grows_with_contents() {
    let mut h = Hash::default();
    let empty = h.heap_size();
    for i in 0..1000 {
        h.insert(format!("field:{i}").as_bytes(), b"some value", SMALL);
    }
    assert!(h.heap_size() > empty + 1000 * 20, "{}", h.heap_size());
}

/// One step of a random workload.
#[derive(Debug, Clone)]
enum Op {
    Insert(u8, usize),
    Remove(u8),
    ScanStep(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..24, 0usize..20).prop_map(|(f, v)| Op::Insert(f, v)),
        2 => (0u8..24).prop_map(Op::Remove),
        1 => (1usize..6).prop_map(Op::ScanStep),
    ]
}

fn field(f: u8) -> Vec<u8> {
    // A few fields are long enough to force the hashtable encoding on their own.
    let len = if f == 23 { 20 } else { 1 + f as usize % 3 };
    vec![b'a' + f; len]
}

fn value(n: usize) -> Vec<u8> {
    (0..n).map(|i| b'0' + (i % 10) as u8).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Every operation agrees with the model; a listpack lists the model's order; a
    /// scan running across the workload returns every field present from its first
    /// step to its last.
    #[test]
    fn behaves_like_an_ordered_map(ops in proptest::collection::vec(op(), 1..120)) {
        let mut hash = Hash::default();
        let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        // The running scan: its cursor, the fields it returned, and the fields present
        // since it started (removed ones drop out).
        let mut cursor = 0u64;
        let mut returned = BTreeSet::new();
        let mut always_there: Option<BTreeSet<Vec<u8>>> = None;

        for op in ops {
            match op {
                Op::Insert(f, v) => {
                    let (f, v) = (field(f), value(v));
                    let at = model.iter().position(|(k, _)| *k == f);
                    prop_assert_eq!(hash.insert(&f, &v, SMALL), at.is_none());
                    match at {
                        Some(i) => model[i].1 = v,
                        None => model.push((f, v)),
                    }
                }
                Op::Remove(f) => {
                    let f = field(f);
                    let at = model.iter().position(|(k, _)| *k == f);
                    prop_assert_eq!(hash.remove(&f), at.is_some());
                    if let Some(i) = at {
                        model.remove(i);
                    }
                    if let Some(set) = always_there.as_mut() {
                        set.remove(&f);
                    }
                }
                Op::ScanStep(count) => {
                    if always_there.is_none() {
                        always_there = Some(model.iter().map(|(k, _)| k.clone()).collect());
                    }
                    cursor = hash.scan(cursor, count, |f, _| {
                        returned.insert(f.to_vec());
                    });
                    if cursor == 0 {
                        let expected = always_there.take().unwrap();
                        prop_assert!(expected.is_subset(&returned), "missed {:?}", expected.difference(&returned).collect::<Vec<_>>());
                        returned.clear();
                    }
                }
            }
            prop_assert_eq!(hash.len(), model.len());
            for (f, v) in &model {
                prop_assert_eq!(hash.get(f), Some(&v[..]));
            }
            let listed: Vec<(Vec<u8>, Vec<u8>)> =
                hash.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
            if hash.encoding_name() == "listpack" {
                prop_assert_eq!(&listed, &model);
                prop_assert!(model.len() <= SMALL.max_listpack_entries);
            } else {
                let mut sorted = model.clone();
                sorted.sort();
                let mut listed = listed;
                listed.sort();
                prop_assert_eq!(listed, sorted);
            }
            let positions = hash.positions();
            prop_assert_eq!(positions.len(), model.len());
            for at in 0..positions.len() {
                let (f, v) = positions.get(at);
                prop_assert_eq!(hash.get(f), Some(v));
            }
        }
    }
}
