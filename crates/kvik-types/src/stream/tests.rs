//! The packed node representation checked against a plain model: a map from ID to
//! fields, through appends, deletions and trims with tiny node limits.

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

type Fields = Vec<(Vec<u8>, Vec<u8>)>;
type Model = BTreeMap<StreamId, Fields>;

#[derive(Debug, Clone)]
enum Op {
    /// Append with this many fields, taken from a small vocabulary (so that master
    /// fields repeat, and sometimes do not).
    Add {
        fields: Vec<(u8, Vec<u8>)>,
        gap: u8,
    },
    Delete(usize),
    MaxLen(u8),
    MinIdAt(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (proptest::collection::vec((0u8..4, proptest::collection::vec(any::<u8>(), 0..6)), 1..4), 0u8..3)
            .prop_map(|(fields, gap)| Op::Add { fields, gap }),
        2 => (0usize..64).prop_map(Op::Delete),
        1 => (0u8..20).prop_map(Op::MaxLen),
        1 => (0usize..64).prop_map(Op::MinIdAt),
    ]
}

fn entries_of(stream: &Stream, rev: bool) -> Vec<(StreamId, Fields)> {
    stream
        .range(StreamId::MIN, StreamId::MAX, rev)
        .map(|e| {
            (
                e.id,
                e.fields
                    .iter()
                    .map(|(f, v)| (f.to_vec(), v.to_vec()))
                    .collect(),
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn nodes_behave_like_a_map(
        ops in proptest::collection::vec(op(), 1..80),
        max_entries in 1u64..6,
        max_bytes in prop_oneof![Just(0u64), 20u64..120],
    ) {
        let limits = NodeLimits { max_entries, max_bytes };
        let mut stream = Stream::new();
        let mut model = Model::new();
        let mut next = StreamId::new(1, 0);
        for op in ops {
            match op {
                Op::Add { fields, gap } => {
                    let id = StreamId::new(next.ms + u64::from(gap), next.seq + 1);
                    next = id;
                    let pairs: Vec<Vec<u8>> = fields
                        .iter()
                        .flat_map(|(f, v)| [vec![b'f', b'0' + f], v.clone()])
                        .collect();
                    let refs: Vec<&[u8]> = pairs.iter().map(Vec::as_slice).collect();
                    stream.append(id, &refs, limits);
                    model.insert(id, pairs.chunks(2).map(|c| (c[0].clone(), c[1].clone())).collect());
                }
                Op::Delete(at) => {
                    let id = model.keys().nth(at % (model.len() + 1)).copied().unwrap_or(StreamId::MAX);
                    prop_assert_eq!(stream.delete(id), model.remove(&id).is_some());
                }
                Op::MaxLen(max) => {
                    let removed = stream.trim(Trim { to: TrimTo::MaxLen(u64::from(max)), approx: false, limit: 0 });
                    let excess = model.len().saturating_sub(usize::from(max));
                    prop_assert_eq!(removed, excess as u64);
                    for _ in 0..excess {
                        model.pop_first();
                    }
                }
                Op::MinIdAt(at) => {
                    let Some(min) = model.keys().nth(at % (model.len() + 1)).copied() else { continue };
                    stream.trim(Trim { to: TrimTo::MinId(min), approx: false, limit: 0 });
                    model.retain(|id, _| *id >= min);
                }
            }
            prop_assert_eq!(stream.len(), model.len() as u64);
            let expected: Vec<_> = model.iter().map(|(k, v)| (*k, v.clone())).collect();
            prop_assert_eq!(entries_of(&stream, false), expected.clone());
            let mut reversed = expected;
            reversed.reverse();
            prop_assert_eq!(entries_of(&stream, true), reversed);
            prop_assert_eq!(stream.first_id, model.keys().next().copied().unwrap_or(StreamId::MIN));
            for (first, node) in stream.nodes() {
                prop_assert!(node.stored() <= max_entries);
                prop_assert!(*first <= node.last);
            }
        }
        // Any window of the range agrees with the model too.
        if let (Some(lo), Some(hi)) = (model.keys().next().copied(), model.keys().last().copied()) {
            let mid = StreamId::new((lo.ms + hi.ms) / 2, 0);
            let got: Vec<StreamId> = stream.range(mid, hi, false).map(|e| e.id).collect();
            let want: Vec<StreamId> = model.range(mid..=hi).map(|(k, _)| *k).collect();
            prop_assert_eq!(got, want);
        }
    }
}

#[test]
fn approximate_trim_removes_whole_nodes_only() {
    let limits = NodeLimits {
        max_entries: 10,
        max_bytes: 0,
    };
    let mut stream = Stream::new();
    for i in 1..=25 {
        stream.append(StreamId::new(i, 0), &[b"f", b"v"], limits);
    }
    let trim = Trim {
        to: TrimTo::MaxLen(12),
        approx: true,
        limit: 0,
    };
    assert_eq!(stream.trim(trim), 10);
    assert_eq!(stream.len(), 15);
    assert_eq!(stream.first_id, StreamId::new(11, 0));
}

#[test]
fn repeated_fields_are_stored_once_per_node() {
    let limits = NodeLimits {
        max_entries: 100,
        max_bytes: 0,
    };
    let mut stream = Stream::new();
    let long_field = [b'x'; 200];
    for i in 1..=50 {
        stream.append(StreamId::new(i, 0), &[&long_field, b"v"], limits);
    }
    let (_, node) = stream.nodes().next().unwrap();
    assert!(node.bytes() < 200 + 50 * 8, "{} bytes", node.bytes());
}
