#include "Tensor.h"

namespace llmc::rt {

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32: return 4;
  case DType::F16: return 2;
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

static const char *const kNames[] = {"none", "f32", "f16", "f64", "i64", "i32", "i8", "u8", "bool"};

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
