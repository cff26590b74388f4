// What DeepSeek's decode attention over its latent cache costs on the GPU, its keys in one block
// per group of heads or shared out among several (LatentBench.cpp).
#pragma once

#include <cstddef>

// Prints the figures (shares of `hbmBytesPerSecond`); returns the failures. `smoke`: small widths
// (the CPU emulation's run); `sms`: the device's multiprocessors; `workspaceBytes`: the split
// workspace's size, as the executor's attention workspace.
int latentBench(int reps, bool smoke, int sms, size_t workspaceBytes, double hbmBytesPerSecond);
