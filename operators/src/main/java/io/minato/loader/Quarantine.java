package io.minato.loader;

import io.minato.data.BadInputException;
import io.minato.sample.SampleTask;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.api.common.accumulators.Accumulator;
import org.apache.flink.api.common.accumulators.ListAccumulator;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.OperatorStateStore;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sources a loader operator quarantined during the run ({@code --on-bad-sample skip}) and the
 * samples it left out for them. Both are split operator state, so that a restore neither trains a
 * quarantined sample nor counts one twice: each subtask's sources go to some subtask after a
 * restore (another meets a source bad again itself, and leaves it out then), and the counts are
 * summed over the subtasks, each sample counted once. Not union state: Flink aborts every
 * checkpoint of a job while any operator with union state has some subtasks finished and others
 * not, which at the end of a run, when workers finish unevenly, meant seconds without one. The
 * accumulators {@link #QUARANTINED} and {@link #SAMPLES_SKIPPED} carry them to the report. Safe to
 * call from the operator's own threads (the in-order loaders' workers).
 */
public final class Quarantine {
    /**
     * Accumulator: the sources quarantined during the run, each {@code file + '\0' + reason}
     * (repeated by every subtask that knows it).
     */
    public static final String QUARANTINED = "quarantinedDuringRun";

    /** Accumulator: samples left out during the run because their source was quarantined. */
    public static final String SAMPLES_SKIPPED = "samplesSkipped";

    private static final Logger LOG = LoggerFactory.getLogger(Quarantine.class);

    /** The name under which earlier builds kept the quarantined sources, as union state. */
    private static final String UNION_STATE = "quarantine";

    private final ListState<Tuple3<Integer, String, String>> quarantineState;
    private final ListState<Long> skippedState;

    /** Quarantined sources: sample index to (index, file, reason). */
    private final Map<Integer, Tuple3<Integer, String, String>> bySource = new TreeMap<>();

    private long skipped;
    private ListAccumulator<String> listed;
    private LongCounter counted;

    private Quarantine(StateInitializationContext context) throws Exception {
        OperatorStateStore store = context.getOperatorStateStore();
        quarantineState = store.getListState(sources("quarantined"));
        skippedState = store.getListState(new ListStateDescriptor<>("skipped", Types.LONG));
        if (context.isRestored()) {
            for (Tuple3<Integer, String, String> q : quarantineState.get()) {
                bySource.putIfAbsent(q.f0, q);
            }
            if (store.getRegisteredStateNames().contains(UNION_STATE)) {
                // A checkpoint of a build that kept them as union state: read, then emptied.
                ListState<Tuple3<Integer, String, String>> union =
                        store.getUnionListState(sources(UNION_STATE));
                for (Tuple3<Integer, String, String> q : union.get()) {
                    bySource.putIfAbsent(q.f0, q);
                }
                union.clear();
            }
            for (Long n : skippedState.get()) {
                skipped += n;
            }
        }
    }

    private static ListStateDescriptor<Tuple3<Integer, String, String>> sources(String name) {
        return new ListStateDescriptor<>(name, Types.TUPLE(Types.INT, Types.STRING, Types.STRING));
    }

    /** {@code names} and this class's accumulators: what a loader writes for a detached job. */
    public static String[] with(String... names) {
        String[] all = Arrays.copyOf(names, names.length + 2);
        all[names.length] = QUARANTINED;
        all[names.length + 1] = SAMPLES_SKIPPED;
        return all;
    }

    /** Registers the operator state, and reads it back after a restore. */
    public static Quarantine of(StateInitializationContext context) throws Exception {
        return new Quarantine(context);
    }

    /**
     * Registers the accumulators (shared with an operator chained in the same task), starting from
     * what the restored state holds.
     */
    public synchronized void open(RuntimeContext context) {
        listed = accumulator(context, QUARANTINED, new ListAccumulator<>());
        counted = accumulator(context, SAMPLES_SKIPPED, new LongCounter());
        counted.add(skipped);
        for (Tuple3<Integer, String, String> q : bySource.values()) {
            listed.add(q.f1 + '\0' + q.f2);
        }
    }

    @SuppressWarnings("unchecked")
    private static <V, R extends Serializable, A extends Accumulator<V, R>> A accumulator(
            RuntimeContext context, String name, A fresh) {
        Accumulator<V, R> known = context.getAccumulator(name);
        if (known != null) {
            return (A) known;
        }
        context.addAccumulator(name, fresh);
        return fresh;
    }

    /** Whether the sample's source is quarantined. */
    public synchronized boolean holds(SampleTask task) {
        return bySource.containsKey(task.caseIndex());
    }

    /** Quarantines the sample's source, for {@code bad}, and leaves the sample out. */
    public synchronized void add(SampleTask task, BadInputException bad) {
        LOG.warn(
                "quarantined for the rest of the run (--on-bad-sample skip), from epoch {}: {}",
                task.epoch(),
                bad.getMessage());
        Tuple3<Integer, String, String> q =
                Tuple3.of(task.caseIndex(), bad.file().toString(), bad.problem());
        if (bySource.putIfAbsent(task.caseIndex(), q) == null && listed != null) {
            listed.add(q.f1 + '\0' + q.f2);
        }
        skip();
    }

    /** Leaves one sample of a quarantined source out. */
    public synchronized void skip() {
        skipped++;
        if (counted != null) {
            counted.add(1L);
        }
    }

    /** Samples left out so far, the restored ones included. */
    synchronized long skipped() {
        return skipped;
    }

    /** Writes both into the operator state, for a checkpoint. */
    public synchronized void snapshot() throws Exception {
        quarantineState.update(new ArrayList<>(bySource.values()));
        skippedState.update(List.of(skipped));
    }
}
