// What one step from a decode step's kernel to the next costs on the GPU (StepCostBench.cu).
#pragma once

// Prints the figures; returns the failures (0 where the GPU cannot launch a cooperative kernel:
// those rows are said skipped).
int stepCostBench();
