//! CONFIG GET / SET / RESETSTAT / REWRITE / HELP.
//!
//! The parameters themselves (names, types, validation, the text forms) belong to the
//! kvik-config crate; this module is the command layer over it. CONFIG SET is
//! all-or-nothing: the crate validates and assigns every pair on a copy, and the
//! server's hot copies of the values that change take effect before the reply.

use super::shared::help_reply;
use super::table::{acl, flags, Command};
use super::{errors, CmdError, CmdResult, Ctx};
use crate::mailbox::Message;
use crate::server::Server;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

const ADMIN_FLAGS: u32 = flags::ADMIN | flags::NOSCRIPT | flags::LOADING | flags::STALE;
const ADMIN_ACL: u32 = acl::ADMIN | acl::SLOW | acl::DANGEROUS;

const SUBCOMMANDS: &[Command] = &[
    Command::new("config|get", -3, get)
        .flags(ADMIN_FLAGS)
        .acl(ADMIN_ACL)
        .doc(
            "server",
            "2.0.0",
            "O(N) when N is the number of configuration parameters provided",
            "Returns the parameters matching the patterns, with their values.",
        ),
    Command::new("config|set", -4, set)
        .flags(ADMIN_FLAGS)
        .redact(hide_sensitive_values)
        .acl(ADMIN_ACL)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc(
            "server",
            "2.0.0",
            "O(N) when N is the number of configuration parameters provided",
            "Changes parameters, all of them or none.",
        ),
    Command::new("config|resetstat", 2, resetstat)
        .flags(ADMIN_FLAGS)
        .acl(ADMIN_ACL)
        .doc(
            "server",
            "2.0.0",
            "O(1)",
            "Zeroes the statistics INFO reports.",
        ),
    Command::new("config|rewrite", 2, rewrite)
        .flags(ADMIN_FLAGS)
        .acl(ADMIN_ACL)
        .doc(
            "server",
            "2.8.0",
            "O(1)",
            "Writes the running configuration into the configuration file.",
        ),
    Command::new("config|help", 2, help)
        .flags(flags::LOADING | flags::STALE)
        .acl(acl::SLOW)
        .doc(
            "server",
            "5.0.0",
            "O(1)",
            "Explains the CONFIG subcommands.",
        ),
];

/// The container. Its arity requires a subcommand, so its own handler never runs
/// with fewer arguments; HELP is the natural stand-in.
pub const COMMANDS: &[Command] = &[Command::new("config", -2, help)
    .acl(acl::SLOW)
    .doc(
        "server",
        "2.0.0",
        "Depends on subcommand.",
        "Server configuration commands.",
    )
    .subcommands(SUBCOMMANDS)];

/// CONFIG GET pattern [pattern ...]: a map of every matching parameter to its value.
fn get(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let pairs = ctx.server.config.read().get_patterns(&args[2..]);
    ctx.out.map(pairs.len());
    for (name, value) in pairs {
        ctx.out.bulk(name.as_bytes());
        ctx.out.bulk(value.as_bytes());
    }
    Ok(())
}

/// CONFIG SET name value [name value ...].
fn set(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let chunks = args[2..].chunks_exact(2);
    if !chunks.remainder().is_empty() {
        return Err(errors::SYNTAX.into());
    }
    let pairs: Vec<(&[u8], &[u8])> = chunks.map(|p| (p[0], p[1])).collect();
    let mut config = ctx.server.config.write();
    let before = config.clone();
    let changed = config.set_ex(&pairs, client_is_local(&ctx.client.info.addr))?;
    ctx.server.refresh_hot(&config);
    drop(config);
    if let Err(e) = apply_changes(ctx.server, &changed) {
        // All or nothing, as Redis: put the old values back.
        let mut config = ctx.server.config.write();
        *config = before;
        ctx.server.refresh_hot(&config);
        return Err(e);
    }
    if changed.contains(&"maxmemory") {
        enforce_maxmemory(ctx);
    }
    ctx.out.ok();
    Ok(())
}

/// A new `maxmemory` applies at once, as in Redis: a warning when memory is already
/// over it, and eviction now (what the round leaves, the workers go on with).
fn enforce_maxmemory(ctx: &mut Ctx) {
    let Some(limit) = ctx.server.memory.limit() else {
        return;
    };
    let used = crate::stats::allocated_now();
    if used > limit {
        crate::log_warning!(
            "WARNING: the new maxmemory value set via CONFIG SET ({limit}) is smaller than the current memory usage ({used}). This will result in key eviction and/or the inability to accept new write commands depending on the maxmemory-policy."
        );
    }
    ctx.server.memory.make_room(ctx.key_env(), ctx.keys.now_ms);
}

