package io.minato.job;

import java.util.Locale;

/**
 * {@code --workers}: {@code auto}, as many fast workers as cores paced by the worker scheduler, or
 * a number of them, each preparing whenever it has work.
 *
 * @param count the number given; 0 for {@code auto}
 */
record Workers(int count) {
    static final Workers AUTO = new Workers(0);

    /** Parses {@code auto} (any case) or a whole number >= 1; one line naming the option else. */
    static Workers parse(String value) {
        String v = value.strip();
        if (v.toLowerCase(Locale.ROOT).equals("auto")) {
            return AUTO;
        }
        int n;
        try {
            n = Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "--workers must be auto or a number, not '" + value + "'");
        }
        if (n < 1) {
            throw new IllegalArgumentException("--workers must be >= 1, not " + n);
        }
        return new Workers(n);
    }

    boolean auto() {
        return count == 0;
    }

    @Override
    public String toString() {
        return auto() ? "auto" : Integer.toString(count);
    }
}
