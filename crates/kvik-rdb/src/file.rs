//! RDB files: the `REDIS0010` header, aux fields, function libraries, the per-database
//! sections (SELECTDB, RESIZEDB), the opcodes in front of a key (expiry, LRU idle
//! time, LFU counter), the EOF opcode and the CRC-64 footer.
//!
//! Owns the file's framing, written and read. Values inside it are the value codec's
//! ([`super::encode`], [`super::decode_body`]). Must not touch the keyspace, locks or
//! the scripting engine: a reader hands what it finds to a [`Visitor`], and the
//! caller decides where keys and libraries go and which ones to keep.

use super::io::{
    write_len, write_millis, write_string, ReadSource, Sink, Source, WriteSink, PAST_END,
};
use super::{decode_body, encode, is_module_type, is_value_type, Corrupt, Limits, RDB_VERSION};
use kvik_types::Value;
use std::fmt;
use std::io;

/// The bytes that introduce everything in a file that is not a value.
pub mod opcode {
    pub const FUNCTION2: u8 = 245;
    /// Functions as Redis 7.0's release candidates wrote them; 7.0 refuses them too.
    pub const FUNCTION_PRE_GA: u8 = 246;
    pub const MODULE_AUX: u8 = 247;
    pub const IDLE: u8 = 248;
    pub const FREQ: u8 = 249;
    pub const AUX: u8 = 250;
    pub const RESIZEDB: u8 = 251;
    pub const EXPIRETIME_MS: u8 = 252;
    pub const EXPIRETIME: u8 = 253;
    pub const SELECTDB: u8 = 254;
    pub const EOF: u8 = 255;
}

const MAGIC: &[u8; 5] = b"REDIS";
/// The first version whose files end with a CRC-64.
const FIRST_CHECKSUMMED_VERSION: u16 = 5;

/// What goes in front of a key besides its name and value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyMeta {
    /// Absolute Unix time in ms; 0 for none.
    pub expire_at: u64,
    /// Seconds since the last access, written when the eviction policy is an LRU one.
    pub idle_seconds: Option<u64>,
    /// The LFU counter, written when the eviction policy is an LFU one.
    pub freq: Option<u8>,
    /// The MVCC timestamp of the key's last write, written for active-replication
    /// peers (a full sync they merge by it).
    pub ts: Option<u64>,
}

/// `REDIS0010`, then the aux fields in the order given.
pub fn write_header(out: &mut impl Sink, aux: &[(&str, String)]) {
    out.put(MAGIC);
    out.put(format!("{RDB_VERSION:04}").as_bytes());
    for (name, value) in aux {
        write_aux(out, name.as_bytes(), value.as_bytes());
    }
}

/// One function library, by its code (as Redis 7.0 writes them, uncompressed).
pub fn write_function(out: &mut impl Sink, code: &[u8]) {
    out.put_byte(opcode::FUNCTION2);
    write_string(out, code, false);
}

/// The start of database `db`'s keys, with the counts a loader may size its tables
/// by.
pub fn write_db_start(out: &mut impl Sink, db: usize, keys: usize, volatile: usize) {
    out.put_byte(opcode::SELECTDB);
    write_len(out, db as u64);
    out.put_byte(opcode::RESIZEDB);
    write_len(out, keys as u64);
    write_len(out, volatile as u64);
}

/// The aux fields KeyDB writes after a key for each member deadline it has: the
/// member, then its deadline (Unix ms, in decimal). Redis skips aux fields it does
/// not know, so a file with them still loads there, without the member deadlines.
const SUBEXPIRE_KEY: &[u8] = b"keydb-subexpire-key";
const SUBEXPIRE_WHEN: &[u8] = b"keydb-subexpire-when";

