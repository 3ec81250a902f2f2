//! Redis's intset blob: the RDB form of a set of integers.
//!
//! ```text
//! width:u32le (2, 4 or 8)  count:u32le  members (count x width bytes, little-endian)
//! ```
//!
//! Members are distinct and ascending; the parser checks that (Redis's deep
//! validation does), the width and that the size is exactly what the count says.

use super::{Corrupt, Result};

const HEADER: usize = 8;

/// The width and the members of the intset `blob`, checked.
pub fn parse(blob: &[u8]) -> Result<(usize, Vec<i64>)> {
    let header = blob
        .get(..HEADER)
        .ok_or(Corrupt("intset shorter than its header"))?;
    let width = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as usize;
    let count = u32::from_le_bytes(header[4..].try_into().expect("4 bytes")) as usize;
    if !matches!(width, 2 | 4 | 8) {
        return Err(Corrupt("intset width"));
    }
    if count.checked_mul(width).and_then(|n| n.checked_add(HEADER)) != Some(blob.len()) {
        return Err(Corrupt("intset size disagrees with its count"));
    }
    let members: Vec<i64> = blob[HEADER..]
        .chunks_exact(width)
        .map(|raw| {
            let mut le = [0u8; 8];
            le[..width].copy_from_slice(raw);
            let shift = 64 - 8 * width as u32;
            (i64::from_le_bytes(le) << shift) >> shift
        })
        .collect();
    if members.windows(2).any(|w| w[0] >= w[1]) {
        return Err(Corrupt("intset not ascending"));
    }
    Ok((width, members))
}

/// The intset blob of `count` ascending `members` stored `width` bytes each.
pub fn build(width: usize, count: usize, members: impl Iterator<Item = i64>) -> Vec<u8> {
    let mut blob = Vec::with_capacity(HEADER + count * width);
    blob.extend_from_slice(&(width as u32).to_le_bytes());
    blob.extend_from_slice(&(count as u32).to_le_bytes());
    for member in members {
        blob.extend_from_slice(&member.to_le_bytes()[..width]);
    }
    blob
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_round_trip_and_damage_is_refused() {
        let blob = build(4, 3, [-70_000i64, 1, 70_000].into_iter());
        assert_eq!(blob.len(), 20);
        assert_eq!(parse(&blob).unwrap(), (4, vec![-70_000, 1, 70_000]));
        assert!(parse(&blob[..19]).is_err());
        let unsorted = build(2, 2, [3i64, 1].into_iter());
        assert!(parse(&unsorted).is_err());
        let duplicate = build(2, 2, [3i64, 3].into_iter());
        assert!(parse(&duplicate).is_err());
        let mut width = blob.clone();
        width[0] = 3;
        assert!(parse(&width).is_err());
        let mut count = blob;
        count[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse(&count).is_err());
    }
}
