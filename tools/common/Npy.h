// Reading and writing NumPy .npy files (format versions 1-3, little-endian, C order).
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
const char *dtypeName(llmc_dtype dtype);

} // namespace llmc::npy
