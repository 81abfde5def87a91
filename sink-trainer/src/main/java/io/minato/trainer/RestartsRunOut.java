package io.minato.trainer;

/**
 * Why the trainers' coordinator stopped the job: more failures since its last completed checkpoint
 * than {@code --restart-attempts} allows. Its cause is the last failure a trainer reported, when
 * one did.
 */
public final class RestartsRunOut extends Exception {
    private static final long serialVersionUID = 1L;

    public RestartsRunOut(String message, Throwable cause) {
        super(message, cause);
    }
}
