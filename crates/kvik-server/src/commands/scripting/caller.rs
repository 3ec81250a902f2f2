//! The command side of `redis.call`: what a running script's commands go through.
//!
//! A command runs through [`run_locked`] under the script's own [`Locked`], so it is
//! part of the script's atomic whole. Keys the script did not declare have their
//! shards taken on demand (see `Locked::acquire`): a shard above every held one is
//! waited for, a lower one only tried for a moment, since waiting for it could
//! deadlock against a command that holds it and waits for ours. The scripting engine
//! reaches this through [`ScriptCalls`]; the reply goes back to it as RESP bytes.

use super::run::RunSpec;
use crate::commands::table::{flags, Command};
use crate::commands::{self, plan_locks, registry, run_locked, Ctx};
use crate::effects::Targets;
use crate::keyspace::{hash_key, Locked};
use crate::scripting::busy::Slot;
use crate::scripting::{CallError, ScriptCalls};
use crate::server::Server;
use kvik_resp::{Protocol, ReplyWriter};
use smallvec::SmallVec;
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
    /// The keys the script declared (KEYS), whose shards it holds throughout.
    declared: &'x [&'x [u8]],
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
        declared: &'x [&'x [u8]],
        spec: &RunSpec,
        slot: &'x Slot,
    ) -> Self {
        Caller {
            ctx,
            own,
            declared,
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
        let cmd_id = resolve(server, argv).map_err(CallError::refusal)?;
        let cmd = registry().get(cmd_id);
        if cmd.has(flags::NOSCRIPT) {
            return Err(CallError::refusal(
                "ERR This Redis command is not allowed from script",
            ));
        }
        // Redis counts a command that may replicate (PUBLISH, PFCOUNT) as a write here.
        if cmd.has(flags::WRITE | flags::MAY_REPLICATE) && self.read_only {
            return Err(CallError::refusal(
                "ERR Write commands are not allowed from read-only scripts.",
            ));
        }
        self.refuse_if_oom(cmd).map_err(CallError::refusal)?;
        let client = &mut *self.ctx.client;
        if !client.acl.is_unrestricted(&server.acl) {
            let context = crate::acl::Context::Lua;
            commands::acl::check_restricted(server, client, cmd_id, argv, context)
                .map_err(|denied| CallError::refusal(commands::acl::script_refusal_text(denied)))?;
        }
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
        plan_locks(server, cmd, argv, keys.db, &mut self.shards);
        acquire(keys, &self.shards).map_err(CallError::refusal)?;
        let now = keys.now_ms;
        keys.begin_command(now);
        // Only this command's effects: a transaction goes on with its own after.
        keys.effect_targets = self.targets;
        let ran = run_locked(server, ctx.stats, ctx.client, reply, argv, cmd_id, keys);
        keys.effect_targets = Targets::ALL;
        if ctx.client.tracking.is_some() && cmd.has(flags::READONLY) {
            commands::remember_script_reads(server, ctx.client, self.declared);
        }
        let origin = commands::slowlog::Origin::Script;
        commands::finish_call(server, ctx.stats, origin, cmd_id, argv, &ran);
        ran.result.map_err(|e| {
            // The command's error reply counts where it is made, as any other.
            commands::count_error_reply(server, ctx.stats, &e.0);
            CallError::counted(e.0)
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
    fn command(&mut self, argv: &[&[u8]]) -> Result<&[u8], CallError> {
        let protocol = match self.resp {
            3 => Protocol::Resp3,
            _ => Protocol::Resp2,
        };
        let mut reply = ReplyWriter::with_buf(std::mem::take(&mut self.reply), protocol);
        reply.buf.clear();
        let ran = self.run(argv, &mut reply);
        self.reply = reply.buf;
        ran.map(|()| self.reply.as_slice())
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
fn resolve(server: &Server, argv: &[&[u8]]) -> Result<usize, String> {
    let registry = registry();
    let unknown = || "ERR Unknown Redis command called from script".to_string();
    let mut id = commands::lookup_name(server, argv[0]).ok_or_else(unknown)?;
    let cmd: &Command = registry.get(id);
    if !cmd.subcommands.is_empty() && argv.len() > 1 {
        id = registry.lookup_sub(cmd, argv[1]).ok_or_else(unknown)?;
    }
    if !registry.get(id).arity_ok(argv.len()) {
        return Err("ERR Wrong number of args calling Redis command from script".into());
    }
    Ok(id)
}