/// kvik's aux fields for active-replication peers (Redis and KeyDB skip them): the
/// timestamp of the key before it, a removed key's tombstone (`<ts>:<key>`), and
/// the timestamp up to which every key of the database is removed (a flush).
const KEY_TS: &[u8] = b"kvik-ts";
const GRAVE: &[u8] = b"kvik-grave";
const GRAVES_FLOOR: &[u8] = b"kvik-graves-floor";
/// After a scheduled script that runs once (KEYDB.CRON ... single): KeyDB's type
/// 64 has no room for that flag, and KeyDB reloads every job as a repeating one.
const CRON_SINGLE: &[u8] = b"kvik-cron-single";
/// A counted key's state (per-node totals), written before the key it belongs to.
pub const COUNTER: &[u8] = b"kvik-counter";
/// The timestamp of the value write a key's TTL was changed since (an active
/// replica's TTL register), written before the key it belongs to; followed by
/// ` unchanged` when only element writes came since, and before the grave of a
/// collection that element writes emptied, by ` deadline <ms>` (the deadline the
/// register keeps for it).
pub const TTL_SINCE: &[u8] = b"kvik-ttl-since";
/// The word of a [`TTL_SINCE`] whose TTL did not change since its value write.
pub const TTL_UNCHANGED: &str = "unchanged";
/// The word of a [`TTL_SINCE`] before the deadline kept under a grave.
pub const TTL_DEADLINE: &str = "deadline";
/// The word of a [`TTL_SINCE`] before each TTL change the register merged that
/// can still decide its deadline: its timestamp and the deadline it set.
pub const TTL_CHANGE: &str = "change";
/// Which writes of each origin the file holds (a full sync between active
/// replicas), among the header's aux fields.
pub const SEEN: &str = "kvik-seen";

/// The state of the counted key written next (its text is the server's).
pub fn write_counter(out: &mut impl Sink, state: &[u8]) {
    write_aux(out, COUNTER, state);
}

/// The value write the TTL register of the key (or grave) written next holds,
/// whether its TTL changed since, under a grave the deadline it keeps, and the
/// TTL changes (timestamp, deadline) that decide it.
pub fn write_ttl_since(
    out: &mut impl Sink,
    since: u64,
    ttl_changed: bool,
    deadline: Option<u64>,
    changes: &[(u64, u64)],
) {
    let mut text = since.to_string();
    if !ttl_changed {
        text.push(' ');
        text.push_str(TTL_UNCHANGED);
    }
    if let Some(deadline) = deadline {
        text.push_str(&format!(" {TTL_DEADLINE} {deadline}"));
    }
    for (ts, deadline) in changes {
        text.push_str(&format!(" {TTL_CHANGE} {ts} {deadline}"));
    }
    write_aux(out, TTL_SINCE, text.as_bytes());
}

/// The element timestamps of the collection written next (active replication;
/// its bytes are the server's).
pub const ELEMENTS: &[u8] = b"kvik-elements";

pub fn write_elements(out: &mut impl Sink, state: &[u8]) {
    write_aux(out, ELEMENTS, state);
}

/// A removed key's tombstone, in the current database.
pub fn write_grave(out: &mut impl Sink, key: &[u8], ts: u64) {
    let mut value = format!("{ts}:").into_bytes();
    value.extend_from_slice(key);
    write_aux(out, GRAVE, &value);
}

/// Every key of the current database is removed up to `ts` (its last flush).
pub fn write_graves_floor(out: &mut impl Sink, ts: u64) {
    write_aux(out, GRAVES_FLOOR, ts.to_string().as_bytes());
}

/// One key: its expiry, access data, then type byte, name and value, then its
/// members' deadlines as KeyDB writes them.
pub fn write_key(out: &mut impl Sink, key: &[u8], value: &Value, meta: KeyMeta, compress: bool) {
    if meta.expire_at != 0 {
        out.put_byte(opcode::EXPIRETIME_MS);
        write_millis(out, meta.expire_at);
    }
    if let Some(idle) = meta.idle_seconds {
        out.put_byte(opcode::IDLE);
        write_len(out, idle);
    }
    if let Some(freq) = meta.freq {
        out.put(&[opcode::FREQ, freq]);
    }
    // The type byte comes before the name: encode the value to a buffer first.
    let mut body = Vec::new();
    encode(value, &mut body, compress);
    out.put_byte(body[0]);
    write_string(out, key, compress);
    out.put(&body[1..]);
    write_value_aux(out, value);
    if let Value::Cron(job) = value {
        // KeyDB schedules a job by a deadline on the member named as the key itself.
        write_aux(out, SUBEXPIRE_KEY, key);
        write_aux(
            out,
            SUBEXPIRE_WHEN,
            job.next_run_ms().to_string().as_bytes(),
        );
    }
    if let Some(ts) = meta.ts {
        write_aux(out, KEY_TS, ts.to_string().as_bytes());
    }
}

