package io.minato.job;

import io.minato.json.Json;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
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
        String host = config.get(RestOptions.ADDRESS);
        int port = config.get(RestOptions.PORT);
        if (host == null || host.isBlank()) {
            return OptionalInt.empty();
        }
        try {
            HttpClient client = HttpClient.newBuilder().connectTimeout(TIMEOUT).build();
            HttpRequest request =
                    HttpRequest.newBuilder(URI.create("http://" + host + ":" + port + "/overview"))
                            .timeout(TIMEOUT)
                            .build();
            HttpResponse<String> response =
                    client.send(request, HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() != 200) {
                return OptionalInt.empty();
            }
            return slotsIn(response.body());
        } catch (java.io.IOException | IllegalArgumentException e) {
            return OptionalInt.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return OptionalInt.empty();
        }
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
