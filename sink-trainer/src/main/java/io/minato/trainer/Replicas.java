package io.minato.trainer;

import io.minato.trainer.gpu.FlinkGpus;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a trainer joins the other devices' replicas of its run attempt, wherever Flink put them. The
 * group lives in replica 0's TaskManager, which opens a {@link ReplicaLink} and says where it is
 * through the {@link TrainerRendezvous}. A replica in the same TaskManager joins the group there; a
 * replica in another reaches it through the link ({@link RemoteMember}). Correctness never depends
 * on the placement; only the gradient's trip over the network does.
 */
public final class Replicas {
    private static final Logger LOG = LoggerFactory.getLogger(Replicas.class);

    /** How long a replica waits for replica 0 to say where the group is. */
    static final Duration FIND_TIMEOUT = ReplicaGroup.JOIN_TIMEOUT;

    /** How long replica 0's link waits, at the end, for the others to say goodbye. */
    static final Duration GOODBYE_TIMEOUT = Duration.ofSeconds(30);

    private final TrainerRendezvous rendezvous;
    private final String taskManager;
    private final String host;
    private final InetAddress bind;

    /**
     * @param taskManager this TaskManager's id
     * @param host the name other TaskManagers reach this one by
     * @param bind the address the link listens on
     */
    Replicas(TrainerRendezvous rendezvous, String taskManager, String host, InetAddress bind) {
        this.rendezvous = rendezvous;
        this.taskManager = taskManager;
        this.host = host;
        this.bind = bind;
    }

    /** Every replica in this JVM, one place (tests, an operator harness). */
    static Replicas inJvm() {
        InetAddress loopback = InetAddress.getLoopbackAddress();
        return new Replicas(TrainerRendezvous.inJvm(), "", loopback.getHostAddress(), loopback);
    }

    /**
     * Joins replica {@code replica} of {@code size} to the replicas of run attempt {@code group}.
     */
    ReplicaGroup.Member join(String group, int size, int replica) throws IOException {
        String local = group + "@" + taskManager;
        if (size == 1) {
            return ReplicaGroup.join(local, 1, 0);
        }
        if (replica == 0) {
            ReplicaGroup.LocalMember member =
                    ReplicaGroup.join(local, size, 0, ReplicaGroup.JOIN_TIMEOUT);
            ReplicaLink link = ReplicaLink.serve(group, local, size, bind);
            try {
                rendezvous.announce(
                        group, new TrainerRendezvous.Root(taskManager, host, link.port()));
            } catch (IOException | RuntimeException e) {
                link.close();
                member.leave();
                throw e;
            }
            // After training, the link closes once the others said goodbye (each must still
            // hear that training is over); after a failure, at once.
            member.afterLeaving(over -> link.close(over, GOODBYE_TIMEOUT));
            return member;
        }
        TrainerRendezvous.Root root = rendezvous.find(group, FIND_TIMEOUT);
        if (root.taskManager().equals(taskManager)) {
            return ReplicaGroup.join(local, size, replica);
        }
        LOG.info(
                "Device {} in TaskManager {} joins its replicas in TaskManager {} at {}:{}",
                replica,
                taskManager,
                root.taskManager(),
                root.host(),
                root.port());
        return RemoteMember.connect(
                new InetSocketAddress(root.host(), root.port()), group, size, replica);
    }

    /**
     * How device {@code device}'s accelerator claims one of this TaskManager's GPUs from Flink:
     * from the GPUs the other devices of run attempt {@code group} here do not hold.
     */
    FlinkGpus.Claim gpuClaim(String group) {
        return (device, gpus) -> rendezvous.claimGpu(group, taskManager, device, gpus);
    }

    /**
     * Device {@code device} of the {@code devices} devices of {@code group} closed after its last
     * step.
     *
     * @return whether it was the last of them: the one to run the run's end
     */
    boolean ended(String group, int device, int devices) throws IOException {
        return rendezvous.ended(group, device, devices);
    }
}
