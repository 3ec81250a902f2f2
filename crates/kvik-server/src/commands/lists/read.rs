//! Reading lists: LLEN, LINDEX, LRANGE and LPOS. Each counts a keyspace hit or miss.

use super::{int_at_least, read_list};
use crate::commands::shared::index_span;
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::types::list::Element;

const RANK_ZERO: &str = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list";
const COUNT_NEGATIVE: &str = "ERR COUNT can't be negative";
const MAXLEN_NEGATIVE: &str = "ERR MAXLEN can't be negative";

pub fn llen(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let len = read_list(ctx.keys, args[1])?.map_or(0, |l| l.len());
    ctx.out.int(len as i64);
    Ok(())
}

/// The key is looked up before the index is parsed: a missing key is nil even with a
/// malformed index.
pub fn lindex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let Some(list) = read_list(ctx.keys, args[1])? else {
        ctx.out.null();
        return Ok(());
    };
    let index = args::int(args[2])?;
    match list.position(index).and_then(|i| list.get(i)) {
        Some(element) => ctx.out.bulk(element.bytes(&mut itoa::Buffer::new())),
        None => ctx.out.null(),
    }
    Ok(())
}

pub fn lrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let start = args::int(args[2])?;
    let stop = args::int(args[3])?;
    let Some(list) = read_list(ctx.keys, args[1])? else {
        ctx.out.array(0);
        return Ok(());
    };
    let span = index_span(start, stop, list.len());
    let (first, count) = (span.start, span.len());
    ctx.out.array(count);
    let mut scratch = itoa::Buffer::new();
    for element in list.range(first, count) {
        ctx.out.bulk(element.bytes(&mut scratch));
    }
    Ok(())
}

/// LPOS's options.
struct LposOptions {
    /// Which match to start from: 1 is the first, negative counts from the tail.
    rank: i64,
    /// COUNT: how many positions to return (0: all); `None` replies a single one.
    count: Option<i64>,
    /// How many elements to look at (0: all).
    maxlen: i64,
}

impl LposOptions {
    fn parse(options: &[&[u8]]) -> Result<LposOptions, CmdError> {
        let mut o = LposOptions {
            rank: 1,
            count: None,
            maxlen: 0,
        };
        for pair in options.chunks(2) {
            let [name, value] = pair else {
                return Err(errors::SYNTAX.into());
            };
            if args::is(name, "rank") {
                o.rank = args::int(value)?;
                if o.rank == 0 {
                    return Err(RANK_ZERO.into());
                }
            } else if args::is(name, "count") {
                o.count = Some(int_at_least(value, 0, COUNT_NEGATIVE)?);
            } else if args::is(name, "maxlen") {
                o.maxlen = int_at_least(value, 0, MAXLEN_NEGATIVE)?;
            } else {
                return Err(errors::SYNTAX.into());
            }
        }
        Ok(o)
    }
}

/// `LPOS key element [RANK rank] [COUNT n] [MAXLEN len]`: a position or nil, or with
/// COUNT an array of positions.
pub fn lpos(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let o = LposOptions::parse(&args[3..])?;
    let Some(list) = read_list(ctx.keys, args[1])? else {
        match o.count {
            Some(_) => ctx.out.array(0),
            None => ctx.out.null(),
        }
        return Ok(());
    };
    let needle = Element::of(args[2]);
    let from_tail = o.rank < 0;
    let found = if from_tail {
        let last = list.len() - 1;
        matches(list.iter().rev(), needle, &o)
            .into_iter()
            .map(|scanned| last - scanned)
            .collect()
    } else {
        matches(list.iter(), needle, &o)
    };
    match o.count {
        Some(_) => {
            ctx.out.array(found.len());
            for position in found {
                ctx.out.int(position as i64);
            }
        }
        None => match found.first() {
            Some(&position) => ctx.out.int(position as i64),
            None => ctx.out.null(),
        },
    }
    Ok(())
}

/// How far into `elements` each reported match of `needle` lies. The arithmetic is
/// Redis's own, wrapping included: a rank of -2^63 stays negative when its sign is
/// dropped, so every match qualifies and COUNT never stops the scan.
fn matches<'a>(
    elements: impl Iterator<Item = Element<'a>>,
    needle: Element<'_>,
    o: &LposOptions,
) -> Vec<usize> {
    let rank = o.rank.wrapping_abs();
    let scanned = if o.maxlen == 0 {
        usize::MAX
    } else {
        o.maxlen as usize
    };
    let mut seen: i64 = 0;
    let mut found = Vec::new();
    for (at, element) in elements.take(scanned).enumerate() {
        if element != needle {
            continue;
        }
        seen += 1;
        if seen < rank {
            continue;
        }
        found.push(at);
        let enough = match o.count {
            None => true,
            Some(0) => false,
            Some(count) => seen.wrapping_sub(rank).wrapping_add(1) >= count,
        };
        if enough {
            break;
        }
    }
    found
}
