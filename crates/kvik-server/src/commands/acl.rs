//! ACL and the command side of access control: the ACL subcommands, the check
//! every command line passes in the one door ([`check`]), the NOPERM texts, and
//! the command facts handed down to [`crate::acl`] at start-up ([`catalog`]).
//!
//! The users, rules and log live in [`crate::acl`]; this module only connects them
//! to commands, clients and replies, with Redis 7.0's texts.

use super::shared::help_reply;
use super::table::{acl, flags, key_flags, Channels, Command, FoundKeys, Handler};
use super::{args, registry, CmdError, CmdResult, Ctx};
use crate::acl::{Catalog, CommandFacts, Context, Denied, Entry, LineFacts, Reason, User};
use crate::client::ClientState;
use crate::server::Server;
use kvik_resp::ReplyWriter;

const fn admin(name: &'static str, arity: i32, handler: Handler) -> Command {
    Command::new(name, arity, handler)
        .flags(flags::ADMIN | flags::NOSCRIPT | flags::LOADING | flags::STALE)
        .acl(acl::ADMIN | acl::SLOW | acl::DANGEROUS)
}

const fn plain(name: &'static str, arity: i32, handler: Handler) -> Command {
    Command::new(name, arity, handler)
        .flags(flags::NOSCRIPT | flags::LOADING | flags::STALE)
        .acl(acl::SLOW)
}

const fn doc(
    c: Command,
    complexity: &'static str,
    since: &'static str,
    summary: &'static str,
) -> Command {
    c.doc("server", since, complexity, summary)
}

const SUBCOMMANDS: &[Command] = &[
    doc(
        plain("acl|cat", -2, cat),
        "O(1) since the categories and commands are a fixed set.",
        "6.0.0",
        "List the ACL categories or the commands inside a category",
    ),
    doc(
        admin("acl|deluser", -3, deluser),
        "O(1) amortized time considering the typical user.",
        "6.0.0",
        "Remove the specified ACL users and the associated rules",
    ),
    doc(
        admin("acl|dryrun", -4, dryrun),
        "O(1).",
        "7.0.0",
        "Returns whether the user can execute the given command without executing the command.",
    ),
    doc(
        plain("acl|genpass", -2, genpass),
        "O(1)",
        "6.0.0",
        "Generate a pseudorandom secure password to use for ACL users",
    ),
    doc(
        admin("acl|getuser", 3, getuser),
        "O(N). Where N is the number of password, command and pattern rules that the user has.",
        "6.0.0",
        "Get the rules for a specific ACL user",
    ),
    doc(
        admin("acl|list", 2, list),
        "O(N). Where N is the number of configured users.",
        "6.0.0",
        "List the current ACL rules in ACL config file format",
    ),
    doc(
        admin("acl|load", 2, load),
        "O(N). Where N is the number of configured users.",
        "6.0.0",
        "Reload the ACLs from the configured ACL file",
    ),
    doc(
        admin("acl|log", -2, log),
        "O(N) with N being the number of entries shown.",
        "6.0.0",
        "List latest events denied because of ACLs in place",
    ),
    doc(
        admin("acl|save", 2, save),
        "O(N). Where N is the number of configured users.",
        "6.0.0",
        "Save the current ACL rules in the configured ACL file",
    ),
    doc(
        admin("acl|setuser", -3, setuser),
        "O(N). Where N is the number of rules provided.",
        "6.0.0",
        "Modify or create the rules for a specific ACL user",
    ),
    doc(
        admin("acl|users", 2, users),
        "O(N). Where N is the number of configured users.",
        "6.0.0",
        "List the username of all the configured ACL rules",
    ),
    doc(
        plain("acl|whoami", 2, whoami),
        "O(1)",
        "6.0.0",
        "Return the name of the user associated to the current connection",
    ),
    Command::help(
        "acl|help",
        help,
        "6.0.0",
        "Show helpful text about the different subcommands",
    ),
];

