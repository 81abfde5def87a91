package io.minato.job;

import java.util.Locale;

/**
 * The {@code --devices} spec: {@code cpu}, {@code cpu:N} (N trainer replicas on the CPU), {@code
 * gpu} or {@code gpu:0,1,...}. Without a usable GPU a GPU spec falls back to one CPU device, with
 * one line saying so.
 */
public record Devices(String kind, int count) {

    public static Devices parse(String spec, java.io.PrintWriter err) {
        String s = spec.trim().toLowerCase(Locale.ROOT);
        if (s.equals("cpu")) {
            return new Devices("cpu", 1);
        }
        if (s.startsWith("cpu:")) {
            int n = parsePositive(s.substring(4), spec);
            return new Devices("cpu", n);
        }
        if (s.equals("gpu") || s.startsWith("gpu:")) {
            // GPU training comes with the DJL trainer; until then every GPU spec runs on the CPU.
            err.println("no GPU support in this build: running on cpu instead of " + spec);
            return new Devices("cpu", 1);
        }
        throw new IllegalArgumentException(
                "--devices must be cpu, cpu:N, gpu or gpu:0,1,...; not '" + spec + "'");
    }

    private static int parsePositive(String n, String spec) {
        try {
            int v = Integer.parseInt(n);
            if (v >= 1) {
                return v;
            }
        } catch (NumberFormatException e) {
            // falls through
        }
        throw new IllegalArgumentException("--devices " + spec + ": N must be a positive integer");
    }
}
