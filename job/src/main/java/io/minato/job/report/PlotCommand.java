package io.minato.job.report;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * The {@code plot} command: the table of medians of a {@code scripts/bench} result and its PNG
 * plots, with {@link BenchPlots}; or the memory curve of a {@code scripts/soak} ({@link SoakPlot}).
 */
@Command(
        name = "plot",
        mixinStandardHelpOptions = true,
        description =
                "Prints the table of medians of a scripts/bench result (bench.json) and writes its"
                        + " plots: wall.png (wall time, min-max whiskers, the bound) and busy.png"
                        + " (accelerator busy %%), against the simulated step time, per loader; or,"
                        + " with --soak, soak.png, the memory curve of a scripts/soak run.")
public final class PlotCommand implements Callable<Integer> {

    @Spec private CommandSpec spec;

    @ArgGroup(multiplicity = "1")
    private Input input;

    /** Exactly one of the two inputs. */
    static final class Input {
        @Option(
                names = "--bench",
                required = true,
                paramLabel = "FILE",
                description = "The bench.json scripts/bench wrote.")
        Path bench;

        @Option(
                names = "--soak",
                required = true,
                paramLabel = "FILE",
                description = "The soak.csv scripts/soak wrote.")
        Path soak;
    }

    @Option(
            names = "--out",
            paramLabel = "DIR",
            description = "Folder for the PNGs, created if missing (default: the folder of FILE).")
    private Path out;

    @Override
    public Integer call() throws Exception {
        PrintWriter o = spec.commandLine().getOut();
        if (input.soak != null) {
            Path dir = out != null ? out : input.soak.toAbsolutePath().getParent();
            o.println("plot: " + SoakPlot.read(input.soak).write(dir));
            o.flush();
            return 0;
        }
        Path bench = input.bench;
        BenchPlots plots = new BenchPlots(BenchPlots.read(bench));
        Path dir = out != null ? out : bench.toAbsolutePath().getParent();
        o.print(plots.table());
        o.flush();
        List<Path> written = plots.write(dir);
        o.println("plots: " + String.join(" ", written.stream().map(Path::toString).toList()));
        o.flush();
        return 0;
    }
}
