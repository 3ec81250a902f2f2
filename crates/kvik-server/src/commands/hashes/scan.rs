//! HSCAN key cursor [MATCH pattern] [COUNT count].
//!
//! A listpack-encoded hash is returned whole in one call with cursor 0, as Redis does
//! (COUNT is only a hint). A hashtable-encoded one is walked COUNT fields at a time by
//! position; the cursor guarantees that a field present for the whole scan is
//! returned (see `types::hash`'s table module for why).

use super::read_hash;
use crate::commands::shared::{reply_empty_scan, reply_scan_cursor, scan_cursor, ScanOptions};
use crate::commands::{CmdResult, Ctx};

pub fn hscan(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cursor = scan_cursor(args[2])?;
    // A missing key ends the scan before the options are even read, as in Redis.
    let Some(hash) = read_hash(ctx.keys, args[1])? else {
        reply_empty_scan(ctx.out);
        return Ok(());
    };
    let options = ScanOptions::parse(&args[3..])?;
    let mut found = Vec::new();
    let next = hash.scan(cursor, options.count, |field, value| {
        if options.accepts(field) {
            found.push((field, value));
        }
    });
    reply_scan_cursor(ctx.out, next);
    ctx.out.array(found.len() * 2);
    for (field, value) in found {
        ctx.out.bulk(field);
        ctx.out.bulk(value);
    }
    Ok(())
}
