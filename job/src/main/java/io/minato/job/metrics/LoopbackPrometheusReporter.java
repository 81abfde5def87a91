package io.minato.job.metrics;

import io.prometheus.client.CollectorRegistry;
import io.prometheus.client.exporter.HTTPServer;
import java.io.IOException;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import org.apache.flink.metrics.prometheus.AbstractPrometheusReporter;
import org.apache.flink.metrics.prometheus.PrometheusReporter;

/**
 * Flink's Prometheus reporter serving on one address instead of every interface. Flink's own {@link
 * PrometheusReporter} listens on {@code new InetSocketAddress(port)}, the wildcard address, and has
 * no option for the host; a training run on a shared machine exposes nothing beyond localhost
 * unless asked.
 *
 * <p>{@link AbstractPrometheusReporter} turns Flink's metrics into Prometheus collectors but keeps
 * its registry package-private: it is read here once, by name, and a Flink whose reporter no longer
 * has it fails the reporter's start in one line (and {@code MainTest}'s scrape), not later.
 */
public class LoopbackPrometheusReporter extends AbstractPrometheusReporter {
    private static final String REGISTRY = "registry";

    private final HTTPServer server;

    /**
     * Starts serving {@code /metrics} on {@code host:port} (0: a free port).
     *
     * @throws IOException if the address cannot be bound
     */
    public LoopbackPrometheusReporter(String host, int port) throws IOException {
        server = new HTTPServer(new InetSocketAddress(host, port), registry(this), true);
        log.info("Prometheus metrics on http://{}:{}/metrics", host, server.getPort());
    }

    /** The collectors {@code reporter} fills, which Flink does not expose. */
    private static CollectorRegistry registry(AbstractPrometheusReporter reporter) {
        try {
            Field f = AbstractPrometheusReporter.class.getDeclaredField(REGISTRY);
            f.setAccessible(true);
            return (CollectorRegistry) f.get(reporter);
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new IllegalStateException(
                    "this Flink's AbstractPrometheusReporter has no CollectorRegistry "
                            + REGISTRY
                            + " field to serve ("
                            + e
                            + "); --metrics-port needs Flink 2.x's flink-metrics-prometheus",
                    e);
        }
    }

    /** The port it serves on. */
    public int port() {
        return server.getPort();
    }

    @Override
    public void close() {
        server.stop();
        super.close();
    }
}
