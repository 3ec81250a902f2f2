//! Parameters with their own syntax: `save`, `bind`, `client-output-buffer-limit`,
//! `notify-keyspace-events`, `oom-score-adj(-values)`, `replicaof`, `dir`,
//! `maxmemory-clients`, `latency-tracking-info-percentiles`, `shutdown-on-*`,
//! and the validators of a few string parameters. Each getter prints the value
//! as CONFIG GET does; each setter validates everything before it assigns.

use crate::parse::{os_error_text, parse_bool, parse_i64, parse_memory, ERR_BOOL};
use crate::table::{single, Config};

/// An empty argument list, or one empty argument: "nothing".
fn is_empty_list(args: &[String]) -> bool {
    args.is_empty() || (args.len() == 1 && args[0].is_empty())
}

// ---------------------------------------------------------------- save

pub(crate) fn get_save(c: &Config) -> String {
    let parts: Vec<String> = c.save.iter().map(|(s, n)| format!("{s} {n}")).collect();
    parts.join(" ")
}

/// Parses save points; the file loader appends them after the first `save`
/// line, CONFIG SET replaces them.
pub(crate) fn parse_save(args: &[String]) -> Result<Vec<(u64, u64)>, String> {
    if is_empty_list(args) {
        return Ok(Vec::new());
    }
    if args.len() & 1 != 0 {
        return Err("Invalid save parameters".into());
    }
    let num = |s: &str| -> Result<u64, String> {
        match s.parse::<i64>() {
            Ok(v) if v >= 0 => Ok(v as u64),
            _ => Err("Invalid save parameters".into()),
        }
    };
    args.chunks(2)
        .map(|p| Ok((num(&p[0])?, num(&p[1])?)))
        .collect()
}

pub(crate) fn set_save(c: &mut Config, args: &[String]) -> Result<(), String> {
    c.save = parse_save(args)?;
    Ok(())
}

// ---------------------------------------------------------------- bind

pub(crate) fn get_bind(c: &Config) -> String {
    c.bind.join(" ")
}

pub(crate) fn set_bind(c: &mut Config, args: &[String]) -> Result<(), String> {
    if is_empty_list(args) {
        c.bind.clear();
        return Ok(());
    }
    if args.len() > 16 {
        return Err("Too many bind addresses specified.".into());
    }
    c.bind = args.to_vec();
    Ok(())
}

// ---------------------------------------------------------------- client-output-buffer-limit

/// Output buffer limit of one client class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClientBufferLimit {
    /// Disconnect as soon as the buffer exceeds this many bytes (0 = none).
    pub hard: u64,
    /// Disconnect when the buffer stays above this many bytes ...
    pub soft: u64,
    /// ... for this many seconds.
    pub soft_seconds: u64,
}

/// Index of the `normal` class in [`Config::client_output_buffer_limit`].
pub const CLASS_NORMAL: usize = 0;
/// Index of the `replica` (`slave`) class.
pub const CLASS_REPLICA: usize = 1;
/// Index of the `pubsub` class.
pub const CLASS_PUBSUB: usize = 2;
/// Names CONFIG GET prints for the three classes.
pub const CLASS_NAMES: [&str; 3] = ["normal", "slave", "pubsub"];

pub(crate) fn get_cobl(c: &Config) -> String {
    let parts: Vec<String> = c
        .client_output_buffer_limit
        .iter()
        .zip(CLASS_NAMES)
        .map(|(l, n)| format!("{n} {} {} {}", l.hard, l.soft, l.soft_seconds))
        .collect();
    parts.join(" ")
}

