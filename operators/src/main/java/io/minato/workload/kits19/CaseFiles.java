package io.minato.workload.kits19;

import java.nio.file.Path;

/** One case of a dataset: {@code case_XXXXX_x.npy} (image) and {@code case_XXXXX_y.npy} (label). */
public record CaseFiles(String name, Path image, Path label) {}
