package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.json.Json;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Flink's application mode, as a user deploys it: a standalone application cluster whose JobManager
 * runs {@code Main train ...} itself, and a TaskManager, each a JVM of its own with the job's jar
 * on its classpath. {@code main} must not exit the JobManager's process (it did: System.exit after
 * submitting), the job writes its own report as a detached one does, and the cluster ends with the
 * application SUCCEEDED.
 */
class ApplicationModeIT {
    /**
     * Two TaskManagers, each its own JVM, of two slots: the trainer's slot apart from the two
     * preparation slots, so that at least one worker prepares in the other TaskManager and its
     * samples cross as bytes; every (epoch, index) is still trained once and none twice, in the
     * report and trace the job wrote itself, and the run is marked finished.
     */
    @Test
    void shouldTrainEverySampleOnceWithPreparationInAnotherTaskManager(@TempDir Path tmp)
            throws Exception {
        Path run = tmp.resolve("run");
        Path report = tmp.resolve("report.json");
        runApplication(
                tmp,
                List.of(
                        "--accelerator",
                        "simulated:10",
                        "--workers",
                        "2",
                        "--devices",
                        "cpu:1",
                        "--run-dir",
                        run.toString()),
                report,
                ClusterProcesses.TWO_SLOTS,
                ClusterProcesses.TWO_SLOTS,
                Map.of(),
                2,
                List.of());
        // 4 training cases x 2 epochs, every one once.
        assertThat(report).content().contains("\"delivered\": 8", "\"dice\": null");
        assertThat(Files.readAllLines(run.resolve("trace.csv"))).hasSize(1 + 8);
        assertThat(run.resolve(RunArgs.FINISHED)).exists();
        assertThat(distinctSamples(run)).isEqualTo(8);
        @SuppressWarnings("unchecked")
        Map<String, Object> workers =
                (Map<String, Object>)
                        ((Map<String, Object>) Json.parse(Files.readString(report))).get("workers");
        assertThat(((Number) workers.get("sent_as_bytes")).longValue())
                .as("samples that crossed to the trainer's TaskManager as bytes")
                .isPositive();
    }

    /**
     * GPUs the Flink way: the TaskManager discovers its GPUs through Flink's external resource
     * framework (here a driver plugin that reports GPUs 5 and 3, as Flink's GPU driver reports what
     * nvidia-smi lists), the job trains on as many devices as {@code external-resource.gpu.amount}
     * says, and each trainer takes its GPU from its task's runtime context. This TaskManager's
     * PyTorch is a CPU build, so each trainer says which GPU it got and trains on the CPU.
     */
    @Test
    void shouldGiveEachTrainerAGpuFromFlinksExternalResources(@TempDir Path tmp) throws Exception {
        Path plugins = tmp.resolve("plugins");
        ListedGpuDriverFactory.writePlugin(plugins.resolve("listed-gpus"));
        Path run = tmp.resolve("run");
        Path report = tmp.resolve("report.json");
        runApplication(
                tmp,
                List.of(
                        "--accelerator",
                        "real",
                        "--width",
                        "0.125",
                        "--devices",
                        "gpu",
                        "--run-dir",
                        run.toString()),
                report,
                flinkGpus(2),
                listedGpus(2, "5,3"),
                Map.of("FLINK_PLUGINS_DIR", plugins.toString()));

        assertThat(report).content().contains("\"delivered\": 8", "\"devices\": 2");
        assertThat(Files.readString(tmp.resolve("tm.log")))
                .contains(
                        "device 0: Flink gave this TaskManager GPU 3 (Flink GPUs [3, 5]), but its"
                                + " PyTorch sees 0 GPU(s) (a CPU build of libtorch?): training on"
                                + " the CPU",
                        "device 1: Flink gave this TaskManager GPU 5 (Flink GPUs [3, 5])");
    }

