package io.minato.trainer;

import io.minato.loader.SampleRecipe;
import io.minato.sample.Batch;
import io.minato.trainer.gpu.GpuMonitor;
import io.minato.trainer.gpu.GpuSampler;
import io.minato.trainer.gpu.GpuStats;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.function.Supplier;
import org.apache.flink.metrics.MetricGroup;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one device's trainer writes beside training: its trace (a line per sample of each step), its
 * summary at the end ({@link DeviceSummary}) with the statistics of its GPU, read on a daemon
 * thread while it trains, and the trained model.
 */
final class DeviceOutputs implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DeviceOutputs.class);

    private final int device;
    private final DeviceAccount.Outputs consumer;
    private final Path outputDir; // null: no summary and no model
    private final TraceWriter trace; // null: no trace
    private final GpuSampler gpu; // owns the accelerator's GPU monitor
    private final Supplier<DeviceCounters> counters;

    /**
     * @param traceDir null: no trace
     * @param traceLength the lines of the trace a restored state committed; 0 for a new run
     * @param recipe names the samples in the trace; null: their indices do
     */
    DeviceOutputs(
            int device,
            DeviceAccount.Outputs consumer,
            Path traceDir,
            long traceLength,
            SampleRecipe recipe,
            Path outputDir,
            MetricGroup metrics,
            Supplier<DeviceCounters> counters)
            throws IOException {
        this.device = device;
        this.consumer = consumer;
        this.outputDir = outputDir;
        this.counters = counters;
        this.trace =
                traceDir == null
                        ? null
                        : TraceWriter.open(
                                traceDir,
                                device,
                                traceLength,
                                recipe == null
                                        ? Integer::toString
                                        : recipe.workload().samples()::traceName);
        GpuMonitor monitor = gpuMonitorOf(consumer, device);
        monitor.registerGauges(metrics);
        gpu = GpuSampler.start(monitor, "gpu-sampler-device-" + device, GpuSampler.DEFAULT_PERIOD);
    }

    /** Appends the trace lines of a completed step. */
    void traceStep(Batch batch, long step, long startMillis, long endMillis) throws IOException {
        if (trace != null) {
            trace.append(batch, step, startMillis, endMillis);
        }
    }

    /** Trace lines written so far: what a checkpoint commits. */
    long traceLength() {
        return trace == null ? 0 : trace.length();
    }

    /** At the end of the input: the consumer keeps its result (the model), then the summary. */
    void finish() throws IOException {
        if (outputDir != null) {
            try {
                consumer.finish(outputDir, device);
            } catch (IOException | RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IOException(
                        "device " + device + " could not finish: " + e.getMessage(), e);
            }
        }
        writeSummary();
    }

    /** What this device's GPU read so far; empty without a GPU or reading. */
    Optional<GpuStats> gpuStats() {
        return gpu.stats();
    }

    /** Stops the GPU sampling, writes the summary once more and closes the trace. */
    @Override
    public void close() throws IOException {
        gpu.close(); // never throws; the summary below then holds the final GPU statistics
        try {
            writeSummary();
        } catch (IOException e) {
            // Closing after a failure (a full disk, say): an exception here would be one in
            // Flink's failure handling, which it answers by stopping the whole TaskManager. At
            // the end of the input finish() has written the summary already, or failed the job.
            LOG.warn("device {}: could not write its summary on close: {}", device, e.toString());
        } finally {
            if (trace != null) {
                trace.close();
            }
        }
    }

    private void writeSummary() throws IOException {
        if (outputDir != null) {
            DeviceSummary.of(device, consumer.kind(), counters.get(), gpu.stats().orElse(null))
                    .write(outputDir);
        }
    }

    /** The consumer's GPU monitor; the absent one, logged, if it fails: metrics never fail. */
    private static GpuMonitor gpuMonitorOf(DeviceAccount.Outputs consumer, int device) {
        try {
            return consumer.gpuMonitor();
        } catch (RuntimeException e) {
            LOG.warn("device {}: no GPU metrics, the GPU monitor failed to open: {}", device, e);
            return GpuMonitor.absent();
        }
    }
}
