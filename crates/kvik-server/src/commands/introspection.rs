//! COMMAND and its subcommands: what the server says about its own commands.
//!
//! Everything here is read from the one command table (`commands::registry()`): names,
//! arities, flags, ACL categories, key positions and documentation. Clients rely on
//! it (cluster clients find keys with COMMAND INFO and COMMAND GETKEYS), so the reply
//! shapes are Redis 7.0's, including its RESP3 quirk of sending tips, key specs and
//! an empty subcommand list as sets.
//!
//! A command that does not declare how it uses its keys gets key-spec flags derived
//! from its own flags: a write command's keys are `RW access update` (the widest
//! reading: it may read, change or create them), a read command's keys `RO access`.

use super::shared::help_reply;
use super::table::{
    acl, flags, key_flags, legacy_range, BeginSearch, Command, FindKeys, FoundKeys, Registry,
};
use super::{args, errors, CmdError, CmdResult, Ctx};
use crate::util::glob::glob_match;
use kvik_resp::ReplyWriter;

const SUBCOMMANDS: &[Command] = &[
    sub("command|count", 2, count).doc(
        "server",
        "2.8.13",
        "O(1)",
        "Returns how many commands the server knows.",
    ),
    sub("command|list", -2, list).tips(UNORDERED).doc(
        "server",
        "7.0.0",
        "O(N) where N is the total number of Redis commands",
        "Lists the names of commands, optionally filtered.",
    ),
    sub("command|info", -2, info).tips(UNORDERED).doc(
        "server",
        "2.8.13",
        "O(N) where N is the number of commands to look up",
        "Describes the given commands, or all of them.",
    ),
    sub("command|docs", -2, docs).tips(UNORDERED).doc(
        "server",
        "7.0.0",
        "O(N) where N is the number of commands to look up",
        "Documents the given commands, or all of them.",
    ),
    sub("command|getkeys", -4, getkeys).doc(
        "server",
        "2.8.13",
        "O(N) where N is the number of arguments to the command",
        "Finds the keys in a full command line.",
    ),
    sub("command|getkeysandflags", -4, getkeysandflags).doc(
        "server",
        "7.0.0",
        "O(N) where N is the number of arguments to the command",
        "Finds the keys in a full command line, with how the command uses them.",
    ),
    sub("command|help", 2, help).doc(
        "server",
        "5.0.0",
        "O(1)",
        "Explains the COMMAND subcommands.",
    ),
];

/// The replies list commands in no promised order.
const UNORDERED: &[&str] = &["nondeterministic_output_order"];

/// A COMMAND subcommand: they all share COMMAND's flags and categories.
const fn sub(name: &'static str, arity: i32, handler: super::table::Handler) -> Command {
    Command::new(name, arity, handler)
        .flags(flags::LOADING | flags::STALE)
        .acl(acl::SLOW | acl::CONNECTION)
}

pub const COMMANDS: &[Command] = &[sub("command", -1, all)
    .tips(UNORDERED)
    .doc(
        "server",
        "2.8.13",
        "O(N) where N is the total number of Redis commands",
        "Describes every command the server knows.",
    )
    .subcommands(SUBCOMMANDS)];

/// Plain COMMAND: COMMAND INFO for every top-level command.
fn all(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let registry = crate::commands::registry();
    ctx.out.array(registry.top_level().count());
    for cmd in registry.top_level() {
        write_info(ctx.out, cmd);
    }
    Ok(())
}

fn count(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out
        .int(crate::commands::registry().top_level().count() as i64);
    Ok(())
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]: names of
/// commands and subcommands, each container followed by its subcommands.
fn list(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let filter = match args {
        [_, _] => Filter::All,
        [_, _, by, kind, value] if args::is(by, "FILTERBY") => {
            if args::is(kind, "MODULE") {
                Filter::Nothing
            } else if args::is(kind, "ACLCAT") {
                category(value).map_or(Filter::Nothing, Filter::Category)
            } else if args::is(kind, "PATTERN") {
                Filter::Pattern(value)
            } else {
                return Err(errors::SYNTAX.into());
            }
        }
        _ => return Err(errors::SYNTAX.into()),
    };
    let names: Vec<&str> = super::registry()
        .iter()
        .map(|(_, cmd)| cmd)
        .filter(|cmd| filter.accepts(cmd))
        .map(|cmd| cmd.name)
        .collect();
    ctx.out.array(names.len());
    for name in names {
        ctx.out.bulk(name.as_bytes());
    }
    Ok(())
}

