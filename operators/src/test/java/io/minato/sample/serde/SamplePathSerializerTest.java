package io.minato.sample.serde;

import io.minato.sample.SamplePath;

/** Flink's serializer contract tests for {@link SamplePathSerializer}. */
class SamplePathSerializerTest extends SampleSerializerTestBase<SamplePath> {

    SamplePathSerializerTest() {
        super(
                SampleTypes.SAMPLE_PATH,
                1,
                new SamplePath[] {SamplePath.FAST, SamplePath.SLOW, SamplePath.FAST});
    }
}
