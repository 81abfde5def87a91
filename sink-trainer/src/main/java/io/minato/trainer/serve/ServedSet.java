package io.minato.trainer.serve;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.BitSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.DataFormatException;
import java.util.zip.Deflater;
import java.util.zip.Inflater;

/**
 * A set of samples by identity, (epoch, index): one bitmap of the epoch's indices per epoch. What a
 * device has served, and what its training process has consumed, are such sets; the difference
 * between the two is what must be served again, and no more.
 *
 * <p>An epoch's bitmap is bit {@code i} of byte {@code i / 8} for index {@code i} (least
 * significant bit first: {@link BitSet#toByteArray}, and NumPy's {@code
 * unpackbits(bitorder="little")}). On the wire, in a training script's checkpoint and in the job's
 * checkpoint it travels zlib-compressed ({@code "z:"} and base64 of the stream on the wire): a
 * finished epoch is a periodic pattern (every index, or every G-th for G ranks), a few hundred
 * bytes whatever the epoch's size, so a run of a million samples over 90 epochs keeps kilobytes,
 * not 11 MiB. An epoch's compressed form is kept until the epoch changes: a checkpoint compresses
 * the epochs in progress only. Plain base64 of the bitmap is read too.
 */
public final class ServedSet {
    /** The checkpoint's format: 1 raw bitmaps, 2 zlib-compressed ones. */
    private static final int VERSION = 2;

    private static final String PACKED = "z:";

    /** The largest bitmap an epoch can have: an index is an int. */
    private static final int MAX_BITMAP_BYTES = (Integer.MAX_VALUE >> 3) + 1;

    private final TreeMap<Integer, BitSet> epochs = new TreeMap<>();

    /** Each epoch's compressed bitmap, until the epoch changes. */
    private final Map<Integer, byte[]> packed = new HashMap<>();

    public ServedSet() {}

    private ServedSet(ServedSet other) {
        other.epochs.forEach((e, bits) -> epochs.put(e, (BitSet) bits.clone()));
        packed.putAll(other.packed); // never changed in place
    }

    public ServedSet copy() {
        return new ServedSet(this);
    }

    public void add(int epoch, long index) {
        BitSet bits = epochs.computeIfAbsent(epoch, e -> new BitSet());
        int i = Math.toIntExact(index);
        if (!bits.get(i)) {
            bits.set(i);
            packed.remove(epoch);
        }
    }

    public void remove(int epoch, long index) {
        BitSet bits = epochs.get(epoch);
        if (bits != null && index <= Integer.MAX_VALUE && bits.get((int) index)) {
            bits.clear((int) index);
            packed.remove(epoch);
        }
    }

    public boolean contains(int epoch, long index) {
        BitSet bits = epochs.get(epoch);
        return bits != null && index <= Integer.MAX_VALUE && bits.get((int) index);
    }

    /** Adds every sample of {@code other}. */
    public void addAll(ServedSet other) {
        other.epochs.forEach(
                (e, bits) -> {
                    epochs.computeIfAbsent(e, k -> new BitSet()).or(bits);
                    packed.remove(e);
                });
    }

    /** The samples here that {@code other} lacks, by epoch then index: {epoch, index} pairs. */
    public List<long[]> minus(ServedSet other) {
        List<long[]> missing = new ArrayList<>();
        epochs.forEach(
                (e, bits) -> {
                    BitSet rest = (BitSet) bits.clone();
                    BitSet theirs = other.epochs.get(e);
                    if (theirs != null) {
                        rest.andNot(theirs);
                    }
                    for (int i = rest.nextSetBit(0); i >= 0; i = rest.nextSetBit(i + 1)) {
                        missing.add(new long[] {e, i});
                    }
                });
        return missing;
    }

    public long size() {
        long n = 0;
        for (BitSet bits : epochs.values()) {
            n += bits.cardinality();
        }
        return n;
    }

    /**
     * Epoch (as text) to its compressed bitmap, {@code "z:"} and base64: the form a training script
     * keeps and sends.
     */
    public Map<String, String> toWire() {
        Map<String, String> wire = new LinkedHashMap<>();
        Base64.Encoder b64 = Base64.getEncoder();
        for (Integer e : epochs.keySet()) {
            wire.put(Integer.toString(e), PACKED + b64.encodeToString(packed(e)));
        }
        return wire;
    }

    /** Epoch {@code e}'s bitmap, zlib-compressed: kept until the epoch changes. */
    private byte[] packed(int e) {
        return packed.computeIfAbsent(e, k -> deflate(epochs.get(k).toByteArray()));
    }

