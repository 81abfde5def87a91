package io.minato.sample.serde;

import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.SerializerTestBase;
import org.apache.flink.api.common.typeutils.TypeSerializer;

/**
 * Flink's serializer contract tests for the serializer of one of {@link SampleTypes}: each test
 * names the type, the serializer's fixed length (-1 for a variable one) and the values to
 * round-trip; values are compared by content ({@link SampleFixtures#contentChecker()}).
 */
abstract class SampleSerializerTestBase<T> extends SerializerTestBase<T> {
    private final TypeInformation<T> type;
    private final int length;
    private final T[] data;

    SampleSerializerTestBase(TypeInformation<T> type, int length, T[] data) {
        super(SampleFixtures.contentChecker());
        this.type = type;
        this.length = length;
        this.data = data;
    }

    @Override
    protected TypeSerializer<T> createSerializer() {
        return type.createSerializer(new SerializerConfigImpl());
    }

    @Override
    protected int getLength() {
        return length;
    }

    @Override
    protected Class<T> getTypeClass() {
        return type.getTypeClass();
    }

    @Override
    protected T[] getTestData() {
        return data;
    }
}
