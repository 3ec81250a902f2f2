//! The redis-check-rdb style report a server prints when its RDB file turns out to
//! be corrupt at start-up, before it exits, as redis-server does: every aux field
//! and database with the offset it was read at, then `--- RDB ERROR DETECTED ---`,
//! where and why, and what had been read. Operators and supervisors grep for it.
//!
//! Owns only reading the file again for the report: it must not touch the keyspace.

use crate::persistence::rdb::file::{self, KeyMeta, LoadError, Visitor};
use crate::persistence::rdb::Limits;
use crate::types::Value;
use std::cell::{Cell, RefCell};
use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;

/// Read the file at `path` (shown as `name`) from the start and describe it, as
/// redis-check-rdb does.
pub fn report(path: &Path, name: &str, limits: &Limits) -> String {
    let offset = Cell::new(0u64);
    let mut check = Check {
        offset: &offset,
        lines: RefCell::new(format!("[offset 0] Checking RDB file {name}\n")),
        now_ms: crate::hlc::unix_ms(),
        keys: 0,
        expires: 0,
        already_expired: 0,
    };
    let read = std::fs::File::open(path)
        .map_err(LoadError::Io)
        .and_then(|f| {
            let reader = Offset {
                inner: std::io::BufReader::new(f),
                offset: &offset,
            };
            file::read(reader, limits, true, &mut check)
        });
    let mut lines = check.lines.into_inner();
    if let Err(e) = read {
        let reason = e.corruption().map_or_else(|| e.to_string(), str::to_string);
        let _ = writeln!(lines, "--- RDB ERROR DETECTED ---");
        let _ = writeln!(lines, "[offset {}] {reason}", offset.get());
        let _ = writeln!(lines, "[additional info] While doing: {}", doing(&e));
        let _ = writeln!(lines, "[info] {} keys read", check.keys);
        let _ = writeln!(lines, "[info] {} expires", check.expires);
        let _ = writeln!(lines, "[info] {} already expired", check.already_expired);
    }
    lines
}

/// What redis-check-rdb says it was doing when the error came.
fn doing(e: &LoadError) -> &'static str {
    match e {
        LoadError::Checksum { .. } => "check-sum",
        LoadError::UnknownType(_) => "read-type",
        LoadError::BadSignature | LoadError::NewerVersion(_) | LoadError::Io(_) => "start",
        LoadError::ModuleAux => "read-module-aux",
        LoadError::PreReleaseFunctions => "read-function",
        _ => "read-object-value",
    }
}

/// Counts what the reader has consumed: the offset the report gives.
struct Offset<'c, R> {
    inner: R,
    offset: &'c Cell<u64>,
}

impl<R: Read> Read for Offset<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.offset.set(self.offset.get() + n as u64);
        Ok(n)
    }
}

struct Check<'c> {
    offset: &'c Cell<u64>,
    lines: RefCell<String>,
    now_ms: u64,
    keys: u64,
    expires: u64,
    already_expired: u64,
}

impl Visitor for Check<'_> {
    fn aux(&mut self, name: &[u8], value: &[u8]) {
        let _ = writeln!(
            self.lines.borrow_mut(),
            "[offset {}] AUX FIELD {} = '{}'",
            self.offset.get(),
            String::from_utf8_lossy(name),
            String::from_utf8_lossy(value)
        );
    }

    fn function(&mut self, _code: Vec<u8>) -> Result<(), LoadError> {
        Ok(())
    }

    fn has_db(&self, db: u64) -> bool {
        let _ = writeln!(
            self.lines.borrow_mut(),
            "[offset {}] Selecting DB ID {db}",
            self.offset.get()
        );
        true
    }

    fn key(
        &mut self,
        _db: usize,
        _key: Vec<u8>,
        _value: Value,
        meta: KeyMeta,
    ) -> Result<(), LoadError> {
        self.keys += 1;
        if meta.expire_at != 0 {
            self.expires += 1;
            if meta.expire_at < self.now_ms {
                self.already_expired += 1;
            }
        }
        Ok(())
    }

    fn warning(&mut self, _message: std::fmt::Arguments<'_>) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_with_a_bad_checksum_is_reported_as_redis_check_rdb_does() {
        let path = std::env::temp_dir().join(format!("kvik-check-{}.rdb", std::process::id()));
        let mut bytes = b"REDIS0010".to_vec();
        bytes.extend_from_slice(&[0xFA, 3, b'a', b'b', b'c', 1, b'x']);
        bytes.extend_from_slice(&[0xFE, 0, 0, 1, b'k', 1, b'v', 0xFF]);
        bytes.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        std::fs::write(&path, &bytes).unwrap();
        let limits = Limits::from(&crate::types::EncodingLimits {
            list_max_listpack_size: -2,
            list_compress_depth: 0,
            hash_max_listpack_entries: 128,
            hash_max_listpack_value: 64,
            set_max_intset_entries: 512,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
        });
        let report = report(&path, "dump.rdb", &limits);
        let _ = std::fs::remove_file(&path);
        let expected = format!(
            "[offset 0] Checking RDB file dump.rdb\n\
             [offset 16] AUX FIELD abc = 'x'\n\
             [offset 18] Selecting DB ID 0\n\
             --- RDB ERROR DETECTED ---\n\
             [offset {}] RDB CRC error\n\
             [additional info] While doing: check-sum\n\
             [info] 1 keys read\n\
             [info] 0 expires\n\
             [info] 0 already expired\n",
            bytes.len()
        );
        assert_eq!(report, expected);
    }
}
