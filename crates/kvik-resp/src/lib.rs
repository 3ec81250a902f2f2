//! RESP, the Redis serialization protocol: a resumable, zero-copy request parser
//! (multibulk and inline) and a reply writer for RESP2 and RESP3.
//!
//! This crate owns the wire format only. It knows nothing of commands, clients or
//! the server; the server feeds it bytes and asks it to encode replies.

mod parse;
mod write;

pub use parse::{split_args, Limits, Parsed, ProtocolError, RequestParser, INLINE_MAX};
pub use write::{Protocol, ReplyWriter};
