//! Server-side Lua scripting.

pub mod libs;
