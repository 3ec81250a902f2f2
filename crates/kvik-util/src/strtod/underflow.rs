//! When C's `strtod` reports an underflow for a result it did not flush to zero.
//!
//! glibc sets `errno = ERANGE` when the result is below the normal range and is not
//! exactly the input, and it decides "below the normal range" after rounding: the
//! input rounded to 53 bits with an unbounded exponent is under 2^-1022. So the exact
//! subnormal `0x1p-1074` parses cleanly, `1e-310` is flagged, and an input just under
//! 2^-1022 that rounds up to it is flagged unless it reaches the point halfway between
//! 2^-1022 and the 53-bit number below it (where rounding to 53 bits would carry).
//!
//! Values are compared exactly, as decimal digit strings: the result and the halfway
//! point are dyadic rationals (n / 2^k), whose decimal expansions are finite.

/// A positive number, exactly: 0.d1 d2 d3 ... × 10^exp, with d1 ≠ 0 and no trailing
/// zero digit. The derived order (exponent, then digits) is the numeric one.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Exact {
    exp: i64,
    digits: Vec<u8>,
}

impl Exact {
    /// The value of decimal text: `mantissa` is digits with at most one `.`, scaled
    /// by 10^`exponent`. `None` for zero.
    pub(super) fn decimal(mantissa: &[u8], exponent: i64) -> Option<Exact> {
        let int_len = mantissa
            .iter()
            .position(|&b| b == b'.')
            .unwrap_or(mantissa.len());
        let digits: Vec<u8> = mantissa
            .iter()
            .filter(|&&b| b != b'.')
            .map(|&b| b - b'0')
            .collect();
        Exact::normalized(digits, int_len as i64 + exponent)
    }

    /// n / 2^k.
    pub(super) fn dyadic(n: u64, k: u32) -> Option<Exact> {
        // n / 2^k = n × 5^k / 10^k: the digits of n × 5^k, the point k from the right.
        const LIMB: u64 = 1_000_000_000;
        const FIVE_POW_13: u64 = 1_220_703_125;
        let mut limbs = vec![n % LIMB, n / LIMB % LIMB, n / LIMB / LIMB];
        let mut multiply = |factor: u64| {
            let mut carry = 0;
            for limb in limbs.iter_mut() {
                let product = *limb * factor + carry;
                *limb = product % LIMB;
                carry = product / LIMB;
            }
            while carry > 0 {
                limbs.push(carry % LIMB);
                carry /= LIMB;
            }
        };
        for _ in 0..k / 13 {
            multiply(FIVE_POW_13);
        }
        multiply(5u64.pow(k % 13));
        let digits: Vec<u8> = limbs
            .iter()
            .rev()
            .flat_map(|&limb| (0..9).rev().map(move |i| (limb / 10u64.pow(i) % 10) as u8))
            .collect();
        let point = digits.len() as i64 - i64::from(k);
        Exact::normalized(digits, point)
    }

    /// The exact value of a positive subnormal double.
    fn subnormal(d: f64) -> Option<Exact> {
        Exact::dyadic(d.to_bits() & ((1 << 52) - 1), 1074)
    }

    /// `digits` with the point after the first `point` of them, leading and trailing
    /// zeros dropped.
    fn normalized(mut digits: Vec<u8>, mut point: i64) -> Option<Exact> {
        let leading = digits.iter().take_while(|&&d| d == 0).count();
        if leading == digits.len() {
            return None;
        }
        digits.drain(..leading);
        point -= leading as i64;
        let trailing = digits.iter().rev().take_while(|&&d| d == 0).count();
        digits.truncate(digits.len() - trailing);
        Some(Exact { exp: point, digits })
    }
}

/// Would glibc flag `result`, what the positive input `input` rounded to (plus a
/// fraction of its last place when `above`), as an underflow?
pub(super) fn underflows(result: f64, input: &Exact, above: bool) -> bool {
    let magnitude = result.abs();
    if magnitude == 0.0 || magnitude > f64::MIN_POSITIVE {
        return false;
    }
    if magnitude < f64::MIN_POSITIVE {
        return above || Exact::subnormal(magnitude).as_ref() != Some(input);
    }
    // Rounded up to 2^-1022: tiny unless the input reaches (2^54 - 1) / 2^1076, the
    // point halfway between 2^-1022 and the 53-bit number below it. Extra bits below
    // `input`'s last place cannot carry it past that point: they are finer than it.
    let halfway = Exact::dyadic((1 << 54) - 1, 1076).expect("not zero");
    *input < halfway
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dyadic_expansions() {
        assert_eq!(Exact::dyadic(1, 1), Exact::decimal(b"0.5", 0));
        assert_eq!(Exact::dyadic(3, 3), Exact::decimal(b"375", -3));
        assert_eq!(
            Exact::dyadic(u64::MAX, 0),
            Exact::decimal(b"18446744073709551615", 0)
        );
        assert_eq!(Exact::dyadic(0, 5), None);
        let smallest = Exact::subnormal(f64::from_bits(1)).unwrap();
        assert_eq!(smallest.exp, -323);
        assert_eq!(&smallest.digits[..6], &[4, 9, 4, 0, 6, 5]);
        assert_eq!(smallest.digits.last(), Some(&5));
    }

    #[test]
    fn decimal_normalizes() {
        assert_eq!(Exact::decimal(b"00.0100", 2), Exact::decimal(b"1", 0));
        assert_eq!(Exact::decimal(b"0.000", 7), None);
        assert!(Exact::decimal(b"99", 0) < Exact::decimal(b"1", 2));
        assert!(Exact::decimal(b"1", 2) < Exact::decimal(b"1.01", 2));
    }
}
