package io.minato.sample.serde;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.sample.UnfinishedSample;
import io.minato.spi.Shape3;
import java.util.Map;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.typeutils.GenericTypeInfo;
import org.apache.flink.api.java.typeutils.PojoTypeInfo;
import org.apache.flink.api.java.typeutils.TypeExtractor;
import org.junit.jupiter.api.Test;

class SampleTypesTest {

    private static final Map<Class<?>, TypeInformation<?>> ANNOTATED =
            Map.of(
                    SampleTask.class, SampleTypes.SAMPLE_TASK,
                    SamplePath.class, SampleTypes.SAMPLE_PATH,
                    PreparedSample.class, SampleTypes.PREPARED_SAMPLE,
                    UnfinishedSample.class, SampleTypes.UNFINISHED_SAMPLE,
                    Batch.class, SampleTypes.BATCH);

    @Test
    void shouldFindTheHandWrittenTypeInfoOfEverySampleTypeByAnnotation() {
        ANNOTATED.forEach(
                (type, expected) -> {
                    TypeInformation<?> found = TypeInformation.of(type);
                    assertThat(found)
                            .as("type info of %s", type.getSimpleName())
                            .isSameAs(expected)
                            .isInstanceOf(SampleTypeInfo.class)
                            .isNotInstanceOf(GenericTypeInfo.class)
                            .isNotInstanceOf(PojoTypeInfo.class);
                    assertThat(found.getTypeClass()).isEqualTo(type);
                });
    }

    @Test
    void shouldCreateItsSerializerWithGenericTypesDisabled() {
        SerializerConfigImpl config = new SerializerConfigImpl();
        config.setGenericTypes(false);
        assertThat(config.hasGenericTypesDisabled()).isTrue();

        assertThat(SampleTypes.SAMPLE_TASK.createSerializer(config))
                .isSameAs(SampleTaskSerializer.INSTANCE);
        assertThat(SampleTypes.SAMPLE_PATH.createSerializer(config))
                .isSameAs(SamplePathSerializer.INSTANCE);
        assertThat(SampleTypes.PREPARED_SAMPLE.createSerializer(config))
                .isSameAs(PreparedSampleSerializer.INSTANCE);
        assertThat(SampleTypes.UNFINISHED_SAMPLE.createSerializer(config))
                .isSameAs(UnfinishedSampleSerializer.INSTANCE);
        assertThat(SampleTypes.BATCH.createSerializer(config)).isSameAs(BatchSerializer.INSTANCE);
        assertThat(SampleTypes.PATCH.createSerializer(config)).isSameAs(PatchSerializer.INSTANCE);
    }

    @Test
    void shouldInferTheOutputTypeOfALambdaWithoutReturns() {
        MapFunction<SampleTask, PreparedSample> prepare =
                task ->
                        new PreparedSample(
                                task,
                                SamplePath.FAST,
                                0,
                                SampleFixtures.patch(Shape3.cube(2), task.index()));

        assertThat(TypeExtractor.getMapReturnTypes(prepare, SampleTypes.SAMPLE_TASK))
                .isSameAs(SampleTypes.PREPARED_SAMPLE);
    }

    @Test
    void shouldEqualOnlyTypeInfoOfTheSameClassAndSerializer() {
        assertThat(new SampleTypeInfo<>(Batch.class, BatchSerializer.INSTANCE))
                .isEqualTo(SampleTypes.BATCH)
                .hasSameHashCodeAs(SampleTypes.BATCH)
                .isNotEqualTo(SampleTypes.PREPARED_SAMPLE);
        assertThat(SampleTypes.BATCH).hasToString("SampleTypeInfo<Batch>");
    }
}
