//! C `long double` values, for the commands whose Redis behaviour is defined
//! by that type: INCRBYFLOAT and HINCRBYFLOAT (parse with `strtold`, add, and
//! print with `%.17Lf`), GEOPOS coordinates (printed the same way) and the
//! seconds-with-fraction timeouts of blocking commands.
//!
//! The arithmetic itself lives in `csrc/longdouble.c` and uses the platform
//! C library, so on x86-64 this is 80-bit extended precision exactly as a
//! Redis build would compute it, and on other targets whatever their C
//! `long double` is — again matching Redis there.

use std::ffi::c_char;
use std::fmt;
use std::ops::Add;

/// Longest text accepted by [`LongDouble::parse`], plus one: Redis parses
/// through a buffer of this size and refuses anything that does not fit.
pub const MAX_LONG_DOUBLE_CHARS: usize = 5120;

/// Storage for one C `long double`. The bytes are only ever interpreted by
/// the C side.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub struct LongDouble([u8; 16]);

/// Output styles of `kvik_ld_format` (mirrors the enum in the C file).
#[derive(Clone, Copy)]
#[repr(C)]
enum Style {
    /// `%.17Lg`.
    Auto = 0,
    /// `%.17Lf` with trailing fraction zeros and a bare `.` removed.
    Human = 1,
}

extern "C" {
    fn kvik_ld_parse(s: *const c_char, len: usize, out: *mut LongDouble) -> i32;
    fn kvik_ld_from_f64(d: f64, out: *mut LongDouble);
    fn kvik_ld_from_i64(v: i64, out: *mut LongDouble);
    fn kvik_ld_to_f64(v: *const LongDouble) -> f64;
    fn kvik_ld_add(a: *const LongDouble, b: *const LongDouble, out: *mut LongDouble);
    fn kvik_ld_is_finite(v: *const LongDouble) -> i32;
    fn kvik_ld_format(v: *const LongDouble, style: Style, buf: *mut c_char, cap: usize) -> usize;
    fn kvik_ld_seconds_to_ms(v: *const LongDouble) -> i64;
}

impl LongDouble {
    const ZERO_BITS: LongDouble = LongDouble([0; 16]);

    /// Parses the whole of `s` the way Redis's `string2ld` does: `strtold`
    /// syntax (decimal, hex `0x1p3`, `inf`/`infinity` in any case, optional
    /// sign) but no leading or trailing white space, no embedded NUL, nothing
    /// of 5120 bytes or more, no NaN, and no value that overflows or
    /// underflows to zero.
    pub fn parse(s: &[u8]) -> Option<LongDouble> {
        let mut out = Self::ZERO_BITS;
        // SAFETY: `s` is valid for `s.len()` bytes and `out` is a writable,
        // suitably aligned slot at least as large as a C long double.
        let ok = unsafe { kvik_ld_parse(s.as_ptr().cast(), s.len(), &mut out) };
        (ok != 0).then_some(out)
    }

    /// The exact value of `d`.
    pub fn from_f64(d: f64) -> LongDouble {
        let mut out = Self::ZERO_BITS;
        // SAFETY: `out` is a writable long double slot.
        unsafe { kvik_ld_from_f64(d, &mut out) };
        out
    }

    /// `v` converted as C does (exact on x86-64).
    pub fn from_i64(v: i64) -> LongDouble {
        let mut out = Self::ZERO_BITS;
        // SAFETY: `out` is a writable long double slot.
        unsafe { kvik_ld_from_i64(v, &mut out) };
        out
    }

    /// Rounded to the nearest double.
    pub fn to_f64(self) -> f64 {
        // SAFETY: `self` holds a long double written by the C side.
        unsafe { kvik_ld_to_f64(&self) }
    }

    /// Neither infinite nor NaN.
    pub fn is_finite(self) -> bool {
        // SAFETY: `self` holds a long double written by the C side.
        unsafe { kvik_ld_is_finite(&self) != 0 }
    }

    /// Redis's "human" long double text (`ld2string` in human mode, used for
    /// INCRBYFLOAT, HINCRBYFLOAT and GEOPOS): `%.17Lf`, then trailing zeros
    /// of the fraction and a bare trailing `.` removed; `-0` becomes `0`,
    /// infinities print as `inf` / `-inf`.
    pub fn to_human(self) -> Vec<u8> {
        self.format(Style::Human)
    }

    /// `%.17Lg` (Redis's `ld2string` in its default mode).
    pub fn to_auto(self) -> Vec<u8> {
        self.format(Style::Auto)
    }

    /// Whole milliseconds in `self` seconds, as Redis turns a blocking
    /// command's timeout into milliseconds: `self * 1000` rounded up, with
    /// `i64::MIN` for anything out of range (which callers then report as a
    /// negative timeout, like Redis on x86-64).
    pub fn seconds_to_ms(self) -> i64 {
        // SAFETY: `self` holds a long double written by the C side.
        unsafe { kvik_ld_seconds_to_ms(&self) }
    }

    fn format(self, style: Style) -> Vec<u8> {
        let mut buf = [0u8; MAX_LONG_DOUBLE_CHARS];
        // SAFETY: `buf` is writable for its full length, which is what we
        // pass as the capacity; the C side never writes past it.
        let len = unsafe { kvik_ld_format(&self, style, buf.as_mut_ptr().cast(), buf.len()) };
        buf[..len].to_vec()
    }
}

impl Add for LongDouble {
    type Output = LongDouble;

    /// The sum in long double precision.
    fn add(self, other: LongDouble) -> LongDouble {
        let mut out = Self::ZERO_BITS;
        // SAFETY: both inputs hold long doubles; `out` is a writable slot.
        unsafe { kvik_ld_add(&self, &other, &mut out) };
        out
    }
}

impl fmt::Debug for LongDouble {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.to_auto()))
    }
}

/// A blocking command's timeout in seconds (BLPOP, BLMOVE, BZPOPMIN, ...)
/// converted to milliseconds as Redis 7.0 does it: parsed as a long double
/// (see [`LongDouble::parse`]), times 1000, rounded up — so `0.0001` is 1 ms
/// while `-0.0001` and `-0.001` come out as 0. `None` means Redis's "timeout
/// is not a float or out of range"; a negative result (including `i64::MIN`
/// for infinity or anything from ~9.2e15 seconds up) is "timeout is
/// negative". Zero means block forever. Redis 7.0 then adds the current
/// time without an overflow check.
pub fn parse_timeout_seconds_ms(s: &[u8]) -> Option<i64> {
    LongDouble::parse(s).map(LongDouble::seconds_to_ms)
}

/// A double printed the way Redis prints GEOPOS coordinates and other
/// "human" long doubles: see [`LongDouble::to_human`].
pub fn format_f64_human(d: f64) -> Vec<u8> {
    LongDouble::from_f64(d).to_human()
}