/// The aux fields that belong to the value itself, written after it: its members'
/// deadlines (KeyDB's fields) and a job's single-shot flag. A file has them after
/// the key; a DUMP payload after the value, where Redis 7.0's RESTORE ignores them.
pub fn write_value_aux(out: &mut impl Sink, value: &Value) {
    if let Some(deadlines) = value.members().and_then(|c| c.deadlines()) {
        for (member, at) in deadlines.iter() {
            write_aux(out, SUBEXPIRE_KEY, member);
            write_aux(out, SUBEXPIRE_WHEN, at.to_string().as_bytes());
        }
    }
    if matches!(value, Value::Cron(job) if job.single) {
        write_aux(out, CRON_SINGLE, b"1");
    }
}

/// Take in what [`write_value_aux`] wrote after a DUMP payload's value. What does
/// not read as such fields is ignored, as Redis ignores what follows a value.
pub fn read_value_aux<'a>(src: &mut impl Source<'a>, value: Value) -> Value {
    let mut held = HeldKey::default();
    held.hold(0, Vec::new(), value, KeyMeta::default());
    while src.left().is_some_and(|left| left > 0) {
        if src.byte() != Ok(opcode::AUX) {
            break;
        }
        let (Ok(name), Ok(text)) = (src.string(), src.string()) else {
            break;
        };
        let _ = held.member_deadline(&name, &text) || held.cron_single(&name);
    }
    let (_, _, value, _) = held.key.take().expect("held above");
    value
}

fn write_aux(out: &mut impl Sink, name: &[u8], value: &[u8]) {
    out.put_byte(opcode::AUX);
    write_string(out, name, false);
    write_string(out, value, false);
}

/// End a file: the EOF opcode and the CRC-64 of everything before the footer (zeros
/// when `checksum` is off, `rdbchecksum no`, which tells loaders not to check); then
/// flush. The writer back, or the first write error met.
pub fn finish<W: io::Write>(mut out: WriteSink<W>, checksum: bool) -> io::Result<W> {
    out.put_byte(opcode::EOF);
    let crc = if checksum { out.crc() } else { 0 };
    out.put(&crc.to_le_bytes());
    out.finish()
}

/// Why a file could not be loaded; `Display` gives the log line Redis 7.0 writes for
/// the same problem where it has one.
#[derive(Debug)]
pub enum LoadError {
    /// The file could not be opened or read.
    Io(io::Error),
    BadSignature,
    NewerVersion(u16),
    /// The file ended early.
    ShortRead,
    Checksum {
        expected: u64,
        got: u64,
    },
    /// A database number beyond `databases`.
    DbOutOfRange(u64),
    ModuleAux,
    ModuleValue,
    PreReleaseFunctions,
    UnknownType(u8),
    Corrupt(&'static str),
    /// The caller refused something it was handed (a duplicate key, a library that
    /// does not compile).
    Refused(String),
}

impl From<Corrupt> for LoadError {
    fn from(c: Corrupt) -> Self {
        if c == PAST_END {
            LoadError::ShortRead
        } else {
            LoadError::Corrupt(c.0)
        }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Io(e) => write!(f, "Fatal error loading the DB: {e}. Exiting."),
            LoadError::BadSignature => f.write_str("Wrong signature trying to load DB from file"),
            LoadError::NewerVersion(v) => write!(f, "Can't handle RDB format version {v}"),
            LoadError::ShortRead => f.write_str(
                "Short read or OOM loading DB. Unrecoverable error, aborting now.",
            ),
            LoadError::Checksum { expected, got } => write!(
                f,
                "Wrong RDB checksum expected: ({expected:x}) but got ({got:x}). Aborting now."
            ),
            LoadError::DbOutOfRange(db) => write!(
                f,
                "FATAL: Data file was created with a Redis server configured to handle more than {db} databases. Exiting"
            ),
            LoadError::ModuleAux => f.write_str(
                "The RDB file contains AUX module data I can't load: no matching module",
            ),
            LoadError::ModuleValue => f.write_str(
                "The RDB file contains module data I can't load: no matching module",
            ),
            LoadError::PreReleaseFunctions => {
                f.write_str("Pre-release function format not supported.")
            }
            LoadError::UnknownType(t) => write!(f, "Unknown RDB encoding type {t}"),
            LoadError::Corrupt(why) => write!(
                f,
                "Corrupt RDB file ({why}). Unrecoverable error, aborting now."
            ),
            LoadError::Refused(why) => f.write_str(why),
        }
    }
}

