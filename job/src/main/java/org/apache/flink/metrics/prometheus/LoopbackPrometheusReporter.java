package org.apache.flink.metrics.prometheus;

import io.prometheus.client.exporter.HTTPServer;
import java.io.IOException;
import java.net.InetSocketAddress;

/**
 * Flink's Prometheus reporter serving on one address instead of every interface. Flink's own {@link
 * PrometheusReporter} listens on {@code new InetSocketAddress(port)}, the wildcard address, and has
 * no option for the host; a training run on a shared machine exposes nothing beyond localhost
 * unless asked. This class sits in Flink's package because {@link AbstractPrometheusReporter}
 * (which turns Flink's metrics into Prometheus collectors) keeps its registry package-private; a
 * change there fails this module's build, not a run.
 */
public class LoopbackPrometheusReporter extends AbstractPrometheusReporter {
    private final HTTPServer server;

    /**
     * Starts serving {@code /metrics} on {@code host:port} (0: a free port).
     *
     * @throws IOException if the address cannot be bound
     */
    public LoopbackPrometheusReporter(String host, int port) throws IOException {
        server = new HTTPServer(new InetSocketAddress(host, port), registry, true);
        log.info("Prometheus metrics on http://{}:{}/metrics", host, server.getPort());
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
