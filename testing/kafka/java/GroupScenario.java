// A three-member consumer group run with Apache Kafka's own Java clients, used
// to check that a broker (the simulated one in `sim`, or the real harness
// broker) behaves like Kafka for real client code.
//
// Run via:  testing/kafka/run java-group --bootstrap H:P --topic T --group G \
//               --protocol classic|consumer [--partitions 6] [--records 120]
// (compiles this file against the harness classpath, i.e. kafka-clients of the harness's default release, 4.4.0)
//
// Scenario, in phases, each waited for with a deadline:
//   1. members m0, m1, m2 join; wait until they split all partitions between
//      them (disjoint, all non-empty);
//   2. KafkaProducer writes `records` records spread over every partition; wait
//      until all are consumed;
//   3. m2 closes (leaves the group); wait until m0 and m1 own every partition;
//      produce and consume another `records`;
//   4. m3 joins in m2's place; wait until the three split the partitions again;
//      produce and consume another `records`;
//   5. every member commits what it consumed, then all close.
// Members commit (commitSync) after every poll that returned records, and
// retry a failed commit on their next loop, so the committed offsets end at
// the log end. The caller checks them with OffsetFetch.
//
// Output on stdout, one event per line, for the caller to parse:
//   ASSIGNMENT <member> <p,p,...|->     after every poll whose assignment changed
//   RECORD <member> <partition> <offset>
//   PHASE <name>
//   PRODUCED <partition> <offset>        for every acknowledged record
//   DONE
// Anything going wrong ends the program with a non-zero status and a message
// on stderr.

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

public final class GroupScenario {
    private static final long PHASE_TIMEOUT_MS = 60_000;

    private final String bootstrap;
    private final String topic;
    private final String group;
    private final String protocol;
    private final int partitions;
    private final int records;
    /** "partition:offset" of every record some member consumed. */
    private final Set<String> consumed = ConcurrentHashMap.newKeySet();
    /** "partition:offset" of every record the producer had acknowledged. */
    private final Set<String> produced = ConcurrentHashMap.newKeySet();

    private GroupScenario(Map<String, String> args) {
        bootstrap = required(args, "--bootstrap");
        topic = required(args, "--topic");
        group = required(args, "--group");
        protocol = required(args, "--protocol");
        partitions = Integer.parseInt(args.getOrDefault("--partitions", "6"));
        records = Integer.parseInt(args.getOrDefault("--records", "120"));
    }

    private static String required(Map<String, String> args, String flag) {
        String value = args.get(flag);
        if (value == null) {
            throw new IllegalArgumentException(flag + " is required");
        }
        return value;
    }

    /** Prints one output line; synchronized so lines from member threads never interleave. */
    static synchronized void emit(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** One group member: a KafkaConsumer polled on its own thread (it is not thread-safe). */
    private final class Member implements Runnable {
        final String name;
        volatile boolean stop;
        volatile Set<Integer> assignment = Set.of();
        volatile Throwable failure;
        final Thread thread;
        final KafkaConsumer<String, String> consumer;

        Member(String name) {
            this.name = name;
            Properties props = new Properties();
            props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            props.put(ConsumerConfig.CLIENT_ID_CONFIG, group + "-" + name);
            props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
            props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "25");
            props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            if (protocol.equals("classic")) {
                // Short classic timers so a rebalance completes in about a second.
                props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
                props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "300");
            }
            consumer = new KafkaConsumer<>(props);
            thread = new Thread(this, name);
        }

