//! Turns the supplied strings into checked values, key by key, with Java's `ConfigDef` parsing
//! rules: values are trimmed; booleans are `true`/`false` in any case; integers are decimal with
//! an optional sign and must fit Java's `int`/`long`; lists split on commas with surrounding
//! whitespace dropped.

use std::collections::BTreeMap;

use zeroize::Zeroizing;

use super::error::ConfigError;
use super::keys::{self, DefaultValue, KeySpec, Kind};

/// The explicitly supplied values of known keys (Java's `originals()`), plus the table's
/// defaults for the rest.
pub(crate) struct Resolver {
    /// Zeroized on drop: values may be passwords or private keys.
    supplied: BTreeMap<&'static str, Zeroizing<String>>,
}

impl Resolver {
    pub(crate) fn new(supplied: BTreeMap<&'static str, Zeroizing<String>>) -> Self {
        Self { supplied }
    }

    /// Whether the user gave this key at all (Java's `originals().containsKey`).
    pub(crate) fn is_supplied(&self, key: &str) -> bool {
        self.supplied.contains_key(key)
    }

    /// Whether the user gave this key a non-blank value (Java's
    /// `config != null && !Utils.isBlank(config.toString())`).
    pub(crate) fn is_set_non_blank(&self, key: &str) -> bool {
        self.supplied.get(key).is_some_and(|v| !v.trim().is_empty())
    }

    /// The trimmed value, supplied or default; `None` for a `null` default.
    fn raw(&self, spec: &'static KeySpec) -> Result<Option<&str>, ConfigError> {
        match (self.supplied.get(spec.name), spec.default) {
            (Some(value), _) => Ok(Some(value.trim())),
            (None, DefaultValue::Value(value)) => Ok(Some(value)),
            (None, DefaultValue::Null) => Ok(None),
            (None, DefaultValue::Required) => Err(ConfigError::Missing { key: spec.name }),
        }
    }

    pub(crate) fn bool(&self, key: &'static str) -> Result<bool, ConfigError> {
        let spec = known(key);
        self.present(spec).and_then(|raw| parse_bool(spec, raw))
    }

    pub(crate) fn int(&self, key: &'static str) -> Result<i32, ConfigError> {
        let spec = known(key);
        self.present(spec).and_then(|raw| parse_int(spec, raw))
    }

    /// An `int` whose Java validator forbids negatives, as the unsigned type it then fits.
    pub(crate) fn non_negative_int(&self, key: &'static str) -> Result<u32, ConfigError> {
        let spec = known(key);
        let value = self.int(key)?;
        u32::try_from(value).map_err(|_| invalid(spec, &value.to_string(), "a value of at least 0"))
    }

    pub(crate) fn long(&self, key: &'static str) -> Result<i64, ConfigError> {
        let spec = known(key);
        self.present(spec).and_then(|raw| parse_long(spec, raw))
    }

    /// A `long` whose Java validator forbids negatives, as `u64`.
    pub(crate) fn non_negative_long(&self, key: &'static str) -> Result<u64, ConfigError> {
        let spec = known(key);
        let value = self.long(key)?;
        u64::try_from(value).map_err(|_| invalid(spec, &value.to_string(), "a value of at least 0"))
    }

    /// A string; `None` for a `null` default.
    pub(crate) fn string(&self, key: &'static str) -> Result<Option<String>, ConfigError> {
        Ok(self.raw(known(key))?.map(str::to_owned))
    }

    /// A value parsed by its Rust type; `None` for a `null` default. The error's expectation
    /// text comes from the table.
    pub(crate) fn typed<T>(
        &self,
        key: &'static str,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Result<Option<T>, ConfigError> {
        let spec = known(key);
        match self.raw(spec)? {
            None => Ok(None),
            Some(raw) => parse(raw)
                .map(Some)
                .ok_or_else(|| invalid(spec, raw, expected_of(spec))),
        }
    }

