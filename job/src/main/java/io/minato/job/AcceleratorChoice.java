package io.minato.job;

import io.minato.trainer.AcceleratorFactory;
import io.minato.trainer.SimulatedAccelerator;

/**
 * {@code --accelerator}: what each device does with its batches. Parsed once, where the option is
 * read; {@link #toString} is the value as the start line and the run's options give it.
 */
sealed interface AcceleratorChoice {

    /** Real DJL training. */
    record Real() implements AcceleratorChoice {
        @Override
        public String toString() {
            return "real";
        }
    }

    /** A step that sleeps and uses no CPU. */
    record Simulated(SimulatedAccelerator.Factory factory, String text)
            implements AcceleratorChoice {
        @Override
        public String toString() {
            return text;
        }
    }

    /**
     * Each device served to rank r of a PyTorch training process.
     *
     * @param port the first device's port, device r on port + r; 0: any free port
     */
    record Serve(int port) implements AcceleratorChoice {
        @Override
        public String toString() {
            return port == 0 ? "serve" : "serve:" + port;
        }
    }

    /** Parses {@code real}, {@code simulated:MS} or {@code serve[:PORT]}; one line else. */
    static AcceleratorChoice parse(String value) {
        if (value.equals("real")) {
            return new Real();
        }
        if (value.equals("serve")) {
            return new Serve(0);
        }
        if (value.startsWith("serve:")) {
            int port;
            try {
                port = Integer.parseInt(value.substring("serve:".length()));
            } catch (NumberFormatException e) {
                port = -1;
            }
            if (port < 1 || port > 65535) {
                throw new IllegalArgumentException(
                        "bad accelerator '"
                                + value
                                + "': expected serve or serve:PORT, PORT 1-65535");
            }
            return new Serve(port);
        }
        if (value.startsWith(SimulatedAccelerator.PREFIX)) {
            return new Simulated(SimulatedAccelerator.parse(value), value);
        }
        throw new IllegalArgumentException(
                "bad accelerator '" + value + "': expected real, simulated:MS or serve[:PORT]");
    }

    /** The factory of the simulated step; null for another accelerator. */
    default AcceleratorFactory simulated() {
        return this instanceof Simulated s ? s.factory() : null;
    }
}
