//! The list against a `VecDeque` model: random operation sequences under random node
//! limits, checking contents, both iteration orders and the node invariants after
//! every step.

use super::*;
use proptest::prelude::*;
use std::collections::VecDeque;

type Model = VecDeque<Vec<u8>>;

#[derive(Debug, Clone)]
enum Op {
    Push(End, Vec<u8>),
    Pop(End, usize),
    Discard(End, usize),
    Set(i64, Vec<u8>),
    Insert(Vec<u8>, End, Vec<u8>),
    Remove(Vec<u8>, usize, End),
    Get(i64),
    Range(usize, usize),
}

fn end() -> impl Strategy<Value = End> {
    prop_oneof![Just(End::Head), Just(End::Tail)]
}

/// Few distinct values so that searches hit, with every integer width, strings that
/// look like integers but are not, and lengths around the header boundaries.
fn item() -> impl Strategy<Value = Vec<u8>> {
    let fixed: Vec<Vec<u8>> = [
        "",
        "a",
        "b",
        "0",
        "7",
        "127",
        "128",
        "-1",
        "-129",
        "40000",
        "-8388609",
        "3000000000",
        "9223372036854775807",
        "-9223372036854775808",
        "01",
        "+5",
        "-0",
        "1.5",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    prop_oneof![
        8 => proptest::sample::select(fixed),
        3 => "[ab]{0,3}".prop_map(String::into_bytes),
        1 => (60usize..70).prop_map(|n| vec![b'x'; n]),
        1 => prop_oneof![Just(8191usize), Just(8192), Just(9000)].prop_map(|n| vec![b'y'; n]),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (end(), item()).prop_map(|(e, i)| Op::Push(e, i)),
        2 => (end(), 0usize..6).prop_map(|(e, n)| Op::Pop(e, n)),
        1 => (end(), 0usize..20).prop_map(|(e, n)| Op::Discard(e, n)),
        2 => (-30i64..30, item()).prop_map(|(i, v)| Op::Set(i, v)),
        2 => (item(), end(), item()).prop_map(|(p, s, v)| Op::Insert(p, s, v)),
        2 => (item(), 0usize..4, end()).prop_map(|(v, n, e)| Op::Remove(v, n, e)),
        1 => (-30i64..30).prop_map(Op::Get),
        1 => (0usize..30, 0usize..30).prop_map(|(s, n)| Op::Range(s, n)),
    ]
}

/// Node limits, each with a compress depth of 0 (none), 1 or 2.
fn limit() -> impl Strategy<Value = NodeLimit> {
    let fill = prop_oneof![
        (0usize..6).prop_map(NodeLimit::entries),
        (8usize..200).prop_map(NodeLimit::bytes),
        Just(NodeLimit::from_config(-2)),
    ];
    (fill, 0usize..3).prop_map(|(fill, depth)| fill.compressing(depth))
}

fn model_position(model: &Model, index: i64) -> Option<usize> {
    let len = model.len() as i64;
    let i = if index < 0 { index + len } else { index };
    (0..len).contains(&i).then_some(i as usize)
}

fn owned<'a>(elements: impl Iterator<Item = Element<'a>>) -> Vec<Vec<u8>> {
    elements.map(Element::to_vec).collect()
}

