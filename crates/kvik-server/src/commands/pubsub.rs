//! Pub/Sub commands (SUBSCRIBE PSUBSCRIBE SSUBSCRIBE and their UNSUBSCRIBEs, PUBLISH,
//! SPUBLISH, PUBSUB) and MONITOR, over the server's [`crate::pubsub::Hub`].
//!
//! Also the two rules pub/sub imposes on every command: a RESP2 connection with
//! subscriptions runs only the subscription commands, PING, QUIT and RESET
//! ([`check_subscribed_mode`]), and every command run is shown to the MONITOR clients
//! ([`feed_monitors`]).

use super::shared::{help_reply, subcommand_syntax_error};
use super::table::{acl, flags, key_flags, Channels, Command, Lock};
use super::{CmdError, CmdResult, Ctx};
use crate::client::ClientState;
use crate::effects::Targets;
use crate::pubsub::{monitor_line, Kind, Publisher, Subscriber};
use crate::server::Server;
use kvik_resp::{Protocol, ReplyWriter};

const SUBSCRIBING: u32 =
    flags::PUBSUB | flags::NOSCRIPT | flags::LOADING | flags::STALE | flags::WHILE_SUBSCRIBED;
const INTROSPECTING: u32 = flags::PUBSUB | flags::LOADING | flags::STALE;
/// PUBLISH and SPUBLISH may replicate (a message goes to replicas), so read-only
/// scripts may not call them and CLIENT PAUSE WRITE holds them back, as in Redis.
const PUBLISHING: u32 =
    flags::PUBSUB | flags::LOADING | flags::STALE | flags::FAST | flags::MAY_REPLICATE;

/// Shard channels sit where keys would (cluster routing uses them), but they are not
/// keys: nothing is locked for them.
const fn shard_channels(c: Command, last: i32) -> Command {
    c.keys(1, last, 1)
        .key_flags(key_flags::NOT_KEY)
        .lock(Lock::Handler)
}

const PUBSUB_SUBCOMMANDS: &[Command] = &[
    Command::new("pubsub|channels", -2, channels)
        .flags(INTROSPECTING)
        .acl(acl::PUBSUB | acl::SLOW)
        .doc(
            "pubsub",
            "2.8.0",
            "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
            "Lists the channels that have subscribers.",
        ),
    Command::new("pubsub|numsub", -2, numsub)
        .flags(INTROSPECTING)
        .acl(acl::PUBSUB | acl::SLOW)
        .doc(
            "pubsub",
            "2.8.0",
            "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
            "Counts the subscribers of channels.",
        ),
    Command::new("pubsub|shardnumsub", -2, shardnumsub)
        .flags(INTROSPECTING)
        .acl(acl::PUBSUB | acl::SLOW)
        .doc(
            "pubsub",
            "7.0.0",
            "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels",
            "Counts the subscribers of shard channels.",
        ),
    Command::new("pubsub|numpat", 2, numpat)
        .flags(INTROSPECTING)
        .acl(acl::PUBSUB | acl::SLOW)
        .doc(
            "pubsub",
            "2.8.0",
            "O(1)",
            "Counts the patterns that have subscribers.",
        ),
    Command::new("pubsub|shardchannels", -2, shardchannels)
        .flags(INTROSPECTING)
        .acl(acl::PUBSUB | acl::SLOW)
        .doc(
            "pubsub",
            "7.0.0",
            "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
            "Lists the shard channels that have subscribers.",
        ),
    Command::new("pubsub|help", 2, help)
        .flags(flags::LOADING | flags::STALE)
        .acl(acl::SLOW)
        .doc("pubsub", "6.2.0", "O(1)", "Explains the PUBSUB subcommands."),
];

