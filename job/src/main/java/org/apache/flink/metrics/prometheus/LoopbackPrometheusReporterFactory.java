package org.apache.flink.metrics.prometheus;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Properties;
import org.apache.flink.metrics.MetricConfig;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;

/**
 * Makes a {@link LoopbackPrometheusReporter} from {@code metrics.reporter.<name>.host} (default
 * localhost) and {@code .port} (default 9249, Flink's): {@code metrics.reporter.prom.factory.class:
 * org.apache.flink.metrics.prometheus.LoopbackPrometheusReporterFactory}.
 */
public class LoopbackPrometheusReporterFactory implements MetricReporterFactory {
    /** The host option; the port option is Flink's ({@code port}). */
    public static final String HOST = "host";

    @Override
    public MetricReporter createMetricReporter(Properties properties) {
        MetricConfig config = new MetricConfig();
        config.putAll(properties);
        String host = config.getString(HOST, "localhost");
        int port = config.getInteger(PrometheusReporterFactory.ARG_PORT, 9249);
        try {
            return new LoopbackPrometheusReporter(host, port);
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "cannot serve Prometheus metrics on " + host + ":" + port, e);
        }
    }
}
