//! FCALL, FCALL_RO and FUNCTION LOAD / LIST / DELETE / FLUSH / DUMP / RESTORE /
//! STATS / KILL / HELP: the command layer over [`crate::scripting::functions`].

use super::scripting::{flush_mode, kill_running, run, split_keys};
use super::shared::{help_reply, subcommand_syntax_error};
use super::table::{acl, flags, key_flags, Command, Lock, ScriptRef};
use super::{CmdResult, Ctx};
use crate::scripting::busy::ScriptKind;
use crate::scripting::functions::{self, Collision, Library};
use crate::scripting::payload;
use crate::util::glob;

const FCALL_FLAGS: u32 =
    flags::NOSCRIPT | flags::STALE | flags::SKIP_MONITOR | flags::NO_MANDATORY_KEYS;
const SCRIPTING: u32 = acl::SLOW | acl::SCRIPTING;
const WRITE_SCRIPTING: u32 = acl::WRITE | acl::SLOW | acl::SCRIPTING;
const ALL_SHARDS: &[&str] = &["request_policy:all_shards", "response_policy:all_succeeded"];
const FCALL_COMPLEXITY: &str = "Depends on the function that is executed.";

pub const COMMANDS: &[Command] = &[
    Command::new("fcall", -3, fcall)
        .flags(FCALL_FLAGS)
        .script(ScriptRef::Function)
        .acl(SCRIPTING)
        .numkeys(2, 1)
        .lock(Lock::Handler)
        .key_flags(key_flags::RW | key_flags::ACCESS | key_flags::UPDATE)
        .doc("scripting", "7.0.0", FCALL_COMPLEXITY, "Invoke a function"),
    Command::new("fcall_ro", -3, fcall_ro)
        .flags(flags::READONLY | FCALL_FLAGS)
        .script(ScriptRef::Function)
        .acl(SCRIPTING)
        .numkeys(2, 1)
        .lock(Lock::Handler)
        .key_flags(key_flags::RO | key_flags::ACCESS)
        .doc(
            "scripting",
            "7.0.0",
            FCALL_COMPLEXITY,
            "Invoke a read-only function",
        ),
    Command::new("function", -2, help)
        .acl(acl::SLOW)
        .doc(
            "scripting",
            "7.0.0",
            "Depends on subcommand.",
            "A container for function commands",
        )
        .subcommands(SUBCOMMANDS),
];

const SUBCOMMANDS: &[Command] = &[
    Command::new("function|load", -3, load)
        .flags(flags::WRITE | flags::DENYOOM | flags::NOSCRIPT)
        .acl(WRITE_SCRIPTING)
        .tips(ALL_SHARDS)
        .doc(
            "scripting",
            "7.0.0",
            "O(1) (considering compilation time is redundant)",
            "Create a function with the given arguments (name, code, description)",
        ),
    Command::new("function|list", -2, list)
        .flags(flags::NOSCRIPT)
        .acl(SCRIPTING)
        .tips(&["nondeterministic_output_order"])
        .doc(
            "scripting",
            "7.0.0",
            "O(N) where N is the number of functions",
            "List information about all the functions",
        ),
    Command::new("function|delete", 3, delete)
        .flags(flags::WRITE | flags::NOSCRIPT)
        .acl(WRITE_SCRIPTING)
        .tips(ALL_SHARDS)
        .doc("scripting", "7.0.0", "O(1)", "Delete a function by name"),
    Command::new("function|flush", -2, flush)
        .flags(flags::WRITE | flags::NOSCRIPT)
        .acl(WRITE_SCRIPTING)
        .tips(ALL_SHARDS)
        .doc(
            "scripting",
            "7.0.0",
            "O(N) where N is the number of functions deleted",
            "Deleting all functions",
        ),
    Command::new("function|dump", 2, dump)
        .flags(flags::NOSCRIPT)
        .acl(SCRIPTING)
        .doc(
            "scripting",
            "7.0.0",
            "O(N) where N is the number of functions",
            "Dump all functions into a serialized binary payload",
        ),
    Command::new("function|restore", -3, restore)
        .flags(flags::WRITE | flags::DENYOOM | flags::NOSCRIPT)
        .acl(WRITE_SCRIPTING)
        .tips(ALL_SHARDS)
        .doc(
            "scripting",
            "7.0.0",
            "O(N) where N is the number of functions on the payload",
            "Restore all the functions on the given payload",
        ),
    Command::new("function|stats", 2, stats)
        .flags(flags::NOSCRIPT | flags::ALLOW_BUSY)
        .acl(SCRIPTING)
        .tips(&[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ])
        .doc(
            "scripting",
            "7.0.0",
            "O(1)",
            "Return information about the function currently running (name, description, duration)",
        ),
    Command::new("function|kill", 2, kill)
        .flags(flags::NOSCRIPT | flags::ALLOW_BUSY)
        .acl(SCRIPTING)
        .tips(&["request_policy:all_shards", "response_policy:one_succeeded"])
        .doc(
            "scripting",
            "7.0.0",
            "O(1)",
            "Kill the function currently in execution.",
        ),
    Command::new("function|help", 2, help)
        .flags(flags::LOADING | flags::STALE)
        .acl(SCRIPTING)
        .doc(
            "scripting",
            "7.0.0",
            "O(1)",
            "Show helpful text about the different subcommands",
        ),
];

