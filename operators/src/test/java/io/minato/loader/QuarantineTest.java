package io.minato.loader;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.sample.SampleTask;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.BoundedOneInput;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailbox;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The quarantine's operator state in a Flink job, as the loader's operators keep it. */
class QuarantineTest {

    @RegisterExtension
    static final MiniClusterExtension CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(2) // a subtask in each
                            .setNumberSlotsPerTaskManager(1)
                            .build());

    // The MiniCluster runs in this JVM: its operators count here.
    private static final AtomicInteger ENDED = new AtomicInteger();
    private static final AtomicBoolean FIRST_CLOSED = new AtomicBoolean();
    private static final AtomicInteger COMPLETED_AFTER = new AtomicInteger();

    /**
     * Workers finish unevenly at the end of a run. Flink aborts every checkpoint while an operator
     * with union state has some subtasks finished and others not, so the quarantine is split state:
     * the subtask still running goes on checkpointing after the other one finished.
     */
    @Test
    void shouldLetCheckpointsCompleteWhileSomeSubtasksHaveFinished() throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.enableCheckpointing(50);
        env.setParallelism(2);
        env.fromSequence(0, 1)
                .transform("quarantined", env.fromSequence(0, 0).getType(), new Quarantined())
                .sinkTo(new DiscardingSink<>());
        env.execute("quarantine while finishing");

        assertThat(FIRST_CLOSED).as("one subtask finished first").isTrue();
        assertThat(COMPLETED_AFTER.get())
                .as("checkpoints completed after one of two subtasks finished")
                .isGreaterThanOrEqualTo(3);
    }

    /** A checkpoint of a build that kept the quarantined sources as union state restores. */
    @Test
    void shouldRestoreTheSourcesThatEarlierBuildsKeptAsUnionState() throws Exception {
        OperatorSubtaskState old;
        try (var h = new OneInputStreamOperatorTestHarness<Long, Long>(new UnionQuarantine())) {
            h.open();
            old = h.snapshot(1, 1);
        }
        Quarantined now = new Quarantined();
        try (var h = new OneInputStreamOperatorTestHarness<Long, Long>(now)) {
            h.initializeState(old);
            h.open();
            assertThat(now.quarantine.holds(new SampleTask(7, 3, 40, 5))).isTrue();
            assertThat(now.quarantine.holds(new SampleTask(7, 3, 41, 6))).isFalse();
            assertThat(now.quarantine.skipped()).isZero();
        }
    }

    /** What earlier builds wrote: case 5 quarantined, as union state named "quarantine". */
    private static final class UnionQuarantine extends AbstractStreamOperator<Long>
            implements OneInputStreamOperator<Long, Long> {
        @Override
        public void initializeState(StateInitializationContext context) throws Exception {
            super.initializeState(context);
            context.getOperatorStateStore()
                    .getUnionListState(
                            new ListStateDescriptor<>(
                                    "quarantine",
                                    Types.TUPLE(Types.INT, Types.STRING, Types.STRING)))
                    .update(List.of(Tuple3.of(5, "case_00005_x.npy", "not a .npy file")));
        }

        @Override
        public void processElement(StreamRecord<Long> element) {}
    }

    /**
     * Keeps a quarantine. The first subtask to end its input finishes at once; the other yields to
     * its mailbox, checkpointing, until three checkpoints completed after the first one closed (10
     * s at most).
     */
    private static final class Quarantined extends AbstractStreamOperator<Long>
            implements OneInputStreamOperator<Long, Long>, BoundedOneInput {
        private Quarantine quarantine;
        private transient boolean first;

        @Override
        public void initializeState(StateInitializationContext context) throws Exception {
            super.initializeState(context);
            quarantine = Quarantine.of(context);
        }

        @Override
        public void snapshotState(StateSnapshotContext context) throws Exception {
            super.snapshotState(context);
            quarantine.snapshot();
        }

        @Override
        public void processElement(StreamRecord<Long> element) {
            output.collect(element);
        }

        @Override
        public void endInput() throws Exception {
            first = ENDED.getAndIncrement() == 0;
            if (first) {
                return;
            }
            MailboxExecutor mailbox =
                    getContainingTask()
                            .getMailboxExecutorFactory()
                            .createExecutor(TaskMailbox.MIN_PRIORITY); // checkpoints' mails too
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (COMPLETED_AFTER.get() < 3 && System.nanoTime() < deadline) {
                if (!mailbox.tryYield()) {
                    Thread.sleep(5);
                }
            }
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) throws Exception {
            super.notifyCheckpointComplete(checkpointId);
            if (FIRST_CLOSED.get() && !first) {
                COMPLETED_AFTER.incrementAndGet();
            }
        }

        @Override
        public void close() throws Exception {
            super.close();
            if (first) {
                FIRST_CLOSED.set(true);
            }
        }
    }
}
