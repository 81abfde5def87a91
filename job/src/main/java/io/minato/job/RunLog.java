package io.minato.job;

import java.nio.file.Path;

/**
 * The run's log file: {@code flink-conf/log4j-console.properties} sends Flink's, DJL's and every
 * other library's warnings to its {@code RunLog} appender, whose file is the system property
 * {@value #PROPERTY} ({@code /dev/null} until set), and only minato's own messages to the console.
 *
 * <p>For a process that launches the job and reads what it says ({@code train --log-events FILE}),
 * the same messages go to its {@code Events} appender instead of the console, one JSON object a
 * line ({@code time}, {@code level}, {@code logger}, {@code message}, {@code exception}), into the
 * file {@value #EVENTS_PROPERTY} names.
 */
final class RunLog {
    static final String PROPERTY = "minato.log.file";
    static final String FILE = "minato.log";

    /** The file of the log's events as JSON lines ({@code /dev/null} until set). */
    static final String EVENTS_PROPERTY = "minato.events.file";

    /** The least level of the console's log lines ({@code ALL} until set; {@code OFF}: none). */
    static final String CONSOLE_PROPERTY = "minato.console.level";

    private RunLog() {}

    /** Points the log at {@code RUN_DIR/minato.log}. */
    static Path into(Path runDir) {
        Path file = runDir.resolve(FILE).toAbsolutePath();
        System.setProperty(PROPERTY, file.toString());
        reconfigure();
        return file;
    }

    /** Sends the console's log events to {@code file} as JSON lines, in place of the console. */
    static void events(Path file) {
        System.setProperty(EVENTS_PROPERTY, file.toAbsolutePath().toString());
        System.setProperty(CONSOLE_PROPERTY, "OFF");
        reconfigure();
    }

    /**
     * Has log4j read its configuration again (by reflection: log4j is the cluster's, provided, and
     * may be another backend); a configuration without these appenders (tests, {@code flink run}'s
     * client) reads the same as before.
     */
    private static void reconfigure() {
        try {
            Object context =
                    Class.forName("org.apache.logging.log4j.LogManager")
                            .getMethod("getContext", boolean.class)
                            .invoke(null, false);
            context.getClass().getMethod("reconfigure").invoke(context);
        } catch (ReflectiveOperationException | LinkageError e) {
            // Not log4j 2 core: its own configuration decides where logs go.
        }
    }
}
