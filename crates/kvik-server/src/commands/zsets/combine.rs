//! Combining sets: ZUNION, ZINTER, ZDIFF, ZINTERCARD, and ZUNIONSTORE, ZINTERSTORE,
//! ZDIFFSTORE.
//!
//! Inputs may be plain sets, whose members all score 1. Redis's order of checks:
//! the key count, then every key's type (before any option is read), then the
//! options. Union and intersection take the inputs from
//! the smallest to the largest, as Redis does, so that sums of more than two
//! weighted scores round the same way; the difference keeps the first key first.
//! A weighted score that is not a number (0 times infinity) counts as 0, and so does
//! a sum of opposite infinities; except that an intersection, as in Redis, adds the
//! scores of the later inputs unzeroed (a sum with such a score is 0, a minimum or
//! maximum passes it over).
//!
//! The STORE forms have two key specs: the destination, then the counted inputs;
//! `call` (or EXEC) locks both.

use super::{limits, store, EntryWriter, Layout};
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::keyspace::Locked;
use crate::types::set::{MemberRef, Set};
use crate::types::zset::{sort_entries, ZSet};
use crate::types::Value;
use hashbrown::hash_map::Entry;
use std::borrow::Cow;

type Members<'a> = hashbrown::HashMap<Cow<'a, [u8]>, f64, foldhash::fast::RandomState>;

/// Entries of a result: members borrowed from the inputs where possible.
type Combined<'a> = Vec<(Cow<'a, [u8]>, f64)>;

/// Members of a sorted set are read this many ranks at a time, so an intersection
/// that reaches its LIMIT stops soon after.
const CHUNK: usize = 256;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    fn apply(self, total: &mut f64, value: f64) {
        match self {
            Aggregate::Sum => {
                *total += value;
                if total.is_nan() {
                    *total = 0.0;
                }
            }
            // Not f64::min and max: they may pick either of -0 and 0.
            Aggregate::Min if value < *total => *total = value,
            Aggregate::Max if value > *total => *total = value,
            Aggregate::Min | Aggregate::Max => {}
        }
    }
}

/// A score times its weight, 0 where that is not a number.
fn weighted(score: f64, weight: f64) -> f64 {
    let value = score * weight;
    if value.is_nan() {
        0.0
    } else {
        value
    }
}

/// What a command does with the combination.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Output {
    Reply,
    Store,
    Cardinality,
}

/// One input.
#[derive(Clone, Copy)]
enum Source<'a> {
    Missing,
    Sorted(&'a ZSet),
    /// A plain set: every member scores 1.
    Plain(&'a Set),
}

impl<'a> Source<'a> {
    fn len(&self) -> usize {
        match self {
            Source::Missing => 0,
            Source::Sorted(zset) => zset.len(),
            Source::Plain(set) => set.len(),
        }
    }

    fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            Source::Missing => None,
            Source::Sorted(zset) => zset.score(member),
            Source::Plain(set) => set.contains(member).then_some(1.0),
        }
    }

    /// Call `f` with each member and its score, in order, while it returns true.
    fn each(&self, f: impl FnMut(Cow<'a, [u8]>, f64) -> bool) {
        match self {
            Source::Missing => {}
            Source::Sorted(zset) => each_sorted(zset, f),
            Source::Plain(set) => each_plain(set, f),
        }
    }
}

fn each_sorted<'a>(zset: &'a ZSet, mut f: impl FnMut(Cow<'a, [u8]>, f64) -> bool) {
    let mut going = true;
    let mut start = 0;
    while going && start < zset.len() {
        let end = (start + CHUNK).min(zset.len());
        zset.visit(start..end, false, |member, score| {
            going = going && f(Cow::Borrowed(member), score);
        });
        start = end;
    }
}

/// An intset's members are integers: they become text here.
fn each_plain<'a>(set: &'a Set, mut f: impl FnMut(Cow<'a, [u8]>, f64) -> bool) {
    for member in set.iter() {
        let member = match member {
            MemberRef::Bytes(bytes) => Cow::Borrowed(bytes),
            MemberRef::Int(n) => Cow::Owned(itoa::Buffer::new().format(n).as_bytes().to_vec()),
        };
        if !f(member, 1.0) {
            break;
        }
    }
}

/// An input with its weight.
struct Weighted<'a> {
    source: Source<'a>,
    weight: f64,
}

/// The options after the keys.
struct Options {
    weights: Option<Vec<f64>>,
    aggregate: Aggregate,
    with_scores: bool,
    /// ZINTERCARD's LIMIT; 0 is none.
    limit: usize,
}

