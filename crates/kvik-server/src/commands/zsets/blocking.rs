//! The blocking sorted-set pops: BZPOPMIN, BZPOPMAX and BZMPOP.
//!
//! Each first does what its non-blocking form does with the first of its keys that
//! holds a sorted set. When none does, the client waits ([`crate::blocking`]) and the
//! same code finishes the command later, on whichever thread gave one of the keys
//! members (ZADD, ZINCRBY, a STORE form). The timeout is in seconds, fractions
//! allowed; 0 waits forever.
//!
//! Replies and effects, as Redis 7.0 has them: BZPOPMIN and BZPOPMAX reply with the
//! flat `[key, member, score]` and propagate as `ZPOPMIN key` / `ZPOPMAX key`; BZMPOP
//! replies like ZMPOP, `[key, [[member, score], ...]]`, and propagates as
//! `ZPOPMIN key n` / `ZPOPMAX key n`, n the number of members taken. A wait that
//! times out replies with the null array and propagates nothing; so do they at once
//! where they may not wait (a transaction, a script).

use super::pop::{first_with_members, pop, propagate_pop, MpopRequest};
use super::{EntryWriter, Layout};
use crate::blocking::{self, Action};
use crate::commands::blocking::{keys_then_timeout, serve_now_or_block};
use crate::commands::{CmdResult, Ctx};
use crate::keyspace::Locked;
use crate::types::zset::End;
use crate::types::EncodingLimits;
use crate::types::Value;
use kvik_resp::ReplyWriter;

pub fn bzpopmin(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    pop_first(ctx, args, End::Min)
}

pub fn bzpopmax(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    pop_first(ctx, args, End::Max)
}

/// `BZPOPMIN key [key ...] timeout`: the timeout is checked before any key.
fn pop_first(ctx: &mut Ctx, args: &[&[u8]], end: End) -> CmdResult {
    let (keys, deadline) = keys_then_timeout(args, ctx.keys.now_ms)?;
    let pop = Pop { end, count: None };
    serve_now_or_block(ctx, keys, deadline, pop, first_with_members)
}

/// `BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]`: the timeout is
/// checked after the rest, as Redis parses it.
pub fn bzmpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let request = MpopRequest::parse(&args[2..])?;
    let deadline = blocking::parse_timeout(args[1], ctx.keys.now_ms)?;
    let pop = Pop {
        end: request.end,
        count: Some(request.count),
    };
    serve_now_or_block(ctx, request.keys, deadline, pop, first_with_members)
}

/// A BZPOPMIN or BZPOPMAX (no count) or a BZMPOP (a count).
struct Pop {
    end: End,
    count: Option<usize>,
}

impl Pop {
    /// Pop from the sorted set at `key`, reply with the key and what was taken, and
    /// append the effect.
    fn run(&self, keys: &mut Locked<'_>, out: &mut ReplyWriter, key: &[u8]) -> CmdResult {
        let popped = pop(keys, key, self.end, self.count.unwrap_or(1))?.unwrap_or_default();
        let mut writer = match self.count {
            None => {
                out.array(1 + 2 * popped.len());
                out.bulk(key);
                EntryWriter::new(Layout::Flat)
            }
            Some(_) => {
                out.array(2);
                out.bulk(key);
                let writer = EntryWriter::new(Layout::Pairs);
                writer.header(out, popped.len());
                writer
            }
        };
        for (member, score) in &popped {
            writer.entry(out, member, *score);
        }
        let taken = self.count.map(|_| popped.len());
        propagate_pop(keys, key, self.end, taken);
        Ok(())
    }
}

impl Action for Pop {
    /// Sorted sets are never empty: any one will do.
    fn ready(&self, value: &Value) -> bool {
        matches!(value, Value::ZSet(_))
    }

    fn serve(
        &self,
        _limits: &EncodingLimits,
        keys: &mut Locked<'_>,
        out: &mut ReplyWriter,
        key: &[u8],
    ) -> CmdResult {
        self.run(keys, out, key)
    }
}
