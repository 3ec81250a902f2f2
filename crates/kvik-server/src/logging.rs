//! Server log in redis-server's exact format, because supervisors and test
//! harnesses parse it:
//!
//! ```text
//! 12345:M 21 Nov 2026 10:44:51.862 * Ready to accept connections
//! ```
//!
//! `pid:role day month year time.millis level-char message`, where the role is
//! `M` master, `S` replica, `C` child, `X` sentinel ([`set_role`]) and the level
//! char is `.` debug, `-` verbose, `*` notice, `#` warning. Times are local
//! time. Lines go to standard output when `logfile` is empty, else are appended
//! to that file, which is opened for each line as Redis does, so a rotated log
//! file is picked up without a signal. With `syslog-enabled yes` every message
//! is also sent to syslog (without the prefix).
//!
//! # Levels and the `tracing` façade
//!
//! The project logs through `tracing`; this module installs the subscriber.
//! Redis's four levels map onto tracing's as follows:
//!
//! | Redis `loglevel` | char | macro here       | tracing level     |
//! |------------------|------|------------------|-------------------|
//! | `debug`          | `.`  | [`log_debug!`]   | `TRACE`           |
//! | `verbose`        | `-`  | [`log_verbose!`] | `DEBUG`           |
//! | `notice`         | `*`  | [`log_notice!`]  | `INFO`            |
//! | `warning`        | `#`  | [`log_warning!`] | `WARN` and `ERROR`|
//!
//! so `tracing::info!` from any module is a notice line. The level is an atomic
//! checked by the subscriber for every event ([`set_level`] takes effect at once,
//! for CONFIG SET loglevel).
//!
//! Why a small [`tracing::Subscriber`] of our own instead of
//! `tracing-subscriber`'s fmt layer: the line format, the per-line reopening of
//! the log file, syslog and a level that changes at runtime are each a custom
//! piece there (formatter, writer, timer, reload handle); spans have no place
//! in Redis's format. Implementing the subscriber trait directly is about sixty
//! lines, pulls in nothing but `tracing` itself, and keeps the format exact.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::Mutex;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

#[doc(hidden)]
pub use tracing as __tracing;

/// Redis's log levels, least to most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug = 0,
    Verbose = 1,
    Notice = 2,
    Warning = 3,
}

impl Level {
    /// Parses a `loglevel` value (case-insensitive).
    pub fn parse(s: &str) -> Option<Level> {
        match s.to_ascii_lowercase().as_str() {
            "debug" => Some(Level::Debug),
            "verbose" => Some(Level::Verbose),
            "notice" => Some(Level::Notice),
            "warning" => Some(Level::Warning),
            _ => None,
        }
    }

    /// The character that marks this level in a log line.
    pub fn mark(self) -> char {
        match self {
            Level::Debug => '.',
            Level::Verbose => '-',
            Level::Notice => '*',
            Level::Warning => '#',
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Verbose => "verbose",
            Level::Notice => "notice",
            Level::Warning => "warning",
        }
    }

    fn from_u8(v: u8) -> Level {
        match v {
            0 => Level::Debug,
            1 => Level::Verbose,
            2 => Level::Notice,
            _ => Level::Warning,
        }
    }

    /// The Redis level of a tracing level (see the module table).
    pub fn from_tracing(l: &tracing::Level) -> Level {
        match *l {
            tracing::Level::TRACE => Level::Debug,
            tracing::Level::DEBUG => Level::Verbose,
            tracing::Level::INFO => Level::Notice,
            _ => Level::Warning,
        }
    }

    fn syslog_priority(self) -> libc::c_int {
        match self {
            Level::Debug => libc::LOG_DEBUG,
            Level::Verbose => libc::LOG_INFO,
            Level::Notice => libc::LOG_NOTICE,
            Level::Warning => libc::LOG_WARNING,
        }
    }
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Notice as u8);
static ROLE: AtomicU32 = AtomicU32::new('M' as u32);
static SYSLOG: AtomicBool = AtomicBool::new(false);
/// Empty: standard output.
static LOGFILE: Mutex<String> = Mutex::new(String::new());

