#include "TestPlans.h"

#include "PlanFormat.h"
#include "Tensor.h"
#include "plan_generated.h"

#include <cstring>
#include <fstream>
#include <unistd.h>

namespace fb = llmc::plan;

namespace llmc::test {

namespace {
// The file around a finished program: header, program, the weights {1, 2, 3}.
std::vector<uint8_t> planFile(const flatbuffers::FlatBufferBuilder &b, uint32_t formatVersion);
} // namespace

std::vector<uint8_t> addPlan(uint32_t formatVersion, uint8_t weightDeviceDType) {
  flatbuffers::FlatBufferBuilder b;
  const float weights[3] = {1, 2, 3};
  const uint64_t weightBytes = weightDeviceDType ? 3 * 2 : sizeof weights; // 16-bit: the first 6 bytes
  std::vector<flatbuffers::Offset<fb::Value>> values = {
      fb::CreateValue(b, b.CreateString("x"), fb::ValueKind_Input, uint8_t(rt::DType::F32),
                      b.CreateVector(std::vector<int64_t>{2, 3})),
      fb::CreateValue(b, b.CreateString("w"), fb::ValueKind_Weight, uint8_t(rt::DType::F32),
                      b.CreateVector(std::vector<int64_t>{3}), 0, weightBytes, 0, false, weightDeviceDType),
      fb::CreateValue(b, b.CreateString("y"), fb::ValueKind_Output, uint8_t(rt::DType::F32),
                      b.CreateVector(std::vector<int64_t>{2, 3})),
  };
  std::vector<flatbuffers::Offset<fb::Op>> ops = {
      fb::CreateOp(b, b.CreateString("add"), b.CreateVector(std::vector<int32_t>{0, 1}),
                   b.CreateVector(std::vector<int32_t>{2}), 0, b.CreateString("test_add")),
  };
  auto root = fb::CreateProgram(b, b.CreateString("test"), b.CreateVector(values), b.CreateVector(ops),
                                b.CreateVector(std::vector<int32_t>{0}), b.CreateVector(std::vector<int32_t>{2}));
  fb::FinishProgramBuffer(b, root);
  return planFile(b, formatVersion);
}

std::vector<uint8_t> dynamicPlan() {
  flatbuffers::FlatBufferBuilder b;
  const std::vector<int32_t> batchDims = {0, -1}, doubledDims = {2, -1};
  std::vector<flatbuffers::Offset<fb::Value>> values = {
      fb::CreateValue(b, b.CreateString("x"), fb::ValueKind_Input, uint8_t(rt::DType::F32),
                      b.CreateVector(std::vector<int64_t>{-1, 3}), 0, 0, b.CreateVector(batchDims)),
      fb::CreateValue(b, b.CreateString("w"), fb::ValueKind_Weight, uint8_t(rt::DType::F32),
                      b.CreateVector(std::vector<int64_t>{3}), 0, 3 * sizeof(float)),
      fb::CreateValue(b, b.CreateString("y"), fb::ValueKind_Output, uint8_t(rt::DType::F32),
                      b.CreateVector(std::vector<int64_t>{-1, 3}), 0, 0, b.CreateVector(batchDims)),
      fb::CreateValue(b, b.CreateString("z"), fb::ValueKind_Output, uint8_t(rt::DType::F32),
                      b.CreateVector(std::vector<int64_t>{-1, 3}), 0, 0, b.CreateVector(doubledDims)),
  };
  std::vector<flatbuffers::Offset<fb::Attr>> axis = {fb::CreateAttr(b, b.CreateString("axis"), fb::AttrKind_Int, 0)};
  std::vector<flatbuffers::Offset<fb::Op>> ops = {
      fb::CreateOp(b, b.CreateString("add"), b.CreateVector(std::vector<int32_t>{0, 1}),
                   b.CreateVector(std::vector<int32_t>{2}), 0, b.CreateString("test_add")),
      fb::CreateOp(b, b.CreateString("concat"), b.CreateVector(std::vector<int32_t>{2, 0}),
                   b.CreateVector(std::vector<int32_t>{3}), b.CreateVector(axis), b.CreateString("test_concat")),
  };
  std::vector<flatbuffers::Offset<fb::Symbol>> symbols = {fb::CreateSymbol(b, b.CreateString("batch"), 4)};
  // node 0: batch; node 1: 2; node 2: 2 * batch
  std::vector<fb::DimNode> nodes = {fb::DimNode(0, -1, -1, fb::DimNodeOp_Symbol),
                                    fb::DimNode(2, -1, -1, fb::DimNodeOp_Const),
                                    fb::DimNode(0, 1, 0, fb::DimNodeOp_Mul)};
  auto root = fb::CreateProgram(b, b.CreateString("test"), b.CreateVector(values), b.CreateVector(ops),
                                b.CreateVector(std::vector<int32_t>{0}), b.CreateVector(std::vector<int32_t>{2, 3}),
                                b.CreateVector(symbols), b.CreateVectorOfStructs(nodes));
  fb::FinishProgramBuffer(b, root);
  return planFile(b, fb::kFormatVersion);
}

namespace {
std::vector<uint8_t> planFile(const flatbuffers::FlatBufferBuilder &b, uint32_t formatVersion) {
  const float weights[3] = {1, 2, 3};
  fb::Header h{};
  std::memcpy(h.magic, fb::kMagic, 8);
  h.formatVersion = formatVersion;
  h.headerSize = sizeof h;
  h.target = uint32_t(fb::Target::Cpu);
  h.programOffset = sizeof h;
  h.programSize = b.GetSize();
  h.weightsOffset = fb::kWeightsAlignment;
  h.weightsSize = sizeof weights;
  h.programChecksum = fb::checksum(b.GetBufferPointer(), b.GetSize());
  h.weightsChecksum = fb::checksum(weights, sizeof weights);
  std::vector<uint8_t> file(h.weightsOffset + h.weightsSize, 0);
  std::memcpy(file.data(), &h, sizeof h);
  std::memcpy(file.data() + h.programOffset, b.GetBufferPointer(), b.GetSize());
  std::memcpy(file.data() + h.weightsOffset, weights, sizeof weights);
  return file;
}
} // namespace

Sections sectionsOf(const std::vector<uint8_t> &plan) {
  fb::Header h;
  std::memcpy(&h, plan.data(), sizeof h);
  return {h.programOffset, h.programSize, h.weightsOffset, h.weightsSize};
}

std::string writeTemp(const std::string &name, const std::vector<uint8_t> &bytes) {
  const char *dir = getenv("TMPDIR");
  std::string path = std::string(dir ? dir : "/tmp") + "/llmc-test-" + std::to_string(getpid()) + "-" + name;
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
  return path;
}

} // namespace llmc::test
