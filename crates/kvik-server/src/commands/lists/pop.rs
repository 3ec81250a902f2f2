//! Taking from the ends: LPOP, RPOP, LMPOP, and moving an element between lists:
//! LMOVE, RPOPLPUSH.
//!
//! Effects, as Redis 7.0 propagates them: LPOP/RPOP (with or without a count), LMOVE
//! and RPOPLPUSH verbatim; LMPOP as `LPOP key n` or `RPOP key n` for the list it
//! popped from, with `n` the number of elements actually taken; nothing when nothing
//! was taken.
//!
//! The public pieces ([`first_list`], [`pop_with_key`], [`MultiPop`],
//! [`move_element`]) are what the blocking commands (BLPOP, BLMPOP, BLMOVE ...) serve
//! a client with once a list has elements.

use super::{commit, int_at_least, list_mut, node_limit, parse_end, pop_event, push_items};
use crate::commands::{errors, CmdError, CmdResult, Ctx};
use crate::keyspace::Locked;
use crate::notify::class;
use crate::types::list::{End, NodeLimit};
use kvik_resp::ReplyWriter;

const POP_COUNT: &str = "ERR value is out of range, must be positive";
const NUMKEYS: &str = "ERR numkeys should be greater than 0";
const MPOP_COUNT: &str = "ERR count should be greater than 0";

pub fn lpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    pop_command(ctx, args, End::Head)
}

pub fn rpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    pop_command(ctx, args, End::Tail)
}

/// `LPOP key [count]`: without a count, one element or nil; with one, an array (empty
/// for a count of 0) or, for a missing key, the null array.
fn pop_command(ctx: &mut Ctx, args: &[&[u8]], end: End) -> CmdResult {
    let count = match args {
        [_, _] => None,
        [_, _, count] => Some(int_at_least(count, 0, POP_COUNT)? as usize),
        _ => {
            let name = if end == End::Head { "lpop" } else { "rpop" };
            let msg = format!("ERR wrong number of arguments for '{name}' command");
            return Err(msg.into());
        }
    };
    if pop_and_reply(ctx.keys, ctx.out, args[1], end, count)?.is_none() {
        match count {
            Some(_) => ctx.out.null_array(),
            None => ctx.out.null(),
        }
    }
    Ok(())
}

/// `LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]`: from the first key that
/// holds a list, `[key, [elements]]`; the null array when none does.
pub fn lmpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let request = MultiPop::parse(&args[1..])?;
    let Some(key) = first_list(ctx.keys, request.keys)? else {
        ctx.out.null_array();
        return Ok(());
    };
    pop_with_key(ctx.keys, ctx.out, key, request.end, Some(request.count))?;
    ctx.propagated = true;
    Ok(())
}

/// The arguments of LMPOP after its name, and of BLMPOP after its timeout.
pub struct MultiPop<'k, 'a> {
    pub keys: &'k [&'a [u8]],
    pub end: End,
    pub count: usize,
}

impl<'k, 'a> MultiPop<'k, 'a> {
    /// `numkeys key [key ...] LEFT|RIGHT [COUNT count]`.
    pub fn parse(args: &'k [&'a [u8]]) -> Result<Self, CmdError> {
        let numkeys = int_at_least(args[0], 1, NUMKEYS)? as usize;
        let keys_end = 1 + numkeys;
        let (Some(&side), Some(options)) = (args.get(keys_end), args.get(keys_end + 1..)) else {
            return Err(errors::SYNTAX.into());
        };
        Ok(MultiPop {
            keys: &args[1..keys_end],
            end: parse_end(side)?,
            count: mpop_count(options)?,
        })
    }
}

/// LMPOP's options: at most one `COUNT n` with n >= 1 (default 1).
fn mpop_count(options: &[&[u8]]) -> Result<usize, CmdError> {
    let mut count = None;
    let mut rest = options.iter();
    while let Some(option) = rest.next() {
        match rest.next() {
            Some(value) if count.is_none() && option.eq_ignore_ascii_case(b"count") => {
                count = Some(int_at_least(value, 1, MPOP_COUNT)? as usize);
            }
            _ => return Err(errors::SYNTAX.into()),
        }
    }
    Ok(count.unwrap_or(1))
}

