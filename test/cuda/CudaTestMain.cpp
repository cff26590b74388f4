// The CUDA kernel tests' main: without a GPU it exits with 77, which CTest reports as skipped.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char **argv) {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    std::printf("no CUDA device (%s): the CUDA tests are skipped, not passed\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    return 77;
  }
#ifdef LLMC_CUDA_EMULATION
  std::printf("the CUDA kernels run on the CPU emulation (test/cuda/emulation): this is not a GPU run\n");
#endif
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
