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
 */
@TypeInfo(SampleTypes.UnfinishedSampleFactory.class)
public record UnfinishedSample(SampleTask task, Steps<?> steps, byte[] state, long prepCpuNanos) {

    public UnfinishedSample {
        if (steps != null && state != null) {
            throw new IllegalArgumentException("a sample resumes from its steps or its state");
        }
    }

    /** A sample cut off in this JVM, its preparation in hand. */
    public UnfinishedSample(SampleTask task, Steps<?> steps, long prepCpuNanos) {
        this(task, steps, null, prepCpuNanos);
    }

    /** The same sample resuming from bytes: a deep copy that shares nothing with this one. */
    public UnfinishedSample detached() {
        if (steps == null) {
            return new UnfinishedSample(
                    task, null, state == null ? null : state.clone(), prepCpuNanos);
        }
        return new UnfinishedSample(task, null, bytesOf(steps), prepCpuNanos);
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
