// Every llmc op a plan can hold has a CPU kernel of the same name, and every kernel has an op.
#include "Kernels.h"
#include "llmc/Dialect/LlmcDialect.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <set>

TEST(KernelCoverage, EveryOpHasAKernelAndEveryKernelAnOp) {
  mlir::MLIRContext context;
  context.loadDialect<llmc::LlmcDialect>();
  std::set<std::string> ops;
  for (mlir::RegisteredOperationName op : context.getRegisteredOperations()) {
    if (op.getDialectNamespace() != "llmc")
      continue;
    std::string name = op.stripDialect().str();
    ops.insert(name);
    // constants become weights, not launches; yield ends a fused region
    if (name != "constant" && name != "yield")
      EXPECT_NE(llmc::rt::findKernel(name), nullptr) << "llmc." << name << " has no CPU kernel";
  }
  for (const std::string &kernel : llmc::rt::kernelNames())
    EXPECT_TRUE(ops.count(kernel)) << "kernel '" << kernel << "' has no llmc op";
  EXPECT_GT(ops.size(), 60u);
}
