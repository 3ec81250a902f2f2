//! Adding at the ends: LPUSH, RPUSH, and LPUSHX, RPUSHX which only add to a list that
//! already exists. All reply with the list's new length and propagate verbatim.

use super::{list_mut, node_limit, push_event};
use crate::commands::{CmdError, CmdResult, Ctx};
use crate::keyspace::Locked;
use crate::notify::class;
use crate::types::list::{End, List, NodeLimit};
use crate::types::Value;

pub fn lpush(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    push_command(ctx, args, End::Head, false)
}

pub fn rpush(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    push_command(ctx, args, End::Tail, false)
}

pub fn lpushx(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    push_command(ctx, args, End::Head, true)
}

pub fn rpushx(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    push_command(ctx, args, End::Tail, true)
}

fn push_command(ctx: &mut Ctx, args: &[&[u8]], end: End, only_existing: bool) -> CmdResult {
    let limit = node_limit(ctx);
    let len = push_items(ctx.keys, args[1], end, &args[2..], only_existing, limit)?;
    ctx.out.int(len as i64);
    Ok(())
}

/// Push `items` one after the other at `end` of the list at `key`, creating the list
/// unless `only_existing` (then a missing key stays missing). Returns the list's
/// length afterwards (0 for a missing key left alone).
pub fn push_items(
    keys: &mut Locked<'_>,
    key: &[u8],
    end: End,
    items: &[&[u8]],
    only_existing: bool,
    limit: NodeLimit,
) -> Result<usize, CmdError> {
    let len = match list_mut(keys, key)? {
        Some(list) => {
            push_all(list, end, items, limit);
            let len = list.len();
            keys.modified(key);
            len
        }
        None if only_existing => return Ok(0),
        None => {
            let mut list = List::new();
            push_all(&mut list, end, items, limit);
            let len = list.len();
            keys.set(key, Value::List(Box::new(list)), 0);
            len
        }
    };
    keys.notify(class::LIST, push_event(end), key);
    keys.add_dirty(items.len() as u64 - 1);
    Ok(len)
}

fn push_all(list: &mut List, end: End, items: &[&[u8]], limit: NodeLimit) {
    for item in items {
        list.push(end, item, limit);
    }
}
