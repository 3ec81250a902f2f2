//! SORT and SORT_RO: the elements of a list, set or sorted set, sorted by their own
//! value or by weights read from other keys, returned (or values read from other keys
//! for each of them), or stored as a list.
//!
//! What Redis 7.0 does, and kvik with it:
//! - Options come in any order and may repeat: the last LIMIT, BY and STORE win, GETs
//!   add up. An option short of its arguments is a syntax error, and option errors
//!   come before the key is looked up (and before WRONGTYPE).
//! - A BY pattern without `*` means "do not sort", and that sticks even if a later BY
//!   has one. A list or sorted set left unsorted keeps its own order (scores for a
//!   sorted set); DESC walks it from the far end and LIMIT cuts that walk. A set left
//!   unsorted comes out in its own order, DESC or not, except with STORE or inside a
//!   script: then it is sorted with ALPHA, so that the stored list (and a replica
//!   replaying the command) or the script's result does not depend on how the set
//!   happens to be laid out.
//! - Numeric sorting reads every weight with C's `strtod` ([`parse_sort_weight`]); a
//!   missing weight is 0, and equal weights fall back to the elements' bytes, so the
//!   order is total. One unreadable weight fails the command ("One or more scores
//!   can't be converted into double"), but only after every weight was looked up.
//! - ALPHA compares bytes. Without STORE Redis uses `strcoll`, which in the C locale
//!   compares C strings (up to the first NUL byte); with STORE whole byte strings. A
//!   missing BY weight sorts first, and elements with equal weights keep the order
//!   they were read in: the sort is stable, as glibc's `qsort` is.
//! - DESC reverses the comparison, not the result: ties that keep their reading order
//!   keep it in DESC too.
//! - GET of a missing key, a key of another type or a missing hash field is nil in
//!   the reply and an empty string in a stored list. STORE replaces the destination
//!   whatever its type (and drops its TTL), deletes it when the result is empty,
//!   replies the stored length and is propagated as sent.
//! - Redis converts a sorted set it sorts to its big encoding for good (OBJECT
//!   ENCODING shows "skiplist" afterwards), and so does kvik.
//!
//! Locking: BY and GET read keys named by the data being sorted, which no key spec can
//! announce before the command runs, so SORT and SORT_RO lock their whole database
//! ([`Lock::Db`]): correct for any pattern, and they are slow commands anyway.
//!
//! Key specs, as Redis 7.0 gives them: the sorted key; the BY and GET keys, which
//! nobody can find before sorting ("unknown"); for SORT, the STORE destination, also
//! "unknown" since the option may come anywhere. COMMAND GETKEYS finds the STORE
//! destination by reading the options ([`store_destination`]).
//!
//! Where kvik differs on purpose: Redis does not clear `errno` before reading a
//! weight, so one weight out of range makes its later numeric sorts fail until
//! something clears it; kvik judges each command alone. With ALPHA, BY and LIMIT,
//! Redis's partial quicksort may reorder elements of equal weight; kvik's full stable
//! sort keeps their reading order there too.
//!
//! As Redis, an ACL user who may not read every key gets BY (with a pattern) and
//! GET refused. Not modelled (kvik has none yet): cluster mode's refusal of them.

use super::table::{acl, flags, key_flags, Command, FoundKeys, KeySpec, Lock};
use super::{args, errors, hashes, strings, CmdError, CmdResult, Ctx};
use crate::keyspace::Locked;
use crate::notify::class;
use crate::types::list::{End, List, NodeLimit};
use crate::types::zset::{Limits, ZSet};
use crate::types::{SmallBytes, Value};
use crate::util::numbers::{c_string, parse_sort_weight};
use std::cmp::Ordering;

const SORTS: u32 = acl::SET | acl::SORTEDSET | acl::LIST | acl::SLOW | acl::DANGEROUS;
const COMPLEXITY: &str = "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).";
const BAD_WEIGHT: &str = "ERR One or more scores can't be converted into double";

