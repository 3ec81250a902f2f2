//! XINFO STREAM (with FULL), GROUPS, CONSUMERS and HELP, with Redis 7.0's fields.
//!
//! `radix-tree-nodes` is the node count of a radix tree over the stream's node keys,
//! as Redis builds it when nodes are only appended; after deletions Redis's tree may
//! keep a node or two more than the ideal one counted here.

use super::{int_arg, stream_read, write_entries, write_entry, write_id};
use crate::commands::shared::{help_reply, subcommand_syntax_error};
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::keyspace::Locked;
use crate::types::stream::{Group, Stream, StreamId};
use kvik_resp::ReplyWriter;

/// The stream at `key`; `ERR no such key` when missing.
fn existing<'l>(keys: &'l mut Locked<'_>, key: &[u8]) -> Result<&'l mut Stream, CmdError> {
    stream_read(keys, key)?.ok_or_else(|| errors::NO_SUCH_KEY.into())
}

/// `XINFO CONSUMERS key group`
pub fn consumers(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let now = ctx.keys.now_ms as i64;
    let stream = existing(ctx.keys, args[2])?;
    let Some(group) = stream.groups.get(args[3]) else {
        return Err(format!(
            "NOGROUP No such consumer group '{}' for key name '{}'",
            String::from_utf8_lossy(args[3]),
            String::from_utf8_lossy(args[2])
        )
        .into());
    };
    let out = &mut *ctx.out;
    out.array(group.consumers.len());
    for (name, consumer) in &group.consumers {
        out.map(3);
        out.bulk(b"name");
        out.bulk(name);
        out.bulk(b"pending");
        out.int(consumer.pending.len() as i64);
        out.bulk(b"idle");
        out.int((now - consumer.seen_at as i64).max(0));
    }
    Ok(())
}

/// `XINFO GROUPS key`
pub fn groups(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let stream = existing(ctx.keys, args[2])?;
    let out = &mut *ctx.out;
    out.array(stream.groups.len());
    for (name, group) in &stream.groups {
        out.map(6);
        out.bulk(b"name");
        out.bulk(name);
        out.bulk(b"consumers");
        out.int(group.consumers.len() as i64);
        out.bulk(b"pending");
        out.int(group.pel.len() as i64);
        write_progress(out, stream, group);
    }
    Ok(())
}

/// `last-delivered-id`, `entries-read` and `lag`, which GROUPS and FULL share.
fn write_progress(out: &mut ReplyWriter, stream: &Stream, group: &Group) {
    out.bulk(b"last-delivered-id");
    write_id(out, group.last_id);
    out.bulk(b"entries-read");
    write_optional(out, group.entries_read.map(|n| n as i64));
    out.bulk(b"lag");
    write_optional(out, stream.lag(group));
}

fn write_optional(out: &mut ReplyWriter, n: Option<i64>) {
    match n {
        Some(n) => out.int(n),
        None => out.null(),
    }
}

/// `XINFO STREAM key [FULL [COUNT count]]`
pub fn stream(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // The key first, as Redis looks it up before it reads the options.
    let stream = existing(ctx.keys, args[2])?;
    let options = &args[3..];
    let full = !options.is_empty();
    let mut count = 10;
    if full {
        if (options.len() != 1 && options.len() != 3) || !args::is(options[0], "full") {
            return Err(subcommand_syntax_error(args));
        }
        if options.len() == 3 {
            if !args::is(options[1], "count") {
                return Err(subcommand_syntax_error(args));
            }
            count = int_arg(options[2])?;
            if count < 0 {
                count = 10;
            }
        }
    }
    let out = &mut *ctx.out;
    out.map(if full { 9 } else { 10 });
    out.bulk(b"length");
    out.int(stream.len() as i64);
    out.bulk(b"radix-tree-keys");
    out.int(stream.node_count() as i64);
    out.bulk(b"radix-tree-nodes");
    out.int(stream.radix_nodes() as i64);
    out.bulk(b"last-generated-id");
    write_id(out, stream.last_id);
    out.bulk(b"max-deleted-entry-id");
    write_id(out, stream.max_deleted_id);
    out.bulk(b"entries-added");
    out.int(stream.entries_added as i64);
    out.bulk(b"recorded-first-entry-id");
    write_id(out, stream.first_id);
    if full {
        write_full(out, stream, count as usize);
        return Ok(());
    }
    out.bulk(b"groups");
    out.int(stream.groups.len() as i64);
    for (name, entry) in [
        ("first-entry", stream.first_entry()),
        ("last-entry", stream.last_entry()),
    ] {
        out.bulk(name.as_bytes());
        match entry {
            Some(entry) => write_entry(out, &entry),
            None => out.null(),
        }
    }
    Ok(())
}

/// The FULL form's entries and groups, each list cut at `count` (0 = all).
fn write_full(out: &mut ReplyWriter, stream: &Stream, count: usize) {
    let limit = if count == 0 { usize::MAX } else { count };
    out.bulk(b"entries");
    let entries: Vec<_> = stream
        .range(StreamId::MIN, StreamId::MAX, false)
        .take(limit)
        .collect();
    write_entries(out, &entries);
    out.bulk(b"groups");
    out.array(stream.groups.len());
    for (name, group) in &stream.groups {
        out.map(7);
        out.bulk(b"name");
        out.bulk(name);
        write_progress(out, stream, group);
        out.bulk(b"pel-count");
        out.int(group.pel.len() as i64);
        out.bulk(b"pending");
        let pending: Vec<_> = group.pel.iter().take(limit).collect();
        out.array(pending.len());
        for (id, p) in pending {
            out.array(4);
            write_id(out, *id);
            out.bulk(&p.consumer);
            out.int(p.delivered_at as i64);
            out.int(p.deliveries as i64);
        }
        out.bulk(b"consumers");
        out.array(group.consumers.len());
        for (consumer_name, consumer) in &group.consumers {
            out.map(4);
            out.bulk(b"name");
            out.bulk(consumer_name);
            out.bulk(b"seen-time");
            out.int(consumer.seen_at as i64);
            out.bulk(b"pel-count");
            out.int(consumer.pending.len() as i64);
            out.bulk(b"pending");
            let ids: Vec<_> = consumer.pending.iter().take(limit).collect();
            out.array(ids.len());
            for id in ids {
                let p = &group.pel[id];
                out.array(3);
                write_id(out, *id);
                out.int(p.delivered_at as i64);
                out.int(p.deliveries as i64);
            }
        }
    }
}

/// `XINFO HELP`
pub fn help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx.out,
        "XINFO",
        &[
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
        ],
    );
    Ok(())
}
