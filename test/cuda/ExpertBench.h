// What a mixture of experts' projections cost on the GPU, a prompt's and a decode step's
// (ExpertBench.cpp).
#pragma once

// Prints the figures (shares of `hbmBytesPerSecond`); returns the failures. `smoke`: a small
// layer (the CPU emulation's run).
int expertBench(int reps, bool smoke, double hbmBytesPerSecond);
