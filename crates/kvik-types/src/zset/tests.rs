//! The sorted set against a model: a map from member to score, whose order is
//! computed by sorting. Random sequences of additions, score changes, removals,
//! range reads, rank lookups and pops must give the same answers in both encodings.

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

type Model = BTreeMap<Vec<u8>, f64>;

fn model_order(model: &Model) -> Vec<(Vec<u8>, f64)> {
    let mut entries: Vec<(Vec<u8>, f64)> = model.iter().map(|(m, s)| (m.clone(), *s)).collect();
    entries.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap().then_with(|| a.0.cmp(&b.0)));
    entries
}

fn contents(zset: &ZSet) -> Vec<(Vec<u8>, f64)> {
    let mut out = Vec::new();
    zset.for_each(|m, s| out.push((m.to_vec(), s)));
    out
}

fn visited(zset: &ZSet, ranks: Range<usize>, reverse: bool) -> Vec<(Vec<u8>, f64)> {
    let mut out = Vec::new();
    zset.visit(ranks, reverse, |m, s| out.push((m.to_vec(), s)));
    out
}

fn member() -> impl Strategy<Value = Vec<u8>> {
    // Few distinct members, so that operations meet existing ones; a few long ones
    // to cross zset-max-listpack-value.
    prop_oneof![
        8 => (0u8..40).prop_map(|i| format!("m{i}").into_bytes()),
        1 => (0u8..4).prop_map(|i| vec![b'a' + i; 70]),
    ]
}

fn score() -> impl Strategy<Value = f64> {
    prop_oneof![
        6 => (-20i32..20).prop_map(f64::from),
        2 => (-20i32..20).prop_map(|i| f64::from(i) / 4.0),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(-0.0),
    ]
}

#[derive(Debug, Clone)]
enum Op {
    Set(Vec<u8>, f64),
    Incr(Vec<u8>, f64),
    Remove(Vec<u8>),
    Rank(Vec<u8>),
    Ranks(usize, usize, bool),
    Scores(f64, bool, f64, bool),
    Lex(Vec<u8>, bool, Vec<u8>, bool),
    RemoveRanks(usize, usize),
    Pop(bool, usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (member(), score()).prop_map(|(m, s)| Op::Set(m, s)),
        2 => (member(), score()).prop_map(|(m, s)| Op::Incr(m, s)),
        3 => member().prop_map(Op::Remove),
        1 => member().prop_map(Op::Rank),
        1 => (0usize..200, 0usize..200, any::<bool>()).prop_map(|(a, b, r)| Op::Ranks(a, b, r)),
        1 => (score(), any::<bool>(), score(), any::<bool>())
            .prop_map(|(a, ax, b, bx)| Op::Scores(a, ax, b, bx)),
        1 => (member(), any::<bool>(), member(), any::<bool>())
            .prop_map(|(a, ax, b, bx)| Op::Lex(a, ax, b, bx)),
        1 => (0usize..200, 0usize..5).prop_map(|(a, n)| Op::RemoveRanks(a, n)),
        1 => (any::<bool>(), 0usize..5).prop_map(|(max, n)| Op::Pop(max, n)),
    ]
}

fn limits() -> impl Strategy<Value = Limits> {
    prop_oneof![
        Just(Limits {
            max_entries: 128,
            max_value: 64
        }),
        Just(Limits {
            max_entries: 8,
            max_value: 64
        }),
        Just(Limits {
            max_entries: 0,
            max_value: 64
        }),
    ]
}

