//! Glob-style pattern matching with the exact semantics of Redis 7.0's
//! `stringmatchlen`, as used by KEYS, SCAN MATCH, PSUBSCRIBE, CONFIG GET and
//! ACL patterns.
//!
//! The pattern language:
//! * `*` matches any run of bytes; consecutive stars act as one.
//! * `?` matches exactly one byte.
//! * `[...]` matches one byte from a class; `[^...]` negates it. Inside a
//!   class, `\x` stands for the byte `x` (compared case-sensitively even in
//!   nocase mode) and `a-z` is an inclusive range whose ends may be given in
//!   either order. The range test compares bytes as C's signed `char`, so
//!   bytes >= 0x80 sort before ASCII. A class left open at the end of the
//!   pattern simply ends there. Note that `[a-]` takes the closing `]` as the
//!   end of the range, so the class goes on past it.
//! * `\x` outside a class matches `x` literally; a trailing lone `\` matches
//!   a backslash.
//! * Anything else matches itself. `nocase` folds ASCII letters only.
//!
//! Two edge cases deserve a mention because they surprise callers:
//! * The empty subject only matches the empty pattern, so `*` does *not*
//!   match `""`. KEYS and SCAN special-case the pattern `*` before matching
//!   (see [`is_match_all`]), which is how an empty key still shows up there.
//! * A pattern whose matching would need more than [`MAX_STAR_NESTING`]
//!   non-trailing `*` groups never matches anything (Redis's guard against
//!   abusive patterns).
//!
//! Every token but `*` consumes exactly one subject byte, which lets the
//! matcher keep a single backtracking point (the last star seen) instead of
//! recursing: matching costs at most O(pattern × subject) and never blows up
//! on inputs like `*a*a*a*a*b`.

/// Redis gives up on a pattern once it has descended through this many
/// star groups that are followed by more pattern.
pub const MAX_STAR_NESTING: usize = 1000;

/// Does `s` match the glob `pattern`? `nocase` folds ASCII case.
pub fn glob_match(pattern: &[u8], s: &[u8], nocase: bool) -> bool {
    if s.is_empty() {
        return pattern.is_empty();
    }
    if nests_too_deep(pattern) {
        return false;
    }
    match_nonempty(pattern, s, nocase)
}

/// True for the pattern `*`, which commands like KEYS and SCAN treat as
/// "everything" without calling the matcher (so even an empty key matches).
pub fn is_match_all(pattern: &[u8]) -> bool {
    pattern == b"*"
}

/// One element of a pattern.
#[derive(Clone, Copy)]
enum Token {
    /// A run of one or more `*`.
    Star,
    /// `?`.
    AnyByte,
    /// A literal byte (possibly written escaped).
    Byte(u8),
    /// A bracket class whose items start at pattern position `items`
    /// (after the optional `^`).
    Class { negated: bool, items: usize },
}

/// Parses the token starting at `at` (which must be inside `pattern`) and
/// returns it with the position just past it.
fn token_at(pattern: &[u8], at: usize) -> (Token, usize) {
    match pattern[at] {
        b'*' => {
            let mut end = at + 1;
            while pattern.get(end) == Some(&b'*') {
                end += 1;
            }
            (Token::Star, end)
        }
        b'?' => (Token::AnyByte, at + 1),
        b'[' => class_at(pattern, at + 1),
        b'\\' if at + 1 < pattern.len() => (Token::Byte(pattern[at + 1]), at + 2),
        byte => (Token::Byte(byte), at + 1),
    }
}

/// Parses a class whose `[` sits just before `start`.
fn class_at(pattern: &[u8], start: usize) -> (Token, usize) {
    let negated = pattern.get(start) == Some(&b'^');
    let first_item = start + usize::from(negated);
    let mut items = ClassItems::new(pattern, first_item);
    while items.next().is_some() {}
    // Skip the closing `]` when there is one; an open class ends the pattern.
    let next = (items.pos + 1).min(pattern.len());
    let token = Token::Class {
        negated,
        items: first_item,
    };
    (token, next)
}

/// One member of a bracket class.
enum ClassItem {
    /// `\x`: matches `x` exactly, whatever the case folding.
    Escaped(u8),
    /// `a-z` (ends as written; ordering is resolved when matching).
    Range(u8, u8),
    /// A plain byte.
    Byte(u8),
}

/// Walks the members of a class body, stopping at the closing `]` or the
/// end of the pattern. `pos` is left on the `]` (or at the end).
struct ClassItems<'p> {
    pattern: &'p [u8],
    pos: usize,
}

