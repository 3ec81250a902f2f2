//! Geo commands: positions kept in sorted sets, scored by their geohash.
//!
//! - GEOADD in [`add`]: a ZADD of the positions' scores, and propagated as one;
//! - GEODIST, GEOHASH and GEOPOS in [`read`];
//! - GEORADIUS, GEORADIUSBYMEMBER, their `_RO` forms, GEOSEARCH and
//!   GEOSEARCHSTORE in [`search`].
//!
//! The geometry (scores, cells, distances) is in [`crate::util::geohash`]; this
//! family parses arguments, reads and writes the sets, and formats replies as
//! Redis 7.0 does: distances with four decimals as bulk strings, coordinates as
//! "human" long doubles (doubles in RESP3). The STORE forms propagate as
//! themselves.

mod add;
mod partial_sort;
mod read;
mod search;

use super::table::{acl, flags, key_flags, Command, FindKeys, KeySpec, Lock};
use super::{args, CmdError};
use crate::util::geohash::{LAT_MAX, LAT_MIN, LON_MAX, LON_MIN};
use crate::util::long_double::format_f64_human;
use kvik_resp::ReplyWriter;

const READ: u32 = acl::GEO | acl::READ | acl::SLOW;
const WRITE: u32 = acl::GEO | acl::WRITE | acl::SLOW;
const RO_ACCESS: u32 = key_flags::RO | key_flags::ACCESS;

const RADIUS_COMPLEXITY: &str = "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.";
const SEARCH_COMPLEXITY: &str = "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape";

pub const COMMANDS: &[Command] = &[
    Command::new("geoadd", -5, add::geoadd)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE)
        .keys(1, 1, 1)
        .key_flags(key_flags::RW | key_flags::UPDATE)
        .doc("geo", "3.2.0", "O(log(N)) for each item added, where N is the number of elements in the sorted set.", "Add one or more geospatial items in the geospatial index represented using a sorted set"),
    Command::new("geodist", -4, read::geodist)
        .flags(flags::READONLY)
        .acl(READ)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc("geo", "3.2.0", "O(log(N))", "Returns the distance between two members of a geospatial index"),
    Command::new("geohash", -2, read::geohash)
        .flags(flags::READONLY)
        .acl(READ)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc("geo", "3.2.0", "O(log(N)) for each member requested, where N is the number of elements in the sorted set.", "Returns members of a geospatial index as standard geohash strings"),
    Command::new("geopos", -2, read::geopos)
        .flags(flags::READONLY)
        .acl(READ)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc("geo", "3.2.0", "O(N) where N is the number of members requested.", "Returns longitude and latitude of members of a geospatial index"),
    Command::new("georadius", -6, search::georadius)
        .flags(flags::WRITE | flags::DENYOOM | flags::MOVABLE_KEYS)
        .acl(WRITE)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .key_spec(store_spec("STORE", 6))
        .key_spec(store_spec("STOREDIST", 6))
        .lock(Lock::Args(search::georadius_needs))
        .doc("geo", "3.2.0", RADIUS_COMPLEXITY, "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a point"),
    Command::new("georadiusbymember", -5, search::georadiusbymember)
        .flags(flags::WRITE | flags::DENYOOM | flags::MOVABLE_KEYS)
        .acl(WRITE)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .key_spec(store_spec("STORE", 5))
        .key_spec(store_spec("STOREDIST", 5))
        .lock(Lock::Args(search::georadiusbymember_needs))
        .doc("geo", "3.2.0", RADIUS_COMPLEXITY, "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a member"),
    Command::new("georadius_ro", -6, search::georadius_ro)
        .flags(flags::READONLY)
        .acl(READ)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc("geo", "3.2.10", RADIUS_COMPLEXITY, "A read-only variant for GEORADIUS"),
    Command::new("georadiusbymember_ro", -5, search::georadiusbymember_ro)
        .flags(flags::READONLY)
        .acl(READ)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc("geo", "3.2.10", RADIUS_COMPLEXITY, "A read-only variant for GEORADIUSBYMEMBER"),
    Command::new("geosearch", -7, search::geosearch)
        .flags(flags::READONLY)
        .acl(READ)
        .keys(1, 1, 1)
        .key_flags(RO_ACCESS)
        .doc("geo", "6.2.0", SEARCH_COMPLEXITY, "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle."),
    Command::new("geosearchstore", -8, search::geosearchstore)
        .flags(flags::WRITE | flags::DENYOOM)
        .acl(WRITE)
        .keys(1, 1, 1)
        .key_flags(key_flags::OW | key_flags::UPDATE)
        .keys(2, 2, 1)
        .key_flags(RO_ACCESS)
        .doc("geo", "6.2.0", SEARCH_COMPLEXITY, "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle, and store the result in another key."),
];