/// Sets up logging: the level (`debug`, `verbose`, `notice`, `warning`), the
/// log file (empty for standard output; it must be writable) and, if given,
/// syslog with its ident and facility (`user`, `local0` .. `local7`). Installs
/// the global `tracing` subscriber the first time; later calls only change the
/// settings.
pub fn init(level: &str, logfile: &str, syslog: Option<(&str, &str)>) -> io::Result<()> {
    set_level(level).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    set_logfile(logfile)?;
    match syslog {
        Some((ident, facility)) => {
            let fac = syslog_facility(facility).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("invalid syslog facility '{facility}'"),
                )
            })?;
            let ident = std::ffi::CString::new(ident).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "syslog-ident contains a NUL byte",
                )
            })?;
            // openlog keeps the pointer: the string must live for the process.
            let ident: &'static std::ffi::CStr = Box::leak(ident.into_boxed_c_str());
            // SAFETY: `ident` is a valid NUL-terminated string that is never freed.
            unsafe {
                libc::openlog(
                    ident.as_ptr(),
                    libc::LOG_PID | libc::LOG_NDELAY | libc::LOG_NOWAIT,
                    fac,
                )
            };
            SYSLOG.store(true, Ordering::Relaxed);
        }
        None => SYSLOG.store(false, Ordering::Relaxed),
    }
    // Fails only if a subscriber is already installed (an earlier init).
    let _ = tracing::subscriber::set_global_default(RedisLogSubscriber);
    Ok(())
}

/// Changes the level at runtime (CONFIG SET loglevel).
pub fn set_level(level: &str) -> Result<(), String> {
    let l = Level::parse(level).ok_or_else(|| format!("invalid log level '{level}'"))?;
    LEVEL.store(l as u8, Ordering::Relaxed);
    Ok(())
}

/// The current level.
pub fn level() -> Level {
    Level::from_u8(LEVEL.load(Ordering::Relaxed))
}

/// Whether a message of this level would be written.
pub fn enabled(l: Level) -> bool {
    l >= level()
}

/// Sets the role character of every following line: `M` master, `S` replica,
/// `C` child process, `X` sentinel. (redis-server prints `C` for the lines it
/// logs before its initialisation completes, then `M`/`S`.)
pub fn set_role(c: char) {
    ROLE.store(c as u32, Ordering::Relaxed);
}

fn role() -> char {
    char::from_u32(ROLE.load(Ordering::Relaxed)).unwrap_or('M')
}

/// Changes the log file (empty: standard output). The file is created if
/// needed and must be writable.
pub fn set_logfile(path: &str) -> io::Result<()> {
    if !path.is_empty() {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
    }
    *LOGFILE.lock().unwrap_or_else(|e| e.into_inner()) = path.to_string();
    Ok(())
}

fn syslog_facility(name: &str) -> Option<libc::c_int> {
    Some(match name.to_ascii_lowercase().as_str() {
        "user" => libc::LOG_USER,
        "local0" => libc::LOG_LOCAL0,
        "local1" => libc::LOG_LOCAL1,
        "local2" => libc::LOG_LOCAL2,
        "local3" => libc::LOG_LOCAL3,
        "local4" => libc::LOG_LOCAL4,
        "local5" => libc::LOG_LOCAL5,
        "local6" => libc::LOG_LOCAL6,
        "local7" => libc::LOG_LOCAL7,
        _ => return None,
    })
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A broken-down local time, the part of a line after `pid:role `.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub day: u32,
    /// 0 = January.
    pub month: u32,
    pub year: i32,
    pub hour: u32,
    pub min: u32,
    pub sec: u32,
    pub millis: u32,
}

impl Stamp {
    /// The current local time.
    pub fn now() -> Stamp {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let secs = now.as_secs() as libc::time_t;
        // SAFETY: an all-zero `tm` is a valid value, and localtime_r only
        // writes into the struct we pass.
        let mut tm: libc::tm = unsafe { std::mem::zeroed() };
        let ok = unsafe { !libc::localtime_r(&secs, &mut tm).is_null() };
        if !ok {
            return Stamp {
                day: 1,
                month: 0,
                year: 1970,
                hour: 0,
                min: 0,
                sec: 0,
                millis: 0,
            };
        }
        Stamp {
            day: tm.tm_mday as u32,
            month: tm.tm_mon as u32,
            year: tm.tm_year + 1900,
            hour: tm.tm_hour as u32,
            min: tm.tm_min as u32,
            sec: tm.tm_sec as u32,
            millis: now.subsec_millis(),
        }
    }
}

impl std::fmt::Display for Stamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:02} {} {} {:02}:{:02}:{:02}.{:03}",
            self.day,
            MONTHS[(self.month % 12) as usize],
            self.year,
            self.hour,
            self.min,
            self.sec,
            self.millis
        )
    }
}

/// One log line, newline included: `pid:role stamp mark message\n`.
pub fn format_line(pid: u32, role: char, stamp: &Stamp, level: Level, msg: &str) -> String {
    format!("{pid}:{role} {stamp} {} {msg}\n", level.mark())
}

/// Writes a message at `level` with the usual prefix, if the level allows it.
/// The macros and the `tracing` subscriber end here; it can also be called
/// directly.
pub fn log(level: Level, msg: &str) {
    if !enabled(level) {
        return;
    }
    let line = format_line(std::process::id(), role(), &Stamp::now(), level, msg);
    write_out(line.as_bytes());
    to_syslog(level, msg);
}

