package io.minato.trainer;

import java.nio.file.Path;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a {@link TrainerSink.RunEnd} once per run attempt, in the close of the last of its devices
 * to close after its last step: then every upstream operator has closed too (a task closes after
 * all its inputs ended, and they end when the tasks feeding them have closed).
 */
final class RunEndLatch {
    private static final Logger LOG = LoggerFactory.getLogger(RunEndLatch.class);

    /** Per run attempt in this JVM: how many devices have closed after their last step. */
    private static final ConcurrentHashMap<String, AtomicInteger> ENDED = new ConcurrentHashMap<>();

    private RunEndLatch() {}

    /**
     * Device {@code device} of the {@code devices} of run attempt {@code groupId} closed after its
     * last step; the last of them runs {@code end}, whose failure is logged.
     */
    static void closedAfterLastStep(
            String groupId, int devices, int device, TrainerSink.RunEnd end, Path outputDir) {
        if (ENDED.computeIfAbsent(groupId, g -> new AtomicInteger()).incrementAndGet() < devices) {
            return;
        }
        ENDED.remove(groupId);
        try {
            end.ended(outputDir);
        } catch (Exception e) {
            LOG.error("device {}: the run ended, but what follows its end failed", device, e);
        }
    }
}
