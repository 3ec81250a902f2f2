//! Small pure helpers with Redis-exact semantics: glob matching and number
//! parsing/formatting. Nothing here knows about clients or the keyspace.

pub mod glob;
pub mod numbers;
