//! The real broker's secured listeners, as `testing/kafka/run up` prints them
//! (`KAFKA_BOOTSTRAP_SASL_SSL=…`, `KAFKA_BOOTSTRAP_SSL=…`, `KAFKA_BOOTSTRAP_SASL_PLAINTEXT=…`,
//! `KAFKA_SECURITY_FILE=…`), and the certificate paths and credentials of that file.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use kafka_consumer::Consumer;
use tokio::time::{Duration, Instant};

use super::real_broker::bootstrap;

/// The harness's listeners and test credentials.
pub struct Secured {
    pub plaintext: String,
    pub sasl_ssl: String,
    pub ssl: String,
    pub sasl_plaintext: String,
    /// `KEY=VALUE` lines of `KAFKA_SECURITY_FILE`.
    pub env: BTreeMap<String, String>,
}

impl Secured {
    /// A value of the security file; panics naming the key when it is missing.
    pub fn get(&self, key: &str) -> &str {
        self.env
            .get(key)
            .unwrap_or_else(|| panic!("{key} missing from KAFKA_SECURITY_FILE"))
    }

    /// The file a value of the security file names, read.
    pub fn read(&self, key: &str) -> String {
        std::fs::read_to_string(self.get(key)).unwrap()
    }
}

/// The secured listeners, or `None` (a loud skip naming `what` did not run) when they are
/// not exported; with `REQUIRE_KAFKA=1` a missing listener fails the test instead.
pub fn secured(what: &str) -> Option<Secured> {
    let plaintext = bootstrap()?;
    let vars = [
        "KAFKA_BOOTSTRAP_SASL_SSL",
        "KAFKA_BOOTSTRAP_SSL",
        "KAFKA_BOOTSTRAP_SASL_PLAINTEXT",
        "KAFKA_SECURITY_FILE",
    ];
    let values: Vec<String> = vars
        .iter()
        .filter_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()))
        .collect();
    if values.len() < vars.len() {
        assert!(
            std::env::var("REQUIRE_KAFKA").as_deref() != Ok("1"),
            "REQUIRE_KAFKA=1 but {vars:?} are not all set: export the lines `testing/kafka/run up` prints"
        );
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: {vars:?} not set; {what} did not run"
        );
        return None;
    }
    let env = std::fs::read_to_string(&values[3])
        .unwrap()
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    Some(Secured {
        plaintext,
        sasl_ssl: values[0].clone(),
        ssl: values[1].clone(),
        sasl_plaintext: values[2].clone(),
        env,
    })
}

/// Polls until records `key-0`..`key-{expected}` (valued `value-N`, as the tests produce them)
/// were all seen, failing on an error, a duplicate, a record that was not produced, or 90 s.
pub async fn consume(
    consumer: &mut Consumer,
    seen: &mut BTreeSet<usize>,
    expected: usize,
    label: &str,
) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while seen.len() < expected {
        assert!(
            Instant::now() < deadline,
            "{label}: only {} of {expected} records",
            seen.len()
        );
        let records = consumer
            .poll(Duration::from_millis(500))
            .await
            .unwrap_or_else(|error| panic!("{label}: poll failed: {error}"));
        for record in records.iter() {
            let key = String::from_utf8(record.key.clone().unwrap().to_vec()).unwrap();
            let value = String::from_utf8(record.value.clone().unwrap().to_vec()).unwrap();
            let i: usize = key.strip_prefix("key-").unwrap().parse().unwrap();
            assert_eq!(value, format!("value-{i}"), "{label}");
            assert!(i < expected, "{label}: unexpected {key}");
            assert!(seen.insert(i), "{label}: {key} delivered twice");
        }
    }
}
