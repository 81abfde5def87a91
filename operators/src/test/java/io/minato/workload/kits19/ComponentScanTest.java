package io.minato.workload.kits19;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.spi.Shape3;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.junit.jupiter.api.Test;

class ComponentScanTest {

    private static final Comparator<Component> ORDER =
            Comparator.comparingLong(Component::firstVoxel);

    @Test
    void shouldFindTheSameComponentsAsAFloodFillForEverySlabSize() {
        for (long seed = 1; seed <= 20; seed++) {
            Volume v = SyntheticVolumes.blobs(new Shape3(17, 19, 23), seed);
            List<Component> expected = floodFill(v);
            for (int slab : new int[] {1, 2, 5, 17}) {
                ComponentScan scan = new ComponentScan(v.shape());
                while (!scan.isComplete()) {
                    scan.scan(v.label(), Math.min(v.shape().d(), scan.nextSlice() + slab));
                }
                assertThat(sorted(scan.components()))
                        .as("seed %d slab %d", seed, slab)
                        .isEqualTo(expected);
            }
        }
    }

    @Test
    void shouldResumeFromItsSerializedStateWithTheSameResult() throws IOException {
        Volume v = SyntheticVolumes.blobs(new Shape3(20, 16, 16), 42);
        ComponentScan scan = new ComponentScan(v.shape());
        for (int z = 1; z <= v.shape().d(); z++) {
            scan.scan(v.label(), z);
            scan = roundTrip(scan);
        }
        assertThat(sorted(scan.components())).isEqualTo(floodFill(v));
    }

    @Test
    void shouldKeepTwoClassesThatTouchApart() {
        Shape3 s = new Shape3(2, 2, 4);
        byte[] label = {1, 1, 2, 2, 0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 0, 0};
        ComponentScan scan = new ComponentScan(s);
        scan.scan(Volume.of("t", s, new float[16], label).label(), 2);
        assertThat(scan.components())
                .extracting(Component::cls, Component::voxels)
                .containsExactlyInAnyOrder(
                        org.assertj.core.groups.Tuple.tuple(1, 3L),
                        org.assertj.core.groups.Tuple.tuple(2, 3L));
    }

    @Test
    void shouldJoinAUShapeOnlyWhenItsArmsMeetInALaterSlice() {
        // Two columns in slices 0-2 joined by a bar in slice 3: one component in the end.
        Shape3 s = new Shape3(4, 1, 5);
        byte[] label = new byte[20];
        for (int z = 0; z < 3; z++) {
            label[z * 5] = 1;
            label[z * 5 + 4] = 1;
        }
        for (int x = 0; x < 5; x++) {
            label[15 + x] = 1;
        }
        ComponentScan scan = new ComponentScan(s);
        scan.scan(Volume.of("u", s, new float[20], label).label(), 2);
        scan.scan(Volume.of("u", s, new float[20], label).label(), 4);
        assertThat(scan.components()).hasSize(1);
        assertThat(scan.components().get(0)).isEqualTo(new Component(1, 0, 4, 0, 1, 0, 5, 11, 0));
    }

    private static ComponentScan roundTrip(ComponentScan scan) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        scan.writeTo(new DataOutputStream(bytes));
        return ComponentScan.readFrom(
                new DataInputStream(new ByteArrayInputStream(bytes.toByteArray())));
    }

    private static List<Component> sorted(List<Component> components) {
        List<Component> list = new ArrayList<>(components);
        list.sort(ORDER);
        return list;
    }

    /** An independent reference: breadth-first flood fill per voxel, 6-connectivity. */
    static List<Component> floodFill(Volume v) {
        Shape3 s = v.shape();
        int n = (int) s.voxels();
        boolean[] seen = new boolean[n];
        List<Component> out = new ArrayList<>();
        for (int start = 0; start < n; start++) {
            int c = v.label().get(start);
            if (c == 0 || seen[start]) {
                continue;
            }
            int z0 = Integer.MAX_VALUE, y0 = Integer.MAX_VALUE, x0 = Integer.MAX_VALUE;
            int z1 = 0, y1 = 0, x1 = 0;
            long count = 0;
            ArrayDeque<Integer> queue = new ArrayDeque<>();
            queue.add(start);
            seen[start] = true;
            while (!queue.isEmpty()) {
                int i = queue.poll();
                int z = i / (s.h() * s.w());
                int y = i / s.w() % s.h();
                int x = i % s.w();
                count++;
                z0 = Math.min(z0, z);
                y0 = Math.min(y0, y);
                x0 = Math.min(x0, x);
                z1 = Math.max(z1, z + 1);
                y1 = Math.max(y1, y + 1);
                x1 = Math.max(x1, x + 1);
                int[][] nb = {
                    {z - 1, y, x},
                    {z + 1, y, x},
                    {z, y - 1, x},
                    {z, y + 1, x},
                    {z, y, x - 1},
                    {z, y, x + 1}
                };
                for (int[] q : nb) {
                    if (q[0] < 0
                            || q[1] < 0
                            || q[2] < 0
                            || q[0] >= s.d()
                            || q[1] >= s.h()
                            || q[2] >= s.w()) {
                        continue;
                    }
                    int j = (q[0] * s.h() + q[1]) * s.w() + q[2];
                    if (!seen[j] && v.label().get(j) == c) {
                        seen[j] = true;
                        queue.add(j);
                    }
                }
            }
            out.add(new Component(c, z0, z1, y0, y1, x0, x1, count, start));
        }
        out.sort(ORDER);
        return out;
    }
}
