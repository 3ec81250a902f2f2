//! The envelope of a DUMP payload (and of FUNCTION DUMP's): the body, then the RDB
//! version it was written at (2 bytes, little-endian), then the CRC-64 of both (8
//! bytes, little-endian; Jones's polynomial, reflected, as Redis uses for RDB files
//! and DUMP).

use super::{decode, encode, Limits, RDB_VERSION};
use crate::types::Value;

const CRC64: crc::Crc<u64, crc::Table<16>> =
    crc::Crc::<u64, crc::Table<16>>::new(&crc::CRC_64_REDIS);

/// Redis's CRC-64 of `data`.
pub fn crc64(data: &[u8]) -> u64 {
    CRC64.checksum(data)
}

/// Close `body` into a payload: append the version and the checksum.
pub fn seal(mut body: Vec<u8>) -> Vec<u8> {
    body.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

/// The body of `payload`, if it was written at an RDB version up to `max_version`
/// and its checksum is right. Redis 7.0 refuses what a newer server wrote (versions
/// 11 and 12, from 7.2 and 7.4) and a zero checksum alike, and so does a caller that
/// passes [`RDB_VERSION`].
pub fn open(payload: &[u8], max_version: u16) -> Option<&[u8]> {
    let body_len = payload.len().checked_sub(10)?;
    let (signed, crc) = payload.split_at(body_len + 2);
    let version = u16::from_le_bytes([signed[body_len], signed[body_len + 1]]);
    let crc = u64::from_le_bytes(crc.try_into().ok()?);
    (version <= max_version && crc64(signed) == crc).then_some(&payload[..body_len])
}

/// DUMP: the payload of `value`, LZF-compressing long strings when `compress`
/// (`rdbcompression`).
pub fn dump(value: &Value, compress: bool) -> Vec<u8> {
    let mut body = Vec::new();
    encode(value, &mut body, compress);
    seal(body)
}

/// Why RESTORE refuses a payload, in Redis's two words for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// `ERR DUMP payload version or checksum are wrong`
    VersionOrChecksum,
    /// `ERR Bad data format`
    BadData,
}

/// RESTORE: the value in `payload`, encoded as `limits` say a value loaded now is.
/// Bytes after the value are ignored, as Redis 7.0 ignores them.
pub fn restore(payload: &[u8], max_version: u16, limits: &Limits) -> Result<Value, Refused> {
    let body = open(payload, max_version).ok_or(Refused::VersionOrChecksum)?;
    decode(body, limits).map_err(|_| Refused::BadData)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_matches_redis_check_value() {
        assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn envelopes_check_version_and_checksum() {
        let payload = seal(b"\x00\x05hello".to_vec());
        // Redis 7.0's DUMP of the string "hello".
        assert_eq!(payload, b"\x00\x05hello\n\x00cr\xdfve4 \n");
        assert_eq!(open(&payload, RDB_VERSION), Some(&b"\x00\x05hello"[..]));
        let mut bad = payload.clone();
        bad[3] ^= 1;
        assert_eq!(open(&bad, RDB_VERSION), None);
        let mut newer = b"\x00\x05hello".to_vec();
        newer.extend_from_slice(&11u16.to_le_bytes());
        let crc = crc64(&newer);
        newer.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(open(&newer, RDB_VERSION), None);
        assert!(open(&newer, 11).is_some());
        assert_eq!(open(&payload[..9], RDB_VERSION), None);
    }
}
