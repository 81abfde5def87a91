package io.minato.sample.serde;

import io.minato.sample.Batch;
import java.util.List;

/** Flink's serializer contract tests for {@link BatchSerializer}. */
class BatchSerializerTest extends SampleSerializerTestBase<Batch> {

    BatchSerializerTest() {
        super(
                SampleTypes.BATCH,
                -1,
                new Batch[] {
                    new Batch(0, 0, List.of()),
                    SampleFixtures.batch(1, 7, 1),
                    SampleFixtures.batch(3, 9, 4),
                    SampleFixtures.heldBack(SampleFixtures.batch(2, 5, 2), 123_456_789)
                });
    }
}
