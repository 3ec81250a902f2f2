//! Low-level text handling shared by the file loader, CONFIG SET and CONFIG
//! REWRITE: splitting a line into arguments the way `redis.conf` is read,
//! quoting a string back, and the number / memory-size / boolean parsers with
//! the exact error texts Redis replies with.

/// Splits one configuration line into its arguments, by the rules Redis uses for
/// both `redis.conf` lines and inline commands (see [`kvik_resp::split_args`]).
///
/// Returns `None` on unbalanced quotes (the caller reports "Unbalanced quotes
/// in configuration line").
pub fn split_args(line: &str) -> Option<Vec<String>> {
    let args = kvik_resp::split_args(line.as_bytes())?;
    Some(args.into_iter().map(bytes_to_string).collect())
}

/// Bytes to a String. Configuration values are text; any byte sequence that is
/// not UTF-8 (possible through `\xHH` escapes) is kept as Latin-1 characters so
/// that nothing is lost silently.
pub fn bytes_to_string(v: Vec<u8>) -> String {
    match String::from_utf8(v) {
        Ok(s) => s,
        Err(e) => e.into_bytes().into_iter().map(|b| b as char).collect(),
    }
}

/// Quotes a string the way Redis prints a value inside double quotes:
/// `\\`, `\"`, `\n`, `\r`, `\t`, `\a`, `\b` escaped, other non-printable bytes
/// as `\xHH`.
pub fn repr(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for &c in s.as_bytes() {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            7 => out.push_str("\\a"),
            8 => out.push_str("\\b"),
            0x20..=0x7e => out.push(c as char),
            _ => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push('"');
    out
}

pub const ERR_INT: &str = "argument couldn't be parsed into an integer";
pub const ERR_BOOL: &str = "argument must be 'yes' or 'no'";
pub const ERR_MEMORY: &str = "argument must be a memory value";

/// Strict decimal integer: optional `-`, no `+`, no spaces, no leading zeros
/// (except "0" itself), no overflow.
pub fn parse_i64(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let (neg, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if digits[0] == b'0' && (digits.len() > 1 || neg) {
        return None;
    }
    let mut v: i128 = 0;
    for &d in digits {
        v = v * 10 + (d - b'0') as i128;
        if v > (i64::MAX as i128) + 1 {
            return None;
        }
    }
    let v = if neg { -v } else { v };
    i64::try_from(v).ok()
}

/// A memory size: digits followed by an optional unit `b`, `k` (1000), `kb`
/// (1024), `m`, `mb`, `g`, `gb`, case-insensitive. An empty string is 0.
pub fn parse_memory(s: &str) -> Option<u64> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let mul: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    let n: u64 = if num.is_empty() { 0 } else { num.parse().ok()? };
    n.checked_mul(mul)
}

/// Formats a byte count with the largest unit that divides it exactly, as
/// CONFIG REWRITE writes memory values (`1gb`, `64mb`, `2kb`, `1000`).
pub fn format_memory(v: u64) -> String {
    const GB: u64 = 1024 * 1024 * 1024;
    const MB: u64 = 1024 * 1024;
    const KB: u64 = 1024;
    if v != 0 && v & (GB - 1) == 0 {
        format!("{}gb", v / GB)
    } else if v != 0 && v & (MB - 1) == 0 {
        format!("{}mb", v / MB)
    } else if v != 0 && v & (KB - 1) == 0 {
        format!("{}kb", v / KB)
    } else {
        v.to_string()
    }
}

/// `yes` / `no`, case-insensitive.
pub fn parse_bool(s: &str) -> Option<bool> {
    if s.eq_ignore_ascii_case("yes") {
        Some(true)
    } else if s.eq_ignore_ascii_case("no") {
        Some(false)
    } else {
        None
    }
}

pub fn fmt_bool(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}

/// Case-insensitive glob match with `*`, `?`, `[...]` (ranges, `^` negation)
/// and `\` escapes: the pattern language of CONFIG GET.
pub fn glob_match_nocase(pattern: &[u8], text: &[u8]) -> bool {
    glob(pattern, text, true)
}

/// Case-sensitive variant of [`glob_match_nocase`] (file names).
pub fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    glob(pattern, text, false)
}

fn glob(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    let lower = |c: u8| if nocase { c.to_ascii_lowercase() } else { c };
    glob_inner(pattern, text, &lower)
}

fn glob_inner(p: &[u8], t: &[u8], lower: &dyn Fn(u8) -> u8) -> bool {
    {
        let (mut pi, mut ti) = (0usize, 0usize);
        while pi < p.len() {
            match p[pi] {
                b'*' => {
                    while pi + 1 < p.len() && p[pi + 1] == b'*' {
                        pi += 1;
                    }
                    if pi + 1 == p.len() {
                        return true;
                    }
                    for start in ti..=t.len() {
                        if glob_inner(&p[pi + 1..], &t[start..], lower) {
                            return true;
                        }
                    }
                    return false;
                }
                b'?' => {
                    if ti >= t.len() {
                        return false;
                    }
                    ti += 1;
                    pi += 1;
                }
                b'[' => {
                    if ti >= t.len() {
                        return false;
                    }
                    pi += 1;
                    let negate = pi < p.len() && p[pi] == b'^';
                    if negate {
                        pi += 1;
                    }
                    let c = lower(t[ti]);
                    let mut matched = false;
                    while pi < p.len() && p[pi] != b']' {
                        if p[pi] == b'\\' && pi + 1 < p.len() {
                            pi += 1;
                            if lower(p[pi]) == c {
                                matched = true;
                            }
                            pi += 1;
                        } else if pi + 2 < p.len() && p[pi + 1] == b'-' && p[pi + 2] != b']' {
                            let (mut a, mut z) = (lower(p[pi]), lower(p[pi + 2]));
                            if a > z {
                                std::mem::swap(&mut a, &mut z);
                            }
                            if c >= a && c <= z {
                                matched = true;
                            }
                            pi += 3;
                        } else {
                            if lower(p[pi]) == c {
                                matched = true;
                            }
                            pi += 1;
                        }
                    }
                    // skip the closing bracket (a missing one ends the pattern)
                    if pi < p.len() {
                        pi += 1;
                    }
                    if matched == negate {
                        return false;
                    }
                    ti += 1;
                }
                b'\\' if pi + 1 < p.len() => {
                    if ti >= t.len() || lower(p[pi + 1]) != lower(t[ti]) {
                        return false;
                    }
                    pi += 2;
                    ti += 1;
                }
                c => {
                    if ti >= t.len() || lower(c) != lower(t[ti]) {
                        return false;
                    }
                    pi += 1;
                    ti += 1;
                }
            }
        }
        ti == t.len()
    }
}

