package io.minato.job;

import io.minato.json.Json;
import io.minato.trainer.gpu.FlinkGpus;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.configuration.RestOptions;

/**
 * The task slots of the cluster a job is submitted to, from its REST API ({@code /overview}, at the
 * address {@code flink run} itself talks to): with {@code --workers auto} on a cluster the job
 * takes one preparation worker per slot the trainers leave, rather than the client's cores.
 */
final class ClusterSlots {
    private ClusterSlots() {}

    /** How long the client waits for the JobManager's answer before it uses its own cores. */
    static final Duration TIMEOUT = Duration.ofSeconds(5);

    /** The cluster's slots in all; empty when its REST API cannot tell (not reachable, say). */
    static OptionalInt total(ReadableConfig config) {
        return get(config, "/overview").map(ClusterSlots::slotsIn).orElse(OptionalInt.empty());
    }

    /**
     * The GPUs of Flink's external resource {@code gpu} that the cluster's TaskManagers have in
     * all; empty when its REST API cannot tell, or no TaskManager is registered yet.
     */
    static OptionalInt gpus(ReadableConfig config) {
        return get(config, "/taskmanagers").map(ClusterSlots::gpusIn).orElse(OptionalInt.empty());
    }

    /** The body of the JobManager's answer to GET {@code path}; empty if none came. */
    static Optional<String> get(ReadableConfig config, String path) {
        String host = config.get(RestOptions.ADDRESS);
        int port = config.get(RestOptions.PORT);
        if (host == null || host.isBlank()) {
            return Optional.empty();
        }
        try {
            HttpClient client = HttpClient.newBuilder().connectTimeout(TIMEOUT).build();
            HttpRequest request =
                    HttpRequest.newBuilder(URI.create("http://" + host + ":" + port + path))
                            .timeout(TIMEOUT)
                            .build();
            HttpResponse<String> response =
                    client.send(request, HttpResponse.BodyHandlers.ofString());
            return response.statusCode() == 200 ? Optional.of(response.body()) : Optional.empty();
        } catch (IOException | IllegalArgumentException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }

    /**
     * The sum of {@code gpu} in the TaskManagers' {@code totalResource.extendedResources} of a
     * {@code /taskmanagers} answer; empty when it lists no TaskManager.
     */
    static OptionalInt gpusIn(String taskManagers) {
        try {
            if (!(Json.parse(taskManagers) instanceof Map<?, ?> m
                    && m.get("taskmanagers") instanceof List<?> tms
                    && !tms.isEmpty())) {
                return OptionalInt.empty();
            }
            long all = 0;
            for (Object tm : tms) {
                if (tm instanceof Map<?, ?> t
                        && t.get("totalResource") instanceof Map<?, ?> total
                        && total.get("extendedResources") instanceof Map<?, ?> extended
                        && extended.get(FlinkGpus.RESOURCE) instanceof Number n) {
                    all += (long) Math.floor(n.doubleValue());
                }
            }
            return OptionalInt.of((int) Math.min(all, Integer.MAX_VALUE));
        } catch (IllegalArgumentException e) {
            return OptionalInt.empty(); // not JSON: no answer
        }
    }

    /**
     * The one line for a job that trains on {@code devices} of Flink's GPUs on a cluster whose
     * TaskManagers have {@code all}: its training slots would wait for GPUs that never come.
     */
    static String tooFewGpus(int devices, int all) {
        String start =
                "start TaskManagers with external-resources: gpu and external-resource.gpu.amount"
                        + " in their config.yaml";
        return "the job trains on "
                + devices
                + " GPU(s) from Flink's external resource framework, but the cluster's"
                + " TaskManagers have "
                + (all == 0
                        ? "none: " + start + ", or give --devices cpu"
                        : all
                                + " in all: give --devices gpus:N with N at most "
                                + all
                                + ", or "
                                + start);
    }

    /**
     * {@code slots-total} of an {@code /overview} answer; empty if it has none, or none yet (a
     * resource manager that starts TaskManagers on demand, YARN's or Kubernetes', has none until a
     * job asks).
     */
    static OptionalInt slotsIn(String overview) {
        try {
            if (Json.parse(overview) instanceof Map<?, ?> m
                    && m.get("slots-total") instanceof Number n
                    && n.intValue() > 0) {
                return OptionalInt.of(n.intValue());
            }
        } catch (IllegalArgumentException e) {
            // not JSON: no answer
        }
        return OptionalInt.empty();
    }

    /**
     * Preparation workers for {@code --workers auto} on a cluster of {@code slots} slots with
     * {@code devices} trainers: every slot the trainers leave.
     *
     * @throws IllegalArgumentException in one line when no slot is left for preparation
     */
    static int preparationWorkers(int slots, int devices) {
        if (slots <= devices) {
            throw new IllegalArgumentException(
                    "the cluster has "
                            + slots
                            + " task slot(s), and the job needs one per device ("
                            + devices
                            + ") and at least one for preparation: start more TaskManagers (or"
                            + " give them more taskmanager.numberOfTaskSlots), or fewer --devices");
        }
        return slots - devices;
    }

    /**
     * The one line for a cluster of {@code slots} slots that a job needing {@code needed} (its
     * preparation's widest operator and one per device) cannot run on.
     */
    static String tooFew(int slots, int needed, int devices) {
        return "the job needs "
                + needed
                + " task slots ("
                + (needed - devices)
                + " for preparation, "
                + devices
                + " for the devices' trainers) and the cluster has "
                + slots
                + ": give fewer --workers (or --slow-workers), or start more TaskManagers";
    }
}
