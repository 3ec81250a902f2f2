//! Searching an area: GEORADIUS, GEORADIUSBYMEMBER, their `_RO` forms, GEOSEARCH
//! and GEOSEARCHSTORE.
//!
//! All six run one search in Redis's order of checks: the source key's type, the
//! centre and radius the command names in fixed places (a missing source skips
//! the member and its radius), then the options one by one (FROMMEMBER looks the
//! member up as it is read), then the combinations of options. The members come
//! out in scan order ([`Shape::cells`], each cell in score order) unless sorted by
//! distance; COUNT without ANY sorts nearest first. A STORE form keeps the found
//! members (scored by geohash, or by distance with STOREDIST) in its destination,
//! deleting it when nothing is found, and propagates as itself.

use super::partial_sort::partial_sort;
use super::{lon_lat, unit, write_distance, write_position, NOT_A_MEMBER};
use crate::commands::table::{LockRequest, Need, Needs};
use crate::commands::zsets::{limits, read_zset, store};
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::keyspace::Locked;
use crate::server::Server;
use crate::types::zset::{ScoreRange, ZSet};
use crate::util::geohash::{decode_score, Extent, Shape};
use kvik_resp::ReplyWriter;
use std::cmp::Ordering;

/// Where a command finds its centre and shape.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Centre {
    /// GEORADIUS key longitude latitude radius unit ...
    Position,
    /// GEORADIUSBYMEMBER key member radius unit ...
    Member,
    /// GEOSEARCH: FROMMEMBER or FROMLONLAT, BYRADIUS or BYBOX among the options.
    Options,
}

/// Whether and how a command may store its result.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Storing {
    /// The `_RO` forms and GEOSEARCH.
    Never,
    /// GEORADIUS and GEORADIUSBYMEMBER: STORE key or STOREDIST key.
    ByOption,
    /// GEOSEARCHSTORE destination source ...: STOREDIST is a flag.
    Always,
}

#[derive(Clone, Copy)]
struct Form {
    centre: Centre,
    storing: Storing,
}

impl Form {
    fn source_index(self) -> usize {
        if self.storing == Storing::Always {
            2
        } else {
            1
        }
    }

    /// The keyspace event of a stored result.
    fn store_event(self) -> &'static str {
        if self.storing == Storing::Always {
            "geosearchstore"
        } else {
            "georadiusstore"
        }
    }

    /// Where the options start.
    fn options_index(self) -> usize {
        match self.centre {
            Centre::Position => 6,
            Centre::Member => 5,
            Centre::Options => self.source_index() + 1,
        }
    }
}

const RADIUS: Form = Form {
    centre: Centre::Position,
    storing: Storing::ByOption,
};
const RADIUS_RO: Form = Form {
    centre: Centre::Position,
    storing: Storing::Never,
};
const BY_MEMBER: Form = Form {
    centre: Centre::Member,
    storing: Storing::ByOption,
};
const BY_MEMBER_RO: Form = Form {
    centre: Centre::Member,
    storing: Storing::Never,
};
const SEARCH: Form = Form {
    centre: Centre::Options,
    storing: Storing::Never,
};
const SEARCH_STORE: Form = Form {
    centre: Centre::Options,
    storing: Storing::Always,
};

pub fn georadius(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search(ctx.server, ctx.keys, ctx.out, args, RADIUS)
}

pub fn georadiusbymember(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search(ctx.server, ctx.keys, ctx.out, args, BY_MEMBER)
}

pub fn georadius_ro(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search(ctx.server, ctx.keys, ctx.out, args, RADIUS_RO)
}

pub fn georadiusbymember_ro(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search(ctx.server, ctx.keys, ctx.out, args, BY_MEMBER_RO)
}

pub fn geosearch(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search(ctx.server, ctx.keys, ctx.out, args, SEARCH)
}

pub fn geosearchstore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search(ctx.server, ctx.keys, ctx.out, args, SEARCH_STORE)
}

/// What GEORADIUS locks: its source and the key a STORE or STOREDIST option names.
/// The option may come anywhere (and more than once: the last wins), which only
/// parsing the options tells.
pub fn georadius_needs(request: &LockRequest) -> Needs {
    store_needs(request, RADIUS)
}