/// Apply one operation to both; check what it answers.
fn step(zset: &mut ZSet, model: &mut Model, op: Op, limits: Limits) -> Result<(), TestCaseError> {
    let order = model_order(model);
    match op {
        Op::Set(m, s) => {
            prop_assert_eq!(zset.set_score(&m, s, limits), model.insert(m, s));
        }
        Op::Incr(m, delta) => {
            let new = model.get(&m).map_or(delta, |old| old + delta);
            if !new.is_nan() {
                zset.set_score(&m, new, limits);
                model.insert(m, new);
            }
        }
        Op::Remove(m) => prop_assert_eq!(zset.remove(&m), model.remove(&m)),
        Op::Rank(m) => {
            let expected = order.iter().position(|(x, _)| *x == m);
            prop_assert_eq!(zset.rank(&m), expected);
            if let Some(rank) = expected {
                let (member, score) = zset.get(rank);
                prop_assert_eq!((member.to_vec(), score), order[rank].clone());
            }
        }
        Op::Ranks(a, b, reverse) => {
            let ranks = a.min(order.len())..b.min(order.len()).max(a.min(order.len()));
            let mut expected = order[ranks.clone()].to_vec();
            if reverse {
                expected.reverse();
            }
            prop_assert_eq!(visited(zset, ranks, reverse), expected);
        }
        Op::Scores(min, min_exclusive, max, max_exclusive) => {
            let range = ScoreRange {
                min,
                min_exclusive,
                max,
                max_exclusive,
            };
            let expected: Vec<_> = order
                .iter()
                .filter(|(_, s)| range.reaches_min(*s) && range.within_max(*s))
                .cloned()
                .collect();
            let span = zset.score_span(&range);
            prop_assert_eq!(visited(zset, span, false), expected);
        }
        Op::Lex(a, ax, b, bx) => {
            // Some bounds are the ends of the order.
            fn bound(m: &[u8], exclusive: bool) -> LexBound<'_> {
                match (m.first(), exclusive) {
                    (Some(b'm'), _) if m.ends_with(b"0") => LexBound::First,
                    (Some(b'm'), _) if m.ends_with(b"9") => LexBound::Last,
                    (_, true) => LexBound::Exclusive(m),
                    (_, false) => LexBound::Inclusive(m),
                }
            }
            let range = LexRange {
                min: bound(&a, ax),
                max: bound(&b, bx),
            };
            // Lexicographic ranges assume one score: check them on the members alone.
            let mut flat = ZSet::default();
            for m in model.keys() {
                flat.set_score(m, 0.0, limits);
            }
            let expected: Vec<Vec<u8>> = model
                .keys()
                .filter(|m| range.reaches_min(m) && range.within_max(m))
                .cloned()
                .collect();
            let mut got = Vec::new();
            flat.visit(flat.lex_span(&range, false, 0), false, |m, _| {
                got.push(m.to_vec())
            });
            if range.is_empty() {
                prop_assert!(got.is_empty());
            } else {
                prop_assert_eq!(got, expected);
            }
        }
        Op::RemoveRanks(start, n) => {
            let start = start.min(order.len());
            let ranks = start..(start + n).min(order.len());
            let mut removed = Vec::new();
            zset.remove_ranks(ranks.clone(), |m, s| removed.push((m.to_vec(), s)));
            prop_assert_eq!(&removed[..], &order[ranks]);
            removed.iter().for_each(|(m, _)| {
                model.remove(m);
            });
        }
        Op::Pop(max, count) => {
            let end = if max { End::Max } else { End::Min };
            let popped = zset.pop(end, count);
            let n = count.min(order.len());
            let mut expected = if max {
                order[order.len() - n..].to_vec()
            } else {
                order[..n].to_vec()
            };
            if max {
                expected.reverse();
            }
            prop_assert_eq!(&popped, &expected);
            popped.iter().for_each(|(m, _)| {
                model.remove(m);
            });
        }
    }
    prop_assert_eq!(zset.len(), model.len());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn behaves_like_a_sorted_map(limits in limits(), ops in proptest::collection::vec(op(), 1..400)) {
        let mut zset = ZSet::default();
        let mut model = Model::new();
        let mut ever_too_big = false;
        for op in ops {
            step(&mut zset, &mut model, op, limits)?;
            ever_too_big |= model.len() > limits.max_entries
                || model.keys().any(|m| m.len() > limits.max_value);
            // The encoding changes once, at the first entry that breaks a threshold.
            let expected = if ever_too_big { "skiplist" } else { "listpack" };
            prop_assert_eq!(zset.encoding_name(), expected);
        }
        prop_assert_eq!(contents(&zset), model_order(&model));
        let mut entries: Vec<(&[u8], f64)> = model.iter().map(|(m, s)| (&m[..], *s)).collect();
        let rebuilt = ZSet::from_entries(&mut entries, limits);
        prop_assert_eq!(&rebuilt, &zset);
    }

    /// A big set scanned to the end returns every member present throughout, even
    /// with members added and removed between the steps.
    #[test]
    fn scan_returns_every_member_present_throughout(
        removals in proptest::collection::vec(0u32..400, 0..100),
        count in 1usize..50,
    ) {
        let limits = Limits { max_entries: 0, max_value: 64 };
        let mut zset = ZSet::default();
        for i in 0..400u32 {
            zset.set_score(format!("m{i}").as_bytes(), f64::from(i % 13), limits);
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut removals = removals.into_iter();
        let mut added = 0;
        loop {
            cursor = zset.scan(cursor, count, |m, _| {
                seen.insert(m.to_vec());
            });
            if cursor == 0 {
                break;
            }
            if let Some(r) = removals.next() {
                zset.remove(format!("m{r}").as_bytes());
                zset.set_score(format!("new{added}").as_bytes(), 1.0, limits);
                added += 1;
            }
        }
        let mut survivors = Vec::new();
        zset.for_each(|m, _| {
            if m.starts_with(b"m") {
                survivors.push(m.to_vec());
            }
        });
        for m in survivors {
            prop_assert!(seen.contains(&m));
        }
    }
}

#[test]
fn a_small_set_is_small() {
    assert!(std::mem::size_of::<ZSet>() <= 32);
}

#[test]
fn small_sets_are_listpacks_until_a_threshold_breaks() {
    let limits = Limits {
        max_entries: 3,
        max_value: 5,
    };
    let mut zset = ZSet::default();
    for (i, m) in [&b"a"[..], b"b", b"c"].iter().enumerate() {
        zset.set_score(m, i as f64, limits);
    }
    assert_eq!(zset.encoding_name(), "listpack");
    zset.set_score(b"a", 10.0, limits);
    assert_eq!(zset.encoding_name(), "listpack");
    zset.set_score(b"d", 1.0, limits);
    assert_eq!(zset.encoding_name(), "skiplist");
    zset.remove(b"d");
    zset.remove(b"a");
    assert_eq!(zset.encoding_name(), "skiplist");

    let mut long = ZSet::default();
    long.set_score(b"123456", 1.0, limits);
    assert_eq!(long.encoding_name(), "skiplist");
}

#[test]
fn a_big_set_costs_less_than_redis_per_member() {
    // Redis 7.0 takes about 109 bytes a member for a million members like these.
    let limits = Limits {
        max_entries: 128,
        max_value: 64,
    };
    let mut zset = ZSet::default();
    let n = 200_000u32;
    for i in 0..n {
        zset.set_score(format!("member:{i}").as_bytes(), f64::from(i), limits);
    }
    let per_member = zset.heap_size() / n as usize;
    assert!(per_member < 80, "{per_member} bytes a member");
}
