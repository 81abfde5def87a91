package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;

class ClusterSlotsTest {

    @Test
    void shouldReadTheSlotsOfAJobManagersOverview() {
        assertThat(
                        ClusterSlots.slotsIn(
                                "{\"taskmanagers\":3,\"slots-total\":6,\"slots-available\":6}"))
                .hasValue(6);
        assertThat(ClusterSlots.slotsIn("{\"taskmanagers\":3}")).isEmpty();
        assertThat(ClusterSlots.slotsIn("{\"taskmanagers\":0,\"slots-total\":0}")).isEmpty();
        assertThat(ClusterSlots.slotsIn("<html>not json</html>")).isEmpty();
    }

    @Test
    void shouldGiveEverySlotTheTrainersLeaveToPreparationAndRefuseWhenNoneIsLeft() {
        assertThat(ClusterSlots.preparationWorkers(6, 2)).isEqualTo(4);
        assertThatThrownBy(() -> ClusterSlots.preparationWorkers(2, 2))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("the cluster has 2 task slot(s)")
                .hasMessageContaining("--devices")
                .hasMessageNotContaining("\n");
    }

    @Test
    void shouldSayNothingWhenNoJobManagerAnswers() {
        Configuration c = new Configuration();
        c.setString("rest.address", "localhost");
        c.setString("rest.port", Integer.toString(FlinkSetup.freePort()));
        assertThat(ClusterSlots.total(c)).isEmpty();
    }

    @Test
    void shouldAddUpTheGpusOfTheTaskManagers() {
        String two =
                "{\"taskmanagers\":[{\"id\":\"tm-1\",\"totalResource\":{\"cpuCores\":4.0,"
                        + "\"extendedResources\":{\"gpu\":2.0}}},{\"id\":\"tm-2\","
                        + "\"totalResource\":{\"cpuCores\":4.0,\"extendedResources\":{}}}]}";
        assertThat(ClusterSlots.gpusIn(two)).hasValue(2);
        String three =
                "{\"taskmanagers\":[{\"id\":\"tm-1\",\"totalResource\":{\"cpuCores\":4.0,"
                        + "\"extendedResources\":{\"gpu\":2.0}}},{\"id\":\"tm-2\","
                        + "\"totalResource\":{\"cpuCores\":4.0,\"extendedResources\":{\"gpu\":1.0}}}]}";
        assertThat(ClusterSlots.gpusIn(three)).hasValue(3);
        assertThat(ClusterSlots.gpusIn("{\"taskmanagers\":[]}")).isEmpty();
        assertThat(ClusterSlots.tooFewGpus(4, 3))
                .contains("4 GPU(s)", "have 3 in all", "--devices gpus:N with N at most 3")
                .doesNotContain("\n");
        assertThat(ClusterSlots.tooFewGpus(1, 0))
                .contains("have none: start TaskManagers with", "or give --devices cpu");
    }
}
