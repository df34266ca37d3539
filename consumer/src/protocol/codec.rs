//! Request encoding and response decoding for any `kafka-protocol` message at a given version.
//!
//! A request frame is `length | request header | body`; the header version depends on the API
//! and its version (`R::header_version`), and so does the response header's (ApiVersions
//! responses always use header v0 so a client can read them before it knows anything). Every
//! `kafka-protocol` failure (an `anyhow` error) becomes a [`ProtocolError`] naming the API and
//! version.

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiVersionsRequest, ApiVersionsResponse, RequestHeader, ResponseHeader,
};
use kafka_protocol::protocol::buf::ByteBufMut;
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use zeroize::Zeroizing;

use super::frame::LENGTH_PREFIX_BYTES;
use super::{Api, ProtocolError};

/// Encodes `request` at `version` as one complete frame, length prefix included.
pub fn encode_request<R: Request>(
    request: &R,
    version: i16,
    correlation_id: i32,
    client_id: Option<&StrBytes>,
) -> Result<Bytes, ProtocolError> {
    let mut frame = BytesMut::new();
    encode_frame_into(&mut frame, request, version, correlation_id, client_id)?;
    Ok(frame.freeze())
}

/// [`encode_request`] for a request that carries a secret (SaslAuthenticate's password or
/// token): the frame is written into one allocation of exactly its size, so no reallocation
/// leaves a copy behind, and that allocation is zeroized when the last `Bytes` handle to it
/// drops.
pub fn encode_secret_request<R: Request>(
    request: &R,
    version: i16,
    correlation_id: i32,
    client_id: Option<&StrBytes>,
) -> Result<Bytes, ProtocolError> {
    let (header, api) = request_header::<R>(version, correlation_id, client_id);
    let size_error = |message: String| ProtocolError::Encode {
        api,
        version,
        message,
    };
    let header_bytes = header
        .compute_size(R::header_version(version))
        .map_err(|e| size_error(format!("header: {e:#}")))?;
    let body_bytes = request
        .compute_size(version)
        .map_err(|e| size_error(format!("{e:#}")))?;
    let frame_bytes = LENGTH_PREFIX_BYTES + header_bytes + body_bytes;
    let mut frame = Zeroizing::new(Vec::with_capacity(frame_bytes));
    encode_frame_into(&mut *frame, request, version, correlation_id, client_id)?;
    debug_assert_eq!(frame.capacity(), frame_bytes, "the frame was reallocated");
    Ok(Bytes::from_owner(frame))
}

/// The request header for `R` at `version`, and the API for error messages.
fn request_header<R: Request>(
    version: i16,
    correlation_id: i32,
    client_id: Option<&StrBytes>,
) -> (RequestHeader, Api) {
    let header = RequestHeader::default()
        .with_request_api_key(R::KEY)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(client_id.cloned());
    (header, Api(R::KEY))
}

/// Appends `length | header | body` to `frame` (empty on entry).
fn encode_frame_into<R: Request, B: ByteBufMut + std::ops::DerefMut<Target = [u8]>>(
    frame: &mut B,
    request: &R,
    version: i16,
    correlation_id: i32,
    client_id: Option<&StrBytes>,
) -> Result<(), ProtocolError> {
    let (header, api) = request_header::<R>(version, correlation_id, client_id);
    let encode_error = |message: String| ProtocolError::Encode {
        api,
        version,
        message,
    };
    frame.put_i32(0); // patched below, once the size is known
    header
        .encode(frame, R::header_version(version))
        .map_err(|e| encode_error(format!("header: {e:#}")))?;
    request
        .encode(frame, version)
        .map_err(|e| encode_error(format!("{e:#}")))?;
    let size_bytes = i32::try_from(frame.len() - LENGTH_PREFIX_BYTES)
        .map_err(|_| encode_error(format!("{} bytes do not fit a frame", frame.len())))?;
    frame[..LENGTH_PREFIX_BYTES].copy_from_slice(&size_bytes.to_be_bytes());
    Ok(())
}

