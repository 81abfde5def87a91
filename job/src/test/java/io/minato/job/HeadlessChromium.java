package io.minato.job;

import io.minato.json.Json;
import io.minato.trainer.DeviceSummary;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;

/**
 * Headless Chromium driven through its DevTools protocol, as Puppeteer drives it: the test opens a
 * page, waits until its DOM shows what it must, takes a screenshot and closes the browser itself.
 * Chromium's one-shot modes ({@code --dump-dom --screenshot} with a virtual-time budget) decide
 * alone when a page that polls its server is done, and Chromium 156 sometimes never decided: three
 * runs of 45 s in a row were seen to hang on the page of a running job.
 */
final class HeadlessChromium implements AutoCloseable {
    // A first start after installing took over 60 s once (.ci/run starts it once before the tests).
    private static final Duration START = Duration.ofSeconds(90);

    private final Process process;
    private final Path profile;
    private final WebSocket socket;
    private final BlockingQueue<String> messages = new LinkedBlockingQueue<>();
    private int nextId;

    /** Starts {@code chromium} with a fresh profile in {@code profile} and attaches to its tab. */
    HeadlessChromium(String chromium, Path profile, Path stderr) throws Exception {
        this.profile = profile;
        ProcessBuilder pb =
                new ProcessBuilder(
                                chromium,
                                "--headless=new",
                                "--no-sandbox", // CI runs as root
                                "--disable-gpu",
                                "--disable-dev-shm-usage",
                                "--hide-scrollbars",
                                "--no-first-run",
                                "--user-data-dir=" + profile,
                                "--window-size=1400,900",
                                "--remote-debugging-port=0", // it names the port it took
                                "about:blank")
                        .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                        .redirectError(stderr.toFile());
        // Without /dev/shm it keeps its shared memory in TMPDIR (org.chromium.Chromium.*), which
        // a killed browser leaves behind: in the profile, not /tmp.
        pb.environment().put("TMPDIR", profile.toString());
        process = pb.start();
        try {
            socket = attach();
        } catch (Exception e) {
            close();
            throw e;
        }
    }

    /** Loads {@code url} in the tab. */
    void navigate(String url) throws Exception {
        call("Page.navigate", "{\"url\":" + DeviceSummary.Json.quote(url) + "}");
    }

    /**
     * The tab's DOM once {@code ready} holds for it, polled every 200 ms; the last one seen if
     * {@code within} passes first.
     */
    String awaitDom(Predicate<String> ready, Duration within) throws Exception {
        long deadline = System.nanoTime() + within.toNanos();
        while (true) {
            Map<?, ?> result =
                    call(
                            "Runtime.evaluate",
                            "{\"expression\":\"document.documentElement.outerHTML\","
                                    + "\"returnByValue\":true}");
            Object value = ((Map<?, ?>) result.get("result")).get("value");
            String dom = value instanceof String s ? s : "";
            if (ready.test(dom) || System.nanoTime() > deadline) {
                return dom;
            }
            Thread.sleep(200);
        }
    }

    /** A PNG of the tab as it shows now. */
    void screenshot(Path png) throws Exception {
        Map<?, ?> result = call("Page.captureScreenshot", "{\"format\":\"png\"}");
        Files.write(png, Base64.getDecoder().decode((String) result.get("data")));
    }

    /** Kills the browser and waits for all its processes, which write into the profile. */
    @Override
    public void close() throws InterruptedException {
        List<ProcessHandle> all = new ArrayList<>(process.descendants().toList());
        all.add(process.toHandle());
        all.forEach(ProcessHandle::destroyForcibly);
        for (ProcessHandle p : all) {
            try {
                p.onExit().get(10, TimeUnit.SECONDS);
            } catch (ExecutionException | TimeoutException e) {
                // gone, or not ours to wait for any more
            }
        }
    }

    /** The tab's DevTools socket, once Chromium wrote its port into the profile. */
    private WebSocket attach() throws Exception {
        Path activePort = profile.resolve("DevToolsActivePort");
        long deadline = System.nanoTime() + START.toNanos();
        List<String> lines = List.of();
        while (lines.isEmpty() || lines.get(0).isBlank()) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                throw new IOException(
                        "chromium wrote no DevToolsActivePort within "
                                + START.toSeconds()
                                + " s (exit "
                                + (process.isAlive() ? "none yet" : process.exitValue())
                                + ")");
            }
            Thread.sleep(50);
            if (Files.exists(activePort)) {
                lines = Files.readAllLines(activePort);
            }
        }
        HttpClient http = HttpClient.newHttpClient();
        URI list = URI.create("http://127.0.0.1:" + lines.get(0).trim() + "/json/list");
        String pages =
                http.send(
                                HttpRequest.newBuilder(list).GET().build(),
                                HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8))
                        .body();
        for (Object target : (List<?>) Json.parse(pages)) {
            Map<?, ?> t = (Map<?, ?>) target;
            if ("page".equals(t.get("type"))) {
                return http.newWebSocketBuilder()
                        .buildAsync(
                                URI.create((String) t.get("webSocketDebuggerUrl")), new Collector())
                        .get(START.toSeconds(), TimeUnit.SECONDS);
            }
        }
        throw new IOException("chromium has no page to attach to: " + pages);
    }

    /** Calls {@code method} and gives its result; a DevTools error fails the call. */
    private Map<?, ?> call(String method, String params) throws Exception {
        int id = ++nextId;
        socket.sendText(
                        "{\"id\":"
                                + id
                                + ",\"method\":\""
                                + method
                                + "\",\"params\":"
                                + params
                                + "}",
                        true)
                .get(10, TimeUnit.SECONDS);
        while (true) {
            String text = messages.poll(30, TimeUnit.SECONDS);
            if (text == null) {
                throw new IOException("chromium did not answer " + method + " within 30 s");
            }
            Map<?, ?> message = (Map<?, ?>) Json.parse(text);
            Object answered = message.get("id");
            if (answered instanceof Number n && n.intValue() == id) {
                if (message.get("error") != null) {
                    throw new IOException(method + ": " + message.get("error"));
                }
                return (Map<?, ?>) message.get("result");
            }
            // an event, or the answer to a call given up on: not this call's
        }
    }

    /** Whole messages, however the socket splits them into frames. */
    private final class Collector implements WebSocket.Listener {
        private final StringBuilder partial = new StringBuilder();

        @Override
        public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
            partial.append(data);
            if (last) {
                messages.add(partial.toString());
                partial.setLength(0);
            }
            ws.request(1);
            return null;
        }
    }
}
