package io.minato.sample.serde;

import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.spi.Shape3;
import org.apache.flink.api.common.typeutils.SerializerTestBase;
import org.apache.flink.api.common.typeutils.TypeSerializer;

/** Flink's serializer contract tests for {@link PreparedSampleSerializer}. */
class PreparedSampleSerializerTest extends SerializerTestBase<PreparedSample> {

    PreparedSampleSerializerTest() {
        super(SampleFixtures.contentChecker());
    }

    @Override
    protected TypeSerializer<PreparedSample> createSerializer() {
        return PreparedSampleSerializer.INSTANCE;
    }

    @Override
    protected int getLength() {
        return -1;
    }

    @Override
    protected Class<PreparedSample> getTypeClass() {
        return PreparedSample.class;
    }

    @Override
    protected PreparedSample[] getTestData() {
        return new PreparedSample[] {
            SampleFixtures.prepared(0, SamplePath.FAST, Shape3.cube(1)),
            SampleFixtures.prepared(1, SamplePath.SLOW, new Shape3(4, 6, 8)),
            SampleFixtures.prepared(2, SamplePath.FAST, Shape3.cube(32))
        };
    }
}