    /**
     * GPU trainers in two TaskManagers, one GPU each (5 in the first, 3 in the second): {@code
     * --devices gpus:2} asks for two of Flink's GPUs, each training slot requires one, so Flink
     * puts a trainer in each TaskManager, and each trainer takes the GPU its own TaskManager got,
     * through the trainers' coordinator. The two replicas average over the replica link, and every
     * (epoch, index) is trained once.
     */
    @Test
    void shouldTrainOnTheGpusOfTwoTaskManagers(@TempDir Path tmp) throws Exception {
        Path plugins = tmp.resolve("plugins");
        ListedGpuDriverFactory.writePlugin(plugins.resolve("listed-gpus"));
        Path run = tmp.resolve("run");
        Path report = tmp.resolve("report.json");
        runApplication(
                tmp,
                List.of(
                        "--accelerator",
                        "real",
                        "--width",
                        "0.125",
                        "--devices",
                        "gpus:2",
                        "--workers",
                        "1",
                        "--run-dir",
                        run.toString()),
                report,
                flinkGpus(1),
                concat(listedGpus(1, "5"), ClusterProcesses.TWO_SLOTS),
                Map.of("FLINK_PLUGINS_DIR", plugins.toString()),
                2,
                concat(listedGpus(1, "3"), ClusterProcesses.TWO_SLOTS));

        assertThat(report).content().contains("\"delivered\": 8", "\"devices\": 2");
        assertThat(distinctSamples(run)).isEqualTo(8);
        assertThat(Files.readString(tmp.resolve("tm.log")))
                .containsPattern(
                        "device [01]: Flink gave this TaskManager GPU 5 \\(Flink GPUs \\[5\\]\\)");
        assertThat(Files.readString(tmp.resolve("tm-2.log")))
                .containsPattern(
                        "device [01]: Flink gave this TaskManager GPU 3 \\(Flink GPUs \\[3\\]\\)");
    }

    /**
     * Fine-grained resource requirements: the trainers' slots each need one of Flink's GPUs, so
     * they go to the TaskManager that has them (two GPUs and two cores, Flink's default of a core a
     * slot), and the preparation wherever its token requirement fits, this TaskManager included:
     * Flink's slot manager matches requirements in no set order, and preparation matched first must
     * not take the trainers' cores (it did, with a core a preparation slot, and the job waited for
     * ever).
     */
    @Test
    void shouldPlaceTheTrainersWhereFlinksGpusAreWhereverPreparationGoes(@TempDir Path tmp)
            throws Exception {
        Path plugins = tmp.resolve("plugins");
        ListedGpuDriverFactory.writePlugin(plugins.resolve("listed-gpus"));
        List<String> withGpus =
                concat(
                        listedGpus(2, "0,1"),
                        List.of(
                                "-D",
                                "taskmanager.numberOfTaskSlots=2",
                                "-D",
                                "taskmanager.cpu.cores=2"));
        List<String> cpuOnly = List.of("-D", "taskmanager.numberOfTaskSlots=4");
        Path run = tmp.resolve("run");
        Path report = tmp.resolve("report.json");
        runApplication(
                tmp,
                List.of(
                        "--accelerator",
                        "simulated:10",
                        "--devices",
                        "gpu",
                        "--workers",
                        "2",
                        "--run-dir",
                        run.toString()),
                report,
                flinkGpus(2),
                withGpus,
                Map.of("FLINK_PLUGINS_DIR", plugins.toString()),
                2,
                cpuOnly);
        assertThat(report).content().contains("\"delivered\": 8", "\"devices\": 2");
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> taskManagers =
                (List<Map<String, Object>>)
                        ((Map<String, Object>) Json.parse(Files.readString(report)))
                                .get("task_managers");
        assertThat(taskManagers)
                .as("both trainers in tm-1, the TaskManager with the GPUs")
                .anySatisfy(
                        tm -> {
                            assertThat(tm.get("id")).isEqualTo("tm-1");
                            assertThat(((Number) tm.get("trainers")).intValue()).isEqualTo(2);
                        });
        assertThat(Files.readString(tmp.resolve("jm.log")))
                .contains("gpu=1")
                .doesNotContain("NoResourceAvailableException");
    }

    /**
     * Runs {@code Main train} with {@code args} on 4 generated cases x 2 epochs in a standalone
     * application cluster (a JobManager and a TaskManager, each its own JVM) until the application
     * succeeds.
     */
    private static void runApplication(
            Path tmp,
            List<String> args,
            Path report,
            List<String> jobManagerConf,
            List<String> taskManagerConf,
            Map<String, String> taskManagerEnv)
            throws Exception {
        runApplication(
                tmp, args, report, jobManagerConf, taskManagerConf, taskManagerEnv, 1, List.of());
    }

