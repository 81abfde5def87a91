package io.minato.workload.python;

import io.minato.data.BadInputException;
import io.minato.spi.Patch;
import io.minato.spi.SampleKey;
import io.minato.spi.SharedSample;
import io.minato.spi.StepCursor;
import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One sample of a Python Dataset: handed to a worker process, then waited for in short slices, so
 * that a fast worker past its deadline lets go of it between two slices. The process goes on with
 * it meanwhile; the slow worker that takes the preparation over waits for the same answer, and no
 * work is done twice. The result is the sample's file in shared memory ({@link SharedSample}).
 *
 * <p>A process that dies while it prepares the sample (a crash, the OOM killer) is replaced and the
 * sample given once more; a second death, like an exception in {@code __getitem__}, is bad input
 * naming the sample. State written as bytes (a slow worker in another JVM) keeps the step but not
 * the process: the sample starts over there, with the same result.
 */
final class PythonPreparation extends StepCursor<PythonSource, PythonPreparation.Step> {
    private static final Logger LOG = LoggerFactory.getLogger(PythonPreparation.class);

    private static final int FORMAT = 1;

    /** How long one step waits for the answer: what a deadline can overrun by. */
    static final long SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

    /** Tries of a sample whose process died, the first included. */
    static final int TRIES = 2;

    enum Step {
        SUBMIT,
        WAIT,
        DONE
    }

    private transient PythonWorkers.Ticket ticket;
    private int tries;
    private long outsideCpu;

    PythonPreparation(SampleKey key) {
        super(key, Step.SUBMIT, Step.DONE);
    }

    @Override
    public String stepName() {
        return "__getitem__";
    }

    @Override
    public void advance(PythonSource source) throws BadInputException {
        try {
            switch (step) {
                case SUBMIT -> {
                    ticket = source.workers().submit(key, source.index());
                    tries++;
                    step = Step.WAIT;
                }
                case WAIT -> collect(source);
                case DONE -> throw advancedWhenDone();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while preparing " + key, e);
        }
    }

    private void collect(PythonSource source) throws InterruptedException, BadInputException {
        Map<String, Object> reply;
        try {
            reply = ticket.await(SLICE_NANOS);
        } catch (PythonWorkers.WorkerDied died) {
            ticket = null;
            if (tries < TRIES) {
                LOG.warn(
                        "{} while preparing sample {}; it is tried once more",
                        died.getMessage(),
                        source.index());
                step = Step.SUBMIT;
                return;
            }
            throw new BadInputException(
                    sampleName(source.index(), null),
                    "the worker process died twice while preparing it (" + died.getMessage() + ")");
        }
        if (reply == null) {
            return;
        }
        String file = ticket.file;
        ticket = null;
        if (!Boolean.TRUE.equals(reply.get("ok"))) {
            throw new BadInputException(
                    sampleName(source.index(), reply.get("sample")),
                    "__getitem__ raised " + reply.get("error"));
        }
        outsideCpu = ((Number) reply.get("cpu_ns")).longValue();
        patch =
                Patch.shared(
                        new SharedSample(
                                SharedSample.thisHost(),
                                file,
                                ((Number) reply.get("nbytes")).longValue(),
                                String.valueOf(reply.get("layout"))));
        step = Step.DONE;
    }

    /** "sample 7", with the dataset's own description where it gave one (a path). */
    static Path sampleName(int index, Object description) {
        return Path.of(
                description == null
                        ? "sample " + index
                        : "sample " + index + " (" + description + ")");
    }

    @Override
    public long outsideCpuNanos() {
        return outsideCpu;
    }

    @Override
    public long heldBytes() {
        return 256;
    }

    @Override
    public void writeTo(DataOutput out) throws IOException {
        Step at = step;
        if (step == Step.WAIT) {
            step = Step.SUBMIT; // the process stays with this JVM: elsewhere it starts over
        }
        try {
            writeHead(out, FORMAT);
        } finally {
            step = at;
        }
        out.writeByte(at == Step.WAIT ? tries - 1 : tries);
        out.writeLong(outsideCpu);
        writePatch(out);
    }

    static PythonPreparation readFrom(DataInput in) throws IOException {
        PythonPreparation p = new PythonPreparation(readKey(in, FORMAT, "Python sample"));
        p.readStep(in, "Python sample");
        p.tries = in.readUnsignedByte();
        p.outsideCpu = in.readLong();
        p.readPatch(in);
        return p;
    }
}
