//! Whole-database reads: KEYS, SCAN and RANDOMKEY.
//!
//! KEYS and RANDOMKEY hold every shard of the database for their (short, or known to
//! be slow) run. SCAN instead locks one shard at a time, so a full iteration never
//! freezes the database; see [`scan`] for what its cursor guarantees.

use super::super::shared::{reply_scan_cursor, ScanOptions, INVALID_CURSOR};
use super::super::{CmdError, CmdResult, Ctx, Held};
use crate::keyspace::Entry;
use crate::util::glob::{glob_match, is_match_all};
use kvik_resp::{Protocol, ReplyWriter};

/// Keys gathered for a reply whose length is known only at the end: encoded as they
/// come, counted, then written behind the array header.
struct KeyList {
    count: usize,
    encoded: ReplyWriter,
}

impl KeyList {
    fn new(protocol: Protocol) -> Self {
        KeyList {
            count: 0,
            encoded: ReplyWriter::new(protocol),
        }
    }

    fn push(&mut self, key: &[u8]) {
        self.count += 1;
        self.encoded.bulk(key);
    }

    fn write(&self, out: &mut ReplyWriter) {
        out.array(self.count);
        out.raw(&self.encoded.buf);
    }
}

/// KEYS's pattern; `*` alone matches everything without running the matcher.
fn pattern_accepts(pattern: &[u8], key: &[u8]) -> bool {
    is_match_all(pattern) || glob_match(pattern, key, false)
}

/// Every live key of the selected database matching the pattern. Keys whose time is
/// up are left out but not deleted here (a read of many keys stays a read).
pub(super) fn keys(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let pattern = args[1];
    let db = ctx.client.db;
    let now = ctx.keys.now_ms;
    let mut found = KeyList::new(ctx.out.protocol);
    for shard in 0..ctx.server.keyspace.shards_per_db() {
        for entry in ctx.keys.shard_at(db, shard).iter() {
            if !entry.is_expired(now) && pattern_accepts(pattern, entry.key()) {
                found.push(entry.key());
            }
        }
    }
    found.write(ctx.out);
    Ok(())
}

/// SCAN's cursor as Redis reads it (C's `strtoul` plus a check): an optional sign then
/// decimal digits, a leading `-` negating modulo 2^64; nothing before or after, no
/// overflow. The empty string reads as 0.
fn parse_cursor(arg: &[u8]) -> Result<u64, CmdError> {
    let invalid = || CmdError::from(INVALID_CURSOR);
    if arg.is_empty() {
        return Ok(0);
    }
    let (negative, digits) = match arg[0] {
        b'-' => (true, &arg[1..]),
        b'+' => (false, &arg[1..]),
        _ => (false, arg),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(invalid());
    }
    let n = digits
        .iter()
        .try_fold(0u64, |n, d| {
            n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        })
        .ok_or_else(invalid)?;
    Ok(if negative { n.wrapping_neg() } else { n })
}

/// Does the entry's type pass SCAN's TYPE filter? An unknown type name matches
/// nothing (Redis 7.0 does not reject it).
fn type_accepts(type_name: Option<&[u8]>, entry: &Entry) -> bool {
    type_name.is_none_or(|t| t.eq_ignore_ascii_case(entry.value.type_name().as_bytes()))
}

/// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type].
///
/// The cursor is the index of the next shard to visit: 0 starts a scan, and a reply
/// cursor of 0 ends it. A call visits whole shards in index order, each with only
/// that shard locked, until it has examined COUNT keys, and returns every matching
/// key of every shard it visited. Shards' hash tables may grow or shrink between
/// calls, but a key never changes shard and a shard is visited once per scan, so a
/// key present for the whole scan is returned exactly once, and a key added or
/// removed during it at most once. Keys whose time is up in a visited shard are
/// deleted on the way, as the active expiry cycle would.
pub(super) fn scan(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cursor = parse_cursor(args[1])?;
    let options = ScanOptions::parse_with_type(&args[2..])?;
    let ks = &ctx.server.keyspace;
    let db = ctx.client.db;
    let shards = ks.shards_per_db();
    // A cursor this server never handed out ends the scan.
    let mut next = usize::try_from(cursor).unwrap_or(usize::MAX);
    let (mut examined, mut type_lookups) = (0, 0);
    let mut found = KeyList::new(ctx.out.protocol);
    let now = ctx.keys.now_ms;
    while next < shards && examined < options.count {
        let id = ks.global_id(db, next);
        let mut locked = Held::lock(ctx.keys, &[id]);
        locked.expire_shard(db, next);
        let shard = locked.shard_at(db, next);
        examined += shard.len();
        for entry in shard.iter() {
            // Due keys stay while expiry is held (CLIENT PAUSE): they read as gone.
            if entry.is_expired(now) || !options.accepts(entry.key()) {
                continue;
            }
            type_lookups += usize::from(options.type_name.is_some());
            if type_accepts(options.type_name, entry) {
                found.push(entry.key());
            }
        }
        next += 1;
    }
    // Redis looks each key up to learn its type, and counts that as a read.
    ctx.stats.add(&ctx.stats.keyspace_hits, type_lookups as u64);
    let next_cursor = if next < shards { next } else { 0 };
    reply_scan_cursor(ctx.out, next_cursor as u64);
    found.write(ctx.out);
    Ok(())
}

/// A live key picked uniformly at random, or null when the database is empty.
/// When the pick has expired, its shard's expired keys are deleted and another is
/// picked: each round removes at least one key, so this ends even when every key of
/// the database has expired. While expiry is held (CLIENT PAUSE) nothing is removed:
/// after [`HELD_EXPIRY_TRIES`] expired picks in a row the last one is the answer, as
/// Redis 7.2 answers (7.0 loops for ever there).
pub(super) fn randomkey(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let db = ctx.client.db;
    let now = ctx.keys.now_ms;
    let shards = ctx.server.keyspace.shards_per_db();
    let mut expired_picks = 0;
    loop {
        let sizes: Vec<usize> = (0..shards)
            .map(|s| ctx.keys.shard_at(db, s).len())
            .collect();
        let total: usize = sizes.iter().sum();
        if total == 0 {
            ctx.out.null();
            return Ok(());
        }
        let (shard, index) = locate(&sizes, rand::random::<usize>() % total);
        let entry = ctx
            .keys
            .shard_at(db, shard)
            .nth(index)
            .expect("index within the shard's size");
        if !entry.is_expired(now) || expired_picks == HELD_EXPIRY_TRIES {
            ctx.out.bulk(entry.key());
            return Ok(());
        }
        if ctx.keys.expire_shard(db, shard) == 0 {
            expired_picks += 1;
        }
    }
}

/// How many expired keys RANDOMKEY picks while expiry is held before it answers
/// with one.
const HELD_EXPIRY_TRIES: usize = 100;

/// The shard and position within it of the `n`-th key, counting shard by shard.
fn locate(sizes: &[usize], mut n: usize) -> (usize, usize) {
    for (shard, &size) in sizes.iter().enumerate() {
        if n < size {
            return (shard, n);
        }
        n -= size;
    }
    unreachable!("n is below the sum of the sizes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_reads_like_strtoul() {
        assert_eq!(parse_cursor(b"0"), Ok(0));
        assert_eq!(parse_cursor(b""), Ok(0));
        assert_eq!(parse_cursor(b"+7"), Ok(7));
        assert_eq!(parse_cursor(b"-0"), Ok(0));
        assert_eq!(parse_cursor(b"-1"), Ok(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551615"), Ok(u64::MAX));
        for bad in [
            &b"18446744073709551616"[..],
            b" 5",
            b"5 ",
            b"1.5",
            b"abc",
            b"-",
            b"+",
        ] {
            assert!(parse_cursor(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn locate_walks_the_shards() {
        let sizes = [0, 2, 0, 3];
        assert_eq!(locate(&sizes, 0), (1, 0));
        assert_eq!(locate(&sizes, 1), (1, 1));
        assert_eq!(locate(&sizes, 2), (3, 0));
        assert_eq!(locate(&sizes, 4), (3, 2));
    }
}
