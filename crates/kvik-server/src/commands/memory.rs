//! MEMORY: what a key costs, where the server's memory goes, and the allocator's
//! own view of it.
//!
//! MEMORY USAGE counts a key as kvik lays it out ([`crate::keyspace::Entry::memory_usage`]):
//! its entry allocation, its table slot, its deadline's place in the expiry index,
//! and what its value owns. The value structures keep their own byte counts, so
//! nothing is sampled: SAMPLES is checked as Redis checks it and then needs no use.
//! MEMORY STATS reports Redis's fields from the figures INFO memory reads, plus the
//! shards' bookkeeping per database.

use super::info::MemoryFigures;
use super::shared::help_reply;
use super::table::{acl, flags, key_flags, Command, Handler, Lock};
use super::{args, errors, CmdResult, Ctx};
use crate::stats;
use crate::util::numbers::format_f64;
use kvik_resp::ReplyWriter;
use std::fmt::Write;

/// The figures differ from node to node: a cluster client asks every shard.
const PER_SHARD: &[&str] = &[
    "nondeterministic_output",
    "request_policy:all_shards",
    "response_policy:special",
];

/// A report on the whole server.
const fn report(name: &'static str, handler: Handler) -> Command {
    Command::new(name, 2, handler)
        .tips(PER_SHARD)
        .acl(acl::SLOW)
}

const SUBCOMMANDS: &[Command] = &[
    report("memory|doctor", doctor).doc(
        "server",
        "4.0.0",
        "O(1)",
        "Reports memory problems, with advice.",
    ),
    report("memory|malloc-stats", malloc_stats).doc(
        "server",
        "4.0.0",
        "Depends on how much memory is allocated, could be slow",
        "Returns the allocator's statistics report.",
    ),
    Command::new("memory|purge", 2, purge)
        .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
        .acl(acl::SLOW)
        .doc(
            "server",
            "4.0.0",
            "Depends on how much memory is allocated, could be slow",
            "Has the allocator return unused pages to the system.",
        ),
    report("memory|stats", stats_reply).lock(Lock::Handler).doc(
        "server",
        "4.0.0",
        "O(1)",
        "Reports where the server's memory goes.",
    ),
    Command::new("memory|usage", -3, usage)
        .keys(2, 2, 1)
        .key_flags(key_flags::RO)
        .flags(flags::READONLY)
        .acl(acl::READ | acl::SLOW)
        .doc(
            "server",
            "4.0.0",
            "O(N) where N is the number of samples.",
            "Estimates the memory a key and its value take.",
        ),
    Command::help(
        "memory|help",
        help,
        "4.0.0",
        "Explains the MEMORY subcommands.",
    ),
];

pub const COMMANDS: &[Command] = &[Command::container(
    "memory",
    help,
    "4.0.0",
    "Memory diagnostics.",
    SUBCOMMANDS,
)];

/// MEMORY USAGE key [SAMPLES count]: the options are checked before the key is
/// looked up; a missing key is a null.
fn usage(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    for option in args[3..].chunks(2) {
        match option {
            [name, count] if args::is(name, "SAMPLES") => {
                if args::int(count)? < 0 {
                    return Err(errors::SYNTAX.into());
                }
            }
            _ => return Err(errors::SYNTAX.into()),
        }
    }
    match ctx.keys.peek(args[2]) {
        Some(entry) => ctx.out.int(entry.memory_usage() as i64),
        None => ctx.out.null(),
    }
    Ok(())
}

/// MEMORY STATS: Redis's fields, in its order.
fn stats_reply(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let server = ctx.server;
    let m = MemoryFigures::read(server);
    let scripting = &server.scripting;
    let (_, scripts_bytes) = scripting.cache_memory();
    let functions_bytes = scripting.libraries.memory();
    let mut dbs = Vec::new();
    let mut keys = 0;
    for db in 0..server.keyspace.databases() {
        let (count, _) = ctx.keys.db_stats(db);
        if count > 0 {
            keys += count;
            dbs.push((db, ctx.keys.db_overhead(db)));
        }
    }
    let tables: usize = dbs.iter().map(|(_, (main, expires))| main + expires).sum();
    let overhead = m.overhead + (scripts_bytes + functions_bytes + tables) as u64;
    let dataset = m.used.saturating_sub(overhead);
    let out = &mut *ctx.out;
    out.map(27 + dbs.len());
    field(out, "peak.allocated", m.peak);
    field(out, "total.allocated", m.used);
    field(out, "startup.allocated", m.startup);
    field(out, "replication.backlog", 0);
    field(out, "clients.slaves", 0);
    field(out, "clients.normal", m.clients);
    field(out, "cluster.links", 0);
    field(out, "aof.buffer", 0);
    field(out, "lua.caches", scripts_bytes as u64);
    field(out, "functions.caches", functions_bytes as u64);
    for (db, (main, expires)) in dbs {
        out.bulk(format!("db.{db}").as_bytes());
        out.map(3);
        field(out, "overhead.hashtable.main", main as u64);
        field(out, "overhead.hashtable.expires", expires as u64);
        field(out, "overhead.hashtable.slot-to-keys", 0);
    }
    field(out, "overhead.total", overhead);
    field(out, "keys.count", keys as u64);
    field(
        out,
        "keys.bytes-per-key",
        m.net_usage() / (keys as u64).max(1),
    );
    field(out, "dataset.bytes", dataset);
    real(out, "dataset.percentage", percent(dataset, m.net_usage()));
    real(out, "peak.percentage", percent(m.used, m.peak));
    let a = m.alloc;
    field(out, "allocator.allocated", a.allocated);
    field(out, "allocator.active", a.active);
    field(out, "allocator.resident", a.resident);
    real(
        out,
        "allocator-fragmentation.ratio",
        ratio(a.active, a.allocated),
    );
    signed(out, "allocator-fragmentation.bytes", a.active, a.allocated);
    real(out, "allocator.rss-ratio", ratio(a.resident, a.active));
    signed(out, "allocator.rss-bytes", a.resident, a.active);
    real(out, "rss-overhead.ratio", ratio(m.rss, a.resident));
    signed(out, "rss-overhead.bytes", m.rss, a.resident);
    real(out, "fragmentation", ratio(m.rss, m.used));
    signed(out, "fragmentation.bytes", m.rss, m.used);
    Ok(())
}

