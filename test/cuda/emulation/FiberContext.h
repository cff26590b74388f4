// The least a fiber needs: a stack of its own and a switch to and from it. On x86-64 the switch
// saves the callee-saved registers on the stack it leaves (no system call: ucontext's
// swapcontext saves the signal mask with one, which made a launch of many small blocks cost
// seconds); elsewhere ucontext does it.
#pragma once

#include <cstddef>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace llmc_emu {

struct FiberContext {
#if defined(__x86_64__)
  void *sp = nullptr;
#else
  ucontext_t context;
#endif
};

// Prepares `c` to run `entry` (which must never return) on [stack, stack + bytes).
void makeFiberContext(FiberContext &c, char *stack, size_t bytes, void (*entry)());
// Saves the running context in `from` and resumes `to`.
void switchFiberContext(FiberContext &from, FiberContext &to);

} // namespace llmc_emu
