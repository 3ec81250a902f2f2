//! The reply writer: encodes replies straight into a connection's output buffer.
//!
//! Handlers describe replies by kind (bulk, integer, map, null...) and the writer picks
//! the wire form for the protocol the client negotiated with HELLO: RESP3 has maps,
//! sets, doubles, booleans and a single null; RESP2 spells them as arrays, bulk strings,
//! integers and `$-1` / `*-1`. Encoding directly into bytes (no reply tree) keeps the
//! per-command cost to a few `memcpy`s, and the bytes of a whole pipelined batch leave
//! in one write.

/// Which protocol the client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    #[default]
    Resp2,
    Resp3,
}

/// An output buffer plus the protocol to encode for.
#[derive(Debug, Default)]
pub struct ReplyWriter {
    pub buf: Vec<u8>,
    pub protocol: Protocol,
    /// Past this many bytes in `buf` nothing more is written and the writer is
    /// marked overflowed (0: no limit). A connection sets it from its class's hard
    /// `client-output-buffer-limit`, so a reply too big for the limit never takes
    /// more memory than the limit while it is built: the client is closed instead,
    /// as Redis closes it.
    pub limit: usize,
    overflowed: bool,
}

impl ReplyWriter {
    pub fn new(protocol: Protocol) -> Self {
        ReplyWriter::with_buf(Vec::with_capacity(16 * 1024), protocol)
    }

    /// A writer appending to `buf`, with no limit.
    pub fn with_buf(buf: Vec<u8>, protocol: Protocol) -> Self {
        ReplyWriter {
            buf,
            protocol,
            limit: 0,
            overflowed: false,
        }
    }

    /// Did a write pass [`ReplyWriter::limit`] (and so was dropped)?
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Is the buffer past its limit? Then the write that asks is dropped.
    #[inline]
    fn full(&mut self) -> bool {
        if self.limit != 0 && self.buf.len() > self.limit {
            self.overflowed = true;
        }
        self.overflowed
    }

    pub fn is_resp3(&self) -> bool {
        self.protocol == Protocol::Resp3
    }

    fn header(&mut self, prefix: u8, n: i64) {
        if !self.full() {
            self.write_header(prefix, n);
        }
    }

