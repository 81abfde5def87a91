package io.minato.trainer.gpu;

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
 * {@code index} property. Trainer {@code d} takes the {@code d}-th of its TaskManager's GPUs in
 * index order, so a job's GPU trainers need one TaskManager with a GPU each (the client checks).
 */
public final class FlinkGpus {

    /** The resource name the job reads, as in {@code external-resources: gpu}. */
    public static final String RESOURCE = "gpu";

    /**
     * A device name for {@code DjlAccelerator.Factory}: the GPU that Flink gave the trainer's
     * TaskManager, resolved there, not on the client.
     */
    public static final String DEVICE_NAME = "flink-gpu";

    private static final String INDEX = "index";

    private final List<String> indices;

    private FlinkGpus(List<String> indices) {
        this.indices = List.copyOf(indices);
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
        return new FlinkGpus(found);
    }

    /** The GPU indices, ascending. */
    public List<String> indices() {
        return indices;
    }

    /**
     * The GPU of trainer {@code replica} of {@code replicas}.
     *
     * @throws Shortage in one line when the TaskManager has fewer GPUs than trainers
     */
    public int forReplica(int replica, int replicas) {
        if (indices.size() < replicas) {
            throw new Shortage(
                    "the job trains on "
                            + replicas
                            + " GPU(s) from Flink's external resource framework, but this"
                            + " TaskManager got "
                            + (indices.isEmpty() ? "none" : indices.size() + " " + indices)
                            + ": set external-resources: "
                            + RESOURCE
                            + " and external-resource."
                            + RESOURCE
                            + ".amount: "
                            + replicas
                            + " in the TaskManagers' config.yaml, with Flink's GPU driver in"
                            + " plugins/ (see the README)");
        }
        return Integer.parseInt(indices.get(replica));
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
     * A TaskManager with fewer GPUs from Flink than the job has trainers: the cluster's
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