/// The correlation id of a response frame (every response header version starts with it).
pub fn peek_correlation_id(frame: &[u8]) -> Result<i32, ProtocolError> {
    match frame.get(..4) {
        Some(&[a, b, c, d]) => Ok(i32::from_be_bytes([a, b, c, d])),
        _ => Err(ProtocolError::ShortResponseHeader {
            frame_bytes: frame.len(),
        }),
    }
}

/// Decodes a response frame (without its length prefix) to a request sent as `R` at `version`.
pub fn decode_response<R: Request>(
    mut frame: Bytes,
    version: i16,
) -> Result<R::Response, ProtocolError> {
    let decode_error = |message: String| ProtocolError::Decode {
        api: Api(R::KEY),
        version,
        message,
    };
    let header_version = <R::Response as HeaderVersion>::header_version(version);
    ResponseHeader::decode(&mut frame, header_version)
        .map_err(|e| decode_error(format!("header v{header_version}: {e:#}")))?;
    <R::Response as Decodable>::decode(&mut frame, version)
        .map_err(|e| decode_error(format!("{e:#}")))
}

/// Decodes an ApiVersions response to a request sent at `version`, with Kafka's fallback: a broker
/// that does not support `version` answers with a v0 body (error UNSUPPORTED_VERSION and its own
/// ranges), so a body that does not parse cleanly at `version` is re-read at v0.
///
/// Returns the response and the version its body was read at.
pub fn decode_api_versions_response(
    frame: Bytes,
    version: i16,
) -> Result<(ApiVersionsResponse, i16), ProtocolError> {
    // A clean parse consumes the whole frame; leftovers mean a v0 body was read as a newer one.
    if version == 0 || exact_parse::<ApiVersionsRequest>(&frame, version) {
        return decode_response::<ApiVersionsRequest>(frame, version).map(|r| (r, version));
    }
    match decode_response::<ApiVersionsRequest>(frame.clone(), 0) {
        Ok(response) => Ok((response, 0)),
        // Neither parses: report the failure at the version we actually asked for.
        Err(_) => decode_response::<ApiVersionsRequest>(frame, version).map(|r| (r, version)),
    }
}

/// Whether decoding `frame` as `R`'s response at `version` consumes it exactly.
fn exact_parse<R: Request>(frame: &Bytes, version: i16) -> bool {
    let mut rest = frame.clone();
    let header_version = <R::Response as HeaderVersion>::header_version(version);
    ResponseHeader::decode(&mut rest, header_version).is_ok()
        && <R::Response as Decodable>::decode(&mut rest, version).is_ok()
        && !rest.has_remaining()
}

#[cfg(test)]
mod tests {
    use bytes::BufMut;
    use kafka_protocol::messages::api_versions_response::ApiVersion;
    use kafka_protocol::messages::{MetadataRequest, MetadataResponse};

    use super::*;

    /// Encodes a response frame body (header + body, no length prefix), as a broker would.
    fn response_frame<R: Request>(
        response: &R::Response,
        version: i16,
        correlation_id: i32,
    ) -> Bytes {
        let mut buf = BytesMut::new();
        ResponseHeader::default()
            .with_correlation_id(correlation_id)
            .encode(
                &mut buf,
                <R::Response as HeaderVersion>::header_version(version),
            )
            .unwrap();
        response.encode(&mut buf, version).unwrap();
        buf.freeze()
    }

    /// A length or element count larger than the bytes left in the frame is a decode error
    /// naming it, refused before anything is allocated for it (the vendored kafka-protocol's
    /// patch, third_party/kafka-protocol/PATCHED.md; Kafka's readers do the same). Before the
    /// patch, the first frame below made the decoder reserve `i32::MAX` brokers (171 GB): the
    /// allocation failed and the process aborted.
    #[test]
    fn lengths_and_counts_beyond_the_frame_are_refused_before_allocating() {
        let refused = |frame: Vec<u8>, version: i16, expected: &str| {
            let error =
                decode_response::<MetadataRequest>(Bytes::from(frame), version).unwrap_err();
            assert!(
                error.to_string().contains(expected),
                "v{version}: {error} does not contain {expected:?}"
            );
        };
        let correlation_id = 9i32.to_be_bytes();
        // v1 (header v0): the brokers array declares i32::MAX elements.
        let mut frame = correlation_id.to_vec();
        frame.extend_from_slice(&i32::MAX.to_be_bytes());
        refused(
            frame,
            1,
            "Array length 2147483647 is larger than the 0 bytes remaining",
        );
        // v12 (flexible, header v1): a compact brokers array of u32::MAX - 1 elements.
        let mut frame = correlation_id.to_vec();
        frame.push(0); // no tagged fields in the header
        frame.extend_from_slice(&0i32.to_be_bytes()); // throttle_time_ms
        frame.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        refused(
            frame,
            12,
            "CompactArray length 4294967294 is larger than the 0 bytes remaining",
        );
    }