pub const COMMANDS: &[Command] = &[
    Command::new("subscribe", -2, subscribe)
        .channels(Channels::All)
        .flags(SUBSCRIBING)
        .acl(acl::PUBSUB | acl::SLOW)
        .doc(
            "pubsub",
            "2.0.0",
            "O(N) where N is the number of channels to subscribe to.",
            "Listens to messages published to channels.",
        ),
    Command::new("unsubscribe", -1, unsubscribe)
        .flags(SUBSCRIBING)
        .acl(acl::PUBSUB | acl::SLOW)
        .doc(
            "pubsub",
            "2.0.0",
            "O(N) where N is the number of clients already subscribed to a channel.",
            "Stops listening to channels (all of them without arguments).",
        ),
    Command::new("psubscribe", -2, psubscribe)
        .channels(Channels::AllPatterns)
        .flags(SUBSCRIBING)
        .acl(acl::PUBSUB | acl::SLOW)
        .doc(
            "pubsub",
            "2.0.0",
            "O(N) where N is the number of patterns to subscribe to.",
            "Listens to messages published to channels that match patterns.",
        ),
    Command::new("punsubscribe", -1, punsubscribe)
        .flags(SUBSCRIBING)
        .acl(acl::PUBSUB | acl::SLOW)
        .doc(
            "pubsub",
            "2.0.0",
            "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).",
            "Stops listening to patterns (all of them without arguments).",
        ),
    shard_channels(Command::new("ssubscribe", -2, ssubscribe)
        .channels(Channels::All), -1)
        .flags(SUBSCRIBING)
        .acl(acl::PUBSUB | acl::SLOW)
        .doc(
            "pubsub",
            "7.0.0",
            "O(N) where N is the number of shard channels to subscribe to.",
            "Listens to messages published to shard channels.",
        ),
    shard_channels(Command::new("sunsubscribe", -1, sunsubscribe), -1)
        .flags(SUBSCRIBING)
        .acl(acl::PUBSUB | acl::SLOW)
        .doc(
            "pubsub",
            "7.0.0",
            "O(N) where N is the number of clients already subscribed to a shard channel.",
            "Stops listening to shard channels (all of them without arguments).",
        ),
    Command::new("publish", 3, publish)
        .channels(Channels::First)
        .flags(PUBLISHING)
        .acl(acl::PUBSUB | acl::FAST)
        .doc(
            "pubsub",
            "2.0.0",
            "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
            "Posts a message to a channel.",
        ),
    shard_channels(Command::new("spublish", 3, spublish)
        .channels(Channels::First), 1)
        .flags(PUBLISHING)
        .acl(acl::PUBSUB | acl::FAST)
        .doc(
            "pubsub",
            "7.0.0",
            "O(N) where N is the number of clients subscribed to the receiving shard channel.",
            "Posts a message to a shard channel.",
        ),
    Command::new("pubsub", -2, help)
        .acl(acl::SLOW)
        .doc(
            "pubsub",
            "2.8.0",
            "Depends on subcommand.",
            "Pub/Sub introspection commands.",
        )
        .subcommands(PUBSUB_SUBCOMMANDS),
    Command::new("monitor", 1, monitor)
        .flags(flags::ADMIN | flags::NOSCRIPT | flags::LOADING | flags::STALE)
        .acl(acl::ADMIN | acl::SLOW | acl::DANGEROUS)
        .doc(
            "server",
            "1.0.0",
            "O(1)",
            "Streams every command the server runs to this connection.",
        ),
];

// ---------------------------------------------------------------- subscribing

fn subscribe(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    subscribe_to(ctx, Kind::Channel, &args[1..]);
    Ok(())
}

fn psubscribe(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    subscribe_to(ctx, Kind::Pattern, &args[1..]);
    Ok(())
}

fn ssubscribe(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    subscribe_to(ctx, Kind::Shard, &args[1..]);
    Ok(())
}

fn unsubscribe(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    unsubscribe_from(ctx, Kind::Channel, &args[1..]);
    Ok(())
}

fn punsubscribe(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    unsubscribe_from(ctx, Kind::Pattern, &args[1..]);
    Ok(())
}

fn sunsubscribe(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    unsubscribe_from(ctx, Kind::Shard, &args[1..]);
    Ok(())
}

/// Subscribe to each name, confirming each (again for names already held).
fn subscribe_to(ctx: &mut Ctx, kind: Kind, names: &[&[u8]]) {
    let me = subscriber(ctx.client, ctx.out.protocol);
    for name in names {
        if ctx.client.pubsub.add(kind, name) {
            ctx.server.pubsub.subscribe(kind, name, me);
        }
        let count = ctx.client.pubsub.reply_count(kind);
        confirm(
            ctx.client,
            ctx.out,
            kind.subscribe_word(),
            Some(name),
            count,
        );
    }
    show_in_client_list(ctx.client);
}

