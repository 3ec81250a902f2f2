//! The command table: everything kvik knows about a command, in one place.
//!
//! Each family module declares its commands as a `const` slice of [`Command`]s; the
//! [`Registry`] gathers them once at start-up. Name, arity, flags, ACL categories, key
//! positions, what to lock, the handler and the documentation all live in the entry,
//! so COMMAND INFO, COMMAND DOCS, COMMAND GETKEYS, the dispatcher and the lock layer
//! all read the same facts. There is no second list anywhere.

use super::{CmdResult, Ctx};
pub use crate::scripting::ScriptRef;
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
    pub const NO_ASYNC_LOADING: u32 = 1 << 19;

    // What the dispatcher does differently for a command. COMMAND INFO does not
    // report these: they are kvik's, not Redis's.

    /// Runs at once inside MULTI instead of being queued (EXEC, DISCARD, MULTI,
    /// WATCH, QUIT, RESET).
    pub const NOT_QUEUED: u32 = 1 << 20;
    /// Runs the commands MULTI queued (EXEC): whether it writes or may grow memory
    /// is read from its queue.
    pub const RUNS_QUEUED: u32 = 1 << 21;
    /// May run while a RESP2 connection is in subscribed mode.
    pub const WHILE_SUBSCRIBED: u32 = 1 << 22;
    /// May change the selected database (SELECT): a transaction's later commands
    /// lock the shards of the database it selects.
    pub const SELECTS_DB: u32 = 1 << 23;
    /// Refused with MISCONF after a failed save, like a write (PING, as Redis 7.0
    /// does, so that health checks notice).
    pub const MISCONF_REFUSES: u32 = 1 << 24;
    /// Leaves a pending CLIENT CACHING for the next command (the CLIENT
    /// subcommands).
    pub const KEEPS_CACHING: u32 = 1 << 25;
    /// Ends a transaction (EXEC, DISCARD, QUIT, RESET): never refused over
    /// `maxmemory` for queuing, since it queues nothing.
    pub const ENDS_MULTI: u32 = 1 << 26;
    /// Adds to a number (INCR, HINCRBY, ZINCRBY ...): under active replication a
    /// peer's increment merges with concurrent ones (they add up) instead of losing
    /// to the newest write, as a counter should.
    pub const MERGES_AS_COUNTER: u32 = 1 << 27;
    /// Changes a key's TTL (EXPIRE family, PERSIST): under active replication a
    /// peer's change merges by max with the changes made here since the key's value
    /// was written, instead of losing to the newest write (see keyspace/ttl.rs).
    pub const MERGES_AS_TTL: u32 = 1 << 30;

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
        (NO_MANDATORY_KEYS, "no_mandatory_keys"),
        (NO_ASYNC_LOADING, "no_async_loading"),
        (NO_MULTI, "no_multi"),
        (MOVABLE_KEYS, "movablekeys"),
        (ALLOW_BUSY, "allow_busy"),
        // PROTECTED and MAY_REPLICATE are not reported: Redis 7.0's COMMAND INFO
        // leaves them out.
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

/// Where the search for a key spec's keys begins (COMMAND INFO's `begin_search`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeginSearch {
    /// At a fixed argument index.
    Index(usize),
    /// Right after a keyword, looked for (in any case) from argument `startfrom`
    /// forwards, or, when negative, from that far before the end backwards.
    Keyword {
        keyword: &'static str,
        startfrom: i32,
    },
    /// Nothing in the arguments says where (SORT's BY and GET patterns).
    Unknown,
}

/// How a key spec finds its keys from where the search begins (`find_keys`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FindKeys {
    /// Keys from the start up to `lastkey` after it (negative: counted from the end of
    /// the arguments), `step` apart. A `limit` above 1 with `lastkey` -1 stops at that
    /// fraction of the arguments left (XREAD's keys are the first half after STREAMS).
    Range {
        lastkey: i32,
        step: usize,
        limit: usize,
    },
    /// The argument `keynumidx` after the start holds the count of keys; the first key
    /// is `firstkey` after the start, the others `step` apart.
    Keynum {
        keynumidx: usize,
        firstkey: usize,
        step: usize,
    },
    /// Only running the command tells.
    Unknown,
}

/// One key spec: where some of a command's keys are and how it uses them. A command
/// has one per role its keys play (LMOVE: the source it takes from, the destination
/// it pushes to), as Redis 7.0 describes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySpec {
    pub begin: BeginSearch,
    pub find: FindKeys,
    /// [`key_flags`]; 0 when not declared: COMMAND INFO then derives them from the
    /// command's flags.
    pub flags: u32,
    /// COMMAND INFO's `notes`, empty for none.
    pub notes: &'static str,
}

