package io.minato.sample;

import io.minato.sample.serde.SampleTypes;
import io.minato.spi.Steps;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.flink.api.common.typeinfo.TypeInfo;

/**
 * A sample that passed its deadline on a fast worker: the task, where to resume its preparation,
 * and the CPU time already spent on it.
 *
 * <p>Where to resume is one of three: {@code steps}, the preparation itself (in this JVM, no copy
 * of what it cut so far); {@code state}, its bytes ({@link Steps#writeTo}) after it crossed a
 * process or was copied, which the slow worker reads with its workload's transforms; or neither,
 * when the state was lost on the way (a replay after a restore) and the sample starts over with the
 * same result.
 *
 * <p>{@code slowWorker} is the slow worker its fast worker sent it to (the edge's partitioner reads
 * it before the record is serialized); it does not travel, and reads back as {@link
 * #ANY_SLOW_WORKER}.
 */
@TypeInfo(SampleTypes.UnfinishedSampleFactory.class)
public record UnfinishedSample(
        SampleTask task, Steps<?> steps, byte[] state, long prepCpuNanos, int slowWorker) {

    /** The slow worker of a sample read back from bytes, or not routed yet. */
    public static final int ANY_SLOW_WORKER = -1;

    public UnfinishedSample {
        if (steps != null && state != null) {
            throw new IllegalArgumentException("a sample resumes from its steps or its state");
        }
    }

    /**
     * A sample cut off in this JVM, its preparation in hand, for slow worker {@code slowWorker}.
     */
    public UnfinishedSample(SampleTask task, Steps<?> steps, long prepCpuNanos, int slowWorker) {
        this(task, steps, null, prepCpuNanos, slowWorker);
    }

    /** A sample resuming from {@code state} (or from its start, when null), not routed. */
    public UnfinishedSample(SampleTask task, byte[] state, long prepCpuNanos) {
        this(task, null, state, prepCpuNanos, ANY_SLOW_WORKER);
    }

    /** The same sample resuming from bytes: a deep copy that shares nothing with this one. */
    public UnfinishedSample detached() {
        byte[] bytes = steps == null ? (state == null ? null : state.clone()) : bytesOf(steps);
        return new UnfinishedSample(task, null, bytes, prepCpuNanos, slowWorker);
    }

    /** The bytes of a preparation's state. */
    public static byte[] bytesOf(Steps<?> steps) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(512);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            steps.writeTo(out);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the state of " + steps.key(), e);
        }
        return bytes.toByteArray();
    }
}
