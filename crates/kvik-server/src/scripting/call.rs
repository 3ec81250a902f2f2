//! `redis.call`, `redis.pcall`, `redis.setresp` and `redis.set_repl`: the members of
//! `redis` that reach the running script's command context, written as C functions
//! over the Lua stack.
//!
//! A command runs through [`commands::run_locked`] under the script's own
//! [`Locked`](crate::keyspace::Locked), so it is part of the script's atomic whole.
//! Keys the script did not declare have their shards taken on demand (see
//! `Locked::acquire`): a shard above every held one is waited for, a lower one only
//! tried for a moment, since waiting for it could deadlock against a command that
//! holds it and waits for ours. The reply is written in the protocol the script chose
//! and parsed back into Lua values on the stack. The command's effects go where the
//! script last said with `redis.set_repl` (see [`crate::effects::Targets`]).
//!
//! Being C functions keeps `return redis.call(...)` from erasing the script's frame
//! (a Lua tail call would), so error replies name the script's line, as in Redis; it
//! also spares every call a Lua wrapper and an mlua callback. The run that is going
//! on is found through a thread-local pointer ([`Installed`]). A Lua error unwinds
//! by `longjmp`, so one is raised only once every Rust value of the call is gone.

use super::busy::Slot;
use super::convert::{error_table_text, mark_counted, push_reply, truncate_like_c};
use super::run::RunSpec;
use super::stack::Stack;
use crate::commands::table::{flags, Command};
use crate::commands::{self, Ctx};
use crate::effects::Targets;
use crate::keyspace::{hash_key, Locked};
use crate::util::numbers::write_f64;
use kvik_resp::{Protocol, ReplyWriter};
use mlua::ffi::{self, lua_State};
use smallvec::SmallVec;
use std::cell::Cell;
use std::ffi::c_int;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::time::Duration;

/// How long a script waits for the shard of an undeclared key that sorts below a
/// shard it holds before its call fails.
const OUT_OF_ORDER_PATIENCE: Duration = Duration::from_millis(200);

/// Why `redis.call` / `redis.pcall` gave an error table.
pub(super) struct CallError {
    text: String,
    /// It is the command's own error reply, counted in INFO errorstats when it was
    /// made: the table says so (`ignore_error_stats_update`, as Redis names it), so
    /// that a script returning it does not count it twice.
    counted: bool,
}

impl CallError {
    /// An error of the call itself (an unknown command, a write from a read-only
    /// script, ...), counted only if the script replies with it.
    fn refusal(text: impl Into<String>) -> Self {
        CallError {
            text: text.into(),
            counted: false,
        }
    }
}

/// What the `redis.*` C functions ask of the run in progress.
pub(super) trait ScriptCalls {
    /// Runs one command and pushes its reply on `stack`, or returns its error.
    fn command(&mut self, stack: Stack, argv: &[&[u8]]) -> Result<(), CallError>;
    /// `redis.setresp`: the protocol of the replies that follow (2 or 3).
    fn set_resp(&mut self, resp: u8);
    /// `redis.set_repl`: where the effects of the commands that follow go.
    fn set_targets(&mut self, targets: Targets);
}

thread_local! {
    /// The run in progress on this thread, while one is.
    static CURRENT: Cell<Option<NonNull<dyn ScriptCalls>>> = const { Cell::new(None) };
}

/// Makes a run what this thread's `redis.*` C functions reach, until dropped.
pub(super) struct Installed<'x>(PhantomData<&'x mut ()>);

impl<'x> Installed<'x> {
    pub fn new(calls: &'x mut (dyn ScriptCalls + 'x)) -> Self {
        let ptr = NonNull::from(calls);
        // SAFETY: only the lifetime is erased. `Installed` holds the borrow of `calls`
        // for 'x and withdraws the pointer when it drops, so it is never used later.
        let ptr: NonNull<dyn ScriptCalls + 'static> = unsafe { std::mem::transmute(ptr) };
        CURRENT.with(|current| current.set(Some(ptr)));
        Installed(PhantomData)
    }
}

impl Drop for Installed<'_> {
    fn drop(&mut self) {
        CURRENT.with(|current| current.set(None));
    }
}