pub fn georadiusbymember_needs(request: &LockRequest) -> Needs {
    store_needs(request, BY_MEMBER)
}

fn store_needs(request: &LockRequest, form: Form) -> Needs {
    let db = request.db;
    let mut needs = Needs::from_iter([Need::Key { db, arg: 1 }]);
    let start = form.options_index();
    // The options of these two never look at the source, so they can be read before
    // anything is locked; a malformed one fails again, in `search`, before any key
    // but the source is touched.
    let options = request.args.get(start..).unwrap_or_default();
    if let Ok(Options {
        store: Some(target),
        ..
    }) = Options::parse(options, form, Options::default(), None)
    {
        // The target borrows its argument: find which one by identity, not by
        // content (a key may be spelled like an option).
        let at = options
            .iter()
            .position(|arg| std::ptr::eq(*arg, target.key));
        needs.extend(at.map(|at| Need::Key {
            db,
            arg: start + at,
        }));
    }
    needs
}

/// Where a search keeps its result.
#[derive(Clone, Copy)]
struct Target<'a> {
    key: &'a [u8],
    /// Scores are distances (STOREDIST), not geohashes.
    distances: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Default)]
enum Sort {
    #[default]
    None,
    Asc,
    Desc,
}

/// A command's request, as its arguments build it up.
#[derive(Clone, Copy, Default)]
struct Options<'a> {
    with_dist: bool,
    with_hash: bool,
    with_coord: bool,
    any: bool,
    sort: Sort,
    /// At most this many results; 0 for all.
    count: usize,
    store: Option<Target<'a>>,
    /// The centre, once named; FROMMEMBER on a missing source names none.
    centre: Option<(f64, f64)>,
    from_member: bool,
    from_lonlat: bool,
    /// The shape's size and meters per unit of it.
    extent: Option<(Extent, f64)>,
}

impl<'a> Options<'a> {
    /// Read the options after the fixed arguments, in order, onto `request`.
    /// `source` is where FROMMEMBER looks its member up.
    fn parse(
        options: &[&'a [u8]],
        form: Form,
        mut request: Options<'a>,
        source: Option<&ZSet>,
    ) -> Result<Options<'a>, CmdError> {
        let search = form.centre == Centre::Options;
        let mut i = 0;
        while i < options.len() {
            let arg = options[i];
            let left = options.len() - i - 1;
            let is = |name: &str| args::is(arg, name);
            if is("withdist") {
                request.with_dist = true;
            } else if is("withhash") {
                request.with_hash = true;
            } else if is("withcoord") {
                request.with_coord = true;
            } else if is("any") {
                request.any = true;
            } else if is("asc") {
                request.sort = Sort::Asc;
            } else if is("desc") {
                request.sort = Sort::Desc;
            } else if is("count") && left >= 1 {
                let count = args::int(options[i + 1])?;
                if count <= 0 {
                    return Err("ERR COUNT must be > 0".into());
                }
                request.count = usize::try_from(count).unwrap_or(usize::MAX);
                i += 1;
            } else if (is("store") || is("storedist"))
                && left >= 1
                && form.storing == Storing::ByOption
            {
                request.store = Some(Target {
                    key: options[i + 1],
                    distances: is("storedist"),
                });
                i += 1;
            } else if is("storedist") && form.storing == Storing::Always {
                if let Some(target) = request.store.as_mut() {
                    target.distances = true;
                }
            } else if is("frommember") && left >= 1 && search && !request.from_lonlat {
                if let Some(zset) = source {
                    request.centre = Some(member_position(zset, options[i + 1])?);
                }
                request.from_member = true;
                i += 1;
            } else if is("fromlonlat") && left >= 2 && search && !request.from_member {
                request.centre = Some(lon_lat(options[i + 1], options[i + 2])?);
                request.from_lonlat = true;
                i += 2;
            } else if is("byradius") && left >= 2 && search && !is_box(&request) {
                request.extent = Some(radius(options[i + 1], options[i + 2])?);
                i += 2;
            } else if is("bybox") && left >= 3 && search && !is_radius(&request) {
                request.extent = Some(rectangle(&options[i + 1..i + 4])?);
                i += 3;
            } else {
                return Err(errors::SYNTAX.into());
            }
            i += 1;
        }
        Ok(request)
    }

