// Builds small plan files in memory for the runtime tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace llmc::test {

// y = x + w with x an f32[2,3] input and w an f32[3] weight {1, 2, 3}. With `weightDeviceDType`
// (f16 or bf16: a reduced-precision plan), w is stored as three 16-bit numbers: the first six
// bytes of those floats, {0, 0x3f80, 0} (bf16 {0, 1, 0}).
std::vector<uint8_t> addPlan(uint32_t formatVersion = 1, uint8_t weightDeviceDType = 0);

// A plan with a symbolic dimension: x is f32[batch, 3] with batch in 1..4, y = x + w (w as
// above) and z = concat(y, x) along axis 0, so z is f32[2*batch, 3].
std::vector<uint8_t> dynamicPlan();

// Byte offsets of the sections of a plan built above.
struct Sections {
  uint64_t programOffset, programSize, weightsOffset, weightsSize;
};
Sections sectionsOf(const std::vector<uint8_t> &plan);

// Writes `bytes` to a fresh file under the test temp dir and returns its path.
std::string writeTemp(const std::string &name, const std::vector<uint8_t> &bytes);

} // namespace llmc::test