impl<'p> ClassItems<'p> {
    fn new(pattern: &'p [u8], pos: usize) -> Self {
        ClassItems { pattern, pos }
    }
}

impl Iterator for ClassItems<'_> {
    type Item = ClassItem;

    fn next(&mut self) -> Option<ClassItem> {
        let p = self.pattern;
        let at = self.pos;
        let first = *p.get(at)?;
        let (item, width) = if first == b'\\' && at + 1 < p.len() {
            (ClassItem::Escaped(p[at + 1]), 2)
        } else if first == b']' {
            return None;
        } else if at + 2 < p.len() && p[at + 1] == b'-' {
            (ClassItem::Range(first, p[at + 2]), 3)
        } else {
            (ClassItem::Byte(first), 1)
        };
        self.pos += width;
        Some(item)
    }
}

/// The value a byte has as a C `char` in range comparisons. `char` is
/// signed on x86-64, the platform whose Redis this reproduces.
fn as_c_char(byte: u8) -> i32 {
    i32::from(byte as i8)
}

/// C locale `tolower` on a signed `char` value: only ASCII letters change.
fn c_tolower(c: i32) -> i32 {
    if (i32::from(b'A')..=i32::from(b'Z')).contains(&c) {
        c + 32
    } else {
        c
    }
}

fn range_contains(from: u8, to: u8, byte: u8, nocase: bool) -> bool {
    let (mut lo, mut hi) = (as_c_char(from), as_c_char(to));
    if lo > hi {
        std::mem::swap(&mut lo, &mut hi);
    }
    let mut c = as_c_char(byte);
    // Folding happens after ordering the ends, so a range such as `Z-a`
    // becomes `z`..`a` and matches nothing in nocase mode.
    if nocase {
        lo = c_tolower(lo);
        hi = c_tolower(hi);
        c = c_tolower(c);
    }
    lo <= c && c <= hi
}

fn bytes_equal(a: u8, b: u8, nocase: bool) -> bool {
    a == b || (nocase && a.eq_ignore_ascii_case(&b))
}

fn class_matches(pattern: &[u8], first_item: usize, byte: u8, nocase: bool) -> bool {
    ClassItems::new(pattern, first_item).any(|item| match item {
        ClassItem::Escaped(b) => b == byte,
        ClassItem::Range(from, to) => range_contains(from, to, byte, nocase),
        ClassItem::Byte(b) => bytes_equal(b, byte, nocase),
    })
}

fn token_matches(pattern: &[u8], token: Token, byte: u8, nocase: bool) -> bool {
    match token {
        Token::Star | Token::AnyByte => true,
        Token::Byte(b) => bytes_equal(b, byte, nocase),
        Token::Class { negated, items } => class_matches(pattern, items, byte, nocase) != negated,
    }
}

/// Matching for a non-empty subject. Keeps only the most recent star as a
/// backtracking point: since every other token eats exactly one byte, a
/// failure after a later star can never be fixed by an earlier star eating
/// more.
fn match_nonempty(pattern: &[u8], s: &[u8], nocase: bool) -> bool {
    let mut p = 0;
    let mut i = 0;
    // (pattern position after the star, subject position the star's
    // match currently ends at)
    let mut backtrack: Option<(usize, usize)> = None;
    loop {
        if i == s.len() {
            // Subject used up: only stars may remain.
            return pattern[p..].iter().all(|&b| b == b'*');
        }
        if p < pattern.len() {
            let (token, next) = token_at(pattern, p);
            if let Token::Star = token {
                if next == pattern.len() {
                    return true;
                }
                backtrack = Some((next, i));
                p = next;
                continue;
            }
            if token_matches(pattern, token, s[i], nocase) {
                p = next;
                i += 1;
                continue;
            }
        }
        match backtrack {
            Some((after_star, star_end)) => {
                backtrack = Some((after_star, star_end + 1));
                p = after_star;
                i = star_end + 1;
            }
            None => return false,
        }
    }
}

/// Whether `pattern` has more than [`MAX_STAR_NESTING`] star groups that
/// are followed by further tokens, in which case Redis refuses to match.
fn nests_too_deep(pattern: &[u8]) -> bool {
    // Cheap pre-check: the raw byte count bounds the number of groups.
    if pattern.iter().filter(|&&b| b == b'*').count() <= MAX_STAR_NESTING {
        return false;
    }
    let mut groups = 0;
    let mut p = 0;
    while p < pattern.len() {
        let (token, next) = token_at(pattern, p);
        if matches!(token, Token::Star) && next < pattern.len() {
            groups += 1;
        }
        p = next;
    }
    groups > MAX_STAR_NESTING
}

#[cfg(test)]
mod tests;