/// Runs `work` on the run in progress. Fails with `outside` when there is none, or
/// with an internal error when `work` panicked (a bug, which must not unwind through
/// Lua's C frames).
fn with_current<R>(
    outside: &'static str,
    work: impl FnOnce(&mut dyn ScriptCalls) -> R,
) -> Result<R, &'static str> {
    let ptr = CURRENT.with(Cell::take).ok_or(outside)?;
    // SAFETY: put there by a live `Installed`, and taken out of the cell while in use,
    // so this is the only reference to it.
    let calls = unsafe { &mut *ptr.as_ptr() };
    let result = catch_unwind(AssertUnwindSafe(|| work(calls)));
    CURRENT.with(|current| current.set(Some(ptr)));
    result.map_err(|_| "ERR internal error while running a script command")
}

/// `redis.call(command, ...)`: the reply, or the error raised as `{err = text}`.
///
/// # Safety
/// Called by Lua, as a C function.
pub(super) unsafe extern "C-unwind" fn redis_call(state: *mut lua_State) -> c_int {
    if command_from_lua(Stack::new(state)) {
        1
    } else {
        ffi::lua_error(state)
    }
}

/// `redis.pcall(command, ...)`: the reply, or the error returned as `{err = text}`.
///
/// # Safety
/// Called by Lua, as a C function.
pub(super) unsafe extern "C-unwind" fn redis_pcall(state: *mut lua_State) -> c_int {
    command_from_lua(Stack::new(state));
    1
}

/// Runs the command the arguments on `stack` name and pushes its reply (true) or an
/// error table (false).
fn command_from_lua(stack: Stack) -> bool {
    let outcome = match script_argv(stack) {
        Ok(argv) => with_current(
            "ERR redis.call/pcall can only be called inside a script invocation",
            |calls| calls.command(stack, &argv),
        )
        .unwrap_or_else(|text| Err(CallError::refusal(text))),
        Err(text) => Err(CallError::refusal(text)),
    };
    match outcome {
        Ok(()) => true,
        Err(e) => {
            stack.push_tagged(b"err", e.text.as_bytes());
            if e.counted {
                mark_counted(stack);
            }
            false
        }
    }
}

/// `redis.setresp(2|3)`: the protocol of the replies `redis.call` converts.
///
/// # Safety
/// Called by Lua, as a C function.
pub(super) unsafe extern "C-unwind" fn redis_setresp(state: *mut lua_State) -> c_int {
    let stack = Stack::new(state);
    raise_on_error(stack, set_resp_from_lua(stack))
}

/// `redis.set_repl(flags)`: where the effects of the following commands go, as the
/// bits of `redis.REPL_AOF` and `redis.REPL_REPLICA` (none: nowhere).
///
/// # Safety
/// Called by Lua, as a C function.
pub(super) unsafe extern "C-unwind" fn redis_set_repl(state: *mut lua_State) -> c_int {
    let stack = Stack::new(state);
    raise_on_error(stack, set_repl_from_lua(stack))
}

/// What a C function without results returns: nothing, or it raises `outcome`'s
/// error text.
///
/// # Safety
/// `stack` belongs to the C function being run.
unsafe fn raise_on_error(stack: Stack, outcome: Result<(), &'static str>) -> c_int {
    match outcome {
        Ok(()) => 0,
        Err(text) => {
            stack.push_bytes(text.as_bytes());
            ffi::lua_error(stack.state())
        }
    }
}

/// The one argument of `redis.setresp` or `redis.set_repl`, read as Redis reads it:
/// `lua_tonumber` (0 for what is not a number) cut to a C `int`.
fn int_argument(stack: Stack, count_error: &'static str) -> Result<i32, &'static str> {
    if stack.top() != 1 {
        return Err(count_error);
    }
    Ok(i32::try_from(truncate_like_c(stack.number(1))).unwrap_or(i32::MIN))
}

fn set_resp_from_lua(stack: Stack) -> Result<(), &'static str> {
    match int_argument(stack, "redis.setresp() requires one argument.")? {
        resp @ (2 | 3) => with_current(
            "redis.setresp can only be called inside a script invocation",
            |calls| calls.set_resp(resp as u8),
        ),
        _ => Err("RESP version must be 2 or 3."),
    }
}

