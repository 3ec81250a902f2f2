//! SSCAN key cursor [MATCH pattern] [COUNT count].
//!
//! Checks come in Redis's order: the cursor, then the key (a missing key answers an
//! empty scan whatever the options), its type, and only then the options. An intset
//! is returned whole with cursor 0; a hashtable about COUNT members per call, with a
//! cursor that never misses a member present for the whole scan, however the set
//! grows or shrinks in between (see `MemberTable::scan`).

use super::{read_set, reply_member};
use crate::commands::shared::{reply_empty_scan, reply_scan_cursor, scan_cursor, ScanOptions};
use crate::commands::{CmdResult, Ctx};

pub fn sscan(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cursor = scan_cursor(args[2])?;
    let Some(set) = read_set(ctx.keys, args[1])? else {
        reply_empty_scan(ctx.out);
        return Ok(());
    };
    let options = ScanOptions::parse(&args[3..])?;
    let mut found = Vec::new();
    let mut digits = itoa::Buffer::new();
    let next = set.scan(cursor, options.count, |m| {
        // An integer member is spelled out only when there is a pattern to match.
        if options.pattern.is_none() || options.accepts(m.bytes(&mut digits)) {
            found.push(m);
        }
    });
    reply_scan_cursor(ctx.out, next);
    ctx.out.array(found.len());
    found.into_iter().for_each(|m| reply_member(ctx.out, m));
    Ok(())
}
