//! MurmurHash64A, the 64-bit hash HyperLogLog elements go through. Redis hashes every
//! element with it (seed `0xadc83b19`), so the same element must land in the same
//! register with the same run of zeros here for the two servers to agree.

const M: u64 = 0xc6a4a7935bd1e995;
const R: u32 = 47;

/// The hash of `data` with `seed`, reading 8-byte blocks little-endian as Redis does
/// on the platforms it supports.
pub fn murmur64a(data: &[u8], seed: u32) -> u64 {
    let mut h = u64::from(seed) ^ (data.len() as u64).wrapping_mul(M);
    let mut blocks = data.chunks_exact(8);
    for block in &mut blocks {
        let mut k = u64::from_le_bytes(block.try_into().expect("8-byte block"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        // The tail bytes fill the low end of one more word, first byte lowest.
        let word = tail
            .iter()
            .rev()
            .fold(0u64, |acc, &byte| (acc << 8) | u64::from(byte));
        h ^= word;
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

#[cfg(test)]
mod tests {
    use super::murmur64a;

    #[test]
    fn every_tail_length_mixes_in() {
        let data = b"0123456789abcdef";
        let hashes: Vec<u64> = (0..=data.len())
            .map(|n| murmur64a(&data[..n], 0xadc83b19))
            .collect();
        let mut unique = hashes.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), hashes.len());
        assert_ne!(murmur64a(b"a", 0), murmur64a(b"a", 1));
    }
}