fn field(out: &mut ReplyWriter, name: &str, value: u64) {
    out.bulk(name.as_bytes());
    out.int(value as i64);
}

/// A ratio, written as Redis writes its (single precision) ratios.
fn real(out: &mut ReplyWriter, name: &str, value: f32) {
    out.bulk(name.as_bytes());
    out.double_text(format_f64(f64::from(value)).as_bytes());
}

/// `a - b`, which may be negative.
fn signed(out: &mut ReplyWriter, name: &str, a: u64, b: u64) {
    out.bulk(name.as_bytes());
    out.int((a as i64).wrapping_sub(b as i64));
}

fn ratio(a: u64, b: u64) -> f32 {
    a as f32 / b.max(1) as f32
}

fn percent(a: u64, b: u64) -> f32 {
    a as f32 * 100.0 / b.max(1) as f32
}

/// MEMORY DOCTOR.
fn doctor(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let report = diagnose(&MemoryFigures::read(ctx.server));
    ctx.out.verbatim(b"txt", report.as_bytes());
    Ok(())
}

/// Below this much used memory the ratios say nothing useful.
const TOO_SMALL_TO_TELL: u64 = 5 << 20;

/// A report for people: the problems the figures show and what to do about them.
fn diagnose(m: &MemoryFigures) -> String {
    if m.used < TOO_SMALL_TO_TELL {
        return format!(
            "The server uses {} bytes of memory: too little to tell anything from the \
             figures. Ask again once it holds data.\n",
            m.used
        );
    }
    let mut found: Vec<String> = Vec::new();
    if m.peak > m.used / 2 * 3 {
        found.push(format!(
            "Peak memory: the server once used {} bytes, more than 150% of the {} it uses \
             now. The RSS and fragmentation figures below may reflect that peak rather \
             than the present.",
            m.peak, m.used
        ));
    }
    let a = m.alloc;
    if ratio(a.active, a.allocated) > 1.1 && a.active - a.allocated > 10 << 20 {
        found.push(
            "Allocator fragmentation: jemalloc holds over 10% more active pages than the \
             data needs. Writes and deletes of many different sizes cause it; \
             `activedefrag yes` moves keys out of sparse pages so that they can be returned, \
             MEMORY PURGE returns the empty pages, a restart compacts everything."
                .to_owned(),
        );
    }
    if m.rss > m.used && ratio(m.rss, m.used) > 1.4 && m.rss - m.used > 10 << 20 {
        found.push(format!(
            "RSS: the process holds {} bytes of memory for {} bytes of allocations. Pages \
             freed since a peak stay with the process until the allocator returns them \
             (MEMORY PURGE).",
            m.rss, m.used
        ));
    }
    if m.clients > 200 << 20 {
        found.push(format!(
            "Clients: their buffers hold {} bytes. Big pipelines, slow readers and \
             subscribers that fall behind make them grow; client-output-buffer-limit bounds \
             them.",
            m.clients
        ));
    }
    if found.is_empty() {
        return "No memory problem found.\n".to_owned();
    }
    let mut report = String::from("Found these memory issues:\n\n");
    for issue in found {
        let _ = writeln!(report, "- {issue}");
    }
    report
}

/// MEMORY MALLOC-STATS.
fn malloc_stats(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out
        .verbatim(b"txt", stats::allocator_report().as_bytes());
    Ok(())
}

/// MEMORY PURGE.
fn purge(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    stats::purge_allocator();
    ctx.out.ok();
    Ok(())
}

fn help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx.out,
        "MEMORY",
        &[
            "DOCTOR",
            "    Return memory problems reports.",
            "MALLOC-STATS",
            "    Return internal statistics report from the memory allocator.",
            "PURGE",
            "    Attempt to purge dirty pages for reclamation by the allocator.",
            "STATS",
            "    Return information about the memory usage of the server.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
        ],
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(used: u64, peak: u64, rss: u64) -> MemoryFigures {
        MemoryFigures {
            alloc: stats::AllocatorStats {
                allocated: used,
                active: used,
                resident: used,
            },
            used,
            peak,
            rss,
            startup: 1 << 20,
            clients: 0,
            overhead: 1 << 20,
        }
    }

    #[test]
    fn doctor_names_what_it_finds() {
        assert!(diagnose(&figures(1 << 20, 1 << 20, 2 << 20)).contains("too little"));
        assert_eq!(
            diagnose(&figures(100 << 20, 100 << 20, 110 << 20)),
            "No memory problem found.\n"
        );
        let report = diagnose(&figures(100 << 20, 400 << 20, 300 << 20));
        assert!(report.contains("Peak memory"), "{report}");
        assert!(report.contains("RSS"), "{report}");
    }
}
