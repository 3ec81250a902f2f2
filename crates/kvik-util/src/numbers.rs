//! Number parsing and formatting with Redis's exact rules.
//!
//! Which Redis primitive each command family relies on (Redis 7.0):
//! * integers (INCR/INCRBY/DECRBY, SET EX/PX, SETRANGE and GETRANGE
//!   offsets, counts, indexes...): `string2ll` → [`parse_i64`];
//! * stream ID parts (XADD and friends): `string2ull` → [`parse_u64`];
//! * SCAN/HSCAN/SSCAN/ZSCAN cursors: `strtoul` → [`parse_scan_cursor`];
//! * scores and other double arguments (ZADD, ZINCRBY, ZADD INCR, GEOADD,
//!   GEOSEARCH radii...): `string2d`/`strtod` → [`parse_f64`];
//! * score range bounds (ZRANGEBYSCORE, ZCOUNT, ZREMRANGEBYSCORE,
//!   ZRANGE BYSCORE): a laxer `strtod` use → [`parse_score_bound`];
//! * INCRBYFLOAT, HINCRBYFLOAT and blocking timeouts: `string2ld`, i.e.
//!   C `long double` → [`incr_by_float`], [`hincr_by_float`] and
//!   `long_double::parse_timeout_seconds_ms`.
//!
//! Replies: doubles go out as `%.17g` ([`format_f64`]; RESP3 double frames
//! carry the very same text), INCRBYFLOAT-style results as "human" long
//! doubles (`long_double::LongDouble::to_human`).

use std::fmt::Write as _;

use super::long_double::LongDouble;
use super::strtod::{is_c_space, strtod};

/// Longest decimal form of an `i64` (`-9223372036854775808`) or `u64`.
pub const MAX_INT_DIGITS: usize = 20;

/// Parse a signed 64-bit integer the way Redis's `string2ll` does: an
/// optional `-`, then digits without leading zeros (`0` alone is fine, `-0`
/// is not), nothing else — no `+`, no spaces — and within `i64` range.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > MAX_INT_DIGITS {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    if !matches!(digits.first(), Some(b'1'..=b'9')) {
        return None;
    }
    let magnitude = accumulate_digits(digits)?;
    if negative {
        // -(2^63) is the one magnitude that only fits negated.
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// The value of an all-digit string, `None` on a non-digit or overflow.
fn accumulate_digits(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |acc, &b| {
        let digit = u64::from(b.checked_sub(b'0').filter(|d| *d <= 9)?);
        acc.checked_mul(10)?.checked_add(digit)
    })
}

/// Parse an unsigned 64-bit integer the way Redis's `string2ull` does (its
/// only use is the two halves of stream IDs). The input is read as a C
/// string, so it ends at the first NUL. Strict `string2ll` syntax is tried
/// first and a negative result is refused; failing that, C's `strtoull`
/// rules apply to the whole string: leading white space, `+`, leading zeros
/// and even a `-` (which negates modulo 2^64, so `-01` is `u64::MAX`) are
/// accepted, overflow is not.
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    let s = c_string(s);
    if let Some(v) = parse_i64(s) {
        return u64::try_from(v).ok();
    }
    strtoull_exact(s)
}

/// Parse a SCAN-family cursor the way Redis 7.0 does: C `strtoul` over the
/// whole argument (read as a C string, so up to the first NUL), refusing a
/// leading white space, trailing garbage and overflow. Hence the empty
/// string is cursor 0, `+5` and `007` are accepted, and `-1` wraps to
/// `u64::MAX`.
pub fn parse_scan_cursor(s: &[u8]) -> Option<u64> {
    let s = c_string(s);
    match s.first() {
        None => Some(0),
        Some(&b) if is_c_space(b) => None,
        Some(_) => strtoull_exact(s),
    }
}

/// The bytes a C function sees when handed `s`: everything before the
/// first NUL.
pub fn c_string(s: &[u8]) -> &[u8] {
    s.iter().position(|&b| b == 0).map_or(s, |nul| &s[..nul])
}

/// C `strtoull(s, &end, 10)` that must use all of the non-empty `s`:
/// white space, optional sign, at least one digit; a `-` negates modulo
/// 2^64; overflow fails.
fn strtoull_exact(s: &[u8]) -> Option<u64> {
    let unspaced = &s[s.iter().take_while(|&&b| is_c_space(b)).count()..];
    let (negative, digits) = match unspaced.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, unspaced),
    };
    if digits.is_empty() {
        return None;
    }
    let magnitude = accumulate_digits(digits)?;
    Some(if negative {
        magnitude.wrapping_neg()
    } else {
        magnitude
    })
}

