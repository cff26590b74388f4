// What a mixture of experts' prompt projections cost on the GPU (ExpertBench.cpp).
#pragma once

// Prints the figures (shares of `hbmBytesPerSecond`); returns the failures. `smoke`: a small
// layer (the CPU emulation's run).
int expertBench(int reps, bool smoke, double hbmBytesPerSecond);
