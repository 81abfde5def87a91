package io.minato.sample.serde;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.sample.UnfinishedSample;
import io.minato.spi.Patch;
import io.minato.workload.kits19.Preparation;
import io.minato.workload.kits19.Volume;
import java.util.List;
import java.util.stream.LongStream;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;
import org.junit.jupiter.api.Test;

/** Every sample type crosses a network exchange in a local job that forbids generic types. */
class NoKryoPipelineTest {

    private static final OutputTag<UnfinishedSample> SLOW =
            new OutputTag<>("slow", SampleTypes.UNFINISHED_SAMPLE);

    @Test
    void shouldCarrySampleTypesBetweenOperatorsWithGenericTypesDisabled() throws Exception {
        Configuration conf = new Configuration();
        conf.set(PipelineOptions.GENERIC_TYPES, false);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(2);
        // Every edge a serialized exchange, none a chained hand-over.
        env.disableOperatorChaining();

        SampleTask[] tasks =
                LongStream.range(0, 8).mapToObj(SampleFixtures::task).toArray(SampleTask[]::new);
        // No .returns() anywhere: each output type comes from the records' @TypeInfo.
        SingleOutputStreamOperator<PreparedSample> fast =
                env.fromData(tasks).rebalance().process(new SplitOddToSlow());
        DataStream<PreparedSample> slow =
                fast.getSideOutput(SLOW)
                        .rebalance()
                        .map(
                                u ->
                                        new PreparedSample(
                                                u.task(),
                                                SamplePath.SLOW,
                                                u.prepCpuNanos(),
                                                finish(SampleFixtures.resumed(u))));
        DataStream<Batch> batches =
                fast.union(slow)
                        .rebalance()
                        .map(s -> new Batch(0, s.task().index(), List.of(s, s)));

        assertThat(fast.getType()).isSameAs(SampleTypes.PREPARED_SAMPLE);
        assertThat(batches.getType()).isSameAs(SampleTypes.BATCH);

        List<Batch> collected = batches.executeAndCollect("no-kryo", 100);

        assertThat(collected)
                .extracting(Batch::sequence)
                .containsExactlyInAnyOrder(0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L);
        for (Batch b : collected) {
            PreparedSample s = b.samples().get(0);
            assertThat(s.path())
                    .isEqualTo(s.task().index() % 2 == 0 ? SamplePath.FAST : SamplePath.SLOW);
            // The slow path resumed a serialized preparation: still bit-identical to one pass.
            Patch expected =
                    Preparation.prepare(
                            s.task().key(), SampleFixtures.volume(), SampleFixtures.CONFIG);
            assertThat(s.patch().sameContent(expected)).as("sample %s", s.task()).isTrue();
        }
    }

    /** Prepares even samples in full; stops odd ones after two steps and sends them slow. */
    static final class SplitOddToSlow extends ProcessFunction<SampleTask, PreparedSample> {
        @Override
        public void processElement(SampleTask task, Context ctx, Collector<PreparedSample> out) {
            Volume v = SampleFixtures.volume();
            if (task.index() % 2 == 0) {
                out.collect(
                        new PreparedSample(
                                task,
                                SamplePath.FAST,
                                1,
                                Preparation.prepare(task.key(), v, SampleFixtures.CONFIG)));
            } else {
                Preparation p = Preparation.start(task.key());
                p.advance(v, SampleFixtures.CONFIG);
                p.advance(v, SampleFixtures.CONFIG);
                ctx.output(SLOW, new UnfinishedSample(task, p, 1, 0));
            }
        }
    }

    private static Patch finish(Preparation p) {
        Volume v = SampleFixtures.volume();
        while (!p.isDone()) {
            p.advance(v, SampleFixtures.CONFIG);
        }
        return p.result();
    }
}
