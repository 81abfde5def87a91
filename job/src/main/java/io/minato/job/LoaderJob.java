package io.minato.job;

import io.minato.loader.AugmentOperator;
import io.minato.loader.BatchAssembler;
import io.minato.loader.DeviceKeys;
import io.minato.loader.DeviceOf;
import io.minato.loader.DjlLoader;
import io.minato.loader.InOrderLoader;
import io.minato.loader.SampleSource;
import io.minato.loader.SlowPath;
import io.minato.loader.TimeoutPolicy;
import io.minato.loader.WorkerScheduler;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SampleTask;
import io.minato.sample.serde.SampleTypes;
import io.minato.spi.Workload;
import io.minato.trainer.TrainerSink;
import java.util.Objects;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraphGenerator;

/**
 * The loader's dataflow, top to bottom, on a given environment and into a given trainer sink:
 *
 * <pre>
 * SampleSource (p=F) => AugmentOperator (fast, p=F) --main--> union -> keyBy(device dealt to it)
 *                              |--side "slow", rescale--> SlowPath (p=S) -^  -> BatchAssembler (p=G)
 *                                                                     -> TrainerSink (p=G)
 * </pre>
 *
 * where => is a chain: each fast worker runs in the task of its own share of the sample tasks, so
 * that no task waits in a network buffer (see {@link SampleSource}).
 *
 * <p>or, for the in-order baseline, SampleSource -> InOrderLoader (W threads) -> TrainerSink, and
 * for DJL's own loader, SampleSource -> DjlLoader (DJL's DataIterable on W threads) -> TrainerSink.
 */
