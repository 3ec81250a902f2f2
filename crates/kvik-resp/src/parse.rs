//! The request parser: turns the bytes a client sent into argument vectors.
//!
//! Clients send commands either as RESP multibulk arrays (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`)
//! or as inline text lines (`GET k\r\n`, what a human types into telnet). The parser is
//! resumable: when a command arrives in pieces it remembers how far it got, so a huge
//! MSET that trickles in over thousands of reads is scanned once, not once per read.
//!
//! Arguments of a multibulk command are returned as ranges into the caller's buffer
//! (zero copy). Inline arguments may contain quoted escapes, so they are unescaped into
//! a small owned store instead.

use std::ops::Range;

/// Longest inline command, and longest `*N` / `$N` header line, before the request
/// is refused (Redis's PROTO_INLINE_MAX_SIZE).
pub const INLINE_MAX: usize = 64 * 1024;

/// Largest bulk argument a client may announce before authenticating.
const UNAUTHENTICATED_MAX_BULK: i64 = 16 * 1024;
/// Largest argument count a client may announce before authenticating.
const UNAUTHENTICATED_MAX_ARGS: i64 = 10;

/// A protocol violation. The connection gets `-ERR Protocol error: <text>` and is closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Protocol error: {}", self.0)
    }
}

impl std::error::Error for ProtocolError {}

fn protocol_error(text: impl Into<String>) -> ProtocolError {
    ProtocolError(text.into())
}

/// Limits the parser enforces, taken from the server's configuration.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `proto-max-bulk-len`.
    pub max_bulk_len: i64,
    /// Whether the client has authenticated (unauthenticated clients get tighter limits).
    pub authenticated: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk_len: 512 * 1024 * 1024,
            authenticated: true,
        }
    }
}

/// Where the arguments of a parsed command live.
#[derive(Debug, Default)]
enum Store {
    /// Ranges into the read buffer.
    #[default]
    Ranges,
    /// Unescaped inline arguments.
    Owned,
}

/// A resumable RESP request parser. Feed it the read buffer from the start of the
/// command in progress each time more bytes arrive; after a complete command the
/// caller drops `consumed` bytes from the front of the buffer.
#[derive(Debug, Default)]
pub struct RequestParser {
    /// Arguments still expected in the current multibulk (0 = between commands).
    remaining: usize,
    /// Scan position inside the buffer for the command in progress.
    pos: usize,
    /// Bulk length announced by the last `$N` header, when its payload has not arrived.
    pending_bulk: Option<usize>,
    ranges: Vec<Range<usize>>,
    owned: Vec<Vec<u8>>,
    store: Store,
}

/// The outcome of one parse attempt.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A whole command; its arguments are available through [`RequestParser::args`]
    /// until the next call. `consumed` bytes at the front of the buffer belong to it.
    Command { consumed: usize },
    /// Bytes that carry no command (an empty inline line, `*0`, `*-1`): drop them.
    Skip { consumed: usize },
    /// More bytes are needed. `hint` is how many more are known to be needed, so the
    /// caller can grow its buffer once for a large bulk argument.
    Incomplete { hint: usize },
}

impl RequestParser {
    pub fn new() -> Self {
        RequestParser::default()
    }

