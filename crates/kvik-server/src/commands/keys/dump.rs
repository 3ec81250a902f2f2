//! DUMP and RESTORE: a key's value as Redis's serialized form, and back.
//!
//! The payload is the RDB encoding of the value ([`crate::persistence::rdb`]), so
//! values move both ways between kvik and Redis 7.0. RESTORE checks the payload
//! whole before it changes anything: a refused payload leaves the keyspace as it was.

use super::super::{args, errors, CmdError, CmdResult, Ctx};
use crate::notify::class;
use crate::persistence::rdb::payload::{self, Refused};
use crate::persistence::rdb::Limits;

const BUSYKEY: &str = "BUSYKEY Target key name already exists.";
const BAD_PAYLOAD: &str = "ERR DUMP payload version or checksum are wrong";
const BAD_DATA: &str = "ERR Bad data format";
const BAD_TTL: &str = "ERR Invalid TTL value, must be >= 0";
const BAD_IDLETIME: &str = "ERR Invalid IDLETIME value, must be >= 0";
const BAD_FREQ: &str = "ERR Invalid FREQ value, must be >= 0 and <= 255";

/// DUMP key: the serialized value, or null when the key does not exist.
pub(super) fn dump(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let compress = ctx.server.config.read().rdbcompression;
    match ctx.keys.read(args[1]) {
        Some(entry) => {
            let payload = payload::dump(&entry.value, compress);
            ctx.out.bulk(&payload);
        }
        None => ctx.out.null(),
    }
    Ok(())
}

/// RESTORE's options after the payload.
#[derive(Default)]
struct Options {
    replace: bool,
    absolute_ttl: bool,
    idle_seconds: Option<u64>,
    freq: Option<u8>,
}

impl Options {
    /// Parse the options as Redis does: IDLETIME and FREQ exclude each other (the
    /// second is a syntax error), and a bad value is refused where it stands.
    fn parse(options: &[&[u8]]) -> Result<Options, CmdError> {
        let mut parsed = Options::default();
        let mut i = 0;
        while i < options.len() {
            let has_value = i + 1 < options.len();
            let option = options[i];
            if args::is(option, "REPLACE") {
                parsed.replace = true;
            } else if args::is(option, "ABSTTL") {
                parsed.absolute_ttl = true;
            } else if args::is(option, "IDLETIME") && has_value && parsed.freq.is_none() {
                let idle = args::int(options[i + 1])?;
                parsed.idle_seconds = Some(u64::try_from(idle).map_err(|_| BAD_IDLETIME)?);
                i += 1;
            } else if args::is(option, "FREQ") && has_value && parsed.idle_seconds.is_none() {
                let freq = args::int(options[i + 1])?;
                parsed.freq = Some(u8::try_from(freq).map_err(|_| BAD_FREQ)?);
                i += 1;
            } else {
                return Err(errors::SYNTAX.into());
            }
            i += 1;
        }
        Ok(parsed)
    }
}

/// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ
/// frequency]. A TTL already past deletes the key instead (when REPLACE found one)
/// and answers OK all the same. A relative TTL propagates as the absolute time it
/// became, so replicas and the AOF expire the key at the same moment.
pub(super) fn restore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let options = Options::parse(&args[4..])?;
    if !options.replace && ctx.keys.get(key).is_some() {
        return Err(BUSYKEY.into());
    }
    let ttl = args::int(args[2])?;
    if ttl < 0 {
        return Err(BAD_TTL.into());
    }
    let limits = Limits::from(&ctx.server.hot.encoding());
    let checksum = ctx.server.debug.payload_checksum();
    let value = payload::restore(args[3], &limits, checksum).map_err(|refused| match refused {
        Refused::VersionOrChecksum => BAD_PAYLOAD,
        Refused::BadData => BAD_DATA,
    })?;
    let replaced = options.replace && delete(ctx, key);
    // A whole value: its TTL register starts over, even when the key is stamped
    // as before (a peer's repair, a copy of the key's last write).
    let db = ctx.keys.db;
    ctx.keys.restart_ttl_register(db, key);
    let now = ctx.keys.now_ms;
    let expire_at = match (ttl, options.absolute_ttl) {
        (0, _) => 0,
        (at, true) => at as u64,
        (relative, false) => now.saturating_add(relative as u64),
    };
    if expire_at != 0 && expire_at <= now {
        if replaced {
            ctx.propagate(&[b"DEL", key]);
            ctx.keys.notify(class::GENERIC, "del", key);
        }
        ctx.out.ok();
        return Ok(());
    }
    ctx.keys.set(key, value, expire_at);
    set_access(ctx, key, &options);
    ctx.keys.notify(class::GENERIC, "restore", key);
    if expire_at != 0 && !options.absolute_ttl {
        propagate_absolute(ctx, args, expire_at);
    }
    ctx.out.ok();
    Ok(())
}

/// Remove `key` if it exists; whether it did.
fn delete(ctx: &mut Ctx, key: &[u8]) -> bool {
    match ctx.keys.remove(key) {
        Some(entry) => {
            entry.free(ctx.server.keyspace.lazy(crate::lazyfree::Cause::ServerDel));
            true
        }
        None => false,
    }
}

/// Give the restored key the access clock IDLETIME or FREQ asked for, without
/// the lookup counting as an access.
fn set_access(ctx: &mut Ctx, key: &[u8], options: &Options) {
    let (clock, now) = (ctx.keys.clock(), ctx.keys.now_ms);
    let Some(access) = clock.restored(options.idle_seconds, options.freq, now) else {
        return;
    };
    let touching = std::mem::replace(&mut ctx.keys.touch, false);
    if let Some(entry) = ctx.keys.get(key) {
        entry.access = access;
    }
    ctx.keys.touch = touching;
}

/// Propagate the command with its TTL made the absolute `expire_at` (and ABSTTL
/// added), as Redis does.
fn propagate_absolute(ctx: &mut Ctx, args: &[&[u8]], expire_at: u64) {
    let mut digits = itoa::Buffer::new();
    let mut argv: Vec<&[u8]> = args.to_vec();
    argv[2] = digits.format(expire_at).as_bytes();
    argv.push(b"ABSTTL");
    ctx.propagate(&argv);
}