pub const COMMANDS: &[Command] = &[
    Command::new("sort", -2, sort)
        .flags(flags::WRITE | flags::DENYOOM | flags::MOVABLE_KEYS)
        .acl(acl::WRITE | SORTS)
        .keys(1, 1, 1)
        .key_flags(key_flags::RO | key_flags::ACCESS)
        .key_spec(PATTERN_KEYS)
        .key_spec(KeySpec::unknown().flags(key_flags::OW | key_flags::UPDATE).notes(
            "For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array",
        ))
        .refine_keys(store_destination)
        .lock(Lock::Db)
        .doc(
            "generic",
            "1.0.0",
            COMPLEXITY,
            "Sort the elements in a list, set or sorted set",
        ),
    Command::new("sort_ro", -2, sort_ro)
        .flags(flags::READONLY | flags::MOVABLE_KEYS)
        .acl(acl::READ | SORTS)
        .keys(1, 1, 1)
        .key_flags(key_flags::RO | key_flags::ACCESS)
        .key_spec(PATTERN_KEYS)
        .lock(Lock::Db)
        .doc(
            "generic",
            "7.0.0",
            COMPLEXITY,
            "Sort the elements in a list, set or sorted set. Read-only variant of SORT.",
        ),
];

/// The keys BY and GET patterns name.
const PATTERN_KEYS: KeySpec = KeySpec::unknown()
    .flags(key_flags::RO | key_flags::ACCESS)
    .notes("For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort");

/// SORT's STORE destination for COMMAND GETKEYS, read the way Redis reads it: LIMIT
/// skips two arguments, BY and GET one; the last STORE wins.
fn store_destination(args: &[&[u8]], keys: &mut FoundKeys) {
    let mut found = None;
    let mut i = 2;
    while i < args.len() {
        if args::is(args[i], "limit") {
            i += 2;
        } else if args::is(args[i], "get") || args::is(args[i], "by") {
            i += 1;
        } else if args::is(args[i], "store") && i + 1 < args.len() {
            found = Some(i + 1);
        }
        i += 1;
    }
    if let Some(at) = found {
        keys.push(at, key_flags::OW | key_flags::UPDATE);
    }
}

fn sort(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    run(ctx, args, true)
}

fn sort_ro(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    run(ctx, args, false)
}

fn run(ctx: &mut Ctx, args: &[&[u8]], can_store: bool) -> CmdResult {
    let full_key_access = ctx
        .client
        .acl
        .current(&ctx.server.acl)
        .is_none_or(|user| user.can_read_any_key());
    let mut options = Options::parse(&args[2..], can_store, full_key_access)?;
    let source = open_source(ctx.keys, args[1])?;
    let must_be_deterministic = options.store.is_some() || ctx.client.running_script;
    if matches!(source, Some(Value::Set(_))) && options.unsorted && must_be_deterministic {
        options.sort_set_by_members();
    }
    let len = source.as_deref().map_or(0, collection_len);
    let window = Window::new(options.limit, len);
    let ordered = match source {
        None => Vec::new(),
        Some(value) if options.unsorted => walk(value, window, options.desc),
        Some(value) => {
            let everything = walk(value, Window::new(None, len), false);
            sorted_window(ctx.keys, everything, &options, window)?
        }
    };
    let limit = node_limit(ctx);
    let mut lookup = Lookup::new(ctx.keys);
    match options.store {
        Some(destination) => {
            let stored = store(&mut lookup, destination, &ordered, &options.gets, limit);
            ctx.out.int(stored as i64);
        }
        None => reply(&mut lookup, ctx.out, &ordered, &options.gets),
    }
    Ok(())
}

/// The options of one call, as Redis reads them.
#[derive(Default)]
struct Options<'a> {
    /// The last BY pattern.
    by: Option<&'a [u8]>,
    /// A BY pattern without `*` was given: keep the collection's own order.
    unsorted: bool,
    /// LIMIT offset count.
    limit: Option<(i64, i64)>,
    gets: Vec<Pattern<'a>>,
    desc: bool,
    alpha: bool,
    store: Option<&'a [u8]>,
}

impl<'a> Options<'a> {
    /// `full_key_access`: the user may read any key; else BY with a pattern and GET
    /// are refused, as Redis refuses them (they reach keys no key spec names).
    fn parse(
        options: &[&'a [u8]],
        can_store: bool,
        full_key_access: bool,
    ) -> Result<Options<'a>, CmdError> {
        let mut parsed = Options::default();
        let mut i = 0;
        while i < options.len() {
            let option = options[i];
            let following = &options[i + 1..];
            if args::is(option, "asc") {
                parsed.desc = false;
            } else if args::is(option, "desc") {
                parsed.desc = true;
            } else if args::is(option, "alpha") {
                parsed.alpha = true;
            } else if args::is(option, "limit") && following.len() >= 2 {
                parsed.limit = Some((args::int(following[0])?, args::int(following[1])?));
                i += 2;
            } else if can_store && args::is(option, "store") && !following.is_empty() {
                parsed.store = Some(following[0]);
                i += 1;
            } else if args::is(option, "by") && !following.is_empty() {
                let pattern = c_string(following[0]).contains(&b'*');
                if pattern && !full_key_access {
                    return Err(
                        "ERR BY option of SORT denied due to insufficient ACL permissions.".into(),
                    );
                }
                parsed.unsorted |= !pattern;
                parsed.by = Some(following[0]);
                i += 1;
            } else if args::is(option, "get") && !following.is_empty() {
                if !full_key_access {
                    return Err(
                        "ERR GET option of SORT denied due to insufficient ACL permissions.".into(),
                    );
                }
                parsed.gets.push(Pattern::parse(following[0]));
                i += 1;
            } else {
                return Err(errors::SYNTAX.into());
            }
            i += 1;
        }
        Ok(parsed)
    }