/// Decimal text of `v`, written at the end of `buf`; returns the used part.
pub fn format_i64(v: i64, buf: &mut [u8; MAX_INT_DIGITS]) -> &[u8] {
    let start = write_digits_backwards(v.unsigned_abs(), buf);
    if v < 0 {
        buf[start - 1] = b'-';
        &buf[start - 1..]
    } else {
        &buf[start..]
    }
}

/// Decimal text of `v`, written at the end of `buf`; returns the used part.
pub fn format_u64(v: u64, buf: &mut [u8; MAX_INT_DIGITS]) -> &[u8] {
    let start = write_digits_backwards(v, buf);
    &buf[start..]
}

/// Appends the decimal text of `v` to `out`.
pub fn write_i64(out: &mut Vec<u8>, v: i64) {
    let mut buf = [0; MAX_INT_DIGITS];
    out.extend_from_slice(format_i64(v, &mut buf));
}

/// Number of bytes in the decimal text of `v` (a sign included).
pub fn i64_len(v: i64) -> usize {
    usize::from(v < 0) + u64_len(v.unsigned_abs())
}

/// Number of digits in the decimal text of `v`.
pub fn u64_len(v: u64) -> usize {
    v.checked_ilog10().map_or(1, |log| log as usize + 1)
}

/// Fills `buf` from the end with the digits of `v` (two at a time) and
/// returns the index of the first one. `buf` always has room for a sign in
/// front, since a `u64` has at most 20 digits but then needs no sign.
fn write_digits_backwards(mut v: u64, buf: &mut [u8; MAX_INT_DIGITS]) -> usize {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let mut at = buf.len();
    while v >= 100 {
        let pair = (v % 100) as usize * 2;
        v /= 100;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if v >= 10 {
        let pair = v as usize * 2;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        at -= 1;
        buf[at] = b'0' + v as u8;
    }
    at
}

/// Parse a double the way Redis's `string2d` does (ZADD and ZINCRBY scores,
/// GEO coordinates, any "value is not a valid float" argument): C `strtod`
/// syntax — `1e5`, `.5`, `5.`, `+1`, hex `0x1p3`, `inf`/`-inf`/`infinity` in
/// any case — covering the whole input, with no leading white space, no NaN,
/// and nothing that overflows to infinity or underflows to zero (subnormal
/// results like `1e-310` are fine).
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.first().is_none_or(|&b| is_c_space(b)) {
        return None;
    }
    let parsed = strtod(s);
    if parsed.len != s.len() || parsed.out_of_range || parsed.value.is_nan() {
        return None;
    }
    Some(parsed.value)
}

/// Parse one end of a score range (ZRANGEBYSCORE, ZCOUNT, ZREMRANGEBYSCORE,
/// ZRANGE BYSCORE) like Redis's `zslParseRange`: an optional `(` marks it
/// exclusive (the flag returned), and the rest is C `strtod` over a C
/// string. Laxer than [`parse_f64`]: leading white space is allowed, an
/// empty number is 0 (so `""` and `"("` work), overflow gives ±inf, and
/// anything after a NUL byte is ignored; trailing garbage and NaN are
/// refused.
pub fn parse_score_bound(s: &[u8]) -> Option<(f64, bool)> {
    let s = c_string(s);
    let (exclusive, number) = match s.split_first() {
        Some((b'(', rest)) => (true, rest),
        _ => (false, s),
    };
    let parsed = strtod(number);
    if parsed.len != number.len() || parsed.value.is_nan() {
        return None;
    }
    Some((parsed.value, exclusive))
}

/// Parse a SORT weight (an element, or the value a BY pattern names) the way
/// Redis 7.0 does: C `strtod` over a C string (anything after a NUL byte is
/// ignored), leading white space allowed, nothing after the number, an empty
/// string is 0; NaN and anything C reports as out of range (`errno ==
/// ERANGE`, which includes subnormal results that lost precision) are refused.
pub fn parse_sort_weight(s: &[u8]) -> Option<f64> {
    let s = c_string(s);
    let parsed = strtod(s);
    if parsed.len != s.len() || parsed.erange || parsed.value.is_nan() {
        return None;
    }
    Some(parsed.value)
}

