package io.minato.job;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collection;
import java.util.Optional;
import java.util.Set;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Collectors;
import org.apache.flink.api.common.externalresource.ExternalResourceDriver;
import org.apache.flink.api.common.externalresource.ExternalResourceDriverFactory;
import org.apache.flink.api.common.externalresource.ExternalResourceInfo;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;

/**
 * An external resource driver for a TaskManager without GPUs: it reports the GPU indices its {@code
 * indices} parameter lists ({@code external-resource.gpu.param.indices: 5,3}), each as Flink's GPU
 * driver reports one (an {@code index} property), where that driver would list what nvidia-smi
 * finds. Loaded as Flink loads drivers: from a plugin folder ({@link #writePlugin}).
 */
public final class ListedGpuDriverFactory implements ExternalResourceDriverFactory {

    @Override
    public ExternalResourceDriver createExternalResourceDriver(Configuration config) {
        String indices = config.get(ConfigOptions.key("indices").stringType().noDefaultValue());
        if (indices == null) {
            throw new IllegalArgumentException("external-resource.gpu.param.indices is not set");
        }
        return amount ->
                Arrays.stream(indices.split(","))
                        .limit(amount)
                        .map(i -> new Gpu(i.strip()))
                        .collect(Collectors.toSet());
    }

    private record Gpu(String index) implements ExternalResourceInfo {
        @Override
        public Optional<String> getProperty(String key) {
            return key.equals("index") ? Optional.of(index) : Optional.empty();
        }

        @Override
        public Collection<String> getKeys() {
            return Set.of("index");
        }
    }

    /** Writes a plugin folder ({@code plugins/<name>/} in a Flink distribution) holding this. */
    static void writePlugin(Path dir) throws IOException {
        Files.createDirectories(dir);
        try (JarOutputStream jar =
                new JarOutputStream(Files.newOutputStream(dir.resolve("listed-gpus.jar")))) {
            for (Class<?> c : new Class<?>[] {ListedGpuDriverFactory.class, Gpu.class}) {
                String name = c.getName().replace('.', '/') + ".class";
                jar.putNextEntry(new JarEntry(name));
                try (var in = c.getClassLoader().getResourceAsStream(name)) {
                    in.transferTo(jar);
                }
                jar.closeEntry();
            }
            // The lambda above compiles into this class itself; nothing else to copy.
            jar.putNextEntry(
                    new JarEntry(
                            "META-INF/services/" + ExternalResourceDriverFactory.class.getName()));
            OutputStream out = jar;
            out.write(
                    (ListedGpuDriverFactory.class.getName() + "\n")
                            .getBytes(StandardCharsets.UTF_8));
            jar.closeEntry();
        }
    }
}