/// Side effects of changed parameters beyond the values `hot` caches.
fn apply_changes(server: &Server, changed: &[&'static str]) -> CmdResult {
    if let Some(name) = changed
        .iter()
        .find(|n| matches!(**n, "oom-score-adj" | "oom-score-adj-values"))
    {
        crate::oom_score::apply(&server.config.read()).map_err(|_| {
            CmdError::from(format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - Failed to set current oom_score_adj. Check server logs."
            ))
        })?;
    }
    if changed.contains(&"crash-log-enabled") {
        crate::crash::set_enabled(server.config.read().crash_log_enabled);
    }
    if changed.contains(&"proc-title-template") {
        crate::process::set_title(&server.config.read(), server.config_file.as_deref());
    }
    if changed.contains(&"jemalloc-bg-thread") {
        crate::process::set_jemalloc_background_thread(server.config.read().jemalloc_bg_thread);
    }
    if changed.contains(&"appendonly") {
        let on = server.config.read().appendonly;
        crate::server::saving::set_appendonly(server, on).map_err(|why| {
            CmdError::from(format!(
                "ERR CONFIG SET failed (possibly related to argument 'appendonly') - {why}"
            ))
        })?;
    }
    if changed.contains(&"requirepass") {
        let password = server.config.read().requirepass.clone();
        server.acl.set_requirepass(password.as_deref());
    }
    if changed.contains(&"loglevel") {
        let level = server.config.read().loglevel.clone();
        crate::logging::set_level(&level).map_err(CmdError::from)?;
    }
    apply_tls_changes(server, changed)?;
    if let Some(name) = changed.iter().find(|n| matches!(**n, "port" | "bind")) {
        let listeners = crate::listen::bind_all(&server.config.read()).map_err(|e| {
            // The cause goes to the log; the reply says only what failed, as Redis's.
            crate::log_warning!("{e}");
            let what = if *name == "bind" {
                "Failed to bind to specified addresses."
            } else {
                "Unable to listen on this port. Check server logs."
            };
            CmdError::from(format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - {what}"
            ))
        })?;
        server
            .port
            .store(server.config.read().port as u64, Ordering::Relaxed);
        let listeners = Arc::new(listeners);
        server.broadcast(|| Message::Listen(listeners.clone()));
    }
    Ok(())
}

/// A changed TLS setting builds the TLS configuration anew (new handshakes use it;
/// a file that does not load fails the CONFIG SET and the old one stays); a changed
/// `tls-port` or `bind` rebinds the TLS listeners.
fn apply_tls_changes(server: &Server, changed: &[&'static str]) -> CmdResult {
    let failed = |name: &str, what: &str| {
        CmdError::from(format!(
            "ERR CONFIG SET failed (possibly related to argument '{name}') - {what}"
        ))
    };
    let tls_setting = changed
        .iter()
        .find(|n| **n == "tls-port" || crate::tls::SETTINGS.contains(n));
    if let Some(name) = tls_setting {
        server.tls.configure(&server.config.read()).map_err(|why| {
            crate::log_warning!("Failed to configure TLS: {why}");
            failed(
                name,
                "Unable to update TLS configuration. Check server logs.",
            )
        })?;
    }
    if let Some(name) = changed.iter().find(|n| matches!(**n, "tls-port" | "bind")) {
        let listeners = crate::listen::bind_tls(&server.config.read()).map_err(|e| {
            crate::log_warning!("{e}");
            failed(name, "Unable to listen on this port. Check server logs.")
        })?;
        let listeners = Arc::new(listeners);
        server.broadcast(|| Message::ListenTls(listeners.clone()));
    }
    Ok(())
}

/// Loopback and unix-socket clients may change protected parameters when
/// `enable-protected-configs` is `local`. A unix socket's address is not an IP one.
pub fn client_is_local(addr: &str) -> bool {
    addr.parse::<SocketAddr>()
        .map_or(true, |a| a.ip().is_loopback())
}

fn resetstat(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.server.reset_stats();
    ctx.out.ok();
    Ok(())
}

fn rewrite(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let Some(path) = &ctx.server.config_file else {
        return Err("ERR The server is running without a config file".into());
    };
    let mut config = ctx.server.config.read().clone();
    // The users as they are now, unless an ACL file holds them (Redis then drops
    // the `user` lines).
    config.users = if config.aclfile.is_empty() {
        super::acl::user_lines(ctx.server)
            .iter()
            .map(|line| line.split(' ').skip(1).map(str::to_string).collect())
            .collect()
    } else {
        Vec::new()
    };
    if let Err(e) = config.rewrite(path) {
        let why = kvik_config::parse::os_error_text(&e);
        crate::log_warning!("CONFIG REWRITE failed: {why}");
        return Err(format!("ERR Rewriting config file: {why}").into());
    }
    crate::log_notice!("CONFIG REWRITE executed with success.");
    ctx.out.ok();
    Ok(())
}

fn help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx.out,
        "CONFIG",
        &[
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Rewrite the configuration file.",
        ],
    );
    Ok(())
}

/// CONFIG SET's arguments as MONITOR and the slow log show them: the values of
/// sensitive parameters (`masterauth`, `requirepass`) hidden.
fn hide_sensitive_values(args: &mut [&[u8]]) {
    for pair in args[2..].chunks_exact_mut(2) {
        let name = String::from_utf8_lossy(pair[0]);
        if kvik_config::lookup(&name).is_some_and(|(p, _)| p.has(kvik_config::table::SENSITIVE)) {
            pair[1] = super::REDACTED;
        }
    }
}