/// Format a double as Redis 7.0 replies with it (`%.17g`, `inf`, `-inf`).
///
/// This is the text of ZSCORE, ZINCRBY, ZADD INCR, ZRANGE WITHSCORES and
/// friends, in RESP2 bulk strings and RESP3 double frames alike: 17
/// significant digits, trailing zeros dropped, exponent form (`1e+17`,
/// `1.0000000000000001e-05`) when the decimal exponent is below -4 or at
/// least 17. So 1.1 reads `1.1000000000000001`, 3 reads `3`, -0 reads `-0`.
pub fn format_f64(d: f64) -> String {
    let mut out = Vec::with_capacity(24);
    write_f64(&mut out, d);
    String::from_utf8(out).expect("formatted doubles are ASCII")
}

/// Appends [`format_f64`]'s text for `d` to `out`.
pub fn write_f64(out: &mut Vec<u8>, d: f64) {
    if d.is_nan() {
        // glibc's spelling; no reply path is expected to produce NaN.
        out.extend_from_slice(if d.is_sign_negative() {
            b"-nan"
        } else {
            b"nan"
        });
    } else if d.is_infinite() {
        out.extend_from_slice(if d > 0.0 { b"inf" } else { b"-inf" });
    } else if d == d.trunc() && d.abs() < 1e17 {
        // An integer of at most 17 digits prints exactly as itself.
        if d.is_sign_negative() {
            out.push(b'-');
        }
        let mut buf = [0; MAX_INT_DIGITS];
        out.extend_from_slice(format_u64(d.abs() as u64, &mut buf));
    } else {
        write_g17(out, d);
    }
}

/// `%.17g` for finite non-integral or large values.
fn write_g17(out: &mut Vec<u8>, d: f64) {
    const PRECISION: i32 = 17;
    // `{:.16e}` rounds the exact binary value to 17 significant digits,
    // ties to even, just like the C library; it prints "d.dddde<exp>".
    let mut scientific = StackText::default();
    write!(scientific, "{:.16e}", d.abs()).expect("32 bytes hold any double");
    let (digits, exponent) = scientific.split_scientific();
    let digits = trim_trailing_zeros(&digits);

    if d.is_sign_negative() {
        out.push(b'-');
    }
    if (-4..PRECISION).contains(&exponent) {
        write_positional(out, digits, exponent);
    } else {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exponent < 0 { b'-' } else { b'+' });
        let magnitude = exponent.unsigned_abs();
        if magnitude < 10 {
            out.push(b'0');
        }
        write_i64(out, i64::from(magnitude));
    }
}

