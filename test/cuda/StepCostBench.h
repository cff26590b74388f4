// What one step from a decode step's kernel to the next costs on the GPU (StepCostBench.cu).
#pragma once

// Prints the figures; returns the failures (0 where the GPU cannot launch a cooperative kernel:
// those rows are said skipped). `smoke`: 3 steps, as if the GPU had 2 multiprocessors (the CPU
// emulation's run).
int stepCostBench(bool smoke);