pub const COMMANDS: &[Command] = &[Command::container(
    "acl",
    help,
    "6.0.0",
    "A container for Access List Control commands ",
    SUBCOMMANDS,
)];

/// The command facts the ACL rules name, from the table.
pub fn catalog() -> Catalog {
    let registry = registry();
    let mut facts: Vec<CommandFacts> = registry
        .iter()
        .map(|(_, c)| CommandFacts {
            name: c.name,
            categories: c.acl,
            parent: None,
            subcommands: Vec::new(),
            no_auth: c.has(flags::NO_AUTH),
        })
        .collect();
    for (id, c) in registry.iter() {
        for sub in c.subcommands {
            if let Some(sub_id) = registry.lookup(sub.name.as_bytes()) {
                facts[id].subcommands.push(sub_id);
                facts[sub_id].parent = Some(id);
            }
        }
    }
    Catalog::new(facts, acl::NAMES)
}

/// A command line as the ACL sees it: its keys and channels, from the table.
struct Line<'l> {
    cmd: &'l Command,
    args: &'l [&'l [u8]],
}

impl LineFacts for Line<'_> {
    #[inline(always)]
    fn first_refused_key(&self, mut allowed: impl FnMut(usize, u8) -> bool) -> Option<usize> {
        if self.cmd.refine_keys.is_some() {
            return self.first_refused_found_key(allowed);
        }
        // Most commands: straight from the key specs, nothing collected. A
        // `variable_flags` spec asks the most any line may, so a line it passes
        // needs no settling (SET without GET: no refinement on the hot path).
        let refused = self.first_refused_spec_key(&mut allowed);
        if refused.is_some() && self.cmd.settle_key_flags.is_some() {
            return self.first_refused_found_key(allowed);
        }
        refused
    }

    #[inline]
    fn first_refused_channel(&self, mut allowed: impl FnMut(usize, bool) -> bool) -> Option<usize> {
        if self.cmd.channels == Channels::None {
            return None;
        }
        let mut refused = None;
        self.cmd.channels.each(self.args, |at, pattern| {
            if refused.is_none() && !allowed(at, pattern) {
                refused = Some(at);
            }
        });
        refused
    }
}

impl Line<'_> {
    /// The first key the specs find, under the specs' own flags, that `allowed` refuses.
    #[inline(always)]
    fn first_refused_spec_key(&self, allowed: &mut impl FnMut(usize, u8) -> bool) -> Option<usize> {
        let argc = self.args.len();
        for spec in self.cmd.specs() {
            let flags = self.cmd.spec_flags(spec);
            if flags & key_flags::NOT_KEY != 0 {
                continue;
            }
            let need = permission_needed(flags);
            let mut refused = None;
            spec.each_key(self.args, |at| {
                if refused.is_none() && at < argc && !allowed(at, need) {
                    refused = Some(at);
                }
            });
            if refused.is_some() {
                return refused;
            }
        }
        None
    }

    /// The first key of the line's settled and refined keys that `allowed` refuses.
    fn first_refused_found_key(&self, mut allowed: impl FnMut(usize, u8) -> bool) -> Option<usize> {
        let argc = self.args.len();
        let mut keys = FoundKeys::default();
        self.cmd.keys_and_flags(self.args, &mut keys);
        keys.0
            .iter()
            .filter(|&&(at, flags)| flags & key_flags::NOT_KEY == 0 && at < argc)
            .find(|&&(at, flags)| !allowed(at, permission_needed(flags)))
            .map(|&(at, _)| at)
    }
}

/// What a key's flags ask of a key pattern: reading (`access`) needs `%R`;
/// inserting, deleting or updating needs `%W`.
fn permission_needed(flags: u32) -> u8 {
    let mut need = 0;
    if flags & key_flags::ACCESS != 0 {
        need |= crate::acl::READ;
    }
    if flags & (key_flags::INSERT | key_flags::DELETE | key_flags::UPDATE) != 0 {
        need |= crate::acl::WRITE;
    }
    need
}

