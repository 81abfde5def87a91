package io.minato.job.workload.images;

import io.minato.data.BadInputException;
import io.minato.job.report.RunReport;
import io.minato.job.workload.DataSplit;
import io.minato.job.workload.HeldOut;
import io.minato.job.workload.TrainingSet;
import io.minato.spi.Workload;
import io.minato.trainer.Network;
import io.minato.trainer.images.ImageClassifier;
import io.minato.workload.images.ImageConfig;
import io.minato.workload.images.ImageFile;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.List;

/** The images workload's folder: a small CNN learns it, top-1 accuracy scores it. */
record ImageSet(ImageData.Images images) implements TrainingSet {

    @Override
    public Workload<?> workload() {
        return images.workload();
    }

    @Override
    public DataSplit split() {
        return images;
    }

    @Override
    public boolean remembers() {
        return images.remembers();
    }

    @Override
    public String unit() {
        return "images (" + images.classes() + " classes)";
    }

    @Override
    public String heldUnit() {
        return "image(s)";
    }

    @Override
    public Network network(double width, String name) {
        return new ImageClassifier(
                images.classes(), width, ImageClassifier.Architecture.named(name));
    }

    @Override
    public HeldOut heldOut() {
        return new HeldImages(images.held(), images.config());
    }

    /** The held-out images, scored by top-1 accuracy after torchvision's evaluation transforms. */
    record HeldImages(List<ImageFile> held, ImageConfig config) implements HeldOut {
        private static final long serialVersionUID = 1L;

        HeldImages {
            held = List.copyOf(held);
        }

        @Override
        public RunReport.Outcome evaluated(
                RunReport.Outcome outcome, Trained trained, PrintWriter err)
                throws IOException, BadInputException {
            return outcome.evaluated(
                    null,
                    ImageData.accuracy(
                            trained.dir(),
                            held,
                            config,
                            (ImageClassifier) trained.network(),
                            trained.device()));
        }
    }
}