/// A small stack buffer for `{:e}` output (never longer than 24 bytes).
#[derive(Default)]
struct StackText {
    buf: [u8; 32],
    len: usize,
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        self.buf
            .get_mut(self.len..end)
            .ok_or(std::fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

impl StackText {
    /// Splits "d.ddd...e<exp>" into its 17 digits and the exponent.
    fn split_scientific(&self) -> ([u8; 17], i32) {
        let text = &self.buf[..self.len];
        let e = text
            .iter()
            .position(|&b| b == b'e')
            .expect("has an exponent");
        let mut digits = [0u8; 17];
        let mantissa_digits = text[..e].iter().filter(|b| b.is_ascii_digit());
        for (slot, &digit) in digits.iter_mut().zip(mantissa_digits) {
            *slot = digit;
        }
        let exponent = std::str::from_utf8(&text[e + 1..])
            .ok()
            .and_then(|t| t.parse().ok())
            .expect("exponent is an integer");
        (digits, exponent)
    }
}

fn zeros(count: usize) -> impl Iterator<Item = u8> {
    std::iter::repeat_n(b'0', count)
}

fn trim_trailing_zeros(digits: &[u8]) -> &[u8] {
    let keep = digits.iter().rposition(|&b| b != b'0').map_or(1, |i| i + 1);
    &digits[..keep]
}

/// Writes significant `digits` (first one non-zero, no trailing zeros) with
/// a decimal point placed for a value of order 10^`exponent`, padding
/// with zeros as needed.
fn write_positional(out: &mut Vec<u8>, digits: &[u8], exponent: i32) {
    if exponent < 0 {
        out.extend_from_slice(b"0.");
        out.extend(zeros((-exponent - 1) as usize));
        out.extend_from_slice(digits);
        return;
    }
    let int_len = exponent as usize + 1;
    if digits.len() <= int_len {
        out.extend_from_slice(digits);
        out.extend(zeros(int_len - digits.len()));
    } else {
        out.extend_from_slice(&digits[..int_len]);
        out.push(b'.');
        out.extend_from_slice(&digits[int_len..]);
    }
}

/// Why INCRBYFLOAT / HINCRBYFLOAT failed.
#[derive(Debug, PartialEq, Eq)]
pub enum IncrFloatError {
    /// The stored value or the increment is not a valid float.
    NotAFloat,
    /// The result would be NaN or infinite.
    NanOrInfinity,
}

impl IncrFloatError {
    /// Redis's error reply text.
    pub fn message(&self) -> &'static str {
        match self {
            IncrFloatError::NotAFloat => "ERR value is not a valid float",
            IncrFloatError::NanOrInfinity => "ERR increment would produce NaN or Infinity",
        }
    }
}

/// INCRBYFLOAT arithmetic in long double precision, formatted as Redis stores
/// the result (`%.17Lf` with trailing zeros trimmed).
///
/// `current` is the stored string (pass `b"0"` for a missing key, and the
/// decimal text for an integer-encoded value); both operands follow
/// `string2ld` (see [`LongDouble::parse`]): `inf` is a valid operand that
/// then fails with [`IncrFloatError::NanOrInfinity`], `nan` is not a float.
/// So `0.1` + `0.2` gives `0.3`, and `10.50` + `0.1` gives `10.6`.
pub fn incr_by_float(current: &[u8], increment: &[u8]) -> Result<Vec<u8>, IncrFloatError> {
    let value = LongDouble::parse(current).ok_or(IncrFloatError::NotAFloat)?;
    let increment = LongDouble::parse(increment).ok_or(IncrFloatError::NotAFloat)?;
    finish_increment(value, increment).ok_or(IncrFloatError::NanOrInfinity)
}

/// Why HINCRBYFLOAT failed, in the order Redis checks.
#[derive(Debug, PartialEq, Eq)]
pub enum HincrFloatError {
    /// The increment argument is not a valid float (checked first).
    IncrementNotAFloat,
    /// The increment itself is infinite (checked before the key's type).
    IncrementNanOrInfinity,
    /// The field holds something that is not a float.
    HashValueNotAFloat,
    /// The sum would be NaN or infinite.
    NanOrInfinity,
}

impl HincrFloatError {
    /// Redis's error reply text.
    pub fn message(&self) -> &'static str {
        match self {
            HincrFloatError::IncrementNotAFloat => "ERR value is not a valid float",
            HincrFloatError::IncrementNanOrInfinity => "ERR value is NaN or Infinity",
            HincrFloatError::HashValueNotAFloat => "ERR hash value is not a float",
            HincrFloatError::NanOrInfinity => "ERR increment would produce NaN or Infinity",
        }
    }
}

/// First step of HINCRBYFLOAT, to run before looking the key up (a bad
/// increment wins over WRONGTYPE): the increment must parse and be finite.
pub fn parse_hincr_increment(increment: &[u8]) -> Result<LongDouble, HincrFloatError> {
    let increment = LongDouble::parse(increment).ok_or(HincrFloatError::IncrementNotAFloat)?;
    if !increment.is_finite() {
        return Err(HincrFloatError::IncrementNanOrInfinity);
    }
    Ok(increment)
}

/// Second step of HINCRBYFLOAT: add the checked `increment` to the field's
/// `current` value (`None` when the field or key is missing) and return
/// the text to store and reply with — same format as INCRBYFLOAT.
pub fn hincr_by_float(
    current: Option<&[u8]>,
    increment: LongDouble,
) -> Result<Vec<u8>, HincrFloatError> {
    let value = match current {
        Some(text) => LongDouble::parse(text).ok_or(HincrFloatError::HashValueNotAFloat)?,
        None => LongDouble::from_i64(0),
    };
    finish_increment(value, increment).ok_or(HincrFloatError::NanOrInfinity)
}

/// The shared tail of both commands: sum, refuse NaN/infinity, print.
fn finish_increment(value: LongDouble, increment: LongDouble) -> Option<Vec<u8>> {
    let sum = value + increment;
    sum.is_finite().then(|| sum.to_human())
}

#[cfg(test)]
mod tests;
