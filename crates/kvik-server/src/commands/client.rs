//! CLIENT: the container command for inspecting and steering connections (ID, NAME,
//! LIST, INFO, KILL, PAUSE, REPLY, UNBLOCK ...).
//!
//! The calling client's own state is changed directly. Other clients live on other
//! threads: they are read through their published [`ClientInfo`] snapshots, killed
//! by flagging them and messaging their worker, which closes them, and unblocked by
//! ending their wait and sending the reply to their worker. TRACKING, CACHING,
//! GETREDIR and TRACKINGINFO parse and answer here; client-side caching itself is
//! [`crate::tracking`].

use super::shared::{help_reply, subcommand_syntax_error};
use super::table::{acl, flags, Command};
use super::{args, errors, CmdError, CmdResult, Ctx};
use crate::client::{
    ClientInfo, ClientSnapshot, ClientState, ClientTracking, ClientType, ReplyMode,
};
use crate::mailbox::Message;
use crate::server::Server;
use crate::tracking;
use std::collections::BTreeSet;

/// Flags every CLIENT subcommand has.
const SUB_FLAGS: u32 = flags::NOSCRIPT | flags::LOADING | flags::STALE | flags::KEEPS_CACHING;
/// Flags and ACL categories of the subcommands that act on other clients.
const ADMIN_FLAGS: u32 = SUB_FLAGS | flags::ADMIN;
const ADMIN_ACL: u32 = acl::ADMIN | acl::SLOW | acl::DANGEROUS | acl::CONNECTION;
const CONN_ACL: u32 = acl::SLOW | acl::CONNECTION;

const fn sub(
    name: &'static str,
    arity: i32,
    handler: super::table::Handler,
    since: &'static str,
    summary: &'static str,
) -> Command {
    Command::new(name, arity, handler)
        .flags(SUB_FLAGS)
        .acl(CONN_ACL)
        .doc("connection", since, "O(1)", summary)
}

const fn admin_sub(
    name: &'static str,
    arity: i32,
    handler: super::table::Handler,
    since: &'static str,
    complexity: &'static str,
    summary: &'static str,
) -> Command {
    Command::new(name, arity, handler)
        .flags(ADMIN_FLAGS)
        .acl(ADMIN_ACL)
        .doc("connection", since, complexity, summary)
}

const SUBCOMMANDS: &[Command] = &[
    sub(
        "client|id",
        2,
        id,
        "5.0.0",
        "Returns the unique client ID of the connection.",
    ),
    sub(
        "client|getname",
        2,
        getname,
        "2.6.9",
        "Returns the name of the connection.",
    ),
    sub(
        "client|setname",
        3,
        setname,
        "2.6.9",
        "Sets the connection name.",
    ),
    sub(
        "client|setinfo",
        4,
        setinfo,
        "7.2.0",
        "Sets information specific to the client or connection.",
    ),
    admin_sub(
        "client|list",
        -2,
        list,
        "2.4.0",
        "O(N) where N is the number of client connections",
        "Lists open connections.",
    )
    .tips(NONDETERMINISTIC),
    sub(
        "client|info",
        2,
        info,
        "6.2.0",
        "Returns information about the connection.",
    )
    .tips(NONDETERMINISTIC),
    admin_sub(
        "client|kill",
        -3,
        kill,
        "2.4.0",
        "O(N) where N is the number of client connections",
        "Terminates open connections.",
    ),
    admin_sub(
        "client|pause",
        -3,
        pause,
        "3.0.0",
        "O(1)",
        "Suspends commands processing.",
    ),
    admin_sub(
        "client|unpause",
        2,
        unpause,
        "6.2.0",
        "O(N) Where N is the number of paused clients",
        "Resumes processing commands from paused clients.",
    ),
    admin_sub(
        "client|unblock",
        -3,
        unblock,
        "5.0.0",
        "O(log N) where N is the number of client connections",
        "Unblock a client blocked in a blocking command from a different connection",
    ),
    sub(
        "client|reply",
        3,
        reply,
        "3.2.0",
        "Instructs the server whether to reply to commands.",
    ),
    admin_sub(
        "client|no-evict",
        3,
        no_evict,
        "7.0.0",
        "O(1)",
        "Sets the client eviction mode of the connection.",
    ),
    sub(
        "client|no-touch",
        3,
        no_touch,
        "7.2.0",
        "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.",
    ),
    Command::new("client|tracking", -3, tracking)
        .flags(SUB_FLAGS)
        .acl(CONN_ACL)
        .doc(
            "connection",
            "6.0.0",
            "O(1). Some options may introduce additional complexity.",
            "Controls server-assisted client-side caching for the connection.",
        ),
    sub(
        "client|caching",
        3,
        caching,
        "6.0.0",
        "Instructs the server whether to track the keys in the next request.",
    ),
    sub(
        "client|getredir",
        2,
        getredir,
        "6.0.0",
        "Returns the client ID to which the connection's tracking notifications are redirected.",
    ),
    sub(
        "client|trackinginfo",
        2,
        trackinginfo,
        "6.2.0",
        "Returns information about server-assisted client-side caching for the connection.",
    ),
    Command::new("client|help", 2, help)
        .flags(flags::LOADING | flags::STALE | flags::KEEPS_CACHING)
        .acl(CONN_ACL)
        .doc(
            "connection",
            "5.0.0",
            "O(1)",
            "Returns helpful text about the different subcommands.",
        ),
];