fn apply(list: &mut List, model: &mut Model, op: &Op, limit: NodeLimit) {
    match op {
        Op::Push(end, item) => {
            list.push(*end, item, limit);
            match end {
                End::Head => model.push_front(item.clone()),
                End::Tail => model.push_back(item.clone()),
            }
        }
        Op::Pop(end, n) => {
            let mut seen = Vec::new();
            let taken = list.pop_many(*end, *n, |e| seen.push(e.to_vec()));
            let expected: Vec<Vec<u8>> = (0..*n)
                .map_while(|_| match end {
                    End::Head => model.pop_front(),
                    End::Tail => model.pop_back(),
                })
                .collect();
            assert_eq!(taken, expected.len());
            assert_eq!(seen, expected);
        }
        Op::Discard(end, n) => {
            list.discard(*end, *n);
            for _ in 0..*n {
                match end {
                    End::Head => model.pop_front(),
                    End::Tail => model.pop_back(),
                };
            }
        }
        Op::Set(index, item) => {
            let position = list.position(*index);
            assert_eq!(position, model_position(model, *index));
            match position {
                Some(i) => {
                    assert!(list.set(i, item, limit));
                    model[i] = item.clone();
                }
                None => assert!(!list.set(model.len(), item, limit)),
            }
        }
        Op::Insert(pivot, side, item) => {
            let inserted = list.insert_beside(pivot, *side, item, limit);
            let found = model.iter().position(|e| e == pivot);
            assert_eq!(inserted, found.is_some());
            if let Some(at) = found {
                let at = if *side == End::Head { at } else { at + 1 };
                model.insert(at, item.clone());
            }
        }
        Op::Remove(item, max, from) => {
            let max = if *max == 0 { usize::MAX } else { *max };
            let removed = list.remove_matching(item, max, *from, limit);
            let mut positions: Vec<usize> =
                (0..model.len()).filter(|&i| model[i] == *item).collect();
            if *from == End::Tail {
                positions.reverse();
            }
            positions.truncate(max);
            positions.sort_unstable();
            for i in positions.iter().rev() {
                model.remove(*i);
            }
            assert_eq!(removed, positions.len());
        }
        Op::Get(index) => {
            let got = list
                .position(*index)
                .and_then(|i| list.get(i))
                .map(Element::to_vec);
            assert_eq!(got, model_position(model, *index).map(|i| model[i].clone()));
        }
        Op::Range(start, count) => {
            let got = owned(list.range(*start, *count));
            let expected: Vec<Vec<u8>> = model.iter().skip(*start).take(*count).cloned().collect();
            assert_eq!(got, expected);
            let mut backwards = owned(list.range(*start, *count).rev());
            backwards.reverse();
            assert_eq!(backwards, expected);
        }
    }
}

fn check(list: &List, model: &Model, limit: NodeLimit) {
    assert_eq!(list.len(), model.len());
    assert_eq!(
        owned(list.iter()),
        model.iter().cloned().collect::<Vec<_>>()
    );
    let mut backwards = owned(list.iter().rev());
    backwards.reverse();
    assert_eq!(backwards, owned(list.iter()));
    let nodes = list.nodes.count();
    assert!(nodes >= 1);
    let mut total = 0;
    for pack in list.nodes.iter() {
        assert!(!pack.is_empty() || nodes == 1, "empty node among {nodes}");
        assert!(
            pack.len() < 2 || limit.allows(pack.byte_len(), pack.len()),
            "node of {} entries, {} bytes breaks {limit:?}",
            pack.len(),
            pack.byte_len()
        );
        total += pack.len();
    }
    assert_eq!(total, list.len());
    if limit.compress_depth == 0 {
        assert_eq!(list.compressed_nodes(), 0);
    }
    let mut by_node = Vec::new();
    list.for_each_node(|node| by_node.extend(node.map(Element::to_vec)));
    assert_eq!(by_node, owned(list.iter()));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn behaves_like_a_deque(limit in limit(), ops in proptest::collection::vec(op(), 1..120)) {
        let mut list = List::new();
        let mut model = Model::new();
        for op in &ops {
            apply(&mut list, &mut model, op, limit);
            // Every decompressed copy a step leaves is one `forget_reads` drops.
            list.forget_reads();
            prop_assert!(!list.nodes.iter().any(Pack::has_read_copy));
            check(&list, &model, limit);
            list.forget_reads();
        }
        let copy = list.clone();
        prop_assert_eq!(copy, list);
    }
}

#[test]
fn node_limits_follow_the_config() {
    assert_eq!(NodeLimit::from_config(-1), NodeLimit::bytes(4096));
    assert_eq!(NodeLimit::from_config(-2), NodeLimit::bytes(8192));
    assert_eq!(NodeLimit::from_config(-5), NodeLimit::bytes(65536));
    assert_eq!(NodeLimit::from_config(128), NodeLimit::entries(128));
    assert_eq!(NodeLimit::from_config(0), NodeLimit::entries(0));
    assert_eq!(NodeLimit::from_config(-6), NodeLimit::entries(0));
}

