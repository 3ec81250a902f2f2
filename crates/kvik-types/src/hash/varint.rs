//! LEB128 lengths: seven bits a byte, low bits first, the high bit set on every byte
//! but the last. A length under 128 takes one byte, which is what nearly every field
//! and value of a hash needs.

/// Most bytes a `usize` can take.
pub const MAX_LEN: usize = 10;

/// Write `n` at the start of `out`; returns how many bytes it took.
pub fn write(out: &mut [u8; MAX_LEN], mut n: usize) -> usize {
    let mut i = 0;
    while n >= 0x80 {
        out[i] = (n as u8) | 0x80;
        n >>= 7;
        i += 1;
    }
    out[i] = n as u8;
    i + 1
}

/// Append `n` to `out`.
pub fn push(out: &mut Vec<u8>, n: usize) {
    let mut buf = [0; MAX_LEN];
    let used = write(&mut buf, n);
    out.extend_from_slice(&buf[..used]);
}

/// How many bytes [`write`] takes for `n`.
pub fn len(n: usize) -> usize {
    let bits = usize::BITS - (n | 1).leading_zeros();
    bits.div_ceil(7) as usize
}

/// Read a length through `byte_at`, which yields the bytes from the start of the
/// encoding; returns the length and the bytes it took.
pub fn read(mut byte_at: impl FnMut(usize) -> u8) -> (usize, usize) {
    let (mut n, mut shift, mut i) = (0usize, 0, 0);
    loop {
        let b = byte_at(i);
        n |= usize::from(b & 0x7f) << shift;
        i += 1;
        if b & 0x80 == 0 {
            return (n, i);
        }
        shift += 7;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_length() {
        for n in [0, 1, 127, 128, 300, 16383, 16384, 1 << 29, usize::MAX] {
            let mut buf = [0; MAX_LEN];
            let used = write(&mut buf, n);
            assert_eq!(used, len(n), "{n}");
            assert_eq!(read(|i| buf[i]), (n, used));
        }
    }
}
