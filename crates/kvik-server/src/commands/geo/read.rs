//! Reading positions back: GEODIST, GEOHASH and GEOPOS. A member's position is
//! the centre of the cell its score names; a missing key reads as an empty set.

use super::{unit, write_distance, write_position};
use crate::commands::{errors, zsets::read_zset, CmdResult, Ctx};
use crate::util::geohash::{decode_score, distance, geohash_string};

/// GEODIST key member1 member2 [unit]: nil unless both members exist.
pub fn geodist(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let to_meters = match args.len() {
        4 => 1.0,
        5 => unit(args[4])?,
        _ => return Err(errors::SYNTAX.into()),
    };
    let scores =
        read_zset(ctx.keys, args[1])?.map(|zset| (zset.score(args[2]), zset.score(args[3])));
    match scores {
        Some((Some(a), Some(b))) => {
            let ((lon1, lat1), (lon2, lat2)) = (decode_score(a), decode_score(b));
            write_distance(ctx.out, distance(lon1, lat1, lon2, lat2) / to_meters);
        }
        _ => ctx.out.null(),
    }
    Ok(())
}

/// GEOHASH key [member ...]: each member's standard geohash string, or nil.
pub fn geohash(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let zset = read_zset(ctx.keys, args[1])?;
    ctx.out.array(args.len() - 2);
    for member in &args[2..] {
        match zset.and_then(|z| z.score(member)) {
            Some(score) => ctx.out.bulk(&geohash_string(score)),
            None => ctx.out.null(),
        }
    }
    Ok(())
}

/// GEOPOS key [member ...]: each member's [longitude, latitude], or a nil array.
pub fn geopos(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let zset = read_zset(ctx.keys, args[1])?;
    ctx.out.array(args.len() - 2);
    for member in &args[2..] {
        match zset.and_then(|z| z.score(member)) {
            Some(score) => {
                let (lon, lat) = decode_score(score);
                write_position(ctx.out, lon, lat);
            }
            None => ctx.out.null_array(),
        }
    }
    Ok(())
}
