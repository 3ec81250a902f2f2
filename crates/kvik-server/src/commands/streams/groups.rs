//! XGROUP CREATE, SETID, DESTROY, CREATECONSUMER, DELCONSUMER and HELP.
//!
//! All but HELP check their options, then the key (which must exist unless CREATE
//! has MKSTREAM), then the group, in Redis's order, so the same mistakes get the same
//! errors. Destroying a group wakes the XREADGROUP clients waiting on it.

use super::{int_arg, parse_id, stream_mut};
use crate::commands::shared::{help_reply, subcommand_syntax_error};
use crate::commands::{args, CmdError, CmdResult, Ctx};
use crate::notify::class;
use crate::types::stream::{Group, Stream, StreamId};
use crate::types::Value;

/// What the options after `<key> <group> <id>` asked for.
struct GroupOptions {
    mkstream: bool,
    entries_read: Option<u64>,
}

fn parse_options(args: &[&[u8]]) -> Result<GroupOptions, CmdError> {
    let create = args::is(args[1], "create");
    let setid = args::is(args[1], "setid");
    let mut options = GroupOptions {
        mkstream: false,
        entries_read: None,
    };
    let mut i = 5;
    while i < args.len() {
        if create && args::is(args[i], "mkstream") {
            options.mkstream = true;
            i += 1;
        } else if (create || setid) && args::is(args[i], "entriesread") && i + 1 < args.len() {
            let n = int_arg(args[i + 1])?;
            if n < -1 {
                return Err("ERR value for ENTRIESREAD must be positive or -1".into());
            }
            options.entries_read = u64::try_from(n).ok();
            i += 2;
        } else {
            return Err(subcommand_syntax_error(args));
        }
    }
    Ok(options)
}

/// The options, and the stream at `key` (required unless `may_create`).
fn checked_stream<'l>(
    ctx: &'l mut Ctx,
    args: &[&[u8]],
    may_create: bool,
) -> Result<(GroupOptions, Option<&'l mut Stream>), CmdError> {
    let options = parse_options(args)?;
    let stream = stream_mut(ctx.keys, args[2])?;
    if stream.is_none() && !(may_create && options.mkstream) {
        return Err("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.".into());
    }
    Ok((options, stream))
}

fn no_such_group(args: &[&[u8]]) -> CmdError {
    format!(
        "NOGROUP No such consumer group '{}' for key name '{}'",
        String::from_utf8_lossy(args[3]),
        String::from_utf8_lossy(args[2])
    )
    .into()
}

/// The stream at `args[2]`, which must have the group `args[3]`.
fn with_group<'l>(
    ctx: &'l mut Ctx,
    args: &[&[u8]],
) -> Result<(GroupOptions, &'l mut Stream), CmdError> {
    let (options, stream) = checked_stream(ctx, args, false)?;
    let stream = stream.expect("checked");
    if !stream.groups.contains_key(args[3]) {
        return Err(no_such_group(args));
    }
    Ok((options, stream))
}

/// `XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD n]`
pub fn create(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 8 {
        return Err(subcommand_syntax_error(args));
    }
    let (options, stream) = checked_stream(ctx, args, true)?;
    let last = stream.as_ref().map_or(StreamId::MIN, |s| s.last_id);
    let id = if args[4] == b"$" {
        last
    } else {
        parse_id(args[4], 0, true)?
    };
    let exists = stream.is_some_and(|s| s.groups.contains_key(args[3]));
    if exists {
        return Err("BUSYGROUP Consumer Group name already exists".into());
    }
    if !ctx.keys.exists(args[2]) {
        ctx.keys.set(args[2], Value::Stream(Box::default()), 0);
    }
    let stream = stream_mut(ctx.keys, args[2])?.expect("exists");
    stream
        .groups
        .insert(args[3].to_vec(), Group::new(id, options.entries_read));
    ctx.keys.modified_quietly(args[2]);
    ctx.keys.notify(class::STREAM, "xgroup-create", args[2]);
    ctx.out.ok();
    Ok(())
}

/// `XGROUP SETID key group id|$ [ENTRIESREAD n]`
pub fn setid(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() != 5 && args.len() != 7 {
        return Err(subcommand_syntax_error(args));
    }
    let (options, stream) = with_group(ctx, args)?;
    let id = if args[4] == b"$" {
        stream.last_id
    } else {
        parse_id(args[4], 0, false)?
    };
    let group = stream.groups.get_mut(args[3]).expect("checked");
    group.last_id = id;
    group.entries_read = options.entries_read;
    ctx.keys.modified_quietly(args[2]);
    ctx.keys.notify(class::STREAM, "xgroup-setid", args[2]);
    ctx.out.ok();
    Ok(())
}

/// `XGROUP DESTROY key group`
pub fn destroy(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (_, stream) = checked_stream(ctx, args, false)?;
    let removed = stream.expect("checked").groups.remove(args[3]).is_some();
    if removed {
        ctx.keys.modified_quietly(args[2]);
        ctx.keys.notify(class::STREAM, "xgroup-destroy", args[2]);
    }
    ctx.out.int(i64::from(removed));
    Ok(())
}

/// `XGROUP CREATECONSUMER key group consumer`
pub fn create_consumer(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let now = ctx.keys.now_ms;
    let (_, stream) = with_group(ctx, args)?;
    let group = stream.groups.get_mut(args[3]).expect("checked");
    let (_, created) = group.consumer(args[4], now);
    if created {
        ctx.keys.modified_quietly(args[2]);
        ctx.keys
            .notify(class::STREAM, "xgroup-createconsumer", args[2]);
    }
    ctx.out.int(i64::from(created));
    Ok(())
}

/// `XGROUP DELCONSUMER key group consumer`: replies with how many entries it had
/// pending.
pub fn delete_consumer(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (_, stream) = with_group(ctx, args)?;
    let group = stream.groups.get_mut(args[3]).expect("checked");
    let pending = group.remove_consumer(args[4]);
    if pending.is_some() {
        ctx.keys.modified_quietly(args[2]);
        ctx.keys
            .notify(class::STREAM, "xgroup-delconsumer", args[2]);
    }
    ctx.out.int(pending.unwrap_or(0) as i64);
    Ok(())
}

/// `XGROUP HELP`
pub fn help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx.out,
        "XGROUP",
        &[
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
        ],
    );
    Ok(())
}