/// The replies describe connections, which change all the time.
const NONDETERMINISTIC: &[&str] = &["nondeterministic_output"];

pub const COMMANDS: &[Command] = &[Command::new("client", -2, container)
    .acl(acl::SLOW)
    .doc(
        "connection",
        "2.4.0",
        "Depends on subcommand.",
        "A container for client connection commands.",
    )
    .subcommands(SUBCOMMANDS)];

/// Never runs: `call` always dispatches CLIENT to one of its subcommands.
fn container(_ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    Ok(())
}

/// Client names and library attributes must print as one word: only the characters
/// from `!` to `~`.
fn is_printable_word(value: &[u8]) -> bool {
    value.iter().all(|c| (b'!'..=b'~').contains(c))
}

/// CLIENT SETNAME's rule (HELLO SETNAME shares it).
pub fn validate_client_name(name: &[u8]) -> Result<(), CmdError> {
    if !is_printable_word(name) {
        return Err(
            "ERR Client names cannot contain spaces, newlines or special characters.".into(),
        );
    }
    Ok(())
}

/// An empty value clears an attribute.
fn non_empty(value: &[u8]) -> Option<Vec<u8>> {
    (!value.is_empty()).then(|| value.to_vec())
}

fn id(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.int(ctx.client.id() as i64);
    Ok(())
}

fn getname(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    match &ctx.client.name {
        Some(name) => ctx.out.bulk(name),
        None => ctx.out.null(),
    }
    Ok(())
}

fn setname(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    validate_client_name(args[2])?;
    ctx.client.set_name(non_empty(args[2]));
    ctx.out.ok();
    Ok(())
}

fn setinfo(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (attribute, value) = (args[2], args[3]);
    let attribute_text = String::from_utf8_lossy(attribute);
    let is_name = args::is(attribute, "LIB-NAME");
    if !is_name && !args::is(attribute, "LIB-VER") {
        return Err(format!("ERR Unrecognized option '{attribute_text}'").into());
    }
    if !is_printable_word(value) {
        return Err(format!(
            "ERR {attribute_text} cannot contain spaces, newlines or special characters."
        )
        .into());
    }
    if is_name {
        ctx.client.set_lib_name(non_empty(value));
    } else {
        ctx.client.set_lib_ver(non_empty(value));
    }
    ctx.out.ok();
    Ok(())
}

/// The calling client as CLIENT LIST describes it, with its live state.
fn own_snapshot(ctx: &Ctx, args: &[&[u8]], now_ms: u64) -> ClientSnapshot {
    let argv_mem = args.iter().map(|a| a.len()).sum();
    ctx.client.live_snapshot(now_ms, ctx.out, argv_mem)
}

