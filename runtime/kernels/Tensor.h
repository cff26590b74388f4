// Tensor views shared by the CPU kernels, the runtime and the compiler's constant folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace llmc::rt {

// Element types. The numeric values are stored in plan files: never renumber.
enum class DType : uint8_t {
  None = 0,
  F32 = 1,
  F16 = 2,
  F64 = 3,
  I64 = 4,
  I32 = 5,
  I8 = 6,
  U8 = 7,
  Bool = 8, // one byte per element, 0 or 1
  BF16 = 9, // a bf16 model's values, and how a reduced-precision plan stores f32 ones (llmc --precision)
};

size_t dtypeSize(DType dtype);
const char *dtypeName(DType dtype);
// Parses the names dtypeName prints ("f32", "i64", "bool", ...); None when unknown.
DType dtypeFromName(const std::string &name);

// IEEE half <-> float, round to nearest even (beyond half's range: infinity).
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);

// f32 narrowed to 16 bits for a reduced-precision plan (`to`: F16 or BF16): round to nearest
// even; finite values beyond the type's range saturate to its largest finite value (a -FLT_MAX
// mask constant stays finite, as finfo(bf16).min), infinities and NaN stay what they are.
uint16_t narrowFloat(float f, DType to);
float widenFloat(uint16_t bits, DType from);
// f32 to bf16 as IEEE rounds it (a bf16 model's values): to nearest even, beyond the range to
// infinity, NaN stays NaN. bf16 to f32 is exact: widenFloat(bits, DType::BF16).
uint16_t floatToBFloat16(float f);
// v (a double or an integer, held exactly) as f32 rounded to odd: toward zero, its last bit set
// when inexact. Narrowed once more to f16 or bf16, which hold at least 13 fewer bits, it gives v
// rounded once to nearest even, where a plain f32 between may round twice the wrong way (1 +
// 2^-11 + 2^-40 is 1 + 2^-11 in f32, a tie that f16 rounds down to 1).
float roundToOddFloat(long double v);
inline bool isHalfWidth(DType d) { return d == DType::F16 || d == DType::BF16; }
inline bool isFloatType(DType d) { return d == DType::F32 || d == DType::F64 || isHalfWidth(d); }
// Element i of float data of type `t` (isFloatType), as a float.
float floatAt(const void *data, DType t, int64_t i);
// floatToHalf or floatToBFloat16, by `to` (F16 or BF16).
inline uint16_t toHalfWidth(float f, DType to) { return to == DType::F16 ? floatToHalf(f) : floatToBFloat16(f); }

constexpr int kMaxRank = 8;

struct Shape {
  int rank = 0;
  int64_t dims[kMaxRank] = {};

  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i)
      n *= dims[i];
    return n;
  }
  int64_t operator[](int i) const { return dims[i]; }
  bool operator==(const Shape &other) const {
    if (rank != other.rank)
      return false;
    for (int i = 0; i < rank; ++i)
      if (dims[i] != other.dims[i])
        return false;
    return true;
  }
  std::string str() const; // "1x16x64", "scalar" for rank 0
};

// Whether a transpose by `perm` (rank entries) of a tensor of dimensions `dims` leaves every
// element where it is: its axes of more than one element keep their order ([B, 1, H] to
// [1, B, H]). False for an axis out of range. The compiler turns such a transpose into a
// squeeze and an unsqueeze; the CUDA executor runs it as a view where its shapes say so.
bool transposeMovesNothing(const int64_t *dims, const int64_t *perm, int rank);

// Strides under which `to` (a reshape: the elements of `from` in row-major order) reads each
// element where `from`, laid out with `fromStrides`, has it; false where no strides can (a
// reshape that merges axes which are not one after another in memory). Axes of one element get
// any stride. The CUDA executor follows a cache's new rows back through reshapes with it.
bool stridesAfterReshape(const Shape &from, const int64_t *fromStrides, const Shape &to, int64_t *toStrides);

// A non-owning view of a dense, row-major tensor.
struct TensorRef {
  DType dtype = DType::None;
  Shape shape;
  void *data = nullptr;

  bool present() const { return dtype != DType::None; }
  int64_t numel() const { return shape.numel(); }
  size_t bytes() const { return size_t(numel()) * dtypeSize(dtype); }
  template <typename T> T *as() const { return static_cast<T *>(data); }
};

} // namespace llmc::rt
