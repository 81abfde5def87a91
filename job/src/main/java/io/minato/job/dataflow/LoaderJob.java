package io.minato.job.dataflow;

import io.minato.loader.AugmentOperator;
import io.minato.loader.BatchAssembler;
import io.minato.loader.DeviceKeys;
import io.minato.loader.DeviceOf;
import io.minato.loader.SampleChunks;
import io.minato.loader.SampleSource;
import io.minato.loader.SlowPath;
import io.minato.loader.SlowWorkerPartitioner;
import io.minato.loader.TimeoutPolicy;
import io.minato.loader.WorkerScheduler;
import io.minato.loader.baseline.DjlLoader;
import io.minato.loader.baseline.InOrderLoader;
import io.minato.loader.pacing.LastFailure;
import io.minato.loader.pacing.PacingCoordinator;
import io.minato.loader.pacing.WithCoordinator;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SampleTask;
import io.minato.sample.UnfinishedSample;
import io.minato.sample.serde.SampleTypes;
import io.minato.spi.BatchSink;
import io.minato.spi.Workload;
import io.minato.trainer.gpu.FlinkGpus;
import java.util.Objects;
import org.apache.flink.api.common.operators.SlotSharingGroup;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraphGenerator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.transformations.PartitionTransformation;

/**
 * The loader's dataflow, top to bottom, on a given environment and into a given sink of batches
 * ({@link BatchSink}; the DJL trainers' is {@code io.minato.trainer.TrainerSink}):
 *
 * <pre>
 * SampleSource (p=F) => AugmentOperator (fast, p=F) --main--> union -> keyBy(device dealt to it)
 *                              |--side "slow", own TM---> SlowPath (p=S) -^  -> BatchAssembler (p=G)
 *                                                                     -> the sink (p=G)
 * </pre>
 *
 * where => is a chain: each fast worker runs in the task of its own share of the sample tasks, so
 * that no task waits in a network buffer (see {@link SampleSource}).
 *
 * <p>or, for the in-order baseline, SampleSource -> InOrderLoader (W threads) -> the sink, and for
 * DJL's own loader, SampleSource -> DjlLoader (DJL's DataIterable on W threads) -> the sink.
 *
 * <p>This package is the Java API: it knows nothing of the command line that drives it.
 */
public final class LoaderJob {

    /** The run seed when none is given. */
    public static final long DEFAULT_SEED = 7;

    /** Which loader builds the batches. */
    public enum Loader {
        minato,
        inorder,
        djl
    }

    /**
     * What the dataflow needs to know. {@code scheduled}: Minato's workers (fast and slow) take
     * their turns from the job's {@link WorkerScheduler} in each TaskManager ({@code --workers
     * auto}); otherwise each prepares whenever it has work.
     */
    public record Settings(
            Loader loader,
            Workload<?> workload,
            int epochs,
            long seed,
            int batch,
            int devices,
            int fastWorkers,
            int slowWorkers,
            TimeoutPolicy timeout,
            boolean scheduled,
            boolean skipBadSamples) {}

    /**
     * Samples cross operators as identities of a few dozen bytes while their patches wait in the
     * handoff (see {@code SampleHandoff}), whose room the receiver frees by reading them: flush
     * every record rather than let it wait up to Flink's 100 ms buffer timeout in a half-empty
     * buffer (that wait held the CPU-bound run to 65 samples/s).
     */
    static final long HANDOFF_FLUSH_MS = 0;

    /**
     * The slot sharing group of the batchers and trainers when their slots are apart from the
     * preparation's (Flink's default group: sources, fast and slow workers); one slot holds one
     * device's batcher and trainer (chained).
     */
    public static final String TRAINING = "training";

    /** Where the batchers and trainers run: which slots they take. */
    public enum TrainingSlots {
        /** Each shares a slot with a preparation subtask: one TaskManager, a local environment. */
        SHARED,
        /**
         * Slots of their own (slot sharing group {@link #TRAINING}): on a cluster preparation may
         * run in other TaskManagers than training.
         */
        APART,
        /**
         * Slots of their own that each need one GPU of Flink's external resource {@code gpu} (a
         * fine-grained resource requirement): Flink puts them only in TaskManagers that declare
         * GPUs, and preparation anywhere.
         */
        ON_GPUS
    }