/// The check in the door: may the client's user run command `id` with `args`?
/// The default user with every permission passes on one relaxed load, as does the
/// client applying a master's stream (Redis's master client has no user: what its
/// master wrote is applied whatever the local users may do). A refusal is logged
/// in ACL LOG and answered with Redis's NOPERM text.
#[inline]
pub fn check(server: &Server, client: &mut ClientState, id: usize, args: &[&[u8]]) -> CmdResult {
    if client.is_master || client.acl.is_unrestricted(&server.acl) {
        return Ok(());
    }
    let context = if client.multi.is_some() {
        Context::Multi
    } else {
        Context::Toplevel
    };
    check_restricted(server, client, id, args, context).map_err(|denied| {
        let cmd = registry().get(id);
        CmdError::from(noperm_text(denied, cmd))
    })
}

/// The check for a restricted user, logging a refusal made in `context`.
#[inline]
pub fn check_restricted(
    server: &Server,
    client: &mut ClientState,
    id: usize,
    args: &[&[u8]],
    context: Context,
) -> Result<(), Denied> {
    let cmd = registry().get(id);
    let line = Line { cmd, args };
    let (denied, username) = match client.acl.current(&server.acl) {
        None => return Ok(()),
        Some(user) => match server.acl.check(user, id, args, &line) {
            Ok(()) => return Ok(()),
            Err(denied) => (denied, user.name.clone()),
        },
    };
    refused(server, client, cmd, args, denied, context, &username);
    Err(denied)
}

/// Record a refusal: the client's last command and an ACL LOG entry.
#[cold]
fn refused(
    server: &Server,
    client: &mut ClientState,
    cmd: &Command,
    args: &[&[u8]],
    denied: Denied,
    context: Context,
    username: &str,
) {
    // CLIENT LIST (and the log's client-info) name the refused command, as Redis's.
    client.last_command = cmd.name;
    let object = match denied.reason {
        Reason::Command => cmd.name.to_string(),
        _ => String::from_utf8_lossy(args[denied.arg]).into_owned(),
    };
    log_refusal(server, client, denied.reason, context, object, username);
}

/// The NOPERM reply to a refused command line.
pub fn noperm_text(denied: Denied, cmd: &Command) -> String {
    match denied.reason {
        Reason::Command => format!(
            "NOPERM this user has no permissions to run the '{}' command",
            cmd.name
        ),
        Reason::Key => {
            "NOPERM this user has no permissions to access one of the keys used as arguments".into()
        }
        _ => "NOPERM this user has no permissions to access one of the channels used as arguments"
            .into(),
    }
}

/// EXEC's reply for a queued command the user may no longer run.
pub fn exec_refusal_text(denied: Denied) -> String {
    let reason = match denied.reason {
        Reason::Command => "no permission to execute the command or subcommand",
        Reason::Key => "no permission to touch the specified keys",
        _ => "no permission to access one of the channels used as arguments",
    };
    format!("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {reason}")
}

/// A script's error for a command its caller may not run.
pub fn script_refusal_text(denied: Denied) -> &'static str {
    match denied.reason {
        Reason::Command => {
            "ERR The user executing the script can't run this command or subcommand"
        }
        Reason::Key => "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments",
        _ => "ERR The user executing the script can't publish to the channel mentioned in the command",
    }
}

/// Add an ACL LOG entry for a refusal by `client`.
pub fn log_refusal(
    server: &Server,
    client: &ClientState,
    reason: Reason,
    context: Context,
    object: String,
    username: &str,
) {
    let now = crate::hlc::unix_ms();
    let mut snap = client.info.snapshot.lock().clone();
    snap.user = client.user.clone();
    snap.db = client.db;
    snap.name = client.name.clone();
    snap.last_command = client.last_command;
    let mut client_info = String::new();
    client.info.describe(&snap, now, &mut client_info);
    let client_info = client_info.trim_end().to_string();
    server.acl.log(Entry {
        count: 1,
        reason,
        context,
        object,
        username: username.to_string(),
        created_ms: now,
        client_info,
    });
}

