//! LATENCY: the latency monitor's samples ([`crate::latency`]) and the per-command
//! latency histograms that INFO latencystats also reads ([`crate::stats`]).
//!
//! The replies are Redis 7.0's shapes. GRAPH and DOCTOR are texts for people: they
//! carry the same figures as Redis's, in kvik's own words and drawing.

use super::shared::help_reply;
use super::table::{acl, flags, Command};
use super::{CmdResult, Ctx};
use crate::latency::{Event, Sample, Series};
use crate::server::Server;
use crate::stats;
use kvik_resp::ReplyWriter;
use std::fmt::Write;

/// What every LATENCY subcommand but HELP shares.
const fn sub(name: &'static str, arity: i32, handler: super::table::Handler) -> Command {
    Command::new(name, arity, handler)
        .flags(flags::ADMIN | flags::NOSCRIPT | flags::LOADING | flags::STALE)
        .acl(acl::ADMIN | acl::SLOW | acl::DANGEROUS)
}

/// The monitor's state differs from node to node; a cluster client asks them all.
const PER_NODE: &[&str] = &[
    "nondeterministic_output",
    "request_policy:all_nodes",
    "response_policy:special",
];

const SUBCOMMANDS: &[Command] = &[
    sub("latency|doctor", 2, doctor).tips(PER_NODE).doc(
        "server",
        "2.8.13",
        "O(1)",
        "Reports on the latency events recorded, with advice.",
    ),
    sub("latency|graph", 3, graph).tips(PER_NODE).doc(
        "server",
        "2.8.13",
        "O(1)",
        "Draws an event's latency samples as text.",
    ),
    sub("latency|history", 3, history).tips(PER_NODE).doc(
        "server",
        "2.8.13",
        "O(1)",
        "Returns an event's latency samples, oldest first.",
    ),
    sub("latency|latest", 2, latest).tips(PER_NODE).doc(
        "server",
        "2.8.13",
        "O(1)",
        "Returns the latest and worst latency of every event.",
    ),
    sub("latency|reset", -2, reset)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc(
            "server",
            "2.8.13",
            "O(1)",
            "Forgets the samples of some events, or of all.",
        ),
    sub("latency|histogram", -2, histogram).tips(PER_NODE).doc(
        "server",
        "7.0.0",
        "O(N) where N is the number of commands with latency information being retrieved.",
        "Returns per-command latency histograms.",
    ),
    Command::help(
        "latency|help",
        help,
        "2.8.13",
        "Explains the LATENCY subcommands.",
    ),
];

pub const COMMANDS: &[Command] = &[Command::container(
    "latency",
    help,
    "2.8.13",
    "Reads the latency monitor and the command latency histograms.",
    SUBCOMMANDS,
)];

/// LATENCY LATEST: per event with samples, its newest sample and its worst ever.
fn latest(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let all = ctx.server.latency.all();
    ctx.out.array(all.len());
    for (event, series) in &all {
        let newest = series.latest();
        ctx.out.array(4);
        ctx.out.bulk(event.name().as_bytes());
        ctx.out.int(newest.time as i64);
        ctx.out.int(newest.latency_ms as i64);
        ctx.out.int(series.max_ms as i64);
    }
    Ok(())
}

/// LATENCY HISTORY event: its samples as (time, latency) pairs; none for an event
/// that has none or that kvik does not know.
fn history(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let samples: Vec<Sample> = series_of(ctx.server, args[2])
        .map(|s| s.history().collect())
        .unwrap_or_default();
    ctx.out.array(samples.len());
    for sample in samples {
        ctx.out.array(2);
        ctx.out.int(sample.time as i64);
        ctx.out.int(sample.latency_ms as i64);
    }
    Ok(())
}

fn series_of(server: &Server, name: &[u8]) -> Option<Series> {
    Event::from_name(name).and_then(|e| server.latency.series(e))
}

/// LATENCY RESET [event ...]: how many events lost their samples.
fn reset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let monitor = &ctx.server.latency;
    let cleared = if args.len() == 2 {
        Event::ALL.into_iter().filter(|&e| monitor.reset(e)).count()
    } else {
        args[2..]
            .iter()
            .filter_map(|name| Event::from_name(name))
            .filter(|&e| monitor.reset(e))
            .count()
    };
    ctx.out.int(cleared as i64);
    Ok(())
}

