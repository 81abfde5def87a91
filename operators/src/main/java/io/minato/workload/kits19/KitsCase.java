package io.minato.workload.kits19;

import io.minato.data.SplitMix64;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One KiTS19-like case: its shape and anatomy, drawn from (seed, case id), and the painting of any
 * one axial slice of its image and label volumes.
 *
 * <p>Sizes are first drawn in voxels of MLPerf's resampled grid (1.6 x 1.2 x 1.2 mm, z y x), then
 * multiplied by the scale. y grows towards the patient's back, as in an axial CT slice.
 */
final class KitsCase {

    static final byte BACKGROUND = 0;
    static final byte KIDNEY = 1;
    static final byte TUMOUR = 2;

    /** MLPerf's normalisation maps the HU clip window [-79, 304] onto these bounds. */
    static final float MIN_INTENSITY = hu(-79);

    static final float MAX_INTENSITY = hu(304);

    /** Smallest edge after scaling: two voxels per axis leave room for a kidney and a tumour. */
    static final int MIN_EDGE = 2;

    // Smallest semi-axis of a kidney or tumour after scaling: organs, not specks, at tiny scales.
    private static final double MIN_ORGAN_RADIUS = 2.0;

    // Shapes after MLPerf preprocessing: most depths 150-300 slices, plus a tail of deep scans.
    private static final double DEEP_SCAN_PROBABILITY = 0.15;
    private static final double MEDIAN_DEPTH = 215;
    private static final double DEPTH_LOG_SIGMA = 0.22;
    private static final int MIN_DEPTH = 128;
    private static final int MAX_DEPTH = 650;
    private static final double MEAN_PLANE = 325;
    private static final int MIN_PLANE = 200;
    private static final int MAX_PLANE = 400;

    // Tumours stay within this fraction of the body's radii: skin, fat and muscle lie outside.
    private static final double BODY_INTERIOR = 0.9;
    private static final double TWO_KIDNEYS_PROBABILITY = 0.85;
    private static final double TWO_TUMOURS_PROBABILITY = 0.35;
    // In-plane voxels: 4.5 is a ~1 cm tumour (a few hundred voxels), 40 a ~10 cm one.
    private static final double MIN_TUMOUR_RADIUS = 4.5;
    private static final double MAX_TUMOUR_RADIUS = 40;
    // A z voxel is 1.6 mm against 1.2 mm in-plane, so a round object spans fewer slices.
    private static final double Z_PER_PLANE = 1.2 / 1.6;

    private static final float SOFT_TISSUE = 0.25f;
    private static final float SOFT_TISSUE_SWING = 0.2f;
    private static final float BONE_CORTEX = hu(700);
    private static final float BONE_MARROW = hu(260);
    private static final float DISC = hu(90);
    private static final float KIDNEY_CORTEX = hu(215);
    private static final float KIDNEY_MEDULLA = hu(150);
    private static final float TUMOUR_TISSUE = hu(125);
    private static final float TUMOUR_SWING = 0.35f;
    private static final float NECROSIS = hu(40);
    private static final float NOISE_STD = 0.05f;

    final int depth;
    final int height;
    final int width;

    private final Ellipsoid body;
    private final Ellipsoid spine;
    private final int vertebraPeriod;
    private final int discSlices;
    private final int vertebraPhase;
    private final Ellipsoid[] kidneys;
    private final Ellipsoid[] tumourParts;
    private final double[] necrosisRadius2;
    private final int[][] kidneyCentres;
    private final OrganMask organs;
    private final double[] softZ;
    private final double[] softY;
    private final double[] softX;
    private final double[] mottleZ;
    private final double[] mottleY;
    private final double[] mottleX;
    private final long noiseSeed;