/// Make CLIENT LIST and CLIENT KILL TYPE see the change at once, not only after the
/// connection's next write.
fn show_in_client_list(client: &ClientState) {
    let mut snapshot = client.info.snapshot.lock();
    snapshot.subscriptions = client.pubsub.counts();
    snapshot.monitor = client.monitor;
}

/// Unsubscribe from each name, or from every name of the namespace when none is
/// given; a client holding none still gets one confirmation, with a null name.
fn unsubscribe_from(ctx: &mut Ctx, kind: Kind, names: &[&[u8]]) {
    let held;
    let names: Vec<&[u8]> = if names.is_empty() {
        held = ctx.client.pubsub.names(kind);
        held.iter().map(Vec::as_slice).collect()
    } else {
        names.to_vec()
    };
    if names.is_empty() {
        let count = ctx.client.pubsub.reply_count(kind);
        confirm(ctx.client, ctx.out, kind.unsubscribe_word(), None, count);
    }
    for name in names {
        if ctx.client.pubsub.remove(kind, name) {
            ctx.server.pubsub.unsubscribe(kind, name, ctx.client.id());
        }
        let count = ctx.client.pubsub.reply_count(kind);
        confirm(
            ctx.client,
            ctx.out,
            kind.unsubscribe_word(),
            Some(name),
            count,
        );
    }
    show_in_client_list(ctx.client);
}

/// How messages find this client's connection.
fn subscriber(client: &ClientState, protocol: Protocol) -> Subscriber {
    Subscriber {
        client: client.id(),
        worker: client.info.worker,
        token: client.info.token,
        protocol,
    }
}

/// `[word, name, count]` as a push frame (an array in RESP2). Redis sends it even
/// when the client silenced its replies (CLIENT REPLY OFF/SKIP), in RESP2 too, so
/// it is then set aside for `call` to keep.
fn confirm(
    client: &mut ClientState,
    out: &mut ReplyWriter,
    word: &[u8],
    name: Option<&[u8]>,
    count: usize,
) {
    let start = out.buf.len();
    out.push(3);
    out.bulk(word);
    match name {
        Some(name) => out.bulk(name),
        None => out.null(),
    }
    out.int(count as i64);
    if client.replies_silenced() {
        client.pushes.extend(out.buf.drain(start..));
    }
}

/// Drop every subscription and MONITOR mode, without confirmations: the connection
/// closes or is RESET.
pub fn leave(server: &Server, client: &mut ClientState) {
    for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
        for name in client.pubsub.names(kind) {
            client.pubsub.remove(kind, &name);
            server.pubsub.unsubscribe(kind, &name, client.id());
        }
    }
    if std::mem::take(&mut client.monitor) {
        server.pubsub.remove_monitor(client.id());
    }
    show_in_client_list(client);
}

/// HELLO switched the connection's protocol: its subscriptions must now receive
/// frames in the new one.
pub fn protocol_changed(server: &Server, client: &ClientState, protocol: Protocol) {
    let me = subscriber(client, protocol);
    for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
        for name in client.pubsub.names(kind) {
            server.pubsub.unsubscribe(kind, &name, me.client);
            server.pubsub.subscribe(kind, &name, me);
        }
    }
}

// ---------------------------------------------------------------- publishing

fn publish(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    publish_in(ctx, Kind::Channel, args)
}

fn spublish(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    publish_in(ctx, Kind::Shard, args)
}

fn publish_in(ctx: &mut Ctx, kind: Kind, args: &[&[u8]]) -> CmdResult {
    let me = Publisher {
        client: ctx.client.id(),
        out: ctx.out,
    };
    let receivers = ctx.server.bus().publish(kind, args[1], args[2], Some(me));
    ctx.out.int(receivers as i64);
    // Replicas publish it to their own subscribers, as Redis 7.0's do; the AOF
    // keeps only what rebuilds the dataset.
    ctx.propagate_to(args, Targets::REPLICAS);
    Ok(())
}

