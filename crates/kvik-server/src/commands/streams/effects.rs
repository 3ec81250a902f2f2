//! The commands replicas get for what group reads and claims did, each built here
//! only: one idempotent XCLAIM per pending entry handed out or claimed
//! ([`claim_effect`]), and XGROUP SETID when a read or a claim moved the group
//! ([`setid_effect`]). They are gathered while the stream is borrowed and appended
//! afterwards, in order ([`propagate_all`]).

use super::id_arg;
use crate::keyspace::Locked;
use crate::types::stream::{Group, StreamId};

/// The XCLAIM that gives a replica the same pending entry: idempotent, whatever the
/// replica's clock.
pub fn claim_effect(
    key: &[u8],
    group: &[u8],
    consumer: &[u8],
    id: StreamId,
    delivered_at: u64,
    deliveries: u64,
    last_id: StreamId,
) -> Vec<Vec<u8>> {
    vec![
        b"XCLAIM".to_vec(),
        key.to_vec(),
        group.to_vec(),
        consumer.to_vec(),
        b"0".to_vec(),
        id_arg(id),
        b"TIME".to_vec(),
        delivered_at.to_string().into_bytes(),
        b"RETRYCOUNT".to_vec(),
        deliveries.to_string().into_bytes(),
        b"FORCE".to_vec(),
        b"JUSTID".to_vec(),
        b"LASTID".to_vec(),
        id_arg(last_id),
    ]
}

/// Append effects, in order.
pub fn propagate_all(keys: &mut Locked<'_>, effects: &[Vec<Vec<u8>>]) {
    let db = keys.db;
    for effect in effects {
        let argv: Vec<&[u8]> = effect.iter().map(Vec::as_slice).collect();
        keys.propagate(db, &argv);
    }
}

/// `XGROUP SETID key group last-id ENTRIESREAD n`
pub fn setid_effect(key: &[u8], group_name: &[u8], group: &Group) -> Vec<Vec<u8>> {
    vec![
        b"XGROUP".to_vec(),
        b"SETID".to_vec(),
        key.to_vec(),
        group_name.to_vec(),
        id_arg(group.last_id),
        b"ENTRIESREAD".to_vec(),
        group
            .entries_read
            .map_or(-1, |n| n as i64)
            .to_string()
            .into_bytes(),
    ]
}
