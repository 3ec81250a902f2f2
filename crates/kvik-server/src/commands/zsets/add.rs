//! Adding and removing members: ZADD (with NX, XX, GT, LT, CH and INCR), ZINCRBY
//! and ZREM. All propagate as themselves when they change anything.

use super::{change_zset, limits, write_score, zset_mut, NAN_SCORE};
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::keyspace::ElementSpan;
use crate::keyspace::Num;
use crate::notify::class;
use crate::types::zset::{Limits, ZSet};
use crate::types::Value;
use crate::util::numbers::write_f64;

/// ZADD's options.
#[derive(Default, Clone, Copy)]
struct AddOptions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

impl AddOptions {
    /// The flag an option argument names, if it names one.
    fn flag(&mut self, arg: &[u8]) -> Option<&mut bool> {
        [
            ("nx", &mut self.nx),
            ("xx", &mut self.xx),
            ("gt", &mut self.gt),
            ("lt", &mut self.lt),
            ("ch", &mut self.ch),
            ("incr", &mut self.incr),
        ]
        .into_iter()
        .find(|(name, _)| args::is(arg, name))
        .map(|(_, flag)| flag)
    }
}

/// What adding one member did.
#[derive(Clone, Copy, PartialEq)]
enum Outcome {
    /// The conditions said no (NX, XX, GT, LT).
    Skipped,
    Added(f64),
    /// The member keeps or gets this score; `changed` if it differs from before.
    Scored {
        score: f64,
        changed: bool,
    },
}

/// ZADD's options and where its score-member pairs start.
fn zadd_options(args: &[&[u8]]) -> (AddOptions, usize) {
    let mut options = AddOptions::default();
    let mut first_pair = 2;
    while let Some(flag) = args.get(first_pair).and_then(|arg| options.flag(arg)) {
        *flag = true;
        first_pair += 1;
    }
    (options, first_pair)
}

/// Where ZADD names its members (the command table's `elements`): the second of
/// each pair after its options. With INCR, NX, XX, GT or LT it names none: what
/// such a write does depends on the member's score where it runs, which a peer's
/// may not share, so it merges by last writer of the key instead.
pub fn zadd_elements(args: &[&[u8]]) -> Option<ElementSpan> {
    let (o, first) = zadd_options(args);
    let conditional = o.incr || o.nx || o.xx || o.gt || o.lt;
    (!conditional).then_some(ElementSpan {
        first,
        step: 2,
        at: 1,
        removes: false,
        counts: false,
    })
}

pub fn zadd(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (options, first_pair) = zadd_options(args);
    let pairs = &args[first_pair..];
    if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
        return Err(errors::SYNTAX.into());
    }
    check_options(options, pairs.len() / 2)?;
    let scored: Vec<(f64, &[u8])> = pairs
        .chunks(2)
        .map(|pair| Ok((args::float(pair[0])?, pair[1])))
        .collect::<Result<_, CmdError>>()?;
    let limits = limits(ctx.server);
    // XX on a missing key has nothing to do.
    let outcomes = add_to(ctx, args[1], options, limits, &scored)?.unwrap_or_default();
    let conditional = options.nx || options.xx || options.gt || options.lt;
    if conditional && !options.incr && ctx.server.keyspace.keeps_graves() {
        propagate_scores_set(ctx, args[1], &scored, &outcomes);
    }
    reply_to_zadd(ctx, options, &outcomes)
}

/// An active replica sends what a conditional ZADD (NX, XX, GT, LT) did, as a plain
/// ZADD of the scores it set: a peer whose members differ merges those member by
/// member instead of deciding the conditions on its own.
fn propagate_scores_set(ctx: &mut Ctx, key: &[u8], scored: &[(f64, &[u8])], outcomes: &[Outcome]) {
    let set: Vec<(Vec<u8>, &[u8])> = scored
        .iter()
        .zip(outcomes)
        .filter_map(|(&(_, member), outcome)| match *outcome {
            Outcome::Added(score)
            | Outcome::Scored {
                score,
                changed: true,
            } => {
                let mut text = Vec::new();
                write_f64(&mut text, score);
                Some((text, member))
            }
            _ => None,
        })
        .collect();
    if set.is_empty() {
        return;
    }
    let mut argv: Vec<&[u8]> = vec![b"ZADD", key];
    for (score, member) in &set {
        argv.push(score);
        argv.push(member);
    }
    ctx.propagate(&argv);
}

/// The option combinations Redis refuses, with its texts.
fn check_options(o: AddOptions, pairs: usize) -> CmdResult {
    if o.nx && o.xx {
        return Err("ERR XX and NX options at the same time are not compatible".into());
    }
    if (o.nx && (o.gt || o.lt)) || (o.gt && o.lt) {
        return Err("ERR GT, LT, and/or NX options at the same time are not compatible".into());
    }
    if o.incr && pairs > 1 {
        return Err("ERR INCR option supports a single increment-element pair".into());
    }
    Ok(())
}

