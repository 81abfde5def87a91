package io.minato.job;

import java.nio.file.Path;

/**
 * The run's log file: {@code flink-conf/log4j-console.properties} sends Flink's, DJL's and every
 * other library's warnings to its {@code RunLog} appender, whose file is the system property
 * {@value #PROPERTY} ({@code /dev/null} until set), and only minato's own messages to the console.
 */
final class RunLog {
    static final String PROPERTY = "minato.log.file";
    static final String FILE = "minato.log";

    private RunLog() {}

    /**
     * Points the log at {@code RUN_DIR/minato.log} and has log4j read its configuration again (by
     * reflection: log4j is the cluster's, provided, and may be another backend); a configuration
     * without the appender (tests, {@code flink run}'s client) reads the same as before.
     */
    static Path into(Path runDir) {
        Path file = runDir.resolve(FILE).toAbsolutePath();
        System.setProperty(PROPERTY, file.toString());
        try {
            Object context =
                    Class.forName("org.apache.logging.log4j.LogManager")
                            .getMethod("getContext", boolean.class)
                            .invoke(null, false);
            context.getClass().getMethod("reconfigure").invoke(context);
        } catch (ReflectiveOperationException | LinkageError e) {
            // Not log4j 2 core: its own configuration decides where logs go.
        }
        return file;
    }
}
