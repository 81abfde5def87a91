package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.json.Json;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CheckpointLedgerTest {
    @Test
    void shouldCountACheckpointAbortedAfterTheWholeTimeoutAsTimedOut(@TempDir Path run)
            throws Exception {
        long[] timeout = {50};
        CheckpointLedger ledger = new CheckpointLedger(() -> timeout[0], run, 3);
        ledger.started(1);
        ledger.completed(1);
        ledger.started(2);
        Thread.sleep(80);
        ledger.aborted(2); // pending longer than its 50 ms: the timeout
        timeout[0] = 60_000;
        ledger.started(3);
        ledger.aborted(3); // a failover's abort, long before the timeout
        ledger.aborted(3); // told twice: counted once
        ledger.aborted(7); // never started here: not counted

        assertThat(ledger.failed()).isEqualTo(2);
        assertThat(ledger.timedOut()).isEqualTo(1);
        assertThat(ledger.longestNanos()).isGreaterThanOrEqualTo(80_000_000L);
        Map<?, ?> file =
                (Map<?, ?>) Json.parse(Files.readString(run.resolve(TrainerSink.CHECKPOINTS_FILE)));
        assertThat(((Number) file.get("completed")).longValue()).isEqualTo(1);
        assertThat(((Number) file.get("failed")).longValue()).isEqualTo(2);
        assertThat(((Number) file.get("timed_out")).longValue()).isEqualTo(1);
        assertThat(((Number) file.get("longest_pending_s")).doubleValue()).isGreaterThan(0.079);
        assertThat(((Number) file.get("restores")).longValue()).isEqualTo(0);
    }

    @Test
    void shouldLetACompletedCheckpointSubsumeEarlierPendingOnes() {
        CheckpointLedger ledger = new CheckpointLedger(() -> 0, null, 3);
        ledger.started(4);
        ledger.started(5);
        ledger.completed(5);
        ledger.aborted(4);
        assertThat(ledger.failed()).isZero();
    }
}
