package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.data.EpochOrder;
import io.minato.job.dataflow.LoaderJob;
import io.minato.job.report.ReportAssembly;
import io.minato.job.report.RunReport;
import io.minato.loader.AugmentOperator;
import io.minato.loader.CacheMetrics;
import io.minato.loader.PrepTimes;
import io.minato.loader.Receivers;
import io.minato.loader.TimeoutPolicy;
import io.minato.loader.WorkerScheduler;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.spi.BatchSink;
import io.minato.spi.FileMemo;
import io.minato.spi.Workload;
import io.minato.trainer.Accelerator;
import io.minato.trainer.AcceleratorFactory;
import io.minato.trainer.SimulatedAccelerator;
import io.minato.trainer.StepResult;
import io.minato.trainer.TraceFiles;
import io.minato.trainer.TrainerSink;
import io.minato.workload.images.ImageConfig;
import io.minato.workload.images.ImageFile;
import io.minato.workload.images.ImageFolder;
import io.minato.workload.images.ImageSetGenerator;
import io.minato.workload.images.ImageTransforms;
import io.minato.workload.kits19.CaseCache;
import io.minato.workload.kits19.CaseFiles;
import io.minato.workload.kits19.CaseTable;
import io.minato.workload.kits19.Dataset;
import io.minato.workload.kits19.KitsLikeGenerator;
import io.minato.workload.kits19.TransformConfig;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.execution.ExecutionState;
import org.apache.flink.runtime.jobgraph.JobVertex;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The whole job on one shared MiniCluster: RocksDB, unaligned checkpoints, the real operators. A
 * loader that deadlocks would hang the job: the timeout fails the test instead of the CI run.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class LoaderJobTest {
    private static final int DEVICES = 2;
    private static final int BATCH = 2;
    private static final long SEED = 11;

    // Two TaskManagers: every test here also holds when Flink puts a producer and its receiver in
    // different TaskManagers (samples then cross with their bytes), not only in one JVM's handoff.
    @RegisterExtension
    static final MiniClusterExtension CLUSTER =
            MiniClusterJobs.cluster(2, 2, FlinkSetup.networkMemory(new Configuration(), 64));

    // The MiniCluster runs in this JVM: the injected fault and its counters are seen here.
    private static final AtomicInteger SNAPSHOTS = new AtomicInteger();
    private static final List<String> OWN_SINK = new CopyOnWriteArrayList<>();
    private static final AtomicBoolean FAILED = new AtomicBoolean();
    private static final AtomicBoolean HOLDING = new AtomicBoolean();
    private static final AtomicBoolean WORKERS_DONE = new AtomicBoolean();
    private static final AtomicInteger SNAPSHOTS_AFTER_WORKERS = new AtomicInteger();
    private static final AtomicInteger FAILURES = new AtomicInteger();
    private static final AtomicLong SNAPSHOT_IDS = new AtomicLong();
    private static final List<Long> RESTORED = new CopyOnWriteArrayList<>();

    /** Device 0's steps trained in all (replays included), by snapshot and at each failure. */
    private static final AtomicLong DEVICE0_STEPS = new AtomicLong();

    private static final Map<Long, Long> SNAPSHOT_AT_STEP = new ConcurrentHashMap<>();
    private static final List<Long> FAILED_AT_STEP = new CopyOnWriteArrayList<>();

    /** Every trained sample's bytes (CRC32) by "epoch,index", and pairs seen with two values. */
    private static final Map<String, Long> PATCHES = new ConcurrentHashMap<>();

    private static final Set<String> CHANGED = ConcurrentHashMap.newKeySet();

    private JobExecutionResult lastResult;
    private int restarts = 3;
    private boolean skipBadSamples;

    @TempDir static Path data;
    static List<CaseFiles> train;

    @TempDir Path run;

    @BeforeAll
    static void generate() throws Exception {
        KitsLikeGenerator.builder().optCases(10).optScale(0.15).optSeed(5).build().generate(data);
        train = Dataset.scan(data).split(2).train();
    }

    @Test
    void shouldDeliverEverySampleOfEveryEpochExactlyOnceMixingFastAndSlow() throws Exception {
        int epochs = 3;
        // A third of the samples cost 20 times a typical one (the bench's tail knob), so that some
        // pass the 0.3 ms deadline however warm the JIT and the caches are by the time this runs.
        RunReport report =
                run(
                        new CaseTable(train, CaseCache.disabled())
                                .workload(TransformConfig.mlperf(16).withTail(0.3, 20)),
                        LoaderJob.Loader.minato,
                        epochs,
                        new SimulatedAccelerator.Factory(5),
                        "0.3",
                        false,
                        job -> {});
        Map<String, Integer> seen = checkTrace(epochs);
        assertThat(seen).hasSize(train.size() * epochs);
        assertThat(report.delivered()).isEqualTo(train.size() * epochs);
        assertThat(report.dropped()).isZero();
        String json = report.toJson();
        assertThat(json)
                .contains(
                        "\"loader\": \"minato\"", "\"quarantined\": 0", "\"kind\": \"simulated\"");
        assertThat(pathsOf(trace())).containsExactlyInAnyOrder("fast", "slow");
        // No sample was prepared a second time; in one TaskManager the samples waited in the
        // handoff rather than travel as bytes (all but a few before the batchers were set up).
        assertThat((Long) lastResult.getAccumulatorResult(TrainerSink.PREPARED_AGAIN)).isZero();
        assertThat((Long) lastResult.getAccumulatorResult(Receivers.SENT_AS_BYTES))
                .isLessThan(train.size() * epochs / 2);
        // Minato holds no ready batch behind an unfinished one; the crops' reads were timed.
        assertThat(report.headOfLineSeconds()).isZero();
        assertThat(json).contains("\"stall\": {").doesNotContain("\"fetch_s\": null");
        assertThat((Long) lastResult.getAccumulatorResult(PrepTimes.FETCH_NANOS)).isPositive();
    }

    /** The dataflow feeds any sink of batches: here one that writes down what each device got. */
    @Test
    void shouldFeedASinkOfItsOwnEverySampleOnceEachBatchOnItsDevice() throws Exception {
        OWN_SINK.clear();
        int epochs = 2;
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.getExecutionEnvironment(
                        FlinkSetup.jobConfiguration(run, Duration.ofMillis(100), restarts));
        LoaderJob.builder()
                .setWorkload(
                        new CaseTable(train, CaseCache.disabled())
                                .workload(TransformConfig.mlperf(16)))
                .setTrainer(new WritingDown())
                .optEpochs(epochs)
                .optSeed(SEED)
                .optBatchSize(BATCH)
                .optDevices(DEVICES)
                .optWorkers(2, 1)
                .build()
                .build(env);
        env.execute("LoaderJobTest own sink");

        assertThat(OWN_SINK).hasSize(train.size() * epochs).doesNotHaveDuplicates();
        assertThat(OWN_SINK)
                .as("subtask/device:epoch/index")
                .allMatch(s -> s.charAt(0) == s.charAt(2));
    }

    /** A sink of batches that is not the trainers': one line per sample, in this JVM. */
    private static final class WritingDown implements BatchSink {
        @Override
        public SingleOutputStreamOperator<?> trainOn(DataStream<Batch> batches) {
            return batches.map(
                            new RichMapFunction<Batch, Integer>() {
                                @Override
                                public Integer map(Batch b) {
                                    int subtask =
                                            getRuntimeContext()
                                                    .getTaskInfo()
                                                    .getIndexOfThisSubtask();
                                    for (PreparedSample s : b.samples()) {
                                        OWN_SINK.add(
                                                subtask
                                                        + "/"
                                                        + b.device()
                                                        + ":"
                                                        + s.task().epoch()
                                                        + "/"
                                                        + s.task().index());
                                    }
                                    return b.samples().size();
                                }
                            })
                    .returns(Types.INT);
        }
    }

    /**
     * Each fast worker runs in the task of its own share of the sample tasks (a chain), so that no
     * task waits in a network buffer: what a restore would replay before checkpoints resume.
     */
    @Test
    void shouldChainEachFastWorkerToItsShareOfTheTasks() {
        StreamExecutionEnvironment env = graph(LoaderJob.Loader.minato, 3, true);
        List<JobVertex> workers = new ArrayList<>();
        for (JobVertex v : env.getStreamGraph().getJobGraph().getVertices()) {
            if (v.getName().contains("AugmentOperator")) {
                workers.add(v);
            }
        }
        assertThat(workers).hasSize(1);
        assertThat(workers.get(0).getName()).startsWith("Source: SampleSource");
        assertThat(workers.get(0).getParallelism()).isEqualTo(3);
    }

    /**
     * Every loader routes device i's batches to trainer i, the baselines by key; the trainers keep
     * no keyed state, so none of them gets a keyed state backend (a RocksDB instance to open at
     * each start and snapshot at each checkpoint: 0.1-0.3 s more per short run for inorder).
     */
    @Test
    void shouldGiveTheTrainersNoKeyedStateBackend() {
        for (LoaderJob.Loader loader : LoaderJob.Loader.values()) {
            StreamExecutionEnvironment env = graph(loader, 2, false);
            List<StreamNode> trainers =
                    env.getStreamGraph().getStreamNodes().stream()
                            .filter(n -> n.getOperatorName().equals(TrainerSink.NAME))
                            .toList();
            assertThat(trainers).as(loader.name()).hasSize(1);
            assertThat(trainers.get(0).getStateKeySerializer()).as(loader.name()).isNull();
            assertThat(trainers.get(0).getParallelism()).as(loader.name()).isEqualTo(DEVICES);
        }
    }

    /**
     * An environment holding the dataflow of {@code loader} with {@code fastWorkers} (and one slow
     * one) over the training cases, into simulated trainers: for looking at its graph.
     */
    private StreamExecutionEnvironment graph(
            LoaderJob.Loader loader, int fastWorkers, boolean scheduled) {
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.getExecutionEnvironment(
                        FlinkSetup.jobConfiguration(run, Duration.ofMillis(100), 3));
        new LoaderJob(
                        new LoaderJob.Settings(
                                loader,
                                new CaseTable(train).workload(TransformConfig.mlperf(16)),
                                2,
                                SEED,
                                BATCH,
                                DEVICES,
                                fastWorkers,
                                1,
                                TimeoutPolicy.parse("auto"),
                                scheduled,
                                false),
                        TrainerSink.builder()
                                .setAccelerator(new SimulatedAccelerator.Factory(1))
                                .build())
                .build(env);
        return env;
    }

    /**
     * Three failures, each after checkpoints were taken since the previous restore: every restore
     * comes from a checkpoint completed after the previous one (so the job was protected again
     * after each recovery), and every (epoch, index) is still trained exactly once.
     */
    @Test
    void shouldCheckpointAgainAfterEachOfThreeRecoveriesAndDeliverExactlyOnce() throws Exception {
        FAILURES.set(0);
        RESTORED.clear();
        DEVICE0_STEPS.set(0);
        SNAPSHOT_AT_STEP.clear();
        FAILED_AT_STEP.clear();
        int epochs = 60; // 120 steps of 25 ms per device: room for three failures
        RunReport report =
                run(LoaderJob.Loader.minato, epochs, new FailThriceAfterCheckpoints(), "auto");
        assertThat(FAILURES).hasValue(3);
        assertThat(RESTORED)
                .as("each restore from a checkpoint completed after the previous restore")
                .hasSize(3)
                .isSorted()
                .doesNotHaveDuplicates();
        // The work each failure threw away is at most one checkpoint interval: the steps after the
        // restored snapshot are no more than those between it and the next snapshot, plus the
        // one in hand.
        for (int k = 0; k < 3; k++) {
            long restored = RESTORED.get(k);
            long from = SNAPSHOT_AT_STEP.get(restored);
            long interval = SNAPSHOT_AT_STEP.getOrDefault(restored + 1, from) - from;
            assertThat(FAILED_AT_STEP.get(k) - from)
                    .as("steps replayed after failure %d (restored snapshot %d)", k + 1, restored)
                    .isLessThanOrEqualTo(interval + 1);
        }
        assertThat(checkTrace(epochs)).hasSize(train.size() * epochs);
        assertThat(report.delivered()).isEqualTo(train.size() * epochs);
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(
            value = LoaderJob.Loader.class,
            names = {"minato", "djl"})
    void shouldDeliverExactlyOnceAcrossAnInjectedFailureRestoredFromACheckpoint(
            LoaderJob.Loader loader) throws Exception {
        SNAPSHOTS.set(0);
        FAILED.set(false);
        int epochs = 8;
        RunReport report = run(loader, epochs, new FailOnceAfterCheckpoints(), "auto");
        assertThat(FAILED).as("the fault was injected").isTrue();
        assertThat(checkTrace(epochs)).hasSize(train.size() * epochs);
        assertThat(report.delivered()).isEqualTo(train.size() * epochs);
    }

    /**
     * What a case cache remembers (the foreground components) changes no byte of any sample: with
     * the cache off, cold and warm (read back from disk, as by a new process), across a failure and
     * restore, with a 1 ms deadline so that samples cross to the slow path in every state.
     */
    @Test
    void shouldPrepareTheSameBytesWithTheCaseCacheOffColdAndWarmAcrossAFailure(
            @TempDir Path cacheDir) throws Exception {
        int epochs = 8;
        Path runs = run;
        run = Files.createDirectories(runs.resolve("off"));
        CaseCache.clearMemory();
        PATCHES.clear();
        run(
                LoaderJob.Loader.minato,
                epochs,
                new FailOnceAfterCheckpoints(false),
                "1",
                CaseCache.disabled());
        Map<String, Long> reference = Map.copyOf(PATCHES);
        assertThat(reference).hasSize(train.size() * epochs);
        assertThat((Long) lastResult.getAccumulatorResult(CacheMetrics.HITS)).isZero();

        Map<Path, Long> written = Map.of();
        for (String pass : List.of("cold", "warm")) {
            run = Files.createDirectories(runs.resolve(pass));
            CaseCache.clearMemory();
            PATCHES.clear();
            CHANGED.clear();
            SNAPSHOTS.set(0);
            FAILED.set(false);
            run(
                    LoaderJob.Loader.minato,
                    epochs,
                    new FailOnceAfterCheckpoints(true),
                    "1",
                    CaseCache.at(cacheDir));
            assertThat(FAILED).as("%s: the fault was injected", pass).isTrue();
            assertThat(CHANGED).as("%s: samples whose bytes changed on a replay", pass).isEmpty();
            assertThat(PATCHES).as(pass).isEqualTo(reference);
            Map<Path, Long> entries = componentEntries(cacheDir);
            if (pass.equals("cold")) {
                assertThat(entries).as("cold: cases scanned and remembered on disk").isNotEmpty();
                written = entries;
            } else {
                // No attempt of the warm run scanned: a scan would have rewritten its entry.
                assertThat(entries).as("warm: entries untouched").isEqualTo(written);
                assertThat((Long) lastResult.getAccumulatorResult(CacheMetrics.MISSES)).isZero();
            }
        }
    }

    /**
     * The images' memo of decoded pixels (issue 16 item 4): every sample is the same bytes whether
     * its image was decoded for it or remembered from an earlier epoch, across a failure and
     * restore, with a 1 ms deadline so that samples cross to the slow path mid-preparation.
     */
    @Test
    void shouldPrepareTheSameImagesWithDecodedPixelsRememberedOrNotAcrossAFailure(
            @TempDir Path images) throws Exception {
        ImageSetGenerator.builder()
                .optImages(12)
                .optClasses(3)
                .optSeed(4)
                .optEdges(16, 96)
                .build()
                .generate(images);
        ImageFolder folder = ImageFolder.scan(images);
        ImageTransforms transforms = new ImageTransforms(ImageConfig.torchvision(16));
        int epochs = 8;
        Path runs = run;
        run = Files.createDirectories(runs.resolve("decoded"));
        PATCHES.clear();
        run(
                new Workload<>("images", folder, transforms.withMemoBound(0)),
                LoaderJob.Loader.minato,
                epochs,
                new FailOnceAfterCheckpoints(false),
                "1",
                false,
                job -> {});
        Map<String, Long> reference = Map.copyOf(PATCHES);
        assertThat(reference).hasSize(folder.size() * epochs);
        assertThat((Long) lastResult.getAccumulatorResult(CacheMetrics.HITS)).isZero();

        run = Files.createDirectories(runs.resolve("remembered"));
        FileMemo.clear(ImageTransforms.DECODED);
        PATCHES.clear();
        CHANGED.clear();
        SNAPSHOTS.set(0);
        FAILED.set(false);
        run(
                new Workload<>("images", folder, transforms),
                LoaderJob.Loader.minato,
                epochs,
                new FailOnceAfterCheckpoints(true),
                "1",
                false,
                job -> {});
        assertThat(FAILED).as("the fault was injected").isTrue();
        assertThat(CHANGED).as("samples whose bytes changed on a replay").isEmpty();
        assertThat(PATCHES).isEqualTo(reference);

        // The hits, from a run without a failure: after one, Flink reports the accumulators of
        // the last attempt only, and workers that had finished before the restored checkpoint
        // are not run again.
        run = Files.createDirectories(runs.resolve("counted"));
        FileMemo.clear(ImageTransforms.DECODED);
        PATCHES.clear();
        run(
                new Workload<>("images", folder, transforms),
                LoaderJob.Loader.minato,
                epochs,
                new FailOnceAfterCheckpoints(false),
                "1",
                false,
                job -> {});
        assertThat(PATCHES).isEqualTo(reference);
        assertThat((Long) lastResult.getAccumulatorResult(CacheMetrics.HITS))
                .as("later epochs found their images decoded")
                .isGreaterThan((long) folder.size());
        assertThat((Long) lastResult.getAccumulatorResult(CacheMetrics.BYTES)).isPositive();
    }

    /**
     * A sample quarantined mid-run (its pixels do not decode) and a failure restored from a later
     * checkpoint: every other (epoch, index) is trained exactly once, the bad image never.
     */
    @ParameterizedTest
    @EnumSource(LoaderJob.Loader.class)
    void shouldTrainEveryOtherSampleExactlyOnceAcrossARestoreAfterAQuarantine(
            LoaderJob.Loader loader, @TempDir Path images) throws Exception {
        ImageSetGenerator.builder()
                .optImages(12)
                .optClasses(3)
                .optSeed(6)
                .optEdges(16, 48)
                .build()
                .generate(images);
        Files.write(images.resolve("class_00/bad.png"), ImageFormatFolder.undecodablePng());
        ImageFolder folder = ImageFolder.scan(images);
        assertThat(folder.images()).extracting(ImageFile::name).contains("class_00/bad.png");
        int epochs = 6;
        skipBadSamples = true;
        SNAPSHOTS.set(0);
        FAILED.set(false);
        run(
                new Workload<>("images", folder, new ImageTransforms(ImageConfig.torchvision(16))),
                loader,
                epochs,
                new FailOnceAfterCheckpoints(true),
                "auto",
                false,
                job -> {});

        assertThat(FAILED).as("the fault was injected").isTrue();
        Set<String> pairs = new HashSet<>();
        for (String line : trace()) {
            String[] f = line.split(",");
            assertThat(f[2]).isNotEqualTo("class_00/bad.png");
            assertThat(pairs.add(f[0] + "," + f[1])).as("delivered twice: %s", line).isTrue();
        }
        assertThat(pairs).as(this::traceFilesSeen).hasSize(epochs * (folder.size() - 1));
    }

    /**
     * The loader's workers finish while the trainers still train, checkpoints follow, then a
     * trainer fails: the restored workers have nothing left to prepare, but what they quarantined
     * and left out is in their state, and from there in the accumulators the report reads. The
     * report names the file and counts every sample of it as left out, not dropped.
     */
    @ParameterizedTest
    @EnumSource(LoaderJob.Loader.class)
    void shouldReportTheQuarantineWhenTheJobFailsAfterTheWorkersFinished(
            LoaderJob.Loader loader, @TempDir Path images, @InjectMiniCluster MiniCluster cluster)
            throws Exception {
        ImageSetGenerator.builder()
                .optImages(12)
                .optClasses(3)
                .optSeed(6)
                .optEdges(16, 48)
                .build()
                .generate(images);
        Files.write(images.resolve("class_00/bad.png"), ImageFormatFolder.undecodablePng());
        ImageFolder folder = ImageFolder.scan(images);
        int epochs = 12; // 12 x 13 images: whole batches, none dropped by the in-order loaders
        skipBadSamples = true;
        WORKERS_DONE.set(false);
        SNAPSHOTS_AFTER_WORKERS.set(0);
        FAILED.set(false);
        RunReport report =
                run(
                        new Workload<>(
                                "images", folder, new ImageTransforms(ImageConfig.torchvision(16))),
                        loader,
                        epochs,
                        new FailOnceAfterWorkersFinished(),
                        "auto",
                        false,
                        job -> awaitWorkersFinished(cluster, job));

        assertThat(FAILED).as("the fault was injected after the workers finished").isTrue();
        Map<String, Object> accumulators = lastResult.getAllAccumulatorResults();
        assertThat(ReportAssembly.quarantine(images, accumulators))
                .extracting(RunReport.Quarantine::file)
                .containsExactly("class_00/bad.png");
        assertThat(accumulators.get(AugmentOperator.SAMPLES_SKIPPED)).isEqualTo((long) epochs);
        assertThat(report.delivered()).isEqualTo((long) epochs * (folder.size() - 1));
    }

    /** Sets {@link #WORKERS_DONE} once every worker (or in-order loader) task of the job ended. */
    private static void awaitWorkersFinished(MiniCluster cluster, JobID job) throws Exception {
        while (true) {
            var graph = cluster.getExecutionGraph(job).get();
            if (graph.getState().isGloballyTerminalState()) {
                return;
            }
            boolean done = true;
            for (var vertex : graph.getAllExecutionVertices()) {
                String name = vertex.getTaskNameWithSubtaskIndex();
                if ((name.contains("AugmentOperator")
                                || name.contains("SlowPath")
                                || name.contains("InOrderLoader")
                                || name.contains("DjlLoader"))
                        && vertex.getExecutionState() != ExecutionState.FINISHED) {
                    done = false;
                }
            }
            if (done) {
                WORKERS_DONE.set(true);
                return;
            }
            Thread.sleep(5);
        }
    }

    private static Map<Path, Long> componentEntries(Path cacheDir) throws Exception {
        Map<Path, Long> entries = new HashMap<>();
        try (var files = Files.list(cacheDir)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                if (f.toString().endsWith(".components")) {
                    entries.put(f, Files.getLastModifiedTime(f).to(TimeUnit.NANOSECONDS));
                }
            }
        }
        return entries;
    }

    /**
     * The worker scheduler with every permit held elsewhere: the workers wait, checkpoints still
     * complete (waiting yields to the task's mailbox), and the tasks they waited with are in those
     * checkpoints. A checkpoint then fails the job while they wait; the restore prepares those
     * tasks again, and every (epoch, index) is trained exactly once, bit-identically.
     */
    @Test
    void shouldCheckpointWhileWorkersWaitForPermitsAndPrepareTheirTasksAfterARestore()
            throws Exception {
        SNAPSHOTS.set(0);
        HOLDING.set(false);
        FAILED.set(false);
        PATCHES.clear();
        CHANGED.clear();
        int epochs = 6;
        RunReport report =
                run(
                        LoaderJob.Loader.minato,
                        epochs,
                        new FailWhileWorkersWait(),
                        "auto",
                        CaseCache.disabled(),
                        true,
                        job -> {
                            // The scheduler of the one TaskManager, once a worker made it.
                            String attempt = WorkerScheduler.key(job.toString(), 0);
                            while (WorkerScheduler.ofAttempt(attempt).isEmpty()) {
                                Thread.sleep(1);
                            }
                            WorkerScheduler scheduler = WorkerScheduler.ofAttempt(attempt).get(0);
                            int held = 0;
                            int atHold = -1;
                            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                            // Hold every permit (the count may grow) until three checkpoints
                            // have completed while holding, and the job has failed over.
                            while (!FAILED.get() && System.nanoTime() < deadline) {
                                while (scheduler.tryAcquire(WorkerScheduler.Kind.FAST)) {
                                    held++;
                                }
                                if (held > 0 && held >= scheduler.active() && atHold < 0) {
                                    atHold = SNAPSHOTS.get();
                                    HOLDING.set(true);
                                }
                                Thread.sleep(1);
                            }
                            assertThat(FAILED).as("failed over while holding").isTrue();
                            assertThat(SNAPSHOTS.get() - atHold).isGreaterThanOrEqualTo(3);
                            for (int i = 0; i < held; i++) {
                                scheduler.release(0);
                            }
                        });
        Map<String, Integer> seen = checkTrace(epochs);
        assertThat(seen).hasSize(train.size() * epochs);
        assertThat(report.delivered()).isEqualTo(train.size() * epochs);
        assertThat(CHANGED).isEmpty();
        assertThat(report.toJson()).contains("\"auto\": true");
        assertThat((Double) lastResult.getAccumulatorResult(AugmentOperator.ACTIVE_WORKERS_MEAN))
                .isBetween(1.0, 3.0);
    }

    /**
     * A fault that comes back after every restart: once the restarts run out the job fails, and the
     * command line says so in one line naming the fault, with the trace in the run's log.
     */
    @Test
    void shouldSayInOneLineWhatFailedWhenTheRestartsRanOut() throws Exception {
        // One restart, before any checkpoint: what the failed attempt parked must not keep the
        // next attempt's workers waiting for room (it did, 10 s a sample, until it aged out).
        restarts = 1;
        Exception failed = null;
        try {
            run(LoaderJob.Loader.minato, 2, new AlwaysFailing(), "auto");
        } catch (Exception e) {
            failed = e;
        }
        assertThat(failed).as("the job failed").isNotNull();
        assertThat(Failure.of(failed).restartsExhausted()).isTrue();
        Path log = run.resolve("minato.log");
        String before = System.getProperty(RunLog.PROPERTY);
        System.setProperty(RunLog.PROPERTY, log.toString());
        java.io.StringWriter said = new java.io.StringWriter();
        try {
            assertThat(Failure.report(failed, new java.io.PrintWriter(said, true))).isEqualTo(1);
        } finally {
            if (before == null) {
                System.clearProperty(RunLog.PROPERTY);
            } else {
                System.setProperty(RunLog.PROPERTY, before);
            }
        }
        assertThat(said.toString().lines())
                .containsExactly(
                        "error: the job failed, and no restart was left (--restart-attempts):"
                                + " IllegalStateException: injected lasting fault; the whole trace"
                                + " is in "
                                + log);
    }

    /** A device whose every step fails. */
    static final class AlwaysFailing implements AcceleratorFactory {
        private static final long serialVersionUID = 1L;

        @Override
        public Accelerator create(int device, int devices) {
            return new SimulatedStep(0) {
                @Override
                public StepResult train(Batch batch) {
                    throw new IllegalStateException("injected lasting fault");
                }
            };
        }
    }

    /** The two in-order baselines: PyTorch DataLoader semantics, and DJL's own loader. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(
            value = LoaderJob.Loader.class,
            names = {"inorder", "djl"})
    void shouldHandBatchesOfTheInOrderBaselinesToDevicesStrictlyInOrder(LoaderJob.Loader loader)
            throws Exception {
        int epochs = 2;
        RunReport report = run(loader, epochs, new SimulatedAccelerator.Factory(5), "auto");
        checkTrace(epochs);
        assertThat(report.delivered()).isEqualTo(train.size() * epochs);
        assertThat((Long) lastResult.getAccumulatorResult(PrepTimes.FETCH_NANOS)).isPositive();
        // Batch k holds global samples [kB, kB + B) and goes to device k % G as its step k / G.
        for (String line : trace()) {
            String[] f = line.split(",");
            long global = Long.parseLong(f[0]) * train.size() + Long.parseLong(f[1]);
            long k = global / BATCH;
            assertThat(Integer.parseInt(f[3])).as(line).isEqualTo((int) (k % DEVICES));
            assertThat(Long.parseLong(f[4])).as(line).isEqualTo(k / DEVICES);
            assertThat(f[5]).isEqualTo("fast");
        }
    }

    private RunReport run(
            LoaderJob.Loader loader, int epochs, AcceleratorFactory accelerator, String timeout)
            throws Exception {
        return run(loader, epochs, accelerator, timeout, CaseCache.disabled());
    }

    private RunReport run(
            LoaderJob.Loader loader,
            int epochs,
            AcceleratorFactory accelerator,
            String timeout,
            CaseCache cache)
            throws Exception {
        return run(loader, epochs, accelerator, timeout, cache, false, job -> {});
    }

    /**
     * @param scheduled whether the worker scheduler paces Minato's workers
     * @param whileRunning called with the job's id once it is submitted, before its end is awaited
     */
    private RunReport run(
            LoaderJob.Loader loader,
            int epochs,
            AcceleratorFactory accelerator,
            String timeout,
            CaseCache cache,
            boolean scheduled,
            ThrowingConsumer<JobID> whileRunning)
            throws Exception {
        return run(
                new CaseTable(train, cache).workload(TransformConfig.mlperf(16)),
                loader,
                epochs,
                accelerator,
                timeout,
                scheduled,
                whileRunning);
    }

    private RunReport run(
            Workload<?> workload,
            LoaderJob.Loader loader,
            int epochs,
            AcceleratorFactory accelerator,
            String timeout,
            boolean scheduled,
            ThrowingConsumer<JobID> whileRunning)
            throws Exception {
        LoaderJob.Settings settings =
                new LoaderJob.Settings(
                        loader,
                        workload,
                        epochs,
                        SEED,
                        BATCH,
                        DEVICES,
                        2,
                        1,
                        TimeoutPolicy.parse(timeout),
                        scheduled,
                        skipBadSamples);
        TrainerSink sink = MiniClusterJobs.sink(accelerator, run, settings.workload(), restarts);
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.getExecutionEnvironment(
                        FlinkSetup.jobConfiguration(run, Duration.ofMillis(100), restarts));
        new LoaderJob(settings, sink).build(env);
        long start = System.currentTimeMillis();
        JobClient client = env.executeAsync("LoaderJobTest " + loader);
        whileRunning.accept(client.getJobID());
        JobExecutionResult result = client.getJobExecutionResult().get();
        lastResult = result;
        assertThat(result.getNetRuntime()).isPositive();
        TraceFiles.merge(run, run.resolve("trace.csv"));
        Map<String, Object> accumulators = result.getAllAccumulatorResults();
        return RunReport.build(
                new RunReport.Configuration(
                        workload.name(),
                        loader.name(),
                        DEVICES,
                        BATCH,
                        16,
                        epochs,
                        SEED,
                        new RunReport.DataSet(10, workload.size(), 2, List.of()),
                        2,
                        new RunReport.Workers(2, 1, scheduled),
                        null,
                        null),
                new RunReport.Outcome(
                        List.of(),
                        0,
                        null,
                        null,
                        null,
                        scheduled ? ReportAssembly.activeWorkersMean(accumulators) : null,
                        null,
                        ReportAssembly.fetch(accumulators),
                        ReportAssembly.taskManagers(accumulators),
                        null,
                        null),
                new RunReport.Measurements(
                        start,
                        java.lang.management.ManagementFactory.getRuntimeMXBean().getStartTime(),
                        1.0,
                        null),
                run);
    }

    /** What a test does while its job runs. */
    @FunctionalInterface
    interface ThrowingConsumer<T> {
        void accept(T value) throws Exception;
    }

    private List<String> trace() throws Exception {
        List<String> lines = Files.readAllLines(run.resolve("trace.csv"));
        assertThat(lines.get(0)).isEqualTo("epoch,index,case,device,step,path");
        return lines.subList(1, lines.size());
    }

    /**
     * Each (epoch, index) at most once, with the case the epoch's order gives; steps 0..n-1 per
     * device.
     */
    private Map<String, Integer> checkTrace(int epochs) throws Exception {
        Map<String, Integer> seen = new HashMap<>();
        Map<Integer, Set<Long>> stepsByDevice = new HashMap<>();
        for (String line : trace()) {
            String[] f = line.split(",");
            assertThat(f).hasSize(6);
            int epoch = Integer.parseInt(f[0]);
            int index = Integer.parseInt(f[1]);
            assertThat(epoch).isBetween(0, epochs - 1);
            assertThat(Integer.parseInt(f[2]))
                    .isEqualTo(EpochOrder.permutation(SEED, epoch, train.size())[index]);
            assertThat(seen.put(epoch + "," + index, 1)).as("delivered twice: %s", line).isNull();
            stepsByDevice
                    .computeIfAbsent(Integer.parseInt(f[3]), d -> new HashSet<>())
                    .add(Long.parseLong(f[4]));
        }
        assertThat(stepsByDevice).as(this::traceFilesSeen).hasSize(DEVICES);
        for (Set<Long> steps : stepsByDevice.values()) {
            assertThat(steps).hasSize(steps.stream().mapToInt(Long::intValue).max().orElse(-1) + 1);
        }
        return seen;
    }

    /** What the run directory holds, for a failure's message. */
    private String traceFilesSeen() {
        StringBuilder seen = new StringBuilder("the run directory holds:");
        try (var files = Files.walk(run)) {
            files.filter(Files::isRegularFile)
                    .forEach(
                            f -> {
                                try {
                                    seen.append(' ')
                                            .append(run.relativize(f))
                                            .append(" (")
                                            .append(Files.size(f))
                                            .append(" bytes)");
                                } catch (java.io.IOException e) {
                                    seen.append(' ').append(f).append(" (").append(e).append(')');
                                }
                            });
        } catch (java.io.IOException e) {
            seen.append(' ').append(e);
        }
        return seen.append("; last result's accumulators: ")
                .append(lastResult == null ? "none" : lastResult.getAllAccumulatorResults())
                .toString();
    }

    private static Set<String> pathsOf(List<String> lines) {
        Set<String> paths = new HashSet<>();
        for (String l : lines) {
            paths.add(l.substring(l.lastIndexOf(',') + 1));
        }
        return paths;
    }

    /**
     * Device 0 fails three times, each time once two checkpoints were taken since its (re)start;
     * its snapshots carry increasing numbers, and each restore records the one it got back. Steps
     * sleep 25 ms.
     */
    static final class FailThriceAfterCheckpoints implements AcceleratorFactory {
        private static final long serialVersionUID = 1L;

        @Override
        public Accelerator create(int device, int devices) {
            return new SimulatedStep(25) {
                private int snapshotsHere;

                @Override
                public StepResult train(Batch batch) throws Exception {
                    if (device == 0 && snapshotsHere >= 2 && FAILURES.get() < 3) {
                        FAILURES.incrementAndGet();
                        FAILED_AT_STEP.add(DEVICE0_STEPS.get());
                        throw new IllegalStateException("injected device fault");
                    }
                    if (device == 0) {
                        DEVICE0_STEPS.incrementAndGet();
                    }
                    return super.train(batch);
                }

                @Override
                public byte[] snapshot() {
                    if (device != 0) {
                        return new byte[0];
                    }
                    snapshotsHere++;
                    long id = SNAPSHOT_IDS.incrementAndGet();
                    SNAPSHOT_AT_STEP.put(id, DEVICE0_STEPS.get());
                    return ByteBuffer.allocate(8).putLong(id).array();
                }

                @Override
                public void restore(byte[] state) {
                    if (device == 0 && state.length == 8) {
                        RESTORED.add(ByteBuffer.wrap(state).getLong());
                    }
                }
            };
        }
    }

    /**
     * A simulated step that records each sample's bytes; its checkpoint fails once, after three
     * checkpoints taken while the test held every permit (device 0's snapshot throws), which fails
     * the job over to the last of them.
     */
    static final class FailWhileWorkersWait implements AcceleratorFactory {
        private static final long serialVersionUID = 1L;

        @Override
        public Accelerator create(int device, int devices) {
            return new SimulatedStep(1) {
                private int whileHolding;

                @Override
                public StepResult train(Batch batch) throws Exception {
                    recordBytes(batch);
                    return super.train(batch);
                }

                @Override
                public byte[] snapshot() throws Exception {
                    if (device == 0 && HOLDING.get() && ++whileHolding > 3) {
                        if (FAILED.compareAndSet(false, true)) {
                            throw new IllegalStateException("injected checkpoint fault");
                        }
                    }
                    if (device == 0) {
                        SNAPSHOTS.incrementAndGet();
                    }
                    return new byte[0];
                }
            };
        }
    }

    /** Records each sample's bytes (CRC32) by (epoch, index), and pairs seen with two values. */
    static void recordBytes(Batch batch) {
        for (PreparedSample s : batch.samples()) {
            CRC32 crc = new CRC32();
            for (float f : s.patch().image()) {
                int bits = Float.floatToRawIntBits(f);
                crc.update(bits >>> 24);
                crc.update(bits >>> 16);
                crc.update(bits >>> 8);
                crc.update(bits);
            }
            crc.update(s.patch().label());
            String pair = s.task().epoch() + "," + s.task().index();
            Long before = PATCHES.put(pair, crc.getValue());
            if (before != null && before != crc.getValue()) {
                CHANGED.add(pair);
            }
        }
    }

    /**
     * Device 0 fails once, on a step after two of its checkpoints (unless told not to); steps sleep
     * 25 ms. Every trained sample's bytes are recorded in {@link #PATCHES}.
     */
    static final class FailOnceAfterCheckpoints implements AcceleratorFactory {
        private static final long serialVersionUID = 1L;
        private final boolean fail;

        FailOnceAfterCheckpoints() {
            this(true);
        }

        FailOnceAfterCheckpoints(boolean fail) {
            this.fail = fail;
        }

        @Override
        public Accelerator create(int device, int devices) {
            return new SimulatedStep(25) {
                @Override
                public StepResult train(Batch batch) throws Exception {
                    if (fail
                            && device == 0
                            && SNAPSHOTS.get() >= 2
                            && FAILED.compareAndSet(false, true)) {
                        throw new IllegalStateException("injected device fault");
                    }
                    recordBytes(batch);
                    return super.train(batch);
                }

                @Override
                public byte[] snapshot() {
                    if (device == 0) {
                        SNAPSHOTS.incrementAndGet();
                    }
                    return new byte[0];
                }
            };
        }
    }

    /**
     * Device 0 fails once, on a step after three of its checkpoints taken since every worker task
     * finished ({@link #WORKERS_DONE}); steps sleep 40 ms.
     */
    static final class FailOnceAfterWorkersFinished implements AcceleratorFactory {
        private static final long serialVersionUID = 1L;

        @Override
        public Accelerator create(int device, int devices) {
            return new SimulatedStep(40) {
                @Override
                public StepResult train(Batch batch) throws Exception {
                    if (device == 0
                            && SNAPSHOTS_AFTER_WORKERS.get() >= 3
                            && FAILED.compareAndSet(false, true)) {
                        throw new IllegalStateException("injected device fault");
                    }
                    return super.train(batch);
                }

                @Override
                public byte[] snapshot() {
                    if (device == 0 && WORKERS_DONE.get()) {
                        SNAPSHOTS_AFTER_WORKERS.incrementAndGet();
                    }
                    return new byte[0];
                }
            };
        }
    }
}
