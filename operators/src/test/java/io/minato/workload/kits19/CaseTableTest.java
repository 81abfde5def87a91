package io.minato.workload.kits19;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.minato.data.BadInputException;
import io.minato.spi.Shape3;
import java.nio.FloatBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CaseTableTest {
    private static final Shape3 SHAPE = new Shape3(24, 40, 40);

    /** Keeps the reads and allocations below from being optimised away. */
    private static volatile float sink;

    @Test
    void shouldFindNothingChangedWhileTheFilesStayAsMapped(@TempDir Path dir) throws Exception {
        CaseTable table = BlobCases.write(dir, SHAPE, 11, 2).table();
        table.checkUnchanged(0); // nothing mapped yet: nothing to check
        float[] row = new float[40];
        table.volume(0).image().get(0, row);
        table.volume(1).label().get(7);
        assertThatCode(
                        () -> {
                            table.checkUnchanged(0);
                            table.checkUnchanged(1);
                        })
                .doesNotThrowAnyException();
    }

    /**
     * A case file truncated under its mapping: on Java 17 the fault of a read in compiled code
     * stays pending on the thread, to be thrown at its next call into the JVM (in a run: anywhere
     * in Flink, which then stops the process). The check names the file in one line and takes the
     * pending fault, so that nothing is left to surface later.
     */
    @Test
    void shouldNameATruncatedFileAndLeaveNoFaultPendingAfterTheRead(@TempDir Path dir)
            throws Exception {
        CaseTable table = BlobCases.write(dir, SHAPE, 12, 1).table();
        FloatBuffer image = table.volume(0).image();
        float[] row = new float[40];
        int last = image.limit() - row.length;
        table.checkUnchanged(0);
        for (int i = 0; i < 50_000; i++) { // compiled, as a worker's crop is
            sink += copyRow(image, (i * 97) % last, row);
        }
        Path file = table.files(0).image();
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
            channel.truncate(200); // the header only
        }
        try {
            sink += copyRow(image, last, row); // beyond the end now: faults
        } catch (InternalError thrownAtOnce) {
            // newer JVMs throw it here
        }
        // No call into the JVM between the read and the check, as in a worker: a direct call
        // (resolved above), not a lambda, whose first creation would take the fault itself.
        BadInputException changed = null;
        try {
            table.checkUnchanged(0);
        } catch (BadInputException e) {
            changed = e;
        }
        assertThat(changed)
                .isNotNull()
                .hasMessageStartingWith(file.toString())
                .hasMessageContaining("changed while the run read it")
                .hasMessageNotContaining("\n");
        assertThatCode(
                        () -> {
                            for (int i = 0; i < 4; i++) {
                                sink += new byte[64 << 20].length;
                            }
                        })
                .doesNotThrowAnyException();
    }

    private static float copyRow(FloatBuffer image, int at, float[] row) {
        image.get(at, row);
        return row[0];
    }

    @Test
    void shouldNameAFileRewrittenInPlaceOrReplacedOrDeleted(@TempDir Path dir) throws Exception {
        CaseTable table = BlobCases.write(dir, SHAPE, 13, 3).table();
        for (int c = 0; c < 3; c++) {
            table.volume(c);
        }
        Path touched = table.files(0).label();
        Files.setLastModifiedTime(touched, FileTime.fromMillis(12_345_000L));
        Path replaced = table.files(1).image();
        Path copy = dir.resolve("copy.npy");
        Files.copy(replaced, copy);
        Files.move(copy, replaced, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        Files.delete(table.files(2).label());
        for (int c = 0; c < 3; c++) {
            int caseIndex = c;
            assertThatThrownBy(() -> table.checkUnchanged(caseIndex))
                    .as("case %d", c)
                    .isInstanceOf(BadInputException.class)
                    .hasMessageStartingWith(table.files(c).image().toString())
                    .hasMessageContaining("changed while the run read it");
        }
        // A new table (a new run) maps the files as they are now.
        CaseTable next = new CaseTable(java.util.List.of(table.files(0)));
        next.volume(0);
        assertThatCode(() -> next.checkUnchanged(0)).doesNotThrowAnyException();
    }

    @Test
    void shouldNameTheFileWhenACaseCannotBeMapped(@TempDir Path dir) throws Exception {
        CaseTable table = BlobCases.write(dir, SHAPE, 14, 1).table();
        Files.delete(table.files(0).image());
        assertThatThrownBy(() -> table.volume(0))
                .isInstanceOf(BadInputException.class)
                .hasMessageStartingWith(table.files(0).image().toString())
                .hasMessageNotContaining("\n");
        assertThat(table.size()).isEqualTo(1);
    }
}
