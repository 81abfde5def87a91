package io.minato.workload.kits19;

import java.util.List;

/**
 * What a preparation may remember about one case between samples, epochs and runs: results that are
 * a pure function of the case's files, never of the seed or epoch. Implementations must be safe to
 * share by threads; remembering is best effort (a memo may forget, or never remember).
 */
public interface CaseMemo {

    /** Remembers nothing: every sample computes everything. */
    CaseMemo NONE =
            new CaseMemo() {
                @Override
                public List<Component> foregroundComponents() {
                    return null;
                }

                @Override
                public void rememberForegroundComponents(List<Component> components) {}
            };

    /**
     * The connected components of the case's label volume (what RandBalancedCrop's foreground
     * branch needs from its scan), or null when they are not known yet.
     */
    List<Component> foregroundComponents();

    /** Keeps the complete result of a scan of this case's label volume. */
    void rememberForegroundComponents(List<Component> components);
}