pub(crate) fn set_cobl(c: &mut Config, args: &[String]) -> Result<(), String> {
    if args.len() & 3 != 0 {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    let mut new = c.client_output_buffer_limit;
    for chunk in args.chunks(4) {
        let class = match chunk[0].to_ascii_lowercase().as_str() {
            "normal" => CLASS_NORMAL,
            "slave" | "replica" => CLASS_REPLICA,
            "pubsub" => CLASS_PUBSUB,
            _ => {
                return Err("Invalid client class specified in buffer limit configuration.".into())
            }
        };
        let bad = || {
            "Error in hard, soft or soft_seconds setting in buffer limit configuration.".to_string()
        };
        let hard = parse_memory(&chunk[1]).ok_or_else(bad)?;
        let soft = parse_memory(&chunk[2]).ok_or_else(bad)?;
        let secs = chunk[3]
            .parse::<i64>()
            .ok()
            .filter(|v| *v >= 0)
            .ok_or_else(bad)?;
        new[class] = ClientBufferLimit {
            hard,
            soft,
            soft_seconds: secs as u64,
        };
    }
    c.client_output_buffer_limit = new;
    Ok(())
}

// ---------------------------------------------------------------- notify-keyspace-events

/// Bits of [`Config::notify_keyspace_events`].
pub mod notify {
    /// `K`: keyspace events (`__keyspace@<db>__` channels).
    pub const KEYSPACE: u32 = 1 << 0;
    /// `E`: keyevent events (`__keyevent@<db>__` channels).
    pub const KEYEVENT: u32 = 1 << 1;
    /// `g`: generic commands (DEL, EXPIRE, RENAME, ...).
    pub const GENERIC: u32 = 1 << 2;
    /// `$`: string commands.
    pub const STRING: u32 = 1 << 3;
    /// `l`: list commands.
    pub const LIST: u32 = 1 << 4;
    /// `s`: set commands.
    pub const SET: u32 = 1 << 5;
    /// `h`: hash commands.
    pub const HASH: u32 = 1 << 6;
    /// `z`: sorted set commands.
    pub const ZSET: u32 = 1 << 7;
    /// `x`: expired events.
    pub const EXPIRED: u32 = 1 << 8;
    /// `e`: evicted events.
    pub const EVICTED: u32 = 1 << 9;
    /// `t`: stream commands.
    pub const STREAM: u32 = 1 << 10;
    /// `d`: module key type events.
    pub const MODULE: u32 = 1 << 11;
    /// `m`: key miss events (not part of `A`).
    pub const KEY_MISS: u32 = 1 << 12;
    /// `n`: new key events (not part of `A`).
    pub const NEW: u32 = 1 << 13;
    /// `A`: alias for `g$lshzxetd`.
    pub const ALL: u32 =
        GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;
}

/// The class letters in the order CONFIG GET prints them (after `A`).
const NOTIFY_CLASSES: [(char, u32); 11] = [
    ('g', notify::GENERIC),
    ('$', notify::STRING),
    ('l', notify::LIST),
    ('s', notify::SET),
    ('h', notify::HASH),
    ('z', notify::ZSET),
    ('x', notify::EXPIRED),
    ('e', notify::EVICTED),
    ('t', notify::STREAM),
    ('d', notify::MODULE),
    ('n', notify::NEW),
];

/// Parses the letters of `notify-keyspace-events`.
pub fn parse_notify(s: &str) -> Option<u32> {
    let mut flags = 0;
    for ch in s.chars() {
        flags |= match ch {
            'A' => notify::ALL,
            'K' => notify::KEYSPACE,
            'E' => notify::KEYEVENT,
            'm' => notify::KEY_MISS,
            _ => NOTIFY_CLASSES.iter().find(|(c, _)| *c == ch)?.1,
        };
    }
    Some(flags)
}

/// Prints flags the way CONFIG GET does: `A` when every class of `A` is set
/// (then `n` is not printed, as in Redis), otherwise the class letters; then
/// `K`, `E` and `m`.
pub fn format_notify(flags: u32) -> String {
    let mut s = String::new();
    if flags & notify::ALL == notify::ALL {
        s.push('A');
    } else {
        for (c, bit) in NOTIFY_CLASSES {
            if flags & bit != 0 {
                s.push(c);
            }
        }
    }
    if flags & notify::KEYSPACE != 0 {
        s.push('K');
    }
    if flags & notify::KEYEVENT != 0 {
        s.push('E');
    }
    if flags & notify::KEY_MISS != 0 {
        s.push('m');
    }
    s
}

pub(crate) fn get_notify(c: &Config) -> String {
    format_notify(c.notify_keyspace_events)
}

pub(crate) fn set_notify(c: &mut Config, args: &[String]) -> Result<(), String> {
    c.notify_keyspace_events = parse_notify(single(args)?)
        .ok_or("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")?;
    Ok(())
}

// ---------------------------------------------------------------- oom-score-adj

pub(crate) fn get_oom_score_adj(c: &Config) -> String {
    c.oom_score_adj.clone()
}

pub(crate) fn set_oom_score_adj(c: &mut Config, args: &[String]) -> Result<(), String> {
    let s = single(args)?.to_ascii_lowercase();
    c.oom_score_adj = match s.as_str() {
        "no" => "no",
        // "relative" is another name for "yes" and prints as "yes"
        "yes" | "relative" => "yes",
        "absolute" => "absolute",
        _ => {
            return Err(
                "argument(s) must be one of the following: no, yes, relative, absolute".into(),
            )
        }
    }
    .to_string();
    Ok(())
}

pub(crate) fn get_oom_values(c: &Config) -> String {
    let v = c.oom_score_adj_values;
    format!("{} {} {}", v[0], v[1], v[2])
}

pub(crate) fn set_oom_values(c: &mut Config, args: &[String]) -> Result<(), String> {
    if args.len() != 3 {
        return Err("wrong number of arguments".into());
    }
    let mut v = [0i32; 3];
    for (slot, a) in v.iter_mut().zip(args) {
        match a.parse::<i64>() {
            Ok(n) if (-2000..=2000).contains(&n) => *slot = n as i32,
            _ => {
                return Err(
                    "Invalid oom-score-adj-values, elements must be between -2000 and 2000.".into(),
                )
            }
        }
    }
    c.oom_score_adj_values = v;
    Ok(())
}

// ---------------------------------------------------------------- latency-tracking-info-percentiles

fn format_percentile(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

pub(crate) fn get_percentiles(c: &Config) -> String {
    let parts: Vec<String> = c
        .latency_tracking_info_percentiles
        .iter()
        .map(|v| format_percentile(*v))
        .collect();
    parts.join(" ")
}

pub(crate) fn set_percentiles(c: &mut Config, args: &[String]) -> Result<(), String> {
    if is_empty_list(args) {
        c.latency_tracking_info_percentiles.clear();
        return Ok(());
    }
    let mut out = Vec::with_capacity(args.len());
    for a in args {
        let v: f64 = a
            .parse()
            .ok()
            .filter(|v: &f64| !v.is_nan())
            .ok_or("Invalid latency-tracking-info-percentiles parameters")?;
        if !(0.0..=100.0).contains(&v) {
            return Err(
                "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
                    .into(),
            );
        }
        out.push(v);
    }
    c.latency_tracking_info_percentiles = out;
    Ok(())
}

// ---------------------------------------------------------------- replicaof

pub(crate) fn get_replicaof(c: &Config) -> String {
    let parts: Vec<String> = c
        .replicaof
        .iter()
        .map(|(h, p)| format!("{h} {p}"))
        .collect();
    parts.join(" ")
}

/// Parses one `replicaof` directive: `None` for `no one`.
pub(crate) fn parse_replicaof(args: &[String]) -> Result<Option<(String, u16)>, String> {
    if args.len() != 2 {
        return Err("wrong number of arguments".into());
    }
    if args[0].eq_ignore_ascii_case("no") && args[1].eq_ignore_ascii_case("one") {
        return Ok(None);
    }
    match args[1].parse::<i64>() {
        Ok(p) if (0..=65535).contains(&p) => Ok(Some((args[0].clone(), p as u16))),
        _ => Err("Invalid master port".into()),
    }
}

pub(crate) fn set_replicaof(c: &mut Config, args: &[String]) -> Result<(), String> {
    if args.is_empty() {
        c.replicaof.clear();
        return Ok(());
    }
    c.replicaof = parse_replicaof(args)?.into_iter().collect();
    Ok(())
}

// ---------------------------------------------------------------- dir

pub(crate) fn get_dir(c: &Config) -> String {
    c.dir.clone()
}

pub(crate) fn set_dir(c: &mut Config, args: &[String]) -> Result<(), String> {
    let s = single(args)?;
    let path = std::path::Path::new(s);
    let meta = std::fs::metadata(path).map_err(|e| os_error_text(&e))?;
    if !meta.is_dir() {
        return Err("Not a directory".into());
    }
    let abs = std::fs::canonicalize(path).map_err(|e| os_error_text(&e))?;
    c.dir = abs.to_string_lossy().into_owned();
    Ok(())
}

// ---------------------------------------------------------------- maxmemory-clients

/// Value of `maxmemory-clients`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxmemoryClients {
    /// An absolute limit in bytes (0 = no limit).
    Bytes(u64),
    /// A percentage of `maxmemory`.
    Percent(u32),
}

impl Default for MaxmemoryClients {
    fn default() -> Self {
        MaxmemoryClients::Bytes(0)
    }
}

impl MaxmemoryClients {
    /// The limit in bytes for a given `maxmemory` (0 = no limit).
    pub fn bytes(self, maxmemory: u64) -> u64 {
        match self {
            MaxmemoryClients::Bytes(b) => b,
            MaxmemoryClients::Percent(p) => maxmemory / 100 * p as u64,
        }
    }
}

pub(crate) fn get_maxmemory_clients(c: &Config) -> String {
    match c.maxmemory_clients {
        MaxmemoryClients::Bytes(b) => b.to_string(),
        MaxmemoryClients::Percent(p) => format!("{p}%"),
    }
}

pub(crate) fn set_maxmemory_clients(c: &mut Config, args: &[String]) -> Result<(), String> {
    let s = single(args)?;
    let bad = || "argument must be a memory or percent value".to_string();
    c.maxmemory_clients = if let Some(num) = s.strip_suffix('%') {
        let p = parse_i64(num).filter(|p| *p >= 0).ok_or_else(bad)?;
        if p > 100 {
            return Err("percentage argument must be less or equal to 100".into());
        }
        MaxmemoryClients::Percent(p as u32)
    } else {
        MaxmemoryClients::Bytes(parse_memory(s).ok_or_else(bad)?)
    };
    Ok(())
}

// ---------------------------------------------------------------- shutdown-on-sigint / sigterm

/// Bits of [`Config::shutdown_on_sigint`] / [`Config::shutdown_on_sigterm`] (0 = default).
pub mod shutdown {
    pub const SAVE: u8 = 1;
    pub const NOSAVE: u8 = 2;
    pub const NOW: u8 = 4;
    pub const FORCE: u8 = 8;
}

const SHUTDOWN_NAMES: [(&str, u8); 4] = [
    ("save", shutdown::SAVE),
    ("nosave", shutdown::NOSAVE),
    ("now", shutdown::NOW),
    ("force", shutdown::FORCE),
];

fn format_shutdown(flags: u8) -> String {
    if flags == 0 {
        return "default".into();
    }
    let names: Vec<&str> = SHUTDOWN_NAMES
        .iter()
        .filter(|(_, b)| flags & b != 0)
        .map(|(n, _)| *n)
        .collect();
    names.join(" ")
}

fn parse_shutdown(args: &[String]) -> Result<u8, String> {
    let mut flags = 0u8;
    if args.is_empty() {
        return Err("wrong number of arguments".into());
    }
    for a in args {
        if a.eq_ignore_ascii_case("default") {
            continue;
        }
        flags |= SHUTDOWN_NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(a))
            .map(|(_, b)| *b)
            .ok_or("argument(s) must be one of the following: default, save, nosave, now, force")?;
    }
    if flags & shutdown::SAVE != 0 && flags & shutdown::NOSAVE != 0 {
        return Err("shutdown options SAVE and NOSAVE can't be used simultaneously".into());
    }
    Ok(flags)
}

