package io.minato.job.generate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.offset;

import io.minato.workload.kits19.KitsLikeGenerator;
import io.minato.workload.kits19.KitsLikeGenerator.GeneratedCase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KitsLikeGeneratorTest {

    private static final int CASES = 12;
    private static final double SCALE = 0.1;
    private static final byte KIDNEY = 1;
    private static final byte TUMOUR = 2;

    @TempDir static Path shared;
    private static List<GeneratedCase> dataset;

    @TempDir Path dir;

    @BeforeAll
    static void generateOnce() throws IOException {
        dataset = generator(CASES, SCALE, 7, 2).generate(shared);
    }

    @Test
    void shouldWriteAnImageAndALabelFilePerCaseAndNothingElse() throws IOException {
        try (Stream<Path> files = Files.list(shared)) {
            assertThat(files.map(p -> p.getFileName().toString()))
                    .hasSize(2 * CASES)
                    .contains("case_00000_x.npy", "case_00000_y.npy", "case_00011_y.npy")
                    .allMatch(name -> name.matches("case_\\d{5}_[xy]\\.npy"));
        }
        assertThat(dataset).extracting(GeneratedCase::id).containsExactly(range(CASES));
    }

    @Test
    void shouldWriteNumpyHeadersWhoseShapesAndSizesMatchTheData() throws IOException {
        for (GeneratedCase c : dataset) {
            NpyTestFiles.Npy x = NpyTestFiles.read(c.image());
            NpyTestFiles.Npy y = NpyTestFiles.read(c.label());

            assertThat(x.descr()).isEqualTo("<f4");
            assertThat(y.descr()).isEqualTo("|u1");
            assertThat(x.fortranOrder()).isFalse();
            assertThat(y.fortranOrder()).isFalse();
            assertThat(x.shape()).hasSize(4).startsWith(1).isEqualTo(y.shape());
            assertThat(x.shape()).isEqualTo(c.shape());
            assertThat(x.preamble() % 64).isZero();
            assertThat(y.preamble() % 64).isZero();
            assertThat(Files.size(c.image())).isEqualTo(x.preamble() + 4 * x.count());
            assertThat(Files.size(c.label())).isEqualTo(y.preamble() + y.count());
            assertThat(c.bytes()).isEqualTo(Files.size(c.image()) + Files.size(c.label()));
        }
    }

    @Test
    void shouldGiveEveryCaseKidneyAndTumourVoxelsAndNoOtherLabels() throws IOException {
        for (GeneratedCase c : dataset) {
            assertThat(labelCounts(NpyTestFiles.read(c.label()).bytes()))
                    .as("voxels per label in case %d", c.id())
                    .satisfies(n -> assertThat(n[1]).isPositive())
                    .satisfies(n -> assertThat(n[2]).isPositive())
                    .satisfies(n -> assertThat(n[3]).as("labels above 2").isZero());
        }
    }

    @Test
    void shouldKeepBothLabelsEvenAtTinyScales() throws IOException {
        for (double scale : new double[] {0.02, 0.001}) {
            Path out = dir.resolve("scale-" + scale);
            for (GeneratedCase c : generator(20, scale, 11, 2).generate(out)) {
                long[] n = labelCounts(NpyTestFiles.read(c.label()).bytes());
                assertThat(n[1])
                        .as("kidney voxels, case %d at scale %s", c.id(), scale)
                        .isPositive();
                assertThat(n[2])
                        .as("tumour voxels, case %d at scale %s", c.id(), scale)
                        .isPositive();
            }
        }
    }

    @Test
    void shouldKeepIntensitiesFiniteAndInTheNormalisedRange() throws IOException {
        for (GeneratedCase c : dataset) {
            float[] image = NpyTestFiles.read(c.image()).floats();
            float min = Float.POSITIVE_INFINITY;
            float max = Float.NEGATIVE_INFINITY;
            for (float v : image) {
                assertThat(Float.isFinite(v)).as("finite intensities in case %d", c.id()).isTrue();
                min = Math.min(min, v);
                max = Math.max(max, v);
            }
            assertThat(min).isGreaterThanOrEqualTo(-2.4f);
            assertThat(max).isLessThanOrEqualTo(2.7f);
            // Air sits at the clip floor, (-79 - 101) / 76.9.
            assertThat(min).isCloseTo(-2.3407f, offset(1e-4f));
        }
    }

    @Test
    void shouldMakeKidneysBrighterThanSoftTissueAndTumoursDifferFromKidneys() throws IOException {
        double[] sums = new double[3];
        long[] counts = new long[3];
        for (GeneratedCase c : dataset) {
            float[] image = NpyTestFiles.read(c.image()).floats();
            byte[] label = NpyTestFiles.read(c.label()).bytes();
            for (int i = 0; i < image.length; i++) {
                if (label[i] != 0 || image[i] > -2.3f) { // skip air
                    sums[label[i]] += image[i];
                    counts[label[i]]++;
                }
            }
        }
        double body = sums[0] / counts[0];
        double kidney = sums[1] / counts[1];
        double tumour = sums[2] / counts[2];

        assertThat(kidney).isGreaterThan(body + 0.3);
        assertThat(Math.abs(kidney - tumour)).isGreaterThan(0.2);
    }

    @Test
    void shouldPutEveryTumourInsideOrNextToAKidney() throws IOException {
        int tumours = 0;
        for (GeneratedCase c : dataset) {
            byte[] label = NpyTestFiles.read(c.label()).bytes();
            boolean[] touches =
                    NpyTestFiles.touching(label, c.depth(), c.height(), c.width(), TUMOUR, KIDNEY);
            tumours += touches.length;
            for (boolean t : touches) {
                assertThat(t).as("a tumour of case %d touches a kidney", c.id()).isTrue();
            }
        }
        assertThat(tumours).isGreaterThanOrEqualTo(CASES);
    }

    @Test
    void shouldMakeSomeCasesWithSeveralComponentsOfAClassAndSomeWithOne() throws IOException {
        List<String> several = new ArrayList<>();
        List<String> single = new ArrayList<>();
        for (GeneratedCase c : dataset) {
            byte[] label = NpyTestFiles.read(c.label()).bytes();
            for (byte cls : new byte[] {KIDNEY, TUMOUR}) {
                int n = NpyTestFiles.components(label, c.depth(), c.height(), c.width(), cls);
                (n > 1 ? several : single).add(c.id() + ":" + cls);
            }
        }
        assertThat(several).as("(case, class) with several components").isNotEmpty();
        assertThat(single).as("(case, class) with one component").isNotEmpty();
    }

    @Test
    void shouldSpreadShapesLikeKits19TimesTheScale() throws IOException {
        List<GeneratedCase> cases = generator(60, 0.1, 7, 2).generate(dir);

        assertThat(cases).allSatisfy(c -> assertThat(c.depth()).isBetween(13, 65));
        assertThat(cases).allSatisfy(c -> assertThat(c.height()).isBetween(20, 40));
        assertThat(cases).allSatisfy(c -> assertThat(c.width()).isBetween(20, 40));
        int minDepth = cases.stream().mapToInt(GeneratedCase::depth).min().orElseThrow();
        int maxDepth = cases.stream().mapToInt(GeneratedCase::depth).max().orElseThrow();
        assertThat(maxDepth).isGreaterThanOrEqualTo(2 * minDepth);
        assertThat(cases.stream().mapToInt(GeneratedCase::height).distinct().count())
                .isGreaterThan(3);
        assertThat(cases).anySatisfy(c -> assertThat(c.height()).isNotEqualTo(c.width()));
        // Most scans are 150-300 slices deep at full size.
        assertThat(cases.stream().filter(c -> c.depth() >= 15 && c.depth() <= 30).count())
                .isGreaterThan(cases.size() / 2);
    }

    @Test
    void shouldWriteTheSameBytesForTheSameSeedWhateverTheThreadCount() throws IOException {
        List<GeneratedCase> one = generator(6, SCALE, 7, 1).generate(dir.resolve("one"));
        List<GeneratedCase> two = generator(6, SCALE, 7, 2).generate(dir.resolve("two"));
        List<GeneratedCase> three = generator(6, SCALE, 7, 3).generate(dir.resolve("three"));

        assertThat(digests(two)).isEqualTo(digests(one)).isEqualTo(digests(three));
        assertThat(digests(one)).isEqualTo(digests(dataset.subList(0, 6)));
    }

    @Test
    void shouldWriteDifferentBytesForADifferentSeed() throws IOException {
        List<String> seven = digests(dataset.subList(0, 4));
        List<String> eight = digests(generator(4, SCALE, 8, 2).generate(dir));

        for (int i = 0; i < seven.size(); i++) {
            assertThat(eight.get(i)).isNotEqualTo(seven.get(i));
        }
    }

    @Test
    void shouldReplaceCaseFilesAndLeaveOtherFilesAlone() throws IOException {
        Files.writeString(dir.resolve("case_00000_x.npy"), "stale");
        Files.writeString(dir.resolve("case_00099_x.npy"), "another dataset's");
        Files.writeString(dir.resolve("notes.txt"), "mine");

        generator(2, SCALE, 7, 2).generate(dir);

        assertThat(NpyTestFiles.sha256(dir.resolve("case_00000_x.npy")))
                .isEqualTo(NpyTestFiles.sha256(shared.resolve("case_00000_x.npy")));
        assertThat(dir.resolve("case_00099_x.npy")).hasContent("another dataset's");
        assertThat(dir.resolve("notes.txt")).hasContent("mine");
    }

    @Test
    void shouldRejectSettingsOutsideTheirRanges() {
        assertThatThrownBy(() -> KitsLikeGenerator.builder().optCases(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("cases");
        for (double scale : new double[] {0, -1, 4.01, Double.NaN}) {
            assertThatThrownBy(() -> KitsLikeGenerator.builder().optScale(scale))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("scale");
        }
        assertThatThrownBy(() -> KitsLikeGenerator.builder().optThreads(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("threads");
        assertThat(KitsLikeGenerator.builder().optScale(4).build().scale()).isEqualTo(4);
    }

    private static KitsLikeGenerator generator(int cases, double scale, long seed, int threads) {
        return KitsLikeGenerator.builder()
                .optCases(cases)
                .optScale(scale)
                .optSeed(seed)
                .optThreads(threads)
                .build();
    }

    /** Voxels labelled 0, 1, 2, and anything else. */
    private static long[] labelCounts(byte[] labels) {
        long[] n = new long[4];
        for (byte b : labels) {
            n[Math.min(3, b & 0xFF)]++;
        }
        return n;
    }

    private static List<String> digests(List<GeneratedCase> cases) throws IOException {
        List<String> digests = new ArrayList<>();
        for (GeneratedCase c : cases) {
            digests.add(NpyTestFiles.sha256(c.image()));
            digests.add(NpyTestFiles.sha256(c.label()));
        }
        return digests;
    }

    private static Integer[] range(int n) {
        Integer[] ids = new Integer[n];
        for (int i = 0; i < n; i++) {
            ids[i] = i;
        }
        return ids;
    }
}