/// COMMAND LIST's FILTERBY.
enum Filter<'a> {
    All,
    /// Matches nothing: kvik has no modules, or the category does not exist.
    Nothing,
    Category(u32),
    Pattern(&'a [u8]),
}

impl Filter<'_> {
    fn accepts(&self, cmd: &Command) -> bool {
        match *self {
            Filter::All => true,
            Filter::Nothing => false,
            Filter::Category(bit) => cmd.acl & bit != 0,
            Filter::Pattern(p) => glob_match(p, cmd.name.as_bytes(), true),
        }
    }
}

/// An ACL category by name, without the `@`, in any case.
fn category(name: &[u8]) -> Option<u32> {
    acl::NAMES
        .iter()
        .find(|(_, n)| n.as_bytes()[1..].eq_ignore_ascii_case(name))
        .map(|&(bit, _)| bit)
}

/// COMMAND INFO [name ...]: every top-level command without names; a null for a name
/// that is not a command. `container|sub` names a subcommand.
fn info(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() == 2 {
        return all(ctx, args);
    }
    let registry = crate::commands::registry();
    ctx.out.array(args.len() - 2);
    for name in &args[2..] {
        match registry.lookup(name) {
            Some(id) => write_info(ctx.out, registry.get(id)),
            None => ctx.out.null(),
        }
    }
    Ok(())
}

/// One command as COMMAND INFO describes it: name, arity, flags, first key, last key,
/// key step, ACL categories, tips, key specs, subcommands.
fn write_info(out: &mut ReplyWriter, cmd: &Command) {
    out.array(10);
    out.bulk(cmd.name.as_bytes());
    out.int(cmd.arity as i64);
    let ((first, last, step), movable) = legacy_range(cmd.specs());
    let movable = if movable { flags::MOVABLE_KEYS } else { 0 };
    write_names(out, cmd.flags | movable, flags::NAMES);
    out.int(first);
    out.int(last);
    out.int(step);
    write_names(out, cmd.acl, acl::NAMES);
    out.set(cmd.tips.len());
    for tip in cmd.tips {
        out.bulk(tip.as_bytes());
    }
    write_key_specs(out, cmd);
    // Redis 7.0 sends "no subcommands" as an empty set but the list as an array.
    if cmd.subcommands.is_empty() {
        out.set(0);
        return;
    }
    out.array(cmd.subcommands.len());
    for sub in cmd.subcommands {
        write_info(out, sub);
    }
}

/// The names of the bits set in `bits`, as a set of status replies.
fn write_names(out: &mut ReplyWriter, bits: u32, names: &[(u32, &str)]) {
    let set: Vec<&str> = names
        .iter()
        .filter(|(bit, _)| bits & bit != 0)
        .map(|&(_, name)| name)
        .collect();
    out.set(set.len());
    for name in set {
        out.simple(name);
    }
}

/// The key specs, each a map: notes (when it has some), flags, where the search for
/// keys begins and how keys are found from there.
fn write_key_specs(out: &mut ReplyWriter, cmd: &Command) {
    out.set(cmd.specs().len());
    for spec in cmd.specs() {
        let has_notes = !spec.notes.is_empty();
        out.map(3 + usize::from(has_notes));
        if has_notes {
            out.bulk(b"notes");
            out.bulk(spec.notes.as_bytes());
        }
        out.bulk(b"flags");
        write_names(out, cmd.spec_flags(spec), key_flags::NAMES);
        out.bulk(b"begin_search");
        match spec.begin {
            BeginSearch::Index(at) => write_search(out, "index", &[("index", at as i64)]),
            BeginSearch::Keyword { keyword, startfrom } => {
                out.map(2);
                out.bulk(b"type");
                out.bulk(b"keyword");
                out.bulk(b"spec");
                out.map(2);
                out.bulk(b"keyword");
                out.bulk(keyword.as_bytes());
                out.bulk(b"startfrom");
                out.int(startfrom.into());
            }
            BeginSearch::Unknown => write_search(out, "unknown", &[]),
        }
        out.bulk(b"find_keys");
        match spec.find {
            FindKeys::Range {
                lastkey,
                step,
                limit,
            } => write_search(
                out,
                "range",
                &[
                    ("lastkey", lastkey.into()),
                    ("keystep", step as i64),
                    ("limit", limit as i64),
                ],
            ),
            FindKeys::Keynum {
                keynumidx,
                firstkey,
                step,
            } => write_search(
                out,
                "keynum",
                &[
                    ("keynumidx", keynumidx as i64),
                    ("firstkey", firstkey as i64),
                    ("keystep", step as i64),
                ],
            ),
            FindKeys::Unknown => write_search(out, "unknown", &[]),
        }
    }
}