fn set_repl_from_lua(stack: Stack) -> Result<(), &'static str> {
    // Redis's own wording, though one argument is what it takes.
    let flags = int_argument(stack, "redis.set_repl() requires two arguments.")?;
    let targets = Targets::from_bits(flags)
        .ok_or("Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")?;
    with_current(
        "redis.set_repl can only be called inside a script invocation",
        |calls| calls.set_targets(targets),
    )
}

/// The arguments of a `redis.call` as bytes, read in place: strings as they are,
/// numbers as Redis formats them (`%.17g`, so integers plainly), each number
/// replaced on the stack by its text so that every argument is a Lua string.
fn script_argv<'s>(stack: Stack) -> Result<SmallVec<[&'s [u8]; 8]>, &'static str> {
    let count = stack.top();
    if count == 0 {
        return Err("ERR Please specify at least one argument for this redis lib call");
    }
    for at in 1..=count {
        match stack.type_at(at) {
            ffi::LUA_TSTRING => {}
            ffi::LUA_TNUMBER => {
                let mut text = Vec::new();
                write_f64(&mut text, stack.number(at));
                stack.push_bytes(&text);
                stack.replace(at);
            }
            _ => return Err("ERR Lua redis lib command arguments must be strings or integers"),
        }
    }
    Ok((1..=count)
        .map(|at| stack.bytes(at).expect("every argument is a string now"))
        .collect())
}

/// The script's side of its commands.
pub struct Caller<'x, 'c, 'a> {
    ctx: &'x mut Ctx<'c, 'a>,
    /// The shards the script holds (its declared keys' and those it reached since)
    /// when it locked for itself; `None` inside a transaction, whose shards (in
    /// `ctx.keys`) it extends instead.
    own: Option<&'x mut Locked<'a>>,
    /// Writes are refused.
    read_only: bool,
    /// It may write over `maxmemory`.
    allow_oom: bool,
    slot: &'x Slot,
    /// The protocol chosen with `redis.setresp`.
    resp: u8,
    /// The destinations chosen with `redis.set_repl`.
    targets: Targets,
    /// Each command's reply, before it becomes Lua values (the buffer is reused).
    reply: Vec<u8>,
    /// The shards each command needs (the buffer is reused).
    shards: Vec<usize>,
}

impl<'x, 'c, 'a> Caller<'x, 'c, 'a> {
    pub fn new(
        ctx: &'x mut Ctx<'c, 'a>,
        own: Option<&'x mut Locked<'a>>,
        spec: &RunSpec,
        slot: &'x Slot,
    ) -> Self {
        Caller {
            ctx,
            own,
            read_only: spec.read_only,
            allow_oom: spec.allow_oom,
            slot,
            resp: 2,
            targets: Targets::ALL,
            reply: Vec::new(),
            shards: Vec::new(),
        }
    }

    /// The protocol the script chose last (for its own reply's booleans).
    pub fn resp(&self) -> u8 {
        self.resp
    }

