//! The set against a model (a `BTreeSet` of byte strings) under random operations,
//! plus the encoding rules at their thresholds.

use super::*;
use proptest::prelude::*;
use std::collections::BTreeSet;

const MAX_INTSET: usize = 8;

fn members_of(set: &Set) -> BTreeSet<Vec<u8>> {
    let mut digits = itoa::Buffer::new();
    set.iter().map(|m| m.bytes(&mut digits).to_vec()).collect()
}

fn is_canonical_int(m: &[u8]) -> bool {
    parse_i64(m).is_some()
}

#[derive(Debug, Clone)]
enum Op {
    Insert(Vec<u8>),
    Remove(Vec<u8>),
    RemoveAt(usize),
    Rebuild,
}

/// Members that exercise every rule: small and wide integers, non-canonical
/// integers, text, the empty string and a member too long to be stored inline.
fn member() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (-20i64..20).prop_map(|v| v.to_string().into_bytes()),
        prop::sample::select(vec![
            "70000",
            "-2147483649",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "01",
            "+1",
            "-0",
            "",
            "a",
            "b",
            "a member longer than twenty-two bytes",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => member().prop_map(Op::Insert),
        2 => member().prop_map(Op::Remove),
        1 => any::<usize>().prop_map(Op::RemoveAt),
        1 => Just(Op::Rebuild),
    ]
}

proptest! {
    #[test]
    fn behaves_like_a_set_of_byte_strings(ops in prop::collection::vec(op(), 1..200)) {
        let mut set = Set::default();
        let mut model: BTreeSet<Vec<u8>> = BTreeSet::new();
        let mut was_table = false;
        for op in ops {
            match op {
                Op::Insert(m) => {
                    prop_assert_eq!(set.insert(&m, MAX_INTSET), model.insert(m));
                }
                Op::Remove(m) => {
                    prop_assert_eq!(set.remove(&m), model.remove(&m));
                }
                Op::RemoveAt(i) if !set.is_empty() => {
                    let at = i % set.len();
                    let expected = set.get(at).to_owned();
                    let taken = set.remove_at(at);
                    prop_assert_eq!(&taken, &expected);
                    let mut digits = itoa::Buffer::new();
                    prop_assert!(model.remove(taken.as_ref().bytes(&mut digits)));
                }
                Op::RemoveAt(_) => {}
                Op::Rebuild => {
                    set = set.rebuilt(MAX_INTSET);
                    was_table = false;
                }
            }
            prop_assert_eq!(set.len(), model.len());
            prop_assert_eq!(&members_of(&set), &model);
            for m in &model {
                prop_assert!(set.contains(m));
            }
            let fits_intset =
                model.len() <= MAX_INTSET && model.iter().all(|m| is_canonical_int(m));
            match set.encoding_name() {
                "intset" => {
                    prop_assert!(fits_intset && !was_table);
                    let ints: Vec<i64> = set.iter().map(|m| match m {
                        MemberRef::Int(v) => v,
                        MemberRef::Bytes(_) => unreachable!(),
                    }).collect();
                    prop_assert!(ints.windows(2).all(|w| w[0] < w[1]), "ascending");
                }
                _ => was_table = true,
            }
            // A full scan sees every member.
            let mut seen = BTreeSet::new();
            let mut cursor = 0;
            loop {
                let mut digits = itoa::Buffer::new();
                cursor = set.scan(cursor, 3, |m| {
                    seen.insert(m.bytes(&mut digits).to_vec());
                });
                if cursor == 0 {
                    break;
                }
            }
            prop_assert_eq!(&seen, &model);
        }
    }
}

#[test]
fn encoding_follows_the_intset_rules() {
    let mut s = Set::default();
    for v in 0..MAX_INTSET as i64 {
        s.insert(v.to_string().as_bytes(), MAX_INTSET);
    }
    assert_eq!(s.encoding_name(), "intset");
    s.insert(b"100", MAX_INTSET);
    assert_eq!(s.encoding_name(), "hashtable", "one past the limit");
    s.remove(b"100");
    assert_eq!(s.encoding_name(), "hashtable", "never converts back");
    assert_eq!(s.rebuilt(MAX_INTSET).encoding_name(), "intset");

    let mut t = Set::default();
    t.insert(b"1", MAX_INTSET);
    t.insert(b"01", MAX_INTSET);
    assert_eq!(t.encoding_name(), "hashtable");
    assert!(t.contains(b"1") && t.contains(b"01") && !t.contains(b"+1"));

    let mut none = Set::default();
    none.insert(b"1", 0);
    assert_eq!(
        none.encoding_name(),
        "hashtable",
        "a limit of 0 allows no intset"
    );
}

#[test]
fn equality_ignores_encoding_and_order() {
    let ints = Set::collect([MemberRef::Int(1), MemberRef::Int(2)], 10);
    let table = Set::collect([MemberRef::Int(2), MemberRef::Int(1)], 0);
    assert_eq!(ints.encoding_name(), "intset");
    assert_eq!(table.encoding_name(), "hashtable");
    assert_eq!(ints, table);
    assert_ne!(ints, Set::collect([MemberRef::Int(1)], 10));
    assert_eq!(format!("{ints:?}"), r#"{"1", "2"}"#);
}
