package io.minato.trainer;

import java.util.Map;
import java.util.TreeMap;
import one.profiler.AsyncProfiler;
import one.profiler.AsyncProfilerLoader;
import one.profiler.Counter;

/**
 * Counts the calls into DJL's PyTorch JNI ({@code ai.djl.pytorch.jni.JniUtils}) that a piece of
 * code makes, by async-profiler's instrumentation of every one of its methods: each call is one
 * recorded stack whose innermost {@code JniUtils} frame names the call.
 */
final class JniCalls {
    /** An array made from a host buffer: on a GPU, a copy to the device that waits for it. */
    static final String FROM_HOST = "createNdFromByteBuffer";

    /** An array's values read into a host buffer: on a GPU, a copy that waits for the device. */
    static final String TO_HOST = "getByteBuffer";

    private static final String JNI = "ai/djl/pytorch/jni/JniUtils.";

    private JniCalls() {}

    /** The code to count the calls of. */
    interface Work {
        void run() throws Exception;
    }

    /**
     * The calls {@code work} makes, by JNI method, counting only those whose stack passes through a
     * frame that contains {@code within} (a class and method, as {@code
     * io/minato/trainer/DjlAccelerator.train}), so that other threads' calls do not count.
     */
    static Map<String, Long> during(String within, Work work) throws Exception {
        AsyncProfiler profiler = AsyncProfilerLoader.load();
        profiler.execute("start,event=ai.djl.pytorch.jni.JniUtils.*,interval=1");
        String collapsed;
        try {
            work.run();
        } finally {
            profiler.execute("stop");
            collapsed = profiler.dumpCollapsed(Counter.SAMPLES);
        }
        Map<String, Long> calls = new TreeMap<>();
        collapsed
                .lines()
                .filter(line -> line.contains(within))
                .forEach(
                        line -> {
                            int space = line.lastIndexOf(' ');
                            String stack = line.substring(0, space);
                            int frame = stack.lastIndexOf(JNI);
                            int end = stack.indexOf(';', frame);
                            String method =
                                    stack.substring(
                                            frame + JNI.length(), end < 0 ? stack.length() : end);
                            calls.merge(
                                    method.replaceAll("_\\[.\\]$", ""),
                                    Long.parseLong(line.substring(space + 1)),
                                    Long::sum);
                        });
        return calls;
    }
}
