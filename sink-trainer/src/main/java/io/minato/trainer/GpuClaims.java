package io.minato.trainer;

import java.util.HashMap;
import java.util.Map;

/**
 * The GPUs the trainers of one run attempt hold, by TaskManager: each trainer claims a position
 * among its TaskManager's GPUs ({@link io.minato.trainer.gpu.FlinkGpus.Claim}). Trainer {@code d}
 * gets position {@code d mod gpus} when it is free, so that trainers all in one TaskManager take
 * the GPUs in device order, and otherwise the next free one after it. Asking again gives the same
 * answer.
 */
final class GpuClaims {
    private final Map<String, Map<Integer, Integer>> byTaskManager = new HashMap<>();

    /**
     * The position trainer {@code device} holds among the {@code gpus} GPUs of TaskManager {@code
     * taskManager}; -1 when the other trainers there hold all of them.
     */
    synchronized int claim(String taskManager, int device, int gpus) {
        Map<Integer, Integer> held =
                byTaskManager.computeIfAbsent(taskManager, t -> new HashMap<>());
        Integer mine = held.get(device);
        if (mine != null) {
            return mine;
        }
        if (gpus <= 0) {
            return -1;
        }
        int preferred = device % gpus;
        for (int i = 0; i < gpus; i++) {
            int position = (preferred + i) % gpus;
            if (!held.containsValue(position)) {
                held.put(device, position);
                return position;
            }
        }
        return -1;
    }
}
