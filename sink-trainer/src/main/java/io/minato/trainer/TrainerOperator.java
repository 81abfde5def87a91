package io.minato.trainer;

import io.minato.data.BadInputException;
import io.minato.loader.AccumulatorFiles;
import io.minato.loader.Quarantine;
import io.minato.loader.ReceivingOperator;
import io.minato.loader.SampleRecipe;
import io.minato.loader.TaskManagerUsage;
import io.minato.loader.pacing.QueueReport;
import io.minato.loader.pacing.WithCoordinator;
import io.minato.sample.Batch;
import io.minato.sample.SampleHandoff;
import io.minato.sample.SampleTask;
import io.minato.trainer.gpu.FlinkGpus;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer;
import org.apache.flink.core.io.SimpleVersionedSerialization;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.SavepointType;
import org.apache.flink.runtime.execution.Environment;
import org.apache.flink.runtime.operators.coordination.OperatorEventGateway;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.runtime.state.filesystem.AbstractFsCheckpointStorageAccess;
import org.apache.flink.runtime.taskmanager.TaskManagerRuntimeInfo;
import org.apache.flink.streaming.api.operators.BoundedOneInput;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.OperatorSnapshotFutures;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.tasks.StreamTask;
import org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailbox;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The trainer sink's operator: one {@link DeviceWriter} per subtask, fed the batches, told the end
 * of the input (it trains what it holds), its state in operator list state. What Flink's own sink
 * writer operator does, plus the one thing a Sink V2 writer cannot have: the task's runtime
 * context, from which the trainer takes the GPUs Flink's external resource framework gave this
 * TaskManager.
 */