pub(crate) fn get_shutdown_sigint(c: &Config) -> String {
    format_shutdown(c.shutdown_on_sigint)
}

pub(crate) fn set_shutdown_sigint(c: &mut Config, args: &[String]) -> Result<(), String> {
    c.shutdown_on_sigint = parse_shutdown(args)?;
    Ok(())
}

pub(crate) fn get_shutdown_sigterm(c: &Config) -> String {
    format_shutdown(c.shutdown_on_sigterm)
}

pub(crate) fn set_shutdown_sigterm(c: &mut Config, args: &[String]) -> Result<(), String> {
    c.shutdown_on_sigterm = parse_shutdown(args)?;
    Ok(())
}

// ---------------------------------------------------------------- server-thread-affinity

pub(crate) fn get_affinity(c: &Config) -> String {
    crate::parse::fmt_bool(c.server_thread_affinity)
}

/// `yes`/`no`, and KeyDB's `true`/`false`.
pub(crate) fn set_affinity(c: &mut Config, args: &[String]) -> Result<(), String> {
    let s = single(args)?;
    c.server_thread_affinity = if s.eq_ignore_ascii_case("true") {
        true
    } else if s.eq_ignore_ascii_case("false") {
        false
    } else {
        parse_bool(s).ok_or(ERR_BOOL)?
    };
    Ok(())
}