    /**
     * What a training slot asks for besides its GPU under {@link TrainingSlots#ON_GPUS}: Flink's
     * fine-grained requirements need CPU and heap; the managed memory is the batcher's RocksDB. The
     * trainer's own memory is native (DJL) and not Flink's to account. Half a core, so that a
     * TaskManager that declares a core per GPU (Flink's default when it has a slot per GPU) keeps
     * room for preparation that lands beside its trainers: Flink's slot manager matches
     * requirements in no particular order and has no priorities, so preparation matched first must
     * never take a trainer's place (seen: two preparation slots of one core each took the two cores
     * of the TaskManager with both GPUs, and the trainers waited for ever).
     */
    static final double TRAINING_SLOT_CPU = 0.5;

    static final int TRAINING_SLOT_HEAP_MB = 128;
    static final int TRAINING_SLOT_MANAGED_MB = 64;

    /**
     * A preparation slot's requirement under {@link TrainingSlots#ON_GPUS}: a token of CPU and a
     * nominal heap (Flink accounts for both but bounds neither per slot). How many workers prepare
     * at once is the worker scheduler's business, by the CPU its TaskManager uses; reserving whole
     * cores here would only let preparation take a GPU TaskManager's cores from its trainers.
     */
    static final double PREPARATION_SLOT_CPU = 0.1;

    static final int PREPARATION_SLOT_HEAP_MB = 32;

    /**
     * Slots the job needs in all: its widest operator's parallelism, or with the training apart the
     * preparation's widest plus one per device.
     */
    public int slots() {
        Settings s = settings;
        return slots(s.loader(), s.fastWorkers(), s.slowWorkers(), s.devices(), trainingSlots);
    }

    /** {@link #slots()} of a job of these settings, before it is built. */
    public static int slots(Loader loader, int fast, int slow, int devices, TrainingSlots where) {
        int preparation = loader == Loader.minato ? Math.max(fast, slow) : 1;
        return where == TrainingSlots.SHARED
                ? Math.max(preparation, devices)
                : preparation + devices;
    }

    /** {@link #networkBuffers(Loader, int, int, int)} of this job. */
    public long networkBuffers() {
        Settings s = settings;
        return networkBuffers(s.loader(), s.fastWorkers(), s.slowWorkers(), s.devices());
    }

    /**
     * Network buffers a job of these settings needs in one TaskManager (the embedded run), by
     * Flink's rule for a streaming task whose channels are all local: an input gate's floating pool
     * takes up to {@link #FLOATING_PER_GATE} (a local channel has no exclusive buffers, a remote
     * one would take 2 more); an output takes one per subpartition and one more at least, 2 per
     * subpartition and 8 more at most. The workers' outputs to the batchers get their most, so that
     * the workers run ahead while a batcher is busy; the fast workers' output to every slow worker
     * (all-to-all, see {@link SlowWorkerPartitioner}; small records, in place) its least: its F x S
     * subpartitions are most of a wide job's count.
     */
    public static long networkBuffers(Loader loader, int fast, int slow, int devices) {
        long g = devices;
        long floating = FLOATING_PER_GATE;
        long toBatchers = 2 * g + floating;
        if (loader != Loader.minato) {
            return toBatchers + g * floating; // one loader, one channel to each trainer
        }
        long f = fast;
        long w = slow;
        long fastTasks = f * (toBatchers + (w + 1));
        long slowTasks = w * (floating + toBatchers);
        long batchers = g * 2 * floating; // a gate for the fast samples, one for the slow
        return fastTasks + slowTasks + batchers;
    }

    /** Flink's floating buffers per input gate ({@code floating-buffers-per-gate}). */
    static final int FLOATING_PER_GATE = 8;

    private final Settings settings;
    private final BatchSink sink;
    private final TrainingSlots trainingSlots;
    private int pieceBytes = SampleChunks.MAX_BYTES;

    public LoaderJob(Settings settings, BatchSink sink) {
        this(settings, sink, TrainingSlots.SHARED);
    }

    /**
     * @param trainingSlots which slots the batchers and trainers take
     */
    public LoaderJob(Settings settings, BatchSink sink, TrainingSlots trainingSlots) {
        this.settings = Objects.requireNonNull(settings, "settings");
        this.sink = Objects.requireNonNull(sink, "sink");
        this.trainingSlots = Objects.requireNonNull(trainingSlots, "trainingSlots");
    }

    /**
     * This job, its workers sending a sample that crosses to another TaskManager in pieces of at
     * most {@code maxBytes} of its patch ({@link SampleChunks#MAX_BYTES} unless told): for tests,
     * whose samples are far smaller than a real one.
     */
    public LoaderJob sendingPiecesOf(int maxBytes) {
        if (maxBytes < 1) {
            throw new IllegalArgumentException("piece bytes must be >= 1: " + maxBytes);
        }
        this.pieceBytes = maxBytes;
        return this;
    }

