package io.minato.trainer;

import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobInfo;
import org.apache.flink.api.common.JobInfoImpl;
import org.apache.flink.api.common.TaskInfo;
import org.apache.flink.api.common.TaskInfoImpl;
import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.operators.ProcessingTimeService;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.groups.OperatorIOMetricGroup;
import org.apache.flink.metrics.groups.SinkWriterMetricGroup;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.util.UserCodeClassLoader;

/**
 * The part of a sink writer's context the trainer sink uses (task info, metrics), for driving the
 * writer without a cluster; the rest throws.
 */
final class FakeWriterContext implements WriterInitContext {

    private final TaskInfo task;
    private final JobID job;
    final RecordingMetricGroup metrics = new RecordingMetricGroup();

    FakeWriterContext(int subtask, int parallelism) {
        this(subtask, parallelism, new JobID());
    }

    /** A subtask of {@code job}: writers of one job meet in one replica group. */
    FakeWriterContext(int subtask, int parallelism, JobID job) {
        this.task = new TaskInfoImpl("trainer", 128, subtask, parallelism, 0);
        this.job = job;
    }

    @Override
    public UserCodeClassLoader getUserCodeClassLoader() {
        throw new UnsupportedOperationException();
    }

    @Override
    public MailboxExecutor getMailboxExecutor() {
        throw new UnsupportedOperationException();
    }

    @Override
    public ProcessingTimeService getProcessingTimeService() {
        throw new UnsupportedOperationException();
    }

    @Override
    public SinkWriterMetricGroup metricGroup() {
        return metrics;
    }

    @Override
    public SerializationSchema.InitializationContext asSerializationSchemaInitializationContext() {
        throw new UnsupportedOperationException();
    }

    @Override
    public boolean isObjectReuseEnabled() {
        return false;
    }

    @Override
    public <IN> TypeSerializer<IN> createInputSerializer() {
        throw new UnsupportedOperationException();
    }

    @Override
    public OptionalLong getRestoredCheckpointId() {
        return OptionalLong.empty();
    }

    @Override
    public JobInfo getJobInfo() {
        return new JobInfoImpl(job, "test");
    }

    @Override
    public TaskInfo getTaskInfo() {
        return task;
    }

    /** Keeps the counters and gauges registered on it, by name. */
    static final class RecordingMetricGroup extends UnregisteredMetricsGroup
            implements SinkWriterMetricGroup {
        private final SinkWriterMetricGroup delegate =
                UnregisteredMetricsGroup.createSinkWriterMetricGroup();
        final Map<String, Metric> metrics = new ConcurrentHashMap<>();

        @Override
        public Counter counter(String name) {
            return counter(name, new org.apache.flink.metrics.SimpleCounter());
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

        @Override
        public OperatorIOMetricGroup getIOMetricGroup() {
            return delegate.getIOMetricGroup();
        }

        @Override
        public Counter getNumRecordsOutErrorsCounter() {
            return delegate.getNumRecordsOutErrorsCounter();
        }

        @Override
        public Counter getNumRecordsSendErrorsCounter() {
            return delegate.getNumRecordsSendErrorsCounter();
        }

        @Override
        public Counter getNumRecordsSendCounter() {
            return delegate.getNumRecordsSendCounter();
        }

        @Override
        public Counter getNumBytesSendCounter() {
            return delegate.getNumBytesSendCounter();
        }

        @Override
        public void setCurrentSendTimeGauge(Gauge<Long> gauge) {
            delegate.setCurrentSendTimeGauge(gauge);
        }
    }
}
