// The CUDA runtime calls our kernels, their tests and the CUDA executor make, on the CPU
// emulation (CudaEmulation.h). Device memory is host memory; a stream runs its work when it is
// enqueued, unless the stream is capturing, when the work goes into the graph being captured and
// runs at each launch of that graph; so every synchronisation is already done. A "library" is a
// shared object EmulatedNvrtc.cpp compiled from a kernel's CUDA C.
#include "CudaEmulation.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

// The runtime's opaque handles, given a body here.
struct CUstream_st {
  bool capturing = false;
  std::vector<std::function<void()>> captured;
};
struct CUgraph_st {
  std::vector<std::function<void()>> nodes;
};
struct CUgraphExec_st {
  std::vector<std::function<void()>> nodes;
};
// The host's clock when the event was recorded: an elapsed time is the emulation's, nothing a GPU
// would take.
struct CUevent_st {
  std::chrono::steady_clock::time_point at = std::chrono::steady_clock::now();
};
struct CUlib_st {
  void *handle = nullptr;
};
// A kernel of a library: binds a launch's argument array to a call (see EmulatedNvrtc.cpp).
struct CUkern_st {
  std::function<void()> *(*bind)(void **args) = nullptr;
};

namespace llmc_emu {

namespace {
constexpr int kSharedOptIn = 227 * 1024; // an H100 or H200 block's opt-in limit
// The static shared memory every kernel is taken to have (the emulation cannot measure it): on a
// GPU a kernel's dynamic maximum and its static use together may not pass the opt-in limit, so
// that code setting the whole limit as a kernel's dynamic maximum fails here as it would there.
constexpr int kStaticShared = 1024;
constexpr int kMultiprocessors = 132;
constexpr const char *kLibraryMagic = "llmc-emulated-kernel:"; // what EmulatedNvrtc.cpp's "CUBIN" starts with

std::map<void *, size_t> &allocations() {
  static std::map<void *, size_t> m;
  return m;
}
} // namespace

void enqueue(cudaStream_t stream, std::function<void()> work) {
  if (stream && stream->capturing)
    stream->captured.push_back(std::move(work));
  else
    work();
}

} // namespace llmc_emu

using llmc_emu::enqueue;

