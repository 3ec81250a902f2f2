use super::*;
use crate::long_double::{format_f64_human, parse_timeout_seconds_ms, LongDouble};
use crate::redis_oracle::{Oracle, Reply};
use proptest::prelude::*;

// Every table below was checked against redis-server 7.0.15 (x86-64); the
// command used is named on each.

/// `SET k 0; INCRBY k <s>` and `SET k <s>; INCRBY k 0`.
const I64_CASES: &[(&[u8], Option<i64>)] = &[
    (b"0", Some(0)),
    (b"-0", None),
    (b"+0", None),
    (b"1", Some(1)),
    (b"+1", None),
    (b"-1", Some(-1)),
    (b"01", None),
    (b"-01", None),
    (b"00", None),
    (b" 1", None),
    (b"1 ", None),
    (b"", None),
    (b"-", None),
    (b"+", None),
    (b"9223372036854775807", Some(i64::MAX)),
    (b"9223372036854775808", None),
    (b"-9223372036854775808", Some(i64::MIN)),
    (b"-9223372036854775809", None),
    (b"18446744073709551615", None),
    (b"18446744073709551616", None),
    (b"99999999999999999999", None),
    (b"-99999999999999999999", None),
    (b"000000000000000000001", None),
    (b"1e3", None),
    (b"0x10", None),
    (b"1.0", None),
    (b"1\x00", None),
    (b"-00", None),
    (b"12a", None),
    (b"-9223372036854775808 ", None),
];

#[test]
fn parse_i64_table() {
    for &(text, expected) in I64_CASES {
        assert_eq!(parse_i64(text), expected, "{}", text.escape_ascii());
    }
}

/// The sequence half of `XADD s 5-<s> f v` (stream IDs use `string2ull`).
const U64_CASES: &[(&[u8], Option<u64>)] = &[
    (b"1", Some(1)),
    (b"+1", Some(1)),
    (b"01", Some(1)),
    (b" 1", Some(1)),
    (b"\t1", Some(1)),
    (b"-1", None),
    (b"-01", Some(u64::MAX)),
    (b" -1", Some(u64::MAX)),
    (b"-18446744073709551615", Some(1)),
    (b"-18446744073709551616", None),
    (b"18446744073709551615", Some(u64::MAX)),
    (b"18446744073709551616", None),
    (b"-0", Some(0)),
    (b"+", None),
    (b"", None),
    (b"0x1", None),
    (b"1 ", None),
    (b"1\x00", Some(1)),
    (b"1\x002", Some(1)),
];

#[test]
fn parse_u64_table() {
    for &(text, expected) in U64_CASES {
        assert_eq!(parse_u64(text), expected, "{}", text.escape_ascii());
    }
}

/// `SCAN <s> COUNT 1` (a valid cursor was accepted, others gave "ERR
/// invalid cursor").
const CURSOR_CASES: &[(&[u8], Option<u64>)] = &[
    (b"0", Some(0)),
    (b"", Some(0)),
    (b"+0", Some(0)),
    (b"-0", Some(0)),
    (b" 0", None),
    (b"\t0", None),
    (b"0 ", None),
    (b"00", Some(0)),
    (b"-1", Some(u64::MAX)),
    (b"+5", Some(5)),
    (b"18446744073709551615", Some(u64::MAX)),
    (b"18446744073709551616", None),
    (b"-18446744073709551615", Some(1)),
    (b"-18446744073709551616", None),
    (b"0x10", None),
    (b"1\x00x", Some(1)),
    (b"abc", None),
    (b"-", None),
    (b"+", None),
    (b"99999999999999999999999", None),
];

#[test]
fn parse_scan_cursor_table() {
    for &(text, expected) in CURSOR_CASES {
        assert_eq!(parse_scan_cursor(text), expected, "{}", text.escape_ascii());
    }
}

#[test]
fn integer_formatting() {
    let mut buf = [0; MAX_INT_DIGITS];
    for v in [
        0,
        1,
        -1,
        9,
        10,
        -10,
        99,
        100,
        12345,
        i64::MAX,
        i64::MIN,
        -9_000_000_000,
    ] {
        assert_eq!(format_i64(v, &mut buf), v.to_string().as_bytes());
        assert_eq!(i64_len(v), v.to_string().len());
    }
    for v in [0, 7, 10, 10_000_000_000_000_000_000, u64::MAX] {
        assert_eq!(format_u64(v, &mut buf), v.to_string().as_bytes());
        assert_eq!(u64_len(v), v.to_string().len());
    }
    let mut out = b"x".to_vec();
    write_i64(&mut out, -42);
    assert_eq!(out, b"x-42");
}

proptest! {
    #[test]
    fn integers_round_trip(v: i64) {
        let mut buf = [0; MAX_INT_DIGITS];
        let text = format_i64(v, &mut buf).to_vec();
        prop_assert_eq!(text.clone(), v.to_string().into_bytes());
        prop_assert_eq!(parse_i64(&text), Some(v));
        prop_assert_eq!(i64_len(v), text.len());
    }

    #[test]
    fn unsigned_round_trip(v: u64) {
        let mut buf = [0; MAX_INT_DIGITS];
        let text = format_u64(v, &mut buf).to_vec();
        prop_assert_eq!(text.clone(), v.to_string().into_bytes());
        prop_assert_eq!(parse_u64(&text), Some(v));
        prop_assert_eq!(parse_scan_cursor(&text), Some(v));
    }
}