    /// The arguments of the command last returned as [`Parsed::Command`]; `buf` is
    /// the buffer that was parsed.
    pub fn args<'b>(&'b self, buf: &'b [u8]) -> impl Iterator<Item = &'b [u8]> + 'b {
        let (ranges, owned) = match self.store {
            Store::Ranges => (&self.ranges[..], &[][..]),
            Store::Owned => (&[][..], &self.owned[..]),
        };
        ranges
            .iter()
            .map(move |r| &buf[r.clone()])
            .chain(owned.iter().map(|a| a.as_slice()))
    }

    /// Number of arguments of the command last returned.
    pub fn argc(&self) -> usize {
        match self.store {
            Store::Ranges => self.ranges.len(),
            Store::Owned => self.owned.len(),
        }
    }

    /// Is a multibulk command partly received?
    pub fn in_progress(&self) -> bool {
        self.remaining > 0 || self.pos > 0
    }

    /// Try to parse one command from the front of `buf`.
    pub fn parse(&mut self, buf: &[u8], limits: Limits) -> Result<Parsed, ProtocolError> {
        if self.remaining == 0 && self.pos == 0 {
            self.ranges.clear();
            self.owned.clear();
            match buf.first() {
                None => return Ok(Parsed::Incomplete { hint: 1 }),
                Some(b'*') => {}
                Some(_) => return self.parse_inline(buf),
            }
            match self.parse_multibulk_header(buf, limits)? {
                Some(Parsed::Skip { consumed }) => {
                    self.pos = 0;
                    return Ok(Parsed::Skip { consumed });
                }
                Some(other) => return Ok(other),
                None => {}
            }
        }
        self.parse_bulks(buf, limits)
    }

    /// Reads `*N\r\n`. Returns `Some` when the caller must return at once.
    fn parse_multibulk_header(
        &mut self,
        buf: &[u8],
        limits: Limits,
    ) -> Result<Option<Parsed>, ProtocolError> {
        let eol = match header_end(buf, 0) {
            HeaderEnd::At(eol) => eol,
            HeaderEnd::Waiting if buf.len() > INLINE_MAX => {
                return Err(protocol_error("too big mbulk count string"))
            }
            HeaderEnd::Waiting | HeaderEnd::NeedsOneMore => {
                return Ok(Some(Parsed::Incomplete { hint: 1 }))
            }
        };
        let count = match parse_header_number(&buf[1..eol]) {
            Some(n) if n <= i32::MAX as i64 => n,
            _ => return Err(protocol_error("invalid multibulk length")),
        };
        if count > UNAUTHENTICATED_MAX_ARGS && !limits.authenticated {
            return Err(protocol_error("unauthenticated multibulk length"));
        }
        if count <= 0 {
            return Ok(Some(Parsed::Skip { consumed: eol + 2 }));
        }
        self.remaining = count as usize;
        self.ranges.reserve(self.remaining.min(1024));
        self.pos = eol + 2;
        self.store = Store::Ranges;
        Ok(None)
    }

    fn parse_bulks(&mut self, buf: &[u8], limits: Limits) -> Result<Parsed, ProtocolError> {
        while self.remaining > 0 {
            let len = match self.pending_bulk {
                Some(len) => len,
                None => {
                    let Some(&first) = buf.get(self.pos) else {
                        return Ok(Parsed::Incomplete { hint: 1 });
                    };
                    let eol = match header_end(buf, self.pos) {
                        HeaderEnd::At(eol) => eol,
                        HeaderEnd::Waiting if buf.len() - self.pos > INLINE_MAX => {
                            return Err(protocol_error("too big bulk count string"))
                        }
                        HeaderEnd::Waiting | HeaderEnd::NeedsOneMore => {
                            return Ok(Parsed::Incomplete { hint: 1 })
                        }
                    };
                    if first != b'$' {
                        return Err(protocol_error(format!(
                            "expected '$', got '{}'",
                            first as char
                        )));
                    }
                    let len = match parse_header_number(&buf[self.pos + 1..eol]) {
                        Some(n) if (0..=limits.max_bulk_len).contains(&n) => n,
                        _ => return Err(protocol_error("invalid bulk length")),
                    };
                    if len > UNAUTHENTICATED_MAX_BULK && !limits.authenticated {
                        return Err(protocol_error("unauthenticated bulk length"));
                    }
                    let len = len as usize;
                    self.pos = eol + 2;
                    self.pending_bulk = Some(len);
                    len
                }
            };
            let end = self.pos + len;
            if buf.len() < end + 2 {
                return Ok(Parsed::Incomplete {
                    hint: end + 2 - buf.len(),
                });
            }
            self.ranges.push(self.pos..end);
            self.pos = end + 2;
            self.pending_bulk = None;
            self.remaining -= 1;
        }
        let consumed = self.pos;
        self.pos = 0;
        Ok(Parsed::Command { consumed })
    }

    fn parse_inline(&mut self, buf: &[u8]) -> Result<Parsed, ProtocolError> {
        // Redis looks for the newline as C strings do: a NUL byte ends the search.
        let Some(nl) = find_in_c_string(b'\n', buf) else {
            if buf.len() > INLINE_MAX {
                return Err(protocol_error("too big inline request"));
            }
            return Ok(Parsed::Incomplete { hint: 1 });
        };
        let mut line = &buf[..nl];
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        let args =
            split_args(line).ok_or_else(|| protocol_error("unbalanced quotes in request"))?;
        if args.is_empty() {
            return Ok(Parsed::Skip { consumed: nl + 1 });
        }
        self.owned = args;
        self.store = Store::Owned;
        Ok(Parsed::Command { consumed: nl + 1 })
    }
}

