package io.minato.workload.kits19;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.minato.data.BadInputException;
import io.minato.spi.Shape3;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CaseCacheTest {
    private static final Shape3 SHAPE = new Shape3(12, 10, 14);
    private static final List<Component> COMPONENTS =
            List.of(
                    new Component(1, 0, 3, 1, 4, 2, 6, 17, 30),
                    new Component(2, 5, 9, 0, 2, 7, 9, 5, 851));

    @TempDir Path data;
    @TempDir Path cacheDir;

    @BeforeEach
    @AfterEach
    void forget() {
        CaseCache.clearMemory();
    }

    /**
     * Entry files are named in ASCII: under the C locale (LANG unset, as in many containers) the
     * JVM cannot make a path of other characters, and a case named so stopped the run with Java's
     * trace.
     */
    @Test
    void shouldNameEntryFilesInAsciiWhateverTheCaseIsCalled() {
        assertThat(CaseCache.entryName("case_00003", "components"))
                .as("plain names as before: older entries stay valid")
                .isEqualTo("case_00003.components");
        String accented = CaseCache.entryName("case_0000\u00e93", "check");
        assertThat(accented).matches("case_0000_3-[0-9a-f]+\\.check");
        assertThat(CaseCache.entryName("case_0000\u00e83", "check"))
                .as("two names that read alike in ASCII stay apart")
                .isNotEqualTo(accented);
    }

    @Test
    void shouldRememberComponentsOnDiskForTheNextProcess() throws Exception {
        CaseFiles c = writeCase("case_00000");
        CaseCache cache = CaseCache.at(cacheDir);
        CaseCache.Counters counters = new CaseCache.Counters();
        CaseMemo memo = cache.memo(c, counters);
        assertThat(memo.foregroundComponents()).isNull();
        memo.rememberForegroundComponents(COMPONENTS);
        assertThat(memo.foregroundComponents()).isEqualTo(COMPONENTS);
        assertThat(cacheDir.resolve("case_00000.components")).exists();

        CaseCache.clearMemory(); // as a new JVM would start
        CaseCache.Counters later = new CaseCache.Counters();
        assertThat(CaseCache.at(cacheDir).memo(c, later).foregroundComponents())
                .isEqualTo(COMPONENTS);
        assertThat(counters.misses()).isEqualTo(1);
        assertThat(counters.hits()).isEqualTo(1);
        assertThat(later.hits()).isEqualTo(1);
        assertThat(CaseCache.memoryBytes()).isPositive();
    }

    @Test
    void shouldForgetWhatItKnewOfAFileThatChanged() throws Exception {
        CaseFiles c = rememberedCase();
        Files.setLastModifiedTime(
                c.label(),
                FileTime.fromMillis(Files.getLastModifiedTime(c.label()).toMillis() + 5000));
        assertThat(CaseCache.at(cacheDir).memo(c, new CaseCache.Counters()).foregroundComponents())
                .as("in memory")
                .isNull();
        CaseCache.clearMemory();
        assertThat(CaseCache.at(cacheDir).memo(c, new CaseCache.Counters()).foregroundComponents())
                .as("on disk")
                .isNull();
    }

    @Test
    void shouldTreatACorruptEntryAsAMissAndOverwriteIt() throws Exception {
        CaseFiles c = rememberedCase();
        Path entry = cacheDir.resolve("case_00000.components");
        byte[] bytes = Files.readAllBytes(entry);
        bytes[bytes.length - 12] ^= 0x40; // a payload byte: the checksum no longer matches
        Files.write(entry, bytes);
        CaseCache.clearMemory();
        CaseMemo memo = CaseCache.at(cacheDir).memo(c, new CaseCache.Counters());
        assertThat(memo.foregroundComponents()).isNull();
        Files.write(entry, new byte[] {1, 2, 3}); // truncated
        CaseCache.clearMemory();
        assertThat(memo.foregroundComponents()).isNull();
        memo.rememberForegroundComponents(COMPONENTS);
        CaseCache.clearMemory();
        assertThat(memo.foregroundComponents()).isEqualTo(COMPONENTS);
    }

    @Test
    void shouldSayInOneLineThatAFolderCannotBeWrittenAndGoOnFromMemory() throws Exception {
        CaseFiles c = writeCase("case_00000");
        Path notAFolder = Files.writeString(cacheDir.resolve("file"), "x");
        CaseMemo memo = CaseCache.at(notAFolder.resolve("cache")).memo(c, new CaseCache.Counters());
        String err =
                stderrOf(
                        () -> {
                            memo.rememberForegroundComponents(COMPONENTS);
                            memo.rememberForegroundComponents(COMPONENTS);
                        });
        assertThat(err.lines()).hasSize(1);
        assertThat(err).startsWith("warning: cannot write the case cache ").contains("file/cache");
        assertThat(memo.foregroundComponents()).isEqualTo(COMPONENTS);
    }

    @Test
    void shouldRememberNothingWhenDisabled() throws Exception {
        CaseFiles c = writeCase("case_00000");
        CaseMemo memo = CaseCache.disabled().memo(c, new CaseCache.Counters());
        memo.rememberForegroundComponents(COMPONENTS);
        assertThat(memo.foregroundComponents()).isNull();
        assertThat(CaseCache.disabled().enabled()).isFalse();
    }

    @Test
    void shouldRecallAPassedCheckOfTheSameFilesAndCheckAChangedFileAgain() throws Exception {
        CaseFiles c = writeCase("case_00000");
        CaseCache cache = CaseCache.at(cacheDir);
        CaseInfo first = cache.check(c, Shape3.cube(8));
        assertThat(cacheDir.resolve("case_00000.check")).exists();

        // A NaN written in place with the modification time put back: the files look the same,
        // so the check is recalled, not redone (the identity is path, size, time, file key).
        FileTime time = Files.getLastModifiedTime(c.image());
        poisonFirstVoxel(c.image());
        Files.setLastModifiedTime(c.image(), time);
        CaseCache.clearMemory();
        assertThat(cache.check(c, Shape3.cube(8))).isEqualTo(first);
        // The patch is checked every time: it is not a fact of the files.
        assertThatThrownBy(() -> cache.check(c, Shape3.cube(13)))
                .isInstanceOf(BadInputException.class)
                .hasMessageContaining("smaller than the patch");

        // Touched: the check runs again and finds the NaN.
        Files.setLastModifiedTime(c.image(), FileTime.fromMillis(time.toMillis() + 5000));
        assertThatThrownBy(() -> cache.check(c, Shape3.cube(8)))
                .isInstanceOf(BadInputException.class)
                .hasMessageContaining("case_00000_x.npy")
                .hasMessageContaining("intensity NaN");
        assertThat(CaseCache.disabled().check(writeCase("case_00001"), null).shape())
                .isEqualTo(SHAPE);
    }

    /** case_00000, written, with its foreground components remembered in the cache. */
    private CaseFiles rememberedCase() throws Exception {
        CaseFiles c = writeCase("case_00000");
        CaseCache.at(cacheDir)
                .memo(c, new CaseCache.Counters())
                .rememberForegroundComponents(COMPONENTS);
        return c;
    }

    private CaseFiles writeCase(String name) throws Exception {
        return SyntheticVolumes.write(data, name, SyntheticVolumes.blobs(SHAPE, 3));
    }

    private static void poisonFirstVoxel(Path npy) throws Exception {
        long dataStart = Files.size(npy) - SHAPE.voxels() * 4;
        try (FileChannel ch = FileChannel.open(npy, StandardOpenOption.WRITE)) {
            ByteBuffer nan = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
            nan.putFloat(Float.NaN).flip();
            ch.write(nan, dataStart);
        }
    }

    private static String stderrOf(Runnable r) {
        PrintStream saved = System.err;
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        System.setErr(new PrintStream(bytes, true, StandardCharsets.UTF_8));
        try {
            r.run();
        } finally {
            System.setErr(saved);
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }
}
