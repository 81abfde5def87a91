package io.minato.trainer;

/** What one training step reports: its loss ({@code NaN} when there is none) and busy time. */
public record StepResult(double loss, long busyNanos) {
    public StepResult {
        if (busyNanos < 0) {
            throw new IllegalArgumentException("busyNanos must be >= 0: " + busyNanos);
        }
    }

    /** A step without a loss, e.g. a simulated one. */
    public static StepResult noLoss(long busyNanos) {
        return new StepResult(Double.NaN, busyNanos);
    }
}