/// Where the `*N` or `$N` header line starting at `start` ends.
enum HeaderEnd {
    /// At this `\r`; the parser goes on two bytes later.
    At(usize),
    /// No `\r` yet.
    Waiting,
    /// The `\r` is the last byte: its partner has not arrived.
    NeedsOneMore,
}

/// Finds a header line's end as Redis does, which decides what malformed input
/// means: the first `\r` (looked for as in a C string, so a NUL byte hides
/// everything after it) ends the line, and the byte after it is skipped unseen,
/// whatever it is.
fn header_end(buf: &[u8], start: usize) -> HeaderEnd {
    match find_in_c_string(b'\r', &buf[start..]) {
        None => HeaderEnd::Waiting,
        Some(at) if start + at + 1 >= buf.len() => HeaderEnd::NeedsOneMore,
        Some(at) => HeaderEnd::At(start + at),
    }
}

/// Where `needle` first is in `hay` as C's `strchr` finds it: not at all when a NUL
/// byte comes first. (The NUL is looked for only before the needle, so a long
/// pipeline is not scanned to its end for every line.)
fn find_in_c_string(needle: u8, hay: &[u8]) -> Option<usize> {
    let at = memchr(needle, hay)?;
    memchr(0, &hay[..at]).is_none().then_some(at)
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == needle)
}

/// The number in a `*N` or `$N` header, with Redis's strict integer rules: digits
/// only, an optional `-`, no leading zero (`0` alone is fine, `-0` is not).
fn parse_header_number(digits: &[u8]) -> Option<i64> {
    if digits == b"0" {
        return Some(0);
    }
    let (negative, body) = match digits.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, digits),
    };
    if body.is_empty() || body.len() > 19 || body[0] == b'0' || !body.iter().all(u8::is_ascii_digit)
    {
        return None;
    }
    let mut n: i64 = 0;
    for &d in body {
        n = n.checked_mul(10)?.checked_add((d - b'0') as i64)?;
    }
    Some(if negative { -n } else { n })
}

