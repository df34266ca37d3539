//! SaslAuthenticate (36) as `KafkaApis` answers it: only after a successful authentication
//! (or on a PLAINTEXT listener), where it is ILLEGAL_SASL_STATE with Kafka's message. Tokens of
//! an authentication in progress are the [`Authenticator`](crate::sasl::authenticator)'s.

use kafka_protocol::messages::{SaslAuthenticateRequest, SaslAuthenticateResponse};
use kafka_protocol::protocol::StrBytes;

use crate::broker::dispatch::RequestCtx;
use crate::sasl::authenticator::ILLEGAL_SASL_STATE;

pub(crate) async fn handle(
    _ctx: &RequestCtx<'_>,
    _request: SaslAuthenticateRequest,
) -> SaslAuthenticateResponse {
    SaslAuthenticateResponse::default()
        .with_error_code(ILLEGAL_SASL_STATE)
        .with_error_message(Some(StrBytes::from_static_str(
            "SaslAuthenticate request received after successful authentication",
        )))
}

pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    _request: &SaslAuthenticateRequest,
    code: i16,
) -> SaslAuthenticateResponse {
    SaslAuthenticateResponse::default().with_error_code(code)
}
