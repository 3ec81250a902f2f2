//! Error replies: the type a command's failure travels in, and the texts clients
//! match on, exactly as Redis words them.
//!
//! A leaf below every engine, so that the keyspace, the engines and the command
//! families can all fail with the same type without importing the dispatcher.

use std::borrow::Cow;

/// An error reply: the whole text after the `-`, e.g. `ERR syntax error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdError(pub Cow<'static, str>);

pub type CmdResult = Result<(), CmdError>;

impl From<&'static str> for CmdError {
    fn from(s: &'static str) -> Self {
        CmdError(Cow::Borrowed(s))
    }
}

impl From<String> for CmdError {
    fn from(s: String) -> Self {
        CmdError(Cow::Owned(s))
    }
}

// Error texts clients match on, exactly as Redis words them.

pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
pub const NOT_FLOAT: &str = "ERR value is not a valid float";
pub const SYNTAX: &str = "ERR syntax error";
pub const OVERFLOW: &str = "ERR increment or decrement would overflow";
pub const NO_SUCH_KEY: &str = "ERR no such key";
pub const DB_OUT_OF_RANGE: &str = "ERR DB index is out of range";
pub const NOAUTH: &str = "NOAUTH Authentication required.";
pub const STRING_TOO_LONG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
pub const READONLY: &str = "READONLY You can't write against a read only replica.";
pub const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";
pub const MASTERDOWN: &str =
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";
pub const LOADING: &str = "LOADING Redis is loading the dataset in memory";
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
pub const MISCONF: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";
