//! Small pure helpers with Redis-exact semantics: glob matching, number
//! parsing/formatting (including C `strtod` and `long double` behaviour).
//! Nothing here knows about clients or the keyspace.

pub mod geohash;
pub mod glob;
pub mod long_double;
pub mod numbers;
pub mod size_class;
pub mod strtod;
pub mod thin_buf;

#[cfg(test)]
mod redis_oracle;
