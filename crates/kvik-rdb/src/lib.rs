//! kvik-rdb: Redis's RDB encoding of values: what DUMP returns, RESTORE accepts, and
//! RDB files and full resyncs will carry.
//!
//! Owns the value codec: the type byte and body of every type ([`encode`],
//! [`decode`]), the packed formats inside them (listpack, ziplist, intset, zipmap),
//! the RDB primitives ([`io`]) and the DUMP envelope ([`payload`]). Must not touch
//! the keyspace, locks, clients or commands: it turns values into bytes and bytes
//! into values; callers decide where they come from and go.
//!
//! Layer rule: imports `kvik-types` (the values it encodes) and `kvik-util`, nothing
//! else of kvik's own. What it has to tell the server (a key skipped while loading a
//! file) goes through the [`file::Visitor`] its caller implements, not through the
//! server's logging.
//!
//! kvik writes what Redis 7.0 writes at RDB version 10, picking the compact form
//! where Redis would, so that Redis 7.0 loads it: strings (integer-encoded, plain, or
//! LZF-compressed past 20 bytes when that saves at least 4), lists as quicklists of
//! listpack nodes, sets as an intset or a plain member list, hashes and sorted sets
//! as a listpack or a plain list (binary-double scores), streams with their consumer
//! groups. It reads every type Redis 7.0 reads, back to the zipmaps of Redis 2.x,
//! plus the two forms Redis 7.2 added (sets as listpacks, consumers' active time).
//! Member deadlines (KeyDB's EXPIREMEMBER) go after their key as KeyDB 6.3's aux
//! fields, which Redis skips ([`file`]). KeyDB's scheduled scripts (KEYDB.CRON) are
//! KeyDB's type 64, which KeyDB reads and Redis refuses, as it refuses KeyDB's.
//!
//! Reading works over a [`io::Source`]: a buffer read in place ([`io::Bytes`], DUMP
//! payloads) or any `io::Read` ([`io::ReadSource`], for files and resyncs). Writing
//! goes to a [`io::Sink`]: a `Vec<u8>` or any `io::Write` ([`io::WriteSink`]). The
//! streaming ends keep the running CRC-64 an RDB file ends with.
//!
//! Everything read is checked as Redis's deep sanitization checks it, always (kvik
//! behaves as `sanitize-dump-payload yes`): every length, offset and back-link of
//! the packed formats, duplicates in sets, hashes and sorted sets, NaN scores, empty
//! collections, the structure of stream nodes and the cross-references of consumer
//! groups. A value kvik's own types could not represent faithfully (stream entries
//! out of ID order, a length that disagrees with the entries) is refused too. Bad
//! input is a [`Corrupt`] error, never a panic, and nothing is allocated from a
//! declared count before the bytes behind it have been seen.

mod decode;
mod encode;
pub mod file;
mod intset;
pub mod io;
mod listpack;
pub mod payload;
mod stream;
#[cfg(test)]
mod tests;
mod ziplist;
mod zipmap;

pub use decode::{decode, decode_body, is_module_type, is_value_type, Limits};
pub use encode::encode;

/// The RDB version kvik writes: Redis 7.0's.
pub const RDB_VERSION: u16 = 10;

/// Why some bytes are not a valid value: which check failed, for logs and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt(pub &'static str);

impl Corrupt {
    /// An empty list, set, hash or sorted set: RESTORE refuses it, but a file may
    /// hold one (older Redis versions could write them), and loading skips its key
    /// as Redis 7.0 does.
    pub const EMPTY_COLLECTION: Corrupt = Corrupt("empty collection");
}

pub type Result<T> = std::result::Result<T, Corrupt>;

/// The type bytes that open a value (Redis's `RDB_TYPE_*`).
mod kind {
    pub const STRING: u8 = 0;
    pub const LIST: u8 = 1;
    pub const SET: u8 = 2;
    pub const ZSET: u8 = 3;
    pub const HASH: u8 = 4;
    pub const ZSET_2: u8 = 5;
    pub const MODULE: u8 = 6;
    pub const MODULE_2: u8 = 7;
    pub const HASH_ZIPMAP: u8 = 9;
    pub const LIST_ZIPLIST: u8 = 10;
    pub const SET_INTSET: u8 = 11;
    pub const ZSET_ZIPLIST: u8 = 12;
    pub const HASH_ZIPLIST: u8 = 13;
    pub const LIST_QUICKLIST: u8 = 14;
    pub const STREAM_LISTPACKS: u8 = 15;
    pub const HASH_LISTPACK: u8 = 16;
    pub const ZSET_LISTPACK: u8 = 17;
    pub const LIST_QUICKLIST_2: u8 = 18;
    pub const STREAM_LISTPACKS_2: u8 = 19;
    pub const SET_LISTPACK: u8 = 20;
    pub const STREAM_LISTPACKS_3: u8 = 21;
    /// KeyDB's scheduled script (KEYDB.CRON); Redis has no such type.
    pub const CRON: u8 = 64;
}
