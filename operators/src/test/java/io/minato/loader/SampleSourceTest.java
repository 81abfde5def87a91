package io.minato.loader;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.minato.data.EpochOrder;
import io.minato.sample.SampleTask;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource.NumberSequenceSplit;
import org.apache.flink.api.connector.source.mocks.MockSplitEnumeratorContext;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class SampleSourceTest {

    /** Every sample at exactly one position; share j deals samples j, j + count, ... in order. */
    @ParameterizedTest(name = "{0} samples in {1} shares")
    @CsvSource({"1,1", "7,1", "1,3", "12,3", "13,3", "14,3", "5,8", "480,2", "1000,7"})
    void shouldPlaceEverySampleOnceInInterleavedShares(long total, int count) {
        SampleSource.Shares shares = new SampleSource.Shares(total, count);
        Set<Long> seen = new HashSet<>();
        for (int j = 0; j < count; j++) {
            long expected = j;
            for (long p = j * shares.length(); p < (j + 1) * shares.length(); p++) {
                long n = shares.sampleAt(p);
                if (n < 0) {
                    assertThat(expected)
                            .as("only the end of a share is empty")
                            .isGreaterThanOrEqualTo(total);
                    continue;
                }
                assertThat(n).isEqualTo(expected);
                assertThat(seen.add(n)).as("sample %d placed twice", n).isTrue();
                expected += count;
            }
        }
        assertThat(seen).hasSize((int) total);
    }

    /** The real source at parallelism 3: each (epoch, index) once, with its epoch's case. */
    @Test
    void shouldEmitEveryTaskOfEveryEpochOnceAcrossItsShares() throws Exception {
        int cases = 5;
        int epochs = 4;
        long seed = 3;
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(3);
        List<SampleTask> tasks = new ArrayList<>();
        try (CloseableIterator<SampleTask> it =
                SampleSource.tasks(env, cases, epochs, seed, 3).executeAndCollect()) {
            it.forEachRemaining(tasks::add);
        }
        Set<String> seen = new HashSet<>();
        for (SampleTask t : tasks) {
            assertThat(seen.add(t.epoch() + "," + t.index())).as("twice: %s", t).isTrue();
            assertThat(t.seed()).isEqualTo(seed);
            assertThat(t.caseIndex())
                    .isEqualTo(EpochOrder.permutation(seed, t.epoch(), cases)[(int) t.index()]);
        }
        assertThat(seen).hasSize(cases * epochs);
    }

    /**
     * Each reader gets its own share and no other, whichever asks first: a reader that started
     * early must not take a late one's share (a worker in another TaskManager then prepared
     * nothing). A share given back after a failure goes to its reader again.
     */
    @Test
    void shouldHandEachReaderItsOwnShareOnly() throws Exception {
        SampleSource.ShareSource source =
                new SampleSource.ShareSource(new SampleSource.Shares(10, 2));
        try (MockSplitEnumeratorContext<NumberSequenceSplit> context =
                        new MockSplitEnumeratorContext<>(2);
                var enumerator = source.createEnumerator(context)) {
            enumerator.handleSplitRequest(1, "early");
            enumerator.handleSplitRequest(1, "early");
            assertThat(assigned(context, 1)).containsExactly("1");
            assertThat(context.hasNoMoreSplits(1)).isTrue();
            assertThat(enumerator.snapshotState(1))
                    .extracting(NumberSequenceSplit::splitId)
                    .containsExactly("0");

            enumerator.handleSplitRequest(0, "late");
            assertThat(assigned(context, 0)).containsExactly("0");

            // Reader 0 fails: its share comes back, for reader 0 only.
            NumberSequenceSplit back = new NumberSequenceSplit("0", 3, 4);
            enumerator.addSplitsBack(List.of(back), 0);
            enumerator.handleSplitRequest(1, "early");
            enumerator.handleSplitRequest(0, "late");
            assertThat(assigned(context, 0)).containsExactly("0", "0");
            assertThat(assigned(context, 1)).containsExactly("1");
        }
    }

    private static List<String> assigned(
            MockSplitEnumeratorContext<NumberSequenceSplit> context, int reader) {
        List<String> ids = new ArrayList<>();
        for (var assignment : context.getSplitsAssignmentSequence()) {
            for (NumberSequenceSplit split :
                    assignment.assignment().getOrDefault(reader, List.of())) {
                ids.add(split.splitId());
            }
        }
        return ids;
    }

    @Test
    void shouldRefuseNoCasesNoEpochsOrNoShares() {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1);
        assertThatThrownBy(() -> SampleSource.tasks(env, 0, 1, 1, 1))
                .hasMessageContaining("at least one case and one epoch");
        assertThatThrownBy(() -> SampleSource.tasks(env, 1, 0, 1, 1))
                .hasMessageContaining("at least one case and one epoch");
        assertThatThrownBy(() -> SampleSource.tasks(env, 1, 1, 1, 0))
                .hasMessageContaining("at least one share");
    }
}