/// `ZADD z <s> m` then `ZSCORE z m` (skiplist encoding, so -0 survives):
/// `None` is "ERR value is not a valid float"; the text is ZSCORE's reply,
/// which `format_f64` must reproduce from the parsed value.
const ZADD_CASES: &[(&[u8], Option<&[u8]>)] = &[
    (b"1", Some(b"1")),
    (b"-1", Some(b"-1")),
    (b"+1", Some(b"1")),
    (b" 1", None),
    (b"1 ", None),
    (b"\x091", None),
    (b"1\x09", None),
    (b"", None),
    (b".5", Some(b"0.5")),
    (b"5.", Some(b"5")),
    (b".", None),
    (b"-.5", Some(b"-0.5")),
    (b"+.5", Some(b"0.5")),
    (b"1e5", Some(b"100000")),
    (b"1E5", Some(b"100000")),
    (b"1e+5", Some(b"100000")),
    (b"1e-5", Some(b"1.0000000000000001e-05")),
    (b"1e", None),
    (b"1e+", None),
    (b"e5", None),
    (b"inf", Some(b"inf")),
    (b"+inf", Some(b"inf")),
    (b"-inf", Some(b"-inf")),
    (b"INF", Some(b"inf")),
    (b"Infinity", Some(b"inf")),
    (b"-infinity", Some(b"-inf")),
    (b"infinit", None),
    (b"infx", None),
    (b"nan", None),
    (b"NaN", None),
    (b"-nan", None),
    (b"nan(1)", None),
    (b"0x1p3", Some(b"8")),
    (b"0X1P3", Some(b"8")),
    (b"0x10", Some(b"16")),
    (b"0x1.8p1", Some(b"3")),
    (b"0x", None),
    (b"0x.p1", None),
    (b"0xp1", None),
    (b"0x1p", None),
    (b"0x1p+", None),
    (b"1e400", None),
    (b"-1e400", None),
    (b"1e-400", None),
    (b"1e-310", Some(b"9.9999999999999694e-311")),
    (b"4e-324", Some(b"4.9406564584124654e-324")),
    (b"2e-324", None),
    (b"3e-324", Some(b"4.9406564584124654e-324")),
    (b"2.4703282292062328e-324", Some(b"4.9406564584124654e-324")),
    (b"2.4703282292062327e-324", None),
    (b"0e-400", Some(b"0")),
    (b"0e400", Some(b"0")),
    (b"0x1p-1074", Some(b"4.9406564584124654e-324")),
    (b"0x1p-1075", None),
    (b"0x1.8p-1075", Some(b"4.9406564584124654e-324")),
    (b"0x1p1024", None),
    (b"0x1.fffffffffffffp1023", Some(b"1.7976931348623157e+308")),
    (b"0x1.fffffffffffff8p1023", None),
    (b"1.7976931348623158e308", Some(b"1.7976931348623157e+308")),
    (b"1.7976931348623159e308", None),
    (b"00001", Some(b"1")),
    (b"-0", Some(b"-0")),
    (b"-0.0", Some(b"-0")),
    (b"0.0000", Some(b"0")),
    (b"1,5", None),
    (b"1_0", None),
    (b"\x001", None),
    (b"1\x00", None),
    (b"1.5\x00", None),
    (b"0b1", None),
    (b"1d", None),
    (b"1f", None),
    (b"1L", None),
    (b"--1", None),
    (b"+-1", None),
    (b"0x-1", None),
    (b"1e5.5", None),
    (b"1.2.3", None),
    (b"  ", None),
    (b"\x0a5", None),
    (b"\x0b5", None),
    (b"\x0c5", None),
    (b"\x0d5", None),
    (b"inf ", None),
    (b"nan(abc_9)", None),
    (b"nan()", None),
    (b"nan(", None),
    (b"0x1P-1022", Some(b"2.2250738585072014e-308")),
    (b"0x0.0000000000001p-1022", Some(b"4.9406564584124654e-324")),
    (b"0x1.00000000000008p0", Some(b"1")),
    (b"0x1.00000000000008000001p0", Some(b"1.0000000000000002")),
    (
        b"0x123456789abcdef123456789p0",
        Some(b"5.6340026676810196e+27"),
    ),
    (b"0x0p99999999999999999999", Some(b"0")),
    (b"0x1p99999999999999999999", None),
    (b"1e-323", Some(b"9.8813129168249309e-324")),
    (b"1e308", Some(b"1e+308")),
    (b"-1e-310", Some(b"-9.9999999999999694e-311")),
    (b"0x1.", Some(b"1")),
    (b"0x.1", Some(b"0.0625")),
    (b"0x1e", Some(b"30")),
    (b"0x1e+1", None),
    (b"1.1", Some(b"1.1000000000000001")),
    (b"0.1", Some(b"0.10000000000000001")),
    (b"123456789012345678", Some(b"1.2345678901234568e+17")),
    (b"99999999999999999", Some(b"1e+17")),
    (b"9007199254740993", Some(b"9007199254740992")),
    (b"1e16", Some(b"10000000000000000")),
    (b"1e17", Some(b"1e+17")),
    (b"0.0001", Some(b"0.0001")),
    (b"0.00001", Some(b"1.0000000000000001e-05")),
    (b"-1.5e-7", Some(b"-1.4999999999999999e-07")),
    (b"12345.678", Some(b"12345.678")),
    (b"1e+300", Some(b"1.0000000000000001e+300")),
    (b"1e-320", Some(b"9.9998886718268301e-321")),
    (b"2.5", Some(b"2.5")),
    (b"100", Some(b"100")),
    (b"1000000000000000.25", Some(b"1000000000000000.2")),
    (b"0.30000000000000004", Some(b"0.30000000000000004")),
    (b"1e21", Some(b"1e+21")),
    (b"-123.456e-10", Some(b"-1.23456e-08")),
    (b"5e-324", Some(b"4.9406564584124654e-324")),
    (b"2.2250738585072014e-308", Some(b"2.2250738585072014e-308")),
    (b"0.000123456789012345678", Some(b"0.00012345678901234567")),
    (b"1234567890123456.7", Some(b"1234567890123456.8")),
    (b"12345678901234567.8", Some(b"12345678901234568")),
];