/// ZINCRBY key increment member: ZADD INCR without options.
pub fn zincrby(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let increment = args::float(args[2])?;
    let options = AddOptions {
        incr: true,
        ..AddOptions::default()
    };
    // Under active replication the member's score counts: it takes, and the reply
    // shows, the value of its counted state (see `Locked::count_start`).
    let by = Num::Score(increment);
    let counting = ctx.keys.count_start(args[1], Some(args[3]), &by);
    let limits = limits(ctx.server);
    let added = add_to(ctx, args[1], options, limits, &[(increment, args[3])])?;
    let (score, wrote) = match added.as_ref().and_then(|outcomes| outcomes.first()) {
        Some(Outcome::Added(score)) => (*score, true),
        Some(Outcome::Scored { score, changed }) => (*score, *changed),
        _ => unreachable!("ZINCRBY always scores its member"),
    };
    // An increment that leaves the score as it was (by 0) writes nothing and
    // reaches no peer, as in Redis: it counts for nobody either. A peer's that
    // reaches us wrote on its node (it created the member there) and marks the
    // member here as counted: it counts here too, so that the member's counted
    // state holds its last write (one that did not would pass for current while
    // the member holds its value, and merge into a full sync's counting).
    let counted = counting
        .filter(|_| wrote || crate::effects::replaying_now())
        .map(|c| ctx.keys.count_end(args[1], Some(args[3]), c, &by));
    let score = match counted {
        Some(Num::Score(counted)) => counted,
        _ => score,
    };
    write_score(ctx.out, score);
    Ok(())
}

/// Apply the pairs to the set at `key`, creating it unless XX; `None` when XX found
/// no set. Returns each pair's outcome.
fn add_to(
    ctx: &mut Ctx,
    key: &[u8],
    options: AddOptions,
    limits: Limits,
    pairs: &[(f64, &[u8])],
) -> Result<Option<Vec<Outcome>>, CmdError> {
    let event = if options.incr { "zincr" } else { "zadd" };
    let apply = |zset: &mut ZSet| {
        pairs
            .iter()
            .map(|&(score, member)| add_one(zset, member, score, options, limits))
            .collect::<Result<Vec<Outcome>, CmdError>>()
    };
    if zset_mut(ctx.keys, key)?.is_none() {
        if options.xx {
            return Ok(None);
        }
        let mut zset = ZSet::default();
        let outcomes = apply(&mut zset)?;
        ctx.keys.set(key, Value::ZSet(Box::new(zset)), 0);
        ctx.keys.notify(class::ZSET, event, key);
        return Ok(Some(outcomes));
    }
    change_zset(ctx.keys, key, event, |zset| {
        let outcomes = apply(zset)?;
        let changed = outcomes.iter().any(|o| match o {
            Outcome::Added(_) => true,
            Outcome::Scored { changed, .. } => *changed,
            Outcome::Skipped => false,
        });
        Ok((outcomes, changed))
    })
}

/// Redis's rules for one member: NX never touches an existing member, XX never adds
/// one; INCR adds to the current score; GT and LT keep a score that would not grow
/// or shrink, but never stop an addition.
fn add_one(
    zset: &mut ZSet,
    member: &[u8],
    score: f64,
    o: AddOptions,
    limits: Limits,
) -> Result<Outcome, CmdError> {
    let Some(current) = zset.score(member) else {
        if o.xx {
            return Ok(Outcome::Skipped);
        }
        zset.set_score(member, score, limits);
        return Ok(Outcome::Added(score));
    };
    if o.nx {
        return Ok(Outcome::Skipped);
    }
    let score = if o.incr { current + score } else { score };
    if score.is_nan() {
        return Err(NAN_SCORE.into());
    }
    if (o.lt && score >= current) || (o.gt && score <= current) {
        return Ok(Outcome::Skipped);
    }
    let changed = score != current;
    if changed {
        zset.set_score(member, score, limits);
    }
    Ok(Outcome::Scored { score, changed })
}

/// INCR: the new score, or nil when the conditions said no. Otherwise the number of
/// members added, plus those whose score changed with CH.
fn reply_to_zadd(ctx: &mut Ctx, o: AddOptions, outcomes: &[Outcome]) -> CmdResult {
    if o.incr {
        match outcomes.first() {
            Some(Outcome::Added(score) | Outcome::Scored { score, .. }) => {
                write_score(ctx.out, *score)
            }
            Some(Outcome::Skipped) | None => ctx.out.null(),
        }
        return Ok(());
    }
    let counted = outcomes
        .iter()
        .filter(|outcome| match outcome {
            Outcome::Added(_) => true,
            Outcome::Scored { changed, .. } => o.ch && *changed,
            Outcome::Skipped => false,
        })
        .count();
    ctx.out.int(counted as i64);
    Ok(())
}

pub fn zrem(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let removed = change_zset(ctx.keys, args[1], "zrem", |zset| {
        let removed = args[2..]
            .iter()
            .filter(|member| zset.remove(member).is_some())
            .count();
        Ok((removed, removed > 0))
    })?;
    ctx.out.int(removed.unwrap_or(0) as i64);
    Ok(())
}
