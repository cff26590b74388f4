// Compiling generated CUDA C with NVRTC, which needs no GPU: the compiler builds the plan's
// kernels for its target architectures with it, and tests on build machines check that every
// generated kernel compiles.
#pragma once

#include <string>
#include <vector>

namespace llmc::rt::cuda {

// Compiles `source` for `arch` ("sm_80", "sm_90a") into CUBIN. Returns an error message (with
// NVRTC's log) or empty on success.
std::string compileToCubin(const std::string &source, const std::string &name, const std::string &arch,
                           std::vector<char> &cubin);

} // namespace llmc::rt::cuda
