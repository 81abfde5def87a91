package io.minato.trainer;

import ai.djl.pytorch.jni.JniUtils;

/**
 * Work outside autograd: in-place writes to parameters and the optimizer's state, which are part of
 * no graph. libtorch's grad mode is per thread; the thread's mode is restored after.
 */
final class NoGrad {
    private NoGrad() {}

    static void run(Runnable work) {
        boolean gradMode = JniUtils.isGradMode();
        JniUtils.setGradMode(false);
        try {
            work.run();
        } finally {
            JniUtils.setGradMode(gradMode);
        }
    }
}