impl KeySpec {
    /// Keys from `first` to `last` (negative counts from the end), `step` apart.
    pub const fn range(first: usize, last: i32, step: usize) -> KeySpec {
        let lastkey = if last < 0 { last } else { last - first as i32 };
        KeySpec {
            begin: BeginSearch::Index(first),
            find: FindKeys::Range {
                lastkey,
                step,
                limit: 0,
            },
            flags: 0,
            notes: "",
        }
    }

    /// A count of keys at `numkeys`, the keys right after it, `step` apart.
    pub const fn numkeys(numkeys: usize, step: usize) -> KeySpec {
        KeySpec {
            begin: BeginSearch::Index(numkeys),
            find: FindKeys::Keynum {
                keynumidx: 0,
                firstkey: 1,
                step,
            },
            flags: 0,
            notes: "",
        }
    }

    /// A spec whose search begins after `keyword` (see [`BeginSearch::Keyword`]).
    pub const fn after_keyword(keyword: &'static str, startfrom: i32, find: FindKeys) -> KeySpec {
        KeySpec {
            begin: BeginSearch::Keyword { keyword, startfrom },
            find,
            flags: 0,
            notes: "",
        }
    }

    /// Keys nobody can find without running the command.
    pub const fn unknown() -> KeySpec {
        KeySpec {
            begin: BeginSearch::Unknown,
            find: FindKeys::Unknown,
            flags: 0,
            notes: "",
        }
    }

    pub const fn flags(mut self, bits: u32) -> KeySpec {
        self.flags = bits;
        self
    }

    pub const fn notes(mut self, notes: &'static str) -> KeySpec {
        self.notes = notes;
        self
    }

    /// The one key at a fixed place (GET's, SET's ...), when that is what the spec
    /// says: no search needed.
    #[inline]
    pub fn fixed_key(&self) -> Option<usize> {
        match (self.begin, self.find) {
            (BeginSearch::Index(at), FindKeys::Range { lastkey: 0, .. }) => Some(at),
            _ => None,
        }
    }

    /// Call `found` with the index of each key this spec finds in `args`. False when
    /// the arguments are malformed (a bad key count); the handler reports the error.
    #[inline(always)]
    pub fn each_key(&self, args: &[&[u8]], mut found: impl FnMut(usize)) -> bool {
        match self.fixed_key() {
            Some(at) if at < args.len() => found(at),
            Some(_) => {}
            None => return self.search_keys(args, found),
        }
        true
    }

    /// [`KeySpec::each_key`] for the specs that search the arguments.
    fn search_keys(&self, args: &[&[u8]], mut found: impl FnMut(usize)) -> bool {
        let argc = args.len();
        let Some(start) = self.start(args) else {
            return true;
        };
        match self.find {
            FindKeys::Unknown => true,
            FindKeys::Range {
                lastkey,
                step,
                limit,
            } => {
                let last = if lastkey >= 0 {
                    start + lastkey as usize
                } else if lastkey == -1 && limit > 1 {
                    let left = argc.saturating_sub(start);
                    (start + left / limit).saturating_sub(1)
                } else {
                    match argc.checked_sub(lastkey.unsigned_abs() as usize) {
                        Some(last) => last,
                        None => return true,
                    }
                };
                let mut at = start;
                while at <= last && at < argc {
                    found(at);
                    at += step.max(1);
                }
                true
            }
            FindKeys::Keynum {
                keynumidx,
                firstkey,
                step,
            } => {
                let Some(count) = args
                    .get(start + keynumidx)
                    .and_then(|a| std::str::from_utf8(a).ok())
                    .and_then(|a| a.parse::<usize>().ok())
                else {
                    return false;
                };
                let first = start + firstkey;
                // Check the count against the arguments before listing positions: a
                // client may announce billions of keys.
                let last = count
                    .checked_sub(1)
                    .map(|n| n.checked_mul(step)?.checked_add(first));
                if last.is_some_and(|p| p.is_none_or(|p| p >= argc)) {
                    return false;
                }
                (0..count).for_each(|i| found(first + i * step));
                true
            }
        }
    }

