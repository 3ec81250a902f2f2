//! `redis.call` and `redis.pcall`: one Redis command run from inside a script.
//!
//! The command runs through [`commands::run_locked`] under the script's own
//! [`Locked`](crate::keyspace::Locked), so it is part of the script's atomic whole.
//! Keys the script did not declare have their shards taken on demand (see
//! `Locked::acquire`): a shard above every held one is waited for, a lower one only
//! tried for a moment, since waiting for it could deadlock against a command that
//! holds it and waits for ours. The reply is written in the protocol the script chose
//! and parsed back into Lua values.

use super::busy::RunningScript;
use super::convert::{error_table_text, reply_to_lua};
use super::run::RunSpec;
use crate::commands::table::{flags, Command};
use crate::commands::{self, Ctx};
use crate::keyspace::{hash_key, Locked};
use crate::util::numbers::write_f64;
use kvik_resp::{Protocol, ReplyWriter};
use mlua::{Lua, MultiValue, Table, Value};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long a script waits for the shard of an undeclared key that sorts below a
/// shard it holds before its call fails.
const OUT_OF_ORDER_PATIENCE: Duration = Duration::from_millis(200);

/// The script's side of its commands.
pub struct Caller<'x, 'c, 'a> {
    ctx: &'x mut Ctx<'c, 'a>,
    /// The shards the script holds (its declared keys' and those it reached since)
    /// when it locked for itself; `None` inside a transaction, whose shards (in
    /// `ctx.keys`) it extends instead.
    own: Option<&'x mut Locked<'a>>,
    spec: &'x RunSpec<'x>,
    script: &'x RunningScript,
    bridge: &'x Table,
}

impl<'x, 'c, 'a> Caller<'x, 'c, 'a> {
    pub fn new(
        ctx: &'x mut Ctx<'c, 'a>,
        own: Option<&'x mut Locked<'a>>,
        spec: &'x RunSpec<'x>,
        script: &'x RunningScript,
        bridge: &'x Table,
    ) -> Self {
        Caller {
            ctx,
            own,
            spec,
            script,
            bridge,
        }
    }

    /// Runs one command; `(true, reply)` or `(false, error text)`.
    pub fn dispatch(&mut self, lua: &Lua, args: MultiValue) -> mlua::Result<(bool, Value)> {
        let argv = match script_argv(args) {
            Ok(argv) => argv,
            Err(text) => return Ok((false, Value::String(lua.create_string(text)?))),
        };
        let protocol = match self.bridge.raw_get::<i64>("resp").unwrap_or(2) {
            3 => Protocol::Resp3,
            _ => Protocol::Resp2,
        };
        let mut reply = ReplyWriter {
            buf: Vec::new(),
            protocol,
        };
        let argv: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
        if let Err(text) = self.run(&argv, &mut reply) {
            return Ok((false, Value::String(lua.create_string(text)?)));
        }
        match reply_to_lua(lua, &reply.buf)? {
            Ok(value) => Ok((true, value)),
            Err(text) => {
                let text = error_table_text(&[b"-", text.as_bytes()].concat());
                Ok((false, Value::String(lua.create_string(text)?)))
            }
        }
    }

    /// Checks and runs the command, its reply going to `reply`.
    fn run(&mut self, argv: &[&[u8]], reply: &mut ReplyWriter) -> Result<(), String> {
        let server = self.ctx.server;
        let cmd_id = resolve(server, argv)?;
        let cmd = server.commands.get(cmd_id);
        if cmd.has(flags::NOSCRIPT) {
            return Err("ERR This Redis command is not allowed from script".into());
        }
        if cmd.has(flags::WRITE) && self.spec.read_only {
            return Err("ERR Write commands are not allowed from read-only scripts.".into());
        }
        self.refuse_if_oom(cmd)?;
        if cmd.has(flags::WRITE) {
            // From here on killing it could leave half its writes.
            self.script.wrote.store(true, Ordering::Release);
        }
        let ctx = &mut *self.ctx;
        let keys: &mut Locked<'a> = match &mut self.own {
            Some(own) => own,
            None => ctx.keys,
        };
        // A SELECT earlier in the script moved it to another database.
        keys.db = ctx.client.db;
        lock_keys_of(server, keys, cmd, argv)?;
        let now = keys.now_ms;
        keys.begin_command(now);
        let ran = commands::run_locked(server, ctx.stats, ctx.client, reply, argv, cmd_id, keys);
        commands::count_call(server, ctx.stats, cmd_id, ran.elapsed, ran.result.is_err());
        ran.result.map_err(|e| e.0.into_owned())
    }

    /// Redis's rule for scripts over `maxmemory`: when the check before the script
    /// found nothing left to evict, a command that may grow memory is refused as long
    /// as the script has not called a write command yet (after one, stopping would
    /// leave it half done); `allow-oom` scripts are exempt.
    fn refuse_if_oom(&self, cmd: &Command) -> Result<(), String> {
        let over = self.ctx.client.over_memory && self.ctx.server.memory.limit().is_some();
        let started_writing = self.script.wrote.load(Ordering::Acquire);
        if over && cmd.has(flags::DENYOOM) && !self.spec.allow_oom && !started_writing {
            return Err(commands::errors::OOM.into());
        }
        Ok(())
    }
}

/// Makes sure the script holds the shards `cmd` needs (in `keys.db`), planned as for a
/// command inside a transaction (commands that lock for themselves, such as SCAN, get
/// every shard).
fn lock_keys_of(
    server: &crate::server::Server,
    keys: &mut Locked,
    cmd: &Command,
    argv: &[&[u8]],
) -> Result<(), String> {
    let mut ids = Vec::new();
    commands::plan_locks(server, cmd, argv, keys.db, &mut ids);
    acquire(keys, &ids)
}

/// Takes the shards of `names` (in `keys.db`) that `keys` does not hold yet.
pub fn acquire_keys(keys: &mut Locked, names: &[&[u8]]) -> Result<(), String> {
    let ks = keys.keyspace();
    let db = keys.db;
    let ids: Vec<usize> = names
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
fn resolve(server: &crate::server::Server, argv: &[&[u8]]) -> Result<usize, String> {
    let registry = &server.commands;
    let unknown = || "ERR Unknown Redis command called from script".to_string();
    let mut id = registry.lookup(argv[0]).ok_or_else(unknown)?;
    let cmd = registry.get(id);
    if !cmd.subcommands.is_empty() && argv.len() > 1 {
        id = registry.lookup_sub(cmd, argv[1]).ok_or_else(unknown)?;
    }
    if !registry.get(id).arity_ok(argv.len()) {
        return Err("ERR Wrong number of args calling Redis command from script".into());
    }
    Ok(id)
}

/// The arguments of `redis.call` as bytes: strings as they are, numbers as Redis
/// formats them (integers plainly, others as `%.17g`).
fn script_argv(args: MultiValue) -> Result<Vec<Vec<u8>>, &'static str> {
    if args.is_empty() {
        return Err("ERR Please specify at least one argument for this redis lib call");
    }
    args.into_iter()
        .map(|v| match v {
            Value::String(s) => Ok(s.as_bytes().to_vec()),
            Value::Integer(n) => Ok(n.to_string().into_bytes()),
            Value::Number(d) => {
                let mut text = Vec::new();
                write_f64(&mut text, d);
                Ok(text)
            }
            _ => Err("ERR Lua redis lib command arguments must be strings or integers"),
        })
        .collect()
}
