//! Score and lexicographic ranges, as ZRANGEBYSCORE, ZRANGEBYLEX and their kin
//! take them: `(` makes a bound exclusive; `-` and `+` are the ends of the
//! lexicographic order.

use kvik_util::numbers::parse_score_bound;
use std::cmp::Ordering;

/// A range of scores.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoreRange {
    pub min: f64,
    pub min_exclusive: bool,
    pub max: f64,
    pub max_exclusive: bool,
}

impl ScoreRange {
    /// Parse `min` and `max`; `None` when either is not a number.
    pub fn parse(min: &[u8], max: &[u8]) -> Option<ScoreRange> {
        let (min, min_exclusive) = parse_score_bound(min)?;
        let (max, max_exclusive) = parse_score_bound(max)?;
        Some(ScoreRange {
            min,
            min_exclusive,
            max,
            max_exclusive,
        })
    }

    /// Is `score` at or past the lower bound?
    pub fn reaches_min(&self, score: f64) -> bool {
        if self.min_exclusive {
            score > self.min
        } else {
            score >= self.min
        }
    }

    /// Is `score` at or before the upper bound?
    pub fn within_max(&self, score: f64) -> bool {
        if self.max_exclusive {
            score < self.max
        } else {
            score <= self.max
        }
    }
}

/// One end of a lexicographic range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LexBound<'a> {
    /// `-`: before every member.
    First,
    /// `+`: after every member.
    Last,
    Inclusive(&'a [u8]),
    Exclusive(&'a [u8]),
}

impl<'a> LexBound<'a> {
    /// `-`, `+`, `[member` or `(member`. A bound is read as a C string would be, so
    /// `+` or `-` followed by a NUL byte still counts as the bare sign.
    fn parse(arg: &'a [u8]) -> Option<LexBound<'a>> {
        match arg.split_first()? {
            (b'+', rest) if rest.first().is_none_or(|&b| b == 0) => Some(LexBound::Last),
            (b'-', rest) if rest.first().is_none_or(|&b| b == 0) => Some(LexBound::First),
            (b'[', member) => Some(LexBound::Inclusive(member)),
            (b'(', member) => Some(LexBound::Exclusive(member)),
            _ => None,
        }
    }

    /// Where the bound itself stands against `member`.
    fn cmp_member(&self, member: &[u8]) -> Ordering {
        match self {
            LexBound::First => Ordering::Less,
            LexBound::Last => Ordering::Greater,
            LexBound::Inclusive(b) | LexBound::Exclusive(b) => (*b).cmp(member),
        }
    }

    /// `-` and `+` count as exclusive: a range from `+` to `+` is empty.
    fn is_exclusive(&self) -> bool {
        !matches!(self, LexBound::Inclusive(_))
    }

    /// The order of two bounds, with the signs at the ends.
    fn cmp_bound(&self, other: &LexBound) -> Ordering {
        match (self, other) {
            (LexBound::First, LexBound::First) | (LexBound::Last, LexBound::Last) => {
                Ordering::Equal
            }
            (LexBound::First, _) | (_, LexBound::Last) => Ordering::Less,
            (LexBound::Last, _) | (_, LexBound::First) => Ordering::Greater,
            (
                LexBound::Inclusive(a) | LexBound::Exclusive(a),
                LexBound::Inclusive(b) | LexBound::Exclusive(b),
            ) => a.cmp(b),
        }
    }
}

/// A range of members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LexRange<'a> {
    pub min: LexBound<'a>,
    pub max: LexBound<'a>,
}

impl<'a> LexRange<'a> {
    /// Parse `min` and `max`; `None` when either is not a valid bound.
    pub fn parse(min: &'a [u8], max: &'a [u8]) -> Option<LexRange<'a>> {
        Some(LexRange {
            min: LexBound::parse(min)?,
            max: LexBound::parse(max)?,
        })
    }

    /// Does the range hold nothing whatever the members (min above max, or equal
    /// with an exclusive end)?
    pub fn is_empty(&self) -> bool {
        match self.min.cmp_bound(&self.max) {
            Ordering::Greater => true,
            Ordering::Equal => self.min.is_exclusive() || self.max.is_exclusive(),
            Ordering::Less => false,
        }
    }

    /// Is `member` at or past the lower bound?
    pub fn reaches_min(&self, member: &[u8]) -> bool {
        match self.min.cmp_member(member) {
            Ordering::Less => true,
            Ordering::Equal => !self.min.is_exclusive(),
            Ordering::Greater => false,
        }
    }

    /// Is `member` at or before the upper bound?
    pub fn within_max(&self, member: &[u8]) -> bool {
        match self.max.cmp_member(member) {
            Ordering::Greater => true,
            Ordering::Equal => !self.max.is_exclusive(),
            Ordering::Less => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lex_bounds_parse_as_redis_reads_them() {
        assert_eq!(LexBound::parse(b"-"), Some(LexBound::First));
        assert_eq!(LexBound::parse(b"+\0x"), Some(LexBound::Last));
        assert_eq!(LexBound::parse(b"[a"), Some(LexBound::Inclusive(b"a")));
        assert_eq!(LexBound::parse(b"("), Some(LexBound::Exclusive(b"")));
        assert_eq!(LexBound::parse(b"+a"), None);
        assert_eq!(LexBound::parse(b"a"), None);
        assert_eq!(LexBound::parse(b""), None);
    }

    #[test]
    fn empty_lex_ranges() {
        let empty = |a: &[u8], b: &[u8]| LexRange::parse(a, b).unwrap().is_empty();
        assert!(!empty(b"-", b"+"));
        assert!(empty(b"+", b"-"));
        assert!(empty(b"-", b"-"));
        assert!(empty(b"+", b"+"));
        assert!(!empty(b"[a", b"[a"));
        assert!(empty(b"[a", b"(a"));
        assert!(empty(b"[b", b"[a"));
    }

    #[test]
    fn score_bounds() {
        let r = ScoreRange::parse(b"(1", b"2").unwrap();
        assert!(!r.reaches_min(1.0) && r.reaches_min(1.5) && r.within_max(2.0));
        assert!(ScoreRange::parse(b"x", b"1").is_none());
    }
}