#[test]
fn parse_and_format_f64_table() {
    for &(text, expected) in ZADD_CASES {
        let ours = parse_f64(text).map(format_f64);
        let expected = expected.map(|e| String::from_utf8(e.to_vec()).unwrap());
        assert_eq!(ours, expected, "{}", text.escape_ascii());
    }
}

/// `ZCOUNT z <s> +inf` and `ZCOUNT z -inf <s>` over scores 0, 1 and 16;
/// `None` is "ERR min or max is not a float".
type BoundCase = (&'static [u8], Option<(i64, i64)>);
const BOUND_CASES: &[BoundCase] = &[
    (b"", Some((3, 1))),
    (b"(", Some((2, 0))),
    (b" 1", Some((2, 2))),
    (b"1 ", None),
    (b"\x09(1", None),
    (b"( 1", Some((1, 1))),
    (b"+1", Some((2, 2))),
    (b"(+1", Some((1, 1))),
    (b"1e400", Some((0, 3))),
    (b"(1e400", Some((0, 3))),
    (b"-1e400", Some((3, 0))),
    (b"nan", None),
    (b"(nan", None),
    (b"inf", Some((0, 3))),
    (b"-inf", Some((3, 0))),
    (b"(-inf", Some((3, 0))),
    (b"0x10", Some((1, 3))),
    (b"(0x10", Some((0, 2))),
    (b"1\x00abc", Some((2, 2))),
    (b"(1\x00x", Some((1, 1))),
    (b"-", None),
    (b"e", None),
    (b"1e", None),
    (b"(((1", None),
    (b"1e-400", Some((3, 1))),
    (b"infinity", Some((0, 3))),
    (b"infx", None),
    (b"0x", None),
    (b"0x1p", None),
    (b"  ", None),
    (b"\x0916", Some((1, 3))),
    (b"((1", None),
    (b"(16", Some((0, 2))),
    (b"16.0000000000000001", Some((1, 3))),
];

#[test]
fn parse_score_bound_table() {
    let scores = [0.0, 1.0, 16.0];
    for &(text, expected) in BOUND_CASES {
        let counts = parse_score_bound(text).map(|(bound, exclusive)| {
            let count = |keep: &dyn Fn(f64) -> bool| scores.iter().filter(|&&s| keep(s)).count();
            let as_min = count(&|s| if exclusive { s > bound } else { s >= bound });
            let as_max = count(&|s| if exclusive { s < bound } else { s <= bound });
            (as_min as i64, as_max as i64)
        });
        assert_eq!(counts, expected, "{}", text.escape_ascii());
    }
}

/// `RPUSH l <s> 2; SORT l`: which weights SORT accepts, and as what.
const SORT_WEIGHT_CASES: &[(&[u8], Option<f64>)] = &[
    (b"", Some(0.0)),
    (b" 1", Some(1.0)),
    (b"\t7", Some(7.0)),
    (b"\n7", Some(7.0)),
    (b"+5", Some(5.0)),
    (b".5", Some(0.5)),
    (b"5.", Some(5.0)),
    (b"0x10", Some(16.0)),
    (b"0X1p3", Some(8.0)),
    (b"inf", Some(f64::INFINITY)),
    (b"infinity", Some(f64::INFINITY)),
    (b"-inf", Some(f64::NEG_INFINITY)),
    (b"-0", Some(-0.0)),
    (b"0e-999", Some(0.0)),
    (b"1e308", Some(1e308)),
    (b"0x1p-1074", Some(5e-324)),
    (b"2.2250738585072014e-308", Some(f64::MIN_POSITIVE)),
    (b"1\x00junk", Some(1.0)),
    (b"1 ", None),
    (b"1_0", None),
    (b"1e", None),
    (b"0x", None),
    (b"nan", None),
    (b"-nan", None),
    (b"nan(123)", None),
    (b"1e400", None),
    (b"-1e309", None),
    (b"1e-400", None),
    (b"1e-310", None),
    (b"4.9406564584124654e-324", None),
    (b"2.2250738585072011e-308", None),
    (b"  ", None),
];

#[test]
fn parse_sort_weight_table() {
    for &(text, expected) in SORT_WEIGHT_CASES {
        assert_eq!(
            parse_sort_weight(text).map(f64::to_bits),
            expected.map(f64::to_bits),
            "{}",
            text.escape_ascii()
        );
    }
}

#[test]
fn format_f64_shapes() {
    let cases: &[(f64, &str)] = &[
        (0.0, "0"),
        (-0.0, "-0"),
        (3.0, "3"),
        (-3.0, "-3"),
        (1.1, "1.1000000000000001"),
        (0.1, "0.10000000000000001"),
        (0.5, "0.5"),
        (1e16, "10000000000000000"),
        (99999999999999984.0, "99999999999999984"),
        (1e17, "1e+17"),
        (1e20, "1e+20"),
        (1.5e300, "1.5000000000000001e+300"),
        (1e-4, "0.0001"),
        (1.5e-4, "0.00014999999999999999"),
        (1e-5, "1.0000000000000001e-05"),
        (5e-324, "4.9406564584124654e-324"),
        (f64::MAX, "1.7976931348623157e+308"),
        (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
        (123456789.125, "123456789.125"),
        // An exact tie at the 17th digit rounds to even, as glibc does.
        (1e15 + 0.25, "1000000000000000.2"),
        (1e15 + 0.75, "1000000000000000.8"),
        (9007199254740993.0, "9007199254740992"),
        (f64::INFINITY, "inf"),
        (f64::NEG_INFINITY, "-inf"),
        (f64::NAN, "nan"),
        (-f64::NAN, "-nan"),
    ];
    for &(d, expected) in cases {
        assert_eq!(format_f64(d), expected, "{d:e}");
    }
    let mut out = b"score:".to_vec();
    write_f64(&mut out, 2.5);
    assert_eq!(out, b"score:2.5");
}

proptest! {
    /// `%.17g` always reads back as the same double (17 digits suffice).
    #[test]
    fn format_f64_round_trips(bits: u64) {
        let d = f64::from_bits(bits);
        prop_assume!(d.is_finite());
        let text = format_f64(d);
        prop_assert_eq!(parse_f64(text.as_bytes()).map(f64::to_bits), Some(d.to_bits()));
        prop_assert!(text.len() <= 24);
    }
}

/// `format_f64` compared with the C library's `%.17g` on random doubles,
/// integers near the 17-digit boundary and exact ties at the 17th digit.
#[cfg(target_os = "linux")]
#[test]
fn format_f64_agrees_with_libc() {
    let c_format = |d: f64| {
        let mut buf = [0u8; 64];
        // SAFETY: the buffer is large enough for any `%.17g` output and the
        // format consumes exactly one double.
        let len =
            unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), c"%.17g".as_ptr(), d) };
        String::from_utf8(buf[..len as usize].to_vec()).unwrap()
    };
    let mut seed = 0x0123_4567_89ab_cdefu64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for i in 0..300_000u64 {
        let r = next();
        let d = match i % 4 {
            0 => f64::from_bits(r),
            1 => (r % 200_000_000_000_000_000) as f64 - 1e17,
            2 => 1e15 + (r % 4_000_000) as f64 / 4.0,
            _ => (r % 1_000_000) as f64 * 10f64.powi((r >> 40) as i32 % 40 - 20),
        };
        if d.is_nan() {
            continue;
        }
        assert_eq!(format_f64(d), c_format(d), "{:x}", d.to_bits());
    }
}

