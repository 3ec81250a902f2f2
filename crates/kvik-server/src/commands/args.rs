//! Argument parsing helpers shared by handlers, with Redis's error texts.

use super::{errors, CmdError};
use crate::util::numbers::{parse_f64, parse_i64};

/// Case-insensitive comparison of an argument with an option name.
#[inline]
pub fn is(arg: &[u8], option: &str) -> bool {
    arg.eq_ignore_ascii_case(option.as_bytes())
}

/// An integer argument (`ERR value is not an integer or out of range`).
pub fn int(arg: &[u8]) -> Result<i64, CmdError> {
    parse_i64(arg).ok_or_else(|| errors::NOT_INTEGER.into())
}

/// A float argument (`ERR value is not a valid float`).
pub fn float(arg: &[u8]) -> Result<f64, CmdError> {
    parse_f64(arg).ok_or_else(|| errors::NOT_FLOAT.into())
}

/// A non-negative integer no larger than `max`, else `err`.
pub fn int_in(arg: &[u8], min: i64, max: i64, err: &'static str) -> Result<i64, CmdError> {
    match parse_i64(arg) {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        Some(_) => Err(err.into()),
        None => Err(errors::NOT_INTEGER.into()),
    }
}

/// A database index argument, checked against the configured count.
pub fn db_index(arg: &[u8], databases: usize) -> Result<usize, CmdError> {
    let n = parse_i64(arg).ok_or(CmdError::from(errors::NOT_INTEGER))?;
    if n < 0 || n as usize >= databases {
        return Err(errors::DB_OUT_OF_RANGE.into());
    }
    Ok(n as usize)
}
