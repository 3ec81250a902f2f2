//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT LOAD / EXISTS / FLUSH / KILL / HELP:
//! the command layer over [`crate::scripting`].
//!
//! EVAL's key spec (a count, then the keys) is for COMMAND INFO and GETKEYS; the
//! script locks its declared keys' shards itself and holds them for its whole run.

mod caller;
pub mod run;

use super::shared::help_reply;
use super::table::{acl, flags, key_flags, Command, Lock, ScriptRef};
use super::{args, CmdResult, Ctx};
use crate::scripting::busy::{KillOutcome, ScriptKind};
use crate::scripting::{self, ScriptSource};

const EVAL_FLAGS: u32 =
    flags::NOSCRIPT | flags::STALE | flags::SKIP_MONITOR | flags::NO_MANDATORY_KEYS;
const SCRIPTING: u32 = acl::SLOW | acl::SCRIPTING;
const RW_KEYS: u32 = key_flags::RW | key_flags::ACCESS | key_flags::UPDATE;
const RO_KEYS: u32 = key_flags::RO | key_flags::ACCESS;

const EVAL_COMPLEXITY: &str = "Depends on the script that is executed.";

pub const COMMANDS: &[Command] = &[
    Command::new("eval", -3, eval)
        .flags(EVAL_FLAGS)
        .script(ScriptRef::Body)
        .acl(SCRIPTING)
        .numkeys(2, 1)
        .lock(Lock::Handler)
        .key_flags(RW_KEYS)
        .doc(
            "scripting",
            "2.6.0",
            EVAL_COMPLEXITY,
            "Execute a Lua script server side",
        ),
    Command::new("evalsha", -3, evalsha)
        .flags(EVAL_FLAGS)
        .script(ScriptRef::Sha)
        .acl(SCRIPTING)
        .numkeys(2, 1)
        .lock(Lock::Handler)
        .key_flags(RW_KEYS)
        .doc(
            "scripting",
            "2.6.0",
            EVAL_COMPLEXITY,
            "Execute a Lua script server side",
        ),
    Command::new("eval_ro", -3, eval_ro)
        .flags(flags::READONLY | EVAL_FLAGS)
        .script(ScriptRef::Body)
        .acl(SCRIPTING)
        .numkeys(2, 1)
        .lock(Lock::Handler)
        .key_flags(RO_KEYS)
        .doc(
            "scripting",
            "7.0.0",
            EVAL_COMPLEXITY,
            "Execute a read-only Lua script server side",
        ),
    Command::new("evalsha_ro", -3, evalsha_ro)
        .flags(flags::READONLY | EVAL_FLAGS)
        .script(ScriptRef::Sha)
        .acl(SCRIPTING)
        .numkeys(2, 1)
        .lock(Lock::Handler)
        .key_flags(RO_KEYS)
        .doc(
            "scripting",
            "7.0.0",
            EVAL_COMPLEXITY,
            "Execute a read-only Lua script server side",
        ),
    Command::new("script", -2, help)
        .acl(acl::SLOW)
        .doc(
            "scripting",
            "2.6.0",
            "Depends on subcommand.",
            "A container for Lua scripts management commands",
        )
        .subcommands(SCRIPT_SUBCOMMANDS),
];

const SCRIPT_SUBCOMMANDS: &[Command] = &[
    Command::new("script|load", 3, load)
        .flags(flags::NOSCRIPT | flags::STALE)
        .acl(SCRIPTING)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc("scripting", "2.6.0", "O(N) with N being the length in bytes of the script body.", "Load the specified Lua script into the script cache."),
    Command::new("script|exists", -3, exists)
        .flags(flags::NOSCRIPT)
        .acl(SCRIPTING)
        .tips(&["request_policy:all_shards", "response_policy:agg_logical_and"])
        .doc("scripting", "2.6.0", "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).", "Check existence of scripts in the script cache."),
    Command::new("script|flush", -2, flush)
        .flags(flags::NOSCRIPT)
        .acl(SCRIPTING)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc("scripting", "2.6.0", "O(N) with N being the number of scripts in cache", "Remove all the scripts from the script cache."),
    Command::new("script|kill", 2, kill)
        .flags(flags::NOSCRIPT | flags::ALLOW_BUSY)
        .acl(SCRIPTING)
        .tips(&["request_policy:all_shards", "response_policy:one_succeeded"])
        .doc("scripting", "2.6.0", "O(1)", "Kill the script currently in execution."),
    Command::new("script|debug", 3, debug)
        .flags(flags::NOSCRIPT)
        .acl(SCRIPTING)
        .doc("scripting", "3.2.0", "O(1)", "Set the debug mode for executed scripts."),
    Command::new("script|help", 2, help)
        .flags(flags::LOADING | flags::STALE)
        .acl(SCRIPTING)
        .doc("scripting", "5.0.0", "O(1)", "Show helpful text about the different subcommands"),
];

