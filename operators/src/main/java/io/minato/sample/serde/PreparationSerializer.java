package io.minato.sample.serde;

import io.minato.transform.Preparation;
import io.minato.transform.SampleKey;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.TypeSerializerSingleton;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.core.memory.DataOutputView;

/**
 * Serializes a {@link Preparation} in its own versioned format ({@link Preparation#writeTo}): the
 * key and cursor, plus the component scan state or the cropped patch when it has one.
 */
public final class PreparationSerializer extends TypeSerializerSingleton<Preparation> {
    private static final long serialVersionUID = 1L;

    public static final PreparationSerializer INSTANCE = new PreparationSerializer();

    @Override
    public boolean isImmutableType() {
        return false;
    }

    @Override
    public Preparation createInstance() {
        return Preparation.start(new SampleKey(0, 0, 0));
    }

    /**
     * A deep copy by a serialization round trip: a preparation is mutable (its patch, its scan) and
     * exposes no other way to copy it.
     */
    @Override
    public Preparation copy(Preparation from) {
        try {
            DataOutputSerializer bytes = new DataOutputSerializer(4096);
            from.writeTo(bytes);
            return Preparation.readFrom(
                    new DataInputDeserializer(bytes.getSharedBuffer(), 0, bytes.length()));
        } catch (IOException e) {
            throw new UncheckedIOException("could not copy the preparation of " + from.key(), e);
        }
    }

    @Override
    public Preparation copy(Preparation from, Preparation reuse) {
        return copy(from);
    }

    @Override
    public int getLength() {
        return -1;
    }

    @Override
    public void serialize(Preparation preparation, DataOutputView out) throws IOException {
        preparation.writeTo(out);
    }

    @Override
    public Preparation deserialize(DataInputView in) throws IOException {
        return Preparation.readFrom(in);
    }

    @Override
    public Preparation deserialize(Preparation reuse, DataInputView in) throws IOException {
        return deserialize(in);
    }

    /** Via objects: the format is not length-prefixed, only its reader knows where it ends. */
    @Override
    public void copy(DataInputView in, DataOutputView out) throws IOException {
        serialize(deserialize(in), out);
    }

    @Override
    public TypeSerializerSnapshot<Preparation> snapshotConfiguration() {
        return new Snapshot();
    }

    /** Restores {@link #INSTANCE}; {@link Preparation} versions its own format. */
    public static final class Snapshot extends SimpleTypeSerializerSnapshot<Preparation> {
        public Snapshot() {
            super(() -> INSTANCE);
        }
    }
}