/// AUTH and HELLO's AUTH: switch the client to `user` if `password` opens it;
/// a failure is logged as Redis logs it and answered WRONGPASS.
pub fn authenticate(ctx: &mut Ctx, user: &[u8], password: &[u8], command: &[u8]) -> CmdResult {
    match ctx.server.acl.authenticate(user, password) {
        Some(session) => {
            let name = session.user_name().to_string();
            ctx.client.acl = session;
            ctx.client.authenticated = true;
            ctx.client.info.snapshot.lock().user = name.clone();
            ctx.client.user = name;
            Ok(())
        }
        None => {
            let context = if ctx.client.multi.is_some() {
                Context::Multi
            } else {
                Context::Toplevel
            };
            let object = String::from_utf8_lossy(command).into_owned();
            let username = String::from_utf8_lossy(user).into_owned();
            log_refusal(
                ctx.server,
                ctx.client,
                Reason::Auth,
                context,
                object,
                &username,
            );
            Err("WRONGPASS invalid username-password pair or user is disabled.".into())
        }
    }
}

fn setuser(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = args[2];
    if name.iter().any(|&b| b == b' ' || b == 0) {
        return Err("ERR Usernames can't contain spaces or null characters".into());
    }
    let rules = crate::acl::merge_selector_args(&args[3..]).map_err(|start| {
        CmdError::from(format!(
            "ERR Unmatched parenthesis in acl selector starting at '{}'.",
            String::from_utf8_lossy(&start)
        ))
    })?;
    let name = String::from_utf8_lossy(name);
    ctx.server
        .acl
        .set_user(&name, &rules)
        .map_err(|(rule, e)| {
            CmdError::from(format!(
                "ERR Error in ACL SETUSER modifier '{}': {}",
                String::from_utf8_lossy(&rule),
                e.text()
            ))
        })?;
    close_revoked_subscribers(ctx, &name);
    ctx.out.ok();
    Ok(())
}

/// As Redis 7.0: the connections of `name` subscribed to a channel or pattern the
/// user may no longer use are closed.
fn close_revoked_subscribers(ctx: &mut Ctx, name: &str) {
    let Some(user) = ctx.server.acl.user(name) else {
        return;
    };
    if user.root.all_channels {
        return;
    }
    let server = ctx.server;
    let hub = &server.pubsub;
    super::client::kill_matching(ctx, |client| {
        let (user_name, subscriptions) = {
            let snap = client.snapshot.lock();
            (snap.user.clone(), snap.subscriptions)
        };
        user_name == name
            && subscriptions != (0, 0, 0)
            && hub
                .subscriptions_of(client.id)
                .iter()
                .any(|(kind, channel)| {
                    !user.allows_channel(channel, *kind == crate::pubsub::Kind::Pattern)
                })
    });
}

fn getuser(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = String::from_utf8_lossy(args[2]);
    let Some(user) = ctx.server.acl.user(&name) else {
        ctx.out.null();
        return Ok(());
    };
    let catalog = ctx.server.acl.catalog();
    let out = &mut *ctx.out;
    out.map(6);
    out.bulk(b"flags");
    let flags = user.flags();
    out.set(flags.len());
    flags.iter().for_each(|f| out.bulk(f.as_bytes()));
    out.bulk(b"passwords");
    out.array(user.passwords.len());
    user.passwords.iter().for_each(|p| out.bulk(p.as_bytes()));
    write_selector(out, catalog, &user.root);
    out.bulk(b"selectors");
    out.array(user.selectors.len());
    for selector in &user.selectors {
        out.map(3);
        write_selector(out, catalog, selector);
    }
    Ok(())
}

