//! A faithful model of C's `strtod` (glibc, "C" locale), the primitive
//! behind the doubles Redis parses: ZADD/ZINCRBY scores, ZRANGEBYSCORE
//! bounds, GEO coordinates and radii and so on. Each caller layers its own
//! acceptance rules on top (see `numbers`).
//!
//! Accepted syntax, after optional leading white space and an optional sign:
//! * decimal: digits with an optional `.` (at least one digit somewhere),
//!   then an optional exponent `e`/`E`, sign, digits;
//! * hexadecimal: `0x`/`0X`, hex digits with an optional `.`, then an
//!   optional binary exponent `p`/`P`, sign, decimal digits;
//! * `inf`, `infinity`, `nan` and `nan(chars)` in any case.
//!
//! Like the C function this reports how many bytes formed the number (the
//! longest valid prefix), so `1e` parses as `1` with one byte used and `0x`
//! as `0` with one byte used. Results are correctly rounded to nearest-even.
//! It also reports what C leaves in `errno` (see [`underflow`]).

mod underflow;

use underflow::{underflows, Exact};

/// What `strtod` made of some input.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Strtod {
    /// The value (0 when nothing was parsed).
    pub value: f64,
    /// Bytes consumed; 0 when no number was found (leading white space is
    /// then not consumed either, as with C's end pointer).
    pub len: usize,
    /// C would set `errno = ERANGE` because a finite input overflowed to
    /// infinity or a non-zero input underflowed to zero.
    pub out_of_range: bool,
    /// C would set `errno = ERANGE`: `out_of_range`, or a result below the
    /// normal range that lost precision (SORT's weights are checked this way).
    pub erange: bool,
}