    /** Draws case {@code caseId} of the dataset named by {@code seed}, at {@code scale}. */
    KitsCase(int caseId, double scale, long seed) {
        SplitMix64 rng = SplitMix64.stream(seed, caseId);

        double fullDepth =
                rng.chance(DEEP_SCAN_PROBABILITY)
                        ? rng.uniform(300, MAX_DEPTH)
                        : MEDIAN_DEPTH * StrictMath.exp(DEPTH_LOG_SIGMA * rng.gaussian());
        double fullHeight = clamp(MEAN_PLANE + 35 * rng.gaussian(), MIN_PLANE, MAX_PLANE);
        double fullWidth = clamp(fullHeight + 15 * rng.gaussian(), MIN_PLANE, MAX_PLANE);
        depth = scaled(clamp(fullDepth, MIN_DEPTH, MAX_DEPTH), scale);
        height = scaled(fullHeight, scale);
        width = scaled(fullWidth, scale);

        double bodyY = height * (0.5 + 0.03 * rng.gaussian());
        double bodyX = width * (0.5 + 0.03 * rng.gaussian());
        double bodyRy = height * rng.uniform(0.30, 0.40);
        body =
                new Ellipsoid(
                        0,
                        bodyY,
                        bodyX,
                        Double.POSITIVE_INFINITY,
                        bodyRy,
                        width * rng.uniform(0.40, 0.47));

        double spineR = Math.max(1.0, 13 * scale);
        double spineY = bodyY + 0.55 * bodyRy;
        spine = new Ellipsoid(0, spineY, bodyX, Double.POSITIVE_INFINITY, 0.85 * spineR, spineR);
        // Vertebrae ~30 mm apart with ~8 mm discs; too small to show below 3 slices per period.
        int period = (int) Math.round(19 * scale);
        vertebraPeriod = period >= 3 ? period : 0;
        discSlices = (int) Math.max(1, Math.round(5 * scale));
        vertebraPhase = rng.nextInt(Math.max(1, period));

        int[] sides =
                rng.chance(TWO_KIDNEYS_PROBABILITY)
                        ? new int[] {-1, 1}
                        : new int[] {rng.chance(0.5) ? -1 : 1};
        double kidneyZ = depth * rng.uniform(0.35, 0.65);
        kidneys = new Ellipsoid[sides.length];
        kidneyCentres = new int[sides.length][];
        for (int i = 0; i < sides.length; i++) {
            double rz = Math.max(MIN_ORGAN_RADIUS, scale * rng.uniform(28, 40));
            double ry = Math.max(MIN_ORGAN_RADIUS, scale * rng.uniform(18, 26));
            double rx = Math.max(MIN_ORGAN_RADIUS, scale * rng.uniform(14, 22));
            int[] c =
                    voxel(
                            kidneyZ + rng.uniform(-0.25, 0.25) * rz,
                            spineY - rng.uniform(0.2, 0.8) * ry,
                            bodyX + sides[i] * (spineR + rx + scale * rng.uniform(6, 20)));
            kidneyCentres[i] = c;
            kidneys[i] = new Ellipsoid(c[0], c[1], c[2], rz, ry, rx);
        }

        // Tumours grow from a kidney's surface region; a second one sits on the other kidney or on
        // the far side of the same kidney, so that it usually forms a separate component.
        List<Ellipsoid> parts = new ArrayList<>();
        List<Double> necrosis = new ArrayList<>();
        int host = rng.nextInt(kidneys.length);
        double[] direction = randomUnit(rng);
        int tumours = rng.chance(TWO_TUMOURS_PROBABILITY) ? 2 : 1;
        for (int t = 0; t < tumours; t++) {
            if (t == 1) {
                if (kidneys.length == 2 && rng.chance(0.6)) {
                    host = 1 - host;
                    direction = randomUnit(rng);
                } else {
                    double[] jitter = randomUnit(rng);
                    direction =
                            normalised(
                                    -direction[0] + 0.3 * jitter[0],
                                    -direction[1] + 0.3 * jitter[1],
                                    -direction[2] + 0.3 * jitter[2]);
                }
            }
            addTumour(rng, scale, kidneys[host], direction, parts, necrosis);
        }
        tumourParts = parts.toArray(new Ellipsoid[0]);
        necrosisRadius2 = necrosis.stream().mapToDouble(Double::doubleValue).toArray();
        organs = OrganMask.build(depth, height, width, kidneys, tumourParts, kidneyCentres);

        softZ = smoothProfile(rng, depth, scale);
        softY = smoothProfile(rng, height, scale);
        softX = smoothProfile(rng, width, scale);
        mottleZ = mottleProfile(rng, depth, scale);
        mottleY = mottleProfile(rng, height, scale);
        mottleX = mottleProfile(rng, width, scale);
        noiseSeed = rng.nextLong();
    }