fn write_selector(out: &mut ReplyWriter, catalog: &Catalog, selector: &crate::acl::Selector) {
    out.bulk(b"commands");
    out.bulk(selector.describe_commands(catalog).as_bytes());
    out.bulk(b"keys");
    out.bulk(selector.describe_keys().as_bytes());
    out.bulk(b"channels");
    out.bulk(selector.describe_channels().as_bytes());
}

fn deluser(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let names: Vec<String> = args[2..]
        .iter()
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect();
    if names.iter().any(|n| n == "default") {
        return Err("ERR The 'default' user cannot be removed".into());
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let removed = ctx.server.acl.delete(&refs);
    super::client::kill_where(ctx, |user| removed.iter().any(|r| r == user));
    ctx.out.int(removed.len() as i64);
    Ok(())
}

fn list(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let lines = user_lines(ctx.server);
    ctx.out.array(lines.len());
    lines.iter().for_each(|l| ctx.out.bulk(l.as_bytes()));
    Ok(())
}

/// Every user as ACL LIST, ACL SAVE and CONFIG REWRITE write it.
pub fn user_lines(server: &Server) -> Vec<String> {
    let catalog = server.acl.catalog();
    server
        .acl
        .users()
        .iter()
        .map(|u| format!("user {} {}", u.name, u.describe(catalog)))
        .collect()
}

fn users(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let users = ctx.server.acl.users();
    ctx.out.array(users.len());
    users.iter().for_each(|u| ctx.out.bulk(u.name.as_bytes()));
    Ok(())
}

fn whoami(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let name = ctx.client.acl.user_name().to_string();
    ctx.out.bulk(name.as_bytes());
    Ok(())
}

fn cat(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 3 {
        return Err(super::shared::subcommand_syntax_error(args));
    }
    let catalog = ctx.server.acl.catalog();
    let Some(name) = args.get(2) else {
        ctx.out.array(catalog.categories().len());
        for (_, name) in catalog.categories() {
            ctx.out.bulk(name.as_bytes());
        }
        return Ok(());
    };
    let bit = std::str::from_utf8(name)
        .ok()
        .and_then(|n| catalog.category(n))
        .ok_or_else(|| {
            CmdError::from(format!(
                "ERR Unknown category '{}'",
                String::from_utf8_lossy(name)
            ))
        })?;
    let mut names = Vec::new();
    for id in catalog.top_level() {
        let facts = catalog.get(id);
        if facts.categories & bit != 0 {
            names.push(facts.name);
        }
        for &sub in &facts.subcommands {
            if catalog.get(sub).categories & bit != 0 {
                names.push(catalog.get(sub).name);
            }
        }
    }
    ctx.out.array(names.len());
    names.iter().for_each(|n| ctx.out.bulk(n.as_bytes()));
    Ok(())
}

fn log(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 3 {
        return Err(super::shared::subcommand_syntax_error(args));
    }
    let count = match args.get(2) {
        None => 10,
        Some(a) if args::is(a, "RESET") => {
            ctx.server.acl.log_reset();
            ctx.out.ok();
            return Ok(());
        }
        Some(a) => args::int(a)?.max(0) as usize,
    };
    let now = crate::hlc::unix_ms();
    let entries = ctx.server.acl.log_entries(count);
    let out = &mut *ctx.out;
    out.array(entries.len());
    for e in entries {
        out.map(7);
        out.bulk(b"count");
        out.int(e.count as i64);
        out.bulk(b"reason");
        out.bulk(e.reason.name().as_bytes());
        out.bulk(b"context");
        out.bulk(e.context.name().as_bytes());
        out.bulk(b"object");
        out.bulk(e.object.as_bytes());
        out.bulk(b"username");
        out.bulk(e.username.as_bytes());
        out.bulk(b"age-seconds");
        let age = now.saturating_sub(e.created_ms) as f64 / 1000.0;
        out.double_text(crate::util::numbers::format_f64(age).as_bytes());
        out.bulk(b"client-info");
        out.bulk(e.client_info.as_bytes());
    }
    Ok(())
}

fn genpass(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 3 {
        return Err(super::shared::subcommand_syntax_error(args));
    }
    let bits = match args.get(2) {
        None => 256,
        Some(a) => args::int(a)?,
    };
    if !(1..=4096).contains(&bits) {
        return Err("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096".into());
    }
    let chars = (bits as usize).div_ceil(4);
    let bytes: Vec<u8> = (0..chars.div_ceil(2)).map(|_| rand::random()).collect();
    let mut text = hex::encode(bytes);
    text.truncate(chars);
    ctx.out.bulk(text.as_bytes());
    Ok(())
}

fn dryrun(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = String::from_utf8_lossy(args[2]);
    let user = ctx
        .server
        .acl
        .user(&name)
        .ok_or_else(|| CmdError::from(format!("ERR User '{name}' not found")))?;
    let line = &args[3..];
    let registry = registry();
    let not_found = || {
        CmdError::from(format!(
            "ERR Command '{}' not found",
            String::from_utf8_lossy(line[0])
        ))
    };
    let mut id = registry.lookup(line[0]).ok_or_else(not_found)?;
    if !registry.get(id).subcommands.is_empty() && line.len() > 1 {
        id = registry
            .lookup_sub(registry.get(id), line[1])
            .ok_or_else(not_found)?;
    }
    let cmd = registry.get(id);
    if !cmd.arity_ok(line.len()) {
        return Err(format!("ERR wrong number of arguments for '{}' command", cmd.name).into());
    }
    match ctx
        .server
        .acl
        .check(&user, id, line, &Line { cmd, args: line })
    {
        Ok(()) => ctx.out.ok(),
        Err(d) => {
            let object = String::from_utf8_lossy(line[d.arg]);
            let text = match d.reason {
                Reason::Command => format!(
                    "This user has no permissions to run the '{}' command",
                    cmd.name
                ),
                Reason::Key => format!("This user has no permissions to access the '{object}' key"),
                _ => format!("This user has no permissions to access the '{object}' channel"),
            };
            ctx.out.bulk(text.as_bytes());
        }
    }
    Ok(())
}

const NO_ACL_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";

fn acl_file(server: &Server) -> Result<String, CmdError> {
    let file = server.config.read().aclfile.clone();
    if file.is_empty() {
        return Err(NO_ACL_FILE.into());
    }
    Ok(file)
}

fn save(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let file = acl_file(ctx.server)?;
    let mut text = user_lines(ctx.server).join("\n");
    text.push('\n');
    let tmp = format!("{file}.tmp-{}", std::process::id());
    let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &file));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        crate::log_warning!("Failed to save the ACL users to {file}: {e}");
        return Err("ERR There was an error trying to save the ACLs. Please check the server logs for more information".into());
    }
    ctx.out.ok();
    Ok(())
}

