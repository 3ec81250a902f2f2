//! The blocking list commands: BLPOP, BRPOP, BLMPOP, BLMOVE, BRPOPLPUSH.
//!
//! Each first does what its non-blocking form does. When none of its keys holds a
//! list, the client waits ([`crate::blocking`]) and the same code finishes the command
//! later, on whichever thread gave one of the keys a list. The timeout is in seconds,
//! fractions allowed; 0 waits forever.
//!
//! Replies and effects, as Redis 7.0 has them: BLPOP replies `[key, element]` and
//! propagates as `LPOP key`; BLMPOP replies and propagates like LMPOP; BLMOVE and
//! BRPOPLPUSH reply with the element and propagate as LMOVE and RPOPLPUSH (with the
//! client's spelling of the ends when served at once, `left`/`right` when served
//! later). A wait that times out replies with the null array, BLMOVE's too, and
//! propagates nothing. Where they may not wait (a transaction, a script) they answer
//! at once: the null array, or for BLMOVE and BRPOPLPUSH the null bulk string.

use super::{first_list, move_element, parse_end, pop_with_key, MultiPop};
use crate::blocking::{self, Action};
use crate::commands::blocking::{block, keys_then_timeout, may_block, serve_now_or_block};
use crate::commands::{CmdResult, Ctx};
use crate::keyspace::Locked;
use crate::types::list::End;
use crate::types::EncodingLimits;
use crate::types::Value;
use kvik_resp::ReplyWriter;

pub fn blpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    pop_first(ctx, args, End::Head)
}

pub fn brpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    pop_first(ctx, args, End::Tail)
}

/// `BLPOP key [key ...] timeout`.
fn pop_first(ctx: &mut Ctx, args: &[&[u8]], end: End) -> CmdResult {
    let (keys, deadline) = keys_then_timeout(args, ctx.keys.now_ms)?;
    let pop = Pop { end, count: None };
    serve_now_or_block(ctx, keys, deadline, pop, first_list)
}

/// `BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]` (the timeout is
/// checked last, unlike in the other blocking commands).
pub fn blmpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let request = MultiPop::parse(&args[2..])?;
    let deadline = blocking::parse_timeout(args[1], ctx.keys.now_ms)?;
    let pop = Pop {
        end: request.end,
        count: Some(request.count),
    };
    serve_now_or_block(ctx, request.keys, deadline, pop, first_list)
}

/// A waiting BLPOP, BRPOP (no count) or BLMPOP (a count).
struct Pop {
    end: End,
    count: Option<usize>,
}

impl Action for Pop {
    fn ready(&self, value: &Value) -> bool {
        is_list(value)
    }

    fn serve(
        &self,
        _limits: &EncodingLimits,
        keys: &mut Locked<'_>,
        out: &mut ReplyWriter,
        key: &[u8],
    ) -> CmdResult {
        pop_with_key(keys, out, key, self.end, self.count)
    }
}

/// `BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout`.
pub fn blmove(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let from = parse_end(args[3])?;
    let to = parse_end(args[4])?;
    let deadline = blocking::parse_timeout(args[5], ctx.keys.now_ms)?;
    let request = Move {
        destination: args[2].to_vec(),
        from,
        to,
        rpoplpush: false,
    };
    move_or_wait(ctx, args[1], deadline, request, [args[3], args[4]])
}

/// `BRPOPLPUSH source destination timeout`.
pub fn brpoplpush(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let deadline = blocking::parse_timeout(args[3], ctx.keys.now_ms)?;
    let request = Move {
        destination: args[2].to_vec(),
        from: End::Tail,
        to: End::Head,
        rpoplpush: true,
    };
    move_or_wait(ctx, args[1], deadline, request, [b"right", b"left"])
}

/// Move at once if `source` holds a list, else wait. `words` are the ends as the
/// client spelled them, for the effect.
fn move_or_wait(
    ctx: &mut Ctx,
    source: &[u8],
    deadline: Option<u64>,
    request: Move,
    words: [&[u8]; 2],
) -> CmdResult {
    if request.run(&ctx.server.hot.encoding(), ctx.keys, ctx.out, source, words)? {
        ctx.propagated = true;
    } else if may_block(ctx.client) {
        block(ctx, &[source], deadline, request);
    } else {
        ctx.out.null();
    }
    Ok(())
}

/// A BLMOVE or BRPOPLPUSH.
struct Move {
    destination: Vec<u8>,
    from: End,
    to: End,
    /// Propagate as RPOPLPUSH rather than LMOVE.
    rpoplpush: bool,
}

impl Move {
    /// Move one element from `source` and reply with it, appending the effect.
    /// False (and nothing done) when `source` holds no list.
    fn run(
        &self,
        limits: &EncodingLimits,
        keys: &mut Locked<'_>,
        out: &mut ReplyWriter,
        source: &[u8],
        words: [&[u8]; 2],
    ) -> Result<bool, crate::commands::CmdError> {
        let limit = limits.list_node();
        let destination = &self.destination[..];
        let Some(element) = move_element(keys, source, destination, self.from, self.to, limit)?
        else {
            return Ok(false);
        };
        out.bulk(&element);
        let db = keys.db;
        if self.rpoplpush {
            keys.propagate(db, &[b"RPOPLPUSH", source, destination]);
        } else {
            keys.propagate(db, &[b"LMOVE", source, destination, words[0], words[1]]);
        }
        Ok(true)
    }
}

impl Action for Move {
    fn ready(&self, value: &Value) -> bool {
        is_list(value)
    }

    fn also_writes(&self) -> Option<&[u8]> {
        Some(&self.destination)
    }

    fn serve(
        &self,
        limits: &EncodingLimits,
        keys: &mut Locked<'_>,
        out: &mut ReplyWriter,
        key: &[u8],
    ) -> CmdResult {
        let words = [end_word(self.from), end_word(self.to)];
        self.run(limits, keys, out, key, words).map(drop)
    }
}

/// The blocking list commands wait for a list (never empty) to appear.
fn is_list(value: &Value) -> bool {
    matches!(value, Value::List(_))
}

/// How Redis spells an end in the effects it writes itself.
fn end_word(end: End) -> &'static [u8] {
    match end {
        End::Head => b"left",
        End::Tail => b"right",
    }
}
