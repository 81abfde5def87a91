package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.loader.pacing.LastFailure;
import io.minato.loader.pacing.StatelessCoordinator;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.flink.runtime.execution.SuppressRestartsException;
import org.apache.flink.runtime.operators.coordination.CoordinationResponse;
import org.junit.jupiter.api.Test;

class TrainerCoordinatorTest {
    private final List<Throwable> failed = new ArrayList<>();
    private final LastFailure failures = new LastFailure();
    private final TrainerCoordinator coordinator =
            new TrainerCoordinator(
                    new NoQueues(),
                    new CheckpointAfterRestore(() -> null, () -> 1),
                    new CheckpointLedger(() -> 0, null, 2),
                    failures,
                    failed::add);

    /**
     * Failures far apart in time or close together count alike: what counts is whether the job
     * completed a checkpoint between them. Two allowed here.
     */
    @Test
    void shouldNameARestoresRootCauseWhereItsMessageDoesNot() {
        Exception checkpoint =
                new RuntimeException(
                        "Could not perform checkpoint 3 for operator TrainerSink (1/1)#2.",
                        new IllegalStateException(
                                "snapshot failed",
                                new java.io.IOException("No space left on device")));
        assertThat(TrainerCoordinator.oneLine(checkpoint))
                .isEqualTo(
                        "Could not perform checkpoint 3 for operator TrainerSink (1/1)#2.; caused by"
                                + " IOException: No space left on device");
        Exception named =
                new RuntimeException(
                        "device 0: x.csv: No space left on device",
                        new java.io.IOException("No space left on device"));
        assertThat(TrainerCoordinator.oneLine(named))
                .isEqualTo("device 0: x.csv: No space left on device");
        assertThat(TrainerCoordinator.oneLine(new RuntimeException("two\nlines"))).isEqualTo("two");
    }

    @Test
    void shouldStopTheJobOnlyPastTheAllowedFailuresSinceTheLastCompletedCheckpoint()
            throws Exception {
        coordinator.start();
        for (int kill = 0; kill < 5; kill++) {
            // A failure, a restore, a checkpoint: progress every time.
            coordinator.executionAttemptFailed(0, kill, new IllegalStateException("lost"));
            coordinator.subtaskReset(0, kill);
            coordinator.subtaskReset(1, kill);
            coordinator.checkpointCoordinator(10 + kill, new CompletableFuture<>());
            coordinator.notifyCheckpointComplete(10 + kill);
        }
        assertThat(failed).as("five failures, each followed by a checkpoint").isEmpty();
        coordinator.subtaskReset(0, 14);
        coordinator.resetToCheckpoint(14, new byte[0]);
        assertThat(failed).as("two in a row without a checkpoint").isEmpty();
        // The last failure, heard of by another operator's coordinator.
        failures.failed(new IllegalStateException("lost again"));
        coordinator.subtaskReset(0, 14);
        assertThat(failed).hasSize(1);
        assertThat(failed.get(0)).isInstanceOf(SuppressRestartsException.class);
        assertThat(failed.get(0).getCause())
                .isInstanceOf(RestartsRunOut.class)
                .hasMessage(
                        "3 failures since the last completed checkpoint (checkpoint 14), more than"
                                + " the 2 allowed (--restart-attempts)")
                .hasRootCauseMessage("lost again");
    }

    @Test
    void shouldNotCountTheRestoreOfAJobStartedFromACheckpoint() throws Exception {
        coordinator.resetToCheckpoint(3, new byte[0]); // before start: --resume
        coordinator.start();
        coordinator.subtaskReset(0, 3);
        coordinator.subtaskReset(0, 3);
        assertThat(failed).isEmpty();
        coordinator.subtaskReset(0, 3);
        assertThat(failed).hasSize(1);
    }

    @Test
    void shouldAnswerWhereTheGroupIsOnceReplicaZeroSaidSoWhoeverAskedFirst() throws Exception {
        CompletableFuture<CoordinationResponse> asked =
                coordinator.handleCoordinationRequest(new TrainerRendezvous.Find("job/1"));
        assertThat(asked).isNotDone();
        TrainerRendezvous.Root root = new TrainerRendezvous.Root("tm-2", "host-b", 40123);
        coordinator.handleCoordinationRequest(new TrainerRendezvous.Announce("job/1", root));
        assertThat(TrainerRendezvous.Answers.root(viaRpc(asked.get()))).isEqualTo(root);
        // A later attempt is another group.
        assertThat(coordinator.handleCoordinationRequest(new TrainerRendezvous.Find("job/2")))
                .isNotDone();
    }

    @Test
    void shouldNameTheLastDeviceToEndOnceHoweverOftenEachSaysSo() throws Exception {
        assertThat(ended(0)).isFalse();
        assertThat(ended(0)).as("said again: its answer was lost").isFalse();
        assertThat(ended(2)).isFalse();
        assertThat(ended(1)).isTrue();
        assertThat(ended(1)).isTrue();
        assertThat(ended(2)).isFalse();
    }

    @Test
    void shouldGiveEachTrainerAGpuOfItsTaskManagerThatNoOtherTrainerThereHolds() throws Exception {
        // Devices 0 and 2 in tm-a, 1 and 3 in tm-b, two GPUs each.
        assertThat(claim("job/1", "tm-a", 0, 2)).isEqualTo(0);
        assertThat(claim("job/1", "tm-b", 1, 2)).isEqualTo(1);
        assertThat(claim("job/1", "tm-a", 2, 2)).as("its own, 2 mod 2, is taken").isEqualTo(1);
        assertThat(claim("job/1", "tm-b", 3, 2)).isEqualTo(0);
        assertThat(claim("job/1", "tm-a", 2, 2))
                .as("asked again: its answer was lost")
                .isEqualTo(1);
        assertThat(claim("job/1", "tm-a", 4, 2)).as("none left in tm-a").isEqualTo(-1);
        assertThat(claim("job/2", "tm-a", 2, 2)).as("a later attempt claims anew").isEqualTo(0);
    }

    private int claim(String group, String taskManager, int device, int gpus) throws Exception {
        return TrainerRendezvous.Answers.position(
                viaRpc(
                        coordinator
                                .handleCoordinationRequest(
                                        new TrainerRendezvous.ClaimGpu(
                                                group, taskManager, device, gpus))
                                .get()));
    }

    private boolean ended(int device) throws Exception {
        return TrainerRendezvous.Answers.last(
                viaRpc(
                        coordinator
                                .handleCoordinationRequest(
                                        new TrainerRendezvous.Ended("job/1", device, 3))
                                .get()));
    }

    /** As Flink's RPC carries an answer between JVMs: serialized with Java serialization. */
    private static CoordinationResponse viaRpc(CoordinationResponse response) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(response);
        }
        try (ObjectInputStream in =
                new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            return (CoordinationResponse) in.readObject();
        }
    }

    /** The queue reports' coordinator, which these requests never reach. */
    private static final class NoQueues extends StatelessCoordinator {}
}
