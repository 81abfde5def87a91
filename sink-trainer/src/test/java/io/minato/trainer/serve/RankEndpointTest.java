package io.minato.trainer.serve;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.Base64;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A rank endpoint on a real socket against what anyone who reaches its port may send: silent
 * connections, garbage, frames claiming megabytes, hellos with a wrong token or for another rank.
 * None of it may delay the real training process, or cost the endpoint more than a hello's bytes.
 */
class RankEndpointTest {
    private static final String TOKEN = "s3cret";

    /** The deadline for a whole hello that docs/operations.md promises. */
    private static final long HELLO_DEADLINE_MS = 2_000;

    private final List<Socket> sockets = new ArrayList<>();
    private final Welcomes welcomes = new Welcomes();

    @AfterEach
    void closeSockets() throws IOException {
        for (Socket s : sockets) {
            s.close();
        }
    }

    @Test
    void shouldWelcomeTheRealProcessWithinASecondWhateverElseIsConnected() throws Exception {
        try (RankEndpoint endpoint = endpoint(0, 1)) {
            Random random = new Random(7);
            List<Socket> wrongTokens = new ArrayList<>();
            List<Socket> otherRanks = new ArrayList<>();
            ExecutorService pool = Executors.newFixedThreadPool(16);
            try {
                List<Future<Socket>> opened = new ArrayList<>();
                for (int i = 0; i < 200; i++) {
                    opened.add(pool.submit(() -> open(endpoint))); // and left silent
                }
                for (int i = 0; i < 20; i++) {
                    byte[] garbage = new byte[1024];
                    random.nextBytes(garbage);
                    opened.add(pool.submit(() -> send(open(endpoint), garbage)));
                    opened.add(pool.submit(() -> send(open(endpoint), header(64 << 20))));
                }
                for (int i = 0; i < 20; i++) {
                    wrongTokens.add(hello(open(endpoint), "guess" + i, 0));
                    otherRanks.add(hello(open(endpoint), TOKEN, 5));
                }
                for (Future<Socket> f : opened) {
                    assertThat(f.get(10, TimeUnit.SECONDS).isConnected()).isTrue();
                }
            } finally {
                pool.shutdownNow();
            }

            long start = System.nanoTime();
            Socket real = open(endpoint);
            Map<String, Object> welcome = handshake(hello(real, TOKEN, 0), Map.of());
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

            assertThat(welcome).containsEntry("type", "welcome");
            assertThat(tookMs).as("connect to welcome, ms").isLessThan(1_000);
            for (Socket s : wrongTokens) {
                assertThat(next(s)).containsEntry("reason", "wrong or missing token");
            }
            for (Socket s : otherRanks) {
                assertThat(next(s))
                        .containsEntry("reason", "this endpoint serves rank 0 of 1, not rank 5");
            }
            assertThat(welcomes.admitted).hasSize(1);
        }
    }

    @Test
    void shouldCloseAConnectionThatSendsNoHelloAfterTheDeadline() throws Exception {
        try (RankEndpoint endpoint = endpoint(0, 1)) {
            Socket silent = open(endpoint);
            Socket halfAHello = send(open(endpoint), header(100));
            long start = System.nanoTime();
            assertThat(silent.getInputStream().read()).isEqualTo(-1); // closed, nothing said
            long closedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertThat(halfAHello.getInputStream().read()).isEqualTo(-1);
            assertThat(closedMs).isBetween(HELLO_DEADLINE_MS - 200, HELLO_DEADLINE_MS + 1_000);
        }
    }