    /**
     * Paints slice {@code z} (C order, y major) into {@code image} and {@code label}, each of
     * height x width elements. A pure function of z: slices may be painted in any order.
     */
    void paintSlice(int z, float[] image, byte[] label) {
        SplitMix64 noise = SplitMix64.stream(noiseSeed, z);
        boolean disc = vertebraPeriod > 0 && (z + vertebraPhase) % vertebraPeriod < discSlices;
        for (int y = 0; y < height; y++) {
            int row = y * width;
            Arrays.fill(image, row, row + width, MIN_INTENSITY);
            Arrays.fill(label, row, row + width, BACKGROUND);

            double rem = body.rowRemainder(z, y);
            if (rem > 0) {
                double soft = softZ[z] + softY[y];
                for (int x = body.firstX(rem), last = body.lastX(rem, width); x <= last; x++) {
                    image[row + x] =
                            SOFT_TISSUE + SOFT_TISSUE_SWING * (float) ((soft + softX[x]) / 3);
                }
            }
            rem = spine.rowRemainder(z, y);
            if (rem > 0) {
                for (int x = spine.firstX(rem), last = spine.lastX(rem, width); x <= last; x++) {
                    image[row + x] =
                            disc ? DISC : spine.radius2(rem, x) > 0.55 ? BONE_CORTEX : BONE_MARROW;
                }
            }
            if (organs.coversRow(z, y)) {
                paintOrgans(z, y, image, label, row);
            }
            // Air stays exactly at the clip floor, as in a clipped CT; tissue gets scanner noise.
            for (int i = row; i < row + width; i++) {
                if (label[i] != BACKGROUND || image[i] != MIN_INTENSITY) {
                    float v = image[i] + NOISE_STD * (float) noise.noise();
                    image[i] = Math.max(MIN_INTENSITY, Math.min(MAX_INTENSITY, v));
                }
            }
        }
    }

    private void addTumour(
            SplitMix64 rng,
            double scale,
            Ellipsoid kidney,
            double[] preferred,
            List<Ellipsoid> parts,
            List<Double> necrosis) {
        double r =
                scale
                        * StrictMath.exp(
                                rng.uniform(
                                        StrictMath.log(MIN_TUMOUR_RADIUS),
                                        StrictMath.log(MAX_TUMOUR_RADIUS)));
        double rz = Z_PER_PLANE * r * rng.uniform(0.8, 1.2);
        double ry = r * rng.uniform(0.8, 1.2);
        double rx = r * rng.uniform(0.8, 1.2);
        double[] u = preferred;
        Ellipsoid main;
        // A tumour must stay inside the body: try other directions, then smaller sizes. At tiny
        // scales nothing may fit, and the last try is kept.
        for (int attempt = 1; ; attempt++) {
            main = placeTumour(rng, kidney, u, rz, ry, rx);
            if (insideBody(main) || attempt == 24) {
                break;
            }
            u = randomUnit(rng);
            if (attempt % 4 == 0) {
                rz *= 0.8;
                ry *= 0.8;
                rx *= 0.8;
            }
        }
        parts.add(main);
        // Large tumours have a dead, less enhancing core.
        necrosis.add(Math.min(main.rz / Z_PER_PLANE, Math.min(main.ry, main.rx)) >= 6 ? 0.3 : 0.0);
        // Lobes centred inside the main ellipsoid make an irregular but connected blob.
        for (int lobes = rng.nextInt(3); lobes > 0; lobes--) {
            double[] v = randomUnit(rng);
            Ellipsoid lobe =
                    new Ellipsoid(
                            main.cz + 0.7 * main.rz * v[0],
                            main.cy + 0.7 * main.ry * v[1],
                            main.cx + 0.7 * main.rx * v[2],
                            Math.max(1.0, main.rz * rng.uniform(0.4, 0.7)),
                            Math.max(1.0, main.ry * rng.uniform(0.4, 0.7)),
                            Math.max(1.0, main.rx * rng.uniform(0.4, 0.7)));
            if (insideBody(lobe)) {
                parts.add(lobe);
                necrosis.add(0.0);
            }
        }
    }

