// ONNX -> llmc dialect importer.
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <string>
#include <vector>

namespace llmc {

// A graph input replaced by a constant at compile time.
struct FrozenInput {
  int dtype = 0;             // llmc::rt::DType numbering (1 f32, 4 i64, ...)
  std::vector<int64_t> shape;
  std::vector<char> bytes;   // row major
};

struct ImportOptions {
  // Static shapes for graph inputs, by input name ("input_ids" -> {1, 16}).
  std::map<std::string, std::vector<int64_t>> inputShapes;
  // Values for symbolic dimensions, by dim_param name ("seq" -> 16).
  std::map<std::string, int64_t> dimValues;
  // Upper bounds for symbolic dimensions that stay dynamic, by dim_param name ("seq" -> 512).
  std::map<std::string, int64_t> maxDims;
  // Lower bounds where they are not 1 ("past" -> 0 for past=0..128).
  std::map<std::string, int64_t> minDims;
  // Graph inputs to bake into the plan as constants, by name.
  std::map<std::string, FrozenInput> frozenInputs;
};

// What the importer saw, for --print-stats.
struct ImportStats {
  int64_t opset = 0;
  int64_t initializers = 0;
  std::map<std::string, int> nodesByOpType;
};

// Parses "name=1x16,other=2x3" or "seq=16" items into `options`; returns an error message or "".
std::string parseInputShapes(const std::string &spec, ImportOptions &options);

// Parses "seq=512,batch=4" or "past=0..512" (--max-shape) into `options`; returns an error
// message or "".
std::string parseMaxShapes(const std::string &spec, ImportOptions &options);

// Imports the ONNX model at `path` into a module holding `func.func @main`. Initializers become
// llmc.constant ops whose bytes live in resource blobs, never in IR text. On failure returns
// null and sets `error` to a message naming the problem (all unsupported ops at once).
mlir::OwningOpRef<mlir::ModuleOp> importOnnxFile(mlir::MLIRContext &context, const std::string &path,
                                                 const ImportOptions &options, std::string &error,
                                                 ImportStats *stats = nullptr);

// The ONNX op types (default domain) the importer supports.
std::vector<std::string> supportedOnnxOps();

// The newest default-domain opset this importer knows.
int64_t maxSupportedOpset();

} // namespace llmc
