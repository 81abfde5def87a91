package io.minato.sample.serde;

import io.minato.sample.Batch;
import java.util.List;
import org.apache.flink.api.common.typeutils.SerializerTestBase;
import org.apache.flink.api.common.typeutils.TypeSerializer;

/** Flink's serializer contract tests for {@link BatchSerializer}. */
class BatchSerializerTest extends SerializerTestBase<Batch> {

    BatchSerializerTest() {
        super(SampleFixtures.contentChecker());
    }

    @Override
    protected TypeSerializer<Batch> createSerializer() {
        return BatchSerializer.INSTANCE;
    }

    @Override
    protected int getLength() {
        return -1;
    }

    @Override
    protected Class<Batch> getTypeClass() {
        return Batch.class;
    }

    @Override
    protected Batch[] getTestData() {
        return new Batch[] {
            new Batch(0, 0, List.of()), SampleFixtures.batch(1, 7, 1), SampleFixtures.batch(3, 9, 4)
        };
    }
}
