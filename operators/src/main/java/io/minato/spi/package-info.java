/**
 * What a workload gives the loader: a {@link io.minato.spi.SampleSet} (list, check, open), {@link
 * io.minato.spi.Transforms} that prepare a sample as resumable {@link io.minato.spi.Steps}, bundled
 * as a {@link io.minato.spi.Workload}. The fast/slow split, the baselines' loaders, checkpoints and
 * the trainers' recipe work on this alone; KiTS19 3D segmentation ({@code
 * io.minato.loader.CaseTable} with {@code io.minato.transform.MlperfTransforms}) is one
 * implementation of it.
 */
package io.minato.spi;