    /**
     * A tumour of the given semi-axes on {@code kidney} in direction {@code u}: centred from just
     * inside the kidney to right on its surface (inside or protruding), or, if it is large, pushed
     * out until the kidney's centre is clear of it, as large renal tumours grow out of the kidney
     * rather than replace it.
     */
    private Ellipsoid placeTumour(
            SplitMix64 rng, Ellipsoid kidney, double[] u, double rz, double ry, double rx) {
        rz = Math.max(MIN_ORGAN_RADIUS, rz);
        ry = Math.max(MIN_ORGAN_RADIUS, ry);
        rx = Math.max(MIN_ORGAN_RADIUS, rx);
        double clear = new Ellipsoid(0, 0, 0, rz, ry, rx).extent(u[0], u[1], u[2]) + 1;
        double reach = Math.max(rng.uniform(0.35, 1.0) * kidney.extent(u[0], u[1], u[2]), clear);
        int[] c =
                awayFromKidneyCentres(
                        voxel(
                                kidney.cz + reach * u[0],
                                kidney.cy + reach * u[1],
                                kidney.cx + reach * u[2]));
        return new Ellipsoid(c[0], c[1], c[2], rz, ry, rx);
    }

    /** Whether 26 points around the ellipsoid's surface lie inside the body, within its wall. */
    private boolean insideBody(Ellipsoid e) {
        for (int dz = -1; dz <= 1; dz++) {
            for (int dy = -1; dy <= 1; dy++) {
                for (int dx = -1; dx <= 1; dx++) {
                    double norm = Math.sqrt(dz * dz + dy * dy + dx * dx);
                    if (norm == 0) {
                        continue;
                    }
                    double y = (e.cy + e.ry * dy / norm - body.cy) / body.ry;
                    double x = (e.cx + e.rx * dx / norm - body.cx) / body.rx;
                    if (y * y + x * x > BODY_INTERIOR * BODY_INTERIOR) {
                        return false;
                    }
                }
            }
        }
        return true;
    }

    /** Kidney and tumour voxels of row (z, y), from the mask, shaded by where they lie. */
    private void paintOrgans(int z, int y, float[] image, byte[] label, int row) {
        double soft = softZ[z] + softY[y];
        double mottle = mottleZ[z] * mottleY[y];
        for (int x = organs.x0, end = organs.x0 + organs.width; x < end; x++) {
            byte organ = organs.label(z, y, x);
            if (organ == KIDNEY) {
                float tissue = kidneyRadius2(z, y, x) > 0.55 ? KIDNEY_CORTEX : KIDNEY_MEDULLA;
                image[row + x] = tissue + 0.1f * (float) ((soft + softX[x]) / 3);
            } else if (organ == TUMOUR) {
                image[row + x] =
                        isNecrotic(z, y, x)
                                ? NECROSIS
                                : TUMOUR_TISSUE + TUMOUR_SWING * (float) (mottle * mottleX[x]);
            }
            label[row + x] = organ;
        }
    }

