package io.minato.trainer.gpu;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import org.apache.flink.api.common.externalresource.ExternalResourceInfo;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.ExternalResourceOptions;
import org.apache.flink.configuration.ReadableConfig;

/**
 * The GPUs a TaskManager got from Flink's external resource framework: with {@code
 * external-resources: gpu}, {@code external-resource.gpu.amount: N} and Flink's GPU driver ({@code
 * flink-external-resource-gpu}, a plugin), each TaskManager discovers N GPUs at start and every
 * task reads them through {@code RuntimeContext#getExternalResourceInfos("gpu")}, each GPU an
 * {@code index} property. A trainer takes one its TaskManager got that no other trainer of its run
 * attempt there holds ({@link Claim}), so the trainers may be in any TaskManagers with GPUs.
 */
public final class FlinkGpus {

    /** The resource name the job reads, as in {@code external-resources: gpu}. */
    public static final String RESOURCE = "gpu";

    private static final String INDEX = "index";

    /**
     * Which of its TaskManager's GPUs a trainer takes, asked of whoever sees every trainer of the
     * run attempt in that TaskManager (the trainers' coordinator).
     */
    @FunctionalInterface
    public interface Claim {
        /**
         * A position in the TaskManager's {@code gpus} GPUs ({@link #indices()}) for trainer {@code
         * device}, the same each time it asks, that no other trainer there holds; -1 when they hold
         * all.
         */
        int position(int device, int gpus) throws IOException;
    }

    /** Trainer d takes the d-th GPU: right where the trainers are all in one TaskManager. */
    private static final Claim BY_DEVICE = (device, gpus) -> device < gpus ? device : -1;

    private final List<String> indices;
    private final Claim claim;

    private FlinkGpus(List<String> indices, Claim claim) {
        this.indices = List.copyOf(indices);
        this.claim = claim;
    }

    /** A TaskManager's GPUs from what {@code getExternalResourceInfos("gpu")} returned. */
    public static FlinkGpus of(Collection<? extends ExternalResourceInfo> infos) {
        List<String> found = new ArrayList<>();
        for (ExternalResourceInfo info : infos) {
            String index =
                    info.getProperty(INDEX)
                            .map(String::strip)
                            .orElseThrow(
                                    () ->
                                            new IllegalStateException(
                                                    "Flink's external resource '"
                                                            + RESOURCE
                                                            + "' has no '"
                                                            + INDEX
                                                            + "' property ("
                                                            + info
                                                            + "): its driver is not Flink's GPU"
                                                            + " driver"));
            if (!index.matches("\\d{1,9}")) {
                throw new IllegalStateException(
                        "Flink's external resource '"
                                + RESOURCE
                                + "' names GPU '"
                                + index
                                + "', not an index (0, 1, ...)");
            }
            found.add(index);
        }
        found.sort(Comparator.comparingInt(Integer::parseInt));
        return new FlinkGpus(found, BY_DEVICE);
    }

    /** The same GPUs, which each trainer takes as {@code claim} says. */
    public FlinkGpus claimingThrough(Claim claim) {
        return new FlinkGpus(indices, claim);
    }

    /** The GPU indices, ascending. */
    public List<String> indices() {
        return indices;
    }

    /**
     * The GPU that trainer {@code replica} of {@code replicas} takes: one of this TaskManager's
     * that no other trainer of the run attempt here holds.
     *
     * @throws Shortage in one line when the other trainers here hold all of them
     * @throws IOException when the claim could not be asked
     */
    public int forReplica(int replica, int replicas) throws IOException {
        int position = indices.isEmpty() ? -1 : claim.position(replica, indices.size());
        if (position < 0 || position >= indices.size()) {
            throw new Shortage(
                    "device "
                            + replica
                            + " of the "
                            + replicas
                            + " the job trains on GPUs from Flink's external resource framework"
                            + " found none free in its TaskManager, which got "
                            + (indices.isEmpty()
                                    ? "none"
                                    : indices.size()
                                            + " "
                                            + indices
                                            + ", all taken by the job's other trainers there")
                            + ": set external-resources: "
                            + RESOURCE
                            + " and external-resource."
                            + RESOURCE
                            + ".amount in the TaskManagers' config.yaml, with Flink's GPU driver"
                            + " in plugins/ (see the README)");
        }
        return Integer.parseInt(indices.get(position));
    }

    /**
     * How many GPUs each TaskManager gets from Flink, by {@code conf} (the configuration the job
     * was submitted with, which on a cluster is the cluster's): 0 unless {@code external-resources}
     * lists {@code gpu} with an amount.
     *
     * @throws IllegalArgumentException in one line when the amount is not a whole number >= 0
     */
    public static long amount(ReadableConfig conf) {
        List<String> resources = conf.get(ExternalResourceOptions.EXTERNAL_RESOURCE_LIST);
        if (resources == null || !resources.contains(RESOURCE)) {
            return 0;
        }
        String key = ExternalResourceOptions.getAmountConfigOptionForResource(RESOURCE);
        String amount = conf.get(ConfigOptions.key(key).stringType().noDefaultValue());
        if (amount == null) {
            return 0;
        }
        try {
            long n = Long.parseLong(amount.strip());
            if (n >= 0) {
                return n;
            }
        } catch (NumberFormatException e) {
            // below
        }
        throw new IllegalArgumentException(
                key + " '" + amount + "' is not a number of GPUs (a whole number >= 0)");
    }

    @Override
    public String toString() {
        return "Flink GPUs " + indices;
    }

    /**
     * A TaskManager with fewer GPUs from Flink than the job has trainers in it: the cluster's
     * configuration, which one line says all about (the client looks for this class among the
     * causes of a failed job).
     */
    public static final class Shortage extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        Shortage(String message) {
            super(message);
        }
    }
}