impl LoadError {
    /// What Redis's report of a corrupt file names as the error (its `Internal error
    /// in RDB reading ... -> <reason>` line, which operators grep for), when the
    /// file itself is at fault.
    pub fn corruption(&self) -> Option<&'static str> {
        match self {
            LoadError::Checksum { .. } => Some("RDB CRC error"),
            LoadError::ShortRead => Some("Unexpected EOF reading RDB file"),
            LoadError::Corrupt(why) => Some(why),
            LoadError::UnknownType(_) => Some("Unknown RDB encoding type"),
            _ => None,
        }
    }
}

/// Where a loaded file's contents go.
pub trait Visitor {
    /// An aux field (`redis-ver`, `ctime`, ...): for the log, nothing depends on it.
    fn aux(&mut self, name: &[u8], value: &[u8]);
    /// A function library's code.
    fn function(&mut self, code: Vec<u8>) -> Result<(), LoadError>;
    /// Is `db` a database this server has?
    fn has_db(&self, db: u64) -> bool;
    /// The file says how many keys (and keys with a deadline) database `db` holds
    /// (RESIZEDB), so that its tables can be sized once instead of growing key by
    /// key. A hint only: a corrupt file can lie.
    fn db_size_hint(&mut self, _db: usize, _keys: u64, _volatile: u64) {}
    /// One key of database `db`.
    fn key(
        &mut self,
        db: usize,
        key: Vec<u8>,
        value: Value,
        meta: KeyMeta,
    ) -> Result<(), LoadError>;
    /// A line Redis writes to its log at `warning` level while loading (a key left
    /// out because its collection is empty): the reader decides what and when, the
    /// caller writes it wherever its log goes.
    fn warning(&mut self, message: std::fmt::Arguments<'_>);
    /// A removed key's tombstone in database `db` (files made for active-replication
    /// peers).
    fn grave(&mut self, _db: usize, _key: &[u8], _ts: u64) {}
    /// Every key of database `db` is removed up to `ts`.
    fn graves_floor(&mut self, _db: usize, _ts: u64) {}
}

/// Read a whole file from `reader`, handing its contents to `visitor`. The CRC-64
/// footer is checked when `verify_checksum` (`rdbchecksum yes`) and the file has a
/// non-zero one.
pub fn read(
    reader: impl io::Read,
    limits: &Limits,
    verify_checksum: bool,
    visitor: &mut impl Visitor,
) -> Result<(), LoadError> {
    let mut src = ReadSource::new(reader);
    let version = read_version(&mut src)?;
    let mut db = 0usize;
    let mut meta = KeyMeta::default();
    let mut empty_skipped = 0;
    let mut held = HeldKey::default();
    loop {
        let op = src.byte()?;
        if op == opcode::AUX {
            let name = src.string()?;
            let value = src.string()?;
            if held.member_deadline(&name, &value)
                || held.timestamp(&name, &value)
                || held.cron_single(&name)
            {
                continue;
            }
            held.release(visitor)?;
            if !read_grave(db, &name, &value, visitor) {
                visitor.aux(&name, &value);
            }
            continue;
        }
        held.release(visitor)?;
        match op {
            opcode::EOF => break,
            opcode::SELECTDB => {
                let n = src.length()?;
                if !visitor.has_db(n) {
                    return Err(LoadError::DbOutOfRange(n));
                }
                db = n as usize;
            }
            opcode::RESIZEDB => {
                let keys = src.length()?;
                let volatile = src.length()?;
                visitor.db_size_hint(db, keys, volatile);
            }
            opcode::EXPIRETIME => {
                let secs = i32::from_le_bytes(src.array()?);
                meta.expire_at = (i64::from(secs) * 1000).max(1) as u64;
            }
            opcode::EXPIRETIME_MS => meta.expire_at = src.millis()?.max(1),
            opcode::IDLE => meta.idle_seconds = Some(src.length()?),
            opcode::FREQ => meta.freq = Some(src.byte()?),
            opcode::FUNCTION2 => visitor.function(src.string()?.into_owned())?,
            opcode::FUNCTION_PRE_GA => return Err(LoadError::PreReleaseFunctions),
            opcode::MODULE_AUX => return Err(LoadError::ModuleAux),
            t if is_module_type(t) => return Err(LoadError::ModuleValue),
            t if is_value_type(t) => {
                let key = src.string()?.into_owned();
                let key_meta = std::mem::take(&mut meta);
                match decode_body(t, &mut src, limits) {
                    Ok(value) => held.hold(db, key, value, key_meta),
                    Err(Corrupt::EMPTY_COLLECTION) => {
                        skip_empty_key(&key, &mut empty_skipped, visitor)
                    }
                    Err(corrupt) => return Err(corrupt.into()),
                }
            }
            t => return Err(LoadError::UnknownType(t)),
        }
    }
    if version >= FIRST_CHECKSUMMED_VERSION {
        let expected = src.crc();
        let got = u64::from_le_bytes(src.array()?);
        if verify_checksum && got != 0 && got != expected {
            return Err(LoadError::Checksum { expected, got });
        }
    }
    Ok(())
}

/// The key read last, held back until what follows it is known: KeyDB writes a
/// key's member deadlines after it, as aux fields, which apply to it.
#[derive(Default)]
struct HeldKey {
    key: Option<(usize, Vec<u8>, Value, KeyMeta)>,
    /// The member named by a `keydb-subexpire-key` field, until its `-when` comes.
    member: Option<Vec<u8>>,
}

impl HeldKey {
    fn hold(&mut self, db: usize, key: Vec<u8>, value: Value, meta: KeyMeta) {
        self.key = Some((db, key, value, meta));
    }

