package io.minato.job.workload;

import io.minato.data.BadInputException;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * {@code --cases FILE}: the training set as a list, so that a script keeps its own split. One name
 * a line, as the workload names its samples (kits19 {@code case_00002}, images {@code
 * class_01/x.jpg}); blank lines and lines starting with {@code #} are skipped, spaces around a name
 * are not part of it. The folder's samples that are not listed are held out for evaluation.
 *
 * @param file the list
 * @param lines each listed name with the line it is on (from 1), in the file's order
 */
public record SampleList(Path file, Map<String, Integer> lines) {

    /** Reads the list; one line naming the file (and the line) if it is not one. */
    public static SampleList read(Path file) throws BadInputException {
        List<String> text;
        try {
            text = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            throw new BadInputException(file, "no such file; --cases takes a file of names");
        } catch (CharacterCodingException e) {
            throw new BadInputException(file, "not UTF-8 text; --cases takes a file of names");
        } catch (IOException e) {
            throw new BadInputException(file, "cannot read the list: " + e.getMessage(), e);
        }
        Map<String, Integer> lines = new LinkedHashMap<>();
        for (int i = 0; i < text.size(); i++) {
            String name = text.get(i).strip();
            if (name.isEmpty() || name.startsWith("#")) {
                continue;
            }
            Integer before = lines.putIfAbsent(name, i + 1);
            if (before != null) {
                throw new BadInputException(
                        file,
                        "line " + (i + 1) + ": " + name + " is listed already on line " + before);
            }
        }
        if (lines.isEmpty()) {
            throw new BadInputException(file, "lists no sample to train on");
        }
        return new SampleList(file, Map.copyOf(lines));
    }

    /**
     * The samples of {@code all} this lists, in {@code all}'s order, and the others; a listed name
     * that none of {@code all} has is one line naming this file, its line and {@code where}.
     */
    public <T> Split<T> split(List<T> all, Function<T, String> name, String where)
            throws BadInputException {
        Map<String, T> byName = new HashMap<>();
        for (T s : all) {
            byName.put(name.apply(s), s);
        }
        String missing = null;
        int missingLine = Integer.MAX_VALUE;
        for (Map.Entry<String, Integer> e : lines.entrySet()) {
            if (!byName.containsKey(e.getKey()) && e.getValue() < missingLine) {
                missing = e.getKey();
                missingLine = e.getValue();
            }
        }
        if (missing != null) {
            throw new BadInputException(
                    file, "line " + missingLine + ": " + missing + " is not in " + where);
        }
        List<T> listed = new ArrayList<>();
        List<T> others = new ArrayList<>();
        for (T s : all) {
            (lines.containsKey(name.apply(s)) ? listed : others).add(s);
        }
        return new Split<>(List.copyOf(listed), List.copyOf(others));
    }

    /** The listed samples, to train on, and the others, held out. */
    public record Split<T>(List<T> listed, List<T> others) {}
}