/// FCALL's reply to a `numkeys` that is not a number.
const BAD_NUMKEYS: &str = "ERR Bad number of keys provided";

fn fcall(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (keys, argv) = split_keys(args, BAD_NUMKEYS)?;
    run::fcall(ctx, args, keys, argv, false)
}

fn fcall_ro(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (keys, argv) = split_keys(args, BAD_NUMKEYS)?;
    run::fcall(ctx, args, keys, argv, true)
}

/// FUNCTION LOAD [REPLACE] code: reply the library's name.
fn load(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (collision, code) = match args {
        [_, _, code] => (Collision::Fail, code),
        [_, _, replace, code] if replace.eq_ignore_ascii_case(b"replace") => {
            (Collision::Replace, code)
        }
        [_, _, other, ..] => {
            return Err(format!(
                "ERR Unknown option given: {}",
                String::from_utf8_lossy(other)
            )
            .into())
        }
        _ => unreachable!("arity"),
    };
    let engine = &ctx.server.scripting;
    // The name's clash is reported before the code is run, as Redis does.
    let name = functions::parse_header(code)?;
    if collision == Collision::Fail && engine.libraries.all().iter().any(|l| l.name == name) {
        return Err(format!("ERR Library '{name}' already exists").into());
    }
    let library = functions::compile_library(engine, code)?;
    engine.libraries.install(vec![library], collision)?;
    ctx.out.bulk(name.as_bytes());
    Ok(())
}

/// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
fn list(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut pattern: Option<&[u8]> = None;
    let mut with_code = false;
    let mut i = 2;
    while i < args.len() {
        let arg = args[i];
        if arg.eq_ignore_ascii_case(b"withcode") && !with_code {
            with_code = true;
        } else if arg.eq_ignore_ascii_case(b"libraryname") && pattern.is_none() {
            i += 1;
            pattern = Some(
                *args
                    .get(i)
                    .ok_or("ERR library name argument was not given")?,
            );
        } else {
            return Err(format!("ERR Unknown argument {}", String::from_utf8_lossy(arg)).into());
        }
        i += 1;
    }
    let libs: Vec<_> = ctx
        .server
        .scripting
        .libraries
        .all()
        .into_iter()
        .filter(|l| pattern.is_none_or(|p| glob::glob_match(p, l.name.as_bytes(), false)))
        .collect();
    let out = &mut *ctx.out;
    out.array(libs.len());
    for lib in &libs {
        describe_library(out, lib, with_code);
    }
    Ok(())
}

fn describe_library(out: &mut kvik_resp::ReplyWriter, lib: &Library, with_code: bool) {
    out.map(if with_code { 4 } else { 3 });
    out.bulk(b"library_name");
    out.bulk(lib.name.as_bytes());
    out.bulk(b"engine");
    out.bulk(b"LUA");
    out.bulk(b"functions");
    out.array(lib.functions.len());
    for f in &lib.functions {
        out.map(3);
        out.bulk(b"name");
        out.bulk(f.name.as_bytes());
        out.bulk(b"description");
        match &f.description {
            Some(d) => out.bulk(d.as_bytes()),
            None => out.null(),
        }
        out.bulk(b"flags");
        let names = f.flags.names();
        out.set(names.len());
        for name in names {
            out.simple(name);
        }
    }
    if with_code {
        out.bulk(b"library_code");
        out.bulk(&lib.code);
    }
}