    /// The argument index where the search for keys begins, if the arguments say.
    fn start(&self, args: &[&[u8]]) -> Option<usize> {
        match self.begin {
            BeginSearch::Index(at) => Some(at),
            BeginSearch::Unknown => None,
            BeginSearch::Keyword { keyword, startfrom } => {
                let argc = args.len() as i64;
                let is_keyword = |i: i64| args[i as usize].eq_ignore_ascii_case(keyword.as_bytes());
                // A keyword in the last argument has no key after it.
                let found = if startfrom >= 0 {
                    (i64::from(startfrom).max(1)..argc - 1).find(|&i| is_keyword(i))
                } else {
                    let from = argc + i64::from(startfrom);
                    (2..=from.min(argc - 1)).rev().find(|&i| is_keyword(i))
                };
                found.map(|i| i as usize + 1)
            }
        }
    }
}

/// The legacy (first, last, step) of COMMAND INFO, and whether the key specs leave
/// keys it cannot describe (`movablekeys`): one range spec is the triple itself;
/// otherwise the plain ranges (step 1, each following the previous) merge into one,
/// and any other spec makes the keys movable.
pub fn legacy_range(specs: &[KeySpec]) -> ((i64, i64, i64), bool) {
    const INCOMPLETE: u32 = key_flags::INCOMPLETE;
    let as_range = |spec: &KeySpec| match (spec.begin, spec.find) {
        (BeginSearch::Index(at), FindKeys::Range { lastkey, step, .. }) => {
            Some((at as i64, lastkey as i64, step as i64))
        }
        _ => None,
    };
    if let [only] = specs {
        if let Some((first, lastkey, step)) = as_range(only) {
            let last = if lastkey < 0 {
                lastkey
            } else {
                first + lastkey
            };
            return ((first, last, step), only.flags & INCOMPLETE != 0);
        }
    }
    let mut movable = false;
    let (mut first, mut last): (Option<i64>, i64) = (None, 0);
    for spec in specs {
        let Some((at, lastkey, step)) = as_range(spec) else {
            movable = true;
            continue;
        };
        if step != 1 || (first.is_some() && last != at - 1) {
            movable = true;
            continue;
        }
        movable |= spec.flags & INCOMPLETE != 0;
        first = Some(first.map_or(at, |f| f.min(at)));
        let absolute = if lastkey < 0 { lastkey } else { at + lastkey };
        // A key counted from the end lies beyond any counted from the start.
        if last >= 0 && (absolute < 0 || absolute > last) {
            last = absolute;
        }
    }
    match first {
        Some(first) => ((first, last, 1), movable),
        None => ((0, 0, 0), !specs.is_empty()),
    }
}

/// A command's key specs: most have one or two, so they live inline in the
/// `const` table.
pub const MAX_KEY_SPECS: usize = 4;

/// Which shards `call` (and EXEC, for each command it runs) locks before the handler
/// runs.
#[derive(Clone, Copy)]
pub enum Lock {
    /// The shards of the keys the key specs find.
    Keys,
    /// Every shard of the client's database.
    Db,
    /// Every shard of every database.
    AllDbs,
    /// Keys or whole databases that only the arguments tell, in a way key specs cannot
    /// (MOVE's target database): the function lists them, or nothing when the
    /// arguments are malformed (the handler then fails before touching keys).
    Args(fn(&LockRequest<'_>) -> Needs),
    /// The handler takes what it needs itself, through [`Held::lock`](super::Held) and
    /// [`Locked`](crate::keyspace::Locked)'s whole-database readers, which reuse shards
    /// already held: a plain call holds none, and EXEC holds every shard of every
    /// database for such a command (SCAN, DBSIZE, DEBUG).
    Handler,
}

/// What a [`Lock::Args`] function gets: the arguments and the client's state.
pub struct LockRequest<'r> {
    pub args: &'r [&'r [u8]],
    /// The client's selected database.
    pub db: usize,
    pub databases: usize,
}

/// One thing a command needs locked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// The shard of this argument's key in this database.
    Key { db: usize, arg: usize },
    /// Every shard of this database.
    Db(usize),
}

pub type Needs = smallvec::SmallVec<[Need; 2]>;

/// What only code can work out about a command line's keys, given the (argument
/// index, [`key_flags`]) the key specs found. A [`Command::refine_keys`] appends keys
/// no spec finds (SORT's STORE destination, which may come anywhere among its
/// options); a [`Command::settle_key_flags`] narrows the flags of a
/// `variable_flags` spec (SET without GET only writes).
pub type RefineKeys = fn(&[&[u8]], &mut FoundKeys);

