//! The command table: everything kvik knows about a command, in one place.
//!
//! Each family module declares its commands as a `const` slice of [`Command`]s; the
//! [`Registry`] gathers them once at start-up. Name, arity, flags, ACL categories, key
//! positions, what to lock, the handler and the documentation all live in the entry,
//! so COMMAND INFO, COMMAND DOCS, COMMAND GETKEYS, the dispatcher and the lock layer
//! all read the same facts. There is no second list anywhere.

use super::{CmdResult, Ctx};
use std::collections::HashMap;

/// A command handler: small function over the execution context and the arguments
/// (`args[0]` is the command name as the client sent it).
pub type Handler = fn(&mut Ctx<'_, '_>, &[&[u8]]) -> CmdResult;

/// Command flags, with the names COMMAND INFO reports.
pub mod flags {
    pub const WRITE: u32 = 1 << 0;
    pub const READONLY: u32 = 1 << 1;
    pub const DENYOOM: u32 = 1 << 2;
    pub const ADMIN: u32 = 1 << 3;
    pub const PUBSUB: u32 = 1 << 4;
    pub const NOSCRIPT: u32 = 1 << 5;
    pub const BLOCKING: u32 = 1 << 6;
    pub const LOADING: u32 = 1 << 7;
    pub const STALE: u32 = 1 << 8;
    pub const SKIP_MONITOR: u32 = 1 << 9;
    pub const SKIP_SLOWLOG: u32 = 1 << 10;
    pub const FAST: u32 = 1 << 11;
    pub const NO_AUTH: u32 = 1 << 12;
    pub const MAY_REPLICATE: u32 = 1 << 13;
    pub const NO_MULTI: u32 = 1 << 14;
    pub const MOVABLE_KEYS: u32 = 1 << 15;
    pub const ALLOW_BUSY: u32 = 1 << 16;
    pub const NO_MANDATORY_KEYS: u32 = 1 << 17;
    pub const PROTECTED: u32 = 1 << 18;

    /// Flag names in COMMAND INFO order.
    pub const NAMES: &[(u32, &str)] = &[
        (WRITE, "write"),
        (READONLY, "readonly"),
        (DENYOOM, "denyoom"),
        (ADMIN, "admin"),
        (PUBSUB, "pubsub"),
        (NOSCRIPT, "noscript"),
        (BLOCKING, "blocking"),
        (LOADING, "loading"),
        (STALE, "stale"),
        (SKIP_MONITOR, "skip_monitor"),
        (SKIP_SLOWLOG, "skip_slowlog"),
        (FAST, "fast"),
        (NO_AUTH, "no_auth"),
        (MAY_REPLICATE, "may_replicate"),
        (NO_MANDATORY_KEYS, "no_mandatory_keys"),
        (PROTECTED, "protected"),
        (NO_MULTI, "no_multi"),
        (MOVABLE_KEYS, "movablekeys"),
        (ALLOW_BUSY, "allow_busy"),
    ];
}

/// ACL categories, with the names COMMAND INFO reports (as `@name`).
pub mod acl {
    pub const KEYSPACE: u32 = 1 << 0;
    pub const READ: u32 = 1 << 1;
    pub const WRITE: u32 = 1 << 2;
    pub const SET: u32 = 1 << 3;
    pub const SORTEDSET: u32 = 1 << 4;
    pub const LIST: u32 = 1 << 5;
    pub const HASH: u32 = 1 << 6;
    pub const STRING: u32 = 1 << 7;
    pub const BITMAP: u32 = 1 << 8;
    pub const HYPERLOGLOG: u32 = 1 << 9;
    pub const GEO: u32 = 1 << 10;
    pub const STREAM: u32 = 1 << 11;
    pub const PUBSUB: u32 = 1 << 12;
    pub const ADMIN: u32 = 1 << 13;
    pub const FAST: u32 = 1 << 14;
    pub const SLOW: u32 = 1 << 15;
    pub const BLOCKING: u32 = 1 << 16;
    pub const DANGEROUS: u32 = 1 << 17;
    pub const CONNECTION: u32 = 1 << 18;
    pub const TRANSACTION: u32 = 1 << 19;
    pub const SCRIPTING: u32 = 1 << 20;

    pub const NAMES: &[(u32, &str)] = &[
        (KEYSPACE, "@keyspace"),
        (READ, "@read"),
        (WRITE, "@write"),
        (SET, "@set"),
        (SORTEDSET, "@sortedset"),
        (LIST, "@list"),
        (HASH, "@hash"),
        (STRING, "@string"),
        (BITMAP, "@bitmap"),
        (HYPERLOGLOG, "@hyperloglog"),
        (GEO, "@geo"),
        (STREAM, "@stream"),
        (PUBSUB, "@pubsub"),
        (ADMIN, "@admin"),
        (FAST, "@fast"),
        (SLOW, "@slow"),
        (BLOCKING, "@blocking"),
        (DANGEROUS, "@dangerous"),
        (CONNECTION, "@connection"),
        (TRANSACTION, "@transaction"),
        (SCRIPTING, "@scripting"),
    ];
}

