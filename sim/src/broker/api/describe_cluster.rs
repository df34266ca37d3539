//! DescribeCluster (60): the cluster id, the brokers and a controller id, as a KRaft broker
//! answers it (`KafkaApis.handleDescribeCluster`, `AuthHelper.computeDescribeClusterResponse`).
//!
//! - The endpoint type must be BROKER (1): an unknown type is UNSUPPORTED_ENDPOINT_TYPE, the
//!   controller type MISMATCHED_ENDPOINT_TYPE (INVALID_REQUEST at v0), with Kafka's messages.
//! - Brokers are the live ones; with `include_fenced_brokers` (v2) the stopped ones too, marked
//!   fenced. The controller id is a live broker (Kafka: a random one; here the lowest, as in
//!   Metadata).
//! - Cluster authorized operations, when asked, are every cluster operation: the simulated
//!   broker has no authorizer, and Kafka without one allows all of them.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use crate::broker::dispatch::RequestCtx;

/// `EndpointType.BROKER`.
const BROKER_ENDPOINT: i8 = 1;
/// `EndpointType.CONTROLLER`.
const CONTROLLER_ENDPOINT: i8 = 2;

/// `AclEntry.supportedOperations(CLUSTER)` as a bit field of `AclOperation` codes: CREATE (5),
/// ALTER (7), DESCRIBE (8), CLUSTER_ACTION (9), DESCRIBE_CONFIGS (10), ALTER_CONFIGS (11),
/// IDEMPOTENT_WRITE (12).
const ALL_CLUSTER_OPERATIONS: i32 =
    (1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12);

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: DescribeClusterRequest,
) -> DescribeClusterResponse {
    let endpoint_error = |modern: ResponseError, message: String| {
        let error = if ctx.version == 0 {
            ResponseError::InvalidRequest
        } else {
            modern
        };
        DescribeClusterResponse::default()
            .with_error_code(error.code())
            .with_error_message(Some(StrBytes::from_string(message)))
    };
    match request.endpoint_type {
        BROKER_ENDPOINT => {}
        CONTROLLER_ENDPOINT => {
            return endpoint_error(
                ResponseError::MismatchedEndpointType,
                "The request was sent to an endpoint of type BROKER, but we wanted an endpoint \
                 of type CONTROLLER"
                    .to_owned(),
            )
        }
        other => {
            return endpoint_error(
                ResponseError::UnsupportedEndpointType,
                format!("Unsupported endpoint type {other}"),
            )
        }
    }
    let state = ctx.broker.controller.read();
    let brokers = state
        .brokers
        .values()
        .filter(|b| b.alive || request.include_fenced_brokers)
        .map(|b| {
            DescribeClusterBroker::default()
                .with_broker_id(BrokerId(b.node_id))
                .with_host(StrBytes::from_string(b.host.clone()))
                .with_port(i32::from(b.port))
                .with_rack(b.rack.clone().map(StrBytes::from_string))
                .with_is_fenced(!b.alive)
        })
        .collect();
    let controller_id = state.live_brokers().first().copied().unwrap_or(-1);
    DescribeClusterResponse::default()
        .with_endpoint_type(BROKER_ENDPOINT)
        .with_cluster_id(StrBytes::from_string(state.config.cluster_id.clone()))
        .with_controller_id(BrokerId(controller_id))
        .with_brokers(brokers)
        .with_cluster_authorized_operations(if request.include_cluster_authorized_operations {
            ALL_CLUSTER_OPERATIONS
        } else {
            i32::MIN
        })
}

/// `DescribeClusterRequest.getErrorResponse`.
pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    _request: &DescribeClusterRequest,
    code: i16,
) -> DescribeClusterResponse {
    DescribeClusterResponse::default().with_error_code(code)
}
