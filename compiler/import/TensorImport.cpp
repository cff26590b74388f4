// ONNX TensorProto -> MLIR elements attribute, for every storage form.
#include "ImporterInternal.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir;
namespace fs = std::filesystem;

namespace llmc::importer {

Type elementType(MLIRContext *ctx, int t) {
  switch (t) {
  case onnx::TensorProto::FLOAT: return Float32Type::get(ctx);
  case onnx::TensorProto::FLOAT16: return Float16Type::get(ctx);
  case onnx::TensorProto::BFLOAT16: return BFloat16Type::get(ctx);
  case onnx::TensorProto::DOUBLE: return Float64Type::get(ctx);
  case onnx::TensorProto::INT64: return IntegerType::get(ctx, 64);
  case onnx::TensorProto::INT32: return IntegerType::get(ctx, 32);
  case onnx::TensorProto::INT8: return IntegerType::get(ctx, 8);
  case onnx::TensorProto::UINT8: return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case onnx::TensorProto::BOOL: return IntegerType::get(ctx, 1);
  default: return {};
  }
}

const char *onnxTypeName(int t) {
  return onnx::TensorProto::DataType_IsValid(t)
             ? onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(t)).c_str()
             : "UNKNOWN";
}

namespace {

size_t byteWidth(int t) {
  switch (t) {
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::INT32: return 4;
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::INT64: return 8;
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16: return 2;
  default: return 1;
  }
}

struct Mapping {
  void *addr = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (addr)
      munmap(addr, size);
  }
};

// Bytes with whatever keeps them alive.
struct Bytes {
  llvm::ArrayRef<char> data;
  std::shared_ptr<void> owner;
};

// The `length` bytes at `offset` of the external file named by `location`, which must stay inside
// the model's folder. The file is mapped once and shared by all tensors in it.
bool readExternal(const onnx::TensorProto &tensor, TensorStore &store, size_t expected, Bytes &bytes,
                  std::string &error) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &entry : tensor.external_data()) {
    try {
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offset = std::stoll(entry.value());
      else if (entry.key() == "length")
        length = std::stoll(entry.value());
    } catch (const std::exception &) {
      error = "initializer '" + tensor.name() + "' has a malformed external_data entry '" + entry.key() + "'";
      return false;
    }
  }
  if (location.empty()) {
    error = "initializer '" + tensor.name() + "' has external data without a location";
    return false;
  }
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(store.modelDir, ec);
  const fs::path file = fs::weakly_canonical(store.modelDir / location, ec);
  auto rel = file.lexically_relative(base);
  if (fs::path(location).is_absolute() || rel.empty() || *rel.begin() == "..") {
    error = "initializer '" + tensor.name() + "': external data location '" + location +
            "' leaves the model's folder; refused";
    return false;
  }
  auto &slot = store.mappings[file.string()];
  if (!slot) {
    int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
      if (fd >= 0)
        close(fd);
      error = "initializer '" + tensor.name() + "': cannot open external data file '" + file.string() + "'";
      return false;
    }
    auto mapping = std::make_shared<Mapping>();
    mapping->size = size_t(st.st_size);
    if (mapping->size > 0) {
      mapping->addr = mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (mapping->addr == MAP_FAILED)
        mapping->addr = nullptr;
    }
    close(fd);
    if (mapping->size > 0 && !mapping->addr) {
      error = "initializer '" + tensor.name() + "': cannot map '" + file.string() + "'";
      return false;
    }
    slot = mapping;
  }
  auto *mapping = static_cast<Mapping *>(slot.get());
  const int64_t fileSize = int64_t(mapping->size);
  if (length < 0)
    length = fileSize - offset;
  if (offset < 0 || offset > fileSize || length > fileSize - offset || size_t(length) != expected) {
    error = "initializer '" + tensor.name() + "': external data range (offset " + std::to_string(offset) +
            ", length " + std::to_string(length) + ") does not fit '" + location + "' (" +
            std::to_string(fileSize) + " bytes) or the tensor (" + std::to_string(expected) + " bytes)";
    return false;
  }
  bytes.data = llvm::ArrayRef<char>(static_cast<const char *>(mapping->addr) + offset, size_t(length));
  bytes.owner = slot;
  return true;
}

