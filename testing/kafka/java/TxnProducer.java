// A scripted transactional producer: Apache Kafka's own KafkaProducer with a
// transactional.id, driven one step at a time from stdin, so a test can build
// logs of committed and aborted transactions (and keep one open while it
// looks at what a consumer sees).
//
// Run via:  testing/kafka/run txn-produce --topic T [--bootstrap H:P]
//               [--transactional-id ID]
// (compiles this file against the harness classpath, i.e. kafka-clients of the harness's default release, 4.4.0)
//
// Startup: initTransactions(), then it prints
//   INITIALIZED <transactional.id>
// Then it reads stdin, one step per line (blank lines and lines starting with
// '#' are skipped), and prints exactly one line on stdout per step:
//   begin                   beginTransaction()              -> BEGUN
//   send <partition> <value>
//                           send (null key, the rest of the line as a UTF-8
//                           value) to that partition and wait for the ack
//                                                            -> SENT <partition> <offset> <value>
//   commit                  commitTransaction()             -> COMMITTED
//   abort                   abortTransaction()              -> ABORTED
//   flush                   flush()                         -> FLUSHED
//   wait-line               print READY, then block until the caller writes
//                           one more line (its text is ignored) -> READY
// `send` waits for the broker's ack, so each send is its own record batch and
// the printed offset is the record's offset in the log.
//
// End of stdin (also while blocked in wait-line) ends the program cleanly: an
// open transaction is aborted, the producer closed, CLOSED printed, exit 0.
// A failing step prints `ERROR <step>: <exception>` on stdout (and the stack
// trace on stderr), closes the producer without waiting and exits with 1; an
// unknown step is such a failure too.

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;

public final class TxnProducer {
    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i < argv.length; i += 2) {
            if (i + 1 >= argv.length) {
                throw new IllegalArgumentException("missing value for " + argv[i]);
            }
            args.put(argv[i], argv[i + 1]);
        }
        String bootstrap = required(args, "--bootstrap");
        String topic = required(args, "--topic");
        String transactionalId =
                args.getOrDefault("--transactional-id", "txn-producer-" + UUID.randomUUID());

        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        // A caller that vanishes (killed) leaves at most a minute of open transaction.
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "60000");
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");

        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        KafkaProducer<String, String> producer = new KafkaProducer<>(props);
        boolean open = false;
        String step = "initTransactions";
        try {
            producer.initTransactions();
            emit("INITIALIZED " + transactionalId);
            String line;
            while ((line = in.readLine()) != null) {
                step = line.trim();
                if (step.isEmpty() || step.startsWith("#")) {
                    continue;
                }
                String[] parts = step.split(" ", 3);
                switch (parts[0]) {
                    case "begin":
                        producer.beginTransaction();
                        open = true;
                        emit("BEGUN");
                        break;
                    case "send": {
                        if (parts.length < 3) {
                            throw new IllegalArgumentException("usage: send <partition> <value>");
                        }
                        int partition = Integer.parseInt(parts[1]);
                        RecordMetadata ack = producer
                                .send(new ProducerRecord<>(topic, partition, null, parts[2]))
                                .get();
                        emit("SENT " + ack.partition() + " " + ack.offset() + " " + parts[2]);
                        break;
                    }
                    case "commit":
                        producer.commitTransaction();
                        open = false;
                        emit("COMMITTED");
                        break;
                    case "abort":
                        producer.abortTransaction();
                        open = false;
                        emit("ABORTED");
                        break;
                    case "flush":
                        producer.flush();
                        emit("FLUSHED");
                        break;
                    case "wait-line":
                        emit("READY");
                        if (in.readLine() == null) {
                            step = "end of input";
                            line = null;
                        }
                        break;
                    default:
                        throw new IllegalArgumentException("unknown step");
                }
                if (line == null) {
                    break; // stdin closed while waiting
                }
            }
            if (open) {
                producer.abortTransaction();
            }
            producer.close(Duration.ofSeconds(30));
            emit("CLOSED");
        } catch (Exception e) {
            emit("ERROR " + step + ": " + e);
            e.printStackTrace();
            producer.close(Duration.ZERO);
            System.exit(1);
        }
    }

    private static void emit(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static String required(Map<String, String> args, String name) {
        String value = args.get(name);
        if (value == null) {
            throw new IllegalArgumentException(name + " is required");
        }
        return value;
    }
}
