//! ZSCAN key cursor [MATCH pattern] [COUNT count].
//!
//! A listpack set comes back whole with cursor 0. A big set is walked by slot (see
//! the set's `scan`): a member present for the whole iteration is returned at least
//! once. Scores come back as bulk strings in both protocols, as Redis sends them.

use super::read_zset;
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::util::glob::{glob_match, is_match_all};
use crate::util::numbers::{parse_scan_cursor, write_f64};

/// ZSCAN's options.
struct ScanOptions<'a> {
    count: usize,
    pattern: Option<&'a [u8]>,
}

impl<'a> ScanOptions<'a> {
    fn parse(options: &[&'a [u8]]) -> Result<ScanOptions<'a>, CmdError> {
        let mut parsed = ScanOptions {
            count: 10,
            pattern: None,
        };
        let mut rest = options;
        while let [option, value, tail @ ..] = rest {
            if args::is(option, "count") {
                let n = args::int(value)?;
                if n < 1 {
                    return Err(errors::SYNTAX.into());
                }
                parsed.count = usize::try_from(n).unwrap_or(usize::MAX);
            } else if args::is(option, "match") {
                parsed.pattern = Some(*value).filter(|p| !is_match_all(p));
            } else {
                return Err(errors::SYNTAX.into());
            }
            rest = tail;
        }
        if rest.is_empty() {
            Ok(parsed)
        } else {
            Err(errors::SYNTAX.into())
        }
    }

    fn accepts(&self, member: &[u8]) -> bool {
        self.pattern.is_none_or(|p| glob_match(p, member, false))
    }
}

/// The cursor is checked before the key; the options only when there is a set.
pub fn zscan(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cursor = parse_scan_cursor(args[2]).ok_or(CmdError::from("ERR invalid cursor"))?;
    let Some(zset) = read_zset(ctx.keys, args[1])? else {
        ctx.out.array(2);
        ctx.out.bulk(b"0");
        ctx.out.array(0);
        return Ok(());
    };
    let options = ScanOptions::parse(&args[3..])?;
    let mut found: Vec<(&[u8], f64)> = Vec::new();
    let next = zset.scan(cursor, options.count, |member, score| {
        if options.accepts(member) {
            found.push((member, score));
        }
    });
    ctx.out.array(2);
    ctx.out.bulk(itoa::Buffer::new().format(next).as_bytes());
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
