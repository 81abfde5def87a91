package io.minato.sample.serde;

import java.io.IOException;
import org.apache.flink.api.common.typeutils.base.TypeSerializerSingleton;
import org.apache.flink.core.memory.DataInputView;

/**
 * A serializer of this package: a stateless singleton whose records are never reused. A reused
 * record may still be referenced downstream (a batch being assembled, a trainer's queue), so every
 * copy and every read makes a fresh one.
 */
abstract class SampleSerializer<T> extends TypeSerializerSingleton<T> {
    private static final long serialVersionUID = 1L;

    @Override
    public final T copy(T from, T reuse) {
        return copy(from);
    }

    @Override
    public final T deserialize(T reuse, DataInputView in) throws IOException {
        return deserialize(in);
    }
}