    /// A set left unsorted would come out in whatever order its layout gives:
    /// sort it by its members' bytes instead.
    fn sort_set_by_members(&mut self) {
        self.unsorted = false;
        self.alpha = true;
        self.by = None;
    }
}

/// The part of the result LIMIT selects: `count` elements from position `start`.
#[derive(Clone, Copy)]
struct Window {
    start: usize,
    count: usize,
}

impl Window {
    /// LIMIT clamped the way Redis clamps it: a negative offset is 0, a negative count
    /// means everything after the offset, an offset past the end selects nothing.
    fn new(limit: Option<(i64, i64)>, len: usize) -> Window {
        let (offset, count) = limit.unwrap_or((0, -1));
        let start = usize::try_from(offset).unwrap_or(0);
        if start >= len {
            return Window { start: 0, count: 0 };
        }
        let rest = len - start;
        let count = usize::try_from(count).map_or(rest, |count| count.min(rest));
        Window { start, count }
    }
}

/// The value to sort: `None` for a missing key (sorted as an empty list), WRONGTYPE
/// unless a list, set or sorted set. Counts a keyspace hit or miss.
fn open_source<'k>(
    keys: &'k mut Locked<'_>,
    key: &[u8],
) -> Result<Option<&'k mut Value>, CmdError> {
    let stats = keys.env().stats;
    let Some(entry) = keys.get(key) else {
        stats.add(&stats.keyspace_misses, 1);
        return Ok(None);
    };
    stats.add(&stats.keyspace_hits, 1);
    match &mut entry.value {
        Value::ZSet(zset) => convert_like_redis(zset),
        Value::List(_) | Value::Set(_) => {}
        _ => return Err(errors::WRONGTYPE.into()),
    }
    Ok(Some(&mut entry.value))
}

/// Redis 7.0 turns a sorted set it sorts into its big encoding, for good. Following it
/// keeps OBJECT ENCODING (and memory reports) the same as Redis's after a SORT.
fn convert_like_redis(zset: &mut ZSet) {
    if zset.encoding_name() != "listpack" {
        return;
    }
    let mut entries = Vec::with_capacity(zset.len());
    zset.for_each(|member, score| entries.push((member, score)));
    let always_big = Limits {
        max_entries: 0,
        max_value: 0,
    };
    let converted = ZSet::from_entries(&mut entries, always_big);
    *zset = converted;
}

fn collection_len(value: &Value) -> usize {
    match value {
        Value::List(list) => list.len(),
        Value::Set(set) => set.len(),
        Value::ZSet(zset) => zset.len(),
        _ => 0,
    }
}

/// Copies of the elements in `window` of the collection's own order (from the far end
/// when `desc`, which a set, having no ends, ignores). The copies are what the rest of
/// the command works on while it looks other keys up; integers and short elements are
/// copied inline, without allocating. A list's compressed nodes are decompressed only
/// while it is walked.
fn walk(value: &mut Value, window: Window, desc: bool) -> Vec<SmallBytes> {
    let Window { start, count } = window;
    let mut digits = itoa::Buffer::new();
    let mut copies = Vec::with_capacity(count);
    match value {
        Value::List(list) if desc => {
            let list = list.reading();
            let range = list.range(list.len() - start - count, count).rev();
            copies.extend(range.map(|e| SmallBytes::new(e.bytes(&mut digits))));
        }
        Value::List(list) => {
            let list = list.reading();
            let range = list.range(start, count);
            copies.extend(range.map(|e| SmallBytes::new(e.bytes(&mut digits))));
        }
        Value::ZSet(zset) => {
            let ranks = if desc {
                zset.len() - start - count..zset.len() - start
            } else {
                start..start + count
            };
            zset.visit(ranks, desc, |member, _| {
                copies.push(SmallBytes::new(member))
            });
        }
        Value::Set(set) => {
            let members = set.iter().skip(start).take(count);
            copies.extend(members.map(|m| SmallBytes::new(m.bytes(&mut digits))));
        }
        _ => {}
    }
    copies
}