    /// Take in the aux field `name` if it is one of KeyDB's member deadline fields
    /// (true). A deadline for a member the held value lacks, or that does not read
    /// as a time, is dropped, as KeyDB's loader drops what it cannot apply.
    fn member_deadline(&mut self, name: &[u8], value: &[u8]) -> bool {
        if name == SUBEXPIRE_KEY {
            self.member = Some(value.to_vec());
            return true;
        }
        if name != SUBEXPIRE_WHEN {
            return false;
        }
        let at = std::str::from_utf8(value)
            .ok()
            .and_then(|v| v.parse::<u64>().ok());
        let collection = self.key.as_mut().and_then(|(_, _, v, _)| v.members_mut());
        if let (Some(member), Some(at), Some(collection)) = (self.member.take(), at, collection) {
            if collection.has_member(&member) {
                collection.set_deadline(&member, at);
            }
        }
        true
    }

    /// Take in the aux field `name` if it marks the held job as single-shot (true).
    fn cron_single(&mut self, name: &[u8]) -> bool {
        if name != CRON_SINGLE {
            return false;
        }
        if let Some((_, _, Value::Cron(job), _)) = self.key.as_mut() {
            job.single = true;
        }
        true
    }

    /// Take in the aux field `name` if it is the held key's timestamp (true).
    fn timestamp(&mut self, name: &[u8], value: &[u8]) -> bool {
        if name != KEY_TS {
            return false;
        }
        let ts = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
        if let Some((_, _, _, meta)) = self.key.as_mut() {
            meta.ts = ts;
        }
        true
    }

