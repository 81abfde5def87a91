package io.minato.workload.images;

import io.minato.data.BadInputException;
import io.minato.data.FileNames;
import io.minato.spi.SampleSet;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeMap;
import javax.imageio.ImageReader;
import javax.imageio.stream.ImageInputStream;
import javax.imageio.stream.MemoryCacheImageInputStream;

/**
 * A folder of images in the usual classification layout, {@code DIR/class/image.ext}: one
 * sub-folder per class, classes numbered by their folder names in sorted order, images sorted by
 * name within a class. Files directly in a class folder whose extension is one of {@link
 * #EXTENSIONS} (any case) are images; hidden files and other files are ignored, deeper folders are
 * not read.
 */
public final class ImageFolder implements SampleSet<EncodedImage> {
    private static final long serialVersionUID = 1L;

    /**
     * The file types torchvision's ImageFolder takes, and GIF; {@link ImageCodecs} decodes them
     * all.
     */
    public static final Set<String> EXTENSIONS =
            Set.of("jpg", "jpeg", "png", "ppm", "bmp", "pgm", "tif", "tiff", "webp", "gif");

    /** Larger images are refused before decoding: 8-bit RGB of this many pixels is 192 MiB. */
    public static final long MAX_PIXELS = 64L << 20;

    private final String dir;
    private final List<String> classes;
    private final List<ImageFile> images;

    /** Images found whose names this JVM cannot write back: the scan's, not shipped. */
    private final transient List<BadInputException> unnamable;

    private ImageFolder(
            Path dir,
            List<String> classes,
            List<ImageFile> images,
            List<BadInputException> unnamable) {
        this.dir = dir.toString();
        this.classes = List.copyOf(classes);
        this.images = List.copyOf(images);
        this.unnamable = List.copyOf(unnamable);
    }

    /** These images of these classes (a subset of a scanned folder's, say). */
    public static ImageFolder of(Path dir, List<String> classes, List<ImageFile> images) {
        return new ImageFolder(dir, classes, images, List.of());
    }

