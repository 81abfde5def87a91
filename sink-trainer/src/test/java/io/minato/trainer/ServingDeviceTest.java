package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.json.Json;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.trainer.serve.ServingDevice;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * A served device against a training process written here from the protocol: what it sends, what it
 * sends again to a process restarted from an older state, what it drops after a restore of its own,
 * and whom it refuses.
 */
class ServingDeviceTest {

    private static final int CASES = 5;

    private static TrainerSink sink(String token) {
        return TrainerSink.builder()
                .setServer(
                        new ServingDevice.Factory(
                                "127.0.0.1", 0, token, null, TestBatches.RECIPE, 7, CASES, 2, 2))
                .optRecipe(TestBatches.RECIPE)
                .build();
    }

    private static ServingDevice serving(List<TrainerWriterState> restored) throws IOException {
        return (ServingDevice) new FakeTrainerContext(0, 1).restore(sink(null), restored);
    }

    private static Batch batch(long sequence, int... indices) {
        List<PreparedSample> samples = new ArrayList<>();
        for (int index : indices) {
            int epoch = index / CASES;
            samples.add(TestBatches.sample(epoch, index % CASES, index % CASES, SamplePath.FAST));
        }
        return new Batch(0, sequence, samples);
    }

    @Test
    void shouldServeAgainWhatARestartedProcessLacksAndDropWhatItHas() throws Exception {
        Batch first = batch(0, 0, 1);
        float firstValue = first.samples().get(0).patch().image()[0];
        try (ServingDevice device = serving(List.of())) {
            Client a = Client.connect(device.port(), 0, Map.of());
            assertThat(a.welcome)
                    .containsEntry("type", "welcome")
                    .containsEntry("mode", "tcp")
                    .containsEntry("epochs", 2.0)
                    .containsEntry("samples", 10.0);
            a.credit(2);
            device.write(first, null);
            Map<String, Object> got = a.batch();
            assertThat(a.ids(got)).containsExactly(List.of(0L, 0L), List.of(0L, 1L));
            // The bytes follow the header: the first sample's first input value, little-endian.
            assertThat(a.payload.getFloat(0)).isEqualTo(firstValue);
            List<TrainerWriterState> checkpoint = device.snapshotState(1);

            device.write(batch(1, 2, 3), null);
            assertThat(a.ids(a.batch())).containsExactly(List.of(0L, 2L), List.of(0L, 3L));
            a.close(); // crashed: its checkpoint holds the first batch only

            // Restarted at once, maybe before the device has read the end of a's stream.
            Client b = Client.connect(device.port(), 0, consumed(0, 1));
            assertThat(b.welcome).containsEntry("replay", 2.0);
            b.credit(2);
            device.write(batch(2, 4, 5), null);
            assertThat(b.ids(b.batch())).containsExactly(List.of(0L, 2L), List.of(0L, 3L));
            assertThat(b.ids(b.batch())).containsExactly(List.of(0L, 4L), List.of(1L, 0L));
            b.close();

            // The job restores the checkpoint taken after the first batch, while the process
            // has had every sample up to (1, 0): what comes again is dropped, not served twice.
            try (ServingDevice restored = serving(checkpoint)) {
                Client c = Client.connect(restored.port(), 0, consumed(0, 1, 2, 3, 4, 5));
                assertThat(c.welcome).containsEntry("replay", 0.0);
                c.credit(2);
                restored.write(batch(1, 2, 3), null);
                restored.write(batch(2, 4, 5), null);
                restored.write(batch(3, 6, 7), null);
                assertThat(c.ids(c.batch())).containsExactly(List.of(1L, 1L), List.of(1L, 2L));
                CompletableFuture<Void> end =
                        CompletableFuture.runAsync(
                                () -> {
                                    try {
                                        restored.endInput();
                                    } catch (Exception e) {
                                        throw new IllegalStateException(e);
                                    }
                                });
                assertThat(c.next()).containsEntry("type", "end");
                c.send(Map.of("type", "done"));
                end.get(10, TimeUnit.SECONDS);
                c.close();
            }
        }
    }

