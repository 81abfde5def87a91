package io.minato.sample.serde;

import io.minato.sample.UnfinishedSample;
import io.minato.workload.kits19.Preparation.Step;

/** Flink's serializer contract tests for {@link UnfinishedSampleSerializer}. */
class UnfinishedSampleSerializerTest extends SampleSerializerTestBase<UnfinishedSample> {

    UnfinishedSampleSerializerTest() {
        super(
                SampleTypes.UNFINISHED_SAMPLE,
                -1,
                new UnfinishedSample[] {
                    SampleFixtures.unfinished(0, Step.START),
                    SampleFixtures.unfinished(1, Step.SCAN),
                    SampleFixtures.unfinished(2, Step.FLIP),
                    SampleFixtures.unfinished(3, Step.NOISE)
                });
    }
}