    /**
     * Lists the classes and images of {@code dir}.
     *
     * @throws BadInputException the folder is missing, has no class folders, a class folder has no
     *     image, or a file name holds a line break (it could not be named in the trace)
     */
    public static ImageFolder scan(Path dir) throws BadInputException {
        if (!Files.isDirectory(dir)) {
            throw new BadInputException(
                    dir, "no such folder; give --data a folder of class folders of images");
        }
        TreeMap<String, Path> classDirs = new TreeMap<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
            for (Path e : entries) {
                String name = e.getFileName().toString();
                if (!name.startsWith(".") && Files.isDirectory(e)) {
                    classDirs.put(name, e);
                }
            }
        } catch (IOException e) {
            throw new BadInputException(dir, "cannot list the folder: " + e.getMessage(), e);
        }
        if (classDirs.isEmpty()) {
            throw new BadInputException(
                    dir, "no class folders; images go in DIR/<class>/<image>.jpg");
        }
        List<String> classes = new ArrayList<>(classDirs.keySet());
        List<ImageFile> images = new ArrayList<>();
        List<BadInputException> unnamable = new ArrayList<>();
        for (int label = 0; label < classes.size(); label++) {
            String cls = classes.get(label);
            Path classDir = classDirs.get(cls);
            TreeMap<String, Path> files = new TreeMap<>();
            int unnamableBefore = unnamable.size();
            try (DirectoryStream<Path> entries = Files.newDirectoryStream(classDir)) {
                for (Path f : entries) {
                    String name = f.getFileName().toString();
                    if (!name.startsWith(".") && isImageName(name) && Files.isRegularFile(f)) {
                        try {
                            FileNames.requireRepresentable(f.toAbsolutePath());
                            files.put(name, f);
                        } catch (BadInputException e) {
                            unnamable.add(e);
                        }
                    }
                }
            } catch (IOException e) {
                throw new BadInputException(
                        classDir, "cannot list the class folder: " + e.getMessage(), e);
            }
            if (files.isEmpty() && unnamable.size() == unnamableBefore) {
                throw new BadInputException(
                        classDir,
                        "class folder holds no image ("
                                + String.join(", ", new java.util.TreeSet<>(EXTENSIONS))
                                + ")");
            }
            for (var f : files.entrySet()) {
                String name = cls + "/" + f.getKey();
                if (name.indexOf('\n') >= 0 || name.indexOf('\r') >= 0) {
                    throw new BadInputException(
                            f.getValue(), "file name holds a line break; rename the file");
                }
                images.add(new ImageFile(f.getValue().toAbsolutePath().toString(), name, label));
            }
        }
        return new ImageFolder(dir, classes, images, unnamable);
    }

    static boolean isImageName(String name) {
        int dot = name.lastIndexOf('.');
        return dot > 0 && EXTENSIONS.contains(name.substring(dot + 1).toLowerCase(Locale.ROOT));
    }

    public Path dir() {
        return Path.of(dir);
    }

    /** Class names; a class's index is its position. */
    public List<String> classes() {
        return classes;
    }

    public List<ImageFile> images() {
        return images;
    }

    /**
     * Images the scan found but left out of {@link #images()}: their names cannot be written back
     * in this JVM (see {@link FileNames}); each a one-line reason naming the file.
     */
    public List<BadInputException> unnamable() {
        return unnamable == null ? List.of() : unnamable;
    }

    /** Images to train on, and images held out. */
    public record Split(ImageFolder train, List<ImageFile> eval) {}

    /**
     * Holds {@code evalImages} images out, spread over the classes: in turn over the classes, the
     * last image of each not yet held out, as long as the class keeps one to train on. The same
     * folder gives the same split whatever the run seed.
     *
     * @throws BadInputException more images asked for than the classes can spare
     */
    public Split split(int evalImages) throws BadInputException {
        List<List<ImageFile>> byClass = new ArrayList<>();
        for (int c = 0; c < classes.size(); c++) {
            byClass.add(new ArrayList<>());
        }
        for (ImageFile f : images) {
            byClass.get(f.label()).add(f);
        }
        int spare = 0;
        for (List<ImageFile> l : byClass) {
            spare += Math.max(0, l.size() - 1);
        }
        if (evalImages < 0 || evalImages > spare) {
            throw new BadInputException(
                    dir(),
                    "cannot hold out "
                            + evalImages
                            + " of "
                            + images.size()
                            + " images for evaluation; every class must keep one to train on"
                            + " (at most "
                            + spare
                            + ")");
        }
        List<ImageFile> held = new ArrayList<>();
        while (held.size() < evalImages) {
            for (List<ImageFile> l : byClass) {
                if (held.size() < evalImages && l.size() > 1) {
                    held.add(l.remove(l.size() - 1));
                }
            }
        }
        List<ImageFile> train = new ArrayList<>();
        byClass.forEach(train::addAll);
        train.sort(java.util.Comparator.comparing(ImageFile::name));
        held.sort(java.util.Comparator.comparing(ImageFile::name));
        return new Split(ImageFolder.of(dir(), classes, train), List.copyOf(held));
    }

    @Override
    public int size() {
        return images.size();
    }

    @Override
    public String traceName(int index) {
        return images.get(index).name();
    }

    /**
     * Reads the image's header only (its format and size), never its pixels.
     *
     * @throws BadInputException empty, not an image ImageIO reads, no pixels, or larger than {@link
     *     #MAX_PIXELS}
     */
    @Override
    public void check(int index) throws BadInputException {
        check(images.get(index));
    }

    /** See {@link #check(int)}. */
    public static void check(ImageFile image) throws BadInputException {
        Path file = image.file();
        try {
            if (Files.size(file) == 0) {
                throw new BadInputException(file, "empty file");
            }
            try (InputStream in = Files.newInputStream(file);
                    // Cached in memory: ImageIO's own stream would cache in a temporary file.
                    ImageInputStream iis = new MemoryCacheImageInputStream(in)) {
                ImageReader reader = ImageCodecs.reader(iis);
                if (reader == null) {
                    throw new BadInputException(file, "not an image ImageIO can read");
                }
                try {
                    long w = reader.getWidth(0);
                    long h = reader.getHeight(0);
                    if (w <= 0 || h <= 0) {
                        throw new BadInputException(file, "image of " + w + "x" + h + " pixels");
                    }
                    if (w * h > MAX_PIXELS) {
                        throw new BadInputException(
                                file,
                                "image of "
                                        + w
                                        + "x"
                                        + h
                                        + " pixels is larger than the "
                                        + MAX_PIXELS
                                        + " a sample may have");
                    }
                } finally {
                    reader.dispose();
                }
            }
        } catch (NoSuchFileException e) {
            throw new BadInputException(file, "no such file", e);
        } catch (IOException | RuntimeException e) {
            throw new BadInputException(file, "unreadable image header (" + oneLine(e) + ")", e);
        }
    }

    /**
     * The image, its file read when a step first needs its bytes (see {@link EncodedImage}); a file
     * gone since the check is named here, as before.
     */
    @Override
    public EncodedImage open(int index) throws BadInputException {
        ImageFile image = images.get(index);
        // A worker in a JVM whose locale cannot hold the name is told so in one line.
        FileNames.of(image.path());
        if (!Files.isRegularFile(image.file())) {
            throw new BadInputException(image.file(), "no such file");
        }
        return new EncodedImage(image);
    }

    /** The image with its bytes read now. */
    public static EncodedImage read(ImageFile image) throws BadInputException {
        return new EncodedImage(image, readBytes(image));
    }

    static byte[] readBytes(ImageFile image) throws BadInputException {
        try {
            return Files.readAllBytes(image.file());
        } catch (NoSuchFileException e) {
            throw new BadInputException(image.file(), "no such file", e);
        } catch (IOException e) {
            throw new BadInputException(image.file(), "cannot read: " + oneLine(e), e);
        }
    }

    static String oneLine(Exception e) {
        String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        return m.replaceAll("\\s*[\\r\\n]+\\s*", " ").strip();
    }
}
