#include "Nvrtc.h"

#include <nvrtc.h>

namespace llmc::rt::cuda {

std::string compileToCubin(const std::string &source, const std::string &name, const std::string &arch,
                           std::vector<char> &cubin) {
  nvrtcProgram program;
  if (nvrtcCreateProgram(&program, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS)
    return "nvrtcCreateProgram failed";
  const std::string archFlag = "--gpu-architecture=" + arch;
  const char *options[] = {archFlag.c_str(), "--std=c++17"};
  const nvrtcResult compiled = nvrtcCompileProgram(program, 2, options);
  std::string error;
  if (compiled != NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetProgramLogSize(program, &size);
    std::string log(size, '\0');
    nvrtcGetProgramLog(program, log.data());
    error = name + " (" + arch + "): " + nvrtcGetErrorString(compiled) + "\n" + log;
  } else {
    size_t size = 0;
    nvrtcGetCUBINSize(program, &size);
    cubin.resize(size);
    nvrtcGetCUBIN(program, cubin.data());
  }
  nvrtcDestroyProgram(&program);
  return error;
}

} // namespace llmc::rt::cuda
