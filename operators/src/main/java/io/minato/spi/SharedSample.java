package io.minato.spi;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;

/**
 * A prepared sample whose bytes never enter the JVM: a file in shared memory that a process outside
 * it wrote (the Python workload's workers) and the training process on the same host reads. The JVM
 * carries its name, its size and its layout, the JSON that says what the file's arrays are and how
 * they nest; the training process deletes the file once it has collated the sample.
 *
 * @param host the host whose shared memory holds the file ({@link #thisHost()})
 * @param layout opaque to the JVM: the training process reads it
 */
public record SharedSample(String host, String file, long bytes, String layout)
        implements Serializable {

    /** The longest layout a reader accepts: a corrupt length fails, not allocates. */
    private static final int MAX_LAYOUT = 16 << 20;

    private static final String HOST = readHost();

    public SharedSample {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(file, "file");
        Objects.requireNonNull(layout, "layout");
        if (bytes < 0) {
            throw new IllegalArgumentException("a shared sample of " + bytes + " bytes");
        }
    }

    /**
     * What names this host's shared memory: the kernel's boot id, which two machines (or two boots)
     * never share, with the host name for a reader.
     */
    public static String thisHost() {
        return HOST;
    }

    private static String readHost() {
        String name;
        try {
            name = java.net.InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            name = "localhost";
        }
        try {
            return name
                    + "/"
                    + Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).strip();
        } catch (IOException | RuntimeException e) {
            return name;
        }
    }

    /** Whether the file is in this host's shared memory. */
    public boolean onThisHost() {
        return host.equals(HOST);
    }

    void writeTo(DataOutput out) throws IOException {
        out.writeUTF(host);
        out.writeUTF(file);
        out.writeLong(bytes);
        byte[] l = layout.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        out.writeInt(l.length);
        out.write(l);
    }

    static SharedSample readFrom(DataInput in) throws IOException {
        String host = in.readUTF();
        String file = in.readUTF();
        long bytes = in.readLong();
        int n = in.readInt();
        if (n < 0 || n > MAX_LAYOUT || bytes < 0) {
            throw new IOException("corrupt shared sample " + file);
        }
        byte[] l = new byte[n];
        in.readFully(l);
        return new SharedSample(
                host, file, bytes, new String(l, java.nio.charset.StandardCharsets.UTF_8));
    }

    /** What {@link #writeTo} writes. */
    byte[] toBytes() {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        try {
            writeTo(new java.io.DataOutputStream(bytes));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e); // an in-memory stream does not fail
        }
        return bytes.toByteArray();
    }
}
