package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The embedded run's web UI, as a browser or a script on this machine sees it while a job runs: up
 * on localhost, and unable to take a jar (uploading one runs arbitrary code).
 */
class WebUiTest {
    @TempDir Path dir;

    @Test
    void shouldServeTheJobButRefuseJarUploads() throws Exception {
        int port;
        try (ServerSocket free = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = free.getLocalPort();
        }
        StreamExecutionEnvironment env =
                FlinkSetup.environment(new Configuration(), 1, true, port, dir);
        env.fromSequence(0, Long.MAX_VALUE)
                .map(
                        i -> {
                            Thread.sleep(10);
                            return i;
                        })
                .sinkTo(new DiscardingSink<>());
        JobClient job = env.executeAsync("web-ui-test");
        try {
            HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
            URI base = URI.create("http://localhost:" + port);
            HttpResponse<String> config =
                    http.send(
                            HttpRequest.newBuilder(base.resolve("/config")).GET().build(),
                            HttpResponse.BodyHandlers.ofString());
            assertThat(config.statusCode()).isEqualTo(200);
            assertThat(config.body().replace(" ", ""))
                    .contains("\"web-submit\":false")
                    .contains("\"web-cancel\":true");

            HttpResponse<String> upload =
                    http.send(
                            HttpRequest.newBuilder(base.resolve("/jars/upload"))
                                    .header("Content-Type", "multipart/form-data; boundary=minato")
                                    .POST(
                                            HttpRequest.BodyPublishers.ofString(
                                                    "--minato\r\nContent-Disposition: form-data;"
                                                            + " name=\"jarfile\";"
                                                            + " filename=\"x.jar\"\r\n"
                                                            + "Content-Type:"
                                                            + " application/x-java-archive\r\n\r\n"
                                                            + "PK\r\n--minato--\r\n"))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
            // Refused before the bytes are looked at (an accepted upload of a bad jar would say
            // why the jar is bad instead).
            assertThat(upload.statusCode()).as(upload.body()).isBetween(400, 405);
            assertThat(upload.body()).contains("POST request not allowed");
        } finally {
            job.cancel().get();
        }
    }
}