template <typename Src, typename Dst> void packField(const Src &field, std::vector<char> &bytes) {
  bytes.resize(size_t(field.size()) * sizeof(Dst));
  for (int i = 0; i < field.size(); ++i) {
    Dst v = static_cast<Dst>(field.Get(i));
    std::memcpy(bytes.data() + size_t(i) * sizeof(Dst), &v, sizeof(Dst));
  }
}

// Bytes from the typed repeated fields.
bool readTypedFields(const onnx::TensorProto &t, std::vector<char> &bytes) {
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT: packField<decltype(t.float_data()), float>(t.float_data(), bytes); return true;
  case onnx::TensorProto::DOUBLE: packField<decltype(t.double_data()), double>(t.double_data(), bytes); return true;
  case onnx::TensorProto::INT64: packField<decltype(t.int64_data()), int64_t>(t.int64_data(), bytes); return true;
  case onnx::TensorProto::INT32: packField<decltype(t.int32_data()), int32_t>(t.int32_data(), bytes); return true;
  case onnx::TensorProto::FLOAT16: // (16-bit floats' bits, one per int32)
  case onnx::TensorProto::BFLOAT16: packField<decltype(t.int32_data()), uint16_t>(t.int32_data(), bytes); return true;
  case onnx::TensorProto::INT8: packField<decltype(t.int32_data()), int8_t>(t.int32_data(), bytes); return true;
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::BOOL: packField<decltype(t.int32_data()), uint8_t>(t.int32_data(), bytes); return true;
  default: return false;
  }
}

std::string blobName(const std::string &name) {
  std::string out;
  for (char c : name)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.') ? c : '_';
  return out.empty() ? "weight" : out;
}

} // namespace

ElementsAttr tensorToAttr(MLIRContext *ctx, const onnx::TensorProto &tensor, TensorStore &store,
                         std::string &error) {
  Type elem = elementType(ctx, tensor.data_type());
  if (!elem) {
    error = "tensor '" + tensor.name() + "' has unsupported element type " + onnxTypeName(tensor.data_type());
    return {};
  }
  SmallVector<int64_t> dims;
  int64_t numel = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0) {
      error = "tensor '" + tensor.name() + "' has a negative dimension";
      return {};
    }
    dims.push_back(d);
    numel *= d;
  }
  const size_t expected = size_t(numel) * byteWidth(tensor.data_type());
  Bytes bytes;
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    if (!readExternal(tensor, store, expected, bytes, error))
      return {};
  } else if (tensor.has_raw_data()) {
    bytes.data = llvm::ArrayRef<char>(tensor.raw_data().data(), tensor.raw_data().size());
    bytes.owner = store.model; // raw_data lives as long as the parsed model
  } else {
    auto packed = std::make_shared<std::vector<char>>();
    if (!readTypedFields(tensor, *packed)) {
      error = "tensor '" + tensor.name() + "' stores its data in an unsupported form";
      return {};
    }
    bytes.data = llvm::ArrayRef<char>(*packed);
    bytes.owner = packed;
  }
  if (bytes.data.size() != expected) {
    error = "tensor '" + tensor.name() + "' holds " + std::to_string(bytes.data.size()) + " bytes, expected " +
            std::to_string(expected) + " for its shape";
    return {};
  }
  auto type = RankedTensorType::get(dims, elem);
  if (elem.isInteger(1)) {
    SmallVector<bool> values(bytes.data.begin(), bytes.data.end());
    return DenseElementsAttr::get(type, values);
  }
  // Small tensors (and the integer tensors that carry shapes) stay inline so folding sees them;
  // everything else lives in a resource blob that IR printing elides.
  const bool inlineIt = numel <= 16 || (elem.isInteger() && numel <= 4096);
  if (inlineIt)
    return DenseElementsAttr::getFromRawBuffer(type, bytes.data);
  // Point at the bytes where they are (no copy) when they are aligned enough for any element.
  constexpr size_t kAlign = 16;
  if (bytes.owner && reinterpret_cast<uintptr_t>(bytes.data.data()) % kAlign == 0) {
    std::shared_ptr<void> owner = bytes.owner;
    return DenseResourceElementsAttr::get(
        type, blobName(tensor.name()),
        UnmanagedAsmResourceBlob::allocateWithAlign(bytes.data, kAlign,
                                                    [owner](void *, size_t, size_t) mutable { owner.reset(); }));
  }
  return DenseResourceElementsAttr::get(type, blobName(tensor.name()),
                                        HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes.data, 64));
}

} // namespace llmc::importer