    /// A list parsed element by element by its Rust type, under Java's list rules.
    pub(crate) fn typed_list<T: PartialEq>(
        &self,
        key: &'static str,
        allow_empty: bool,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<Vec<T>, ConfigError> {
        let spec = known(key);
        let raw = self.present(spec)?;
        let items = parse_list(spec, raw, allow_empty)?;
        let mut parsed: Vec<T> = Vec::with_capacity(items.len());
        for item in items {
            let value = parse(item).ok_or_else(|| invalid(spec, raw, expected_of(spec)))?;
            if parsed.contains(&value) {
                return Err(invalid(spec, raw, "values must not be duplicated"));
            }
            parsed.push(value);
        }
        Ok(parsed)
    }

    /// Checks a key this client does not store (ignored or default-only ones) by its kind.
    /// Returns the canonical option for `OneOf` keys, so callers can compare with the default.
    pub(crate) fn check(
        &self,
        spec: &'static KeySpec,
    ) -> Result<Option<&'static str>, ConfigError> {
        let Some(raw) = self.raw(spec)? else {
            return Ok(None);
        };
        match spec.kind {
            Kind::Bool => parse_bool(spec, raw).map(|_| None),
            Kind::Int { .. } => parse_int(spec, raw).map(|_| None),
            Kind::Long { .. } => parse_long(spec, raw).map(|_| None),
            Kind::List { allow_empty } => parse_list(spec, raw, allow_empty).map(|_| None),
            Kind::OneOf {
                options,
                ignore_case,
            } => one_of(spec, raw, options, ignore_case).map(Some),
            Kind::Class => {
                if raw.is_empty() {
                    Err(invalid(spec, raw, "a class name"))
                } else {
                    Ok(None)
                }
            }
            Kind::Str | Kind::Typed { .. } => Ok(None),
        }
    }

    fn present(&self, spec: &'static KeySpec) -> Result<&str, ConfigError> {
        self.raw(spec)?
            .ok_or(ConfigError::Missing { key: spec.name })
    }
}

/// The spec of a key the code itself names; a miss is a typo in this module, which the
/// defaults test catches.
fn known(key: &'static str) -> &'static KeySpec {
    keys::spec(key).unwrap_or_else(|| panic!("`{key}` is not in the key table"))
}

fn expected_of(spec: &KeySpec) -> &'static str {
    match spec.kind {
        Kind::Typed { expected } => expected,
        _ => "a valid value",
    }
}

/// An `InvalidValue` error, with the value hidden for secret keys.
pub(crate) fn invalid(spec: &KeySpec, raw: &str, expected: impl Into<String>) -> ConfigError {
    ConfigError::InvalidValue {
        key: spec.name,
        value: shown(spec.name, raw),
        expected: expected.into(),
    }
}

/// A value as it may appear in errors and logs: quoted, or `[hidden]` for secret keys.
pub(crate) fn shown(key: &str, value: &str) -> String {
    if keys::is_secret(key) {
        "[hidden]".to_owned()
    } else {
        format!("{value:?}")
    }
}

/// A value as it may appear in listings: itself, or `[hidden]` for secret keys.
pub(crate) fn redacted<'a>(key: &str, value: &'a str) -> &'a str {
    if keys::is_secret(key) {
        "[hidden]"
    } else {
        value
    }
}

fn parse_bool(spec: &KeySpec, raw: &str) -> Result<bool, ConfigError> {
    if raw.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if raw.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err(invalid(spec, raw, "either true or false"))
    }
}

fn parse_int(spec: &KeySpec, raw: &str) -> Result<i32, ConfigError> {
    let value: i32 = raw
        .parse()
        .map_err(|_| invalid(spec, raw, "a 32-bit integer"))?;
    match spec.kind {
        Kind::Int { min: Some(min) } if value < min => {
            Err(invalid(spec, raw, format!("a value of at least {min}")))
        }
        _ => Ok(value),
    }
}

fn parse_long(spec: &KeySpec, raw: &str) -> Result<i64, ConfigError> {
    let value: i64 = raw
        .parse()
        .map_err(|_| invalid(spec, raw, "a 64-bit integer"))?;
    match spec.kind {
        Kind::Long { min: Some(min) } if value < min => {
            Err(invalid(spec, raw, format!("a value of at least {min}")))
        }
        _ => Ok(value),
    }
}