    /// The combinations Redis refuses once every option is read.
    fn check(&self, form: Form, command: &[u8]) -> CmdResult {
        if self.store.is_some() && (self.with_dist || self.with_hash || self.with_coord) {
            let what = match form.storing {
                Storing::Always => "GEOSEARCHSTORE",
                _ => "STORE option in GEORADIUS",
            };
            return Err(format!(
                "ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
            )
            .into());
        }
        if form.centre == Centre::Options {
            let command = String::from_utf8_lossy(command);
            if !self.from_member && !self.from_lonlat {
                return Err(format!(
                    "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {command}"
                )
                .into());
            }
            if self.extent.is_none() {
                return Err(format!(
                    "ERR exactly one of BYRADIUS and BYBOX can be specified for {command}"
                )
                .into());
            }
        }
        if self.any && self.count == 0 {
            return Err("ERR the ANY argument requires COUNT argument".into());
        }
        Ok(())
    }
}

fn is_box(request: &Options) -> bool {
    matches!(request.extent, Some((Extent::Box { .. }, _)))
}

fn is_radius(request: &Options) -> bool {
    matches!(request.extent, Some((Extent::Radius(_), _)))
}

/// The position of a member of the source.
fn member_position(zset: &ZSet, member: &[u8]) -> Result<(f64, f64), CmdError> {
    zset.score(member)
        .map(decode_score)
        .ok_or_else(|| NOT_A_MEMBER.into())
}

/// A number argument of a shape, with its own error text.
fn dimension(arg: &[u8], error: &'static str) -> Result<f64, CmdError> {
    args::float(arg).map_err(|_| error.into())
}

/// `radius unit`.
fn radius(value: &[u8], unit_arg: &[u8]) -> Result<(Extent, f64), CmdError> {
    let r = dimension(value, "ERR need numeric radius")?;
    if r < 0.0 {
        return Err("ERR radius cannot be negative".into());
    }
    Ok((Extent::Radius(r), unit(unit_arg)?))
}

/// `width height unit`.
fn rectangle(values: &[&[u8]]) -> Result<(Extent, f64), CmdError> {
    let width = dimension(values[0], "ERR need numeric width")?;
    let height = dimension(values[1], "ERR need numeric height")?;
    if height < 0.0 || width < 0.0 {
        return Err("ERR height or width cannot be negative".into());
    }
    Ok((Extent::Box { width, height }, unit(values[2])?))
}

/// One member inside the shape.
struct Found<'z> {
    member: &'z [u8],
    score: f64,
    lon: f64,
    lat: f64,
    /// From the centre, in meters.
    distance: f64,
}

/// Run one search against held shards: check, find, reply or store.
fn search(
    server: &Server,
    keys: &mut Locked<'_>,
    out: &mut ReplyWriter,
    args: &[&[u8]],
    form: Form,
) -> CmdResult {
    let source = read_zset(keys, args[form.source_index()])?;
    let mut request = Options::default();
    if form.storing == Storing::Always {
        request.store = Some(Target {
            key: args[1],
            distances: false,
        });
    }
    match (form.centre, source) {
        (Centre::Position, _) => {
            request.centre = Some(lon_lat(args[2], args[3])?);
            request.extent = Some(radius(args[4], args[5])?);
        }
        (Centre::Member, Some(zset)) => {
            request.centre = Some(member_position(zset, args[2])?);
            request.extent = Some(radius(args[3], args[4])?);
        }
        (Centre::Member, None) | (Centre::Options, _) => {}
    }
    let request = Options::parse(&args[form.options_index()..], form, request, source)?;
    request.check(form, args[0])?;
    let (Some(zset), Some((lon, lat)), Some((extent, to_meters))) =
        (source, request.centre, request.extent)
    else {
        // Only a missing source gets here: it holds nothing.
        match request.store {
            Some(target) => {
                store_found(server, keys, target.key, &mut [], form);
                out.int(0);
            }
            None => out.array(0),
        }
        return Ok(());
    };
    let shape = Shape {
        lon,
        lat,
        extent,
        to_meters,
    };
    let limit = if request.any { request.count } else { 0 };
    let found = select(find(zset, &shape, limit), &request);
    match request.store {
        None => reply(out, &found, &request, to_meters),
        Some(target) => {
            let mut entries: Vec<(Vec<u8>, f64)> = found
                .iter()
                .map(|f| {
                    let score = if target.distances {
                        f.distance / to_meters
                    } else {
                        f.score
                    };
                    (f.member.to_vec(), score)
                })
                .collect();
            let stored = store_found(server, keys, target.key, &mut entries, form);
            out.int(stored as i64);
        }
    }
    Ok(())
}

