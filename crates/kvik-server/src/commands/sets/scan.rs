//! SSCAN key cursor [MATCH pattern] [COUNT count].
//!
//! Checks come in Redis's order: the cursor, then the key (a missing key answers an
//! empty scan whatever the options), its type, and only then the options. An intset
//! is returned whole with cursor 0; a hashtable about COUNT members per call, with a
//! cursor that never misses a member present for the whole scan, however the set
//! grows or shrinks in between (see `MemberTable::scan`).

use super::{read_set, reply_member};
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::types::set::MemberRef;
use crate::util::glob::{glob_match, is_match_all};
use crate::util::numbers::parse_scan_cursor;

/// The options of the collection scans.
struct ScanOptions<'a> {
    /// Members to visit per call.
    count: usize,
    /// `None` accepts everything (also when the pattern is `*`, which must accept
    /// the empty member, which the matcher alone would not).
    pattern: Option<&'a [u8]>,
}

impl<'a> ScanOptions<'a> {
    fn parse(mut options: &[&'a [u8]]) -> Result<Self, CmdError> {
        let mut parsed = ScanOptions {
            count: 10,
            pattern: None,
        };
        while let [option, value, rest @ ..] = options {
            if args::is(option, "COUNT") {
                let n = args::int(value)?;
                if n < 1 {
                    return Err(errors::SYNTAX.into());
                }
                parsed.count = usize::try_from(n).unwrap_or(usize::MAX);
            } else if args::is(option, "MATCH") {
                parsed.pattern = (!is_match_all(value)).then_some(*value);
            } else {
                return Err(errors::SYNTAX.into());
            }
            options = rest;
        }
        if !options.is_empty() {
            return Err(errors::SYNTAX.into());
        }
        Ok(parsed)
    }

    fn accepts(&self, member: MemberRef) -> bool {
        self.pattern
            .is_none_or(|p| glob_match(p, member.bytes(&mut itoa::Buffer::new()), false))
    }
}

pub fn sscan(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cursor = parse_scan_cursor(args[2]).ok_or_else(|| CmdError::from("ERR invalid cursor"))?;
    let Some(set) = read_set(ctx.keys, args[1])? else {
        ctx.out.array(2);
        ctx.out.bulk(b"0");
        ctx.out.array(0);
        return Ok(());
    };
    let options = ScanOptions::parse(&args[3..])?;
    let mut found = Vec::new();
    let next = set.scan(cursor, options.count, |m| {
        if options.accepts(m) {
            found.push(m);
        }
    });
    ctx.out.array(2);
    ctx.out.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.out.array(found.len());
    found.into_iter().for_each(|m| reply_member(ctx.out, m));
    Ok(())
}
