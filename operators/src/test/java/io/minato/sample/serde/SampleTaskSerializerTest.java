package io.minato.sample.serde;

import io.minato.sample.SampleTask;

/** Flink's serializer contract tests for {@link SampleTaskSerializer}. */
class SampleTaskSerializerTest extends SampleSerializerTestBase<SampleTask> {

    SampleTaskSerializerTest() {
        super(
                SampleTypes.SAMPLE_TASK,
                24,
                new SampleTask[] {
                    new SampleTask(0, 0, 0, 0),
                    new SampleTask(-1, Integer.MAX_VALUE, Long.MAX_VALUE, Integer.MIN_VALUE),
                    SampleFixtures.task(12345)
                });
    }
}
