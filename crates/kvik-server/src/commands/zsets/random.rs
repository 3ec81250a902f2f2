//! ZRANDMEMBER key [count [WITHSCORES]].
//!
//! Without a count: one random member, or nil. A positive count: that many distinct
//! members in random order, or the whole set (highest score first, as Redis 7.0
//! returns it) when the count reaches its size. A negative count: that many picks,
//! repeats allowed. Picks are ranks drawn uniformly, read through the set's rank
//! lookup.

use super::{read_zset, EntryWriter, Layout};
use crate::commands::{args, errors, CmdResult, Ctx};
use rand::Rng;

/// Picks with repeats are drawn and written this many at a time, so a huge count
/// never needs a list of every pick.
const PICK_BATCH: usize = 1024;

pub fn zrandmember(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() == 2 {
        return reply_one(ctx, args[1]);
    }
    let count = args::int(args[2])?;
    if count == i64::MIN {
        return Err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807".into());
    }
    let with_scores = match args {
        [_, _, _] => false,
        [_, _, _, option] if args::is(option, "withscores") => true,
        _ => return Err(errors::SYNTAX.into()),
    };
    // Redis keeps the reply's length (twice the count) within a long.
    if with_scores && count.unsigned_abs() > (i64::MAX / 2) as u64 {
        return Err("ERR value is out of range".into());
    }
    let mut writer = EntryWriter::new(Layout::with_scores(ctx.out, with_scores));
    let zset = match read_zset(ctx.keys, args[1])? {
        Some(zset) if count != 0 => zset,
        _ => {
            writer.header(ctx.out, 0);
            return Ok(());
        }
    };
    let len = zset.len();
    let wanted = count.unsigned_abs() as usize;
    let mut rng = rand::thread_rng();
    let out = &mut *ctx.out;
    if count < 0 {
        writer.header(out, wanted);
        let mut left = wanted;
        // Past the client's output limit the reply is dropped: stop drawing.
        while left > 0 && !out.overflowed() {
            let batch: Vec<usize> = (0..left.min(PICK_BATCH))
                .map(|_| rng.gen_range(0..len))
                .collect();
            zset.visit_ranks(&batch, |member, score| writer.entry(out, member, score));
            left -= batch.len();
        }
    } else if wanted >= len {
        writer.header(out, len);
        zset.visit(0..len, true, |member, score| {
            writer.entry(out, member, score)
        });
    } else {
        let ranks = rand::seq::index::sample(&mut rng, len, wanted).into_vec();
        writer.header(out, wanted);
        zset.visit_ranks(&ranks, |member, score| writer.entry(out, member, score));
    }
    Ok(())
}

fn reply_one(ctx: &mut Ctx, key: &[u8]) -> CmdResult {
    match read_zset(ctx.keys, key)? {
        Some(zset) => {
            let rank = rand::thread_rng().gen_range(0..zset.len());
            ctx.out.bulk(zset.get(rank).0);
        }
        None => ctx.out.null(),
    }
    Ok(())
}
