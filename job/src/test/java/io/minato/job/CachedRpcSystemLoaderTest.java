package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.OutputStream;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Random;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.zip.CRC32;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.rpc.RpcSystem;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CachedRpcSystemLoaderTest {
    @TempDir Path dir;

    @Test
    void shouldUnpackTheJarOnceAndReuseIt() throws Exception {
        byte[] inner = randomBytes(300_000);
        URL resource = entryOf(jarHolding(inner), CachedRpcSystemLoader.RPC_JAR);
        Path cache = dir.resolve("cache");

        Path first = CachedRpcSystemLoader.unpacked(resource, cache);
        assertThat(first.getFileName().toString())
                .isEqualTo(String.format("flink-rpc-akka-%08x-%d.jar", crc(inner), inner.length));
        assertThat(Files.readAllBytes(first)).isEqualTo(inner);
        Files.setLastModifiedTime(first, FileTime.fromMillis(1_000_000L));

        Path second = CachedRpcSystemLoader.unpacked(resource, cache);
        assertThat(second).isEqualTo(first);
        assertThat(Files.getLastModifiedTime(second).toMillis())
                .as("reused, not written again")
                .isEqualTo(1_000_000L);
        try (var files = Files.list(cache)) {
            assertThat(files).as("no partial file left").containsExactly(first);
        }
    }

    @Test
    void shouldReplaceACachedCopyOfTheWrongSize() throws Exception {
        byte[] inner = randomBytes(50_000);
        URL resource = entryOf(jarHolding(inner), CachedRpcSystemLoader.RPC_JAR);
        Path cache = dir.resolve("cache");
        Path target = CachedRpcSystemLoader.unpacked(resource, cache);
        Files.write(target, new byte[] {1, 2, 3}); // cut short by hand

        assertThat(CachedRpcSystemLoader.unpacked(resource, cache)).isEqualTo(target);
        assertThat(Files.readAllBytes(target)).isEqualTo(inner);
    }

    @Test
    void shouldRefuseWhatIsNotAnEntryOfAJar() throws Exception {
        Path plain = Files.write(dir.resolve("flink-rpc-akka.jar"), randomBytes(10));
        assertThatThrownBy(() -> CachedRpcSystemLoader.unpacked(plain.toUri().toURL(), dir))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("not an entry of a jar");
        assertThatThrownBy(() -> CachedRpcSystemLoader.unpacked(null, dir))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("not on the classpath");
    }

    @Test
    void shouldFailWhereTheCacheCannotBeWrittenSoThatFlinksLoaderRuns() throws Exception {
        Path file = Files.writeString(dir.resolve("a-file"), "in the way");
        CachedRpcSystemLoader loader = new CachedRpcSystemLoader(file.resolve("cache"));
        assertThatThrownBy(() -> loader.loadRpcSystem(new Configuration()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("no cached RPC system: ");
    }

    @Test
    void shouldLoadFlinksRpcSystemAndKeepTheJarWhenClosed() throws Exception {
        Path cache = dir.resolve("cache");
        RpcSystem system = new CachedRpcSystemLoader(cache).loadRpcSystem(new Configuration());
        try {
            assertThat(system.getMaximumMessageSizeInBytes(new Configuration())).isPositive();
        } finally {
            system.close();
        }
        try (var files = Files.list(cache)) {
            assertThat(files).singleElement().satisfies(f -> assertThat(f).isRegularFile());
        }
    }

    @Test
    void shouldBeTheLoaderFlinkPicks() throws Exception {
        RpcSystem system = RpcSystem.load(new Configuration());
        try {
            assertThat(system.getClass().getName())
                    .isEqualTo(CachedRpcSystemLoader.class.getName() + "$Cached");
        } finally {
            system.close();
        }
    }

    private Path jarHolding(byte[] inner) throws IOException {
        Path jar = dir.resolve("loader.jar");
        try (OutputStream out = Files.newOutputStream(jar);
                JarOutputStream j = new JarOutputStream(out)) {
            j.putNextEntry(new JarEntry(CachedRpcSystemLoader.RPC_JAR));
            j.write(inner);
            j.closeEntry();
        }
        return jar;
    }

    private static URL entryOf(Path jar, String entry) throws IOException {
        return new URL("jar:" + jar.toUri() + "!/" + entry);
    }

    private static byte[] randomBytes(int n) {
        byte[] b = new byte[n];
        new Random(n).nextBytes(b);
        return b;
    }

    private static long crc(byte[] b) {
        CRC32 c = new CRC32();
        c.update(b);
        return c.getValue();
    }
}