/// The keys of one command line, each with how the command uses it: (argument index,
/// [`key_flags`]), in the order of the key specs.
#[derive(Debug, Default)]
pub struct FoundKeys(pub smallvec::SmallVec<[(usize, u32); 4]>);

impl FoundKeys {
    pub fn push(&mut self, at: usize, flags: u32) {
        self.0.push((at, flags));
    }

    /// Give every key the same flags (a spec's `variable_flags` settled).
    pub fn set_flags(&mut self, flags: u32) {
        self.0.iter_mut().for_each(|(_, f)| *f = flags);
    }
}

/// Which arguments are pub/sub channels the ACL checks against a user's channel
/// patterns (Redis's `getchannels` procedures; unsubscribing is never checked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channels {
    None,
    /// The first argument (PUBLISH, SPUBLISH).
    First,
    /// Every argument (SUBSCRIBE, SSUBSCRIBE).
    All,
    /// Every argument, each a pattern matched literally (PSUBSCRIBE).
    AllPatterns,
}

impl Channels {
    /// Call `found` with (argument index, is a pattern) for each channel of `args`.
    pub fn each(self, args: &[&[u8]], mut found: impl FnMut(usize, bool)) {
        match self {
            Channels::None => {}
            Channels::First => {
                if args.len() > 1 {
                    found(1, false);
                }
            }
            Channels::All => (1..args.len()).for_each(|at| found(at, false)),
            Channels::AllPatterns => (1..args.len()).for_each(|at| found(at, true)),
        }
    }
}

/// One command (or subcommand, named `parent|sub`).
#[derive(Clone, Copy)]
pub struct Command {
    pub name: &'static str,
    /// Positive: exact argument count (name included); negative: at least that many.
    pub arity: i32,
    pub flags: u32,
    pub acl: u32,
    /// Its key specs: the first `key_spec_count` of the array.
    pub key_specs: [KeySpec; MAX_KEY_SPECS],
    pub key_spec_count: usize,
    /// COMMAND GETKEYS(ANDFLAGS)'s last word on the keys the specs found: keys
    /// only code can find.
    pub refine_keys: Option<RefineKeys>,
    /// The flags a line gives the keys of its `variable_flags` specs. Such a spec
    /// declares the most any line asks of its keys, so a check that passes under
    /// the spec's flags (the ACL's) passes under the settled ones and need not
    /// settle them.
    pub settle_key_flags: Option<RefineKeys>,
    /// Hints for clients and proxies (COMMAND INFO's tips), e.g. `nondeterministic_output`.
    pub tips: &'static [&'static str],
    pub lock: Lock,
    pub handler: Handler,
    pub group: &'static str,
    pub since: &'static str,
    pub complexity: &'static str,
    pub summary: &'static str,
    pub subcommands: &'static [Command],
    /// For a command that runs a script (EVAL, EVALSHA, FCALL and their read-only
    /// variants, flagged READONLY): where its arguments name the script.
    pub script: Option<ScriptRef>,
    /// Hides secrets in the arguments as MONITOR and the slow log show them (AUTH's
    /// password, CONFIG SET's sensitive values).
    pub redact: Option<Redact>,
    /// The arguments that are pub/sub channels, for the ACL.
    pub channels: Channels,
    /// For a [`flags::MERGES_AS_COUNTER`] command that adds to an element of its key
    /// (HINCRBY's field, ZINCRBY's member): the argument naming the element, whose
    /// own count a replayed increment is checked against.
    pub counted_member: Option<usize>,
    /// For a write of set members, hash fields or sorted-set members: where its
    /// arguments name them, so that active replication merges it element by element
    /// (see `keyspace/elements.rs`).
    pub elements: Option<ElementsOf>,
}

/// Where a command's arguments name the elements of its key's collection (`None`
/// when these arguments name none).
pub type ElementsOf = fn(&[&[u8]]) -> Option<crate::keyspace::ElementSpan>;

/// Replaces the secrets among a command's arguments with a placeholder.
pub type Redact = fn(&mut [&[u8]]);

impl Command {
    pub const fn new(name: &'static str, arity: i32, handler: Handler) -> Command {
        Command {
            name,
            arity,
            flags: 0,
            acl: 0,
            key_specs: [KeySpec::unknown(); MAX_KEY_SPECS],
            key_spec_count: 0,
            refine_keys: None,
            settle_key_flags: None,
            tips: &[],
            lock: Lock::Keys,
            handler,
            group: "generic",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "",
            subcommands: &[],
            script: None,
            redact: None,
            channels: Channels::None,
            counted_member: None,
            elements: None,
        }
    }

