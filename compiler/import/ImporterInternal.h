// Pieces shared by the importer's files: tensor conversion and the per-op table.
#pragma once

#include "onnx/onnx_pb.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace llmc::importer {

// The MLIR element type of an ONNX TensorProto data type; null when unsupported.
mlir::Type elementType(mlir::MLIRContext *ctx, int onnxType);
const char *onnxTypeName(int onnxType);

// Where weight bytes come from and what keeps them alive. Large weights are not copied: their
// resource blobs point into the parsed model's raw_data or into a mapping of the external data
// file, and each blob holds a reference that keeps that memory alive.
struct TensorStore {
  std::filesystem::path modelDir;
  std::shared_ptr<onnx::ModelProto> model;
  std::map<std::string, std::shared_ptr<void>> mappings; // external data files, by path
};

// Converts an initializer or a constant attribute (every storage form: typed fields, raw_data,
// external data under the model's folder) into an elements attribute. Sets `error` on failure.
mlir::ElementsAttr tensorToAttr(mlir::MLIRContext *ctx, const onnx::TensorProto &tensor, TensorStore &store,
                                std::string &error);

// What one op importer sees of a node.
struct NodeContext {
  mlir::OpBuilder &builder;
  mlir::Location loc;
  const onnx::NodeProto &node;
  int64_t opset;
  llvm::SmallVector<mlir::Value> inputs; // null Value for an absent optional input
  TensorStore &store;
  std::string error; // set by fail()

  mlir::MLIRContext *ctx() const { return builder.getContext(); }
  mlir::Value input(size_t i) const { return i < inputs.size() ? inputs[i] : mlir::Value(); }
  const onnx::AttributeProto *attr(const std::string &name) const;
  int64_t attrInt(const std::string &name, int64_t fallback) const;
  float attrFloat(const std::string &name, float fallback) const;
  std::optional<std::vector<int64_t>> attrInts(const std::string &name) const;
  std::string attrString(const std::string &name, const std::string &fallback) const;

  mlir::LogicalResult fail(const std::string &message) {
    error = message;
    return mlir::failure();
  }
  // Creates llmc op `name` (e.g. "llmc.add") with inferred result types and folds it when its
  // operands are constants. Fails with the type-inference message on invalid operands.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>> create(llvm::StringRef name, mlir::ValueRange operands,
                                                          llvm::ArrayRef<mlir::NamedAttribute> attrs = {});
  mlir::FailureOr<mlir::Value> create1(llvm::StringRef name, mlir::ValueRange operands,
                                       llvm::ArrayRef<mlir::NamedAttribute> attrs = {});
};

using ImportFn = mlir::FailureOr<llvm::SmallVector<mlir::Value>> (*)(NodeContext &);

// Every op type the table has an importer for (at some opset).
std::vector<std::string> supportedOpTypes();

// The importer for (op type, opset) in the default domain; null when unsupported.
ImportFn findImporter(const std::string &opType, int64_t opset);

// How many leading inputs (op type, opset)'s importer needs present (ONNX's required ones).
int requiredInputs(const std::string &opType, int64_t opset);

} // namespace llmc::importer
