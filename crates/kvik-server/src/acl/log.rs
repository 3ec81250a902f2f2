//! ACL LOG: the latest refusals (a denied command, key or channel, a failed AUTH),
//! newest first, with Redis 7.0's fields and its grouping of repeats. It records;
//! it decides nothing.

use std::collections::VecDeque;

/// Repeats of the same refusal within this long update one entry (Redis's
/// `ACL_LOG_GROUPING_MAX_TIME_DELTA`).
const GROUPING_MS: u64 = 60_000;
/// How many of the newest entries a refusal is compared with.
const GROUPING_SCAN: usize = 10;

/// What was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Command,
    Key,
    Channel,
    Auth,
}

impl Reason {
    pub fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// Where the refused command came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    Toplevel,
    Multi,
    Lua,
}

impl Context {
    pub fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

/// One ACL LOG entry.
#[derive(Debug, Clone)]
pub struct Entry {
    pub count: u64,
    pub reason: Reason,
    pub context: Context,
    /// The command, key or channel refused (AUTH: the command name as sent).
    pub object: String,
    pub username: String,
    pub created_ms: u64,
    /// The client's CLIENT LIST line, without its newline.
    pub client_info: String,
}

/// The entries, newest first.
#[derive(Default)]
pub struct Log {
    entries: VecDeque<Entry>,
}

impl Log {
    /// Record a refusal: a repeat of a recent one updates it and moves it first.
    pub fn add(&mut self, entry: Entry, max_len: usize) {
        let repeat = self.entries.iter().take(GROUPING_SCAN).position(|e| {
            e.reason == entry.reason
                && e.context == entry.context
                && e.object == entry.object
                && e.username == entry.username
                && entry.created_ms.saturating_sub(e.created_ms) <= GROUPING_MS
        });
        match repeat.and_then(|at| self.entries.remove(at)) {
            Some(mut known) => {
                known.count += 1;
                known.created_ms = entry.created_ms;
                known.client_info = entry.client_info;
                self.entries.push_front(known);
            }
            None => self.entries.push_front(entry),
        }
        self.entries.truncate(max_len);
    }

    pub fn reset(&mut self) {
        self.entries.clear();
    }

    pub fn newest(&self, count: usize) -> impl Iterator<Item = &Entry> {
        self.entries.iter().take(count)
    }

    pub fn trim(&mut self, max_len: usize) {
        self.entries.truncate(max_len);
    }
}