/// Split a line into arguments the way Redis does for inline commands and for
/// `redis.conf` lines (both use the same rules):
/// - arguments are separated by white space (C's `isspace`);
/// - `"..."` understands `\n \r \t \b \a \xHH` and `\` before any other character
///   stands for that character;
/// - `'...'` is literal except for `\'`;
/// - a closing quote must be followed by white space or the end of the line;
/// - a quote inside an unquoted word opens a quoted part of that same word.
///
/// Returns `None` for unbalanced quotes.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && is_c_space(line[i]) {
            i += 1;
        }
        if i >= line.len() {
            return Some(args);
        }
        let mut current = Vec::new();
        let mut quote = None;
        loop {
            match quote {
                Some(b'"') => {
                    let c = *line.get(i)?;
                    let hex = (c == b'\\' && line.get(i + 1) == Some(&b'x'))
                        .then(|| {
                            Some(hex_value(*line.get(i + 2)?)? * 16 + hex_value(*line.get(i + 3)?)?)
                        })
                        .flatten();
                    if let Some(byte) = hex {
                        current.push(byte);
                        i += 4;
                    } else if c == b'\\' && i + 1 < line.len() {
                        current.push(match line[i + 1] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 0x08,
                            b'a' => 0x07,
                            other => other,
                        });
                        i += 2;
                    } else if c == b'"' {
                        closing_quote_ends_word(line, i)?;
                        i += 1;
                        break;
                    } else {
                        current.push(c);
                        i += 1;
                    }
                }
                Some(_) => {
                    let c = *line.get(i)?;
                    if c == b'\\' && line.get(i + 1) == Some(&b'\'') {
                        current.push(b'\'');
                        i += 2;
                    } else if c == b'\'' {
                        closing_quote_ends_word(line, i)?;
                        i += 1;
                        break;
                    } else {
                        current.push(c);
                        i += 1;
                    }
                }
                None => {
                    match line.get(i) {
                        None => break,
                        Some(b' ' | b'\n' | b'\r' | b'\t' | 0) => {
                            i += 1;
                            break;
                        }
                        Some(&q @ (b'"' | b'\'')) => quote = Some(q),
                        Some(&c) => current.push(c),
                    }
                    i += 1;
                }
            }
        }
        args.push(current);
    }
}

/// A closing quote must end its word.
fn closing_quote_ends_word(line: &[u8], at: usize) -> Option<()> {
    match line.get(at + 1) {
        Some(&next) if !is_c_space(next) => None,
        _ => Some(()),
    }
}