/// Random `strtod` inputs compared with the C library's own `strtod`.
#[cfg(target_os = "linux")]
#[test]
fn strtod_agrees_with_libc() {
    use crate::strtod::strtod;
    let pieces: &[&str] = &[
        "0",
        "1",
        "5",
        "9",
        "00",
        "12345678901234567890",
        ".",
        "e",
        "E",
        "-",
        "+",
        "x",
        "X",
        "p",
        "P",
        "a",
        "f",
        "F",
        "inf",
        "INFINITY",
        "nan",
        "(",
        ")",
        " ",
        "\t",
        "0x",
        "e-3",
        "p-1074",
        "e308",
        "e-320",
        "e400",
        "p1023",
        "p-1080",
        "p-1023",
        "e-308",
        "2.225073858507201",
        "fffffffffffff8",
        "ffffffffffffff",
        "8",
        "0000000000000001",
    ];
    let mut seed = 0x1234_5678_9abc_def1u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..200_000 {
        let count = 1 + next() % 6;
        let text: String = (0..count)
            .map(|_| pieces[(next() % pieces.len() as u64) as usize])
            .collect();
        let c_text = std::ffi::CString::new(text.clone()).unwrap();
        let mut end: *mut libc::c_char = std::ptr::null_mut();
        // SAFETY: `c_text` is a valid C string; errno is thread-local.
        let (value, erange) = unsafe {
            *libc::__errno_location() = 0;
            let value = libc::strtod(c_text.as_ptr(), &mut end);
            (value, *libc::__errno_location() == libc::ERANGE)
        };
        let consumed = end as usize - c_text.as_ptr() as usize;
        let ours = strtod(text.as_bytes());
        assert_eq!(ours.len, consumed, "{text:?}");
        if value.is_nan() {
            assert!(ours.value.is_nan(), "{text:?}");
        } else {
            assert_eq!(ours.value.to_bits(), value.to_bits(), "{text:?}");
        }
        let c_out_of_range = erange && (value == 0.0 || value.is_infinite());
        assert_eq!(ours.out_of_range, c_out_of_range, "{text:?}");
        assert_eq!(ours.erange, erange, "{text:?}");
    }
}