    /** Builds a job from code: {@code set*} required, {@code opt*} optional. */
    public static Builder builder() {
        return new Builder();
    }

    public Settings settings() {
        return settings;
    }

    /**
     * A {@link LoaderJob} from code, in the style of DJL's and Flink's builders: the workload and
     * the trainers are required, the rest has the train command's defaults (Minato's loader, one
     * epoch, seed 7, batch 2, one device, one fast and one slow worker, the automatic deadline).
     *
     * <pre>{@code
     * LoaderJob.builder()
     *         .setWorkload(new Workload<>("mine", mySamples, myTransforms))
     *         .setTrainer(TrainerSink.builder().setAccelerator(factory).build())
     *         .optEpochs(10)
     *         .optBatchSize(8)
     *         .optDevices(2)
     *         .build()
     *         .build(StreamExecutionEnvironment.getExecutionEnvironment());
     * }</pre>
     */
    public static final class Builder {
        private Workload<?> workload;
        private BatchSink trainer;
        private Loader loader = Loader.minato;
        private int epochs = 1;
        private long seed = DEFAULT_SEED;
        private int batch = 2;
        private int devices = 1;
        private int fastWorkers = 1;
        private int slowWorkers = 1;
        private TimeoutPolicy timeout = TimeoutPolicy.parse("auto");
        private boolean scheduled;
        private TrainingSlots trainingSlots = TrainingSlots.SHARED;
        private boolean skipBadSamples;

        private Builder() {}

        /** The samples and how each is prepared. */
        public Builder setWorkload(Workload<?> workload) {
            this.workload = Objects.requireNonNull(workload, "workload");
            return this;
        }

        /**
         * Where the batches go: one consumer per device (the DJL trainers' {@code TrainerSink}).
         */
        public Builder setTrainer(BatchSink trainer) {
            this.trainer = Objects.requireNonNull(trainer, "trainer");
            return this;
        }

        /** Which loader builds the batches; Minato's by default. */
        public Builder optLoader(Loader loader) {
            this.loader = Objects.requireNonNull(loader, "loader");
            return this;
        }

        public Builder optEpochs(int epochs) {
            this.epochs = positive("epochs", epochs);
            return this;
        }

        /** The run seed: every sample is a function of (seed, epoch, index). */
        public Builder optSeed(long seed) {
            this.seed = seed;
            return this;
        }

        /** Samples per batch per device. */
        public Builder optBatchSize(int batch) {
            this.batch = positive("batch size", batch);
            return this;
        }

        /** Devices (trainer subtasks), each with its own batch queue. */
        public Builder optDevices(int devices) {
            this.devices = positive("devices", devices);
            return this;
        }

        /**
         * Preparation workers: Minato's fast and slow ones (the baselines run {@code fast + slow}
         * threads); each prepares whenever it has work.
         */
        public Builder optWorkers(int fast, int slow) {
            this.fastWorkers = positive("fast workers", fast);
            this.slowWorkers = positive("slow workers", slow);
            this.scheduled = false;
            return this;
        }

        /**
         * As {@link #optWorkers}, but the {@link WorkerScheduler} of each TaskManager sets how many
         * may prepare at once, from the batch queues and the CPU load (Minato's loader only).
         */
        public Builder optScheduledWorkers(int fast, int slow) {
            optWorkers(fast, slow);
            this.scheduled = true;
            return this;
        }

        /** The fast/slow deadline; {@code auto} by default. */
        public Builder optTimeout(TimeoutPolicy timeout) {
            this.timeout = Objects.requireNonNull(timeout, "timeout");
            return this;
        }

        /**
         * Which slots the batchers and trainers take ({@link TrainingSlots}); shared with
         * preparation by default. A cluster of several TaskManagers wants them apart, so that
         * preparation may run on other hosts; one TaskManager gains nothing from it but needs more
         * slots (a plain local environment gives a job only as many as its widest operator).
         */
        public Builder optTrainingSlots(TrainingSlots slots) {
            this.trainingSlots = Objects.requireNonNull(slots, "slots");
            return this;
        }