impl Options {
    /// Which options are allowed depends on the operation and the output; anything
    /// else is a syntax error.
    fn parse(mut rest: &[&[u8]], keys: usize, op: Op, output: Output) -> Result<Options, CmdError> {
        let mut options = Options {
            weights: None,
            aggregate: Aggregate::Sum,
            with_scores: false,
            limit: 0,
        };
        let scored = op != Op::Diff && output != Output::Cardinality;
        while let [option, tail @ ..] = rest {
            if scored && tail.len() >= keys && args::is(option, "weights") {
                let weights = tail[..keys]
                    .iter()
                    .map(|w| args::float(w).map_err(|_| "ERR weight value is not a float".into()))
                    .collect::<Result<_, CmdError>>()?;
                options.weights = Some(weights);
                rest = &tail[keys..];
            } else if scored && !tail.is_empty() && args::is(option, "aggregate") {
                options.aggregate = match tail[0] {
                    a if args::is(a, "sum") => Aggregate::Sum,
                    a if args::is(a, "min") => Aggregate::Min,
                    a if args::is(a, "max") => Aggregate::Max,
                    _ => return Err(errors::SYNTAX.into()),
                };
                rest = &tail[1..];
            } else if output == Output::Reply && args::is(option, "withscores") {
                options.with_scores = true;
                rest = tail;
            } else if output == Output::Cardinality && !tail.is_empty() && args::is(option, "limit")
            {
                let limit = args::int(tail[0])
                    .ok()
                    .filter(|&n| n >= 0)
                    .ok_or("ERR LIMIT can't be negative")?;
                options.limit = usize::try_from(limit).unwrap_or(usize::MAX);
                rest = &tail[1..];
            } else {
                return Err(errors::SYNTAX.into());
            }
        }
        Ok(options)
    }
}

pub fn zunion(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    reply(ctx, args, Op::Union, Output::Reply, "zunion")
}

pub fn zinter(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    reply(ctx, args, Op::Inter, Output::Reply, "zinter")
}

pub fn zdiff(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    reply(ctx, args, Op::Diff, Output::Reply, "zdiff")
}

pub fn zintercard(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    reply(ctx, args, Op::Inter, Output::Cardinality, "zintercard")
}

pub fn zunionstore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    store_combined(ctx, args, Op::Union, "zunionstore")
}

pub fn zinterstore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    store_combined(ctx, args, Op::Inter, "zinterstore")
}

pub fn zdiffstore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    store_combined(ctx, args, Op::Diff, "zdiffstore")
}

/// The input keys: `args[at]` counts them, and they follow it.
fn input_keys<'a>(
    args: &'a [&'a [u8]],
    at: usize,
    command: &str,
) -> Result<&'a [&'a [u8]], CmdError> {
    let count = args::int(args[at])?;
    if count < 1 {
        return Err(format!("ERR at least 1 input key is needed for '{command}' command").into());
    }
    usize::try_from(count)
        .ok()
        .and_then(|count| args.get(at + 1..at + 1 + count))
        .ok_or_else(|| errors::SYNTAX.into())
}

/// The inputs, type-checked: sorted or plain sets, or nothing for a missing key.
/// Each counts as a keyspace hit or miss, STORE forms included.
fn look_up<'k>(keys: &'k mut Locked<'_>, names: &[&[u8]]) -> Result<Vec<Source<'k>>, CmdError> {
    let stats = keys.env().stats;
    // First each key on its own: this deletes expired keys and refreshes access
    // clocks; then all of them at once through shared borrows.
    for name in names {
        let found = keys
            .get(name)
            .map(|e| matches!(e.value, Value::ZSet(_) | Value::Set(_)));
        let counter = if found.is_some() {
            &stats.keyspace_hits
        } else {
            &stats.keyspace_misses
        };
        stats.add(counter, 1);
        if found == Some(false) {
            return Err(errors::WRONGTYPE.into());
        }
    }
    let keys: &'k Locked<'_> = keys;
    Ok(names
        .iter()
        .map(|name| match keys.get_shared(name).map(|e| &e.value) {
            Some(Value::ZSet(zset)) => Source::Sorted(zset),
            Some(Value::Set(set)) => Source::Plain(set),
            _ => Source::Missing,
        })
        .collect())
}

