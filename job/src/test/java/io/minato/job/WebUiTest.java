package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
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
        int metricsPort;
        try (ServerSocket free = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                ServerSocket other = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = free.getLocalPort();
            metricsPort = other.getLocalPort();
        }
        StreamExecutionEnvironment env =
                FlinkSetup.environment(new Configuration(), 1, 64, true, port, metricsPort, dir);
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
            assertThat(config.headers().firstValue("Access-Control-Allow-Origin"))
                    .hasValue("http://localhost:" + port);

            // Every socket this JVM listens on (the REST endpoint, the BLOB server, Prometheus'
            // metrics, ...) is on loopback: nothing of the run is reachable from another machine.
            List<String> listening = listeningAddresses();
            assertThat(listening).hasSizeGreaterThanOrEqualTo(3);
            assertThat(listening)
                    .anyMatch(a -> a.endsWith(String.format(Locale.ROOT, ":%04X", metricsPort)));
            assertThat(listening).allMatch(WebUiTest::loopback, "loopback");
        } finally {
            job.cancel().get();
        }
    }

    /**
     * Local addresses ("hex-ip:hex-port", as the kernel writes them) of this process's listening
     * TCP sockets: the socket inodes among its file descriptors, looked up in /proc/net/tcp{,6}.
     */
    static List<String> listeningAddresses() throws IOException {
        Set<String> inodes = new HashSet<>();
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc/self/fd"))) {
            for (Path fd : fds) {
                try {
                    String target = Files.readSymbolicLink(fd).toString();
                    if (target.startsWith("socket:[")) {
                        inodes.add(target.substring(8, target.length() - 1));
                    }
                } catch (IOException gone) {
                    // closed while listing
                }
            }
        }
        List<String> listening = new ArrayList<>();
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            Path file = Path.of(table);
            if (!Files.exists(file)) {
                continue;
            }
            List<String> lines = Files.readAllLines(file); // a header line, then one per socket
            for (String line : lines.subList(1, lines.size())) {
                String[] f = line.trim().split("\\s+");
                boolean listen = f[3].equals("0A");
                if (listen && inodes.contains(f[9])) {
                    listening.add(f[1]);
                }
            }
        }
        return listening;
    }

    /** 127.x.x.x (IPv4, little-endian hex), ::1, or ::ffff:127.x.x.x. */
    static boolean loopback(String address) {
        String ip = address.substring(0, address.indexOf(':'));
        if (ip.length() == 8) {
            return ip.endsWith("7F");
        }
        return ip.equals("00000000000000000000000001000000")
                || (ip.startsWith("0000000000000000FFFF0000") && ip.endsWith("7F"));
    }
}
