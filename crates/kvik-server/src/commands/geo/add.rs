//! GEOADD key [NX|XX] [CH] longitude latitude member [...]: a ZADD of the
//! positions' scores. Redis rewrites the command into that ZADD, options kept as
//! the client wrote them and scores as integers, and runs and propagates the
//! rewritten command; so does this.

use super::lon_lat;
use crate::commands::{args, errors, zsets, CmdResult, Ctx};
use crate::util::geohash::score_of;

pub fn geoadd(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let options = &args[2..];
    let option_count = options
        .iter()
        .take_while(|arg| ["nx", "xx", "ch"].iter().any(|name| args::is(arg, name)))
        .count();
    let has = |name: &str| {
        options[..option_count]
            .iter()
            .any(|arg| args::is(arg, name))
    };
    let triples = &options[option_count..];
    if !triples.len().is_multiple_of(3) || (has("nx") && has("xx")) {
        return Err(errors::SYNTAX.into());
    }
    let scores = triples
        .chunks(3)
        .map(|t| {
            let (lon, lat) = lon_lat(t[0], t[1])?;
            let score = score_of(lon, lat).expect("checked position has a score");
            Ok(itoa::Buffer::new().format(score).as_bytes().to_vec())
        })
        .collect::<Result<Vec<Vec<u8>>, crate::commands::CmdError>>()?;
    let mut zadd: Vec<&[u8]> = Vec::with_capacity(2 + option_count + 2 * scores.len());
    zadd.push(b"zadd");
    zadd.extend_from_slice(&args[1..2 + option_count]);
    for (score, triple) in scores.iter().zip(triples.chunks(3)) {
        zadd.push(score);
        zadd.push(triple[2]);
    }
    let dirty_before = ctx.keys.dirty();
    zsets::zadd(ctx, &zadd)?;
    if ctx.keys.dirty() > dirty_before {
        ctx.propagate(&zadd);
    }
    Ok(())
}