/// Append the CLIENT LIST line of `client` (the caller's from its live state).
fn describe(ctx: &Ctx, args: &[&[u8]], client: &ClientInfo, now_ms: u64, out: &mut String) {
    if client.id == ctx.client.id() {
        client.describe(&own_snapshot(ctx, args, now_ms), now_ms, out);
    } else {
        let snap = client.snapshot.lock().clone();
        client.describe(&snap, now_ms, out);
    }
}

/// Which clients CLIENT LIST shows.
enum ListFilter {
    All,
    Type(ClientType),
    Ids(Vec<u64>),
}

fn parse_list_filter(args: &[&[u8]]) -> Result<ListFilter, CmdError> {
    match args.len() {
        2 => Ok(ListFilter::All),
        4 if args::is(args[2], "TYPE") => Ok(ListFilter::Type(parse_type(args[3])?)),
        n if n > 3 && args::is(args[2], "ID") => args[3..]
            .iter()
            .map(|a| {
                args::int(a)
                    .map(|id| id as u64)
                    .map_err(|_| CmdError::from("ERR Invalid client ID"))
            })
            .collect::<Result<_, _>>()
            .map(ListFilter::Ids),
        _ => Err(errors::SYNTAX.into()),
    }
}

fn parse_type(name: &[u8]) -> Result<ClientType, CmdError> {
    ClientType::parse(name).ok_or_else(|| {
        format!(
            "ERR Unknown client type '{}'",
            String::from_utf8_lossy(name)
        )
        .into()
    })
}

fn list(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let filter = parse_list_filter(args)?;
    let now = crate::hlc::unix_ms();
    let registry = &ctx.server.clients;
    // A killed client is gone as far as commands can tell, even before its thread
    // has closed the socket.
    let clients: Vec<_> = match &filter {
        ListFilter::Ids(ids) => ids.iter().filter_map(|&id| registry.get(id)).collect(),
        _ => registry.all(),
    };
    let mut text = String::new();
    for client in clients.iter().filter(|c| !c.is_killed()) {
        if let ListFilter::Type(wanted) = filter {
            if client.snapshot.lock().client_type() != wanted {
                continue;
            }
        }
        describe(ctx, args, client, now, &mut text);
    }
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

fn info(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut text = String::new();
    let me = ctx.client.info.clone();
    describe(ctx, args, &me, crate::hlc::unix_ms(), &mut text);
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

/// The conditions of CLIENT KILL; a client must meet all of them.
#[derive(Default)]
struct KillFilter<'a> {
    addr: Option<&'a [u8]>,
    laddr: Option<&'a [u8]>,
    client_type: Option<ClientType>,
    id: Option<u64>,
    user: Option<&'a [u8]>,
    /// Only clients connected for longer than this many seconds.
    max_age: Option<u64>,
    skip_me: bool,
}

impl KillFilter<'_> {
    fn matches(&self, client: &ClientInfo, caller: u64, now_ms: u64) -> bool {
        if self.skip_me && client.id == caller {
            return false;
        }
        if self.id.is_some_and(|id| id != client.id)
            || self.addr.is_some_and(|a| a != client.addr.as_bytes())
            || self.laddr.is_some_and(|a| a != client.laddr.as_bytes())
            || self
                .max_age
                .is_some_and(|age| client.age_secs(now_ms) <= age)
        {
            return false;
        }
        if self.client_type.is_none() && self.user.is_none() {
            return true;
        }
        let snap = client.snapshot.lock();
        self.client_type.is_none_or(|t| t == snap.client_type())
            && self.user.is_none_or(|u| u == snap.user.as_bytes())
    }
}

