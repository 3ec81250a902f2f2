//! Ranges: ZRANGE by rank, score or member, in either direction, with LIMIT and
//! WITHSCORES; its older forms (ZREVRANGE, ZRANGEBYSCORE, ZREVRANGEBYSCORE,
//! ZRANGEBYLEX, ZREVRANGEBYLEX), which are ZRANGE with some options fixed;
//! ZRANGESTORE; and ZREMRANGEBYRANK, ZREMRANGEBYSCORE, ZREMRANGEBYLEX.
//!
//! Every range becomes a span of ranks (see [`crate::types::zset`]), so LIMIT is
//! arithmetic on the span, not a walk.

use super::{
    change_zset, limits, read_zset, store, EntryWriter, Layout, NOT_A_LEX_RANGE, NOT_A_SCORE_RANGE,
};
use crate::commands::shared::index_span;
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::types::zset::{LexRange, ScoreRange, ZSet};
use std::ops::Range;

/// What a range is over.
#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    Rank,
    Score,
    Lex,
}

/// What a command fixes before reading its options; `None` leaves it to them.
struct Form {
    by: Option<By>,
    reverse: Option<bool>,
    /// ZRANGESTORE: no WITHSCORES.
    store: bool,
}

const ZRANGE: Form = Form {
    by: None,
    reverse: None,
    store: false,
};

enum Bounds<'a> {
    Ranks(i64, i64),
    Scores(ScoreRange),
    Members(LexRange<'a>),
}

/// A parsed range request.
struct Request<'a> {
    bounds: Bounds<'a>,
    reverse: bool,
    with_scores: bool,
    /// LIMIT offset count; a negative count is no limit.
    limit: Option<(i64, i64)>,
}

impl<'a> Request<'a> {
    /// The arguments from the key on (key, min or start, max or stop, options), as
    /// Redis checks them: options first, then their combinations, then the bounds.
    fn parse(args: &[&'a [u8]], form: Form) -> Result<Request<'a>, CmdError> {
        let (mut by, mut reverse) = (form.by, form.reverse);
        let (mut with_scores, mut limit) = (false, None);
        let mut i = 3;
        while i < args.len() {
            let arg = args[i];
            if !form.store && args::is(arg, "withscores") {
                with_scores = true;
            } else if args::is(arg, "limit") && i + 2 < args.len() {
                limit = Some((args::int(args[i + 1])?, args::int(args[i + 2])?));
                i += 2;
            } else if reverse.is_none() && args::is(arg, "rev") {
                reverse = Some(true);
            } else if by.is_none() && args::is(arg, "bylex") {
                by = Some(By::Lex);
            } else if by.is_none() && args::is(arg, "byscore") {
                by = Some(By::Score);
            } else {
                return Err(errors::SYNTAX.into());
            }
            i += 1;
        }
        let (by, reverse) = (by.unwrap_or(By::Rank), reverse.unwrap_or(false));
        // A count of -1 is what "no LIMIT" looks like to Redis, so it passes here.
        if by == By::Rank && limit.is_some_and(|(_, count)| count != -1) {
            return Err("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX".into());
        }
        if by == By::Lex && with_scores {
            return Err(
                "ERR syntax error, WITHSCORES not supported in combination with BYLEX".into(),
            );
        }
        // Reversed score and member ranges are given from the top: max, then min.
        let (mut min, mut max) = (args[1], args[2]);
        if reverse && by != By::Rank {
            std::mem::swap(&mut min, &mut max);
        }
        let bounds = match by {
            By::Rank => Bounds::Ranks(args::int(min)?, args::int(max)?),
            By::Score => Bounds::Scores(ScoreRange::parse(min, max).ok_or(NOT_A_SCORE_RANGE)?),
            By::Lex => Bounds::Members(LexRange::parse(min, max).ok_or(NOT_A_LEX_RANGE)?),
        };
        Ok(Request {
            bounds,
            reverse,
            with_scores,
            limit,
        })
    }

    /// The ranks to return from `zset`, to be walked downwards when reversed.
    fn ranks(&self, zset: &ZSet) -> Range<usize> {
        let len = zset.len();
        match &self.bounds {
            Bounds::Ranks(start, stop) => {
                // Reversed ranks count from the top.
                let span = index_span(*start, *stop, len);
                if self.reverse {
                    len - span.end..len - span.start
                } else {
                    span
                }
            }
            Bounds::Scores(range) => match self.offset() {
                Some(skip) => self.counted(skipped(zset.score_span(range), skip, self.reverse)),
                None => 0..0,
            },
            // Redis passes over the offset without looking at the members, which
            // counts where scores differ: the span is found past it.
            Bounds::Members(range) => match self.offset() {
                Some(skip) => self.counted(zset.lex_span(range, self.reverse, skip)),
                None => 0..0,
            },
        }
    }

    /// LIMIT's offset: entries to pass over from the end the span is walked from
    /// (`None`, a negative offset, leaves nothing).
    fn offset(&self) -> Option<usize> {
        self.limit
            .map_or(Some(0), |(offset, _)| usize::try_from(offset).ok())
    }

    /// LIMIT's count applied to a span from the end it is walked from: a negative
    /// count keeps everything.
    fn counted(&self, span: Range<usize>) -> Range<usize> {
        let Some(Ok(take)) = self.limit.map(|(_, count)| usize::try_from(count)) else {
            return span;
        };
        let take = take.min(span.len());
        if self.reverse {
            span.end - take..span.end
        } else {
            span.start..span.start + take
        }
    }

    /// The entries the request selects, in the order it returns them.
    fn select<'z>(&self, zset: &'z ZSet) -> Vec<(&'z [u8], f64)> {
        let ranks = self.ranks(zset);
        let mut picked = Vec::with_capacity(ranks.len());
        zset.visit(ranks, self.reverse, |member, score| {
            picked.push((member, score))
        });
        picked
    }
}

/// `span` less its first `skip` entries from the end it is walked from.
fn skipped(span: Range<usize>, skip: usize, reverse: bool) -> Range<usize> {
    let skip = skip.min(span.len());
    if reverse {
        span.start..span.end - skip
    } else {
        span.start + skip..span.end
    }
}

/// Reply with the range of the set at `args[1]` (an empty list without one).
fn reply_range(ctx: &mut Ctx, args: &[&[u8]], form: Form) -> CmdResult {
    let request = Request::parse(&args[1..], form)?;
    let mut writer = EntryWriter::new(Layout::with_scores(ctx.out, request.with_scores));
    let Some(zset) = read_zset(ctx.keys, args[1])? else {
        writer.header(ctx.out, 0);
        return Ok(());
    };
    let ranks = request.ranks(zset);
    writer.header(ctx.out, ranks.len());
    zset.visit(ranks, request.reverse, |member, score| {
        writer.entry(ctx.out, member, score)
    });
    Ok(())
}

pub fn zrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    reply_range(ctx, args, ZRANGE)
}