extern "C" {

// --- memory -----------------------------------------------------------------------------------

cudaError_t cudaMalloc(void **p, size_t bytes) {
  // Exactly `bytes` (at cudaMalloc's 256-byte alignment), so that AddressSanitizer's redzone
  // starts where the buffer ends; all-ones bytes (NaN in every float, -1 in every integer), as
  // device memory holds whatever was there: a kernel that reads what nothing wrote, or a counter
  // that nothing set to zero, shows.
  *p = ::operator new(bytes ? bytes : 1, std::align_val_t(256));
  std::memset(*p, 0xff, bytes);
  llmc_emu::allocations()[*p] = bytes;
  return cudaSuccess;
}

cudaError_t cudaFree(void *p) {
  if (!p)
    return cudaSuccess;
  if (!llmc_emu::allocations().erase(p))
    return cudaErrorInvalidDevicePointer;
  ::operator delete(p, std::align_val_t(256));
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t bytes) {
  *p = ::operator new(bytes ? bytes : 1, std::align_val_t(4096));
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned) { return cudaMallocHost(p, bytes); }
cudaError_t cudaFreeHost(void *p) {
  ::operator delete(p, std::align_val_t(4096));
  return cudaSuccess;
}
cudaError_t cudaHostRegister(void *, size_t, unsigned) { return cudaSuccess; }
cudaError_t cudaHostUnregister(void *) { return cudaSuccess; }

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind) {
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind, cudaStream_t stream) {
  enqueue(stream, [=] { std::memmove(dst, src, bytes); });
  return cudaSuccess;
}
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind, cudaStream_t stream) {
  enqueue(stream, [=] {
    for (size_t row = 0; row < height; ++row)
      std::memmove(static_cast<char *>(dst) + row * dpitch, static_cast<const char *>(src) + row * spitch, width);
  });
  return cudaSuccess;
}
cudaError_t cudaMemset(void *p, int value, size_t bytes) {
  std::memset(p, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t stream) {
  enqueue(stream, [=] { std::memset(p, value, bytes); });
  return cudaSuccess;
}

// --- streams, capture and graphs ----------------------------------------------------------------

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned) {
  *stream = new CUstream_st;
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t *stream) { return cudaStreamCreateWithFlags(stream, 0); }
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete stream;
  return cudaSuccess;
}
// A failed kernel is reported at the next synchronisation, as on a GPU.
cudaError_t cudaStreamSynchronize(cudaStream_t) { return llmc_emu::peekError(); }
// Work runs as it is enqueued: an event is passed as soon as it is recorded.
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned) {
  *event = new CUevent_st;
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *event) { return cudaEventCreateWithFlags(event, 0); }
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (stream && stream->capturing)
    return cudaErrorStreamCaptureUnsupported;
  event->at = std::chrono::steady_clock::now();
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
  if (!ms || !start || !end)
    return cudaErrorInvalidValue;
  *ms = std::chrono::duration<float, std::milli>(end->at - start->at).count();
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return llmc_emu::peekError(); }
cudaError_t cudaDeviceSynchronize() { return llmc_emu::peekError(); }

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
  if (!stream || stream->capturing)
    return cudaErrorIllegalState;
  stream->capturing = true;
  stream->captured.clear();
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph) {
  if (!stream || !stream->capturing)
    return cudaErrorIllegalState;
  stream->capturing = false;
  *graph = new CUgraph_st{std::move(stream->captured)};
  stream->captured.clear();
  return cudaSuccess;
}
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *count) {
  if (nodes)
    return cudaErrorNotSupported;
  *count = graph->nodes.size();
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long) {
  *exec = new CUgraphExec_st{graph->nodes};
  return cudaSuccess;
}
// The update a GPU would refuse (another topology) is refused here too: another node count.
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph, cudaGraphExecUpdateResultInfo *info) {
  if (exec->nodes.size() != graph->nodes.size()) {
    if (info)
      info->result = cudaGraphExecUpdateErrorTopologyChanged;
    return cudaErrorGraphExecUpdateFailure;
  }
  exec->nodes = graph->nodes;
  if (info)
    info->result = cudaGraphExecUpdateSuccess;
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (stream && stream->capturing)
    return cudaErrorNotSupported;
  for (const auto &node : exec->nodes)
    node();
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}

// --- libraries of generated kernels -------------------------------------------------------------

cudaError_t cudaLibraryLoadData(cudaLibrary_t *library, const void *code, cudaJitOption *, void **, unsigned,
                                cudaLibraryOption *, void **, unsigned) {
  const char *text = static_cast<const char *>(code);
  const size_t magic = std::strlen(llmc_emu::kLibraryMagic);
  if (std::strncmp(text, llmc_emu::kLibraryMagic, magic) != 0) {
    llmc_emu::setError(cudaErrorInvalidKernelImage, "a real CUBIN cannot run on the emulation");
    return cudaErrorInvalidKernelImage;
  }
  void *handle = dlopen(text + magic, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    llmc_emu::setError(cudaErrorInvalidKernelImage, std::string("loading an emulated kernel: ") + dlerror());
    return cudaErrorInvalidKernelImage;
  }
  *library = new CUlib_st{handle};
  return cudaSuccess;
}
cudaError_t cudaLibraryGetKernel(cudaKernel_t *kernel, cudaLibrary_t library, const char *name) {
  void *bind = dlsym(library->handle, (std::string(name) + "__llmc_emu_bind").c_str());
  if (!bind)
    return cudaErrorSymbolNotFound;
  *kernel = new CUkern_st{reinterpret_cast<std::function<void()> *(*)(void **)>(bind)};
  return cudaSuccess;
}
cudaError_t cudaLibraryUnload(cudaLibrary_t library) {
  // Kernels found in it stay valid until then; the handles of kernels are not tracked (a few
  // bytes each, for the life of a context).
  dlclose(library->handle);
  delete library;
  return cudaSuccess;
}
cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shared, cudaStream_t stream) {
  auto *kernel = static_cast<const CUkern_st *>(func);
  std::unique_ptr<std::function<void()>> call(kernel->bind(args));
  llmc_emu::run(func, llmc_emu::Launch(grid, block, shared, stream), std::move(*call));
  return llmc_emu::peekError();
}