    /// Hand the held key, if any, to the visitor.
    fn release(&mut self, visitor: &mut impl Visitor) -> Result<(), LoadError> {
        self.member = None;
        match self.key.take() {
            Some((db, key, value, meta)) => visitor.key(db, key, value, meta),
            None => Ok(()),
        }
    }
}

/// Hand a tombstone field to the visitor (true), or say it is none. A malformed
/// one is dropped.
fn read_grave(db: usize, name: &[u8], value: &[u8], visitor: &mut impl Visitor) -> bool {
    let number = |text: &[u8]| std::str::from_utf8(text).ok()?.parse::<u64>().ok();
    if name == GRAVES_FLOOR {
        if let Some(ts) = number(value) {
            visitor.graves_floor(db, ts);
        }
        return true;
    }
    if name != GRAVE {
        return false;
    }
    if let Some(colon) = value.iter().position(|&b| b == b':') {
        if let Some(ts) = number(&value[..colon]) {
            visitor.grave(db, &value[colon + 1..], ts);
        }
    }
    true
}

/// Warn of a key left out because its collection is empty, the first ten times, as
/// Redis does.
fn skip_empty_key(key: &[u8], skipped: &mut usize, visitor: &mut impl Visitor) {
    if *skipped < 10 {
        visitor.warning(format_args!(
            "rdbLoadObject skipping empty key: {}",
            String::from_utf8_lossy(key)
        ));
    }
    *skipped += 1;
}

/// The magic and the version after it, which must be one kvik reads.
fn read_version(src: &mut ReadSource<impl io::Read>) -> Result<u16, LoadError> {
    let head: [u8; 9] = src.array()?;
    if &head[..5] != MAGIC {
        return Err(LoadError::BadSignature);
    }
    let digits = std::str::from_utf8(&head[5..]).map_err(|_| LoadError::BadSignature)?;
    let version: u16 = digits.parse().map_err(|_| LoadError::BadSignature)?;
    if version == 0 || version > RDB_VERSION {
        return Err(LoadError::NewerVersion(version));
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::super::tests::limits;
    use super::*;
    use kvik_types::string::StrValue;
    use proptest::prelude::*;

    /// Collects what a file holds.
    #[derive(Default)]
    struct Collect {
        keys: Vec<(usize, Vec<u8>, KeyMeta)>,
        graves: Vec<(usize, Vec<u8>, u64)>,
        floors: Vec<(usize, u64)>,
        values: Vec<Value>,
        aux: Vec<Vec<u8>>,
        functions: Vec<Vec<u8>>,
        warnings: Vec<String>,
    }

    impl Visitor for Collect {
        fn aux(&mut self, name: &[u8], _value: &[u8]) {
            self.aux.push(name.to_vec());
        }
        fn function(&mut self, code: Vec<u8>) -> Result<(), LoadError> {
            self.functions.push(code);
            Ok(())
        }
        fn has_db(&self, db: u64) -> bool {
            db < 16
        }
        fn grave(&mut self, db: usize, key: &[u8], ts: u64) {
            self.graves.push((db, key.to_vec(), ts));
        }

        fn graves_floor(&mut self, db: usize, ts: u64) {
            self.floors.push((db, ts));
        }

        fn key(
            &mut self,
            db: usize,
            key: Vec<u8>,
            value: Value,
            meta: KeyMeta,
        ) -> Result<(), LoadError> {
            self.keys.push((db, key, meta));
            self.values.push(value);
            Ok(())
        }
        fn warning(&mut self, message: std::fmt::Arguments<'_>) {
            self.warnings.push(message.to_string());
        }
    }

    fn sample_file(checksum: bool) -> Vec<u8> {
        let mut out = WriteSink::new(Vec::new());
        write_header(&mut out, &[("redis-ver", "7.0.15".into())]);
        write_function(&mut out, b"#!lua name=l\nreturn 1");
        write_db_start(&mut out, 3, 2, 1);
        let value = Value::Str(StrValue::from_bytes(&b"v".repeat(40)));
        let meta = KeyMeta {
            expire_at: 1_700_000_000_123,
            idle_seconds: Some(7),
            freq: None,
            ts: Some(42 << 20),
        };
        write_key(&mut out, b"a", &value, meta, true);
        write_key(&mut out, b"12", &value, KeyMeta::default(), true);
        finish(out, checksum).unwrap()
    }

    fn read_all(bytes: &[u8]) -> Result<Collect, LoadError> {
        let mut collect = Collect::default();
        read(bytes, &limits(), true, &mut collect).map(|()| collect)
    }

    #[test]
    fn timestamps_and_tombstones_travel_as_aux_fields() {
        let mut out = WriteSink::new(Vec::new());
        write_header(&mut out, &[]);
        write_db_start(&mut out, 2, 1, 0);
        let value = Value::Str(StrValue::from_bytes(b"v"));
        let meta = KeyMeta {
            ts: Some(7 << 20),
            ..KeyMeta::default()
        };
        write_key(&mut out, b"k", &value, meta, false);
        write_graves_floor(&mut out, 5 << 20);
        write_grave(&mut out, b"gone:with:colons", 9 << 20);
        let bytes = finish(out, true).unwrap();
        let got = read_all(&bytes).unwrap();
        assert_eq!(got.keys, [(2, b"k".to_vec(), meta)]);
        assert_eq!(got.floors, [(2, 5 << 20)]);
        assert_eq!(got.graves, [(2, b"gone:with:colons".to_vec(), 9 << 20)]);
        assert!(got.aux.is_empty(), "kvik's fields are not plain aux fields");
    }

    #[test]
    fn member_deadlines_follow_their_key_as_keydbs_aux_fields() {
        use kvik_types::set::Set;
        let mut set = Set::default();
        for m in [&b"a"[..], b"b", b"c"] {
            set.insert(m, 512);
        }
        let mut value = Value::Set(Box::new(set));
        let members = value.members_mut().unwrap();
        members.set_deadline(b"a", 4_102_444_800_000);
        members.set_deadline(b"c", 5);
        let mut out = WriteSink::new(Vec::new());
        write_header(&mut out, &[("redis-ver", "7.0.15".into())]);
        write_db_start(&mut out, 0, 2, 0);
        write_key(&mut out, b"s", &value, KeyMeta::default(), false);
        let plain = Value::Str(StrValue::from_bytes(b"v"));
        write_key(&mut out, b"t", &plain, KeyMeta::default(), false);
        let bytes = finish(out, true).unwrap();
        let got = read_all(&bytes).unwrap();
        assert_eq!(got.values.len(), 2);
        let members = got.values[0].members().unwrap();
        assert_eq!(members.deadline_of(b"a"), Some(4_102_444_800_000));
        assert_eq!(members.deadline_of(b"b"), None);
        assert_eq!(members.deadline_of(b"c"), Some(5));
        // The fields are taken in, not shown as aux fields.
        assert_eq!(got.aux, [b"redis-ver".to_vec()]);
    }

    #[test]
    fn cron_jobs_are_keydbs_type_64_with_their_schedule_and_single_flag() {
        use kvik_types::cron::CronJob;
        let job = |single| {
            Value::Cron(Box::new(CronJob {
                script: b"redis.call('incr', KEYS[1])".to_vec(),
                start_ms: 1_700_000_000_000,
                interval_ms: 250,
                keys: vec![b"counter".to_vec()],
                args: vec![b"a1".to_vec(), b"a2".to_vec()],
                single,
            }))
        };
        let mut out = WriteSink::new(Vec::new());
        write_header(&mut out, &[]);
        write_db_start(&mut out, 0, 2, 0);
        write_key(&mut out, b"once", &job(true), KeyMeta::default(), false);
        write_key(&mut out, b"again", &job(false), KeyMeta::default(), false);
        let bytes = finish(out, true).unwrap();
        // KeyDB's layout: type 64 before the name.
        let at = bytes.windows(5).position(|w| w == b"\x04once").unwrap();
        assert_eq!(bytes[at - 1], 64);
        let got = read_all(&bytes).unwrap();
        assert_eq!(got.values, [job(true), job(false)]);
        assert!(got.aux.is_empty(), "the schedule fields are taken in");
    }

    #[test]
    fn files_round_trip_with_their_opcodes() {
        let got = read_all(&sample_file(true)).unwrap();
        assert_eq!(got.functions, [b"#!lua name=l\nreturn 1".to_vec()]);
        assert_eq!(got.keys.len(), 2);
        assert_eq!(got.keys[0].0, 3);
        assert_eq!(got.keys[0].2.expire_at, 1_700_000_000_123);
        assert_eq!(got.keys[0].2.idle_seconds, Some(7));
        assert_eq!(got.keys[1].1, b"12");
        // No checksum: zeros, and the loader does not check.
        assert!(sample_file(false).ends_with(&[0; 8]));
        assert!(read_all(&sample_file(false)).is_ok());
    }

    #[test]
    fn empty_collections_are_skipped_as_redis_skips_them() {
        let mut out = WriteSink::new(Vec::new());
        write_header(&mut out, &[]);
        write_db_start(&mut out, 0, 2, 0);
        for kind in [0x01, 0x02, 0x03, 0x04] {
            out.put_byte(kind);
            crate::io::write_string(&mut out, b"empty", false);
            out.put_byte(0);
        }
        let value = Value::Str(StrValue::from_bytes(b"v"));
        write_key(&mut out, b"kept", &value, KeyMeta::default(), false);
        let got = read_all(&finish(out, true).unwrap()).unwrap();
        let keys: Vec<&[u8]> = got.keys.iter().map(|(_, key, _)| &key[..]).collect();
        assert_eq!(keys, [b"kept"]);
        assert_eq!(got.warnings, ["rdbLoadObject skipping empty key: empty"; 4]);
    }

    #[test]
    fn empty_keys_are_reported_the_first_ten_times() {
        let mut out = WriteSink::new(Vec::new());
        write_header(&mut out, &[]);
        write_db_start(&mut out, 0, 12, 0);
        for _ in 0..12 {
            out.put_byte(0x02);
            crate::io::write_string(&mut out, b"empty", false);
            out.put_byte(0);
        }
        let got = read_all(&finish(out, true).unwrap()).unwrap();
        assert!(got.keys.is_empty());
        assert_eq!(got.warnings.len(), 10);
    }

    #[test]
    fn bad_files_get_their_errors() {
        let good = sample_file(true);
        let short = read_all(&good[..good.len() - 3]);
        assert!(matches!(short, Err(LoadError::ShortRead)));
        let mut bad_crc = good.clone();
        let last = bad_crc.len() - 1;
        bad_crc[last] ^= 1;
        assert!(matches!(
            read_all(&bad_crc),
            Err(LoadError::Checksum { .. })
        ));
        assert!(matches!(
            read_all(b"REDIS0011\xff"),
            Err(LoadError::NewerVersion(11))
        ));
        assert!(matches!(
            read_all(b"RADIS0009"),
            Err(LoadError::BadSignature)
        ));
        // Old files: version 4 has no checksum, EXPIRETIME in seconds.
        let old = b"REDIS0004\xfe\x00\xfd\x10\x00\x00\x00\x00\x01k\x01v\xff";
        let got = read_all(old).unwrap();
        assert_eq!(got.keys[0].2.expire_at, 16_000);
        assert!(matches!(
            read_all(b"REDIS0010\xf7"),
            Err(LoadError::ModuleAux)
        ));
        assert!(matches!(
            read_all(b"REDIS0010\xf6"),
            Err(LoadError::PreReleaseFunctions)
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// A valid file with bytes overwritten, cut short or both: an error or a load,
        /// never a panic.
        #[test]
        fn mutated_files_never_panic(
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
            cut in any::<prop::sample::Index>(),
            checksum in any::<bool>(),
        ) {
            let mut bytes = sample_file(checksum);
            for (at, byte) in edits {
                let at = at.index(bytes.len());
                bytes[at] = byte;
            }
            let keep = cut.index(bytes.len() + 1);
            let _ = read_all(&bytes[..keep]);
        }
    }
}
