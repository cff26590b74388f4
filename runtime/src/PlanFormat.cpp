#include "PlanFormat.h"

#include <cstring>

namespace llmc::plan {

static constexpr uint64_t kPrime = 0x100000001b3ull;

static uint64_t mixWord(uint64_t h, const unsigned char *p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  h = (h ^ w) * kPrime;
  return h ^ (h >> 29);
}

void Checksum::update(const void *data, size_t size) {
  const auto *p = static_cast<const unsigned char *>(data);
  size_ += size;
  while (size > 0 && pendingSize_ > 0) { // complete a word begun by the previous piece
    pending_[pendingSize_++] = *p++;
    --size;
    if (pendingSize_ == 8) {
      hash_ = mixWord(hash_, pending_);
      pendingSize_ = 0;
    }
  }
  for (; size >= 8; p += 8, size -= 8)
    hash_ = mixWord(hash_, p);
  std::memcpy(pending_ + pendingSize_, p, size);
  pendingSize_ += size;
}

uint64_t Checksum::finish() const {
  uint64_t h = hash_;
  for (size_t i = 0; i < pendingSize_; ++i)
    h = (h ^ pending_[i]) * kPrime;
  return h ^ size_;
}

uint64_t checksum(const void *data, size_t size) {
  Checksum c;
  c.update(data, size);
  return c.finish();
}

} // namespace llmc::plan