/// `SET k <a>` (or no key for `b"0"` here when Redis had none) then
/// `INCRBYFLOAT k <b>`.
type IncrCase = (
    &'static [u8],
    &'static [u8],
    Result<&'static [u8], IncrFloatError>,
);
const INCR_CASES: &[IncrCase] = &[
    (b"0.1", b"0.2", Ok(b"0.3")),
    (b"10.50", b"0.1", Ok(b"10.6")),
    (b"5.0e3", b"2.0e2", Ok(b"5200")),
    (b"1e20", b"1", Ok(b"100000000000000000000")),
    (b"-1.5", b"1.5", Ok(b"0")),
    (b"1", b"-1", Ok(b"0")),
    (b"-0", b"-0", Ok(b"0")),
    (b"-0", b"0", Ok(b"0")),
    (b"0", b"-0", Ok(b"0")),
    (b"1.1", b"0", Ok(b"1.1")),
    (b"0", b"1.1", Ok(b"1.1")),
    (b"0", b"1.1", Ok(b"1.1")),
    (b"0", b"0.1", Ok(b"0.1")),
    (b"1e-20", b"0", Ok(b"0")),
    (b"1e-18", b"0", Ok(b"0")),
    (b"5e-18", b"0", Ok(b"0")),
    (b"4.9e-18", b"0", Ok(b"0")),
    (b"-5e-18", b"0", Ok(b"0")),
    (b"1.23456789012345678", b"0", Ok(b"1.23456789012345678")),
    (b"abc", b"1", Err(IncrFloatError::NotAFloat)),
    (b"1", b"abc", Err(IncrFloatError::NotAFloat)),
    (b"1", b" 1", Err(IncrFloatError::NotAFloat)),
    (b" 1", b"1", Err(IncrFloatError::NotAFloat)),
    (b"1", b"1 ", Err(IncrFloatError::NotAFloat)),
    (b"1", b"nan", Err(IncrFloatError::NotAFloat)),
    (b"1", b"inf", Err(IncrFloatError::NanOrInfinity)),
    (b"1", b"-inf", Err(IncrFloatError::NanOrInfinity)),
    (b"1", b"+inf", Err(IncrFloatError::NanOrInfinity)),
    (b"inf", b"0", Err(IncrFloatError::NanOrInfinity)),
    (b"1", b"1e4933", Err(IncrFloatError::NotAFloat)),
    (b"1e4932", b"1e4932", Err(IncrFloatError::NanOrInfinity)),
    (b"1", b"1e-5000", Err(IncrFloatError::NotAFloat)),
    (b"1", b"1e-4940", Ok(b"1")),
    (b"1", b"0x10", Ok(b"17")),
    (b"1", b"0x1p-16445", Ok(b"1")),
    (b"1", b".5", Ok(b"1.5")),
    (b"1", b"5.", Ok(b"6")),
    (b"1", b"+5", Ok(b"6")),
    (b"1", b"00005", Ok(b"6")),
    (b"1", b"", Err(IncrFloatError::NotAFloat)),
    (b"", b"1", Err(IncrFloatError::NotAFloat)),
    (b"1", b"1e", Err(IncrFloatError::NotAFloat)),
    (b"1", b"infinity", Err(IncrFloatError::NanOrInfinity)),
    (b"9223372036854775807", b"1", Ok(b"9223372036854775808")),
    (b"18446744073709551616", b"0", Ok(b"18446744073709551616")),
    (
        b"123456789012345678901234567890",
        b"0",
        Ok(b"123456789012345678899921813504"),
    ),
    (b"0.1", b"0.1", Ok(b"0.2")),
    (b"0.3", b"-0.1", Ok(b"0.2")),
    (b"1.0000000000000002", b"0", Ok(b"1.0000000000000002")),
    (b"2", b"1e-17", Ok(b"2.00000000000000001")),
    (b"2", b"1e-16", Ok(b"2.0000000000000001")),
    (
        b"3.14159265358979323846264338327950288",
        b"0",
        Ok(b"3.14159265358979324"),
    ),
    (b"100", b"-100.000000000000001", Ok(b"-0.000000000000001")),
    (b"1", b"-1e-20", Ok(b"1")),
    (b"1", b"\x005", Err(IncrFloatError::NotAFloat)),
    (b"1", b"5\x00", Err(IncrFloatError::NotAFloat)),
    (b"0x1.8p1", b"0", Ok(b"3")),
    (b"12345678901234567.5", b"0.25", Ok(b"12345678901234567.75")),
    (b"99999999999999999999", b"1", Ok(b"100000000000000000000")),
    (b"0.5", b"0.49999999999999999999", Ok(b"1")),
    (b"0", b"1e-17", Ok(b"0.00000000000000001")),
    (b"0", b"5e-18", Ok(b"0")),
    (b"0", b"6e-18", Ok(b"0.00000000000000001")),
    (b"-1", b"0.99999999999999999", Ok(b"-0.00000000000000001")),
    (b"1e17", b"0.1", Ok(b"100000000000000000.1015625")),
    (b"1e18", b"0.5", Ok(b"1000000000000000000.5")),
    (b"0.1", b"-0.1", Ok(b"0")),
    (b"1e-5", b"0", Ok(b"0.00001")),
    (b"12.5e-3", b"0", Ok(b"0.0125")),
    (b"-5.0e3", b"-2.0e2", Ok(b"-5200")),
    (b"1", b"0X1P+4", Ok(b"17")),
    (b"1", b"-0x1.8p1", Ok(b"-2")),
    (b"1", b"INF", Err(IncrFloatError::NanOrInfinity)),
    (b"1", b"Infinity", Err(IncrFloatError::NanOrInfinity)),
    (b"-inf", b"inf", Err(IncrFloatError::NanOrInfinity)),
    (b"1", b"nan(123)", Err(IncrFloatError::NotAFloat)),
];