final class TrainerOperator extends ReceivingOperator<Void>
        implements OneInputStreamOperator<Batch, Void>,
                BoundedOneInput,
                WithCoordinator.Coordinated {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(TrainerOperator.class);

    /**
     * How often the trainer looks at its queue and, when it changed, tells the job's worker
     * schedulers through its coordinator: a few times within a scheduler's tick.
     */
    static final long QUEUE_REPORT_MILLIS = 50;

    /**
     * The name and layout of Flink's sink writer state (each entry a versioned serialisation), so
     * that checkpoints taken while the trainer was a Sink V2 writer under the same uid restore.
     */
    private static final ListStateDescriptor<byte[]> STATE =
            new ListStateDescriptor<>("writer_raw_states", BytePrimitiveArraySerializer.INSTANCE);

    private final TrainerSink sink;

    private transient TrainerWriterStateSerializer serializer;
    private transient ListState<byte[]> state;
    private transient DeviceWriter writer;
    private transient LongCounter preparedAgain;
    private transient OperatorEventGateway coordinator;
    private transient QueueReport reported;
    private transient boolean toldRunning;
    private transient TaskManagerUsage.Share usage;
    private transient Quarantine quarantine;
    // The whole task's mail, run while a write waits: the input gate's priority events (unaligned
    // checkpoint barriers) are the task's mail, which an operator's own executor does not run.
    private transient MailboxExecutor mailbox;

    /** Savepoints under way, by checkpoint id. */
    private transient Map<Long, Savepoint> savepoints;

    /** A savepoint's folder, and whether the job stops with it. */
    private record Savepoint(URI folder, boolean stopping) {}

    TrainerOperator(TrainerSink sink) {
        super(SampleHandoff.TRAINER);
        this.sink = sink;
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        serializer = new TrainerWriterStateSerializer();
        state = context.getOperatorStateStore().getListState(STATE);
        List<TrainerWriterState> restored = new ArrayList<>();
        for (byte[] bytes : state.get()) {
            restored.add(SimpleVersionedSerialization.readVersionAndDeSerialize(serializer, bytes));
        }
        int device = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        TrainerWriterState mine = TrainerSink.restoredState(device, restored);
        // What a failed attempt parked has no taker now (the in-order loaders hand batches on).
        SampleHandoff.jvm()
                .startedAfter(
                        context.isRestored(), getRuntimeContext().getTaskInfo().getAttemptNumber());
        writer =
                sink.createWriter(
                        getRuntimeContext().getTaskInfo(),
                        getRuntimeContext().getJobInfo(),
                        getMetricGroup(),
                        FlinkGpus.of(
                                getRuntimeContext().getExternalResourceInfos(FlinkGpus.RESOURCE)),
                        threads(device),
                        replicas(),
                        mine);
        StreamTask<?, ?> task = getContainingTask();
        writer.account().queue().whileRestoring(() -> !task.isRunning());
        mailbox = task.getMailboxExecutorFactory().createExecutor(TaskMailbox.MIN_PRIORITY);
        if (sink.skipBadSamples()) {
            Quarantine q = Quarantine.of(context);
            quarantine = q;
            writer.account()
                    .leaveOutBadSamples(
                            new SampleRecipe.LeftOut() {
                                @Override
                                public boolean quarantined(SampleTask task) {
                                    return q.holds(task);
                                }

                                @Override
                                public void quarantine(SampleTask task, BadInputException bad) {
                                    q.add(task, bad);
                                }

                                @Override
                                public void skip() {
                                    q.skip();
                                }
                            });
        }
    }

    /** This trainer's share of its TaskManager's cores, in libtorch's threads. */
    private int threads(int device) {
        int devices = getRuntimeContext().getTaskInfo().getNumberOfParallelSubtasks();
        TaskManagerRuntimeInfo tm = getContainingTask().getEnvironment().getTaskManagerInfo();
        int threads = TorchThreads.perTrainer(tm.getConfiguration(), devices);
        LOG.info(
                "device {}: libtorch's CPU threads: {}",
                device,
                TorchThreads.chosenByUser()
                        ? "as OMP_NUM_THREADS or ai.djl.pytorch.num_threads say"
                        : threads + ", this trainer's share of its TaskManager's cores");
        return threads;
    }

    /**
     * How this trainer meets the other devices' replicas: through its coordinator, at this
     * TaskManager's address; all in this JVM in an operator harness, which has no coordinator.
     */
    private Replicas replicas() throws UnknownHostException {
        if (coordinator == null) {
            return Replicas.inJvm();
        }
        Environment env = getContainingTask().getEnvironment();
        TaskManagerRuntimeInfo tm = env.getTaskManagerInfo();
        String host = tm.getTaskManagerExternalAddress();
        if (host == null || host.isBlank()) {
            // A MiniCluster's TaskManagers name no address: they are all on this host.
            host = InetAddress.getLoopbackAddress().getHostAddress();
        }
        String bind = tm.getTaskManagerBindAddress();
        return new Replicas(
                TrainerRendezvous.through(
                        env.getOperatorCoordinatorEventGateway(), getOperatorID()),
                SampleHandoff.taskManagerOf(getMetricGroup()),
                host,
                InetAddress.getByName(bind != null ? bind : host));
    }

    @Override
    public void processElement(StreamRecord<Batch> element) throws Exception {
        tellRunningOnce(); // before a write that may wait for a step, and the timer with it
        writer.write(element.getValue(), mailbox::tryYield);
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        List<byte[]> bytes = new ArrayList<>();
        for (TrainerWriterState s : writer.snapshotState(context.getCheckpointId())) {
            bytes.add(SimpleVersionedSerialization.writeVersionAndSerialize(serializer, s));
        }
        state.update(bytes);
        if (quarantine != null) {
            quarantine.snapshot();
        }
    }

    /**
     * Notes a savepoint's folder (the run records it once complete, see {@link Savepoints}): a
     * savepoint's target is in its options, which only this form of the call is given.
     */
    @Override
    public OperatorSnapshotFutures snapshotState(
            long checkpointId,
            long timestamp,
            CheckpointOptions options,
            CheckpointStreamFactory storage)
            throws Exception {
        if (sink.outputDir() != null
                && options.getCheckpointType().isSavepoint()
                && !options.getTargetLocation().isDefaultReference()) {
            URI folder =
                    AbstractFsCheckpointStorageAccess.decodePathFromReference(
                                    options.getTargetLocation())
                            .toUri();
            boolean stopping =
                    options.getCheckpointType() instanceof SavepointType t
                            && t.isSynchronous()
                            && !t.shouldDrain();
            if (savepoints == null) {
                savepoints = new TreeMap<>();
            }
            savepoints.put(checkpointId, new Savepoint(folder, stopping));
        }
        return super.snapshotState(checkpointId, timestamp, options, storage);
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) throws Exception {
        super.notifyCheckpointComplete(checkpointId);
        if (savepoints == null) {
            return;
        }
        Savepoint done = savepoints.remove(checkpointId);
        savepoints.keySet().removeIf(id -> id < checkpointId); // aborted ones
        if (done != null && getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() == 0) {
            Savepoints.completed(Path.of(sink.outputDir()), done.folder(), done.stopping());
        }
    }

    @Override
    public void endInput() throws Exception {
        writer.endInput(mailbox::tryYield);
    }

    @Override
    public void coordinatorGateway(OperatorEventGateway gateway) {
        coordinator = gateway;
    }

    @Override
    public void open() throws Exception {
        super.open();
        preparedAgain = new LongCounter();
        getRuntimeContext().addAccumulator(TrainerSink.PREPARED_AGAIN, preparedAgain);
        usage = TaskManagerUsage.open(getRuntimeContext(), getMetricGroup());
        if (quarantine != null) {
            quarantine.open(getRuntimeContext());
        }
        if (coordinator != null) {
            // Workers in every TaskManager are paced by this queue (QueueCoordinator). While the
            // queue is full the task waits in write() and the timer with it: the queue is then
            // full, as last told.
            getProcessingTimeService()
                    .scheduleWithFixedDelay(time -> reportQueue(), 0, QUEUE_REPORT_MILLIS);
        }
    }

    private void reportQueue() {
        tellRunningOnce();
        QueueReport now = writer.account().queueReport();
        if (!now.equals(reported)) {
            reported = now;
            coordinator.sendEventToCoordinator(now);
        }
    }

    /**
     * Tells the coordinator once that this task runs, restored or not: after a restore, it asks for
     * a checkpoint once every trainer has said so ({@link CheckpointAfterRestore}).
     */
    private void tellRunningOnce() {
        if (!toldRunning && coordinator != null && getContainingTask().isRunning()) {
            toldRunning = true;
            coordinator.sendEventToCoordinator(new CheckpointAfterRestore.Running());
        }
    }

    @Override
    public void close() throws Exception {
        try {
            stopReceiving();
            if (writer != null) {
                if (preparedAgain != null) {
                    preparedAgain.add(writer.account().preparedAgain());
                    usage.close(true, Double.NaN);
                    AccumulatorFiles.write(
                            getRuntimeContext(),
                            Quarantine.with(TrainerSink.PREPARED_AGAIN, TaskManagerUsage.NAME));
                }
                writer.close();
            }
        } finally {
            super.close();
        }
    }
}
