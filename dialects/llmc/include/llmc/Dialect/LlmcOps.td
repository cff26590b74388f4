// All llmc ops, one file per family.
#ifndef LLMC_OPS_TD
#define LLMC_OPS_TD

include "llmc/Dialect/AttentionOps.td"
include "llmc/Dialect/ConvolutionOps.td"
include "llmc/Dialect/ElementwiseOps.td"
include "llmc/Dialect/FusedOps.td"
include "llmc/Dialect/LinalgOps.td"
include "llmc/Dialect/NormalizationOps.td"
include "llmc/Dialect/ReductionOps.td"
include "llmc/Dialect/ShapeOps.td"

#endif // LLMC_OPS_TD