/// The destination a GEORADIUS option names (as COMMAND INFO describes it; the lock
/// layer asks the options themselves, see `search::georadius_needs`).
const fn store_spec(keyword: &'static str, startfrom: i32) -> KeySpec {
    KeySpec::after_keyword(
        keyword,
        startfrom,
        FindKeys::Range {
            lastkey: 0,
            step: 1,
            limit: 0,
        },
    )
    .flags(key_flags::OW | key_flags::UPDATE)
}

const NOT_A_MEMBER: &str = "ERR could not decode requested zset member";

/// A longitude and a latitude argument, checked against the indexable ranges.
fn lon_lat(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), CmdError> {
    let lon = args::float(lon)?;
    let lat = args::float(lat)?;
    if !(LON_MIN..=LON_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return Err(format!("ERR invalid longitude,latitude pair {lon:.6},{lat:.6}").into());
    }
    Ok((lon, lat))
}

/// A unit argument: meters per unit.
fn unit(arg: &[u8]) -> Result<f64, CmdError> {
    const UNITS: [(&str, f64); 4] = [("m", 1.0), ("km", 1000.0), ("ft", 0.3048), ("mi", 1609.34)];
    UNITS
        .iter()
        .find(|(name, _)| args::is(arg, name))
        .map(|&(_, meters)| meters)
        .ok_or_else(|| "ERR unsupported unit provided. please use M, KM, FT, MI".into())
}

/// A distance as Redis replies with one: four decimals, a bulk string in RESP2 and
/// RESP3 alike.
fn write_distance(out: &mut ReplyWriter, distance: f64) {
    out.bulk(four_decimals(distance).as_bytes());
}

/// `value` with four decimals the way Redis writes a distance: scaled by 10^4 and
/// rounded to an integer (ties to even) first, which can end one digit away from the
/// correctly rounded decimal expansion `{:.4}` would print (10908380.35914999... is
/// `10908380.3592`).
fn four_decimals(value: f64) -> String {
    let scaled = (value * 10_000.0).round_ties_even() as i64;
    let sign = if scaled < 0 { "-" } else { "" };
    let magnitude = scaled.unsigned_abs();
    format!("{sign}{}.{:04}", magnitude / 10_000, magnitude % 10_000)
}

/// A position as [longitude, latitude].
fn write_position(out: &mut ReplyWriter, lon: f64, lat: f64) {
    out.array(2);
    out.double_text(&format_f64_human(lon));
    out.double_text(&format_f64_human(lat));
}

#[cfg(test)]
mod tests {
    use super::four_decimals;

    #[test]
    fn distances_round_as_redis_rounds_them() {
        assert_eq!(four_decimals(10908380.35915), "10908380.3592");
        assert_eq!(four_decimals(0.0), "0.0000");
        assert_eq!(four_decimals(0.00004), "0.0000");
        assert_eq!(four_decimals(1.5), "1.5000");
        assert_eq!(four_decimals(123.45678), "123.4568");
    }
}