/// Pop from `end` of the list at `key` (which holds one) and reply with the key and
/// what was taken: `[key, element]` without a count (BLPOP), `[key, [elements]]` with
/// one (LMPOP, BLMPOP). Appends the effect as Redis 7.0 propagates these commands:
/// `LPOP key` / `RPOP key`, plus the number actually taken when there is a count.
pub fn pop_with_key(
    keys: &mut Locked<'_>,
    out: &mut ReplyWriter,
    key: &[u8],
    end: End,
    count: Option<usize>,
) -> CmdResult {
    out.array(2);
    out.bulk(key);
    let popped = pop_and_reply(keys, out, key, end, count)?.unwrap_or(0);
    let command: &[u8] = if end == End::Head { b"LPOP" } else { b"RPOP" };
    let mut digits = itoa::Buffer::new();
    let db = keys.db;
    match count {
        None => keys.propagate(db, &[command, key]),
        Some(_) => keys.propagate(db, &[command, key, digits.format(popped).as_bytes()]),
    }
    Ok(())
}

pub fn lmove(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let from = parse_end(args[3])?;
    let to = parse_end(args[4])?;
    move_command(ctx, args, from, to)
}

pub fn rpoplpush(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    move_command(ctx, args, End::Tail, End::Head)
}

fn move_command(ctx: &mut Ctx, args: &[&[u8]], from: End, to: End) -> CmdResult {
    let limit = node_limit(ctx);
    match move_element(ctx.keys, args[1], args[2], from, to, limit)? {
        Some(element) => ctx.out.bulk(&element),
        None => ctx.out.null(),
    }
    Ok(())
}

/// The first of `candidates` that holds a list (a list is never empty). A key of
/// another type met before it is WRONGTYPE; missing keys are passed over.
pub fn first_list<'a>(
    keys: &mut Locked<'_>,
    candidates: &[&'a [u8]],
) -> Result<Option<&'a [u8]>, CmdError> {
    for &key in candidates {
        if list_mut(keys, key)?.is_some() {
            return Ok(Some(key));
        }
    }
    Ok(None)
}

/// Pop from `end` of the list at `key` and reply with what was taken: with no
/// `count`, one element as a bulk string; with one, an array of up to `count`
/// elements in the order they left. Deletes the key once empty. Returns how many
/// elements were taken, or `None` when there is no such key (nothing is replied then,
/// since each command has its own null for it).
pub fn pop_and_reply(
    keys: &mut Locked<'_>,
    out: &mut ReplyWriter,
    key: &[u8],
    end: End,
    count: Option<usize>,
) -> Result<Option<usize>, CmdError> {
    let Some(list) = list_mut(keys, key)? else {
        return Ok(None);
    };
    let wanted = match count {
        None => 1,
        Some(count) => {
            let n = count.min(list.len());
            out.array(n);
            n
        }
    };
    let mut scratch = itoa::Buffer::new();
    let taken = list.pop_many(end, wanted, |e| out.bulk(e.bytes(&mut scratch)));
    let emptied = list.is_empty();
    commit(keys, key, taken, emptied, pop_event(end));
    Ok(Some(taken))
}

/// Move one element from `from` of the list at `source` to `to` of the list at
/// `destination` (created if missing; the same key rotates its list). Returns the
/// element, or `None` when `source` does not exist. As in Redis, the destination's
/// type is checked before anything is taken, and the source is deleted only after
/// the push, once it turns out empty.
pub fn move_element(
    keys: &mut Locked<'_>,
    source: &[u8],
    destination: &[u8],
    from: End,
    to: End,
    limit: NodeLimit,
) -> Result<Option<Vec<u8>>, CmdError> {
    if list_mut(keys, source)?.is_none() {
        return Ok(None);
    }
    list_mut(keys, destination)?;
    let list = list_mut(keys, source)?.expect("checked above");
    let element = list.pop(from).expect("lists are never empty");
    let emptied = list.is_empty();
    push_items(keys, destination, to, &[&element], false, limit)?;
    if source == destination {
        keys.notify(class::LIST, pop_event(from), source);
    } else {
        commit(keys, source, 1, emptied, pop_event(from));
    }
    Ok(Some(element))
}
