package io.minato.trainer;

import io.minato.trainer.gpu.FlinkGpus;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobInfoImpl;
import org.apache.flink.api.common.TaskInfo;
import org.apache.flink.api.common.TaskInfoImpl;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;

/**
 * What the trainer operator hands a trainer sink's writer (task info, job, metrics, Flink's GPUs),
 * for driving the writer without a cluster.
 */
final class FakeTrainerContext {

    private final TaskInfo task;
    private final JobID job;
    final RecordingMetricGroup metrics = new RecordingMetricGroup();

    FakeTrainerContext(int subtask, int parallelism) {
        this(subtask, parallelism, new JobID());
    }

    /** A subtask of {@code job}: writers of one job meet in one replica group. */
    FakeTrainerContext(int subtask, int parallelism, JobID job) {
        this.task = new TaskInfoImpl("trainer", 128, subtask, parallelism, 0);
        this.job = job;
    }

    /** {@code sink}'s writer for this subtask, started fresh. */
    DeviceWriter create(TrainerSink sink) throws IOException {
        return restore(sink, List.of());
    }

    /** {@code sink}'s trainer for this subtask, started fresh: the sink's devices train. */
    TrainerSinkWriter trainer(TrainerSink sink) throws IOException {
        return (TrainerSinkWriter) create(sink);
    }

    /** {@code sink}'s trainer for this subtask, restored from the checkpointed {@code states}. */
    TrainerSinkWriter trainer(TrainerSink sink, List<TrainerWriterState> states)
            throws IOException {
        return (TrainerSinkWriter) restore(sink, states);
    }

    /** {@code sink}'s writer for this subtask, restored from the checkpointed {@code states}. */
    DeviceWriter restore(TrainerSink sink, List<TrainerWriterState> states) throws IOException {
        return sink.createWriter(
                task,
                new JobInfoImpl(job, "test"),
                metrics,
                FlinkGpus.of(List.of()),
                0,
                Replicas.inJvm(),
                TrainerSink.restoredState(task.getIndexOfThisSubtask(), states));
    }

    /** Keeps the counters and gauges registered on it, by name. */
    static final class RecordingMetricGroup extends UnregisteredMetricsGroup {
        final Map<String, Metric> metrics = new ConcurrentHashMap<>();

        @Override
        public Counter counter(String name) {
            return counter(name, new SimpleCounter());
        }

        @Override
        public <C extends Counter> C counter(String name, C counter) {
            metrics.put(name, counter);
            return counter;
        }

        @Override
        public <T, G extends Gauge<T>> G gauge(String name, G gauge) {
            metrics.put(name, gauge);
            return gauge;
        }

        long count(String name) {
            return ((Counter) metrics.get(name)).getCount();
        }

        Object gaugeValue(String name) {
            return ((Gauge<?>) metrics.get(name)).getValue();
        }
    }
}