    /// The zeroizing encoder writes the same bytes as the ordinary one, into one allocation
    /// of exactly the frame's size (a reallocation would leave a copy of the secret behind).
    #[test]
    fn secret_frames_are_the_same_bytes_in_one_exact_allocation() {
        use kafka_protocol::messages::SaslAuthenticateRequest;
        let client_id = StrBytes::from_static_str("app");
        for version in 0..=2 {
            for auth_bytes in [&b""[..], b"\0alice\0s3cret", &[7u8; 300][..]] {
                let request = SaslAuthenticateRequest::default()
                    .with_auth_bytes(Bytes::copy_from_slice(auth_bytes));
                let plain = encode_request(&request, version, 5, Some(&client_id)).unwrap();
                let secret = encode_secret_request(&request, version, 5, Some(&client_id)).unwrap();
                assert_eq!(plain, secret, "v{version}, {} auth bytes", auth_bytes.len());
            }
        }
    }

    #[test]
    fn request_frame_has_length_prefix_and_header_fields() {
        let client_id = StrBytes::from_static_str("test-client");
        let frame = encode_request(&MetadataRequest::default(), 12, 77, Some(&client_id)).unwrap();
        let mut buf = frame.clone();
        assert_eq!(buf.get_i32() as usize, frame.len() - 4);
        let header = RequestHeader::decode(&mut buf, MetadataRequest::header_version(12)).unwrap();
        assert_eq!(header.request_api_key, 3);
        assert_eq!(header.request_api_version, 12);
        assert_eq!(header.correlation_id, 77);
        assert_eq!(header.client_id, Some(client_id));
        let body = MetadataRequest::decode(&mut buf, 12).unwrap();
        assert_eq!(body, MetadataRequest::default());
    }

    #[test]
    fn encoding_at_a_version_the_message_lacks_names_api_and_version() {
        let err = encode_request(&MetadataRequest::default(), 99, 1, None).unwrap_err();
        assert!(
            matches!(
                err,
                ProtocolError::Encode {
                    api: Api(3),
                    version: 99,
                    ..
                }
            ),
            "{err}"
        );
        assert!(
            err.to_string()
                .starts_with("cannot encode Metadata v99 request"),
            "{err}"
        );
    }