/// Sort `elements` as the options say and keep the part in `window`.
fn sorted_window(
    keys: &mut Locked<'_>,
    elements: Vec<SmallBytes>,
    options: &Options,
    window: Window,
) -> Result<Vec<SmallBytes>, CmdError> {
    let order = Order {
        desc: options.desc,
        window,
        // strcoll over C strings, except when storing (see the module comment).
        c_strings: options.store.is_none(),
    };
    let by = options.by.map(Pattern::parse);
    let mut lookup = Lookup::new(keys);
    match (options.alpha, by) {
        (false, by) => by_number(&mut lookup, elements, by.as_ref(), order),
        (true, Some(by)) => Ok(by_weight_text(&mut lookup, elements, &by, order)),
        (true, None) => {
            let bare = elements.into_iter().map(|e| (e, ())).collect();
            Ok(order.sort_and_cut(bare, |a, b| order.compare_text(&a.0, &b.0)))
        }
    }
}

/// Numeric sorting, by the elements themselves or by the weights `by` names (0 when
/// it names nothing). Equal weights compare the elements' bytes.
fn by_number(
    lookup: &mut Lookup,
    elements: Vec<SmallBytes>,
    by: Option<&Pattern>,
    order: Order,
) -> Result<Vec<SmallBytes>, CmdError> {
    let mut readable = true;
    let weighed = elements
        .into_iter()
        .map(|element| {
            let weight = match by {
                Some(by) => {
                    lookup.with_value(by, &element, |w| w.map_or(Some(0.0), parse_sort_weight))
                }
                None => parse_sort_weight(element.as_slice()),
            };
            readable &= weight.is_some();
            (element, weight.unwrap_or(0.0))
        })
        .collect();
    if !readable {
        return Err(BAD_WEIGHT.into());
    }
    Ok(order.sort_and_cut(weighed, |a, b| {
        a.1.partial_cmp(&b.1)
            .filter(|o| o.is_ne())
            .unwrap_or_else(|| a.0.as_slice().cmp(b.0.as_slice()))
    }))
}

/// ALPHA sorting by the text `by` names; elements it names nothing for come first.
fn by_weight_text(
    lookup: &mut Lookup,
    elements: Vec<SmallBytes>,
    by: &Pattern,
    order: Order,
) -> Vec<SmallBytes> {
    let weighed = elements
        .into_iter()
        .map(|element| {
            let weight = lookup.with_value(by, &element, |w| w.map(SmallBytes::new));
            (element, weight)
        })
        .collect();
    order.sort_and_cut(weighed, |a, b| match (&a.1, &b.1) {
        (Some(x), Some(y)) => order.compare_text(x, y),
        (x, y) => x.is_some().cmp(&y.is_some()),
    })
}

/// How elements are compared, and which of them are kept.
#[derive(Clone, Copy)]
struct Order {
    desc: bool,
    window: Window,
    /// Compare text as C strings (up to a NUL byte) rather than whole.
    c_strings: bool,
}

impl Order {
    fn compare_text(self, a: &SmallBytes, b: &SmallBytes) -> Ordering {
        if self.c_strings {
            c_string(a.as_slice()).cmp(c_string(b.as_slice()))
        } else {
            a.as_slice().cmp(b.as_slice())
        }
    }

    /// Stable-sort `weighed` by `compare` (reversed for DESC) and keep the elements in
    /// the window.
    fn sort_and_cut<W>(
        self,
        mut weighed: Vec<(SmallBytes, W)>,
        compare: impl Fn(&(SmallBytes, W), &(SmallBytes, W)) -> Ordering,
    ) -> Vec<SmallBytes> {
        if self.desc {
            weighed.sort_by(|a, b| compare(b, a));
        } else {
            weighed.sort_by(compare);
        }
        let Window { start, count } = self.window;
        let kept = weighed.into_iter().skip(start).take(count);
        kept.map(|(element, _)| element).collect()
    }
}

/// Reply with the elements, or with what each GET pattern names for each of them.
fn reply(
    lookup: &mut Lookup,
    out: &mut kvik_resp::ReplyWriter,
    ordered: &[SmallBytes],
    gets: &[Pattern],
) {
    out.array(ordered.len() * gets.len().max(1));
    for element in ordered {
        if gets.is_empty() {
            out.bulk(element.as_slice());
        }
        for get in gets {
            lookup.with_value(get, element, |value| match value {
                Some(value) => out.bulk(value),
                None => out.null(),
            });
        }
    }
}