/// LATENCY GRAPH event.
fn graph(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let Some(series) = series_of(ctx.server, args[2]) else {
        let name = String::from_utf8_lossy(args[2]);
        return Err(format!("ERR No samples available for event '{name}'").into());
    };
    let name = String::from_utf8_lossy(args[2]);
    let now = crate::hlc::unix_ms() / 1000;
    let text = draw(&name, &series, now);
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

/// Columns of the graph: one per sample, the newest at the right.
const GRAPH_WIDTH: usize = 80;
/// Rows of bars.
const GRAPH_HEIGHT: u64 = 4;

/// The newest samples of `series` as bars between the lowest and the highest shown,
/// under a title with the figures Redis's graph gives.
fn draw(name: &str, series: &Series, now: u64) -> String {
    let all: Vec<Sample> = series.history().collect();
    let shown = &all[all.len().saturating_sub(GRAPH_WIDTH)..];
    let high = shown.iter().map(|s| s.latency_ms).max().unwrap_or(0);
    let low = shown.iter().map(|s| s.latency_ms).min().unwrap_or(0);
    let mut text = format!(
        "{name} - high {high} ms, low {low} ms (all time high {} ms)\n{}\n",
        series.max_ms,
        "-".repeat(GRAPH_WIDTH)
    );
    let level = |ms: u64| match high - low {
        0 => GRAPH_HEIGHT,
        span => 1 + (ms - low) * (GRAPH_HEIGHT - 1) / span,
    };
    for row in (1..=GRAPH_HEIGHT).rev() {
        let line: String = shown
            .iter()
            .map(|s| if level(s.latency_ms) >= row { '#' } else { ' ' })
            .collect();
        text.push_str(line.trim_end());
        text.push('\n');
    }
    if let (Some(first), Some(last)) = (shown.first(), shown.last()) {
        let _ = writeln!(
            text,
            "{} samples, one per second with a spike: the first {} ago, the last {} ago",
            shown.len(),
            age(now.saturating_sub(first.time)),
            age(now.saturating_sub(last.time)),
        );
    }
    text
}

/// `42s`, `7m`, `3h`, `2d`: how long ago, roughly.
fn age(secs: u64) -> String {
    match secs {
        0..=59 => format!("{secs}s"),
        60..=3599 => format!("{}m", secs / 60),
        3600..=86399 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86400),
    }
}

/// LATENCY DOCTOR.
fn doctor(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let monitor = &ctx.server.latency;
    let report = diagnose(&monitor.all(), monitor.threshold_ms());
    ctx.out.verbatim(b"txt", report.as_bytes());
    Ok(())
}

/// A report for people: what each event's spikes look like and what usually causes
/// them.
fn diagnose(events: &[(Event, Series)], threshold_ms: Option<u64>) -> String {
    if events.is_empty() {
        return match threshold_ms {
            None => "The latency monitor is off, so there is nothing to report. Turn it on with \
                     CONFIG SET latency-monitor-threshold <milliseconds>: events that take at \
                     least that long are then recorded.\n"
                .to_owned(),
            Some(ms) => format!(
                "No event took {ms} ms or more (latency-monitor-threshold) since the server \
                 started or the last LATENCY RESET. Nothing to worry about.\n"
            ),
        };
    }
    let mut report = String::from("Latency spikes were recorded:\n\n");
    for (event, series) in events {
        describe(&mut report, *event, series);
    }
    report.push_str("\nWhat usually helps:\n\n");
    let mut given: Vec<&str> = Vec::new();
    for (event, _) in events {
        let tip = advice(*event);
        if !given.contains(&tip) {
            given.push(tip);
            let _ = writeln!(report, "- {tip}");
        }
    }
    report
}

/// One line on an event: how many spikes, over how long, their average, mean
/// deviation and worst.
fn describe(report: &mut String, event: Event, series: &Series) {
    let samples: Vec<Sample> = series.history().collect();
    let n = samples.len() as u64;
    let sum: u64 = samples.iter().map(|s| s.latency_ms).sum();
    let avg = sum / n.max(1);
    let deviation = samples
        .iter()
        .map(|s| s.latency_ms.abs_diff(avg))
        .sum::<u64>()
        / n.max(1);
    let span = match (samples.first(), samples.last()) {
        (Some(first), Some(last)) => last.time - first.time,
        _ => 0,
    };
    let _ = writeln!(
        report,
        "- {}: {n} spike(s) over {span} s, average {avg} ms (mean deviation {deviation} ms), \
         worst recorded {} ms.",
        event.name(),
        series.max_ms
    );
}

