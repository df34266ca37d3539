//! From a request frame to a response frame: header, version check, fault decisions, the API
//! handler, encoding. Like Kafka's `KafkaApis.handle`, plus the fault hooks.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_consumer::rt::Duration;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable};

use super::api;
use super::Broker;
use crate::fault::{Decision, ResponseToRewrite};

/// Who is on the other end of a connection.
pub(crate) struct ClientInfo {
    /// Kafka's `clientHost` form, `/10.0.2.1`.
    pub host: String,
    /// This connection's id ([`crate::controller::Controller::next_connection_id`]).
    pub connection_id: u64,
}

/// What the connection does next.
pub(super) enum Outcome {
    /// Write this frame (length prefix included) and flush.
    Respond(Bytes),
    /// Nothing to send (Produce with acks=0).
    NoResponse,
    /// Close the connection (unsupported API or version, malformed request, lost response).
    Close,
}

/// The request being served, for the handlers.
pub(crate) struct RequestCtx<'a> {
    pub broker: &'a Broker,
    pub version: i16,
    pub header: RequestHeader,
    pub client: &'a ClientInfo,
}

/// Decodes the request body, runs the handler (or builds the injected error response) and
/// encodes the response body; `None` closes the connection.
macro_rules! serve {
    ($module:ident, $request:ty, $ctx:expr, $body:expr, $error:expr) => {{
        match <$request as Decodable>::decode(&mut $body, $ctx.version) {
            Err(_) => None,
            Ok(request) => {
                let response = match $error {
                    Some(code) => api::$module::error_response(&$ctx, &request, code),
                    None => api::$module::handle(&$ctx, request).await,
                };
                encode_body(&response, $ctx.version)
            }
        }
    }};
}