/// Writes `text` as it is, without the prefix (the startup logo), if the
/// level allows it.
pub fn log_raw(level: Level, text: &str) {
    if !enabled(level) {
        return;
    }
    write_out(text.as_bytes());
    to_syslog(level, text);
}

fn write_out(bytes: &[u8]) {
    let path = LOGFILE.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if path.is_empty() {
        let mut out = io::stdout().lock();
        let _ = out.write_all(bytes);
        let _ = out.flush();
    } else if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        let _ = f.write_all(bytes);
    }
}

fn to_syslog(level: Level, msg: &str) {
    if !SYSLOG.load(Ordering::Relaxed) {
        return;
    }
    let Ok(c) = std::ffi::CString::new(msg.replace('\0', "")) else {
        return;
    };
    // SAFETY: both strings are valid and NUL-terminated; "%s" consumes one string.
    unsafe { libc::syslog(level.syslog_priority(), c"%s".as_ptr(), c.as_ptr()) };
}

/// The `tracing` subscriber that writes events as Redis log lines. Spans are
/// accepted and ignored.
pub struct RedisLogSubscriber;

impl Subscriber for RedisLogSubscriber {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> tracing::subscriber::Interest {
        // The level changes at runtime: ask `enabled` every time.
        tracing::subscriber::Interest::sometimes()
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.is_event() && enabled(Level::from_tracing(metadata.level()))
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        None
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut v = MessageVisitor::default();
        event.record(&mut v);
        log(Level::from_tracing(event.metadata().level()), &v.finish());
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// Collects an event's `message`, then its other fields as ` key=value`.
#[derive(Default)]
struct MessageVisitor {
    message: String,
    fields: String,
}

impl MessageVisitor {
    fn finish(self) -> String {
        if self.fields.is_empty() {
            self.message
        } else if self.message.is_empty() {
            self.fields.trim_start().to_string()
        } else {
            self.message + &self.fields
        }
    }
}

impl Visit for MessageVisitor {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.fields, " {}={}", field.name(), value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={:?}", field.name(), value);
        }
    }
}

/// Logs at Redis's `debug` level (`.`).
#[macro_export]
macro_rules! log_debug {
    ($($arg:tt)*) => { $crate::logging::__tracing::trace!($($arg)*) };
}

/// Logs at Redis's `verbose` level (`-`).
#[macro_export]
macro_rules! log_verbose {
    ($($arg:tt)*) => { $crate::logging::__tracing::debug!($($arg)*) };
}

/// Logs at Redis's `notice` level (`*`).
#[macro_export]
macro_rules! log_notice {
    ($($arg:tt)*) => { $crate::logging::__tracing::info!($($arg)*) };
}

/// Logs at Redis's `warning` level (`#`).
#[macro_export]
macro_rules! log_warning {
    ($($arg:tt)*) => { $crate::logging::__tracing::warn!($($arg)*) };
}