/// Argument indexes of a command's keys; most commands have few, kept off the heap.
pub type KeyPositions = smallvec::SmallVec<[usize; 4]>;

/// How a command uses its keys (COMMAND INFO's key-spec flags), with the names it
/// reports, in its order.
pub mod key_flags {
    pub const RO: u32 = 1 << 0;
    pub const RW: u32 = 1 << 1;
    pub const OW: u32 = 1 << 2;
    pub const RM: u32 = 1 << 3;
    pub const ACCESS: u32 = 1 << 4;
    pub const UPDATE: u32 = 1 << 5;
    pub const INSERT: u32 = 1 << 6;
    pub const DELETE: u32 = 1 << 7;
    pub const NOT_KEY: u32 = 1 << 8;
    pub const INCOMPLETE: u32 = 1 << 9;
    pub const VARIABLE_FLAGS: u32 = 1 << 10;

    pub const NAMES: &[(u32, &str)] = &[
        (RO, "RO"),
        (RW, "RW"),
        (OW, "OW"),
        (RM, "RM"),
        (ACCESS, "access"),
        (UPDATE, "update"),
        (INSERT, "insert"),
        (DELETE, "delete"),
        (NOT_KEY, "not_key"),
        (INCOMPLETE, "incomplete"),
        (VARIABLE_FLAGS, "variable_flags"),
    ];
}

/// Where a command's keys are in its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySpec {
    /// No keys.
    None,
    /// Keys at `first`, `first + step`, ... up to `last` (negative: from the end).
    Range { first: i32, last: i32, step: i32 },
    /// A count at `numkeys`, then that many keys starting right after it, `step` apart.
    Numkeys { numkeys: usize, step: usize },
}

impl KeySpec {
    /// The argument indexes holding keys, or `None` when the arguments are malformed
    /// (a bad key count); the handler then reports the error.
    pub fn key_positions(&self, args: &[&[u8]]) -> Option<KeyPositions> {
        match *self {
            KeySpec::None => Some(KeyPositions::new()),
            KeySpec::Range { first, last, step } => {
                let argc = args.len() as i32;
                let last = if last < 0 {
                    argc + last
                } else {
                    last.min(argc - 1)
                };
                Some(
                    (first..=last)
                        .step_by(step.max(1) as usize)
                        .filter(|&i| i < argc)
                        .map(|i| i as usize)
                        .collect(),
                )
            }
            KeySpec::Numkeys { numkeys, step } => {
                let count = std::str::from_utf8(args.get(numkeys)?)
                    .ok()?
                    .parse::<usize>()
                    .ok()?;
                // Check the count against the arguments before listing positions: a
                // client may announce billions of keys.
                let last = count
                    .checked_sub(1)
                    .map(|n| n.checked_mul(step)?.checked_add(numkeys + 1));
                if last.is_some_and(|p| p.is_none_or(|p| p >= args.len())) {
                    return None;
                }
                Some((0..count).map(|i| numkeys + 1 + i * step).collect())
            }
        }
    }

    /// (first, last, step) as COMMAND INFO's legacy fields report them.
    pub fn legacy_triple(&self) -> (i64, i64, i64) {
        match *self {
            KeySpec::None | KeySpec::Numkeys { .. } => (0, 0, 0),
            KeySpec::Range { first, last, step } => (first as i64, last as i64, step as i64),
        }
    }
}

/// Which shards `call` locks before running the handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lock {
    /// The shards of the keys the key spec finds.
    Keys,
    /// Every shard of the client's database.
    Db,
    /// Every shard of every database.
    AllDbs,
    /// The handler locks what it needs itself (its keys depend on its arguments in a
    /// way a key spec cannot say, e.g. MOVE's target database).
    Handler,
}

/// One command (or subcommand, named `parent|sub`).
#[derive(Clone, Copy)]
pub struct Command {
    pub name: &'static str,
    /// Positive: exact argument count (name included); negative: at least that many.
    pub arity: i32,
    pub flags: u32,
    pub acl: u32,
    pub keys: KeySpec,
    /// How the command uses its keys ([`key_flags`]); 0 when not declared, and COMMAND
    /// INFO then derives them from the command's flags.
    pub key_flags: u32,
    /// Hints for clients and proxies (COMMAND INFO's tips), e.g. `nondeterministic_output`.
    pub tips: &'static [&'static str],
    pub lock: Lock,
    pub handler: Handler,
    pub group: &'static str,
    pub since: &'static str,
    pub complexity: &'static str,
    pub summary: &'static str,
    pub subcommands: &'static [Command],
}

