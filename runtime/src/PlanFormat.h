// The fixed header of a plan file and the checksum that guards its sections.
// Shared by the writer (compiler/plan) and the reader (runtime). See docs/plan-format.md.
#pragma once

#include <cstddef>
#include <cstdint>

namespace llmc::plan {

inline constexpr char kMagic[8] = {'L', 'L', 'M', 'C', 'P', 'L', 'A', 'N'};
// 2: symbolic dimensions; 3: a fused_attention with a softcap, which a reader of version 2 would
// ignore; 4: one with a sliding window, 5: one with rotary_dim, 6: one with sinks (a seventh
// input), which readers of 3 to 5 would ignore. A writer marks a plan 3 to 6 only where it has
// one (readers accept 1 to 6).
inline constexpr uint32_t kFormatVersion = 6;
inline constexpr uint64_t kWeightsAlignment = 4096; // section start: page aligned, so it can be mmapped
inline constexpr uint64_t kTensorAlignment = 64;    // every weight inside the section

enum class Target : uint32_t { Cpu = 0, Cuda = 1 };

// Little-endian on disk; all offsets are from the start of the file.
struct Header {
  char magic[8];
  uint32_t formatVersion;
  uint32_t headerSize;
  uint32_t target;         // Target
  uint32_t targetArch;     // CUDA: compute capability * 10 (e.g. 90); CPU: 0
  uint64_t programOffset;
  uint64_t programSize;
  uint64_t weightsOffset;
  uint64_t weightsSize;
  uint64_t programChecksum;
  uint64_t weightsChecksum;
  uint64_t reserved[3];
};
static_assert(sizeof(Header) == 96, "the header layout is part of the file format");

// A 64-bit checksum (FNV-1a over 8-byte words, then the tail bytes). Fast enough to run
// over the weights at load time; it detects corruption, it is not a cryptographic hash.
uint64_t checksum(const void *data, size_t size);

// The same checksum computed over data that arrives in pieces (the plan writer streams weights).
class Checksum {
public:
  void update(const void *data, size_t size);
  uint64_t finish() const;

private:
  uint64_t hash_ = 0xcbf29ce484222325ull;
  uint64_t size_ = 0;
  unsigned char pending_[8] = {};
  size_t pendingSize_ = 0;
};

} // namespace llmc::plan
