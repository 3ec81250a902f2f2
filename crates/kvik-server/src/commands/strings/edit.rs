//! Lengths and byte ranges: STRLEN, GETRANGE (and its old name SUBSTR), APPEND and
//! SETRANGE.
//!
//! APPEND and SETRANGE change a string in place, which makes it `raw` (a growable
//! buffer) whatever it was, as in Redis; a string they create from nothing is `raw`
//! too, except that APPEND to a missing key stores its argument the way SET would.
//! Neither may grow a string past proto-max-bulk-len. Both propagate as sent when
//! they change something, even if only the encoding (APPEND of nothing).

use super::read_string;
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::notify::class;
use crate::types::string::StrValue;
use crate::types::Value;
use crate::util::thin_buf::ThinBuf;
use std::ops::Range;
use std::sync::atomic::Ordering;

pub fn strlen(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let len = read_string(ctx.keys, args[1])?.map_or(0, StrValue::len);
    ctx.out.int(len as i64);
    Ok(())
}

pub fn getrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let start = args::int(args[2])?;
    let end = args::int(args[3])?;
    let Some(value) = read_string(ctx.keys, args[1])? else {
        ctx.out.bulk(b"");
        return Ok(());
    };
    let mut digits = itoa::Buffer::new();
    let bytes = value.bytes(&mut digits);
    let range = byte_range(bytes.len(), start, end).unwrap_or_default();
    ctx.out.bulk(&bytes[range]);
    Ok(())
}

/// The bytes GETRANGE returns from a string of `len` bytes: negative indexes count
/// from the end, both ends are clamped to the string, and `None` means nothing. Two
/// negative indexes in the wrong order select nothing even where clamping would make
/// them meet.
fn byte_range(len: usize, start: i64, end: i64) -> Option<Range<usize>> {
    if start < 0 && end < 0 && start > end {
        return None;
    }
    let len = len as i64;
    let from_end = |i: i64| if i < 0 { (len + i).max(0) } else { i };
    let (start, end) = (from_end(start), from_end(end).min(len - 1));
    (len > 0 && start <= end).then(|| start as usize..end as usize + 1)
}

pub fn append(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, tail) = (args[1], args[2]);
    let max = max_string_len(ctx);
    let len = match ctx.keys.get(key) {
        None => {
            ctx.keys.set(key, Value::Str(StrValue::from_bytes(tail)), 0);
            tail.len()
        }
        Some(entry) => {
            let value = entry
                .value
                .as_str_mut()
                .ok_or(CmdError::from(errors::WRONGTYPE))?;
            let total = checked_total(value.len() as u64, tail.len() as u64, max)?;
            value.make_raw().extend_from_slice(tail);
            ctx.keys.modified(key);
            total
        }
    };
    ctx.keys.notify(class::STRING, "append", key);
    ctx.out.int(len as i64);
    Ok(())
}

/// SETRANGE writes `patch` at `offset`, padding with zero bytes as needed. An empty
/// patch changes nothing, not even a missing key into an empty one.
pub fn setrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, patch) = (args[1], args[3]);
    let offset = args::int(args[2])?;
    if offset < 0 {
        return Err("ERR offset is out of range".into());
    }
    let offset = offset as u64;
    let max = max_string_len(ctx);
    let len = match ctx.keys.get(key) {
        None if patch.is_empty() => 0,
        None => {
            let total = checked_total(offset, patch.len() as u64, max)?;
            let mut buf = ThinBuf::with_capacity(total);
            write_at(&mut buf, offset as usize, patch, total);
            ctx.keys.set(key, Value::Str(StrValue::Raw(buf)), 0);
            ctx.keys.notify(class::STRING, "setrange", key);
            total
        }
        Some(entry) => {
            let value = entry
                .value
                .as_str_mut()
                .ok_or(CmdError::from(errors::WRONGTYPE))?;
            if patch.is_empty() {
                value.len()
            } else {
                let total = checked_total(offset, patch.len() as u64, max)?;
                let buf = value.make_raw();
                write_at(buf, offset as usize, patch, total);
                let len = buf.len();
                ctx.keys.modified(key);
                ctx.keys.notify(class::STRING, "setrange", key);
                len
            }
        }
    };
    ctx.out.int(len as i64);
    Ok(())
}

/// Copy `patch` into `buf` at `offset`, first zero-extending `buf` to `end` bytes if
/// it is shorter.
fn write_at(buf: &mut ThinBuf, offset: usize, patch: &[u8], end: usize) {
    if buf.len() < end {
        buf.resize_zeroed(end);
    }
    buf[offset..end].copy_from_slice(patch);
}

/// The longest string a command may build (proto-max-bulk-len).
fn max_string_len(ctx: &Ctx) -> u64 {
    ctx.server.hot.proto_max_bulk_len.load(Ordering::Relaxed)
}

/// `current + added`, if the result is no longer than `max`.
fn checked_total(current: u64, added: u64, max: u64) -> Result<usize, CmdError> {
    match current.checked_add(added) {
        Some(total) if total <= max => Ok(total as usize),
        _ => Err(errors::STRING_TOO_LONG.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::byte_range;

    #[test]
    fn ranges_follow_redis() {
        assert_eq!(byte_range(11, 0, 4), Some(0..5));
        assert_eq!(byte_range(11, -5, -1), Some(6..11));
        assert_eq!(byte_range(11, 6, 100), Some(6..11));
        assert_eq!(byte_range(11, 100, 200), None);
        assert_eq!(byte_range(11, 5, 2), None);
        assert_eq!(byte_range(11, -100, 2), Some(0..3));
        assert_eq!(byte_range(11, -100, -50), Some(0..1));
        assert_eq!(byte_range(11, -1, -2), None);
        assert_eq!(byte_range(11, -1, 0), None);
        assert_eq!(byte_range(0, 0, -1), None);
        assert_eq!(byte_range(0, -1, -1), None);
        assert_eq!(byte_range(11, i64::MIN, i64::MAX), Some(0..11));
        assert_eq!(byte_range(11, i64::MAX, i64::MAX), None);
    }
}
