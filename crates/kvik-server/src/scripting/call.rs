//! `redis.call`, `redis.pcall`, `redis.setresp` and `redis.set_repl`: the members of
//! `redis` that reach the running script's command context, written as C functions
//! over the Lua stack.
//!
//! The C functions read their arguments off the Lua stack and hand them to the run
//! in progress through [`ScriptCalls`], which the command layer implements (running a
//! command there, under the script's locks, is its business, not the engine's): this
//! module knows the Lua side only. The reply comes back as RESP bytes, parsed into
//! Lua values on the stack. The command's effects go where the script last said with
//! `redis.set_repl` (see [`crate::effects::Targets`]).
//!
//! Being C functions keeps `return redis.call(...)` from erasing the script's frame
//! (a Lua tail call would), so error replies name the script's line, as in Redis; it
//! also spares every call a Lua wrapper and an mlua callback. The run that is going
//! on is found through a thread-local pointer ([`Installed`]). A Lua error unwinds
//! by `longjmp`, so one is raised only once every Rust value of the call is gone.

use super::convert::{error_table_text, mark_counted, push_reply, truncate_like_c};
use super::stack::Stack;
use crate::effects::Targets;
use crate::util::numbers::write_f64;
use mlua::ffi::{self, lua_State};
use smallvec::SmallVec;
use std::cell::Cell;
use std::ffi::c_int;
use std::marker::PhantomData;
use std::ptr::NonNull;

/// Why `redis.call` / `redis.pcall` gave an error table.
pub struct CallError {
    text: String,
    /// It is the command's own error reply, counted in INFO errorstats when it was
    /// made: the table says so (`ignore_error_stats_update`, as Redis names it), so
    /// that a script returning it does not count it twice.
    counted: bool,
}

impl CallError {
    /// An error of the call itself (an unknown command, a write from a read-only
    /// script, ...), counted only if the script replies with it.
    pub fn refusal(text: impl Into<String>) -> Self {
        CallError {
            text: text.into(),
            counted: false,
        }
    }

    /// The command's own error reply, counted in INFO errorstats already.
    pub fn counted(text: impl Into<String>) -> Self {
        CallError {
            text: text.into(),
            counted: true,
        }
    }
}

/// What the `redis.*` C functions ask of the run in progress.
pub trait ScriptCalls {
    /// Runs one command and returns its reply (RESP, in the protocol the script
    /// chose with `redis.setresp`), or its error.
    fn command(&mut self, argv: &[&[u8]]) -> Result<&[u8], CallError>;
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
pub struct Installed<'x>(PhantomData<&'x mut ()>);

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
    let result = crate::crash::recover(|| work(calls));
    CURRENT.with(|current| current.set(Some(ptr)));
    result.ok_or("ERR internal error while running a script command")
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
            |calls| {
                let reply = calls.command(&argv);
                // The arguments are done with: their slots go back to the reply. A C
                // function's stack holds at most 8,000 values (LUAI_MAXCSTACK), so a
                // call given nearly that many (`unpack` of a large table) would have
                // no room left for it.
                stack.set_top(0);
                push_reply(stack, reply?).map_err(|text| {
                    CallError::refusal(error_table_text(&[b"-", text.as_bytes()].concat()))
                })
            },
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