/// `CLIENT KILL addr:port` (may kill the caller) or `CLIENT KILL option value ...`.
fn parse_kill_filter<'a>(server: &Server, args: &[&'a [u8]]) -> Result<KillFilter<'a>, CmdError> {
    if args.len() == 3 {
        return Ok(KillFilter {
            addr: Some(args[2]),
            ..Default::default()
        });
    }
    let mut filter = KillFilter {
        skip_me: true,
        ..Default::default()
    };
    for pair in args[2..].chunks(2) {
        let [option, value] = pair else {
            return Err(errors::SYNTAX.into());
        };
        if args::is(option, "ID") {
            filter.id = Some(positive(value, "ERR client-id should be greater than 0")?);
        } else if args::is(option, "TYPE") {
            filter.client_type = Some(parse_type(value)?);
        } else if args::is(option, "ADDR") {
            filter.addr = Some(value);
        } else if args::is(option, "LADDR") {
            filter.laddr = Some(value);
        } else if args::is(option, "USER") {
            let name = String::from_utf8_lossy(value);
            if server.acl.user(&name).is_none() {
                return Err(format!("ERR No such user '{name}'").into());
            }
            filter.user = Some(value);
        } else if args::is(option, "SKIPME") {
            filter.skip_me = yes_no(value)?;
        } else if args::is(option, "MAXAGE") {
            let age = args::int(value)?;
            if age <= 0 {
                return Err("ERR maxage should be greater than 0".into());
            }
            filter.max_age = Some(age as u64);
        } else {
            return Err(errors::SYNTAX.into());
        }
    }
    Ok(filter)
}

/// A positive integer, or `err` for anything else (Redis words both cases alike).
fn positive(arg: &[u8], err: &'static str) -> Result<u64, CmdError> {
    match args::int(arg) {
        Ok(n) if n > 0 => Ok(n as u64),
        _ => Err(err.into()),
    }
}

fn yes_no(arg: &[u8]) -> Result<bool, CmdError> {
    if args::is(arg, "YES") {
        Ok(true)
    } else if args::is(arg, "NO") {
        Ok(false)
    } else {
        Err(errors::SYNTAX.into())
    }
}

fn kill(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let filter = parse_kill_filter(ctx.server, args)?;
    let caller = ctx.client.id();
    let now = crate::hlc::unix_ms();
    let killed = kill_matching(ctx, |client| filter.matches(client, caller, now));
    match (args.len(), killed) {
        (3, 0) => return Err("ERR No such client".into()),
        (3, _) => ctx.out.ok(),
        _ => ctx.out.int(killed),
    }
    Ok(())
}

/// Close every connection `matches` picks (the caller's after its reply); how many.
pub fn kill_matching(ctx: &mut Ctx, matches: impl Fn(&ClientInfo) -> bool) -> i64 {
    let caller = ctx.client.id();
    let mut killed = 0;
    let mut threads_to_wake = vec![false; ctx.server.worker_count()];
    for client in ctx.server.clients.all() {
        if !matches(&client) {
            continue;
        }
        if client.id == caller {
            // The reply goes out first, then the connection closes.
            ctx.client.close_after_reply = true;
            killed += 1;
        } else if client.mark_killed() {
            threads_to_wake[client.worker] = true;
            killed += 1;
        }
    }
    if let Some(workers) = ctx.server.workers.get() {
        for (worker, _) in workers.iter().zip(threads_to_wake).filter(|(_, w)| *w) {
            worker.send(Message::KillFlagged);
        }
    }
    killed
}

/// Close the connections authenticated as a user `is_gone` names (ACL DELUSER,
/// ACL LOAD), the caller's included, after its reply.
pub fn kill_where(ctx: &mut Ctx, is_gone: impl Fn(&str) -> bool) {
    kill_matching(ctx, |client| is_gone(&client.snapshot.lock().user));
}

fn pause(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 4 {
        return Err(subcommand_syntax_error(args));
    }
    let until = super::server::timeout_deadline_ms(args[2])?;
    let writes_only = match args.get(3) {
        None => false,
        Some(mode) if args::is(mode, "WRITE") => true,
        Some(mode) if args::is(mode, "ALL") => false,
        Some(_) => return Err("ERR CLIENT PAUSE mode must be WRITE or ALL".into()),
    };
    ctx.server.pause_clients(until, writes_only);
    ctx.out.ok();
    Ok(())
}

fn unpause(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.server.unpause_clients();
    ctx.out.ok();
    Ok(())
}