fn delete(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = String::from_utf8_lossy(args[2]);
    if !ctx.server.scripting.libraries.delete(&name) {
        return Err("ERR Library not found".into());
    }
    ctx.out.ok();
    Ok(())
}

fn flush(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 3 {
        return Err(subcommand_syntax_error(args));
    }
    flush_mode(args, "ERR FUNCTION FLUSH only supports SYNC|ASYNC option")?;
    ctx.server.scripting.libraries.flush();
    ctx.out.ok();
    Ok(())
}

fn dump(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let libs = ctx.server.scripting.libraries.all();
    let payload = payload::encode(libs.iter().map(|l| l.code.as_slice()));
    ctx.out.bulk(&payload);
    Ok(())
}

/// FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE].
fn restore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let policy = match args.get(3) {
        None => b"append".as_slice(),
        Some(p) if args.len() == 4 => p,
        Some(_) => return Err(subcommand_syntax_error(args)),
    };
    let (flush_first, collision) = if policy.eq_ignore_ascii_case(b"append") {
        (false, Collision::Fail)
    } else if policy.eq_ignore_ascii_case(b"replace") {
        (false, Collision::Replace)
    } else if policy.eq_ignore_ascii_case(b"flush") {
        (true, Collision::Replace)
    } else {
        return Err(
            "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."
                .into(),
        );
    };
    let checksum = ctx.server.debug.payload_checksum();
    let codes = payload::decode(args[2], checksum)
        .ok_or("ERR DUMP payload version or checksum are wrong")?;
    let engine = &ctx.server.scripting;
    let libraries = codes
        .iter()
        .map(|code| functions::compile_library(engine, code))
        .collect::<Result<Vec<_>, _>>()?;
    if flush_first {
        engine.libraries.flush();
    }
    engine.libraries.install(libraries, collision)?;
    ctx.out.ok();
    Ok(())
}

/// FUNCTION STATS: the running function, if any, and the engine's counts.
fn stats(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let engine = &ctx.server.scripting;
    let out = &mut *ctx.out;
    out.map(2);
    out.bulk(b"running_script");
    match engine.running.running_function() {
        None => out.null(),
        Some(s) => {
            out.map(3);
            out.bulk(b"name");
            out.bulk(s.name.as_bytes());
            out.bulk(b"command");
            out.array(s.command.len());
            for arg in &s.command {
                out.bulk(arg);
            }
            out.bulk(b"duration_ms");
            out.int(s.started.elapsed().as_millis() as i64);
        }
    }
    out.bulk(b"engines");
    out.map(1);
    out.bulk(b"LUA");
    let (libraries, functions) = engine.libraries.counts();
    out.map(2);
    out.bulk(b"libraries_count");
    out.int(libraries as i64);
    out.bulk(b"functions_count");
    out.int(functions as i64);
    Ok(())
}

fn kill(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    kill_running(ctx, ScriptKind::Function)
}

fn help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx.out,
        "FUNCTION",
        &[
            "LOAD [REPLACE] <FUNCTION CODE>",
            "    Create a new library with the given library name and code.",
            "DELETE <LIBRARY NAME>",
            "    Delete the given library.",
            "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
            "    Return general information on all the libraries:",
            "    * Library name",
            "    * The engine used to run the Library",
            "    * Library description",
            "    * Functions list",
            "    * Library code (if WITHCODE is given)",
            "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
            "STATS",
            "    Return information about the current function running:",
            "    * Function name",
            "    * Command used to run the function",
            "    * Duration in MS that the function is running",
            "    If no function is running, return nil",
            "    In addition, returns a list of available engines.",
            "KILL",
            "    Kill the current running function.",
            "FLUSH [ASYNC|SYNC]",
            "    Delete all the libraries.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the libraries.",
            "    * SYNC: Synchronously flush the libraries.",
            "DUMP",
            "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
            "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
            "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
            "    control how to handle existing libraries (default APPEND):",
            "    * FLUSH: delete all existing libraries.",
            "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
            "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
            "      libraries with the new libraries (notice that even on this option there is a chance of failure",
            "      in case of functions name collision with another library).",
        ],
    );
    Ok(())
}
