package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.minato.json.Json;
import io.minato.workload.kits19.KitsLikeGenerator;
import java.io.File;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The web UI of a running training job in a real browser: headless Chromium (Debian's package;
 * {@code .ci/run} installs it) renders the job's page, which must show the loader's operators, and
 * the REST calls the page makes must carry the loader's metrics. The test drives Chromium through
 * its DevTools protocol ({@link HeadlessChromium}) and saves the screenshot to {@code
 * job/target/webui.png}.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class WebUiBrowserTest {
    @TempDir Path dir;

    @Test
    void shouldShowTheRunningJobsOperatorsAndMetricsInABrowser() throws Exception {
        String chromium = chromium();
        Path data = dir.resolve("data");
        KitsLikeGenerator.builder().optCases(6).optScale(0.1).optSeed(3).build().generate(data);
        int port = FlinkSetup.freePort();
        CompletableFuture<MainTest.Run> training =
                CompletableFuture.supplyAsync(
                        () ->
                                MainTest.run(
                                        "train",
                                        "--data",
                                        data.toString(),
                                        "--patch",
                                        "16",
                                        // Until cancelled: longer than Chromium's slowest
                                        // runs (browse).
                                        "--epochs",
                                        "100000",
                                        "--accelerator",
                                        "simulated:20",
                                        "--rest-port",
                                        Integer.toString(port),
                                        "--progress-interval",
                                        "0",
                                        "--run-dir",
                                        dir.resolve("run").toString()));
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        URI base = URI.create("http://localhost:" + port);
        String job = null;
        try {
            job = runningJob(http, base, training);
            // What the job's page asks the REST API for: its vertices, then each one's metrics.
            Map<?, ?> detail = (Map<?, ?>) Json.parse(get(http, base, "/jobs/" + job));
            List<String> names = new ArrayList<>();
            StringBuilder metrics = new StringBuilder();
            List<String> ours =
                    List.of(
                            "AugmentOperator.samplesFast",
                            "AugmentOperator.samplesSlow",
                            "AugmentOperator.timeoutMs",
                            "SlowPath.samplesFinished",
                            "TrainerSink.queueDepth",
                            "TrainerSink.busyMillis");
            for (int attempt = 0; attempt < 100; attempt++) {
                names.clear();
                metrics.setLength(0);
                for (Object v : (List<?>) detail.get("vertices")) {
                    Map<?, ?> vertex = (Map<?, ?>) v;
                    names.add((String) vertex.get("name"));
                    metrics.append(
                            get(
                                    http,
                                    base,
                                    "/jobs/" + job + "/vertices/" + vertex.get("id") + "/metrics"));
                }
                if (ours.stream().allMatch(m -> metrics.toString().contains(m))) {
                    break;
                }
                Thread.sleep(100); // metrics register as the tasks start
            }
            assertThat(names)
                    .containsExactly(
                            "Source: SampleSource -> SampleTask -> AugmentOperator",
                            "SlowPath",
                            "BatchAssembler -> TrainerSink");
            for (String metric : ours) {
                assertThat(metrics.toString()).contains("." + metric + "\"");
            }

            String page = base + "/#/job/running/" + job + "/overview";
            Path shot = Path.of("target", "webui.png").toAbsolutePath();
            Files.deleteIfExists(shot);
            List<String> shown =
                    List.of(
                            "minato-flink train (minato)",
                            "AugmentOperator",
                            "SlowPath",
                            "BatchAssembler",
                            "TrainerSink",
                            "RUNNING");
            String dom = browse(chromium, shot, page, shown);
            assertThat(dom).as("the rendered job page").contains(shown);
            byte[] png = Files.readAllBytes(shot);
            assertThat(png.length).isGreaterThan(10_000);
            assertThat(new String(png, 1, 3, java.nio.charset.StandardCharsets.US_ASCII))
                    .isEqualTo("PNG");
        } finally {
            if (job != null) {
                // The page's "Cancel Job" makes this call (web.cancel.enable is on).
                http.send(
                        HttpRequest.newBuilder(base.resolve("/jobs/" + job + "?mode=cancel"))
                                .method("PATCH", HttpRequest.BodyPublishers.noBody())
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
            }
        }
        MainTest.Run run = training.get(60, TimeUnit.SECONDS);
        assertThat(run.err()).contains("the job was cancelled");
    }

    /** The id of the training's job once it runs. */
    private static String runningJob(
            HttpClient http, URI base, CompletableFuture<MainTest.Run> training) throws Exception {
        while (!training.isDone()) {
            try {
                HttpResponse<String> jobs =
                        http.send(
                                HttpRequest.newBuilder(base.resolve("/jobs")).GET().build(),
                                HttpResponse.BodyHandlers.ofString());
                if (jobs.statusCode() != 200) {
                    // 503 while the REST endpoint's leader is elected
                    Thread.sleep(100);
                    continue;
                }
                Map<?, ?> parsed = (Map<?, ?>) Json.parse(jobs.body());
                for (Object j : (List<?>) parsed.get("jobs")) {
                    Map<?, ?> job = (Map<?, ?>) j;
                    if ("RUNNING".equals(job.get("status"))) {
                        return (String) job.get("id");
                    }
                }
            } catch (java.io.IOException notYet) {
                // the cluster is still starting
            }
            Thread.sleep(100);
        }
        MainTest.Run run = training.get();
        return fail("the run ended before its job ran: %s %s", run.status(), run.err());
    }

    private static String get(HttpClient http, URI base, String path) throws Exception {
        HttpResponse<String> r =
                http.send(
                        HttpRequest.newBuilder(base.resolve(path)).GET().build(),
                        HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as("%s: %s", path, r.body()).isEqualTo(200);
        return r.body();
    }

    /**
     * The DOM of {@code url} in headless Chromium once it shows every one of {@code expected} (or
     * after a minute), and a screenshot of it in {@code shot}.
     */
    private String browse(String chromium, Path shot, String url, List<String> expected)
            throws Exception {
        try (HeadlessChromium browser =
                new HeadlessChromium(
                        chromium, dir.resolve("profile"), dir.resolve("chromium.err"))) {
            browser.navigate(url);
            String dom =
                    browser.awaitDom(
                            d -> expected.stream().allMatch(d::contains), Duration.ofMinutes(1));
            browser.screenshot(shot);
            return dom;
        } catch (java.io.IOException e) {
            return fail(
                    "%s%n%s", e.getMessage(), tail(Files.readString(dir.resolve("chromium.err"))));
        }
    }

    private static String tail(String text) {
        List<String> lines = text.lines().toList();
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
    }

    /**
     * Chromium from PATH. Without it the test is skipped on a workstation, but fails under CI
     * (which installs it), so that CI never passes it by skipping.
     */
    private static String chromium() {
        for (String dirName : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            for (String name : List.of("chromium", "chromium-browser")) {
                Path candidate = Path.of(dirName, name);
                if (Files.isExecutable(candidate)) {
                    return candidate.toString();
                }
            }
        }
        if (System.getenv("CI") != null) {
            return fail("chromium is not installed (Debian: apt-get install chromium)");
        }
        Assumptions.abort("chromium is not installed (Debian: apt-get install chromium)");
        return null;
    }
}
