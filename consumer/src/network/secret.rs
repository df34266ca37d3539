//! A credential held in memory: never printed, compared in constant time, wiped on drop.
//!
//! Passwords, private keys and tokens travel through configs, builders and errors; wrapping them
//! in [`Secret`] makes every `Debug`/`Display` of those types safe to log, and `zeroize` clears
//! the bytes when the last copy is dropped so they do not linger in freed memory.

use std::fmt;

use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

/// A secret string (password, PEM private key, bearer token).
#[derive(Clone, Default)]
pub struct Secret(Zeroizing<String>);

impl Secret {
    /// Wraps a secret; the caller's copy should be dropped (or zeroized) after this.
    pub fn new(value: impl Into<String>) -> Self {
        Self(Zeroizing::new(value.into()))
    }

    /// The secret itself, for the one place that must send or parse it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the secret is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self::new(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[hidden]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[hidden]")
    }
}

/// Constant-time, so comparing configs cannot leak a secret's prefix through timing.
impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_bytes().ct_eq(other.0.as_bytes()).into()
    }
}

impl Eq for Secret {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_printed() {
        let secret = Secret::new("hunter2");
        assert_eq!(format!("{secret:?}"), "[hidden]");
        assert_eq!(format!("{secret}"), "[hidden]");
        assert_eq!(format!("{:?}", Some(secret.clone())), "Some([hidden])");
        assert_eq!(secret.expose(), "hunter2");
    }

    #[test]
    fn equality_compares_content() {
        assert_eq!(Secret::new("a"), Secret::new("a"));
        assert_ne!(Secret::new("a"), Secret::new("ab"));
        assert_ne!(Secret::new("b"), Secret::new("a"));
    }
}
