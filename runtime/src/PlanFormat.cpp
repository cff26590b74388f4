#include "PlanFormat.h"

#include <cstring>

namespace llmc::plan {

uint64_t checksum(const void *data, size_t size) {
  const auto *p = static_cast<const unsigned char *>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  const uint64_t prime = 0x100000001b3ull;
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * prime;
    h ^= h >> 29;
  }
  for (; i < size; ++i)
    h = (h ^ p[i]) * prime;
  return h ^ size;
}

} // namespace llmc::plan