#[test]
fn incr_by_float_table() {
    for (current, increment, expected) in INCR_CASES {
        let ours = incr_by_float(current, increment);
        let expected = expected.as_ref().map(|t| t.to_vec()).map_err(|e| match e {
            IncrFloatError::NotAFloat => IncrFloatError::NotAFloat,
            IncrFloatError::NanOrInfinity => IncrFloatError::NanOrInfinity,
        });
        assert_eq!(
            ours,
            expected,
            "{} + {}",
            current.escape_ascii(),
            increment.escape_ascii()
        );
    }
}

#[test]
fn incr_by_float_large_results() {
    // 3e300 + 3e300: all 301 integer digits of the long double sum.
    let sum = incr_by_float(b"3e300", b"3e300").unwrap();
    assert_eq!(sum.len(), 301);
    assert!(sum.starts_with(b"6000000000000000000199200439445888665449"));
    assert!(sum.ends_with(b"269346463646778036186458882048"));
    // Near the top of the long double range.
    let sum = incr_by_float(b"1", b"1e4932").unwrap();
    assert_eq!(sum.len(), 4933);
    assert!(sum.starts_with(b"1000000000000000000006018949387963891323"));
    assert!(sum.ends_with(b"163141086538418113791886622720"));
    let sum = incr_by_float(b"-1e100", b"0").unwrap();
    assert_eq!(sum.len(), 101);
    assert!(sum.starts_with(b"-999999999999999999966935353220734261949"));
    assert_eq!(
        incr_by_float(b"1e4932", b"1e4932"),
        Err(IncrFloatError::NanOrInfinity)
    );
}

#[test]
fn incr_by_float_length_limit() {
    // Operands of 5120 bytes or more are refused, as Redis does.
    for (zeros, accepted) in [(5117, true), (5118, false), (5119, false)] {
        let long = [b"1.".as_slice(), &vec![b'0'; zeros]].concat();
        let expected = if accepted {
            Ok(b"2".to_vec())
        } else {
            Err(IncrFloatError::NotAFloat)
        };
        assert_eq!(incr_by_float(&long, b"1"), expected, "{} bytes", long.len());
        assert_eq!(incr_by_float(b"1", &long), expected, "{} bytes", long.len());
    }
}

#[test]
fn incr_float_error_texts() {
    assert_eq!(
        IncrFloatError::NotAFloat.message(),
        "ERR value is not a valid float"
    );
    assert_eq!(
        IncrFloatError::NanOrInfinity.message(),
        "ERR increment would produce NaN or Infinity"
    );
}

