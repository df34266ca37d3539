//! Control records: the transaction markers a `read_committed` consumer filters by.
//!
//! A control batch holds one record whose key is `version i16, type i16` (Java's
//! `ControlRecordType`) and, for transaction markers, whose value is `version i16,
//! coordinatorEpoch i32` (`EndTransactionMarker`). Other types (KRaft's leader change, snapshot
//! and voter records) only appear in the metadata log; they are surfaced as
//! [`ControlRecord::Other`] so a consumer can skip them as Java does.

/// Key and value versions this layer writes (the current ones in Kafka 4.x).
const CURRENT_VERSION: i16 = 0;
const TYPE_ABORT: i16 = 0;
const TYPE_COMMIT: i16 = 1;
/// Key: version i16 + type i16.
const KEY_BYTES: usize = 4;
/// Value of a transaction marker: version i16 + coordinatorEpoch i32.
const END_TXN_VALUE_BYTES: usize = 6;

/// A decoded control record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlRecord {
    /// The producer's transaction up to this marker was aborted.
    Abort {
        /// Epoch of the transaction coordinator that wrote the marker.
        coordinator_epoch: i32,
    },
    /// The producer's transaction up to this marker was committed.
    Commit {
        /// Epoch of the transaction coordinator that wrote the marker.
        coordinator_epoch: i32,
    },
    /// Any other control type (KRaft records); the value is not interpreted.
    Other {
        /// The type id from the key.
        type_id: i16,
    },
}

impl ControlRecord {
    /// Decodes a control record's key and value, with Java's checks: key at least 4 bytes with
    /// a non-negative version; for markers, a value of at least 6 bytes with a non-negative
    /// version. Newer versions are accepted and their extra bytes ignored, as Java does.
    pub fn decode(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<Self, String> {
        let key = key.ok_or("control record has a null key")?;
        let (version, type_id) = match key {
            [v0, v1, t0, t1, ..] => (
                i16::from_be_bytes([*v0, *v1]),
                i16::from_be_bytes([*t0, *t1]),
            ),
            _ => {
                return Err(format!(
                    "control record key has {} bytes, needs at least {KEY_BYTES}",
                    key.len()
                ))
            }
        };
        if version < 0 {
            return Err(format!("invalid control record key version {version}"));
        }
        if type_id != TYPE_ABORT && type_id != TYPE_COMMIT {
            return Ok(Self::Other { type_id });
        }
        let value = value.ok_or("transaction marker has a null value")?;
        let (version, coordinator_epoch) = match value {
            [v0, v1, e0, e1, e2, e3, ..] => (
                i16::from_be_bytes([*v0, *v1]),
                i32::from_be_bytes([*e0, *e1, *e2, *e3]),
            ),
            _ => {
                return Err(format!(
                    "transaction marker value has {} bytes, needs at least {END_TXN_VALUE_BYTES}",
                    value.len()
                ))
            }
        };
        if version < 0 {
            return Err(format!("invalid transaction marker version {version}"));
        }
        Ok(if type_id == TYPE_ABORT {
            Self::Abort { coordinator_epoch }
        } else {
            Self::Commit { coordinator_epoch }
        })
    }

    /// The record key as written by the current Kafka version.
    pub(crate) fn encode_key(&self) -> [u8; KEY_BYTES] {
        let type_id = match *self {
            Self::Abort { .. } => TYPE_ABORT,
            Self::Commit { .. } => TYPE_COMMIT,
            Self::Other { type_id } => type_id,
        };
        let mut key = [0; KEY_BYTES];
        key[..2].copy_from_slice(&CURRENT_VERSION.to_be_bytes());
        key[2..].copy_from_slice(&type_id.to_be_bytes());
        key
    }

    /// The record value: the marker for abort/commit; `None` (null) for other types, whose
    /// payloads this layer does not model.
    pub(crate) fn encode_value(&self) -> Option<[u8; END_TXN_VALUE_BYTES]> {
        let coordinator_epoch = match *self {
            Self::Abort { coordinator_epoch } | Self::Commit { coordinator_epoch } => {
                coordinator_epoch
            }
            Self::Other { .. } => return None,
        };
        let mut value = [0; END_TXN_VALUE_BYTES];
        value[..2].copy_from_slice(&CURRENT_VERSION.to_be_bytes());
        value[2..].copy_from_slice(&coordinator_epoch.to_be_bytes());
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_round_trip() {
        for record in [
            ControlRecord::Abort {
                coordinator_epoch: 7,
            },
            ControlRecord::Commit {
                coordinator_epoch: -1,
            },
            ControlRecord::Other { type_id: 3 },
        ] {
            let key = record.encode_key();
            let value = record.encode_value();
            assert_eq!(
                ControlRecord::decode(Some(&key), value.as_ref().map(|v| &v[..])),
                Ok(record)
            );
        }
    }

    #[test]
    fn decodes_java_bytes_and_tolerates_newer_versions() {
        // COMMIT, key version 0; value version 0, coordinator epoch 5.
        assert_eq!(
            ControlRecord::decode(Some(&[0, 0, 0, 1]), Some(&[0, 0, 0, 0, 0, 5])),
            Ok(ControlRecord::Commit {
                coordinator_epoch: 5
            })
        );
        // A future value version with trailing fields still yields the epoch.
        assert_eq!(
            ControlRecord::decode(Some(&[0, 1, 0, 0, 9]), Some(&[0, 1, 0, 0, 1, 0, 0xaa])),
            Ok(ControlRecord::Abort {
                coordinator_epoch: 256
            })
        );
    }

    #[test]
    fn malformed_control_records_are_errors() {
        assert!(ControlRecord::decode(None, None).is_err());
        assert!(ControlRecord::decode(Some(&[0, 0, 0]), None).is_err());
        assert!(
            ControlRecord::decode(Some(&[0xff, 0xff, 0, 0]), Some(&[0, 0, 0, 0, 0, 0])).is_err()
        );
        assert!(ControlRecord::decode(Some(&[0, 0, 0, 0]), None).is_err());
        assert!(ControlRecord::decode(Some(&[0, 0, 0, 1]), Some(&[0, 0, 0, 0, 0])).is_err());
        assert!(ControlRecord::decode(Some(&[0, 0, 0, 1]), Some(&[0x80, 0, 0, 0, 0, 0])).is_err());
    }
}
