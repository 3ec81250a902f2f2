//! Redis's zipmap, the hash format of RDB files from Redis 2.x: read only.
//!
//! ```text
//! count:u8  (len field len free value free-bytes)*  0xFF
//! ```
//!
//! A length is one byte below 254, else 254 and 4 bytes little-endian; `free` is one
//! byte of slack after the value. The count is only a hint (254 means "count them").
//! The parser checks every length against the blob and the terminator at its end.

use super::{Corrupt, Result};

const END: u8 = 0xFF;
const BIG_LEN: u8 = 254;

/// The field/value pairs of the zipmap `blob`, checked.
pub fn parse(blob: &[u8]) -> Result<Vec<(&[u8], &[u8])>> {
    let mut at = 1;
    let mut pairs = Vec::new();
    loop {
        match blob.get(at) {
            None => return Err(Corrupt("zipmap without terminator")),
            Some(&END) if at + 1 == blob.len() => break,
            Some(&END) => return Err(Corrupt("zipmap bytes after its terminator")),
            Some(_) => {}
        }
        let field = string(blob, &mut at, false)?;
        let value = string(blob, &mut at, true)?;
        pairs.push((field, value));
    }
    let stated = usize::from(blob[0]);
    if stated < usize::from(BIG_LEN) && stated != pairs.len() {
        return Err(Corrupt("zipmap count wrong"));
    }
    Ok(pairs)
}

/// A length-prefixed string at `at` (a value with its free byte and slack).
fn string<'a>(blob: &'a [u8], at: &mut usize, with_free: bool) -> Result<&'a [u8]> {
    let past_end = Corrupt("zipmap entry past the end");
    let len = match *blob.get(*at).ok_or(past_end)? {
        BIG_LEN => {
            let raw = blob.get(*at + 1..*at + 5).ok_or(past_end)?;
            *at += 5;
            u32::from_le_bytes(raw.try_into().expect("4 bytes")) as usize
        }
        END => return Err(Corrupt("zipmap length is the terminator")),
        n => {
            *at += 1;
            usize::from(n)
        }
    };
    let free = if with_free {
        let free = usize::from(*blob.get(*at).ok_or(past_end)?);
        *at += 1;
        free
    } else {
        0
    };
    let end = at.checked_add(len).ok_or(past_end)?;
    let bytes = blob.get(*at..end).ok_or(past_end)?;
    *at = end
        .checked_add(free)
        .filter(|&next| next < blob.len())
        .ok_or(Corrupt("zipmap slack past the end"))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_read_and_damage_is_refused() {
        // {a: "xy" with 2 bytes of slack, bb: ""}
        let blob = b"\x02\x01a\x02\x02xy..\x02bb\x00\x00\xff";
        assert_eq!(
            parse(blob).unwrap(),
            vec![(&b"a"[..], &b"xy"[..]), (&b"bb"[..], &b""[..])]
        );
        for cut in 0..blob.len() {
            assert!(parse(&blob[..cut]).is_err());
        }
        assert!(parse(b"\x03\x01a\x00\x00\xff").is_err());
        assert!(parse(b"\x01\x01a\x00\x09\xff").is_err());
    }
}
