package io.minato.trainer.gpu;

import static org.bytedeco.cuda.global.nvml.NVML_DEVICE_NAME_V2_BUFFER_SIZE;
import static org.bytedeco.cuda.global.nvml.NVML_SUCCESS;
import static org.bytedeco.cuda.global.nvml.nvmlDeviceGetCount_v2;
import static org.bytedeco.cuda.global.nvml.nvmlDeviceGetHandleByIndex_v2;
import static org.bytedeco.cuda.global.nvml.nvmlDeviceGetMemoryInfo;
import static org.bytedeco.cuda.global.nvml.nvmlDeviceGetName;
import static org.bytedeco.cuda.global.nvml.nvmlErrorString;
import static org.bytedeco.cuda.global.nvml.nvmlInit_v2;
import static org.bytedeco.cuda.global.nvml.nvmlShutdown;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.bytedeco.cuda.global.nvml;
import org.bytedeco.cuda.nvml.nvmlDevice_st;
import org.bytedeco.cuda.nvml.nvmlMemory_t;
import org.bytedeco.javacpp.Loader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds the GPUs of this machine through NVML (JavaCPP CUDA presets), once per JVM.
 *
 * <p>Indices are NVML's (PCI bus order, all GPUs the driver shows). CUDA, and so DJL's {@code
 * Device.gpu(i)}, numbers GPUs the same way only with {@code CUDA_DEVICE_ORDER=PCI_BUS_ID} and no
 * {@code CUDA_VISIBLE_DEVICES}; on a server with identical GPUs the orders agree in practice.
 */
public final class GpuProbe {

    /** How long detection may take before we give up and report no GPU. */
    static final Duration TIMEOUT = Duration.ofSeconds(30);

    static final String LIBRARIES_NOT_FOUND = "CUDA/NVML libraries not found";

    private static final Logger LOG = LoggerFactory.getLogger(GpuProbe.class);

    private GpuProbe() {}

    // A failed native load cannot be retried (the class is then "Could not initialize"), so the
    // first answer is the only true one: keep it.
    private static final class Cached {
        static final Gpus GPUS = detectWithin(TIMEOUT, GpuProbe::probeNvml);
    }

    /** The visible GPUs, or none with a one-line reason; never throws, at most {@link #TIMEOUT}. */
    public static Gpus detect() {
        return Cached.GPUS;
    }

    /**
     * Runs {@code probe} on a daemon thread so that a wedged driver, which can block nvmlInit
     * indefinitely, costs {@code timeout} rather than the job.
     */
    static Gpus detectWithin(Duration timeout, Supplier<Gpus> probe) {
        FutureTask<Gpus> task = new FutureTask<>(probe::get);
        Thread thread = new Thread(task, "gpu-probe");
        thread.setDaemon(true);
        thread.start();
        try {
            Gpus gpus = task.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            if (gpus.present()) {
                LOG.info("{}", gpus.reason());
            } else {
                // Every CPU run: not news. Asking for a GPU (--devices gpu) prints the reason
                // with the fallback to the CPU.
                LOG.debug("{}", gpus.reason());
            }
            return gpus;
        } catch (TimeoutException e) {
            long ms = timeout.toMillis();
            String after = ms < 1000 ? ms + " ms" : ms / 1000 + " s";
            Gpus none = Gpus.none("NVML did not answer", "gave up after " + after);
            LOG.warn("{}", none.reason());
            return none;
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            LOG.debug("GPU probe failed", cause);
            return Gpus.none("GPU probe failed", oneLine(cause));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Gpus.none("GPU probe interrupted", "");
        }
    }

    static Gpus probeNvml() {
        try {
            Loader.load(nvml.class);
        } catch (LinkageError e) {
            // UnsatisfiedLinkError "no jnicudart in java.library.path": no CUDA on this machine.
            LOG.debug("NVML did not load", e);
            return Gpus.none(LIBRARIES_NOT_FOUND, oneLine(e));
        }
        int rc = nvmlInit_v2();
        if (rc != NVML_SUCCESS) {
            return Gpus.none("NVML did not initialise", error("nvmlInit_v2", rc));
        }
        try {
            int[] count = new int[1];
            rc = nvmlDeviceGetCount_v2(count);
            if (rc != NVML_SUCCESS) {
                return Gpus.none("NVML could not count devices", error("nvmlDeviceGetCount", rc));
            }
            if (count[0] == 0) {
                return Gpus.none("NVML found 0 devices", "");
            }
            List<Gpu> gpus = new ArrayList<>();
            for (int i = 0; i < count[0]; i++) {
                Gpu gpu = describe(i);
                if (gpu != null) {
                    gpus.add(gpu);
                }
            }
            return gpus.isEmpty()
                    ? Gpus.none("NVML could not open any of its " + count[0] + " devices", "")
                    : Gpus.found(gpus);
        } finally {
            nvmlShutdown();
        }
    }

    /** GPU {@code index}, or null (logged) when NVML cannot open it, e.g. no permission. */
    private static Gpu describe(int index) {
        nvmlDevice_st device = new nvmlDevice_st();
        int rc = nvmlDeviceGetHandleByIndex_v2(index, device);
        if (rc != NVML_SUCCESS) {
            LOG.warn("skipping GPU {}: {}", index, error("nvmlDeviceGetHandleByIndex", rc));
            return null;
        }
        byte[] name = new byte[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
        rc = nvmlDeviceGetName(device, name, name.length);
        String text = rc == NVML_SUCCESS ? cString(name) : "GPU " + index;
        try (nvmlMemory_t memory = new nvmlMemory_t()) {
            rc = nvmlDeviceGetMemoryInfo(device, memory);
            return new Gpu(index, text, rc == NVML_SUCCESS ? memory.total() : 0);
        }
    }

    static String error(String call, int rc) {
        return call + ": " + nvmlErrorString(rc).getString() + " (NVML code " + rc + ")";
    }

    private static String cString(byte[] bytes) {
        int end = 0;
        while (end < bytes.length && bytes[end] != 0) {
            end++;
        }
        return new String(bytes, 0, end, StandardCharsets.UTF_8);
    }

    /**
     * {@code SimpleName: message} on one line. The JVM's library path that an UnsatisfiedLinkError
     * appends is left out; JavaCPP's first failure, kept as the cause, is added as it names the
     * missing library (e.g. {@code libcuda.so.1}, {@code libcudart.so.13}), which says what to
     * install.
     */
    static String oneLine(Throwable t) {
        String line = t.getClass().getSimpleName() + ": " + firstLine(t.getMessage());
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        if (root != t) {
            String cause = firstLine(root.getMessage());
            // "/cache/.../libjnicudart.so: libcuda.so.1: cannot open ...": the JNI file is ours.
            int so = cause.startsWith("/") ? cause.indexOf(".so: ") : -1;
            line += "; " + (so >= 0 ? cause.substring(so + ".so: ".length()) : cause);
        }
        return line;
    }

    private static String firstLine(String message) {
        String m = String.valueOf(message);
        int path = m.indexOf("java.library.path");
        if (path >= 0) {
            m = m.substring(0, path + "java.library.path".length());
        }
        return m.lines().findFirst().orElse("").strip();
    }
}
