// The CPU side of CudaEmulation.h: the fiber scheduler that runs a launch (the CUDA runtime's
// calls are in EmulatedCudaRuntime.cpp).
#include "CudaEmulation.h"
#include "FiberContext.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <new>
#include <numeric>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define LLMC_EMU_ASAN 1
#endif

namespace llmc_emu {

uint3 gThreadIdx, gBlockIdx;
dim3 gBlockDim, gGridDim;

namespace {

constexpr size_t kStackBytes = 256 * 1024;
constexpr size_t kDefaultShared = 48 * 1024; // dynamic shared memory without the opt-in
constexpr size_t kStaticAlign = 64;           // of every __shared__ variable (blockStatic)

enum class State { Ready, AtBlockBarrier, AtWarpBarrier, AtGridBarrier, Done };

struct Fiber {
  FiberContext context;
  std::unique_ptr<char[]> stack;
  State state = State::Ready;
  unsigned mask = 0; // at a warp barrier: the lanes it names
  uint3 index;
  void *fakeStack = nullptr; // AddressSanitizer's, while the fiber is switched out
};

// One block in flight.
struct Block {
  std::vector<Fiber> fibers;
  FiberContext scheduler;
  size_t current = 0;
  const std::function<void()> *body = nullptr;
  unsigned char *shared = nullptr;
  std::vector<std::pair<const void *, void *>> statics; // blockStatic's: site, storage
  std::vector<uint64_t> slots; // a shuffle's offers: 32 per warp
  std::string error;
  uint64_t epoch = 0; // __syncthreads released so far (runBlock's victim warp)
  bool cooperative = false; // a cooperative launch's: syncGrid parks its threads
  // AddressSanitizer's view of the scheduler's stack, while a fiber runs.
  void *schedulerFakeStack = nullptr;
  const void *schedulerStack = nullptr;
  size_t schedulerStackSize = 0;
};

Block *gBlock = nullptr;
std::vector<std::unique_ptr<char[]>> gStacks; // reused across launches
cudaError_t gLastError = cudaSuccess;
std::map<const void *, int> gSharedAllowed; // cudaFuncAttributeMaxDynamicSharedMemorySize


// Switches contexts, announced to AddressSanitizer so that it follows the fiber stacks: the
// context left keeps its fake stack in *fakeStack (null: it never resumes, the fake stack may
// go); [bottom, bottom + size) is the stack switched to.
void switchAnnounced(FiberContext &from, FiberContext &to, void **fakeStack, const void *bottom, size_t size) {
#ifdef LLMC_EMU_ASAN
  __sanitizer_start_switch_fiber(fakeStack, bottom, size);
  switchFiberContext(from, to);
  __sanitizer_finish_switch_fiber(*fakeStack, nullptr, nullptr);
#else
  (void)fakeStack, (void)bottom, (void)size;
  switchFiberContext(from, to);
#endif
}

void enterFiber(Block &b, Fiber &f) {
  switchAnnounced(b.scheduler, f.context, &b.schedulerFakeStack, f.stack.get(), kStackBytes);
}

void yieldToScheduler() {
  Block &b = *gBlock;
  Fiber &f = b.fibers[b.current];
  switchAnnounced(f.context, b.scheduler, f.state == State::Done ? nullptr : &f.fakeStack, b.schedulerStack,
                  b.schedulerStackSize);
}

void fiberMain() {
#ifdef LLMC_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &gBlock->schedulerStack, &gBlock->schedulerStackSize);
#endif
  (*gBlock->body)();
  gBlock->fibers[gBlock->current].state = State::Done;
  yieldToScheduler();
}

std::string where() {
  const Fiber &f = gBlock->fibers[gBlock->current];
  return "thread (" + std::to_string(f.index.x) + ", " + std::to_string(f.index.y) + ", " + std::to_string(f.index.z) +
         ")";
}

// Releases the warp barriers (__syncwarp, shuffles) that every lane they name has reached:
// whether it released one; `error` says why a warp cannot go on.
bool releaseWarpBarriers(Block &b, std::string &error) {
  const size_t n = b.fibers.size();
  bool released = false;
  for (size_t warp = 0; warp * 32 < n; ++warp) {
    const size_t first = warp * 32, end = std::min(n, first + 32);
    unsigned mask = 0, waiting = 0;
    for (size_t i = first; i < end; ++i)
      if (b.fibers[i].state == State::AtWarpBarrier) {
        if (waiting && b.fibers[i].mask != mask) {
          error = "the lanes of warp " + std::to_string(warp) + " wait at warp barriers with different masks";
          return false;
        }
        mask = b.fibers[i].mask, waiting |= 1u << (i - first);
      }
    if (!waiting)
      continue;
    for (int l = 0; l < 32; ++l) {
      if (!(mask >> l & 1))
        continue;
      const size_t i = first + size_t(l);
      if (i >= end || b.fibers[i].state == State::Done) {
        error = "a __syncwarp or shuffle of warp " + std::to_string(warp) + " names lane " + std::to_string(l) +
                ", which " + (i >= end ? "the block does not have" : "has exited");
        return false;
      }
    }
    if ((waiting & mask) != waiting) {
      error = "a lane of warp " + std::to_string(warp) + " waits at a warp barrier whose mask leaves it out";
      return false;
    }
    if (waiting == mask) {
      for (size_t i = first; i < end; ++i)
        if (waiting >> (i - first) & 1)
          b.fibers[i].state = State::Ready;
      released = true;
    }
  }
  return released;
}

// Block `b`'s threads, each at the start of the kernel.
void startBlock(Block &b) {
  for (Fiber &f : b.fibers) {
    f.state = State::Ready, f.fakeStack = nullptr;
    makeFiberContext(f.context, f.stack.get(), kStackBytes, fiberMain);
  }
  b.epoch = 0;
}

// Runs the threads of block `b` (gBlock) until each has ended or, in a cooperative launch, waits
// at the grid barrier, or records why it could not. A pass runs each ready thread until its next
// barrier, in index order or in reverse; warp barriers are released after every pass. Between
// two __syncthreads one warp (the victim, a different one each time) is held back while any
// other thread can run, so that the other warps run ahead of it as far as their barriers let
// them: a warp that writes shared memory the victim has still to read, without a __syncthreads
// between, is seen (where a GPU would only do so at times).
void runBlock(Block &b, bool reverse, uint64_t salt) {
  const size_t n = b.fibers.size(), warps = (n + 31) / 32;
  for (;; ++b.epoch) {
    const size_t victim = size_t((salt + b.epoch * 7) % warps);
    for (;;) {
      bool othersReady = false;
      for (size_t i = 0; i < n && !othersReady; ++i)
        othersReady = b.fibers[i].state == State::Ready && i / 32 != victim;
      bool ran = false;
      for (size_t k = 0; k < n; ++k) {
        const size_t i = reverse ? n - 1 - k : k;
        Fiber &f = b.fibers[i];
        if (f.state != State::Ready || (othersReady && i / 32 == victim))
          continue;
        b.current = i;
        gThreadIdx = f.index;
        enterFiber(b, f);
        ran = true;
        if (!b.error.empty())
          return;
      }
      std::string why;
      const bool released = releaseWarpBarriers(b, why);
      if (!why.empty()) {
        b.error = why;
        return;
      }
      if (!ran && !released) // (nothing ran: nothing was ready) every thread done or at a barrier
        break;
    }
    size_t atBlock = 0, atGrid = 0, live = 0;
    for (const Fiber &f : b.fibers)
      if (f.state != State::Done)
        ++live, atBlock += f.state == State::AtBlockBarrier, atGrid += f.state == State::AtGridBarrier;
    if (atGrid == live) // every thread has ended, or waits for the other blocks
      return;
    if (atBlock != live) {
      b.error = "deadlock: " + std::to_string(atBlock) + " of " + std::to_string(live) +
                " running threads wait at __syncthreads, " + std::to_string(atGrid) +
                " at the grid barrier, the others at a warp barrier";
      return;
    }
    for (Fiber &f : b.fibers) // every thread that has not exited is at the __syncthreads
      f.state = State::Ready;
  }
}

void waitAt(State s, unsigned mask) {
  if (!gBlock)
    std::abort(); // a barrier outside a launch: the kernel file was not rewritten
  Fiber &f = gBlock->fibers[gBlock->current];
  f.state = s, f.mask = mask;
  yieldToScheduler();
  gThreadIdx = f.index;
}

} // namespace

void syncThreads() { waitAt(State::AtBlockBarrier, 0); }

void syncWarp(unsigned mask) { waitAt(State::AtWarpBarrier, mask); }

void syncGrid() {
  if (gBlock && !gBlock->cooperative)
    fail("a grid barrier in a launch that is not cooperative (a GPU would hang)");
  waitAt(State::AtGridBarrier, 0);
}

void exchange(unsigned mask, const void *mine, void *out, size_t bytes, int source) {
  Block &b = *gBlock;
  const size_t self = b.current, warp = self / 32;
  std::memcpy(&b.slots[self], mine, bytes);
  syncWarp(mask); // every lane has made its offer
  const size_t from = source >= 0 && source < 32 ? warp * 32 + size_t(source) : self;
  if (from != self && !(mask >> (from % 32) & 1))
    fail("a shuffle reads a lane its mask leaves out");
  std::memcpy(out, &b.slots[from], bytes);
  syncWarp(mask); // every lane has read before the next shuffle's offers
}

unsigned char *dynamicShared() { return gBlock->shared; }

void *blockStatic(const void *site, size_t bytes, size_t align) {
  if (!gBlock)
    std::abort(); // shared memory outside a launch
  for (const auto &[at, storage] : gBlock->statics)
    if (at == site)
      return storage;
  if (align > kStaticAlign)
    fail("a __shared__ variable aligned beyond 64 bytes");
  void *storage = ::operator new(bytes, std::align_val_t(kStaticAlign));
  std::memset(storage, 0xff, bytes);
  gBlock->statics.emplace_back(site, storage);
  return storage;
}

void fail(const char *why) {
  gBlock->error = std::string(why) + "; " + where();
  Fiber &f = gBlock->fibers[gBlock->current];
  f.state = State::Done;
  yieldToScheduler();
  std::abort(); // never resumed
}

namespace {

// The order a launch's blocks run in: block (start + k * stride) mod total runs k-th, with a
// stride coprime to total, so that every block runs once. It changes from launch to launch
// (forward, backward, then strides that jump about), so that a kernel whose blocks meet through
// global memory (the last block to count itself in finishing the work) sees different blocks
// come last, as on a GPU, where no order is promised.
struct BlockOrder {
  uint64_t total, start, stride;
  uint64_t at(uint64_t k) const { return uint64_t((start + (unsigned __int128)k * stride) % total); }
};

BlockOrder blockOrderFor(uint64_t total, uint64_t launch) {
  if (total < 2 || launch % 3 == 0)
    return {total, 0, 1};
  if (launch % 3 == 1)
    return {total, total - 1, total - 1}; // backward: stride -1 modulo total
  // About 0.618 of the way round, moved to the next number coprime to total.
  uint64_t stride = std::max<uint64_t>(1, total * 618 / 1000);
  while (std::gcd(stride, total) != 1)
    ++stride;
  return {total, (launch * 7919) % total, stride};
}

uint64_t gLaunches = 0; // launches run so far: each takes the next order

// Frees a block's `__shared__` variables (blockStatic).
void freeStatics(Block &b) {
  for (const auto &[site, storage] : b.statics)
    ::operator delete(storage, std::align_val_t(kStaticAlign));
  b.statics.clear();
}

// Runs every block of a launch, now.
void execute(const Launch &launch, const std::function<void()> &body) {
  const dim3 g = launch.grid, d = launch.block;
  const uint32_t threads = d.x * d.y * d.z;
  while (gStacks.size() < threads)
    gStacks.push_back(std::make_unique<char[]>(kStackBytes));
  Block b;
  b.body = &body;
  b.fibers.resize(threads);
  b.slots.resize((threads + 31) / 32 * 32);
  for (uint32_t t = 0; t < threads; ++t) {
    b.fibers[t].stack.reset(gStacks[t].release());
    b.fibers[t].index = uint3{t % d.x, t / d.x % d.y, t / (d.x * d.y)};
  }
  gGridDim = g, gBlockDim = d;
  gBlock = &b;
  const uint64_t total = uint64_t(g.x) * g.y * g.z;
  const BlockOrder blockOrder = blockOrderFor(total, gLaunches++);
  for (uint64_t k = 0; k < total && b.error.empty(); ++k) {
    const uint64_t i = blockOrder.at(k);
    const uint32_t x = uint32_t(i % g.x), y = uint32_t(i / g.x % g.y), z = uint32_t(i / (uint64_t(g.x) * g.y));
    gBlockIdx = uint3{x, y, z};
    // Exactly the launch's bytes, so that AddressSanitizer sees a read past them, at an
    // alignment no kernel asks more of (a GPU's shared memory starts on a 1 KiB boundary).
    b.shared =
        launch.shared ? static_cast<unsigned char *>(::operator new(launch.shared, std::align_val_t(1024))) : nullptr;
    if (launch.shared)
      std::memset(b.shared, 0xff, launch.shared);
    startBlock(b);
    runBlock(b, k % 2 == 1, i);
    if (b.shared)
      ::operator delete(b.shared, std::align_val_t(1024));
    freeStatics(b);
    if (!b.error.empty())
      b.error += "; block (" + std::to_string(x) + ", " + std::to_string(y) + ", " + std::to_string(z) + ")";
  }
  gBlock = nullptr;
  for (uint32_t t = 0; t < threads; ++t)
    gStacks[t].reset(b.fibers[t].stack.release());
  if (!b.error.empty())
    setError(cudaErrorLaunchFailure, "kernel: " + b.error);
}

// Runs a cooperative launch: every block in flight, each run in turn until its threads have
// ended or wait at the grid barrier, which is released once every thread that has not ended
// waits there. A block that ends while others wait would leave them waiting for ever on a GPU:
// an error here.
void executeCooperative(const Launch &launch, const std::function<void()> &body) {
  const dim3 g = launch.grid, d = launch.block;
  const uint32_t threads = d.x * d.y * d.z;
  const uint64_t total = uint64_t(g.x) * g.y * g.z;
  while (gStacks.size() < total * threads)
    gStacks.push_back(std::make_unique<char[]>(kStackBytes));
  std::vector<Block> blocks(total);
  auto coordinates = [&](uint64_t i) {
    return uint3{uint32_t(i % g.x), uint32_t(i / g.x % g.y), uint32_t(i / (uint64_t(g.x) * g.y))};
  };
  for (uint64_t i = 0; i < total; ++i) {
    Block &b = blocks[i];
    b.body = &body, b.cooperative = true;
    b.fibers.resize(threads);
    b.slots.resize((threads + 31) / 32 * 32);
    for (uint32_t t = 0; t < threads; ++t) {
      b.fibers[t].stack.reset(gStacks[i * threads + t].release());
      b.fibers[t].index = uint3{t % d.x, t / d.x % d.y, t / (d.x * d.y)};
    }
    b.shared =
        launch.shared ? static_cast<unsigned char *>(::operator new(launch.shared, std::align_val_t(1024))) : nullptr;
    if (launch.shared)
      std::memset(b.shared, 0xff, launch.shared);
    startBlock(b);
  }
  gGridDim = g, gBlockDim = d;
  const BlockOrder blockOrder = blockOrderFor(total, gLaunches++);
  std::string error;
  for (uint64_t round = 0; error.empty(); ++round) {
    for (uint64_t k = 0; k < total && error.empty(); ++k) { // each round in the other direction
      const uint64_t i = blockOrder.at(round % 2 ? total - 1 - k : k);
      gBlock = &blocks[i], gBlockIdx = coordinates(i);
      runBlock(blocks[i], (k + round) % 2 == 1, i + round);
      if (!blocks[i].error.empty())
        error = blocks[i].error + "; block (" + std::to_string(gBlockIdx.x) + ", " + std::to_string(gBlockIdx.y) +
                ", " + std::to_string(gBlockIdx.z) + ")";
    }
    size_t ended = 0, waiting = 0;
    for (const Block &b : blocks) {
      const bool done =
          std::all_of(b.fibers.begin(), b.fibers.end(), [](const Fiber &f) { return f.state == State::Done; });
      ended += done, waiting += !done;
    }
    if (!error.empty() || !waiting)
      break;
    if (ended) {
      error = "deadlock: " + std::to_string(ended) + " of " + std::to_string(total) +
              " blocks have ended while the others wait at the grid barrier";
      break;
    }
    for (Block &b : blocks) // every thread that has not ended is at the grid barrier
      for (Fiber &f : b.fibers)
        if (f.state == State::AtGridBarrier)
          f.state = State::Ready;
  }
  gBlock = nullptr;
  for (uint64_t i = 0; i < total; ++i) {
    Block &b = blocks[i];
    if (b.shared)
      ::operator delete(b.shared, std::align_val_t(1024));
    freeStatics(b);
    for (uint32_t t = 0; t < threads; ++t)
      gStacks[i * threads + t].reset(b.fibers[t].stack.release());
  }
  if (!error.empty())
    setError(cudaErrorLaunchFailure, "kernel: " + error);
}

} // namespace

void run(const void *kernel, const Launch &launch, std::function<void()> body) {
  // The launch is checked when it is made, as the driver checks it.
  const dim3 g = launch.grid, d = launch.block;
  const uint64_t threads = uint64_t(d.x) * d.y * d.z;
  if (!g.x || !g.y || !g.z || !threads || threads > 1024 || d.z > 64 || g.y > 65535 || g.z > 65535 ||
      g.x > 0x7fffffffu) {
    setError(cudaErrorInvalidConfiguration, "launch: grid (" + std::to_string(g.x) + ", " + std::to_string(g.y) +
                                                ", " + std::to_string(g.z) + "), block of " + std::to_string(threads));
    return;
  }
  const auto allowed = gSharedAllowed.find(kernel);
  const size_t sharedLimit = allowed == gSharedAllowed.end() ? kDefaultShared : size_t(allowed->second);
  if (launch.shared > sharedLimit) {
    setError(cudaErrorInvalidValue, "launch: " + std::to_string(launch.shared) + " bytes of dynamic shared memory, " +
                                        std::to_string(sharedLimit) + " allowed for this kernel");
    return;
  }
  if (launch.cooperative && uint64_t(g.x) * g.y * g.z * threads > kMaxCooperativeThreads) {
    setError(cudaErrorCooperativeLaunchTooLarge,
             "launch: a cooperative launch of " + std::to_string(uint64_t(g.x) * g.y * g.z) + " blocks of " +
                 std::to_string(threads) + " threads, more than the emulation's " +
                 std::to_string(kMaxCooperativeThreads) + " threads in flight");
    return;
  }
  enqueue(launch.stream, [launch, body = std::move(body)] {
    if (launch.cooperative)
      executeCooperative(launch, body);
    else
      execute(launch, body);
  });
}

void setError(cudaError_t e, const std::string &why) {
  if (gLastError == cudaSuccess)
    gLastError = e;
  std::fprintf(stderr, "[cuda emulation] %s\n", why.c_str());
}

cudaError_t takeError() {
  const cudaError_t e = gLastError;
  gLastError = cudaSuccess;
  return e;
}

cudaError_t peekError() { return gLastError; }

void allowShared(const void *kernel, int bytes) { gSharedAllowed[kernel] = bytes; }

} // namespace llmc_emu
