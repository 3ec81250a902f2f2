//! Who this server says it is: its own version and the Redis version it answers as.
//! A leaf, read by INFO, HELLO, LOLWUT, scripts (`REDIS_VERSION`) and RDB headers.

pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The Redis version kvik reports to clients that check it.
pub const REDIS_VERSION: &str = "7.0.15";