/// C `isspace` in the "C" locale.
pub fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Parses the longest prefix of `s` that `strtod` would accept.
pub fn strtod(s: &[u8]) -> Strtod {
    let spaces = s.iter().take_while(|&&b| is_c_space(b)).count();
    let (negative, sign_len) = match s.get(spaces) {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let start = spaces + sign_len;
    let body = &s[start..];
    let found = parse_special(body)
        .or_else(|| parse_hex(body))
        .or_else(|| parse_decimal(body));
    match found {
        Some(magnitude) => Strtod {
            value: if negative {
                -magnitude.value
            } else {
                magnitude.value
            },
            len: start + magnitude.len,
            out_of_range: magnitude.out_of_range,
            erange: magnitude.erange,
        },
        None => Strtod {
            value: 0.0,
            len: 0,
            out_of_range: false,
            erange: false,
        },
    }
}

fn starts_with_ignore_case(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// `inf`, `infinity`, `nan`, `nan(...)`.
fn parse_special(s: &[u8]) -> Option<Strtod> {
    let exact = |value, len| Strtod {
        value,
        len,
        out_of_range: false,
        erange: false,
    };
    if starts_with_ignore_case(s, b"infinity") {
        return Some(exact(f64::INFINITY, 8));
    }
    if starts_with_ignore_case(s, b"inf") {
        return Some(exact(f64::INFINITY, 3));
    }
    if starts_with_ignore_case(s, b"nan") {
        return Some(exact(f64::NAN, 3 + nan_payload_len(&s[3..])));
    }
    None
}

/// Length of a `(n-char-sequence)` suffix after `nan`, or 0 if there is
/// no complete one.
fn nan_payload_len(s: &[u8]) -> usize {
    if s.first() != Some(&b'(') {
        return 0;
    }
    let chars = s[1..]
        .iter()
        .take_while(|&&b| b.is_ascii_alphanumeric() || b == b'_')
        .count();
    if s.get(1 + chars) == Some(&b')') {
        chars + 2
    } else {
        0
    }
}

/// Length of an exponent suffix (`e-12`, `p+3`, ...) at the start of `s`
/// using `marker` (case-insensitive), with its value saturated to a range
/// far beyond any meaningful exponent. `None` if there is no valid one.
fn exponent_suffix(s: &[u8], marker: u8) -> Option<(usize, i64)> {
    if !s.first()?.eq_ignore_ascii_case(&marker) {
        return None;
    }
    let (negative, sign_len) = match s.get(1) {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let digits = &s[1 + sign_len..];
    let count = digits.iter().take_while(|b| b.is_ascii_digit()).count();
    if count == 0 {
        return None;
    }
    const CAP: i64 = 1 << 40;
    let magnitude = digits[..count]
        .iter()
        .fold(0i64, |acc, &d| (acc * 10 + i64::from(d - b'0')).min(CAP));
    Some((
        1 + sign_len + count,
        if negative { -magnitude } else { magnitude },
    ))
}

/// The digits-and-point part of a mantissa: its length in bytes and how
/// many digits it holds.
struct Mantissa {
    len: usize,
    digit_count: usize,
}

fn scan_mantissa(s: &[u8], is_digit: impl Fn(u8) -> bool) -> Mantissa {
    let int_digits = s.iter().take_while(|&&b| is_digit(b)).count();
    let mut len = int_digits;
    let mut digit_count = int_digits;
    if s.get(len) == Some(&b'.') {
        let frac_digits = s[len + 1..].iter().take_while(|&&b| is_digit(b)).count();
        len += 1 + frac_digits;
        digit_count += frac_digits;
    }
    Mantissa { len, digit_count }
}

fn parse_decimal(s: &[u8]) -> Option<Strtod> {
    let mantissa = scan_mantissa(s, |b| b.is_ascii_digit());
    if mantissa.digit_count == 0 {
        return None;
    }
    let (exponent_len, exponent) = exponent_suffix(&s[mantissa.len..], b'e').unwrap_or((0, 0));
    let len = mantissa.len + exponent_len;
    // The slice is ASCII digits, '.', 'e'/'E' and a sign: valid Rust float
    // syntax, which Rust parses with correct rounding for any length.
    let text = std::str::from_utf8(&s[..len]).ok()?;
    let value: f64 = text.parse().ok()?;
    let nonzero = s[..mantissa.len].iter().any(|&b| matches!(b, b'1'..=b'9'));
    let out_of_range = value.is_infinite() || (value == 0.0 && nonzero);
    let underflow = is_tiny(value)
        && Exact::decimal(&s[..mantissa.len], exponent)
            .is_some_and(|x| underflows(value, &x, false));
    Some(Strtod {
        value,
        len,
        out_of_range,
        erange: out_of_range || underflow,
    })
}

fn parse_hex(s: &[u8]) -> Option<Strtod> {
    if s.len() < 2 || s[0] != b'0' || !s[1].eq_ignore_ascii_case(&b'x') {
        return None;
    }
    let digits = &s[2..];
    let mantissa = scan_mantissa(digits, |b| b.is_ascii_hexdigit());
    if mantissa.digit_count == 0 {
        // "0x" with no hex digits: C parses just the "0".
        return None;
    }
    let (exponent_len, exponent) = exponent_suffix(&digits[mantissa.len..], b'p').unwrap_or((0, 0));
    let bits = HexBits::gather(&digits[..mantissa.len]);
    let (value, out_of_range) = bits.round_to_f64(exponent);
    Some(Strtod {
        value,
        len: 2 + mantissa.len + exponent_len,
        out_of_range,
        erange: out_of_range || bits.underflows_to(value, exponent),
    })
}

/// Non-zero and no larger than the smallest normal double: where glibc may
/// report an underflow although the result is not zero.
fn is_tiny(value: f64) -> bool {
    value != 0.0 && value.abs() <= f64::MIN_POSITIVE
}

/// The significant bits of a hex mantissa: value = (bits + tail) × 2^scale,
/// where `tail` is a non-zero fraction of one unit iff `sticky`.
struct HexBits {
    bits: u64,
    scale: i64,
    sticky: bool,
}

impl HexBits {
    /// Keeps up to 64 significant bits, folding the rest into `sticky`.
    fn gather(mantissa: &[u8]) -> HexBits {
        let mut acc = HexBits {
            bits: 0,
            scale: 0,
            sticky: false,
        };
        let mut after_point = false;
        for &b in mantissa {
            if b == b'.' {
                after_point = true;
                continue;
            }
            let digit = u64::from(char::from(b).to_digit(16).unwrap_or(0));
            if acc.bits >> 60 == 0 {
                acc.bits = acc.bits << 4 | digit;
                if after_point {
                    acc.scale -= 4;
                }
            } else {
                acc.sticky |= digit != 0;
                if !after_point {
                    acc.scale += 4;
                }
            }
        }
        acc
    }

    /// Would glibc report an underflow for `value`, what these bits scaled by
    /// 2^`exponent` rounded to?
    fn underflows_to(&self, value: f64, exponent: i64) -> bool {
        if !is_tiny(value) {
            return false;
        }
        // A tiny result means the bits sit far below 1, so the shift is small.
        let shift =
            u32::try_from(-(self.scale + exponent)).expect("a tiny value has a negative exponent");
        Exact::dyadic(self.bits, shift).is_some_and(|x| underflows(value, &x, self.sticky))
    }

    /// Rounds (bits + tail) × 2^(scale + exponent) to the nearest double,
    /// ties to even, with gradual underflow. Also says whether C would
    /// report ERANGE (overflow to infinity or underflow to zero).
    fn round_to_f64(&self, exponent: i64) -> (f64, bool) {
        if self.bits == 0 {
            return (0.0, false);
        }
        let shift = self.bits.leading_zeros();
        let bits = self.bits << shift;
        // Power of two of the leading bit.
        let top = self.scale + exponent + 63 - i64::from(shift);
        if top > 1023 {
            return (f64::INFINITY, true);
        }
        // Significant bits the result can hold: 53 for normal numbers,
        // fewer as subnormals shrink toward 2^-1074.
        let keep = if top >= -1022 { 53 } else { top + 1075 };
        if keep <= 0 {
            // Below the smallest subnormal: only a value above half of it
            // rounds up to it (a tie goes to the even neighbour, zero).
            let above_half = keep == 0 && (bits > 1 << 63 || self.sticky);
            let value = if above_half { f64::from_bits(1) } else { 0.0 };
            return (value, !above_half);
        }
        let dropped = 64 - keep as u32;
        let kept = bits >> dropped;
        let rest = bits & ((1u64 << dropped) - 1);
        let half = 1u64 << (dropped - 1);
        let round_up = rest > half || (rest == half && (self.sticky || kept & 1 == 1));
        let significand = kept + u64::from(round_up);
        // A carry out of the significand moves into the exponent field by
        // itself, including the step from subnormal to normal and from the
        // largest finite value to infinity.
        let encoded = if top >= -1022 {
            (((top + 1022) as u64) << 52) + significand
        } else {
            significand
        };
        let value = f64::from_bits(encoded);
        (value, value.is_infinite())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(s: &str) -> (f64, usize) {
        let r = strtod(s.as_bytes());
        (r.value, r.len)
    }

    #[test]
    fn prefixes_like_c() {
        assert_eq!(parsed("1e"), (1.0, 1));
        assert_eq!(parsed("1e+"), (1.0, 1));
        assert_eq!(parsed("0x"), (0.0, 1));
        assert_eq!(parsed("0x.p1"), (0.0, 1));
        assert_eq!(parsed("0x1p"), (1.0, 3));
        assert_eq!(parsed("  12abc"), (12.0, 4));
        assert_eq!(parsed("infinit"), (f64::INFINITY, 3));
        assert_eq!(parsed("-Infinity!"), (f64::NEG_INFINITY, 9));
        assert_eq!(parsed("1.5.5"), (1.5, 3));
        assert_eq!(parsed("."), (0.0, 0));
        assert_eq!(parsed("  "), (0.0, 0));
        assert_eq!(parsed("-"), (0.0, 0));
        assert_eq!(parsed(""), (0.0, 0));
        assert_eq!(parsed("0x1e+1"), (30.0, 4));
    }

    #[test]
    fn nan_forms() {
        for (text, len) in [
            ("nan", 3),
            ("NaN(abc_9)", 10),
            ("nan()", 5),
            ("nan(", 3),
            ("nan(a b)", 3),
        ] {
            let r = strtod(text.as_bytes());
            assert!(r.value.is_nan(), "{text}");
            assert_eq!(r.len, len, "{text}");
        }
        assert!(strtod(b"-nan").value.is_sign_negative());
    }

    #[test]
    fn decimal_rounding_and_range() {
        assert_eq!(strtod(b"0.1").value, 0.1);
        assert_eq!(strtod(b"1e-310").value, 1e-310);
        assert!(!strtod(b"1e-310").out_of_range);
        assert!(strtod(b"1e400").out_of_range);
        assert!(strtod(b"1e-400").out_of_range);
        assert!(strtod(b"2.4703282292062327e-324").out_of_range);
        assert_eq!(strtod(b"2.4703282292062328e-324").value, f64::from_bits(1));
        assert!(!strtod(b"0e-400").out_of_range);
        assert!(!strtod(b"0e99999999999999999999999").out_of_range);
        assert!(strtod(b"1.7976931348623159e308").out_of_range);
        assert_eq!(strtod(b"1.7976931348623158e308").value, f64::MAX);
    }

    #[test]
    fn underflow_flags_like_glibc() {
        // (input, glibc's errno == ERANGE)
        for (text, erange) in [
            ("0x1p-1074", false),
            ("0x0.0000000000001p-1022", false),
            ("0x1.8p-1074", true),
            ("1e-310", true),
            ("0x1p-1022", false),
            ("0x1.fffffffffffffp-1023", true),
            ("0x1.fffffffffffff7p-1023", true),
            ("0x1.fffffffffffff8p-1023", false),
            ("0x1.ffffffffffffffp-1023", false),
            ("2.2250738585072012e-308", true),
            ("2.2250738585072013e-308", false),
            ("-1e-310", true),
            ("1e-400", true),
            ("0e-400", false),
            ("1e-300", false),
        ] {
            assert_eq!(strtod(text.as_bytes()).erange, erange, "{text}");
        }
        let exact_smallest = format!("{:.1100}", f64::from_bits(1));
        assert!(!strtod(exact_smallest.as_bytes()).erange);
        assert!(strtod(format!("{exact_smallest}1").as_bytes()).erange);
    }

    #[test]
    fn hex_values() {
        let v = |s: &str| strtod(s.as_bytes()).value;
        assert_eq!(v("0x1p3"), 8.0);
        assert_eq!(v("0X1.8P1"), 3.0);
        assert_eq!(v("0x.1"), 0.0625);
        assert_eq!(v("0x1."), 1.0);
        assert_eq!(v("-0x10"), -16.0);
        assert_eq!(v("0x1P-1022"), f64::MIN_POSITIVE);
        assert_eq!(v("0x.8p-1021"), f64::MIN_POSITIVE);
        assert_eq!(v("0x0.0000000000001p-1022"), f64::from_bits(1));
        assert_eq!(v("0x1p-1074"), f64::from_bits(1));
        assert_eq!(v("0x1.8p-1075"), f64::from_bits(1));
        assert_eq!(v("0x1.fffffffffffffp-1023"), f64::MIN_POSITIVE);
        assert_eq!(v("0x1.ffffffffffffffp-1023"), f64::MIN_POSITIVE);
        assert_eq!(v("0x1.fffffffffffffp1023"), f64::MAX);
        assert_eq!(v("0x1.fffffffffffff7ffp1023"), f64::MAX);
        // Ties go to even; anything past the tie rounds up.
        assert_eq!(v("0x1.00000000000008p0"), 1.0);
        assert_eq!(v("0x1.00000000000008000001p0"), 1.0000000000000002);
        assert_eq!(v("0x1.00000000000018p0"), 1.0000000000000004);
        assert_eq!(v("0x123456789abcdef123456789p0"), 5.634_002_667_681_02e27);
        assert_eq!(
            v("0x.000000000000000000000000000001p0"),
            7.52316384526264e-37
        );
        assert_eq!(v("0x0p99999999999999999999"), 0.0);
        for s in [
            "0x1p-1075",
            "0x1p1024",
            "0x1.fffffffffffff8p1023",
            "0x1p-99999999999999999999",
        ] {
            assert!(strtod(s.as_bytes()).out_of_range, "{s}");
        }
    }

    #[test]
    fn hex_matches_decimal_for_random_bit_patterns() {
        // Every finite double printed as exact hex must read back as itself,
        // and halfway points between neighbours must round to even.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let d = f64::from_bits(x & !(1 << 63));
            if !d.is_finite() || d == 0.0 {
                continue;
            }
            let hex = exact_hex(d);
            assert_eq!(strtod(hex.as_bytes()).value, d, "{hex}");
        }
    }

    /// `d` as `0x<int>p<exp>` with an integer significand.
    fn exact_hex(d: f64) -> String {
        let bits = d.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i64;
        let frac = bits & ((1 << 52) - 1);
        let (significand, exp) = if biased == 0 {
            (frac, -1074)
        } else {
            (frac | 1 << 52, biased - 1075)
        };
        format!("0x{significand:x}p{exp}")
    }
}
