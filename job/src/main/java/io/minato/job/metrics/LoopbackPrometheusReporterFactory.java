package io.minato.job.metrics;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Properties;
import org.apache.flink.metrics.MetricConfig;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;

/**
 * Makes a {@link LoopbackPrometheusReporter} from {@code metrics.reporter.<name>.host} (default
 * localhost) and {@code .port} (default 9249, Flink's): {@code metrics.reporter.prom.factory.class:
 * io.minato.job.metrics.LoopbackPrometheusReporterFactory}.
 */
public class LoopbackPrometheusReporterFactory implements MetricReporterFactory {
    /** The host option. */
    public static final String HOST = "host";

    /** The port option, named as Flink's own reporter names it. */
    public static final String PORT = "port";

    @Override
    public MetricReporter createMetricReporter(Properties properties) {
        MetricConfig config = new MetricConfig();
        config.putAll(properties);
        String host = config.getString(HOST, "localhost");
        int port = config.getInteger(PORT, 9249);
        try {
            return new LoopbackPrometheusReporter(host, port);
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "cannot serve Prometheus metrics on " + host + ":" + port, e);
        }
    }
}