// --- errors, the device, kernel attributes ----------------------------------------------------

cudaError_t cudaGetLastError() { return llmc_emu::takeError(); }
cudaError_t cudaPeekAtLastError() { return llmc_emu::peekError(); }

const char *cudaGetErrorString(cudaError_t e) {
  switch (e) {
  case cudaSuccess: return "no error";
  case cudaErrorInvalidValue: return "invalid argument (emulated)";
  case cudaErrorInvalidConfiguration: return "invalid configuration argument (emulated)";
  case cudaErrorLaunchFailure: return "unspecified launch failure (emulated: see the message above)";
  case cudaErrorInvalidKernelImage: return "device kernel image is invalid (emulated: see the message above)";
  default: return "error (emulated)";
  }
}

cudaError_t cudaGetDeviceCount(int *count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int *device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *props, int) {
  *props = cudaDeviceProp{};
  std::snprintf(props->name, sizeof props->name, "CPU emulation of an H200");
  props->major = 9, props->minor = 0;
  props->sharedMemPerBlockOptin = size_t(llmc_emu::kSharedOptIn);
  props->sharedMemPerBlock = 48 * 1024;
  props->multiProcessorCount = llmc_emu::kMultiprocessors;
  props->totalGlobalMem = size_t(141) << 30;
  props->maxThreadsPerBlock = 1024;
  props->cooperativeLaunch = 1; // at most kMaxCooperativeThreads threads (CudaEmulation.h)
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int) {
  switch (attr) {
  case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = llmc_emu::kSharedOptIn; return cudaSuccess;
  case cudaDevAttrMultiProcessorCount: *value = llmc_emu::kMultiprocessors; return cudaSuccess;
  case cudaDevAttrComputeCapabilityMajor: *value = 9; return cudaSuccess;
  case cudaDevAttrComputeCapabilityMinor: *value = 0; return cudaSuccess;
  case cudaDevAttrCooperativeLaunch: *value = 1; return cudaSuccess;
  default: return cudaErrorInvalidValue;
  }
}

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attributes, const void *) {
  if (!attributes)
    return cudaErrorInvalidValue;
  *attributes = cudaFuncAttributes{};
  attributes->sharedSizeBytes = size_t(llmc_emu::kStaticShared);
  attributes->maxThreadsPerBlock = 1024;
  attributes->maxDynamicSharedSizeBytes = 48 * 1024 - llmc_emu::kStaticShared;
  return cudaSuccess;
}

// Registers are unknown here: an H200 multiprocessor's thread limit alone (2048, at most 32 blocks).
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, const void *, int blockSize, size_t) {
  if (blockSize <= 0 || blockSize > 1024)
    return cudaErrorInvalidValue;
  *numBlocks = std::min(2048 / blockSize, 32);
  return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, const void *func, int blockSize,
                                                                   size_t shared, unsigned) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(numBlocks, func, blockSize, shared);
}

cudaError_t cudaFuncSetAttribute(const void *func, cudaFuncAttribute attr, int value) {
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize)
    return cudaSuccess;
  if (value < 0 || value + llmc_emu::kStaticShared > llmc_emu::kSharedOptIn) {
    llmc_emu::setError(cudaErrorInvalidValue, "cudaFuncSetAttribute: " + std::to_string(value) +
                                                   " bytes of dynamic shared memory and the static ones pass the "
                                                   "device's " + std::to_string(llmc_emu::kSharedOptIn));
    return cudaErrorInvalidValue;
  }
  llmc_emu::allowShared(func, value);
  return cudaSuccess;
}

} // extern "C"
