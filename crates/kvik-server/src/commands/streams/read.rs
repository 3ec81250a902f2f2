//! XREAD and XREADGROUP: reading several streams after given IDs, through a consumer
//! group or not, waiting for new entries with BLOCK.
//!
//! A read first serves every stream that has something for it; only when none has
//! does a BLOCK read wait ([`crate::blocking`]), and then the first stream to get an
//! entry past the ID serves it (XREAD `$` means past the last ID at the time of the
//! call; XREADGROUP `>` past the group's last delivered ID at the time of serving).
//! A waiting XREADGROUP also ends when its key is deleted or changes type (error
//! `UNBLOCKED`) or its group is destroyed (error `NOGROUP`), as in Redis 7.0.
//!
//! Entries handed out through a group enter its pending entries list, unless NOACK,
//! and each is propagated as an idempotent `XCLAIM ... TIME t RETRYCOUNT n FORCE
//! JUSTID LASTID id`; a NOACK read propagates instead the consumer it created
//! (`XGROUP CREATECONSUMER`) and, when it moved the group, `XGROUP SETID ...
//! ENTRIESREAD n`. XREAD itself propagates nothing.

use super::effects::{claim_effect, propagate_all, setid_effect};
use super::{int_arg, parse_id, write_entry, write_id};
use crate::blocking::Action;
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::keyspace::Locked;
use crate::notify::class;
use crate::types::stream::{Name, Stream, StreamId};
use crate::types::EncodingLimits;
use crate::types::Value;
use kvik_resp::ReplyWriter;

/// A blocked read with no COUNT gets at most this many entries per stream.
const BLOCKED_DEFAULT_COUNT: usize = 1000;

/// The options of one XREAD / XREADGROUP call.
struct ReadArgs<'a> {
    /// Milliseconds to wait; `None` without BLOCK, `Some(0)` forever.
    block_ms: Option<u64>,
    /// 0 = no limit.
    count: usize,
    group: Option<(&'a [u8], &'a [u8])>,
    noack: bool,
    keys: &'a [&'a [u8]],
    ids: &'a [&'a [u8]],
    /// Where the keys start.
    streams_at: usize,
}

impl<'a> ReadArgs<'a> {
    /// `from_script`: a script runs it, where BLOCK is refused outright (Redis keeps
    /// this older error for scripts rather than answering as a timeout).
    fn parse(args: &'a [&'a [u8]], from_script: bool) -> Result<ReadArgs<'a>, CmdError> {
        let grouped = args[0].len() == 10;
        let mut read = ReadArgs {
            block_ms: None,
            count: 0,
            group: None,
            noack: false,
            keys: &[],
            ids: &[],
            streams_at: 0,
        };
        let mut i = 1;
        while i < args.len() {
            let more = args.len() - 1 - i;
            let opt = args[i];
            if args::is(opt, "block") && more > 0 {
                if from_script {
                    return Err(format!(
                        "ERR {} command is not allowed with BLOCK option from scripts",
                        String::from_utf8_lossy(args[0])
                    )
                    .into());
                }
                i += 1;
                read.block_ms = Some(parse_block_ms(args[i])?);
            } else if args::is(opt, "count") && more > 0 {
                i += 1;
                read.count = int_arg(args[i])?.max(0) as usize;
            } else if args::is(opt, "streams") && more > 0 {
                let rest = &args[i + 1..];
                if !rest.len().is_multiple_of(2) {
                    // Redis 7.0 says XREAD and `$` for XREADGROUP too.
                    return Err("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.".into());
                }
                read.streams_at = i + 1;
                (read.keys, read.ids) = rest.split_at(rest.len() / 2);
                break;
            } else if args::is(opt, "group") && more >= 2 {
                if !grouped {
                    return Err("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.".into());
                }
                read.group = Some((args[i + 1], args[i + 2]));
                i += 2;
            } else if args::is(opt, "noack") {
                if !grouped {
                    return Err("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.".into());
                }
                read.noack = true;
            } else {
                return Err(errors::SYNTAX.into());
            }
            i += 1;
        }
        if read.streams_at == 0 {
            return Err(errors::SYNTAX.into());
        }
        if grouped && read.group.is_none() {
            return Err("ERR Missing GROUP option for XREADGROUP".into());
        }
        Ok(read)
    }
}

