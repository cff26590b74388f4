#include "FiberContext.h"

#include <cstdint>

#if defined(__x86_64__)
// llmc_emu_switch(void **from, void *to): pushes rbp, rbx, r12-r15 and the SSE and x87 control
// words on the running stack, saves its pointer in *from, takes `to` as the stack and pops the
// same from it; `ret` then resumes where that stack was left (or a new fiber's entry).
asm(R"(
  .text
  .globl llmc_emu_switch
  .type llmc_emu_switch, @function
llmc_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size llmc_emu_switch, .-llmc_emu_switch
  .section .note.GNU-stack, "", @progbits
  .text
)");
extern "C" void llmc_emu_switch(void **from, void *to);
#endif

namespace llmc_emu {

#if defined(__x86_64__)
void makeFiberContext(FiberContext &c, char *stack, size_t bytes, void (*entry)()) {
  auto *sp = reinterpret_cast<uint64_t *>(reinterpret_cast<uintptr_t>(stack + bytes) & ~uintptr_t(15));
  *--sp = 0;                                   // entry's return address: it never returns
  *--sp = reinterpret_cast<uint64_t>(entry);   // where the first switch's `ret` goes
  for (int i = 0; i < 6; ++i)
    *--sp = 0;                                 // rbp, rbx, r12-r15
  uint32_t mxcsr;
  uint16_t x87;
  asm volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(mxcsr), "=m"(x87));
  *--sp = uint64_t(mxcsr) | uint64_t(x87) << 32; // the control words the switch loads
  c.sp = sp;
}

void switchFiberContext(FiberContext &from, FiberContext &to) { llmc_emu_switch(&from.sp, to.sp); }
#else
void makeFiberContext(FiberContext &c, char *stack, size_t bytes, void (*entry)()) {
  getcontext(&c.context);
  c.context.uc_stack.ss_sp = stack;
  c.context.uc_stack.ss_size = bytes;
  c.context.uc_link = nullptr;
  makecontext(&c.context, entry, 0);
}

void switchFiberContext(FiberContext &from, FiberContext &to) { swapcontext(&from.context, &to.context); }
#endif

} // namespace llmc_emu
