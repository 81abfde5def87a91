package io.minato.sample.serde;

import io.minato.sample.SamplePath;
import org.apache.flink.api.common.typeutils.SerializerTestBase;
import org.apache.flink.api.common.typeutils.TypeSerializer;

/** Flink's serializer contract tests for {@link SamplePathSerializer}. */
class SamplePathSerializerTest extends SerializerTestBase<SamplePath> {

    SamplePathSerializerTest() {
        super(SampleFixtures.contentChecker());
    }

    @Override
    protected TypeSerializer<SamplePath> createSerializer() {
        return SamplePathSerializer.INSTANCE;
    }

    @Override
    protected int getLength() {
        return 1;
    }

    @Override
    protected Class<SamplePath> getTypeClass() {
        return SamplePath.class;
    }

    @Override
    protected SamplePath[] getTestData() {
        return new SamplePath[] {SamplePath.FAST, SamplePath.SLOW, SamplePath.FAST};
    }
}