/// BLOCK's milliseconds, with Redis's errors.
fn parse_block_ms(arg: &[u8]) -> Result<u64, CmdError> {
    let ms = crate::util::numbers::parse_i64(arg).ok_or(CmdError::from(
        "ERR timeout is not an integer or out of range",
    ))?;
    if ms < 0 {
        return Err("ERR timeout is negative".into());
    }
    Ok(ms as u64)
}

/// What a read starts after, per stream.
#[derive(Clone, Copy)]
enum After {
    Id(StreamId),
    /// XREADGROUP `>`: the group's last delivered ID.
    New,
}

/// `XREAD [COUNT n] [BLOCK ms] STREAMS key ... id ...` and `XREADGROUP GROUP group
/// consumer [COUNT n] [BLOCK ms] [NOACK] STREAMS key ... id ...` (told apart by name).
pub fn read(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let read = ReadArgs::parse(args, ctx.client.running_script)?;
    ctx.propagated = true;
    let afters = resolve_ids(ctx.keys, &read)?;
    let now = ctx.keys.now_ms;
    let mut served = 0;
    let mut body = ReplyWriter::with_buf(Vec::new(), ctx.out.protocol);
    for (key, after) in read.keys.iter().zip(&afters) {
        let done = match read.group {
            Some((group, consumer)) => {
                let request = GroupRead {
                    group,
                    consumer,
                    count: read.count,
                    noack: read.noack,
                };
                request.serve_now(ctx.keys, &mut body, key, *after, now)
            }
            None => serve_plain(ctx.keys, &mut body, key, *after, read.count),
        };
        served += usize::from(done);
    }
    if served > 0 {
        write_streams_header(ctx.out, served);
        ctx.out.buf.extend_from_slice(&body.buf);
        return Ok(());
    }
    let Some(block_ms) = read.block_ms else {
        ctx.out.null_array();
        return Ok(());
    };
    if !crate::commands::blocking::may_block(ctx.client) {
        ctx.out.null_array();
        return Ok(());
    }
    let deadline = (block_ms > 0).then(|| ctx.keys.now_ms.saturating_add(block_ms));
    let count = if read.count == 0 {
        BLOCKED_DEFAULT_COUNT
    } else {
        read.count
    };
    let wait = Wait {
        after: read
            .keys
            .iter()
            .zip(&afters)
            .map(|(k, a)| (k.to_vec(), *a))
            .collect(),
        count,
        group: read.group.map(|(g, c)| WaitGroup {
            name: g.to_vec(),
            consumer: c.to_vec(),
            noack: read.noack,
        }),
    };
    crate::commands::blocking::block(ctx, read.keys, deadline, wait);
    Ok(())
}

/// Check the keys (and groups) and read each ID argument.
fn resolve_ids(keys: &mut Locked<'_>, read: &ReadArgs<'_>) -> Result<Vec<After>, CmdError> {
    let mut afters = Vec::with_capacity(read.keys.len());
    for (key, id) in read.keys.iter().zip(read.ids) {
        let stream = super::stream_read(keys, key)?;
        if let Some((group, _)) = read.group {
            if !stream
                .as_ref()
                .is_some_and(|s| s.groups.contains_key(group))
            {
                return Err(format!(
                    "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                    String::from_utf8_lossy(key),
                    String::from_utf8_lossy(group)
                )
                .into());
            }
        }
        let after = match *id {
            b"$" if read.group.is_some() => {
                return Err("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.".into())
            }
            b"$" => After::Id(stream.map_or(StreamId::MIN, |s| s.last_id)),
            b">" if read.group.is_none() => {
                return Err("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.".into())
            }
            b">" => After::New,
            _ => match parse_id(id, 0, true)? {
                // Redis stands for `>` with the greatest ID, so spelling that ID out
                // in XREADGROUP reads new entries too.
                StreamId::MAX if read.group.is_some() => After::New,
                given => After::Id(given),
            },
        };
        afters.push(after);
    }
    Ok(afters)
}

/// The reply's outer level: one element per stream served (a map in RESP3).
fn write_streams_header(out: &mut ReplyWriter, streams: usize) {
    if out.is_resp3() {
        out.map(streams);
    } else {
        out.array(streams);
    }
}

/// One stream's part of the reply: `[key, entries]` (a map entry in RESP3).
fn write_stream_key(out: &mut ReplyWriter, key: &[u8]) {
    if !out.is_resp3() {
        out.array(2);
    }
    out.bulk(key);
}

