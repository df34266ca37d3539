//! The consumer's `tracing` spans as OpenTelemetry traces, through `tracing-opentelemetry`.
//!
//! The application side's spans (`poll`, `commit_sync`, `close`, each rebalance listener call
//! with its member id and generation) sit under a `consumer{client_id group_id}` span; the
//! background task's `request{api target version}` spans (one per request, from sending it to
//! its answer, with `error` when it failed) under another. Any OpenTelemetry exporter takes
//! them; this one prints them to stdout as JSON. An OTLP exporter sends them to a collector,
//! Jaeger or Tempo the same way.
//!
//! ```text
//! cargo run -p kafka-consumer --example opentelemetry -- \
//!     --bootstrap 127.0.0.1:9092 --topic orders [--group traced] [--seconds 5]
//! ```

#[cfg(madsim)]
fn main() {}

#[cfg(not(madsim))]
#[tokio::main]
async fn main() {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(usage) => {
            eprintln!("opentelemetry: {usage}");
            std::process::exit(2);
        }
    };
    let provider = otel::provider(opentelemetry_stdout::SpanExporter::default());
    // Global: the background task runs on a thread of its own.
    tracing::subscriber::set_global_default(otel::subscriber(&provider))
        .expect("no other subscriber is installed");
    let outcome = consume(&args).await;
    // Ends the spans still open and flushes them to the exporter.
    if let Err(error) = provider.shutdown() {
        eprintln!("opentelemetry: shutting the tracer provider down failed: {error}");
    }
    match outcome {
        Ok(count) => println!("consumed {count} records"),
        Err(error) => {
            eprintln!("opentelemetry: {error}");
            std::process::exit(1);
        }
    }
}

#[cfg(not(madsim))]
pub struct Args {
    pub bootstrap: String,
    pub topic: String,
    pub group: String,
    pub seconds: u64,
}

#[cfg(not(madsim))]
impl Args {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let usage = "usage: --bootstrap H:P --topic T [--group G] [--seconds N]";
        let (mut bootstrap, mut topic, mut group, mut seconds) =
            (None, None, "traced".to_owned(), 5);
        while let Some(flag) = args.next() {
            let value = args
                .next()
                .ok_or_else(|| format!("{flag} needs a value; {usage}"))?;
            match flag.as_str() {
                "--bootstrap" => bootstrap = Some(value),
                "--topic" => topic = Some(value),
                "--group" => group = value,
                "--seconds" => seconds = value.parse().map_err(|e| format!("--seconds: {e}"))?,
                other => return Err(format!("unknown flag {other}; {usage}")),
            }
        }
        Ok(Self {
            bootstrap: bootstrap.ok_or(usage)?,
            topic: topic.ok_or(usage)?,
            group,
            seconds,
        })
    }
}

/// Reads the topic in a group for `seconds`, commits and closes: every kind of span once.
#[cfg(not(madsim))]
pub async fn consume(args: &Args) -> kafka_consumer::Result<usize> {
    use kafka_consumer::rt::{Duration, Instant};
    use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig};

    let config = ConsumerConfig::builder()
        .bootstrap_servers([args.bootstrap.as_str()])
        .group_id(args.group.as_str())
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .build()?;
    let mut consumer = Consumer::new(config)?;
    consumer.subscribe([args.topic.as_str()]).await?;
    let until = Instant::now() + Duration::from_secs(args.seconds);
    let mut count = 0;
    while Instant::now() < until {
        count += consumer.poll(Duration::from_millis(500)).await?.count();
    }
    consumer.commit_sync(None, Duration::from_secs(10)).await?;
    consumer.close(Duration::from_secs(10)).await?;
    Ok(count)
}

#[cfg(not(madsim))]
#[allow(dead_code)] // `tests/opentelemetry_real_kafka.rs` uses this module too.
pub mod otel {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::trace::{SdkTracerProvider, SpanExporter};
    use tracing::Level;
    use tracing_subscriber::filter::filter_fn;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::{EnvFilter, Layer};

    /// A tracer provider that hands each finished span to `exporter` at once. A service
    /// would use a batching processor (`with_batch_exporter`) instead.
    pub fn provider<E: SpanExporter + 'static>(exporter: E) -> SdkTracerProvider {
        SdkTracerProvider::builder()
            .with_simple_exporter(exporter)
            .build()
    }

    /// The consumer's spans (the request, commit, close and listener spans at INFO, `poll` at
    /// DEBUG) to OpenTelemetry, with its INFO-and-up log lines as span events; log lines to
    /// stderr as `RUST_LOG` says (WARN by default).
    pub fn subscriber(provider: &SdkTracerProvider) -> impl tracing::Subscriber + Send + Sync {
        let tracer = provider.tracer("kafka-consumer");
        let spans = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(filter_fn(|meta| {
                let wanted = if meta.is_span() {
                    Level::DEBUG
                } else {
                    Level::INFO
                };
                meta.target().starts_with("kafka_consumer") && *meta.level() <= wanted
            }));
        let logs = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(
                EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
            );
        tracing_subscriber::registry().with(spans).with(logs)
    }
}
