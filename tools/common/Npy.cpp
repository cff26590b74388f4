#include "Npy.h"

#include "Tensor.h"

#include <cstring>
#include <fstream>

namespace llmc::npy {
namespace {

struct Descr {
  const char *code;
  llmc_dtype dtype;
};
const Descr kDescrs[] = {{"<f4", LLMC_DTYPE_F32}, {"<f2", LLMC_DTYPE_F16}, {"<f8", LLMC_DTYPE_F64},
                         {"<i8", LLMC_DTYPE_I64}, {"<i4", LLMC_DTYPE_I32}, {"|i1", LLMC_DTYPE_I8},
                         {"|u1", LLMC_DTYPE_U8},  {"|b1", LLMC_DTYPE_BOOL}, {"<V2", LLMC_DTYPE_BF16}};

// The value of 'key' in the header dict, e.g. "'<f4'" or "(1, 16)".
std::string field(const std::string &header, const std::string &key) {
  auto at = header.find("'" + key + "'");
  if (at == std::string::npos)
    return {};
  auto colon = header.find(':', at);
  if (colon == std::string::npos)
    return {};
  size_t start = header.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos)
    return {};
  size_t end = header[start] == '(' ? header.find(')', start) + 1 : header.find_first_of(",}", start);
  return end == std::string::npos || end == 0 ? std::string() : header.substr(start, end - start);
}

} // namespace

size_t dtypeSize(llmc_dtype dtype) {
  switch (dtype) {
  case LLMC_DTYPE_F32:
  case LLMC_DTYPE_I32: return 4;
  case LLMC_DTYPE_F64:
  case LLMC_DTYPE_I64: return 8;
  case LLMC_DTYPE_F16:
  case LLMC_DTYPE_BF16: return 2;
  default: return 1;
  }
}

float widen16(uint16_t bits, llmc_dtype type) { return rt::widenFloat(bits, rt::DType(type)); }
uint16_t narrow16(float value, llmc_dtype type) { return rt::toHalfWidth(value, rt::DType(type)); }

const char *dtypeName(llmc_dtype dtype) {
  switch (dtype) {
  case LLMC_DTYPE_F32: return "float32";
  case LLMC_DTYPE_F16: return "float16";
  case LLMC_DTYPE_F64: return "float64";
  case LLMC_DTYPE_I64: return "int64";
  case LLMC_DTYPE_I32: return "int32";
  case LLMC_DTYPE_I8: return "int8";
  case LLMC_DTYPE_U8: return "uint8";
  case LLMC_DTYPE_BOOL: return "bool";
  case LLMC_DTYPE_BF16: return "bfloat16";
  }
  return "unknown";
}

std::string read(const std::string &path, Array &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return "cannot open '" + path + "'";
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    return "'" + path + "' is not a .npy file";
  uint32_t headerLen = 0;
  if (magic[6] == 1) {
    uint16_t len16;
    in.read(reinterpret_cast<char *>(&len16), 2);
    headerLen = len16;
  } else {
    in.read(reinterpret_cast<char *>(&headerLen), 4);
  }
  if (!in || headerLen > (1u << 20))
    return "'" + path + "' has a bad .npy header";
  std::string header(headerLen, '\0');
  in.read(header.data(), headerLen);
  std::string descr = field(header, "descr"), order = field(header, "fortran_order"), shape = field(header, "shape");
  if (!in || descr.size() < 5 || shape.empty())
    return "'" + path + "' has a bad .npy header";
  descr = descr.substr(1, descr.size() - 2);
  if (descr == "<b1")
    descr = "|b1";
  if (descr == "|V2")
    descr = "<V2";
  bool known = false;
  for (const Descr &d : kDescrs)
    if (descr == d.code) {
      out.dtype = d.dtype;
      known = true;
    }
  if (!known)
    return "'" + path + "' has unsupported dtype " + descr;
  if (order.rfind("True", 0) == 0)
    return "'" + path + "' is in Fortran order; save it C-contiguous";
  out.shape.clear();
  size_t numel = 1;
  for (size_t i = 1; i < shape.size();) {
    size_t j = shape.find_first_of(",)", i);
    std::string part = shape.substr(i, j - i);
    part.erase(0, part.find_first_not_of(' '));
    if (!part.empty()) {
      out.shape.push_back(std::stoll(part));
      numel *= size_t(out.shape.back());
    }
    if (j == std::string::npos)
      break;
    i = j + 1;
  }
  out.data.resize(numel * dtypeSize(out.dtype));
  in.read(out.data.data(), std::streamsize(out.data.size()));
  if (!in)
    return "'" + path + "' is truncated";
  return {};
}

std::string write(const std::string &path, llmc_dtype dtype, const std::vector<int64_t> &shape, const void *data,
                  size_t bytes) {
  if (dtype == LLMC_DTYPE_BF16) { // NumPy has no bf16: written as the float32 values (exact)
    std::vector<float> wide(bytes / 2);
    for (size_t i = 0; i < wide.size(); ++i)
      wide[i] = widen16(static_cast<const uint16_t *>(data)[i], LLMC_DTYPE_BF16);
    return write(path, LLMC_DTYPE_F32, shape, wide.data(), wide.size() * sizeof(float));
  }
  const char *code = nullptr;
  for (const Descr &d : kDescrs)
    if (d.dtype == dtype)
      code = d.code;
  if (!code)
    return "cannot write dtype to .npy";
  std::string dims;
  for (int64_t d : shape)
    dims += std::to_string(d) + ",";
  if (shape.size() > 1)
    dims.pop_back();
  std::string header = "{'descr': '" + std::string(code) + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out)
    return "cannot write '" + path + "'";
  const uint16_t len = uint16_t(header.size());
  out.write("\x93NUMPY\x01\x00", 8);
  out.write(reinterpret_cast<const char *>(&len), 2);
  out << header;
  out.write(static_cast<const char *>(data), std::streamsize(bytes));
  return out ? std::string() : "writing '" + path + "' failed";
}

} // namespace llmc::npy
