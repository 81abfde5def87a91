package io.minato.spi;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class PatchPoolTest {
    private static final Shape3 CUBE = new Shape3(4, 4, 4);

    @Test
    void shouldAllocateWhenEmptyAndReuseWhatWasGivenBack() {
        PatchPool pool = new PatchPool(1 << 20);
        Patch first = pool.take(CUBE);
        assertThat(first.shape()).isEqualTo(CUBE);
        assertThat(pool.allocated()).isEqualTo(1);

        pool.give(first);
        assertThat(pool.bytes()).isEqualTo(5 * 64);
        Patch again = pool.take(CUBE);
        assertThat(again.image()).isSameAs(first.image());
        assertThat(again.label()).isSameAs(first.label());
        assertThat(pool.reused()).isEqualTo(1);
        assertThat(pool.bytes()).isZero();

        Patch fresh = pool.take(CUBE);
        assertThat(fresh.image()).isNotSameAs(first.image());
        assertThat(pool.allocated()).isEqualTo(2);
    }

    @Test
    void shouldReuseArraysForAnotherShapeOfTheSameSize() {
        PatchPool pool = new PatchPool(1 << 20);
        Patch cube = pool.take(CUBE);
        pool.give(cube);
        Shape3 flat = new Shape3(1, 8, 8);
        Patch reused = pool.take(flat);
        assertThat(reused.shape()).isEqualTo(flat);
        assertThat(reused.image()).isSameAs(cube.image());
        assertThat(pool.take(new Shape3(2, 2, 2)).image()).hasSize(8);
    }

    @Test
    void shouldKeepNoMoreThanItsBoundAndIgnoreNothing() {
        PatchPool pool = new PatchPool(5 * 64 + 5 * 63); // room for one 4^3 patch
        pool.give(pool.take(CUBE));
        pool.give(new Patch(CUBE, new float[64], new byte[64]));
        assertThat(pool.bytes()).isEqualTo(5 * 64);
        pool.give(null);
        assertThat(pool.bytes()).isEqualTo(5 * 64);
    }

    @Test
    void shouldRoundByteArraysUpToItsGrainAndReuseThem() {
        PatchPool pool = new PatchPool(1 << 20);
        byte[] a = pool.takeBytes(4097);
        assertThat(a).hasSize(2 * PatchPool.BYTES_GRAIN);
        assertThat(pool.takeBytes(0)).hasSize(PatchPool.BYTES_GRAIN);
        pool.giveBytes(a);
        assertThat(pool.bytes()).isEqualTo(2 * PatchPool.BYTES_GRAIN);
        assertThat(pool.takeBytes(8000)).as("another length, the same grains").isSameAs(a);
        assertThat(pool.bytes()).isZero();
        assertThat(pool.takeBytes(8000)).isNotSameAs(a);
    }

    @Test
    void shouldBoundByteArraysAndPatchesTogetherAndLeaveForeignArraysAlone() {
        PatchPool pool = new PatchPool(PatchPool.BYTES_GRAIN + 5 * 64);
        pool.give(pool.take(CUBE));
        pool.giveBytes(new byte[PatchPool.BYTES_GRAIN]);
        assertThat(pool.bytes()).isEqualTo(PatchPool.BYTES_GRAIN + 5 * 64);
        pool.giveBytes(new byte[PatchPool.BYTES_GRAIN]);
        pool.giveBytes(new byte[100]); // not one the pool gave: its length is off the grain
        pool.giveBytes(null);
        assertThat(pool.bytes()).isEqualTo(PatchPool.BYTES_GRAIN + 5 * 64);
    }
}
