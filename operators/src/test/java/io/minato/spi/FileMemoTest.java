package io.minato.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Results remembered by a file's identity, within a bound, counted as hits and misses. */
class FileMemoTest {

    private static final String NAME = "test.lengths";

    @TempDir Path dir;

    @AfterEach
    void forget() {
        FileMemo.clear(NAME);
    }

    /** Remembers a file's content as a string: 100 bytes each beside the entry's overhead. */
    private static FileMemo<String> memo(long bound) {
        return FileMemo.<String>declare(NAME, s -> 100).withBound(bound);
    }

    private Path file(String name, String content) throws Exception {
        return Files.writeString(dir.resolve(name), content);
    }

    @Test
    void shouldMissOnceThenHitForEveryLaterLookupOfTheSameFile() throws Exception {
        FileMemo<String> memo = memo(1 << 20);
        Path a = file("a", "alpha");

        FileMemo.Lookup<String> first = memo.lookup(a);
        assertThat(first.value()).isNull();
        assertThat(first.remember("alpha")).isTrue();
        assertThat(memo.lookup(a).value()).isEqualTo("alpha");
        assertThat(memo.lookup(dir.resolve(".").resolve("a")).value())
                .as("the same file by another spelling of its path")
                .isEqualTo("alpha");

        MemoStats stats = memo.stats();
        assertThat(stats.hits()).isEqualTo(2);
        assertThat(stats.misses()).isEqualTo(1);
        assertThat(stats.bytes()).isEqualTo(100 + FileMemo.ENTRY_OVERHEAD);
    }

    @Test
    void shouldComputeAgainForAChangedOrReplacedFileAndNeverServeTheOldResult() throws Exception {
        FileMemo<String> memo = memo(1 << 20);
        Path a = file("a", "alpha");
        memo.lookup(a).remember("alpha");

        Files.writeString(a, "alphabet"); // another size
        FileMemo.Lookup<String> changed = memo.lookup(a);
        assertThat(changed.value()).isNull();
        assertThat(changed.remember("alphabet")).isTrue();
        assertThat(memo.lookup(a).value()).isEqualTo("alphabet");
        assertThat(memo.stats().bytes())
                .as("the old result's bytes are given back")
                .isEqualTo(100 + FileMemo.ENTRY_OVERHEAD);

        Files.setLastModifiedTime(a, FileTime.from(Instant.parse("2020-01-01T00:00:00Z")));
        assertThat(memo.lookup(a).value()).as("same size, another time").isNull();

        Path b = file("b", "bravo");
        Files.delete(a);
        Files.move(b, a); // another file (inode) under the same name
        assertThat(memo.lookup(a).value()).isNull();
    }

    @Test
    void shouldKeepWhatFitsAndAdmitNothingBeyondTheBound() throws Exception {
        long entry = 100 + FileMemo.ENTRY_OVERHEAD;
        FileMemo<String> memo = memo(2 * entry);
        Path a = file("a", "a");
        Path b = file("b", "b");
        Path c = file("c", "c");
        assertThat(memo.lookup(a).remember("a")).isTrue();
        assertThat(memo.lookup(b).remember("b")).isTrue();
        assertThat(memo.lookup(c).remember("c")).as("over the bound").isFalse();

        assertThat(memo.lookup(a).value()).isEqualTo("a");
        assertThat(memo.lookup(b).value()).isEqualTo("b");
        assertThat(memo.lookup(c).value()).isNull();
        assertThat(memo.stats().bytes()).isEqualTo(2 * entry);
    }

    @Test
    void shouldKeepTheFirstResultWhenTwoWorkersComputedTheSameFile() throws Exception {
        FileMemo<String> memo = memo(1 << 20);
        Path a = file("a", "alpha");
        FileMemo.Lookup<String> one = memo.lookup(a);
        FileMemo.Lookup<String> two = memo.lookup(a);
        assertThat(one.remember("first")).isTrue();
        assertThat(two.remember("second")).isFalse();
        assertThat(memo.lookup(a).value()).isEqualTo("first");
        assertThat(memo.stats().bytes()).isEqualTo(100 + FileMemo.ENTRY_OVERHEAD);
    }

    @Test
    void shouldRememberNothingWhenDisabledOrTheFileCannotBeRead() throws Exception {
        Path a = file("a", "alpha");
        FileMemo<String> off = memo(1 << 20).disabled();
        assertThat(off.enabled()).isFalse();
        assertThat(off.lookup(a).remember("alpha")).isFalse();
        assertThat(off.lookup(a).value()).isNull();
        assertThat(off.stats().misses()).isEqualTo(2);

        FileMemo<String> on = memo(1 << 20);
        Path gone = dir.resolve("gone");
        FileMemo.Lookup<String> missing = on.lookup(gone);
        assertThat(missing.value()).isNull();
        assertThat(missing.remember("nothing")).isFalse();
        assertThat(on.stats().bytes()).isZero();
        assertThat(on.stats().misses()).isEqualTo(1);
    }

    @Test
    void shouldShareOneStorePerNameButCountEachUsersLookups() throws Exception {
        Path a = file("a", "alpha");
        FileMemo<String> worker = memo(1 << 20);
        FileMemo<String> other = roundTrip(worker); // another operator's copy of the job graph
        worker.lookup(a).remember("alpha");

        assertThat(other.lookup(a).value()).isEqualTo("alpha");
        assertThat(other.stats().hits()).isEqualTo(1);
        assertThat(other.stats().misses()).isZero();
        assertThat(worker.stats().hits()).isZero();
        assertThat(worker.stats().misses()).isEqualTo(1);
    }

    @Test
    void shouldBoundByAQuarterOfTheHeapUnlessToldAndRefuseANegativeBound() {
        FileMemo<String> auto = FileMemo.declare(NAME, s -> 1);
        assertThat(auto.enabled()).isTrue();
        assertThat(auto.boundBytes()).isEqualTo(Runtime.getRuntime().maxMemory() / 4);
        assertThat(auto.withBound(5).boundBytes()).isEqualTo(5);
        assertThatThrownBy(() -> auto.withBound(-1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("a memo's bound must be >= 0, not -1");
    }

    @SuppressWarnings("unchecked")
    private static <T> T roundTrip(T value) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(value);
        }
        try (ObjectInputStream in =
                new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            return (T) in.readObject();
        }
    }
}
