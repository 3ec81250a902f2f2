//! kvik-util: small pure helpers with Redis-exact semantics, the bottom layer of kvik.
//!
//! Owns: glob matching, number parsing/formatting (including C `strtod` and
//! `long double` behaviour, the latter compiled from `csrc/longdouble.c`), geohash, LZF,
//! allocator size classes, the thin buffer, the contract of moving an allocation
//! (active defragmentation), and [`hash::hash_key`], the one key hash
//! the keyspace and the values share.
//!
//! Layer rule: imports nothing of kvik's own (no other kvik crate depends on being
//! below it). Nothing here knows about values, clients, the keyspace or commands;
//! the layers above (`kvik-types`, `kvik-rdb`, `kvik-server`) import it, never the
//! other way round.

pub mod geohash;
pub mod glob;
pub mod hash;
pub mod long_double;
pub mod lzf;
pub mod numbers;
pub mod relocate;
pub mod size_class;
pub mod strtod;
pub mod thin_buf;

#[cfg(test)]
mod redis_oracle;
