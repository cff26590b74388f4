// Reading and writing NumPy .npy files (format versions 1-3, little-endian, C order). NumPy has
// no bf16: a file of two-byte voids ('<V2', as ml_dtypes saves its bfloat16 arrays) reads as
// bf16, and bf16 data is written as float32.
#pragma once

#include "llmc/llmc.h"

#include <string>
#include <vector>

namespace llmc::npy {

struct Array {
  llmc_dtype dtype = LLMC_DTYPE_F32;
  std::vector<int64_t> shape;
  std::vector<char> data;
};

// Returns "" or an error message.
std::string read(const std::string &path, Array &out);
std::string write(const std::string &path, llmc_dtype dtype, const std::vector<int64_t> &shape, const void *data,
                  size_t bytes);
size_t dtypeSize(llmc_dtype dtype);
// A 16-bit float (`type`: F16 or BF16) widened, and a float rounded to one (to nearest even).
float widen16(uint16_t bits, llmc_dtype type);
uint16_t narrow16(float value, llmc_dtype type);
const char *dtypeName(llmc_dtype dtype);

} // namespace llmc::npy
