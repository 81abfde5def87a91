package io.minato.loader;

import io.minato.sample.PreparedSample;
import io.minato.sample.SampleHandoff;
import io.minato.sample.SampleHandoff.Receiver;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.metrics.MetricGroup;

/**
 * Where a producer's samples go, and whether each receiver runs in the producer's TaskManager: only
 * then may a patch wait in this JVM's {@link SampleHandoff} while its identity travels; a sample
 * for a receiver elsewhere (or not yet open) carries its bytes, and so crosses to another
 * TaskManager once. A producer asks at every emit, so a receiver that a restore moved is followed
 * at once, and nothing waits on a timer to find out.
 */
public final class Receivers {
    /**
     * Accumulator: prepared samples sent to their batcher or trainer with their bytes, because it
     * ran in another TaskManager (or was not open yet): what crossed between TaskManagers.
     */
    public static final String SENT_AS_BYTES = "samplesSentAsBytes";

    private final SampleHandoff handoff = SampleHandoff.jvm();
    private final Receiver[] bySubtask;
    private LongCounter sentAsBytes; // null: not counted

    /**
     * The {@code subtasks} receivers of {@code operator}, as seen by a producer with this runtime
     * context and metric group. A device's samples go to the subtask of its index ({@link
     * DeviceKeys} pins them so).
     */
    public static Receivers of(
            RuntimeContext context, MetricGroup metrics, String operator, int subtasks) {
        String job = context.getJobInfo().getJobId().toString();
        String taskManager = SampleHandoff.taskManagerOf(metrics);
        Receiver[] bySubtask = new Receiver[subtasks];
        for (int i = 0; i < subtasks; i++) {
            bySubtask[i] = new Receiver(job, operator, i, taskManager);
        }
        return new Receivers(bySubtask);
    }

    private Receivers(Receiver[] bySubtask) {
        this.bySubtask = bySubtask;
    }

    /**
     * Says that this subtask of {@code operator} takes samples here, until the registration is
     * closed.
     */
    public static SampleHandoff.Registration register(
            RuntimeContext context, MetricGroup metrics, String operator) {
        return SampleHandoff.jvm()
                .receiving(
                        new Receiver(
                                context.getJobInfo().getJobId().toString(),
                                operator,
                                context.getTaskInfo().getIndexOfThisSubtask(),
                                SampleHandoff.taskManagerOf(metrics)));
    }

    /** Whether receiver {@code subtask} runs in this TaskManager now. */
    public boolean here(int subtask) {
        return handoff.receivesHere(bySubtask[subtask]);
    }

    /**
     * Counts the samples {@link #route} sends with their bytes, in the accumulator {@link
     * #SENT_AS_BYTES} of {@code context}.
     */
    public Receivers counted(RuntimeContext context) {
        sentAsBytes = new LongCounter();
        context.addAccumulator(SENT_AS_BYTES, sentAsBytes);
        return this;
    }

    /**
     * {@code sample} (dealt to a device), marked to wait in the handoff if its receiver is here.
     */
    public PreparedSample route(PreparedSample sample) {
        boolean here = here(sample.device());
        count(here, 1);
        return sample.withHandOff(here);
    }

    /** The samples of one batch for {@code device}, each marked as {@link #route} marks one. */
    public List<PreparedSample> route(int device, List<PreparedSample> samples) {
        boolean here = here(device);
        count(here, samples.size());
        List<PreparedSample> routed = new ArrayList<>(samples.size());
        for (PreparedSample s : samples) {
            routed.add(s.withHandOff(here));
        }
        return routed;
    }

    /** {@code names} and {@link #SENT_AS_BYTES}: a producer's accumulators, for its files. */
    public static String[] withSentAsBytes(String[] names) {
        String[] all = Arrays.copyOf(names, names.length + 1);
        all[names.length] = SENT_AS_BYTES;
        return all;
    }

    private void count(boolean here, int samples) {
        if (!here && sentAsBytes != null) {
            sentAsBytes.add(samples);
        }
    }
}