/// `CLIENT UNBLOCK id [TIMEOUT|ERROR]`: end another client's wait in a blocking
/// command, as if it timed out (the default) or with an error. 1 if it was waiting.
fn unblock(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 4 {
        return Err(subcommand_syntax_error(args));
    }
    let with_error = match args.get(3) {
        None => false,
        Some(reason) if args::is(reason, "TIMEOUT") => false,
        Some(reason) if args::is(reason, "ERROR") => true,
        Some(_) => return Err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR".into()),
    };
    let id = args::int(args[2])?;
    let registry = &ctx.server.blocking;
    let waiter = u64::try_from(id).ok().and_then(|id| registry.of_client(id));
    let Some(waiter) = waiter.filter(|w| registry.end_wait(w)) else {
        ctx.out.int(0);
        return Ok(());
    };
    let reply = if with_error {
        let mut out = kvik_resp::ReplyWriter::with_buf(Vec::new(), waiter.protocol);
        super::write_error(ctx.server, ctx.stats, &mut out, UNBLOCKED);
        out.buf
    } else {
        waiter.action.timeout_reply(waiter.protocol)
    };
    let end = crate::mailbox::WaitEnd {
        served: false,
        failed: with_error,
    };
    ctx.server.unblock(&waiter, reply, end);
    ctx.out.int(1);
    Ok(())
}

const UNBLOCKED: &str = "UNBLOCKED client unblocked via CLIENT UNBLOCK";

fn reply(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mode = args[2];
    if args::is(mode, "ON") {
        ctx.client.reply_mode = ReplyMode::On;
        ctx.out.ok();
    } else if args::is(mode, "OFF") {
        ctx.client.reply_mode = ReplyMode::Off;
    } else if args::is(mode, "SKIP") {
        if ctx.client.reply_mode != ReplyMode::Off {
            ctx.client.reply_mode = ReplyMode::SkipNext;
        }
    } else {
        return Err(errors::SYNTAX.into());
    }
    Ok(())
}

fn on_off(arg: &[u8]) -> Result<bool, CmdError> {
    if args::is(arg, "ON") {
        Ok(true)
    } else if args::is(arg, "OFF") {
        Ok(false)
    } else {
        Err(errors::SYNTAX.into())
    }
}

fn no_evict(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ctx.client.no_evict = on_off(args[2])?;
    ctx.out.ok();
    Ok(())
}

fn no_touch(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ctx.client.no_touch = on_off(args[2])?;
    ctx.out.ok();
    Ok(())
}

/// `CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p ...] [OPTIN] [OPTOUT]
/// [NOLOOP]`. The options are read (and REDIRECT's client looked up) before ON or
/// OFF is, as Redis does.
fn tracking(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let request = parse_tracking_options(ctx, &args[3..])?;
    if args::is(args[2], "ON") {
        let late_error = check_tracking_request(ctx.client.tracking.as_ref(), &request)?;
        if let Some(error) = late_error {
            super::write_error(ctx.server, ctx.stats, ctx.out, &error);
        }
        tracking::enable(&ctx.server.tracking_env(), ctx.client, request);
    } else if args::is(args[2], "OFF") {
        tracking::disable(&ctx.server.tracking_env(), ctx.client);
    } else {
        return Err(errors::SYNTAX.into());
    }
    ctx.out.ok();
    Ok(())
}

fn parse_tracking_options(ctx: &Ctx, options: &[&[u8]]) -> Result<tracking::Request, CmdError> {
    let mut request = tracking::Request::default();
    let mut options = options.iter();
    while let Some(option) = options.next() {
        let has_value = options.len() > 0;
        if args::is(option, "REDIRECT") && has_value {
            let id = options.next().expect("checked above");
            if request.redirect.is_some() {
                return Err("ERR A client can only redirect to a single other client".into());
            }
            let id = args::int(id)?;
            match u64::try_from(id)
                .ok()
                .filter(|&id| ctx.server.clients.get(id).is_some())
            {
                Some(id) => request.redirect = Some(id),
                None => return Err("ERR The client ID you want redirect to does not exist".into()),
            }
        } else if args::is(option, "PREFIX") && has_value {
            let prefix = options.next().expect("checked above");
            request.prefixes.push(prefix.to_vec());
        } else if args::is(option, "BCAST") {
            request.bcast = true;
        } else if args::is(option, "OPTIN") {
            request.optin = true;
        } else if args::is(option, "OPTOUT") {
            request.optout = true;
        } else if args::is(option, "NOLOOP") {
            request.noloop = true;
        } else {
            return Err(errors::SYNTAX.into());
        }
    }
    Ok(request)
}