public final class LoaderJob {

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
            boolean scheduled) {}

    /**
     * Samples cross operators as identities of a few dozen bytes while their patches wait in the
     * handoff (see {@code SampleHandoff}), whose room the receiver frees by reading them: flush
     * every record rather than let it wait up to Flink's 100 ms buffer timeout in a half-empty
     * buffer (that wait held the CPU-bound run to 65 samples/s).
     */
    static final long HANDOFF_FLUSH_MS = 0;

    /**
     * The slot sharing group of the batchers and trainers when {@link Builder#optTrainingApart}:
     * their slots are apart from the preparation's (Flink's default group: sources, fast and slow
     * workers), so that on a cluster Flink can place preparation in any TaskManager and training
     * where the devices are; one slot holds one device's batcher and trainer (chained).
     */
    public static final String TRAINING = "training";

    /**
     * Slots the job needs in all: its widest operator's parallelism, or with the training apart the
     * preparation's widest plus one per device.
     */
    public int slots() {
        Settings s = settings;
        int preparation =
                s.loader() == Loader.minato ? Math.max(s.fastWorkers(), s.slowWorkers()) : 1;
        return trainingApart ? preparation + s.devices() : Math.max(preparation, s.devices());
    }

    /**
     * Network buffers the job needs if all of it runs in one TaskManager (the embedded run), by
     * Flink's rule for a streaming task: an input gate takes 2 buffers per channel and 8 floating
     * ones, an output one per subpartition and one more. The fast and slow workers each feed every
     * device's batcher (F x G and S x G channels) and the slow workers pointwise (about one channel
     * each), so the count grows linearly with the workers for a given number of devices.
     */
    public long networkBuffers() {
        Settings s = settings;
        long g = s.devices();
        if (s.loader() != Loader.minato) {
            return (g + 1) + g * (2 + 8); // one loader, one channel to each trainer
        }
        long f = s.fastWorkers();
        long w = s.slowWorkers();
        long slowPerFast = (w + f - 1) / f; // a pointwise edge's channels on each side
        long fastPerSlow = (f + w - 1) / w;
        long fastTasks = f * ((g + 1) + (slowPerFast + 1));
        long slowTasks = w * ((2 * fastPerSlow + 8) + (g + 1));
        long batchers = g * ((2 * f + 8) + (2 * w + 8));
        return fastTasks + slowTasks + batchers;
    }

    private final Settings settings;
    private final TrainerSink sink;
    private final boolean trainingApart;

    public LoaderJob(Settings settings, TrainerSink sink) {
        this(settings, sink, false);
    }

    /**
     * @param trainingApart whether the batchers and trainers get slots of their own (the slot
     *     sharing group {@link #TRAINING}) rather than share each slot with a preparation subtask
     */
    public LoaderJob(Settings settings, TrainerSink sink, boolean trainingApart) {
        this.settings = Objects.requireNonNull(settings, "settings");
        this.sink = Objects.requireNonNull(sink, "sink");
        this.trainingApart = trainingApart;
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
        private TrainerSink trainer;
        private Loader loader = Loader.minato;
        private int epochs = 1;
        private long seed = DataOptions.DEFAULT_SEED;
        private int batch = 2;
        private int devices = 1;
        private int fastWorkers = 1;
        private int slowWorkers = 1;
        private TimeoutPolicy timeout = TimeoutPolicy.parse("auto");
        private boolean scheduled;
        private boolean trainingApart;

        private Builder() {}

        /** The samples and how each is prepared. */
        public Builder setWorkload(Workload<?> workload) {
            this.workload = Objects.requireNonNull(workload, "workload");
            return this;
        }

        /** Where the batches go: one trainer per device. */
        public Builder setTrainer(TrainerSink trainer) {
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
         * Gives the batchers and trainers slots of their own (slot sharing group {@link
         * #TRAINING}), apart from preparation's: on a cluster of several TaskManagers, so that
         * preparation may run on other hosts than training. One TaskManager gains nothing from it
         * but needs more slots (a plain local environment gives a job only as many as its widest
         * operator).
         */
        public Builder optTrainingApart(boolean apart) {
            this.trainingApart = apart;
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
                            scheduled && loader == Loader.minato),
                    trainer,
                    trainingApart);
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
        sink.trainOn(batches)
                .uid("trainer-sink")
                .slotSharingGroup(trainingSlots())
                .setParallelism(s.devices())
                .setMaxParallelism(DeviceKeys.MAX_PARALLELISM);
    }

    /** The batchers' and trainers' slot sharing group: their own, or the default one. */
    private String trainingSlots() {
        return trainingApart ? TRAINING : StreamGraphGenerator.DEFAULT_SLOT_SHARING_GROUP;
    }

    private DataStream<Batch> minato(DataStream<SampleTask> tasks) {
        Settings s = settings;
        DeviceKeys keys = new DeviceKeys(s.devices());
        SingleOutputStreamOperator<PreparedSample> fast =
                tasks.transform(
                                "AugmentOperator",
                                SampleTypes.PREPARED_SAMPLE,
                                new AugmentOperator(
                                        s.workload(),
                                        s.timeout(),
                                        s.devices(),
                                        s.slowWorkers(),
                                        s.scheduled()))
                        .uid("augment")
                        .setParallelism(s.fastWorkers())
                        .setBufferTimeout(HANDOFF_FLUSH_MS);
        DataStream<PreparedSample> slow =
                fast.getSideOutput(AugmentOperator.SLOW)
                        // Pointwise: each fast worker feeds its own slow worker(s), usually in
                        // the same slot, so the channels grow with the workers, not their square.
                        .rescale()
                        .transform(
                                "SlowPath",
                                SampleTypes.PREPARED_SAMPLE,
                                new SlowPath(s.workload(), s.devices(), s.scheduled()))
                        .uid("slow-path")
                        .setParallelism(s.slowWorkers())
                        .setBufferTimeout(HANDOFF_FLUSH_MS);
        return fast.union(slow)
                .keyBy(new DeviceOf(keys), Types.INT)
                .transform("BatchAssembler", SampleTypes.BATCH, new BatchAssembler(keys, s.batch()))
                .uid("batch-assembler")
                .slotSharingGroup(trainingSlots())
                .setParallelism(s.devices())
                .setMaxParallelism(DeviceKeys.MAX_PARALLELISM);
    }

    private DataStream<Batch> inOrder(DataStream<SampleTask> tasks) {
        Settings s = settings;
        int workers = s.fastWorkers() + s.slowWorkers();
        // Batch k goes to device k % G. Not partitionCustom: Flink refuses custom partitioners
        // under unaligned checkpoints; device keys land one device per subtask instead.
        DeviceKeys keys = new DeviceKeys(s.devices());
        return tasks.transform(
                        "InOrderLoader",
                        TypeInformation.of(Batch.class),
                        InOrderLoader.builder()
                                .setWorkload(s.workload())
                                .setBatchSize(s.batch())
                                .setDevices(s.devices())
                                .setWorkers(workers)
                                .build())
                .uid("inorder-loader")
                .setParallelism(1)
                .setBufferTimeout(HANDOFF_FLUSH_MS)
                .keyBy(b -> keys.keyOf(b.device()), Types.INT);
    }

    private DataStream<Batch> djl(DataStream<SampleTask> tasks) {
        Settings s = settings;
        DeviceKeys keys = new DeviceKeys(s.devices());
        return tasks.transform(
                        "DjlLoader",
                        TypeInformation.of(Batch.class),
                        new DjlLoader(
                                s.workload(),
                                s.batch(),
                                s.devices(),
                                s.fastWorkers() + s.slowWorkers()))
                .uid("djl-loader")
                .setParallelism(1)
                .setBufferTimeout(HANDOFF_FLUSH_MS)
                .keyBy(b -> keys.keyOf(b.device()), Types.INT);
    }
}