impl Command {
    pub const fn new(name: &'static str, arity: i32, handler: Handler) -> Command {
        Command {
            name,
            arity,
            flags: 0,
            acl: 0,
            keys: KeySpec::None,
            key_flags: 0,
            tips: &[],
            lock: Lock::Keys,
            handler,
            group: "generic",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "",
            subcommands: &[],
        }
    }

    pub const fn flags(mut self, flags: u32) -> Self {
        self.flags = flags;
        self
    }

    pub const fn acl(mut self, acl: u32) -> Self {
        self.acl = acl;
        self
    }

    /// Keys from `first` to `last` (negative counts from the end), `step` apart.
    pub const fn keys(mut self, first: i32, last: i32, step: i32) -> Self {
        self.keys = KeySpec::Range { first, last, step };
        self
    }

    /// Keys announced by a count at `numkeys`.
    pub const fn numkeys(mut self, numkeys: usize, step: usize) -> Self {
        self.keys = KeySpec::Numkeys { numkeys, step };
        self.flags |= flags::MOVABLE_KEYS;
        self
    }

    /// How the command uses its keys ([`key_flags`]).
    pub const fn key_flags(mut self, bits: u32) -> Self {
        self.key_flags = bits;
        self
    }

    pub const fn tips(mut self, tips: &'static [&'static str]) -> Self {
        self.tips = tips;
        self
    }

    pub const fn lock(mut self, lock: Lock) -> Self {
        self.lock = lock;
        self
    }

    pub const fn doc(
        mut self,
        group: &'static str,
        since: &'static str,
        complexity: &'static str,
        summary: &'static str,
    ) -> Self {
        self.group = group;
        self.since = since;
        self.complexity = complexity;
        self.summary = summary;
        self
    }

    pub const fn subcommands(mut self, subs: &'static [Command]) -> Self {
        self.subcommands = subs;
        self
    }

    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    /// Does the argument count fit the arity?
    pub fn arity_ok(&self, argc: usize) -> bool {
        let argc = argc as i32;
        if self.arity >= 0 {
            argc == self.arity
        } else {
            argc >= -self.arity
        }
    }

    /// The full name: `get`, or `config|get` for a subcommand.
    pub fn full_name(&self) -> &'static str {
        self.name
    }
}

/// All commands, looked up by lowercase name. Built once at start-up.
pub struct Registry {
    /// foldhash rather than SipHash: looked up once per command, and names are not
    /// attacker-chosen keys of a growing table.
    by_name: HashMap<&'static str, usize, foldhash::fast::RandomState>,
    commands: Vec<&'static Command>,
}

impl Registry {
    pub fn new(families: &[&'static [Command]]) -> Self {
        let mut commands = Vec::new();
        for family in families {
            for c in family.iter() {
                commands.push(c);
                commands.extend(c.subcommands.iter());
            }
        }
        let by_name = commands
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name, i))
            .collect();
        Registry { by_name, commands }
    }

    /// Look a command up by the name a client sent (any case). Returns its id.
    pub fn lookup(&self, name: &[u8]) -> Option<usize> {
        let mut lower = [0u8; 48];
        if name.len() > lower.len() {
            return None;
        }
        for (dst, src) in lower.iter_mut().zip(name) {
            *dst = src.to_ascii_lowercase();
        }
        let name = std::str::from_utf8(&lower[..name.len()]).ok()?;
        self.by_name.get(name).copied()
    }

    /// A subcommand of `parent` by name.
    pub fn lookup_sub(&self, parent: &Command, sub: &[u8]) -> Option<usize> {
        let mut full = Vec::with_capacity(parent.name.len() + 1 + sub.len());
        full.extend_from_slice(parent.name.as_bytes());
        full.push(b'|');
        full.extend_from_slice(sub);
        self.lookup(&full)
    }

    pub fn get(&self, id: usize) -> &'static Command {
        self.commands[id]
    }

    pub fn len(&self) -> usize {
        self.commands.len()
    }

    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// Every command and subcommand with its id.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &'static Command)> + '_ {
        self.commands.iter().copied().enumerate()
    }

    /// Top-level commands only.
    pub fn top_level(&self) -> impl Iterator<Item = &'static Command> + '_ {
        self.commands
            .iter()
            .copied()
            .filter(|c| !c.name.contains('|'))
    }
}
