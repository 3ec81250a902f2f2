//! kvik: a multithreaded, Redis-compatible in-memory database server.

pub mod util;
