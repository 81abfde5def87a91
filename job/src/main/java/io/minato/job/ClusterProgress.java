package io.minato.job;

import io.minato.json.Json;
import io.minato.trainer.TrainerSink;
import io.minato.trainer.TrainingProgress;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.flink.configuration.ReadableConfig;

/**
 * The progress of a job on a cluster, for the progress line of an attached {@code flink run}: the
 * trainers' own metrics (steps, fast and slow samples, busy time), summed over their subtasks by
 * the JobManager's REST API, as the web UI shows them. The JobManager fetches metrics from the
 * TaskManagers at most every {@code metrics.fetcher.update-interval} (flink-conf: 1 s), so the line
 * lags by up to that. Zero until the trainers' metrics are there.
 */
final class ClusterProgress {
    private static final List<String> METRICS =
            List.of("steps", "samplesFast", "samplesSlow", "busyMillis");

    private final ReadableConfig config;
    private final String job;
    private String vertex;
    private Map<String, String> ids;

    ClusterProgress(ReadableConfig config, String job) {
        this.config = config;
        this.job = job;
    }

    /** The trainers' totals now; zeros while the JobManager cannot tell yet. */
    TrainingProgress.Totals totals() {
        Map<String, Double> sums = sums();
        return new TrainingProgress.Totals(
                sums.getOrDefault("steps", 0.0).longValue(),
                sums.getOrDefault("samplesFast", 0.0).longValue(),
                sums.getOrDefault("samplesSlow", 0.0).longValue(),
                sums.getOrDefault("busyMillis", 0.0).longValue() * 1_000_000,
                0,
                0);
    }

    private Map<String, Double> sums() {
        Map<String, Double> sums = new HashMap<>();
        try {
            if (found()) {
                add(sums);
            }
        } catch (RuntimeException e) {
            // An answer that is not what the REST API documents: no figures this time.
            sums.clear();
        }
        return sums;
    }

    private void add(Map<String, Double> sums) {
        String get = URLEncoder.encode(String.join(",", ids.keySet()), StandardCharsets.UTF_8);
        Optional<String> answer =
                ClusterSlots.get(
                        config,
                        "/jobs/"
                                + job
                                + "/vertices/"
                                + vertex
                                + "/subtasks/metrics?agg=sum&get="
                                + get);
        for (Object o : list(answer)) {
            if (o instanceof Map<?, ?> m && m.get("sum") instanceof Number sum) {
                String name = ids.get(String.valueOf(m.get("id")));
                if (name != null) {
                    sums.put(name, sum.doubleValue());
                }
            }
        }
    }

    /**
     * Finds the trainers' vertex and the ids its subtasks report their metrics under ({@code
     * <operator>.<metric>}), once they are there.
     */
    private boolean found() {
        if (ids != null) {
            return true;
        }
        if (vertex == null) {
            Optional<String> answer = ClusterSlots.get(config, "/jobs/" + job);
            if (answer.isPresent()
                    && Json.parse(answer.get()) instanceof Map<?, ?> m
                    && m.get("vertices") instanceof List<?> vertices) {
                for (Object v : vertices) {
                    if (v instanceof Map<?, ?> vm
                            && String.valueOf(vm.get("name")).contains(TrainerSink.NAME)) {
                        vertex = String.valueOf(vm.get("id"));
                    }
                }
            }
            if (vertex == null) {
                return false;
            }
        }
        Map<String, String> found = new HashMap<>();
        for (Object o :
                list(
                        ClusterSlots.get(
                                config,
                                "/jobs/" + job + "/vertices/" + vertex + "/subtasks/metrics"))) {
            if (o instanceof Map<?, ?> m) {
                String id = String.valueOf(m.get("id"));
                for (String metric : METRICS) {
                    if (id.contains(TrainerSink.NAME) && id.endsWith("." + metric)) {
                        found.put(id, metric);
                    }
                }
            }
        }
        if (found.size() < METRICS.size()) {
            return false;
        }
        ids = found;
        return true;
    }

    private static List<?> list(Optional<String> answer) {
        return answer.isPresent() && Json.parse(answer.get()) instanceof List<?> l ? l : List.of();
    }
}