/// XREAD of one stream: its entries after `after`, if there are any.
fn serve_plain(
    keys: &mut Locked<'_>,
    out: &mut ReplyWriter,
    key: &[u8],
    after: After,
    count: usize,
) -> bool {
    let After::Id(after) = after else {
        return false;
    };
    // A read lookup again (a keyspace hit or miss), as Redis's serving pass does.
    let Ok(Some(stream)) = super::stream_read(keys, key) else {
        return false;
    };
    let has_new = stream.last_entry().is_some_and(|e| e.id > after);
    if has_new {
        write_stream_key(out, key);
        write_after(out, stream, after, count);
    }
    has_new
}

/// The entries after `after`, at most `count` (0 = all).
fn write_after(out: &mut ReplyWriter, stream: &Stream, after: StreamId, count: usize) {
    let entries: Vec<_> = match after.next() {
        Some(start) => stream
            .range(start, StreamId::MAX, false)
            .take(if count == 0 { usize::MAX } else { count })
            .collect(),
        None => Vec::new(),
    };
    super::write_entries(out, &entries);
}

/// An XREADGROUP on one stream.
struct GroupRead<'a> {
    group: &'a [u8],
    consumer: &'a [u8],
    count: usize,
    noack: bool,
}

impl GroupRead<'_> {
    /// Serve at once what can be: the consumer's history for an ID, new entries for
    /// `>` when the stream has some past the group's last ID.
    fn serve_now(
        &self,
        keys: &mut Locked<'_>,
        out: &mut ReplyWriter,
        key: &[u8],
        after: After,
        now: u64,
    ) -> bool {
        // A read lookup again (a keyspace hit), as Redis's serving pass does.
        let Ok(Some(stream)) = super::stream_read(keys, key) else {
            return false;
        };
        let group_last = stream.groups[self.group].last_id;
        let history = matches!(after, After::Id(_));
        let has_new = stream.last_entry().is_some_and(|e| e.id > group_last);
        if !history && !has_new {
            return false;
        }
        self.serve(stream, out, key, after, now).record(keys, key);
        true
    }

    /// Serve `stream`, which has the group: the consumer comes into being (or is
    /// seen) only now that something is served, then gets its history after an ID or
    /// the new entries for `>`.
    fn serve(
        &self,
        stream: &mut Stream,
        out: &mut ReplyWriter,
        key: &[u8],
        after: After,
        now: u64,
    ) -> Served {
        let created = self.touch_consumer(stream, now);
        let mut effects = Vec::new();
        if created && self.noack {
            // No XCLAIM will create it on replicas: propagate it.
            let words: [&[u8]; 5] = [b"XGROUP", b"CREATECONSUMER", key, self.group, self.consumer];
            effects.push(words.iter().map(|w| w.to_vec()).collect());
        }
        write_stream_key(out, key);
        match after {
            After::Id(id) => self.write_history(stream, out, id, now),
            After::New => effects.extend(self.deliver_new(stream, out, key, now)),
        }
        Served { created, effects }
    }

    /// Create the consumer if needed and note that it was seen now. Returns whether
    /// it was created.
    fn touch_consumer(&self, stream: &mut Stream, now: u64) -> bool {
        let group = stream.groups.get_mut(self.group).expect("group checked");
        let (consumer, created) = group.consumer(self.consumer, now);
        consumer.seen_at = now;
        created
    }

    /// The consumer's pending entries after `after`, each counted as delivered again;
    /// an entry deleted since reads as `[id, nil]`.
    fn write_history(&self, stream: &mut Stream, out: &mut ReplyWriter, after: StreamId, now: u64) {
        let Some(start) = after.next() else {
            out.array(0);
            return;
        };
        let group = &stream.groups[self.group];
        let limit = if self.count == 0 {
            usize::MAX
        } else {
            self.count
        };
        let ids: Vec<StreamId> = group.consumers[self.consumer]
            .pending
            .range(start..)
            .take(limit)
            .copied()
            .collect();
        out.array(ids.len());
        let mut redelivered = Vec::new();
        for &id in &ids {
            match stream.get(id) {
                Some(entry) => {
                    write_entry(out, &entry);
                    redelivered.push(id);
                }
                None => {
                    out.array(2);
                    write_id(out, id);
                    out.null_array();
                }
            }
        }
        let group = stream.groups.get_mut(self.group).expect("group checked");
        for id in redelivered {
            if let Some(pending) = group.pel.get_mut(&id) {
                pending.delivered_at = now;
                pending.deliveries += 1;
            }
        }
    }

    /// New entries past the group's last ID: reply with them, move the group on, add
    /// them to the consumer's pending list. Returns the effects to propagate.
    fn deliver_new(
        &self,
        stream: &mut Stream,
        out: &mut ReplyWriter,
        key: &[u8],
        now: u64,
    ) -> Vec<Vec<Vec<u8>>> {
        let start = stream.groups[self.group].last_id.next();
        let limit = if self.count == 0 {
            usize::MAX
        } else {
            self.count
        };
        let ids: Vec<StreamId> = match start {
            Some(start) => {
                let entries: Vec<_> = stream
                    .range(start, StreamId::MAX, false)
                    .take(limit)
                    .collect();
                super::write_entries(out, &entries);
                entries.iter().map(|e| e.id).collect()
            }
            None => {
                out.array(0);
                Vec::new()
            }
        };
        let mut effects = Vec::new();
        let consumer: Name = stream.groups[self.group]
            .consumer_name(self.consumer)
            .expect("consumer made");
        for &id in &ids {
            stream.advance_group(self.group, id);
            if self.noack {
                continue;
            }
            let group = stream.groups.get_mut(self.group).expect("group checked");
            group.assign(id, &consumer, now, 1);
            effects.push(claim_effect(
                key,
                self.group,
                &consumer,
                id,
                now,
                1,
                group.last_id,
            ));
        }
        if self.noack && !ids.is_empty() {
            effects.push(setid_effect(key, self.group, &stream.groups[self.group]));
        }
        effects
    }
}