    /// A container (MEMORY, LATENCY ...): it needs a subcommand (arity -2), so its
    /// own handler, `help`, never runs; only its documentation and subcommands
    /// matter.
    pub const fn container(
        name: &'static str,
        help: Handler,
        since: &'static str,
        summary: &'static str,
        subcommands: &'static [Command],
    ) -> Command {
        Command::new(name, -2, help)
            .acl(acl::SLOW)
            .doc("server", since, "Depends on subcommand.", summary)
            .subcommands(subcommands)
    }

    /// A container's HELP subcommand, with the flags and category every HELP has.
    pub const fn help(
        name: &'static str,
        handler: Handler,
        since: &'static str,
        summary: &'static str,
    ) -> Command {
        Command::new(name, 2, handler)
            .flags(flags::LOADING | flags::STALE)
            .acl(acl::SLOW)
            .doc("server", since, "O(1)", summary)
    }

    pub const fn flags(mut self, flags: u32) -> Self {
        self.flags = flags;
        self
    }

    pub const fn acl(mut self, acl: u32) -> Self {
        self.acl = acl;
        self
    }

    /// Keys from `first` to `last` (negative counts from the end), `step` apart: the
    /// first key spec.
    pub const fn keys(self, first: i32, last: i32, step: i32) -> Self {
        self.key_spec(KeySpec::range(first as usize, last, step as usize))
    }

    /// Keys announced by a count at `numkeys`: the first key spec.
    pub const fn numkeys(mut self, numkeys: usize, step: usize) -> Self {
        self.flags |= flags::MOVABLE_KEYS;
        self.key_spec(KeySpec::numkeys(numkeys, step))
    }

    /// Add a key spec (after those declared so far).
    pub const fn key_spec(mut self, spec: KeySpec) -> Self {
        assert!(self.key_spec_count < MAX_KEY_SPECS, "too many key specs");
        self.key_specs[self.key_spec_count] = spec;
        self.key_spec_count += 1;
        self
    }

    /// How the command uses the keys of its last declared key spec ([`key_flags`]).
    pub const fn key_flags(mut self, bits: u32) -> Self {
        assert!(self.key_spec_count > 0, "key flags before any key spec");
        self.key_specs[self.key_spec_count - 1].flags = bits;
        self
    }

    pub const fn refine_keys(mut self, refine: RefineKeys) -> Self {
        self.refine_keys = Some(refine);
        self
    }

