//! Lookups and counts: ZCARD, ZSCORE, ZMSCORE, ZRANK, ZREVRANK, ZCOUNT, ZLEXCOUNT.
//! A missing key reads as an empty set. Ranges are checked before the key.

use super::{read_zset, write_score, NOT_A_LEX_RANGE, NOT_A_SCORE_RANGE};
use crate::commands::{CmdResult, Ctx};
use crate::types::zset::{LexRange, ScoreRange};

pub fn zcard(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let len = read_zset(ctx.keys, args[1])?.map_or(0, |z| z.len());
    ctx.out.int(len as i64);
    Ok(())
}

pub fn zscore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match read_zset(ctx.keys, args[1])?.and_then(|z| z.score(args[2])) {
        Some(score) => write_score(ctx.out, score),
        None => ctx.out.null(),
    }
    Ok(())
}

pub fn zmscore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let zset = read_zset(ctx.keys, args[1])?;
    let members = &args[2..];
    ctx.out.array(members.len());
    for member in members {
        match zset.and_then(|z| z.score(member)) {
            Some(score) => write_score(ctx.out, score),
            None => ctx.out.null(),
        }
    }
    Ok(())
}

pub fn zrank(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    reply_rank(ctx, args, false)
}

pub fn zrevrank(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    reply_rank(ctx, args, true)
}

fn reply_rank(ctx: &mut Ctx, args: &[&[u8]], reverse: bool) -> CmdResult {
    let zset = read_zset(ctx.keys, args[1])?;
    match zset.and_then(|z| Some((z.rank(args[2])?, z.len()))) {
        Some((rank, len)) => ctx
            .out
            .int(if reverse { len - 1 - rank } else { rank } as i64),
        None => ctx.out.null(),
    }
    Ok(())
}

pub fn zcount(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let range = ScoreRange::parse(args[2], args[3]).ok_or(NOT_A_SCORE_RANGE)?;
    let zset = read_zset(ctx.keys, args[1])?;
    ctx.out
        .int(zset.map_or(0, |z| z.score_span(&range).len()) as i64);
    Ok(())
}

pub fn zlexcount(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let range = LexRange::parse(args[2], args[3]).ok_or(NOT_A_LEX_RANGE)?;
    let zset = read_zset(ctx.keys, args[1])?;
    ctx.out
        .int(zset.map_or(0, |z| z.lex_span(&range, false, 0).len()) as i64);
    Ok(())
}
