//! SASL/PLAIN (RFC 4616): one message, `authzid NUL authcid NUL password`, with an empty
//! authorization id as Kafka's `PlainSaslClient` sends.

use zeroize::Zeroizing;

use super::{SaslClient, SaslError};
use crate::network::secret::Secret;

pub(crate) struct PlainClient {
    username: String,
    password: Secret,
    sent: bool,
}

impl PlainClient {
    pub(crate) fn new(username: &str, password: &Secret) -> Self {
        Self {
            username: username.to_owned(),
            password: password.clone(),
            sent: false,
        }
    }
}

impl SaslClient for PlainClient {
    fn initial_response(&mut self) -> Result<Zeroizing<Vec<u8>>, SaslError> {
        self.sent = true;
        let mut message = Zeroizing::new(Vec::with_capacity(
            2 + self.username.len() + self.password.expose().len(),
        ));
        message.push(0);
        message.extend_from_slice(self.username.as_bytes());
        message.push(0);
        message.extend_from_slice(self.password.expose().as_bytes());
        Ok(message)
    }

    fn evaluate(&mut self, challenge: &[u8]) -> Result<Option<Zeroizing<Vec<u8>>>, SaslError> {
        if !self.sent || !challenge.is_empty() {
            return Err(SaslError::InvalidServerMessage(
                "PLAIN expects one empty server response".into(),
            ));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_message_then_done() {
        let mut client = PlainClient::new("alice", &Secret::new("s3cret"));
        let message = client.initial_response().unwrap();
        assert_eq!(&message[..], b"\0alice\0s3cret");
        assert_eq!(message.capacity(), message.len(), "one exact allocation");
        assert_eq!(client.evaluate(b"").unwrap(), None);
        assert!(client.evaluate(b"unexpected").is_err());
    }
}
