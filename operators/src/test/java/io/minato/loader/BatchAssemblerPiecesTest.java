package io.minato.loader;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.spi.Patch;
import io.minato.spi.Shape3;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

/**
 * A device's batcher receiving large samples in pieces ({@link SampleChunks}): they arrive as whole
 * samples, and a checkpoint between a sample's pieces keeps it as an identity whose later pieces a
 * restore drops, across a second restore too.
 */
class BatchAssemblerPiecesTest {
    private static final DeviceKeys KEYS = new DeviceKeys(2);
    private static final int DEVICE = 1;

    /** 8^3 voxels: 2 KiB of input, 512 B of target, in pieces of 1000 bytes: 3. */
    private static final int PIECE_BYTES = 1000;

    @Test
    void shouldAssembleASampleFromItsPiecesInOrderToTheSameBytes() throws Exception {
        PreparedSample a = sample(1);
        PreparedSample b = sample(2);
        // Two producers, each with its own buffer: their pieces interleave at the batcher.
        List<PreparedSample> piecesOfA = new SampleChunks(PIECE_BYTES).pieces(a);
        List<PreparedSample> piecesOfB = new SampleChunks(PIECE_BYTES).pieces(b);
        assertThat(piecesOfA).hasSize(3).allSatisfy(p -> assertThat(p.patch()).isNull());
        try (var h = assembler()) {
            h.open();
            long t = 0;
            for (int i = 0; i < 3; i++) {
                h.processElement(piecesOfA.get(i), t++);
                h.processElement(piecesOfB.get(i), t++);
                if (i < 2) {
                    assertThat(h.extractOutputValues()).as("a sample still in pieces").isEmpty();
                }
            }
            List<Batch> batches = h.extractOutputValues();
            assertThat(batches).hasSize(1);
            Batch batch = batches.get(0);
            assertThat(batch.device()).isEqualTo(DEVICE);
            assertThat(batch.samples())
                    .extracting(PreparedSample::task)
                    .containsExactly(a.task(), b.task());
            PreparedSample assembled = batch.samples().get(0);
            assertThat(assembled.piece()).isNull();
            assertThat(assembled.patch().sameContent(a.patch())).isTrue();
            assertThat(assembled.prepCpuNanos()).isEqualTo(a.prepCpuNanos());
            assertThat(assembled.path()).isEqualTo(a.path());
            assertThat(batch.samples().get(1).patch().sameContent(b.patch())).isTrue();
        }
    }

    /**
     * A checkpoint between the pieces keeps the sample pending as an identity; the live assembly
     * goes on undisturbed. After a restore the trainer prepares it again, and its remaining pieces,
     * replayed from the channel state, are dropped.
     */
    @Test
    void shouldKeepAPartialSampleAsAnIdentityAndDropItsLaterPiecesAfterARestore() throws Exception {
        PreparedSample partial = sample(3);
        List<PreparedSample> pieces = new SampleChunks(PIECE_BYTES).pieces(partial);
        OperatorSubtaskState snapshot;
        try (var h = assembler()) {
            h.open();
            h.processElement(pieces.get(0), 0);
            snapshot = h.snapshot(1, 1);
            h.processElement(pieces.get(1), 2);
            h.processElement(pieces.get(2), 3);
            h.processElement(sample(4), 4);
            List<Batch> live = h.extractOutputValues();
            assertThat(live).hasSize(1);
            assertThat(live.get(0).samples().get(0).patch().sameContent(partial.patch()))
                    .as("no failure followed the checkpoint: the sample is whole")
                    .isTrue();
        }
        try (var h = assembler()) {
            h.initializeState(snapshot);
            h.open();
            h.processElement(pieces.get(1), 5);
            h.processElement(pieces.get(2), 6);
            assertThat(h.extractOutputValues()).as("replayed pieces dropped").isEmpty();
            h.processElement(sample(5), 7);
            assertRestoredBatch(h.extractOutputValues(), partial.task(), 5);
        }
    }

    /**
     * A second checkpoint before the last piece passes keeps dropping the rest after its restore.
     */
    @Test
    void shouldStillDropTheRemainingPiecesAfterASecondRestoreBeforeTheLastPiece() throws Exception {
        PreparedSample partial = sample(6);
        List<PreparedSample> pieces = new SampleChunks(PIECE_BYTES).pieces(partial);
        OperatorSubtaskState first;
        try (var h = assembler()) {
            h.open();
            h.processElement(pieces.get(0), 0);
            first = h.snapshot(1, 1);
        }
        OperatorSubtaskState second;
        try (var h = assembler()) {
            h.initializeState(first);
            h.open();
            h.processElement(pieces.get(1), 2);
            second = h.snapshot(2, 3);
        }
        try (var h = assembler()) {
            h.initializeState(second);
            h.open();
            h.processElement(pieces.get(1), 4); // replayed again
            h.processElement(pieces.get(2), 5);
            assertThat(h.extractOutputValues()).isEmpty();
            h.processElement(sample(7), 6);
            assertRestoredBatch(h.extractOutputValues(), partial.task(), 7);
        }
    }

    /**
     * The one batch: the partial sample as an identity (to prepare again), then sample {@code
     * next}.
     */
    private static void assertRestoredBatch(List<Batch> batches, SampleTask partial, long next) {
        assertThat(batches).hasSize(1);
        List<PreparedSample> samples = batches.get(0).samples();
        assertThat(samples).extracting(PreparedSample::task).containsExactly(partial, task(next));
        assertThat(samples.get(0).patch()).as("prepared again by the trainer").isNull();
        assertThat(samples.get(0).piece()).isNull();
        assertThat(samples.get(0).device()).isEqualTo(DEVICE);
        assertThat(samples.get(1).patch()).isNotNull();
    }

    private static KeyedOneInputStreamOperatorTestHarness<Integer, PreparedSample, Batch>
            assembler() throws Exception {
        return new KeyedOneInputStreamOperatorTestHarness<>(
                new BatchAssembler(KEYS, 2), new DeviceOf(KEYS), Types.INT);
    }

    private static SampleTask task(long index) {
        return new SampleTask(7, 0, index, 0);
    }

    private static PreparedSample sample(long index) {
        Shape3 shape = Shape3.cube(8);
        SplittableRandom r = new SplittableRandom(index);
        float[] image = new float[(int) shape.voxels()];
        byte[] label = new byte[image.length];
        for (int i = 0; i < image.length; i++) {
            image[i] = (float) r.nextGaussian();
            label[i] = (byte) r.nextInt(3);
        }
        return new PreparedSample(
                task(index), SamplePath.FAST, 1000 + index, new Patch(shape, image, label), DEVICE);
    }
}
