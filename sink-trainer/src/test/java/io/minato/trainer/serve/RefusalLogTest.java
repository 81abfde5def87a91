package io.minato.trainer.serve;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The endpoint's refusals in the log: the first few of a window in full, then their count. */
class RefusalLogTest {

    @Test
    void shouldLogTheFirstFewInFullAndCountTheRestOnceTheWindowIsOver() {
        AtomicLong now = new AtomicLong(1_000);
        List<String> lines = new ArrayList<>();
        RankEndpoint.RefusalLog log = new RankEndpoint.RefusalLog("Rank 0", lines::add, now::get);
        assertThat(log.nanosToFlush()).isEqualTo(Long.MAX_VALUE);

        for (int i = 0; i < 240; i++) {
            log.log("closed /10.0.0.1:" + i + ": no hello within 2000 ms");
        }
        assertThat(lines)
                .hasSize(RankEndpoint.RefusalLog.LINES)
                .first()
                .isEqualTo("Rank 0: closed /10.0.0.1:0: no hello within 2000 ms");
        assertThat(log.nanosToFlush()).isEqualTo(RankEndpoint.RefusalLog.WINDOW_NANOS);

        now.addAndGet(RankEndpoint.RefusalLog.WINDOW_NANOS - 1);
        log.flush();
        assertThat(lines).hasSize(RankEndpoint.RefusalLog.LINES);
        now.addAndGet(1);
        log.flush();
        assertThat(lines)
                .hasSize(RankEndpoint.RefusalLog.LINES + 1)
                .last()
                .isEqualTo(
                        "Rank 0: 235 more connections refused or closed in "
                                + TimeUnit.NANOSECONDS.toSeconds(
                                        RankEndpoint.RefusalLog.WINDOW_NANOS)
                                + " s, the last: closed /10.0.0.1:239: no hello within 2000 ms");

        // A new window logs in full again, and a quiet one logs nothing.
        log.log("refused /10.0.0.2:1: wrong or missing token");
        assertThat(lines).hasSize(RankEndpoint.RefusalLog.LINES + 2);
        now.addAndGet(3 * RankEndpoint.RefusalLog.WINDOW_NANOS);
        log.flush();
        assertThat(lines).hasSize(RankEndpoint.RefusalLog.LINES + 2);
        assertThat(log.nanosToFlush()).isEqualTo(Long.MAX_VALUE);
    }
}