        /**
         * Whether a sample that meets bad input while the run prepares it (a file truncated or
         * replaced since it was checked, an image that does not decode) is quarantined for the rest
         * of the run instead of failing the job ({@code --on-bad-sample skip}). Off by default.
         */
        public Builder optSkipBadSamples(boolean skip) {
            this.skipBadSamples = skip;
            return this;
        }

        public LoaderJob build() {
            if (workload == null || trainer == null) {
                throw new IllegalStateException("a loader job needs a workload and a trainer");
            }
            return new LoaderJob(
                    new Settings(
                            loader,
                            workload,
                            epochs,
                            seed,
                            batch,
                            devices,
                            fastWorkers,
                            slowWorkers,
                            timeout,
                            scheduled && loader == Loader.minato,
                            skipBadSamples),
                    trainer,
                    trainingSlots);
        }

        private static int positive(String name, int value) {
            if (value < 1) {
                throw new IllegalArgumentException(name + " must be >= 1: " + value);
            }
            return value;
        }
    }

    /** Adds the dataflow to the environment; the caller executes it. */
    public void build(StreamExecutionEnvironment env) {
        Settings s = settings;
        if (sink.keepsSamplesPerDevice() && s.loader() != Loader.minato && s.devices() > 1) {
            throw new IllegalArgumentException(
                    "the "
                            + s.loader()
                            + " loader deals whole batches to the devices in turn: serving several"
                            + " ranks takes the minato loader");
        }
        if (trainingSlots == TrainingSlots.ON_GPUS) {
            // Every slot with a requirement of its own: a slot of unknown size would take its
            // share of every resource of its TaskManager, GPUs included (a TaskManager of 8 slots
            // and 2 GPUs gave two preparation slots half a GPU, and the second trainer none).
            env.registerSlotSharingGroup(
                    SlotSharingGroup.newBuilder(StreamGraphGenerator.DEFAULT_SLOT_SHARING_GROUP)
                            .setCpuCores(PREPARATION_SLOT_CPU)
                            .setTaskHeapMemoryMB(PREPARATION_SLOT_HEAP_MB)
                            .build());
        }
        // Minato's fast workers each take their own share of the tasks, chained to it; the
        // baselines' loaders are one operator with threads of their own.
        int shares = s.loader() == Loader.minato ? s.fastWorkers() : 1;
        DataStream<SampleTask> tasks =
                SampleSource.tasks(env, s.workload().size(), s.epochs(), s.seed(), shares);
        DataStream<Batch> batches =
                switch (s.loader()) {
                    case minato -> minato(tasks);
                    case inorder -> inOrder(tasks);
                    case djl -> djl(tasks);
                };
        inTrainingSlots(sink.trainOn(batches))
                .uid("trainer-sink")
                .setParallelism(s.devices())
                .setMaxParallelism(DeviceKeys.MAX_PARALLELISM);
    }

    /** Puts a batcher or trainer operator into the slots {@link #trainingSlots} says. */
    private <T> SingleOutputStreamOperator<T> inTrainingSlots(SingleOutputStreamOperator<T> op) {
        return switch (trainingSlots) {
            case SHARED -> op.slotSharingGroup(StreamGraphGenerator.DEFAULT_SLOT_SHARING_GROUP);
            case APART -> op.slotSharingGroup(TRAINING);
            case ON_GPUS ->
                    op.slotSharingGroup(
                            SlotSharingGroup.newBuilder(TRAINING)
                                    .setCpuCores(TRAINING_SLOT_CPU)
                                    .setTaskHeapMemoryMB(TRAINING_SLOT_HEAP_MB)
                                    .setManagedMemoryMB(TRAINING_SLOT_MANAGED_MB)
                                    .setExternalResource(FlinkGpus.RESOURCE, 1.0)
                                    .build());
        };
    }