    @Test
    void shouldCheckpointAtOnceWhileTheProcessAsksForNothing() throws Exception {
        try (ServingDevice device = serving(List.of())) {
            Client a = Client.connect(device.port(), 0, Map.of());
            a.credit(1);
            device.write(batch(0, 0, 1), null);
            assertThat(a.ids(a.batch())).containsExactly(List.of(0L, 0L), List.of(0L, 1L));
            // The process pauses (an evaluation, a long step): the next batch waits for its
            // credit at the queue's head, and a checkpoint must not wait with it.
            device.write(batch(1, 2, 3), null);
            long start = System.nanoTime();
            TrainerWriterState state =
                    CompletableFuture.supplyAsync(
                                    () -> {
                                        try {
                                            return device.snapshotState(1).get(0);
                                        } catch (IOException e) {
                                            throw new IllegalStateException(e);
                                        }
                                    })
                            .get(5, TimeUnit.SECONDS);
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(1000);
            assertThat(state.queued()).hasSize(1);
            assertThat(state.counters().steps()).isEqualTo(1);

            // Restored from it, the waiting batch is served, and the first is not again.
            a.close();
            try (ServingDevice restored = serving(List.of(state))) {
                Client b = Client.connect(restored.port(), 0, consumed(0, 1));
                b.credit(1);
                assertThat(b.ids(b.batch())).containsExactly(List.of(0L, 2L), List.of(0L, 3L));
                b.close();
            }
        }
    }

    @Test
    void shouldTakeBatchesAsIdentitiesOnceASecondWhileNoProcessIsConnected() throws Exception {
        try (ServingDevice device = serving(List.of())) {
            // Depth 2: two batches fill the queue; the third waits, then is taken beyond the
            // depth as identities, so that an aligned barrier behind it is not held for ever.
            device.write(batch(0, 0, 1), null);
            device.write(batch(1, 2, 3), null);
            long start = System.nanoTime();
            device.write(batch(2, 4, 5), null);
            long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertThat(waited).isBetween(900L, 5000L);
            List<Batch> queued = device.snapshotState(1).get(0).queued();
            assertThat(queued).hasSize(3);
            assertThat(queued.get(2).samples()).allMatch(s -> s.patch() == null);
            assertThat(queued.get(0).samples()).allMatch(s -> s.patch() != null);
        }
    }

    @Test
    void shouldRefuseASecondProcessAnotherRankAndAWrongProtocol() throws Exception {
        try (ServingDevice device = serving(List.of())) {
            Client a = Client.connect(device.port(), 0, Map.of());
            Client second = Client.connect(device.port(), 0, Map.of());
            assertThat(second.welcome).containsEntry("type", "refused");
            assertThat((String) second.welcome.get("reason"))
                    .contains("rank 0 is already served to the training process at");
            Client other = Client.connect(device.port(), 1, Map.of());
            assertThat(other.welcome)
                    .containsEntry("reason", "this endpoint serves rank 0 of 1, not rank 1");
            try (Socket s = new Socket("127.0.0.1", device.port())) {
                new DataOutputStream(s.getOutputStream()).writeInt(-5);
                assertThat(s.getInputStream().read()).isEqualTo(-1); // closed, nothing said
            }
            a.close();
        }
    }

    @Test
    void shouldNotServeAProcessWithoutTheToken() throws Exception {
        try (ServingDevice device =
                (ServingDevice) new FakeTrainerContext(0, 1).create(sink("s3cret"))) {
            assertThat(Client.connect(device.port(), 0, Map.of()).welcome)
                    .containsEntry("reason", "wrong or missing token");
        }
    }

    @Test
    void shouldSweepTheSlotFilesOfProcessesThatNoLongerRun() throws Exception {
        Path shm = Path.of("/dev/shm");
        Assumptions.assumeTrue(Files.isDirectory(shm), "no /dev/shm here");
        long gone = 4_194_304L + 4321; // beyond Linux's largest pid: no such process
        Path stale = shm.resolve("minato-" + gone + "-rank0-test-0");
        Path mine = shm.resolve("minato-" + ProcessHandle.current().pid() + "-rank0-test-0");
        Files.write(stale, new byte[] {1});
        Files.write(mine, new byte[] {1});
        try (ServingDevice device = serving(List.of())) {
            assertThat(device.port()).isPositive();
            assertThat(stale).doesNotExist();
            assertThat(mine).exists();
        } finally {
            Files.deleteIfExists(stale);
            Files.deleteIfExists(mine);
        }
    }

