package io.minato.job;

import io.minato.job.generate.GenerateCommand;
import io.minato.job.profile.ProfileCommand;
import io.minato.job.profile.StepTimeCommand;
import io.minato.job.report.PlotCommand;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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

    /** picocli's line for a value an option's converter refused, and the refusal. */
    private static final Pattern INVALID_VALUE =
            Pattern.compile("Invalid value for option '(--[\\w-]+)': (\\1 .*)", Pattern.DOTALL);

    /**
     * Set when {@code main} runs inside a JobManager (Flink's application mode): its process must
     * live on after {@code main} returns, to run the job it submitted.
     */
    private static volatile boolean insideJobManager;

    public static void main(String[] args) {
        int status = run(args);
        if (!insideJobManager) {
            System.exit(status);
        }
        if (status != 0) {
            // The JobManager reports the application as failed; the line above says why.
            throw new IllegalStateException("minato ended with exit status " + status);
        }
    }

    /** Says that {@code main} runs inside a JobManager, which it must not exit. */
    static void runsInsideJobManager() {
        insideJobManager = true;
    }

    /** Runs a command line; bad input ends in one line on stderr and a non-zero status. */
    public static int run(String... args) {
        CommandLine cli = new CommandLine(new Main());
        cli.setParameterExceptionHandler(
                (e, a) -> {
                    e.getCommandLine()
                            .getErr()
                            .println("error: " + usage(e.getMessage()) + " (see --help)");
                    return CommandLine.ExitCode.USAGE;
                });
        cli.setExecutionExceptionHandler(
                (e, commandLine, parseResult) -> Failure.report(e, commandLine.getErr()));
        return cli.execute(args);
    }

    /**
     * A usage error's line: picocli's "Invalid value for option '--x': " left out where the
     * option's own check already names the option.
     */
    static String usage(String message) {
        Matcher m = INVALID_VALUE.matcher(message);
        return m.matches() ? m.group(2) : message;
    }
}
