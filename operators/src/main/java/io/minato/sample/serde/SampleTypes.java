package io.minato.sample.serde;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.sample.UnfinishedSample;
import io.minato.spi.Patch;
import java.lang.reflect.Type;
import java.util.Map;
import org.apache.flink.api.common.typeinfo.TypeInfoFactory;
import org.apache.flink.api.common.typeinfo.TypeInformation;

/**
 * The Flink type information of the sample types, for OutputTags and state descriptors; the records
 * carry {@code @TypeInfo} annotations naming the factories below, so that Flink's type extraction
 * finds the same information by itself.
 */
public final class SampleTypes {
    private SampleTypes() {}

    public static final TypeInformation<SampleTask> SAMPLE_TASK =
            new SampleTypeInfo<>(SampleTask.class, SampleTaskSerializer.INSTANCE);

    public static final TypeInformation<SamplePath> SAMPLE_PATH =
            new SampleTypeInfo<>(SamplePath.class, SamplePathSerializer.INSTANCE);

    public static final TypeInformation<PreparedSample> PREPARED_SAMPLE =
            new SampleTypeInfo<>(PreparedSample.class, PreparedSampleSerializer.INSTANCE);

    /** For checkpointed state: samples as identities, prepared again after a restore. */
    public static final TypeInformation<PreparedSample> PREPARED_SAMPLE_IDENTITY =
            new SampleTypeInfo<>(PreparedSample.class, PreparedSampleIdentitySerializer.INSTANCE);

    public static final TypeInformation<UnfinishedSample> UNFINISHED_SAMPLE =
            new SampleTypeInfo<>(UnfinishedSample.class, UnfinishedSampleSerializer.INSTANCE);

    public static final TypeInformation<Batch> BATCH =
            new SampleTypeInfo<>(Batch.class, BatchSerializer.INSTANCE);

    /** For state or records holding a bare patch (the record types already cover it). */
    public static final TypeInformation<Patch> PATCH =
            new SampleTypeInfo<>(Patch.class, PatchSerializer.INSTANCE);

    /** Named by {@code @TypeInfo} on {@link SampleTask}. */
    public static final class SampleTaskFactory extends TypeInfoFactory<SampleTask> {
        @Override
        public TypeInformation<SampleTask> createTypeInfo(
                Type t, Map<String, TypeInformation<?>> genericParameters) {
            return SAMPLE_TASK;
        }
    }

    /** Named by {@code @TypeInfo} on {@link SamplePath}. */
    public static final class SamplePathFactory extends TypeInfoFactory<SamplePath> {
        @Override
        public TypeInformation<SamplePath> createTypeInfo(
                Type t, Map<String, TypeInformation<?>> genericParameters) {
            return SAMPLE_PATH;
        }
    }

    /** Named by {@code @TypeInfo} on {@link PreparedSample}. */
    public static final class PreparedSampleFactory extends TypeInfoFactory<PreparedSample> {
        @Override
        public TypeInformation<PreparedSample> createTypeInfo(
                Type t, Map<String, TypeInformation<?>> genericParameters) {
            return PREPARED_SAMPLE;
        }
    }

    /** Named by {@code @TypeInfo} on {@link UnfinishedSample}. */
    public static final class UnfinishedSampleFactory extends TypeInfoFactory<UnfinishedSample> {
        @Override
        public TypeInformation<UnfinishedSample> createTypeInfo(
                Type t, Map<String, TypeInformation<?>> genericParameters) {
            return UNFINISHED_SAMPLE;
        }
    }

    /** Named by {@code @TypeInfo} on {@link Batch}. */
    public static final class BatchFactory extends TypeInfoFactory<Batch> {
        @Override
        public TypeInformation<Batch> createTypeInfo(
                Type t, Map<String, TypeInformation<?>> genericParameters) {
            return BATCH;
        }
    }
}