/// A script's keys and its other arguments.
pub type KeysAndArgs<'a> = (&'a [&'a [u8]], &'a [&'a [u8]]);

/// The keys and arguments after a `numkeys` at `args[2]`, checked as Redis checks them;
/// a `numkeys` that is not a number gets `not_a_number` (Redis's EVAL and FCALL word
/// it differently).
pub fn split_keys<'a>(
    args: &'a [&'a [u8]],
    not_a_number: &'static str,
) -> Result<KeysAndArgs<'a>, super::CmdError> {
    let n = crate::util::numbers::parse_i64(args[2]).ok_or(not_a_number)?;
    if n < 0 {
        return Err("ERR Number of keys can't be negative".into());
    }
    let n = n as usize;
    if n > args.len() - 3 {
        return Err("ERR Number of keys can't be greater than number of args".into());
    }
    Ok(args[3..].split_at(n))
}

fn eval_with(ctx: &mut Ctx, args: &[&[u8]], by_sha: bool, read_only: bool) -> CmdResult {
    let (keys, argv) = split_keys(args, super::errors::NOT_INTEGER)?;
    if !by_sha {
        return run::eval(
            ctx,
            args,
            ScriptSource::Body(args[1]),
            keys,
            argv,
            read_only,
        );
    }
    // A text that is not a SHA1 (40 hex digits) cannot name a cached script.
    let mut sha = [0; 40];
    match args[1] {
        text if text.len() == 40 && text.is_ascii() => sha.copy_from_slice(text),
        _ => return Err("NOSCRIPT No matching script. Please use EVAL.".into()),
    }
    sha.make_ascii_lowercase();
    run::eval(ctx, args, ScriptSource::Sha(&sha), keys, argv, read_only)
}

fn eval(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    eval_with(ctx, args, false, false)
}

fn evalsha(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    eval_with(ctx, args, true, false)
}

fn eval_ro(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    eval_with(ctx, args, false, true)
}

fn evalsha_ro(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    eval_with(ctx, args, true, true)
}

/// SCRIPT LOAD script: compile and cache it, reply its SHA1.
fn load(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sha = scripting::load_script(&ctx.server.scripting, args[2])?;
    ctx.out.bulk(sha.as_bytes());
    Ok(())
}

/// SCRIPT EXISTS sha [sha ...]: 1 or 0 for each.
fn exists(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ctx.out.array(args.len() - 2);
    for sha in &args[2..] {
        let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
        ctx.out.int(ctx.server.scripting.exists(&sha) as i64);
    }
    Ok(())
}

/// SCRIPT FLUSH [ASYNC|SYNC]: the cache is small; both modes flush at once.
fn flush(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    flush_mode(args, "ERR SCRIPT FLUSH only support SYNC|ASYNC option")?;
    ctx.server.scripting.flush_scripts();
    ctx.out.ok();
    Ok(())
}

/// Checks the optional ASYNC|SYNC of a FLUSH subcommand.
pub fn flush_mode(args: &[&[u8]], error: &'static str) -> CmdResult {
    match args {
        [_, _] => Ok(()),
        [_, _, mode]
            if mode.eq_ignore_ascii_case(b"sync") || mode.eq_ignore_ascii_case(b"async") =>
        {
            Ok(())
        }
        _ => Err(error.into()),
    }
}

/// SCRIPT KILL / FUNCTION KILL.
pub fn kill_running(ctx: &mut Ctx, kind: ScriptKind) -> CmdResult {
    let scripting = &ctx.server.scripting;
    match scripting.running.kill(kind, scripting.threshold()) {
        KillOutcome::Killed => {
            ctx.out.ok();
            Ok(())
        }
        KillOutcome::NotBusy => Err("NOTBUSY No scripts in execution right now.".into()),
        KillOutcome::OtherKind(running) => Err(scripting::busy_text(running).into()),
        KillOutcome::Unkillable => Err("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.".into()),
    }
}

fn kill(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    kill_running(ctx, ScriptKind::Eval)
}

/// SCRIPT DEBUG: kvik has no Lua debugger, so only NO (the mode every client is in)
/// is accepted; YES and SYNC say so plainly instead of starting a session.
fn debug(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mode = args[2];
    if args::is(mode, "no") {
        ctx.out.ok();
        Ok(())
    } else if args::is(mode, "yes") || args::is(mode, "sync") {
        Err("ERR SCRIPT DEBUG is not supported: kvik has no Lua debugger".into())
    } else {
        Err("ERR Use SCRIPT DEBUG YES/SYNC/NO".into())
    }
}

fn help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx.out,
        "SCRIPT",
        &[
            "DEBUG (YES|SYNC|NO)",
            "    Set the debug mode for subsequent scripts executed.",
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache. Very dangerous on replicas.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the scripts cache.",
            "    * SYNC: Synchronously flush the scripts cache.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
        ],
    );
    Ok(())
}
