package io.minato.job;

import io.minato.data.BadInputException;
import io.minato.job.generate.GenerateCommand;
import io.minato.job.profile.ProfileCommand;
import io.minato.job.profile.StepTimeCommand;
import io.minato.job.report.PlotCommand;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The command line of minato-flink: train, evaluate, generate, profile, step-time, plot. */
@Command(
        name = "minato",
        mixinStandardHelpOptions = true,
        description =
                "MinatoLoader on Apache Flink: a training data loader that keeps accelerators busy.",
        subcommands = {
            TrainCommand.class,
            EvaluateCommand.class,
            GenerateCommand.class,
            ProfileCommand.class,
            StepTimeCommand.class,
            PlotCommand.class,
            CommandLine.HelpCommand.class
        })
public final class Main {
    /** Exit status for bad input (a file the loader refuses). */
    public static final int EXIT_BAD_INPUT = 3;

    public static void main(String[] args) {
        System.exit(run(args));
    }

    /** Runs a command line; bad input ends in one line on stderr and a non-zero status. */
    public static int run(String... args) {
        CommandLine cli = new CommandLine(new Main());
        cli.setParameterExceptionHandler(
                (e, a) -> {
                    e.getCommandLine()
                            .getErr()
                            .println("error: " + e.getMessage() + " (see --help)");
                    return CommandLine.ExitCode.USAGE;
                });
        cli.setExecutionExceptionHandler(
                (e, commandLine, parseResult) -> {
                    if (e instanceof BadInputException) {
                        commandLine.getErr().println("error: " + e.getMessage());
                        return EXIT_BAD_INPUT;
                    }
                    // The trace helps whoever debugs; the last line says what happened.
                    e.printStackTrace(commandLine.getErr());
                    commandLine.getErr().println("error: " + rootCause(e));
                    return 1;
                });
        return cli.execute(args);
    }

    private static String rootCause(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        String m = t.getMessage();
        return t.getClass().getSimpleName()
                + (m == null ? "" : ": " + m.lines().findFirst().orElse(""));
    }
}
