//! FUNCTION DUMP / RESTORE payloads, in Redis 7.0's format so they move between kvik
//! and Redis both ways: for each library the RDB function opcode (245) and its code
//! as an RDB string, in the envelope DUMP uses (the RDB version and a CRC-64, see
//! [`crate::persistence::rdb::payload`]). kvik writes strings uncompressed; it reads
//! LZF-compressed ones, which Redis writes for long code.

use crate::persistence::rdb::io::{write_string, Bytes, Source};
use crate::persistence::rdb::payload::{open, seal, Checksum};

const OPCODE_FUNCTION: u8 = 245;

/// The payload for these library codes.
pub fn encode<'a>(codes: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut body = Vec::new();
    for code in codes {
        body.push(OPCODE_FUNCTION);
        write_string(&mut body, code, false);
    }
    seal(body)
}

/// The library codes in a payload; `None` when the version or checksum is wrong or
/// the body does not parse.
pub fn decode(payload: &[u8], checksum: Checksum) -> Option<Vec<Vec<u8>>> {
    let mut src = Bytes::new(open(payload, checksum)?);
    let mut codes = Vec::new();
    while src.left() != Some(0) {
        if src.byte().ok()? != OPCODE_FUNCTION {
            return None;
        }
        codes.push(src.string().ok()?.into_owned());
    }
    Some(codes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip() {
        let codes: Vec<&[u8]> = vec![b"#!lua name=a\nreturn 1", &[b'x'; 300]];
        let payload = encode(codes.iter().copied());
        assert_eq!(decode(&payload, Checksum::Verify).unwrap(), codes);
        let mut bad = payload.clone();
        bad[3] ^= 1;
        assert!(decode(&bad, Checksum::Verify).is_none());
    }

    #[test]
    fn lzf_compressed_code_is_read() {
        // "abcabcabc" as LZF: literal "abc", then a 6-byte copy from 3 back.
        let payload = seal(vec![
            OPCODE_FUNCTION,
            0xC3,
            6,
            9,
            2,
            b'a',
            b'b',
            b'c',
            4 << 5,
            2,
        ]);
        assert_eq!(decode(&payload, Checksum::Verify).unwrap(), [b"abcabcabc"]);
    }
}
