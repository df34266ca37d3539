//! The command line of Kafka's `VerifiableConsumer` (as of Kafka 4.4), flag for flag, and the
//! consumer config it makes: a properties file first, the flags over it.

use std::collections::BTreeMap;

use kafka_consumer::config::parse_properties;

pub const USAGE: &str = "\
usage: kafka-verifiable-consumer --bootstrap-server HOST1:PORT1[,HOST2:PORT2[...]]
           --topic TOPIC --group-id GROUP-ID
           [--group-protocol classic|consumer] [--group-remote-assignor ASSIGNOR]
           [--group-instance-id GROUP-INSTANCE-ID] [--max-messages N]
           [--session-timeout TIMEOUT-MS] [--verbose] [--enable-autocommit]
           [--close-timeout CLOSE-TIMEOUT-MS] [--reset-policy earliest|latest|none]
           [--assignment-strategy ASSIGNMENT-STRATEGY]
           [--command-config CONFIG-FILE | --consumer.config CONFIG-FILE]

Consumes TOPIC in group GROUP-ID and writes one JSON event per line to stdout, as Kafka's
org.apache.kafka.tools.VerifiableConsumer does (the client Kafka's system tests drive):
startup_complete, partitions_assigned, partitions_revoked, records_consumed, record_data
(--verbose), offsets_committed (without --enable-autocommit: a commitSync of each poll's
offsets), shutdown_requested (SIGTERM or SIGINT), shutdown_complete. Logs go to stderr
(RUST_LOG, default warn).

  --max-messages N        stop after N records (default -1: until killed)
  --session-timeout MS    session.timeout.ms (classic protocol only)
  --close-timeout MS      how long close may take (default 30000)
  --reset-policy P        auto.offset.reset (default earliest)
  --assignment-strategy S partition.assignment.strategy, classic protocol only
                          (default org.apache.kafka.clients.consumer.RangeAssignor)
  --command-config FILE   consumer properties; the flags override them
  --consumer.config FILE  the same (deprecated by Kafka)";

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Args {
    /// The consumer config, as Java-style pairs.
    pub config: BTreeMap<String, String>,
    pub topic: String,
    /// `None`: until killed.
    pub max_messages: Option<usize>,
    pub verbose: bool,
    pub auto_commit: bool,
    pub close_timeout_ms: u64,
}

/// How parsing ended when it did not give [`Args`].
#[derive(Debug, PartialEq)]
pub enum Exit {
    /// `--help`, `-h` or no arguments at all: print the usage, exit 0.
    Help,
    /// A bad command line or config file: print this and the usage, exit 1.
    Error(String),
}

const VALUE_FLAGS: &[&str] = &[
    "--bootstrap-server",
    "--topic",
    "--group-protocol",
    "--group-remote-assignor",
    "--group-id",
    "--group-instance-id",
    "--max-messages",
    "--session-timeout",
    "--close-timeout",
    "--reset-policy",
    "--assignment-strategy",
    "--consumer.config",
    "--command-config",
];

/// Parses the arguments after the program name. `read_file` reads a properties file (a
/// parameter so that tests need no files).
pub fn parse(
    argv: &[String],
    read_file: impl Fn(&str) -> std::io::Result<String>,
) -> Result<Args, Exit> {
    if argv.is_empty() {
        return Err(Exit::Help);
    }
    let mut values: BTreeMap<&str, String> = BTreeMap::new();
    let mut verbose = false;
    let mut auto_commit = false;
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        // argparse4j takes both `--flag value` and `--flag=value`.
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
            _ => (arg.as_str(), None),
        };
        match flag {
            "-h" | "--help" => return Err(Exit::Help),
            "--verbose" => verbose = true,
            "--enable-autocommit" => auto_commit = true,
            _ => {
                let Some(&known) = VALUE_FLAGS.iter().find(|f| **f == flag) else {
                    return Err(Exit::Error(format!("unrecognized argument: {arg}")));
                };
                let value = match inline {
                    Some(value) => value,
                    None => it.next().cloned().ok_or_else(|| {
                        Exit::Error(format!("argument {flag}: expected one argument"))
                    })?,
                };
                values.insert(known, value);
            }
        }
    }
    let required = |flag: &str| {
        values
            .get(flag)
            .cloned()
            .ok_or_else(|| Exit::Error(format!("argument {flag} is required")))
    };
    let bootstrap = required("--bootstrap-server")?;
    let topic = required("--topic")?;
    let group_id = required("--group-id")?;
    let int = |flag: &str, default: i64| -> Result<i64, Exit> {
        values.get(flag).map_or(Ok(default), |v| {
            v.parse::<i32>().map(i64::from).map_err(|_| {
                Exit::Error(format!(
                    "argument {flag}: could not convert '{v}' to Integer"
                ))
            })
        })
    };
    let max_messages = usize::try_from(int("--max-messages", -1)?).ok();
    let close_timeout_ms = u64::try_from(int("--close-timeout", 30_000)?)
        .map_err(|_| Exit::Error("argument --close-timeout: must not be negative".to_owned()))?;

    let mut config = BTreeMap::new();
    match (
        values.get("--consumer.config"),
        values.get("--command-config"),
    ) {
        (Some(_), Some(_)) => {
            return Err(Exit::Error(
                "Options --consumer.config and --command-config are mutually exclusive.".to_owned(),
            ))
        }
        (Some(file), None) | (None, Some(file)) => {
            let text = read_file(file).map_err(|e| Exit::Error(format!("{file}: {e}")))?;
            let pairs = parse_properties(&text).map_err(|e| Exit::Error(format!("{file}: {e}")))?;
            config.extend(pairs);
        }
        (None, None) => {}
    }
    let protocol = values
        .get("--group-protocol")
        .cloned()
        .unwrap_or_else(|| "classic".to_owned());
    let consumer_protocol = match protocol.to_ascii_lowercase().as_str() {
        "classic" => false,
        "consumer" => true,
        _ => {
            return Err(Exit::Error(format!(
                "argument --group-protocol: '{protocol}' is not one of CLASSIC, CONSUMER"
            )))
        }
    };
    let canonical = if consumer_protocol {
        "consumer"
    } else {
        "classic"
    };
    config.insert("group.protocol".to_owned(), canonical.to_owned());
    if consumer_protocol {
        if let Some(assignor) = values.get("--group-remote-assignor") {
            config.insert("group.remote.assignor".to_owned(), assignor.clone());
        }
    } else {
        let strategy = values
            .get("--assignment-strategy")
            .cloned()
            .unwrap_or_else(|| "org.apache.kafka.clients.consumer.RangeAssignor".to_owned());
        config.insert("partition.assignment.strategy".to_owned(), strategy);
    }
    if let Some(timeout) = values.get("--session-timeout") {
        int("--session-timeout", 0)?;
        config.insert("session.timeout.ms".to_owned(), timeout.clone());
    }
    config.insert("group.id".to_owned(), group_id);
    if let Some(instance) = values.get("--group-instance-id") {
        config.insert("group.instance.id".to_owned(), instance.clone());
    }
    config.insert("bootstrap.servers".to_owned(), bootstrap);
    config.insert("enable.auto.commit".to_owned(), auto_commit.to_string());
    let reset = values
        .get("--reset-policy")
        .cloned()
        .unwrap_or_else(|| "earliest".to_owned());
    config.insert("auto.offset.reset".to_owned(), reset);
    Ok(Args {
        config,
        topic,
        max_messages,
        verbose,
        auto_commit,
        close_timeout_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    fn no_files(path: &str) -> std::io::Result<String> {
        Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            path.to_owned(),
        ))
    }

    #[test]
    fn the_system_tests_command_line_gives_javas_config() {
        let props =
            "security.protocol=PLAINTEXT\ngroup.protocol=consumer\nauto.offset.reset=latest\n";
        let args = parse(
            &argv(
                "--group-instance-id g-instance-1 --assignment-strategy \
                 org.apache.kafka.clients.consumer.RoundRobinAssignor --enable-autocommit \
                 --bootstrap-server=b1:9092,b2:9092 --reset-policy earliest --group-id g \
                 --topic t --max-messages 100 --close-timeout 15000 \
                 --command-config /p.properties",
            ),
            |path| {
                assert_eq!(path, "/p.properties");
                Ok(props.to_owned())
            },
        )
        .unwrap();
        let expected: BTreeMap<String, String> = [
            ("auto.offset.reset", "earliest"),
            ("bootstrap.servers", "b1:9092,b2:9092"),
            ("enable.auto.commit", "true"),
            // The flag (default classic) wins over the file, as in Java.
            ("group.protocol", "classic"),
            ("group.id", "g"),
            ("group.instance.id", "g-instance-1"),
            (
                "partition.assignment.strategy",
                "org.apache.kafka.clients.consumer.RoundRobinAssignor",
            ),
            ("security.protocol", "PLAINTEXT"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(args.config, expected);
        assert_eq!(args.topic, "t");
        assert_eq!(args.max_messages, Some(100));
        assert_eq!(args.close_timeout_ms, 15_000);
        assert!(args.auto_commit);
        assert!(!args.verbose);
    }

    #[test]
    fn the_consumer_protocol_takes_the_remote_assignor_and_no_strategy() {
        let args = parse(
            &argv(
                "--bootstrap-server b:1 --topic t --group-id g --group-protocol CONSUMER \
                 --group-remote-assignor uniform --assignment-strategy ignored --verbose",
            ),
            no_files,
        )
        .unwrap();
        assert_eq!(args.config["group.protocol"], "consumer");
        assert_eq!(args.config["group.remote.assignor"], "uniform");
        assert!(!args.config.contains_key("partition.assignment.strategy"));
        assert!(!args.config.contains_key("session.timeout.ms"));
        assert_eq!(args.max_messages, None);
        assert_eq!(args.close_timeout_ms, 30_000);
        assert!(args.verbose);
    }

    #[test]
    fn bad_command_lines_say_what_is_wrong() {
        let error = |text: &str| match parse(&argv(text), no_files) {
            Err(Exit::Error(message)) => message,
            other => panic!("{text}: {other:?}"),
        };
        let base = "--bootstrap-server b:1 --topic t --group-id g";
        assert!(error("--topic t --group-id g").contains("--bootstrap-server is required"));
        assert!(error(&format!("{base} --max-messages x")).contains("could not convert 'x'"));
        assert!(error(&format!("{base} --bogus")).contains("unrecognized argument: --bogus"));
        assert!(error(&format!("{base} --group-protocol eager")).contains("not one of"));
        assert!(error(&format!("{base} --close-timeout -1")).contains("negative"));
        assert!(error(&format!("{base} --topic")).contains("expected one argument"));
        assert!(
            error(&format!("{base} --command-config /a --consumer.config /b"))
                .contains("mutually exclusive")
        );
        assert!(error(&format!("{base} --command-config /missing")).contains("/missing"));
        assert_eq!(parse(&[], no_files), Err(Exit::Help));
        assert_eq!(
            parse(&argv(&format!("{base} -h")), no_files),
            Err(Exit::Help)
        );
    }
}
