package io.minato.trainer.serve;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import io.minato.json.Json;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * The frames of the serving protocol: a 4-byte big-endian length, then a JSON object (the header);
 * a batch sent over TCP is followed by its bytes. See {@code docs/pytorch.md} for the messages.
 */
final class Wire {
    /**
     * The protocol's version, in the client's hello and the server's welcome. 2: the hello is small
     * and answered ({@code ready}) before the process sends what it has consumed.
     */
    static final int VERSION = 2;

    /**
     * The largest header read from a process whose hello was checked: a consumed set of a long run
     * fits many times over.
     */
    static final int MAX_HEADER = 64 << 20;

    /** The longest path of a shared-memory probe: {@code /dev/shm/} and a file name. */
    private static final int MAX_PROBE_PATH = "/dev/shm/".length() + 255;

    /** The longest probe nonce the endpoint reads back. */
    static final int MAX_NONCE = 256;

    /** A hello's fields beside the token and the probe, with room for whitespace. */
    private static final int HELLO_FIELDS = 1024;

    private static final JsonFactory JSON = new JsonFactory();

    private Wire() {}

    /** Writes {@code header} as one frame; the caller flushes. */
    static void send(DataOutputStream out, Map<String, ?> header) throws IOException {
        byte[] json = encode(header);
        out.writeInt(json.length);
        out.write(json);
    }

    /** {@code header} as one frame's bytes, for a channel that does not block. */
    static ByteBuffer frame(Map<String, ?> header) throws IOException {
        byte[] json = encode(header);
        return ByteBuffer.allocate(4 + json.length).putInt(json.length).put(json).flip();
    }

    /**
     * The largest hello a process of this protocol sends, the only frame read before its token is
     * checked: its fields, the token and the probe's path and nonce, every byte of those escaped at
     * worst (JSON escapes a control character in 6 bytes).
     */
    static int maxHello(String token) {
        int tokenBytes = token == null ? 0 : token.getBytes(StandardCharsets.UTF_8).length;
        return HELLO_FIELDS + 6 * (tokenBytes + MAX_PROBE_PATH + MAX_NONCE);
    }

    /** The next frame's header; {@link EOFException} when the peer closed. */
    static Map<String, Object> receive(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 2 || n > MAX_HEADER) {
            throw new IOException("a frame of " + n + " bytes: not a minato-flink client");
        }
        byte[] body = new byte[n];
        in.readFully(body);
        return parse(body);
    }

    /** A frame's header from its bytes. */
    static Map<String, Object> parse(byte[] body) throws IOException {
        Object value;
        try {
            value = Json.parse(new String(body, StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
            throw new IOException("a frame that is not JSON: " + e.getMessage());
        }
        if (!(value instanceof Map<?, ?> map) || !(map.get("type") instanceof String)) {
            throw new IOException("a frame without a \"type\"");
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> header = (Map<String, Object>) map;
        return header;
    }

    static byte[] encode(Map<String, ?> header) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream(256);
        try (JsonGenerator g = JSON.createGenerator(out)) {
            write(g, header);
        }
        return out.toByteArray();
    }

    private static void write(JsonGenerator g, Object v) throws IOException {
        if (v == null) {
            g.writeNull();
        } else if (v instanceof Map<?, ?> map) {
            g.writeStartObject();
            for (Map.Entry<?, ?> e : map.entrySet()) {
                g.writeFieldName(String.valueOf(e.getKey()));
                write(g, e.getValue());
            }
            g.writeEndObject();
        } else if (v instanceof List<?> list) {
            g.writeStartArray();
            for (Object o : list) {
                write(g, o);
            }
            g.writeEndArray();
        } else if (v instanceof long[] longs) {
            g.writeStartArray();
            for (long l : longs) {
                g.writeNumber(l);
            }
            g.writeEndArray();
        } else if (v instanceof String s) {
            g.writeString(s);
        } else if (v instanceof Boolean b) {
            g.writeBoolean(b);
        } else if (v instanceof Integer i) {
            g.writeNumber(i);
        } else if (v instanceof Long l) {
            g.writeNumber(l);
        } else if (v instanceof Double d) {
            g.writeNumber(d);
        } else {
            throw new IllegalArgumentException("no JSON for " + v.getClass());
        }
    }

    /** A whole number of the header, or {@code fallback} when absent. */
    static long number(Map<String, Object> header, String key, long fallback) throws IOException {
        Object v = header.get(key);
        if (v == null) {
            return fallback;
        }
        if (!(v instanceof Double d) || d != Math.rint(d)) {
            throw new IOException("\"" + key + "\" must be a whole number, not " + v);
        }
        return d.longValue();
    }
}
