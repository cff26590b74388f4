// Runs after every other kernel test (this file links last): each registered kernel must
// have been called by some test.
#include "KernelTestUtil.h"

using namespace llmc::rt;
using namespace llmc::rt::test;

TEST(Kernels, ZZEveryKernelIsTested) {
  for (const std::string &name : kernelNames())
    EXPECT_TRUE(tested().count(name)) << "kernel '" << name << "' has no test";
}
