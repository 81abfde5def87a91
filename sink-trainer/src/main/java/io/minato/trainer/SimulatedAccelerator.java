package io.minato.trainer;

import io.minato.sample.Batch;

/**
 * A step that sleeps a fixed time and uses no CPU ({@code --accelerator simulated:MS}): measures
 * the loader alone. Never the default.
 */
public final class SimulatedAccelerator implements Accelerator {

    public static final String KIND = "simulated";

    /** What a simulated accelerator's spec starts with. */
    public static final String PREFIX = KIND + ":";

    private final long stepMillis;

    public SimulatedAccelerator(long stepMillis) {
        if (stepMillis < 0) {
            throw new IllegalArgumentException("step time must be >= 0 ms: " + stepMillis);
        }
        this.stepMillis = stepMillis;
    }

    public long stepMillis() {
        return stepMillis;
    }

    @Override
    public StepResult train(Batch batch) throws InterruptedException {
        long start = System.nanoTime();
        Thread.sleep(stepMillis);
        return StepResult.noLoss(System.nanoTime() - start);
    }

    /** No model: its state is empty, and so is a capture of it. */
    @Override
    public boolean capturesCheaply() {
        return true;
    }

    @Override
    public String kind() {
        return KIND;
    }

    /**
     * Parses {@code simulated:MS}; a bad spec gets a one-line {@link IllegalArgumentException} that
     * says what is expected.
     */
    public static Factory parse(String spec) {
        String problem = null;
        long millis = -1;
        if (spec == null || !spec.startsWith(PREFIX)) {
            problem = "expected simulated:MS";
        } else {
            try {
                millis = Long.parseLong(spec.substring(PREFIX.length()));
                if (millis < 0) {
                    problem = "the step time must be >= 0 ms";
                }
            } catch (NumberFormatException e) {
                problem = "the step time must be a whole number of milliseconds";
            }
        }
        if (problem != null) {
            throw new IllegalArgumentException(
                    "bad accelerator '" + spec + "': " + problem + ", e.g. simulated:50");
        }
        return new Factory(millis);
    }

    /** Makes a {@link SimulatedAccelerator} with the same step time on every device. */
    public record Factory(long stepMillis) implements AcceleratorFactory {
        public Factory {
            if (stepMillis < 0) {
                throw new IllegalArgumentException("step time must be >= 0 ms: " + stepMillis);
            }
        }

        @Override
        public Accelerator create(int device, int devices) {
            return new SimulatedAccelerator(stepMillis);
        }
    }
}