/// `HSET h f <a>` (no field for `None`) then `HINCRBYFLOAT h f <b>`.
#[test]
fn hincr_by_float_table() {
    use HincrFloatError::*;
    type Case = (
        Option<&'static [u8]>,
        &'static [u8],
        Result<&'static [u8], HincrFloatError>,
    );
    let cases: &[Case] = &[
        (Some(b"0.1"), b"0.2", Ok(b"0.3")),
        (None, b"1.1", Ok(b"1.1")),
        (Some(b"1"), b"inf", Err(IncrementNanOrInfinity)),
        (Some(b"1"), b"nan", Err(IncrementNotAFloat)),
        (Some(b"1"), b"abc", Err(IncrementNotAFloat)),
        (Some(b"abc"), b"1", Err(HashValueNotAFloat)),
        (Some(b"abc"), b"inf", Err(IncrementNanOrInfinity)),
        (Some(b"1e4932"), b"1e4932", Err(NanOrInfinity)),
        (Some(b"inf"), b"1", Err(NanOrInfinity)),
        (Some(b"-0"), b"-0", Ok(b"0")),
        (Some(b"5.0e3"), b"2.0e2", Ok(b"5200")),
        (Some(b" 1"), b"1", Err(HashValueNotAFloat)),
    ];
    for (current, increment, expected) in cases {
        let ours = parse_hincr_increment(increment).and_then(|inc| hincr_by_float(*current, inc));
        let expected = match expected {
            Ok(text) => Ok(text.to_vec()),
            Err(e) => Err(match e {
                IncrementNotAFloat => IncrementNotAFloat,
                IncrementNanOrInfinity => IncrementNanOrInfinity,
                HashValueNotAFloat => HashValueNotAFloat,
                NanOrInfinity => NanOrInfinity,
            }),
        };
        assert_eq!(ours, expected, "{current:?} + {}", increment.escape_ascii());
    }
    assert_eq!(
        IncrementNanOrInfinity.message(),
        "ERR value is NaN or Infinity"
    );
    assert_eq!(
        HashValueNotAFloat.message(),
        "ERR hash value is not a float"
    );
}

/// `BLPOP l <s>` on a non-empty list: `None` is "ERR timeout is not a
/// float or out of range"; negative results are "ERR timeout is negative".
/// (Redis shows only the sign; that small positive timeouts round up to
/// 1 ms rather than 0, which would block forever, was checked by timing
/// `BLPOP` on an empty list.)
#[test]
fn blocking_timeouts() {
    let cases: &[(&[u8], Option<i64>)] = &[
        (b"0", Some(0)),
        (b"1.5", Some(1500)),
        (b"0.0001", Some(1)),
        (b"0.0011", Some(2)),
        (b"-1.5", Some(-1500)),
        (b"-1", Some(-1000)),
        (b"-0.0001", Some(0)),
        (b"-0.001", Some(0)),
        (b"abc", None),
        (b"1e30", Some(i64::MIN)),
        (b"-1e30", Some(i64::MIN)),
        (b"9.3e15", Some(i64::MIN)),
        (b"9.2e15", Some(9_200_000_000_000_000_000)),
        (b"inf", Some(i64::MIN)),
        (b"-inf", Some(i64::MIN)),
        (b"nan", None),
        (b"0x10", Some(16_000)),
        (b" 1", None),
        (b"1e-400", Some(1)),
        (b"0.0009", Some(1)),
        (b"-0.0009", Some(0)),
        (b"9223372036854775.807", Some(9_223_372_036_854_775_807)),
        (b"9223372036854775.808", Some(i64::MIN)),
        (b"-9223372036854775.808", Some(-9_223_372_036_854_775_807)),
        (b"9.3e18", Some(i64::MIN)),
        (b"", None),
        (b"1e4933", None),
        (b"-0", Some(0)),
    ];
    for &(text, expected) in cases {
        assert_eq!(
            parse_timeout_seconds_ms(text),
            expected,
            "{}",
            text.escape_ascii()
        );
    }
}

#[test]
fn long_double_helpers() {
    // GEOPOS prints decoded coordinates this way.
    let x: f64 = "13.36138933897018433".parse().unwrap();
    assert_eq!(format_f64_human(x), b"13.36138933897018433");
    assert_eq!(format_f64_human(f64::NEG_INFINITY), b"-inf");
    assert_eq!(format_f64_human(-0.0), b"0");
    let third = LongDouble::parse(b"0.1").unwrap();
    assert_eq!(format!("{third:?}"), "0.1");
    assert_eq!(LongDouble::from_i64(-7).to_human(), b"-7");
    assert_eq!(LongDouble::parse(b"0.5").unwrap().to_f64(), 0.5);
}

/// Tiny deterministic generator for the oracle tests.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }

    /// Up to `max` random decimal digits.
    fn digits(&mut self, max: u64) -> String {
        let len = self.next() % (max + 1);
        (0..len)
            .map(|_| char::from(b'0' + (self.next() % 10) as u8))
            .collect()
    }

    /// A number-ish string: half the time random digits around a point with
    /// a random exponent, otherwise built from common float fragments.
    fn float_text(&mut self) -> String {
        if self.next().is_multiple_of(2) {
            let sign = self.pick(&["", "-"]);
            let (int, frac) = (self.digits(20), self.digits(20));
            let exponent = match self.next() % 3 {
                0 => String::new(),
                _ => format!("e{}", (self.next() % 700) as i64 - 350),
            };
            return format!("{sign}{int}.{frac}{exponent}");
        }
        let signs = ["", "", "-", "+"];
        let mantissas = [
            "0",
            "1",
            "2.5",
            "0.1",
            "0.2",
            "0.3",
            "10.50",
            "5.0",
            "3",
            "123456789",
            ".5",
            "5.",
            "1.23456789012345678",
            "99999999999999999",
            "0.0000001",
            "7",
            "1e",
            "0x1p3",
            "inf",
            "nan",
            "abc",
            "",
        ];
        let exponents = [
            "", "", "", "e3", "e-3", "e20", "E+2", "e-20", "e300", "e-300", "e4932",
        ];
        let mut text = String::new();
        text.push_str(self.pick(&signs));
        text.push_str(self.pick(&mantissas));
        text.push_str(self.pick(&exponents));
        text
    }
}

