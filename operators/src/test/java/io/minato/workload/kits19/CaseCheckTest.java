package io.minato.workload.kits19;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.minato.data.BadInputException;
import io.minato.data.EpochOrder;
import io.minato.npy.DType;
import io.minato.npy.NpyWriter;
import io.minato.spi.Shape3;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.assertj.core.api.AbstractThrowableAssert;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CaseCheckTest {
    private static final long[] SHAPE = {1, 4, 5, 6};
    private static final Shape3 PATCH = Shape3.cube(4);

    @TempDir Path dir;

    @Test
    void shouldOpenAGoodCaseAsAMappedVolumeAndCountItsForeground() throws Exception {
        CaseFiles c = writeCase("case_00000", image(), label());
        CaseInfo info = CaseCheck.check(c, PATCH);
        assertThat(info.shape()).isEqualTo(new Shape3(4, 5, 6));
        assertThat(info.kidneyVoxels()).isEqualTo(2);
        assertThat(info.tumourVoxels()).isEqualTo(1);
        Volume v = CaseCheck.open(c);
        assertThat(v.image().get(7)).isEqualTo(7f);
        assertThat(v.label().get(3)).isEqualTo((byte) 2);
    }

    @Test
    void shouldPairImagesAndLabelsByName() throws Exception {
        writeCase("case_00001", image(), label());
        writeCase("case_00000", image(), label());
        Files.writeString(dir.resolve("README.txt"), "not a case");
        Dataset d = Dataset.scan(dir);
        assertThat(d.cases())
                .extracting(CaseFiles::name)
                .containsExactly("case_00000", "case_00001");
        assertThat(d.split(1).train()).extracting(CaseFiles::name).containsExactly("case_00000");
        assertThat(d.split(1).eval()).extracting(CaseFiles::name).containsExactly("case_00001");
    }

    @Test
    void shouldRefuseAnImageWithoutItsLabel() throws Exception {
        writeCase("case_00000", image(), label());
        NpyWriter.writeFloat32(dir.resolve("case_00001_x.npy"), SHAPE, image());
        expectBadInput(
                () -> Dataset.scan(dir), "case_00001_x.npy", "has no label case_00001_y.npy");
    }

    @Test
    void shouldRefuseALabelWithoutItsImage() throws Exception {
        NpyWriter.writeUint8(dir.resolve("case_00003_y.npy"), SHAPE, label());
        expectBadInput(() -> Dataset.scan(dir), "case_00003_y.npy", "has no image");
    }

    @Test
    void shouldRefuseAMissingOrEmptyFolder() throws Exception {
        expectBadInput(() -> Dataset.scan(dir.resolve("nope")), "nope", "no such folder");
        expectBadInput(() -> Dataset.scan(dir), dir.getFileName().toString(), "no case_*_x.npy");
    }

    @Test
    void shouldRefuseShapesThatDifferBetweenImageAndLabel() throws Exception {
        CaseFiles c = writeCase("case_00000", image(), label());
        NpyWriter.writeUint8(c.label(), new long[] {1, 4, 6, 5}, label());
        expectBadInput(
                () -> CaseCheck.check(c, PATCH), "case_00000_y.npy", "differs from the image's");
    }

    @Test
    void shouldRefuseATruncatedFile() throws Exception {
        CaseFiles c = writeCase("case_00000", image(), label());
        try (FileChannel ch = FileChannel.open(c.image(), StandardOpenOption.WRITE)) {
            ch.truncate(ch.size() - 9);
        }
        expectBadInput(() -> CaseCheck.open(c), "case_00000_x.npy", "the file holds");
    }

    @Test
    void shouldRefuseAMalformedHeader() throws Exception {
        CaseFiles c = writeCase("case_00000", image(), label());
        Files.write(
                c.image(),
                "\u0093NUMPY garbage".getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
        expectBadInput(() -> CaseCheck.check(c, PATCH), "case_00000_x.npy", "");
    }

    @Test
    void shouldRefuseAnImageThatIsNotFloat32() throws Exception {
        CaseFiles c = writeCase("case_00000", image(), label());
        ByteBuffer doubles = ByteBuffer.allocate(120 * 8).order(ByteOrder.LITTLE_ENDIAN);
        NpyWriter.write(c.image(), DType.FLOAT64, SHAPE, doubles);
        expectBadInput(
                () -> CaseCheck.check(c, PATCH), "case_00000_x.npy", "dtype <f8, expected f4");
    }

    @Test
    void shouldRefuseAShapeThatIsNotOneByDepthHeightWidth() throws Exception {
        CaseFiles c = writeCase("case_00000", image(), label());
        NpyWriter.writeFloat32(c.image(), new long[] {4, 5, 6}, image());
        expectBadInput(
                () -> CaseCheck.check(c, PATCH), "case_00000_x.npy", "expected (1, D, H, W)");
    }

    @Test
    void shouldRefuseALabelVolumeWithNoForeground() throws Exception {
        CaseFiles c = writeCase("case_00000", image(), new byte[120]);
        expectBadInput(() -> CaseCheck.check(c, PATCH), "case_00000_y.npy", "no foreground");
    }

    @Test
    void shouldRefuseLabelsOutsideTheThreeClasses() throws Exception {
        byte[] label = label();
        label[50] = 7;
        CaseFiles c = writeCase("case_00000", image(), label);
        expectBadInput(
                () -> CaseCheck.check(c, PATCH),
                "case_00000_y.npy",
                "label 7 at voxel (0, 1, 3, 2)");
    }

    @Test
    void shouldRefuseNaNAndInfiniteIntensitiesNamingTheVoxel() throws Exception {
        float[] nan = image();
        nan[31] = Float.NaN;
        CaseFiles c = writeCase("case_00000", nan, label());
        expectBadInput(
                () -> CaseCheck.check(c, PATCH),
                "case_00000_x.npy",
                "intensity NaN at voxel (0, 1, 0, 1)");
        float[] inf = image();
        inf[119] = Float.NEGATIVE_INFINITY;
        CaseFiles d = writeCase("case_00001", inf, label());
        expectBadInput(() -> CaseCheck.check(d, PATCH), "case_00001_x.npy", "intensity -Infinity");
    }

    @Test
    void shouldRefuseAVolumeSmallerThanThePatch() throws Exception {
        CaseFiles c = writeCase("case_00000", image(), label());
        expectBadInput(
                () -> CaseCheck.check(c, Shape3.cube(5)),
                "case_00000_x.npy",
                "smaller than the patch 5x5x5");
        assertThat(CaseCheck.check(c, null).shape()).isEqualTo(new Shape3(4, 5, 6));
    }

    @Test
    void shouldNameAMissingFile() throws Exception {
        CaseFiles c = writeCase("case_00000", image(), label());
        Files.delete(c.label());
        expectBadInput(() -> CaseCheck.open(c), "case_00000_y.npy", "no such file");
    }

    @Test
    void shouldShuffleEachEpochDeterministicallyIntoAPermutation() {
        int[] a = EpochOrder.permutation(7, 0, 50);
        assertThat(a).containsExactlyInAnyOrder(java.util.stream.IntStream.range(0, 50).toArray());
        assertThat(EpochOrder.permutation(7, 0, 50)).isEqualTo(a);
        assertThat(EpochOrder.permutation(7, 1, 50)).isNotEqualTo(a);
        assertThat(EpochOrder.permutation(8, 0, 50)).isNotEqualTo(a);
    }

    interface BadInputCall {
        Object call() throws Exception;
    }

    private static void expectBadInput(BadInputCall call, String file, String problem) {
        AbstractThrowableAssert<?, ? extends Throwable> t =
                assertThatThrownBy(call::call).isInstanceOf(BadInputException.class);
        t.hasMessageContaining(file).hasMessageContaining(problem);
        t.satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
    }

    private CaseFiles writeCase(String name, float[] image, byte[] label) throws IOException {
        Path x = dir.resolve(name + "_x.npy");
        Path y = dir.resolve(name + "_y.npy");
        NpyWriter.writeFloat32(x, SHAPE, image);
        NpyWriter.writeUint8(y, SHAPE, label);
        return new CaseFiles(name, x, y);
    }

    private static float[] image() {
        float[] f = new float[120];
        for (int i = 0; i < f.length; i++) {
            f[i] = i;
        }
        return f;
    }

    private static byte[] label() {
        byte[] b = new byte[120];
        b[2] = 1;
        b[3] = 2;
        b[4] = 1;
        return b;
    }
}