fn load(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let file = acl_file(ctx.server)?;
    let users = read_acl_file(ctx.server, &file).map_err(|e| CmdError::from(format!("ERR {e}")))?;
    let replaced: Vec<String> = ctx
        .server
        .acl
        .users()
        .iter()
        .map(|u| u.name.clone())
        .filter(|n| n != "default")
        .collect();
    ctx.server.acl.replace_all(users, false);
    // As Redis, the connections of every user but `default` are closed.
    super::client::kill_where(ctx, |user| replaced.iter().any(|r| r == user));
    ctx.out.ok();
    Ok(())
}

/// The users an ACL file defines, or Redis's error text naming each bad line.
pub fn read_acl_file(server: &Server, file: &str) -> Result<Vec<User>, String> {
    let text = std::fs::read(file).map_err(|e| {
        format!(
            "Error loading ACLs, opening file '{file}': {}",
            kvik_config::parse::os_error_text(&e)
        )
    })?;
    let mut users: Vec<User> = Vec::new();
    let mut errors = String::new();
    for (n, line) in text.split(|&b| b == b'\n').enumerate() {
        let n = n + 1;
        let line = line.trim_ascii();
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        let Some(words) = kvik_resp::split_args(line) else {
            errors.push_str(&format!("{file}:{n}: unbalanced quotes in acl line. "));
            continue;
        };
        if words.first().map(Vec::as_slice) != Some(b"user") || words.len() < 2 {
            errors.push_str(&format!("{file}:{n}: should start with user keyword. "));
            continue;
        }
        let refs: Vec<&[u8]> = words[1..].iter().map(Vec::as_slice).collect();
        match server.acl.parse_user(&refs, false) {
            Ok(user) if users.iter().any(|u| u.name == user.name) => {
                errors.push_str(&format!(
                    "{file}:{n}: Duplicate user '{}' found. ",
                    user.name
                ));
            }
            Ok(user) => users.push(user),
            Err((_, e)) => errors.push_str(&format!("{file}:{n}: {}. ", e.text())),
        }
    }
    if !errors.is_empty() {
        errors.push_str("WARNING: ACL errors detected, no change to the previously active ACL rules was performed");
        return Err(errors);
    }
    if !users.iter().any(|u| u.name == "default") {
        users.push(User::default_user(server.acl.catalog()));
    }
    Ok(users)
}

