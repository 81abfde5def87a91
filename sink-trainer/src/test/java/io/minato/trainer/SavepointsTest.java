package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SavepointsTest {

    @Test
    void shouldListTheRunsSavepointsThatExistHereOldestFirstAndSayWhichOneStoppedIt(
            @TempDir Path dir) throws Exception {
        Path run = Files.createDirectories(dir.resolve("run"));
        Path first = Files.createDirectories(dir.resolve("sp/savepoint-aa-1"));
        Path second = Files.createDirectories(dir.resolve("other/savepoint-bb-2"));
        assertThat(Savepoints.recorded(run)).isEmpty();
        assertThat(Savepoints.stoppedWith(run)).isNull();

        Savepoints.completed(run, first.toUri(), false);
        assertThat(Savepoints.stoppedWith(run)).isNull();
        Savepoints.completed(run, URI.create("s3://bucket/savepoint-cc-3"), false);
        Savepoints.completed(run, dir.resolve("gone/savepoint-dd-4").toUri(), false);
        // Flink writes local folders as file:/path, one slash.
        Savepoints.completed(run, URI.create("file:" + second), true);
        Files.writeString(
                run.resolve(Savepoints.LIST),
                "not a uri at all: \\\n",
                java.nio.file.StandardOpenOption.APPEND);

        assertThat(Savepoints.recorded(run)).containsExactly(first, second);
        assertThat(Savepoints.stoppedWith(run)).isEqualTo("file:" + second);
        Savepoints.resumed(run);
        assertThat(Savepoints.stoppedWith(run)).isNull();
        assertThat(Savepoints.recorded(run)).containsExactly(first, second);
    }
}
