package io.minato.workload.kits19;

import io.minato.data.BadInputException;
import io.minato.data.FileNames;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The cases of a folder in the KiTS19 offline-preprocessed layout: {@code case_*_x.npy} images
 * paired with {@code case_*_y.npy} labels, sorted by name.
 */
public final class Dataset {
    private static final Pattern CASE_FILE = Pattern.compile("(.+)_([xy])\\.npy");

    private final Path dir;
    private final List<CaseFiles> cases;

    private Dataset(Path dir, List<CaseFiles> cases) {
        this.dir = dir;
        this.cases = List.copyOf(cases);
    }

    /**
     * Lists the cases of a folder.
     *
     * @throws BadInputException if the folder is missing or empty, or an image or label has no
     *     partner
     */
    public static Dataset scan(Path dir) throws BadInputException {
        if (!Files.isDirectory(dir)) {
            throw new BadInputException(
                    dir,
                    "no such folder; give --data a folder of case_*_x.npy / case_*_y.npy pairs");
        }
        TreeMap<String, Path[]> pairs = new TreeMap<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                Matcher m = CASE_FILE.matcher(f.getFileName().toString());
                if (m.matches() && m.group(1).startsWith("case_")) {
                    pairs.computeIfAbsent(m.group(1), k -> new Path[2])[
                                    m.group(2).equals("x") ? 0 : 1] =
                            f;
                }
            }
        } catch (IOException e) {
            throw new BadInputException(dir, "cannot list the folder: " + e.getMessage(), e);
        }
        List<CaseFiles> cases = new ArrayList<>();
        for (var e : pairs.entrySet()) {
            Path x = e.getValue()[0];
            Path y = e.getValue()[1];
            if (x == null) {
                throw new BadInputException(
                        y, "label has no image " + e.getKey() + "_x.npy beside it");
            }
            if (y == null) {
                throw new BadInputException(
                        x, "image has no label " + e.getKey() + "_y.npy beside it");
            }
            FileNames.requireRepresentable(x.toAbsolutePath());
            FileNames.requireRepresentable(y.toAbsolutePath());
            cases.add(new CaseFiles(e.getKey(), x, y));
        }
        if (cases.isEmpty()) {
            throw new BadInputException(dir, "no case_*_x.npy / case_*_y.npy pairs in this folder");
        }
        return new Dataset(dir, cases);
    }

    public Path dir() {
        return dir;
    }

    public List<CaseFiles> cases() {
        return cases;
    }

    public int size() {
        return cases.size();
    }

    /**
     * The MLPerf split by default: a fifth of the cases held out for evaluation (42 of KiTS19's
     * 210). Held-out cases are the last ones by name, so the split does not move with the run seed.
     */
    public static int defaultEvalCases(int cases) {
        return cases / 5;
    }

    /** Training and held-out evaluation cases; evaluation cases never enter the training stream. */
    public Split split(int evalCases) throws BadInputException {
        if (evalCases < 0 || evalCases >= cases.size()) {
            throw new BadInputException(
                    dir,
                    "cannot hold out "
                            + evalCases
                            + " of "
                            + cases.size()
                            + " cases for evaluation; at least one must be left to train on");
        }
        int train = cases.size() - evalCases;
        return new Split(cases.subList(0, train), cases.subList(train, cases.size()));
    }

    /** Cases to train on and cases held out. */
    public record Split(List<CaseFiles> train, List<CaseFiles> eval) {}
}