/// At start-up: the config's `user` lines, or the ACL file (not both, as Redis).
pub fn load_configured_users(server: &Server) -> Result<(), String> {
    let (lines, file) = {
        let c = server.config.read();
        (c.users.clone(), c.aclfile.clone())
    };
    if !lines.is_empty() && !file.is_empty() {
        return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.".into());
    }
    if !file.is_empty() {
        let users = read_acl_file(server, &file)
            .map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"))?;
        server.acl.replace_all(users, false);
        return Ok(());
    }
    let mut users = Vec::new();
    for line in &lines {
        let words: Vec<&[u8]> = line.iter().map(|w| w.as_bytes()).collect();
        let user = server.acl.parse_user(&words, true).map_err(|(rule, e)| {
            format!(
                "Error in user declaration '{}': {}",
                String::from_utf8_lossy(&rule),
                e.text()
            )
        })?;
        users.push(user);
    }
    if !users.is_empty() {
        server.acl.replace_all(users, true);
    }
    Ok(())
}

fn help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx.out,
        "ACL",
        &[
            "CAT [<category>]",
            "    List all commands that belong to <category>, or all command categories",
            "    when no category is specified.",
            "DELUSER <username> [<username> ...]",
            "    Delete a list of users.",
            "DRYRUN <username> <command> [<arg> ...]",
            "    Returns whether the user can execute the given command without executing the command.",
            "GETUSER <username>",
            "    Get the user's details.",
            "GENPASS [<bits>]",
            "    Generate a secure 256-bit user password. The optional `bits` argument can",
            "    be used to specify a different size.",
            "LIST",
            "    Show users details in config file format.",
            "LOAD",
            "    Reload users from the ACL file.",
            "LOG [<count> | RESET]",
            "    Show the ACL log entries.",
            "SAVE",
            "    Save the current config to the ACL file.",
            "SETUSER <username> <attribute> [<attribute> ...]",
            "    Create or modify a user with the specified attributes.",
            "USERS",
            "    List all the registered usernames.",
            "WHOAMI",
            "    Return the current connection username.",
        ],
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::commands::registry;
    use crate::commands::table::key_flags;

    /// The ACL skips settling a line's key flags when it passes under its specs'
    /// flags: sound only while every settled spec is a `variable_flags` one (which
    /// declares the most a line may ask) and every such spec is settled.
    #[test]
    fn settled_key_flags_belong_to_variable_flags_specs() {
        for (_, cmd) in registry().iter() {
            let variable = cmd
                .specs()
                .iter()
                .any(|spec| spec.flags & key_flags::VARIABLE_FLAGS != 0);
            assert_eq!(
                variable,
                cmd.settle_key_flags.is_some(),
                "{}: variable_flags spec and settle_key_flags go together",
                cmd.name
            );
        }
    }
}