    pub const fn settle_key_flags(mut self, settle: RefineKeys) -> Self {
        self.settle_key_flags = Some(settle);
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

    pub const fn script(mut self, script: ScriptRef) -> Self {
        self.script = Some(script);
        self
    }

    pub const fn channels(mut self, channels: Channels) -> Self {
        self.channels = channels;
        self
    }

    /// Counts, under active replication, the element argument `at` names (see
    /// [`Command::counted_member`]).
    pub const fn counts_member(mut self, at: usize) -> Self {
        self.counted_member = Some(at);
        self
    }

    pub const fn elements(mut self, elements: ElementsOf) -> Self {
        self.elements = Some(elements);
        self
    }

    pub const fn redact(mut self, redact: Redact) -> Self {
        self.redact = Some(redact);
        self
    }

    /// Runs a script that may write (EVAL, EVALSHA, FCALL, not their `_RO` forms).
    pub fn runs_writing_script(&self) -> bool {
        self.script.is_some() && !self.has(flags::READONLY)
    }

    /// Runs a script that may only read (EVAL_RO, EVALSHA_RO, FCALL_RO).
    pub fn runs_read_only_script(&self) -> bool {
        self.script.is_some() && self.has(flags::READONLY)
    }

    /// The declared key specs.
    pub fn specs(&self) -> &[KeySpec] {
        &self.key_specs[..self.key_spec_count]
    }

    /// The argument indexes of the keys all key specs find (a key two specs find is
    /// listed twice), or `None` when the arguments are malformed (a bad key count).
    pub fn key_positions(&self, args: &[&[u8]]) -> Option<KeyPositions> {
        self.positions_of_specs(args, |_| true)
    }

    /// The argument indexes of the keys the command may write: those of every key
    /// spec not read-only (SINTERSTORE's destination, not its sources). `None`
    /// when the arguments are malformed.
    pub fn written_key_positions(&self, args: &[&[u8]]) -> Option<KeyPositions> {
        self.positions_of_specs(args, |spec| self.spec_flags(spec) & key_flags::RO == 0)
    }

    /// The argument indexes of the keys the specs `wanted` picks find, in spec
    /// order; `None` when the arguments are malformed.
    fn positions_of_specs(
        &self,
        args: &[&[u8]],
        wanted: impl Fn(&KeySpec) -> bool,
    ) -> Option<KeyPositions> {
        let mut positions = KeyPositions::new();
        for spec in self.specs() {
            let want = wanted(spec);
            if !spec.each_key(args, |at| {
                if want {
                    positions.push(at)
                }
            }) {
                return None;
            }
        }
        Some(positions)
    }

    /// How a key spec uses its keys: as declared, or, when not declared, derived
    /// from the command's flags (a write command reads and updates its keys).
    pub fn spec_flags(&self, spec: &KeySpec) -> u32 {
        if spec.flags != 0 {
            spec.flags
        } else if self.has(flags::WRITE) {
            key_flags::RW | key_flags::ACCESS | key_flags::UPDATE
        } else {
            key_flags::RO | key_flags::ACCESS
        }
    }

    /// The keys of a command line with how it uses each (COMMAND GETKEYSANDFLAGS's
    /// answer), refined by code where specs cannot tell. False when the arguments
    /// are malformed (a bad key count).
    #[inline]
    pub fn keys_and_flags(&self, args: &[&[u8]], keys: &mut FoundKeys) -> bool {
        let mut valid = true;
        for spec in self.specs() {
            let flags = self.spec_flags(spec);
            valid &= spec.each_key(args, |at| keys.push(at, flags));
        }
        if let Some(settle) = self.settle_key_flags {
            settle(args, keys);
        }
        if let Some(refine) = self.refine_keys {
            refine(args, keys);
        }
        // A command line's flags are settled: `variable_flags` only describes the spec.
        for (_, flags) in keys.0.iter_mut() {
            *flags &= !key_flags::VARIABLE_FLAGS;
        }
        valid
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

#[cfg(test)]
mod tests {
    use super::*;

    fn keys_of(spec: KeySpec, line: &str) -> Option<Vec<usize>> {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        let mut found = Vec::new();
        spec.each_key(&args, |at| found.push(at)).then_some(found)
    }

    #[test]
    fn keyword_specs_search_after_their_keyword() {
        let streams = KeySpec::after_keyword(
            "STREAMS",
            1,
            FindKeys::Range {
                lastkey: -1,
                step: 1,
                limit: 2,
            },
        );
        assert_eq!(
            keys_of(streams, "XREAD COUNT 2 STREAMS a b 0 0"),
            Some(vec![4, 5])
        );
        assert_eq!(keys_of(streams, "XREAD streams a 0"), Some(vec![2]));
        assert_eq!(keys_of(streams, "XREAD COUNT 2 STREAMS"), Some(vec![]));
        let from_end = KeySpec::after_keyword(
            "STORE",
            -2,
            FindKeys::Range {
                lastkey: 0,
                step: 1,
                limit: 0,
            },
        );
        assert_eq!(keys_of(from_end, "CMD k STORE dst x"), Some(vec![3]));
    }

    #[test]
    fn keynum_specs_check_the_count() {
        let inputs = KeySpec::numkeys(2, 1);
        assert_eq!(
            keys_of(inputs, "ZUNIONSTORE d 2 a b WEIGHTS 1 2"),
            Some(vec![3, 4])
        );
        assert_eq!(keys_of(inputs, "ZUNIONSTORE d 3 a b"), None);
        assert_eq!(keys_of(inputs, "ZUNIONSTORE d x a b"), None);
    }

    #[test]
    fn legacy_range_merges_consecutive_plain_ranges() {
        let store = [KeySpec::range(1, 1, 1), KeySpec::range(2, -1, 1)];
        assert_eq!(legacy_range(&store), ((1, -1, 1), false));
        let counted = [KeySpec::range(1, 1, 1), KeySpec::numkeys(2, 1)];
        assert_eq!(legacy_range(&counted), ((1, 1, 1), true));
        assert_eq!(
            legacy_range(&[KeySpec::range(1, -1, 2)]),
            ((1, -1, 2), false)
        );
        assert_eq!(legacy_range(&[KeySpec::numkeys(1, 1)]), ((0, 0, 0), true));
        assert_eq!(legacy_range(&[]), ((0, 0, 0), false));
    }
}