/// Store the elements (or what the GET patterns name, an empty string for nothing) as
/// a list at `destination`, replacing it; delete it instead when there is nothing to
/// store. Returns the length stored. Redis counts one change per element.
fn store(
    lookup: &mut Lookup,
    destination: &[u8],
    ordered: &[SmallBytes],
    gets: &[Pattern],
    limit: NodeLimit,
) -> usize {
    let mut list = List::new();
    for element in ordered {
        if gets.is_empty() {
            list.push(End::Tail, element.as_slice(), limit);
        }
        for get in gets {
            lookup.with_value(get, element, |value| {
                list.push(End::Tail, value.unwrap_or_default(), limit)
            });
        }
    }
    let stored = list.len();
    let keys = &mut *lookup.keys;
    if stored == 0 {
        if keys.remove(destination).is_some() {
            keys.notify(class::GENERIC, "del", destination);
        }
    } else {
        keys.set(destination, Value::List(Box::new(list)), 0);
        keys.add_dirty(stored as u64 - 1);
        keys.notify(class::LIST, "sortstore", destination);
    }
    stored
}

fn node_limit(ctx: &Ctx) -> NodeLimit {
    ctx.server.hot.encoding().list_node()
}

/// A BY or GET pattern. Redis finds its parts with C string functions, so a NUL byte
/// ends the search for `*` and `->` (the parts themselves keep every byte).
enum Pattern<'a> {
    /// `#`: the element itself.
    Element,
    /// No `*`: names no key, so it finds nothing.
    Constant,
    /// The key `prefix` + element + `suffix` (the first `*` is the element's place),
    /// or, with `->field` after the `*`, that field of the hash at that key.
    Key {
        prefix: &'a [u8],
        suffix: &'a [u8],
        field: Option<&'a [u8]>,
    },
}

impl<'a> Pattern<'a> {
    fn parse(pattern: &'a [u8]) -> Pattern<'a> {
        let text = c_string(pattern);
        if text == b"#" {
            return Pattern::Element;
        }
        let Some(star) = text.iter().position(|&b| b == b'*') else {
            return Pattern::Constant;
        };
        let after_star = star + 1;
        // The first `->` after the star, when a field name follows it.
        let arrow = text[after_star..]
            .windows(2)
            .position(|w| w == b"->")
            .map(|at| after_star + at)
            .filter(|&at| at + 2 < text.len());
        let (suffix, field) = match arrow {
            Some(at) => (&pattern[after_star..at], Some(&pattern[at + 2..])),
            None => (&pattern[after_star..], None),
        };
        Pattern::Key {
            prefix: &pattern[..star],
            suffix,
            field,
        }
    }
}

/// Reads what patterns name, with a reused buffer for the key names.
struct Lookup<'k, 'a> {
    keys: &'k mut Locked<'a>,
    name: Vec<u8>,
}

impl<'k, 'a> Lookup<'k, 'a> {
    fn new(keys: &'k mut Locked<'a>) -> Self {
        Lookup {
            keys,
            name: Vec::new(),
        }
    }

    /// Hand what `pattern` names for `element` to `use_value`: `None` for no such key,
    /// a key of the wrong type (a string for a key, a hash for a field) or no such
    /// field. Each key looked up counts as a keyspace hit or miss, as in Redis.
    fn with_value<R>(
        &mut self,
        pattern: &Pattern,
        element: &SmallBytes,
        use_value: impl FnOnce(Option<&[u8]>) -> R,
    ) -> R {
        let (prefix, suffix, field) = match *pattern {
            Pattern::Element => return use_value(Some(element.as_slice())),
            Pattern::Constant => return use_value(None),
            Pattern::Key {
                prefix,
                suffix,
                field,
            } => (prefix, suffix, field),
        };
        self.name.clear();
        self.name.extend_from_slice(prefix);
        self.name.extend_from_slice(element.as_slice());
        self.name.extend_from_slice(suffix);
        match field {
            None => match strings::read_string(self.keys, &self.name) {
                Ok(Some(value)) => use_value(Some(value.bytes(&mut itoa::Buffer::new()))),
                _ => use_value(None),
            },
            Some(field) => match hashes::read_hash(self.keys, &self.name) {
                Ok(Some(hash)) => use_value(hash.get(field)),
                _ => use_value(None),
            },
        }
    }
}
