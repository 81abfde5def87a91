package io.minato.trainer;

import ai.djl.engine.Engine;
import ai.djl.pytorch.jni.JniUtils;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.configuration.TaskManagerOptions;

/**
 * How many threads libtorch may use for one trainer's operators on the CPU: the trainer's share of
 * its TaskManager's cores. libtorch otherwise starts a thread per core of the host in every
 * training thread, so two TaskManagers that train on the same host, or several trainers in one
 * TaskManager beside the preparation, ask for more threads than there are cores; OpenMP's threads
 * then spin against each other (a run with two trainers in two TaskManagers on 2 cores took 42.5 s
 * instead of 10.8 s).
 *
 * <p>A TaskManager's cores are {@code taskmanager.cpu.cores} when its configuration sets it (as
 * {@code scripts/cluster} does for TaskManagers that share a host), else the cores the JVM may use.
 * Its trainers are at most one per slot and at most the job's devices. {@code OMP_NUM_THREADS} or
 * {@code -Dai.djl.pytorch.num_threads}, when given, win.
 */
public final class TorchThreads {
    private TorchThreads() {}

    /**
     * The threads of each of a job's {@code devices} trainers in the TaskManager whose
     * configuration is {@code taskManager}: at least one.
     */
    public static int perTrainer(ReadableConfig taskManager, int devices) {
        // Never more than the JVM may use: a MiniCluster's TaskManager declares a million cores.
        double usable = Runtime.getRuntime().availableProcessors();
        double cores =
                Math.min(
                        usable,
                        taskManager.getOptional(TaskManagerOptions.CPU_CORES).orElse(usable));
        return perTrainer(cores, taskManager.get(TaskManagerOptions.NUM_TASK_SLOTS), devices);
    }

    /** The threads of each trainer in a TaskManager of {@code cores} and {@code slots}. */
    static int perTrainer(double cores, int slots, int devices) {
        if (!(cores > 0) || slots < 1 || devices < 1) {
            throw new IllegalArgumentException(
                    "a TaskManager of "
                            + cores
                            + " cores and "
                            + slots
                            + " slots for "
                            + devices
                            + " devices");
        }
        int trainers = Math.min(slots, devices);
        return Math.max(1, (int) Math.floor(cores / trainers + 1e-9));
    }

    /** Whether the user chose libtorch's threads ({@code OMP_NUM_THREADS}, DJL's property). */
    public static boolean chosenByUser() {
        return System.getenv("OMP_NUM_THREADS") != null
                || System.getProperty("ai.djl.pytorch.num_threads") != null;
    }

    /**
     * Lets libtorch use every core this JVM may, as evaluation after training does: in an embedded
     * run the trainers left it at their share.
     */
    public static void useAllCores() {
        use(Runtime.getRuntime().availableProcessors());
    }

    /**
     * Lets libtorch's operators called from this thread, and from threads that start calling them
     * later, use {@code threads} threads; nothing where the user chose.
     */
    public static void use(int threads) {
        if (threads > 0 && !chosenByUser()) {
            Engine.getEngine("PyTorch"); // loads libtorch, once per JVM
            JniUtils.setNumThreads(threads);
        }
    }
}