/// Java's `LIST` parsing plus `ValidList.anyNonDuplicateValues`: blank means empty; elements
/// must be non-empty and distinct.
fn parse_list<'a>(
    spec: &KeySpec,
    raw: &'a str,
    allow_empty: bool,
) -> Result<Vec<&'a str>, ConfigError> {
    let items: Vec<&str> = if raw.is_empty() {
        Vec::new()
    } else {
        raw.split(',').map(str::trim).collect()
    };
    if items.is_empty() && !allow_empty {
        return Err(invalid(spec, raw, "a non-empty list"));
    }
    if items.iter().any(|item| item.is_empty()) {
        return Err(invalid(spec, raw, "list values must not be empty"));
    }
    for (index, item) in items.iter().enumerate() {
        if items[..index].contains(item) {
            return Err(invalid(spec, raw, "list values must not be duplicated"));
        }
    }
    Ok(items)
}

fn one_of(
    spec: &KeySpec,
    raw: &str,
    options: &'static [&'static str],
    ignore_case: bool,
) -> Result<&'static str, ConfigError> {
    options
        .iter()
        .copied()
        .find(|option| {
            if ignore_case {
                option.eq_ignore_ascii_case(raw)
            } else {
                *option == raw
            }
        })
        .ok_or_else(|| {
            let case = if ignore_case {
                " (case insensitive)"
            } else {
                ""
            };
            invalid(spec, raw, format!("one of{case}: {}", options.join(", ")))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolver(pairs: &[(&'static str, &str)]) -> Resolver {
        Resolver::new(
            pairs
                .iter()
                .map(|(k, v)| (*k, Zeroizing::new((*v).to_owned())))
                .collect(),
        )
    }

    #[test]
    fn booleans_are_case_insensitive_and_trimmed() {
        let r = resolver(&[
            ("check.crcs", " FALSE "),
            ("allow.auto.create.topics", "True"),
        ]);
        assert!(!r.bool("check.crcs").unwrap());
        assert!(r.bool("allow.auto.create.topics").unwrap());
        let r = resolver(&[("check.crcs", "yes")]);
        assert!(matches!(
            r.bool("check.crcs"),
            Err(ConfigError::InvalidValue {
                key: "check.crcs",
                ..
            })
        ));
    }

    #[test]
    fn integers_fit_java_int_and_long() {
        let r = resolver(&[
            ("session.timeout.ms", "+2147483647"),
            ("connections.max.idle.ms", "-1"),
        ]);
        assert_eq!(r.int("session.timeout.ms").unwrap(), i32::MAX);
        assert_eq!(r.long("connections.max.idle.ms").unwrap(), -1);
        for bad in ["2147483648", "1.5", "", "0x10", "1_000"] {
            let r = resolver(&[("session.timeout.ms", bad)]);
            assert!(r.int("session.timeout.ms").is_err(), "{bad}");
        }
        let r = resolver(&[("metadata.max.age.ms", "9223372036854775807")]);
        assert_eq!(
            r.non_negative_long("metadata.max.age.ms").unwrap(),
            i64::MAX as u64
        );
    }

    #[test]
    fn lists_follow_java_rules() {
        let spec = known("interceptor.classes");
        assert_eq!(parse_list(spec, "a , b,c", true).unwrap(), ["a", "b", "c"]);
        assert!(parse_list(spec, "", true).unwrap().is_empty());
        assert!(parse_list(spec, "", false).is_err());
        assert!(parse_list(spec, "a,,b", true).is_err());
        assert!(parse_list(spec, "a,", true).is_err());
        assert!(parse_list(spec, "a,b,a", true).is_err());
    }

    #[test]
    fn one_of_respects_case_rule() {
        let dns = known("client.dns.lookup");
        let r = resolver(&[("client.dns.lookup", "USE_ALL_DNS_IPS")]);
        assert!(r.check(dns).is_err());
        let security = known("security.protocol");
        let r = resolver(&[("security.protocol", "plaintext")]);
        assert_eq!(r.check(security).unwrap(), Some("PLAINTEXT"));
    }

    #[test]
    fn errors_hide_secret_values() {
        assert_eq!(shown("sasl.jaas.config", "hunter2"), "[hidden]");
        assert_eq!(shown("group.id", "g"), "\"g\"");
    }
}
