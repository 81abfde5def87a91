package io.minato.trainer;

import io.minato.sample.Batch;
import io.minato.trainer.gpu.GpuMonitor;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** Accelerators whose steps a test controls. */
final class TestAccelerators {

    private TestAccelerators() {}

    /**
     * Each step waits for a permit of a shared gate, so a test decides exactly when steps end. Its
     * "model" is the number of steps it trained, so snapshots and restores can be checked.
     */
    static final class Gated implements Accelerator {
        private final Gate gate;
        private long trained;

        Gated(Gate gate) {
            this.gate = gate;
        }

        @Override
        public StepResult train(Batch batch, Batch next) throws InterruptedException {
            gate.nexts.add(next == null ? -1L : next.sequence());
            return train(batch);
        }

        @Override
        public StepResult train(Batch batch) throws InterruptedException {
            long start = System.nanoTime();
            gate.started.incrementAndGet();
            gate.permits.acquire();
            trained++;
            gate.trained.add(batch);
            return new StepResult(1.0 / trained, System.nanoTime() - start);
        }

        @Override
        public String kind() {
            return "gated";
        }

        @Override
        public byte[] snapshot() {
            return ByteBuffer.allocate(8).putLong(trained).array();
        }

        /** Its bytes, when {@link Gate#writesWaitForSteps} says so, only once more steps ran. */
        @Override
        public Capture capture() {
            long at = trained;
            int steps = gate.writesWaitForSteps;
            return () -> {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (gate.trained.size() < at + steps) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException(
                                "no step ran while the captured state was written");
                    }
                    Thread.sleep(2);
                }
                return ByteBuffer.allocate(8).putLong(at).array();
            };
        }

        @Override
        public void prepare() throws InterruptedException {
            gate.prepared.await();
        }

        @Override
        public void restore(byte[] state) {
            trained = ByteBuffer.wrap(state).getLong();
            gate.restoredSteps = trained;
        }
    }

    /** Factory and remote control of {@link Gated} accelerators. */
    static final class Gate implements AcceleratorFactory {
        final transient Semaphore permits = new Semaphore(0);
        final transient List<Batch> trained = new CopyOnWriteArrayList<>();

        /** Per step, the sequence of the next batch the writer named (-1: none). */
        final transient List<Long> nexts = new CopyOnWriteArrayList<>();

        final transient AtomicInteger started = new AtomicInteger();
        volatile long restoredSteps = -1;

        /** Counted down when the accelerators may end {@link Accelerator#prepare()}. */
        transient volatile CountDownLatch prepared = new CountDownLatch(0);

        /** Steps that must run after a capture before its bytes are written. */
        volatile int writesWaitForSteps;

        @Override
        public Accelerator create(int device, int devices) {
            return new Gated(this);
        }

        /** Lets {@code steps} more steps finish. */
        void open(int steps) {
            permits.release(steps);
        }
    }

    /**
     * Steps that spin for {@code stepMillis}, deaf to interrupts as a step in native code is; it
     * notes whether it was closed while a step ran.
     */
    static final class Deaf implements AcceleratorFactory {
        private final long stepMillis;
        final transient CountDownLatch stepping = new CountDownLatch(1);
        final transient AtomicInteger running = new AtomicInteger();
        volatile boolean closedWhileStepping;
        volatile boolean closed;

        Deaf(long stepMillis) {
            this.stepMillis = stepMillis;
        }

        @Override
        public Accelerator create(int device, int devices) {
            return new Accelerator() {
                @Override
                public StepResult train(Batch batch) {
                    running.incrementAndGet();
                    stepping.countDown();
                    long start = System.nanoTime();
                    long end = start + TimeUnit.MILLISECONDS.toNanos(stepMillis);
                    while (System.nanoTime() < end) {
                        Thread.onSpinWait();
                    }
                    running.decrementAndGet();
                    return StepResult.noLoss(System.nanoTime() - start);
                }

                @Override
                public String kind() {
                    return "deaf";
                }

                @Override
                public void close() {
                    closedWhileStepping |= running.get() > 0;
                    closed = true;
                }
            };
        }
    }

    /**
     * Steps that sleep {@code stepMillis} on a GPU that {@code monitor} reads: the monitor is the
     * test's, handed to the writer as a real accelerator's would be.
     */
    static final class OnGpu implements AcceleratorFactory {
        private final long stepMillis;
        private final transient GpuMonitor monitor;

        OnGpu(long stepMillis, GpuMonitor monitor) {
            this.stepMillis = stepMillis;
            this.monitor = monitor;
        }

        @Override
        public Accelerator create(int device, int devices) {
            return new Accelerator() {
                private final SimulatedAccelerator sleep = new SimulatedAccelerator(stepMillis);

                @Override
                public StepResult train(Batch batch) throws InterruptedException {
                    return sleep.train(batch);
                }

                @Override
                public String kind() {
                    return "gpu";
                }

                @Override
                public GpuMonitor gpuMonitor() {
                    return monitor;
                }
            };
        }
    }

    /** Throws from step {@code failAt} (0-based) on; the steps before it succeed. */
    record Failing(int failAt) implements AcceleratorFactory {
        @Override
        public Accelerator create(int device, int devices) {
            return new Accelerator() {
                private int steps;

                @Override
                public StepResult train(Batch batch) {
                    if (steps++ >= failAt) {
                        throw new IllegalStateException("simulated device fault");
                    }
                    return StepResult.noLoss(0);
                }

                @Override
                public String kind() {
                    return "failing";
                }
            };
        }
    }
}
