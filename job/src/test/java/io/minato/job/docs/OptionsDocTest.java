package io.minato.job.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class OptionsDocTest {

    /** The committed page: the job module's tests run in job/, the page is in the root's docs/. */
    private static final Path PAGE = Path.of("..").resolve(OptionsDoc.PAGE);

    @Test
    void shouldMatchTheCommittedOptionsPage() throws IOException {
        String rendered = OptionsDoc.render();
        if (Boolean.getBoolean("minato.options.write")) {
            OptionsDoc.write(PAGE);
        }
        String committed = Files.exists(PAGE) ? Files.readString(PAGE, StandardCharsets.UTF_8) : "";
        assertThat(committed)
                .as(
                        "docs/options.md differs from the commands' --help; regenerate it with: "
                                + OptionsDoc.REGENERATE)
                .isEqualTo(rendered);
    }

    @Test
    void shouldListEveryCommandButHelp() {
        assertThat(OptionsDoc.render())
                .contains("## `minato train`", "## `minato generate`", "## `minato plot`")
                .doesNotContain("## `minato help`");
    }
}
