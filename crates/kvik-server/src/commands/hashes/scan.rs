//! HSCAN key cursor [MATCH pattern] [COUNT count].
//!
//! A listpack-encoded hash is returned whole in one call with cursor 0, as Redis does
//! (COUNT is only a hint). A hashtable-encoded one is walked COUNT fields at a time by
//! position; the cursor guarantees that a field present for the whole scan is
//! returned (see `types::hash`'s table module for why).

use super::read_hash;
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::util::glob::{glob_match, is_match_all};
use crate::util::numbers::parse_scan_cursor;

pub fn hscan(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cursor = parse_scan_cursor(args[2]).ok_or(CmdError::from("ERR invalid cursor"))?;
    // A missing key ends the scan before the options are even read, as in Redis.
    let Some(hash) = read_hash(ctx.keys, args[1])? else {
        ctx.out.array(2);
        ctx.out.bulk(b"0");
        ctx.out.array(0);
        return Ok(());
    };
    let options = ScanOptions::parse(&args[3..])?;
    let mut found = Vec::new();
    let next = hash.scan(cursor, options.count, |field, value| {
        if options.accepts(field) {
            found.push((field, value));
        }
    });
    ctx.out.array(2);
    ctx.out.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.out.array(found.len() * 2);
    for (field, value) in found {
        ctx.out.bulk(field);
        ctx.out.bulk(value);
    }
    Ok(())
}

/// The options of the collection scans (HSCAN, and the same syntax as SSCAN and
/// ZSCAN): COUNT and MATCH, each any number of times, the last one winning.
pub(crate) struct ScanOptions<'a> {
    /// Elements to visit per call (at least 1; 10 unless given).
    pub count: usize,
    /// None when every element matches (no MATCH, or MATCH `*`).
    pub pattern: Option<&'a [u8]>,
}

impl<'a> ScanOptions<'a> {
    pub fn parse(options: &[&'a [u8]]) -> Result<Self, CmdError> {
        let mut parsed = ScanOptions {
            count: 10,
            pattern: None,
        };
        let mut rest = options;
        while let [option, value, tail @ ..] = rest {
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
            rest = tail;
        }
        if !rest.is_empty() {
            return Err(errors::SYNTAX.into());
        }
        Ok(parsed)
    }

    /// Does an element pass MATCH?
    pub fn accepts(&self, element: &[u8]) -> bool {
        self.pattern.is_none_or(|p| glob_match(p, element, false))
    }
}