/// What usually causes an event's spikes, and what to do about it.
fn advice(event: Event) -> &'static str {
    match event {
        Event::Command => {
            "Slow commands: SLOWLOG GET shows which. Commands over whole collections or the \
             whole keyspace (KEYS, SMEMBERS, HGETALL, LRANGE 0 -1, SORT, big DEL) take time \
             in proportion to their size: use SCAN and its family, smaller values, UNLINK."
        }
        Event::FastCommand => {
            "Commands that should take microseconds took milliseconds: the machine is likely \
             overloaded, swapping or stealing CPU time from the server threads (check the \
             load, swap use and the hypervisor's steal time)."
        }
        Event::ExpireCycle => {
            "Active expiry took long: many keys expired at the same moment. Spreading their \
             TTLs over time spreads the work."
        }
        Event::EvictionCycle | Event::EvictionDel => {
            "Eviction took long: the server runs at maxmemory and frees keys before writes. \
             Raise maxmemory, store less, or prefer smaller values (big ones take longer to \
             free)."
        }
    }
}

/// LATENCY HISTOGRAM [command ...]: per command, its calls and the cumulative count
/// of calls at or under each power-of-two microseconds, as Redis 7.0 reports them.
/// A container names its subcommands too; unknown or never called ones are left out.
fn histogram(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let server = ctx.server;
    let registry = crate::commands::registry();
    let mut wanted: Vec<usize> = Vec::new();
    if args.len() == 2 {
        wanted.extend(registry.iter().map(|(id, _)| id));
    }
    for name in &args[2..] {
        let Some(id) = registry.lookup(name) else {
            continue;
        };
        wanted.push(id);
        let cmd = registry.get(id);
        let subs = cmd
            .subcommands
            .iter()
            .filter_map(|s| registry.lookup(s.name.as_bytes()));
        wanted.extend(subs);
    }
    let found: Vec<(&str, Vec<u64>)> = wanted
        .into_iter()
        .filter_map(|id| {
            Some((
                registry.get(id).name,
                stats::merged_latency(&server.thread_stats, id)?,
            ))
        })
        .collect();
    ctx.out.map(found.len());
    for (name, counts) in &found {
        ctx.out.bulk(name.as_bytes());
        write_histogram(ctx.out, counts);
    }
    Ok(())
}

fn write_histogram(out: &mut ReplyWriter, counts: &[u64]) {
    let steps = stats::cumulative_by_powers_of_two(counts);
    out.map(2);
    out.bulk(b"calls");
    out.int(counts.iter().sum::<u64>() as i64);
    out.bulk(b"histogram_usec");
    out.map(steps.len());
    for (usec, calls) in steps {
        out.int(usec as i64);
        out.int(calls as i64);
    }
}

fn help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx.out,
        "LATENCY",
        &[
            "DOCTOR",
            "    Return a human readable latency analysis report.",
            "GRAPH <event>",
            "    Return an ASCII latency graph for the <event> class.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
            "HISTOGRAM [COMMAND ...]",
            "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
            "    If no commands are specified then all histograms are replied.",
        ],
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(samples: &[(u64, u64)]) -> Series {
        let mut s = Series::default();
        for &(time, ms) in samples {
            s.add(time, ms);
        }
        s
    }

    #[test]
    fn graph_scales_bars_between_low_and_high() {
        let text = draw("command", &series(&[(100, 10), (101, 40), (102, 25)]), 110);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "command - high 40 ms, low 10 ms (all time high 40 ms)"
        );
        assert_eq!(lines[1], "-".repeat(80));
        assert_eq!(&lines[2..6], [" #", " #", " ##", "###"]);
        assert!(
            lines[6].contains("the first 10s ago, the last 8s ago"),
            "{}",
            lines[6]
        );
    }

    #[test]
    fn doctor_reports_each_event_and_its_advice_once() {
        let events = [
            (Event::EvictionCycle, series(&[(1, 5), (3, 7)])),
            (Event::EvictionDel, series(&[(2, 3)])),
        ];
        let report = diagnose(&events, Some(1));
        assert!(report.contains("- eviction-cycle: 2 spike(s) over 2 s, average 6 ms"));
        assert_eq!(report.matches("Eviction took long").count(), 1);
        assert!(diagnose(&[], None).contains("off"));
        assert!(diagnose(&[], Some(5)).contains("5 ms"));
    }
}