/// `CLIENT CACHING YES|NO`: track (OPTIN) or skip (OPTOUT) the keys of the next
/// command, or of the next transaction.
fn caching(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let yes = if args::is(args[2], "YES") {
        Some(true)
    } else if args::is(args[2], "NO") {
        Some(false)
    } else {
        None
    };
    set_caching(ctx.client, yes)?;
    ctx.out.ok();
    Ok(())
}

/// The client tracking notifications go to: 0 for itself, -1 when not tracking.
fn getredir(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.int(redirect_of(ctx));
    Ok(())
}

fn redirect_of(ctx: &Ctx) -> i64 {
    ctx.client
        .tracking
        .as_ref()
        .map_or(-1, |t| t.redirect as i64)
}

/// `flags` (a set), `redirect` and `prefixes`, as Redis 7.0 lists them.
fn trackinginfo(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let redirect = redirect_of(ctx);
    let settings = ctx.client.tracking.as_ref();
    let mut flags: Vec<&[u8]> = Vec::new();
    match settings {
        None => flags.push(b"off"),
        Some(t) => {
            flags.push(b"on");
            let named: [(bool, &[u8]); 7] = [
                (t.bcast, b"bcast"),
                (t.optin, b"optin"),
                (t.optin && t.caching, b"caching-yes"),
                (t.optout, b"optout"),
                (t.optout && t.caching, b"caching-no"),
                (t.noloop, b"noloop"),
                (t.broken_redirect, b"broken_redirect"),
            ];
            flags.extend(named.iter().filter(|(on, _)| *on).map(|(_, name)| *name));
        }
    }
    let out = &mut *ctx.out;
    out.map(3);
    out.bulk(b"flags");
    out.set(flags.len());
    for flag in flags {
        out.bulk(flag);
    }
    out.bulk(b"redirect");
    out.int(redirect);
    out.bulk(b"prefixes");
    let prefixes = settings.map(|t| &t.prefixes);
    out.array(prefixes.map_or(0, |p| p.len()));
    for prefix in prefixes.into_iter().flatten() {
        out.bulk(prefix);
    }
    Ok(())
}

/// CLIENT HELP: Redis's text for the subcommands kvik implements.
const HELP: &[&str] = &[
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "    * ID <client-id>",
    "      Kill connections by client id.",
    "    * MAXAGE <maxage>",
    "      Kill connections older than the specified age.",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "SETINFO <option> <value>",
    "    Set client meta attr. Options are:",
    "    * LIB-NAME: the client lib name.",
    "    * LIB-VER: the client lib version.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "NO-TOUCH (ON|OFF)",
    "    Will not touch LRU/LFU stats when this mode is on.",
];

fn help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(ctx.out, "CLIENT", HELP);
    Ok(())
}

/// The checks CLIENT TRACKING ON makes before changing anything, in Redis's order,
/// with its texts. `Ok(Some(error))` is Redis 7.0's reply when a prefix overlaps
/// another given after it, except for the first: the error is sent, and tracking
/// is enabled anyway (with its own `+OK` reply).
fn check_tracking_request(
    current: Option<&ClientTracking>,
    request: &tracking::Request,
) -> Result<Option<String>, String> {
    if !request.bcast && !request.prefixes.is_empty() {
        return Err("ERR PREFIX option requires BCAST mode to be enabled".into());
    }
    if current.is_some_and(|c| c.bcast != request.bcast) {
        return Err(
            "ERR You can't switch BCAST mode on/off before disabling tracking \
                    for this client, and then re-enabling it with a different mode."
                .into(),
        );
    }
    if request.bcast && (request.optin || request.optout) {
        return Err("ERR OPTIN and OPTOUT are not compatible with BCAST".into());
    }
    if request.optin && request.optout {
        return Err("ERR You can't specify both OPTIN mode and OPTOUT mode".into());
    }
    if current.is_some_and(|c| (request.optin && c.optout) || (request.optout && c.optin)) {
        return Err(
            "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking \
                    for this client, and then re-enabling it with a different mode."
                .into(),
        );
    }
    if request.bcast {
        let registered = current.map(|c| &c.prefixes);
        return check_prefixes(registered, &request.prefixes);
    }
    Ok(None)
}

