package io.minato.workload.images;

import java.awt.image.BufferedImage;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.ServiceLoader;
import javax.imageio.ImageReader;
import javax.imageio.spi.IIORegistry;
import javax.imageio.spi.ImageReaderSpi;
import javax.imageio.spi.ServiceRegistry;
import javax.imageio.stream.ImageInputStream;

/**
 * The image decoders the loader uses: the JDK's own (PNG, BMP, GIF, TIFF, JPEG) and the ImageIO
 * plugins that come with the job (TwelveMonkeys: JPEG in CMYK and YCCK with their colours, WebP,
 * PPM/PGM), in a registry of the job's own rather than ImageIO's JVM-wide one.
 *
 * <p>ImageIO's registry finds plugins once, through the class loader of whichever thread first
 * touches it; in a TaskManager that is Flink's, which does not see the job jar, and plugins
 * registered from one job's class loader would outlive that job in every later one. A registry
 * built from this class's loader sees exactly the job's plugins, wherever the job runs.
 */
public final class ImageCodecs {
    private static final ServiceRegistry REGISTRY = registry();

    private ImageCodecs() {}

    private static ServiceRegistry registry() {
        ServiceRegistry registry =
                new ServiceRegistry(List.<Class<?>>of(ImageReaderSpi.class).iterator());
        // The JDK's readers first: TwelveMonkeys' JPEG reader finds the JDK's as its delegate
        // when it is registered, and orders itself before it.
        Iterator<ImageReaderSpi> builtIn =
                IIORegistry.getDefaultInstance().getServiceProviders(ImageReaderSpi.class, false);
        while (builtIn.hasNext()) {
            ImageReaderSpi spi = builtIn.next();
            if ("java.desktop".equals(spi.getClass().getModule().getName())) {
                registry.registerServiceProvider(spi, ImageReaderSpi.class);
            }
        }
        for (ImageReaderSpi spi :
                ServiceLoader.load(ImageReaderSpi.class, ImageCodecs.class.getClassLoader())) {
            registry.registerServiceProvider(spi, ImageReaderSpi.class);
        }
        return registry;
    }

    /** The suffixes of the formats these decoders read, lower case (for the docs and tests). */
    public static List<String> suffixes() {
        List<String> suffixes = new ArrayList<>();
        REGISTRY.getServiceProviders(ImageReaderSpi.class, true)
                .forEachRemaining(
                        spi -> {
                            for (String s : spi.getFileSuffixes()) {
                                suffixes.add(s.toLowerCase(java.util.Locale.ROOT));
                            }
                        });
        return suffixes;
    }

    /**
     * A reader for the image in {@code in} (judged by its bytes, not its name), its input set; null
     * when no decoder knows the format. The caller disposes of it.
     */
    public static ImageReader reader(ImageInputStream in) throws IOException {
        Iterator<ImageReaderSpi> spis = REGISTRY.getServiceProviders(ImageReaderSpi.class, true);
        while (spis.hasNext()) {
            ImageReaderSpi spi = spis.next();
            in.mark();
            boolean decodes;
            try {
                decodes = spi.canDecodeInput(in);
            } finally {
                in.reset();
            }
            if (decodes) {
                ImageReader reader = spi.createReaderInstance();
                reader.setInput(in, true, true);
                return reader;
            }
        }
        return null;
    }

    /** The first image in {@code in}; null when no decoder knows the format. */
    public static BufferedImage read(ImageInputStream in) throws IOException {
        ImageReader reader = reader(in);
        if (reader == null) {
            return null;
        }
        try {
            return reader.read(0, reader.getDefaultReadParam());
        } finally {
            reader.dispose();
        }
    }
}
