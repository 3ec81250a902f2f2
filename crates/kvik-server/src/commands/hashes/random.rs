//! HRANDFIELD key [count [WITHVALUES]].
//!
//! Without a count: one random field, or nil. With a count N: N distinct fields (all
//! of them if the hash has no more, in its own order), or with a negative count |N|
//! fields that may repeat. WITHVALUES adds each field's value: flat in RESP2, as
//! `[field, value]` pairs in RESP3.
//!
//! Picks are uniform: a hashtable-encoded hash is indexed by position already, a
//! listpack is indexed once per call (it is small).

use super::read_hash;
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::types::hash::Positions;
use crate::util::numbers::parse_i64;
use kvik_resp::ReplyWriter;
use rand::Rng;

pub fn hrandfield(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() == 2 {
        return reply_one_field(ctx, args[1]);
    }
    let count = parse_count(args[2])?;
    let with_values = match args {
        [_, _, _] => false,
        [_, _, _, option] if args::is(option, "WITHVALUES") => true,
        _ => return Err(errors::SYNTAX.into()),
    };
    // The reply would hold twice as many elements: keep that count representable.
    if with_values && count.unsigned_abs() > (i64::MAX / 2) as u64 {
        return Err("ERR value is out of range".into());
    }
    let Some(hash) = read_hash(ctx.keys, args[1])? else {
        ctx.out.array(0);
        return Ok(());
    };
    let positions = hash.positions();
    let reply = PairReply {
        with_values,
        nested: ctx.out.is_resp3(),
    };
    let mut rng = rand::thread_rng();
    let wanted = count.unsigned_abs();
    if count < 0 || wanted == 1 {
        reply.header(ctx.out, wanted as usize);
        for _ in 0..wanted {
            // Past the client's output limit the reply is dropped: stop drawing.
            if ctx.out.overflowed() {
                break;
            }
            reply.pair(ctx.out, positions.get(rng.gen_range(0..positions.len())));
        }
    } else if wanted as usize >= positions.len() {
        reply.header(ctx.out, positions.len());
        (0..positions.len()).for_each(|at| reply.pair(ctx.out, positions.get(at)));
    } else {
        reply_distinct(ctx.out, &reply, &positions, wanted as usize, &mut rng);
    }
    Ok(())
}

/// `count` distinct pairs, fewer than the hash holds, in random order.
fn reply_distinct(
    out: &mut ReplyWriter,
    reply: &PairReply,
    positions: &Positions,
    count: usize,
    rng: &mut impl Rng,
) {
    reply.header(out, count);
    for at in rand::seq::index::sample(rng, positions.len(), count) {
        reply.pair(out, positions.get(at));
    }
}

/// The count argument: any integer but `i64::MIN`, whose magnitude does not fit.
fn parse_count(arg: &[u8]) -> Result<i64, CmdError> {
    match parse_i64(arg) {
        None => Err(errors::NOT_INTEGER.into()),
        Some(i64::MIN) => Err(format!(
            "ERR value is out of range, value must between {} and {}",
            -i64::MAX,
            i64::MAX
        )
        .into()),
        Some(n) => Ok(n),
    }
}

/// HRANDFIELD key: a bulk field, or nil for a missing key.
fn reply_one_field(ctx: &mut Ctx, key: &[u8]) -> CmdResult {
    let Some(hash) = read_hash(ctx.keys, key)? else {
        ctx.out.null();
        return Ok(());
    };
    let positions = hash.positions();
    let at = rand::thread_rng().gen_range(0..positions.len());
    ctx.out.bulk(positions.get(at).0);
    Ok(())
}

/// How the pairs of a counted reply are written.
struct PairReply {
    with_values: bool,
    /// RESP3 nests each field and value in an array of two.
    nested: bool,
}

impl PairReply {
    fn header(&self, out: &mut ReplyWriter, pairs: usize) {
        let flat_values = self.with_values && !self.nested;
        out.array(if flat_values { pairs * 2 } else { pairs });
    }

    fn pair(&self, out: &mut ReplyWriter, (field, value): (&[u8], &[u8])) {
        if self.with_values && self.nested {
            out.array(2);
        }
        out.bulk(field);
        if self.with_values {
            out.bulk(value);
        }
    }
}
