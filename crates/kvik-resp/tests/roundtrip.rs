//! Property tests: any argument vector encoded as a multibulk request parses back to
//! itself, however the bytes are split across reads; inline commands built from plain
//! words parse to those words; arbitrary bytes never make the parser panic.

use kvik_resp::{Limits, Parsed, RequestParser};
use proptest::prelude::*;

fn encode(args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Feed `stream` to a parser in chunks of the given sizes, as a connection would.
fn parse_stream(stream: &[u8], chunks: &[usize]) -> Vec<Vec<Vec<u8>>> {
    let mut parser = RequestParser::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut fed = 0;
    let mut commands = Vec::new();
    let mut chunk_iter = chunks.iter().cycle();
    while fed < stream.len() || !buf.is_empty() {
        let n = (*chunk_iter.next().unwrap()).max(1).min(stream.len() - fed);
        buf.extend_from_slice(&stream[fed..fed + n]);
        fed += n;
        loop {
            match parser.parse(&buf, Limits::default()).unwrap() {
                Parsed::Command { consumed } => {
                    commands.push(parser.args(&buf).map(|a| a.to_vec()).collect());
                    buf.drain(..consumed);
                }
                Parsed::Skip { consumed } => {
                    buf.drain(..consumed);
                }
                Parsed::Incomplete { .. } => break,
            }
        }
        if fed == stream.len() && !buf.is_empty() {
            panic!("leftover bytes after a complete stream");
        }
    }
    commands
}

proptest! {
    #[test]
    fn multibulk_roundtrip(
        commands in prop::collection::vec(
            prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 1..6), 1..5),
        chunks in prop::collection::vec(1usize..17, 1..8),
    ) {
        let stream: Vec<u8> = commands.iter().flat_map(|c| encode(c)).collect();
        prop_assert_eq!(parse_stream(&stream, &chunks), commands);
    }

    #[test]
    fn inline_words_roundtrip(words in prop::collection::vec("[a-zA-Z0-9:_]{1,12}", 1..6)) {
        let line = format!("{}\r\n", words.join(" "));
        let parsed = parse_stream(line.as_bytes(), &[1000]);
        let expected: Vec<Vec<u8>> = words.iter().map(|w| w.as_bytes().to_vec()).collect();
        prop_assert_eq!(parsed, vec![expected]);
    }

    #[test]
    fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let mut parser = RequestParser::new();
        let mut buf = bytes.as_slice();
        let limits = Limits { max_bulk_len: 1 << 20, authenticated: true };
        while let Ok(Parsed::Command { consumed } | Parsed::Skip { consumed }) = parser.parse(buf, limits) {
            buf = &buf[consumed..];
        }
    }
}
