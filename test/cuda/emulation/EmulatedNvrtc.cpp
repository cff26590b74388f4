// compileToCubin (Nvrtc.h) for the CPU emulation: the generated kernel's CUDA C is compiled by the
// host compiler, with CudaEmulation.h included first, into a shared object linked against the
// library this file is in (so that the kernel's threads are this emulation's). Its "CUBIN" is
// that object's path behind a marker (EmulatedCudaRuntime.cpp's cudaLibraryLoadData opens it).
// Each kernel also gets `NAME__llmc_emu_bind`, which turns cudaLaunchKernel's argument array
// into a call with copied arguments. Objects are kept (in $TMPDIR/llmc-emulated-kernels) by a
// hash of their source and of this library's build, so a kernel compiles once per build.
#include "Nvrtc.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

#ifndef LLMC_EMU_COMPILE
#error "LLMC_EMU_COMPILE (the host compiler and the emulation's flags) must be defined"
#endif

namespace llmc::rt::cuda {
namespace {

// The parameters of `extern "C" __global__ void name(...)`, each split into type and name.
bool kernelParameters(const std::string &source, const std::string &name,
                      std::vector<std::pair<std::string, std::string>> &params) {
  const std::string head = "__global__ void " + name + "(";
  const size_t at = source.find(head);
  if (at == std::string::npos)
    return false;
  const size_t open = at + head.size(), close = source.find(')', open);
  if (close == std::string::npos)
    return false;
  std::stringstream list(source.substr(open, close - open));
  std::string param;
  while (std::getline(list, param, ',')) {
    const size_t end = param.find_last_not_of(" \t\n");
    const size_t start = param.find_last_of(" *&", end) + 1;
    std::string type = param.substr(0, start);
    for (size_t r; (r = type.find("__restrict__")) != std::string::npos;)
      type.erase(r, 12);
    params.emplace_back(type, param.substr(start, end + 1 - start));
  }
  return true;
}

// The generated code's inline PTX is a conversion, `asm("cvt.<to>.<from> %0, %1;" : "=r"(out) :
// "r"(in))`: it becomes a call of the emulation's function of that name (CudaEmulation.h).
std::string withoutPtx(const std::string &source) {
  static const std::regex cvt(R"re(asm\("cvt\.(?:rn\.)?(\w+)\.(\w+) %0, %1;"\s*:\s*"=\w"\((\w+)\)\s*:\s*"\w"\((\w+)\)\);)re");
  return std::regex_replace(source, cvt, "$3 = ::llmc_emu::cvt_$1_$2($4);");
}

// The library this file is in (the kernels link against it).
std::string thisLibrary() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void *>(&kernelParameters), &info) || !info.dli_fname)
    return {};
  return info.dli_fname;
}

} // namespace

std::string compileToCubin(const std::string &source, const std::string &name, const std::string &arch,
                           std::vector<char> &cubin) {
  (void)arch; // one object serves every architecture
  std::vector<std::pair<std::string, std::string>> params;
  if (!kernelParameters(source, name, params))
    return name + ": the emulation found no kernel '" + name + "' in the generated source";
  std::string bind = "\n#include <functional>\nextern \"C\" __attribute__((visibility(\"default\"))) "
                     "std::function<void()> *" + name + "__llmc_emu_bind(void **args) {\n";
  std::string captures, call;
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string a = "a" + std::to_string(i);
    captures += (i ? ", " : "") + a + " = *reinterpret_cast<" + params[i].first + " *>(args[" + std::to_string(i) + "])";
    call += (i ? ", " : "") + a;
  }
  bind += "  return new std::function<void()>([" + captures + "] { " + name + "(" + call + "); });\n}\n";
  const std::string full = withoutPtx(source) + bind, library = thisLibrary();
  const std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/llmc-emulated-kernels";
  mkdir(dir.c_str(), 0755);
  // Keyed by the source and this library's build (a rebuilt emulation recompiles its kernels).
  struct stat built{};
  stat(library.c_str(), &built);
  const std::string key = full + library + std::to_string(built.st_mtime) + std::to_string(built.st_size);
  const std::string stem = dir + "/" + name + "-" + std::to_string(std::hash<std::string>{}(key));
  const std::string object = stem + ".so";
  if (access(object.c_str(), R_OK) != 0) {
    std::ofstream(stem + ".cu") << full;
    const std::string temp = stem + "." + std::to_string(getpid()) + ".so";
    const std::string command = std::string(LLMC_EMU_COMPILE) + " -x c++ " + stem + ".cu -x none " + library + " -o " +
                                temp + " > " + stem + ".log 2>&1";
    if (std::system(command.c_str()) != 0) {
      std::ifstream log(stem + ".log");
      std::stringstream text;
      text << log.rdbuf();
      return name + " (emulated): the host compiler failed: " + command + "\n" + text.str().substr(0, 4000);
    }
    std::rename(temp.c_str(), object.c_str()); // whole, even with another process compiling it too
  }
  const std::string marked = "llmc-emulated-kernel:" + object;
  cubin.assign(marked.begin(), marked.end());
  cubin.push_back('\0');
  return {};
}

} // namespace llmc::rt::cuda