// ---------------------------------------------------------------- string validators

pub(crate) fn check_dbfilename(s: &str) -> Result<(), String> {
    if s.contains('/') {
        return Err("dbfilename can't be a path, just a filename".into());
    }
    Ok(())
}

pub(crate) fn check_appendfilename(s: &str) -> Result<(), String> {
    if s.contains('/') {
        return Err("appendfilename can't be a path, just a filename".into());
    }
    Ok(())
}

pub(crate) fn check_appenddirname(s: &str) -> Result<(), String> {
    if s.contains('/') {
        return Err("appenddirname can't be a path, just a dirname".into());
    }
    Ok(())
}

/// The variables `proc-title-template` may use.
pub const PROC_TITLE_VARS: [&str; 7] = [
    "title",
    "listen-addr",
    "server-mode",
    "port",
    "tls-port",
    "unixsocket",
    "config-file",
];

pub(crate) fn check_proc_title(s: &str) -> Result<(), String> {
    let bad = || "template format is invalid or contains unknown variables".to_string();
    let mut rest = s;
    while let Some(open) = rest.find(['{', '}']) {
        if rest.as_bytes()[open] == b'}' {
            return Err(bad());
        }
        let after = &rest[open + 1..];
        let close = after.find('}').ok_or_else(bad)?;
        let var = &after[..close];
        if !PROC_TITLE_VARS.contains(&var) {
            return Err(bad());
        }
        rest = &after[close + 1..];
    }
    Ok(())
}
