package io.minato.sample.serde;

import io.minato.transform.Preparation;
import io.minato.transform.Preparation.Step;
import org.apache.flink.api.common.typeutils.SerializerTestBase;
import org.apache.flink.api.common.typeutils.TypeSerializer;

/** Flink's serializer contract tests for {@link PreparationSerializer}. */
class PreparationSerializerTest extends SerializerTestBase<Preparation> {

    PreparationSerializerTest() {
        super(SampleFixtures.contentChecker());
    }

    @Override
    protected TypeSerializer<Preparation> createSerializer() {
        return PreparationSerializer.INSTANCE;
    }

    @Override
    protected int getLength() {
        return -1;
    }

    @Override
    protected Class<Preparation> getTypeClass() {
        return Preparation.class;
    }

    @Override
    protected Preparation[] getTestData() {
        return new Preparation[] {
            SampleFixtures.preparationAt(0, Step.START),
            SampleFixtures.preparationAt(1, Step.SCAN),
            SampleFixtures.preparationAt(2, Step.CROP),
            SampleFixtures.preparationAt(3, Step.FLIP),
            SampleFixtures.preparationAt(4, Step.NOISE),
            SampleFixtures.preparationAt(5, Step.DONE)
        };
    }
}
