package io.minato.workload.kits19;

import io.minato.spi.Shape3;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Synthetic cases written as real .npy pairs, with their volumes kept for expected results. */
public record BlobCases(CaseTable table, List<Volume> volumes) {

    public static BlobCases write(Path dir, Shape3 shape, long firstSeed, int n) throws Exception {
        List<CaseFiles> files = new ArrayList<>();
        List<Volume> volumes = new ArrayList<>();
        for (int c = 0; c < n; c++) {
            Volume v = SyntheticVolumes.blobs(shape, firstSeed + c);
            volumes.add(v);
            files.add(SyntheticVolumes.write(dir, String.format("case_%05d", c), v));
        }
        return new BlobCases(new CaseTable(files), List.copyOf(volumes));
    }
}
