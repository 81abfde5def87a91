package io.minato.job.docs;

import io.minato.job.Main;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import picocli.CommandLine;

/**
 * Renders every command's own usage message into {@code docs/options.md}, so that the page is
 * picocli's help and cannot drift from it. {@link OptionsDocTest} checks the committed page.
 */
public final class OptionsDoc {
    /** A fixed width: the page must not depend on the terminal that wrote it. */
    static final int WIDTH = 100;

    /** The page, relative to the repository root. */
    static final Path PAGE = Path.of("docs", "options.md");

    /** How to write the page again; the test's failure names it. */
    static final String REGENERATE =
            "mvn -o -q -pl job test -Dtest=OptionsDocTest -Dsurefire.failIfNoSpecifiedTests=false"
                    + " -Dminato.options.write=true";

    private OptionsDoc() {}

    /** The whole page: the top-level usage, then one section per subcommand, in picocli's order. */
    public static String render() {
        CommandLine cli = new CommandLine(new Main());
        cli.setUsageHelpWidth(WIDTH);
        cli.setUsageHelpAutoWidth(false);
        StringBuilder page = new StringBuilder();
        page.append("# Command-line options\n\n")
                .append("Generated from the commands' own `--help` (picocli); do not edit by hand.")
                .append(" To write it again:\n\n    ")
                .append(REGENERATE)
                .append("\n\nEvery command runs as `scripts/run COMMAND [options]`, and `train` as")
                .append(" `flink run job/target/minato-job.jar train [options]` on a cluster.\n");
        section(page, "minato", cli);
        for (Map.Entry<String, CommandLine> sub : cli.getSubcommands().entrySet()) {
            if (sub.getKey().equals("help")) {
                continue;
            }
            section(page, "minato " + sub.getKey(), sub.getValue());
        }
        return page.toString();
    }

    private static void section(StringBuilder page, String title, CommandLine command) {
        String usage = command.getUsageMessage(CommandLine.Help.Ansi.OFF);
        page.append("\n## `").append(title).append("`\n\n```\n");
        // Trailing blanks on a line are picocli's padding; Markdown and diffs do without them.
        for (String line : usage.strip().split("\n", -1)) {
            page.append(line.stripTrailing()).append('\n');
        }
        page.append("```\n");
    }

    /** Writes the page under the repository root given, or the parent of the working folder. */
    public static void main(String[] args) throws IOException {
        Path root = args.length > 0 ? Path.of(args[0]) : Path.of("..");
        write(root.resolve(PAGE));
    }

    static void write(Path page) throws IOException {
        Files.writeString(page, render(), StandardCharsets.UTF_8);
    }
}
