//! Connection commands: PING ECHO SELECT QUIT RESET HELLO AUTH.

use super::table::{acl, flags, Command};
use super::{args, errors, CmdError, CmdResult, Ctx};
use crate::client::ReplyMode;
use crate::version::REDIS_VERSION;
use kvik_resp::Protocol;

const CONN: u32 = acl::CONNECTION;

/// Commands a client must be able to send at any time: before authenticating,
/// while the server loads or runs a long script.
const HANDSHAKE: u32 = flags::ALLOW_BUSY
    | flags::NOSCRIPT
    | flags::LOADING
    | flags::STALE
    | flags::FAST
    | flags::NO_AUTH;

pub const COMMANDS: &[Command] = &[
    Command::new("ping", -1, ping)
        .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
        .flags(flags::FAST | flags::WHILE_SUBSCRIBED | flags::MISCONF_REFUSES)
        .acl(CONN | acl::FAST)
        .doc(
            "connection",
            "1.0.0",
            "O(1)",
            "Returns the server's liveliness response.",
        ),
    Command::new("echo", 2, echo)
        .flags(flags::LOADING | flags::STALE | flags::FAST)
        .acl(CONN | acl::FAST)
        .doc("connection", "1.0.0", "O(1)", "Returns the given string."),
    Command::new("select", 2, select)
        .flags(flags::LOADING | flags::STALE | flags::FAST | flags::SELECTS_DB)
        .acl(CONN | acl::FAST)
        .doc(
            "connection",
            "1.0.0",
            "O(1)",
            "Changes the selected database.",
        ),
    Command::new("quit", -1, quit)
        .flags(HANDSHAKE | flags::NOT_QUEUED | flags::ENDS_MULTI | flags::WHILE_SUBSCRIBED)
        .acl(CONN | acl::FAST)
        .doc("connection", "1.0.0", "O(1)", "Closes the connection."),
    Command::new("reset", 1, reset)
        .flags(HANDSHAKE | flags::NOT_QUEUED | flags::ENDS_MULTI | flags::WHILE_SUBSCRIBED)
        .acl(CONN | acl::FAST)
        .doc("connection", "6.2.0", "O(1)", "Resets the connection."),
    Command::new("hello", -1, hello)
        .flags(HANDSHAKE)
        .redact(hide_hello_credentials)
        .acl(CONN | acl::FAST)
        .doc(
            "connection",
            "6.0.0",
            "O(1)",
            "Handshakes with the Redis server.",
        ),
    Command::new("auth", -2, auth)
        .flags(HANDSHAKE)
        .redact(hide_auth_credentials)
        .acl(CONN | acl::FAST)
        .doc(
            "connection",
            "1.0.0",
            "O(N) where N is the number of passwords defined for the user",
            "Authenticates the connection.",
        ),
];

fn ping(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 2 {
        return Err("ERR wrong number of arguments for 'ping' command".into());
    }
    if ctx.client.pubsub.is_active() && !ctx.out.is_resp3() {
        // A subscribed RESP2 connection reads every frame as a message: the answer
        // takes a message's shape, ["pong", text].
        ctx.out.array(2);
        ctx.out.bulk(b"pong");
        ctx.out.bulk(args.get(1).copied().unwrap_or_default());
        return Ok(());
    }
    match args.len() {
        1 => ctx.out.simple("PONG"),
        _ => ctx.out.bulk(args[1]),
    }
    Ok(())
}

fn echo(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ctx.out.bulk(args[1]);
    Ok(())
}

fn select(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ctx.client.db = args::db_index(args[1], ctx.server.keyspace.databases())?;
    ctx.out.ok();
    Ok(())
}

fn quit(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.ok();
    ctx.client.close_after_reply = true;
    Ok(())
}

fn reset(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    super::transactions::discard_state(ctx.client);
    super::pubsub::leave(ctx.server, ctx.client);
    crate::tracking::disable(&ctx.server.tracking_env(), ctx.client);
    let c = &mut *ctx.client;
    c.db = 0;
    c.reply_mode = ReplyMode::On;
    c.no_evict = false;
    c.no_touch = false;
    c.set_name(None);
    // Back to the default user, authenticated only if it needs no password.
    c.authenticated = !ctx.server.acl.default_needs_auth();
    c.acl = ctx.server.acl.default_session();
    c.user = "default".into();
    c.info.snapshot.lock().user = "default".into();
    ctx.out.protocol = Protocol::Resp2;
    ctx.out.simple("RESET");
    Ok(())
}

fn auth(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (user, password) = match args.len() {
        2 => (&b"default"[..], args[1]),
        3 => (args[1], args[2]),
        _ => return Err(errors::SYNTAX.into()),
    };
    if args.len() == 2 && ctx.server.acl.default_is_nopass() {
        return Err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?".into());
    }
    super::acl::authenticate(ctx, user, password, args[0])?;
    ctx.out.ok();
    Ok(())
}

fn hello(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut protocol = None;
    let mut i = 1;
    if args.len() > 1 {
        let version = args::int(args[1]).map_err(|_| {
            CmdError::from("ERR Protocol version is not an integer or out of range")
        })?;
        protocol = match version {
            2 => Some(Protocol::Resp2),
            3 => Some(Protocol::Resp3),
            _ => return Err("NOPROTO unsupported protocol version".into()),
        };
        i = 2;
    }
    let mut credentials = None;
    let mut name = None;
    while i < args.len() {
        let more = args.len() - i - 1;
        if args::is(args[i], "AUTH") && more >= 2 {
            credentials = Some((args[i + 1], args[i + 2]));
            i += 3;
        } else if args::is(args[i], "SETNAME") && more >= 1 {
            name = Some(args[i + 1]);
            i += 2;
        } else {
            return Err(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(args[i])
            )
            .into());
        }
    }
    if let Some((user, password)) = credentials {
        super::acl::authenticate(ctx, user, password, args[0])?;
    }
    if !ctx.client.authenticated {
        return Err("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time".into());
    }
    if let Some(name) = name {
        super::client::validate_client_name(name)?;
        ctx.client.set_name(Some(name.to_vec()));
    }
    if let Some(p) = protocol.filter(|&p| p != ctx.out.protocol) {
        ctx.out.protocol = p;
        super::pubsub::protocol_changed(ctx.server, ctx.client, p);
    }
    let out = &mut *ctx.out;
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"redis");
    out.bulk(b"version");
    out.bulk(REDIS_VERSION.as_bytes());
    out.bulk(b"proto");
    out.int(if out.is_resp3() { 3 } else { 2 });
    out.bulk(b"id");
    out.int(ctx.client.id() as i64);
    out.bulk(b"mode");
    out.bulk(b"standalone");
    out.bulk(b"role");
    out.bulk(b"master");
    out.bulk(b"modules");
    out.array(0);
    Ok(())
}

/// AUTH's arguments as MONITOR and the slow log show them.
fn hide_auth_credentials(args: &mut [&[u8]]) {
    args[1..].fill(super::REDACTED);
}

/// HELLO's AUTH user name and password as MONITOR and the slow log show them.
fn hide_hello_credentials(args: &mut [&[u8]]) {
    if let Some(at) = args.iter().position(|a| a.eq_ignore_ascii_case(b"AUTH")) {
        let end = (at + 3).min(args.len());
        args[at + 1..end].fill(super::REDACTED);
    }
}