/// C's `isspace` in the "C" locale.
fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn hex_value(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8]) -> Result<Vec<Vec<Vec<u8>>>, ProtocolError> {
        let mut parser = RequestParser::new();
        let mut buf = input;
        let mut commands = Vec::new();
        loop {
            match parser.parse(buf, Limits::default())? {
                Parsed::Command { consumed } => {
                    commands.push(parser.args(buf).map(|a| a.to_vec()).collect());
                    buf = &buf[consumed..];
                }
                Parsed::Skip { consumed } => buf = &buf[consumed..],
                Parsed::Incomplete { .. } => return Ok(commands),
            }
        }
    }

    #[test]
    fn multibulk() {
        let cmds = parse_all(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n").unwrap();
        assert_eq!(
            cmds,
            vec![vec![b"GET".to_vec(), b"k".to_vec()], vec![b"PING".to_vec()]]
        );
    }

    #[test]
    fn binary_safe_bulk() {
        let cmds = parse_all(b"*1\r\n$4\r\na\r\nb\r\n").unwrap();
        assert_eq!(cmds, vec![vec![b"a\r\nb".to_vec()]]);
    }

    #[test]
    fn inline_with_quotes() {
        let cmds = parse_all(b"SET k \"a b\\x41\\n\" 'it\\'s'\r\nPING\n").unwrap();
        assert_eq!(
            cmds,
            vec![
                vec![
                    b"SET".to_vec(),
                    b"k".to_vec(),
                    b"a bA\n".to_vec(),
                    b"it's".to_vec()
                ],
                vec![b"PING".to_vec()]
            ]
        );
    }

    #[test]
    fn empty_lines_and_zero_multibulk_are_skipped() {
        let cmds = parse_all(b"\r\n\n*0\r\n*-1\r\nPING\r\n").unwrap();
        assert_eq!(cmds, vec![vec![b"PING".to_vec()]]);
    }

    #[test]
    fn errors_have_redis_texts() {
        let err = |input: &[u8]| parse_all(input).unwrap_err().to_string();
        assert_eq!(err(b"*x\r\n"), "Protocol error: invalid multibulk length");
        assert_eq!(err(b"*1\r\n$x\r\n"), "Protocol error: invalid bulk length");
        assert_eq!(err(b"*1\r\n$-1\r\n"), "Protocol error: invalid bulk length");
        assert_eq!(
            err(b"*1\r\n+OK\r\n"),
            "Protocol error: expected '$', got '+'"
        );
        assert_eq!(
            err(b"SET \"a\r\n"),
            "Protocol error: unbalanced quotes in request"
        );
        assert_eq!(
            err(b"SET \"a\"b\r\n"),
            "Protocol error: unbalanced quotes in request"
        );
        let long = vec![b'a'; INLINE_MAX + 1];
        assert_eq!(err(&long), "Protocol error: too big inline request");
        let mut long_header = b"*1".to_vec();
        long_header.extend(vec![b'1'; INLINE_MAX + 1]);
        assert_eq!(
            err(&long_header),
            "Protocol error: too big mbulk count string"
        );
    }

    #[test]
    fn malformed_input_reads_as_redis_reads_it() {
        // The byte after a header's `\r` is skipped unseen, and so are the two after
        // a bulk's payload.
        let cmds = parse_all(b"*2\r?$3\rxGETzz$1\r\nk\r\n").unwrap();
        assert_eq!(cmds, vec![vec![b"GET".to_vec(), b"k".to_vec()]]);
        // Leading zeros and `-0` are not numbers.
        let err = |input: &[u8]| parse_all(input).unwrap_err().to_string();
        assert_eq!(err(b"*01\r\n"), "Protocol error: invalid multibulk length");
        assert_eq!(
            err(b"*1\r\n$04\r\nPING\r\n"),
            "Protocol error: invalid bulk length"
        );
        assert_eq!(err(b"*1\r\n$-0\r\n"), "Protocol error: invalid bulk length");
        // A NUL byte hides the line's end: the request waits for more.
        let mut p = RequestParser::new();
        let waiting = p.parse(b"*1\x00\r\n", Limits::default()).unwrap();
        assert!(matches!(waiting, Parsed::Incomplete { .. }));
        let mut p = RequestParser::new();
        let waiting = p.parse(b"PING\x00\n", Limits::default()).unwrap();
        assert!(matches!(waiting, Parsed::Incomplete { .. }));
    }

    #[test]
    fn unauthenticated_limits() {
        let limits = Limits {
            max_bulk_len: 1 << 20,
            authenticated: false,
        };
        let err = |input: &[u8]| {
            let mut p = RequestParser::new();
            p.parse(input, limits).unwrap_err().to_string()
        };
        assert_eq!(
            err(b"*11\r\n"),
            "Protocol error: unauthenticated multibulk length"
        );
        assert_eq!(
            err(b"*1\r\n$16385\r\n"),
            "Protocol error: unauthenticated bulk length"
        );
        assert_eq!(err(b"*1\r\n$x\r\n"), "Protocol error: invalid bulk length");
    }

    #[test]
    fn resumes_across_partial_reads() {
        let full = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n";
        let mut parser = RequestParser::new();
        for cut in 0..full.len() {
            let r = parser.parse(&full[..cut], Limits::default()).unwrap();
            assert!(matches!(r, Parsed::Incomplete { .. }), "cut {cut}");
        }
        let r = parser.parse(full, Limits::default()).unwrap();
        assert_eq!(
            r,
            Parsed::Command {
                consumed: full.len()
            }
        );
        let args: Vec<&[u8]> = parser.args(full).collect();
        assert_eq!(args, vec![&b"SET"[..], b"key", b"value"]);
    }

    #[test]
    fn large_bulk_hint() {
        let mut parser = RequestParser::new();
        let r = parser
            .parse(b"*1\r\n$1000\r\nab", Limits::default())
            .unwrap();
        assert_eq!(r, Parsed::Incomplete { hint: 1000 });
    }
}
