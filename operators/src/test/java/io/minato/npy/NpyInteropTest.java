package io.minato.npy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.function.LongToDoubleFunction;
import org.junit.jupiter.api.Test;

/** Reads files written by NumPy itself (see resources/npy/make_fixtures.py). */
class NpyInteropTest {

    private static NpyArray fixture(String name) throws IOException {
        try {
            return NpyReader.map(Path.of(NpyInteropTest.class.getResource("/npy/" + name).toURI()));
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Every fixture of shape (2, 3, 4) holds f(12*i + 4*j + k) at a[i, j, k]. */
    private static void assertHoldsBase(NpyArray array, LongToDoubleFunction f) {
        assertThat(array.shape()).containsExactly(2, 3, 4);
        for (int i = 0; i < 2; i++) {
            for (int j = 0; j < 3; j++) {
                for (int k = 0; k < 4; k++) {
                    assertThat(array.getDouble(array.flatIndex(i, j, k)))
                            .as("%s[%d, %d, %d]", array.path().getFileName(), i, j, k)
                            .isEqualTo(f.applyAsDouble(12 * i + 4 * j + k));
                }
            }
        }
    }

    @Test
    void shouldReadFloat32WrittenByNumpy() throws IOException {
        NpyArray a = fixture("float32.npy");

        assertThat(a.header().descr()).isEqualTo("<f4");
        assertHoldsBase(a, v -> v / 4.0);
        assertThat(a.floats().get(23)).isEqualTo(5.75f);
    }

    @Test
    void shouldReadFloat64WrittenByNumpy() throws IOException {
        NpyArray a = fixture("float64.npy");

        assertHoldsBase(a, v -> v / 8.0);
        assertThat(a.doubles().get(9)).isEqualTo(1.125);
    }

    @Test
    void shouldReadSignedIntegersWrittenByNumpy() throws IOException {
        assertHoldsBase(fixture("int8.npy"), v -> v - 12);
        assertHoldsBase(fixture("int16.npy"), v -> (v - 12) * 1000);
        assertHoldsBase(fixture("int32.npy"), v -> (v - 12) * 100_000);
        assertHoldsBase(fixture("int64.npy"), v -> (v - 12) * 1_000_000_000_000_000L);
        assertThat(fixture("int16.npy").shorts().get(0)).isEqualTo((short) -12000);
        assertThat(fixture("int32.npy").ints().get(0)).isEqualTo(-1_200_000);
        assertThat(fixture("int64.npy").longs().get(23)).isEqualTo(11_000_000_000_000_000L);
        assertThat(fixture("int8.npy").bytes().get(0)).isEqualTo((byte) -12);
    }

    @Test
    void shouldReadUnsignedIntegersWrittenByNumpyAsUnsigned() throws IOException {
        assertHoldsBase(fixture("uint8.npy"), v -> v * 10 + 10);
        assertHoldsBase(fixture("uint16.npy"), v -> v * 2500);
        assertHoldsBase(fixture("uint32.npy"), v -> v * 180_000_000L);

        NpyArray u8 = fixture("uint64.npy");
        assertThat(u8.shape()).containsExactly(4);
        assertThat(u8.getDouble(1)).isEqualTo(1);
        assertThat(u8.getDouble(2)).isEqualTo(0x1p63);
        assertThat(u8.getDouble(3)).isEqualTo(0x1p64);
        assertThat(u8.longs().get(3)).isEqualTo(-1L);
    }

    @Test
    void shouldReadBoolWrittenByNumpy() throws IOException {
        NpyArray a = fixture("bool.npy");

        assertThat(a.header().descr()).isEqualTo("|b1");
        assertHoldsBase(a, v -> v % 3 == 0 ? 1 : 0);
    }

    @Test
    void shouldConvertFloat16WrittenByNumpyIncludingSubnormalsAndSpecials() throws IOException {
        NpyArray a = fixture("float16.npy");
        double[] expected = {
            0,
            -0.0,
            1,
            -2,
            0.5,
            65504,
            0x1p-24,
            0x1p-14,
            Double.POSITIVE_INFINITY,
            Double.NEGATIVE_INFINITY
        };

        assertThat(a.dtype()).isEqualTo(DType.FLOAT16);
        for (int i = 0; i < expected.length; i++) {
            assertThat(a.getDouble(i)).as("element %d", i).isEqualTo(expected[i]);
        }
        assertThat(a.getDouble(expected.length)).isNaN();
        assertThat(1 / a.getDouble(1)).isEqualTo(Double.NEGATIVE_INFINITY);
    }

    @Test
    void shouldReadBigEndianFilesWrittenByNumpy() throws IOException {
        NpyArray f4 = fixture("float32_be.npy");
        NpyArray i2 = fixture("int16_be.npy");

        assertThat(f4.header().order()).isEqualTo(ByteOrder.BIG_ENDIAN);
        assertThat(f4.header().descr()).isEqualTo(">f4");
        assertThat(f4.buffer().order()).isEqualTo(ByteOrder.BIG_ENDIAN);
        assertHoldsBase(f4, v -> v / 4.0);
        assertThat(f4.floats().get(1)).isEqualTo(0.25f);
        assertHoldsBase(i2, v -> (v - 12) * 1000);
        assertThat(i2.shorts().get(23)).isEqualTo((short) 11000);
    }

    @Test
    void shouldIndexFortranOrderFilesWrittenByNumpy() throws IOException {
        NpyArray twoD = fixture("fortran_2d.npy");
        NpyArray threeD = fixture("fortran_3d.npy");

        assertThat(twoD.header().fortranOrder()).isTrue();
        assertThat(twoD.flatIndex(0, 1)).isEqualTo(2);
        assertThat(twoD.flatIndex(1, 0)).isEqualTo(1);
        assertThat(twoD.getDouble(twoD.flatIndex(1, 2))).isEqualTo(5);
        // Storage runs along the first axis: a[0,0,0], a[1,0,0], a[0,1,0], ...
        assertThat(threeD.floats().get(1)).isEqualTo(12f);
        assertThat(threeD.floats().get(2)).isEqualTo(4f);
        assertHoldsBase(threeD, v -> v);
    }

    @Test
    void shouldReadFormatVersions1And2And3WrittenByNumpy() throws IOException {
        for (int version = 1; version <= 3; version++) {
            NpyArray a = fixture("v" + version + ".npy");

            assertThat(a.header().version()).isEqualTo(version);
            assertThat(a.header().dataOffset() % 64).isZero();
            assertHoldsBase(a, v -> v);
        }
    }

    @Test
    void shouldReadZeroDimensionalAndEmptyArraysWrittenByNumpy() throws IOException {
        NpyArray scalar = fixture("scalar.npy");
        NpyArray empty = fixture("empty.npy");

        assertThat(scalar.shape()).isEmpty();
        assertThat(scalar.size()).isEqualTo(1);
        assertThat(scalar.getDouble(scalar.flatIndex())).isEqualTo(3.5);
        assertThat(empty.shape()).containsExactly(0);
        assertThat(empty.size()).isZero();
        assertThat(empty.floats().remaining()).isZero();
    }
}
