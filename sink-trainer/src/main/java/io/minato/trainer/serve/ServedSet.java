package io.minato.trainer.serve;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A set of samples by identity, (epoch, index): one bitmap of the epoch's indices per epoch. What a
 * device has served, and what its training process has consumed, are such sets; the difference
 * between the two is what must be served again, and no more.
 *
 * <p>On the wire and in a training script's checkpoint each epoch's bitmap is base64 of its bytes,
 * bit {@code i} of byte {@code i / 8} for index {@code i} (least significant bit first: {@link
 * BitSet#toByteArray}, and NumPy's {@code unpackbits(bitorder="little")}).
 */
public final class ServedSet {
    private static final int VERSION = 1;

    private final TreeMap<Integer, BitSet> epochs = new TreeMap<>();

    public ServedSet() {}

    private ServedSet(ServedSet other) {
        other.epochs.forEach((e, bits) -> epochs.put(e, (BitSet) bits.clone()));
    }

    public ServedSet copy() {
        return new ServedSet(this);
    }

    public void add(int epoch, long index) {
        epochs.computeIfAbsent(epoch, e -> new BitSet()).set(Math.toIntExact(index));
    }

    public void remove(int epoch, long index) {
        BitSet bits = epochs.get(epoch);
        if (bits != null && index <= Integer.MAX_VALUE) {
            bits.clear((int) index);
        }
    }

    public boolean contains(int epoch, long index) {
        BitSet bits = epochs.get(epoch);
        return bits != null && index <= Integer.MAX_VALUE && bits.get((int) index);
    }

    /** Adds every sample of {@code other}. */
    public void addAll(ServedSet other) {
        other.epochs.forEach((e, bits) -> epochs.computeIfAbsent(e, k -> new BitSet()).or(bits));
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

    /** Epoch (as text) to base64 bitmap, the form a training script keeps and sends. */
    public Map<String, String> toWire() {
        Map<String, String> wire = new LinkedHashMap<>();
        Base64.Encoder b64 = Base64.getEncoder();
        epochs.forEach(
                (e, bits) -> wire.put(Integer.toString(e), b64.encodeToString(bits.toByteArray())));
        return wire;
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
            try {
                BitSet bits = BitSet.valueOf(b64.decode(text));
                if (!bits.isEmpty()) {
                    set.epochs.put(epoch, bits);
                }
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(
                        "consumed samples of epoch " + epoch + ": not base64: " + e.getMessage());
            }
        }
        return set;
    }

    /** The set as bytes, for a checkpoint. */
    public byte[] toBytes() {
        try {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(bytes);
            out.writeInt(VERSION);
            out.writeInt(epochs.size());
            for (Map.Entry<Integer, BitSet> e : epochs.entrySet()) {
                byte[] bits = e.getValue().toByteArray();
                out.writeInt(e.getKey());
                out.writeInt(bits.length);
                out.write(bits);
            }
            out.flush();
            return bytes.toByteArray();
        } catch (IOException e) {
            throw new IllegalStateException("cannot happen in memory", e);
        }
    }

    /** The set {@link #toBytes} wrote, read from {@code in}. */
    public static ServedSet readFrom(DataInputStream in) throws IOException {
        int version = in.readInt();
        if (version != VERSION) {
            throw new IOException("served samples of format " + version + ", expected " + VERSION);
        }
        ServedSet set = new ServedSet();
        int n = in.readInt();
        for (int i = 0; i < n; i++) {
            int epoch = in.readInt();
            byte[] bits = new byte[in.readInt()];
            in.readFully(bits);
            set.epochs.put(epoch, BitSet.valueOf(bits));
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
