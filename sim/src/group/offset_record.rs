//! How a shard writes committed offsets into its `__consumer_offsets` partition, so that a
//! coordinator elected after a move or a restart finds them again (Kafka's `OffsetCommitKey` /
//! `OffsetCommitValue` records play this role; this encoding is ours, versioned the same way).
//!
//! Key: `version i16 = 1, group (i16 length + UTF-8), topic (i16 length + UTF-8), partition i32`.
//! Value: `version i16 = 1, offset i64, leader epoch i32 (-1 none), commit time i64,
//! metadata (i16 length + UTF-8)`; version 2 appends the expire timestamp (i64), written only
//! when the offset has one, as Kafka writes `OffsetCommitValue` v1 only then.
//! A tombstone (no value) deletes the offset: group deletion and offset expiry write them.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::offsets::OffsetAndMetadata;

const KEY_VERSION: i16 = 1;
const VALUE_VERSION: i16 = 1;
/// The value version carrying an expire timestamp.
const VALUE_VERSION_EXPIRE: i16 = 2;

/// One committed offset as it is stored: which partition of which group, and the offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetRecord {
    pub group_id: String,
    pub topic: String,
    pub partition: i32,
    pub offset: OffsetAndMetadata,
}

impl OffsetRecord {
    /// The record's key and value bytes.
    pub fn encode(&self) -> (Bytes, Bytes) {
        let key = Self::encode_key(&self.group_id, &self.topic, self.partition);
        let mut value = BytesMut::new();
        let expire = self.offset.expire_timestamp_ms;
        value.put_i16(if expire.is_some() {
            VALUE_VERSION_EXPIRE
        } else {
            VALUE_VERSION
        });
        value.put_i64(self.offset.committed_offset);
        value.put_i32(self.offset.leader_epoch.unwrap_or(-1));
        value.put_i64(i64::try_from(self.offset.commit_timestamp_ms).unwrap_or(i64::MAX));
        put_string(&mut value, &self.offset.metadata);
        if let Some(expire) = expire {
            value.put_i64(i64::try_from(expire).unwrap_or(i64::MAX));
        }
        (key, value.freeze())
    }

    /// The key of one partition's offset: with a value it is a commit, alone a tombstone.
    pub fn encode_key(group_id: &str, topic: &str, partition: i32) -> Bytes {
        let mut key = BytesMut::new();
        key.put_i16(KEY_VERSION);
        put_string(&mut key, group_id);
        put_string(&mut key, topic);
        key.put_i32(partition);
        key.freeze()
    }

    /// Decodes an offset key: (group, topic, partition); `None` for other record kinds.
    pub fn decode_key(mut key: &[u8]) -> Option<(String, String, i32)> {
        if key.remaining() < 2 || key.get_i16() != KEY_VERSION {
            return None;
        }
        let group_id = get_string(&mut key)?;
        let topic = get_string(&mut key)?;
        if key.remaining() != 4 {
            return None;
        }
        Some((group_id, topic, key.get_i32()))
    }

    /// Decodes a record written by [`OffsetRecord::encode`]; `None` for anything else (records
    /// of other kinds or versions are skipped by the loader, as Kafka skips unknown ones).
    pub fn decode(key: &[u8], mut value: &[u8]) -> Option<Self> {
        let (group_id, topic, partition) = Self::decode_key(key)?;
        if value.remaining() < 2 + 8 + 4 + 8 {
            return None;
        }
        let version = value.get_i16();
        if version != VALUE_VERSION && version != VALUE_VERSION_EXPIRE {
            return None;
        }
        let committed_offset = value.get_i64();
        let leader_epoch = value.get_i32();
        let commit_timestamp_ms = u64::try_from(value.get_i64()).ok()?;
        let metadata = get_string(&mut value)?;
        let expire_timestamp_ms = if version == VALUE_VERSION_EXPIRE {
            if value.remaining() < 8 {
                return None;
            }
            Some(u64::try_from(value.get_i64()).ok()?)
        } else {
            None
        };
        Some(Self {
            group_id,
            topic,
            partition,
            offset: OffsetAndMetadata {
                committed_offset,
                leader_epoch: (leader_epoch >= 0).then_some(leader_epoch),
                metadata,
                commit_timestamp_ms,
                expire_timestamp_ms,
            },
        })
    }
}

fn put_string(buf: &mut BytesMut, s: &str) {
    // Group ids, topic names and offset metadata are far below i16::MAX bytes (metadata is
    // capped by offset.metadata.max.bytes before it gets here); clamp rather than wrap.
    let bytes = &s.as_bytes()[..s.len().min(i16::MAX as usize)];
    buf.put_i16(bytes.len() as i16);
    buf.put_slice(bytes);
}

fn get_string(buf: &mut &[u8]) -> Option<String> {
    if buf.remaining() < 2 {
        return None;
    }
    let len = usize::try_from(buf.get_i16()).ok()?;
    if buf.remaining() < len {
        return None;
    }
    let s = std::str::from_utf8(&buf[..len]).ok()?.to_owned();
    buf.advance(len);
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> OffsetRecord {
        OffsetRecord {
            group_id: "g-ü".into(),
            topic: "orders".into(),
            partition: 7,
            offset: OffsetAndMetadata {
                committed_offset: 42,
                leader_epoch: Some(3),
                metadata: "checkpoint".into(),
                commit_timestamp_ms: 1_000,
                expire_timestamp_ms: None,
            },
        }
    }

    #[test]
    fn round_trips() {
        let (key, value) = record().encode();
        assert_eq!(OffsetRecord::decode(&key, &value), Some(record()));
        let mut no_epoch = record();
        no_epoch.offset.leader_epoch = None;
        let (key, value) = no_epoch.encode();
        assert_eq!(OffsetRecord::decode(&key, &value), Some(no_epoch));
        let mut expiring = record();
        expiring.offset.expire_timestamp_ms = Some(61_000);
        let (key, value) = expiring.encode();
        assert_eq!(OffsetRecord::decode(&key, &value), Some(expiring));
        assert_eq!(
            OffsetRecord::decode_key(&key),
            Some(("g-ü".into(), "orders".into(), 7))
        );
    }

    #[test]
    fn foreign_or_truncated_records_are_skipped() {
        let (key, value) = record().encode();
        for cut in 0..key.len() {
            assert_eq!(
                OffsetRecord::decode(&key[..cut], &value),
                None,
                "key cut at {cut}"
            );
        }
        for cut in 0..value.len() {
            assert_eq!(
                OffsetRecord::decode(&key, &value[..cut]),
                None,
                "value cut at {cut}"
            );
        }
        let mut other_version = key.to_vec();
        other_version[1] = 9;
        assert_eq!(OffsetRecord::decode(&other_version, &value), None);
    }
}
