package io.minato.job.workload;

import ai.djl.Device;
import io.minato.data.BadInputException;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * A workload as the job's commands see it: its {@code --workload} name, the options it takes, how
 * it opens its {@link TrainingSet} and what it trains with. Each workload implements it once in a
 * package of its own and is registered in {@link Workloads}; the commands ask it rather than
 * telling workloads apart.
 */
public interface JobWorkload {

    /** Its {@code --workload} value, also the report's {@code workload}. */
    String name();

    /** The edge of a training sample when {@code --patch} is not given. */
    int defaultEdge();

    /** The edge on the generated demo set (no {@code --data}). */
    int demoEdge();

    /** How the start line gives a sample's edge: "patch 128^3", "crop 224^2". */
    String edgeLine(int edge);

    /**
     * Refuses options it cannot take, before anything is read: an {@link IllegalArgumentException}
     * whose one line names the option.
     */
    default void check(DataSpec data) {}

    /**
     * Whether only a training process outside the job takes its samples ({@code --accelerator
     * serve}): the DJL trainer does not.
     */
    default boolean servedOnly() {
        return false;
    }

    /** As {@link #check}, for what its network needs when it trains for real (not simulated). */
    default void checkForNetwork(DataSpec data) {}

    /**
     * The {@code --network} values it trains, each a network's model name; the first is the
     * default.
     */
    List<String> networks();

    /** The learning rate its network trains at when {@code --learning-rate} is not given. */
    float defaultLearningRate();

    /** The samples {@code data} names, checked; bad input stops here (or is left out, skip). */
    TrainingSet open(DataSpec data, PrintWriter err) throws IOException, BadInputException;

    /** Why {@code evaluate} does not run on it, in one line; empty where it does. */
    default Optional<String> refusesEvaluate() {
        return Optional.of("evaluate does not score a --workload " + name() + " model");
    }

    /**
     * Scores the model a run saved in {@code model} (its {@code model-device-0} folder), trained at
     * {@code width}, on the samples {@code data} holds out, on {@code device}: what {@code
     * evaluate} prints, one line without the device. Progress lines go to {@code err}. Called only
     * where {@link #refusesEvaluate()} is empty.
     *
     * @throws IllegalArgumentException a usage problem, in one line (no held-out samples)
     * @throws BadInputException no such model there, or bad data
     */
    default String evaluate(Path model, double width, DataSpec data, Device device, PrintWriter err)
            throws IOException, BadInputException {
        throw new IllegalStateException(refusesEvaluate().orElse("evaluate is not implemented"));
    }
}
