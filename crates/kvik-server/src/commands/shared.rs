//! What several command families share, each defined here once: the options, cursor
//! error and replies of the SCAN family (SCAN, HSCAN, SSCAN, ZSCAN), the index
//! ranges of LRANGE/LTRIM and ZRANGE/ZREMRANGEBYRANK, the end of a change to a
//! collection (an emptied one is deleted), the error for an unknown
//! subcommand of a container (CLIENT, DEBUG, PUBSUB, SLOWLOG, XGROUP, XINFO ...) and
//! the layout of the containers' HELP replies, and where the writes of set
//! members, hash fields and sorted-set members name their elements (active
//! replication merges them element by element).
//!
//! Plain argument parsing (integers, floats, option names) is [`super::args`]; a
//! helper used by one family stays in that family.

use super::{args, errors, CmdError};
use crate::keyspace::Locked;
use crate::notify::class;
use crate::util::glob::{glob_match, is_match_all};
use crate::util::numbers::parse_scan_cursor;
use kvik_resp::ReplyWriter;
use std::ops::Range;

/// A SCAN-family cursor that is not a number.
pub const INVALID_CURSOR: &str = "ERR invalid cursor";

/// The cursor of HSCAN, SSCAN and ZSCAN, read as Redis reads it
/// ([`parse_scan_cursor`]).
pub fn scan_cursor(arg: &[u8]) -> Result<u64, CmdError> {
    parse_scan_cursor(arg).ok_or_else(|| INVALID_CURSOR.into())
}

/// The options of the SCAN family: COUNT and MATCH, each any number of times, the
/// last one winning, and for SCAN itself TYPE.
pub struct ScanOptions<'a> {
    /// Elements to visit per call (at least 1; 10 unless given).
    pub count: usize,
    /// `None` when every element matches: no MATCH, or MATCH `*`, which accepts
    /// even the empty element (the matcher alone would not).
    pub pattern: Option<&'a [u8]>,
    /// SCAN's TYPE filter, as given.
    pub type_name: Option<&'a [u8]>,
}

impl<'a> ScanOptions<'a> {
    /// HSCAN's, SSCAN's and ZSCAN's options (no TYPE).
    pub fn parse(options: &[&'a [u8]]) -> Result<Self, CmdError> {
        Self::parse_with(options, false)
    }

    /// SCAN's options, TYPE included.
    pub fn parse_with_type(options: &[&'a [u8]]) -> Result<Self, CmdError> {
        Self::parse_with(options, true)
    }

    fn parse_with(mut options: &[&'a [u8]], type_allowed: bool) -> Result<Self, CmdError> {
        let mut parsed = ScanOptions {
            count: 10,
            pattern: None,
            type_name: None,
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
            } else if type_allowed && args::is(option, "TYPE") {
                parsed.type_name = Some(*value);
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

    /// Does an element (a key, field or member) pass MATCH?
    pub fn accepts(&self, element: &[u8]) -> bool {
        self.pattern.is_none_or(|p| glob_match(p, element, false))
    }
}

/// The start of a SCAN-family reply: a two-element array whose first element is the
/// next cursor, as a bulk string; the caller writes the elements found after it.
pub fn reply_scan_cursor(out: &mut ReplyWriter, next: u64) {
    out.array(2);
    out.bulk(itoa::Buffer::new().format(next).as_bytes());
}

/// A scan of a missing key: cursor 0 and no elements.
pub fn reply_empty_scan(out: &mut ReplyWriter) {
    reply_scan_cursor(out, 0);
    out.array(0);
}

/// The positions `start..=stop` select in a list or sorted set of `len` elements, as
/// LRANGE, LTRIM, ZRANGE and ZREMRANGEBYRANK read them: negative ones count from the
/// end, both are clamped into the collection, and the span is empty when they miss it.
pub fn index_span(start: i64, stop: i64, len: usize) -> Range<usize> {
    let len = len as i64;
    let start = if start < 0 {
        (start + len).max(0)
    } else {
        start
    };
    let stop = if stop < 0 {
        stop + len
    } else {
        stop.min(len - 1)
    };
    if start > stop || start >= len {
        return 0..0;
    }
    start as usize..stop as usize + 1
}

/// The end of a change to the collection (list, hash, set or sorted set) at `key`,
/// after the change's own keyspace event: one left empty is deleted, as Redis keeps
/// no empty collection, and a `del` event follows; any other is stamped as modified.
pub fn settle_collection(keys: &mut Locked<'_>, key: &[u8], emptied: bool) {
    if emptied {
        keys.remove(key);
        keys.notify(class::GENERIC, "del", key);
    } else {
        keys.modified(key);
    }
}

/// Redis's reply to a subcommand it does not know, or knows but not with these
/// arguments (`args[0]` is the container, `args[1]` the subcommand):
/// `ERR unknown subcommand or wrong number of arguments for 'x'. Try CLIENT HELP.`
pub fn subcommand_syntax_error(args: &[&[u8]]) -> CmdError {
    let sub = &args[1][..args[1].len().min(128)];
    format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        String::from_utf8_lossy(sub),
        String::from_utf8_lossy(args[0]).to_uppercase()
    )
    .into()
}

/// A container's HELP reply in Redis's layout: a title line, the given lines, then
/// the entry for HELP itself, each a status reply.
pub fn help_reply(out: &mut ReplyWriter, container: &str, lines: &[&str]) {
    out.array(lines.len() + 3);
    out.simple(&format!(
        "{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ));
    for line in lines {
        out.simple(line);
    }
    out.simple("HELP");
    out.simple("    Prints this help.");
}

/// Where a write names the elements of its collection, for active replication's
/// merge (the command table's `elements`): one element per argument after the key,
/// added (SADD).
pub fn one_element_per_arg(_: &[&[u8]]) -> Option<crate::keyspace::ElementSpan> {
    Some(crate::keyspace::ElementSpan {
        first: 2,
        step: 1,
        at: 0,
        removes: false,
        counts: false,
    })
}

/// One element per argument after the key, removed (SREM, HDEL, ZREM).
pub fn one_removed_element_per_arg(_: &[&[u8]]) -> Option<crate::keyspace::ElementSpan> {
    Some(crate::keyspace::ElementSpan {
        first: 2,
        step: 1,
        at: 0,
        removes: true,
        counts: false,
    })
}

/// Pairs after the key, the element first: HSET's and HMSET's field and value,
/// HINCRBY's field and increment.
pub fn element_then_value(_: &[&[u8]]) -> Option<crate::keyspace::ElementSpan> {
    Some(crate::keyspace::ElementSpan {
        first: 2,
        step: 2,
        at: 0,
        removes: false,
        counts: false,
    })
}

/// Pairs after the key, the element second: ZINCRBY's increment and member.
pub fn value_then_element(_: &[&[u8]]) -> Option<crate::keyspace::ElementSpan> {
    Some(crate::keyspace::ElementSpan {
        first: 2,
        step: 2,
        at: 1,
        removes: false,
        counts: false,
    })
}

#[cfg(test)]
mod tests {
    use super::index_span;

    #[test]
    fn index_spans_clamp_like_redis() {
        assert_eq!(index_span(0, -1, 5), 0..5);
        assert_eq!(index_span(-100, 100, 5), 0..5);
        assert_eq!(index_span(3, 2, 5), 0..0);
        assert_eq!(index_span(5, 10, 5), 0..0);
        assert_eq!(index_span(-2, -1, 5), 3..5);
        assert_eq!(index_span(0, -6, 5), 0..0);
        assert_eq!(index_span(0, 0, 0), 0..0);
    }
}
