// A broker-side KIP-714 client-metrics plugin for tests: it records every PushTelemetry
// payload a broker accepts, so a test can check what a client pushed.
//
// Loaded by the broker as a metrics reporter (metric.reporters=ClientTelemetryPlugin) when
// `testing/kafka/run up` runs with KAFKA_CLIENT_TELEMETRY_DIR set; the harness compiles it
// against the broker's classpath and adds it there. With a reporter that offers client
// telemetry, the broker advertises GetTelemetrySubscriptions (71) and PushTelemetry (72) in
// ApiVersions; without one (the default broker) it does not.
//
// It implements ClientTelemetry (Kafka 3.7 and newer; deprecated since 4.2 in favour of
// ClientTelemetryExporterProvider, still honoured by 4.4), so one class serves every release
// the harness runs (3.9 to 4.4).
//
// Broker config: client.telemetry.capture.dir=DIR. For each push, in arrival order n = 1, 2, …:
//   DIR/push-<n>.bin    the payload as the broker hands it to plugins (decompressed
//                       OpenTelemetry MetricsData protobuf)
//   DIR/pushes.log      one line per push, written after its .bin file:
//                       <n> <client instance id> <client id> <terminating true|false> <content type> <bytes>
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetry;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.apache.kafka.server.telemetry.ClientTelemetryReceiver;

@SuppressWarnings({"deprecation", "removal"})
public class ClientTelemetryPlugin implements MetricsReporter, ClientTelemetry {
    public static final String DIR_CONFIG = "client.telemetry.capture.dir";

    private Path dir;
    private long pushes;

    @Override
    public void configure(Map<String, ?> configs) {
        Object value = configs.get(DIR_CONFIG);
        if (value == null) {
            throw new IllegalArgumentException(DIR_CONFIG + " is not set");
        }
        dir = Paths.get(value.toString());
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new IllegalStateException("cannot create " + dir, e);
        }
    }

    @Override
    public void init(List<KafkaMetric> metrics) {}

    @Override
    public void metricChange(KafkaMetric metric) {}

    @Override
    public void metricRemoval(KafkaMetric metric) {}

    @Override
    public void close() {}

    @Override
    public ClientTelemetryReceiver clientReceiver() {
        return this::record;
    }

    private synchronized void record(AuthorizableRequestContext context, ClientTelemetryPayload payload) {
        long n = ++pushes;
        ByteBuffer data = payload.data().duplicate();
        byte[] bytes = new byte[data.remaining()];
        data.get(bytes);
        try {
            Path tmp = dir.resolve("push-" + n + ".bin.tmp");
            Files.write(tmp, bytes);
            Files.move(tmp, dir.resolve("push-" + n + ".bin"), StandardCopyOption.ATOMIC_MOVE);
            String line = n + " " + payload.clientInstanceId() + " " + context.clientId() + " "
                + payload.isTerminating() + " " + payload.contentType() + " " + bytes.length + "\n";
            Files.write(dir.resolve("pushes.log"), line.getBytes(StandardCharsets.UTF_8),
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            // The broker answers INVALID_RECORD to a push its plugin fails on.
            throw new IllegalStateException("cannot record push " + n + " in " + dir, e);
        }
    }
}