    /** Squared normalised radius in the kidney that holds the voxel (cortex is the outer shell). */
    private double kidneyRadius2(int z, int y, int x) {
        double q = Double.POSITIVE_INFINITY;
        for (Ellipsoid kidney : kidneys) {
            double rem = kidney.rowRemainder(z, y);
            q = Math.min(q, rem > 0 ? kidney.radius2(rem, x) : Double.POSITIVE_INFINITY);
        }
        return q;
    }

    private boolean isNecrotic(int z, int y, int x) {
        for (int t = 0; t < tumourParts.length; t++) {
            if (necrosisRadius2[t] > 0) {
                double rem = tumourParts[t].rowRemainder(z, y);
                if (rem > 0 && tumourParts[t].radius2(rem, x) < necrosisRadius2[t]) {
                    return true;
                }
            }
        }
        return false;
    }

    /** Moves a voxel to a free neighbour if it is a kidney centre (at most two are taken). */
    private int[] awayFromKidneyCentres(int[] c) {
        int[] dims = {depth, height, width};
        if (!isKidneyCentre(c)) {
            return c;
        }
        for (int axis = 0; axis < 3; axis++) {
            for (int step = -1; step <= 1; step += 2) {
                int[] n = c.clone();
                n[axis] += step;
                if (n[axis] >= 0 && n[axis] < dims[axis] && !isKidneyCentre(n)) {
                    return n;
                }
            }
        }
        throw new IllegalStateException("no free voxel next to a kidney centre"); // MIN_EDGE >= 2
    }

    private boolean isKidneyCentre(int[] c) {
        for (int[] k : kidneyCentres) {
            if (Arrays.equals(k, c)) {
                return true;
            }
        }
        return false;
    }

    /** The voxel nearest to (z, y, x) inside the volume. */
    private int[] voxel(double z, double y, double x) {
        return new int[] {index(z, depth), index(y, height), index(x, width)};
    }

    private static int index(double v, int size) {
        return (int) clamp(Math.round(v), 0, size - 1);
    }

    private static int scaled(double voxels, double scale) {
        return (int) Math.max(MIN_EDGE, Math.round(voxels * scale));
    }

    private static double clamp(double v, double lo, double hi) {
        return Math.max(lo, Math.min(hi, v));
    }

    private static float hu(double hounsfield) {
        return (float) ((Math.max(-79, Math.min(304, hounsfield)) - 101) / 76.9);
    }

    private static double[] randomUnit(SplitMix64 rng) {
        return normalised(rng.gaussian(), rng.gaussian(), rng.gaussian());
    }

    private static double[] normalised(double z, double y, double x) {
        double n = Math.sqrt(z * z + y * y + x * x);
        return n == 0 ? new double[] {0, 0, 1} : new double[] {z / n, y / n, x / n};
    }

    /** A slow wave in [-1, 1] along one axis: periods of 60-200 voxels (soft-tissue shading). */
    private static double[] smoothProfile(SplitMix64 rng, int n, double scale) {
        double p1 = Math.max(4, scale * rng.uniform(60, 200));
        double p2 = Math.max(4, scale * rng.uniform(25, 80));
        double f1 = rng.uniform(0, 2 * Math.PI);
        double f2 = rng.uniform(0, 2 * Math.PI);
        double[] profile = new double[n];
        for (int i = 0; i < n; i++) {
            profile[i] =
                    (StrictMath.sin(2 * Math.PI * i / p1 + f1)
                                    + 0.5 * StrictMath.sin(2 * Math.PI * i / p2 + f2))
                            / 1.5;
        }
        return profile;
    }

    /** A fast wave in [-1, 1]: the product over three axes mottles tumour tissue. */
    private static double[] mottleProfile(SplitMix64 rng, int n, double scale) {
        double p = Math.max(3, scale * rng.uniform(6, 18));
        double f = rng.uniform(0, 2 * Math.PI);
        double[] profile = new double[n];
        for (int i = 0; i < n; i++) {
            profile[i] = StrictMath.sin(2 * Math.PI * i / p + f);
        }
        return profile;
    }
}
