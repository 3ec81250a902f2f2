//! OBJECT ENCODING | FREQ | IDLETIME | REFCOUNT | LASTMODIFIED | HELP: how a key's
//! value is held (LASTMODIFIED is KeyDB's).
//!
//! Looking at a key through OBJECT is not an access: its access clock stays as it
//! was, as it does in Redis.

use super::super::shared::help_reply;
use super::super::table::{acl, flags, key_flags, Command};
use super::super::{CmdResult, Ctx};
use super::count_read;
use crate::keyspace::{AccessClock, Entry};

const READ_SLOW: u32 = acl::KEYSPACE | acl::READ | acl::SLOW;

/// The container. Its arity (at least a subcommand) makes `call` dispatch every call
/// to a subcommand or reject it, so its own handler, the help, is never reached.
pub(super) const COMMAND: Command = Command::new("object", -2, help)
    .acl(acl::SLOW)
    .doc(
        "generic",
        "2.2.3",
        "Depends on subcommand.",
        "A container for object introspection commands",
    )
    .subcommands(&[
        Command::new("object|encoding", 3, encoding)
            .flags(flags::READONLY)
            .acl(READ_SLOW)
            .keys(2, 2, 1)
            .key_flags(key_flags::RO)
            .tips(&["nondeterministic_output"])
            .doc(
                "generic",
                "2.2.3",
                "O(1)",
                "Inspect the internal encoding of a Redis object",
            ),
        Command::new("object|freq", 3, freq)
            .flags(flags::READONLY)
            .acl(READ_SLOW)
            .keys(2, 2, 1)
            .key_flags(key_flags::RO)
            .tips(&["nondeterministic_output"])
            .doc(
                "generic",
                "4.0.0",
                "O(1)",
                "Get the logarithmic access frequency counter of a Redis object",
            ),
        Command::new("object|idletime", 3, idletime)
            .flags(flags::READONLY)
            .acl(READ_SLOW)
            .keys(2, 2, 1)
            .key_flags(key_flags::RO)
            .tips(&["nondeterministic_output"])
            .doc(
                "generic",
                "2.2.3",
                "O(1)",
                "Get the time since a Redis object was last accessed",
            ),
        Command::new("object|lastmodified", 3, lastmodified)
            .flags(flags::READONLY)
            .acl(READ_SLOW)
            .keys(2, 2, 1)
            .key_flags(key_flags::RO)
            .tips(&["nondeterministic_output"])
            .doc(
                "generic",
                "6.0.0",
                "O(1)",
                "Get the time since a key was last written (a KeyDB command)",
            ),
        Command::new("object|refcount", 3, refcount)
            .flags(flags::READONLY)
            .acl(READ_SLOW)
            .keys(2, 2, 1)
            .key_flags(key_flags::RO)
            .tips(&["nondeterministic_output"])
            .doc(
                "generic",
                "2.2.3",
                "O(1)",
                "Get the number of references to the value of the key",
            ),
        Command::new("object|help", 2, help)
            .flags(flags::LOADING | flags::STALE)
            .acl(acl::KEYSPACE | acl::SLOW)
            .doc(
                "generic",
                "6.2.0",
                "O(1)",
                "Show helpful text about the different subcommands",
            ),
    ]);

const HELP: &[&str] = &[
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "LASTMODIFIED <key>",
    "    Return the number of seconds since the <key> was last written (reads do not",
    "    count).",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
];

const NOT_LFU: &str = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";
const IS_LFU: &str = "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";

fn help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(ctx.out, "OBJECT", HELP);
    Ok(())
}

/// Reply with `report` of the key's entry, or null when the key does not exist (which
/// Redis checks before anything else).
fn inspect(
    ctx: &mut Ctx,
    key: &[u8],
    report: impl FnOnce(&Entry) -> Result<i64, &'static str>,
) -> CmdResult {
    let outcome = ctx.keys.peek(key).map(report);
    count_read(ctx.stats, outcome.is_some());
    match outcome {
        None => ctx.out.null(),
        Some(Ok(n)) => ctx.out.int(n),
        Some(Err(e)) => return Err(e.into()),
    }
    Ok(())
}

fn encoding(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = ctx.keys.peek(args[2]).map(|e| e.value.encoding_name());
    count_read(ctx.stats, name.is_some());
    match name {
        Some(name) => ctx.out.bulk(name.as_bytes()),
        None => ctx.out.null(),
    }
    Ok(())
}

fn refcount(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let shared = ctx.server.memory.shares_integers();
    inspect(ctx, args[2], |entry| Ok(entry.value.refcount(shared)))
}

/// Seconds since the last access, on the 24-bit seconds clock (wrapping as Redis's);
/// refused under an LFU policy, whose access field counts uses instead.
fn idletime(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (clock, now_ms) = (ctx.keys.clock(), ctx.keys.now_ms);
    inspect(ctx, args[2], |entry| match clock {
        AccessClock::Lru => Ok(crate::keyspace::idle_seconds(entry.access, now_ms) as i64),
        AccessClock::Lfu { .. } => Err(IS_LFU),
    })
}

/// Seconds since the key was last written: the physical part of its MVCC timestamp,
/// which every write stamps, against the command's clock (KeyDB's reply).
fn lastmodified(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let now_ms = ctx.keys.now_ms;
    inspect(ctx, args[2], |entry| {
        let written_ms = crate::hlc::physical_ms(entry.ts);
        Ok((now_ms.saturating_sub(written_ms) / 1000) as i64)
    })
}

/// The key's logarithmic access counter, after the decay its idle minutes call for;
/// only an LFU policy keeps one.
fn freq(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (clock, now_ms) = (ctx.keys.clock(), ctx.keys.now_ms);
    inspect(ctx, args[2], |entry| {
        clock
            .frequency(entry.access, now_ms)
            .map(i64::from)
            .ok_or(NOT_LFU)
    })
}
