package io.minato.trainer.gpu;

import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * What {@link GpuProbe} found: the visible GPUs, or none and why.
 *
 * @param list the GPUs in NVML index order; empty when there is none
 * @param cause short reason there is no GPU, for the fallback line (e.g. {@code CUDA/NVML libraries
 *     not found}); empty when GPUs were found
 * @param detail what the library said (e.g. {@code UnsatisfiedLinkError: no jnicudart in
 *     java.library.path}); may be empty
 */
public record Gpus(List<Gpu> list, String cause, String detail) {

    public Gpus {
        list = List.copyOf(list);
    }

    /** GPUs were found. */
    public static Gpus found(List<Gpu> gpus) {
        if (gpus.isEmpty()) {
            throw new IllegalArgumentException("found() needs at least one GPU; use none()");
        }
        return new Gpus(gpus, "", "");
    }

    /** No GPU, for {@code cause} (short) with {@code detail} (what the library said, or ""). */
    public static Gpus none(String cause, String detail) {
        return new Gpus(List.of(), cause, detail);
    }

    public boolean present() {
        return !list.isEmpty();
    }

    public int count() {
        return list.size();
    }

    /** The GPU with NVML index {@code index}, if visible. */
    public Optional<Gpu> get(int index) {
        return list.stream().filter(g -> g.index() == index).findFirst();
    }

    /**
     * One line for the log and the report: {@code no GPU: <cause> (<detail>)} or {@code 2 GPUs: 0
     * NVIDIA ... (79.6 GiB), 1 ...}.
     */
    public String reason() {
        if (present()) {
            return list.size()
                    + (list.size() == 1 ? " GPU: " : " GPUs: ")
                    + list.stream().map(Gpu::toString).collect(Collectors.joining(", "));
        }
        return "no GPU: " + cause + (detail.isEmpty() ? "" : " (" + detail + ")");
    }
}
