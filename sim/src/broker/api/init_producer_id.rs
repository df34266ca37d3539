//! InitProducerId (22) for idempotent producers: a fresh producer id at epoch 0, as Kafka's
//! `ProducerIdManager` hands out (KafkaApis answers it itself when there is no transactional
//! id). Kafka's Java producer enables idempotence by default, so without this API it cannot
//! produce at all.
//!
//! Transactional producers need the transaction coordinator, which the sim does not model:
//! a non-null transactional id is answered COORDINATOR_NOT_AVAILABLE (listed in FIDELITY.md).
//! Sequence numbers are not checked, so duplicates from producer retries are not removed.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::*;

use crate::broker::dispatch::RequestCtx;

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: InitProducerIdRequest,
) -> InitProducerIdResponse {
    if request.transactional_id.is_some() {
        return error_response(ctx, &request, ResponseError::CoordinatorNotAvailable.code());
    }
    let producer_id = ctx
        .broker
        .controller
        .update(|state| state.allocate_producer_id());
    InitProducerIdResponse::default()
        .with_producer_id(ProducerId(producer_id))
        .with_producer_epoch(0)
}

pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    _request: &InitProducerIdRequest,
    code: i16,
) -> InitProducerIdResponse {
    InitProducerIdResponse::default()
        .with_error_code(code)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1)
}
