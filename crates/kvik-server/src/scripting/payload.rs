//! FUNCTION DUMP / RESTORE payloads, in Redis 7.0's format so they move between kvik
//! and Redis both ways: for each library the RDB function opcode (245) and its code
//! as an RDB string, then the RDB version (2 bytes, little-endian) and a CRC-64
//! (Jones, as RDB and DUMP use) of everything before it (8 bytes, little-endian).
//! kvik writes strings uncompressed; it reads LZF-compressed ones, which Redis writes
//! for long code.

const OPCODE_FUNCTION: u8 = 245;
const RDB_VERSION: u16 = 10;

/// The payload for these library codes.
pub fn encode<'a>(codes: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        out.push(OPCODE_FUNCTION);
        write_length(&mut out, code.len() as u64);
        out.extend_from_slice(code);
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The library codes in a payload; `None` when the version or checksum is wrong or
/// the body does not parse.
pub fn decode(payload: &[u8]) -> Option<Vec<Vec<u8>>> {
    let body_len = payload.len().checked_sub(10)?;
    let (body, trailer) = payload.split_at(body_len);
    let version = u16::from_le_bytes([trailer[0], trailer[1]]);
    let crc = u64::from_le_bytes(trailer[2..10].try_into().ok()?);
    if version > RDB_VERSION || crc64(0, &payload[..body_len + 2]) != crc {
        return None;
    }
    let mut reader = Reader { buf: body, at: 0 };
    let mut codes = Vec::new();
    while reader.at < body.len() {
        if reader.byte()? != OPCODE_FUNCTION {
            return None;
        }
        codes.push(reader.string()?);
    }
    Some(codes)
}

fn write_length(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.extend_from_slice(&(0x4000 | len as u16).to_be_bytes());
    } else if len <= u32::MAX as u64 {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

struct Reader<'b> {
    buf: &'b [u8],
    at: usize,
}

/// An RDB length, or a special string encoding (integers, LZF).
enum Length {
    Plain(u64),
    Encoded(u8),
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let bytes = self.buf.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(bytes)
    }

    fn length(&mut self) -> Option<Length> {
        let first = self.byte()?;
        Some(match first >> 6 {
            0 => Length::Plain((first & 0x3f) as u64),
            1 => Length::Plain((((first & 0x3f) as u64) << 8) | self.byte()? as u64),
            2 if first == 0x80 => {
                Length::Plain(u32::from_be_bytes(self.take(4)?.try_into().ok()?) as u64)
            }
            2 if first == 0x81 => Length::Plain(u64::from_be_bytes(self.take(8)?.try_into().ok()?)),
            3 => Length::Encoded(first & 0x3f),
            _ => return None,
        })
    }

    fn plain_length(&mut self) -> Option<usize> {
        match self.length()? {
            Length::Plain(n) => usize::try_from(n).ok(),
            Length::Encoded(_) => None,
        }
    }

    fn string(&mut self) -> Option<Vec<u8>> {
        match self.length()? {
            Length::Plain(n) => Some(self.take(usize::try_from(n).ok()?)?.to_vec()),
            Length::Encoded(0) => Some((self.byte()? as i8).to_string().into_bytes()),
            Length::Encoded(1) => {
                let v = i16::from_le_bytes(self.take(2)?.try_into().ok()?);
                Some(v.to_string().into_bytes())
            }
            Length::Encoded(2) => {
                let v = i32::from_le_bytes(self.take(4)?.try_into().ok()?);
                Some(v.to_string().into_bytes())
            }
            Length::Encoded(3) => {
                let compressed_len = self.plain_length()?;
                let len = self.plain_length()?;
                lzf_decompress(self.take(compressed_len)?, len)
            }
            Length::Encoded(_) => None,
        }
    }
}

/// LZF decompression into exactly `len` bytes.
fn lzf_decompress(input: &[u8], len: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(len);
    let mut i = 0;
    while i < input.len() {
        let ctrl = input[i] as usize;
        i += 1;
        if ctrl < 32 {
            // A literal run of ctrl + 1 bytes.
            out.extend_from_slice(input.get(i..i + ctrl + 1)?);
            i += ctrl + 1;
        } else {
            // A back reference: length in the top 3 bits (7 means one more byte).
            let mut run = ctrl >> 5;
            if run == 7 {
                run += *input.get(i)? as usize;
                i += 1;
            }
            let offset = ((ctrl & 0x1f) << 8) + *input.get(i)? as usize + 1;
            i += 1;
            let start = out.len().checked_sub(offset)?;
            for k in 0..run + 2 {
                out.push(out[start + k]);
            }
        }
    }
    (out.len() == len).then_some(out)
}

/// CRC-64 with Jones's polynomial (reflected), Redis's checksum for RDB and DUMP.
pub fn crc64(mut crc: u64, data: &[u8]) -> u64 {
    const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;
    for &byte in data {
        crc ^= byte as u64;
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLY_REFLECTED
            } else {
                crc >> 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_matches_redis_check_value() {
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn payloads_round_trip() {
        let codes: Vec<&[u8]> = vec![b"#!lua name=a\nreturn 1", &[b'x'; 300]];
        let payload = encode(codes.iter().copied());
        assert_eq!(decode(&payload).unwrap(), codes);
        let mut bad = payload.clone();
        bad[3] ^= 1;
        assert!(decode(&bad).is_none());
    }

    #[test]
    fn lzf_back_references_expand() {
        // "abcabcabc": literal "abc", then a 6-byte copy from 3 back.
        let input = [2, b'a', b'b', b'c', (4 << 5), 2];
        assert_eq!(lzf_decompress(&input, 9).unwrap(), b"abcabcabc");
    }
}
