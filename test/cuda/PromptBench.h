// What a 512-token prompt's kernels cost on the GPU (PromptBench.cpp).
#pragma once

#include <cstddef>

// Prints the figures; returns the failures. `lt` is a cublasLtHandle_t, `workspace` cuBLASLt's
// workspace of `workspaceBytes`. `smoke`: one small model's layer (the CPU emulation's run).
int promptBench(void *lt, void *workspace, size_t workspaceBytes, int reps, bool smoke);
