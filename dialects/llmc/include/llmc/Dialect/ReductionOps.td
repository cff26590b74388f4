// Reductions and scans.
#ifndef LLMC_REDUCTION_OPS_TD
#define LLMC_REDUCTION_OPS_TD

include "llmc/Dialect/LlmcBase.td"

class Llmc_ReduceOp<string mnemonic, string what> : Llmc_Op<mnemonic> {
  let summary = what # " over axes";
  let description = [{
    Reduces over `axes` (all axes when empty, unless `noop_with_empty_axes` is set, which makes
    the op an identity). `keepdims` keeps reduced dimensions with size 1.
  }];
  let arguments = (ins Llmc_Tensor:$input, DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$axes,
                   DefaultValuedAttr<I64Attr, "1">:$keepdims,
                   DefaultValuedAttr<I64Attr, "0">:$noop_with_empty_axes);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_ReduceSumOp : Llmc_ReduceOp<"reduce_sum", "sum">;
def Llmc_ReduceMeanOp : Llmc_ReduceOp<"reduce_mean", "mean">;
def Llmc_ReduceMaxOp : Llmc_ReduceOp<"reduce_max", "maximum">;
def Llmc_ReduceMinOp : Llmc_ReduceOp<"reduce_min", "minimum">;
def Llmc_ReduceProdOp : Llmc_ReduceOp<"reduce_prod", "product">;
def Llmc_ReduceSumSquareOp : Llmc_ReduceOp<"reduce_sum_square", "sum of squares">;
def Llmc_ReduceL2Op : Llmc_ReduceOp<"reduce_l2", "Euclidean norm">;

class Llmc_ArgOp<string mnemonic, string what> : Llmc_Op<mnemonic> {
  let summary = "index of the " # what # " along an axis";
  let description = [{
    An i64 tensor of indices; `keepdims` keeps the axis with size 1; ties resolve to the first
    index, or the last with `select_last_index`.
  }];
  let arguments = (ins Llmc_Tensor:$input, DefaultValuedAttr<I64Attr, "0">:$axis,
                   DefaultValuedAttr<I64Attr, "1">:$keepdims, DefaultValuedAttr<I64Attr, "0">:$select_last_index);
  let results = (outs Llmc_Tensor:$result);
}
def Llmc_ArgMaxOp : Llmc_ArgOp<"arg_max", "maximum">;
def Llmc_ArgMinOp : Llmc_ArgOp<"arg_min", "minimum">;

def Llmc_TopKOp : Llmc_Op<"top_k"> {
  let summary = "the k largest (or smallest) elements along an axis, and their indices";
  let description = [{
    `k` is an attribute, or -1 where it is the value of `count`, a one-element integer tensor
    computed from shapes (ONNX TopK's K = min(seq, 2048), say): the symbolic shape analysis gives
    the results' size along the axis from its contents, and the kernels read it from their
    outputs' shape. `llmc-fold-shapes` turns a count it proves constant into the attribute.
  }];
  let arguments = (ins Llmc_Tensor:$input, Llmc_OptionalTensor:$count, I64Attr:$k,
                   DefaultValuedAttr<I64Attr, "-1">:$axis, DefaultValuedAttr<I64Attr, "1">:$largest,
                   DefaultValuedAttr<I64Attr, "1">:$sorted);
  let results = (outs Llmc_Tensor:$values, Llmc_Tensor:$indices);
  let extraClassDeclaration = commonDeclarations # [{
    // Whether k is the attribute (no `count` operand).
    bool hasConstantK() { return !getCount() && int64_t(getK()) >= 0; }
    ::llvm::LogicalResult fold(FoldAdaptor adaptor, ::llvm::SmallVectorImpl<::mlir::OpFoldResult> &results) {
      return ::llmc::foldWithKernels(getOperation(), adaptor.getOperands(), results);
    }
  }];
}

def Llmc_CumSumOp : Llmc_Op<"cumsum"> {
  let summary = "cumulative sum along an axis";
  let description = "`axis` is a scalar integer tensor; `exclusive` and `reverse` as in ONNX CumSum.";
  let arguments = (ins Llmc_Tensor:$input, Llmc_Tensor:$axis,
                   DefaultValuedAttr<I64Attr, "0">:$exclusive, DefaultValuedAttr<I64Attr, "0">:$reverse);
  let results = (outs Llmc_Tensor:$result);
}

#endif // LLMC_REDUCTION_OPS_TD