    /// [`ReplyWriter::header`] once the limit is checked.
    fn write_header(&mut self, prefix: u8, n: i64) {
        let mut digits = itoa::Buffer::new();
        self.buf.push(prefix);
        self.buf.extend_from_slice(digits.format(n).as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `+OK`
    pub fn ok(&mut self) {
        self.buf.extend_from_slice(b"+OK\r\n");
    }

    /// A simple string (`+text`). `text` must not contain CR or LF.
    pub fn simple(&mut self, text: &str) {
        if self.full() {
            return;
        }
        self.buf.push(b'+');
        self.buf.extend_from_slice(text.as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// An error reply; `text` is the whole message after `-`, e.g. `ERR syntax error`.
    /// CR and LF would break framing, so they become spaces, as Redis does.
    pub fn error(&mut self, text: &str) {
        self.buf.push(b'-');
        self.buf.extend(
            text.bytes()
                .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
        self.buf.extend_from_slice(b"\r\n");
    }

    pub fn int(&mut self, n: i64) {
        self.header(b':', n);
    }

    pub fn bulk(&mut self, data: &[u8]) {
        if self.full() {
            return;
        }
        self.write_header(b'$', data.len() as i64);
        self.buf.extend_from_slice(data);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// A bulk string holding the decimal form of an integer.
    pub fn bulk_int(&mut self, n: i64) {
        let mut digits = itoa::Buffer::new();
        self.bulk(digits.format(n).as_bytes());
    }

    /// The null bulk string (`$-1` in RESP2, `_` in RESP3).
    pub fn null(&mut self) {
        match self.protocol {
            Protocol::Resp2 => self.buf.extend_from_slice(b"$-1\r\n"),
            Protocol::Resp3 => self.buf.extend_from_slice(b"_\r\n"),
        }
    }

    /// The null array (`*-1` in RESP2, `_` in RESP3).
    pub fn null_array(&mut self) {
        match self.protocol {
            Protocol::Resp2 => self.buf.extend_from_slice(b"*-1\r\n"),
            Protocol::Resp3 => self.buf.extend_from_slice(b"_\r\n"),
        }
    }

    pub fn array(&mut self, len: usize) {
        self.header(b'*', len as i64);
    }

    /// A map of `pairs` entries (RESP2: a flat array of twice as many elements).
    pub fn map(&mut self, pairs: usize) {
        match self.protocol {
            Protocol::Resp2 => self.header(b'*', 2 * pairs as i64),
            Protocol::Resp3 => self.header(b'%', pairs as i64),
        }
    }

    /// A set (RESP2: an array).
    pub fn set(&mut self, len: usize) {
        match self.protocol {
            Protocol::Resp2 => self.header(b'*', len as i64),
            Protocol::Resp3 => self.header(b'~', len as i64),
        }
    }

    /// An out-of-band push frame (RESP2: an array).
    pub fn push(&mut self, len: usize) {
        match self.protocol {
            Protocol::Resp2 => self.header(b'*', len as i64),
            Protocol::Resp3 => self.header(b'>', len as i64),
        }
    }

    /// A double whose text form the caller has already produced with Redis's rules
    /// (RESP2: a bulk string, RESP3: a `,` double frame).
    pub fn double_text(&mut self, text: &[u8]) {
        match self.protocol {
            Protocol::Resp2 => self.bulk(text),
            Protocol::Resp3 => {
                self.buf.push(b',');
                self.buf.extend_from_slice(text);
                self.buf.extend_from_slice(b"\r\n");
            }
        }
    }

    /// A boolean (RESP2: the integer 1 or 0).
    pub fn boolean(&mut self, value: bool) {
        match self.protocol {
            Protocol::Resp2 => self.int(value as i64),
            Protocol::Resp3 => {
                self.buf
                    .extend_from_slice(if value { b"#t\r\n" } else { b"#f\r\n" })
            }
        }
    }

    /// Verbatim text such as INFO's or CLIENT LIST's (RESP3 `=` with a format,
    /// RESP2 a bulk string).
    pub fn verbatim(&mut self, format: &[u8; 3], text: &[u8]) {
        match self.protocol {
            Protocol::Resp2 => self.bulk(text),
            Protocol::Resp3 => {
                self.header(b'=', text.len() as i64 + 4);
                self.buf.extend_from_slice(format);
                self.buf.push(b':');
                self.buf.extend_from_slice(text);
                self.buf.extend_from_slice(b"\r\n");
            }
        }
    }

    /// Already-encoded RESP bytes.
    pub fn raw(&mut self, bytes: &[u8]) {
        if self.full() {
            return;
        }
        self.buf.extend_from_slice(bytes);
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resp2_and_resp3_forms() {
        let mut w2 = ReplyWriter::new(Protocol::Resp2);
        let mut w3 = ReplyWriter::new(Protocol::Resp3);
        for w in [&mut w2, &mut w3] {
            w.map(1);
            w.bulk(b"k");
            w.double_text(b"1.5");
            w.null();
            w.boolean(true);
            w.int(-7);
        }
        assert_eq!(
            w2.buf,
            b"*2\r\n$1\r\nk\r\n$3\r\n1.5\r\n$-1\r\n:1\r\n:-7\r\n"
        );
        assert_eq!(w3.buf, b"%1\r\n$1\r\nk\r\n,1.5\r\n_\r\n#t\r\n:-7\r\n");
    }

    #[test]
    fn errors_lose_newlines() {
        let mut w = ReplyWriter::default();
        w.error("ERR bad\r\nthing");
        assert_eq!(w.buf, b"-ERR bad  thing\r\n");
    }

    #[test]
    fn verbatim() {
        let mut w = ReplyWriter::new(Protocol::Resp3);
        w.verbatim(b"txt", b"hi");
        assert_eq!(w.buf, b"=6\r\ntxt:hi\r\n");
    }

    #[test]
    fn writes_past_the_limit_are_dropped() {
        let mut w = ReplyWriter::new(Protocol::Resp2);
        w.limit = 10;
        w.array(3);
        w.bulk(b"abcdef");
        assert!(!w.overflowed());
        w.bulk(b"ghijkl");
        w.bulk(b"more");
        w.raw(b"+x\r\n");
        assert!(w.overflowed());
        // The second bulk found the buffer past the limit already.
        assert_eq!(w.buf, b"*3\r\n$6\r\nabcdef\r\n");
    }
}