#[test]
fn a_long_list_stays_compact_and_reachable() {
    let limit = NodeLimit::from_config(-2);
    let mut list = List::new();
    let n = 200_000;
    for i in 0..n {
        list.push(End::Tail, format!("value:{i}").as_bytes(), limit);
    }
    assert!(matches!(list.nodes, Nodes::Many(_)));
    // "value:NNNNNN" is 12 bytes: 14 with header and backlen, little more for nodes.
    let per_element = list.heap_size() as f64 / n as f64;
    assert!(per_element < 15.0, "{per_element} bytes per element");
    for i in [0, 1, n / 3, n / 2, n - 2, n - 1] {
        assert_eq!(
            list.get(i).unwrap().to_vec(),
            format!("value:{i}").into_bytes()
        );
    }
    assert_eq!(list.pop(End::Head).unwrap(), b"value:0");
    assert_eq!(
        list.pop(End::Tail).unwrap(),
        format!("value:{}", n - 1).into_bytes()
    );
    list.discard(End::Head, n / 2);
    assert_eq!(
        list.get(0).unwrap().to_vec(),
        format!("value:{}", n / 2 + 1).into_bytes()
    );
}

#[test]
fn a_big_element_gets_a_node_of_its_own() {
    let limit = NodeLimit::from_config(-2);
    let mut list = List::new();
    list.push(End::Tail, b"small", limit);
    list.push(End::Tail, &vec![b'z'; 9000], limit);
    list.push(End::Tail, b"small", limit);
    assert_eq!(list.nodes.count(), 3);
    assert_eq!(
        list.remove_matching(&vec![b'z'; 9000], 1, End::Head, limit),
        1
    );
    assert_eq!(list.nodes.count(), 1);
    assert_eq!(list.len(), 2);
}

/// 100 elements of 100 similar bytes: about 10 KB, so an 8 KB node holds ~80.
fn compressible(i: usize) -> Vec<u8> {
    format!("{i:08}:{}", "abcdefgh".repeat(11)).into_bytes()
}

#[test]
fn interior_nodes_are_compressed_under_a_depth() {
    let n = 20_000;
    let fill = |depth| {
        let limit = NodeLimit::from_config(-2).compressing(depth);
        let mut list = List::new();
        for i in 0..n {
            list.push(End::Tail, &compressible(i), limit);
        }
        list
    };
    let raw = fill(0);
    let mut packed = fill(1);
    assert_eq!(raw.compressed_nodes(), 0);
    let nodes = packed.node_count();
    assert_eq!(packed.compressed_nodes(), nodes - 2);
    assert!(!packed.nodes.get(0).is_compressed());
    assert!(!packed.nodes.get(nodes - 1).is_compressed());
    assert!(
        packed.heap_size() * 3 < raw.heap_size(),
        "{} vs {} bytes",
        packed.heap_size(),
        raw.heap_size()
    );
    assert_eq!(packed, raw);

    // Reads through `reading` leave every interior node compressed, with no copy.
    packed.forget_reads();
    let held = packed.heap_size();
    {
        let reading = packed.reading();
        assert_eq!(reading.get(n / 2).unwrap().to_vec(), compressible(n / 2));
        assert_eq!(reading.iter().count(), n);
    }
    assert_eq!(packed.heap_size(), held);

    // Pushes and pops at the ends leave the interior as it is.
    let limit = NodeLimit::from_config(-2).compressing(1);
    for i in 0..1000 {
        packed.push(End::Head, &compressible(i), limit);
        packed.pop(End::Tail);
    }
    assert_eq!(packed.compressed_nodes(), packed.node_count() - 2);

    // A change in the middle compresses the node again.
    assert!(packed.set(n / 2, b"changed", limit));
    assert!(packed.insert_beside(b"changed", End::Tail, b"after", limit));
    assert_eq!(packed.compressed_nodes(), packed.node_count() - 2);
    assert_eq!(packed.get(n / 2 + 1).unwrap().to_vec(), b"after");
}

#[test]
fn a_deeper_depth_keeps_more_nodes_raw_and_depth_zero_compresses_nothing_new() {
    let mut list = List::new();
    for i in 0..5000 {
        list.push(
            End::Tail,
            &compressible(i),
            NodeLimit::from_config(-2).compressing(2),
        );
    }
    let nodes = list.node_count();
    assert_eq!(list.compressed_nodes(), nodes - 4);
    // Written at depth 0 from now on: the nodes already compressed stay so until
    // touched, new ones stay raw.
    for i in 0..5000 {
        list.push(End::Tail, &compressible(i), NodeLimit::from_config(-2));
    }
    assert_eq!(list.compressed_nodes(), nodes - 4);
}