    private DataStream<Batch> minato(DataStream<SampleTask> tasks) {
        Settings s = settings;
        // A device served to a process outside the job always gets the same samples.
        long bySample = sink.keepsSamplesPerDevice() ? s.workload().size() : 0;
        DeviceKeys keys = new DeviceKeys(s.devices());
        SingleOutputStreamOperator<PreparedSample> fast =
                tasks.transform(
                                "AugmentOperator",
                                SampleTypes.PREPARED_SAMPLE,
                                paced(
                                        new AugmentOperator(
                                                        s.workload(),
                                                        s.timeout(),
                                                        s.devices(),
                                                        s.slowWorkers(),
                                                        s.scheduled())
                                                .skippingBadSamples(s.skipBadSamples())
                                                .sendingPiecesOf(pieceBytes)
                                                .dealingBySample(bySample)))
                        .uid("augment")
                        .setParallelism(s.fastWorkers())
                        .setBufferTimeout(HANDOFF_FLUSH_MS);
        DataStream<UnfinishedSample> cutOff = fast.getSideOutput(AugmentOperator.SLOW);
        DataStream<PreparedSample> slow =
                // Each cut-off sample to the slow worker its fast worker chose, one in its own
                // TaskManager where there is one; all-to-all, since unaligned barriers did not
                // reach a waiting slow worker over a pointwise edge (see SlowWorkerPartitioner).
                new DataStream<>(
                                cutOff.getExecutionEnvironment(),
                                new PartitionTransformation<>(
                                        cutOff.getTransformation(), new SlowWorkerPartitioner()))
                        .transform(
                                "SlowPath",
                                SampleTypes.PREPARED_SAMPLE,
                                paced(
                                        new SlowPath(s.workload(), s.devices(), s.scheduled())
                                                .skippingBadSamples(s.skipBadSamples())
                                                .sendingPiecesOf(pieceBytes)
                                                .dealingBySample(bySample)))
                        .uid("slow-path")
                        .setParallelism(s.slowWorkers())
                        .setBufferTimeout(HANDOFF_FLUSH_MS);
        return inTrainingSlots(
                        fast.union(slow)
                                .keyBy(new DeviceOf(keys), Types.INT)
                                .transform(
                                        "BatchAssembler",
                                        SampleTypes.BATCH,
                                        new BatchAssembler(keys, s.batch())))
                .uid("batch-assembler")
                .setParallelism(s.devices())
                .setMaxParallelism(DeviceKeys.MAX_PARALLELISM);
    }

    /**
     * A worker operator with the coordinator that tells it how every device's queue stands, for the
     * worker scheduler of its TaskManager.
     */
    private static <IN> WithCoordinator<IN, PreparedSample> paced(
            OneInputStreamOperator<IN, PreparedSample> worker) {
        return WithCoordinator.of(worker, (name, id) -> PacingCoordinator.provider(id, name));
    }

    /**
     * A baseline's loader with a coordinator that notes its failures, so that a job stopped for
     * failing too often names them (the workers' own coordinator does so for Minato's).
     */
    private static <IN> WithCoordinator<IN, Batch> witnessed(
            OneInputStreamOperator<IN, Batch> loader) {
        return WithCoordinator.of(loader, (name, id) -> LastFailure.witness(id));
    }

    private DataStream<Batch> inOrder(DataStream<SampleTask> tasks) {
        Settings s = settings;
        int workers = s.fastWorkers() + s.slowWorkers();
        // Batch k goes to device k % G. Not partitionCustom: Flink refuses custom partitioners
        // under unaligned checkpoints; device keys land one device per subtask instead.
        DeviceKeys keys = new DeviceKeys(s.devices());
        // In the trainers' slots, as PyTorch's DataLoader runs in the training process. Its
        // batches carry how long it held each back, to whichever TaskManager trains on them.
        return inTrainingSlots(
                        tasks.transform(
                                "InOrderLoader",
                                TypeInformation.of(Batch.class),
                                witnessed(
                                        InOrderLoader.builder()
                                                .setWorkload(s.workload())
                                                .setBatchSize(s.batch())
                                                .setDevices(s.devices())
                                                .setWorkers(workers)
                                                .optSkipBadSamples(s.skipBadSamples())
                                                .build())))
                .uid("inorder-loader")
                .setParallelism(1)
                .setBufferTimeout(HANDOFF_FLUSH_MS)
                .keyBy(b -> keys.keyOf(b.device()), Types.INT);
    }

    private DataStream<Batch> djl(DataStream<SampleTask> tasks) {
        Settings s = settings;
        DeviceKeys keys = new DeviceKeys(s.devices());
        // In the trainers' slots, as DJL's loader runs in the training process (see inOrder).
        return inTrainingSlots(
                        tasks.transform(
                                "DjlLoader",
                                TypeInformation.of(Batch.class),
                                witnessed(
                                        new DjlLoader(
                                                        s.workload(),
                                                        s.batch(),
                                                        s.devices(),
                                                        s.fastWorkers() + s.slowWorkers())
                                                .skippingBadSamples(s.skipBadSamples()))))
                .uid("djl-loader")
                .setParallelism(1)
                .setBufferTimeout(HANDOFF_FLUSH_MS)
                .keyBy(b -> keys.keyOf(b.device()), Types.INT);
    }
}
