package io.minato.sample.serde;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.sample.SampleHandoff;
import io.minato.sample.UnfinishedSample;
import io.minato.workload.kits19.Preparation;
import io.minato.workload.kits19.Volume;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.Test;

/**
 * The forms a sample cut off on the fast path reaches the slow path in: its preparation handed off
 * in this JVM (the cropped patch is not copied), the state's bytes inline, or nothing (start over).
 */
class UnfinishedSampleFormsTest {

    @Test
    void shouldHandThePreparationOverInThisJvmWhileALoaderRuns() throws Exception {
        UnfinishedSample s = SampleFixtures.unfinished(51, Preparation.Step.FLIP); // patch cut
        byte[] handedOff;
        try (var r = SampleHandoff.jvm().reserve(1)) {
            handedOff = write(s);
            assertThat(SampleHandoff.jvm().parked()).isEqualTo(1);
            UnfinishedSample back = read(handedOff);
            assertThat(((Preparation) back.steps()))
                    .as("the very state, not a copy")
                    .isSameAs(((Preparation) s.steps()));
            assertThat(back.task()).isEqualTo(s.task());
            assertThat(back.prepCpuNanos()).isEqualTo(s.prepCpuNanos());
            assertThat(SampleHandoff.jvm().parked()).isZero();
        }
        assertThat(handedOff.length).isLessThan(64);
    }

    /**
     * A replay after a restore finds nothing parked: the sample starts over and ends as the same
     * bytes the fast worker's state would have become.
     */
    @Test
    void shouldPrepareAStateThatIsNotFoundAgainFromTheStartToTheSameResult() throws Exception {
        UnfinishedSample s = SampleFixtures.unfinished(52, Preparation.Step.BRIGHTNESS);
        byte[] handedOff;
        try (var r = SampleHandoff.jvm().reserve(1)) {
            handedOff = write(s);
            SampleHandoff.jvm().dropAll();
        }
        UnfinishedSample replayed = read(handedOff);
        assertThat(replayed.steps()).isNull();
        assertThat(replayed.state()).as("nothing to resume from: start over").isNull();
        assertThat(replayed.task()).isEqualTo(s.task());
        Volume v = SampleFixtures.volume();
        Preparation again = SampleFixtures.resumed(replayed);
        assertThat(again.step()).isEqualTo(Preparation.Step.START);
        Preparation original = ((Preparation) s.steps());
        while (!again.isDone()) {
            again.advance(v, SampleFixtures.CONFIG);
        }
        while (!original.isDone()) {
            original.advance(v, SampleFixtures.CONFIG);
        }
        assertThat(again.result().sameContent(original.result())).isTrue();
    }

    @Test
    void shouldSendTheStateInlineWhenNoLoaderReservedRoom() throws Exception {
        UnfinishedSample s = SampleFixtures.unfinished(53, Preparation.Step.FLIP);
        byte[] inline = write(s);
        assertThat(inline.length).isGreaterThan(5 * 8 * 8 * 8); // the 8^3 patch cut so far
        UnfinishedSample back = read(inline);
        assertThat(back.steps()).isNull();
        assertThat(back.state()).isNotNull();
        assertThat(SampleFixtures.sameContent(back, s)).isTrue();
    }

    private static byte[] write(UnfinishedSample s) throws Exception {
        DataOutputSerializer out = new DataOutputSerializer(256);
        UnfinishedSampleSerializer.INSTANCE.serialize(s, out);
        return out.getCopyOfBuffer();
    }

    private static UnfinishedSample read(byte[] bytes) throws Exception {
        return UnfinishedSampleSerializer.INSTANCE.deserialize(new DataInputDeserializer(bytes));
    }
}