    /** Epoch-0 and epoch-1 samples by their position in the run (5 a epoch), on the wire. */
    private static Map<String, String> consumed(int... positions) {
        BitSet e0 = new BitSet();
        BitSet e1 = new BitSet();
        for (int p : positions) {
            (p < CASES ? e0 : e1).set(p % CASES);
        }
        Base64.Encoder b64 = Base64.getEncoder();
        return Map.of(
                "0",
                b64.encodeToString(e0.toByteArray()),
                "1",
                b64.encodeToString(e1.toByteArray()));
    }

    /** A training process's side of the protocol, over TCP. */
    private static final class Client {
        final Socket socket;
        final DataInputStream in;
        final DataOutputStream out;
        Map<String, Object> welcome;
        ByteBuffer payload;

        private Client(Socket socket) throws IOException {
            this.socket = socket;
            this.in = new DataInputStream(socket.getInputStream());
            this.out = new DataOutputStream(socket.getOutputStream());
        }

        static Client connect(int port, int rank, Map<String, String> consumed) throws IOException {
            Client c = new Client(new Socket("127.0.0.1", port));
            c.socket.setSoTimeout(10_000);
            c.send(Map.of("type", "hello", "version", 2, "rank", rank, "prefetch", 2));
            c.welcome = c.next();
            if ("ready".equals(c.welcome.get("type"))) {
                c.send(Map.of("type", "consumed", "consumed", consumed));
                c.welcome = c.next();
            }
            return c;
        }

        void credit(int n) throws IOException {
            send(Map.of("type", "credit", "n", n));
        }

        void send(Map<String, ?> header) throws IOException {
            StringBuilder json = new StringBuilder("{");
            for (Map.Entry<String, ?> e : header.entrySet()) {
                if (json.length() > 1) {
                    json.append(',');
                }
                json.append('"').append(e.getKey()).append("\":").append(value(e.getValue()));
            }
            byte[] bytes = json.append('}').toString().getBytes(StandardCharsets.UTF_8);
            out.writeInt(bytes.length);
            out.write(bytes);
            out.flush();
        }

        private static String value(Object v) {
            if (v instanceof String s) {
                return '"' + s + '"';
            }
            if (v instanceof Map<?, ?> m) {
                StringBuilder b = new StringBuilder("{");
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    if (b.length() > 1) {
                        b.append(',');
                    }
                    b.append('"').append(e.getKey()).append("\":").append(value(e.getValue()));
                }
                return b.append('}').toString();
            }
            return String.valueOf(v);
        }

        @SuppressWarnings("unchecked")
        Map<String, Object> next() throws IOException {
            byte[] body = new byte[in.readInt()];
            in.readFully(body);
            return (Map<String, Object>) Json.parse(new String(body, StandardCharsets.UTF_8));
        }

        /** The next batch's header; its bytes in {@link #payload}. */
        Map<String, Object> batch() throws IOException {
            Map<String, Object> header = next();
            assertThat(header).containsEntry("type", "batch");
            byte[] bytes = new byte[((Double) header.get("nbytes")).intValue()];
            in.readFully(bytes);
            payload = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
            return header;
        }

        @SuppressWarnings("unchecked")
        List<List<Long>> ids(Map<String, Object> header) {
            List<List<Long>> ids = new ArrayList<>();
            for (Object s : (List<Object>) header.get("samples")) {
                List<Object> sample = (List<Object>) s;
                ids.add(
                        List.of(
                                ((Double) sample.get(0)).longValue(),
                                ((Double) sample.get(1)).longValue()));
            }
            return ids;
        }

        void close() throws IOException {
            socket.close();
        }
    }
}
