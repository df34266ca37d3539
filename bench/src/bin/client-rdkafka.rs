//! `rdkafka` (librdkafka, bundled and built from source), as one benchmarked client process.
//! The plain `BaseConsumer` poll loop: one message per `poll`.

use std::time::Duration;

use kafka_bench::{client_main, len, wall_clock_us, ClientArgs, Mode, Protocol, Start, Stats};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

fn main() {
    client_main("client-rdkafka", run);
}

fn run(args: ClientArgs) -> Result<Stats, String> {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", &args.bootstrap)
        .set("client.id", "bench-rdkafka")
        .set("auto.offset.reset", args.start.name())
        .set("enable.auto.commit", "false")
        // librdkafka's assign() fails with "Local: Unknown group" without a group.id; assigning
        // joins no group, so assign mode gets one too.
        .set("group.id", &args.group);
    for (key, value) in args.sasl_ssl.iter().flat_map(|s| s.librdkafka_properties()) {
        config.set(key, value);
    }
    if args.mode == Mode::Subscribe {
        config.set("group.protocol", args.protocol.name());
    }
    let consumer: BaseConsumer = config.create().map_err(|e| e.to_string())?;
    let mut stats = Stats::start(&args);
    match args.mode {
        Mode::Assign => {
            let mut partitions = TopicPartitionList::new();
            for (topic, p) in args.topic_partitions() {
                partitions
                    .add_partition_offset(
                        topic,
                        p,
                        match args.start {
                            Start::Earliest => Offset::Beginning,
                            Start::Latest => Offset::End,
                        },
                    )
                    .map_err(|e| e.to_string())?;
            }
            consumer.assign(&partitions).map_err(|e| e.to_string())?;
        }
        Mode::Subscribe => {
            debug_assert!(matches!(
                args.protocol,
                Protocol::Classic | Protocol::Consumer
            ));
            consumer
                .subscribe(&args.topics())
                .map_err(|e| e.to_string())?;
        }
    }
    loop {
        let polled = consumer.poll(Duration::from_millis(100));
        if stats.assignment_due() {
            let assignment = consumer.assignment().map_err(|e| e.to_string())?;
            stats.note_assignment(assignment.elements().iter().map(|e| e.partition()));
        }
        match polled {
            Some(Ok(message)) => {
                stats.delivered(1, len(message.key()) + len(message.payload()));
                stats.note_partitions([message.partition()]);
                if stats.measuring_latency() {
                    if let Some(ms) = message.timestamp().to_millis() {
                        stats.record_latency(wall_clock_us(), ms);
                    }
                }
            }
            Some(Err(error)) => return Err(error.to_string()),
            None => {}
        }
        if let Some(wait) = stats.pace() {
            std::thread::sleep(wait);
        }
        if stats.done()? {
            break;
        }
    }
    // Dropping the consumer closes it (and leaves the group).
    drop(consumer);
    Ok(stats)
}
