package io.minato.sample.serde;

import java.util.Objects;
import org.apache.flink.api.common.serialization.SerializerConfig;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;

/**
 * Type information for a sample type with a fixed, hand-written serializer: Flink treats the type
 * as one opaque field and never falls back to Kryo or POJO analysis.
 */
public final class SampleTypeInfo<T> extends TypeInformation<T> {
    private static final long serialVersionUID = 1L;

    private final Class<T> typeClass;
    private final TypeSerializer<T> serializer;

    public SampleTypeInfo(Class<T> typeClass, TypeSerializer<T> serializer) {
        this.typeClass = Objects.requireNonNull(typeClass);
        this.serializer = Objects.requireNonNull(serializer);
    }

    @Override
    public boolean isBasicType() {
        return false;
    }

    @Override
    public boolean isTupleType() {
        return false;
    }

    @Override
    public int getArity() {
        return 1;
    }

    @Override
    public int getTotalFields() {
        return 1;
    }

    @Override
    public Class<T> getTypeClass() {
        return typeClass;
    }

    @Override
    public boolean isKeyType() {
        return false;
    }

    /** The same serializer whatever the config: it needs no Kryo or registered types. */
    @Override
    public TypeSerializer<T> createSerializer(SerializerConfig config) {
        return serializer.duplicate();
    }

    @Override
    public String toString() {
        return "SampleTypeInfo<" + typeClass.getSimpleName() + ">";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SampleTypeInfo<?> other
                && other.canEqual(this)
                && typeClass == other.typeClass
                && serializer.equals(other.serializer);
    }

    @Override
    public int hashCode() {
        return Objects.hash(typeClass, serializer);
    }

    @Override
    public boolean canEqual(Object o) {
        return o instanceof SampleTypeInfo;
    }
}
