//! The envelope of a DUMP payload: the value (type byte and body), then the RDB
//! version it was written at (2 bytes, little-endian), then the CRC-64 of both (8
//! bytes, little-endian; Jones's polynomial, reflected, the checksum Redis uses for
//! RDB files and DUMP).

use super::file::{read_value_aux, write_value_aux};
use super::io::Bytes;
use super::{decode, encode, Limits, RDB_VERSION};
use kvik_types::Value;

static CRC64: crc::Crc<u64, crc::Table<16>> =
    crc::Crc::<u64, crc::Table<16>>::new(&crc::CRC_64_REDIS);

/// A running CRC-64, as Redis computes it.
pub struct Crc64(crc::Digest<'static, u64, crc::Table<16>>);

impl Default for Crc64 {
    fn default() -> Self {
        Crc64(CRC64.digest())
    }
}

impl Crc64 {
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The checksum of everything so far.
    pub fn value(&self) -> u64 {
        self.0.clone().finalize()
    }

    /// The checksum of `bytes`.
    pub fn of(bytes: &[u8]) -> u64 {
        CRC64.checksum(bytes)
    }
}

/// Close a serialized body (a value, FUNCTION DUMP's libraries) into a payload:
/// append the version and the checksum.
pub fn seal(mut body: Vec<u8>) -> Vec<u8> {
    body.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = Crc64::of(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

/// Whether a payload's CRC is checked: always, unless DEBUG
/// SET-SKIP-CHECKSUM-VALIDATION asked otherwise (so that corrupt-payload fuzzers
/// reach the decoder; the version is checked all the same, as in Redis).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checksum {
    Verify,
    Skip,
}

/// The serialized body inside `payload`, if it was written at an RDB version kvik
/// reads (up to its own, as Redis 7.0 refuses what 7.2 and 7.4 write) and its
/// checksum is right (or not checked).
pub fn open(payload: &[u8], checksum: Checksum) -> Option<&[u8]> {
    let body_len = payload.len().checked_sub(10)?;
    let (signed, crc) = payload.split_at(body_len + 2);
    let version = u16::from_le_bytes([signed[body_len], signed[body_len + 1]]);
    let crc = u64::from_le_bytes(crc.try_into().ok()?);
    let sound = checksum == Checksum::Skip || Crc64::of(signed) == crc;
    (version <= RDB_VERSION && sound).then_some(&payload[..body_len])
}

/// DUMP: the payload of `value`, LZF-compressing long strings when `compress`
/// (`rdbcompression`). Its members' deadlines (and a job's single-shot flag) follow
/// the value as the aux fields an RDB file has after the key: Redis 7.0's RESTORE
/// reads the value and ignores the bytes after it, so it takes the payload, without
/// the deadlines.
pub fn dump(value: &Value, compress: bool) -> Vec<u8> {
    let mut body = Vec::new();
    encode(value, &mut body, compress);
    write_value_aux(&mut body, value);
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

/// RESTORE: the value in `payload`, encoded as `limits` say a value loaded now is,
/// with the members' deadlines [`dump`] put after it. Other bytes between the value
/// and the footer are ignored, as Redis 7.0 ignores them.
pub fn restore(payload: &[u8], limits: &Limits, checksum: Checksum) -> Result<Value, Refused> {
    let body = open(payload, checksum).ok_or(Refused::VersionOrChecksum)?;
    let mut src = Bytes::new(body);
    let value = decode(&mut src, limits).map_err(|_| Refused::BadData)?;
    Ok(read_value_aux(&mut src, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_deadlines_travel_after_the_value() {
        use kvik_types::set::Set;
        let mut set = Set::default();
        for m in [&b"a"[..], b"b"] {
            set.insert(m, 512);
        }
        let mut value = Value::Set(Box::new(set));
        value
            .members_mut()
            .unwrap()
            .set_deadline(b"a", 4_102_444_800_000);
        let payload = dump(&value, false);
        let back = restore(&payload, &crate::tests::limits(), Checksum::Verify).unwrap();
        let members = back.members().unwrap();
        assert_eq!(members.deadline_of(b"a"), Some(4_102_444_800_000));
        assert_eq!(members.deadline_of(b"b"), None);
        // Without deadlines the payload is exactly Redis's.
        let plain = Value::Str(kvik_types::string::StrValue::from_bytes(b"hello"));
        assert_eq!(dump(&plain, false), b"\x00\x05hello\n\x00cr\xdfve4 \n");
    }

    #[test]
    fn crc64_matches_redis_check_value() {
        assert_eq!(Crc64::of(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
        let mut running = Crc64::default();
        running.update(b"1234");
        running.update(b"56789");
        assert_eq!(running.value(), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn envelopes_check_version_and_checksum() {
        let payload = seal(b"\x00\x05hello".to_vec());
        // Redis 7.0's DUMP of the string "hello".
        assert_eq!(payload, b"\x00\x05hello\n\x00cr\xdfve4 \n");
        assert_eq!(
            open(&payload, Checksum::Verify),
            Some(&b"\x00\x05hello"[..])
        );
        let mut bad = payload.clone();
        bad[3] ^= 1;
        assert_eq!(open(&bad, Checksum::Verify), None);
        let mut newer = b"\x00\x05hello".to_vec();
        newer.extend_from_slice(&11u16.to_le_bytes());
        let crc = Crc64::of(&newer);
        newer.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(open(&newer, Checksum::Verify), None);
        assert_eq!(open(&payload[..9], Checksum::Verify), None);
        assert_eq!(open(b"", Checksum::Verify), None);
    }
}
