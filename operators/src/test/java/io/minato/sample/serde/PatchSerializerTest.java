package io.minato.sample.serde;

import io.minato.spi.Patch;
import io.minato.spi.Shape3;
import io.minato.spi.SharedSample;

/** Flink's serializer contract tests for {@link PatchSerializer}. */
class PatchSerializerTest extends SampleSerializerTestBase<Patch> {

    PatchSerializerTest() {
        super(
                SampleTypes.PATCH,
                -1,
                new Patch[] {
                    SampleFixtures.patch(Shape3.cube(1), 1),
                    SampleFixtures.patch(new Shape3(3, 5, 7), 2),
                    SampleFixtures.patch(Shape3.cube(40), 3),
                    Patch.shared(
                            new SharedSample(
                                    "host/boot", "/dev/shm/minato-py-1-1", 4096, "{\"t\":\"int\"}"))
                });
    }
}