    private static byte[] deflate(byte[] bitmap) {
        Deflater deflater = new Deflater();
        try {
            deflater.setInput(bitmap);
            deflater.finish();
            ByteArrayOutputStream out = new ByteArrayOutputStream(64 + bitmap.length / 64);
            byte[] chunk = new byte[8192];
            while (!deflater.finished()) {
                out.write(chunk, 0, deflater.deflate(chunk));
            }
            return out.toByteArray();
        } finally {
            deflater.end();
        }
    }

    /**
     * The bitmap {@code deflate} compressed.
     *
     * @throws DataFormatException not a zlib stream, or one that inflates beyond any epoch's size
     */
    private static byte[] inflate(byte[] stream) throws DataFormatException {
        Inflater inflater = new Inflater();
        try {
            inflater.setInput(stream);
            ByteArrayOutputStream out = new ByteArrayOutputStream(Math.max(64, stream.length * 4));
            byte[] chunk = new byte[8192];
            while (!inflater.finished()) {
                int n = inflater.inflate(chunk);
                if (n == 0 && (inflater.needsInput() || inflater.needsDictionary())) {
                    throw new DataFormatException("the stream ends early");
                }
                out.write(chunk, 0, n);
                if (out.size() > MAX_BITMAP_BYTES) {
                    throw new DataFormatException("it inflates beyond any epoch's bitmap");
                }
            }
            return out.toByteArray();
        } finally {
            inflater.end();
        }
    }

    /**
     * The set {@link #toWire} gave.
     *
     * @throws IllegalArgumentException in one line, when an epoch or a bitmap is malformed
     */
    public static ServedSet fromWire(Map<?, ?> wire) {
        ServedSet set = new ServedSet();
        Base64.Decoder b64 = Base64.getDecoder();
        for (Map.Entry<?, ?> entry : wire.entrySet()) {
            int epoch;
            try {
                epoch = Integer.parseInt(String.valueOf(entry.getKey()));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        "consumed samples: epoch '" + entry.getKey() + "' is not a number");
            }
            if (epoch < 0 || !(entry.getValue() instanceof String text)) {
                throw new IllegalArgumentException(
                        "consumed samples of epoch " + epoch + ": expected a base64 bitmap");
            }
            boolean compressed = text.startsWith(PACKED);
            byte[] bytes;
            try {
                bytes = b64.decode(compressed ? text.substring(PACKED.length()) : text);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(
                        "consumed samples of epoch " + epoch + ": not base64: " + e.getMessage());
            }
            if (compressed) {
                try {
                    bytes = inflate(bytes);
                } catch (DataFormatException e) {
                    throw new IllegalArgumentException(
                            "consumed samples of epoch "
                                    + epoch
                                    + ": not a zlib-compressed bitmap: "
                                    + e.getMessage());
                }
            }
            BitSet bits = BitSet.valueOf(bytes);
            if (!bits.isEmpty()) {
                set.epochs.put(epoch, bits);
            }
        }
        return set;
    }

    /** The set as bytes, for a checkpoint: each epoch's bitmap compressed. */
    public byte[] toBytes() {
        try {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(bytes);
            out.writeInt(VERSION);
            out.writeInt(epochs.size());
            for (Integer e : epochs.keySet()) {
                byte[] stream = packed(e);
                out.writeInt(e);
                out.writeInt(stream.length);
                out.write(stream);
            }
            out.flush();
            return bytes.toByteArray();
        } catch (IOException e) {
            throw new IllegalStateException("cannot happen in memory", e);
        }
    }

    /** The set {@link #toBytes} wrote, read from {@code in}; the raw bitmaps of format 1 too. */
    public static ServedSet readFrom(DataInputStream in) throws IOException {
        int version = in.readInt();
        if (version != 1 && version != VERSION) {
            throw new IOException(
                    "served samples of format " + version + ", expected 1 or " + VERSION);
        }
        ServedSet set = new ServedSet();
        int n = in.readInt();
        for (int i = 0; i < n; i++) {
            int epoch = in.readInt();
            int length = in.readInt();
            if (length < 0 || length > MAX_BITMAP_BYTES) {
                throw new IOException(
                        "served samples of epoch " + epoch + ": " + length + " bytes");
            }
            byte[] bytes = new byte[length];
            in.readFully(bytes);
            if (version == VERSION) {
                set.packed.put(epoch, bytes);
                try {
                    bytes = inflate(bytes);
                } catch (DataFormatException e) {
                    throw new IOException(
                            "served samples of epoch " + epoch + ": " + e.getMessage(), e);
                }
            }
            set.epochs.put(epoch, BitSet.valueOf(bytes));
        }
        return set;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ServedSet other && epochs.equals(other.epochs);
    }

    @Override
    public int hashCode() {
        return epochs.hashCode();
    }

    @Override
    public String toString() {
        return size() + " samples of epochs " + epochs.keySet();
    }
}
