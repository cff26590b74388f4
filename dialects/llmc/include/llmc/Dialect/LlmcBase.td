// The llmc dialect and the base class of its ops.
#ifndef LLMC_BASE_TD
#define LLMC_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Llmc_Dialect : Dialect {
  let name = "llmc";
  let cppNamespace = "::llmc";
  let summary = "Graph-level ops of the llmc transformer compiler";
  let description = [{
    Ops close to ONNX semantics (numpy broadcasting, ONNX attribute names and defaults), on
    ranked tensors whose dimensions may be dynamic. Every op infers its result types; an op
    whose operands are all constants folds by running the runtime's CPU kernel for it, so
    compile-time and run-time semantics cannot drift apart.
  }];
  let hasConstantMaterializer = 1;
  // Inherent attributes stay in the attribute dictionary, so generic code (the constant
  // folder, the plan emitter) reads every op's attributes the same way.
  let usePropertiesForAttributes = 0;
}

def Llmc_Tensor : RankedTensorOf<[AnyType]>;
def Llmc_OptionalTensor : Optional<RankedTensorOf<[AnyType]>>;

// The base of every computational op: pure, with result types inferred by
// llmc::inferResultTypes (TypeInference.cpp) and folding by llmc::foldWithKernels
// (ConstantFolding.cpp), both dispatched on the op name.
class Llmc_Op<string mnemonic, list<Trait> traits = []>
    : Op<Llmc_Dialect, mnemonic, !listconcat(traits, [Pure, InferTypeOpInterface])> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  code commonDeclarations = [{
    static ::llvm::LogicalResult inferReturnTypes(::mlir::MLIRContext *context,
        ::std::optional<::mlir::Location> location, ::mlir::ValueRange operands,
        ::mlir::DictionaryAttr attributes, ::mlir::OpaqueProperties, ::mlir::RegionRange,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::llmc::inferResultTypes(getOperationName(), context, location, operands, attributes, inferred);
    }
    // A declared static dimension refines an inferred dynamic one.
    static bool isCompatibleReturnTypes(::mlir::TypeRange lhs, ::mlir::TypeRange rhs) {
      return ::llmc::areCompatibleTypes(lhs, rhs);
    }
  }];
  let extraClassDeclaration = commonDeclarations # [{
    ::mlir::OpFoldResult fold(FoldAdaptor adaptor) {
      return ::llmc::foldSingleResult(getOperation(), adaptor.getOperands());
    }
  }];
}

#endif // LLMC_BASE_TD
