package io.minato.job;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.JarURLConnection;
import java.net.URL;
import java.net.URLConnection;
import java.net.UnknownHostException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Iterator;
import java.util.Locale;
import java.util.ServiceLoader;
import java.util.jar.JarEntry;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.classloading.SubmoduleClassLoader;
import org.apache.flink.runtime.rpc.AddressResolution;
import org.apache.flink.runtime.rpc.RpcSystem;
import org.apache.flink.runtime.rpc.RpcSystemLoader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads Flink's Pekko RPC system as Flink's own loader does, from the {@code flink-rpc-akka.jar}
 * that {@code flink-rpc-akka-loader} carries inside itself, but unpacks that jar (24 MB,
 * compressed) once per Flink version into the user's cache folder instead of into a new temporary
 * file at every start: inflating it took 0.37 s of every embedded cluster's start (a wall-clock
 * profile of {@code scripts/run train}), on the path to the first sample.
 *
 * <p>Registered as an {@link RpcSystemLoader} service ahead of Flink's (priority -1 against 0). The
 * cached copy is named by the entry's CRC and size, written under a temporary name and moved into
 * place, so runs side by side and a run killed while writing it never load a partial jar. Where the
 * cache cannot be written (or the jar is not found as an entry of a jar), this loader fails and
 * Flink's own runs next, as before.
 */
public final class CachedRpcSystemLoader implements RpcSystemLoader {
    private static final Logger LOG = LoggerFactory.getLogger(CachedRpcSystemLoader.class);

    /** The resource Flink's {@code PekkoRpcSystemLoader} unpacks. */
    static final String RPC_JAR = "flink-rpc-akka.jar";

    private final Path cacheDir;

    /** Caches in {@link #cacheDir()}: how Flink's service loading creates it. */
    public CachedRpcSystemLoader() {
        this(cacheDir());
    }

    CachedRpcSystemLoader(Path cacheDir) {
        this.cacheDir = cacheDir;
    }

    @Override
    public int getLoadPriority() {
        return -1;
    }

    @Override
    public RpcSystem loadRpcSystem(Configuration config) {
        ClassLoader flink = RpcSystem.class.getClassLoader();
        try {
            Path jar = unpacked(flink.getResource(RPC_JAR), cacheDir);
            SubmoduleClassLoader loader =
                    new SubmoduleClassLoader(new URL[] {jar.toUri().toURL()}, flink);
            Iterator<RpcSystem> systems = ServiceLoader.load(RpcSystem.class, loader).iterator();
            if (!systems.hasNext()) {
                loader.close();
                throw new IllegalStateException(jar + " holds no RPC system");
            }
            return new Cached(systems.next(), loader);
        } catch (IOException | RuntimeException e) {
            LOG.debug("Cannot load the RPC system from the cache; Flink's loader unpacks it", e);
            throw new IllegalStateException("no cached RPC system: " + e.getMessage(), e);
        }
    }

    /** {@code $XDG_CACHE_HOME/minato-flink}, else {@code ~/.cache/minato-flink}. */
    static Path cacheDir() {
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path base =
                xdg != null && !xdg.isBlank()
                        ? Path.of(xdg)
                        : Path.of(System.getProperty("user.home"), ".cache");
        return base.resolve("minato-flink");
    }

    /**
     * The jar that {@code resource} (an entry of a jar) holds, unpacked into {@code dir} unless it
     * is there already.
     */
    static Path unpacked(URL resource, Path dir) throws IOException {
        if (resource == null) {
            throw new IOException(RPC_JAR + " is not on the classpath");
        }
        URLConnection connection = resource.openConnection();
        if (!(connection instanceof JarURLConnection jarConnection)) {
            throw new IOException(resource + " is not an entry of a jar");
        }
        JarEntry entry = jarConnection.getJarEntry();
        if (entry.getSize() < 0 || entry.getCrc() < 0) {
            throw new IOException(resource + ": its size or checksum is not recorded");
        }
        Path target =
                dir.resolve(
                        String.format(
                                Locale.ROOT,
                                "flink-rpc-akka-%08x-%d.jar",
                                entry.getCrc(),
                                entry.getSize()));
        if (Files.isRegularFile(target) && Files.size(target) == entry.getSize()) {
            return target;
        }
        Files.createDirectories(dir);
        Path partial = Files.createTempFile(dir, "flink-rpc-akka", ".partial");
        try {
            try (InputStream in = jarConnection.getInputStream()) {
                Files.copy(in, partial, StandardCopyOption.REPLACE_EXISTING);
            }
            if (Files.size(partial) != entry.getSize()) {
                throw new IOException(resource + ": unpacked a different size than recorded");
            }
            try {
                Files.move(partial, target, StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(partial, target, StandardCopyOption.REPLACE_EXISTING);
            }
        } finally {
            Files.deleteIfExists(partial);
        }
        return target;
    }

    /** The RPC system; closing it closes its class loader and keeps the cached jar. */
    private record Cached(RpcSystem system, SubmoduleClassLoader loader) implements RpcSystem {
        @Override
        public RpcServiceBuilder localServiceBuilder(Configuration configuration) {
            return system.localServiceBuilder(configuration);
        }

        @Override
        public RpcServiceBuilder remoteServiceBuilder(
                Configuration configuration, String externalAddress, String externalPortRange) {
            return system.remoteServiceBuilder(configuration, externalAddress, externalPortRange);
        }

        @Override
        public String getRpcUrl(
                String hostname,
                int port,
                String endpointName,
                AddressResolution addressResolution,
                Configuration config)
                throws UnknownHostException {
            return system.getRpcUrl(hostname, port, endpointName, addressResolution, config);
        }

        @Override
        public InetSocketAddress getInetSocketAddressFromRpcUrl(String url) throws Exception {
            return system.getInetSocketAddressFromRpcUrl(url);
        }

        @Override
        public long getMaximumMessageSizeInBytes(Configuration config) {
            return system.getMaximumMessageSizeInBytes(config);
        }

        @Override
        public void close() {
            try {
                system.close();
            } finally {
                try {
                    loader.close();
                } catch (IOException e) {
                    LOG.warn("Could not close the RPC system's class loader", e);
                }
            }
        }
    }
}