    @Test
    void shouldRefuseAFrameLargerThanAHelloWithoutAllocatingIt() throws Exception {
        try (RankEndpoint endpoint = endpoint(3, 4)) {
            com.sun.management.ThreadMXBean threads =
                    (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            long handshakes = threadId("serving-rank-3");
            long before = threads.getThreadAllocatedBytes(handshakes);
            // Under the largest frame a process whose hello passed may send (64 MiB).
            Socket big = send(open(endpoint), header(60 << 20));
            Map<String, Object> answer = next(big);
            long allocated = threads.getThreadAllocatedBytes(handshakes) - before;

            assertThat(answer).containsEntry("type", "refused");
            assertThat((String) answer.get("reason")).startsWith("a first frame of 62914560 bytes");
            assertThat(allocated).as("bytes the endpoint allocated").isLessThan(1 << 20);
        }
    }

    @Test
    void shouldAdmitAHelloWhoseConsumedSamplesAreLargerThanAnyFirstFrame() throws Exception {
        try (RankEndpoint endpoint = endpoint(0, 1)) {
            // A shuffled epoch half consumed: its bitmap (25 KB for 200,000 samples) hardly
            // compresses; sent plain here, 33 KB of base64.
            BitSet half = new BitSet();
            Random random = new Random(3);
            for (int i = 0; i < 200_000; i++) {
                if (random.nextBoolean()) {
                    half.set(i);
                }
            }
            Map<String, String> wire =
                    Map.of("0", Base64.getEncoder().encodeToString(half.toByteArray()));
            assertThat(wire.get("0").length()).isGreaterThan(Wire.maxHello(TOKEN));

            Map<String, Object> welcome = handshake(hello(open(endpoint), TOKEN, 0), wire);

            assertThat(welcome).containsEntry("type", "welcome");
            assertThat(welcomes.admitted.peek().consumed().size()).isEqualTo(half.cardinality());
        }
    }

    @Test
    void shouldRefuseAProcessOfTheFirstProtocolInOneLine() throws Exception {
        try (RankEndpoint endpoint = endpoint(0, 1)) {
            Socket old = open(endpoint);
            send(
                    old,
                    Map.of(
                            "type",
                            "hello",
                            "version",
                            1,
                            "rank",
                            0,
                            "token",
                            TOKEN,
                            "consumed",
                            Map.of()));
            assertThat(next(old))
                    .containsEntry("reason", "protocol version 1, this job speaks " + Wire.VERSION);
        }
    }

    private RankEndpoint endpoint(int rank, int ranks) throws IOException {
        return new RankEndpoint(rank, ranks, "127.0.0.1", 0, TOKEN, null, Map.of(), welcomes);
    }

    private Socket open(RankEndpoint endpoint) throws IOException {
        Socket s = new Socket();
        synchronized (sockets) {
            sockets.add(s);
        }
        s.connect(new InetSocketAddress("127.0.0.1", endpoint.port()), 2_000);
        s.setSoTimeout(5_000);
        return s;
    }

    private static byte[] header(int length) {
        return new byte[] {
            (byte) (length >>> 24), (byte) (length >>> 16), (byte) (length >>> 8), (byte) length
        };
    }

    private static Socket send(Socket s, byte[] bytes) throws IOException {
        s.getOutputStream().write(bytes);
        s.getOutputStream().flush();
        return s;
    }

    private static void send(Socket s, Map<String, ?> header) throws IOException {
        DataOutputStream out = new DataOutputStream(s.getOutputStream());
        Wire.send(out, header);
        out.flush();
    }

    private static Socket hello(Socket s, String token, int rank) throws IOException {
        Map<String, Object> hello = new HashMap<>();
        hello.put("type", "hello");
        hello.put("version", Wire.VERSION);
        hello.put("rank", rank);
        hello.put("prefetch", 2);
        hello.put("token", token);
        send(s, hello);
        return s;
    }

    /** The rest of a process's handshake after its hello, as the Python loader makes it. */
    private static Map<String, Object> handshake(Socket s, Map<String, String> consumed)
            throws IOException {
        Map<String, Object> answer = next(s);
        if (!"ready".equals(answer.get("type"))) {
            return answer;
        }
        send(s, Map.of("type", "consumed", "consumed", consumed));
        return next(s);
    }

    private static Map<String, Object> next(Socket s) throws IOException {
        return Wire.receive(new DataInputStream(s.getInputStream()));
    }

    private static long threadId(String name) {
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().equals(name)) {
                return t.getId();
            }
        }
        throw new IllegalStateException("no thread " + name);
    }

    /** Admits every process it is asked about, with a welcome. */
    private static final class Welcomes implements RankEndpoint.Admission {
        final ConcurrentLinkedQueue<RankEndpoint.Hello> admitted = new ConcurrentLinkedQueue<>();

        @Override
        public String admit(RankEndpoint.Connection c, RankEndpoint.Hello hello)
                throws IOException {
            admitted.add(hello);
            c.send(Map.of("type", "welcome", "version", Wire.VERSION));
            return null;
        }

        @Override
        public void credit(RankEndpoint.Connection c, int n) {}

        @Override
        public void done(RankEndpoint.Connection c) {}

        @Override
        public void lost(RankEndpoint.Connection c, String why) {
            c.close();
        }
    }
}