    /// Checks and runs the command, its reply going to `reply`.
    fn run(&mut self, argv: &[&[u8]], reply: &mut ReplyWriter) -> Result<(), CallError> {
        let server = self.ctx.server;
        let cmd_id = resolve(argv).map_err(CallError::refusal)?;
        let cmd = commands::registry().get(cmd_id);
        if cmd.has(flags::NOSCRIPT) {
            return Err(CallError::refusal(
                "ERR This Redis command is not allowed from script",
            ));
        }
        if cmd.has(flags::WRITE) && self.read_only {
            return Err(CallError::refusal(
                "ERR Write commands are not allowed from read-only scripts.",
            ));
        }
        self.refuse_if_oom(cmd).map_err(CallError::refusal)?;
        if cmd.has(flags::WRITE) {
            // From here on, killing it could leave half its writes.
            self.slot.note_write();
        }
        let ctx = &mut *self.ctx;
        let keys: &mut Locked<'a> = match &mut self.own {
            Some(own) => own,
            None => ctx.keys,
        };
        // A SELECT earlier in the script moved it to another database.
        keys.db = ctx.client.db;
        self.shards.clear();
        commands::plan_locks(server, cmd, argv, keys.db, &mut self.shards);
        acquire(keys, &self.shards).map_err(CallError::refusal)?;
        let now = keys.now_ms;
        keys.begin_command(now);
        // Only this command's effects: a transaction goes on with its own after.
        keys.effect_targets = self.targets;
        let ran = commands::run_locked(server, ctx.stats, ctx.client, reply, argv, cmd_id, keys);
        keys.effect_targets = Targets::ALL;
        let origin = commands::slowlog::Origin::Script;
        commands::finish_call(server, ctx.stats, origin, cmd_id, argv, &ran);
        ran.result.map_err(|e| {
            // The command's error reply counts where it is made, as any other.
            commands::count_error_reply(server, ctx.stats, &e.0);
            CallError {
                text: e.0.into_owned(),
                counted: true,
            }
        })
    }

    /// Redis's rule for scripts over `maxmemory`: when the check before the script
    /// found nothing left to evict, a command that may grow memory is refused as long
    /// as the script has not called a write command yet (after one, stopping would
    /// leave it half done); `allow-oom` scripts are exempt.
    fn refuse_if_oom(&self, cmd: &Command) -> Result<(), String> {
        let over = self.ctx.client.over_memory && self.ctx.server.memory.limit().is_some();
        if over && cmd.has(flags::DENYOOM) && !self.allow_oom && !self.slot.has_written() {
            return Err(commands::errors::OOM.into());
        }
        Ok(())
    }
}

impl ScriptCalls for Caller<'_, '_, '_> {
    fn command(&mut self, stack: Stack, argv: &[&[u8]]) -> Result<(), CallError> {
        let protocol = match self.resp {
            3 => Protocol::Resp3,
            _ => Protocol::Resp2,
        };
        let mut reply = ReplyWriter {
            buf: std::mem::take(&mut self.reply),
            protocol,
        };
        reply.buf.clear();
        let ran = self.run(argv, &mut reply);
        let pushed = ran.and_then(|()| {
            push_reply(stack, &reply.buf).map_err(|text| {
                CallError::refusal(error_table_text(&[b"-", text.as_bytes()].concat()))
            })
        });
        self.reply = reply.buf;
        pushed
    }

    fn set_resp(&mut self, resp: u8) {
        self.resp = resp;
    }

    fn set_targets(&mut self, targets: Targets) {
        self.targets = targets;
    }
}

/// Takes the shards of `names` (in `keys.db`) that `keys` does not hold yet.
pub fn acquire_keys(keys: &mut Locked, names: &[&[u8]]) -> Result<(), String> {
    let ks = keys.keyspace();
    let db = keys.db;
    let ids: SmallVec<[usize; 4]> = names
        .iter()
        .map(|k| ks.global_id(db, ks.shard_of(hash_key(k))))
        .collect();
    acquire(keys, &ids)
}

fn acquire(keys: &mut Locked, ids: &[usize]) -> Result<(), String> {
    keys.acquire(ids, OUT_OF_ORDER_PATIENCE).map_err(|_| {
        "ERR a key the script did not declare is locked by another client; \
         declare every key the script uses in KEYS"
            .to_string()
    })
}

/// Finds the command (or subcommand) a script named and checks its arity, with the
/// texts Redis gives scripts.
fn resolve(argv: &[&[u8]]) -> Result<usize, String> {
    let registry = crate::commands::registry();
    let unknown = || "ERR Unknown Redis command called from script".to_string();
    let mut id = registry.lookup(argv[0]).ok_or_else(unknown)?;
    let cmd: &Command = registry.get(id);
    if !cmd.subcommands.is_empty() && argv.len() > 1 {
        id = registry.lookup_sub(cmd, argv[1]).ok_or_else(unknown)?;
    }
    if !registry.get(id).arity_ok(argv.len()) {
        return Err("ERR Wrong number of args calling Redis command from script".into());
    }
    Ok(id)
}