/// Serves one request; with `forced_error` set, that error is answered instead of handling it
/// (the SASL authenticator's ILLEGAL_SASL_STATE for a request sent mid-authentication).
pub(super) async fn handle(
    broker: &Broker,
    frame: Bytes,
    client: &ClientInfo,
    forced_error: Option<i16>,
) -> Outcome {
    let Some(&[k0, k1, v0, v1, c0, c1, c2, c3]) = frame.get(..8) else {
        return Outcome::Close;
    };
    let api_key = i16::from_be_bytes([k0, k1]);
    let version = i16::from_be_bytes([v0, v1]);
    let correlation_id = i32::from_be_bytes([c0, c1, c2, c3]);
    let Ok(api) = ApiKey::try_from(api_key) else {
        return Outcome::Close;
    };
    let Some(range) = api::api_versions::supported_range(broker, api) else {
        return Outcome::Close;
    };
    if version < range.min || version > range.max {
        // Kafka answers a too-new ApiVersions with its ranges (v0 body) so the client can
        // retry at a version both support; any other unsupported version closes.
        if api == ApiKey::ApiVersions {
            let body = api::api_versions::unsupported_version_response(broker);
            return match encode_body(&body, 0) {
                Some(body) => Outcome::Respond(frame_response(correlation_id, 0, &body)),
                None => Outcome::Close,
            };
        }
        return Outcome::Close;
    }
    let mut body = frame.clone();
    let Ok(header) = RequestHeader::decode(&mut body, api.request_header_version(version)) else {
        return Outcome::Close;
    };
    let decision = match forced_error {
        Some(code) => Decision {
            error: Some(code),
            ..Decision::default()
        },
        None => broker.faults.decide(broker.node_id, api_key),
    };
    let ctx = RequestCtx {
        broker,
        version,
        header,
        client,
    };
    let error = decision.error;
    let response = match api {
        ApiKey::Produce => {
            let Ok(request) = ProduceRequest::decode(&mut body, version) else {
                return Outcome::Close;
            };
            let acks = request.acks;
            let response = match error {
                Some(code) => api::produce::error_response(&ctx, &request, code),
                None => api::produce::handle(&ctx, request).await,
            };
            if acks == 0 {
                // Kafka sends nothing for acks=0; an error closes the connection instead.
                return if api::produce::has_error(&response) {
                    Outcome::Close
                } else {
                    Outcome::NoResponse
                };
            }
            encode_body(&response, version)
        }
        ApiKey::Fetch => serve!(fetch, FetchRequest, ctx, body, error),
        ApiKey::ListOffsets => serve!(list_offsets, ListOffsetsRequest, ctx, body, error),
        ApiKey::Metadata => serve!(metadata, MetadataRequest, ctx, body, error),
        ApiKey::OffsetForLeaderEpoch => {
            serve!(
                offset_for_leader_epoch,
                OffsetForLeaderEpochRequest,
                ctx,
                body,
                error
            )
        }
        ApiKey::FindCoordinator => {
            serve!(find_coordinator, FindCoordinatorRequest, ctx, body, error)
        }
        ApiKey::ApiVersions => serve!(api_versions, ApiVersionsRequest, ctx, body, error),
        ApiKey::CreateTopics => serve!(create_topics, CreateTopicsRequest, ctx, body, error),
        ApiKey::InitProducerId => {
            serve!(init_producer_id, InitProducerIdRequest, ctx, body, error)
        }
        ApiKey::DeleteTopics => serve!(delete_topics, DeleteTopicsRequest, ctx, body, error),
        ApiKey::CreatePartitions => {
            serve!(create_partitions, CreatePartitionsRequest, ctx, body, error)
        }
        ApiKey::JoinGroup => serve!(join_group, JoinGroupRequest, ctx, body, error),
        ApiKey::SyncGroup => serve!(sync_group, SyncGroupRequest, ctx, body, error),
        ApiKey::Heartbeat => serve!(heartbeat, HeartbeatRequest, ctx, body, error),
        ApiKey::LeaveGroup => serve!(leave_group, LeaveGroupRequest, ctx, body, error),
        ApiKey::OffsetCommit => serve!(offset_commit, OffsetCommitRequest, ctx, body, error),
        ApiKey::OffsetFetch => serve!(offset_fetch, OffsetFetchRequest, ctx, body, error),
        ApiKey::DescribeGroups => serve!(describe_groups, DescribeGroupsRequest, ctx, body, error),
        ApiKey::ListGroups => serve!(list_groups, ListGroupsRequest, ctx, body, error),
        ApiKey::DeleteGroups => serve!(delete_groups, DeleteGroupsRequest, ctx, body, error),
        ApiKey::OffsetDelete => serve!(offset_delete, OffsetDeleteRequest, ctx, body, error),
        ApiKey::DeleteRecords => serve!(delete_records, DeleteRecordsRequest, ctx, body, error),
        ApiKey::DescribeConfigs => {
            serve!(describe_configs, DescribeConfigsRequest, ctx, body, error)
        }
        ApiKey::AlterConfigs => serve!(alter_configs, AlterConfigsRequest, ctx, body, error),
        ApiKey::IncrementalAlterConfigs => serve!(
            incremental_alter_configs,
            IncrementalAlterConfigsRequest,
            ctx,
            body,
            error
        ),
        ApiKey::DescribeCluster => {
            serve!(describe_cluster, DescribeClusterRequest, ctx, body, error)
        }
        ApiKey::ConsumerGroupHeartbeat => serve!(
            consumer_group_heartbeat,
            ConsumerGroupHeartbeatRequest,
            ctx,
            body,
            error
        ),
        ApiKey::ConsumerGroupDescribe => serve!(
            consumer_group_describe,
            ConsumerGroupDescribeRequest,
            ctx,
            body,
            error
        ),
        ApiKey::SaslHandshake => serve!(sasl_handshake, SaslHandshakeRequest, ctx, body, error),
        ApiKey::SaslAuthenticate => {
            serve!(sasl_authenticate, SaslAuthenticateRequest, ctx, body, error)
        }
        _ => None,
    };
    let Some(mut response) = response else {
        return Outcome::Close;
    };
    if let Some(lie) = broker.faults.rewrite(ResponseToRewrite {
        broker: broker.node_id,
        api_key,
        version,
        body: &response,
    }) {
        response = lie;
    }
    let mut frame = frame_response(
        correlation_id,
        api.response_header_version(version),
        &response,
    );
    if decision.hold_ms > 0 {
        tokio::time::sleep(Duration::from_millis(decision.hold_ms)).await;
    }
    if decision.lose {
        return Outcome::Close;
    }
    if decision.malform {
        frame = malform(frame);
    }
    Outcome::Respond(frame)
}

/// A response body encoded at `version`; `None` (close) if a field does not exist there —
/// a handler bug, logged loudly.
pub(crate) fn encode_body<M: Encodable>(message: &M, version: i16) -> Option<Bytes> {
    let mut out = BytesMut::new();
    match message.encode(&mut out, version) {
        Ok(()) => Some(out.freeze()),
        Err(error) => {
            tracing::error!(%error, version, "cannot encode response");
            None
        }
    }
}

pub(crate) fn frame_response(correlation_id: i32, header_version: i16, body: &[u8]) -> Bytes {
    let mut header = BytesMut::new();
    let encoded = ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut header, header_version);
    debug_assert!(encoded.is_ok(), "a response header always encodes");
    let mut out = BytesMut::with_capacity(4 + header.len() + body.len());
    out.put_i32((header.len() + body.len()) as i32);
    out.put_slice(&header);
    out.put_slice(body);
    out.freeze()
}

/// Keeps the correlation id (so the client matches the frame to its request) and replaces
/// the rest with a single 0xFF byte: too short for any response header and body, and an
/// unterminated varint where a flexible header's tagged fields begin.
fn malform(frame: Bytes) -> Bytes {
    let mut out = BytesMut::with_capacity(9);
    out.put_i32(5);
    out.put_slice(frame.get(4..8).unwrap_or(&[0; 4]));
    out.put_u8(0xFF);
    out.freeze()
}