/// The text of an OS error without Rust's " (os error N)" suffix, i.e. what
/// `strerror()` prints.
pub fn os_error_text(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa(s: &str) -> Vec<String> {
        split_args(s).expect("balanced")
    }

    #[test]
    fn split_plain_words() {
        assert_eq!(sa("  port   6379  "), vec!["port", "6379"]);
        assert_eq!(sa("a\tb\rc"), vec!["a", "b", "c"]);
        assert!(sa("   ").is_empty());
    }

    #[test]
    fn split_double_quotes_and_escapes() {
        assert_eq!(
            sa(r#"requirepass "a\x41\n\q\\""#),
            vec!["requirepass", "aA\nq\\"]
        );
        assert_eq!(sa(r#"x "a b" """#), vec!["x", "a b", ""]);
        assert_eq!(sa(r#"x "\t\r\"\a\b""#), vec!["x", "\t\r\"\x07\x08"]);
        // \x with non-hex digits is the plain character 'x'
        assert_eq!(sa(r#"x "\xZZ""#), vec!["x", "xZZ"]);
    }

    #[test]
    fn split_single_quotes() {
        assert_eq!(sa(r"x 'a\'b\n'"), vec!["x", "a'b\\n"]);
        assert_eq!(sa("x ''"), vec!["x", ""]);
    }

    #[test]
    fn split_quote_inside_word() {
        assert_eq!(sa(r#"requirepass ab"c d""#), vec!["requirepass", "abc d"]);
    }

    #[test]
    fn split_unbalanced() {
        assert!(split_args(r#"port "abc"#).is_none());
        assert!(split_args("port 'abc").is_none());
        assert!(split_args(r#"port "ab"c"#).is_none());
        assert!(split_args("port 'ab'c").is_none());
    }

    #[test]
    fn repr_roundtrip() {
        let s = "a b\"c\\\n\x01é";
        let q = repr(s);
        assert_eq!(q, "\"a b\\\"c\\\\\\n\\x01\\xc3\\xa9\"");
        assert_eq!(sa(&q), vec![s.to_string()]);
    }

    #[test]
    fn integers_are_strict() {
        assert_eq!(parse_i64("0"), Some(0));
        assert_eq!(parse_i64("-5"), Some(-5));
        assert_eq!(parse_i64("9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64("-9223372036854775808"), Some(i64::MIN));
        for bad in [
            "",
            "+5",
            " 5",
            "05",
            "-0",
            "5.0",
            "1k",
            "9223372036854775808",
            "-",
        ] {
            assert_eq!(parse_i64(bad), None, "{bad}");
        }
    }

    #[test]
    fn memory_units() {
        assert_eq!(parse_memory("1b"), Some(1));
        assert_eq!(parse_memory("1k"), Some(1000));
        assert_eq!(parse_memory("1KB"), Some(1024));
        assert_eq!(parse_memory("1Kb"), Some(1024));
        assert_eq!(parse_memory("100mb"), Some(100 << 20));
        assert_eq!(parse_memory("1m"), Some(1_000_000));
        assert_eq!(parse_memory("1GB"), Some(1 << 30));
        assert_eq!(parse_memory("1g"), Some(1_000_000_000));
        assert_eq!(parse_memory("05"), Some(5));
        assert_eq!(parse_memory(""), Some(0));
        for bad in ["1t", "1kbb", "+5", " 5", "-1", "1.5k", "0x10", "-0"] {
            assert_eq!(parse_memory(bad), None, "{bad}");
        }
        assert_eq!(format_memory(0), "0");
        assert_eq!(format_memory(1000), "1000");
        assert_eq!(format_memory(2048), "2kb");
        assert_eq!(format_memory(64 << 20), "64mb");
        assert_eq!(format_memory(1 << 30), "1gb");
    }

    #[test]
    fn booleans() {
        assert_eq!(parse_bool("YES"), Some(true));
        assert_eq!(parse_bool("No"), Some(false));
        assert_eq!(parse_bool("1"), None);
        assert_eq!(parse_bool(""), None);
    }

    #[test]
    fn glob() {
        assert!(glob_match_nocase(b"*", b"port"));
        assert!(glob_match_nocase(b"PO*", b"port"));
        assert!(glob_match_nocase(b"p?rt", b"port"));
        assert!(glob_match_nocase(b"[a-p]ort", b"port"));
        assert!(!glob_match_nocase(b"[^p]ort", b"port"));
        assert!(glob_match_nocase(
            b"*-max-*-entries",
            b"hash-max-listpack-entries"
        ));
        assert!(!glob_match_nocase(b"port?", b"port"));
        assert!(glob_match_nocase(b"a\\*", b"a*"));
    }
}
