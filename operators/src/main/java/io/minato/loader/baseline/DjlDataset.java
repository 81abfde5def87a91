package io.minato.loader.baseline;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.dataset.RandomAccessDataset;
import ai.djl.training.dataset.Record;
import ai.djl.translate.Batchifier;
import ai.djl.util.Progress;
import io.minato.data.BadInputException;
import io.minato.loader.PrepTimes;
import io.minato.loader.Quarantine;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.spi.Patch;
import io.minato.spi.PatchPool;
import io.minato.spi.Shape3;
import io.minato.spi.Workload;
import io.minato.stats.CpuClock;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * {@link DjlLoader}'s samples as a DJL dataset: {@code get} prepares one sample, image and label,
 * and {@link #toBatch} turns DJL's stacked batch back into the samples the trainer takes.
 */
final class DjlDataset extends RandomAccessDataset {
    private final DjlFeed feed;
    private final Workload<?> workload;
    private final Map<Long, Long> prepNanos = new ConcurrentHashMap<>();
    private final InOrderBatches order;
    private final PrepTimes prepTimes;
    private final Quarantine quarantine; // null: bad input fails the job
    private final Set<Long> leftOut = ConcurrentHashMap.newKeySet();

    /**
     * @param quarantine where samples that meet bad input are quarantined; null to fail on them
     */
    DjlDataset(
            DjlFeed feed,
            Workload<?> workload,
            int prefetch,
            InOrderBatches order,
            PrepTimes prepTimes,
            Quarantine quarantine) {
        super(new Builder(prefetch).setSampling(1, false));
        this.feed = feed;
        this.workload = workload;
        this.order = order;
        this.prepTimes = prepTimes;
        this.quarantine = quarantine;
    }

    /** Whether sample {@code index} was left out; forgets it. */
    boolean takeLeftOut(long index) {
        return leftOut.remove(index);
    }

    SampleTask task(long index) {
        return feed.get(index);
    }

    long takePrepNanos(long index) {
        Long n = prepNanos.remove(index);
        return n == null ? 0 : n;
    }

    @Override
    public Record get(NDManager manager, long index) {
        SampleTask task = feed.get(index);
        if (quarantine != null && quarantine.holds(task)) {
            quarantine.skip();
            return leaveOut(index);
        }
        long cpu0 = CpuClock.threadNanos();
        PrepTimes.Mark reads = PrepTimes.mark();
        Patch p;
        try {
            p = workload.prepare(task.key(), task.caseIndex());
        } catch (BadInputException e) {
            if (quarantine == null) {
                throw new IllegalStateException(e.getMessage(), e);
            }
            quarantine.add(task, e);
            return leaveOut(index);
        } finally {
            prepTimes.add(reads);
        }
        prepNanos.put(index, CpuClock.threadNanos() - cpu0);
        order.samplePrepared(index / feed.batchSize());
        Shape shape = new Shape(1, p.shape().d(), p.shape().h(), p.shape().w());
        NDArray image = manager.create(p.image(), shape);
        // The target's bytes as they are, dense or a class index: the trainer reads them back.
        NDArray label =
                manager.create(
                        ByteBuffer.wrap(p.label()), new Shape(p.label().length), DataType.UINT8);
        PatchPool.jvm().give(p); // copied into the NDArrays
        return new Record(new NDList(image), new NDList(label));
    }

    /** The empty record of a sample left out, which {@link LeavingOut} does not stack. */
    private Record leaveOut(long index) {
        leftOut.add(index);
        order.samplePrepared(index / feed.batchSize()); // its batch must not wait for it
        return new Record(new NDList(), new NDList());
    }

    @Override
    protected long availableSize() {
        return Long.MAX_VALUE; // a stream: as many as arrive
    }

    @Override
    public void prepare(Progress progress) {}

    /**
     * Back from DJL's stacked NDArrays to the samples the trainer takes; the stack holds the
     * batch's samples that were not left out, in order. The batch carries {@code heldBackNanos}.
     */
    Batch toBatch(ai.djl.training.dataset.Batch djl, long first, long heldBackNanos) {
        int size = djl.getSize();
        if (djl.getData().isEmpty()) {
            for (int i = 0; i < size; i++) {
                takeLeftOut(first + i);
            }
            return new Batch(0, 0, List.of(), heldBackNanos);
        }
        NDArray images = djl.getData().singletonOrThrow();
        NDArray labels = djl.getLabels().singletonOrThrow();
        Shape s = images.getShape(); // (B, 1, D, H, W)
        Shape3 patch = new Shape3((int) s.get(2), (int) s.get(3), (int) s.get(4));
        int voxels = (int) patch.voxels();
        float[] allImages = images.toFloatArray();
        byte[] allLabels = labels.toByteArray();
        int labelBytes = (int) (allLabels.length / s.get(0));
        List<PreparedSample> samples = new ArrayList<>(size);
        int row = 0;
        for (int i = 0; i < size; i++) {
            long index = first + i;
            if (takeLeftOut(index)) {
                continue;
            }
            Patch arrays = PatchPool.jvm().take(patch, labelBytes); // all written below
            System.arraycopy(allImages, row * voxels, arrays.image(), 0, voxels);
            System.arraycopy(allLabels, row * labelBytes, arrays.label(), 0, labelBytes);
            row++;
            samples.add(
                    new PreparedSample(task(index), SamplePath.FAST, takePrepNanos(index), arrays));
        }
        return new Batch(0, 0, samples, heldBackNanos);
    }

    static final class Builder extends RandomAccessDataset.BaseBuilder<Builder> {
        Builder(int prefetch) {
            optPrefetchNumber(prefetch);
            optDataBatchifier(new LeavingOut());
            optLabelBatchifier(new LeavingOut());
        }

        @Override
        protected Builder self() {
            return this;
        }
    }

    /** DJL's stacking batchifier over the records of samples not left out (empty ones). */
    static final class LeavingOut implements Batchifier {
        private static final long serialVersionUID = 1L;

        @Override
        public NDList batchify(NDList[] inputs) {
            NDList[] kept = Arrays.stream(inputs).filter(l -> !l.isEmpty()).toArray(NDList[]::new);
            return kept.length == 0 ? new NDList() : Batchifier.STACK.batchify(kept);
        }

        @Override
        public NDList[] unbatchify(NDList inputs) {
            return Batchifier.STACK.unbatchify(inputs);
        }
    }
}
