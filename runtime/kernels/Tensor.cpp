#include "Tensor.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace llmc::rt {

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32: return 4;
  case DType::F16:
  case DType::BF16: return 2;
  case DType::F64: return 8;
  case DType::I64: return 8;
  case DType::I32: return 4;
  case DType::I8:
  case DType::U8:
  case DType::Bool: return 1;
  case DType::None: return 0;
  }
  return 0;
}

static const char *const kNames[] = {"none", "f32", "f16", "f64", "i64", "i32", "i8", "u8", "bool", "bf16"};

const char *dtypeName(DType dtype) {
  auto index = static_cast<unsigned>(dtype);
  return index < sizeof(kNames) / sizeof(kNames[0]) ? kNames[index] : "invalid";
}

DType dtypeFromName(const std::string &name) {
  for (unsigned i = 1; i < sizeof(kNames) / sizeof(kNames[0]); ++i)
    if (name == kNames[i])
      return static_cast<DType>(i);
  return DType::None;
}

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal: normalize
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000 | (mant << 13);
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t absx = x & 0x7fffffff;
  if (absx >= 0x7f800000) // inf or nan
    return uint16_t(sign | 0x7c00 | (absx > 0x7f800000 ? 0x200 : 0));
  if (absx >= 0x477ff000) // overflows to inf after rounding
    return uint16_t(sign | 0x7c00);
  if (absx < 0x38800000) { // subnormal or zero in half
    float v;
    std::memcpy(&v, &absx, 4);
    // Scale so that the half subnormal unit becomes 1, then round to nearest even.
    float scaled = v * 16777216.0f; // 2^24
    uint32_t m = uint32_t(std::nearbyint(scaled));
    return uint16_t(sign | m);
  }
  uint32_t mant = absx & 0x7fffff;
  uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t half = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half;
  return uint16_t(sign | half);
}

uint16_t narrowFloat(float f, DType to) {
  const float largest = to == DType::F16 ? 65504.0f : 3.38953139e38f;
  if (std::isfinite(f) && std::fabs(f) > largest)
    f = std::copysign(largest, f);
  // (Saturated above, bf16's rounding cannot carry a finite value to infinity.)
  return toHalfWidth(f, to);
}

uint16_t floatToBFloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (std::isnan(f))
    return uint16_t((x >> 16) | 0x40); // stays a (quiet) NaN
  x += 0x7fff + ((x >> 16) & 1);       // round to nearest even; the carry may reach infinity
  return uint16_t(x >> 16);
}

static_assert(std::numeric_limits<long double>::digits >= 64, "roundToOddFloat holds every int64 exactly");

float roundToOddFloat(long double v) {
  float f = float(v); // to nearest even
  if (std::isnan(v) || static_cast<long double>(f) == v)
    return f;
  if (std::fabs(static_cast<long double>(f)) > std::fabs(v)) // rounded away from zero (or to infinity)
    f = std::nextafter(f, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= 1;
  std::memcpy(&f, &bits, 4);
  return f;
}

float widenFloat(uint16_t bits, DType from) {
  if (from == DType::F16)
    return halfToFloat(bits);
  const uint32_t x = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

float floatAt(const void *data, DType t, int64_t i) {
  const char *at = static_cast<const char *>(data) + size_t(i) * dtypeSize(t);
  if (isHalfWidth(t)) {
    uint16_t bits;
    std::memcpy(&bits, at, 2);
    return widenFloat(bits, t);
  }
  if (t == DType::F64) {
    double d;
    std::memcpy(&d, at, 8);
    return float(d);
  }
  float f;
  std::memcpy(&f, at, 4);
  return f;
}

bool transposeMovesNothing(const int64_t *dims, const int64_t *perm, int rank) {
  int64_t last = -1;
  for (int i = 0; i < rank; ++i) {
    if (perm[i] < 0 || perm[i] >= rank)
      return false;
    if (dims[perm[i]] == 1)
      continue;
    if (perm[i] < last)
      return false;
    last = perm[i];
  }
  return true;
}

bool stridesAfterReshape(const Shape &from, const int64_t *fromStrides, const Shape &to, int64_t *toStrides) {
  if (from.numel() != to.numel() || from.rank > kMaxRank || to.rank > kMaxRank)
    return false;
  for (int d = 0; d < to.rank; ++d)
    toStrides[d] = 0;
  if (from.numel() == 0)
    return true;
  // `from`'s axes of more than one element; each run of `to`'s axes is matched with the run of
  // them that holds as many elements, which must lie one after another in memory.
  int64_t dims[kMaxRank], strides[kMaxRank];
  int n = 0;
  for (int d = 0; d < from.rank; ++d)
    if (from.dims[d] != 1)
      dims[n] = from.dims[d], strides[n++] = fromStrides[d];
  for (int first = 0, old = 0; first < to.rank;) {
    if (to.dims[first] == 1) {
      ++first;
      continue;
    }
    int end = first + 1, oldEnd = old + 1;
    int64_t size = to.dims[first], oldSize = dims[old];
    while (size != oldSize) {
      if (size < oldSize)
        size *= to.dims[end++];
      else
        oldSize *= dims[oldEnd++];
    }
    for (int k = old; k + 1 < oldEnd; ++k)
      if (strides[k] != dims[k + 1] * strides[k + 1])
        return false;
    toStrides[end - 1] = strides[oldEnd - 1];
    for (int k = end - 1; k > first; --k)
      toStrides[k - 1] = toStrides[k] * to.dims[k];
    first = end, old = oldEnd;
  }
  return true;
}

std::string Shape::str() const {
  if (rank == 0)
    return "scalar";
  std::string s;
  for (int i = 0; i < rank; ++i) {
    if (i)
      s += 'x';
    s += std::to_string(dims[i]);
  }
  return s;
}

} // namespace llmc::rt