/// `{type: kind, spec: {name: value, ...}}`
fn write_search(out: &mut ReplyWriter, kind: &str, spec: &[(&str, i64)]) {
    out.map(2);
    out.bulk(b"type");
    out.bulk(kind.as_bytes());
    out.bulk(b"spec");
    out.map(spec.len());
    for &(name, value) in spec {
        out.bulk(name.as_bytes());
        out.int(value);
    }
}

/// COMMAND DOCS [name ...]: a map from command name to its documentation; every
/// top-level command without names; names that are not commands are left out.
fn docs(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let registry = crate::commands::registry();
    let found: Vec<&Command> = if args.len() == 2 {
        registry.top_level().collect()
    } else {
        args[2..]
            .iter()
            .filter_map(|name| registry.lookup(name))
            .map(|id| registry.get(id))
            .collect()
    };
    write_docs(ctx.out, &found);
    Ok(())
}

/// `{name: {summary, since, group, complexity[, subcommands]}, ...}`
fn write_docs(out: &mut ReplyWriter, commands: &[&Command]) {
    out.map(commands.len());
    for cmd in commands {
        out.bulk(cmd.name.as_bytes());
        let has_subs = !cmd.subcommands.is_empty();
        out.map(4 + has_subs as usize);
        for (field, value) in [
            ("summary", cmd.summary),
            ("since", cmd.since),
            ("group", cmd.group),
            ("complexity", cmd.complexity),
        ] {
            out.bulk(field.as_bytes());
            out.bulk(value.as_bytes());
        }
        if has_subs {
            out.bulk(b"subcommands");
            let subs: Vec<&Command> = cmd.subcommands.iter().collect();
            write_docs(out, &subs);
        }
    }
}

fn getkeys(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let target = &args[2..];
    let (_, keys) = keys_of(crate::commands::registry(), target)?;
    ctx.out.array(keys.0.len());
    for (at, _) in keys.0 {
        ctx.out.bulk(target[at]);
    }
    Ok(())
}

fn getkeysandflags(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let target = &args[2..];
    let (_, keys) = keys_of(crate::commands::registry(), target)?;
    ctx.out.array(keys.0.len());
    for (at, flags) in keys.0 {
        ctx.out.array(2);
        ctx.out.bulk(target[at]);
        write_names(ctx.out, flags, key_flags::NAMES);
    }
    Ok(())
}

/// The command a full command line runs, and its keys, with COMMAND GETKEYS's errors.
fn keys_of(registry: &Registry, line: &[&[u8]]) -> Result<(&'static Command, FoundKeys), CmdError> {
    const INVALID_COMMAND: &str = "ERR Invalid command specified";
    // `config|get` is how COMMAND INFO names a subcommand, not a command line.
    let mut id = registry
        .lookup(line[0])
        .filter(|_| !line[0].contains(&b'|'))
        .ok_or(INVALID_COMMAND)?;
    if !registry.get(id).subcommands.is_empty() && line.len() > 1 {
        id = registry
            .lookup_sub(registry.get(id), line[1])
            .ok_or(INVALID_COMMAND)?;
    }
    let cmd = registry.get(id);
    // Shard channels sit in a key spec but are not keys.
    if cmd
        .specs()
        .iter()
        .all(|spec| spec.flags & key_flags::NOT_KEY != 0)
    {
        return Err("ERR The command has no key arguments".into());
    }
    if !cmd.arity_ok(line.len()) {
        return Err("ERR Invalid number of arguments specified for command".into());
    }
    let mut keys = FoundKeys::default();
    let valid = cmd.keys_and_flags(line, &mut keys);
    match keys {
        keys if valid && !keys.0.is_empty() => Ok((cmd, keys)),
        _ if cmd.has(flags::NO_MANDATORY_KEYS) => Ok((cmd, FoundKeys::default())),
        _ => Err("ERR Invalid arguments specified for command".into()),
    }
}

fn help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx.out,
        "COMMAND",
        &[
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    Return the keys from a full Redis command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys and the access flags from a full Redis command.",
        ],
    );
    Ok(())
}
