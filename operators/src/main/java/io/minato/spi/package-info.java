/**
 * What a workload gives the loader: a {@link io.minato.spi.SampleSet} (list, check, open), {@link
 * io.minato.spi.Transforms} that prepare a sample as resumable {@link io.minato.spi.Steps}, bundled
 * as a {@link io.minato.spi.Workload}. The fast/slow split, the baselines' loaders, checkpoints and
 * the trainers' recipe work on this alone. Its records ({@link io.minato.spi.SampleKey}, {@link
 * io.minato.spi.Patch}, {@link io.minato.spi.Shape3}, {@link io.minato.spi.SampleRandom}) belong to
 * no workload. Each workload is a package of its own: KiTS19 3D segmentation ({@code
 * io.minato.workload.kits19.CaseTable} with {@code io.minato.workload.kits19.MlperfTransforms}) and
 * image classification ({@code io.minato.workload.images.ImageFolder} with {@code
 * io.minato.workload.images.ImageTransforms}).
 */
package io.minato.spi;