    /**
     * As above, on {@code taskManagers} TaskManagers, each its own JVM (the first one logs to
     * tm.log, the k-th to tm-k.log); the first gets {@code taskManagerConf}, the others {@code
     * otherConf} where that is not empty.
     */
    private static void runApplication(
            Path tmp,
            List<String> args,
            Path report,
            List<String> jobManagerConf,
            List<String> taskManagerConf,
            Map<String, String> taskManagerEnv,
            int taskManagers,
            List<String> otherConf)
            throws Exception {
        Path jar = ClusterProcesses.jobJar();
        Path data = ClusterProcesses.generatedData(tmp);
        List<String> ports =
                List.of(
                        "-D",
                        "rest.port=" + FlinkSetup.freePort(),
                        "-D",
                        "jobmanager.rpc.port=" + FlinkSetup.freePort());

        List<String> jobManager = ClusterProcesses.java(jar, tmp.resolve("jm.log"));
        jobManager.add(
                "org.apache.flink.container.entrypoint.StandaloneApplicationClusterEntryPoint");
        jobManager.addAll(List.of("--configDir", ClusterProcesses.flinkConf().toString()));
        jobManager.addAll(ports);
        jobManager.addAll(List.of("-D", "jobmanager.memory.process.size=1g"));
        jobManager.addAll(jobManagerConf);
        jobManager.addAll(List.of("--job-classname", Main.class.getName()));
        jobManager.addAll(
                ClusterProcesses.trainGenerated(
                        data, 2, "--no-web-ui", "--report", report.toString()));
        jobManager.addAll(args);
        List<String> result = ClusterProcesses.taskManagerResources(tmp, jar, "2g");

        Process jm = ClusterProcesses.start(jobManager, tmp.resolve("jm.out"), Map.of());
        List<Process> tms = new ArrayList<>();
        for (int k = 1; k <= taskManagers; k++) {
            String name = k == 1 ? "tm" : "tm-" + k;
            List<String> taskManager =
                    ClusterProcesses.taskManager(
                            jar,
                            tmp.resolve(name + ".log"),
                            result,
                            k,
                            ports,
                            k == 1 || otherConf.isEmpty() ? taskManagerConf : otherConf);
            tms.add(
                    ClusterProcesses.start(
                            taskManager, tmp.resolve(name + ".out"), taskManagerEnv));
        }
        try {
            boolean ended = jm.waitFor(4, TimeUnit.MINUTES);
            String out = Files.readString(tmp.resolve("jm.out"));
            assertThat(ended)
                    .as(
                            () ->
                                    out
                                            + "\n--- the JobManager's log, its end:\n"
                                            + ClusterProcesses.tail(tmp.resolve("jm.log"), 80)
                                            + "\n--- the first TaskManager's log, its end:\n"
                                            + ClusterProcesses.tail(tmp.resolve("tm.log"), 40))
                    .isTrue();
            assertThat(jm.exitValue()).as(out).isZero();
            assertThat(Files.readString(tmp.resolve("jm.log")))
                    .as(out)
                    .contains(
                            "Shutting StandaloneApplicationClusterEntryPoint down with"
                                    + " application status SUCCEEDED");
        } finally {
            ClusterProcesses.stop(jm, tms);
        }
    }

    /** The configuration that gives each TaskManager {@code amount} of Flink's GPUs. */
    private static List<String> flinkGpus(int amount) {
        return List.of(
                "-D", "external-resources=gpu", "-D", "external-resource.gpu.amount=" + amount);
    }

    /**
     * A TaskManager's configuration: {@code amount} GPUs, the test driver listing {@code indices}.
     */
    private static List<String> listedGpus(int amount, String indices) {
        return concat(
                flinkGpus(amount),
                List.of(
                        "-D",
                        "external-resource.gpu.driver-factory.class="
                                + ListedGpuDriverFactory.class.getName(),
                        "-D",
                        "external-resource.gpu.param.indices=" + indices));
    }

    /** The distinct (epoch, index) pairs of a run's trace. */
    private static long distinctSamples(Path run) throws java.io.IOException {
        List<String> trace = Files.readAllLines(run.resolve("trace.csv"));
        return trace.subList(1, trace.size()).stream()
                .map(l -> l.split(",")[0] + "," + l.split(",")[1])
                .distinct()
                .count();
    }

    private static List<String> concat(List<String> a, List<String> b) {
        List<String> all = new ArrayList<>(a);
        all.addAll(b);
        return all;
    }
}
