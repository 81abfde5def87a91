package io.minato.loader.pacing;

import java.util.function.BiFunction;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.operators.coordination.OperatorCoordinator;
import org.apache.flink.runtime.operators.coordination.OperatorEventGateway;
import org.apache.flink.runtime.operators.coordination.OperatorEventHandler;
import org.apache.flink.streaming.api.operators.CoordinatedOperatorFactory;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperatorFactory;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperator;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;

/**
 * A one-input operator with an {@link OperatorCoordinator} in the JobManager, as Flink's own
 * sources and sinks have: the operator gets the gateway to its coordinator if it is {@link
 * Coordinated}, and the coordinator's events if it is an {@link OperatorEventHandler}.
 *
 * @param <IN> the operator's input
 * @param <OUT> the operator's output
 */
public final class WithCoordinator<IN, OUT> extends SimpleOperatorFactory<OUT>
        implements CoordinatedOperatorFactory<OUT>, OneInputStreamOperatorFactory<IN, OUT> {
    private static final long serialVersionUID = 1L;

    /** An operator that talks to its coordinator. */
    public interface Coordinated {
        /** Called once, before the operator is set up, with the way to its coordinator. */
        void coordinatorGateway(OperatorEventGateway gateway);
    }

    private final SerializableProvider provider;

    /** Makes the coordinator's provider from the operator's name and id. */
    @FunctionalInterface
    public interface SerializableProvider
            extends BiFunction<String, OperatorID, OperatorCoordinator.Provider>,
                    java.io.Serializable {}

    private WithCoordinator(
            OneInputStreamOperator<IN, OUT> operator, SerializableProvider provider) {
        super(operator);
        this.provider = provider;
    }

    /** {@code operator} with the coordinator {@code provider} makes. */
    public static <IN, OUT> WithCoordinator<IN, OUT> of(
            OneInputStreamOperator<IN, OUT> operator, SerializableProvider provider) {
        return new WithCoordinator<>(operator, provider);
    }

    @Override
    public <T extends StreamOperator<OUT>> T createStreamOperator(
            StreamOperatorParameters<OUT> parameters) {
        OperatorID id = parameters.getStreamConfig().getOperatorID();
        var dispatcher = parameters.getOperatorEventDispatcher();
        StreamOperator<OUT> operator = getOperator();
        if (operator instanceof Coordinated coordinated) {
            coordinated.coordinatorGateway(dispatcher.getOperatorEventGateway(id));
        }
        if (operator instanceof OperatorEventHandler handler) {
            dispatcher.registerEventHandler(id, handler);
        }
        return super.createStreamOperator(parameters);
    }

    @Override
    public OperatorCoordinator.Provider getCoordinatorProvider(String name, OperatorID id) {
        return provider.apply(name, id);
    }
}
