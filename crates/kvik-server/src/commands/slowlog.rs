//! SLOWLOG and what the command layer puts in the slow log.
//!
//! Which calls are logged, and with which arguments shown, is decided here;
//! keeping the entries is [`crate::slowlog`]'s. As in Redis 7.0: every call that
//! ran to its end is a candidate, the commands a transaction or a script runs
//! included (a script's are shown as made by no client, `?:0` with no name); EXEC
//! is flagged `skip_slowlog` and is not; a blocking command is logged when it is
//! served, timed without the wait; secrets are shown as `(redacted)`.

use super::shared::{help_reply, subcommand_syntax_error};
use super::table::{acl, flags, Command, Handler};
use super::{args, CmdResult, Ctx};
use crate::client::ClientState;
use crate::server::Server;
use crate::slowlog::Call;
use std::time::Duration;

/// The subcommands that read or change the log: administrative, as in Redis.
const fn admin(name: &'static str, arity: i32, handler: Handler) -> Command {
    Command::new(name, arity, handler)
        .flags(flags::ADMIN | flags::LOADING | flags::STALE)
        .acl(acl::ADMIN | acl::SLOW | acl::DANGEROUS)
}

const SUBCOMMANDS: &[Command] = &[
    admin("slowlog|get", -2, get)
        .tips(&["request_policy:all_nodes", "nondeterministic_output"])
        .doc(
            "server",
            "2.2.12",
            "O(N) where N is the number of entries returned",
            "Returns the newest entries of the slow log.",
        ),
    admin("slowlog|len", 2, len)
        .tips(&[
            "request_policy:all_nodes",
            "response_policy:agg_sum",
            "nondeterministic_output",
        ])
        .doc(
            "server",
            "2.2.12",
            "O(1)",
            "Returns how many entries the slow log holds.",
        ),
    admin("slowlog|reset", 2, reset)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc(
            "server",
            "2.2.12",
            "O(N) where N is the number of entries in the slowlog",
            "Empties the slow log.",
        ),
    Command::help(
        "slowlog|help",
        help,
        "6.2.0",
        "Explains the SLOWLOG subcommands.",
    ),
];

pub const COMMANDS: &[Command] = &[Command::container(
    "slowlog",
    help,
    "2.2.12",
    "Reads or empties the slow log.",
    SUBCOMMANDS,
)];

/// Who made a call, as its slow log entry shows it.
#[derive(Clone, Copy)]
pub enum Origin<'c> {
    Client(&'c ClientState),
    /// A command a script ran: Redis shows its fake client, `?:0` without a name.
    Script,
}

/// The entry a call of `cmd` with `args` that ran for `elapsed` would leave, if the
/// slow log wants it: the arguments are copied (redacted, then cut) only then.
pub fn draft(server: &Server, cmd: &Command, args: &[&[u8]], elapsed: Duration) -> Option<Call> {
    if cmd.has(flags::SKIP_SLOWLOG) || !server.slowlog.is_slow(elapsed) {
        return None;
    }
    let shown = super::redacted(cmd, args);
    Some(Call::new(&shown, elapsed.as_micros() as u64))
}

/// Log `call`, made by `origin`.
pub fn push(server: &Server, origin: Origin, call: Call) {
    let (addr, name) = match origin {
        Origin::Client(client) => (
            client.info.addr.clone(),
            client.name.clone().unwrap_or_default(),
        ),
        Origin::Script => ("?:0".to_owned(), Vec::new()),
    };
    server.slowlog.push(call, addr, name);
}

/// SLOWLOG GET [count]: the newest `count` entries (10 by default, -1 for all).
fn get(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let count = match args {
        [_, _] => 10,
        [_, _, count] => match args::int(count) {
            Ok(-1) => usize::MAX,
            Ok(n) if n >= 0 => n as usize,
            _ => return Err("ERR count should be greater than or equal to -1".into()),
        },
        _ => return Err(subcommand_syntax_error(args)),
    };
    let entries = ctx.server.slowlog.latest(count);
    let out = &mut *ctx.out;
    out.array(entries.len());
    for entry in &entries {
        out.array(6);
        out.int(entry.id as i64);
        out.int(entry.time as i64);
        out.int(entry.duration_us as i64);
        out.array(entry.args.len());
        for arg in &entry.args {
            out.bulk(arg);
        }
        out.bulk(entry.client_addr.as_bytes());
        out.bulk(&entry.client_name);
    }
    Ok(())
}

fn len(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.int(ctx.server.slowlog.len() as i64);
    Ok(())
}

fn reset(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.server.slowlog.reset();
    ctx.out.ok();
    Ok(())
}

fn help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx.out,
        "SLOWLOG",
        &[
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
        ],
    );
    Ok(())
}
