package io.minato.sample.serde;

import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.spi.Shape3;

/** Flink's serializer contract tests for {@link PreparedSampleSerializer}. */
class PreparedSampleSerializerTest extends SampleSerializerTestBase<PreparedSample> {

    PreparedSampleSerializerTest() {
        super(
                SampleTypes.PREPARED_SAMPLE,
                -1,
                new PreparedSample[] {
                    SampleFixtures.prepared(0, SamplePath.FAST, Shape3.cube(1)),
                    SampleFixtures.prepared(1, SamplePath.SLOW, new Shape3(4, 6, 8)),
                    SampleFixtures.prepared(2, SamplePath.FAST, Shape3.cube(32))
                });
    }
}
