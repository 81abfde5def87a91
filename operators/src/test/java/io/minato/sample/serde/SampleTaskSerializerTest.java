package io.minato.sample.serde;

import io.minato.sample.SampleTask;
import org.apache.flink.api.common.typeutils.SerializerTestBase;
import org.apache.flink.api.common.typeutils.TypeSerializer;

/** Flink's serializer contract tests for {@link SampleTaskSerializer}. */
class SampleTaskSerializerTest extends SerializerTestBase<SampleTask> {

    SampleTaskSerializerTest() {
        super(SampleFixtures.contentChecker());
    }

    @Override
    protected TypeSerializer<SampleTask> createSerializer() {
        return SampleTaskSerializer.INSTANCE;
    }

    @Override
    protected int getLength() {
        return 24;
    }

    @Override
    protected Class<SampleTask> getTypeClass() {
        return SampleTask.class;
    }

    @Override
    protected SampleTask[] getTestData() {
        return new SampleTask[] {
            new SampleTask(0, 0, 0, 0),
            new SampleTask(-1, Integer.MAX_VALUE, Long.MAX_VALUE, Integer.MIN_VALUE),
            SampleFixtures.task(12345)
        };
    }
}