/// Pair the inputs with their weights (1 by default).
fn weigh<'a>(sources: Vec<Source<'a>>, weights: Option<Vec<f64>>) -> Vec<Weighted<'a>> {
    let weights = weights.unwrap_or_else(|| vec![1.0; sources.len()]);
    sources
        .into_iter()
        .zip(weights)
        .map(|(source, weight)| Weighted { source, weight })
        .collect()
}

/// The non-STORE forms, whose keys `call` has locked.
fn reply(ctx: &mut Ctx, args: &[&[u8]], op: Op, output: Output, command: &str) -> CmdResult {
    let names = input_keys(args, 1, command)?;
    let sources = look_up(ctx.keys, names)?;
    let options = Options::parse(&args[2 + names.len()..], names.len(), op, output)?;
    if output == Output::Cardinality {
        let inputs = weigh(sources, None);
        let count = intersect(inputs, Aggregate::Sum, options.limit).len();
        ctx.out.int(count as i64);
        return Ok(());
    }
    let with_scores = options.with_scores;
    let combined = combine(op, weigh(sources, options.weights), options.aggregate);
    let mut entries: Vec<(&[u8], f64)> = combined.iter().map(|(m, s)| (&m[..], *s)).collect();
    sort_entries(&mut entries);
    EntryWriter::new(Layout::with_scores(ctx.out, with_scores)).all(ctx.out, &entries);
    Ok(())
}

/// ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE dst numkeys key [key ...] [options]: the
/// result replaces `dst` (an empty one deletes it); replies its length.
fn store_combined(ctx: &mut Ctx, args: &[&[u8]], op: Op, command: &str) -> CmdResult {
    let destination = args[1];
    let names = input_keys(args, 2, command)?;
    let limits = limits(ctx.server);
    let result = {
        let sources = look_up(ctx.keys, names)?;
        let options = Options::parse(&args[3 + names.len()..], names.len(), op, Output::Store)?;
        let combined = combine(op, weigh(sources, options.weights), options.aggregate);
        let mut entries: Vec<(&[u8], f64)> = combined.iter().map(|(m, s)| (&m[..], *s)).collect();
        ZSet::from_entries(&mut entries, limits)
    };
    let stored = store(ctx.keys, destination, result, command);
    ctx.out.int(stored as i64);
    Ok(())
}

fn combine(op: Op, inputs: Vec<Weighted<'_>>, aggregate: Aggregate) -> Combined<'_> {
    match op {
        Op::Union => unite(inputs, aggregate),
        Op::Inter => intersect(inputs, aggregate, 0),
        Op::Diff => subtract(&inputs),
    }
}

/// Every member of any input, adding up the inputs from the smallest.
fn unite(mut inputs: Vec<Weighted<'_>>, aggregate: Aggregate) -> Combined<'_> {
    inputs.sort_by_key(|input| input.source.len());
    let largest = inputs.iter().map(|i| i.source.len()).max().unwrap_or(0);
    let mut totals = Members::with_capacity_and_hasher(largest, Default::default());
    for input in &inputs {
        input.source.each(|member, score| {
            let value = weighted(score, input.weight);
            match totals.entry(member) {
                Entry::Occupied(mut total) => aggregate.apply(total.get_mut(), value),
                Entry::Vacant(slot) => {
                    slot.insert(value);
                }
            }
            true
        });
    }
    totals.into_iter().collect()
}

/// The members of every input, walking the first (the smallest, once sorted);
/// stops after `limit` members when it is not 0.
fn intersect(mut inputs: Vec<Weighted<'_>>, aggregate: Aggregate, limit: usize) -> Combined<'_> {
    inputs.sort_by_key(|input| input.source.len());
    let mut common = Vec::new();
    let Some((first, others)) = inputs.split_first() else {
        return common;
    };
    first.source.each(|member, score| {
        let mut total = weighted(score, first.weight);
        for other in others {
            match other.source.score(&member) {
                // Not zeroed when it is not a number, as Redis does here: a sum
                // with it becomes 0, a minimum or maximum ignores it.
                Some(score) => aggregate.apply(&mut total, score * other.weight),
                None => return true,
            }
        }
        common.push((member, total));
        limit == 0 || common.len() < limit
    });
    common
}

/// The members of the first input that no other has, with their own scores.
fn subtract<'a>(inputs: &[Weighted<'a>]) -> Combined<'a> {
    let mut left = Vec::new();
    let Some((first, others)) = inputs.split_first() else {
        return left;
    };
    first.source.each(|member, score| {
        if others
            .iter()
            .all(|other| other.source.score(&member).is_none())
        {
            left.push((member, score));
        }
        true
    });
    left
}