/// What serving one stream to a group reader did, to account for once the stream is
/// no longer borrowed.
struct Served {
    /// The consumer came into being.
    created: bool,
    /// The commands replicas get.
    effects: Vec<Vec<Vec<u8>>>,
}

impl Served {
    /// The consumer's keyspace event, the change, and the effects.
    fn record(self, keys: &mut Locked<'_>, key: &[u8]) {
        if self.created {
            keys.notify(class::STREAM, "xgroup-createconsumer", key);
        }
        keys.modified_quietly(key);
        propagate_all(keys, &self.effects);
    }
}

/// A waiting XREAD or XREADGROUP.
struct Wait {
    after: Vec<(Vec<u8>, After)>,
    count: usize,
    group: Option<WaitGroup>,
}

struct WaitGroup {
    name: Vec<u8>,
    consumer: Vec<u8>,
    noack: bool,
}

impl Wait {
    fn after_of(&self, key: &[u8]) -> After {
        self.after
            .iter()
            .find(|(k, _)| k == key)
            .map_or(After::New, |(_, a)| *a)
    }
}

impl Action for Wait {
    fn ready(&self, value: &Value) -> bool {
        matches!(value, Value::Stream(_))
    }

    fn ready_at(&self, key: &[u8], value: Option<&Value>) -> bool {
        let stream = match value {
            Some(Value::Stream(stream)) => stream,
            // A group reader learns that its stream is gone; a plain reader waits on.
            _ => return self.group.is_some(),
        };
        let after = match (&self.group, self.after_of(key)) {
            (Some(group), _) => match stream.groups.get(&group.name) {
                Some(g) => g.last_id,
                None => return true,
            },
            (None, After::Id(id)) => id,
            (None, After::New) => return false,
        };
        stream.last_id > after
    }

    fn serve(
        &self,
        _limits: &EncodingLimits,
        keys: &mut Locked<'_>,
        out: &mut ReplyWriter,
        key: &[u8],
    ) -> CmdResult {
        let now = keys.now_ms;
        let Some(group) = &self.group else {
            let After::Id(after) = self.after_of(key) else {
                return Err("ERR internal error".into());
            };
            let stream = super::stream_mut(keys, key)?.expect("ready");
            write_streams_header(out, 1);
            write_stream_key(out, key);
            write_after(out, stream, after, self.count);
            return Ok(());
        };
        let stream = match super::stream_mut(keys, key) {
            Ok(Some(stream)) => stream,
            _ => return Err("UNBLOCKED the stream key no longer exists".into()),
        };
        if !stream.groups.contains_key(&group.name) {
            return Err(
                "NOGROUP the consumer group this client was blocked on no longer exists".into(),
            );
        }
        let request = GroupRead {
            group: &group.name,
            consumer: &group.consumer,
            count: self.count,
            noack: group.noack,
        };
        write_streams_header(out, 1);
        request
            .serve(stream, out, key, After::New, now)
            .record(keys, key);
        Ok(())
    }
}