/// Two prefixes overlap when one starts with the other.
fn overlap(a: &[u8], b: &[u8]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// No new prefix may overlap one the client has, nor another new one. Redis checks
/// each new prefix against the registered ones, then against those given after it;
/// an overlap among the given ones found past the first prefix lets the command go
/// on (see [`check_tracking_request`]).
fn check_prefixes(
    registered: Option<&BTreeSet<Vec<u8>>>,
    given: &[Vec<u8>],
) -> Result<Option<String>, String> {
    let text = |p: &[u8]| String::from_utf8_lossy(p).into_owned();
    for (i, prefix) in given.iter().enumerate() {
        if let Some(old) = registered
            .into_iter()
            .flatten()
            .find(|old| overlap(old, prefix))
        {
            return Err(format!(
                "ERR Prefix '{}' overlaps with an existing prefix '{}'. \
                 Prefixes for a single client must not overlap.",
                text(prefix),
                text(old)
            ));
        }
        if let Some(other) = given[i + 1..].iter().find(|p| overlap(prefix, p)) {
            let error = format!(
                "ERR Prefix '{}' overlaps with another provided prefix '{}'. \
                 Prefixes for a single client must not overlap.",
                text(prefix),
                text(other)
            );
            return if i == 0 { Err(error) } else { Ok(Some(error)) };
        }
    }
    Ok(None)
}

/// CLIENT CACHING: `Some(true)` for YES, `Some(false)` for NO, `None` for anything
/// else (a syntax error, once tracking is known to be on, as Redis checks).
fn set_caching(client: &mut ClientState, yes: Option<bool>) -> Result<(), &'static str> {
    let Some(tracking) = client.tracking.as_mut() else {
        return Err(
            "ERR CLIENT CACHING can be called only when the client is in tracking \
                    mode with OPTIN or OPTOUT mode enabled",
        );
    };
    match yes {
        None => Err(errors::SYNTAX),
        Some(true) if tracking.optin => {
            tracking.caching = true;
            Ok(())
        }
        Some(false) if tracking.optout => {
            tracking.caching = true;
            Ok(())
        }
        Some(true) => Err(
            "ERR CLIENT CACHING YES is only valid when tracking is enabled in \
                           OPTIN mode.",
        ),
        Some(false) => Err(
            "ERR CLIENT CACHING NO is only valid when tracking is enabled in \
                            OPTOUT mode.",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(bcast: bool, prefixes: &[&str]) -> tracking::Request {
        tracking::Request {
            bcast,
            prefixes: prefixes.iter().map(|p| p.as_bytes().to_vec()).collect(),
            ..tracking::Request::default()
        }
    }

    #[test]
    fn prefix_overlaps_are_refused_as_redis_does() {
        let err = |r: Result<Option<String>, String>| r.unwrap_err();
        assert!(
            err(check_tracking_request(None, &request(true, &["a", "ab"])))
                .starts_with("ERR Prefix 'a' overlaps with another provided prefix 'ab'")
        );
        // Past the first prefix Redis answers the error and goes on.
        let late = check_tracking_request(None, &request(true, &["b", "c", "cd"])).unwrap();
        assert!(late.unwrap().starts_with("ERR Prefix 'c' overlaps"));
        let current = ClientTracking {
            bcast: true,
            prefixes: [b"x".to_vec()].into_iter().collect(),
            ..ClientTracking::default()
        };
        assert!(err(check_tracking_request(
            Some(&current),
            &request(true, &["xy"])
        ))
        .starts_with("ERR Prefix 'xy' overlaps with an existing prefix 'x'"));
        assert_eq!(
            check_tracking_request(Some(&current), &request(true, &["y"])),
            Ok(None)
        );
    }
}
