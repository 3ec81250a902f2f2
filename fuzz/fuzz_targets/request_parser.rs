//! Feed arbitrary bytes to the request parser in arbitrary chunks, as a connection
//! would: it must never panic, never loop, and every command it returns must consist
//! of bytes that were really sent.
//!
//! Run: `cargo +nightly fuzz run request_parser` from the repository root.

#![no_main]

use kvik_resp::{Limits, Parsed, RequestParser};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&split, stream)) = data.split_first() else {
        return;
    };
    let chunk = (split as usize % 32) + 1;
    let limits = Limits { max_bulk_len: 1 << 16, authenticated: split & 1 == 0 };
    let mut parser = RequestParser::new();
    let mut buf: Vec<u8> = Vec::new();
    for piece in stream.chunks(chunk) {
        buf.extend_from_slice(piece);
        loop {
            match parser.parse(&buf, limits) {
                Ok(Parsed::Command { consumed }) => {
                    assert!(consumed <= buf.len());
                    let total: usize = parser.args(&buf).map(|a| a.len()).sum();
                    assert!(total <= consumed);
                    buf.drain(..consumed);
                }
                Ok(Parsed::Skip { consumed }) => {
                    assert!(consumed > 0 && consumed <= buf.len());
                    buf.drain(..consumed);
                }
                Ok(Parsed::Incomplete { .. }) => break,
                Err(_) => return,
            }
        }
    }
});
