//! The options SET and GETEX share: conditions (NX, XX), GET, KEEPTTL, PERSIST and the
//! four ways to give a deadline (EX, PX, EXAT, PXAT), with Redis's grammar.
//!
//! The grammar is permissive in one way clients rely on: an option may be repeated
//! (`SET k v EX 10 EX 20` sets a 20 second TTL: the last one wins), and strict in
//! another: options that contradict each other (NX with XX, two different units,
//! a unit with KEEPTTL or PERSIST) are a syntax error wherever they appear.

use super::super::{args, errors, CmdError};

/// What a SET-like command does to the key's deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// Drop any deadline.
    None,
    /// Keep the deadline the key has (KEEPTTL).
    Keep,
    /// At this Unix time in ms.
    At(u64),
}

/// The units an expire argument can come in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpireUnit {
    Seconds,
    Millis,
    UnixSeconds,
    UnixMillis,
}

impl ExpireUnit {
    /// An absolute time (EXAT, PXAT) rather than one relative to now.
    pub fn is_absolute(self) -> bool {
        matches!(self, ExpireUnit::UnixSeconds | ExpireUnit::UnixMillis)
    }
}

/// Turn an EX/PX/EXAT/PXAT argument into an absolute deadline, with Redis's checks:
/// not an integer, not positive, or overflowing gives the command's error.
pub fn deadline(arg: &[u8], unit: ExpireUnit, now_ms: u64, command: &str) -> Result<u64, CmdError> {
    let n = args::int(arg)?;
    let invalid = || CmdError::from(format!("ERR invalid expire time in '{command}' command"));
    if n <= 0 {
        return Err(invalid());
    }
    let ms = match unit {
        ExpireUnit::Seconds | ExpireUnit::UnixSeconds => n.checked_mul(1000).ok_or_else(invalid)?,
        ExpireUnit::Millis | ExpireUnit::UnixMillis => n,
    };
    let at = if unit.is_absolute() {
        ms
    } else {
        ms.checked_add(now_ms as i64).ok_or_else(invalid)?
    };
    Ok(at as u64)
}

/// Which command the options are parsed for: they accept different words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionsOf {
    Set,
    GetEx,
}

/// The options a SET or GETEX call gave.
#[derive(Debug, Default)]
pub struct StringOptions<'a> {
    pub nx: bool,
    pub xx: bool,
    pub get: bool,
    pub keepttl: bool,
    pub persist: bool,
    /// The unit and the (not yet validated) argument of the deadline option.
    pub expire: Option<(ExpireUnit, &'a [u8])>,
}

enum Word {
    Nx,
    Xx,
    Get,
    KeepTtl,
    Persist,
    Expire(ExpireUnit),
}

fn word(arg: &[u8]) -> Option<Word> {
    const WORDS: [(&str, Word); 9] = [
        ("NX", Word::Nx),
        ("XX", Word::Xx),
        ("GET", Word::Get),
        ("KEEPTTL", Word::KeepTtl),
        ("PERSIST", Word::Persist),
        ("EX", Word::Expire(ExpireUnit::Seconds)),
        ("PX", Word::Expire(ExpireUnit::Millis)),
        ("EXAT", Word::Expire(ExpireUnit::UnixSeconds)),
        ("PXAT", Word::Expire(ExpireUnit::UnixMillis)),
    ];
    WORDS
        .into_iter()
        .find(|(name, _)| args::is(arg, name))
        .map(|(_, w)| w)
}

/// Parse `args` (the options only). The deadline's argument is checked later, by
/// [`deadline`], because Redis reports a bad number after other errors.
pub fn parse<'a>(args: &[&'a [u8]], of: OptionsOf) -> Result<StringOptions<'a>, CmdError> {
    let set = of == OptionsOf::Set;
    let mut o = StringOptions::default();
    let mut i = 0;
    while i < args.len() {
        let next = args.get(i + 1).copied();
        match (word(args[i]), next) {
            (Some(Word::Nx), _) if set && !o.xx => o.nx = true,
            (Some(Word::Xx), _) if set && !o.nx => o.xx = true,
            (Some(Word::Get), _) if set => o.get = true,
            (Some(Word::KeepTtl), _) if set && o.expire.is_none() => o.keepttl = true,
            (Some(Word::Persist), _) if !set && o.expire.is_none() => o.persist = true,
            (Some(Word::Expire(unit)), Some(value))
                if !o.keepttl && !o.persist && o.expire.is_none_or(|(u, _)| u == unit) =>
            {
                o.expire = Some((unit, value));
                i += 1;
            }
            _ => return Err(errors::SYNTAX.into()),
        }
        i += 1;
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_set(args: &[&'static str]) -> Result<StringOptions<'static>, CmdError> {
        let args: Vec<&'static [u8]> = args.iter().map(|a| a.as_bytes()).collect();
        parse(&args, OptionsOf::Set)
    }

    #[test]
    fn repeated_options_are_allowed_and_the_last_deadline_wins() {
        let o = parse_set(&["EX", "10", "ex", "20", "NX", "nx", "GET", "get"]).unwrap();
        assert_eq!(o.expire, Some((ExpireUnit::Seconds, &b"20"[..])));
        assert!(o.nx && o.get);
    }

    #[test]
    fn contradictions_are_syntax_errors() {
        for bad in [
            &["NX", "XX"][..],
            &["EX", "1", "PX", "1"],
            &["EX", "1", "KEEPTTL"],
            &["KEEPTTL", "PXAT", "1"],
            &["EX"],
            &["PERSIST"],
            &["FOO"],
        ] {
            assert!(parse_set(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn getex_accepts_persist_but_not_set_words() {
        let words: Vec<&[u8]> = vec![b"persist", b"PERSIST"];
        assert!(parse(&words, OptionsOf::GetEx).unwrap().persist);
        for bad in ["NX", "XX", "GET", "KEEPTTL"] {
            assert!(parse(&[bad.as_bytes()], OptionsOf::GetEx).is_err());
        }
        let both: Vec<&[u8]> = vec![b"EX", b"1", b"PERSIST"];
        assert!(parse(&both, OptionsOf::GetEx).is_err());
    }

    #[test]
    fn deadlines_reject_what_redis_rejects() {
        let now = 1_000;
        assert_eq!(deadline(b"2", ExpireUnit::Seconds, now, "set"), Ok(3_000));
        assert_eq!(deadline(b"2", ExpireUnit::Millis, now, "set"), Ok(1_002));
        assert_eq!(
            deadline(b"2", ExpireUnit::UnixSeconds, now, "set"),
            Ok(2_000)
        );
        assert_eq!(deadline(b"2", ExpireUnit::UnixMillis, now, "set"), Ok(2));
        let invalid = Err(CmdError::from("ERR invalid expire time in 'set' command"));
        assert_eq!(deadline(b"0", ExpireUnit::Seconds, now, "set"), invalid);
        assert_eq!(deadline(b"-1", ExpireUnit::UnixMillis, now, "set"), invalid);
        assert_eq!(
            deadline(b"9223372036854775807", ExpireUnit::Millis, now, "set"),
            invalid
        );
        assert_eq!(
            deadline(b"9223372036854776", ExpireUnit::UnixSeconds, now, "set"),
            invalid
        );
    }
}
