//! BITOP: AND, OR, XOR or NOT of whole strings into a destination key.
//!
//! A missing source is a string of zero bytes; the result is as long as the longest
//! source, the shorter ones padded with zeros. An empty result deletes the
//! destination instead of storing an empty string. The work goes eight bytes at a
//! time.

use crate::commands::strings::read_string;
use crate::commands::{args, errors, CmdError, CmdResult, Ctx};
use crate::notify::class;
use crate::types::string::StrValue;
use crate::types::Value;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    And,
    Or,
    Xor,
    Not,
}

impl Op {
    fn parse(arg: &[u8]) -> Result<Op, CmdError> {
        [
            ("and", Op::And),
            ("or", Op::Or),
            ("xor", Op::Xor),
            ("not", Op::Not),
        ]
        .into_iter()
        .find(|(name, _)| args::is(arg, name))
        .map(|(_, op)| op)
        .ok_or(CmdError::from(errors::SYNTAX))
    }

    /// Combine a word (or byte) of the result so far with one of the next source;
    /// NOT, having a single source, only inverts it.
    fn apply<T>(self, a: T, b: T) -> T
    where
        T: std::ops::BitAnd<Output = T>
            + std::ops::BitOr<Output = T>
            + std::ops::BitXor<Output = T>
            + std::ops::Not<Output = T>,
    {
        match self {
            Op::And => a & b,
            Op::Or => a | b,
            Op::Xor => a ^ b,
            Op::Not => !b,
        }
    }
}

pub fn bitop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let op = Op::parse(args[1])?;
    let (dest, sources) = (args[2], &args[3..]);
    if op == Op::Not && sources.len() != 1 {
        return Err("ERR BITOP NOT must be called with a single source key.".into());
    }
    // Look each source up the way reads do (expiring it, checking its type), then
    // borrow them all at once.
    for key in sources {
        read_string(ctx.keys, key)?;
    }
    let mut digits = vec![itoa::Buffer::new(); sources.len()];
    let keys = &*ctx.keys;
    let inputs: Vec<&[u8]> = sources
        .iter()
        .zip(digits.iter_mut())
        .map(|(key, digits)| {
            keys.get_shared(key)
                .and_then(|entry| entry.value.as_str())
                .map_or(&[][..], |value| value.bytes(digits))
        })
        .collect();
    let result = combine(op, &inputs);
    let len = result.len();
    if result.is_empty() {
        if ctx.keys.remove(dest).is_some() {
            ctx.keys.notify(class::GENERIC, "del", dest);
        }
    } else {
        ctx.keys.set(dest, Value::Str(StrValue::raw(&result)), 0);
        ctx.keys.notify(class::STRING, "set", dest);
    }
    ctx.out.int(len as i64);
    Ok(())
}

/// The result of `op` over `inputs` (a missing key being an empty string).
fn combine(op: Op, inputs: &[&[u8]]) -> Vec<u8> {
    let len = inputs.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![0u8; len];
    let (first, rest) = inputs.split_first().expect("BITOP has at least one source");
    if op == Op::Not {
        apply_words(op, &mut out, first);
        return out;
    }
    out[..first.len()].copy_from_slice(first);
    for source in rest {
        apply_words(op, &mut out[..source.len()], source);
        if op == Op::And {
            out[source.len()..].fill(0);
        }
    }
    out
}

/// `out[i] = op(out[i], source[i])` for slices of the same length, a word at a time.
fn apply_words(op: Op, out: &mut [u8], source: &[u8]) {
    let mut out_words = out.chunks_exact_mut(8);
    let mut source_words = source.chunks_exact(8);
    for (o, s) in (&mut out_words).zip(&mut source_words) {
        let a = u64::from_ne_bytes((*o).try_into().expect("8 bytes"));
        let b = u64::from_ne_bytes(s.try_into().expect("8 bytes"));
        o.copy_from_slice(&op.apply(a, b).to_ne_bytes());
    }
    let tails = out_words.into_remainder().iter_mut();
    for (o, s) in tails.zip(source_words.remainder()) {
        *o = op.apply(*o, *s);
    }
}