/// What the request returns of the members found: sorted as asked (COUNT without
/// ANY means nearest first), at most COUNT of them.
fn select<'z>(mut found: Vec<Found<'z>>, request: &Options) -> Vec<Found<'z>> {
    let sort = match request.sort {
        Sort::None if request.count > 0 && !request.any => Sort::Asc,
        sort => sort,
    };
    let returned = match request.count {
        0 => found.len(),
        count => count.min(found.len()),
    };
    sort_by_distance(&mut found, sort, returned);
    found.truncate(returned);
    found
}

/// The members inside the shape, cell by cell; with `limit` (ANY), the first that
/// many found.
fn find<'z>(zset: &'z ZSet, shape: &Shape, limit: usize) -> Vec<Found<'z>> {
    let full = |found: &Vec<Found>| limit > 0 && found.len() >= limit;
    let mut found = Vec::new();
    for cell in shape.cells() {
        if full(&found) {
            break;
        }
        let (start, end) = cell.scores();
        let scores = ScoreRange {
            min: start as f64,
            min_exclusive: false,
            max: end as f64,
            max_exclusive: true,
        };
        zset.visit(zset.score_span(&scores), false, |member, score| {
            if full(&found) {
                return;
            }
            let (lon, lat) = decode_score(score);
            if let Some(distance) = shape.distance_if_inside(lon, lat) {
                found.push(Found {
                    member,
                    score,
                    lon,
                    lat,
                    distance,
                });
            }
        });
    }
    found
}

/// Order by distance when asked, as Redis does: a stable sort (the C library's
/// qsort where Redis runs) when every member is returned, else its partial
/// quicksort of the first `returned` ranks, which orders equal distances its own
/// way.
fn sort_by_distance(found: &mut [Found], sort: Sort, returned: usize) {
    let nearer_first = |a: &Found, b: &Found| {
        if a.distance > b.distance {
            Ordering::Greater
        } else if a.distance == b.distance {
            Ordering::Equal
        } else {
            Ordering::Less
        }
    };
    let farther_first = |a: &Found, b: &Found| nearer_first(b, a);
    match sort {
        Sort::None => {}
        Sort::Asc if returned == found.len() => found.sort_by(nearer_first),
        Sort::Desc if returned == found.len() => found.sort_by(farther_first),
        Sort::Asc => partial_sort(found, 0, returned - 1, nearer_first),
        Sort::Desc => partial_sort(found, 0, returned - 1, farther_first),
    }
}

/// The found members, each a name or an array of the name and what the options
/// ask for: distance (in the request's unit), geohash score, position.
fn reply(out: &mut ReplyWriter, found: &[Found], request: &Options, to_meters: f64) {
    let extras = [request.with_dist, request.with_hash, request.with_coord]
        .iter()
        .filter(|&&on| on)
        .count();
    out.array(found.len());
    for f in found {
        if extras > 0 {
            out.array(extras + 1);
        }
        out.bulk(f.member);
        if request.with_dist {
            write_distance(out, f.distance / to_meters);
        }
        if request.with_hash {
            out.int(f.score as i64);
        }
        if request.with_coord {
            write_position(out, f.lon, f.lat);
        }
    }
}

/// Replace `key` with a sorted set of the entries (deleting it when there are
/// none); returns how many were stored.
fn store_found(
    server: &Server,
    keys: &mut Locked<'_>,
    key: &[u8],
    entries: &mut [(Vec<u8>, f64)],
    form: Form,
) -> usize {
    let mut borrowed: Vec<(&[u8], f64)> = entries.iter().map(|(m, s)| (&m[..], *s)).collect();
    let zset = ZSet::from_entries(&mut borrowed, limits(server));
    store(keys, key, zset, form.store_event())
}