/// Random arguments through a real redis-server: string2ll (INCRBY),
/// string2d and `%.17g` (ZADD + ZSCORE), INCRBYFLOAT and HINCRBYFLOAT.
#[test]
#[ignore = "needs a redis-server 7.0 on KVIK_ORACLE_PORT (default 7200)"]
fn agrees_with_redis_server() {
    let mut redis = Oracle::connect(14);
    redis.cmd(&[b"FLUSHDB"]);
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);

    // Exact doubles go in as hex floats, which ZADD accepts; more than 128
    // members keep the set a skiplist so -0 survives.
    let doubles: Vec<f64> = (0..3000)
        .map(|i| match i % 3 {
            0 => f64::from_bits(rng.next()),
            1 => (rng.next() % 2_000_000) as f64 / 1000.0 - 1000.0,
            _ => (rng.next() % 1000) as f64 * 10f64.powi((rng.next() % 60) as i32 - 30),
        })
        .filter(|d| d.is_finite())
        .collect();
    let mut zadd = vec![b"ZADD".to_vec(), b"z".to_vec()];
    for (i, d) in doubles.iter().enumerate() {
        zadd.push(exact_hex(*d).into_bytes());
        zadd.push(i.to_string().into_bytes());
    }
    redis.pipeline(&[zadd]);
    let queries: Vec<Vec<Vec<u8>>> = (0..doubles.len())
        .map(|i| {
            vec![
                b"ZSCORE".to_vec(),
                b"z".to_vec(),
                i.to_string().into_bytes(),
            ]
        })
        .collect();
    for (d, reply) in doubles.iter().zip(redis.pipeline(&queries)) {
        assert_eq!(format_f64(*d).into_bytes(), reply.bulk(), "{d:e}");
    }

    let texts: Vec<String> = (0..4000).map(|_| rng.float_text()).collect();
    for text in &texts {
        // Into the big set, which stays a skiplist and so keeps -0.
        let zadd: [&[u8]; 4] = [b"ZADD", b"z", text.as_bytes(), b"probe"];
        let ours = parse_f64(text.as_bytes()).map(format_f64);
        let theirs = match redis.cmd(&zadd) {
            Reply::Error(_) => None,
            _ => Some(String::from_utf8(redis.cmd(&[b"ZSCORE", b"z", b"probe"]).bulk()).unwrap()),
        };
        assert_eq!(ours, theirs, "ZADD {text}");
        redis.cmd(&[b"ZREM", b"z", b"probe"]);

        let incrby: [&[u8]; 3] = [b"INCRBY", b"n", text.as_bytes()];
        redis.cmd(&[b"SET", b"n", b"0"]);
        let theirs = match redis.cmd(&incrby) {
            Reply::Int(v) => Some(v),
            _ => None,
        };
        assert_eq!(parse_i64(text.as_bytes()), theirs, "INCRBY {text}");
    }

    for pair in texts.chunks(2) {
        let (a, b) = (pair[0].as_bytes(), pair[1].as_bytes());
        redis.cmd(&[b"SET", b"f", a]);
        let ours = incr_by_float(a, b).map_err(|e| e.message().as_bytes().to_vec());
        let theirs = match redis.cmd(&[b"INCRBYFLOAT", b"f", b]) {
            Reply::Bulk(Some(v)) => Ok(v),
            Reply::Error(e) => Err(e),
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(ours, theirs, "INCRBYFLOAT {} {}", pair[0], pair[1]);

        redis.cmd(&[b"HSET", b"h", b"f", a]);
        let ours = parse_hincr_increment(b)
            .and_then(|inc| hincr_by_float(Some(a), inc))
            .map_err(|e| e.message().as_bytes().to_vec());
        let theirs = match redis.cmd(&[b"HINCRBYFLOAT", b"h", b"f", b]) {
            Reply::Bulk(Some(v)) => Ok(v),
            Reply::Error(e) => Err(e),
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(ours, theirs, "HINCRBYFLOAT {} {}", pair[0], pair[1]);
    }
    redis.cmd(&[b"FLUSHDB"]);
}

/// `d` as an exact C hex float.
fn exact_hex(d: f64) -> String {
    let bits = d.to_bits();
    let sign = if d.is_sign_negative() { "-" } else { "" };
    let biased = ((bits >> 52) & 0x7ff) as i64;
    let frac = bits & ((1 << 52) - 1);
    let (significand, exp) = if biased == 0 {
        (frac, -1074)
    } else {
        (frac | 1 << 52, biased - 1075)
    };
    format!("{sign}0x{significand:x}p{exp}")
}
