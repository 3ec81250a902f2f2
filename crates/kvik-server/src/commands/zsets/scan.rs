//! ZSCAN key cursor [MATCH pattern] [COUNT count].
//!
//! A listpack set comes back whole with cursor 0. A big set is walked by slot (see
//! the set's `scan`): a member present for the whole iteration is returned at least
//! once. Scores come back as bulk strings in both protocols, as Redis sends them.

use super::read_zset;
use crate::commands::shared::{reply_empty_scan, reply_scan_cursor, scan_cursor, ScanOptions};
use crate::commands::{CmdResult, Ctx};
use crate::util::numbers::write_f64;

/// The cursor is checked before the key; the options only when there is a set.
pub fn zscan(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cursor = scan_cursor(args[2])?;
    let Some(zset) = read_zset(ctx.keys, args[1])? else {
        reply_empty_scan(ctx.out);
        return Ok(());
    };
    let options = ScanOptions::parse(&args[3..])?;
    let mut found: Vec<(&[u8], f64)> = Vec::new();
    let next = zset.scan(cursor, options.count, |member, score| {
        if options.accepts(member) {
            found.push((member, score));
        }
    });
    reply_scan_cursor(ctx.out, next);
    ctx.out.array(found.len() * 2);
    let mut score_text = Vec::with_capacity(24);
    for (member, score) in found {
        ctx.out.bulk(member);
        score_text.clear();
        write_f64(&mut score_text, score);
        ctx.out.bulk(&score_text);
    }
    Ok(())
}
