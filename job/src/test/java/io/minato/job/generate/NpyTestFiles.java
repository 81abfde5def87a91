package io.minato.job.generate;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Test-only .npy reading (format 1.0, C order) and label-volume helpers. */
final class NpyTestFiles {

    private static final Pattern HEADER =
            Pattern.compile(
                    "\\{'descr': '([^']+)', 'fortran_order': (True|False), 'shape': \\(([^)]*)\\), \\} *\\n");

    private NpyTestFiles() {}

    /** A parsed file: header fields, preamble length, and the data bytes (little-endian). */
    record Npy(String descr, boolean fortranOrder, long[] shape, int preamble, ByteBuffer data) {

        long count() {
            return Arrays.stream(shape).reduce(1, (a, b) -> a * b);
        }

        int depth() {
            return (int) shape[1];
        }

        int height() {
            return (int) shape[2];
        }

        int width() {
            return (int) shape[3];
        }

        float[] floats() {
            float[] values = new float[(int) count()];
            data.duplicate().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(values);
            return values;
        }

        byte[] bytes() {
            byte[] values = new byte[(int) count()];
            data.duplicate().get(values);
            return values;
        }
    }

    static Npy read(Path file) throws IOException {
        byte[] all = Files.readAllBytes(file);
        assertThat(Arrays.copyOf(all, 6))
                .as("magic of %s", file)
                .isEqualTo(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y'});
        assertThat(new byte[] {all[6], all[7]}).as("version of %s", file).containsExactly(1, 0);
        int headerLength = (all[8] & 0xFF) | (all[9] & 0xFF) << 8;
        String header = new String(all, 10, headerLength, StandardCharsets.US_ASCII);
        Matcher m = HEADER.matcher(header);
        assertThat(m.matches()).as("header of %s: %s", file, header).isTrue();
        long[] shape =
                Arrays.stream(m.group(3).split(","))
                        .map(String::trim)
                        .filter(s -> !s.isEmpty())
                        .mapToLong(Long::parseLong)
                        .toArray();
        int preamble = 10 + headerLength;
        return new Npy(
                m.group(1),
                Boolean.parseBoolean(m.group(2).toLowerCase()),
                shape,
                preamble,
                ByteBuffer.wrap(all, preamble, all.length - preamble).slice());
    }

    static String sha256(Path file) throws IOException {
        try {
            return HexFormat.of()
                    .formatHex(
                            MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    /** Number of 6-connected components of voxels equal to {@code value} in a (d, h, w) volume. */
    static int components(byte[] labels, int d, int h, int w, byte value) {
        return componentsOf(labels, d, h, w, value).length;
    }

    /**
     * For each 6-connected component of {@code value}: whether it touches a voxel of {@code other}.
     */
    static boolean[] touching(byte[] labels, int d, int h, int w, byte value, byte other) {
        int[][] comps = componentsOf(labels, d, h, w, value);
        boolean[] touches = new boolean[comps.length];
        int plane = h * w;
        for (int k = 0; k < comps.length; k++) {
            for (int i : comps[k]) {
                int x = i % w;
                int y = (i / w) % h;
                int z = i / plane;
                touches[k] |=
                        (x > 0 && labels[i - 1] == other)
                                || (x < w - 1 && labels[i + 1] == other)
                                || (y > 0 && labels[i - w] == other)
                                || (y < h - 1 && labels[i + w] == other)
                                || (z > 0 && labels[i - plane] == other)
                                || (z < d - 1 && labels[i + plane] == other);
            }
        }
        return touches;
    }

    private static int[][] componentsOf(byte[] labels, int d, int h, int w, byte value) {
        boolean[] seen = new boolean[labels.length];
        int[] queue = new int[labels.length];
        List<int[]> comps = new ArrayList<>();
        int plane = h * w;
        for (int start = 0; start < labels.length; start++) {
            if (labels[start] != value || seen[start]) {
                continue;
            }
            int head = 0;
            int tail = 0;
            queue[tail++] = start;
            seen[start] = true;
            while (head < tail) {
                int i = queue[head++];
                int x = i % w;
                int y = (i / w) % h;
                int z = i / plane;
                int[] neighbours = {
                    x > 0 ? i - 1 : -1,
                    x < w - 1 ? i + 1 : -1,
                    y > 0 ? i - w : -1,
                    y < h - 1 ? i + w : -1,
                    z > 0 ? i - plane : -1,
                    z < d - 1 ? i + plane : -1
                };
                for (int n : neighbours) {
                    if (n >= 0 && !seen[n] && labels[n] == value) {
                        seen[n] = true;
                        queue[tail++] = n;
                    }
                }
            }
            comps.add(Arrays.copyOf(queue, tail));
        }
        return comps.toArray(new int[0][]);
    }
}
