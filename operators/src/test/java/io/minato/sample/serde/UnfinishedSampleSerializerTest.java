package io.minato.sample.serde;

import io.minato.sample.UnfinishedSample;
import io.minato.workload.kits19.Preparation.Step;
import org.apache.flink.api.common.typeutils.SerializerTestBase;
import org.apache.flink.api.common.typeutils.TypeSerializer;

/** Flink's serializer contract tests for {@link UnfinishedSampleSerializer}. */
class UnfinishedSampleSerializerTest extends SerializerTestBase<UnfinishedSample> {

    UnfinishedSampleSerializerTest() {
        super(SampleFixtures.contentChecker());
    }

    @Override
    protected TypeSerializer<UnfinishedSample> createSerializer() {
        return UnfinishedSampleSerializer.INSTANCE;
    }

    @Override
    protected int getLength() {
        return -1;
    }

    @Override
    protected Class<UnfinishedSample> getTypeClass() {
        return UnfinishedSample.class;
    }

    @Override
    protected UnfinishedSample[] getTestData() {
        return new UnfinishedSample[] {
            SampleFixtures.unfinished(0, Step.START),
            SampleFixtures.unfinished(1, Step.SCAN),
            SampleFixtures.unfinished(2, Step.FLIP),
            SampleFixtures.unfinished(3, Step.NOISE)
        };
    }
}
