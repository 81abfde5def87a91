package io.minato.workload.kits19;

import io.minato.spi.Shape3;

/** A case that passed {@link CaseCheck#check}: its shape and foreground voxel counts. */
public record CaseInfo(CaseFiles files, Shape3 shape, long kidneyVoxels, long tumourVoxels) {}