        @Override
        public void run() {
            try {
                consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                    @Override
                    public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
                        // Commit what was consumed before giving partitions away.
                        if (!revoked.isEmpty()) {
                            consumer.commitSync();
                        }
                    }

                    @Override
                    public void onPartitionsAssigned(Collection<TopicPartition> assigned) {}
                });
                boolean dirty = false;
                while (!stop) {
                    ConsumerRecords<String, String> batch = consumer.poll(Duration.ofMillis(100));
                    for (ConsumerRecord<String, String> r : batch) {
                        consumed.add(r.partition() + ":" + r.offset());
                        emit("RECORD " + name + " " + r.partition() + " " + r.offset());
                        dirty = true;
                    }
                    Set<Integer> now = consumer.assignment().stream()
                            .map(TopicPartition::partition)
                            .collect(Collectors.toCollection(TreeSet::new));
                    if (!now.equals(assignment)) {
                        assignment = now;
                        emit("ASSIGNMENT " + name + " " + render(now));
                    }
                    if (dirty) {
                        try {
                            consumer.commitSync();
                            dirty = false;
                        } catch (RuntimeException e) {
                            // A rebalance raced the commit: retried on the next loop.
                            System.err.println(name + ": commit failed, retrying: " + e);
                        }
                    }
                }
                if (dirty) {
                    consumer.commitSync();
                }
            } catch (Throwable e) {
                failure = e;
                e.printStackTrace();
            } finally {
                assignment = Set.of();
                consumer.close();
                emit("ASSIGNMENT " + name + " -");
            }
        }

        void stopAndJoin() throws InterruptedException {
            stop = true;
            thread.join(PHASE_TIMEOUT_MS);
            if (thread.isAlive()) {
                throw new IllegalStateException(name + " did not stop");
            }
        }
    }

    private static String render(Set<Integer> partitions) {
        if (partitions.isEmpty()) {
            return "-";
        }
        return partitions.stream().map(String::valueOf).collect(Collectors.joining(","));
    }

    private Member start(String name) {
        Member member = new Member(name);
        member.thread.start();
        return member;
    }

    private void waitFor(String what, List<Member> members, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.currentTimeMillis() + PHASE_TIMEOUT_MS;
        while (!condition.getAsBoolean()) {
            for (Member m : members) {
                if (m.failure != null) {
                    throw new IllegalStateException(m.name + " failed while waiting for " + what, m.failure);
                }
            }
            if (System.currentTimeMillis() > deadline) {
                StringBuilder state = new StringBuilder();
                for (Member m : members) {
                    state.append(' ').append(m.name).append('=').append(render(m.assignment));
                }
                throw new IllegalStateException("timed out waiting for " + what + ";" + state
                        + "; consumed " + consumed.size() + " of " + produced.size());
            }
            Thread.sleep(50);
        }
    }

    /** The members' assignments are disjoint, none is empty, and together they cover the topic. */
    private boolean split(List<Member> members) {
        Set<Integer> union = new TreeSet<>();
        int total = 0;
        for (Member m : members) {
            Set<Integer> a = m.assignment;
            if (a.isEmpty()) {
                return false;
            }
            union.addAll(a);
            total += a.size();
        }
        return total == partitions && union.size() == partitions;
    }

    private void produce(KafkaProducer<String, String> producer, int phase) throws Exception {
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        for (int i = 0; i < records; i++) {
            sent.add(producer.send(new ProducerRecord<>(topic, i % partitions, "k" + i, "phase" + phase + "-" + i)));
        }
        for (Future<RecordMetadata> f : sent) {
            RecordMetadata m = f.get();
            produced.add(m.partition() + ":" + m.offset());
            emit("PRODUCED " + m.partition() + " " + m.offset());
        }
    }

    private void run() throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        // The producer's defaults (idempotence on) on purpose: the sim must serve
        // InitProducerId like a real broker.
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            Member m0 = start("m0");
            Member m1 = start("m1");
            Member m2 = start("m2");
            List<Member> three = List.of(m0, m1, m2);
            waitFor("three members to split the partitions", three, () -> split(three));

            emit("PHASE produce-1");
            produce(producer, 1);
            waitFor("phase 1 records to be consumed", three, () -> consumed.containsAll(produced));

            emit("PHASE leave");
            m2.stopAndJoin();
            List<Member> two = List.of(m0, m1);
            waitFor("two members to take over every partition", two, () -> split(two));
            emit("PHASE produce-2");
            produce(producer, 2);
            waitFor("phase 2 records to be consumed", two, () -> consumed.containsAll(produced));

            emit("PHASE rejoin");
            Member m3 = start("m3");
            List<Member> again = List.of(m0, m1, m3);
            waitFor("three members to split the partitions again", again, () -> split(again));
            emit("PHASE produce-3");
            produce(producer, 3);
            waitFor("phase 3 records to be consumed", again, () -> consumed.containsAll(produced));

            emit("PHASE close");
            for (Member m : again) {
                m.stopAndJoin();
                if (m.failure != null) {
                    throw new IllegalStateException(m.name + " failed", m.failure);
                }
            }
        }
        emit("DONE");
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) {
            args.put(argv[i], argv[i + 1]);
        }
        try {
            new GroupScenario(args).run();
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
        // Kafka's client threads are daemons, but be explicit: the caller waits for exit.
        System.exit(0);
    }
}