// ---------------------------------------------------------------- PUBSUB

fn channels(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    list_active(ctx, Kind::Channel, args)
}

fn shardchannels(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    list_active(ctx, Kind::Shard, args)
}

fn list_active(ctx: &mut Ctx, kind: Kind, args: &[&[u8]]) -> CmdResult {
    if args.len() > 3 {
        return Err(subcommand_syntax_error(args));
    }
    let names = ctx.server.pubsub.active(kind, args.get(2).copied());
    ctx.out.array(names.len());
    for name in &names {
        ctx.out.bulk(name);
    }
    Ok(())
}

fn numsub(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    count_subscribers(ctx, Kind::Channel, &args[2..]);
    Ok(())
}

fn shardnumsub(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    count_subscribers(ctx, Kind::Shard, &args[2..]);
    Ok(())
}

/// A flat array of `name, count` pairs (an array in RESP3 too, as Redis 7.0).
fn count_subscribers(ctx: &mut Ctx, kind: Kind, names: &[&[u8]]) {
    ctx.out.array(names.len() * 2);
    for name in names {
        ctx.out.bulk(name);
        ctx.out
            .int(ctx.server.pubsub.subscribers(kind, name) as i64);
    }
}

fn numpat(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let patterns = ctx.server.pubsub.active_count(Kind::Pattern);
    ctx.out.int(patterns as i64);
    Ok(())
}

fn help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx.out,
        "PUBSUB",
        &[
            "CHANNELS [<pattern>]",
            "    Return the currently active channels matching a <pattern> (default: '*').",
            "NUMPAT",
            "    Return number of subscriptions to patterns.",
            "NUMSUB [<channel> ...]",
            "    Return the number of subscribers for the specified channels, excluding",
            "    pattern subscriptions(default: no channels).",
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
        ],
    );
    Ok(())
}

// ---------------------------------------------------------------- subscribed mode

/// Refuse a command a subscribed RESP2 connection may not run (RESP3 connections
/// run anything: their messages are push frames that cannot be mistaken for replies).
pub fn check_subscribed_mode(
    client: &ClientState,
    protocol: Protocol,
    cmd: &Command,
) -> Result<(), CmdError> {
    if protocol == Protocol::Resp3 || !client.pubsub.is_active() || cmd.has(flags::WHILE_SUBSCRIBED)
    {
        return Ok(());
    }
    Err(format!(
        "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
        cmd.full_name()
    )
    .into())
}

// ---------------------------------------------------------------- MONITOR

fn monitor(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    if ctx.client.monitor {
        // Already monitoring: Redis ignores the repeat without a reply.
        return Ok(());
    }
    if ctx.client.deny_blocking {
        return Err("ERR MONITOR isn't allowed for DENY BLOCKING client".into());
    }
    ctx.client.monitor = true;
    show_in_client_list(ctx.client);
    let me = subscriber(ctx.client, ctx.out.protocol);
    ctx.server.pubsub.add_monitor(me);
    ctx.out.ok();
    Ok(())
}

/// Show a command that just ran to the MONITOR clients, as Redis 7.0 does: after it
/// ran, with the client's database as it left it, except commands that are
/// administrative or flagged `skip_monitor`, and with passwords redacted. The caller
/// has checked that someone monitors.
pub fn feed_monitors(server: &Server, client: &ClientState, cmd: &Command, args: &[&[u8]]) {
    if cmd.has(flags::SKIP_MONITOR | flags::ADMIN) {
        return;
    }
    show_to_monitors(server, client, &super::redacted(cmd, args));
}

/// Send one MONITOR line for `args` run by `client` (EVAL and FCALL, flagged
/// `skip_monitor`, show themselves this way before their script runs, as in Redis).
pub fn show_to_monitors(server: &Server, client: &ClientState, args: &[&[u8]]) {
    let now_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64);
    // Redis names the source of a script's commands `lua`.
    let source = if client.running_script {
        "lua"
    } else {
        &client.info.addr
    };
    let line = monitor_line(now_us, client.db, source, args);
    server.bus().feed_monitors(&line);
}