/// The startup banner (`always-show-logo yes`, or a terminal): kvik's own
/// drawing, with the version, mode, port, `PID: <pid>` and thread count.
pub fn logo_text(version: &str, mode: &str, port: u16, pid: u32, threads: usize) -> String {
    let bits = usize::BITS;
    let info = [
        format!("kvik {version} ({bits} bit)"),
        "Redis 7.0.15 compatible".to_string(),
        format!("Running in {mode} mode"),
        format!("Port: {port}"),
        format!("PID: {pid}"),
        format!("Threads: {threads}"),
        String::new(),
    ];
    let art = [
        "      .----------.   ",
        "     /   kvik   /|   ",
        "    .----------. |   ",
        "    | :: :: :: | |   ",
        "    | :: :: :: | |   ",
        "    | :: :: :: | '   ",
        "    '----------'/    ",
    ];
    let mut s = String::from("\n");
    for (a, i) in art.iter().zip(info.iter()) {
        let line = format!("{a}  {i}");
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s.push('\n');
    s
}

/// Writes the banner of [`logo_text`] at notice level, without line prefix.
pub fn print_logo(version: &str, mode: &str, port: u16, pid: u32, threads: usize) {
    log_raw(Level::Notice, &logo_text(version, mode, port, pid, threads));
}

/// What redis-server logs at startup: the banner when `always-show-logo` is
/// set, or when logging to a terminal (no log file, no syslog); otherwise the
/// one line `Running mode=<mode>, port=<port>.`
pub fn log_startup_banner(
    always_show_logo: bool,
    version: &str,
    mode: &str,
    port: u16,
    pid: u32,
    threads: usize,
) {
    let to_terminal = !SYSLOG.load(Ordering::Relaxed)
        && LOGFILE.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
        // SAFETY: isatty only inspects the descriptor.
        && unsafe { libc::isatty(libc::STDOUT_FILENO) } == 1;
    if always_show_logo || to_terminal {
        print_logo(version, mode, port, pid, threads);
    } else {
        log(Level::Notice, &format!("Running mode={mode}, port={port}."));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_format_matches_redis() {
        let st = Stamp {
            day: 1,
            month: 10,
            year: 2026,
            hour: 9,
            min: 4,
            sec: 5,
            millis: 7,
        };
        assert_eq!(
            format_line(3635, 'M', &st, Level::Notice, "Ready to accept connections"),
            "3635:M 01 Nov 2026 09:04:05.007 * Ready to accept connections\n"
        );
        assert_eq!(
            format_line(1, 'C', &st, Level::Warning, "x"),
            "1:C 01 Nov 2026 09:04:05.007 # x\n"
        );
        assert_eq!(
            format_line(1, 'S', &st, Level::Verbose, "x"),
            "1:S 01 Nov 2026 09:04:05.007 - x\n"
        );
        assert_eq!(
            format_line(1, 'X', &st, Level::Debug, "x"),
            "1:X 01 Nov 2026 09:04:05.007 . x\n"
        );
    }

    #[test]
    fn stamp_now_is_plausible() {
        let s = Stamp::now().to_string();
        // "21 Nov 2026 10:44:51.861"
        assert_eq!(s.len(), 24, "{s}");
        assert_eq!(&s[2..3], " ");
        assert!(MONTHS.contains(&&s[3..6]));
        assert_eq!(&s[20..21], ".");
    }

    #[test]
    fn levels() {
        assert_eq!(Level::parse("WARNING"), Some(Level::Warning));
        assert_eq!(Level::parse("nope"), None);
        assert_eq!(Level::from_tracing(&tracing::Level::ERROR), Level::Warning);
        assert_eq!(Level::from_tracing(&tracing::Level::WARN), Level::Warning);
        assert_eq!(Level::from_tracing(&tracing::Level::INFO), Level::Notice);
        assert_eq!(Level::from_tracing(&tracing::Level::DEBUG), Level::Verbose);
        assert_eq!(Level::from_tracing(&tracing::Level::TRACE), Level::Debug);
        assert!(Level::Warning > Level::Notice && Level::Verbose > Level::Debug);
    }

    #[test]
    fn logo_has_what_harnesses_grep() {
        let t = logo_text("0.1.0", "standalone", 6380, 4242, 4);
        assert!(t.contains("0.1.0"));
        assert!(t.contains("standalone"));
        assert!(t.contains("Port: 6380"));
        assert!(t.contains("PID: 4242"));
        assert!(t.contains("Threads: 4"));
        assert!(t.lines().all(|l| l.len() < 80));
    }

    /// Everything that touches the global settings runs in this one test, so
    /// tests running in parallel do not interfere.
    #[test]
    fn writes_to_file_with_levels_role_and_tracing() {
        let path = std::env::temp_dir().join(format!("kvik-log-test-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let p = path.to_str().unwrap();
        assert!(init("bogus", p, None).is_err());
        init("notice", p, None).unwrap();
        set_role('M');
        crate::log_notice!("hello {}", 1);
        crate::log_verbose!("hidden");
        crate::log_warning!(key = 5, "careful");
        set_level("debug").unwrap();
        set_role('S');
        crate::log_debug!("dbg");
        tracing::error!("err");
        set_level("warning").unwrap();
        crate::log_notice!("hidden too");
        set_level("notice").unwrap();
        log_startup_banner(false, "0.1.0", "standalone", 6379, 77, 2);
        log_startup_banner(true, "0.1.0", "standalone", 6379, 77, 2);
        set_role('M');
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let lines: Vec<&str> = text.lines().collect();
        let pid = std::process::id();
        let body = |l: &str| -> String {
            // strip "pid:R dd Mon yyyy hh:mm:ss.mmm "
            let (head, rest) = l.split_at(l.find(' ').unwrap());
            format!("{head}{}", &rest[25..])
        };
        assert_eq!(body(lines[0]), format!("{pid}:M * hello 1"));
        assert_eq!(body(lines[1]), format!("{pid}:M # careful key=5"));
        assert_eq!(body(lines[2]), format!("{pid}:S . dbg"));
        assert_eq!(body(lines[3]), format!("{pid}:S # err"));
        assert_eq!(
            body(lines[4]),
            format!("{pid}:S * Running mode=standalone, port=6379.")
        );
        assert!(text.contains("PID: 77"));
        assert!(!text.contains("hidden"));
    }
}
