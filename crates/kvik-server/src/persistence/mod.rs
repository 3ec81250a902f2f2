//! Persistence: the forms kvik's data takes outside memory.
//!
//! Owns the RDB encoding of values ([`rdb`]): DUMP and RESTORE payloads today, and the
//! RDB files, full resyncs and AOF preambles that will reuse it. Must not touch the
//! keyspace, locks, clients or commands: it turns values into bytes and bytes into
//! values, and the callers decide where they come from and go.
//!
//! The codec is the `kvik-rdb` crate, which can import only the values
//! (`kvik-types`) and `kvik-util`; it is re-exported here as [`rdb`].

pub use kvik_rdb as rdb;
