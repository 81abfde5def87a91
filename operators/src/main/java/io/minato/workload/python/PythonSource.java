package io.minato.workload.python;

/**
 * What a Python sample's preparation reads: the dataset's index and this JVM's worker processes.
 */
public record PythonSource(PythonWorkers workers, int index) {}
