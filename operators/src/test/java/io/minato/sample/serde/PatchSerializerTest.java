package io.minato.sample.serde;

import io.minato.spi.Patch;
import io.minato.spi.Shape3;
import org.apache.flink.api.common.typeutils.SerializerTestBase;
import org.apache.flink.api.common.typeutils.TypeSerializer;

/** Flink's serializer contract tests for {@link PatchSerializer}. */
class PatchSerializerTest extends SerializerTestBase<Patch> {

    PatchSerializerTest() {
        super(SampleFixtures.contentChecker());
    }

    @Override
    protected TypeSerializer<Patch> createSerializer() {
        return PatchSerializer.INSTANCE;
    }

    @Override
    protected int getLength() {
        return -1;
    }

    @Override
    protected Class<Patch> getTypeClass() {
        return Patch.class;
    }

    @Override
    protected Patch[] getTestData() {
        return new Patch[] {
            SampleFixtures.patch(Shape3.cube(1), 1),
            SampleFixtures.patch(new Shape3(3, 5, 7), 2),
            SampleFixtures.patch(Shape3.cube(40), 3)
        };
    }
}