pub fn zrevrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let form = Form {
        by: Some(By::Rank),
        reverse: Some(true),
        store: false,
    };
    reply_range(ctx, args, form)
}

pub fn zrangebyscore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    reply_range(ctx, args, fixed(By::Score, false))
}

pub fn zrevrangebyscore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    reply_range(ctx, args, fixed(By::Score, true))
}

pub fn zrangebylex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    reply_range(ctx, args, fixed(By::Lex, false))
}

pub fn zrevrangebylex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    reply_range(ctx, args, fixed(By::Lex, true))
}

fn fixed(by: By, reverse: bool) -> Form {
    Form {
        by: Some(by),
        reverse: Some(reverse),
        store: false,
    }
}

/// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]: the range
/// as a new set at `dst` (deleting `dst` when empty); replies its length.
pub fn zrangestore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let form = Form {
        store: true,
        ..ZRANGE
    };
    let request = Request::parse(&args[2..], form)?;
    let limits = limits(ctx.server);
    let result = match read_zset(ctx.keys, args[2])? {
        Some(source) => ZSet::from_entries(&mut request.select(source), limits),
        None => ZSet::default(),
    };
    let stored = store(ctx.keys, args[1], result, "zrangestore");
    ctx.out.int(stored as i64);
    Ok(())
}

pub fn zremrangebyrank(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (start, stop) = (args::int(args[2])?, args::int(args[3])?);
    remove_span(ctx, args[1], "zremrangebyrank", |zset| {
        index_span(start, stop, zset.len())
    })
}

pub fn zremrangebyscore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let range = ScoreRange::parse(args[2], args[3]).ok_or(NOT_A_SCORE_RANGE)?;
    remove_span(ctx, args[1], "zremrangebyscore", |zset| {
        zset.score_span(&range)
    })
}

pub fn zremrangebylex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let range = LexRange::parse(args[2], args[3]).ok_or(NOT_A_LEX_RANGE)?;
    remove_span(ctx, args[1], "zremrangebylex", |zset| {
        zset.lex_span(&range, false, 0)
    })
}

/// Remove the ranks `span` picks from the set at `key`; replies how many went.
fn remove_span(
    ctx: &mut Ctx,
    key: &[u8],
    event: &str,
    span: impl FnOnce(&ZSet) -> Range<usize>,
) -> CmdResult {
    let removed = change_zset(ctx.keys, key, event, |zset| {
        let ranks = span(zset);
        let removed = ranks.len();
        zset.remove_ranks(ranks, |_, _| {});
        Ok((removed, removed > 0))
    })?;
    ctx.out.int(removed.unwrap_or(0) as i64);
    Ok(())
}
