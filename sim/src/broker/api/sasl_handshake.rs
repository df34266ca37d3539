//! SaslHandshake (17) as `KafkaApis` answers it: only on a connection that is already
//! authenticated (or on a PLAINTEXT listener), where it is ILLEGAL_SASL_STATE. Handshakes that
//! start an authentication are the [`Authenticator`](crate::sasl::authenticator)'s.

use kafka_protocol::messages::{SaslHandshakeRequest, SaslHandshakeResponse};

use crate::broker::dispatch::RequestCtx;
use crate::sasl::authenticator::ILLEGAL_SASL_STATE;

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: SaslHandshakeRequest,
) -> SaslHandshakeResponse {
    error_response(ctx, &request, ILLEGAL_SASL_STATE)
}

pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    _request: &SaslHandshakeRequest,
    code: i16,
) -> SaslHandshakeResponse {
    SaslHandshakeResponse::default().with_error_code(code)
}
