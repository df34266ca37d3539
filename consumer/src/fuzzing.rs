//! Entry points for the fuzz crate (`fuzz/`), compiled only with the hidden `fuzzing` feature.
//!
//! The decoders a broker's bytes reach are crate-private; these thin wrappers let the fuzz
//! targets drive them exactly as the consumer does, without making them public API. Nothing
//! here adds behaviour: each function forwards to the code the consumer runs.

use bytes::Bytes;

use crate::config::IsolationLevel;
use crate::error::Error;
use crate::internals::completed_fetch::{AbortedTransaction, CompletedFetch, PartitionFetchInfo};
use crate::records::{Compression, DecompressionBuffer, SnappyFraming};
use crate::types::{ConsumerRecord, TopicPartition};

/// Why [`decompress`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecompressFailure {
    /// The codec rejected the input.
    Codec(String),
    /// The output would have passed the cap.
    TooLarge,
}

impl From<crate::records::compression::DecompressError> for DecompressFailure {
    fn from(error: crate::records::compression::DecompressError) -> Self {
        match error {
            crate::records::compression::DecompressError::Codec(message) => Self::Codec(message),
            crate::records::compression::DecompressError::TooLarge => Self::TooLarge,
        }
    }
}

/// The batch reader's decompression of a records section with `codec`, capped at `max_bytes`.
pub fn decompress(
    codec: Compression,
    input: &[u8],
    max_bytes: usize,
) -> Result<Bytes, DecompressFailure> {
    let mut buffer = DecompressionBuffer::new();
    Ok(crate::records::compression::decompress(
        codec,
        input,
        max_bytes,
        &mut buffer,
    )?)
}

/// The LZ4 frame reader alone, capped at `max_bytes`.
pub fn decompress_lz4_frame(input: &[u8], max_bytes: usize) -> Result<Bytes, DecompressFailure> {
    let mut buffer = DecompressionBuffer::new();
    Ok(crate::records::lz4_frame::decompress(
        input,
        max_bytes,
        &mut buffer,
    )?)
}

/// The batch writer's compression (snappy with the xerial framing Java writes).
pub fn compress(codec: Compression, input: &[u8]) -> std::io::Result<Vec<u8>> {
    crate::records::compression::compress(codec, SnappyFraming::Xerial, input)
}

/// An aborted transaction as a Fetch response lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aborted {
    /// The producer whose transaction was aborted.
    pub producer_id: i64,
    /// The first offset of that transaction.
    pub first_offset: i64,
}

/// One partition's data of a Fetch response as the consumer's application side reads it
/// (the internal `CompletedFetch`): batches, decompression, control records and, under
/// `read_committed`, the aborted-transaction filter.
pub struct PartitionFetch {
    inner: CompletedFetch,
    decompression: DecompressionBuffer,
}

impl PartitionFetch {
    /// Wraps `records` of `topic`-`partition` fetched at `fetch_offset`.
    pub fn new(
        topic: &str,
        partition: i32,
        fetch_offset: i64,
        records: Bytes,
        aborted: &[Aborted],
        isolation_level: IsolationLevel,
        check_crcs: bool,
    ) -> Self {
        let aborted: Vec<AbortedTransaction> = aborted
            .iter()
            .map(|a| AbortedTransaction {
                producer_id: a.producer_id,
                first_offset: a.first_offset,
            })
            .collect();
        let inner = CompletedFetch::new(
            TopicPartition::new(topic, partition),
            0,
            fetch_offset,
            PartitionFetchInfo {
                high_watermark: -1,
                last_stable_offset: -1,
                log_start_offset: -1,
            },
            records,
            &aborted,
            isolation_level,
            check_crcs,
        );
        Self {
            inner,
            decompression: DecompressionBuffer::new(),
        }
    }

    /// Up to `max_records` records, as `poll` takes them.
    pub fn fetch_records(&mut self, max_records: usize) -> Result<Vec<ConsumerRecord>, Error> {
        self.inner
            .fetch_records(max_records, &mut self.decompression)
    }

    /// The position after what was returned.
    pub fn next_fetch_offset(&self) -> i64 {
        self.inner.next_fetch_offset()
    }

    /// Whether everything has been returned.
    pub fn is_exhausted(&self) -> bool {
        self.inner.is_exhausted()
    }
}

/// Reads a zig-zag varint at `*pos` (`None`: truncated or overlong).
pub fn read_varint(buf: &[u8], pos: &mut usize) -> Option<i32> {
    crate::records::varint::read_varint(buf, pos).ok()
}

/// Reads a zig-zag varlong at `*pos` (`None`: truncated or overlong).
pub fn read_varlong(buf: &[u8], pos: &mut usize) -> Option<i64> {
    crate::records::varint::read_varlong(buf, pos).ok()
}

/// Appends `value` as a zig-zag varint.
pub fn write_varint(out: &mut Vec<u8>, value: i32) {
    crate::records::varint::write_varint(out, value);
}

/// Appends `value` as a zig-zag varlong.
pub fn write_varlong(out: &mut Vec<u8>, value: i64) {
    crate::records::varint::write_varlong(out, value);
}

/// The client side of one SASL exchange (PLAIN, SCRAM or OAUTHBEARER) with a fixed seed, so a
/// SCRAM client nonce is the same on every run and a fuzzer can echo it.
pub struct SaslExchange {
    client: Box<dyn crate::network::sasl::SaslClient>,
}

impl SaslExchange {
    /// The state machine the consumer would run for `config`.
    pub fn new(
        config: &crate::network::sasl::SaslConfig,
    ) -> Result<Self, crate::network::sasl::SaslError> {
        let mut rng = crate::rt::SeededRng::seed_from_u64(0);
        Ok(Self {
            client: crate::network::sasl::client_for(config, &mut rng)?,
        })
    }

    /// The first message, sent in the first SaslAuthenticate.
    pub fn initial_response(&mut self) -> Result<Vec<u8>, crate::network::sasl::SaslError> {
        Ok(self.client.initial_response()?.to_vec())
    }

    /// The next message for the server's `challenge`, `None` once authenticated.
    pub fn evaluate(
        &mut self,
        challenge: &[u8],
    ) -> Result<Option<Vec<u8>>, crate::network::sasl::SaslError> {
        Ok(self.client.evaluate(challenge)?.map(|m| m.to_vec()))
    }
}
