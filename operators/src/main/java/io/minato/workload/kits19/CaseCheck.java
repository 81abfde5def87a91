package io.minato.workload.kits19;

import io.minato.data.BadInputException;
import io.minato.npy.DType;
import io.minato.npy.NpyArray;
import io.minato.npy.NpyHeader;
import io.minato.npy.NpyReader;
import io.minato.spi.Shape3;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;

/**
 * Checks that a case is fit to train on and opens it as a memory-mapped {@link Volume}.
 *
 * <p>The header checks are cheap and always run; the content check reads both volumes once: every
 * intensity finite, every label 0, 1 or 2, and some foreground.
 */
public final class CaseCheck {
    /** The largest label class of the KiTS19 format: 0 background, 1 kidney, 2 tumour. */
    public static final int MAX_CLASS = 2;

    private CaseCheck() {}

    /** Opens a case after the header checks; the volume is mapped, not copied. */
    public static Volume open(CaseFiles c) throws BadInputException {
        NpyArray x = map(c.image());
        NpyArray y = map(c.label());
        Shape3 shape = checkHeaders(c, x.header(), y.header());
        return new Volume(c.name(), shape, x.floats(), y.bytes());
    }

    /** The header checks alone: reads a few hundred bytes per file. */
    public static Shape3 checkHeaders(CaseFiles c) throws BadInputException {
        return checkHeaders(c, header(c.image()), header(c.label()));
    }

    /**
     * The full check: headers, then every voxel of both volumes.
     *
     * @param patch the training patch, or null to accept volumes of any size
     */
    public static CaseInfo check(CaseFiles c, Shape3 patch) throws BadInputException {
        Volume v = open(c);
        Shape3 s = v.shape();
        checkFitsPatch(c, s, patch);
        FloatBuffer image = v.image();
        for (int i = 0, n = image.limit(); i < n; i++) {
            float f = image.get(i);
            if (!Float.isFinite(f)) {
                throw new BadInputException(
                        c.image(),
                        "intensity "
                                + f
                                + " at voxel "
                                + position(s, i)
                                + "; intensities must be finite");
            }
        }
        ByteBuffer label = v.label();
        long[] counts = new long[MAX_CLASS + 1];
        for (int i = 0, n = label.limit(); i < n; i++) {
            int l = label.get(i) & 0xFF;
            if (l > MAX_CLASS) {
                throw new BadInputException(
                        c.label(),
                        "label "
                                + l
                                + " at voxel "
                                + position(s, i)
                                + "; labels must be 0, 1 or 2");
            }
            counts[l]++;
        }
        if (counts[1] + counts[2] == 0) {
            throw new BadInputException(
                    c.label(), "label volume has no foreground (no kidney or tumour voxel)");
        }
        return new CaseInfo(c, s, counts[1], counts[2]);
    }

    /** A training case must hold at least one whole patch; null accepts any size. */
    public static void checkFitsPatch(CaseFiles c, Shape3 s, Shape3 patch)
            throws BadInputException {
        if (patch != null && (s.d() < patch.d() || s.h() < patch.h() || s.w() < patch.w())) {
            throw new BadInputException(
                    c.image(),
                    "volume "
                            + s
                            + " is smaller than the patch "
                            + patch
                            + "; use a smaller --patch");
        }
    }

    private static Shape3 checkHeaders(CaseFiles c, NpyHeader x, NpyHeader y)
            throws BadInputException {
        Shape3 sx = shape(c.image(), x, DType.FLOAT32);
        Shape3 sy = shape(c.label(), y, DType.UINT8);
        if (!sx.equals(sy)) {
            throw new BadInputException(
                    c.label(),
                    "shape "
                            + Arrays.toString(y.shape())
                            + " differs from the image's "
                            + Arrays.toString(x.shape()));
        }
        return sx;
    }

    private static Shape3 shape(Path file, NpyHeader h, DType want) throws BadInputException {
        if (h.dtype() != want) {
            throw new BadInputException(
                    file,
                    "dtype "
                            + h.descr()
                            + ", expected "
                            + want.code()
                            + " ("
                            + want.name().toLowerCase(Locale.ROOT)
                            + ")");
        }
        long[] s = h.shape();
        if (s.length != 4 || s[0] != 1) {
            throw new BadInputException(
                    file, "shape " + Arrays.toString(s) + ", expected (1, D, H, W)");
        }
        if (h.fortranOrder() && (s[1] > 1 || s[2] > 1)) {
            throw new BadInputException(
                    file, "Fortran-ordered array; re-save it in C order (numpy.ascontiguousarray)");
        }
        for (int i = 1; i < 4; i++) {
            if (s[i] < 1) {
                throw new BadInputException(file, "empty volume " + Arrays.toString(s));
            }
        }
        if (s[1] * s[2] * s[3] > Integer.MAX_VALUE) {
            throw new BadInputException(
                    file,
                    "volume of "
                            + s[1] * s[2] * s[3]
                            + " voxels is larger than supported (2^31 - 1)");
        }
        return new Shape3((int) s[1], (int) s[2], (int) s[3]);
    }

    private static String position(Shape3 s, int i) {
        return "(0, " + i / (s.h() * s.w()) + ", " + i / s.w() % s.h() + ", " + i % s.w() + ")";
    }

    private static NpyArray map(Path file) throws BadInputException {
        try {
            return NpyReader.map(file);
        } catch (IOException e) {
            throw asBadInput(file, e);
        }
    }

    private static NpyHeader header(Path file) throws BadInputException {
        try {
            return NpyReader.readHeader(file);
        } catch (IOException e) {
            throw asBadInput(file, e);
        }
    }

    /** NpyFormatException messages already name the file; others get it prefixed. */
    private static BadInputException asBadInput(Path file, IOException e) {
        String m = String.valueOf(e.getMessage());
        String prefix = file + ": ";
        String problem = m.startsWith(prefix) ? m.substring(prefix.length()) : describe(e);
        return new BadInputException(file, problem, e);
    }

    private static String describe(IOException e) {
        if (e instanceof NoSuchFileException) {
            return "no such file";
        }
        if (e instanceof AccessDeniedException) {
            return "permission denied";
        }
        return "cannot read: " + e.getMessage();
    }
}