    /// ShareFetch and ShareAcknowledge v2 (KIP-1206 `ShareAcquireMode`, KIP-1222 `IsRenewAck`
    /// and `AcquisitionLockTimeoutMs`), added to the vendored kafka-protocol from Kafka 4.4's
    /// schemas (third_party/kafka-protocol/PATCHED.md): the new fields sit where the schema puts
    /// them, round-trip at v2, and a Renew acknowledgement cannot be sent to a v1 broker.
    #[test]
    fn share_v2_fields_sit_where_kafka_puts_them_and_renew_needs_v2() {
        use kafka_protocol::messages::{
            ShareAcknowledgeRequest, ShareAcknowledgeResponse, ShareFetchRequest,
        };
        use kafka_protocol::protocol::{Decodable, Encodable};

        let fetch = ShareFetchRequest::default()
            .with_batch_size(0x0102_0304)
            .with_share_acquire_mode(1)
            .with_is_renew_ack(true);
        let mut v2 = BytesMut::new();
        fetch.encode(&mut v2, 2).unwrap();
        let mut v1 = BytesMut::new();
        let fetch_v1 = fetch.clone().with_is_renew_ack(false);
        fetch_v1.encode(&mut v1, 1).unwrap();
        assert_eq!(
            v2.len(),
            v1.len() + 2,
            "ShareAcquireMode (int8) + IsRenewAck (bool)"
        );
        let after_batch_size = v2
            .windows(4)
            .position(|w| w == [1, 2, 3, 4])
            .expect("batch size in the frame")
            + 4;
        assert_eq!(&v2[after_batch_size..after_batch_size + 2], &[1, 1]);
        assert_eq!(
            ShareFetchRequest::decode(&mut v2.freeze(), 2).unwrap(),
            fetch
        );
        // v1 has neither field: ShareAcquireMode is ignorable (dropped), IsRenewAck is not.
        let decoded_v1 = ShareFetchRequest::decode(&mut v1.freeze(), 1).unwrap();
        assert_eq!(
            (decoded_v1.share_acquire_mode, decoded_v1.is_renew_ack),
            (0, false)
        );
        assert!(fetch.encode(&mut BytesMut::new(), 1).is_err());

        let ack = ShareAcknowledgeRequest::default()
            .with_share_session_epoch(7)
            .with_is_renew_ack(true);
        let mut buf = BytesMut::new();
        ack.encode(&mut buf, 2).unwrap();
        assert_eq!(
            ShareAcknowledgeRequest::decode(&mut buf.freeze(), 2).unwrap(),
            ack
        );
        assert!(ack.encode(&mut BytesMut::new(), 1).is_err());
        assert!(ack.encode(&mut BytesMut::new(), 3).is_err());

        let response = ShareAcknowledgeResponse::default().with_acquisition_lock_timeout_ms(30_000);
        let mut buf = BytesMut::new();
        response.encode(&mut buf, 2).unwrap();
        assert_eq!(
            ShareAcknowledgeResponse::decode(&mut buf.freeze(), 2).unwrap(),
            response
        );
        let mut buf = BytesMut::new();
        response.encode(&mut buf, 1).unwrap();
        let at_v1 = ShareAcknowledgeResponse::decode(&mut buf.freeze(), 1).unwrap();
        assert_eq!(at_v1.acquisition_lock_timeout_ms, 0, "absent before v2");
    }

    #[test]
    fn response_round_trip_and_correlation_peek() {
        let response = MetadataResponse::default().with_controller_id(3.into());
        let frame = response_frame::<MetadataRequest>(&response, 12, 41);
        assert_eq!(peek_correlation_id(&frame), Ok(41));
        let decoded = decode_response::<MetadataRequest>(frame, 12).unwrap();
        assert_eq!(decoded, response);
    }

    #[test]
    fn garbage_body_is_a_decode_error_naming_api_and_version() {
        let mut buf = BytesMut::new();
        buf.put_i32(5); // correlation id
        buf.put_slice(&[0xff; 3]);
        let err = decode_response::<MetadataRequest>(buf.freeze(), 12).unwrap_err();
        assert!(matches!(
            err,
            ProtocolError::Decode {
                api: Api(3),
                version: 12,
                ..
            }
        ));
        assert!(err.to_string().contains("Metadata v12"), "{err}");
    }

    #[test]
    fn short_header_is_a_typed_error() {
        assert_eq!(
            peek_correlation_id(&[0, 1]),
            Err(ProtocolError::ShortResponseHeader { frame_bytes: 2 })
        );
    }

    #[test]
    fn api_versions_falls_back_to_a_v0_body() {
        let v0 = ApiVersionsResponse::default()
            .with_error_code(35)
            .with_api_keys(vec![ApiVersion::default()
                .with_api_key(18)
                .with_min_version(0)
                .with_max_version(2)]);
        let frame = response_frame::<ApiVersionsRequest>(&v0, 0, 1);
        let (decoded, read_at) = decode_api_versions_response(frame, 4).unwrap();
        assert_eq!(read_at, 0);
        assert_eq!(decoded, v0);

        let v3 = v0.clone().with_error_code(0);
        let frame = response_frame::<ApiVersionsRequest>(&v3, 3, 1);
        let (decoded, read_at) = decode_api_versions_response(frame, 3).unwrap();
        assert_eq!((decoded, read_at), (v3, 3));
    }
}
