// Apache Kafka's Java consumer (kafka-clients from Maven Central), as one benchmarked client
// process: the same command line, stop rule and report line as the Rust clients
// (bench/src/lib.rs). group.protocol selects the implementation even in assign mode:
// classic = ClassicKafkaConsumer, consumer = AsyncKafkaConsumer.
//
//   java -cp <kafka classpath>:<dir of this class> BenchConsumer --bootstrap H:P --topic T
//        --partitions N --mode assign|subscribe [--group G] --protocol classic|consumer
//        --window-ms MS --expected N [--leave-after-ms MS] [--rate-per-s N]
//        [--start earliest|latest] [--latency-warmup-ms MS]
//        [--leave-at-epoch-ms MS] [--until-epoch-ms MS] [--members N]
//
// --members N (the members workload in one JVM): N KafkaConsumers, each polled by a thread of
// its own, the last one stopping at --leave-at-epoch-ms (the leaver); one
// "BENCH member=<i> ..." line per member, in member order.
//        [--security plaintext|sasl_ssl --ca-location PEM --sasl-username U --sasl-password P]
//
// Under sasl_ssl it sets the same properties as ours (SaslSsl::java_properties in
// bench/src/lib.rs): SASL_SSL, SCRAM-SHA-512, a PEM truststore, host name verification.

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class BenchConsumer {
    private static final long FIRST_RECORD_TIMEOUT_NS = 90_000_000_000L;
    // A rate-limited application waits only when at least this far ahead (as the Rust
    // clients' Stats::pace).
    private static final long SHORTEST_PACE_NS = 1_000_000L;
    // The members workload reads the assignment this often (as ASSIGNMENT_CHECK_EVERY in
    // bench/src/lib.rs).
    private static final long ASSIGNMENT_CHECK_NS = 10_000_000L;

    public static void main(String[] argv) {
        String bootstrap = null, topic = null, mode = "assign", group = null, protocol = "classic";
        String startOffset = "earliest";
        long latencyWarmupMs = -1;
        String security = "plaintext", caLocation = null, saslUsername = null, saslPassword = null;
        int partitions = 0;
        long windowMs = 5000, expected = Long.MAX_VALUE, leaveAfterMs = -1, ratePerS = 0;
        long leaveAtEpochMs = -1, untilEpochMs = -1;
        int members = 1;
        for (int i = 0; i + 1 < argv.length; i += 2) {
            String v = argv[i + 1];
            switch (argv[i]) {
                case "--bootstrap": bootstrap = v; break;
                case "--topic": topic = v; break;
                case "--partitions": partitions = Integer.parseInt(v); break;
                case "--mode": mode = v; break;
                case "--group": group = v; break;
                case "--protocol": protocol = v; break;
                case "--window-ms": windowMs = Long.parseLong(v); break;
                case "--expected": expected = Long.parseLong(v); break;
                case "--leave-after-ms": leaveAfterMs = Long.parseLong(v); break;
                case "--rate-per-s": ratePerS = Math.max(1, Long.parseLong(v)); break;
                case "--start": startOffset = v; break;
                case "--latency-warmup-ms": latencyWarmupMs = Long.parseLong(v); break;
                case "--leave-at-epoch-ms": leaveAtEpochMs = Long.parseLong(v); break;
                case "--until-epoch-ms": untilEpochMs = Long.parseLong(v); break;
                case "--members": members = Math.max(1, Integer.parseInt(v)); break;
                case "--security": security = v; break;
                case "--ca-location": caLocation = v; break;
                case "--sasl-username": saslUsername = v; break;
                case "--sasl-password": saslPassword = v; break;
                default: fail("unknown argument " + argv[i]);
            }
        }
        if (bootstrap == null || topic == null || partitions <= 0) {
            fail("--bootstrap, --topic and --partitions are required");
        }
        long window = (leaveAfterMs >= 0 ? Math.min(leaveAfterMs, windowMs) : windowMs) * 1_000_000L;

        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("client.id", "bench-java-" + protocol);
        if (!startOffset.equals("earliest") && !startOffset.equals("latest")) {
            fail("unknown start " + startOffset);
        }
        props.put("auto.offset.reset", startOffset);
        props.put("enable.auto.commit", "false");
        props.put("group.protocol", protocol);
        if (mode.equals("subscribe")) {
            props.put("group.id", group);
        }
        if (security.equals("sasl_ssl")) {
            if (caLocation == null || saslUsername == null || saslPassword == null) {
                fail("--security sasl_ssl needs --ca-location, --sasl-username and --sasl-password");
            }
            props.put("security.protocol", "SASL_SSL");
            props.put("sasl.mechanism", "SCRAM-SHA-512");
            props.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required"
                + " username=\"" + saslUsername + "\" password=\"" + saslPassword + "\";");
            props.put("ssl.truststore.type", "PEM");
            props.put("ssl.truststore.location", caLocation);
            props.put("ssl.endpoint.identification.algorithm", "https");
        } else if (!security.equals("plaintext")) {
            fail("unknown security " + security + " (expected plaintext or sasl_ssl)");
        } else if (caLocation != null || saslUsername != null || saslPassword != null) {
            fail("--ca-location and --sasl-* need --security sasl_ssl");
        }
        if (!mode.equals("assign") && !mode.equals("subscribe")) {
            fail("unknown mode " + mode);
        }
        if (members == 1) {
            System.out.println(consume(props, topic, partitions, mode, window, expected, ratePerS,
                latencyWarmupMs, leaveAtEpochMs, untilEpochMs));
            return;
        }
        // The members workload in one JVM: a thread per consumer, all started at once.
        String[] reports = new String[members];
        Thread[] threads = new Thread[members];
        for (int m = 0; m < members; m++) {
            final int member = m;
            final long until = m == members - 1 ? leaveAtEpochMs : untilEpochMs;
            final String t = topic, md = mode;
            final int n = partitions;
            final long w = window, e = expected, r = ratePerS, lw = latencyWarmupMs, l = leaveAtEpochMs;
            threads[m] = new Thread(() -> reports[member] = consume(props, t, n, md, w, e, r, lw, l, until));
            threads[m].start();
        }
        for (int m = 0; m < members; m++) {
            try {
                threads[m].join();
            } catch (InterruptedException e) {
                fail("interrupted");
            }
            if (reports[m] == null) {
                fail("member " + m + " did not report");
            }
            System.out.println("BENCH member=" + m + " " + reports[m].substring("BENCH ".length()));
        }
    }

    // One consumer's run: subscribes or assigns, polls until its stop rule, closes, and
    // returns its BENCH line.
    private static String consume(Properties props, String topic, int partitions, String mode,
            long window, long expected, long ratePerS, long latencyWarmupMs, long leaveAtEpochMs,
            long untilEpochMs) {
        KafkaConsumer<byte[], byte[]> consumer =
            new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());

        Instant wallStart = Instant.now();
        long start = System.nanoTime();
        if (mode.equals("assign")) {
            List<TopicPartition> tps = new ArrayList<>();
            for (String t : topic.split(",")) {
                for (int p = 0; p < partitions; p++) {
                    tps.add(new TopicPartition(t, p));
                }
            }
            consumer.assign(tps);
        } else {
            consumer.subscribe(List.of(topic.split(",")));
        }

        long first = -1, last = -1, maxGap = 0, records = 0, bytes = 0;
        // The latency workload: delivery time - record timestamp (CreateTime from the
        // producer, same machine clock) of every record after the warm-up, in µs.
        long[] latencies = new long[latencyWarmupMs >= 0 ? 1 << 16 : 0];
        int nLatencies = 0;
        // A rate-limited application (the rebalance workload): when each partition last had a
        // record delivered, as Stats::note_partitions (plast_<p> in the report line).
        long[] partitionLast = new long[ratePerS > 0 ? partitions : 0];
        java.util.Arrays.fill(partitionLast, -1);
        // The members workload (as MemberTrack in bench/src/lib.rs): the leave and stop moments
        // on this clock, the assignment as last read, when it last changed before the leave,
        // the first delivery after that, the longest gap ending at or after the leave, and
        // per partition the first delivery at or after the leave.
        long wallNs = base(wallStart);
        long leaveAt = leaveAtEpochMs >= 0 ? start + (leaveAtEpochMs * 1_000_000L - wallNs) : Long.MAX_VALUE;
        long until = untilEpochMs >= 0 ? start + (untilEpochMs * 1_000_000L - wallNs) : Long.MAX_VALUE;
        boolean member = leaveAtEpochMs >= 0;
        java.util.TreeSet<Integer> assignment = new java.util.TreeSet<>();
        long checked = start - ASSIGNMENT_CHECK_NS, assigned = -1, stable = -1, pause = 0;
        long[] taken = new long[member ? partitions : 0];
        java.util.Arrays.fill(taken, -1);
        long[] got = new long[member ? partitions : 0];
        java.util.Arrays.fill(got, -1);
        while (true) {
            ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(500));
            int n = batch.count();
            if (member && System.nanoTime() - checked >= ASSIGNMENT_CHECK_NS) {
                long now = System.nanoTime();
                checked = now;
                java.util.TreeSet<Integer> current = new java.util.TreeSet<>();
                for (TopicPartition tp : consumer.assignment()) {
                    current.add(tp.partition());
                }
                if (now >= leaveAt) {
                    for (int p : current) {
                        if (p < got.length && got[p] < 0) {
                            got[p] = now;
                        }
                    }
                } else if (!current.equals(assignment)) {
                    if (!current.isEmpty()) {
                        assigned = now;
                    }
                    stable = -1;
                    assignment = current;
                }
            }
            if (n > 0) {
                long now = System.nanoTime();
                if (first < 0) {
                    first = now;
                }
                if (last >= 0) {
                    maxGap = Math.max(maxGap, now - last);
                }
                if (member && now < leaveAt && assigned >= 0 && stable < 0) {
                    stable = now;
                }
                if (member && now >= leaveAt && last >= 0) {
                    pause = Math.max(pause, now - last);
                }
                last = now;
                boolean measuring = latencyWarmupMs >= 0 && now - first >= latencyWarmupMs * 1_000_000L;
                Instant wallNow = measuring ? Instant.now() : null;
                long nowUs = measuring ? wallNow.getEpochSecond() * 1_000_000L + wallNow.getNano() / 1_000 : 0;
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    bytes += (r.key() == null ? 0 : r.key().length) + (r.value() == null ? 0 : r.value().length);
                    if (r.partition() < partitionLast.length) {
                        partitionLast[r.partition()] = now;
                    }
                    if (now >= leaveAt && r.partition() < taken.length && taken[r.partition()] < 0) {
                        taken[r.partition()] = now;
                    }
                    if (measuring) {
                        if (nLatencies == latencies.length) {
                            latencies = java.util.Arrays.copyOf(latencies, latencies.length * 2);
                        }
                        latencies[nLatencies++] = Math.max(0, nowUs - Math.max(0, r.timestamp()) * 1000);
                    }
                }
                records += n;
                if (ratePerS > 0) {
                    // Hold the application's rate since the first record, as if it spent the
                    // time processing what it got.
                    long wait = first + records * 1_000_000_000L / ratePerS - System.nanoTime();
                    if (wait >= SHORTEST_PACE_NS) {
                        sleepNs(wait);
                    }
                }
            }
            if (until != Long.MAX_VALUE) {
                // The members workload: the shared stop moment decides alone (as
                // Stats::should_stop).
                long now = System.nanoTime();
                if (now >= until) {
                    if (now >= leaveAt && last >= 0) {
                        pause = Math.max(pause, now - last);
                    }
                    break;
                }
            } else if (first < 0) {
                if (System.nanoTime() - start > FIRST_RECORD_TIMEOUT_NS) {
                    fail("no record within 90 s");
                }
            } else if (records >= expected || System.nanoTime() - first >= window) {
                break;
            }
        }
        consumer.close();

        long base = base(wallStart);
        String memberFields = "";
        if (member) {
            StringBuilder f = new StringBuilder();
            f.append(" assigned_ns=").append(assigned < 0 ? 0 : base + (assigned - start));
            f.append(" stable_ns=").append(stable < 0 ? 0 : base + (stable - start));
            f.append(" pause_ns=").append(pause);
            for (int p : assignment) {
                f.append(" own_").append(p).append("=1");
            }
            for (int p = 0; p < taken.length; p++) {
                if (taken[p] >= 0) {
                    f.append(" ptake_").append(p).append('=').append(base + (taken[p] - start));
                }
            }
            for (int p = 0; p < got.length; p++) {
                if (got[p] >= 0) {
                    f.append(" pgot_").append(p).append('=').append(base + (got[p] - start));
                }
            }
            memberFields = f.toString();
        }
        return "BENCH records=" + records + " bytes=" + bytes
            + " start_ns=" + base
            + " first_ns=" + (base + (first - start))
            + " last_ns=" + (base + (last - start))
            + " max_gap_ns=" + maxGap
            + latencyFields(latencies, nLatencies)
            + partitionFields(partitionLast, base, start)
            + memberFields;
    }

    private static long base(Instant wallStart) {
        return wallStart.getEpochSecond() * 1_000_000_000L + wallStart.getNano();
    }

    // The same nearest-rank percentiles and fields as Percentiles in bench/src/lib.rs.
    private static String latencyFields(long[] samples, int n) {
        if (n == 0) {
            return "";
        }
        long[] sorted = java.util.Arrays.copyOf(samples, n);
        java.util.Arrays.sort(sorted);
        return " lat_n=" + n + " lat_p50_us=" + rank(sorted, 0.50) + " lat_p99_us=" + rank(sorted, 0.99)
            + " lat_p999_us=" + rank(sorted, 0.999) + " lat_max_us=" + sorted[n - 1];
    }

    private static String partitionFields(long[] partitionLast, long base, long start) {
        StringBuilder s = new StringBuilder();
        for (int p = 0; p < partitionLast.length; p++) {
            if (partitionLast[p] >= 0) {
                s.append(" plast_").append(p).append('=').append(base + (partitionLast[p] - start));
            }
        }
        return s.toString();
    }

    private static long rank(long[] sorted, double q) {
        int n = sorted.length;
        int r = (int) Math.ceil(q * n);
        return sorted[Math.min(Math.max(r, 1), n) - 1];
    }

    private static void sleepNs(long ns) {
        try {
            Thread.sleep(ns / 1_000_000L, (int) (ns % 1_000_000L));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void fail(String message) {
        System.err.println("BenchConsumer: " + message);
        System.exit(1);
    }
}
